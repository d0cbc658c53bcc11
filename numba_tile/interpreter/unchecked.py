"""Interpreter rules of the unchecked ops (NumPy; atomics element by element, in order).

Every op records its accesses in the target array's :class:`~.values.AccessRecord` (the
race detector) before it touches the array: a scatter as plain writes, an atomic as
atomic updates, a gather as plain reads (of a writable array only: a read-only tensor
cannot be written by any block). A conflict with another block of the launch (write and
write, write and read, plain and atomic) raises
:class:`~numba_tile.errors.DataRaceError`; so does a scatter writing one element twice
(on the GPU two threads would write it in no fixed order). Atomics of many blocks to one
element are legal (they are the point); within one atomic op, elements are applied in
row-major order of the index tiles (on the GPU their order is unspecified).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from .common import result
from .values import InterpTile, duplicate_error


def _valid(v, shape):
    """Where a masked tile operand is valid (everywhere for other operands)."""
    if isinstance(v, InterpTile) and v.extents is not None:
        return np.broadcast_to(v.valid(), shape)
    return np.ones(shape, bool)


def _coords(x, indices, *others):
    """The coordinates (one int64 array per axis of ``x``) and the in-bounds-and-valid
    elements, over the broadcast (NumPy's rules) of the index tiles and the tile operands
    among ``others`` (mask, values), as ``typing/unchecked.index_tiles`` types it."""
    tiles = indices if isinstance(indices, tuple) else (indices,)
    shape = np.broadcast_shapes(*[t.data.shape for t in tiles],
                                *[o.data.shape for o in others if isinstance(o, InterpTile)])
    coords = [np.broadcast_to(t.data.astype(np.int64), shape) for t in tiles]
    ok = np.ones(shape, bool)
    for t, c, ext in zip(tiles, coords, x.array.shape):
        ok &= (c >= 0) & (c < ext) & _valid(t, shape)
    return coords, ok


def _mask(ok, mask, *values):
    """The elements that act: in bounds, mask true, every masked operand valid."""
    if mask is not None:
        ok = ok & np.broadcast_to(mask.data.astype(bool), ok.shape) & _valid(mask, ok.shape)
    for v in values:
        ok = ok & _valid(v, ok.shape)
    return ok


def _values(v, shape, dt):
    np_dt = dtypes.to_numpy(dt)
    if isinstance(v, InterpTile):
        src = v.data.astype(np.float32) if dtypes.is_half(v.dtype) else v.data
        return np.broadcast_to(src.astype(np_dt), shape)
    return np.full(shape, v).astype(np_dt)


@interp_rule("gather")
def interp_gather(x, indices, mask=None, padding=0):
    coords, ok = _coords(x, indices, mask)
    ok = _mask(ok, mask)
    out = np.full(ok.shape, padding).astype(dtypes.to_numpy(x.dtype))
    sel = tuple(c[ok] for c in coords)
    if x.accesses is not None and sel[0].size:
        x.accesses.read(sel, "gather")
    out[ok] = x.array[sel]
    return InterpTile(out, x.dtype)


@interp_rule("scatter")
def interp_scatter(x, indices, values, mask=None):
    coords, ok = _coords(x, indices, values, mask)
    ok = _mask(ok, mask, values)
    vals = _values(values, ok.shape, x.dtype)
    sel = tuple(c[ok] for c in coords)
    if not sel[0].size:
        return
    err = duplicate_error(x.name, x.array.shape, sel, np.flatnonzero(ok), ok.shape, "scatter")
    if err is not None:
        raise err
    x.written().write(sel, "scatter")
    x.array[sel] = vals[ok]                 # distinct elements: order does not matter


def _record_atomic(x, coords, ok, op, scope):
    sel = tuple(c[ok] for c in coords)
    if sel[0].size:
        x.written().atomic(sel, op, scope)


def _total_key(v):
    """An integer that orders floats as IEEE 754 totalOrder (the compiled kernel's float
    atomic max/min, ``lowering/unchecked._float_order_atomic``): the bits as a signed integer,
    the magnitude bits flipped for a negative sign."""
    a = np.asarray(v)
    bits = a.view(np.int32 if a.dtype.itemsize == 4 else np.int64).item()
    mask = (1 << (a.dtype.itemsize * 8 - 1)) - 1
    return bits ^ mask if bits < 0 else bits


def _ordered(pick):
    def update(old, v):
        if isinstance(old, np.floating):
            return old if pick(_total_key(old), _total_key(v)) else v
        return old if pick(old, v) else v
    return update


_UPDATE = {
    "atomic_add": lambda old, v: old + v,
    "atomic_max": _ordered(lambda a, b: a >= b),
    "atomic_min": _ordered(lambda a, b: a <= b),
    "atomic_xchg": lambda old, v: v,
}


def _atomic(name):
    update = _UPDATE[name]

    @interp_rule(name)
    def rule(x, indices, values, mask=None, sem="relaxed", scope="gpu"):
        coords, ok = _coords(x, indices, values, mask)
        ok = _mask(ok, mask, values)
        vals = _values(values, ok.shape, x.dtype)
        old = np.zeros(ok.shape, dtypes.to_numpy(x.dtype))
        _record_atomic(x, coords, ok, name, scope)
        for k in zip(*np.nonzero(ok)):
            c = tuple(int(cc[k]) for cc in coords)
            old[k] = x.array[c]
            with np.errstate(over="ignore"):
                x.array[c] = update(x.array[c], vals[k])
        return result(old, x.dtype)

    return rule


for _n in _UPDATE:
    _atomic(_n)


@interp_rule("atomic_cas")
def interp_atomic_cas(x, indices, expected, desired, mask=None, sem="relaxed", scope="gpu"):
    coords, ok = _coords(x, indices, expected, desired, mask)
    ok = _mask(ok, mask, expected, desired)
    exp = _values(expected, ok.shape, x.dtype)
    des = _values(desired, ok.shape, x.dtype)
    old = np.zeros(ok.shape, dtypes.to_numpy(x.dtype))
    _record_atomic(x, coords, ok, "atomic_cas", scope)
    for k in zip(*np.nonzero(ok)):
        c = tuple(int(cc[k]) for cc in coords)
        old[k] = x.array[c]
        if x.array[c] == exp[k]:
            x.array[c] = des[k]
    return result(old, x.dtype)
