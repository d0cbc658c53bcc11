"""Overlap checks (runtime/overlap.py) against a brute-force set-of-bytes reference: exact verdicts
within the work bound, undecided (never wrong) past it."""

import itertools
import random
from collections import Counter

import numpy as np
import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime import arrays, overlap
from numba_tile.runtime.arrays import ArrayArg, as_array_arg
from numba_tile.runtime.fakes import FakeDeviceArray, RawInterface, cai_of
from numba_tile.runtime.overlap import (
    has_internal_overlap,
    internal_overlap_verdict,
    overlap_verdict,
    shares_memory,
)


def _arg(ptr, shape, strides, itemsize=4, device=0):
    dtype = {1: np.dtype(np.bool_), 2: np.dtype(np.float16), 4: np.dtype(np.float32),
             8: np.dtype(np.float64)}[itemsize]
    return ArrayArg(obj=None, owner=None, ptr=ptr, shape=tuple(shape), strides=tuple(strides),
                    dtype=dtype, readonly=False, device=device)


def _byte_counts(a: ArrayArg) -> Counter:
    """Every byte address covered by an element of ``a``, with multiplicity."""
    counts = Counter()
    for index in itertools.product(*(range(n) for n in a.shape)):
        addr = a.ptr + sum(i * s for i, s in zip(index, a.strides))
        counts.update(range(addr, addr + a.itemsize))
    return counts


def _brute_internal(a: ArrayArg) -> bool:
    return any(c > 1 for c in _byte_counts(a).values())


def _brute_shares(a: ArrayArg, b: ArrayArg) -> bool:
    if a.device != b.device:
        return False
    return bool(set(_byte_counts(a)) & set(_byte_counts(b)))


def _random_layout(rng: random.Random, itemsize: int, base: int):
    ndim = rng.randint(0, 3)
    shape = [rng.choice([0, 1, 1, 2, 3, 4]) if rng.random() < 0.15 else rng.randint(1, 4)
             for _ in range(ndim)]
    choices = [0, itemsize, -itemsize, 2 * itemsize, -3 * itemsize, 4 * itemsize, 5 * itemsize,
               7 * itemsize, 1, -1, 3, 6]
    strides = [rng.choice(choices) if rng.random() < 0.5 else rng.randint(-6, 6) * itemsize
               for _ in range(ndim)]
    ptr = base + rng.randint(0, 8 * itemsize)
    return ptr, shape, strides


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_internal_overlap_matches_brute_force_on_random_layouts(itemsize):
    rng = random.Random(1000 + itemsize)
    seen = Counter()
    for _ in range(600):
        ptr, shape, strides = _random_layout(rng, itemsize, 4096)
        a = _arg(ptr, shape, strides, itemsize)
        expected = _brute_internal(a)
        seen[expected] += 1
        assert has_internal_overlap(a) == expected, (shape, strides, itemsize)
    assert seen[True] > 50 and seen[False] > 50  # both outcomes exercised


@pytest.mark.parametrize("itemsize", [1, 4, 8])
def test_shares_memory_matches_brute_force_on_random_layouts(itemsize):
    rng = random.Random(2000 + itemsize)
    seen = Counter()
    for _ in range(600):
        a = _arg(*_random_layout(rng, itemsize, 4096), itemsize)
        b = _arg(*_random_layout(rng, itemsize, 4096 + rng.randint(-40, 40)), itemsize)
        expected = _brute_shares(a, b)
        seen[expected] += 1
        assert shares_memory(a, b) == expected, (a, b)
        assert shares_memory(b, a) == expected
    assert seen[True] > 50 and seen[False] > 50


