"""Scalar arithmetic as the compiled kernel does it: Numba's types, numba-cuda's lowering.

The interpreter runs a kernel's typed IR (``interpreter/typed_ir.py``). Every scalar value
there has the type Numba's type inference gave its variable, and every operator, cast and
library call on scalars has the signature Numba chose for it (``calltypes``). This module
computes each such operation exactly as numba-cuda's lowering does for that signature
(``numba/cuda/cpython/numbers.py``, ``builtins.py``), on NumPy scalars of the signature's
types; it never re-derives a promotion rule:

* **Integers** wrap to the width of the type (two's complement): ``int8 + int8`` is typed
  ``(int64, int64) -> int64`` and is an int64 sum; ``int64`` arithmetic wraps at 2**63.
  Unary ``-`` and ``~`` act in the operand's own width before widening (``-int8(-128)``
  is -128, ``~uint8(0)`` is 255), as Numba's lowering does.
* **Division.** Integer ``//`` and ``%`` by zero give 0, and ``INT_MIN // -1`` gives 0
  (``INT_MIN % -1`` gives 0); otherwise Python's floor rules. ``/`` of integers is float64.
  Float ``//`` and ``%`` follow CPython's ``float_divmod`` (numba-cuda's copy of it), and a
  zero divisor gives ``x / 0`` (inf or nan) and ``fmod(x, 0)`` (nan). Nothing raises
  (NumPy's error model, which numba_tile compiles with).
* **Powers.** ``int ** int`` and ``float ** int`` by numba-cuda's square-and-multiply loop in
  the result type (a negative exponent: 0 for integer bases other than 1 and -1, and
  ``INT_MIN`` for a zero base; ``0.0 ** -1`` is inf, where numba-cuda's loop would raise:
  ``lowering/scalars.py``); ``float ** float`` is ``pow``.
* **Shifts** by a count in ``[0, bits)`` of the result type; any other count gives 0 for
  ``<<`` and for ``>>`` of an unsigned value, and the sign for ``>>`` of a signed one (the
  rule of tile shifts, which the compiled kernel's scalar shifts follow too:
  ``lowering/scalars.py``).
* **Casts** as Numba's ``context.cast``: integers truncate or extend, floats round to
  nearest, a float to an integer truncates toward zero and saturates at the type's range,
  NaN giving 0 (``lowering/scalars.py`` makes the compiled kernel's casts do the same; LLVM's
  and NumPy's are undefined there), a float16 as well.
* **Floats** are IEEE in the signature's type (float16, float32 or float64), with NumPy's
  correctly rounded ``+ - * /`` and ``sqrt``; library functions (``math.exp``...) run as
  NumPy's, so they agree with the GPU's libdevice to rounding, not bit for bit.

Values are NumPy scalars of their types (``np.int64``, ``np.float32``, ``np.bool_``...);
literal-typed values (``Literal[int](3)``) stay Python values.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numba.cuda import types

__all__ = ["is_scalar", "is_value", "cast", "caster", "null", "binop", "binop_impl", "unary",
           "call", "cast_result", "has_rule", "truth"]

_NP = {types.int8: np.int8, types.int16: np.int16, types.int32: np.int32, types.int64: np.int64,
       types.uint8: np.uint8, types.uint16: np.uint16, types.uint32: np.uint32,
       types.uint64: np.uint64, types.float16: np.float16, types.float32: np.float32,
       types.float64: np.float64, types.boolean: np.bool_, types.complex64: np.complex64,
       types.complex128: np.complex128}

#: in-place operators -> the operator they compute
_IMMUTABLE = {operator.iadd: operator.add, operator.isub: operator.sub,
              operator.imul: operator.mul, operator.itruediv: operator.truediv,
              operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
              operator.ipow: operator.pow, operator.ilshift: operator.lshift,
              operator.irshift: operator.rshift, operator.iand: operator.and_,
              operator.ior: operator.or_, operator.ixor: operator.xor,
              operator.imatmul: operator.matmul}



class Untabled(LookupError):
    """An operation this module has no rule of its own for: the caller computes it the generic
    way (Python's, or NumPy's, on the arguments converted to the signature's types, the result
    converted to its return type). An internal signal, never raised to the user."""

def is_scalar(ty) -> bool:
    """A type whose values this module computes: a number or a boolean (literals included)."""
    return isinstance(types.unliteral(ty), (types.Number, types.Boolean)) \
        and types.unliteral(ty) in _NP


def is_value(v) -> bool:
    """``v`` is a scalar value: a Python or NumPy number or boolean."""
    return isinstance(v, (int, float, complex, np.number, np.bool_))


# ----------------------------------------------------------------------------- casts


def _is_float_value(v) -> bool:
    return isinstance(v, (float, np.floating))


def _is_complex_value(v) -> bool:
    return isinstance(v, (complex, np.complexfloating))


def _wrap(i: int, ty) -> object:
    """Python int ``i`` as integer type ``ty``, two's complement (``trunc``)."""
    bits = ty.bitwidth
    i &= (1 << bits) - 1
    if ty.signed and i >> (bits - 1):
        i -= 1 << bits
    return _NP[ty](i)


