"""Red-team probes (session 9) of two changes:

1. ``tiles(z, strip)`` with a strip of ANOTHER partition above rank 2
   (``typing/partition.type_tiles``, ``typing/ownership.check_index_schemes``).
2. The generated ``__call__`` binding Constant / defaulted parameters (``binding.py``).

CPU only: kernels run in the interpreter (its race detector records every block's accesses)
or are compiled to PTX. Tests asserting behaviour that holds are plain tests; a test that
shows a bug asserts the SAFE behaviour and is ``xfail(strict=True, reason="BUG: ...")``.
"""

from __future__ import annotations

import functools
import itertools
import threading

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (ForeignTileStoreError, TileArgumentError, TileError,
                               TileTypingError, UnanalyzedCallError)
from numba_tile.kernel import Kernel

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


# ============================================================================================
# 1. strips of another partition above rank 2
# ============================================================================================


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


# ============================================================================================
# 2. the generated __call__ (binding.py)
# ============================================================================================


class _FakePlan:
    """Stands in for a launch plan: records the values the call bound, in parameter order."""

    def __init__(self):
        self.got = []
        self.lock = threading.Lock()

    def run(self, values, handle, on_conflict):
        values = tuple(values)
        if not values:
            return None
        with self.lock:
            self.got.append(values)
        return ("launched", values)


@nt.jit
def k_mixed(x, B: nt.Constant, z: P["B"], s=1.0, C: nt.Constant = 4):
    nt.store(z, nt.load_like(x, z) * s + C)


@nt.jit
def k_posonly(x, z: P["B"], B: nt.Constant, /, s=2.0):
    nt.store(z, nt.load_like(x, z) * s)


@nt.jit
def k_mutable_default(x, z: P["B"], B: nt.Constant, s=2.0, tag=[1, 2]):   # noqa: B006
    nt.store(z, nt.load_like(x, z) * s)


@pytest.mark.parametrize("kern", [k_mixed, k_posonly, k_mutable_default])
def test_generated_call_binds_every_call_form_as_the_generic_binder(kern):
    """Every positional count and every ordered keyword sequence (duplicates, unknown names
    included): the values reaching the plan are the generic binder's, or the call is refused
    with TileArgumentError exactly where the generic binder refuses."""
    assert type(kern) is not Kernel           # the generated subclass
    plan = _FakePlan()
    kern._last_plan = plan
    try:
        names = [p.name for p in kern.params]
        for npos in range(len(names) + 2):
            pos = [object() for _ in range(npos)]
            rest = names[npos:] + names[:npos][:1] + ["nope"]
            for r in range(len(rest) + 1):
                for kws in itertools.permutations(rest, r):
                    kw = {q: object() for q in kws}
                    try:
                        expected = tuple(kern._bind_values(pos, kw))
                    except TileArgumentError:
                        expected = None
                    if expected is None:
                        with pytest.raises(TileArgumentError):
                            kern(*pos, **kw)
                    else:
                        assert kern(*pos, **kw) == ("launched", expected)
                        # the generic __call__ agrees
                        assert Kernel.__call__(kern, *pos, **kw) == ("launched", expected)
    finally:
        kern._last_plan = None


def test_generated_call_with_partial_with_options_and_threads():
    k2 = k_mixed.with_options(num_warps=8)
    assert type(k2) is type(k_mixed)
    plan = _FakePlan()
    k2._last_plan = plan
    p = functools.partial(k2, "x", 2, C=9)
    assert p("z") == ("launched", ("x", 2, "z", 1.0, 9))
    assert p("z", s=3.0) == ("launched", ("x", 2, "z", 3.0, 9))
    errors = []

    def worker(i):
        try:
            for j in range(200):
                r = k2(i, j, "z", C=i + j)
                assert r == ("launched", (i, j, "z", 1.0, i + j))
        except Exception as exc:          # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert k_mixed._last_plan is None      # the copy's plan is its own


@pytest.mark.parametrize("opts", [dict(interpret=True), dict(grid=3), dict(unchecked=None),
                                  dict(on_conflict="never"), dict(stream="s")])
