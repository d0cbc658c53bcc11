"""Scalar integer arithmetic, shifts, float-to-integer casts and powers with defined results.

numba-cuda lowers a scalar ``a << n`` / ``a >> n`` to LLVM's ``shl`` / ``ashr`` / ``lshr`` and
a float-to-integer cast (``int(x)``, ``np.int8(x)``, an assignment Numba converts) to
``fptosi`` / ``fptoui``. LLVM makes all of them *poison* where the count is outside
``[0, bits)`` or the value outside the integer's range: the GPU's result then depends on
NVVM's code generation (an 8-bit ``fptoui`` of 300.0 became a 16-bit ``cvt`` and a truncation:
44), and the interpreter could not agree with it. In numba_tile's code (its kernels and the
frozen copies of the device functions they call: ``compiler_context.own_code``) these
operations get the results tiles already have (``lowering/elementwise._shift_impl``,
``lowering/common._float_to_int_sat``), which the interpreter computes too
(``interpreter/scalars.py``):

* ``a << n`` is 0 and ``a >> n`` is 0 (unsigned) or the sign (signed) for a count ``n``
  outside ``[0, bits)`` of the operation's type (a negative count included);
* a float converted to an integer type truncates toward zero and saturates at the type's
  range; NaN gives 0 (PTX ``cvt.rzi``'s rule), a float16 too (:func:`float16_to_integer`:
  numba-cuda's rounds it to nearest, ``cvt.rni``, where Python, NumPy and a tile's ``astype``
  truncate);
* ``a ** n`` with an integer exponent never raises (:func:`_power_impl`): numba-cuda's loop
  raises inside (``0.0 ** -1``), which on the GPU silently ends the thread;
* integer ``+ - *`` wrap (two's complement) without LLVM's ``nsw`` flag (:func:`_wrapping`),
  so no optimization assumes a signed result did not overflow;
* a float16 constant (a ``Constant`` ``np.float16(x)``) is its bits (:func:`float16_constant`),
  where numba-cuda's wrote IR libNVVM refuses;
* float16 scalar ``+ - * /`` (and their in-place forms), comparisons, ``-a``, ``+a``,
  ``abs(a)`` and ``bool(a)`` are computed here (in float32, rounded once to float16: NumPy's
  correctly rounded result), where numba-cuda's call CUDA C++ from ``cuda_fp16.h`` that it links
  at load time and numba_tile does not (``typing/linked.py``);
* float ``%``, ``//`` and ``divmod`` take their remainder from libdevice's ``fmod``, which is
  exact (:func:`_float_division`): LLVM's ``frem``, which numba-cuda's copy of CPython's
  ``float_divmod`` uses, becomes ``a - b * trunc(a / b)`` on NVPTX, wrong where the quotient
  is large or overflows (``1e300 % 3.0``, and NaN where ``a / b`` is infinite);
* ``-a`` of an integer narrower than its result type (Numba types ``-int16`` as int64 but
  negates in 16 bits, so ``-(-32768)`` is -32768) negates in the result type and wraps to the
  operand's width behind an opaque copy (:func:`_negate_impl`): the sign-extended 16-bit
  negation ptxas assembles gives 32768;
* ``min`` and ``max`` of two floats are Python's (numba-cuda's ``do_minmax``, as of any other
  types: ``min(nan, 1.0)`` is NaN, ``min(1.0, nan)`` 1.0, ``min(0.0, -0.0)`` 0.0) where
  numba-cuda's own for two floats is libdevice's ``fmin``/``fmax``, which drop a NaN
  (:func:`_minmax_impl`);
* ``t[i]`` of a homogeneous tuple at a run-time index outside it is the item type's zero
  (:func:`_tuple_getitem`), where numba-cuda raised IndexError, which ends a GPU thread
  silently;
* ``round(x)`` of a NaN is 0 and ``round(x, n)`` rounds a NaN scaled value to 0
  (:func:`_round_impl`, :func:`_round_to_impl`): libdevice's ``__nv_llrint`` gives int64's
  least value for NaN, so ``round(0.0, 331)`` was -0.0.

Elsewhere (a user's own numba-cuda kernels) Numba's lowering is unchanged. The registry is
installed on numba-cuda's target context after its own (:func:`install`), so its
implementations take precedence for these signatures.
"""

