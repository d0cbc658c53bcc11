"""Interpreter rules of the elementwise ops (NumPy, same dtypes as the compiled kernel)."""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from ..language import MATH_FUNCTIONS, MATH_FUNCTIONS2, PREDICATES
from ..typing.elementwise import (ARITHMETIC, BITWISE, COMPARISON, SHIFTS,
                                  math_scalar_dtype)
from .common import (compute_array, float_to_int, operand_dtype, result, result_extents,
                     scalar_to, to_dtype)
from .values import InterpTile

_NUMPY_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
    "and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,     # NumPy's any-count results
}


def _int_power(base, exp):
    """Integer ``base ** exp`` as the compiled kernel computes it (Numba's integer power):
    a negative exponent gives 0, except for bases 1 and -1 (NumPy raises instead)."""
    base, exp = np.broadcast_arrays(base, exp)
    neg = exp < 0
    with np.errstate(all="ignore"):
        out = np.power(base, np.where(neg, 0, exp))
    inv = np.where(base == 1, 1, np.where(base == -1, np.where(exp % 2 == 0, 1, -1), 0))
    return np.where(neg, inv, out).astype(base.dtype)


def _binary(name):
    fn = _NUMPY_BINARY[name]

    @interp_rule(name)
    def rule(a, b):
        if not isinstance(a, InterpTile) and not isinstance(b, InterpTile):
            return getattr(operator, name)(a, b)
        dt = operand_dtype(a, b)
        if name == "truediv":
            dt = dtypes.true_divide_dtype(dt)
        f = _int_power if name == "pow" and dtypes.is_int(dt) else fn
        with np.errstate(all="ignore"):
            r = f(compute_array(a, dt), compute_array(b, dt))
        return result(r, dtypes.bool_ if name in COMPARISON else dt,
                      result_extents((a, b), np.shape(r)))

    return rule


for _n in ARITHMETIC + COMPARISON + BITWISE + SHIFTS + ("truediv",):
    _binary(_n)


def _unary(name, fn):
    @interp_rule(name)
    def rule(a):
        if not isinstance(a, InterpTile):       # nt.abs(s) of a scalar: of its Numba type
            with np.errstate(all="ignore"):
                return fn(np.asarray(a)[()])
        with np.errstate(all="ignore"):
            return result(fn(compute_array(a, a.dtype)) if not (name == "invert" and dtypes.is_bool(a.dtype))
                          else np.logical_not(a.data), a.dtype, a.extents)

    return rule


_unary("neg", np.negative)
_unary("pos", np.positive)
_unary("invert", np.invert)
_unary("builtin_abs", np.abs)
_unary("abs", np.abs)


@interp_rule("where")
def interp_where(cond, x, y):
    if isinstance(x, InterpTile) or isinstance(y, InterpTile):
        dt = operand_dtype(x, y)
    else:
        from .common import scalar_kind
        kinds = {scalar_kind(x), scalar_kind(y)}
        dt = dtypes.float32 if "float" in kinds else dtypes.int32 if "int" in kinds else dtypes.bool_
    np_dt = dtypes.to_numpy(dt)
    xv = x.data.astype(np_dt) if isinstance(x, InterpTile) else scalar_to(x, dt)
    yv = y.data.astype(np_dt) if isinstance(y, InterpTile) else scalar_to(y, dt)
    r = np.where(cond.data, xv, yv)
    return result(r, dt, result_extents((cond, x, y), r.shape))


@interp_rule("filled")
def interp_filled(x, value):
    if x.extents is None:
        return InterpTile(x.data, x.dtype)
    fill = to_dtype(value, x.dtype)
    return result(np.where(x.valid(), x.data, fill), x.dtype)


@interp_rule("astype")
def interp_astype(x, dtype):
    dt = dtypes.from_any(dtype)
    src = x.data
    if dtypes.is_half(x.dtype) or dtypes.is_float8(x.dtype):
        src = src.astype(np.float32)          # exact, as the GPU widens
    if dtypes.is_float8(dt):
        return InterpTile(to_dtype(src, dt), dt, x.extents)
    if dtypes.is_int(dt) and np.issubdtype(src.dtype, np.floating):
        # saturating, NaN to 0, as the lowering (NumPy's cast is undefined out of range)
        return result(float_to_int(src, dt), dt, x.extents)
    with np.errstate(all="ignore"):
        return result(src.astype(dtypes.to_numpy(dt)), dt, x.extents)


