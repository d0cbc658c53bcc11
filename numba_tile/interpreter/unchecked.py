"""Interpreter rules of the unchecked ops (NumPy, element by element where order matters).

A scatter records its writing block per element, so two blocks scattering to one element
trip the race detector (:class:`~numba_tile.errors.DataRaceError`); atomics are exempt
(concurrent atomics are the point). Within a block, elements are applied in row-major
order of the index tiles (on the GPU their order is unspecified).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from .common import result
from .values import InterpTile, current_block


def _valid(v, shape):
    """Where a masked tile operand is valid (everywhere for other operands)."""
    if isinstance(v, InterpTile) and v.extents is not None:
        return np.broadcast_to(v.valid(), shape)
    return np.ones(shape, bool)


def _coords(x, indices):
    tiles = indices if isinstance(indices, tuple) else (indices,)
    coords = [t.data.astype(np.int64) for t in tiles]
    ok = np.ones(coords[0].shape, bool)
    for t, c, ext in zip(tiles, coords, x.array.shape):
        ok &= (c >= 0) & (c < ext) & _valid(t, c.shape)
    return coords, ok


def _mask(ok, mask, *values):
    """The elements that act: in bounds, mask true, every masked operand valid."""
    if mask is not None:
        ok = ok & mask.data.astype(bool) & _valid(mask, ok.shape)
    for v in values:
        ok = ok & _valid(v, ok.shape)
    return ok


def _values(v, shape, dt):
    np_dt = dtypes.to_numpy(dt)
    if isinstance(v, InterpTile):
        src = v.data.astype(np.float32) if dtypes.is_half(v.dtype) else v.data
        return src.astype(np_dt)
    return np.full(shape, v).astype(np_dt)


def _writers(x):
    w = getattr(x, "writers", None)
    if w is None:
        w = x.writers = np.full(x.array.shape, -1, np.int64)
    return w


@interp_rule("gather")
def interp_gather(x, indices, mask=None, padding=0):
    coords, ok = _coords(x, indices)
    ok = _mask(ok, mask)
    out = np.full(ok.shape, padding).astype(dtypes.to_numpy(x.dtype))
    sel = tuple(c[ok] for c in coords)
    out[ok] = x.array[sel]
    return InterpTile(out, x.dtype)


@interp_rule("scatter")
def interp_scatter(x, indices, values, mask=None):
    from ..errors import DataRaceError
    coords, ok = _coords(x, indices)
    ok = _mask(ok, mask, values)
    vals = _values(values, ok.shape, x.dtype)
    writers = _writers(x)
    blk = current_block()
    for k in zip(*np.nonzero(ok)):
        c = tuple(int(cc[k]) for cc in coords)
        other = int(writers[c])
        if other not in (-1, blk.linear):
            raise DataRaceError(
                f"data race on '{x.name}': element {c} written by block "
                f"{tuple(int(i) for i in np.unravel_index(other, blk.grid))} (linear {other}) "
                f"and by block {blk.index} (linear {blk.linear})")
        writers[c] = blk.linear
        x.array[c] = vals[k]


_UPDATE = {
    "atomic_add": lambda old, v: old + v,
    "atomic_max": lambda old, v: max(old, v),
    "atomic_min": lambda old, v: min(old, v),
    "atomic_xchg": lambda old, v: v,
}


def _atomic(name):
    update = _UPDATE[name]

    @interp_rule(name)
    def rule(x, indices, values, mask=None, sem="relaxed", scope="gpu"):
        coords, ok = _coords(x, indices)
        ok = _mask(ok, mask, values)
        vals = _values(values, ok.shape, x.dtype)
        old = np.zeros(ok.shape, dtypes.to_numpy(x.dtype))
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
    coords, ok = _coords(x, indices)
    ok = _mask(ok, mask, expected, desired)
    exp = _values(expected, ok.shape, x.dtype)
    des = _values(desired, ok.shape, x.dtype)
    old = np.zeros(ok.shape, dtypes.to_numpy(x.dtype))
    for k in zip(*np.nonzero(ok)):
        c = tuple(int(cc[k]) for cc in coords)
        old[k] = x.array[c]
        if x.array[c] == exp[k]:
            x.array[c] = des[k]
    return result(old, x.dtype)