from __future__ import annotations

import operator

from llvmlite import ir
from numba.cuda import types
from numba.cuda import cgutils
from numba.cuda.core.imputils import Registry, impl_ret_untracked

__all__ = ["registry", "install"]

registry = Registry("numba_tile_scalars")
_installed: set = set()


def _own_code() -> bool:
    from ..compiler_context import in_own_code
    return in_own_code()


@registry.lower_cast(types.Float, types.Integer)
def float_to_integer(context, builder, fromty, toty, val):
    """Toward zero, saturated to ``toty``'s range, NaN to 0 (module docstring)."""
    from numba.cuda.cpython import numbers
    if not _own_code():
        return numbers.float_to_integer(context, builder, fromty, toty, val)
    lty = context.get_value_type(toty)
    r = builder.fptosi(val, lty) if toty.signed else builder.fptoui(val, lty)
    bits = toty.bitwidth
    lo = -(1 << (bits - 1)) if toty.signed else 0
    hi = (1 << (bits - 1)) - 1 if toty.signed else (1 << bits) - 1
    # compared in float64, where lo and hi + 1 (0 or powers of two) are exact
    wide = val if val.type == ir.DoubleType() else builder.fpext(val, ir.DoubleType())
    below = builder.fcmp_ordered("<", wide, ir.Constant(ir.DoubleType(), float(lo)))
    above = builder.fcmp_ordered(">=", wide, ir.Constant(ir.DoubleType(), float(hi + 1)))
    nan = builder.fcmp_unordered("uno", wide, wide)
    r = builder.select(above, ir.Constant(lty, hi), r)
    r = builder.select(below, ir.Constant(lty, lo), r)
    return builder.select(nan, ir.Constant(lty, 0), r)


@registry.lower_cast(types.float16, types.Integer)
def float16_to_integer(context, builder, fromty, toty, val):
    """A float16 to an integer type: its float32 value (exact) by :func:`float_to_integer`,
    toward zero, saturated, NaN to 0 (module docstring)."""
    if not _own_code():
        from numba.cuda._internal.cuda_fp16 import float16_to_integer_cast
        return float16_to_integer_cast(context, builder, fromty, toty, val)
    wide = builder.fpext(builder.bitcast(val, ir.HalfType()), ir.FloatType())
    return float_to_integer(context, builder, types.float32, toty, wide)


def _shift(name):
    def impl(context, builder, sig, args):
        from numba.cuda.cpython import numbers
        if not _own_code():
            fallback = numbers.int_shl_impl if name == "lshift" else numbers.int_shr_impl
            return fallback(context, builder, sig, args)
        valty, amtty = sig.args
        ret = sig.return_type
        val = context.cast(builder, args[0], valty, ret)
        amt = context.cast(builder, args[1], amtty, ret)
        bits = ret.bitwidth
        # unsigned compare: a negative count is outside too
        inside = builder.icmp_unsigned("<", amt, ir.Constant(amt.type, bits))
        safe = builder.select(inside, amt, ir.Constant(amt.type, 0))
        if name == "lshift":
            res = builder.select(inside, builder.shl(val, safe), ir.Constant(val.type, 0))
        elif not ret.signed:
            res = builder.select(inside, builder.lshr(val, safe), ir.Constant(val.type, 0))
        else:
            sign = builder.ashr(val, ir.Constant(val.type, bits - 1))
            res = builder.select(inside, builder.ashr(val, safe), sign)
        return impl_ret_untracked(context, builder, ret, res)
    return impl


for _op in (operator.lshift, operator.ilshift):
    registry.lower(_op, types.Integer, types.Integer)(_shift("lshift"))
for _op in (operator.rshift, operator.irshift):
    registry.lower(_op, types.Integer, types.Integer)(_shift("rshift"))


