"""Lowering of NumPy ufuncs on scalars that numba-cuda's GPU ufunc table lacks
(``typing/scalar_ufuncs.py`` says which loops, and refuses the rest before lowering).

Each ufunc of :data:`~numba_tile.typing.scalar_ufuncs.SUPPLEMENT` gets a lowering for scalar
arguments (numbers and bools), more specific than numba-cuda's ``(ufunc, Any)`` one, so Numba
picks it for scalars and keeps its own for arrays. For one element it does what NumPy's loop
does: find the loop NumPy's table gives the argument types, cast the arguments to the loop's
input types, compute, cast the result to the call's type. The computations follow NumPy's
C loops (``numpy/_core/src/umath/loops*.c.src``, ``npy_math``):

* float functions through libdevice (``__nv_expf`` / ``__nv_exp``, ..., CUDA's math library,
  as numba-cuda lowers ``np.sin`` and numba_tile its tile math);
* integer arithmetic wraps; an integer ``floor_divide`` or ``remainder`` by 0 is 0, the least
  signed integer floor-divided by -1 is itself (its remainder 0), with no division executed
  on such operands (PTX leaves them undefined);
* float ``floor_divide`` and ``remainder`` by NumPy's ``npy_divmod`` (``fmod``-based, so
  ``1.0 // 0.1`` is 9.0 as in NumPy, not ``floor(1.0 / 0.1)``); a zero divisor gives
  ``a / b`` and ``fmod(a, b)``;
* ``sign`` is -1, 0 or 1 (+0.0 for a float zero, NaN for NaN; 0 or 1 unsigned), bools add as
  ``or`` and multiply as ``and``.
"""

from __future__ import annotations

import itertools

import numpy as np
from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.cudaimpl import registry as cudaimpl_registry
from numba.cuda.np.numpy_support import _ufunc_loop_sig, ufunc_find_matching_loop

from ..errors import TileTypingError
from ..typing.scalar_ufuncs import LIBDEVICE, SUPPLEMENT

__all__ = ["lower_scalar_ufunc"]

_SCALARS = (types.Number, types.Boolean)


def _libdevice(builder, base: str, *args):
    fty = args[0].type
    name = f"__nv_{base}f" if isinstance(fty, ir.FloatType) else f"__nv_{base}"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(fty, [fty] * len(args)),
                                        name)
    return builder.call(fn, list(args))


def _const(v, value):
    return ir.Constant(v.type, value)


def _select_safe_divisor(builder, a, b, signed):
    """``(divisor, special)``: ``b``, or 1 where the division is undefined (``b == 0``, or
    the least signed integer by -1), and the i1 of those operands."""
    zero = builder.icmp_unsigned("==", b, _const(b, 0))
    special = zero
    if signed:
        least = _const(a, -(1 << (a.type.width - 1)))
        special = builder.or_(zero, builder.and_(builder.icmp_signed("==", a, least),
                                                 builder.icmp_signed("==", b, _const(b, -1))))
    return builder.select(special, _const(b, 1), b), special, zero


def _int_floor_divide(builder, a, b, signed):
    safe, special, zero = _select_safe_divisor(builder, a, b, signed)
    if not signed:
        return builder.select(zero, _const(a, 0), builder.udiv(a, safe))
    q = builder.sdiv(a, safe)
    r = builder.srem(a, safe)
    # floor: one less where the remainder is not 0 and the signs of a and b differ
    differ = builder.icmp_signed("<", builder.xor(a, b), _const(a, 0))
    fix = builder.and_(differ, builder.icmp_unsigned("!=", r, _const(r, 0)))
    q = builder.select(fix, builder.sub(q, _const(q, 1)), q)
    # b == 0: 0; the least integer by -1: itself (0 - a wraps to a)
    return builder.select(special, builder.select(zero, _const(a, 0),
                                                  builder.sub(_const(a, 0), a)), q)


def _int_remainder(builder, a, b, signed):
    safe, special, _zero = _select_safe_divisor(builder, a, b, signed)
    if not signed:
        return builder.select(special, _const(a, 0), builder.urem(a, safe))
    r = builder.srem(a, safe)
    differ = builder.icmp_signed("<", builder.xor(r, b), _const(r, 0))
    fix = builder.and_(differ, builder.icmp_unsigned("!=", r, _const(r, 0)))
    r = builder.select(fix, builder.add(r, b), r)
    return builder.select(special, _const(a, 0), r)


def _float_divmod(builder, a, b):
    """NumPy's ``npy_divmod(a, b)`` for ``b != 0``: ``(floor quotient, remainder)``."""
    zero = _const(a, 0.0)
    mod = _libdevice(builder, "fmod", a, b)          # C fmod: exact
    div = builder.fdiv(builder.fsub(a, mod), b)
    mod_nonzero = builder.fcmp_unordered("!=", mod, zero)
    signs_differ = builder.xor(builder.fcmp_ordered("<", b, zero),
                               builder.fcmp_ordered("<", mod, zero))
    fix = builder.and_(mod_nonzero, signs_differ)
    mod = builder.select(fix, builder.fadd(mod, b), mod)
    div = builder.select(fix, builder.fsub(div, _const(a, 1.0)), div)
    mod = builder.select(mod_nonzero, mod, _libdevice(builder, "copysign", zero, b))
    floordiv = _libdevice(builder, "floor", div)
    up = builder.fcmp_ordered(">", builder.fsub(div, floordiv), _const(a, 0.5))
    floordiv = builder.select(up, builder.fadd(floordiv, _const(a, 1.0)), floordiv)
    div_nonzero = builder.fcmp_unordered("!=", div, zero)
    floordiv = builder.select(div_nonzero, floordiv,
                              _libdevice(builder, "copysign", zero, builder.fdiv(a, b)))
    return floordiv, mod


