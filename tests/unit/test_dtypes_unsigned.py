"""The unsigned integer, int16 and FP8 dtypes (no CUDA): the promotion table against NumPy
where it is safe, every refused pair with its message, scalars next to unsigned tiles, the
refusals inside kernels (typing, run through the interpreter), and the host-side mapping of
NumPy, ml_dtypes, PyTorch, DLPack and CUDA Array Interface dtypes."""

import itertools

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import dtypes
from numba_tile.errors import TileArgumentError, TileTypingError
from numba_tile.runtime.arrays import as_array_arg

SIGNED = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64]
UNSIGNED = [dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]
FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
FP8 = [dtypes.float8_e4m3fn, dtypes.float8_e5m2]
INTS = SIGNED + UNSIGNED


def _np(dt):
    return dtypes.to_numpy(dt)


@pytest.mark.parametrize("a, b", list(itertools.product(INTS, INTS)),
                         ids=lambda d: dtypes.name(d))
def test_integer_promotion_is_numpys_except_uint64_with_signed(a, b):
    """Every pair of integer dtypes: NumPy's result, except the pairs NumPy sends to float64
    (uint64 with a signed integer), which are refused."""
    ref = np.promote_types(_np(a), _np(b))
    if ref.kind == "f":
        assert {a, b} & {dtypes.uint64} and {a, b} & set(SIGNED)
        with pytest.raises(dtypes.PromotionError) as info:
            dtypes.promote(a, b)
        msg = str(info.value)
        assert f"{dtypes.name(a)} and {dtypes.name(b)}" in msg
        assert "float64" in msg and "2**53" in msg and "astype()" in msg
        assert not dtypes.storable(a, b) and not dtypes.storable(b, a)
    else:
        assert dtypes.promote(a, b) == dtypes.from_any(ref)
        # the result holds every value of both operands (no wrap)
        lo, hi = dtypes.INT_RANGE[dtypes.promote(a, b)]
        for d in (a, b):
            assert lo <= dtypes.INT_RANGE[d][0] and dtypes.INT_RANGE[d][1] <= hi


def test_the_promotions_named_by_the_issue():
    p = dtypes.promote
    assert p(dtypes.uint8, dtypes.uint8) == dtypes.uint8
    assert p(dtypes.uint8, dtypes.int8) == dtypes.int16
    assert p(dtypes.uint32, dtypes.int32) == dtypes.int64
    assert p(dtypes.int16, dtypes.int32) == dtypes.int32
    assert p(dtypes.uint16, dtypes.int8) == dtypes.int32
    assert p(dtypes.bool_, dtypes.uint16) == dtypes.uint16


@pytest.mark.parametrize("i", INTS, ids=dtypes.name)
@pytest.mark.parametrize("f", FLOATS, ids=dtypes.name)
def test_integer_with_float_takes_the_float(i, f):
    assert dtypes.promote(i, f) == f and dtypes.promote(f, i) == f


@pytest.mark.parametrize("f8", FP8, ids=dtypes.name)
@pytest.mark.parametrize("other", INTS + FLOATS + [dtypes.bool_] + FP8, ids=dtypes.name)
def test_fp8_promotes_with_nothing_else(f8, other):
    if other == f8:
        assert dtypes.promote(f8, other) == f8
        assert dtypes.storable(f8, f8)
        return
    for a, b in ((f8, other), (other, f8)):
        with pytest.raises(dtypes.PromotionError) as info:
            dtypes.promote(a, b)
        assert "no arithmetic" in str(info.value) and "astype(t, nt.float32)" in str(info.value)
        assert not dtypes.storable(a, b)