def _wrapping(name):
    """Integer ``+ - *`` that wraps: numba-cuda's ``int_add_impl`` and its siblings mark signed
    arithmetic ``nsw`` (no signed wrap), which lets LLVM assume it never overflows and fold
    ``v * v > 0`` into ``v != 0``; then a kernel's branch on an overflowing value goes the way
    no wrapped value would. Here the operation is two's complement, always."""
    def impl(context, builder, sig, args):
        from numba.cuda.cpython import numbers
        if not _own_code():
            return getattr(numbers, f"int_{name}_impl")(context, builder, sig, args)
        (ta, tb), ret = sig.args, sig.return_type
        a = context.cast(builder, args[0], ta, ret)
        b = context.cast(builder, args[1], tb, ret)
        res = getattr(builder, name)(a, b)
        return impl_ret_untracked(context, builder, ret, res)
    return impl


for _name, _ops in (("add", (operator.add, operator.iadd)), ("sub", (operator.sub, operator.isub)),
                    ("mul", (operator.mul, operator.imul))):
    for _op in _ops:
        registry.lower(_op, types.Integer, types.Integer)(_wrapping(_name))


def _power_impl(context, builder, sig, args):
    """``a ** n`` for an integer exponent: numba-cuda's ``int_power_impl`` (square and multiply
    in the result type), but with no path that raises. Numba compiles that loop as a
    subroutine with Python's error model, where ``1.0 / r`` of a float ``r`` that is 0
    (``0.0 ** -1``) and ``-n`` of the most negative exponent raise; on the GPU the thread then
    returns from the kernel, skipping the rest of it. Here ``1.0 / 0.0`` is the IEEE infinity
    (of ``r``'s sign) and the most negative exponent goes to ``pow`` in float64, as exponents
    past 65536 already do."""
    import math

    from numba.cuda.cpython import numbers
    if not _own_code():
        return numbers.int_power_impl(context, builder, sig, args)
    is_integer = isinstance(sig.args[0], types.Integer)
    tp = sig.return_type
    zerodiv_return = -1 << (tp.bitwidth - 1) if isinstance(tp, types.Integer) else 0

    def int_power(a, b):
        r = tp(1)
        a = tp(a)
        if b < 0:
            invert = True
            exp = -b
            if is_integer:
                if a == 0:
                    return zerodiv_return
                if a != 1 and a != -1:
                    return 0
            if exp < 0:                 # -b overflowed: b is its type's most negative value
                return math.pow(a, float(b))
        else:
            invert = False
            exp = b
        if exp > 0x10000:
            return math.pow(a, float(b))
        while exp != 0:
            if exp & 1:
                r *= a
            exp >>= 1
            a *= a
        if invert:
            if r == 0:                  # a float underflowed to zero (or was zero)
                return math.copysign(math.inf, r)
            return 1.0 / r
        return r

    res = context.compile_internal(builder, int_power, sig, args)
    return impl_ret_untracked(context, builder, sig.return_type, res)


for _op in (operator.pow, operator.ipow, pow):
    registry.lower(_op, types.Integer, types.Integer)(_power_impl)
    for _ty in sorted(types.signed_domain | types.unsigned_domain, key=str):
        registry.lower(_op, types.Float, _ty)(_power_impl)


def _fmod(builder, a, b):
    fty = a.type
    name = "__nv_fmodf" if isinstance(fty, ir.FloatType) else "__nv_fmod"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(fty, [fty, fty]), name)
    return builder.call(fn, [a, b])


class _ExactRemainderBuilder(ir.IRBuilder):
    """An IR builder whose ``frem`` is libdevice's exact ``fmod`` (module docstring), so that
    numba-cuda's ``real_divmod_func_body`` (CPython's ``float_divmod``) runs unchanged on it."""

    def frem(self, lhs, rhs, name="", flags=()):
        return _fmod(self, lhs, rhs)


