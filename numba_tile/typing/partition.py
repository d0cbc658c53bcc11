"""Typing rule of ``tiles``: the branded tile iterator of a partition."""

from __future__ import annotations

from numba.cuda import types

from .._registry import typing_rule
from .common import fail, is_array_param, literal_int, static_shape
from .types import PartitionIndexType, PartitionType, TilesIterable


@typing_rule("tiles")
def type_tiles(z):
    if not isinstance(z, PartitionType):
        raise fail("tiles", "z", "a partition parameter (indices are minted only for arrays "
                   "the kernel may write)", z)
    return TilesIterable(z)


@typing_rule("num_tiles")
def type_num_tiles(x, axis, tile):
    if not is_array_param(x):
        raise fail("num_tiles", "x", "a tensor or partition parameter", x)
    a = axis.value if isinstance(axis, types.Omitted) else literal_int(axis)
    if not isinstance(a, int) or not 0 <= a < x.ndim:
        raise fail("num_tiles", "axis", f"a static integer in [0, {x.ndim})", axis)
    static_shape(tile, "num_tiles", "tile")
    return types.int64


@typing_rule("index_getitem")
def type_index_getitem(index, d):
    """``idx[d]`` on a branded index: its coordinate along axis ``d`` (a static int, negative
    from the end), a plain int64; ``x[i]`` on a tensor parameter: one element
    (``memory.type_tensor_element``). Other receivers are not this op's (tuples keep Numba's
    rule)."""
    from .types import TensorType
    if isinstance(index, (TensorType, PartitionType)):
        from .memory import type_tensor_element       # x[i] on a tensor parameter
        return type_tensor_element(index, d)
    if not isinstance(index, PartitionIndexType):
        return None
    axis = literal_int(d)
    if not isinstance(axis, int) or not -index.ndim <= axis < index.ndim:
        raise fail("getitem", "d", f"a static integer axis in [{-index.ndim}, {index.ndim}) "
                   f"of the {index.ndim}-d tile index {index}", d)
    return types.int64
