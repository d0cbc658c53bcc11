"""Typing rules of the tile constructors: full, zeros, arange."""

from __future__ import annotations

from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from .common import check_float8_target, dtype_arg, fail, is_omitted, is_scalar, literal_int, make_tile, static_shape


@typing_rule("full")
def type_full(shape, value, dtype):
    sh = static_shape(shape, "full")
    if not is_scalar(value):
        raise fail("full", "value", "a scalar", value)
    if is_omitted(dtype):
        if isinstance(value, types.Boolean):
            dt = dtypes.bool_
        elif isinstance(value, types.Integer):
            lit = literal_int(value)
            fits = dtypes.int_fits(lit, dtypes.int32) if lit is not None else value.bitwidth <= 32
            dt = dtypes.int32 if fits else dtypes.int64
        else:
            dt = dtypes.float32
    else:
        dt = dtype_arg(dtype, "full")
        lit = literal_int(value)          # an explicit dtype converts a run-time value, but
        if lit is not None and dtypes.is_int(dt) and not dtypes.int_fits(lit, dt):  # no literal
            raise fail("full", "value", f"an integer {dtypes.name(dt)} holds (NumPy 2 refuses "
                       f"it too; write the value you mean)", lit)
        check_float8_target("full", dt)
    return make_tile(dt, sh)


@typing_rule("zeros")
def type_zeros(shape, dtype):
    sh = static_shape(shape, "zeros")
    dt = dtypes.float32 if is_omitted(dtype) else dtype_arg(dtype, "zeros")
    return make_tile(dt, sh)


@typing_rule("arange")
def type_arange(n):
    value = literal_int(n)
    if value is None:
        raise fail("arange", "n", "a static integer (literal or constant parameter)", n)
    return make_tile(dtypes.int32, static_shape(n, "arange", "n"))
