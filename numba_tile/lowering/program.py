"""Lowering of the program ops: bid, num_blocks.

The launch grid is one-dimensional: block ``ctaid.x`` handles tile number ``ctaid.x`` of
the grid partition (the kernel's first partition parameter) in that partition's order
(row-major unless ``partition(..., order=)`` says otherwise: ``tile_order.tile_coords``), and
``bid(axis)`` is that tile's coordinate along ``axis``. ``bid``/``num_blocks`` read that
parameter's extents from the kernel's own arguments. When the grid partition is mapped
onto a fixed number of blocks, the grid is those blocks: ``bid(0)`` is ``ctaid.x`` and
``num_blocks(0)`` is ``nctaid.x``.
"""

from __future__ import annotations

from .. import compiler_context
from .._registry import lowering_rule
from ..errors import TileTypingError
from numba.cuda import nvvmutils

from .common import I64, block_index
from .memory import own_tile_index
from .views import ArrayView, tile_grid


def _grid_view(context, builder):
    ctx = compiler_context.current()
    fn = builder.function
    fndesc = context.fndesc        # the function being lowered
    if (fndesc.qualname != ctx.kernel_name or tuple(fndesc.argtypes) != tuple(ctx.argtypes)
            or fn.name != fndesc.llvm_func_name):
        raise TileTypingError("bid() and num_blocks() are usable only in the kernel's own body, "
                              "not in a helper function")
    args = fndesc.call_conv.get_arguments(fn)
    values = context.get_arg_packer(ctx.argtypes).from_arguments(builder, args)
    ty = ctx.argtypes[ctx.grid_param]
    return ArrayView(context, builder, ty, values[ctx.grid_param]), ty


def _axis(sig):
    from ..typing.common import literal_int
    from numba.cuda import types
    a = sig.args[0]
    return a.value if isinstance(a, types.Omitted) else literal_int(a)


@lowering_rule("bid")
def lower_bid(context, builder, sig, args):
    ctx = compiler_context.current()
    if ctx.grid_param is None:                    # an explicit grid= of up to three axes
        return builder.zext(nvvmutils.call_sreg(builder, f"ctaid.{'xyz'[_axis(sig)]}"), I64)
    if ctx.argtypes[ctx.grid_param].mapped:
        return block_index(builder)               # a mapped partition's 1-D grid
    view, ty = _grid_view(context, builder)
    return own_tile_index(builder, view, ty.tile_shape)[_axis(sig)]


@lowering_rule("num_blocks")
def lower_num_blocks(context, builder, sig, args):
    ctx = compiler_context.current()
    if ctx.grid_param is None:                    # an explicit grid= of up to three axes
        return builder.zext(nvvmutils.call_sreg(builder, f"nctaid.{'xyz'[_axis(sig)]}"), I64)
    if ctx.argtypes[ctx.grid_param].mapped:
        return builder.zext(nvvmutils.call_sreg(builder, "nctaid.x"), I64)
    view, ty = _grid_view(context, builder)
    return tile_grid(builder, view, ty.tile_shape)[_axis(sig)]
