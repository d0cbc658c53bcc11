"""``NUMBA_TILE_MMA=wgmma`` on the H200: the products ``lowering/wgmma.py`` takes give NumPy's
float64 result, for bf16 and f16, ragged M, N and K (masked edges: the staged operands hold
zeros there), one and two warpgroups, operands from registers and from pipelined loads
(``num_stages=3``: cp.async slots read by wgmma), and the kernel really runs wgmma (its PTX
says so)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

pytestmark = pytest.mark.gpu


def _gemm(num_warps, num_stages=1):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK))       # masked at the edges
            y = nt.load(b, (k, nt.bid(1)), (BK, BN))
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    return gemm


# (dtype, (M, K, N), (BM, BN, BK), num_warps)
CASES = [
    (BFLOAT16_NP, (64, 64, 64), (64, 64, 64), 4),
    (BFLOAT16_NP, (300, 190, 200), (64, 128, 64), 4),
    (np.float16, (257, 333, 515), (64, 256, 64), 4),
    (BFLOAT16_NP, (300, 200, 260), (128, 128, 64), 8),
    (np.float16, (129, 511, 300), (128, 256, 128), 8),
]


@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-{c[2]}-w{c[3]}")
def test_wgmma_products_against_float64(case, stages, monkeypatch):
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    dt, (m, k, n), (bm, bn, bk), w = case
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (m, k)).astype(np.float64).astype(dt)    # exact in 16 bits
    b = rng.standard_normal((k, n)).astype(dt)
    if stages > 1 and (bm, bn, w) == (64, 256, 4):
        pytest.skip("64 x 256 over 4 warps spills with pipelined loads (tests/compile)")
    kernel = _gemm(w, stages)
    assert "wgmma.mma_async" in kernel.ptx(a, b, nt.partition(np.zeros((m, n), np.float32),
                                                               (bm, bn)), bm, bn, bk)
    c = cp.full((m, n), np.nan, cp.float32)
    kernel(cp.asarray(a), cp.asarray(b), nt.partition(c, (bm, bn)), bm, bn, bk).sync()
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = cp.asnumpy(c)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1.0
    assert np.isfinite(got).all()
    assert (np.abs(got - want) <= 1e-4 * scale).all(), np.abs(got - want).max()


def test_a_product_wgmma_does_not_take_reads_atom_slots_with_ldmatrix(monkeypatch):
    """Where wgmma is forced, pipelined slots of whole 128-byte atoms take the atom layout
    even when their product stays on mma.sync (here M = 128 over 4 warps): ldmatrix reads that
    layout too, and the values are NumPy's."""
    cp = pytest.importorskip("cupy")
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    rng = np.random.default_rng()
    m, k, n = 300, 200, 260
    a = rng.integers(-3, 4, (m, k)).astype(np.float64).astype(BFLOAT16_NP)
    b = rng.standard_normal((k, n)).astype(BFLOAT16_NP)
    kernel = _gemm(4, 3)
    ptx = kernel.ptx(a, b, nt.partition(np.zeros((m, n), np.float32), (128, 128)), 128, 128, 64)
    assert "mma.sync" in ptx and "wgmma.mma_async" not in ptx
    c = cp.full((m, n), np.nan, cp.float32)
    kernel(cp.asarray(a), cp.asarray(b), nt.partition(c, (128, 128)), 128, 128, 64).sync()
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1.0
    assert (np.abs(cp.asnumpy(c) - want) <= 1e-4 * scale).all()
