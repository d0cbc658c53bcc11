"""Typing rules of the memory ops: load, load_like, store."""

from __future__ import annotations

from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from .common import fail, is_omitted, is_scalar, make_tile, static_shape
from .types import PartitionType, TensorType, TileType


def _index_ok(ty, ndim: int) -> bool:
    if ndim == 1 and isinstance(ty, types.Integer):
        return True
    return (isinstance(ty, types.BaseTuple) and len(ty.types) == ndim
            and all(isinstance(t, types.Integer) for t in ty.types))


def _padding_ok(ty) -> bool:
    return is_omitted(ty) or is_scalar(ty)


@typing_rule("load")
def type_load(x, index, shape, padding):
    if isinstance(x, PartitionType):
        if not (is_omitted(index) and is_omitted(shape)):
            raise fail("load", "index", "no index and no shape for a partition (a block reads "
                       "only its own tile of an array being written; other tiles would race)",
                       index)
        if not _padding_ok(padding):
            raise fail("load", "padding", "a scalar", padding)
        return make_tile(x.dtype, x.tile_shape)
    if not isinstance(x, TensorType):
        raise fail("load", "x", "a tensor or partition parameter", x)
    if is_omitted(index):
        raise fail("load", "index", f"a tuple of {x.ndim} tile indices", "nothing")
    if not _index_ok(index, x.ndim):
        raise fail("load", "index", f"a tuple of {x.ndim} integers (tile units)", index)
    if is_omitted(shape):
        raise fail("load", "shape", f"a static shape of {x.ndim} dimensions", "nothing")
    sh = static_shape(shape, "load")
    if len(sh) != x.ndim:
        raise fail("load", "shape", f"{x.ndim} dimensions (the rank of '{x.param}')", sh)
    if not _padding_ok(padding):
        raise fail("load", "padding", "a scalar", padding)
    return make_tile(x.dtype, sh)


@typing_rule("load_like")
def type_load_like(x, like, padding):
    if not isinstance(like, PartitionType):
        raise fail("load_like", "like", "a partition parameter", like)
    if not isinstance(x, (TensorType, PartitionType)):
        raise fail("load_like", "x", "a tensor or partition parameter", x)
    if x.ndim != like.ndim:
        raise fail("load_like", "x", f"rank {like.ndim} (the rank of '{like.param}')",
                   f"rank {x.ndim}")
    if isinstance(x, PartitionType) and x.param != like.param:
        raise fail("load_like", "x", "a read-only tensor, or the partition 'like' itself "
                   "(reading another partition's tile of an array being written races)",
                   x.param)
    if not _padding_ok(padding):
        raise fail("load_like", "padding", "a scalar", padding)
    return make_tile(x.dtype, like.tile_shape)


@typing_rule("store")
def type_store(z, tile, index):
    # Ownership (is z mutable? is index allowed?) is checked by the ownership pass,
    # from this op's effects; here only shapes and dtypes.
    if not isinstance(z, (PartitionType, TensorType)):
        raise fail("store", "z", "a partition parameter", z)
    if isinstance(z, TensorType):
        return types.none
    if isinstance(tile, TileType):
        if tile.shape != z.tile_shape:
            raise fail("store", "tile", f"a tile of shape {z.tile_shape} (the tile shape of "
                       f"'{z.param}')", tile.shape)
        src = tile.dtype
    elif is_scalar(tile):
        src = None
    else:
        raise fail("store", "tile", "a tile or a scalar", tile)
    if src is not None and dtypes.is_float(src) and not dtypes.is_float(z.dtype):
        raise fail("store", "tile", f"a tile castable to {dtypes.name(z.dtype)} without "
                   "narrowing; use astype()", f"a tile of {dtypes.name(src)}")
    return types.none