def _float_to_int(v, ty):
    """A float to integer type ``ty`` as numba_tile's code converts it
    (``lowering/scalars.float_to_integer``): toward zero, saturated to ``ty``'s range, NaN to
    0; a float16 as well (``lowering/scalars.float16_to_integer``)."""
    f = float(v)
    if f != f:
        return _NP[ty](0)
    lo = -(1 << (ty.bitwidth - 1)) if ty.signed else 0
    hi = (1 << (ty.bitwidth - 1)) - 1 if ty.signed else (1 << ty.bitwidth) - 1
    if f == math.inf:
        return _NP[ty](hi)
    if f == -math.inf:
        return _NP[ty](lo)
    return _NP[ty](min(max(int(f), lo), hi))


def _as_int(v) -> int:
    """An integer or boolean value as a Python int (its own signedness)."""
    return int(v)


def cast(v, ty):
    """``v`` converted to Numba type ``ty`` as numba-cuda's ``context.cast`` converts it.

    Args:
        v: a Python or NumPy scalar (its own type decides signedness and kind).
        ty: a scalar Numba type (a literal type converts to its underlying type).

    Returns:
        A NumPy scalar of ``ty`` (``np.bool_`` for booleans).
    """
    ty = types.unliteral(ty)
    if isinstance(ty, types.Boolean):
        return np.bool_(truth(v))
    if isinstance(ty, types.Integer):
        if _is_float_value(v):
            return _float_to_int(v, ty)
        if _is_complex_value(v):
            raise TypeError(f"cannot cast a complex number to {ty}")
        return _wrap(_as_int(v), ty)
    if isinstance(ty, types.Float):
        t = _NP[ty]
        if isinstance(v, (bool, np.bool_)):
            return t(1.0 if v else 0.0)
        if isinstance(v, np.integer):
            return np.asarray(v).astype(t)[()]          # sitofp / uitofp: one rounding
        if isinstance(v, int):
            src = np.int64(v) if -2**63 <= v < 2**63 else np.uint64(v)
            return np.asarray(src).astype(t)[()]
        if _is_complex_value(v):
            raise TypeError(f"cannot cast a complex number to {ty}")
        with np.errstate(all="ignore"):
            return t(v)                                  # fpext / fptrunc: round to nearest
    if isinstance(ty, types.Complex):
        with np.errstate(all="ignore"):
            if isinstance(v, (int, np.integer, bool, np.bool_)) and not isinstance(v, np.floating):
                v = cast(v, ty.underlying_float)
            return _NP[ty](v)
    raise TypeError(f"not a scalar type: {ty}")


def null(ty):
    """The value Numba gives a variable of scalar type ``ty`` read before any assignment
    (a zero-initialized slot: ``context.get_constant_null``)."""
    return cast(0, ty)


def truth(v) -> bool:
    """Numba's ``is_true``: nonzero (a NaN is true)."""
    if isinstance(v, (float, np.floating)):
        return not (float(v) == 0.0)
    return bool(v)


# ----------------------------------------------------------------------------- operators