def _exact_divmod(context, builder, x, y):
    """``(floor quotient, remainder)`` of two floats of one type, by numba-cuda's
    ``real_divmod`` with an exact remainder, in a subroutine of numba_tile's own name."""
    from numba.cuda.cpython import numbers
    floatty = x.type
    fname = context.fndesc.call_conv.mangler(".numba_tile.python.rem", [floatty])
    fnty = ir.FunctionType(floatty, (floatty, floatty, ir.PointerType(floatty)))
    fn = cgutils.get_or_insert_function(builder.module, fnty, fname)
    if fn.is_declaration:
        fn.linkage = "linkonce_odr"
        fnbuilder = _ExactRemainderBuilder(fn.append_basic_block("entry"))
        fx, fy, pmod = fn.args
        div, mod = numbers.real_divmod_func_body(context, fnbuilder, fx, fy)
        fnbuilder.store(mod, pmod)
        fnbuilder.ret(div)
    pmod = cgutils.alloca_once(builder, floatty)
    quotient = builder.call(fn, (x, y, pmod))
    return quotient, builder.load(pmod)


def _float_division(which):
    """Float ``//`` (``which`` "floordiv"), ``%`` ("mod") and ``divmod`` ("divmod") with an
    exact remainder (module docstring); a zero divisor gives ``x / 0`` and ``fmod(x, 0)``
    (NaN), as numba-cuda's NumPy error model does."""
    def impl(context, builder, sig, args, loc=None):
        from numba.cuda.cpython import numbers
        if not _own_code():
            return getattr(numbers, f"real_{which}_impl")(context, builder, sig, args, loc)
        x, y = args
        quot = cgutils.alloca_once(builder, x.type)
        rem = cgutils.alloca_once(builder, x.type)
        with builder.if_else(cgutils.is_scalar_zero(builder, y), likely=False) as (zero, other):
            with zero:
                what = "modulo by zero" if which != "floordiv" else "division by zero"
                if not context.error_model.fp_zero_division(builder, (what,), loc):
                    builder.store(builder.fdiv(x, y), quot)
                    builder.store(_fmod(builder, x, y), rem)
            with other:
                q, r = _exact_divmod(context, builder, x, y)
                builder.store(q, quot)
                builder.store(r, rem)
        q, r = builder.load(quot), builder.load(rem)
        if which == "divmod":
            return cgutils.pack_array(builder, (q, r))
        return impl_ret_untracked(context, builder, sig.return_type,
                                  q if which == "floordiv" else r)
    return impl


for _op, _which in ((operator.floordiv, "floordiv"), (operator.ifloordiv, "floordiv"),
                    (operator.mod, "mod"), (operator.imod, "mod"), (divmod, "divmod")):
    for _ty in (types.float32, types.float64):
        registry.lower(_op, _ty, _ty)(_float_division(_which))


def _opaque(builder, value):
    """``value`` through an empty inline-assembly copy: what LLVM and ptxas cannot see
    through, so no narrowing is folded across it."""
    width = value.type.width
    letter = {16: "h", 32: "r", 64: "l"}[width]
    fn = ir.InlineAsm(ir.FunctionType(value.type, [value.type]), f"mov.b{width} $0, $1;",
                      f"={letter},{letter}")
    return builder.call(fn, [value])


@registry.lower(operator.neg, types.Integer)
def _negate_impl(context, builder, sig, args):
    """``-a`` of an integer: numba-cuda's ``int_negate_impl`` (negate in the operand's type,
    then convert), computed so that ptxas keeps the wrap (module docstring)."""
    from numba.cuda.cpython import numbers
    [ty], ret = sig.args, sig.return_type
    if not (_own_code() and isinstance(ret, types.Integer) and ty.bitwidth < ret.bitwidth
            and ret.bitwidth in (32, 64)):
        return numbers.int_negate_impl(context, builder, sig, args)
    wide = context.cast(builder, args[0], ty, ret)
    negated = _opaque(builder, builder.neg(wide))
    narrow = builder.trunc(negated, ir.IntType(ty.bitwidth))
    res = context.cast(builder, narrow, ty, ret)
    return impl_ret_untracked(context, builder, ret, res)


def _minmax_impl(which):
    """``min``/``max`` of two floats by numba-cuda's ``do_minmax`` (module docstring)."""
    def impl(context, builder, sig, args):
        from numba.cuda import cudaimpl
        from numba.cuda.cpython import builtins
        if not _own_code():
            f32 = all(t == types.float32 for t in sig.args)
            return getattr(cudaimpl, f"ptx_{which}_{'f4' if f32 else 'f8'}")(
                context, builder, sig, args)
        cmp = operator.lt if which == "min" else operator.gt
        res = builtins.do_minmax(context, builder, list(sig.args), list(args), cmp)
        unified = context.typing_context.unify_types(*sig.args)
        return impl_ret_untracked(context, builder, sig.return_type,
                                  context.cast(builder, res, unified, sig.return_type))
    return impl