LITERALS = [
    # (tile dtype, literal, result or the message it is refused with)
    (dtypes.uint8, 255, dtypes.uint8),
    (dtypes.uint8, 256, dtypes.uint64),
    (dtypes.uint32, 2**32 - 1, dtypes.uint32),
    (dtypes.uint64, 2**64 - 1, dtypes.uint64),
    (dtypes.uint8, -1, dtypes.int64),               # int64 holds both: no wrap
    (dtypes.uint32, -(2**63), dtypes.int64),
    (dtypes.uint64, -1, "negative integer would wrap in uint64"),
    (dtypes.uint64, -(2**63), "negative integer would wrap in uint64"),
    (dtypes.uint64, 2**64, "fits no 64-bit integer"),
    (dtypes.int16, -(2**15), dtypes.int16),
    (dtypes.int16, 2**15, dtypes.int64),
    (dtypes.int64, 2**63, "fits no 64-bit integer"),
]


@pytest.mark.parametrize("tile_dt, value, want", LITERALS, ids=str)
def test_integer_literals_next_to_tiles(tile_dt, value, want):
    if isinstance(want, str):
        with pytest.raises(dtypes.PromotionError, match=want):
            dtypes.promote_scalar(tile_dt, "int", 64, value)
    else:
        assert dtypes.promote_scalar(tile_dt, "int", 64, value) == want


RUNTIME = [
    # (tile dtype, scalar width, scalar signed, result or None: refused)
    (dtypes.uint8, 32, True, dtypes.int32),
    (dtypes.uint16, 32, True, dtypes.int32),
    (dtypes.uint32, 32, True, dtypes.int64),
    (dtypes.uint32, 64, True, dtypes.int64),
    (dtypes.uint64, 32, True, None),
    (dtypes.uint64, 64, True, None),
    (dtypes.uint8, 32, False, dtypes.uint64),      # same signedness, wider: by width
    (dtypes.uint32, 16, False, dtypes.uint32),
    (dtypes.uint64, 32, False, dtypes.uint64),
    (dtypes.int8, 32, True, dtypes.int64),          # as before: by width
    (dtypes.int16, 16, True, dtypes.int16),
    (dtypes.int32, 32, False, dtypes.int64),
    (dtypes.int64, 64, False, None),
    (dtypes.bool_, 32, False, dtypes.uint32),
    (dtypes.bool_, 32, True, dtypes.int64),
]


@pytest.mark.parametrize("tile_dt, width, signed, want", RUNTIME, ids=str)
def test_runtime_integers_next_to_tiles(tile_dt, width, signed, want):
    if want is None:
        with pytest.raises(dtypes.PromotionError, match="no integer dtype holds every uint64"):
            dtypes.promote_scalar(tile_dt, "int", width, None, signed)
    else:
        assert dtypes.promote_scalar(tile_dt, "int", width, None, signed) == want


@pytest.mark.parametrize("dt", UNSIGNED + [dtypes.int16], ids=dtypes.name)
def test_floats_and_bools_next_to_integer_tiles(dt):
    assert dtypes.promote_scalar(dt, "float") == dtypes.float32
    assert dtypes.promote_scalar(dt, "bool") == dt
    assert dtypes.true_divide_dtype(dt) == dtypes.float32


@pytest.mark.parametrize("dt", INTS + FP8, ids=dtypes.name)
def test_names_numpy_and_back(dt):
    npdt = dtypes.to_numpy(dt)
    assert dtypes.from_any(npdt) == dt
    assert dtypes.from_any(dtypes.name(dt)) == dt
    assert dtypes.from_any(npdt.type) == dt
    assert getattr(nt, dtypes.name(dt)) is dt
    assert dtypes.itemsize(dt) == npdt.itemsize


def test_other_ml_dtypes_are_not_taken_for_fp8():
    import ml_dtypes
    assert dtypes.from_any(np.dtype(ml_dtypes.float8_e4m3fnuz)) is None
    assert dtypes.from_any(np.dtype(ml_dtypes.float8_e5m2fnuz)) is None


