"""Lowering of ``tiles``: a strided loop over the partition's row-major tile grid.

``getiter`` starts at ``ctaid.x`` and steps by ``nctaid.x`` up to the number of tiles;
``iternext`` yields the tile's coordinates, unravelled over the tile grid. With one block
per tile (a plain partition) that is exactly the block's own tile.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils, nvvmutils
from numba.cuda.core.imputils import RefType, impl_ret_untracked, iternext_impl
from numba.cuda.cudaimpl import registry

from .._registry import lowering_rule
from ..typing.types import PartitionIndexType, TilesIterable, TilesIterator
from .common import I64, block_index
from .memory import ArrayView, tile_grid


@lowering_rule("tiles")
def lower_tiles(context, builder, sig, args):
    it = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    it.part = args[0]
    return it._getvalue()


@registry.lower("getiter", TilesIterable)
def getiter_tiles(context, builder, sig, args):
    (iterable_ty,) = sig.args
    iterable = cgutils.create_struct_proxy(iterable_ty)(context, builder, value=args[0])
    ptype = iterable_ty.ptype
    view = ArrayView(context, builder, ptype, iterable.part)
    total = ir.Constant(I64, 1)
    for n in tile_grid(builder, view, ptype.tile_shape):
        total = builder.mul(total, n)
    it = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    it.part = iterable.part
    nxt = cgutils.alloca_once(builder, I64)
    builder.store(block_index(builder), nxt)
    it.next = nxt
    it.stop = total
    it.step = builder.zext(nvvmutils.call_sreg(builder, "nctaid.x"), I64)
    return impl_ret_untracked(context, builder, sig.return_type, it._getvalue())


@registry.lower("iternext", TilesIterator)
@iternext_impl(RefType.UNTRACKED)
def iternext_tiles(context, builder, sig, args, result):
    (it_ty,) = sig.args
    it = cgutils.create_struct_proxy(it_ty)(context, builder, value=args[0])
    cur = builder.load(it.next)
    valid = builder.icmp_signed("<", cur, it.stop)
    result.set_valid(valid)
    with builder.if_then(valid):
        ptype = it_ty.ptype
        view = ArrayView(context, builder, ptype, it.part)
        grid = tile_grid(builder, view, ptype.tile_shape)
        coords, lin = [], cur
        for n in reversed(grid[1:]):
            coords.append(builder.urem(lin, n))
            lin = builder.udiv(lin, n)
        coords.append(lin)
        idx = cgutils.create_struct_proxy(PartitionIndexType(ptype.param, ptype.ndim))(
            context, builder)
        idx.coords = context.make_tuple(builder, _coords_type(ptype.ndim), list(reversed(coords)))
        idx.valid = ir.Constant(ir.IntType(1), 1)
        result.yield_(idx._getvalue())
        builder.store(builder.add(cur, it.step), it.next)


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
