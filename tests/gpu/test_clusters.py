"""Clusters of two blocks for warp-specialized persistent loops (``lowering/ws.py``,
*Clusters*; opt-in, ``NUMBA_TILE_CLUSTER=1``): blocks ``2c`` and ``2c + 1`` walk tiles ``t`` and ``t + 1`` in step; a staged
operand whose box coordinates both tiles share is multicast (each block issues half of it,
by boxes or by rows), the others are loaded alone, and a tile without a partner (the end
of the sequence, a partner with no tiles) is loaded and released alone. Exact values against
NumPy (small integers: every partial sum exact) for the tile orders that share ``b``
(grouped, group heights even and odd), ``a`` (row-major) or neither, 16-bit and FP8 (``b``
transposed: one box per tile, split by rows), grids from 2 blocks to more blocks than tiles,
and an odd grid (the same code launched without clusters)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP, FLOAT8_E4M3FN_NP
from numba_tile.testing import Backend

# a GPU schedule: the interpreter's twins of these kernels are test_wgmma's persistent ones
pytestmark = pytest.mark.gpu


@pytest.fixture
def tile_backend():
    return Backend("gpu")


def _persistent(num_warps, num_stages):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def persistent(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant):
        for idx in nt.tiles(c):
            i = idx[0]
            j = idx[1]
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (i, k), (BM, BK), padding=0)
                y = nt.load(b, (k, j), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            nt.store(c, acc, idx)
    return persistent


def _persistent_bt(num_warps, num_stages):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def persistent_bt(a, bt, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                      BK: nt.Constant):
        for idx in nt.tiles(c):
            i = idx[0]
            j = idx[1]
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (i, k), (BM, BK), padding=0)
                y = nt.load(bt, (j, k), (BN, BK), padding=0)
                acc = nt.mma(x, nt.transpose(y), acc)
            nt.store(c, acc, idx)
    return persistent_bt


@pytest.fixture(autouse=True)
def _defaults(monkeypatch):
    for key in ("NUMBA_TILE_MMA", "NUMBA_TILE_TMA", "NUMBA_TILE_WS", "NUMBA_TILE_CLUSTER",
                "NUMBA_TILE_WGMMA_PENDING"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    monkeypatch.setenv("NUMBA_TILE_CLUSTER", "1")       # opt-in (typing/pipeline.cluster_enabled)


def _order(o):
    return "row" if o == "row" else nt.grouped(o)


def _ints(rng, shape, dt):
    return rng.integers(-3, 4, shape).astype(dt)


# (M, K, N): tile grids of 5 x 3 (odd count), 2 x 8, 1 x 1, 3 x 2 (group height 3)
SHAPES = [(600, 200, 300), (129, 333, 1000), (64, 64, 64), (300, 104, 259)]


@pytest.mark.parametrize("order", ["row", 2, 3, 8])
@pytest.mark.parametrize("blocks", [2, 4, 7, 132])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_clustered_persistent_16_bit(tile_backend, shape, blocks, order):
    m, k, n = shape
    rng = np.random.default_rng()
    a, b = _ints(rng, (m, k), BFLOAT16_NP), _ints(rng, (k, n), BFLOAT16_NP)
    kernel = _persistent(8, 4)
    ck = kernel.compiled(a, b, nt.partition(np.zeros((m, n), np.float32), (128, 128),
                                            blocks=blocks, order=_order(order)),
                         128, 128, 64, cc=(9, 0))
    assert ck.cluster == 2 and "multicast::cluster" in ck.ptx and "barrier.cluster" in ck.ptx
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (128, 128), blocks=blocks, order=_order(order)),
                     128, 128, 64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(tile_backend.to_numpy(c), want)


@pytest.mark.parametrize("tile", [(128, 256, 64, 8, 4), (64, 128, 64, 4, 3)],
                         ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("blocks", [2, 132])
def test_clustered_wide_tiles(tile_backend, tile, blocks):
    """``b`` tiles of four boxes (128 x 256 x 64) and one warpgroup of consumers."""
    bm, bn, bk, w, s = tile
    m, k, n = 700, 300, 900
    rng = np.random.default_rng()
    a, b = _ints(rng, (m, k), np.float16), _ints(rng, (k, n), np.float16)
    kernel = _persistent(w, s)
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (bm, bn), blocks=blocks, order=nt.grouped(8)), bm, bn, bk)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(tile_backend.to_numpy(c), want)


@pytest.mark.parametrize("blocks", [2, 6, 132, 131])
@pytest.mark.parametrize("shape", [(300, 640, 515), (1000, 256, 260)],
                         ids=lambda s: "x".join(map(str, s)))
def test_clustered_fp8_rows_split(tile_backend, shape, blocks):
    """FP8 ``a`` (128 x 128) and transposed ``b`` (256 x 128): one box per tile, multicast as
    two half-row boxes (a second tensor map of half the rows); 131 blocks: no clusters."""
    m, k, n = shape
    rng = np.random.default_rng()
    a, bt = _ints(rng, (m, k), FLOAT8_E4M3FN_NP), _ints(rng, (n, k), FLOAT8_E4M3FN_NP)
    kernel = _persistent_bt(8, 4)
    part = nt.partition(np.zeros((m, n), np.float32), (128, 256), blocks=blocks,
                        order=nt.grouped(8))
    ck = kernel.compiled(a, bt, part, 128, 256, 128, cc=(9, 0))
    assert ck.cluster == 2
    assert ("a", 64) in ck.tensor_maps and ("bt", 128) in ck.tensor_maps
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(bt),
                     nt.partition(c, (128, 256), blocks=blocks, order=nt.grouped(8)),
                     128, 256, 128)
    want = a.astype(np.float64) @ bt.astype(np.float64).T
    np.testing.assert_array_equal(tile_backend.to_numpy(c), want)
