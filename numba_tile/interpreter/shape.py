"""Interpreter rules of the shape ops (NumPy)."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from .common import broadcast_extents
from .values import InterpTile


def _shape(s):
    return (s,) if isinstance(s, int) else tuple(s)


def _unit_axes_extents(x, shape):
    """A masked tile's extents after axes of extent 1 are added or dropped (the only
    reshape of a masked tile the typing allows)."""
    if x.extents is None:
        return None
    big = [e for s, e in zip(x.shape, x.extents) if s != 1]
    empty = any(e == 0 for s, e in zip(x.shape, x.extents) if s == 1)
    it = iter(big)
    return tuple(0 if empty else (1 if s == 1 else next(it)) for s in shape)


@interp_rule("reshape")
def interp_reshape(x, shape):
    shape = _shape(shape)
    return InterpTile(x.data.reshape(shape).copy(), x.dtype, _unit_axes_extents(x, shape))


@interp_rule("expand_dims")
def interp_expand_dims(x, axis):
    data = np.expand_dims(x.data, axis).copy()
    return InterpTile(data, x.dtype, _unit_axes_extents(x, data.shape))


@interp_rule("broadcast_to")
def interp_broadcast_to(x, shape):
    shape = _shape(shape)
    ext = broadcast_extents(x, shape) if x.extents is not None else None
    return InterpTile(np.broadcast_to(x.data, shape).copy(), x.dtype, ext)


def _permuted(x, dims):
    ext = None if x.extents is None else tuple(x.extents[d] for d in dims)
    return InterpTile(np.transpose(x.data, dims).copy(), x.dtype, ext)


@interp_rule("permute")
def interp_permute(x, dims):
    return _permuted(x, _shape(dims))


@interp_rule("transpose")
def interp_transpose(x):
    return _permuted(x, tuple(range(x.data.ndim))[::-1])


def _subtile(x, start, shape):
    box = tuple(slice(s0, s0 + n) for s0, n in zip(start, shape))
    ext = None if x.extents is None else tuple(
        min(max(e - s0, 0), n) for e, s0, n in zip(x.extents, start, shape))
    return InterpTile(x.data[box].copy(), x.dtype, ext)


@interp_rule("subtile")
def interp_subtile(x, start, shape):
    return _subtile(x, _shape(start), _shape(shape))


@interp_rule("_getitem_static")
def interp_getitem_static(x, starts, stops, newaxes):
    from ..typing.shape import OPEN_STOP, slice_bounds
    starts, stops = _shape(starts), _shape(stops)
    if not isinstance(x, InterpTile):           # a tuple's slice (typed as one)
        return x[slice(starts[0], None if stops[0] == OPEN_STOP else stops[0])]
    bounds = slice_bounds(x.data.shape, starts, stops)
    out = _subtile(x, [lo for lo, _hi in bounds], [hi - lo for lo, hi in bounds])
    for pos in _shape(newaxes):
        out = interp_expand_dims(out, pos)
    return out


@interp_rule("_attr_T")
def interp_attr_t(x):
    if isinstance(x, InterpTile):
        return interp_transpose(x)
    return x.T


@interp_rule("item")
def interp_item(x):
    v = np.asarray(x.data).reshape(-1)[0]
    if dtypes.is_half(x.dtype):
        return np.float32(v)
    if dtypes.is_bool(x.dtype):
        return bool(v)
    return np.asarray(v).astype(dtypes.to_numpy(x.dtype))[()]
