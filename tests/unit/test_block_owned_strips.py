"""Block-owned strips (``nt.strips``, docs/safety.md R4 "Strips"): a strip where a tile index
is expected, a strip variable on a block with no strip, mixing strips with other schemes, what
is allowed, strips of another partition, reads at a strip's tiles, the plumbing, launches and
the GPU lowering. CPU only: kernels run in the interpreter (``interpret=True``, whose race detector
records every block's accesses) or are compiled to PTX for cc 9.0.

Every test asserts the SAFE behaviour: refused with a numba_tile error (a TileError) before
anything is written, or runs with values checked against NumPy and no DataRaceError. Tests
marked ``xfail(strict=True, reason="gap: ...")`` state the behaviour wanted where it does not
hold yet.
"""

from __future__ import annotations

import ctypes
import math
from types import SimpleNamespace

import numpy as np
import pytest
from numba import cuda

import numba_tile as nt
from numba_tile.errors import (DataRaceError, ForeignTileStoreError, TileError,
                               TileTypingError)


def _run(k, *args):
    return k(*args, interpret=True)


def _refused(k, *args, match=None, cls=TileError, outs=()):
    """``k(*args)`` is refused with ``cls`` (a TileError) and wrote nothing into ``outs``."""
    before = [o.copy() for o in outs]
    with pytest.raises(cls, match=match) as info:
        k(*args, interpret=True)
    assert isinstance(info.value, TileError)
    for o, b in zip(outs, before):
        np.testing.assert_array_equal(o, b)
    return info.value


