"""Lowering of the reductions: sum, prod, max, min along one axis.

This first version stages the tile in shared memory (:func:`layouts.stage`) and lets each
thread reduce, for each element of the result it holds, the ``S[axis]`` source elements in
a loop, accumulating in the compute type (float32 for 16-bit floats). It is exact in its
NaN and accumulation rules but serial along the axis; the warp-shuffle tree (registers,
then shuffles within a warp, then shared memory across warps) replaces it for speed.
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba.cuda import cgutils, types

from .. import dtypes
from .._registry import lowering_rule
from ..typing.reduction import keepdims_value, reduction_axis
from .common import I1, const_i64, convert, fragment_elements, from_compute, make_fragment, to_compute
from .layouts import dst_slots, linear_of, stage


def _identity(name, ct):
    lt = ct
    if isinstance(lt, (ir.FloatType, ir.DoubleType)):
        return ir.Constant(lt, {"sum": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[name])
    if lt.width == 1:                      # bool max/min
        return ir.Constant(lt, 0 if name == "max" else 1)
    bits = lt.width
    return ir.Constant(lt, {"sum": 0, "prod": 1, "max": -(1 << (bits - 1)),
                            "min": (1 << (bits - 1)) - 1}[name])


def _combine(builder, name, acc, v):
    is_float = isinstance(acc.type, (ir.FloatType, ir.DoubleType))
    if name == "sum":
        return builder.fadd(acc, v) if is_float else builder.add(acc, v)
    if name == "prod":
        return builder.fmul(acc, v) if is_float else builder.mul(acc, v)
    if is_float:
        better = builder.fcmp_ordered(">" if name == "max" else "<", v, acc)
        r = builder.select(better, v, acc)
        return builder.select(builder.fcmp_unordered("uno", v, v), v, r)   # NaN propagates
    if acc.type.width == 1:
        return builder.or_(acc, v) if name == "max" else builder.and_(acc, v)
    better = builder.icmp_signed(">" if name == "max" else "<", v, acc)
    return builder.select(better, v, acc)


def _lowering(name):
    def lower(context, builder, sig, args):
        xty, axty, kty, _dty = sig.args
        res = sig.return_type
        axis = reduction_axis(name, xty, axty)
        keep = keepdims_value(name, kty)
        read = stage(builder, xty.dtype, xty.layout, fragment_elements(
            builder, args[0], xty.layout.elems_per_thread))
        ct = dtypes.compute_type(res.dtype)
        ct_ll = context.get_value_type(ct) if ct != types.boolean else I1
        stride = math.prod(xty.shape[axis + 1:])
        out = []
        for coords, _linear in dst_slots(builder, res.layout):
            if keep:
                src = list(coords)
                src[axis] = const_i64(0)
            elif len(res.shape) == len(xty.shape) - 1:
                src = list(coords[:axis]) + [const_i64(0)] + list(coords[axis:])
            else:                          # a 1-D tile reduced to shape (1,)
                src = [const_i64(0)]
            base = linear_of(builder, xty.shape, src)
            acc = cgutils.alloca_once_value(builder, _identity(name, ct_ll))
            with cgutils.for_range(builder, const_i64(xty.shape[axis])) as loop:
                lin = builder.add(base, builder.mul(loop.index, const_i64(stride)))
                e = read(lin)
                v = to_compute(context, builder, convert(context, builder, e, xty.dtype, res.dtype)
                               if name in ("sum", "prod") else e,
                               res.dtype)
                builder.store(_combine(builder, name, builder.load(acc), v), acc)
            out.append(from_compute(context, builder, builder.load(acc), res.dtype))
        return make_fragment(builder, res, out)

    return lower


for _n in ("sum", "prod", "max", "min"):
    lowering_rule(_n)(_lowering(_n))


def _arg_lowering(name):
    is_max = name == "argmax"

    def lower(context, builder, sig, args):
        xty, axty, kty = sig.args
        res = sig.return_type
        axis = reduction_axis(name, xty, axty)
        keep = keepdims_value(name, kty)
        read = stage(builder, xty.dtype, xty.layout, fragment_elements(
            builder, args[0], xty.layout.elems_per_thread))
        stride = math.prod(xty.shape[axis + 1:])
        i32 = ir.IntType(32)
        out = []
        for coords, _linear in dst_slots(builder, res.layout):
            if keep:
                src = list(coords)
                src[axis] = const_i64(0)
            elif len(res.shape) == len(xty.shape) - 1:
                src = list(coords[:axis]) + [const_i64(0)] + list(coords[axis:])
            else:
                src = [const_i64(0)]
            base = linear_of(builder, xty.shape, src)
            first = to_compute(context, builder, read(base), xty.dtype)
            best = cgutils.alloca_once_value(builder, first)
            where = cgutils.alloca_once_value(builder, ir.Constant(i32, 0))
            with cgutils.for_range(builder, const_i64(xty.shape[axis]),
                                   start=const_i64(1)) as loop:
                v = to_compute(context, builder,
                               read(builder.add(base, builder.mul(loop.index, const_i64(stride)))),
                               xty.dtype)
                b = builder.load(best)
                if isinstance(v.type, (ir.FloatType, ir.DoubleType)):
                    better = builder.fcmp_ordered(">" if is_max else "<", v, b)
                    # the first NaN wins and then stays (numpy.argmax/argmin)
                    b_nan = builder.fcmp_unordered("uno", b, b)
                    v_nan = builder.fcmp_unordered("uno", v, v)
                    take = builder.and_(builder.not_(b_nan), builder.or_(better, v_nan))
                elif v.type.width == 1:
                    take = builder.and_(v, builder.not_(b)) if is_max else \
                        builder.and_(b, builder.not_(v))
                else:
                    take = builder.icmp_signed(">" if is_max else "<", v, b)
                builder.store(builder.select(take, v, b), best)
                k32 = builder.trunc(loop.index, i32)
                builder.store(builder.select(take, k32, builder.load(where)), where)
            out.append(builder.load(where))
        return make_fragment(builder, res, out)

    return lower


lowering_rule("argmax")(_arg_lowering("argmax"))
lowering_rule("argmin")(_arg_lowering("argmin"))


@lowering_rule("cumsum")
def lower_cumsum(context, builder, sig, args):
    xty, axty, _dty = sig.args
    res = sig.return_type
    axis = reduction_axis("cumsum", xty, axty)
    read = stage(builder, xty.dtype, xty.layout, fragment_elements(
        builder, args[0], xty.layout.elems_per_thread))
    ct = dtypes.compute_type(res.dtype)
    ct_ll = context.get_value_type(ct)
    stride = math.prod(xty.shape[axis + 1:])
    out = []
    for coords, _linear in dst_slots(builder, res.layout):
        src = list(coords)
        upto = builder.add(src[axis], const_i64(1))
        src[axis] = const_i64(0)
        base = linear_of(builder, xty.shape, src)
        acc = cgutils.alloca_once_value(builder, _identity("sum", ct_ll))
        with cgutils.for_range(builder, upto) as loop:
            e = read(builder.add(base, builder.mul(loop.index, const_i64(stride))))
            v = to_compute(context, builder, convert(context, builder, e, xty.dtype, res.dtype),
                           res.dtype)
            builder.store(_combine(builder, "sum", builder.load(acc), v), acc)
        out.append(from_compute(context, builder, builder.load(acc), res.dtype))
    return make_fragment(builder, res, out)
