"""Typing rule of ``tiles``: the branded tile iterator of a partition."""

from __future__ import annotations

from numba.cuda import types

from .._registry import typing_rule
from .common import fail, is_array_param, literal_int, static_shape
from .types import (PartitionIndexType, PartitionType, StripIndexType, StripsIterable,
                    StripTilesIterable, TilesIterable)


def _reverse_value(reverse) -> bool:
    if isinstance(reverse, types.Omitted):
        return bool(reverse.value)
    if isinstance(reverse, types.BooleanLiteral):
        return bool(reverse.literal_value)
    raise fail("tiles", "reverse", "a static bool (True/False written in the kernel, or a "
               "Constant parameter)", f"a run-time value of type {reverse}")


@typing_rule("tiles")
def type_tiles(z, strip, reverse):
    if not isinstance(z, PartitionType):
        raise fail("tiles", "z", "a partition parameter (indices are minted only for arrays "
                   "the kernel may write)", z)
    rev = _reverse_value(reverse)
    if isinstance(strip, (types.Omitted, types.NoneType)):
        return TilesIterable(z, rev)
    if not isinstance(strip, StripIndexType):
        raise fail("tiles", "strip", f"a strip of '{z.param}' from strips({z.param})", strip)
    if strip.ndim != z.ndim - 1:
        raise fail("tiles", "strip", f"a strip of '{z.param}' ({z.ndim - 1} leading "
                   f"coordinates)", f"a strip of '{strip.brand}' with {strip.ndim}")
    # A strip of another partition x names the tiles of z at the strip's leading coordinates:
    # each strip of x belongs to one block, so no two blocks reach the same tiles of z through
    # x's strips (a coordinate past z's grid names no element of z: its stores are masked).
    # Rows of 2-D partitions go to blocks by row number alone (row r: block r mod B), whatever
    # the partition, so z's own strips and x's agree; strips over two or more leading axes are
    # numbered row-major over each partition's own grid, so there z's strips must all come
    # from one partition (typing/ownership.check_index_schemes).
    if not z.mapped:
        raise fail("tiles", "z", f"a partition mapped onto blocks for its strips (a partition "
                   f"with one tile per block has each block own a tile, not a row)",
                   "an unmapped partition")
    return StripTilesIterable(z, rev)


@typing_rule("strips")
def type_strips(z):
    if not isinstance(z, PartitionType):
        raise fail("strips", "z", "a partition parameter (strips are minted only for arrays "
                   "the kernel may write)", z)
    if z.ndim < 2:
        raise fail("strips", "z", "a partition of rank 2 or more (a strip is the tiles sharing "
                   "all but the last coordinate; a 1-D partition's tiles: tiles(z))",
                   f"a {z.ndim}-D partition")
    if not z.mapped:
        raise fail("strips", "z", f"a partition mapped onto blocks (partition(a, shape, "
                   f"blocks=B): block b owns strips b, b + B, ...; a partition with one tile per "
                   f"block has each block own a tile, not a strip)", "an unmapped partition")
    return StripsIterable(z)


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
