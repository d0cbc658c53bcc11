"""Pipelined loads of tiles with fewer 16-byte chunks than the block has threads.

A staged load copies its tile into shared slots in 16-byte chunks, one per thread and
repetition. When the tile has fewer chunks than the block has threads (a (16, 16) float16
tile is 32 chunks, a 4-warp block 128 threads), the threads past the tile must issue no
copy at all: ``cp.async`` with a source size of 0 still zero-fills its 16-byte destination,
which for those threads lies past the slot (other slots, other loads' rings, past the
kernel's shared memory: an illegal address that destroys the CUDA context).

Checked against NumPy in float64 on fresh random, ragged inputs over the whole class: every
``num_warps`` with more threads than the tile has chunks, every ``num_stages`` from 2 to 5,
products (float16, bfloat16, int8) in grid and persistent kernels, and looped row sums
whose tiles are read back into registers. The interpreter runs the same tests (where
``num_stages`` changes nothing).
"""

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP


def _gemm(warps, stages, out_dtype):
    @nt.jit(num_warps=warps, num_stages=stages)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK)),
                         nt.load(b, (k, nt.bid(1)), (BK, BN)), acc)
        nt.store(c, nt.astype(acc, out_dtype))
    return gemm


def _gemm_int8(warps, stages):
    @nt.jit(num_warps=warps, num_stages=stages)
    def gemm_i8(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.int32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK)),
                         nt.load(b, (k, nt.bid(1)), (BK, BN)), acc)
        nt.store(c, acc)
    return gemm_i8


def _gemm_persistent(warps, stages):
    @nt.jit(num_warps=warps, num_stages=stages)
    def gemm_p(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant):
        for idx in nt.tiles(c):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                acc = nt.mma(nt.load(a, (idx[0], k), (BM, BK)),
                             nt.load(b, (k, idx[1]), (BK, BN)), acc)
            nt.store(c, nt.astype(acc, nt.float32), idx)
    return gemm_p


def _row_sum(warps, stages):
    @nt.jit(num_warps=warps, num_stages=stages)
    def row_sum(x, out: nt.Partition[("BM", 1)], BM: nt.Constant, BN: nt.Constant):
        s = nt.zeros((BM, 1), nt.float32)
        for k in range(nt.num_tiles(x, 1, BN)):
            s = s + nt.sum(nt.astype(nt.load(x, (nt.bid(0), k), (BM, BN), padding=0), nt.float32), 1,
                           keepdims=True)
        nt.store(out, s)
    return row_sum


def _ragged(rng, tile, lo=1, hi=4):
    return int(rng.integers(lo * tile, hi * tile + 1)) + int(rng.integers(1, tile + 1)) % tile


# (BM, BN, BK) x num_warps where the staged tiles have fewer chunks than the block threads
GEMM_CASES = [((16, 16, 16), w) for w in (2, 4, 8, 16)] + [
    ((32, 32, 32), 8), ((32, 32, 32), 16), ((16, 32, 16), 4), ((32, 16, 32), 8),
    ((64, 16, 16), 8), ((16, 64, 32), 16)]


@pytest.mark.parametrize("stages", [2, 3, 4, 5])
@pytest.mark.parametrize("tiles,warps", GEMM_CASES,
                         ids=[f"{t[0]}x{t[1]}x{t[2]}-w{w}" for t, w in GEMM_CASES])
@pytest.mark.parametrize("dt", [np.float16, BFLOAT16_NP], ids=["f16", "bf16"])
def test_small_tile_products(tile_backend, dt, tiles, warps, stages):
    rng = np.random.default_rng()
    bm, bn, bk = tiles
    m, n, k = _ragged(rng, bm), _ragged(rng, bn), _ragged(rng, bk, 2, 5)
    k = max(8, k - k % 8)                   # rows of 16-byte multiples (the staged form)
    n = max(8, n - n % 8)
    ah = rng.standard_normal((m, k)).astype(dt)
    bh = rng.standard_normal((k, n)).astype(dt)
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(_gemm(warps, stages, nt.float32), tile_backend.asarray(ah),
                     tile_backend.asarray(bh), nt.partition(c, (bm, bn)), bm, bn, bk)
    ref = ah.astype(np.float64) @ bh.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(c), ref, rtol=1e-3, atol=1e-3 * k)