for _fn, _which in ((min, "min"), (max, "max")):
    for _ta in (types.float32, types.float64):
        for _tb in (types.float32, types.float64):
            registry.lower(_fn, _ta, _tb)(_minmax_impl(_which))


def _llrint_or_zero(builder, x):
    """libdevice's ``__nv_llrint`` of a float64 (to nearest even, saturated to int64), 0 for
    NaN (module docstring)."""
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.IntType(64), (ir.DoubleType(),)), "__nv_llrint")
    r = builder.call(fn, [x])
    return builder.select(builder.fcmp_unordered("uno", x, x), ir.Constant(r.type, 0), r)


@registry.lower(round, types.float32)
@registry.lower(round, types.float64)
def _round_impl(context, builder, sig, args):
    """``round(x)``: numba-cuda's ``ptx_round`` with NaN to 0 (module docstring)."""
    from numba.cuda import cudaimpl
    if not _own_code():
        return cudaimpl.ptx_round(context, builder, sig, args)
    x = context.cast(builder, args[0], sig.args[0], types.float64)
    return context.cast(builder, _llrint_or_zero(builder, x), types.int64, sig.return_type)


@registry.lower(round, types.float32, types.Integer)
@registry.lower(round, types.float64, types.Integer)
def _round_to_impl(context, builder, sig, args):
    """``round(x, n)``: numba-cuda's ``round_to_impl`` (CPython's fallback ``double_round``),
    where a NaN scaled value rounds to 0 (module docstring)."""
    import math

    from numba.cuda import cudaimpl
    if not _own_code():
        return cudaimpl.round_to_impl(context, builder, sig, args)

    def round_ndigits(x, ndigits):
        if math.isinf(x) or math.isnan(x):
            return x
        if ndigits >= 0:
            if ndigits > 22:
                pow1 = 10.0 ** (ndigits - 22)
                pow2 = 1e22
            else:
                pow1 = 10.0 ** ndigits
                pow2 = 1.0
            y = (x * pow1) * pow2
            if math.isinf(y):
                return x
        else:
            pow1 = 10.0 ** (-ndigits)
            y = x / pow1
        z = round(y) if y == y else 0
        if math.fabs(y - z) == 0.5:
            z = 2.0 * round(y / 2.0)
        if ndigits >= 0:
            z = (z / pow2) / pow1
        else:
            z *= pow1
        return z

    return context.compile_internal(builder, round_ndigits, sig, args)


@registry.lower_constant(types.float16)
def float16_constant(context, builder, ty, pyval):
    """A float16 constant (a Constant parameter ``np.float16(2.0)``, or an item of a tuple
    Constant): its bits as numba-cuda's ``i16`` value of a float16. numba-cuda's own
    (``numbers.constant_integer``) writes ``i16 2.0``, which libNVVM refuses
    (``ERROR_INVALID_IR``)."""
    import numpy as np
    if not _own_code():
        from numba.cuda.cpython import numbers
        return numbers.constant_integer(context, builder, ty, pyval)
    with np.errstate(all="ignore"):
        bits = int(np.asarray(pyval, dtype=np.float16).view(np.uint16))
    return ir.Constant(context.get_value_type(ty), bits)


# ---- float16 scalars -------------------------------------------------------------------------
# numba-cuda implements float16 scalar arithmetic, comparisons and math functions as calls into
# CUDA C++ (cuda_fp16.h, compiled and linked at link time); numba_tile links PTX only, so in its
# code they are computed here: in float32, then rounded to float16. For + - * / this is the
# correctly rounded float16 result (float32 holds more than 2 x 11 + 2 bits: the double
# rounding is innocuous), which is NumPy's. numba-cuda's float16 math functions (math.exp(h),
# an @overload calling cuda_fp16's hexp) are refused on both paths (typing/linked.py).

_HALF, _F32, _I16 = ir.HalfType(), ir.FloatType(), ir.IntType(16)