def _float_floor_divide(builder, a, b):
    floordiv, _mod = _float_divmod(builder, a, b)
    by_zero = builder.fcmp_ordered("==", b, _const(b, 0.0))
    return builder.select(by_zero, builder.fdiv(a, b), floordiv)


def _float_remainder(builder, a, b):
    _floordiv, mod = _float_divmod(builder, a, b)
    by_zero = builder.fcmp_ordered("==", b, _const(b, 0.0))
    return builder.select(by_zero, _libdevice(builder, "fmod", a, b), mod)


def _sign(builder, x, kind):
    if kind == "f":
        one, zero = _const(x, 1.0), _const(x, 0.0)
        out = builder.select(builder.fcmp_ordered("==", x, zero), zero, x)      # NaN stays
        out = builder.select(builder.fcmp_ordered("<", x, zero), _const(x, -1.0), out)
        return builder.select(builder.fcmp_ordered(">", x, zero), one, out)
    if kind == "u":
        return builder.zext(builder.icmp_unsigned("!=", x, _const(x, 0)), x.type)
    pos = builder.zext(builder.icmp_signed(">", x, _const(x, 0)), x.type)
    neg = builder.zext(builder.icmp_signed("<", x, _const(x, 0)), x.type)
    return builder.sub(pos, neg)


def _compute(ufunc, kind, builder, args):
    """One element of ``ufunc`` on ``args`` (already of the loop's input type, whose NumPy
    kind is ``kind``: ``'f'``, ``'i'``, ``'u'`` or ``'b'``)."""
    if kind == "f" and ufunc in LIBDEVICE:
        return _libdevice(builder, LIBDEVICE[ufunc], *args)
    x = args[0]
    y = args[1] if len(args) > 1 else None
    f, signed = kind == "f", kind == "i"
    if ufunc in (np.absolute, np.floor, np.ceil, np.trunc, np.positive):
        if ufunc is np.absolute and signed:
            return builder.select(builder.icmp_signed("<", x, _const(x, 0)),
                                  builder.sub(_const(x, 0), x), x)
        return x                    # integers and bools (floats went to libdevice above)
    if ufunc is np.negative:
        return builder.fsub(_const(x, -0.0), x) if f else builder.sub(_const(x, 0), x)
    if ufunc is np.square:
        return builder.fmul(x, x) if f else builder.mul(x, x)
    if ufunc is np.sign:
        return _sign(builder, x, kind)
    if ufunc is np.add:
        return builder.fadd(x, y) if f else builder.or_(x, y) if kind == "b" else \
            builder.add(x, y)
    if ufunc is np.multiply:
        return builder.fmul(x, y) if f else builder.and_(x, y) if kind == "b" else \
            builder.mul(x, y)
    if ufunc is np.subtract:
        return builder.fsub(x, y) if f else builder.sub(x, y)
    if ufunc is np.floor_divide:
        return _float_floor_divide(builder, x, y) if f else _int_floor_divide(builder, x, y,
                                                                              signed)
    if ufunc is np.remainder:
        return _float_remainder(builder, x, y) if f else _int_remainder(builder, x, y, signed)
    if ufunc in (np.isinf, np.isfinite):
        if not f:
            return ir.Constant(ir.IntType(1), int(ufunc is np.isfinite))
        finite = builder.fcmp_ordered("==", builder.fsub(x, x), _const(x, 0.0))
        if ufunc is np.isfinite:
            return finite
        return builder.and_(builder.fcmp_ordered("==", x, x), builder.not_(finite))
    if ufunc is np.signbit:
        bits = builder.bitcast(x, ir.IntType(32 if isinstance(x.type, ir.FloatType) else 64))
        return builder.icmp_signed("<", bits, ir.Constant(bits.type, 0))
    raise AssertionError(f"np.{ufunc.__name__}: no lowering for kind {kind!r}")


def lower_scalar_ufunc(ufunc):
    """The lowering of ``ufunc`` on scalar arguments (the loops of ``SUPPLEMENT[ufunc]``)."""
    loops = SUPPLEMENT[ufunc]

    def lower(context, builder, sig, args):
        found = ufunc_find_matching_loop(ufunc, tuple(sig.args) + (sig.return_type,))
        if found is None or found.ufunc_sig not in loops:
            # typing/scalar_ufuncs.check_scalar_ufunc refuses these first
            raise TileTypingError(f"np.{ufunc.__name__}() on {tuple(sig.args)} has no GPU "
                                  f"implementation")
        inner = _ufunc_loop_sig(found.outputs, found.inputs)
        cast = [context.cast(builder, v, t, it) for v, t, it in zip(args, sig.args, inner.args)]
        kind = np.dtype(found.ufunc_sig[0]).kind
        res = _compute(ufunc, kind, builder, cast)
        return context.cast(builder, res, inner.return_type, sig.return_type)

    return lower


for _ufunc in SUPPLEMENT:
    _impl = lower_scalar_ufunc(_ufunc)
    for _tys in itertools.product(_SCALARS, repeat=_ufunc.nin):
        cudaimpl_registry.lower(_ufunc, *_tys)(_impl)
