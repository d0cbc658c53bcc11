"""Typing rules of the reductions: sum, prod, max, min, argmax, argmin along one axis, cumsum.

A masked tile's reduction is masked: the reduced axis keeps extent 1 where it had a valid
element. A reduction along the last axis with ``keepdims=True`` keeps its result in a
:class:`~numba_tile.layout.SliceLayout` of the operand's layout, so broadcasting it back
over the rows (softmax, norms) moves no data."""

from __future__ import annotations

from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from ..layout import BlockedLayout, MmaLayout, VectorLayout, SliceLayout
from .common import dtype_arg, fail, is_omitted, literal_int, make_tile, refuse_float8
from .types import TileType


def reduction_axis(opname, x, axis):
    a = axis.value if isinstance(axis, types.Omitted) else literal_int(axis)
    if not isinstance(a, int) or not -x.ndim <= a < x.ndim:
        got = f"{a} (for a rank-{x.ndim} tile)" if isinstance(a, int) else \
            f"a run-time value of type {axis} (use a literal or a Constant parameter)"
        raise fail(opname, "axis", f"a static integer in [{-x.ndim}, {x.ndim})", got)
    return a % x.ndim


def keepdims_value(opname, keepdims):
    if isinstance(keepdims, types.Omitted):
        return bool(keepdims.value)
    if isinstance(keepdims, types.BooleanLiteral):
        return keepdims.literal_value
    raise fail(opname, "keepdims", "a static bool (True/False written in the kernel, or a "
               "Constant parameter)", f"a run-time value of type {keepdims}")


def result_dtype(opname, x, dtype):
    default = dtypes.int32 if dtypes.is_bool(x.dtype) else x.dtype
    if is_omitted(dtype):
        return default
    dt = dtype_arg(dtype, opname)
    if not dtypes.storable(default, dt):
        raise fail(opname, "dtype", f"a dtype that holds {dtypes.name(default)} (no narrowing)",
                   dtypes.name(dt))
    return dt


def _kept_align(x, axis, keep, shape) -> int:
    """The result's last-axis alignment: x's when the last axis is kept as it was."""
    if axis != x.ndim - 1 and shape[-1:] == x.shape[-1:] and (keep or x.ndim > 1):
        return x.align
    return 1


def result_shape(x, axis, keep):
    return tuple(1 if d == axis else s for d, s in enumerate(x.shape) if keep or d != axis)


def _rule(name):
    @typing_rule(name)
    def rule(x, axis, keepdims, dtype):
        if not isinstance(x, TileType):
            raise fail(name, "x", "a tile", x)
        refuse_float8(name, "x", x.dtype)
        a = reduction_axis(name, x, axis)
        keep = keepdims_value(name, keepdims)
        shape = result_shape(x, a, keep) or (1,)
        if name in ("max", "min") and not is_omitted(dtype):
            raise fail(name, "dtype", "nothing (max and min keep the tile's dtype)", dtype)
        dt = x.dtype if name in ("max", "min") else result_dtype(name, x, dtype)
        if keep and a == x.ndim - 1:
            # the tree's result stays with the rows it came from: a slice of x's layout, or
            # the rows of an mma accumulator where each row lies in one warp
            if row_slices(x):
                return TileType(dt, shape, VectorLayout(x.layout), x.masked)
            parent = x.layout if isinstance(x.layout, BlockedLayout) \
                else make_tile(x.dtype, x.shape).layout
            return TileType(dt, shape, SliceLayout(parent, a), x.masked)
        if a == x.ndim - 1 and x.ndim == 2 and row_slices(x):
            # 1-D row statistics (Triton's ``m = tl.max(s, 1)``, then ``s - m[:, None]``): the
            # rows of the accumulator too, a 1-D vector of them
            return TileType(dt, shape, VectorLayout(x.layout, 0, 1), x.masked)
        out = make_tile(dt, shape, masked=x.masked, align=_kept_align(x, a, keep, shape))
        return _in_thread(x, a, keep, out) or out

    return rule


def row_slices(x) -> bool:
    """A tile in an ``mma`` accumulator layout whose rows lie in one warp each: its
    ``keepdims`` reductions along the last axis stay in that layout's rows, a
    :class:`~numba_tile.layout.VectorLayout` (``lowering/reduction._mma_row_tree``)."""
    return isinstance(x.layout, MmaLayout) and x.layout.whole_rows


def _in_thread(x, axis, keep, out):
    """``out`` in the blocked layout of x's chunks (``x.layout.max_vec``) when each thread
    then holds the whole lines of its result elements (``lowering/layouts.local_lines``):
    the reduction along a leading axis is then the thread's own arithmetic, with no shared
    memory (``max(reshape(x, (R, BC // R)), 0)``, ``x`` a float32 tile of a 16-bit load
    folded along its repetitions: ``examples/cross_entropy.py``). None otherwise."""
    if not isinstance(x.layout, BlockedLayout) or axis == x.ndim - 1:
        return None
    from ..layout import local_lines
    lay = BlockedLayout(out.shape, x.layout.num_threads, x.layout.max_vec)
    if local_lines(x.layout, lay, axis, keep) is None:
        return None
    return TileType(out.dtype, out.shape, lay, out.masked, out.align)


for _n in ("sum", "prod", "max", "min"):
    _rule(_n)


def _arg_rule(name):
    @typing_rule(name)
    def rule(x, axis, keepdims):
        if not isinstance(x, TileType):
            raise fail(name, "x", "a tile", x)
        refuse_float8(name, "x", x.dtype)
        a = reduction_axis(name, x, axis)
        keep = keepdims_value(name, keepdims)
        shape = result_shape(x, a, keep) or (1,)
        return make_tile(dtypes.int32, shape, masked=x.masked, align=_kept_align(x, a, keep, shape))

    return rule


_arg_rule("argmax")
_arg_rule("argmin")


@typing_rule("cumsum")
def type_cumsum(x, axis, dtype):
    if not isinstance(x, TileType):
        raise fail("cumsum", "x", "a tile", x)
    refuse_float8("cumsum", "x", x.dtype)
    reduction_axis("cumsum", x, axis)
    return make_tile(result_dtype("cumsum", x, dtype), x.shape, masked=x.masked, align=x.align)
