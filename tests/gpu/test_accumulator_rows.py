"""Row statistics of a product's accumulator computed and used in its own layout: ``keepdims``
reductions along the rows (``layout.VectorLayout``: no shared memory), broadcast back onto the
accumulator and onto a second accumulator of the same rows (attention's ``acc * alpha``), loop
state carried in that layout, positions from ``arange`` compared with the accumulator (a causal
mask) made in its rows and columns, and operand ``a`` of ``wgmma`` read from registers. Both
backends against NumPy in float64, ``wgmma`` and ``mma.sync`` shapes; the PTX checks (no
shared memory between the products, register operands) need no GPU."""

import re

import numpy as np
import pytest

import numba_tile as nt


@nt.jit
def row_stats(a, b, c, out: nt.Partition[("BM", "D")], BM: nt.Constant, BN: nt.Constant,
              K: nt.Constant, D: nt.Constant, OP: nt.Constant):
    """out = (a @ b - rowstat(a @ b)) combined into a second product's rows."""
    for idx in nt.tiles(out):
        x = nt.load(a, (idx[0], 0), (BM, K), padding=0)
        s = x @ nt.load(b, (0, 0), (K, BN), padding=0)
        if OP == 0:
            r = nt.max(s, axis=1, keepdims=True)
        elif OP == 1:
            r = nt.sum(s, axis=1, keepdims=True)
        else:
            r = nt.min(s, axis=1, keepdims=True)
        p = nt.astype(s - r, a.dtype)
        o = p @ nt.load(c, (0, 0), (BN, D), padding=0)
        nt.store(out, nt.astype(o * r, out.dtype), idx)


@nt.jit
def causal_online(q, k, v, o: nt.Partition[("BM", "D")], BM: nt.Constant, BN: nt.Constant,
                  D: nt.Constant):
    """A causal online softmax over key tiles: positions from arange, running statistics."""
    n = k.shape[0]
    for idx in nt.tiles(o):
        qt = nt.load(q, (idx[0], 0), (BM, D), padding=0)
        q_pos = idx[0] * BM + nt.arange(BM)[:, None]
        m_i = nt.full((BM, 1), -np.inf, nt.float32)
        l_i = nt.zeros((BM, 1), nt.float32)
        acc = nt.zeros((BM, D), nt.float32)
        for j in range(nt.num_tiles(k, 0, BN)):
            s = qt @ nt.load(k, (j, 0), (BN, D), padding=0).T
            k_pos = j * BN + nt.arange(BN)[None, :]
            s = nt.where((k_pos <= q_pos) & (k_pos < n), s, -np.inf)
            m_new = nt.maximum(m_i, nt.max(s, axis=1, keepdims=True))
            p = nt.exp(s - m_new)
            alpha = nt.exp(m_i - m_new)
            l_i = l_i * alpha + nt.sum(p, axis=1, keepdims=True)
            acc = acc * alpha + nt.astype(p, q.dtype) @ nt.load(v, (j, 0), (BN, D), padding=0)
            m_i = m_new
        nt.store(o, nt.astype(acc / l_i, o.dtype), idx)


CONFIGS = [  # (BM, BN, K, D, num_warps): wgmma (M a multiple of 16 * warps) and mma.sync
    (64, 64, 32, 64, 4), (128, 64, 64, 128, 8), (128, 128, 32, 64, 4), (64, 16, 16, 32, 4),
    (32, 32, 16, 16, 2), (16, 16, 16, 16, 1), (256, 64, 16, 64, 16)]


