"""Lowering of the elementwise ops: every op is per-thread register arithmetic.

Each thread applies the op to the ``elems_per_thread`` elements of its fragment; no
data moves between threads. Scalar semantics are Numba's own (``context.get_function``
on the compute type), so integer division, modulo and casts follow Python/NumPy.
Math functions call libdevice (``__nv_expf``, ``__nv_exp``, ...).
"""

from __future__ import annotations

import math
import operator

from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.typing.templates import signature

from .. import dtypes
from .._registry import OPS, lowering_rule
from ..language import MATH_FUNCTIONS, MATH_FUNCTIONS2, PREDICATES
from ..typing.elementwise import ARITHMETIC, BITWISE, COMPARISON, SHIFTS
from ..typing.types import TileType
from ..layout import SliceLayout
from numba.cuda.cudaimpl import registry as cudaimpl_registry

from .common import (broadcast_extents, const_i64, convert, convert_elements, fragment_elements, from_compute, make_fragment,
                     result_extents, scalar_to, tile_extents, to_compute, valid_bits)
from ..layout import local_slots, same_distribution
from .layouts import convert_layout, dst_slots, linear_of, remap


class Operand:
    """A tile or scalar operand, read element by element as dtype ``dt`` in ``layout``.

    A tile in another layout moves first: not at all when it is a reduction's slice of
    ``layout`` (or the same elements under added leading axes), else through shared memory
    (a conversion, or a broadcast when its shape is smaller than ``shape``).
    """

    def __init__(self, context, builder, ty, value, dt, layout=None, shape=None):
        self.context, self.builder, self.ty, self.value, self.dt = context, builder, ty, value, dt
        self._valid = None
        if isinstance(ty, TileType):
            self.layout = ty.layout if layout is None else layout
            self.shape = ty.shape if shape is None else tuple(shape)
            self.count = ty.layout.elems_per_thread
            self._elems = fragment_elements(builder, value, self.count)
            if layout is not None and layout != ty.layout:
                self._elems = move(builder, ty, self._elems, layout,
                                   ty.shape if shape is None else shape)
        else:
            self._scalar = scalar_to(context, builder, value, ty, dt)

    def element(self, i):
        """Element ``i`` as a register element of ``dt``."""
        if isinstance(self.ty, TileType):
            return convert(self.context, self.builder, self._elems[i], self.ty.dtype, self.dt)
        return self._scalar

    def compute(self, i):
        """Element ``i`` as a value of ``compute_type(dt)``."""
        return to_compute(self.context, self.builder, self.element(i), self.dt)

    def valid(self, i):
        """i1: element ``i`` is valid (None when every element is: not a masked tile)."""
        if not (isinstance(self.ty, TileType) and self.ty.masked):
            return None
        if self._valid is None:
            ext = broadcast_extents(self.builder, self.ty, self.value, self.shape)
            self._valid = (ext, [c for c, _lin in dst_slots(self.builder, self.layout)])
        ext, coords = self._valid
        return valid_bits(self.builder, coords[i], ext)


def move(builder, ty, elems, layout, shape):
    """Register elements of tile ``ty`` -> the elements of ``layout`` (of ``shape``, which
    ``ty.shape`` broadcasts to)."""
    if ty.shape == tuple(shape):
        return convert_layout(builder, ty.dtype, ty.layout, elems, layout)
    if isinstance(ty.layout, SliceLayout) and ty.layout.parent == layout:
        return list(elems)
    if math.prod(ty.shape) == math.prod(shape) and same_distribution(ty.layout, layout):
        return list(elems)               # only axes of extent 1 added in front
    local = local_slots(ty.layout, layout, broadcast=True)
    if local is not None:                # each thread holds the values it repeats
        return [elems[j] for j in local]
    lead = len(shape) - ty.ndim

    def source(coords, linear):
        src = [const_i64(0) if s == 1 else coords[lead + d] for d, s in enumerate(ty.shape)]
        return linear_of(builder, ty.shape, src)

    return remap(builder, ty.dtype, ty.layout, elems, layout, source)


def _tile_of(*tys):
    return next(t for t in tys if isinstance(t, TileType))


def _operand_dtype(a, b):
    from ..typing.elementwise import operand_dtype
    return operand_dtype(a, b, "")[0]


