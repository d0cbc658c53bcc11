"""Interpreter rules of the memory ops: masked tile loads and stores on NumPy arrays.

Stores record the elements they write, and loads of a writable array (a partition or an
``nt.Mutable`` tensor) the elements they read, in the array's
:class:`~.values.AccessRecord` (the race detector) before touching it. Loads of read-only
tensors are not recorded: no block can write them.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from .values import InterpIndex, InterpPartition, InterpTensor, InterpTile


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _int64(i) -> int:
    """A coordinate as the compiled kernel sees it: the lowering casts every index and offset
    to int64 (``lowering/memory._index_values``), so a uint64 value of 2**63 or more (a
    ``np.uint64`` of a negative int, an element of a uint64 tensor) is the negative int64 of
    the same bits there; the interpreter must read the same coordinate."""
    i = int(i)
    return ((i + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def _index(index):
    if isinstance(index, InterpIndex):
        return index.coords
    return (_int64(index),) if not isinstance(index, tuple) else tuple(_int64(i) for i in index)


def read_tile(t: InterpTensor, index: tuple, shape: tuple, padding,
              op: str = "load") -> InterpTile:
    """Tile ``index`` of ``shape`` of ``t.array``; elements outside hold ``padding``, or,
    with ``padding=None``, zeros and the tile is masked (its valid extents recorded).

    Raises:
        DataRaceError: ``t`` is writable and another block of the launch wrote or
            atomically updated an element of the tile (``op`` names the reading op).
    """
    from .common import scalar_to
    np_dt = dtypes.to_numpy(t.dtype)
    masked = padding is None
    padding = 0 if masked else padding
    out = np.full(shape, scalar_to(padding, t.dtype), np_dt)     # as lowering/common does
    extents = tuple(0 if i < 0 else max(0, min(s, ext - i * s))
                    for i, s, ext in zip(index, shape, t.array.shape))
    extents = extents if masked else None
    src, dst = [], []
    for i, s, ext in zip(index, shape, t.array.shape):
        lo, hi = i * s, min((i + 1) * s, ext)
        if i < 0 or lo >= ext:
            return InterpTile(out, t.dtype, extents)
        src.append(slice(lo, hi))
        dst.append(slice(0, hi - lo))
    if t.accesses is not None:
        t.accesses.read(tuple(src), op)
    out[tuple(dst)] = t.array[tuple(src)]
    return InterpTile(out, t.dtype, extents)


@interp_rule("load")
def interp_load(x, index=None, shape=None, padding=None):
    if isinstance(x, InterpPartition):
        idx = x.own_index() if index is None else _index(index)
        return read_tile(x, idx, x.tile_shape, padding)
    return read_tile(x, _index(index), _shape(shape), padding)


@interp_rule("load_at")
def interp_load_at(x, offset, shape, padding):
    shape = _shape(shape)
    origin = _index(offset)
    from .common import scalar_to
    np_dt = dtypes.to_numpy(x.dtype)
    out = np.full(shape, scalar_to(padding, x.dtype), np_dt)
    src, dst = [], []
    for o, s, ext in zip(origin, shape, x.array.shape):
        lo, hi = max(o, 0), min(o + s, ext)
        if hi <= lo:
            return InterpTile(out, x.dtype, None)
        src.append(slice(lo, hi))
        dst.append(slice(lo - o, hi - o))
    if x.accesses is not None:
        x.accesses.read(tuple(src), "load_at")
    out[tuple(dst)] = x.array[tuple(src)]
    return InterpTile(out, x.dtype, None)


@interp_rule("load_like")
def interp_load_like(x, like, padding=None, index=None):
    idx = like.own_index() if index is None else _index(index)
    return read_tile(x, idx, like.tile_shape, padding, "load_like")


@interp_rule("store")
def interp_store(z, tile, index=None):
    if not isinstance(z, InterpPartition):          # an unchecked kernel's Mutable array
        return _store_mutable(z, tile, _index(index))
    idx = z.own_index() if index is None else _index(index)
    if isinstance(tile, InterpTile):
        src = tile.data
        if dtypes.is_half(tile.dtype) and not dtypes.is_half(z.dtype):
            src = src.astype(np.float32)
        values = src.astype(dtypes.to_numpy(z.dtype))
    else:
        from .common import scalar_to
        values = np.full(z.tile_shape, scalar_to(tile, z.dtype), dtypes.to_numpy(z.dtype))
    dst, src = [], []
    valid = tile.extents if isinstance(tile, InterpTile) and tile.extents is not None \
        else z.tile_shape
    for i, s, ext, e in zip(idx, z.tile_shape, z.array.shape, valid):
        lo, hi = i * s, min((i + 1) * s, ext, i * s + e)     # a masked tile: its valid box
        if i < 0 or lo >= hi:       # outside the array (an unchecked kernel's index): the
            return                  # GPU's bounds masks drop every element
        dst.append(slice(lo, hi))
        src.append(slice(0, hi - lo))
    z.record_writes(tuple(dst))
    z.array[tuple(dst)] = values[tuple(src)]


def _store_mutable(z, tile, idx):
    """Store ``tile`` at tile index ``idx`` of a Mutable array (an unchecked kernel's)."""
    src = tile.data.astype(np.float32) if dtypes.is_half(tile.dtype) else tile.data
    values = src.astype(dtypes.to_numpy(z.dtype))
    dst, sel = [], []
    valid = tile.extents if tile.extents is not None else tile.shape
    for i, s, ext, e in zip(idx, tile.shape, z.array.shape, valid):
        lo, hi = i * s, min((i + 1) * s, ext, i * s + e)
        if i < 0 or lo >= hi:
            return
        dst.append(slice(lo, hi))
        sel.append(slice(0, hi - lo))
    z.record_writes(tuple(dst))
    z.array[tuple(dst)] = values[tuple(sel)]


def tensor_element(x, index):
    """``x[i]`` / ``x[i, j, ...]`` (``typing/memory.type_tensor_element``): the element as a
    NumPy scalar of its dtype (float16 and bfloat16 as float32), NumPy's negative coordinates
    from the end, 0 outside the array, as on the GPU."""
    coords = index if isinstance(index, tuple) else (index,)
    shape = x.array.shape
    out_dt = np.float32 if dtypes.is_half(x.dtype) or dtypes.is_float8(x.dtype) \
        else dtypes.to_numpy(x.dtype)
    picked = []
    for c, n in zip(coords, shape):
        c = int(c)
        c = c + n if c < 0 else c
        if not 0 <= c < n:
            return out_dt.type(0) if hasattr(out_dt, "type") else np.dtype(out_dt).type(0)
        picked.append(c)
    return np.dtype(out_dt).type(x.array[tuple(picked)])


@interp_rule("_stage_origin")
def interp_stage_origin(k, start):
    return None