def _decode(code, dt):
    """An FP8 code's value from the format's definition (independent of ml_dtypes)."""
    e, m = (dt.exponent_bits, dt.mantissa_bits)
    bias = 2 ** (e - 1) - 1
    sign = -1.0 if code & 0x80 else 1.0
    ex, man = (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)
    if dt.has_inf and ex == (1 << e) - 1:
        return sign * np.inf if man == 0 else np.nan
    if not dt.has_inf and (code & 0x7F) == 0x7F:
        return np.nan
    if ex == 0:
        return sign * man / 2 ** m * 2.0 ** (1 - bias)
    return sign * (1 + man / 2 ** m) * 2.0 ** (ex - bias)


@pytest.mark.parametrize("dt", FP8, ids=dtypes.name)
def test_fp8_formats_match_their_definition(dt):
    codes = np.arange(256, dtype=np.uint8)
    got = codes.view(dtypes.to_numpy(dt)).astype(np.float64)
    want = np.array([_decode(int(c), dt) for c in codes])
    np.testing.assert_array_equal(got, want)
    assert np.nanmax(want[np.isfinite(want)]) == dt.max_finite


@pytest.mark.parametrize("dt", FP8, ids=dtypes.name)
def test_fp8_conversion_saturates_where_ml_dtypes_does_not(dt):
    """The GPU's cvt.rn.satfinite: past the largest finite value, infinity included, the
    largest finite value; ml_dtypes gives NaN (e4m3fn) or infinity (e5m2) there."""
    m = dt.max_finite
    values = np.array([m * 1.2, -m * 1.2, np.inf, -np.inf, np.nan, m, 1.0, -0.5], np.float32)
    got = dtypes.float8_from_float32(values, dt).astype(np.float64)
    np.testing.assert_array_equal(got, [m, -m, m, -m, np.nan, m, 1.0, -0.5])
    plain = values.astype(dtypes.to_numpy(dt)).astype(np.float64)
    assert not np.isfinite(plain[0]) and not np.isfinite(plain[2])
    top = int(dtypes.float8_bits(m, dt))
    assert dtypes.float8_bits(1e30, dt) == top and dtypes.float8_bits(-1e30, dt) == top | 0x80


# --- refusals inside kernels (typing; the interpreter runs after the same pass) --------------

@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def add_constant(x, z: nt.Partition["B"], B: nt.Constant, V: nt.Constant):
    nt.store(z, nt.load_like(x, z) + V)


@nt.jit
def add_runtime(x, z: nt.Partition["B"], B: nt.Constant, v):
    nt.store(z, nt.load_like(x, z) + v)


def _run(kernel, *args):
    return kernel(*args, interpret=True).sync()


def test_uint64_plus_a_signed_tile_is_refused_naming_the_op():
    x = np.zeros(64, np.uint64)
    with pytest.raises(TileTypingError) as info:
        _run(add, x, np.zeros(64, np.int32), nt.partition(np.zeros(64, np.int64), 32), 32)
    msg = str(info.value)
    assert 'Invalid argument "operands" of +()' in msg
    assert "uint64 and int32" in msg and "float64" in msg and "astype()" in msg
    assert "nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))" in msg   # the user's line


def test_a_negative_literal_next_to_an_unsigned_tile_never_wraps():
    """uint16 + -1: int64 (exact), so the store back into uint16 is refused; uint64 + -1 is
    refused at the ``+``."""
    with pytest.raises(TileTypingError, match=r"store\(\).*uint16 holds.*int64"):
        _run(add_constant, np.zeros(64, np.uint16), nt.partition(np.zeros(64, np.uint16), 32), 32, -1)
    z = np.zeros(64, np.int64)
    x = np.arange(64, dtype=np.uint16)
    _run(add_constant, x, nt.partition(z, 32), 32, -1)
    np.testing.assert_array_equal(z, [int(v) - 1 for v in x])
    with pytest.raises(TileTypingError, match=r"\+\(\).*would wrap in uint64.*uint64 and -1"):
        _run(add_constant, np.zeros(64, np.uint64), nt.partition(np.zeros(64, np.int64), 32), 32, -1)