def _binary_lowering(name, key):
    def lower(context, builder, sig, args):
        aty, bty = sig.args
        res = sig.return_type
        dt = _operand_dtype(aty, bty)
        if name == "truediv":
            dt = dtypes.true_divide_dtype(dt)
        ct = dtypes.compute_type(dt)
        a = Operand(context, builder, aty, args[0], dt, res.layout, res.shape)
        b = Operand(context, builder, bty, args[1], dt, res.layout, res.shape)
        rct = types.boolean if name in COMPARISON else ct
        impl = _shift_impl(name, dtypes.is_unsigned(ct)) if name in SHIFTS else \
            context.get_function(key, signature(rct, ct, ct))
        out = []
        for i in range(res.layout.elems_per_thread):
            v = impl(builder, (a.compute(i), b.compute(i)))
            out.append(v if name in COMPARISON else from_compute(context, builder, v, res.dtype))
        return make_fragment(builder, res, out,
                             result_extents(builder, zip(sig.args, args), res))

    return lower


def _shift_impl(name, unsigned):
    """``a << b`` / ``a >> b`` of integers with NumPy's results for every count
    (``typing/elementwise.SHIFTS``): LLVM's ``shl``/``ashr``/``lshr`` are poison for a count
    outside ``[0, bits)``, so the count is compared (unsigned: a negative one fails too) and
    replaced by 0 before the shift, and the result selected. ``>>`` of an unsigned dtype is
    logical (``lshr``, PTX ``shr.u``; 0 past the width), of a signed one arithmetic
    (``ashr``, ``shr.s``; the sign past the width)."""
    def impl(builder, operands):
        a, b = operands
        bits = a.type.width
        inside = builder.icmp_unsigned("<", b, ir.Constant(b.type, bits))
        safe = builder.select(inside, b, ir.Constant(b.type, 0))
        if name == "lshift":
            return builder.select(inside, builder.shl(a, safe), ir.Constant(a.type, 0))
        if unsigned:
            return builder.select(inside, builder.lshr(a, safe), ir.Constant(a.type, 0))
        sign = builder.ashr(a, ir.Constant(a.type, bits - 1))
        return builder.select(inside, builder.ashr(a, safe), sign)
    return impl


def _register_operator(name):
    d = OPS[name]
    key = d.key
    d.lower_types = ((TileType, TileType), (TileType, types.Number), (types.Number, TileType),
                     (TileType, types.Boolean), (types.Boolean, TileType))
    lowering_rule(name)(_binary_lowering(name, key))


for _n in ARITHMETIC + COMPARISON + BITWISE + SHIFTS + ("truediv",):
    _register_operator(_n)


def _unary_lowering(name, key):
    def lower(context, builder, sig, args):
        (aty,) = sig.args
        res = sig.return_type
        if not isinstance(aty, TileType):       # nt.abs(s) of a scalar
            v = context.cast(builder, args[0], aty, res)
            return context.get_function(key, signature(res, res))(builder, (v,))
        ct = dtypes.compute_type(aty.dtype)
        a = Operand(context, builder, aty, args[0], aty.dtype)
        out = []
        for i in range(res.layout.elems_per_thread):
            x = a.compute(i)
            if name == "pos":
                v = x
            elif name == "invert" and dtypes.is_bool(aty.dtype):
                v = builder.xor(x, ir.Constant(x.type, 1))
            else:
                v = context.get_function(key, signature(ct, ct))(builder, (x,))
            out.append(from_compute(context, builder, v, res.dtype))
        return make_fragment(builder, res, out, result_extents(builder, zip(sig.args, args), res))

    return lower


for _n, _k in (("neg", operator.neg), ("pos", operator.pos), ("invert", operator.invert),
               ("builtin_abs", abs), ("abs", abs)):
    OPS[_n].lower_types = ((TileType,),) if _n != "abs" else None
    lowering_rule(_n)(_unary_lowering(_n, _k))


@lowering_rule("where")
def lower_where(context, builder, sig, args):
    cty, xty, yty = sig.args
    res = sig.return_type
    c = Operand(context, builder, cty, args[0], dtypes.bool_, res.layout, res.shape)
    x = Operand(context, builder, xty, args[1], res.dtype, res.layout, res.shape)
    y = Operand(context, builder, yty, args[2], res.dtype, res.layout, res.shape)
    out = [builder.select(c.element(i), x.element(i), y.element(i))
           for i in range(res.layout.elems_per_thread)]
    return make_fragment(builder, res, out, result_extents(builder, zip(sig.args, args), res))


@lowering_rule("filled")
def lower_filled(context, builder, sig, args):
    xty, vty = sig.args
    res = sig.return_type
    elems = fragment_elements(builder, args[0], xty.layout.elems_per_thread)
    if not xty.masked:
        return make_fragment(builder, res, elems)
    v = scalar_to(context, builder, args[1], vty, xty.dtype)
    ext = tile_extents(builder, xty, args[0])
    out = [builder.select(valid_bits(builder, coords, ext), e, v)
           for e, (coords, _lin) in zip(elems, dst_slots(builder, xty.layout))]
    return make_fragment(builder, res, out)


