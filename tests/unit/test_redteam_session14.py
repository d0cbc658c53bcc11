"""Red team, session 14: ``tiles(z, [strip,] reverse=True)`` (interpreter against an independent
NumPy model, refusals, PTX) and the register-only moves ``local_slots``/``local_lines``
(brute force against ``BlockedLayout``/``SliceLayout.linear_index``)."""

from __future__ import annotations

import itertools
import re
import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import ForeignTileStoreError, TileTypingError
from numba_tile.layout import BlockedLayout, SliceLayout
from numba_tile.lowering.layouts import local_lines, local_slots


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
    """Found by the session-14 review, fixed: the reversed walk's start, bid + (total - 1 - bid) / nctaid * nctaid, is a 64-bit
    udiv (urem after LLVM): a call to ptxas' emulation routine, which makes ptxas serialize
    every wgmma of the kernel (C7509). The forward walk maps tiles of >= 256 elements with
    32-bit divisions for exactly that reason (lowering/partition.SMALL_TILE_ELEMS)."""
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
    """Found by the session-14 review, fixed (performance): tiles(c, reverse=False), the documented default written out, loses
    the warp-specialized persistent walk that tiles(c) gets: typing/pipeline._persistent_tiles
    requires a call with one argument and no keywords."""
    assert _mbarrier_ops(_gemm_ptx(False)) == _mbarrier_ops(_gemm_ptx())


# ------------------------------------------------------------------- local moves: brute force

P = (1, 2, 4, 8, 16, 32)


def _shapes(nd, maxn):
    return [s for s in itertools.product(P, repeat=nd) if math.prod(s) <= maxn]


def _unravel(lin, shape):
    out = []
    for s in reversed(shape):
        lin, r = divmod(lin, s)
        out.append(r)
    return out[::-1]


def _ravel(coords, shape):
    lin = 0
    for s, c in zip(shape, coords):
        lin = lin * s + c
    return lin


def _bsrc(lin, ss, ds):
    """Row-major index in ``ss`` of the element NumPy's broadcast to ``ds`` puts at ``lin``."""
    c = _unravel(lin, ds)[len(ds) - len(ss):]
    return _ravel([0 if s == 1 else x for s, x in zip(ss, c)], ss)


def _layouts(shape, nt_):
    """Blocked layouts of ``shape`` (several chunk widths) and slice layouts of it (a
    reduction's result, its parent of 4 or 32 along the reduced axis)."""
    out = [BlockedLayout(shape, nt_, mv) for mv in (1, 4, 16)]
    for a, s in enumerate(shape):
        if s == 1:
            out += [SliceLayout(BlockedLayout(shape[:a] + (k,) + shape[a + 1:], nt_, mv), a)
                    for k, mv in ((4, 4), (32, 8))]
    return out


def _replicated(lay):
    own = lay.parent if isinstance(lay, SliceLayout) else lay
    return own.threads_used < own.num_threads


def _check_slots(src, dst, bc):
    m = local_slots(src, dst, bc)
    if m is None:
        return 0
    assert not _replicated(src), (src, dst)
    assert len(m) == dst.elems_per_thread
    for t in range(dst.num_threads):
        for i in range(dst.elems_per_thread):
            want = _bsrc(dst.linear_index(t, i), src.shape, dst.shape) if bc \
                else dst.linear_index(t, i)
            assert src.linear_index(t, m[i]) == want, (src, dst, bc, t, i)
    return 1


@pytest.mark.parametrize("nt_", [32, 64])
def test_local_slots_moves_and_reshapes(nt_):
    found = 0
    for nd in (1, 2, 3):
        for s in _shapes(nd, 128):
            for src in _layouts(s, nt_):
                for nd2 in (1, 2, 3):
                    for s2 in _shapes(nd2, 128):
                        if math.prod(s2) == src.numel and (s2 == s or nd2 != nd or s2 < s):
                            for mv in (1, 4, 8):
                                found += _check_slots(src, BlockedLayout(s2, nt_, mv), False)
    assert found > 100


@pytest.mark.parametrize("nt_", [32, 64])
def test_local_slots_broadcasts(nt_):
    found = 0
    for nd in (1, 2, 3):
        for ds in _shapes(nd, 128):
            dsts = _layouts(ds, nt_)
            for mask in itertools.product((0, 1), repeat=nd):
                for drop in range(nd):
                    ss = tuple(1 if m else s for s, m in zip(ds, mask))[drop:]
                    if ss == ds:
                        continue
                    for src in _layouts(ss, nt_):
                        for dst in dsts[::3]:
                            found += _check_slots(src, dst, True)
    assert found > 100


@pytest.mark.parametrize("nt_", [32, 128])
def test_local_lines_hold_whole_lines_in_order(nt_):
    found = 0
    for nd, keep, mv in itertools.product((2, 3), (True, False), (1, 2, 4, 8, 16)):
        for s, a in ((s, a) for s in _shapes(nd, 2048) for a in range(nd - 1)):
            out = tuple(1 if d == a else x for d, x in enumerate(s) if keep or d != a)
            src = BlockedLayout(s, nt_, mv)
            for dst in (BlockedLayout(out, nt_, mv), BlockedLayout(out, nt_, 4)):
                lines = local_lines(src, dst, a, keep)
                if lines is None:
                    continue
                assert not _replicated(src)
                found += 1
                for t, i in itertools.product(range(nt_), range(dst.elems_per_thread)):
                    c = _unravel(dst.linear_index(t, i), out)
                    c = c[:a] + [0] + c[a + 1:] if keep else c[:a] + [0] + c[a:]
                    for k in range(s[a]):
                        c[a] = k
                        assert src.linear_index(t, lines[i][k]) == _ravel(c, s)
    assert found > 50


@nt.jit(num_warps=1)
def lead_reduce(x, o1: nt.Partition[(1, "BN")], o2: nt.Partition[(1, "BN")],
                o3: nt.Partition[(1, "BN")], BM: nt.Constant, BN: nt.Constant):
    t = nt.load(x, (0, 0), (BM, BN))                  # masked rows
    nt.store(o1, nt.sum(t, 0, keepdims=True))
    nt.store(o2, nt.reshape(nt.max(t, 0), (1, BN)))
    nt.store(o3, nt.argmax(t, 0, keepdims=True))


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.float64, BFLOAT16_NP])
def test_leading_axis_reductions_by_dtype(dt):
    rng = np.random.default_rng(3)
    xh = rng.integers(-50, 50, (5, 256)).astype(dt) if dt != np.uint8 else \
        rng.integers(0, 200, (5, 256)).astype(dt)
    o1 = np.zeros((1, 256), dt)
    o2 = np.zeros((1, 256), dt)
    o3 = np.zeros((1, 256), np.int32)
    args = (xh, nt.partition(o1, (1, 256)), nt.partition(o2, (1, 256)),
            nt.partition(o3, (1, 256)), 8, 256)
    body = _body(lead_reduce.ptx(*args))              # compiles: the register path for sum/max
    assert "ld.global" in body
    lead_reduce(*args, interpret=True)
    xf = xh.astype(np.float64)
    np.testing.assert_array_equal(o1[0].astype(np.float64),
                                  xh.astype(np.int64 if np.dtype(dt).kind in "iu" else np.float64)
                                  .sum(0).astype(dt).astype(np.float64))
    np.testing.assert_array_equal(o2[0].astype(np.float64), xf.max(0))
    np.testing.assert_array_equal(o3[0], xf.argmax(0))
