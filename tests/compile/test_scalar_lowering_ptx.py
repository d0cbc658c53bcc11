"""numba_tile's scalar lowering (``lowering/scalars.py``), on PTX (no GPU needed): the scalar
kernels of the GPU tier compile for every dtype pair they run with; a scalar shift compares
its count with the width before shifting, a float-to-integer cast saturates (selects around
``cvt.rzi``), while a numba-cuda device function compiled outside numba_tile keeps numba-cuda's
own lowering."""

import re

import numpy as np
import pytest
from numba import cuda
from numba.cuda import types

import numba_tile as nt
from tests import scalar_cases as sc


def _ptx(kernel, inputs, outputs):
    return kernel.ptx(*inputs, *[nt.partition(np.zeros(8, dt), 1) for dt in outputs])


def _body(ptx):
    return ptx[ptx.index(".entry"):]


@pytest.mark.parametrize("da, db", sc.PAIRS, ids=lambda d: np.dtype(d).name)
def test_the_scalar_kernels_compile_for_every_pair(da, db):
    a, b = np.zeros(8, da), np.zeros(8, db)
    ptx = _ptx(sc.arithmetic, (a, b), sc.result_dtypes(sc.arithmetic_ref, a[0], b[0]))
    assert ".local" not in ptx
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        _ptx(sc.bitwise, (a, b), sc.result_dtypes(sc.bitwise_ref, a[0], b[0]))
    _ptx(sc.power, (a, b), sc.result_dtypes(sc.power_ref, a[0], b[0]))


@pytest.mark.parametrize("dt", sc.INTS + sc.FLOATS, ids=lambda d: np.dtype(d).name)
def test_unary_kernels_compile(dt):
    a = np.zeros(8, dt)
    _ptx(sc.unary, (a,), sc.result_dtypes(sc.unary_ref, a[0]))


@nt.jit
def shift(x, y, z: nt.Partition):
    i = nt.bid(0)
    nt.store(z, x[i] << y[i])


@nt.jit
def to_uint8(x, z: nt.Partition):
    nt.store(z, np.uint8(x[nt.bid(0)]))


def test_a_scalar_shift_compares_its_count_with_the_width():
    x = np.zeros(8, np.int64)
    body = _body(shift.ptx(x, x, nt.partition(np.zeros(8, np.int64), 1)))
    assert re.search(r"setp\.lt\.u64\s+%p\d+, %rd\d+, 64;", body), body
    assert "shl.b64" in body and "selp.b64" in body


def test_a_float_to_integer_cast_saturates():
    body = _body(to_uint8.ptx(np.zeros(8, np.float32), nt.partition(np.zeros(8, np.uint8), 1)))
    assert "cvt.rzi" in body
    # above the range: 255; below it or NaN (an unordered compare): 0
    assert re.search(r"setp\.ge\.f(32|64)", body) and re.search(r"setp\.(ltu|lt)\.f", body)
    assert "selp" in body


def test_numba_cudas_own_code_keeps_its_lowering():
    def shl(a, b):
        return a << b

    shift.ptx(np.zeros(8, np.int64), np.zeros(8, np.int64),
              nt.partition(np.zeros(8, np.int64), 1))        # numba_tile's code compiled first
    ptx, _ = cuda.compile_ptx(shl, (types.int64, types.int64), device=True, cc=(9, 0))
    assert "shl.b64" in ptx and not re.search(r"setp\.lt\.u64\s+%p\d+, %rd\d+, 64;", ptx)


# ----------------------------------------------------------------------------- float16 constants


@nt.jit
def f16_constants(z: nt.Partition, w: nt.Partition, C: nt.Constant, T: nt.Constant):
    nt.store(z, C * 3.0)
    nt.store(w, T[1] * 3.0)


def test_a_float16_constant_is_its_bits_in_the_ptx():
    """numba-cuda wrote a float16 constant as ``i16 2.0``, which libNVVM refused
    (ERROR_INVALID_IR); numba_tile writes its bits, inside tuple Constants too."""
    rng = np.random.default_rng()
    c = np.float16(rng.standard_normal())
    t = (np.float16(1.0), np.float16(-rng.uniform(0.001, 1.0)))
    ptx = f16_constants.ptx(nt.partition(np.zeros(1), 1), nt.partition(np.zeros(1), 1), c, t)
    moves = {int(m) % 2 ** 16
             for m in re.findall(r"mov\.(?:u16|b16)\s+%\w+,\s*(-?\d+);", _body(ptx))}
    for v in (c, t[1]):
        assert int(np.asarray(v).view(np.uint16)) in moves, (v, moves)