def _numpy_views(buf):
    """Many views of one 1-D float64 buffer of 24 elements (real addresses)."""
    m = buf.reshape(4, 6)
    return {
        "all": buf, "even": buf[0::2], "odd": buf[1::2], "head": buf[:-1], "tail": buf[1:],
        "rev": buf[::-1], "rev_odd": buf[-2::-2], "every3": buf[::3], "every3_1": buf[1::3],
        "m": m, "mT": m.T, "m_rows_rev": m[::-1], "m_cols_rev": m[:, ::-1], "m_inner": m[1:3, 2:5],
        "m_col0": m[:, 0], "m_col1": m[:, 1], "m_row2": m[2], "m_step": m[::2, ::3],
        "bcast": np.broadcast_to(buf[:1], (3,)), "bcast2": np.broadcast_to(m[:1], (2, 6)),
        "overlapping": np.lib.stride_tricks.as_strided(buf, (5, 4), (16, 8)),
        "window": np.lib.stride_tricks.as_strided(buf[3:], (3, 3), (8, 8)),
        "empty": buf[5:5], "empty2": m[:, 3:3],
    }


def test_views_of_one_buffer_match_brute_force():
    buf = np.arange(24, dtype=np.float64)
    views = {k: as_array_arg(FakeDeviceArray(v), k) for k, v in _numpy_views(buf).items()}
    for name, a in views.items():
        assert has_internal_overlap(a) == _brute_internal(a), name
    for (n1, a), (n2, b) in itertools.product(views.items(), repeat=2):
        assert shares_memory(a, b) == _brute_shares(a, b), (n1, n2)


def test_views_also_agree_with_numpy_on_host_arrays():
    buf = np.arange(24, dtype=np.float64)
    views = _numpy_views(buf)
    for (n1, v1), (n2, v2) in itertools.product(views.items(), repeat=2):
        expected = bool(np.shares_memory(v1, v2, max_work=None))
        assert shares_memory(as_array_arg(v1, n1), as_array_arg(v2, n2)) == expected, (n1, n2)


def test_named_cases():
    # A1, A2, A3, L3 written out; expectations still computed by brute force.
    buf = np.zeros(16)
    x = np.arange(16).reshape(4, 4)
    pairs = [(x, x.T), (buf[1:], buf[:-1]), (buf[0::2], buf[1::2]), (buf[::-1], buf),
             (buf[::-1][:8], buf[8:]), (buf[::-1][:7], buf[:8])]
    for p, q in pairs:
        a, b = as_array_arg(FakeDeviceArray(p), "a"), as_array_arg(FakeDeviceArray(q), "b")
        assert shares_memory(a, b) == _brute_shares(a, b)
    bcast = as_array_arg(FakeDeviceArray(np.broadcast_to(np.ones(1, np.float32), (4,))), "b")
    assert has_internal_overlap(bcast) == _brute_internal(bcast)
    assert _brute_internal(bcast)


def test_devices_are_not_compared_addresses_are():
    """Unified addressing: two ranges that meet are one memory whatever device its producers
    name (a peer's memory is read at its own address; pinned host memory at its host one)."""
    a = _arg(4096, (8,), (4,), device=0)
    b = _arg(4096, (8,), (4,), device=1)
    h = _arg(4096, (8,), (4,), device=None)
    far = _arg(4096 + 32, (8,), (4,), device=1)
    assert shares_memory(a, a)
    assert shares_memory(a, b)
    assert shares_memory(a, h)
    assert not shares_memory(a, far)


def test_zero_size_never_overlaps():
    a = _arg(4096, (8,), (4,))
    z = _arg(4096, (0, 3), (0, 0))
    assert not shares_memory(a, z)
    assert not has_internal_overlap(z)


def test_stride_zero_on_extent_one_axis_is_not_overlap():
    a = _arg(4096, (1, 4), (0, 4))
    assert has_internal_overlap(a) == _brute_internal(a) is False


# -- verdicts within the work bound ----------------------------------------------------------------

def _random_deep_layout(rng: random.Random, itemsize: int):
    """Ranks 2 to 5, extents 1 to 3, strides that often merge (s2 == n1 * s1), collide or
    interleave, so that every pre-test and the exact recursion are exercised."""
    ndim = rng.randint(2, 5)
    shape = [rng.randint(1, 3) for _ in range(ndim)]
    strides = []
    for n in shape:
        if strides and rng.random() < 0.3:
            strides.append(strides[-1] * shape[len(strides) - 1])      # mergeable
        else:
            strides.append(rng.choice([1, 2, 3, 5, 7, 11, 13]) * itemsize * rng.choice([1, -1])
                           + rng.choice([0, 0, 0, 1]))
    return 4096 + 64 * itemsize, shape, strides


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_internal_verdict_matches_brute_force_on_deeper_layouts(itemsize):
    rng = random.Random(3000 + itemsize)
    seen = Counter()
    for _ in range(500):
        a = _arg(*_random_deep_layout(rng, itemsize), itemsize)
        expected = _brute_internal(a)
        seen[expected] += 1
        assert internal_overlap_verdict(a) is expected, (a.shape, a.strides, itemsize)
    assert seen[True] > 50 and seen[False] > 50


