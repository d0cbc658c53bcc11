"""Lowering of ``tiles``: a strided loop over the partition's tiles in its declared order.

``getiter`` starts at ``ctaid.x`` and steps by ``nctaid.x`` up to the number of tiles;
``iternext`` yields the coordinates of tile number ``k`` in the partition's order
(:func:`tile_coords`). With one block per tile (a plain partition) that is exactly the
block's own tile (``memory.own_tile_index`` calls the same function). ``idx[d]`` on a
branded index reads one of its coordinates.
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba.cuda import cgutils, nvvmutils, types
from numba.cuda.core.imputils import RefType, impl_ret_untracked, iternext_impl
from numba.cuda.cudaimpl import registry

from .._registry import OPS, lowering_rule
from ..typing.types import (PartitionIndexType, StripIndexType, StripsIterable, StripsIterator,
                            StripTileIndexType, StripTilesIterable, StripTilesIterator,
                            TensorType, TilesIterable, TilesIterator)
from ..layout import SMALL_TILE_ELEMS
from .common import I1, I64, block_index, const_i64
from .tile_order import _divrem, _row_major, tile_coords
from .views import ArrayView, tile_grid


@lowering_rule("tiles")
def lower_tiles(context, builder, sig, args):
    it = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    it.part = args[0]
    if isinstance(sig.return_type, StripTilesIterable):
        it.strip = args[1]
    return it._getvalue()


@lowering_rule("strips")
def lower_strips(context, builder, sig, args):
    it = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    it.part = args[0]
    return it._getvalue()


def _block_strided(context, builder, sig, args, leading_only: bool):
    """The iterator of ``tiles(z)`` or ``strips(z)``: numbers ``bid, bid + nctaid, ...`` below
    the number of tiles (``leading_only``: of strips, the product of the tile grid's leading
    extents)."""
    (iterable_ty,) = sig.args
    iterable = cgutils.create_struct_proxy(iterable_ty)(context, builder, value=args[0])
    ptype = iterable_ty.ptype
    view = ArrayView(context, builder, ptype, iterable.part)
    grid = tile_grid(builder, view, ptype.tile_shape)
    total = ir.Constant(I64, 1)
    for n in (grid[:-1] if leading_only else grid):
        total = builder.mul(total, n)
    it = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    it.part = iterable.part
    nxt = cgutils.alloca_once(builder, I64)
    bid = block_index(builder)
    step = builder.zext(nvvmutils.call_sreg(builder, "nctaid.x"), I64)
    if getattr(iterable_ty, "reverse", False):
        # the block's last number, bid + floor((total - 1 - bid) / step) * step, and down by
        # step to bid; -1 (nothing) where the block has none
        # (total - 1 - bid < total: below 2**32 for tiles of SMALL_TILE_ELEMS or more, so a
        # 32-bit division, as tile_coords': no call to ptxas' 64-bit emulation, C7509)
        has = builder.icmp_signed("<", bid, total)
        small = math.prod(ptype.tile_shape) >= SMALL_TILE_ELEMS
        q, _r = _divrem(builder, builder.sub(builder.sub(total, ir.Constant(I64, 1)), bid),
                        step, small)
        last = builder.add(bid, builder.mul(q, step))
        builder.store(builder.select(has, last, ir.Constant(I64, -1)), nxt)
    else:
        builder.store(bid, nxt)
    it.next = nxt
    it.stop = total
    it.step = step
    return impl_ret_untracked(context, builder, sig.return_type, it._getvalue())


@registry.lower("getiter", StripsIterable)
def getiter_strips(context, builder, sig, args):
    """Strip numbers ``bid, bid + nctaid, ...`` below the number of strips."""
    return _block_strided(context, builder, sig, args, leading_only=True)


def _next_block_strided(context, builder, sig, args, result, index_type, coords_of):
    """``iternext`` of a :func:`_block_strided` iterator: yields an ``index_type`` value (a
    valid index) whose coordinates are ``coords_of(view, number)``, then steps by nctaid."""
    (it_ty,) = sig.args
    it = cgutils.create_struct_proxy(it_ty)(context, builder, value=args[0])
    cur = builder.load(it.next)
    reverse = getattr(it_ty, "reverse", False)
    valid = builder.icmp_signed(">=", cur, ir.Constant(I64, 0)) if reverse else \
        builder.icmp_signed("<", cur, it.stop)
    result.set_valid(valid)
    with builder.if_then(valid):
        ptype = it_ty.ptype
        view = ArrayView(context, builder, ptype, it.part)
        coords = coords_of(view, cur)
        idx = cgutils.create_struct_proxy(index_type)(context, builder)
        idx.coords = context.make_tuple(builder, _coords_type(index_type.ndim), coords)
        idx.valid = ir.Constant(ir.IntType(1), 1)
        result.yield_(idx._getvalue())
        builder.store((builder.sub if reverse else builder.add)(cur, it.step), it.next)


@registry.lower("iternext", StripsIterator)
@iternext_impl(RefType.UNTRACKED)
def iternext_strips(context, builder, sig, args, result):
    ptype = sig.args[0].ptype
    # a strip number is below the tile count, below 2**32 for tiles of SMALL_TILE_ELEMS or
    # more (the launch checks it): 32-bit divisions, no call to ptxas' 64-bit emulation (C7509)
    small = math.prod(ptype.tile_shape) >= SMALL_TILE_ELEMS
    _next_block_strided(
        context, builder, sig, args, result, StripIndexType(ptype.param, ptype.ndim - 1),
        lambda view, cur: _row_major(builder, tile_grid(builder, view, ptype.tile_shape)[:-1],
                                     cur, small))


@registry.lower("getiter", StripTilesIterable)
def getiter_strip_tiles(context, builder, sig, args):
    """The strip's tiles: last coordinate ``0 .. grid[-1] - 1``."""
    (iterable_ty,) = sig.args
    iterable = cgutils.create_struct_proxy(iterable_ty)(context, builder, value=args[0])
    ptype = iterable_ty.ptype
    view = ArrayView(context, builder, ptype, iterable.part)
    it = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    it.part = iterable.part
    it.strip = iterable.strip
    nxt = cgutils.alloca_once(builder, I64)
    n = tile_grid(builder, view, ptype.tile_shape)[-1]
    # reverse: from n - 1 down to 0
    builder.store(builder.sub(n, ir.Constant(I64, 1)) if iterable_ty.reverse
                  else ir.Constant(I64, 0), nxt)
    it.next = nxt
    it.stop = n
    return impl_ret_untracked(context, builder, sig.return_type, it._getvalue())