def _widen_half(builder, bits):
    return builder.fpext(builder.bitcast(bits, _HALF), _F32)


def _narrow_half(builder, value):
    return builder.bitcast(builder.fptrunc(value, _HALF), _I16)


def _half_arith(fallback_name, fn):
    """``a op b`` of two float16 scalars (section comment above)."""
    def impl(context, builder, sig, args):
        theirs = _numba_cuda_half(fallback_name, sig)
        if theirs is not None:
            return theirs(context, builder, sig, args)
        a, b = (_widen_half(builder, v) for v in args)
        return impl_ret_untracked(context, builder, sig.return_type,
                                  _narrow_half(builder, fn(builder, a, b)))
    return impl


def _half_compare(fallback_name, pred):
    def impl(context, builder, sig, args):
        theirs = _numba_cuda_half(fallback_name, sig)
        if theirs is not None:
            return theirs(context, builder, sig, args)
        a, b = (_widen_half(builder, v) for v in args)
        res = (builder.fcmp_unordered(pred, a, b) if pred == "!="
               else builder.fcmp_ordered(pred, a, b))
        return impl_ret_untracked(context, builder, sig.return_type, res)
    return impl


def _half_bits(fallback_name, mask=None, flip=None):
    """``-a``, ``+a``, ``abs(a)``: on the bits (the sign bit flipped,
    kept or cleared), as NumPy's float16 does, NaN's payload included."""
    def impl(context, builder, sig, args):
        theirs = _numba_cuda_half(fallback_name, sig)
        if theirs is not None:
            return theirs(context, builder, sig, args)
        v = args[0]
        if mask is not None:
            v = builder.and_(v, ir.Constant(_I16, mask))
        if flip is not None:
            v = builder.xor(v, ir.Constant(_I16, flip))
        return impl_ret_untracked(context, builder, sig.return_type, v)
    return impl


def _numba_cuda_half(key, sig):
    """numba-cuda's own implementation of ``key`` for ``sig`` (the one registered before
    this module's registry) where numba-cuda code is compiling, else None: numba_tile's code,
    or a signature numba-cuda has no implementation of (numba_tile's then serves, correct in
    either)."""
    return None if _own_code() else _HALF_FALLBACKS.get((key, sig.args))


_HALF_FALLBACKS: dict = {}
_H2 = (types.float16, types.float16)
_HALF_IMPLS = [
    *[(op, _H2, _half_arith(op, fn)) for op, fn in (
        (operator.add, lambda b, x, y: b.fadd(x, y)), (operator.iadd, lambda b, x, y: b.fadd(x, y)),
        (operator.sub, lambda b, x, y: b.fsub(x, y)), (operator.isub, lambda b, x, y: b.fsub(x, y)),
        (operator.mul, lambda b, x, y: b.fmul(x, y)), (operator.imul, lambda b, x, y: b.fmul(x, y)),
        (operator.truediv, lambda b, x, y: b.fdiv(x, y)),
        (operator.itruediv, lambda b, x, y: b.fdiv(x, y)))],
    *[(op, _H2, _half_compare(op, pred)) for op, pred in (
        (operator.eq, "=="), (operator.ne, "!="), (operator.lt, "<"), (operator.le, "<="),
        (operator.gt, ">"), (operator.ge, ">="))],
    (operator.neg, (types.float16,), _half_bits(operator.neg, flip=0x8000)),
    (operator.pos, (types.float16,), _half_bits(operator.pos)),
    (abs, (types.float16,), _half_bits(abs, mask=0x7FFF)),
]


def _half_truth(context, builder, sig, args):
    """``bool(a)`` / ``if a:`` of a float16: nonzero bits other than the sign (NaN is true,
    as Python's). numba-cuda's own compares the ``i16`` bits as a float (invalid IR)."""
    theirs = _numba_cuda_half(bool, sig)
    if theirs is not None:
        return theirs(context, builder, sig, args)
    return builder.icmp_unsigned("!=", builder.and_(args[0], ir.Constant(_I16, 0x7FFF)),
                                 ir.Constant(_I16, 0))