def test_the_builtin_kernels_compile():
    from tests import builtin_cases as bc
    for da, db in bc.DIVMOD_PAIRS:
        a, b = np.zeros(8, da), np.zeros(8, db)
        _ptx(bc.division, (a, b), sc.result_dtypes(bc.division_ref, a[0], b[0]))
    for dt in (np.float32, np.float64):
        a = np.zeros(8, dt)
        _ptx(bc.rounding, (a, np.zeros(8, np.int64)), [dt])
        _ptx(bc.counting, (a, np.zeros(8, np.int64)), [np.int64] * 3)
    for C in bc.tuple_constants(np.random.default_rng()):
        want = bc.tuple_builtins_ref(C, 5)
        bc.tuple_builtins.ptx(*[nt.partition(np.zeros(1, np.asarray(w).dtype), 1)
                                for w in want], C, 5)


@nt.jit
def float_ops(x, y, q: nt.Partition, r: nt.Partition, lo: nt.Partition, hi: nt.Partition):
    i = nt.bid(0)
    nt.store(q, x[i] // y[i])
    nt.store(r, x[i] % y[i])
    nt.store(lo, min(x[i], y[i]))
    nt.store(hi, max(x[i], y[i]))


@nt.jit
def negate(x, z: nt.Partition):
    nt.store(z, -x[nt.bid(0)])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_float_remainder_is_exact_and_min_max_keep_a_nan(dt):
    """``//`` and ``%`` take their remainder from libdevice's fmod, not LLVM's ``frem`` (on
    NVPTX ``a - b * trunc(a / b)``: a ``cvt.rzi`` of the quotient, which libdevice's float64
    fmod has none of); ``min``/``max`` select on a comparison, not ``min.f``/``max.f``
    (which drop a NaN)."""
    x = np.zeros(8, dt)
    body = _body(float_ops.ptx(x, x, *[nt.partition(np.zeros(8, dt), 1) for _ in range(4)]))
    bits = np.dtype(dt).itemsize * 8
    if bits == 64:
        assert not re.search(r"cvt\.rzi\.f64\.f64", body), body
    assert not re.search(rf"\b(min|max)\.f{bits}", body), body
    assert re.search(rf"setp\.\w+\.f{bits}", body)


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32],
                         ids=lambda d: np.dtype(d).name)
def test_negating_a_narrow_integer_wraps_at_its_width(dt):
    """``-a`` of an integer narrower than its int64 result negates in 64 bits behind an opaque
    copy, then wraps to the operand's width (Numba's ``-int16(-32768)`` is -32768)."""
    body = _body(negate.ptx(np.zeros(8, dt), nt.partition(np.zeros(8, np.int64), 1)))
    bits = np.dtype(dt).itemsize * 8
    assert "neg.s64" in body and "mov.b64" in body, body
    assert re.search(rf"cvt\.[su]64\.[su]{bits}\s+%rd\d+, %rd\d+;", body), body


def test_float16_scalar_arithmetic_links_nothing():
    """float16 scalar + - * /, comparisons, negation, abs and truth compile to PTX that calls
    no external function (numba-cuda's own call cuda_fp16.h's C++, which numba_tile does not
    link), computing in float32 with one rounding to float16 (``cvt.rn.f16.f32``)."""
    from tests.gpu.test_float16_scalars import W, half_ops
    a = np.zeros(8, np.float16)
    ptx = half_ops.ptx(a, a, nt.partition(np.zeros((8, W), np.float32), (1, W)), W)
    assert ".extern" not in ptx
    assert "cvt.rn.f16.f32" in ptx


def test_a_call_the_ptx_declares_but_nothing_defines_is_refused_at_compile():
    """A numba-cuda device function declared without a definition (``cuda.declare_device``)
    in an unchecked kernel leaves an ``.extern .func`` in the PTX that only the first launch
    would report: the compile refuses it, naming the kernel and the function."""
    ext = cuda.declare_device("numba_tile_test_undefined", "float32(float32)")

    @nt.jit(unchecked=True)
    def calls_undefined(z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.full((B,), ext(np.float32(1.0)), nt.float32))

    with pytest.raises(nt.errors.TileTypingError) as info:
        calls_undefined.ptx(nt.partition(np.zeros(64, np.float32), 64), 64)
    assert "calls_undefined" in str(info.value) and "numba_tile_test_undefined" in str(info.value)