def test_a_runtime_int_next_to_a_uint64_tile_is_refused():
    with pytest.raises(TileTypingError, match="uint64 and int"):
        _run(add_runtime, np.zeros(64, np.uint64), nt.partition(np.zeros(64, np.uint64), 32), 32, 5)


def test_a_runtime_int_next_to_a_uint8_tile_widens_to_int32():
    z = np.zeros(64, np.int32)
    x = np.arange(64, dtype=np.uint8) + 190
    _run(add_runtime, x, nt.partition(z, 32), 32, -200)
    np.testing.assert_array_equal(z, [int(v) - 200 for v in x])


@nt.jit
def narrow_store(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@pytest.mark.parametrize("src, dst", [(np.int8, np.uint8), (np.uint16, np.int16),
                                      (np.uint64, np.int64), (np.int16, np.uint64),
                                      (np.float32, dtypes.FLOAT8_E4M3FN_NP),
                                      (dtypes.FLOAT8_E5M2_NP, np.float32)],
                         ids=str)
def test_stores_that_would_wrap_or_narrow_are_refused(src, dst):
    with pytest.raises(TileTypingError, match=r"store\(\).*without narrowing.*astype"):
        _run(narrow_store, np.zeros(64, src), nt.partition(np.zeros(64, dst), 32), 32)


@nt.jit
def store_runtime(z: nt.Partition["B"], B: nt.Constant, v):
    nt.store(z, v)


def test_a_runtime_int_into_an_unsigned_array_is_refused():
    with pytest.raises(TileTypingError, match=r"store\(\).*a scalar that uint32 holds"):
        _run(store_runtime, nt.partition(np.zeros(64, np.uint32), 32), 32, 7)


@nt.jit
def full_literal(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.full((B,), -1, nt.uint8))


def test_full_refuses_a_literal_out_of_its_dtype():
    with pytest.raises(TileTypingError, match=r"full\(\).*uint8 holds.*got -1"):
        _run(full_literal, nt.partition(np.zeros(64, np.uint8), 32), 32)


@nt.jit
def fp8_op(x, z: nt.Partition["B"], B: nt.Constant, OP: nt.Constant):
    t = nt.load_like(x, z)
    if OP == 0:
        r = t + t
    elif OP == 1:
        r = nt.where(t < t, t, t)
    elif OP == 2:
        r = -t
    elif OP == 3:
        r = nt.exp(t)
    elif OP == 4:
        r = nt.maximum(t, t)
    elif OP == 5:
        r = t * 2.0
    else:
        r = nt.astype(nt.sum(t, 0, keepdims=True), nt.float32)
    nt.store(z, r)


@pytest.mark.parametrize("op, opname", [(0, r"\+"), (1, "<"), (2, "unary -"), (3, "exp"),
                                        (4, "maximum"), (5, r"\*"), (6, "sum")])
@pytest.mark.parametrize("dt", [dtypes.FLOAT8_E4M3FN_NP, dtypes.FLOAT8_E5M2_NP], ids=str)
def test_fp8_arithmetic_is_refused_asking_for_astype(op, opname, dt):
    with pytest.raises(TileTypingError) as info:
        _run(fp8_op, np.zeros(64, dt), nt.partition(np.zeros(64, dt), 64), 64, op)
    msg = str(info.value)
    assert __import__("re").search(rf"of {opname}\(\)", msg), msg
    assert "astype" in msg and np.dtype(dt).name in msg


@nt.jit
def fp8_inf_padding(x, z: nt.Partition["B"], B: nt.Constant, P: nt.Constant):
    nt.store(z, nt.load(x, (0,), (B,), padding=P))


def test_fp8_paddings():
    """A constant infinite padding is refused for FP8: every conversion to FP8 saturates
    infinities to the largest finite value (cvt.rn.satfinite, e5m2 included), which would
    not be the padding asked for; NaN padding is fine. A run-time padding converts as any
    value does (saturating)."""
    from numba.cuda import types
    from numba_tile.typing.memory import _check_padding
    for dt in FP8:
        with pytest.raises(TileTypingError, match=f"padding.*{dtypes.name(dt)} holds"):
            _check_padding(types.Omitted(-np.inf), dt, "load")
        assert _check_padding(types.Omitted(np.nan), dt, "load") is False
        npdt = dtypes.to_numpy(dt)
        z = np.zeros(64, npdt)
        _run(fp8_inf_padding, np.ones(40, npdt), nt.partition(z, 64), 64, -np.inf)
        np.testing.assert_array_equal(z.astype(np.float64), [1.0] * 40 + [-dt.max_finite] * 24)


# --- host side ---------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.uint8, np.uint16, np.uint32, np.uint64, np.int16,
                                dtypes.FLOAT8_E4M3FN_NP, dtypes.FLOAT8_E5M2_NP], ids=str)