def _tiles_ref(x, tile):
    """Tile-grid shape of x for tile."""
    return tuple(-(-s // t) for s, t in zip(x.shape, tile))


# =========================================================================== 1. a strip as
# the index of a load: a load checks the brand, not the rank (typing/memory._own_index)


@nt.jit
def load_at_strip(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        t = nt.load(y, row)
        for idx in nt.tiles(y, row):
            nt.store(y, t + 1.0, idx)


@nt.jit
def load_like_at_strip(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        t = nt.load_like(x, y, index=row)
        for idx in nt.tiles(y, row):
            nt.store(y, t, idx)


@nt.jit
def load_at_strip_3d(x, y: nt.Partition[1, "BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for st in nt.strips(y):
        t = nt.load(y, st)
        for idx in nt.tiles(y, st):
            nt.store(y, t, idx)


# (typing/memory._own_index refuses a strip)
def test_load_at_a_strip_is_refused_by_typing():
    x, y = np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32)
    _refused(load_at_strip, x, nt.partition(y, (4, 32), blocks=2), 4, 32,
             cls=TileTypingError, outs=(y,))


# (typing/memory._own_index refuses a strip)
def test_load_like_at_a_strip_is_refused_by_typing():
    x, y = np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32)
    _refused(load_like_at_strip, x, nt.partition(y, (4, 32), blocks=2), 4, 32,
             cls=TileTypingError, outs=(y,))


# (typing/memory._own_index refuses a strip)
def test_load_at_a_3d_strip_is_refused_by_typing():
    x, y = np.ones((2, 8, 64), np.float32), np.zeros((2, 8, 64), np.float32)
    _refused(load_at_strip_3d, x, nt.partition(y, (1, 4, 32), blocks=2), 4, 32,
             cls=TileTypingError, outs=(y,))


# (typing/memory._own_index refuses a strip)
def test_ptx_of_load_at_a_strip_raises_a_tile_error():
    x, y = np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32)
    with pytest.raises(TileError):
        load_at_strip.ptx(x, nt.partition(y, (4, 32), blocks=2), 4, 32)


# =========================================================================== 2. a strip
# variable read after its loop on a block that had no strip


@nt.jit
def strip_after_loop(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        pass
    for idx in nt.tiles(y, row):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


def test_strip_after_loop_with_every_block_owning_a_strip():
    # 4 strips, 2 blocks: every block ran its loop, row is its last strip
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    y = np.zeros_like(x)
    _run(strip_after_loop, x, nt.partition(y, (4, 32), blocks=2), 4, 32)
    ref = np.zeros_like(x)
    ref[8:16] = x[8:16]                  # strips 2 (block 0) and 3 (block 1)
    np.testing.assert_array_equal(y, ref)


# (the interpreter gives the variable Numba's zero, an invalid strip, as the GPU does:
# interpreter/typed_ir.null_value)
def test_strip_after_loop_on_a_block_with_no_strip():
    x = np.ones((8, 64), np.float32)
    y = np.zeros_like(x)
    try:
        _run(strip_after_loop, x, nt.partition(y, (4, 32), blocks=3), 4, 32)
    except TileError:
        assert not y.any()          # refused before anything ran: also safe
        return
    # else: runs as on the GPU (block 2's strip variable is not valid: its tiles are masked)
    np.testing.assert_array_equal(y, x)


# =========================================================================== 3. mixing
# schemes: helpers, branches, two loops, unchecked


def _helper_tiles(x, y, BM, BN):
    for idx in nt.tiles(y):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) * 2, idx)


def _helper_strips(x, y, BM, BN):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


def _helper_strip_tiles(x, y, row, BM, BN):
    for idx in nt.tiles(y, row):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def mix_through_helpers(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    _helper_strips(x, y, BM, BN)
    _helper_tiles(x, y, BM, BN)


@nt.jit
def mix_strips_in_kernel_tiles_in_helper(x, y: nt.Partition["BM", "BN"], BM: nt.Constant,
                                         BN: nt.Constant):
    for row in nt.strips(y):
        _helper_strip_tiles(x, y, row, BM, BN)
    _helper_tiles(x, y, BM, BN)


@nt.jit
def mix_on_a_runtime_branch(x, y: nt.Partition["BM", "BN"], flag, BM: nt.Constant,
                            BN: nt.Constant):
    if flag > 0:
        _helper_strips(x, y, BM, BN)
    else:
        _helper_tiles(x, y, BM, BN)


@nt.jit
def mix_tiles_load_only(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    # tiles(y) used only to read y: still a second scheme (block b reads tile b of tiles()
    # while another block writes it through its strip)
    acc = nt.zeros((BM, BN), nt.float32)
    for idx in nt.tiles(y):
        acc = acc + nt.load(y, idx, padding=0.0)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, acc, idx)


@nt.jit
def mix_iterable_kept(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    it = nt.tiles(y)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for idx in it:
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def mix_tiles_none(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for idx in nt.tiles(y, None):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def mix_cross_partition_and_tiles(x, w: nt.Partition["BM", "BN"], y: nt.Partition["BM", "BN"],
                                  BM: nt.Constant, BN: nt.Constant):
    # y reached only through w's rows, and also through tiles(y)
    for idx in nt.tiles(y):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(w):
        _helper_strip_tiles(x, y, row, BM, BN)


@nt.jit
def mix_source_partition_tiles(x, w: nt.Partition["BM", "BN"], y: nt.Partition["BM", "BN"],
                               BM: nt.Constant, BN: nt.Constant):
    # w stored through tiles(w), its strips feed y: w then has two schemes
    for idx in nt.tiles(w):
        nt.store(w, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


MIXES = [mix_through_helpers, mix_strips_in_kernel_tiles_in_helper, mix_tiles_load_only,
         mix_iterable_kept, mix_tiles_none]


@pytest.mark.parametrize("k", MIXES, ids=lambda k: k.__name__)
def test_two_schemes_on_one_partition_are_refused(k):
    x, y = np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32)
    e = _refused(k, x, nt.partition(y, (4, 32), blocks=3), 4, 32, cls=ForeignTileStoreError,
                 match=r"both tiles\(y\) and strips\(y\)", outs=(y,))
    assert e.lineno is not None


def test_two_schemes_on_a_runtime_branch_are_refused():
    x, y = np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32)
    _refused(mix_on_a_runtime_branch, x, nt.partition(y, (4, 32), blocks=3), 1, 4, 32,
             cls=ForeignTileStoreError, outs=(y,))


@pytest.mark.parametrize("k", [mix_cross_partition_and_tiles, mix_source_partition_tiles],
                         ids=lambda k: k.__name__)
def test_two_schemes_across_partitions_are_refused(k):
    x = np.ones((8, 64), np.float32)
    w, y = np.zeros_like(x), np.zeros_like(x)
    _refused(k, x, nt.partition(w, (4, 32), blocks=3), nt.partition(y, (4, 32), blocks=3),
             4, 32, cls=ForeignTileStoreError, outs=(w, y))


@nt.jit(unchecked=True)
def unchecked_mix(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for idx in nt.tiles(y):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) * 2, idx)


def test_an_unchecked_kernel_mixing_schemes_is_caught_by_the_race_detector():
    # unchecked kernels may mix (the scheme check is skipped), but the race they make is
    # caught by the interpreter
    x, y = np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32)
    with pytest.raises(DataRaceError):
        unchecked_mix(x, nt.partition(y, (4, 32), blocks=2), 4, 32, interpret=True,
                      unchecked=True)


def test_an_unchecked_kernel_needs_an_unchecked_launch():
    x, y = np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32)
    with pytest.raises(TileError):
        unchecked_mix(x, nt.partition(y, (4, 32), blocks=2), 4, 32, interpret=True)
    assert not y.any()


# =========================================================================== 4. allowed
# patterns that must run race-free with the right values


@nt.jit
def two_strip_loops(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(y, idx) * 2.0, idx)


@pytest.mark.parametrize("m, n, blocks", [(37, 100, 3), (8, 64, 5), (64, 33, 1), (4, 64, 16)])
def test_two_strip_loops_on_one_partition(m, n, blocks):
    x = np.random.default_rng(0).standard_normal((m, n)).astype(np.float32)
    y = np.zeros_like(x)
    _run(two_strip_loops, x, nt.partition(y, (4, 32), blocks=blocks), 4, 32)
    np.testing.assert_array_equal(y, 2 * x)


@nt.jit
def strips_in_tuple(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        pair = (row, row[0])
        for idx in nt.tiles(y, pair[0]):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) + pair[1], idx)


