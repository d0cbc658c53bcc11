"""Lowering of the shape ops: a rearrangement of a tile's elements between threads.

``reshape`` (and ``expand_dims``) keep every element's row-major index: when the two
register layouts distribute row-major indices identically no data moves, otherwise the
elements go through shared memory. ``broadcast_to`` and ``permute`` read, for each
destination element, the source element its coordinates map to
(:func:`numba_tile.lowering.layouts.remap`).
"""

from __future__ import annotations

from .._registry import lowering_rule
from .common import (broadcast_extents, const_i64, fragment_elements, make_fragment,
                     tile_extents, to_compute)
from ..layout import local_slots, same_distribution
from .layouts import convert_layout, linear_of, remap, stage


def _elems(builder, ty, value):
    return fragment_elements(builder, value, ty.layout.elems_per_thread)


def _unit_axes_extents(builder, xty, x, res):
    """Extents of a masked tile after axes of extent 1 are added or dropped (the typing
    allows no other reshape of a masked tile): the other axes keep theirs in order, all
    become 0 when a dropped axis had no valid element."""
    if not res.masked:
        return None
    ext = tile_extents(builder, xty, x)
    big = [e for s, e in zip(xty.shape, ext) if s != 1]
    empty = None
    for s, e in zip(xty.shape, ext):
        if s == 1:
            z = builder.icmp_unsigned("==", e, const_i64(0))
            empty = z if empty is None else builder.or_(empty, z)
    out, k = [], 0
    for s in res.shape:
        e = const_i64(1) if s == 1 else big[k]
        k += s != 1
        out.append(e if empty is None else builder.select(empty, const_i64(0), e))
    return out


def _same_linear(context, builder, sig, args):
    (xty, *_rest) = sig.args
    res = sig.return_type
    elems = _elems(builder, xty, args[0])
    extents = _unit_axes_extents(builder, xty, args[0], res)
    if same_distribution(xty.layout, res.layout):
        return make_fragment(builder, res, elems, extents)
    local = local_slots(xty.layout, res.layout)
    if local is not None:
        return make_fragment(builder, res, [elems[j] for j in local], extents)
    return make_fragment(builder, res, remap(builder, xty.dtype, xty.layout, elems, res.layout,
                                             lambda coords, linear: linear), extents)


@lowering_rule("reshape")
def lower_reshape(context, builder, sig, args):
    if getattr(sig, "passthrough", False):
        return _staged_passthrough(builder, sig)
    return _same_linear(context, builder, sig, args)



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
    extents = broadcast_extents(builder, xty, args[0], res.shape) if res.masked else None
    if xty.shape == res.shape:
        return make_fragment(builder, res, convert_layout(builder, xty.dtype, xty.layout, elems,
                                                          res.layout), extents)
    return make_fragment(builder, res, remap(builder, xty.dtype, xty.layout, elems, res.layout,
                                             source), extents)


def _permute(context, builder, sig, args, dims):
    xty = sig.args[0]
    res = sig.return_type

    def source(coords, linear):
        src = [None] * xty.ndim
        for k, d in enumerate(dims):
            src[d] = coords[k]
        return linear_of(builder, xty.shape, src)

    elems = _elems(builder, xty, args[0])
    extents = None
    if res.masked:
        ext = tile_extents(builder, xty, args[0])
        extents = [ext[d] for d in dims]
    return make_fragment(builder, res, remap(builder, xty.dtype, xty.layout, elems, res.layout,
                                             source), extents)


def _staged_passthrough(builder, sig):
    """A reshape or transpose of a staged load whose product reads the slot
    (``typing/pipeline.py``: the slot holds the operand as the product reads it already): a
    placeholder, never read."""
    from .pipeline import _placeholder_tile
    return _placeholder_tile(builder, sig.return_type)


@lowering_rule("permute")
def lower_permute(context, builder, sig, args):
    if getattr(sig, "passthrough", False):
        return _staged_passthrough(builder, sig)
    from ..typing.shape import _static_ints
    dims = _static_ints("permute", "dims", sig.args[1])
    return _permute(context, builder, sig, args, dims)


