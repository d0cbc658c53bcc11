"""Lowering of the tile constructors: every thread fills its own fragment."""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import types

from .._registry import lowering_rule
from ..layout import BlockedLayout
from .common import chunk_coords, constant_element, make_fragment, scalar_to


@lowering_rule("full")
def lower_full(context, builder, sig, args):
    _shape, valty, _dt = sig.args
    res = sig.return_type
    if isinstance(valty, types.Omitted):
        e = constant_element(context, builder, valty.value, res.dtype)
    else:
        e = scalar_to(context, builder, args[1], valty, res.dtype)
    return make_fragment(builder, res, [e] * res.layout.elems_per_thread)


@lowering_rule("zeros")
def lower_zeros(context, builder, sig, args):
    res = sig.return_type
    e = constant_element(context, builder, 0, res.dtype)
    return make_fragment(builder, res, [e] * res.layout.elems_per_thread)


@lowering_rule("arange")
def lower_arange(context, builder, sig, args):
    res = sig.return_type
    layout = res.layout
    if not isinstance(layout, BlockedLayout):
        # placed beside an accumulator (typing/placement.place_index_tiles): each slot's
        # coordinate
        from .layouts import dst_slots
        return make_fragment(builder, res, [builder.trunc(coords[0], ir.IntType(32))
                                            for coords, _lin in dst_slots(builder, layout)])
    out = []
    for rep in range(layout.reps):
        (start,) = chunk_coords(builder, layout, rep)
        start = builder.trunc(start, ir.IntType(32))
        for v in range(layout.vec):
            out.append(builder.add(start, ir.Constant(ir.IntType(32), v)))
    return make_fragment(builder, res, out)