@registry.lower("iternext", StripTilesIterator)
@iternext_impl(RefType.UNTRACKED)
def iternext_strip_tiles(context, builder, sig, args, result):
    (it_ty,) = sig.args
    it = cgutils.create_struct_proxy(it_ty)(context, builder, value=args[0])
    ptype = it_ty.ptype
    sty = StripIndexType(ptype.param, ptype.ndim - 1)
    strip = cgutils.create_struct_proxy(sty)(context, builder, value=it.strip)
    cur = builder.load(it.next)
    valid = builder.icmp_signed(">=", cur, ir.Constant(I64, 0)) if it_ty.reverse else \
        builder.icmp_signed("<", cur, it.stop)
    result.set_valid(valid)
    with builder.if_then(valid):
        lead = cgutils.unpack_tuple(builder, strip.coords, ptype.ndim - 1)
        idx = cgutils.create_struct_proxy(StripTileIndexType(ptype.param, ptype.ndim))(
            context, builder)
        idx.coords = context.make_tuple(builder, _coords_type(ptype.ndim), list(lead) + [cur])
        # a strip variable no strips() loop assigned is not valid: nor are its tiles
        idx.valid = strip.valid
        result.yield_(idx._getvalue())
        builder.store(builder.add(cur, ir.Constant(I64, -1 if it_ty.reverse else 1)), it.next)


@registry.lower("getiter", TilesIterable)
def getiter_tiles(context, builder, sig, args):
    return _block_strided(context, builder, sig, args, leading_only=False)


@registry.lower("iternext", TilesIterator)
@iternext_impl(RefType.UNTRACKED)
def iternext_tiles(context, builder, sig, args, result):
    ptype = sig.args[0].ptype
    small = math.prod(ptype.tile_shape) >= SMALL_TILE_ELEMS
    _next_block_strided(
        context, builder, sig, args, result, PartitionIndexType(ptype.param, ptype.ndim),
        lambda view, cur: tile_coords(builder, view, ptype.tile_shape, ptype.order, cur, small))


def _coords_type(ndim):
    from numba.cuda import types
    return types.UniTuple(types.int64, ndim)


@lowering_rule("num_tiles")
def lower_num_tiles(context, builder, sig, args):
    from ..typing.common import literal_int, static_shape
    from numba.cuda import types
    xty, axty, tty = sig.args
    axis = axty.value if isinstance(axty, types.Omitted) else literal_int(axty)
    (tile,) = static_shape(tty, "num_tiles", "tile")
    view = ArrayView(context, builder, xty, args[0])
    return tile_grid(builder, view, (1,) * axis + (tile,) + (1,) * (xty.ndim - axis - 1))[axis]


OPS["index_getitem"].lower_types = ((PartitionIndexType, types.Integer),
                                     (TensorType, types.Integer), (TensorType, types.BaseTuple))


@lowering_rule("index_getitem")
def lower_index_getitem(context, builder, sig, args):
    """``idx[d]``: coordinate ``d`` of a branded index (int64); -1 for an index variable no
    ``tiles()`` loop assigned (its validity flag is clear), as loads and stores see it.
    ``x[i]`` on a tensor: ``memory.lower_tensor_element``."""
    from ..typing.common import literal_int
    if isinstance(sig.args[0], TensorType):
        from .memory import lower_tensor_element
        return lower_tensor_element(context, builder, sig, args)
    ity, dty = sig.args
    d = literal_int(dty)
    d = d + ity.ndim if d < 0 else d
    idx = cgutils.create_struct_proxy(ity)(context, builder, value=args[0])
    coord = cgutils.unpack_tuple(builder, idx.coords, ity.ndim)[d]
    valid = builder.trunc(idx.valid, I1) if idx.valid.type != I1 else idx.valid
    return builder.select(valid, coord, const_i64(-1))
