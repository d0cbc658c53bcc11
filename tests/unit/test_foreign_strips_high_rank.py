"""``tiles(z, strip)`` with a strip of ANOTHER partition above rank 2
(``typing/partition.type_tiles``, ``typing/ownership.check_index_schemes``): foreign strips of
3-D and 4-D partitions write disjoint tiles matching NumPy, and every way of reaching one
partition through strips of two sources (or of mixed schemes, unmapped targets, different
block counts or ranks, ``zip``) is refused.

CPU only: kernels run in the interpreter (its race detector records every block's accesses)
or are compiled to PTX.
"""

from __future__ import annotations

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (ForeignTileStoreError, TileError, TileTypingError,
                               UnanalyzedCallError)

P = nt.Partition


def _refused(call, cls, outs=(), match=None):
    before = [o.copy() for o in outs]
    with pytest.raises(cls, match=match) as info:
        call()
    assert isinstance(info.value, TileError)
    for o, b in zip(outs, before):
        np.testing.assert_array_equal(o, b)
    return info.value


def _part(a, tile, blocks):
    return nt.partition(a, tile, blocks=blocks)


@nt.jit
def copy_via_v_3d(x, v: P[1, "BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant,
                  BN: nt.Constant):
    for row in nt.strips(v):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def copy_via_v_4d(x, v: P[1, 1, "BM", "BN"], y: P[1, 1, "BM", "BN"], BM: nt.Constant,
                  BN: nt.Constant):
    for row in nt.strips(v):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, 1, BM, BN), padding=0.0) * 3.0, idx)


@nt.jit
def v_own_and_two_foreign(x, v: P[1, "BM", "BN"], y: P[1, "BM", "BN"], w: P[1, "BM", "BN"],
                          BM: nt.Constant, BN: nt.Constant):
    """v by its own strips, y and w (other grids) at v's strip coordinates, loads of y after
    its store (ordered accesses of one partition)."""
    for row in nt.strips(v):
        for idx in nt.tiles(v, row):
            nt.store(v, nt.load(x, idx, (1, BM, BN), padding=0.0) + 1.0, idx)
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(y, idx) * 2.0, idx)
        for idx in nt.tiles(w, row):
            nt.store(w, nt.load(x, idx, (1, BM, BN), padding=0.0) - 1.0, idx)


def _expected_masked(xh, y_shape, lead_grid_v, tile, fill, f):
    """y after a copy of f(xh) at the tiles whose leading coordinates lie in v's grid."""
    ref = np.full(y_shape, fill, np.float32)
    slices = tuple(slice(0, min(g * t, s)) for g, t, s in zip(lead_grid_v, tile, y_shape))
    ref[slices] = f(xh[slices])
    return ref