def test_internal_verdict_does_not_depend_on_the_address():
    rng = random.Random(5)
    for _ in range(200):
        ptr, shape, strides = _random_deep_layout(rng, 4)
        verdicts = {internal_overlap_verdict(_arg(p, shape, strides)) for p in
                    (ptr, ptr + 4 * 1000, 2**40, 2**63 + 4096)}
        assert len(verdicts) == 1, (shape, strides)


def test_a_tiny_work_bound_gives_undecided_never_a_wrong_answer(monkeypatch):
    """With max_work=1 NumPy gives up on almost everything it must search: the verdicts may be
    None (undecided) but never contradict brute force, and the yes/no forms say "may share"."""
    monkeypatch.setattr(overlap, "MAX_WORK", 1)
    rng = random.Random(77)
    undecided = 0
    for _ in range(400):
        a = _arg(*_random_deep_layout(rng, 4))
        b = _arg(*_random_deep_layout(rng, 4))
        for verdict, truth, loose in [
                (internal_overlap_verdict(a), _brute_internal(a), has_internal_overlap(a)),
                (overlap_verdict(a, b), _brute_shares(a, b), shares_memory(a, b))]:
            if verdict is None:
                undecided += 1
                assert loose is True
            else:
                assert verdict is truth and loose is truth
    assert undecided > 20


def test_pigeonhole_and_merged_axes_decide_without_numpy(monkeypatch):
    def no_solver(x, y):
        raise AssertionError("the exact solver should not be needed")

    monkeypatch.setattr(overlap, "_solve", no_solver)
    dense = _arg(4096, (3, 4, 5), (4, 4, 4))            # 60 floats in 28 bytes: pigeonhole
    assert internal_overlap_verdict(dense) is True
    merged = _arg(4096, (5, 3, 2), (-24, 8, 4))         # (2, 4), (3, 8), (5, 24): one axis of 30
    assert internal_overlap_verdict(merged) is False
    transposed = _arg(4096, (2,) * 12, tuple(4 << i for i in range(12))[::-1])
    assert internal_overlap_verdict(transposed) is False


def test_same_first_element_is_overlap_at_once(monkeypatch):
    monkeypatch.setattr(overlap, "_solve", lambda x, y: None)
    a = _arg(4096, (2, 2, 2), (400, 40, 4))
    b = _arg(4098, (3, 3), (-12, 100), itemsize=2)       # its element 0 covers bytes 4098-4099
    assert overlap_verdict(a, b) is True and overlap_verdict(b, a) is True


# -- huge strides: NumPy's fixed-width arithmetic ------------------------------------------------
# NumPy's shares_memory computes each array's offsets in int64 and answered False (no error) for
# arrays that overlap once a span passed 2**63. Validated arguments span at most arrays.MAX_SPAN
# bytes and NumPy's stand-ins are translated near address 0; these tests check the verdicts against
# an element-by-element reference (byte sets are far too large here).

MAX_SPAN = arrays.MAX_SPAN
_DTYPES = {1: np.dtype(np.bool_), 2: np.dtype(np.float16), 4: np.dtype(np.float32),
           8: np.dtype(np.float64)}


def _starts(shape, strides, ptr):
    """Address of every element (one per index tuple)."""
    return [ptr + sum(i * s for i, s in zip(index, strides))
            for index in itertools.product(*(range(n) for n in shape))]


def _ref_internal(shape, strides, ptr, itemsize) -> bool:
    starts = sorted(_starts(shape, strides, ptr))
    return any(b - a < itemsize for a, b in zip(starts, starts[1:]))