@pytest.mark.parametrize("bm, bn, kd, d, warps", CONFIGS)
@pytest.mark.parametrize("op", [0, 1, 2])
def test_row_statistics_of_an_accumulator(tile_backend, bm, bn, kd, d, warps, op):
    rng = np.random.default_rng()
    m = bm * 2 + int(rng.integers(0, bm))
    a = (rng.standard_normal((m, kd)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((kd, bn)) * 0.5).astype(np.float16)
    c = (rng.standard_normal((bn, d)) * 0.5).astype(np.float16)
    out = tile_backend.asarray(np.full((m, d), np.nan, np.float32))
    tile_backend.run(row_stats.with_options(num_warps=warps), tile_backend.asarray(a),
                     tile_backend.asarray(b), tile_backend.asarray(c),
                     nt.partition(out, (bm, d)), bm, bn, kd, d, op)
    s = a.astype(np.float64) @ b.astype(np.float64)
    r = {0: s.max(1, keepdims=True), 1: s.sum(1, keepdims=True), 2: s.min(1, keepdims=True)}[op]
    p = (s - r).astype(np.float16).astype(np.float64)
    want = (p @ c.astype(np.float64)) * r
    np.testing.assert_allclose(tile_backend.to_numpy(out), want, rtol=2e-2,
                               atol=2e-2 * np.abs(want).max())


@pytest.mark.parametrize("bm, bn, d, warps", [(64, 64, 64, 4), (128, 64, 128, 8),
                                              (64, 32, 32, 4), (32, 16, 16, 2)])
def test_causal_online_softmax_with_positions_from_arange(tile_backend, bm, bn, d, warps):
    rng = np.random.default_rng()
    n = int(rng.integers(1, 3 * bm))
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) for _ in range(3))
    o = tile_backend.asarray(np.full((n, d), np.nan, np.float32))
    tile_backend.run(causal_online.with_options(num_warps=warps, num_stages=2),
                     tile_backend.asarray(q), tile_backend.asarray(k), tile_backend.asarray(v),
                     nt.partition(o, (bm, d)), bm, bn, d)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    s = np.where(np.arange(n)[None, :] <= np.arange(n)[:, None], s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(o), want, rtol=2e-2, atol=2e-2)


def _loop_body(ptx: str) -> str:
    """The PTX between the loop's first and last ``wgmma``."""
    lines = ptx.splitlines()
    at = [i for i, line in enumerate(lines) if "wgmma.mma_async" in line]
    return "\n".join(lines[at[0]:at[-1] + 1])


def test_the_online_softmax_loop_touches_shared_memory_only_through_its_pipeline(monkeypatch):
    """Between its products the loop moves nothing through shared memory: the row maximum
    and sum stay in the scores' rows, the positions are made in the scores' rows and
    columns, the probabilities and (with ``NUMBA_TILE_REGISTER_A=1``) the queries are the
    products' register operands."""
    monkeypatch.setenv("NUMBA_TILE_REGISTER_A", "1")
    z = np.zeros((300, 64), np.float16)
    ptx = causal_online.with_options(num_warps=4, num_stages=3).ptx(
        z, z, z, nt.partition(np.zeros((300, 64), np.float32), (64, 64)), 64, 64, 64,
        cc=(9, 0))
    body = _loop_body(ptx)
    assert "st.shared" not in body and "ld.shared" not in body, \
        "shared memory between the loop's products"
    wgmma = re.findall(r"wgmma\.mma_async\S* \{[^}]*\}, (\S+)", ptx)
    assert wgmma and all(a.startswith("{") for a in wgmma), wgmma    # A from registers


def test_loaded_operands_are_staged_unless_register_a_is_asked(monkeypatch):
    """By default the queries (a loaded tile) reach the scores' product through shared
    memory; the probabilities (an accumulator) stay the register operand of ``p @ v``."""
    monkeypatch.delenv("NUMBA_TILE_REGISTER_A", raising=False)
    z = np.zeros((300, 64), np.float16)
    ptx = causal_online.with_options(num_warps=4, num_stages=3).ptx(
        z, z, z, nt.partition(np.zeros((300, 64), np.float32), (64, 64)), 64, 64, 64,
        cc=(9, 0))
    shapes = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k16)\S* \{[^}]*\}, (\S+)",
                        ptx)
    from_regs = {a.startswith("{") for _shape, a in shapes}
    assert from_regs == {True, False}, shapes


def test_a_row_reduction_of_an_accumulator_moves_nothing_through_shared_memory():
    z = np.zeros((128, 64), np.float16)
    ptx = row_stats.with_options(num_warps=4).ptx(
        z, z[:64], z[:64], nt.partition(np.zeros((128, 64), np.float32), (64, 64)), 64, 64,
        64, 64, 0, cc=(9, 0))
    body = _loop_body(ptx)
    assert "shfl.sync.bfly" in body                          # the row tree's shuffles
    assert "st.shared.f32" not in body and "ld.shared.f32" not in body   # stats stay put
    assert re.search(r"wgmma\.mma_async\S* \{[^}]*\}, \{", body)    # p @ c: a in registers