def _int_divmod(a: int, b: int, ty):
    """numba-cuda's ``_int_divmod_impl`` (NumPy's error model): 0 and 0 for a zero divisor,
    and for ``INT_MIN // -1``; Python's floor division and remainder otherwise."""
    if b == 0:
        return 0, 0
    if ty.signed and a == -(1 << (ty.bitwidth - 1)) and b == -1:
        return 0, 0
    return a // b, a % b


def _float_divmod(x, y):
    """numba-cuda's ``real_divmod`` (CPython's ``float_divmod``) in ``x``'s float type;
    ``x / 0`` and ``fmod(x, 0)`` for a zero divisor."""
    t = type(x)
    if y == 0:
        return x / y, np.fmod(x, y)
    mod = np.fmod(x, y)
    div = (x - mod) / y
    if mod != 0 or mod != mod:                          # nonzero or NaN (unordered !=)
        if (y < 0) != (mod < 0):
            mod = t(mod + y)
            div = t(div - t(1.0))
    else:
        mod = t(-0.0) if y < 0 else t(0.0)
    if div != 0 and div == div:
        floordiv = np.floor(div)
        if div - floordiv > t(0.5):
            floordiv = t(floordiv + t(1.0))
    else:
        div = t(div * div)
        floordiv = t(t(div * x) / y)
    return t(floordiv), t(mod)


def _power(a, b, ret, base_ty, exp_ty):
    """``a ** b`` for an integer exponent as numba_tile's code computes it
    (``lowering/scalars._power_impl``, numba-cuda's ``int_power_impl`` without its raising
    paths): by squaring in the result type ``ret`` (integer or float)."""
    is_integer = isinstance(base_ty, types.Integer)
    b = _as_int(b)
    if isinstance(ret, types.Integer):
        one = _NP[ret](1)
        mul = lambda p, q: _wrap(_as_int(p) * _as_int(q), ret)   # noqa: E731
    else:
        one = _NP[ret](1.0)
        mul = lambda p, q: _NP[ret](p * q)                        # noqa: E731

    def float_pow():
        with np.errstate(all="ignore"):
            return cast(np.power(cast(a, types.float64), np.float64(b)), ret)

    r = one
    a = cast(a, ret)
    invert = b < 0
    exp = -b if invert else b
    if invert:
        if is_integer:
            if a == 0:
                return cast(-(1 << (ret.bitwidth - 1)), ret) \
                    if isinstance(ret, types.Integer) else cast(0, ret)
            if a != 1 and a != -1:
                return cast(0, ret)
        if exp_ty.signed and b == -(1 << (exp_ty.bitwidth - 1)):
            return float_pow()                   # -b overflows in the exponent's type
    if exp > 0x10000:
        return float_pow()
    with np.errstate(all="ignore"):
        while exp != 0:
            if exp & 1:
                r = mul(r, a)
            exp >>= 1
            a = mul(a, a)
        if invert:
            if r == 0:
                return cast(math.copysign(math.inf, float(r)), ret)
            return cast(np.float64(1.0) / np.float64(cast(r, types.float64)), ret)
    return r


def _shift(op, a: int, n: int, ty):
    """``<<`` / ``>>`` in integer type ``ty`` (both operands already of it); a count outside
    ``[0, bits)`` gives 0, or the sign for ``>>`` of a signed type (``lowering/scalars.py``)."""
    bits = ty.bitwidth
    if not 0 <= n < bits:
        return _NP[ty](-1 if (op is operator.rshift and ty.signed and a < 0) else 0)
    if op is operator.lshift:
        return _wrap(a << n, ty)
    return _wrap(a >> n, ty)                            # arithmetic for signed, logical else


_INT_OPS = {operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
            operator.and_: operator.and_, operator.or_: operator.or_,
            operator.xor: operator.xor}
_COMPARE = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}


def caster(ty):
    """A function converting a value to scalar type ``ty`` as :func:`cast` does, at no cost for
    a value of that type already."""
    ty = types.unliteral(ty)
    exact = _NP[ty]

    def conv(v):
        return v if v.__class__ is exact else cast(v, ty)

    return conv