@lowering_rule("astype")
def lower_astype(context, builder, sig, args):
    xty = sig.args[0]
    res = sig.return_type
    x = Operand(context, builder, xty, args[0], xty.dtype)
    out = convert_elements(context, builder, [x.element(i) for i in range(res.layout.elems_per_thread)],
                           xty.dtype, res.dtype)
    return make_fragment(builder, res, out, result_extents(builder, zip(sig.args, args), res))


def _binary_lowering(context, builder, sig, args, combine):
    """A binary elementwise op: ``combine(a, b, dt)`` of each pair of operand elements, in
    the compute type of the result dtype ``dt``, rounded back to ``dt``."""
    xty, yty = sig.args
    res = sig.return_type
    dt = res.dtype
    x = Operand(context, builder, xty, args[0], dt, res.layout, res.shape)
    y = Operand(context, builder, yty, args[1], dt, res.layout, res.shape)
    out = [from_compute(context, builder, combine(builder, x.compute(i), y.compute(i), dt), dt)
           for i in range(res.layout.elems_per_thread)]
    return make_fragment(builder, res, out, result_extents(builder, zip(sig.args, args), res))


def _minmax_lowering(is_min):
    def combine(builder, a, b, dt):
        if dtypes.is_float(dt):
            v = builder.select(builder.fcmp_ordered("<" if is_min else ">", a, b), a, b)
            # NaN propagates, as numpy.minimum / numpy.maximum
            v = builder.select(builder.fcmp_unordered("uno", a, a), a, v)
            return builder.select(builder.fcmp_unordered("uno", b, b), b, v)
        if dtypes.is_bool(dt):
            return builder.and_(a, b) if is_min else builder.or_(a, b)
        cmp = builder.icmp_unsigned if dtypes.is_unsigned(dt) else builder.icmp_signed
        return builder.select(cmp("<" if is_min else ">", a, b), a, b)

    def lower(context, builder, sig, args):
        xty, yty = sig.args
        if not isinstance(xty, TileType) and not isinstance(yty, TileType):
            # two scalars: as one element of a tile of the result's dtype
            res = sig.return_type
            ct = dtypes.compute_type(res)
            a = context.cast(builder, args[0], xty, ct)
            b = context.cast(builder, args[1], yty, ct)
            return context.cast(builder, combine(builder, a, b, res), ct, res)
        return _binary_lowering(context, builder, sig, args, combine)

    return lower


lowering_rule("minimum")(_minmax_lowering(True))
lowering_rule("maximum")(_minmax_lowering(False))


def _mulhi_lowering(unsigned):
    def lower(context, builder, sig, args):
        xty, yty = sig.args
        res = sig.return_type
        dt = res.dtype
        bits = dt.bitwidth
        wide = ir.IntType(2 * bits)
        # unsigned operands: the unsigned product (mulhi and umulhi agree there)
        unsigned_now = unsigned or dtypes.is_unsigned(dt)
        ext = builder.zext if unsigned_now else builder.sext
        x = Operand(context, builder, xty, args[0], dt, res.layout, res.shape)
        y = Operand(context, builder, yty, args[1], dt, res.layout, res.shape)
        out = []
        for i in range(res.layout.elems_per_thread):
            p = builder.mul(ext(x.element(i), wide), ext(y.element(i), wide))
            # the product's upper half (NVPTX selects mul.hi.{s,u}{32,64})
            shifted = builder.lshr(p, ir.Constant(wide, bits)) if unsigned_now \
                else builder.ashr(p, ir.Constant(wide, bits))
            out.append(builder.trunc(shifted, ir.IntType(bits)))
        return make_fragment(builder, res, out, result_extents(builder, zip(sig.args, args), res))

    return lower


lowering_rule("mulhi")(_mulhi_lowering(False))
lowering_rule("umulhi")(_mulhi_lowering(True))


_LOG2E = 1.4426950408889634     # log2(e), rounded to float32 in the IR constant


def _div_full(builder, a, b):
    """``a / b`` in float32 by ``div.full.f32`` (PTX ISA: maximum error 2 ulp for ``|b|`` in
    ``[2**-126, 2**126]``, no branches)."""
    f32 = ir.FloatType()
    asm = ir.InlineAsm(ir.FunctionType(f32, [f32, f32]), "div.full.f32 $0, $1, $2;", "=f,f,f")
    return builder.call(asm, [a, b])


def _libdevice(builder, base, value):
    fty = value.type
    name = f"__nv_{base}f" if isinstance(fty, ir.FloatType) else f"__nv_{base}"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(fty, [fty]), name)
    return builder.call(fn, [value])


