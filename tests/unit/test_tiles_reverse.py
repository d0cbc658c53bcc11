"""``tiles(z, [strip,] reverse=True)``: the reversed walk against an independent NumPy model (1-D
to 3-D, row-major and grouped orders, break and continue, nested loops, strips of another
partition), its refusals, and its PTX (no 64-bit division, no producer walk; ``reverse=False``
keeps the persistent walk of ``tiles(z)``)."""

from __future__ import annotations

import re
import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import ForeignTileStoreError, TileTypingError


# ----------------------------------------------------------------------------- reverse: model

def _coords(lin, grid, order):
    """Tile number -> tile coordinates (row-major, or Triton's grouped order over the last two
    axes with the leading axes row-major), written independently of runtime/partition.py."""
    if order is None or len(grid) < 2:
        return tuple(int(c) for c in np.unravel_index(lin, grid))
    m, n = grid[-2], grid[-1]
    lead, pid = divmod(lin, m * n)
    g = order
    in_group = g * n
    first = (pid // in_group) * g
    size = min(m - first, g)
    pm = first + (pid % in_group) % size
    pn = (pid % in_group) // size
    head = tuple(int(c) for c in np.unravel_index(lead, grid[:-2])) if len(grid) > 2 else ()
    return head + (pm, pn)


def _expected(shape, tile, blocks, order, keep=lambda step: True, first_step=0):
    """Each element: bid * 1000 + the tile's place in its block's reversed walk, -1 untouched."""
    grid = tuple(-(-s // t) for s, t in zip(shape, tile))
    total = math.prod(grid)
    out = np.full(shape, -1, np.int32)
    for b in range(blocks):
        for step, lin in enumerate(list(range(b, total, blocks))[::-1], first_step):
            if not keep(step):
                continue
            c = _coords(lin, grid, order)
            out[tuple(slice(ci * ti, (ci + 1) * ti) for ci, ti in zip(c, tile))] = b * 1000 + step
    return out


def _part(y, tile, blocks, order):
    if order is None:
        return nt.partition(y, tile, blocks=blocks)
    return nt.partition(y, tile, blocks=blocks, order=nt.grouped(order))


@nt.jit
def visit1(y: nt.Partition["B"], B: nt.Constant):
    step = 0
    for idx in nt.tiles(y, reverse=True):
        nt.store(y, nt.full((B,), nt.bid(0) * 1000 + step, nt.int32), idx)
        step += 1


@nt.jit
def visit2(y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant, REV: nt.Constant):
    step = 0
    for idx in nt.tiles(y, reverse=REV):
        nt.store(y, nt.full((BM, BN), nt.bid(0) * 1000 + step, nt.int32), idx)
        step += 1


@nt.jit
def visit3(y: nt.Partition["BA", "BM", "BN"], BA: nt.Constant, BM: nt.Constant,
           BN: nt.Constant):
    step = 0
    for idx in nt.tiles(y, reverse=True):
        nt.store(y, nt.full((BA, BM, BN), nt.bid(0) * 1000 + step, nt.int32), idx)
        step += 1


@pytest.mark.parametrize("n, b, blocks", [(0, 4, 3), (3, 4, 3), (37, 4, 3), (16, 4, 9),
                                          (64, 8, 1)])
def test_reverse_1d(n, b, blocks):
    y = np.full(n, -1, np.int32)
    visit1(nt.partition(y, (b,), blocks=blocks), b, interpret=True)
    np.testing.assert_array_equal(y, _expected((n,), (b,), blocks, None))


@pytest.mark.parametrize("shape, tile, blocks, order", [
    ((50, 70), (8, 16), 4, None), ((50, 70), (8, 16), 4, 2), ((50, 70), (8, 16), 5, 3),
    ((50, 70), (8, 16), 3, 100),        # group larger than the grid's rows
    ((16, 32), (8, 16), 7, 2),          # more blocks than tiles
    ((8, 8), (8, 8), 3, None),          # one tile
    ((0, 8), (4, 4), 2, None),          # no tiles
    ((9, 9), (4, 4), 1, 2),             # one block walks all, ragged both ways
])
def test_reverse_2d_orders(shape, tile, blocks, order):
    y = np.full(shape, -1, np.int32)
    visit2(_part(y, tile, blocks, order), *tile, True, interpret=True)
    np.testing.assert_array_equal(y, _expected(shape, tile, blocks, order))
    # the forward walk of the same partition visits the same tiles (only the step differs)
    z = np.full(shape, -1, np.int32)
    visit2(_part(z, tile, blocks, order), *tile, False, interpret=True)
    np.testing.assert_array_equal(z // 1000, y // 1000)


@pytest.mark.parametrize("order", [None, 2])
def test_reverse_3d(order):
    shape, tile, blocks = (3, 20, 12), (1, 8, 4), 4
    y = np.full(shape, -1, np.int32)
    visit3(_part(y, tile, blocks, order), *tile, interpret=True)
    np.testing.assert_array_equal(y, _expected(shape, tile, blocks, order))


@nt.jit
def visit_skip(y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant, K: nt.Constant):
    step = 0
    for idx in nt.tiles(y, reverse=True):
        step += 1
        if step % 2 == 0:
            continue
        if step > K:
            break
        nt.store(y, nt.full((BM, BN), nt.bid(0) * 1000 + step, nt.int32), idx)


def test_reverse_with_break_and_continue():
    shape, tile, blocks, k = (40, 40), (8, 8), 3, 5
    y = np.full(shape, -1, np.int32)
    visit_skip(nt.partition(y, tile, blocks=blocks), *tile, k, interpret=True)
    ref = _expected(shape, tile, blocks, None, keep=lambda s: s % 2 == 1 and s <= k,
                    first_step=1)
    np.testing.assert_array_equal(y, ref)


@nt.jit
def nested_reverse(y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    outer = 0
    for a in nt.tiles(y, reverse=True):
        inner = 0
        for idx in nt.tiles(y, reverse=True):
            nt.store(y, nt.full((BM, BN), outer * 100 + inner, nt.int32), idx)
            inner += 1
        outer += 1


def test_nested_reversed_loops_are_independent():
    shape, tile, blocks = (24, 24), (8, 8), 4
    y = np.full(shape, -1, np.int32)
    nested_reverse(nt.partition(y, tile, blocks=blocks), *tile, interpret=True)
    ref = np.full(shape, -1, np.int32)
    grid = (3, 3)
    for b in range(blocks):
        mine = list(range(b, 9, blocks))[::-1]
        for k, lin in enumerate(mine):
            i, j = divmod(lin, grid[1])
            ref[i * 8:(i + 1) * 8, j * 8:(j + 1) * 8] = (len(mine) - 1) * 100 + k
    np.testing.assert_array_equal(y, ref)


@nt.jit
def strip_walks(src, x: nt.Partition[(1, "BN")], y: nt.Partition[(1, "BN")], BN: nt.Constant):
    # y's row tiles through x's strips, backwards (suffix sums), then x's own forwards
    for row in nt.strips(x):
        acc = nt.zeros((1, BN), nt.float32)
        for idx in nt.tiles(y, row, reverse=True):
            acc = acc + nt.load(src, idx, (1, BN), padding=0.0)
            nt.store(y, acc, idx)
        acc2 = nt.zeros((1, BN), nt.float32)
        for idx in nt.tiles(x, row):
            acc2 = acc2 + nt.load(src, idx, (1, BN), padding=0.0)
            nt.store(x, acc2, idx)


@pytest.mark.parametrize("xrows, yrows", [(5, 5), (7, 4), (3, 6)])
def test_reversed_strip_tiles_through_another_partitions_strips(xrows, yrows):
    n, bn, blocks = 45, 8, 3
    rng = np.random.default_rng(1)
    src = rng.integers(-5, 6, (8, n)).astype(np.float32)
    x = np.full((xrows, n), np.nan, np.float32)
    y = np.full((yrows, n), np.nan, np.float32)
    strip_walks(src, nt.partition(x, (1, bn), blocks=blocks),
                nt.partition(y, (1, bn), blocks=blocks), bn, interpret=True)
    k = -(-n // bn)
    ch = np.pad(src, ((0, 0), (0, k * bn - n))).reshape(8, k, bn)
    suffix = np.cumsum(ch[:, ::-1], axis=1)[:, ::-1].reshape(8, k * bn)[:, :n]
    prefix = np.cumsum(ch, axis=1).reshape(8, k * bn)[:, :n]
    rows = min(xrows, yrows)        # y's rows past x's strips are never reached
    np.testing.assert_array_equal(y[:rows], suffix[:rows])
    assert np.isnan(y[rows:]).all()
    np.testing.assert_array_equal(x, prefix[:xrows])


# -------------------------------------------------------------------------- reverse: refusals

@nt.jit
def reversed_foreign(x: nt.Partition["BM", "BN"], y: nt.Partition["BM", "BN"],
                     BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(x, reverse=True):
        nt.store(y, nt.load(x, idx, padding=0.0), idx)


@nt.jit
def strips_then_reversed(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for idx in nt.tiles(y, reverse=True):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def int_reverse(y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(y, reverse=1):
        nt.store(y, nt.zeros((BM, BN), nt.float32), idx)


def test_reversed_indices_are_refused_elsewhere():
    y = np.zeros((16, 16), np.float32)
    with pytest.raises(ForeignTileStoreError):
        reversed_foreign(nt.partition(np.ones((16, 16), np.float32), (4, 4), blocks=2),
                         nt.partition(y, (4, 4), blocks=2), 4, 4, interpret=True)
    with pytest.raises(ForeignTileStoreError, match="both tiles\\(y\\) and strips\\(y\\)"):
        strips_then_reversed(np.ones((16, 16), np.float32), nt.partition(y, (4, 4), blocks=2),
                             4, 4, interpret=True)
    with pytest.raises(TileTypingError, match="static bool"):
        int_reverse(nt.partition(y, (4, 4), blocks=2), 4, 4, interpret=True)
    assert not y.any()


# ------------------------------------------------------------------------------ reverse: PTX

def _body(ptx):
    return ptx[ptx.index("{", ptx.index(".entry")):]


@nt.jit(num_warps=8, num_stages=4)
def gemm_tiles(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (idx[0], k), (BM, BK), padding=0),
                         nt.load(b, (k, idx[1]), (BK, BN), padding=0), acc)
        nt.store(c, acc, idx)


@nt.jit(num_warps=8, num_stages=4)
def gemm_tiles_rev(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant, REV: nt.Constant):
    for idx in nt.tiles(c, reverse=REV):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (idx[0], k), (BM, BK), padding=0),
                         nt.load(b, (k, idx[1]), (BK, BN), padding=0), acc)
        nt.store(c, acc, idx)


def _gemm_ptx(rev=None):
    """PTX (sm_90) of a persistent-shaped GEMM: tiles(c) (rev None) or tiles(c, reverse=rev)."""
    a, b = np.zeros((1000, 704), BFLOAT16_NP), np.zeros((704, 896), BFLOAT16_NP)
    c = nt.partition(np.zeros((1000, 896), np.float32), (128, 256), blocks=132)
    if rev is None:
        return gemm_tiles.ptx(a, b, c, 128, 256, 64, cc=(9, 0))
    return gemm_tiles_rev.ptx(a, b, c, 128, 256, 64, rev, cc=(9, 0))


def test_reversed_tiles_of_large_tiles_need_no_64_bit_division():
    """The reversed walk's start, bid + (total - 1 - bid) / nctaid * nctaid, is no 64-bit udiv
    (urem after LLVM): that would be a call to ptxas' emulation routine, which makes ptxas
    serialize every wgmma of the kernel (C7509). The forward walk maps tiles of >= 256 elements
    with 32-bit divisions for exactly that reason (lowering/partition.SMALL_TILE_ELEMS)."""
    fwd = _body(_gemm_ptx())
    assert "div.u64" not in fwd and "rem.u64" not in fwd
    rev = _body(_gemm_ptx(True))
    assert "div.u64" not in rev and "rem.u64" not in rev


def _mbarrier_ops(ptx):
    return len(re.findall(r"^\s+mbarrier\.", ptx, re.M))


def test_reversed_loop_is_never_walked_by_the_producer():
    # both loops are warp-specialized; only the forward one is walked by the producer across
    # tiles: its producer starts the walk at its own block's tile, the one place besides the
    # consumers' bid() that reads %ctaid.x. (%nctaid.x reads are no measure: NVVM
    # rematerializes them.)
    fwd, rev = _gemm_ptx(), _gemm_ptx(True)
    assert "setmaxnreg" in fwd and "setmaxnreg" in rev
    assert _mbarrier_ops(rev) <= _mbarrier_ops(fwd)
    assert fwd.count("%ctaid.x") > rev.count("%ctaid.x")


def test_explicit_reverse_false_keeps_the_persistent_walk():
    """tiles(c, reverse=False), the documented default written out, keeps the warp-specialized
    persistent walk that tiles(c) gets (typing/pipeline._persistent_tiles reads the walk's
    direction from the iterator's type, not from the call's form)."""
    assert _mbarrier_ops(_gemm_ptx(False)) == _mbarrier_ops(_gemm_ptx())