def test_a_strip_in_a_tuple():
    x = np.zeros((16, 64), np.float32)
    y = np.full_like(x, -1)
    _run(strips_in_tuple, x, nt.partition(y, (4, 32), blocks=3), 4, 32)
    np.testing.assert_array_equal(y, np.repeat(np.arange(4, dtype=np.float32), 4)[:, None]
                                  + np.zeros((1, 64), np.float32))


@nt.jit
def strip_reassigned(x, y: nt.Partition["BM", "BN"], w: nt.Partition["BM", "BN"],
                     BM: nt.Constant, BN: nt.Constant):
    # the strip variable rebound, inside the loop, to a strip of another 2-D partition
    for row in nt.strips(y):
        for other in nt.strips(w):
            row = other
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


def test_a_strip_variable_rebound_to_another_partitions_strip():
    x = np.random.default_rng(1).standard_normal((16, 64)).astype(np.float32)
    y = np.zeros_like(x)
    w = np.zeros((24, 64), np.float32)
    try:
        _run(strip_reassigned, x, nt.partition(y, (4, 32), blocks=3),
             nt.partition(w, (4, 32), blocks=3), 4, 32)
    except TileError:
        assert not y.any()
        return
    # block b's rows of w are b, b+3 (<6): its own rows, so race-free; y's rows 4, 5 do not
    # exist (masked); y gets the last w strip of each block that is < 4
    ref = np.zeros_like(x)
    for b in range(3):
        rows = [r for r in range(b, 6, 3)]
        if b < 4 and rows:       # blocks with no y strip do nothing
            if any(r < 4 for r in range(b, 4, 3)):
                last = rows[-1]
                if last < 4:
                    ref[4 * last:4 * last + 4] = x[4 * last:4 * last + 4]
    np.testing.assert_array_equal(y, ref)


@nt.jit
def nested_strips_of_the_same_partition(x, y: nt.Partition["BM", "BN"], BM: nt.Constant,
                                        BN: nt.Constant):
    for row in nt.strips(y):
        for row2 in nt.strips(y):
            for idx in nt.tiles(y, row2):
                nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) + row[0] * 0, idx)


def test_nested_strip_loops_of_one_partition():
    x = np.random.default_rng(2).standard_normal((40, 70)).astype(np.float32)
    y = np.zeros_like(x)
    _run(nested_strips_of_the_same_partition, x, nt.partition(y, (4, 32), blocks=3), 4, 32)
    np.testing.assert_array_equal(y, x)