def _wrapper(ty):
    """A function: Python int -> integer type ``ty``, two's complement."""
    bits, t, signed = ty.bitwidth, _NP[ty], ty.signed
    mask, half, full = (1 << bits) - 1, 1 << (bits - 1), 1 << bits

    def wrap(i):
        i &= mask
        return t(i - full if signed and i >= half else i)

    return wrap


_FLOAT_OPS = {operator.add: operator.add, operator.sub: operator.sub,
              operator.mul: operator.mul, operator.truediv: operator.truediv,
              operator.pow: np.power}
_IMPLS: dict = {}


def binop_impl(fn, sig):
    """A function ``(a, b) -> fn(a, b)`` for the scalar signature ``sig`` (``calltypes`` of the
    IR expression): the operands converted to ``sig.args``, the operation computed in
    numba-cuda's way for those types, the result of type ``sig.return_type``.

    Raises:
        Untabled: an operator this module has no rule of its own for (the caller then
            computes Python's and casts the result to the signature's type).
    """
    key = (fn, types.unliteral(sig.return_type), tuple(types.unliteral(t) for t in sig.args))
    impl = _IMPLS.get(key)
    if impl is None:
        impl = _IMPLS[key] = _binop_impl(_IMMUTABLE.get(fn, fn), *key[2], key[1])
    return impl


def _binop_impl(fn, at, bt, ret):
    ca, cb = caster(at), caster(bt)
    ints = (types.Integer, types.Boolean)
    if fn in _COMPARE:
        if isinstance(at, ints) and isinstance(bt, ints):
            return lambda a, b: np.bool_(fn(int(ca(a)), int(cb(b))))   # exact, mixed signs
        return lambda a, b: np.bool_(fn(ca(a), cb(b)))                 # IEEE: NaN unordered
    if isinstance(ret, types.Boolean):
        if fn in (operator.and_, operator.or_, operator.xor):           # of booleans
            return lambda a, b: np.bool_(fn(bool(ca(a)), bool(cb(b))))
        raise Untabled(fn)
    if isinstance(at, types.Integer) and isinstance(bt, types.Integer):
        if isinstance(ret, types.Integer):
            if fn is operator.pow:
                return lambda a, b: _power(ca(a), cb(b), ret, at, bt)
            cr, wrap = caster(ret), _wrapper(ret)
            if fn in _INT_OPS:
                op = _INT_OPS[fn]               # exact, then wrapped: two's complement
                return lambda a, b: wrap(op(int(ca(a)), int(cb(b))))
            if fn in (operator.lshift, operator.rshift):
                return lambda a, b: _shift(fn, int(cr(ca(a))), int(cr(cb(b))), ret)
            k = 0 if fn is operator.floordiv else 1 if fn is operator.mod else None
            if k is not None:
                return lambda a, b: wrap(_int_divmod(int(cr(ca(a))), int(cr(cb(b))), ret)[k])
        if fn is operator.truediv and isinstance(ret, types.Float):
            cr = caster(ret)
            return lambda a, b: cr(cr(ca(a)) / cr(cb(b)))
        raise Untabled(fn)
    if isinstance(ret, (types.Float, types.Complex)):
        if fn is operator.pow and isinstance(bt, types.Integer):
            return lambda a, b: _power(ca(a), cb(b), ret, at, bt)
        cr = caster(ret)
        op = _FLOAT_OPS.get(fn)
        if op is not None:
            return lambda a, b: cr(op(cr(ca(a)), cr(cb(b))))
        if isinstance(ret, types.Float) and fn in (operator.floordiv, operator.mod):
            k = 0 if fn is operator.floordiv else 1
            return lambda a, b: cr(_float_divmod(cr(ca(a)), cr(cb(b)))[k])
    raise Untabled(fn)


def binop(fn, sig, a, b):
    """``fn(a, b)`` for the scalar signature ``sig`` (:func:`binop_impl`). Call it where NumPy
    reports nothing (``np.errstate(all="ignore")``: the runner's blocks)."""
    return binop_impl(fn, sig)(a, b)