def _minmax(name, fn):
    @interp_rule(name)
    def rule(x, y):
        if not isinstance(x, InterpTile) and not isinstance(y, InterpTile):
            # two scalars: as one element of a tile of the promoted dtype
            dt = dtypes.from_any(np.result_type(np.asarray(x).dtype, np.asarray(y).dtype))
            with np.errstate(all="ignore"):
                r = fn(compute_array(x, dt), compute_array(y, dt))
            return np.asarray(r).astype(dtypes.to_numpy(dt))[()]
        dt = operand_dtype(x, y)
        r = fn(compute_array(x, dt), compute_array(y, dt))
        return result(r, dt, result_extents((x, y), np.shape(r)))

    return rule


_minmax("minimum", np.minimum)
_minmax("maximum", np.maximum)


def _mulhi(name, unsigned):
    @interp_rule(name)
    def rule(x, y):
        dt = operand_dtype(x, y)
        bits = dtypes.itemsize(dt) * 8
        a = np.broadcast_to(compute_array(x, dt), np.broadcast_shapes(np.shape(
            compute_array(x, dt)), np.shape(compute_array(y, dt))))
        b = np.broadcast_to(compute_array(y, dt), a.shape)
        mask = (1 << bits) - 1

        signed_out = not dtypes.is_unsigned(dt)

        def hi(u, v):
            u, v = int(u), int(v)
            if unsigned:
                u, v = u & mask, v & mask
            h = ((u * v) >> bits) & mask                   # Python ints: exact
            return h - (1 << bits) if signed_out and h >> (bits - 1) else h

        out = np.array([hi(u, v) for u, v in zip(a.ravel(), b.ravel())],
                       dtype=dtypes.to_numpy(dt)).reshape(a.shape)
        return result(out, dt, result_extents((x, y), a.shape))

    return rule


_mulhi("mulhi", False)
_mulhi("umulhi", True)

_NUMPY_MATH = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda v: 1 / np.sqrt(v), "tanh": np.tanh,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "sin": np.sin, "cos": np.cos,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "erfc": np.vectorize(math.erfc, otypes=[np.float64]),
    "log1p": np.log1p, "expm1": np.expm1, "log10": np.log10, "cbrt": np.cbrt, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
}
assert set(_NUMPY_MATH) == set(MATH_FUNCTIONS)
_NUMPY_MATH2 = {"atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
                "fdiv": np.divide}
assert set(_NUMPY_MATH2) == set(MATH_FUNCTIONS2)


def _math(name):
    fn = _NUMPY_MATH[name]

    @interp_rule(name)
    def rule(x):
        if not isinstance(x, InterpTile):
            # a scalar (its Numba type's NumPy scalar): as one element of a tile of its dtype
            dt = math_scalar_dtype(dtypes.from_any(np.asarray(x).dtype))
            with np.errstate(all="ignore"):
                v = fn(compute_array(x, dt))
            return np.asarray(v).astype(dtypes.to_numpy(dt))[()]
        dt = x.dtype if dtypes.is_float(x.dtype) else dtypes.float32
        with np.errstate(all="ignore"):
            return result(fn(compute_array(x, dt)), dt, x.extents)

    return rule


for _n in MATH_FUNCTIONS:
    _math(_n)


def _math2(name):
    fn = _NUMPY_MATH2[name]

    @interp_rule(name)
    def rule(x, y):
        dt = operand_dtype(x, y)
        dt = dt if dtypes.is_float(dt) else dtypes.float32
        with np.errstate(all="ignore"):
            r = fn(compute_array(x, dt), compute_array(y, dt))
        return result(r, dt, result_extents((x, y), np.shape(r)))

    return rule


for _n in MATH_FUNCTIONS2:
    _math2(_n)

_NUMPY_PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
assert set(_NUMPY_PREDICATES) == set(PREDICATES)


def _predicate(name):
    fn = _NUMPY_PREDICATES[name]

    @interp_rule(name)
    def rule(x):
        data = x.data.astype(np.float32) if dtypes.is_half(x.dtype) or dtypes.is_float8(x.dtype) \
            else x.data
        return result(fn(data), dtypes.bool_, x.extents)

    return rule


for _n in PREDICATES:
    _predicate(_n)
