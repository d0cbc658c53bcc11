"""Loads of 3-D and 4-D tensors in a ``for k in range(n)`` loop are software-pipelined
(``cp.async`` stages) as 2-D ones are, when their tile has extent 1 on the leading axes and the
leading coordinates do not change in the loop: a batched product (operands through
``reshape``), an attention-shaped loop (``K^T`` through ``reshape`` and ``.T``, two products),
and a row reduction read back into registers with a padding. Leading coordinates outside the
tensor give the padding, as the ordinary load does. On the GPU (both ``wgmma`` and
``mma.sync``) and in the interpreter, against NumPy in float64; the PTX checks need no GPU."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP


@nt.jit(num_warps=4)
def bmm(a, b, c: nt.Partition[(1, "BM", "BN")], shift, BM: nt.Constant, BN: nt.Constant,
        BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 2, BK)):
            x = nt.load(a, (idx[0] + shift, idx[1], k), (1, BM, BK), padding=0)
            y = nt.load(b, (idx[0] + shift, k, idx[2]), (1, BK, BN), padding=0)
            acc += nt.reshape(x, (BM, BK)) @ nt.reshape(y, (BK, BN))
        nt.store(c, nt.reshape(nt.astype(acc, c.dtype), (1, BM, BN)), idx)


@nt.jit(num_warps=4)
def linear_attention(q, k, v, o: nt.Partition[(1, 1, "BM", "D")], BM: nt.Constant,
                     BN: nt.Constant, D: nt.Constant):
    for idx in nt.tiles(o):
        qt = nt.reshape(nt.load(q, (idx[0], idx[1], idx[2], 0), (1, 1, BM, D)), (BM, D))
        acc = nt.zeros((BM, D), nt.float32)
        for j in range(nt.num_tiles(k, 2, BN)):
            kt = nt.load(k, (idx[0], idx[1], j, 0), (1, 1, BN, D), padding=0)
            vt = nt.load(v, (idx[0], idx[1], j, 0), (1, 1, BN, D), padding=0)
            s = qt @ nt.reshape(kt, (BN, D)).T
            acc += nt.astype(s, q.dtype) @ nt.reshape(vt, (BN, D))
        nt.store(o, nt.reshape(nt.astype(acc, o.dtype), (1, 1, BM, D)), idx)


@nt.jit(num_warps=4)
def row_max(x, out: nt.Partition[(1, "BM")], shift, BM: nt.Constant, BK: nt.Constant,
            PAD: nt.Constant):
    for idx in nt.tiles(out):
        m = nt.full((1, BM), -np.inf, nt.float32)
        for k in range(nt.num_tiles(x, 2, BK)):
            t = nt.load(x, (idx[0] + shift, idx[1], k), (1, BM, BK), padding=PAD)
            m = nt.maximum(m, nt.astype(nt.max(t, axis=2), nt.float32))
        nt.store(out, nt.astype(m, out.dtype), idx)


def _rand(rng, shape, dt, scale=1.0):
    return (rng.uniform(-1, 1, shape) * scale).astype(dt)


def _shifted(x, shift):
    """``x`` along axis 0 read at ``i + shift``: zeros where that lies outside."""
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if 0 <= i + shift < x.shape[0]:
            out[i] = x[i + shift]
    return out


# (dtype, batch, M, K, N, BM, BN, BK, stages, shift)
BMM_CASES = [
    (np.float16, 3, 100, 72, 96, 64, 64, 32, 3, 0),
    (np.float16, 2, 130, 136, 72, 128, 64, 64, 4, 0),
    (BFLOAT16_NP, 3, 64, 40, 200, 64, 128, 16, 2, 1),
    (np.float16, 4, 33, 24, 40, 16, 32, 16, 5, -1),
]


@pytest.mark.parametrize("impl", ["wgmma", "sync"])
@pytest.mark.parametrize("case", BMM_CASES, ids=lambda c: "-".join(map(str, c[1:])))
def test_batched_product_of_staged_3d_loads(tile_backend, monkeypatch, case, impl):
    dt, nb, m, kk, n, BM, BN, BK, stages, shift = case
    if impl == "sync":
        monkeypatch.setenv("NUMBA_TILE_MMA", "sync")
    rng = np.random.default_rng()
    a, b = _rand(rng, (nb, m, kk), dt), _rand(rng, (nb, kk, n), dt)
    c = tile_backend.asarray(np.full((nb, m, n), 9, dt))
    tile_backend.run(bmm.with_options(num_stages=stages), tile_backend.asarray(a),
                     tile_backend.asarray(b), nt.partition(c, (1, BM, BN)), shift, BM, BN, BK)
    want = np.einsum("bik,bkj->bij", _shifted(a, shift).astype(np.float64),
                     _shifted(b, shift).astype(np.float64))
    np.testing.assert_allclose(tile_backend.to_numpy(c).astype(np.float64), want,
                               rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("impl", ["wgmma", "sync"])
def test_attention_shaped_loop_of_staged_4d_loads(tile_backend, monkeypatch, impl, stages):
    if impl == "sync":
        monkeypatch.setenv("NUMBA_TILE_MMA", "sync")
    rng = np.random.default_rng()
    B, H, S, T, D, BM, BN = 2, 3, 100, 150, 64, 64, 32
    q, k = _rand(rng, (B, H, S, D), np.float16, 0.25), _rand(rng, (B, H, T, D), np.float16, 0.25)
    v = _rand(rng, (B, H, T, D), np.float16)
    o = tile_backend.asarray(np.full((B, H, S, D), 9, np.float16))
    tile_backend.run(linear_attention.with_options(num_stages=stages), tile_backend.asarray(q),
                     tile_backend.asarray(k), tile_backend.asarray(v),
                     nt.partition(o, (1, 1, BM, D)), BM, BN, D)
    p = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k.astype(np.float64))
    want = np.einsum("bhij,bhjd->bhid", p.astype(np.float16).astype(np.float64),
                     v.astype(np.float64))
    np.testing.assert_allclose(tile_backend.to_numpy(o).astype(np.float64), want,
                               rtol=2e-2, atol=3e-2)


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shift", [0, 2, -1])
def test_staged_3d_load_read_back_into_registers(tile_backend, dt, shift):
    rng = np.random.default_rng()
    nb, m, kk, BM, BK = 3, 50, 300, 32, 64
    x = (rng.integers(-1000, 1000, (nb, m, kk)) if dt == np.int32
         else rng.standard_normal((nb, m, kk))).astype(dt)
    pad = -2**31 if dt == np.int32 else -np.inf
    out = tile_backend.asarray(np.zeros((nb, m), np.float32))
    tile_backend.run(row_max.with_options(num_stages=3), tile_backend.asarray(x),
                     nt.partition(out, (1, BM)), shift, BM, BK, pad)
    want = np.full((nb, m), float(pad))
    for i in range(nb):
        if 0 <= i + shift < nb:
            want[i] = x[i + shift].astype(np.float64).max(axis=1)
    np.testing.assert_allclose(tile_backend.to_numpy(out).astype(np.float64), want, rtol=1e-6)


def _explain_lines(kernel, *args):
    return str(kernel.explain(*args, cc=(9, 0)))


def test_leading_axis_loads_are_pipelined_in_the_ptx():
    a, b = np.zeros((3, 100, 72), np.float16), np.zeros((3, 72, 96), np.float16)
    c = np.zeros((3, 100, 96), np.float16)
    k3 = bmm.with_options(num_stages=3)
    args = (a, b, nt.partition(c, (1, 64, 64)), 0, 64, 64, 32)
    ptx = k3.ptx(*args)
    assert "cp.async.cg.shared.global" in ptx and "wgmma.mma_async" in ptx
    text = _explain_lines(k3, *args)
    assert text.count("pipelined: 3 stages of cp.async copies, read by the product") == 2, text
    q = np.zeros((2, 3, 100, 64), np.float16)
    args = (q, q, q, nt.partition(q.copy(), (1, 1, 64, 64)), 64, 32, 64)
    text = _explain_lines(linear_attention.with_options(num_stages=3), *args)
    assert text.count("pipelined: 3 stages of cp.async copies, read by the product") == 2, text
    x = np.zeros((3, 50, 300), np.float32)
    args = (x, nt.partition(np.zeros((3, 50), np.float32), (1, 32)), 0, 32, 64, -np.inf)
    text = _explain_lines(row_max.with_options(num_stages=3), *args)
    assert "pipelined: 3 stages of cp.async copies, read back into registers" in text, text


def test_a_load_whose_leading_coordinate_moves_is_not_pipelined():
    @nt.jit
    def moving(x, out: nt.Partition[(1, "BM")], BM: nt.Constant, BK: nt.Constant):
        for idx in nt.tiles(out):
            m = nt.zeros((1, BM), nt.float32)
            for k in range(4):
                m = m + nt.sum(nt.load(x, (k, idx[1], 0), (1, BM, BK), padding=0), axis=2)
            nt.store(out, m, idx)
    x = np.zeros((4, 64, 64), np.float32)
    text = _explain_lines(moving.with_options(num_stages=3), x,
                          nt.partition(np.zeros((4, 64), np.float32), (1, 32)), 32, 64)
    assert "not the loop variable on exactly one axis of the tile's two" in text, text


def test_a_load_under_an_if_says_why_it_is_not_pipelined():
    @nt.jit
    def alternate(x, out: nt.Partition[(1, 32)], n):
        for idx in nt.tiles(out):
            acc = nt.zeros((1, 32), nt.float32)
            for k in range(n):
                if k % 2 == 0:
                    acc = acc + nt.load(x, (k, idx[1]), (1, 32), padding=0)
            nt.store(out, acc, idx)
    x = np.zeros((4, 64), np.float32)
    text = _explain_lines(alternate.with_options(num_stages=3), x,
                          nt.partition(np.zeros((1, 64), np.float32), (1, 32)), 2)
    assert "it does not run in every iteration of its loop" in text, text