def unary(fn, sig, a):
    """``fn(a)`` (``-``, ``+``, ``~``, ``not``) for a scalar signature ``sig``: integers
    negated or inverted in the operand's own width, then widened (numba-cuda's
    ``int_negate_impl`` and ``int_invert_impl``). Call it where NumPy reports nothing, as
    :func:`binop`."""
    at = types.unliteral(sig.args[0])
    ret = types.unliteral(sig.return_type)
    a = cast(a, at)
    if fn is operator.not_:
        return np.bool_(not truth(a))
    if isinstance(at, types.Boolean):
        if fn is operator.invert:
            return cast(not bool(a), ret)
        v = _as_int(cast(a, ret))
        return cast(-v if fn is operator.neg else v, ret)
    if isinstance(at, types.Integer):
        if fn is operator.neg:
            return cast(_wrap(-_as_int(a), at), ret)
        if fn is operator.pos:
            return cast(a, ret)
        if fn is operator.invert:
            return cast(_wrap(~_as_int(a), at), ret)
        raise Untabled(fn)
    if fn is operator.neg:
        return cast(-a, ret)
    if fn is operator.pos:
        return cast(a, ret)
    raise Untabled(fn)


# ----------------------------------------------------------------------------- library calls


def _unified(typingctx, t1, t2):
    ty = typingctx.unify_types(t1, t2)
    if ty is None:
        raise Untabled("min/max of types Numba does not unify")
    return types.unliteral(ty)


def _minmax(cmp, sig, args, typingctx):
    """numba-cuda's ``do_minmax``: left to right, ``v cmp acc`` in the unified type selects
    ``v`` (so a NaN is kept only where Python's ``min``/``max`` keeps it)."""
    argtys = list(sig.args)
    if len(argtys) == 1 and isinstance(argtys[0], types.BaseTuple):
        argtys, args = list(argtys[0].types), list(args[0])
    accty, acc = types.unliteral(argtys[0]), args[0]
    for vty, v in zip(argtys[1:], args[1:]):
        vty = types.unliteral(vty)
        ty = _unified(typingctx, accty, vty)
        acc, v = cast(acc, ty), cast(v, ty)
        pred = binop(cmp, _Sig(types.boolean, (ty, ty)), v, acc)
        accty, acc = ty, (v if pred else acc)
    return cast(acc, sig.return_type)


class _Sig:
    """A signature built here (the same fields as Numba's)."""

    __slots__ = ("return_type", "args")

    def __init__(self, return_type, args):
        self.return_type, self.args = return_type, tuple(args)


def _abs(sig, args, _ctx):
    at = types.unliteral(sig.args[0])
    a = cast(args[0], at)
    if isinstance(at, types.Integer):
        v = _as_int(a)
        return cast(_wrap(-v, at) if v < 0 else a, sig.return_type)
    with np.errstate(all="ignore"):
        return cast(np.abs(a), sig.return_type)


def _round(sig, args, _ctx):
    """``round(x)`` and ``round(x, ndigits)`` as numba-cuda lowers them (``cudaimpl.py``;
    Numba types them ``(float32 | float64) -> int64`` and ``(float32 | float64, int64)``)."""
    at = types.unliteral(sig.args[0])
    x = cast(args[0], at)
    if len(args) == 1:
        if isinstance(at, types.Integer):
            return cast(x, sig.return_type)
        return cast(np.rint(x), sig.return_type)         # __nv_llrint: saturated, NaN 0
    if not isinstance(at, types.Float):
        raise Untabled("round of an integer with digits")
    return cast(_round_ndigits(x, _as_int(cast(args[1], types.int64))), sig.return_type)


_F64, _I64 = types.float64, types.int64


def _llrint(y) -> float:
    """libdevice's ``__nv_llrint`` (``cvt.rni.s64.f64``): to nearest even, saturated to
    int64, NaN to 0; then as float64 (where numba-cuda's code uses it)."""
    return float(_float_to_int(np.rint(np.float64(y)), _I64))