@nt.jit
def strips_3d(x, y: nt.Partition[1, "BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for st in nt.strips(y):
        for idx in nt.tiles(y, st):
            v = nt.load(x, idx, (1, BM, BN), padding=0.0)
            nt.store(y, v + (st[0] * 100 + st[1] + idx[2] * 0.5), idx)


@nt.jit
def strips_4d(x, y: nt.Partition[1, 2, "BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for st in nt.strips(y):
        for idx in nt.tiles(y, st):
            v = nt.load(x, idx, (1, 2, BM, BN), padding=0.0)
            nt.store(y, v + (st[0] * 10000 + st[1] * 100 + st[2] + idx[3] * 0.5), idx)


@pytest.mark.parametrize("blocks", [1, 2, 5, 7, 64, 200])
def test_3d_strips_with_more_and_fewer_blocks_than_strips(blocks):
    a, m, n, bm, bn = 3, 13, 70, 4, 16
    x = np.random.default_rng(3).standard_normal((a, m, n)).astype(np.float32)
    y = np.full_like(x, np.nan)
    _run(strips_3d, x, nt.partition(y, (1, bm, bn), blocks=blocks), bm, bn)
    i = np.arange(a)[:, None, None]
    j = (np.arange(m) // bm)[None, :, None]
    k = (np.arange(n) // bn)[None, None, :]
    np.testing.assert_array_equal(y, x + (i * 100 + j + k * 0.5).astype(np.float32))


@pytest.mark.parametrize("blocks", [1, 3, 11, 100])
def test_4d_strips(blocks):
    shape, bm, bn = (2, 5, 9, 40), 4, 16
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    y = np.full_like(x, np.nan)
    _run(strips_4d, x, nt.partition(y, (1, 2, bm, bn), blocks=blocks), bm, bn)
    i = np.arange(shape[0])[:, None, None, None]
    j = (np.arange(shape[1]) // 2)[None, :, None, None]
    k = (np.arange(shape[2]) // bm)[None, None, :, None]
    l_ = (np.arange(shape[3]) // bn)[None, None, None, :]
    np.testing.assert_array_equal(y, x + (i * 10000 + j * 100 + k + l_ * 0.5).astype(np.float32))


@nt.jit
def owner_3d(y: nt.Partition[1, 1, "BN"], BN: nt.Constant):
    for st in nt.strips(y):
        for idx in nt.tiles(y, st):
            nt.store(y, nt.full((1, 1, BN), 0, nt.int64) + nt.bid(0), idx)


@pytest.mark.parametrize("shape, blocks", [((3, 5, 40), 4), ((7, 2, 1), 3), ((1, 9, 64), 9)])
def test_interpreter_gives_block_b_the_strips_b_plus_kB(shape, blocks):
    y = np.full(shape, -1, np.int64)
    _run(owner_3d, nt.partition(y, (1, 1, 16), blocks=blocks), 16)
    lin = np.arange(shape[0] * shape[1]).reshape(shape[0], shape[1])
    np.testing.assert_array_equal(y, np.broadcast_to((lin % blocks)[:, :, None], shape))


# =========================================================================== 5. strips of
# one partition used for another partition


@nt.jit
def cross(x, w: nt.Partition["WM", "WN"], y: nt.Partition["YM", "YN"], WM: nt.Constant,
          WN: nt.Constant, YM: nt.Constant, YN: nt.Constant):
    for row in nt.strips(w):
        for idx in nt.tiles(w, row):
            nt.store(w, nt.load(x, idx, (WM, WN), padding=0.0), idx)
        for idx in nt.tiles(y, row):
            nt.store(y, nt.full((YM, YN), 1.0, nt.float32) + nt.load(y, idx), idx)


@pytest.mark.parametrize("wshape, wtile, yshape, ytile, blocks", [
    ((16, 64), (4, 32), (16, 64), (4, 32), 3),     # same
    ((16, 64), (4, 32), (8, 64), (1, 16), 3),      # y has more rows of tiles than w
    ((16, 64), (4, 32), (7, 5), (4, 4), 3),        # y has fewer rows (2): rows 2, 3 off the end
    ((5, 64), (1, 64), (40, 3), (8, 2), 7),        # more blocks than rows
    ((64, 8), (1, 8), (3, 100), (1, 128), 2),      # y rows << w rows
])
def test_a_row_of_w_indexes_ys_row(wshape, wtile, yshape, ytile, blocks):
    x = np.random.default_rng(5).standard_normal(wshape).astype(np.float32)
    w, y = np.zeros(wshape, np.float32), np.zeros(yshape, np.float32)
    _run(cross, x, nt.partition(w, wtile, blocks=blocks), nt.partition(y, ytile, blocks=blocks),
         *wtile, *ytile)
    np.testing.assert_array_equal(w, x)
    wrows = -(-wshape[0] // wtile[0])
    ref = np.zeros(yshape, np.float32)
    ref[:min(wrows * ytile[0], yshape[0])] = 1.0
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("order", [nt.grouped(2), "row"], ids=str)
def test_a_row_of_w_indexes_a_grouped_partitions_row(order):
    x = np.random.default_rng(6).standard_normal((16, 64)).astype(np.float32)
    w, y = np.zeros_like(x), np.zeros_like(x)
    _run(cross, x, nt.partition(w, (4, 32), blocks=3, order=order),
         nt.partition(y, (4, 32), blocks=3, order=nt.grouped(2)), 4, 32, 4, 32)
    np.testing.assert_array_equal(w, x)
    np.testing.assert_array_equal(y, np.ones_like(x))


def test_strips_of_partitions_mapped_on_different_block_counts_are_refused():
    x = np.ones((16, 64), np.float32)
    w, y = np.zeros_like(x), np.zeros_like(x)
    _refused(cross, x, nt.partition(w, (4, 32), blocks=3), nt.partition(y, (4, 32), blocks=2),
             4, 32, 4, 32, outs=(w, y))


def test_a_row_of_w_for_an_unmapped_y_is_refused():
    x = np.ones((16, 64), np.float32)
    w, y = np.zeros_like(x), np.zeros((12, 32), np.float32)      # y: 3 tiles, w: blocks=3
    _refused(cross, x, nt.partition(w, (4, 32), blocks=3), nt.partition(y, (4, 32)),
             4, 32, 4, 32, outs=(w, y))      # GridMismatchError at launch, or typing


@nt.jit
def cross_rank(x, w: nt.Partition["BM", "BN"], y: nt.Partition[1, "BM", "BN"],
               BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.full((1, BM, BN), 1.0, nt.float32), idx)


@nt.jit
def cross_rank_down(x, w: nt.Partition[1, "BM", "BN"], y: nt.Partition["BM", "BN"],
                    BM: nt.Constant, BN: nt.Constant):
    for st in nt.strips(w):
        for idx in nt.tiles(y, st):
            nt.store(y, nt.full((BM, BN), 1.0, nt.float32), idx)


@nt.jit
def cross_3d_same_grid(x, w: nt.Partition[1, "BM", "BN"], y: nt.Partition[1, "BM", "BN"],
                       BM: nt.Constant, BN: nt.Constant):
    for st in nt.strips(w):
        for idx in nt.tiles(y, st):
            nt.store(y, nt.full((1, BM, BN), 1.0, nt.float32), idx)


def test_strips_across_ranks_are_refused():
    x = np.ones((16, 64), np.float32)
    w, y3 = np.zeros_like(x), np.zeros((2, 16, 64), np.float32)
    _refused(cross_rank, x, nt.partition(w, (4, 32), blocks=3),
             nt.partition(y3, (1, 4, 32), blocks=3), 4, 32, cls=TileTypingError, outs=(w, y3))
    w3, y = np.zeros((2, 16, 64), np.float32), np.zeros_like(x)
    _refused(cross_rank_down, x, nt.partition(w3, (1, 4, 32), blocks=3),
             nt.partition(y, (4, 32), blocks=3), 4, 32, cls=TileTypingError, outs=(w3, y))


def test_3d_strips_of_another_partition_name_its_tiles_at_their_coordinates():
    """A strip of w names y's tiles at its coordinates (each strip is one block's: the
    interpreter's race detector sees every block's stores)."""
    x = np.ones((2, 16, 64), np.float32)
    w, y = np.zeros_like(x), np.zeros_like(x)
    cross_3d_same_grid(x, nt.partition(w, (1, 4, 32), blocks=3),
                       nt.partition(y, (1, 4, 32), blocks=3), 4, 32, interpret=True)
    np.testing.assert_array_equal(y, np.ones_like(y))
    assert not w.any()


# =========================================================================== 6. reads at a
# strip's coordinates; strip[d] arithmetic fed back


@nt.jit
def read_neighbour_row(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            t = nt.load(y, (row[0] + 1, idx[1]))     # the next block's row: races
            nt.store(y, t, idx)


@nt.jit
def store_rebuilt(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for k in range(nt.num_tiles(y, 1, BN)):
            nt.store(y, nt.load(x, (row[0], k), (BM, BN), padding=0.0), (row[0], k))


@nt.jit
def tiles_of_a_rebuilt_strip(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, (row[0] + 1,)):
            nt.store(y, nt.full((BM, BN), 1.0, nt.float32), idx)


@nt.jit
def tiles_of_an_int(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row[0]):
            nt.store(y, nt.full((BM, BN), 1.0, nt.float32), idx)


@nt.jit
def tiles_of_a_tile_index(x, y: nt.Partition["BM", "BN"], w: nt.Partition["BM"],
                          BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(w):
            for j in nt.tiles(y, idx):        # a 1-d index of w posing as a strip of y
                nt.store(y, nt.full((BM, BN), 1.0, nt.float32), j)


@nt.jit
def load_other_partition_at_strip(x, y: nt.Partition["BM", "BN"], w: nt.Partition["BM", "BN"],
                                  BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(w):
        nt.store(w, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(w, (row[0], idx[1])), idx)


@nt.jit
def load_other_partition_at_strip_tile(x, y: nt.Partition["BM", "BN"],
                                       w: nt.Partition["BM", "BN"], BM: nt.Constant,
                                       BN: nt.Constant):
    for idx in nt.tiles(w):
        nt.store(w, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(w, idx), idx)          # a y index into w


@nt.jit
def load_like_other_partition(x, y: nt.Partition["BM", "BN"], w: nt.Partition["BM", "BN"],
                              BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(w):
        nt.store(w, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load_like(w, y, index=idx), idx)


@nt.jit
def store_foreign_strip_tile(x, y: nt.Partition["BM", "BN"], w: nt.Partition["BM", "BN"],
                             BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(w):
        nt.store(w, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(w, nt.load(x, idx, (BM, BN), padding=0.0), idx)   # a y index into w


@pytest.mark.parametrize("k, cls", [
    (read_neighbour_row, TileTypingError), (store_rebuilt, ForeignTileStoreError),
    (tiles_of_a_rebuilt_strip, TileTypingError), (tiles_of_an_int, TileTypingError)],
    ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_strip_coordinate_is_not_an_index(k, cls):
    x, y = np.ones((16, 64), np.float32), np.zeros((16, 64), np.float32)
    _refused(k, x, nt.partition(y, (4, 32), blocks=3), 4, 32, cls=cls, outs=(y,))


def test_a_tile_index_of_another_partition_is_not_a_strip():
    x, y = np.ones((16, 64), np.float32), np.zeros((16, 64), np.float32)
    w = np.zeros(12, np.float32)
    _refused(tiles_of_a_tile_index, x, nt.partition(y, (4, 32), blocks=3),
             nt.partition(w, 4, blocks=3), 4, 32, cls=TileTypingError, outs=(y, w))


@pytest.mark.parametrize("k", [load_other_partition_at_strip, load_other_partition_at_strip_tile,
                               load_like_other_partition, store_foreign_strip_tile],
                         ids=lambda k: k.__name__)
def test_another_partition_at_a_strips_index_is_refused(k):
    x = np.ones((16, 64), np.float32)
    y, w = np.zeros_like(x), np.zeros_like(x)
    _refused(k, x, nt.partition(y, (4, 32), blocks=3), nt.partition(w, (4, 32), blocks=3),
             4, 32, outs=(y, w))


# =========================================================================== 7. plumbing:
# lists, zip, enumerate, device functions, tensors


@nt.jit
def strips_in_a_list(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        rows = [row]
        for idx in nt.tiles(y, rows[0]):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def strips_zipped(x, y: nt.Partition["BM", "BN"], w: nt.Partition["BM", "BN"],
                  BM: nt.Constant, BN: nt.Constant):
    for a, b in zip(nt.strips(y), nt.strips(w)):
        for idx in nt.tiles(y, b):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def strips_enumerated(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for i, row in enumerate(nt.strips(y)):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) + i, idx)


@cuda.jit(device=True)
def dev_identity(s):
    return s


@nt.jit
def strip_through_device_function(x, y: nt.Partition["BM", "BN"], BM: nt.Constant,
                                  BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, dev_identity(row)):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@cuda.jit(device=True)
def dev_next(r):
    return r + 1


@nt.jit
def strip_coord_through_device_function(x, y: nt.Partition["BM", "BN"], BM: nt.Constant,
                                        BN: nt.Constant):
    for row in nt.strips(y):
        r = dev_next(row[0])
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, (r, idx[1]), (BM, BN), padding=0.0), idx)


@nt.jit
def strips_of_a_tensor(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(x):
        pass


def test_strips_in_a_list_are_refused_or_correct():
    x = np.random.default_rng(7).standard_normal((16, 64)).astype(np.float32)
    y = np.zeros_like(x)
    try:
        _run(strips_in_a_list, x, nt.partition(y, (4, 32), blocks=3), 4, 32)
    except TileError:
        assert not y.any()
        return
    np.testing.assert_array_equal(y, x)


def test_zipped_strips_are_refused_or_correct():
    x = np.random.default_rng(8).standard_normal((16, 64)).astype(np.float32)
    y, w = np.zeros_like(x), np.zeros_like(x)
    try:
        _run(strips_zipped, x, nt.partition(y, (4, 32), blocks=3),
             nt.partition(w, (4, 32), blocks=3), 4, 32)
    except TileError:
        assert not y.any()
        return
    np.testing.assert_array_equal(y, x)


def test_enumerated_strips_are_refused_or_correct():
    x = np.zeros((16, 64), np.float32)
    y = np.full_like(x, -1)
    try:
        _run(strips_enumerated, x, nt.partition(y, (4, 32), blocks=3), 4, 32)
    except TileError:
        assert (y == -1).all()
        return
    ref = np.zeros_like(x)
    ref[12:16] = 1                  # strip 3 is block 0's second
    np.testing.assert_array_equal(y, ref)


def test_a_strip_through_a_device_function_is_refused():
    x, y = np.ones((16, 64), np.float32), np.zeros((16, 64), np.float32)
    _refused(strip_through_device_function, x, nt.partition(y, (4, 32), blocks=3), 4, 32,
             outs=(y,))


def test_a_strip_coordinate_through_a_device_function_reads_a_tensor():
    x = np.random.default_rng(9).standard_normal((16, 64)).astype(np.float32)
    y = np.zeros_like(x)
    try:
        _run(strip_coord_through_device_function, x, nt.partition(y, (4, 32), blocks=3), 4, 32)
    except TileError:
        assert not y.any()
        return
    ref = np.zeros_like(x)
    ref[:12] = x[4:]
    np.testing.assert_array_equal(y, ref)


def test_strips_of_a_tensor_are_refused():
    x, y = np.ones((16, 64), np.float32), np.zeros((16, 64), np.float32)
    _refused(strips_of_a_tensor, x, nt.partition(y, (4, 32), blocks=3), 4, 32,
             cls=TileTypingError, match="partition parameter", outs=(y,))


# =========================================================================== 8. launches:
# aliasing, zero sizes, other partitions sharing the grid


def test_two_partitions_of_one_array_are_refused():
    x = np.ones((16, 64), np.float32)
    y = np.zeros_like(x)
    _refused(cross, x, nt.partition(y, (4, 32), blocks=3), nt.partition(y, (1, 16), blocks=3),
             4, 32, 1, 16, outs=(y,))


def test_overlapping_views_are_refused():
    x = np.ones((16, 64), np.float32)
    base = np.zeros((20, 64), np.float32)
    _refused(cross, x, nt.partition(base[:16], (4, 32), blocks=3),
             nt.partition(base[4:20], (4, 32), blocks=3), 4, 32, 4, 32, outs=(base,))


def test_a_read_tensor_aliasing_the_strip_partition_is_refused():
    y = np.zeros((16, 64), np.float32)
    _refused(two_strip_loops, y, nt.partition(y, (4, 32), blocks=3), 4, 32, outs=(y,))
    _refused(two_strip_loops, y[4:], nt.partition(y[:12], (4, 32), blocks=3), 4, 32, outs=(y,))


@pytest.mark.parametrize("shape", [(0, 64), (16, 0), (0, 0)])
def test_zero_size_partitions(shape):
    x = np.ones(shape, np.float32)
    y = np.zeros(shape, np.float32)
    _run(two_strip_loops, x, nt.partition(y, (4, 32), blocks=3), 4, 32)
    assert y.shape == shape


@pytest.mark.parametrize("shape", [(0, 5, 64), (2, 0, 64), (2, 5, 0)])
def test_zero_size_3d_partitions(shape):
    x = np.ones(shape, np.float32)
    y = np.zeros(shape, np.float32)
    _run(strips_3d, x, nt.partition(y, (1, 4, 16), blocks=3), 4, 16)


def test_zero_size_partition_next_to_a_nonempty_one():
    x = np.ones((16, 64), np.float32)
    w, y = np.zeros((0, 64), np.float32), np.zeros_like(x)
    try:
        _run(cross, x, nt.partition(w, (4, 32), blocks=3), nt.partition(y, (4, 32), blocks=3),
             4, 32, 4, 32)
    except TileError:
        pass
    assert not y.any()                  # w has no strip: nothing reaches y


@nt.jit
def strips_and_own_tile(x, y: nt.Partition["BM", "BN"], u: nt.Partition["U"],
                        BM: nt.Constant, BN: nt.Constant, U: nt.Constant):
    nt.store(u, nt.full((U,), 0, nt.int64) + nt.bid(0))
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


def test_strips_next_to_an_unmapped_grid_partition():
    x = np.random.default_rng(10).standard_normal((40, 64)).astype(np.float32)
    y, u = np.zeros_like(x), np.full(24, -1, np.int64)       # u: 3 tiles = 3 blocks
    _run(strips_and_own_tile, x, nt.partition(y, (4, 32), blocks=3), nt.partition(u, 8), 4, 32, 8)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(u, np.repeat(np.arange(3), 8))


def test_strips_next_to_an_unmapped_partition_of_another_grid_are_refused():
    x = np.ones((40, 64), np.float32)
    y, u = np.zeros_like(x), np.zeros(32, np.int64)          # u: 4 tiles, y: blocks=3
    _refused(strips_and_own_tile, x, nt.partition(y, (4, 32), blocks=3), nt.partition(u, 8),
             4, 32, 8, outs=(y, u))


# =========================================================================== 9. the GPU
# lowering's strip numbering against the interpreter's


def _lowered_strip_coords(ndim, tile_shape):
    """``lowering/partition``'s strip coordinates of strip number ``s``: its tile grid's
    leading extents (``tile_grid(...)[:-1]``) unravelled by ``_row_major``, as a CPU function
    ``f(extent_0, ..., extent_{ndim-1}, s, out*)`` built with llvmlite."""
    from llvmlite import binding as llvm
    from llvmlite import ir

    from numba_tile.lowering.views import tile_grid
    from numba_tile.lowering.tile_order import _row_major
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    i64 = ir.IntType(64)
    module = ir.Module(name="strips")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64] * (ndim + 1) + [i64.as_pointer(),
                                                                                 i64.as_pointer()]),
                     "coords")
    builder = ir.IRBuilder(fn.append_basic_block())
    view = SimpleNamespace(shape=list(fn.args[:ndim]))
    grid = tile_grid(builder, view, tile_shape)
    lead = grid[:-1]
    total = ir.Constant(i64, 1)
    for n in lead:
        total = builder.mul(total, n)
    builder.store(total, fn.args[ndim + 2])
    for d, v in enumerate(_row_major(builder, lead, fn.args[ndim])):
        builder.store(v, builder.gep(fn.args[ndim + 1], [ir.Constant(i64, d)]))
    builder.ret_void()
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple()
                                        .create_target_machine())
    engine.finalize_object()
    cfn = ctypes.CFUNCTYPE(None, *([ctypes.c_int64] * (ndim + 1)), ctypes.POINTER(ctypes.c_int64),
                           ctypes.POINTER(ctypes.c_int64))(engine.get_function_address("coords"))
    return cfn, engine


@pytest.mark.parametrize("shape, tile", [
    ((37, 1000), (4, 128)), ((1, 130), (1, 64)), ((3, 5, 70), (1, 1, 16)),
    ((13, 7, 9, 40), (4, 2, 1, 16)), ((2, 3, 5, 7, 11), (1, 2, 4, 8, 16))])
@pytest.mark.parametrize("blocks", [1, 3, 8, 1000])
def test_the_gpu_lowering_numbers_strips_as_the_interpreter(shape, tile, blocks):
    from numba_tile.interpreter import partition as ip
    from numba_tile.interpreter.values import InterpPartition  # noqa: F401 (exists)
    f, _engine = _lowered_strip_coords(len(shape), tile)
    out = (ctypes.c_int64 * (len(shape) - 1))()
    total = ctypes.c_int64()
    grid = _tiles_ref(np.empty(shape), tile)
    owners = {}
    for b in range(blocks):
        # the lowering's loop: s = bid; s < total; s += nctaid
        f(*shape, 0, out, ctypes.byref(total))
        assert total.value == math.prod(grid[:-1])
        s = b
        while s < total.value:
            f(*shape, s, out, ctypes.byref(total))
            coords = tuple(out)
            assert coords not in owners
            owners[coords] = b
            s += blocks
    # the interpreter's strips, block by block
    for b in range(blocks):
        blk = SimpleNamespace(linear=b, grid=(blocks,))
        z = SimpleNamespace(array=np.empty(shape), tile_shape=tile, name="z")
        orig = ip.current_block
        ip.current_block = lambda: blk
        try:
            got = [s.coords for s in ip.interp_strips.__wrapped__(z)] \
                if hasattr(ip.interp_strips, "__wrapped__") else \
                [s.coords for s in ip.interp_strips(z)]
        finally:
            ip.current_block = orig
        assert [c for c, o in owners.items() if o == b] == [tuple(c) for c in got]
    assert len(owners) == math.prod(grid[:-1])


# =========================================================================== 10. more
# laundering: a strip through a helper used for two partitions, a strip tile as a strip


def _tiles_of(y, st, v):
    for idx in nt.tiles(y, st):
        nt.store(y, v, idx)


@nt.jit
def helper_with_a_foreign_3d_strip(w: nt.Partition[1, 4, 32], y: nt.Partition[1, 4, 32]):
    for st in nt.strips(y):
        _tiles_of(y, st, nt.full((1, 4, 32), 1.0, nt.float32))
    for st in nt.strips(w):
        _tiles_of(y, st, nt.full((1, 4, 32), 2.0, nt.float32))     # w's strips too: refused


def test_a_helper_given_a_foreign_3d_strip_is_refused():
    """y reached through its own strips and through w's (a rank-3 partition's strips must
    come from one partition), the second inside a helper: refused at typing."""
    w, y = np.zeros((2, 16, 64), np.float32), np.zeros((2, 16, 64), np.float32)
    _refused(helper_with_a_foreign_3d_strip, nt.partition(w, (1, 4, 32), blocks=3),
             nt.partition(y, (1, 4, 32), blocks=3), cls=ForeignTileStoreError,
             match="strips of 'w' and of 'y'", outs=(w, y))


@nt.jit
def strip_tile_as_strip(y: nt.Partition[1, "BN"], BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            for j in nt.tiles(y, idx):
                nt.store(y, nt.full((1, BN), 1.0, nt.float32), j)


def test_a_strip_tile_index_is_not_a_strip():
    y = np.zeros((4, 64), np.float32)
    _refused(strip_tile_as_strip, nt.partition(y, (1, 32), blocks=2), 32, cls=TileTypingError,
             outs=(y,))


def test_strip_kernels_compile_to_ptx():
    x = np.ones((16, 64), np.float32)
    ptx = cross.ptx(x, nt.partition(np.zeros_like(x), (4, 32), blocks=3),
                    nt.partition(np.zeros((7, 5), np.float32), (4, 4), blocks=3), 4, 32, 4, 4)
    assert "nctaid.x" in ptx and "ctaid.x" in ptx
    x4 = np.ones((2, 5, 9, 40), np.float32)
    assert ".entry" in strips_4d.ptx(x4, nt.partition(np.zeros_like(x4), (1, 2, 4, 16), blocks=3),
                                     4, 16)