@lowering_rule("transpose")
def lower_transpose(context, builder, sig, args):
    if getattr(sig, "passthrough", False):
        return _staged_passthrough(builder, sig)
    return _permute(context, builder, sig, args, tuple(range(sig.args[0].ndim))[::-1])


def _subtile(context, builder, sig, args, start):
    xty, res = sig.args[0], sig.return_type

    def source(coords, linear):
        return linear_of(builder, xty.shape,
                         [builder.add(c, const_i64(s0)) if s0 else c
                          for c, s0 in zip(coords, start)])

    extents = None
    if res.masked:
        # the valid box moves with the slice: clamp(extent - start, 0, shape)
        extents = []
        for e, s0, n in zip(tile_extents(builder, xty, args[0]), start, res.shape):
            e = builder.sub(e, const_i64(s0))
            e = builder.select(builder.icmp_signed("<", e, const_i64(0)), const_i64(0), e)
            e = builder.select(builder.icmp_signed(">", e, const_i64(n)), const_i64(n), e)
            extents.append(e)
    return make_fragment(builder, res, remap(builder, xty.dtype, xty.layout,
                                             _elems(builder, xty, args[0]), res.layout, source),
                         extents)


@lowering_rule("subtile")
def lower_subtile(context, builder, sig, args):
    from ..typing.shape import subtile_box
    start, _shape = subtile_box("subtile", sig.args[0], sig.args[1], sig.args[2])
    return _subtile(context, builder, sig, args, start)


@lowering_rule("_getitem_static")
def lower_getitem_static(context, builder, sig, args):
    from numba.cuda.typing.templates import signature

    from ..typing.shape import slices_box, static_index_type, tuple_slice
    from ..typing.types import TileType
    xty, sty, ety, nty = sig.args
    if not isinstance(xty, TileType):           # a tuple's slice
        lo, hi = tuple_slice(xty, sty, ety, nty)
        return context.make_tuple(builder, sig.return_type,
                                  [builder.extract_value(args[0], i) for i in range(lo, hi)])
    start, _shape = slices_box(xty, sty, ety)
    sliced, res = static_index_type(xty, sty, ety, nty)
    res = sig.return_type          # its layout may have been chosen after typing
    value = args[0]
    if sliced.shape != xty.shape:
        value = _subtile(context, builder, signature(sliced, xty), [value], start)
    else:
        sliced = xty               # no slice: the tile as it is, in its layout
    if res.shape != sliced.shape or res.layout != sliced.layout:
        value = _same_linear(context, builder, signature(res, sliced), [value])
    return value


@lowering_rule("_attr_T")
def lower_attr_t(context, builder, sig, args):
    from ..typing.types import TileType
    (xty,) = sig.args
    if isinstance(xty, TileType):
        return lower_transpose(context, builder, sig, args)
    return builder.extract_value(args[0], xty.fields.index("T"))


@lowering_rule("item")
def lower_item(context, builder, sig, args):
    """The owning thread's element, to every thread through shared memory (a replicating
    thread's copy may differ: an atomic's result is the old value only in its owner)."""
    xty = sig.args[0]
    read = stage(builder, xty.dtype, xty.layout, _elems(builder, xty, args[0]))
    return to_compute(context, builder, read(const_i64(0)), xty.dtype)


# ------------------------------------------------------------------- attributes of a tile


def _register_tile_attributes():
    """``t.shape``, ``t.ndim``, ``t.dtype`` (``typing/shape.py``): constants of the tile's
    type, no code."""
    from numba.cuda import types
    from numba.cuda.cudaimpl import registry

    from ..typing.shape import tile_shape_type
    from ..typing.types import TileType

    @registry.lower_getattr(TileType, "shape")
    def tile_shape(context, builder, typ, val):
        return context.make_tuple(builder, tile_shape_type(typ),
                                  [context.get_constant(types.int64, n) for n in typ.shape])

    @registry.lower_getattr(TileType, "ndim")
    def tile_ndim(context, builder, typ, val):
        return context.get_constant(types.int64, typ.ndim)

    @registry.lower_getattr(TileType, "dtype")
    def tile_dtype(context, builder, typ, val):
        return context.get_dummy_value()


_register_tile_attributes()