def _round_ndigits(x, nd: int):
    """numba-cuda's ``round_to_impl`` (``cudaimpl.py``, CPython's fallback ``double_round``)
    for a float ``x`` and an int64 ``nd``, operation by operation in the types Numba gives
    them: float64 products and quotients, ``10.0 ** n`` by numba_tile's square-and-multiply
    loop (inf from 10.0 ** 309 on; ``-nd`` wraps at int64's minimum), and ``round(y)``
    libdevice's ``__nv_llrint`` (saturated to int64). So a large ``nd`` gives ``x`` (its
    product overflows), a ``nd`` of -309 or less NaN (``0 * inf``), as on the GPU.

    Returns:
        A float64 (the caller converts it to the result type).
    """
    f = np.float64(x)
    if math.isinf(f) or math.isnan(f):
        return f
    ten = np.float64(10.0)
    with np.errstate(all="ignore"):
        if nd >= 0:
            if nd > 22:
                pow1 = _power(ten, np.int64(nd - 22), _F64, _F64, _I64)
                pow2 = np.float64(1e22)
            else:
                pow1 = _power(ten, np.int64(nd), _F64, _F64, _I64)
                pow2 = np.float64(1.0)
            y = (f * pow1) * pow2
            if math.isinf(y):
                return f
        else:
            pow1 = _power(ten, _wrap(-nd, _I64), _F64, _F64, _I64)
            y = f / pow1
        z = np.float64(_llrint(y))
        if abs(y - z) == 0.5:                       # halfway: to even
            z = np.float64(2.0) * np.float64(_llrint(y / np.float64(2.0)))
        if nd >= 0:
            return (z / pow2) / pow1
        return z * pow1


def _divmod(sig, args, _ctx):
    ty = types.unliteral(sig.return_type.dtype)
    a, b = cast(args[0], ty), cast(args[1], ty)
    if isinstance(ty, types.Integer):
        q, r = _int_divmod(_as_int(a), _as_int(b), ty)
        return _wrap(q, ty), _wrap(r, ty)
    return _float_divmod(a, b)


def _truth_call(sig, args, _ctx):
    return np.bool_(truth(cast(args[0], sig.args[0])) if args else False)


def _cast_call(sig, args, _ctx):
    """``int(x)``, ``float(x)``, ``np.float32(x)``...: Numba's cast to the result type."""
    if not args:
        return cast(0, sig.return_type)
    return cast(cast(args[0], sig.args[0]), sig.return_type)


def _operator_call(fn):
    def impl(sig, args, _ctx):
        if len(args) == 1:
            return unary(fn, sig, args[0])
        return binop(fn, sig, args[0], args[1])
    return impl


#: math functions whose NumPy ufunc computes the same IEEE function (in the argument's type)
_MATH_UFUNCS = {
    math.sqrt: np.sqrt, math.exp: np.exp, math.expm1: np.expm1, math.log: np.log,
    math.log2: np.log2, math.log10: np.log10, math.log1p: np.log1p, math.sin: np.sin,
    math.cos: np.cos, math.tan: np.tan, math.asin: np.arcsin, math.acos: np.arccos,
    math.atan: np.arctan, math.sinh: np.sinh, math.cosh: np.cosh, math.tanh: np.tanh,
    math.asinh: np.arcsinh, math.acosh: np.arccosh, math.atanh: np.arctanh,
    math.floor: np.floor, math.ceil: np.ceil, math.trunc: np.trunc, math.fabs: np.fabs,
    math.atan2: np.arctan2, math.hypot: np.hypot, math.copysign: np.copysign,
    math.fmod: np.fmod, math.pow: np.power, math.isnan: np.isnan, math.isinf: np.isinf,
    math.isfinite: np.isfinite, math.degrees: np.degrees, math.radians: np.radians,
    math.ldexp: np.ldexp, math.exp2: np.exp2, math.nextafter: np.nextafter,
}


def _ieee_fallback(fn, vals, exc):
    """The IEEE result of a ``math`` function where Python's raises (the GPU's libdevice
    returns one): a pole of ``lgamma`` is +inf, ``gamma(+-0)`` is +-inf, an overflow is
    inf, any other domain error NaN."""
    if isinstance(exc, OverflowError):
        return math.inf
    if fn is math.lgamma:
        return math.inf
    if fn is math.gamma and vals and float(vals[0]) == 0.0:
        return math.copysign(math.inf, float(vals[0]))
    return math.nan