def _math_element(builder, base, v):
    """The math function ``base`` (libdevice's name; None: sigmoid) of one value ``v`` in its
    compute type (float or double)."""
    if base is not None:
        return _libdevice(builder, base, v)
    # sigmoid = 1 / (1 + exp(-x))
    one = ir.Constant(v.type, 1.0)
    # NVVM IR predates LLVM's fneg instruction: negate as (-0.0 - v)
    neg = builder.fsub(ir.Constant(v.type, -0.0), v)
    if isinstance(v.type, ir.FloatType):
        # float32, as Triton's tl.sigmoid: exp(-x) as 2**(-x * log2(e)) (ex2.approx: relative
        # error about |x| * 2**-23 where libdevice's expf keeps 2 ulp, at a third of its
        # instructions) and the reciprocal by div.full.f32 (2 ulp, branch-free: an IEEE
        # division's slow-path branch per element kept ptxas from interleaving a thread's
        # elements)
        e = _libdevice(builder, "exp2", builder.fmul(neg, ir.Constant(v.type, _LOG2E)))
        return _div_full(builder, one, builder.fadd(one, e))
    e = _libdevice(builder, "exp", neg)
    return builder.fdiv(one, builder.fadd(one, e))


def _math_lowering(name):
    base = MATH_FUNCTIONS[name][1]

    def lower(context, builder, sig, args):
        (xty,) = sig.args
        res = sig.return_type
        if not isinstance(xty, TileType):
            # a scalar: converted to the result's compute type, computed as a tile's element
            ct = dtypes.compute_type(res)
            v = context.cast(builder, args[0], xty, ct)
            return context.cast(builder, _math_element(builder, base, v), ct, res)
        x = Operand(context, builder, xty, args[0], res.dtype)
        out = [from_compute(context, builder, _math_element(builder, base, x.compute(i)),
                            res.dtype)
               for i in range(res.layout.elems_per_thread)]
        return make_fragment(builder, res, out, result_extents(builder, zip(sig.args, args), res))

    return lower


for _n in MATH_FUNCTIONS:
    lowering_rule(_n)(_math_lowering(_n))


def _math2_lowering(name):
    base = MATH_FUNCTIONS2[name][1]

    def combine(builder, a, b, dt):
        fty = a.type
        if base is None:           # fdiv: div.full.f32 (float64: the IEEE division)
            return _div_full(builder, a, b) if isinstance(fty, ir.FloatType) else \
                builder.fdiv(a, b)
        fname = f"__nv_{base}f" if isinstance(fty, ir.FloatType) else f"__nv_{base}"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(fty, [fty, fty]),
                                            fname)
        return builder.call(fn, [a, b])

    def lower(context, builder, sig, args):
        return _binary_lowering(context, builder, sig, args, combine)

    return lower


for _n in MATH_FUNCTIONS2:
    lowering_rule(_n)(_math2_lowering(_n))


def _predicate_lowering(name):
    def lower(context, builder, sig, args):
        (xty,) = sig.args
        res = sig.return_type
        x = Operand(context, builder, xty, args[0], xty.dtype)
        out = []
        for i in range(res.layout.elems_per_thread):
            if not dtypes.is_float(xty.dtype):       # integers and bools: finite, never NaN
                out.append(ir.Constant(ir.IntType(1), int(name == "isfinite")))
                continue
            v = x.compute(i)
            if name == "isnan":
                r = builder.fcmp_unordered("uno", v, v)
            elif name == "isfinite":               # v - v is 0 exactly for a finite v
                r = builder.fcmp_ordered("==", builder.fsub(v, v), ir.Constant(v.type, 0.0))
            else:                                  # isinf: neither NaN nor finite
                r = builder.and_(builder.fcmp_ordered("==", v, v),
                                 builder.fcmp_unordered("uno", builder.fsub(v, v),
                                                        builder.fsub(v, v)))
            out.append(r)
        return make_fragment(builder, res, out, result_extents(builder, zip(sig.args, args), res))

    return lower


for _n in PREDICATES:
    lowering_rule(_n)(_predicate_lowering(_n))


@cudaimpl_registry.lower_cast(TileType, TileType)
def cast_tile(context, builder, fromty, toty, val):
    """A tile into another layout (a variable assigned in two layouts; an op that takes
    blocked tiles), through shared memory unless the distributions coincide; or (unchecked
    ops) without its valid extents."""
    elems = fragment_elements(builder, val, fromty.layout.elems_per_thread)
    if fromty.layout != toty.layout:
        elems = convert_layout(builder, fromty.dtype, fromty.layout, elems, toty.layout)
    extents = tile_extents(builder, fromty, val) if toty.masked else None
    return make_fragment(builder, toty, elems, extents)