_HALF_IMPLS.append((bool, (types.float16,), _half_truth))
for _key, _args, _impl in _HALF_IMPLS:
    registry.lower(_key, *_args)(_impl)


def _tuple_getitem(context, builder, sig, args):
    """``t[i]`` of a homogeneous tuple of scalars at a run-time index: numba-cuda's switch over
    the items
    (negative indices from the end), where an index outside gives the item type's zero
    instead of raising IndexError (which on the GPU ends the thread silently, while the
    interpreter raised): the interpreter gives that zero too (``interpreter/typed_ir.py``), as
    a scalar read outside an array gives 0."""
    from numba.cuda.cpython import tupleobj
    tupty, _ = sig.args
    if not (_own_code() and len(tupty) and isinstance(
            tupty.dtype, (types.Integer, types.Float, types.Boolean))):
        return tupleobj.getitem_unituple(context, builder, sig, args)
    tup, idx = args
    lrtty = context.get_value_type(tupty.dtype)
    bbelse = builder.append_basic_block("tuple_index.outside")
    bbend = builder.append_basic_block("tuple_index.end")
    switch = builder.switch(idx, bbelse)
    with builder.goto_block(bbend):
        phi = builder.phi(lrtty)
    with builder.goto_block(bbelse):
        builder.branch(bbend)
        phi.add_incoming(context.get_constant_null(tupty.dtype), bbelse)
    for i in range(tupty.count):
        block = builder.append_basic_block(f"tuple_index.{i}")
        switch.add_case(context.get_constant(types.intp, i), block)
        switch.add_case(context.get_constant(types.intp, -tupty.count + i), block)
        with builder.goto_block(block):
            value = builder.extract_value(tup, i)
            builder.branch(bbend)
            phi.add_incoming(value, block)
    builder.position_at_end(bbend)
    return impl_ret_untracked(context, builder, sig.return_type, phi)


for _tup in (types.UniTuple, types.NamedUniTuple):
    for _idx in (types.intp, types.uintp):
        registry.lower(operator.getitem, _tup, _idx)(_tuple_getitem)


class _ModeKeyedCache(dict):
    """numba-cuda's cache of compiled internal subroutines (``BaseContext.compile_subroutine``:
    ``round(x, n)``, integer powers...), its keys told apart by whether numba_tile's code is
    compiling (``compiler_context.in_own_code``). The implementations lower differently in
    the two modes (this module's rules apply to numba_tile's code only), and the cache's own
    key (the implementation's code, its signature, the error model's class) does not say
    which: without the mode, whichever side compiled a subroutine first would fix its
    lowering for the other, and for numba_tile's disk cache."""

    @staticmethod
    def _mode(key):
        return (_own_code(), key)

    def get(self, key, default=None):
        return dict.get(self, self._mode(key), default)

    def __getitem__(self, key):
        return dict.__getitem__(self, self._mode(key))

    def __setitem__(self, key, value):
        dict.__setitem__(self, self._mode(key), value)

    def __contains__(self, key):
        return dict.__contains__(self, self._mode(key))


def install(targetctx) -> None:
    """Install the registry on numba-cuda's target context ``targetctx``, once, after the
    context's own registries (so these implementations are the ones chosen), and key its
    subroutine cache by mode (:class:`_ModeKeyedCache`; the subtargets a compile makes share
    it). Call it with numba-cuda's target selected (``utils.numba_target_override``), as a
    compile does: the context's first refresh loads the registries that target's way."""
    if id(targetctx) in _installed:
        return
    targetctx.refresh()                 # its own registries first
    for key, args, _ in _HALF_IMPLS:    # numba-cuda's float16 implementations, for its code
        try:
            _HALF_FALLBACKS[(key, args)] = targetctx._defns[key].find(args)
        except Exception:  # noqa: BLE001 - none registered: numba-cuda's typing refuses it
            pass
    targetctx.install_registry(registry)
    cache = _ModeKeyedCache()
    # what was compiled before was compiled outside numba_tile's code: plain mode
    for key, value in dict(targetctx.cached_internal_func).items():
        dict.__setitem__(cache, (False, key), value)
    targetctx.cached_internal_func = cache
    _installed.add(id(targetctx))
