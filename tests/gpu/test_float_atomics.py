"""float16 / bfloat16 atomic_add and float atomic_max / atomic_min, on the
GPU and in the interpreter: sums that are exact in the array's dtype (so the order of the
updates cannot change them), and maxima / minima under IEEE 754 totalOrder, bit for bit."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import TileTypingError


@nt.jit(unchecked=True)
def add_kernel(idx, vals, out: nt.Mutable, old: nt.Partition["B"], B: nt.Constant):
    i = nt.load_like(idx, old, padding=-1)
    nt.store(old, nt.atomic_add(out, i, nt.load_like(vals, old)))


@nt.jit(unchecked=True)
def order_kernel(idx, vals, out: nt.Mutable, old: nt.Partition["B"], B: nt.Constant,
                 OP: nt.Constant):
    i = nt.load_like(idx, old, padding=-1)
    v = nt.load_like(vals, old)
    if OP == 0:
        r = nt.atomic_max(out, i, v)
    else:
        r = nt.atomic_min(out, i, v, sem="acq_rel")
    nt.store(old, r)


def _total_key(a):
    bits = a.view(np.int32 if a.dtype.itemsize == 4 else np.int64).astype(np.int64)
    mask = (1 << (a.dtype.itemsize * 8 - 1)) - 1
    return np.where(bits < 0, bits ^ mask, bits)


@pytest.mark.parametrize("dt", [np.float16, BFLOAT16_NP], ids=["float16", "bfloat16"])
def test_half_atomic_add_into_few_bins(tile_backend, dt):
    rng = np.random.default_rng()
    n, bins = 1500 + int(rng.integers(0, 200)), 41   # sums about 40 per bin: < 128
    idx = rng.integers(-2, bins + 2, n).astype(np.int32)      # some out of bounds
    vals = rng.integers(1, 4, n) * 0.5                         # 0.5, 1, 1.5: sums stay exact
    start = rng.integers(0, 8, bins).astype(np.float64)
    out = tile_backend.asarray(start.astype(dt))
    old = tile_backend.asarray(np.full(n, 99.0, dt))
    tile_backend.run(add_kernel, tile_backend.asarray(idx), tile_backend.asarray(vals.astype(dt)),
                     out, nt.partition(old, 256), 256, unchecked=True)
    ref = start.copy()
    inside = (idx >= 0) & (idx < bins)
    np.add.at(ref, idx[inside], vals[inside])
    assert ref.max() < 128                                     # exact in bfloat16 too
    got = tile_backend.to_numpy(out).astype(np.float64)
    np.testing.assert_array_equal(got, ref)
    old_h = tile_backend.to_numpy(old).astype(np.float64)
    np.testing.assert_array_equal(old_h[~inside], 0.0)        # nothing done: 0
    # each update saw a partial sum of its bin: from the start value up to the final minus it
    assert np.all(old_h[inside] >= start[idx[inside]])
    assert np.all(old_h[inside] <= ref[idx[inside]] - vals[inside])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("op", [0, 1], ids=["max", "min"])
def test_float_max_min_follow_total_order(tile_backend, dt, op):
    rng = np.random.default_rng()
    n, bins = 1200, 17
    idx = rng.integers(0, bins, n).astype(np.int32)
    vals = (rng.standard_normal(n) * 10).astype(dt)
    vals[:40] = np.array([0.0, -0.0, np.inf, -np.inf] * 10, dt)  # signed zeros and infinities
    start = (rng.standard_normal(bins) * 10).astype(dt)
    start[:2] = [-0.0, 0.0]
    out = tile_backend.asarray(start.copy())
    old = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(order_kernel, tile_backend.asarray(idx), tile_backend.asarray(vals), out,
                     nt.partition(old, 128), 128, op, unchecked=True)
    ref = start.copy()
    for b in range(bins):
        cand = np.concatenate([start[b:b + 1], vals[idx == b]])
        keys = _total_key(cand)
        ref[b] = cand[np.argmax(keys) if op == 0 else np.argmin(keys)]
    got = tile_backend.to_numpy(out)
    width = np.int32 if np.dtype(dt).itemsize == 4 else np.int64
    np.testing.assert_array_equal(got.view(width), ref.view(width))   # bit for bit: -0.0 too


def test_float_max_is_not_numpys_maximum_for_signed_zeros(tile_backend):
    # +0.0 is above -0.0 in totalOrder, whichever order the updates come in
    idx = np.zeros(256, np.int32)
    vals = np.where(np.arange(256) % 2 == 0, -0.0, 0.0).astype(np.float32)
    out = tile_backend.asarray(np.full(1, -np.inf, np.float32))
    old = tile_backend.asarray(np.zeros(256, np.float32))
    tile_backend.run(order_kernel, tile_backend.asarray(idx), tile_backend.asarray(vals), out,
                     nt.partition(old, 256), 256, 0, unchecked=True)
    assert tile_backend.to_numpy(out).view(np.int32)[0] == 0          # +0.0, not -0.0


@nt.jit(unchecked=True)
def half_max(idx, vals, out: nt.Mutable, old: nt.Partition["B"], B: nt.Constant):
    nt.store(old, nt.atomic_max(out, nt.load_like(idx, old), nt.load_like(vals, old)))


def test_half_max_is_refused():
    x = np.zeros(64, np.float16)
    with pytest.raises(TileTypingError, match="atomic_max"):
        half_max.ptx(np.zeros(64, np.int32), x, x.copy(), nt.partition(x.copy(), 64), 64)


def test_bfloat16_add_needs_sm90():
    x = np.zeros(64, BFLOAT16_NP)
    i = np.zeros(64, np.int32)
    assert "atom.relaxed.gpu.add.noftz.bf16" in add_kernel.ptx(
        i, x, x.copy(), nt.partition(x.copy(), 64), 64, cc=(9, 0))
    with pytest.raises(TileTypingError, match="compute capability 9.0"):
        add_kernel.ptx(i, x, x.copy(), nt.partition(x.copy(), 64), 64, cc=(8, 0))