def test_numpy_arrays_of_the_new_dtypes_are_accepted(dt):
    arg = as_array_arg(np.zeros((3, 5), dt)[:, ::2], "x")
    assert arg.dtype == np.dtype(dt)


@pytest.mark.parametrize("name", ["uint8", "uint16", "uint32", "uint64", "int16",
                                  "float8_e4m3fn", "float8_e5m2"])
def test_torch_tensors_and_their_dlpack_export(name):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, name, None)
    if tdt is None:
        pytest.skip(f"this PyTorch has no torch.{name}")
    want = dtypes.to_numpy(dtypes.from_any(name))
    t = torch.zeros((4, 6), dtype=tdt)[:, 1::2]
    assert as_array_arg(t, "t").dtype == want                  # PyTorch's own dtype

    class DLPackOnly:                                          # the same memory by DLPack
        def __dlpack__(self, **kw):
            return t.__dlpack__()

        def __dlpack_device__(self):
            return t.__dlpack_device__()

    arg = as_array_arg(DLPackOnly(), "d")
    assert arg.dtype == want and arg.shape == (4, 3)


class _CAI:
    def __init__(self, typestr):
        self.__cuda_array_interface__ = {"shape": (4,), "data": (0x10000, False),
                                         "typestr": typestr, "version": 3, "strides": None}


@pytest.mark.parametrize("typestr, want", [("|u1", np.uint8), ("<u2", np.uint16),
                                           ("<u4", np.uint32), ("<u8", np.uint64),
                                           ("<i2", np.int16)])
def test_cuda_array_interface_typestrs(typestr, want):
    from numba_tile.runtime import arrays
    assert arrays._typestr_dtype(typestr, "x") == np.dtype(want)


def test_fp8_typestrs_are_refused_as_ambiguous():
    """ml_dtypes writes '<f1' for e5m2 and '<V1' for e4m3fn (and for e4m3fnuz, e5m2fnuz ...):
    neither says which format it is."""
    from numba_tile.runtime import arrays
    with pytest.raises(TileArgumentError, match=r"argument 'w'.*'<f1'.*float8_e4m3fn or "
                                                r"float8_e5m2.*DLPack"):
        arrays._typestr_dtype(np.dtype(dtypes.FLOAT8_E5M2_NP).str, "w")
    with pytest.raises(TileArgumentError, match=r"argument 'w'.*'<V1' is untyped raw data.*FP8"):
        arrays._typestr_dtype(np.dtype(dtypes.FLOAT8_E4M3FN_NP).str, "w")


def test_dlpack_fp8_codes():
    from numba_tile.runtime import dlpack
    assert dlpack._numpy_dtype(10, 8, 1) == dtypes.FLOAT8_E4M3FN_NP
    assert dlpack._numpy_dtype(12, 8, 1) == dtypes.FLOAT8_E5M2_NP
    assert dlpack._numpy_dtype(11, 8, 1) is None       # e4m3fnuz: another format
    assert dlpack._numpy_dtype(10, 16, 1) is None
    assert dlpack._type_of(11, 8, 1)[1] == "float8_e4m3fnuz(bits=8, lanes=1)"
