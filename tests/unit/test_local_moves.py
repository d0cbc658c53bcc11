"""The register-only moves ``local_slots`` / ``local_lines`` (``lowering/layouts.py``), brute
force against ``BlockedLayout`` / ``SliceLayout.linear_index``: moves, reshapes and broadcasts
that keep every element in its thread, and whole lines held in order; and leading-axis
reductions (which take the register path) by dtype, in PTX and in the interpreter against NumPy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.layout import BlockedLayout, SliceLayout
from numba_tile.layout import local_lines, local_slots


def _body(ptx):
    return ptx[ptx.index("{", ptx.index(".entry")):]


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