@pytest.mark.parametrize("stages", [2, 3, 5])
@pytest.mark.parametrize("tiles,warps", [((128, 16, 32), 2), ((32, 16, 32), 4),
                                         ((16, 16, 32), 8), ((64, 32, 64), 16)])
def test_small_tile_int8_products(tile_backend, tiles, warps, stages):
    rng = np.random.default_rng()
    bm, bn, bk = tiles
    m, n = _ragged(rng, bm), _ragged(rng, bn)
    k = 16 * int(rng.integers(bk // 16 + 1, 4 * bk // 16))
    n = max(16, n - n % 16)
    ah = rng.integers(-128, 128, (m, k)).astype(np.int8)
    bh = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = tile_backend.asarray(np.full((m, n), -1, np.int32))
    tile_backend.run(_gemm_int8(warps, stages), tile_backend.asarray(ah),
                     tile_backend.asarray(bh), nt.partition(c, (bm, bn)), bm, bn, bk)
    ref = ah.astype(np.int64) @ bh.astype(np.int64)
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.int64), ref)


@pytest.mark.parametrize("stages", [2, 4])
@pytest.mark.parametrize("warps", [4, 8])
def test_small_tile_persistent_products(tile_backend, warps, stages):
    rng = np.random.default_rng()
    bm = bn = bk = 16
    m, n = _ragged(rng, bm, 2, 5), 16 * int(rng.integers(2, 5)) + 8
    k = 16 * int(rng.integers(2, 6)) + 8
    ah = rng.standard_normal((m, k)).astype(np.float16)
    bh = rng.standard_normal((k, n)).astype(np.float16)
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    blocks = int(rng.integers(1, 7))
    tile_backend.run(_gemm_persistent(warps, stages), tile_backend.asarray(ah),
                     tile_backend.asarray(bh), nt.partition(c, (bm, bn), blocks=blocks),
                     bm, bn, bk)
    ref = ah.astype(np.float64) @ bh.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(c), ref, rtol=1e-3, atol=1e-3 * k)


ROW_CASES = [((2, 32), np.float16), ((2, 16), np.float32), ((1, 8), np.float16),
             ((4, 8), np.float32), ((1, 64), np.float32), ((1, 16), np.int8), ((2, 32), np.int8)]


@pytest.mark.parametrize("stages", [2, 3, 4, 5])
@pytest.mark.parametrize("warps", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("tile,dt", ROW_CASES,
                         ids=[f"{t[0]}x{t[1]}-{np.dtype(d).name}" for t, d in ROW_CASES])
def test_small_tile_row_sums(tile_backend, tile, dt, warps, stages):
    rng = np.random.default_rng()
    bm, bn = tile
    rows = _ragged(rng, bm, 2, 6)
    per16 = 16 // np.dtype(dt).itemsize
    cols = per16 * int(rng.integers(2, 4 * bn // per16 + 3))
    xh = rng.integers(-8, 9, (rows, cols)).astype(dt)
    out = tile_backend.asarray(np.full((rows, 1), np.nan, np.float32))
    tile_backend.run(_row_sum(warps, stages), tile_backend.asarray(xh),
                     nt.partition(out, (bm, 1)), bm, bn)
    ref = xh.astype(np.float64).sum(1, keepdims=True)
    np.testing.assert_array_equal(tile_backend.to_numpy(out).astype(np.float64), ref)


PREDICATED = re.compile(r"@%?\w+\s+cp\.async\.cg\.shared\.global")


@pytest.mark.parametrize("warps", [2, 4, 8, 16])
def test_threads_past_the_tile_issue_no_copy(warps):
    """PTX: with more threads than chunks, the copies are predicated on the thread lying
    inside the tile (a zero-byte ``cp.async`` would still write its destination)."""
    a = np.zeros((64, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    ptx = _gemm(warps, 3, nt.float32).ptx(a, a.copy(), nt.partition(c, (16, 16)), 16, 16, 16)
    copies = [ln for ln in ptx.splitlines() if "cp.async.cg.shared.global" in ln]
    assert copies and all(PREDICATED.search(ln) for ln in copies)
    # 32 chunks per (16, 16) float16 tile: with one warp every thread copies one, unpredicated
    ptx1 = _gemm(1, 3, nt.float32).ptx(a, a.copy(), nt.partition(c, (16, 16)), 16, 16, 16)
    copies1 = [ln for ln in ptx1.splitlines() if "cp.async.cg.shared.global" in ln]
    assert copies1 and not any(PREDICATED.search(ln) for ln in copies1)