def _grid(shape, tile):
    return tuple(-(-s // t) for s, t in zip(shape, tile))


@pytest.mark.parametrize("trial", range(6))
def test_3d_foreign_strips_write_disjoint_tiles_matching_numpy(trial):
    """Random grids of v and y (y smaller and larger than v along either leading axis, a
    partial last tile), random block counts: no race, y equals NumPy's masked copy, v is not
    written."""
    rng = np.random.default_rng()
    tile = (1, 4, 32)
    v_shape = (int(rng.integers(1, 4)), int(rng.integers(1, 24)), int(rng.integers(1, 90)))
    y_shape = (int(rng.integers(1, 5)), int(rng.integers(1, 30)), int(rng.integers(1, 120)))
    blocks = int(rng.integers(1, 7))
    xh = rng.standard_normal(y_shape).astype(np.float32)
    v = np.zeros(v_shape, np.float32)
    y = np.full(y_shape, 7.0, np.float32)
    copy_via_v_3d(xh, _part(v, tile, blocks), _part(y, tile, blocks), 4, 32, interpret=True)
    ref = _expected_masked(xh, y_shape, _grid(v_shape, tile)[:-1], tile, 7.0, lambda a: a)
    np.testing.assert_array_equal(y, ref)
    assert not v.any()


@pytest.mark.parametrize("trial", range(4))
def test_4d_foreign_strips_write_disjoint_tiles_matching_numpy(trial):
    rng = np.random.default_rng()
    tile = (1, 1, 4, 32)
    v_shape = tuple(int(rng.integers(1, n)) for n in (3, 4, 12, 70))
    y_shape = tuple(int(rng.integers(1, n)) for n in (4, 3, 14, 90))
    blocks = int(rng.integers(1, 6))
    xh = rng.standard_normal(y_shape).astype(np.float32)
    v = np.zeros(v_shape, np.float32)
    y = np.full(y_shape, -1.0, np.float32)
    copy_via_v_4d(xh, _part(v, tile, blocks), _part(y, tile, blocks), 4, 32, interpret=True)
    ref = _expected_masked(xh, y_shape, _grid(v_shape, tile)[:-1], tile, -1.0,
                           lambda a: a * 3.0)
    np.testing.assert_array_equal(y, ref)
    assert not v.any()


@pytest.mark.parametrize("trial", range(3))
def test_one_source_many_targets_3d(trial):
    rng = np.random.default_rng()
    tile = (1, 4, 32)
    shape_x = (3, 28, 130)
    v_shape = (int(rng.integers(1, 4)), int(rng.integers(1, 28)), int(rng.integers(1, 130)))
    y_shape = (int(rng.integers(1, 4)), int(rng.integers(1, 28)), int(rng.integers(1, 130)))
    w_shape = (int(rng.integers(1, 4)), int(rng.integers(1, 28)), int(rng.integers(1, 130)))
    xh = rng.standard_normal(shape_x).astype(np.float32)
    v, y, w = (np.zeros(s, np.float32) for s in (v_shape, y_shape, w_shape))
    blocks = int(rng.integers(1, 5))
    v_own_and_two_foreign(xh, *(_part(a, tile, blocks) for a in (v, y, w)), 4, 32,
                          interpret=True)
    lead = _grid(v_shape, tile)[:-1]
    np.testing.assert_array_equal(v, xh[tuple(slice(0, s) for s in v_shape)] + 1.0)
    crop = lambda s: xh[tuple(slice(0, n) for n in s)]
    np.testing.assert_array_equal(y, _expected_masked(crop(y_shape), y_shape, lead, tile, 0.0,
                                                      lambda a: a * 2.0))
    np.testing.assert_array_equal(w, _expected_masked(crop(w_shape), w_shape, lead, tile, 0.0,
                                                      lambda a: a - 1.0))


def test_foreign_3d_strip_kernels_compile_to_ptx():
    x = np.zeros((2, 20, 100), np.float32)
    parts = [_part(np.zeros(s, np.float32), (1, 4, 32), 3)
             for s in ((2, 20, 100), (2, 12, 100), (3, 28, 64))]
    ptx = v_own_and_two_foreign.ptx(x, *parts, 4, 32)
    assert ".entry" in ptx
    assert ".entry" in copy_via_v_3d.ptx(x, *parts[:2], 4, 32)


# ---- attempts to reach one 3-D partition through strips of two partitions -----------------


@nt.jit
def branch_unified(x, v: P[1, "BM", "BN"], w: P[1, "BM", "BN"], y: P[1, "BM", "BN"], c,
                   BM: nt.Constant, BN: nt.Constant):
    for rv in nt.strips(v):
        for rw in nt.strips(w):
            s = rv if c > 0 else rw
            for idx in nt.tiles(y, s):
                nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def tuple_of_strips(x, v: P[1, "BM", "BN"], w: P[1, "BM", "BN"], y: P[1, "BM", "BN"], c,
                    BM: nt.Constant, BN: nt.Constant):
    for rv in nt.strips(v):
        for rw in nt.strips(w):
            t = (rv, rw)
            for idx in nt.tiles(y, t[c]):
                nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def tuple_of_strips_static(x, v: P[1, "BM", "BN"], w: P[1, "BM", "BN"], y: P[1, "BM", "BN"],
                           BM: nt.Constant, BN: nt.Constant):
    for rv in nt.strips(v):
        for rw in nt.strips(w):
            t = (rv, rw)
            for idx in nt.tiles(y, t[0]):
                nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
            for idx in nt.tiles(y, t[1]):
                nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def reassigned_after_loops(x, v: P[1, "BM", "BN"], w: P[1, "BM", "BN"], y: P[1, "BM", "BN"],
                           BM: nt.Constant, BN: nt.Constant):
    for rv in nt.strips(v):
        s = rv
        for rw in nt.strips(w):
            s = rw
        for idx in nt.tiles(y, s):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


def _store_strip(y, s, x, BM, BN):
    for idx in nt.tiles(y, s):
        nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def through_helper(x, v: P[1, "BM", "BN"], w: P[1, "BM", "BN"], y: P[1, "BM", "BN"],
                   BM: nt.Constant, BN: nt.Constant):
    for rv in nt.strips(v):
        _store_strip(y, rv, x, BM, BN)
    for rw in nt.strips(w):
        _store_strip(y, rw, x, BM, BN)


@nt.jit
def group_sources(x, vs: P[1, "BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant,
                  BN: nt.Constant):
    for g in nt.static_range(len(vs)):
        for r in nt.strips(vs[g]):
            for idx in nt.tiles(y, r):
                nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def own_and_foreign_read(x, v: P[1, "BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant,
                         BN: nt.Constant):
    """y stored through v's strips, read through its own (a read of another block's tile)."""
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
    for ry in nt.strips(y):
        for idx in nt.tiles(y, ry):
            t = nt.load(y, idx)
            for j in nt.tiles(v, ry):
                nt.store(v, t, j)


@nt.jit
def crossed(x, v: P[1, "BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    """y through v's strips and v through y's strips."""
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
    for ry in nt.strips(y):
        for idx in nt.tiles(v, ry):
            nt.store(v, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def source_also_by_tiles(x, v: P[1, "BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant,
                         BN: nt.Constant):
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
    for iv in nt.tiles(v):
        nt.store(v, nt.load(x, iv, (1, BM, BN), padding=0.0), iv)


@nt.jit
def target_also_by_tiles(x, v: P[1, "BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant,
                         BN: nt.Constant):
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
    for iy in nt.tiles(y):
        nt.store(y, nt.load(x, iy, (1, BM, BN), padding=0.0), iy)


def _three_3d():
    x = np.ones((2, 20, 100), np.float32)
    v, w = np.zeros((2, 20, 100), np.float32), np.zeros((2, 8, 100), np.float32)
    y = np.zeros((2, 12, 100), np.float32)
    return x, v, w, y


@pytest.mark.parametrize("kern,cls", [
    (branch_unified, TileTypingError),
    (tuple_of_strips, TileTypingError),
    (tuple_of_strips_static, ForeignTileStoreError),
    (reassigned_after_loops, TileTypingError),
    (through_helper, ForeignTileStoreError),
])
@pytest.mark.parametrize("path", ["interpret", "ptx"])
def test_two_strip_sources_for_one_3d_partition_are_refused(kern, cls, path):
    x, v, w, y = _three_3d()
    args = [x, _part(v, (1, 4, 32), 3), _part(w, (1, 4, 32), 3), _part(y, (1, 4, 32), 3)]
    if kern in (branch_unified, tuple_of_strips):
        args.append(1)
    args += [4, 32]
    if path == "interpret":
        _refused(lambda: kern(*args, interpret=True), cls, outs=(v, w, y))
    else:
        _refused(lambda: kern.ptx(*args), cls)


def test_static_range_over_a_group_of_sources_is_refused():
    x, v, w, y = _three_3d()
    _refused(lambda: group_sources(x, (_part(v, (1, 4, 32), 3), _part(w, (1, 4, 32), 3)),
                                   _part(y, (1, 4, 32), 3), 4, 32, interpret=True),
             ForeignTileStoreError, outs=(v, w, y), match="vs__0.*vs__1")


@pytest.mark.parametrize("kern", [own_and_foreign_read, crossed, source_also_by_tiles,
                                  target_also_by_tiles])
def test_mixed_schemes_on_3d_partitions_are_refused(kern):
    x, v, _w, y = _three_3d()
    _refused(lambda: kern(x, _part(v, (1, 4, 32), 3), _part(y, (1, 4, 32), 3), 4, 32,
                          interpret=True), ForeignTileStoreError, outs=(v, y))
    _refused(lambda: kern.ptx(x, _part(v, (1, 4, 32), 3), _part(y, (1, 4, 32), 3), 4, 32),
             ForeignTileStoreError)


@nt.jit
def foreign_to_unmapped(x, v: P[1, "BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant,
                        BN: nt.Constant):
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


def test_foreign_strip_of_an_unmapped_target_is_refused():
    x, v, _w, y = _three_3d()
    _refused(lambda: foreign_to_unmapped(x, _part(v, (1, 4, 32), 3),
                                         nt.partition(y, (1, 4, 32)), 4, 32, interpret=True),
             TileError, outs=(v, y))


def test_foreign_strips_with_different_block_counts_are_refused():
    x, v, _w, y = _three_3d()
    _refused(lambda: copy_via_v_3d(x, _part(v, (1, 4, 32), 3), _part(y, (1, 4, 32), 5), 4, 32,
                                   interpret=True), TileError, outs=(v, y), match="grid")


@nt.jit
def strip_3d_for_4d(x, v: P[1, "BM", "BN"], y: P[1, 1, "BM", "BN"], BM: nt.Constant,
                    BN: nt.Constant):
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (1, 1, BM, BN), padding=0.0), idx)


@nt.jit
def strip_2d_for_3d(x, v: P["BM", "BN"], y: P[1, "BM", "BN"], BM: nt.Constant,
                    BN: nt.Constant):
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


@nt.jit
def strip_3d_for_2d(x, v: P[1, "BM", "BN"], y: P["BM", "BN"], BM: nt.Constant,
                    BN: nt.Constant):
    for rv in nt.strips(v):
        for idx in nt.tiles(y, rv):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


def test_rank_mismatched_strips_are_refused():
    x4 = np.ones((2, 2, 8, 64), np.float32)
    v3, y4 = np.zeros((2, 8, 64), np.float32), np.zeros((2, 2, 8, 64), np.float32)
    _refused(lambda: strip_3d_for_4d(x4, _part(v3, (1, 4, 32), 2), _part(y4, (1, 1, 4, 32), 2),
                                     4, 32, interpret=True), TileTypingError, outs=(y4,))
    v2, y3 = np.zeros((8, 64), np.float32), np.zeros((2, 8, 64), np.float32)
    _refused(lambda: strip_2d_for_3d(y3.copy(), _part(v2, (4, 32), 2), _part(y3, (1, 4, 32), 2),
                                     4, 32, interpret=True), TileTypingError, outs=(y3,))
    _refused(lambda: strip_3d_for_2d(v2.copy(), _part(v3, (1, 4, 32), 2), _part(v2, (4, 32), 2),
                                     4, 32, interpret=True), TileTypingError, outs=(v2,))


@nt.jit
def ys_from_one_v(x, v: P[1, "BM", "BN"], ys: P[1, "BM", "BN"], BM: nt.Constant,
                  BN: nt.Constant):
    for r in nt.strips(v):
        for g in nt.static_range(len(ys)):
            for idx in nt.tiles(ys[g], r):
                nt.store(ys[g], nt.load(x, idx, (1, BM, BN), padding=0.0) + g, idx)


def test_a_group_of_targets_from_one_source_matches_numpy():
    rng = np.random.default_rng()
    tile = (1, 4, 32)
    xh = rng.standard_normal((3, 30, 100)).astype(np.float32)
    v = np.zeros((2, 20, 100), np.float32)
    y0, y1 = np.zeros((2, 12, 100), np.float32), np.zeros((3, 28, 100), np.float32)
    blocks = int(rng.integers(1, 6))
    ys_from_one_v(xh, _part(v, tile, blocks), (_part(y0, tile, blocks), _part(y1, tile, blocks)),
                  4, 32, interpret=True)
    lead = _grid(v.shape, tile)[:-1]
    crop = lambda s: xh[tuple(slice(0, n) for n in s)]
    np.testing.assert_array_equal(y0, _expected_masked(crop(y0.shape), y0.shape, lead, tile,
                                                       0.0, lambda a: a))
    np.testing.assert_array_equal(y1, _expected_masked(crop(y1.shape), y1.shape, lead, tile,
                                                       0.0, lambda a: a + 1.0))
    assert not v.any()


@nt.jit
def zipped_strips(x, v: P[1, "BM", "BN"], w: P[1, "BM", "BN"], y: P[1, "BM", "BN"],
                  BM: nt.Constant, BN: nt.Constant):
    for rv, rw in zip(nt.strips(v), nt.strips(w)):
        for idx in nt.tiles(y, rw):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


def test_strips_through_zip_are_refused():
    x, v, w, y = _three_3d()
    _refused(lambda: zipped_strips(x, *(_part(a, (1, 4, 32), 3) for a in (v, w, y)), 4, 32,
                                   interpret=True), UnanalyzedCallError, outs=(y,))
