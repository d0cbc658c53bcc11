"""Typing rules of the program ops: bid, num_blocks."""

from __future__ import annotations

from numba.cuda import types

from .. import compiler_context
from .._registry import typing_rule
from .common import fail, literal_int


def _axis(opname, axis):
    value = literal_int(axis) if not isinstance(axis, types.Omitted) else axis.value
    ctx = compiler_context.current()
    if ctx.grid_param is None:
        ndim = 3                               # an explicit grid= of an unchecked kernel
    else:
        grid = ctx.argtypes[ctx.grid_param]
        ndim = 1 if grid.mapped else grid.ndim
    if not isinstance(value, int) or not 0 <= value < ndim:
        raise fail(opname, "axis", f"a static integer in [0, {ndim})", axis)
    return value


@typing_rule("bid")
def type_bid(axis):
    _axis("bid", axis)
    return types.int64


@typing_rule("num_blocks")
def type_num_blocks(axis):
    _axis("num_blocks", axis)
    return types.int64
