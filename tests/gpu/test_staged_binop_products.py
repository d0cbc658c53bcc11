"""Pipelined loads feeding a bare ``x @ y`` (not an accumulation numba_tile fuses into ``mma``):
``s = x @ y``, ``acc = acc - x @ y``, ``alpha * (x @ y)``. Numba types a binop again when it
lowers it, so the pipeline rewrites such a product into ``matmul(x, y)`` (the same product),
which reads the staged slots; before, the product multiplied registers nobody wrote. On the
GPU (``wgmma`` and ``mma.sync``) and in the interpreter, against NumPy in float64; the PTX
checks need no GPU. A ``load_at`` step of 2**31 or more is not staged (the lowering recovers
``k`` from ``k * C``)."""

import numpy as np
import pytest

import numba_tile as nt


@nt.jit(num_warps=4)
def products(a, b, c: nt.Partition[("BM", "BN")], alpha, FORM: nt.Constant, BM: nt.Constant,
             BN: nt.Constant, BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
            y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
            if FORM == 0:
                acc = x @ y                       # the last K step's product
            elif FORM == 1:
                acc = acc - x @ y
            else:
                acc = acc + alpha * (x @ y)
        nt.store(c, nt.astype(acc, c.dtype), idx)


def _want(a, b, form, alpha, BK):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if form == 0:
        last = (a.shape[1] - 1) // BK * BK
        return a64[:, last:last + BK] @ b64[last:last + BK]
    return (-1.0 if form == 1 else alpha) * (a64 @ b64)


@pytest.mark.parametrize("impl", ["wgmma", "sync"])
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("form", [0, 1, 2], ids=["last", "minus", "scaled"])
def test_a_bare_product_of_pipelined_loads(tile_backend, monkeypatch, form, stages, impl):
    if impl == "sync":
        monkeypatch.setenv("NUMBA_TILE_MMA", "sync")
    rng = np.random.default_rng()
    m, kk, n, BM, BN, BK = 100, 136, 72, 64, 64, 32
    a = rng.uniform(-1, 1, (m, kk)).astype(np.float16)
    b = rng.uniform(-1, 1, (kk, n)).astype(np.float16)
    c = tile_backend.asarray(np.full((m, n), 9, np.float32))
    tile_backend.run(products.with_options(num_stages=stages), tile_backend.asarray(a),
                     tile_backend.asarray(b), nt.partition(c, (BM, BN)), 0.5, form, BM, BN, BK)
    np.testing.assert_allclose(tile_backend.to_numpy(c), _want(a, b, form, 0.5, BK),
                               rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("form", [0, 1, 2])
def test_the_product_issues_the_copies_of_its_pipelined_operands(form):
    a, b = np.zeros((128, 128), np.float16), np.zeros((128, 128), np.float16)
    args = (a, b, nt.partition(np.zeros((128, 128), np.float32), (64, 64)), 0.5, form, 64, 64,
            64)
    k3 = products.with_options(num_stages=3)
    text = str(k3.explain(*args, cc=(9, 0)))
    assert text.count("read by the product from shared memory") == 2, text
    ptx = k3.ptx(*args)
    assert "wgmma.mma_async" in ptx and "cp.async.cg.shared.global" in ptx


def test_a_load_at_step_of_2_31_or_more_is_not_pipelined():
    @nt.jit
    def far(x, out: nt.Partition[(1, 32)], n, C: nt.Constant):
        for idx in nt.tiles(out):
            acc = nt.zeros((1, 32), nt.float32)
            for k in range(n):
                acc = acc + nt.load_at(x, (k * C, idx[1] * 32), (1, 32), padding=0)
            nt.store(out, acc, idx)
    x = np.zeros((4, 64), np.float32)
    out = nt.partition(np.zeros((1, 64), np.float32), (1, 32))
    staged = str(far.with_options(num_stages=3).explain(x, out, 2, 2**31 - 1, cc=(9, 0)))
    assert "read back into registers" in staged, staged
    text = str(far.with_options(num_stages=3).explain(x, out, 2, 2**31, cc=(9, 0)))
    assert "not pipelined: its offset is not `k * C`" in text, text