def _ref_shares(a, b) -> bool:
    """Whether an element interval of layout ``a`` meets one of ``b`` (sweep over sorted starts)."""
    intervals = sorted([(s, s + a[3], 0) for s in _starts(*a[:3])] +
                       [(s, s + b[3], 1) for s in _starts(*b[:3])])
    reach = [-1, -1]               # highest end seen so far, per layout
    for start, end, side in intervals:
        if start < reach[1 - side]:
            return True
        reach[side] = max(reach[side], end)
    return False


def _extent(shape, strides, itemsize):
    """(lowest offset, one past the highest offset) of a layout, relative to its element 0."""
    lo = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    hi = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0) + itemsize
    return lo, hi


def _huge_strides(rng: random.Random, shape, itemsize):
    """Byte strides mixing small ones, powers of two up to 2**61 (nudged), and ones that put the
    span right at MAX_SPAN (or an item past it), with random signs."""
    out = []
    for n in shape:
        kind = rng.random()
        if n == 1 and kind < 0.3:            # never steps: any 64-bit stride
            out.append(rng.choice([1 << 62, -(1 << 63), (1 << 63) - 1, 3]))
            continue
        if kind < 0.25:
            s = rng.randint(-4, 4) * itemsize
        elif kind < 0.7 or n == 1:
            s = (1 << rng.randint(38, 61)) + rng.randint(-3, 3) * itemsize
        else:
            s = (MAX_SPAN - itemsize) // (n - 1) + rng.choice([0, 0, itemsize])
        out.append(s // itemsize * itemsize * rng.choice([1, -1]))
    return out


def _place(rng: random.Random, shape, strides, itemsize):
    """A pointer (aligned) that keeps every byte in [0, 2**64 - 1), low, high (above 2**63) or
    anywhere in between; None when the layout cannot fit in the address space."""
    lo, hi = _extent(shape, strides, itemsize)
    first, last = max(-lo, itemsize), (1 << 64) - 1 - hi    # allowed range of the pointer
    if first > last:
        return None
    where = rng.random()
    if where < 0.3:
        ptr = first + rng.randint(0, 64) * itemsize
    elif where < 0.6:
        ptr = last - rng.randint(0, 64) * itemsize
    else:
        ptr = rng.randint(first, last)
    ptr = min(max(ptr, first), last)
    ptr += -ptr % itemsize
    return ptr if ptr <= last else None


def _validated_or_refused(shape, strides, ptr, itemsize, name):
    """as_array_arg on a CUDA Array Interface with this layout: the ArrayArg, or None if refused
    by the span bound (any other refusal fails the test)."""
    host = np.zeros(1, _DTYPES[itemsize])
    raw = RawInterface(cai_of(host, shape=tuple(shape), strides=tuple(strides),
                              data=(ptr, False)), host)
    try:
        return as_array_arg(raw, name)
    except TileArgumentError as exc:
        assert "expected at most 2**61 bytes from the lowest byte" in exc.message, exc.message
        return None


def _stand_in_bounds(stand_in):
    data = stand_in.__array_interface__["data"][0]
    lo, hi = overlap._bounds(data, stand_in.shape, stand_in.strides, stand_in.itemsize)
    return data, lo, hi


@pytest.fixture
def solver_calls(monkeypatch):
    """Records, per call into NumPy's solver, the data pointer and byte range of both stand-ins
    (ints only: a stand-in's repr would read memory at its address); the test checks them with
    :func:`_assert_near_zero`."""
    calls = []
    real = overlap._solve

    def recorded(x, y):
        calls.append((_stand_in_bounds(x), _stand_in_bounds(y)))
        return real(x, y)

    monkeypatch.setattr(overlap, "_solve", recorded)
    return calls


def _assert_near_zero(calls):
    """Every stand-in NumPy saw had a non-null data pointer, lay below 2**62 + 2**21 and spanned
    at most MAX_SPAN bytes."""
    for pair in calls:
        for data, lo, hi in pair:
            assert 0 < lo <= data < hi < (1 << 62) + (1 << 21) and hi - lo <= MAX_SPAN, pair


@pytest.mark.parametrize("itemsize", [1, 4, 8])
def test_huge_strides_self_overlap_matches_the_reference(itemsize, solver_calls):
    rng = random.Random(7000 + itemsize)
    seen = Counter()
    for case in range(700):
        rank = rng.randint(1, 12 if case % 4 == 0 else 4)
        shape = [rng.choice([1, 2, 2, 3]) if rank > 4 else rng.randint(1, 5) for _ in range(rank)]
        strides = _huge_strides(rng, shape, itemsize)
        ptr = _place(rng, shape, strides, itemsize)
        if ptr is None:
            continue
        lo, hi = _extent(shape, strides, itemsize)
        a = _validated_or_refused(shape, strides, ptr, itemsize, "z")
        assert (a is None) == (hi - lo > MAX_SPAN), (shape, strides, ptr)
        if a is None:
            seen["refused"] += 1
            continue
        expected = _ref_internal(shape, strides, ptr, itemsize)
        assert internal_overlap_verdict(a) is expected, (shape, strides, itemsize)
        seen[expected] += 1
        seen["near the bound"] += hi - lo > MAX_SPAN // 2
        seen["above 2**63"] += ptr >= 1 << 63
    assert min(seen[True], seen[False], seen["refused"], seen["near the bound"],
               seen["above 2**63"]) > 20, seen
    assert len(solver_calls) > 20          # the exact recursion ran, not only the pre-tests
    _assert_near_zero(solver_calls)


@pytest.mark.parametrize("itemsizes", [(4, 4), (8, 8), (4, 8), (1, 2)])
def test_huge_strides_pairs_match_the_reference(itemsizes, solver_calls):
    rng = random.Random(8000 + 10 * itemsizes[0] + itemsizes[1])
    seen = Counter()
    for case in range(700):
        layouts = []
        for side, itemsize in enumerate(itemsizes):
            rank = rng.randint(1, 8 if case % 4 == 0 else 3)
            shape = [rng.choice([1, 2, 2]) if rank > 3 else rng.randint(1, 4) for _ in range(rank)]
            strides = _huge_strides(rng, shape, itemsize)
            if side == 0:
                ptr = _place(rng, shape, strides, itemsize)
            else:   # aim an element of the second layout at (or next to) one of the first
                target = rng.choice(_starts(*layouts[0][:3])) + rng.choice(
                    [0, 0, itemsize, -itemsize, 1, -1, rng.randint(-64, 64)])
                ptr = target - rng.choice(_starts(shape, strides, 0))
                ptr -= ptr % itemsize
                lo, hi = _extent(shape, strides, itemsize)
                if not (0 <= ptr + lo and ptr + hi < 1 << 64 and ptr):
                    ptr = None
            if ptr is None:
                break
            layouts.append((shape, strides, ptr, itemsize))
        if len(layouts) < 2:
            continue
        args = [_validated_or_refused(*lay, name) for lay, name in zip(layouts, "xz")]
        spans = [_extent(lay[0], lay[1], lay[3]) for lay in layouts]
        assert [a is None for a in args] == [hi - lo > MAX_SPAN for lo, hi in spans], layouts
        if None in args:
            seen["refused"] += 1
            continue
        expected = _ref_shares(*layouts)
        a, b = args
        assert overlap_verdict(a, b) is expected, layouts
        assert overlap_verdict(b, a) is expected, layouts
        seen[expected] += 1
        seen["near the bound"] += max(hi - lo for lo, hi in spans) > MAX_SPAN // 2
        seen["above 2**63"] += max(lay[2] for lay in layouts) >= 1 << 63
    assert min(seen[True], seen[False], seen["refused"], seen["near the bound"],
               seen["above 2**63"]) > 20, seen
    assert len(solver_calls) > 20
    _assert_near_zero(solver_calls)


def test_layouts_past_2_62_bytes_are_refused_or_undecided_never_disjoint():
    """x = as_strided(buf[1:], (3,), (2**62,)) overlaps buf[0:2] at x[0]; so does a 2-D input
    with a stride of 2**62: as arguments they are refused (span over the bound); as descriptions
    built directly (not validated) the verdict is undecided, never "disjoint"."""
    buf = np.ones(4, np.float32)
    x = np.lib.stride_tricks.as_strided(buf[1:], shape=(3,), strides=(2**62,), writeable=False)
    with pytest.raises(TileArgumentError, match="expected at most 2\\*\\*61 bytes"):
        as_array_arg(x, "x")
    with pytest.raises(TileArgumentError, match="expected at most 2\\*\\*61 bytes"):
        as_array_arg(FakeDeviceArray(x), "x")
    p = 2**40
    cases = [(_arg(buf.ctypes.data + 4, (3,), (2**62,)), _arg(buf.ctypes.data, (2,), (4,))),
             (_arg(p, (2, 3), (4, 2**62)), _arg(p + 4, (2,), (4,))),
             (_arg(p, (3,), (-(2**62),)), _arg(p, (1,), (4,))),
             (_arg(2**63 + 4096, (2, 2), (2**62 - 4, 4)), _arg(2**63 + 4096 + 2**62, (2,), (4,)))]
    for a, b in cases:
        assert overlap_verdict(a, b) is not False and overlap_verdict(b, a) is not False
        assert shares_memory(a, b) and shares_memory(b, a)
    assert internal_overlap_verdict(_arg(p, (3, 2), (2**62, 2**63 - 4))) is not False


def test_stand_ins_are_translated_below_2_63(solver_calls):
    """Two arrays high in the address space (above 2**63), spanning up to MAX_SPAN: NumPy sees them
    translated near address 0 (checked by the fixture) and gives the reference's verdict."""
    top = (1 << 64) - MAX_SPAN - 4096
    s = MAX_SPAN // 4
    pairs = [((2, 3), (s, 8), top, (3,), (8,), top + s + 8),            # overlap at x[1, 1]
             ((2, 3), (s, 8), top, (3,), (8,), top + s + 4),            # interleaved: disjoint
             ((4,), (s,), top, (2, 2), (-s, 4), top + 2 * s + 4),       # a[2] meets b[1, 1]
             ((4,), (-s,), top + 3 * s, (2,), (s - 4,), top + 4)]       # disjoint
    seen = set()
    for shape1, strides1, p1, shape2, strides2, p2 in pairs:
        a = _validated_or_refused(shape1, strides1, p1, 4, "x")
        b = _validated_or_refused(shape2, strides2, p2, 4, "z")
        expected = _ref_shares((shape1, strides1, p1, 4), (shape2, strides2, p2, 4))
        assert overlap_verdict(a, b) is expected and overlap_verdict(b, a) is expected
        seen.add(expected)
    assert seen == {True, False} and len(solver_calls) == 2 * len(pairs)
    _assert_near_zero(solver_calls)


def test_inflight_registry_orders_launches_over_huge_strided_views():
    """The registry's conflict test goes through overlap.shares_memory: an in-flight write of
    buf[0:2] conflicts with a view whose far elements lie 2**62 bytes on (not validated: built
    directly), and with a validated view at the span bound."""
    from numba_tile.runtime.inflight import InflightRegistry

    class Backend:
        def create(self):
            return [False]

        def record(self, event, stream):
            event[0] = False

        def query(self, event):
            return event[0]

        def synchronize(self, event):
            event[0] = True

        def wait(self, stream, event):
            pass

        def destroy(self, event):
            pass

    buf = np.ones(8, np.float32)
    written = as_array_arg(FakeDeviceArray(buf[0:2]), "z")
    reg = InflightRegistry(Backend())
    reg.register(1 << 20, (written,), writes=(written,))
    forged = _arg(buf.ctypes.data + 4, (3,), (2**62,))
    at_bound = _validated_or_refused((2,), (MAX_SPAN - 4,), buf.ctypes.data + 4, 4, "y")
    elsewhere = as_array_arg(FakeDeviceArray(buf[4:8]), "w")
    assert at_bound is not None
    for reader in (forged, at_bound):
        found = reg.conflicts(2 << 20, [reader], [])
        assert len(found) == 1 and found[0][1] is reader
    assert reg.conflicts(2 << 20, [elsewhere], []) == []