def _ufunc_call(ufunc):
    """A math function or NumPy ufunc on scalars: computed in the float type of the result
    (integers and booleans of the arguments converted to it, as numba-cuda's implementations
    do), or in the arguments' own types for a boolean or integer result."""
    def impl(sig, args, _ctx):
        ret = types.unliteral(sig.return_type)
        argtys = [types.unliteral(t) for t in sig.args]
        vals = [cast(a, t) for a, t in zip(args, argtys)]
        if isinstance(ret, types.Float) and ufunc is not np.ldexp:
            vals = [cast(v, ret) if not isinstance(t, types.Float) else v
                    for v, t in zip(vals, argtys)]
        with np.errstate(all="ignore"):
            return cast_result(ufunc(*vals), ret)
    return impl


def _library_table():
    table = {bool: _truth_call, int: _cast_call, float: _cast_call,
             abs: _abs, round: _round, divmod: _divmod,
             min: lambda s, a, c: _minmax(operator.lt, s, a, c),
             max: lambda s, a, c: _minmax(operator.gt, s, a, c),
             pow: _operator_call(operator.pow)}
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift",
                 "and_", "or_", "xor", "lt", "le", "gt", "ge", "eq", "ne", "neg", "pos",
                 "invert", "not_", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod",
                 "ipow", "ilshift", "irshift", "iand", "ior", "ixor"):
        table[getattr(operator, name)] = _operator_call(getattr(operator, name))
    table[operator.abs] = _abs
    for t in set(_NP.values()):
        table[t] = _cast_call
    for f, u in _MATH_UFUNCS.items():
        table[f] = _ufunc_call(u)
    return table


_LIBRARY = _library_table()


def has_rule(fn) -> bool:
    """Whether this module computes library function ``fn`` on scalars by a rule of its own
    (``round``, ``divmod``, ``math.exp``, NumPy's ufuncs...)."""
    return isinstance(fn, np.ufunc) or (_hashable(fn) and fn in _LIBRARY)


def call(fn, sig, args, typingctx=None):
    """``fn(*args)`` for a library function of Python, ``math`` or NumPy with the scalar
    signature ``sig``, as numba-cuda computes it; a function this module has no rule for
    runs as Python's (or NumPy's) on the arguments converted to ``sig.args``, its result
    converted to ``sig.return_type``.

    Where Python's ``math`` raises for a float result (``lgamma(0)``, ``gamma(-1)``), the
    result is the IEEE one the GPU's libdevice gives (:func:`_ieee_fallback`).

    Raises:
        ArithmeticError, ValueError: such a function raised for a result that is not a float.
    """
    rule = _LIBRARY.get(fn) if _hashable(fn) else None
    if rule is None and isinstance(fn, np.ufunc):
        rule = _ufunc_call(fn)
    if rule is not None:
        try:
            return rule(sig, args, typingctx)
        except Untabled:
            pass
    vals = [cast(a, t) if is_scalar(t) else a for a, t in zip(args, sig.args)]
    with np.errstate(all="ignore"):
        try:
            out = fn(*vals)
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            if not isinstance(types.unliteral(sig.return_type), types.Float):
                raise
            out = _ieee_fallback(fn, vals, exc)
    return cast_result(out, sig.return_type)


def cast_result(out, ret):
    """A library function's result ``out`` converted to its Numba type ``ret``: a scalar
    type, or a tuple of them item by item (``divmod``, ``np.modf``); anything else as it
    is."""
    ret = types.unliteral(ret)
    if is_scalar(ret):
        return cast(out, ret)
    if isinstance(ret, types.BaseTuple) and isinstance(out, tuple) and len(out) == len(ret):
        return tuple(cast_result(v, t) for v, t in zip(out, ret.types))
    return out


def _hashable(fn) -> bool:
    try:
        hash(fn)
    except TypeError:
        return False
    return True

