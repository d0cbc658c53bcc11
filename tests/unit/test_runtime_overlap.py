"""Overlap checks (runtime/overlap.py) against a brute-force set-of-bytes reference: exact verdicts
within the work bound, undecided (never wrong) past it."""

import itertools
import random
from collections import Counter

import numpy as np
import pytest

from numba_tile.runtime import overlap
from numba_tile.runtime.arrays import ArrayArg, as_array_arg
from numba_tile.runtime.fakes import FakeDeviceArray
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


def test_different_devices_never_overlap():
    a = _arg(4096, (8,), (4,), device=0)
    b = _arg(4096, (8,), (4,), device=1)
    h = _arg(4096, (8,), (4,), device=None)
    assert shares_memory(a, a)
    assert not shares_memory(a, b)
    assert not shares_memory(a, h)


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
