"""Interpreter rules of the memory ops: masked tile loads and stores on NumPy arrays."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from .values import InterpPartition, InterpTensor, InterpTile


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _index(index):
    from .partition import InterpIndex
    if isinstance(index, InterpIndex):
        return index.coords
    return (int(index),) if not isinstance(index, tuple) else tuple(int(i) for i in index)


def read_tile(t: InterpTensor, index: tuple, shape: tuple, padding) -> InterpTile:
    """Tile ``index`` of ``shape`` of ``t.array``; elements outside hold ``padding``."""
    np_dt = dtypes.to_numpy(t.dtype)
    pad = np.asarray(padding).astype(np.float64 if dtypes.is_float(t.dtype) else np_dt) \
        if not dtypes.is_bool(t.dtype) else bool(padding)
    out = np.full(shape, pad).astype(np_dt)
    src, dst = [], []
    for i, s, ext in zip(index, shape, t.array.shape):
        lo, hi = i * s, min((i + 1) * s, ext)
        if i < 0 or lo >= ext:
            return InterpTile(out, t.dtype)
        src.append(slice(lo, hi))
        dst.append(slice(0, hi - lo))
    out[tuple(dst)] = t.array[tuple(src)]
    return InterpTile(out, t.dtype)


@interp_rule("load")
def interp_load(x, index=None, shape=None, padding=0):
    if isinstance(x, InterpPartition):
        idx = x.own_index() if index is None else _index(index)
        return read_tile(x, idx, x.tile_shape, padding)
    return read_tile(x, _index(index), _shape(shape), padding)


@interp_rule("load_like")
def interp_load_like(x, like, padding=0, index=None):
    idx = like.own_index() if index is None else _index(index)
    return read_tile(x, idx, like.tile_shape, padding)


@interp_rule("store")
def interp_store(z, tile, index=None):
    idx = z.own_index() if index is None else _index(index)
    if isinstance(tile, InterpTile):
        src = tile.data
        if dtypes.is_half(tile.dtype) and not dtypes.is_half(z.dtype):
            src = src.astype(np.float32)
        values = src.astype(dtypes.to_numpy(z.dtype))
    else:
        values = np.full(z.tile_shape, tile).astype(dtypes.to_numpy(z.dtype))
    dst, src = [], []
    for i, s, ext in zip(idx, z.tile_shape, z.array.shape):
        lo, hi = i * s, min((i + 1) * s, ext)
        dst.append(slice(lo, hi))
        src.append(slice(0, hi - lo))
    z.record_writes(tuple(dst))
    z.array[tuple(dst)] = values[tuple(src)]
