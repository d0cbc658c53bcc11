"""Unsigned integers, int16 and FP8 on the GPU and in the
interpreter, against references computed independently with Python integers (integers,
bit-exact) and with an FP8 rounding written out from the formats' definitions (round to
nearest even among the finite values, saturating to the largest finite one, as
``cvt.rn.satfinite`` does). Fresh random inputs, values at the dtypes' limits, ragged
lengths (edges masked)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import dtypes

UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]
INTS = UNSIGNED + [np.int16]
FP8 = [dtypes.FLOAT8_E4M3FN_NP, dtypes.FLOAT8_E5M2_NP]


def _name(d):
    return np.dtype(d).name


def _ints_with_limits(rng, dt, n):
    """Random integers of ``dt`` over its whole range, the first ones at its limits."""
    info = np.iinfo(dt)
    v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    edge = [info.min, info.max, 0, 1, info.max - 1, info.max // 2, info.max // 2 + 1]
    if info.min < 0:
        edge += [-1, info.min + 1]
    v[:len(edge)] = np.array(edge, dtype=object).astype(dt)
    return v


def _wrap(values, dt):
    """Python integers -> ``dt`` by two's-complement wrapping (the reference's only NumPy)."""
    bits = np.dtype(dt).itemsize * 8
    out = []
    for v in values:
        v &= (1 << bits) - 1
        if np.iinfo(dt).min < 0 and v >> (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=object).astype(dt)


def _py(a):
    return [int(v) for v in np.asarray(a).ravel()]


@nt.jit
def arith(x, y, s: nt.Partition["B"], d: nt.Partition["B"], p: nt.Partition["B"],
          q: nt.Partition["B"], r: nt.Partition["B"], B: nt.Constant):
    a = nt.load_like(x, s)
    b = nt.load_like(y, s)
    nt.store(s, a + b)
    nt.store(d, a - b)
    nt.store(p, a * b)
    nt.store(q, a // b)
    nt.store(r, a % b)


def _floordiv(a, b):
    return 0 if b == 0 else a // b          # NumPy: x // 0 == 0


def _mod(a, b):
    return 0 if b == 0 else a % b           # NumPy: x % 0 == 0; Python's sign rule


@pytest.mark.parametrize("dt", INTS, ids=_name)
def test_arithmetic_is_bit_exact(tile_backend, dt):
    rng = np.random.default_rng()
    n = 900 + int(rng.integers(1, 120))
    xh, yh = _ints_with_limits(rng, dt, n), _ints_with_limits(rng, dt, n)
    yh[rng.integers(0, n, 20)] = 0                   # division by zero gives 0
    yh[7:12] = np.array([1, 3, np.iinfo(dt).max, 2, 0], dtype=object).astype(dt)
    outs = [tile_backend.asarray(np.zeros(n, dt)) for _ in range(5)]
    tile_backend.run(arith, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     *[nt.partition(o, 256) for o in outs], 256)
    a, b = _py(xh), _py(yh)
    want = [[u + v for u, v in zip(a, b)], [u - v for u, v in zip(a, b)],
            [u * v for u, v in zip(a, b)], [_floordiv(u, v) for u, v in zip(a, b)],
            [_mod(u, v) for u, v in zip(a, b)]]
    for got, ref, op in zip(outs, want, "+-*/%"):
        np.testing.assert_array_equal(tile_backend.to_numpy(got), _wrap(ref, dt), err_msg=op)


@nt.jit
def bits_and_compares(x, y, lo: nt.Partition["B"], hi: nt.Partition["B"],
                      lt: nt.Partition["B"], ge: nt.Partition["B"], mx: nt.Partition["B"],
                      mn: nt.Partition["B"], xo: nt.Partition["B"], B: nt.Constant):
    a = nt.load_like(x, lo)
    b = nt.load_like(y, lo)
    nt.store(lo, a << b)
    nt.store(hi, a >> b)
    nt.store(lt, a < b)
    nt.store(ge, a >= b)
    nt.store(mx, nt.maximum(a, b))
    nt.store(mn, nt.minimum(a, b))
    nt.store(xo, (a ^ b) | (~a & b))


@pytest.mark.parametrize("dt", INTS, ids=_name)
def test_shifts_compares_and_bit_ops(tile_backend, dt):
    """``>>`` is logical on unsigned tiles (0 past the width), arithmetic on int16 (the
    sign); compares and maximum/minimum are unsigned on unsigned tiles (a value with the
    top bit set is large, not negative)."""
    rng = np.random.default_rng()
    bits = np.dtype(dt).itemsize * 8
    n = 500 + int(rng.integers(1, 60))
    xh = _ints_with_limits(rng, dt, n)
    yh = _ints_with_limits(rng, dt, n)
    counts = rng.integers(0, 2 * bits + 3, n)
    counts[:4] = [0, bits - 1, bits, 2 * bits]
    sh = counts.astype(dt)
    outs = [tile_backend.asarray(np.zeros(n, dt)), tile_backend.asarray(np.zeros(n, dt)),
            tile_backend.asarray(np.zeros(n, np.bool_)), tile_backend.asarray(np.zeros(n, np.bool_)),
            tile_backend.asarray(np.zeros(n, dt)), tile_backend.asarray(np.zeros(n, dt)),
            tile_backend.asarray(np.zeros(n, dt))]
    # shifts take the count tile; compares and min/max the second random tile: two launches
    tile_backend.run(bits_and_compares, tile_backend.asarray(xh), tile_backend.asarray(sh),
                     *[nt.partition(o, 128) for o in outs], 128)
    a, c = _py(xh), _py(sh)
    signed = np.iinfo(dt).min < 0
    ref_lo = [0 if k >= bits else u << k for u, k in zip(a, c)]
    ref_hi = [(-1 if (signed and u < 0) else 0) if k >= bits else u >> k for u, k in zip(a, c)]
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[0]), _wrap(ref_lo, dt))
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[1]), _wrap(ref_hi, dt))
    tile_backend.run(bits_and_compares, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     *[nt.partition(o, 128) for o in outs], 128)
    b = _py(yh)
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[2]), np.array([u < v for u, v in zip(a, b)]))
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[3]), np.array([u >= v for u, v in zip(a, b)]))
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[4]), _wrap([max(u, v) for u, v in zip(a, b)], dt))
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[5]), _wrap([min(u, v) for u, v in zip(a, b)], dt))
    mask = (1 << bits) - 1
    ref_x = [((u ^ v) | ((~u & mask) & v)) for u, v in zip(a, b)]
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[6]), _wrap(ref_x, dt))


@nt.jit
def mixed(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@pytest.mark.parametrize("xd, yd, zd", [(np.uint8, np.int8, np.int16),
                                        (np.uint32, np.int32, np.int64),
                                        (np.int16, np.int32, np.int32),
                                        (np.uint16, np.int8, np.int32),
                                        (np.uint8, np.uint32, np.uint32),
                                        (np.uint8, np.int64, np.int64)],
                         ids=lambda d: np.dtype(d).name)
def test_mixed_signedness_promotes_without_wrapping(tile_backend, xd, yd, zd):
    """The promoted dtype holds both operands (uint8 + int8 -> int16): the sum is exact."""
    rng = np.random.default_rng()
    n = 300 + int(rng.integers(1, 40))
    xh, yh = _ints_with_limits(rng, xd, n), _ints_with_limits(rng, yd, n)
    z = tile_backend.asarray(np.zeros(n, zd))
    tile_backend.run(mixed, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(z, 64), 64)
    ref = _wrap([u + v for u, v in zip(_py(xh), _py(yh))], zd)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), ref)


@nt.jit
def casts(x, a: nt.Partition["B"], b: nt.Partition["B"], c: nt.Partition["B"],
          d: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, a)
    nt.store(a, nt.astype(t, nt.int64))
    nt.store(b, nt.astype(t, nt.uint8))
    nt.store(c, nt.astype(t, nt.float64))
    nt.store(d, nt.astype(nt.astype(t, nt.int16), nt.uint64))


@pytest.mark.parametrize("dt", INTS + [np.int8, np.int32], ids=_name)
def test_casts_extend_by_signedness(tile_backend, dt):
    """Widening zero-extends unsigned and sign-extends signed values; narrowing truncates;
    int to float rounds to nearest (exact in float64 below 2**53)."""
    rng = np.random.default_rng()
    n = 400 + int(rng.integers(1, 30))
    xh = _ints_with_limits(rng, dt, n)
    outs = [tile_backend.asarray(np.zeros(n, t)) for t in (np.int64, np.uint8, np.float64, np.uint64)]
    tile_backend.run(casts, tile_backend.asarray(xh), *[nt.partition(o, 128) for o in outs], 128)
    a = _py(xh)
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[0]), _wrap(a, np.int64))
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[1]), _wrap(a, np.uint8))
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[2]), np.array([float(v) for v in a]))
    as16 = _py(_wrap(a, np.int16))
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[3]), _wrap(as16, np.uint64))


@nt.jit
def reduce_rows(x, s: nt.Partition[("BM", 1)], w: nt.Partition[("BM", 1)],
                mx: nt.Partition[("BM", 1)], mn: nt.Partition[("BM", 1)],
                am: nt.Partition[("BM", 1)], BM: nt.Constant, BN: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (BM, BN))          # masked: the ragged edge is skipped
    nt.store(s, nt.sum(t, 1, keepdims=True))
    nt.store(w, nt.sum(t, 1, keepdims=True, dtype=nt.uint64))
    nt.store(mx, nt.max(t, 1, keepdims=True))
    nt.store(mn, nt.min(t, 1, keepdims=True))
    nt.store(am, nt.argmax(t, 1, keepdims=True))


@pytest.mark.parametrize("dt", UNSIGNED, ids=_name)
def test_reductions_compare_unsigned_and_wrap_in_the_dtype(tile_backend, dt):
    """sum keeps the dtype (wrapping, as int8 sums do), ``dtype=`` widens; max/min/argmax
    order values as unsigned (the top bit set is the largest, not negative)."""
    rng = np.random.default_rng()
    rows, cols, bm, bn = 37, 45, 16, 64
    xh = _ints_with_limits(rng, dt, rows * cols).reshape(rows, cols)
    outs = [tile_backend.asarray(np.zeros((rows, 1), t))
            for t in (dt, np.uint64, dt, dt, np.int32)]
    tile_backend.run(reduce_rows, tile_backend.asarray(xh),
                     *[nt.partition(o, (bm, 1)) for o in outs], bm, bn)
    got = [tile_backend.to_numpy(o)[:, 0] for o in outs]
    rows_py = [_py(r) for r in xh]
    np.testing.assert_array_equal(got[0], _wrap([sum(r) for r in rows_py], dt))
    np.testing.assert_array_equal(got[1], _wrap([sum(r) for r in rows_py], np.uint64))
    np.testing.assert_array_equal(got[2], _wrap([max(r) for r in rows_py], dt))
    np.testing.assert_array_equal(got[3], _wrap([min(r) for r in rows_py], dt))
    np.testing.assert_array_equal(got[4], [r.index(max(r)) for r in rows_py])


@nt.jit
def add_scalar(x, z: nt.Partition["B"], B: nt.Constant, V: nt.Constant):
    nt.store(z, nt.load_like(x, z) + V)


@pytest.mark.parametrize("dt", UNSIGNED, ids=_name)
def test_a_literal_that_fits_keeps_the_unsigned_dtype(tile_backend, dt):
    rng = np.random.default_rng()
    xh = _ints_with_limits(rng, dt, 200)
    z = tile_backend.asarray(np.zeros(200, dt))
    tile_backend.run(add_scalar, tile_backend.asarray(xh), nt.partition(z, 64), 64, 200)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), _wrap([v + 200 for v in _py(xh)], dt))


# --- FP8 ------------------------------------------------------------------------------------

def _fp8_finite_values(dt):
    """Every finite non-negative value of an FP8 format, from its definition (bias
    ``2**(E-1) - 1``, subnormals at exponent 0), with its code; e4m3fn reserves only
    ``S.1111.111`` (NaN), e5m2 the whole top exponent (IEEE)."""
    e, m = (4, 3) if dt == dtypes.FLOAT8_E4M3FN_NP else (5, 2)
    bias = 2 ** (e - 1) - 1
    out = []
    for code in range(128):
        ex, man = code >> m, code & ((1 << m) - 1)
        if e == 4 and code == 0x7F:
            continue
        if e == 5 and ex == 31:
            continue
        v = (man / 2 ** m) * 2.0 ** (1 - bias) if ex == 0 else (1 + man / 2 ** m) * 2.0 ** (ex - bias)
        out.append((v, code))
    return out


def _fp8_reference(values, dt):
    """float32 values -> FP8 values (as float64) by ``cvt.rn.satfinite``'s rule, without
    ml_dtypes: nearest finite value, ties to the even code, magnitudes past the largest
    finite value (infinity included) saturate, NaN stays NaN."""
    table = _fp8_finite_values(dt)
    vals = np.array([v for v, _ in table])
    codes = [c for _, c in table]
    out = []
    for x in np.asarray(values, np.float32).astype(np.float64).ravel():
        if np.isnan(x):
            out.append(np.nan)
            continue
        a = min(abs(x), vals[-1])
        i = int(np.searchsorted(vals, a))
        if i < len(vals) and vals[i] == a:
            best = vals[i]
        else:
            lo, hi = vals[i - 1], vals[i]
            if a - lo < hi - a or (a - lo == hi - a and codes[i - 1] % 2 == 0):
                best = lo
            else:
                best = hi
        out.append(-best if x < 0 else best)
    return np.array(out)


def _fp8_inputs(rng, dt, n):
    """float32 inputs: normal and tiny values, values near and past the largest finite one,
    exact ties of the format, infinities and NaN."""
    big = float(np.float32(dtypes.from_any(dt).max_finite))
    v = np.concatenate([rng.standard_normal(n // 2) * 4, rng.uniform(-1.3 * big, 1.3 * big, n // 4),
                        rng.standard_normal(n - n // 2 - n // 4) * 2.0 ** -8]).astype(np.float32)
    table = [t for t, _ in _fp8_finite_values(dt)]
    ties = [(a + b) / 2 for a, b in zip(table[:-1], table[1:])][::3]
    special = [np.inf, -np.inf, np.nan, big, -big, big * 1.03, big * 1.2, 0.0, -0.0] + ties[:40]
    v[:len(special)] = np.array(special, np.float32)
    rng.shuffle(v[len(special):])
    return v


@nt.jit
def to_fp8(x, z: nt.Partition["B"], B: nt.Constant, DT: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x, z), DT))


@nt.jit
def from_fp8(x, f: nt.Partition["B"], h: nt.Partition["B"], b: nt.Partition["B"],
             i: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, f)
    nt.store(f, nt.astype(t, nt.float32))
    nt.store(h, nt.astype(t, nt.float16))
    nt.store(b, nt.astype(t, nt.bfloat16))
    nt.store(i, nt.astype(t, nt.int32))


@pytest.mark.parametrize("dt", FP8, ids=_name)
def test_float32_to_fp8_rounds_to_nearest_even_and_saturates(tile_backend, dt):
    rng = np.random.default_rng()
    n = 1500 + int(rng.integers(1, 100))
    xh = _fp8_inputs(rng, dt, n)
    z = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(to_fp8, tile_backend.asarray(xh), nt.partition(z, 512), 512, _name(dt))
    got = tile_backend.to_numpy(z).astype(np.float64)
    np.testing.assert_array_equal(got, _fp8_reference(xh, dt))


@pytest.mark.parametrize("dt", FP8, ids=_name)
def test_fp8_widens_exactly(tile_backend, dt):
    """Every FP8 code (NaNs and e5m2's infinities included) to float32, float16, bfloat16
    exactly; to int32 by truncation (finite values only: NaN and infinity are undefined)."""
    codes = np.arange(256, dtype=np.uint8)
    xh = np.concatenate([codes, codes[::-1], codes[:77]]).view(dt)
    n = xh.size
    outs = [tile_backend.asarray(np.zeros(n, t)) for t in (np.float32, np.float16,
                                                             dtypes.BFLOAT16_NP, np.int32)]
    tile_backend.run(from_fp8, tile_backend.asarray(xh), *[nt.partition(o, 256) for o in outs], 256)
    table = dict((c, v) for v, c in _fp8_finite_values(dt))
    ref = []
    for c in xh.view(np.uint8):
        mag = table.get(int(c) & 0x7F)
        if mag is None:
            mag = np.inf if (dt == dtypes.FLOAT8_E5M2_NP and (int(c) & 0x7F) == 0x7C) else np.nan
        ref.append(-mag if c & 0x80 else mag)
    ref = np.array(ref)
    for o in outs[:3]:
        np.testing.assert_array_equal(tile_backend.to_numpy(o).astype(np.float64), ref)
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(tile_backend.to_numpy(outs[3])[finite], np.trunc(ref[finite]))


@nt.jit
def fp8_copy_select(x, y, c, z: nt.Partition["B"], B: nt.Constant):
    a = nt.load_like(x, z)
    b = nt.load_like(y, z)
    nt.store(z, nt.where(nt.load_like(c, z), a, b))


@pytest.mark.parametrize("dt", FP8, ids=_name)
def test_fp8_load_select_store_moves_bytes(tile_backend, dt):
    """A ragged FP8 array through vector loads and word-packed stores, selected by
    ``where``: every byte, NaN payloads included, arrives unchanged; nothing past the end
    is written."""
    rng = np.random.default_rng()
    n = 4096 + int(rng.integers(1, 1000))
    xh = rng.integers(0, 256, n, dtype=np.uint8).view(dt)
    yh = rng.integers(0, 256, n, dtype=np.uint8).view(dt)
    ch = rng.random(n) < 0.5
    zh = np.zeros(n + 37, np.uint8)
    zh[n:] = 0xA5
    z = tile_backend.asarray(zh.view(dt))
    tile_backend.run(fp8_copy_select, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     tile_backend.asarray(ch), nt.partition(z[:n], 1024), 1024)
    got = tile_backend.to_numpy(z).view(np.uint8)
    want = np.where(ch, xh.view(np.uint8), yh.view(np.uint8))
    np.testing.assert_array_equal(got[:n], want)
    np.testing.assert_array_equal(got[n:], 0xA5)


@nt.jit
def fp8_roundtrip_math(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.astype(nt.load_like(x, z), nt.float32)
    nt.store(z, nt.astype(t * 3.0, nt.float8_e5m2))     # one rounding in float32, no FMA


def test_fp8_compute_through_float32(tile_backend):
    rng = np.random.default_rng()
    n = 777
    xh = _fp8_inputs(rng, dtypes.FLOAT8_E4M3FN_NP, n)
    x8 = xh.astype(dtypes.FLOAT8_E4M3FN_NP)            # input bytes: any rounding will do
    z = tile_backend.asarray(np.zeros(n, dtypes.FLOAT8_E5M2_NP))
    tile_backend.run(fp8_roundtrip_math, tile_backend.asarray(x8), nt.partition(z, 256), 256)
    wide = x8.astype(np.float64)
    ref = _fp8_reference(wide * 3.0, dtypes.FLOAT8_E5M2_NP)    # float64 product rounded to f32
    np.testing.assert_array_equal(tile_backend.to_numpy(z).astype(np.float64), ref)
