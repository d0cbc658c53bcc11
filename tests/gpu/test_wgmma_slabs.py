"""``wgmma`` with several 64-row slabs per warpgroup (``M`` a multiple of ``16 * num_warps``:
``layout.MmaLayout``'s interleaved rows, ``lowering/wgmma.py``), with 64-byte swizzle atoms
(``K`` or ``N`` of 32 16-bit elements: ``lowering/wgmma.atom_width``), and the natural forms of a
K loop's product (``acc += a @ b``, ``acc = acc + nt.matmul(a, b)``, ``acc = a @ b + acc``),
which compile to the same ``mma`` (``typing/mma.fuse_accumulating_products``): NumPy's float64
product on ragged shapes, operands from registers, from ``cp.async`` slots and from TMA
boxes (warp-specialized), on the GPU and in the interpreter."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP


def gemm_mma(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
        y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
        acc = nt.mma(x, y, acc)
    nt.store(c, nt.astype(acc, c.dtype))


def gemm_iadd(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
              BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
        y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
        acc += x @ y
    nt.store(c, nt.astype(acc, c.dtype))


def gemm_matmul(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        acc = acc + nt.matmul(nt.load(a, (nt.bid(0), k), (BM, BK), padding=0),
                              nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0))
    nt.store(c, nt.astype(acc, c.dtype))


def gemm_radd(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
              BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
        y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
        acc = x @ y + acc
    nt.store(c, nt.astype(acc, c.dtype))


FORMS = {"mma": gemm_mma, "iadd": gemm_iadd, "matmul": gemm_matmul, "radd": gemm_radd}


def _gemm(form, num_warps, num_stages):
    return nt.jit(num_warps=num_warps, num_stages=num_stages)(FORMS[form])


# (dtype, (M, K, N), (BM, BN, BK), num_warps): M = 2 or 4 slabs per warpgroup
CASES = [
    (np.float16, (300, 190, 200), (128, 128, 64), 4),
    (BFLOAT16_NP, (257, 333, 130), (128, 64, 64), 4),
    (np.float16, (520, 129, 260), (256, 64, 64), 4),
    (BFLOAT16_NP, (300, 200, 515), (256, 128, 64), 8),
    (np.float16, (129, 256, 70), (128, 64, 128), 4),
    # 64-byte swizzle atoms: K = 32, N = 32
    (np.float16, (300, 190, 200), (128, 128, 32), 4),
    (BFLOAT16_NP, (257, 100, 70), (64, 32, 64), 4),
    (np.float16, (130, 97, 100), (64, 64, 32), 4),
    (BFLOAT16_NP, (200, 129, 90), (128, 32, 32), 4),
]


def _check(tile_backend, kernel, dt, mkn, tiles):
    (m, k, n), (bm, bn, bk) = mkn, tiles
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (m, k)).astype(np.float64).astype(dt)
    b = rng.standard_normal((k, n)).astype(dt)
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (bm, bn)), bm, bn, bk)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = tile_backend.to_numpy(c)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1.0
    assert np.isfinite(got).all()
    bad = np.abs(got - want) > 1e-4 * scale
    assert not bad.any(), (np.argwhere(bad)[:5], np.abs(got - want).max())


@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize("case", CASES,
                         ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-{c[2]}-w{c[3]}")
def test_multi_slab_wgmma_against_float64(tile_backend, case, stages):
    dt, mkn, tiles, w = case
    kernel = _gemm("mma", w, stages)
    bm, bn, bk = tiles
    ptx = kernel.ptx(np.zeros((64, 64), dt), np.zeros((64, 64), dt),
                     nt.partition(np.zeros((64, 64), np.float32), (bm, bn)), bm, bn, bk, cc=(9, 0))
    assert "wgmma.mma_async" in ptx
    _check(tile_backend, kernel, dt, mkn, tiles)


@pytest.mark.parametrize("form", ["iadd", "matmul", "radd"])
@pytest.mark.parametrize("stages", [1, 3])
def test_natural_accumulation_forms_compute_the_product(tile_backend, form, stages):
    dt, mkn, tiles, w = CASES[0] if stages == 3 else CASES[2]
    _check(tile_backend, _gemm(form, w, stages), dt, mkn, tiles)