def test_generated_call_leaves_the_fast_path_for_launch_options(opts):
    plan = _FakePlan()
    k_mixed._last_plan = plan
    try:
        x = np.ones(8, np.float32)
        z = np.zeros(8, np.float32)
        if opts.get("interpret"):
            k_mixed(x, 4, nt.partition(z, 4), s=2.0, C=1, **opts)
            np.testing.assert_array_equal(z, x * 2.0 + 1)
        else:
            with pytest.raises(TileArgumentError):
                k_mixed(x, 4, nt.partition(z, 4), s=2.0, C=1, **opts)
        assert not plan.got
    finally:
        k_mixed._last_plan = None


def test_generated_call_errors_point_at_the_users_line():
    rng = np.random.default_rng()
    x = rng.standard_normal(8).astype(np.float32)
    z = np.zeros(8, np.float32)
    import inspect
    here = inspect.currentframe()
    cases = [
        lambda: k_mixed(x, 5, nt.partition(z, 4), C=1, interpret=True),
        lambda: k_mixed(x, 4, nt.partition(z, 4), Q=1, interpret=True),
        lambda: k_mixed(x, 4, nt.partition(z, 4), s=1.0, stream="bad", interpret=True),
        lambda: functools.partial(k_mixed, x, B=4)(nt.partition(z, 4), interpret=True),
    ]
    first = here.f_lineno - 5
    for i, call in enumerate(cases):
        with pytest.raises(TileArgumentError) as info:
            call()
        assert info.value.filename == __file__
        assert info.value.lineno == first + i, (i, info.value.lineno)
    assert not z.any()
    k_mixed(x, 4, nt.partition(z, 4), s=2.0, C=1, interpret=True)
    np.testing.assert_array_equal(z, x * 2.0 + 1)


def test_generated_call_interpreted_values_match_numpy():
    rng = np.random.default_rng()
    for _ in range(3):
        x = rng.standard_normal(40).astype(np.float32)
        s, c = float(rng.standard_normal()), int(rng.integers(-5, 5))
        for call in (lambda z: k_mixed(x, 8, nt.partition(z, 8), s, c, interpret=True),
                     lambda z: k_mixed(x, 8, nt.partition(z, 8), C=c, s=s, interpret=True),
                     lambda z: k_mixed(x, B=8, z=nt.partition(z, 8), C=c, s=s,
                                       interpret=True),
                     lambda z: k_mixed(x, 8, z=nt.partition(z, 8), s=s, C=c, interpret=True)):
            z = np.zeros(40, np.float32)
            call(z)
            np.testing.assert_allclose(z, (x.astype(np.float64) * s + c).astype(np.float32),
                                       rtol=1e-5, atol=1e-5)


@nt.jit
def k_param_self(x, z: P["B"], self: nt.Constant, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + self)


# BUG found by the session-9 red team, fixed the same session (was a strict xfail)
def test_a_parameter_named_self_binds_by_keyword():
    x = np.random.default_rng().standard_normal(8).astype(np.float32)
    z = np.zeros(8, np.float32)
    try:
        k_param_self(x, nt.partition(z, 4), self=3, B=4, interpret=True)
    except TileArgumentError:
        return                                   # refused with numba_tile's error: fine
    np.testing.assert_array_equal(z, x + 3)


# BUG found by the session-9 red team, fixed the same session (was a strict xfail)
def test_a_parameter_named_like_a_launch_option_is_refused_or_bound():
    def body(x, z: P["B"], B: nt.Constant, unchecked: nt.Constant = False):
        nt.store(z, nt.load_like(x, z) + (1.0 if unchecked else 0.0))
    try:
        kern = nt.jit(body)
    except TileArgumentError:
        return                                   # refused at the definition: fine
    x = np.random.default_rng().standard_normal(8).astype(np.float32)
    z = np.zeros(8, np.float32)
    kern(x, nt.partition(z, 4), 4, unchecked=True, interpret=True)
    np.testing.assert_array_equal(z, x + 1.0)


# BUG found by the session-9 red team, fixed the same session (was a strict xfail)
def test_a_kernel_subclass_keeps_its_class():
    class Audited(Kernel):
        calls = 0

        def __call__(self, *args, **kwargs):
            type(self).calls += 1
            return super().__call__(*args, **kwargs)

    def body(x, z: P["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z))

    k = Audited(body)
    assert isinstance(k, Audited)
    x = np.ones(8, np.float32)
    z = np.zeros(8, np.float32)
    k(x, nt.partition(z, 4), B=4, interpret=True)
    assert Audited.calls == 1
