"""Lowering of the shape ops: a rearrangement of a tile's elements between threads.

``reshape`` (and ``expand_dims``) keep every element's row-major index: when the two
register layouts distribute row-major indices identically no data moves, otherwise the
elements go through shared memory. ``broadcast_to`` and ``permute`` read, for each
destination element, the source element its coordinates map to
(:func:`numba_tile.lowering.layouts.remap`).
"""

from __future__ import annotations

from .._registry import lowering_rule
from .common import const_i64, fragment_elements, make_fragment
from .layouts import convert_layout, linear_of, remap, same_distribution


def _elems(builder, ty, value):
    return fragment_elements(builder, value, ty.layout.elems_per_thread)


def _same_linear(context, builder, sig, args):
    (xty, *_rest) = sig.args
    res = sig.return_type
    elems = _elems(builder, xty, args[0])
    if same_distribution(xty.layout, res.layout):
        return make_fragment(builder, res, elems)
    return make_fragment(builder, res, remap(builder, xty.dtype, xty.layout, elems, res.layout,
                                             lambda coords, linear: linear))


lowering_rule("reshape")(_same_linear)
lowering_rule("expand_dims")(_same_linear)


@lowering_rule("broadcast_to")
def lower_broadcast_to(context, builder, sig, args):
    xty = sig.args[0]
    res = sig.return_type
    lead = res.ndim - xty.ndim

    def source(coords, linear):
        src = [const_i64(0) if s == 1 else coords[lead + d] for d, s in enumerate(xty.shape)]
        return linear_of(builder, xty.shape, src)

    elems = _elems(builder, xty, args[0])
    if xty.shape == res.shape:
        return make_fragment(builder, res, convert_layout(builder, xty.dtype, xty.layout, elems,
                                                          res.layout))
    return make_fragment(builder, res, remap(builder, xty.dtype, xty.layout, elems, res.layout,
                                             source))


def _permute(context, builder, sig, args, dims):
    xty = sig.args[0]
    res = sig.return_type

    def source(coords, linear):
        src = [None] * xty.ndim
        for k, d in enumerate(dims):
            src[d] = coords[k]
        return linear_of(builder, xty.shape, src)

    elems = _elems(builder, xty, args[0])
    return make_fragment(builder, res, remap(builder, xty.dtype, xty.layout, elems, res.layout,
                                             source))


@lowering_rule("permute")
def lower_permute(context, builder, sig, args):
    from ..typing.shape import _static_ints
    dims = _static_ints("permute", "dims", sig.args[1])
    return _permute(context, builder, sig, args, dims)


@lowering_rule("transpose")
def lower_transpose(context, builder, sig, args):
    return _permute(context, builder, sig, args, tuple(range(sig.args[0].ndim))[::-1])
