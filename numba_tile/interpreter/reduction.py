"""Interpreter rules of the reductions (NumPy, float32 accumulation for 16-bit floats)."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from .values import InterpTile


def _result_dtype(name, x, dtype):
    if name in ("max", "min"):
        return x.dtype
    if dtype is not None:
        return dtypes.from_any(dtype)
    return dtypes.int32 if dtypes.is_bool(x.dtype) else x.dtype


def result_extents(x: InterpTile, axis: int, keepdims: bool):
    """Valid extents of the reduction of a masked tile along ``axis`` (as the compiled
    kernel: the reduced axis keeps extent 1 where it had a valid element)."""
    if x.extents is None:
        return None
    ext = x.extents
    axis %= len(ext)
    if keepdims:
        return tuple(min(e, 1) if d == axis else e for d, e in enumerate(ext))
    rest = [e for d, e in enumerate(ext) if d != axis]
    if not rest:
        return (min(ext[axis], 1),)
    return tuple(0 if ext[axis] == 0 else e for e in rest)


def _identity(name, np_dt):
    if np.issubdtype(np_dt, np.floating):
        return {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[name]
    if np_dt == np.bool_:
        return {"max": False, "min": True}[name]
    info = np.iinfo(np_dt)
    return {"sum": 0, "prod": 1, "max": info.min, "min": info.max}[name]


def _rule(name, fn):
    @interp_rule(name)
    def rule(x, axis, keepdims=False, dtype=None):
        dt = _result_dtype(name, x, dtype)
        acc = dtypes.to_numpy(dtypes.compute_type(dt))
        data = x.data.astype(np.float32) if dtypes.is_half(x.dtype) else x.data
        data = data.astype(acc) if name in ("sum", "prod") else data
        if x.extents is not None:        # invalid elements: the identity (skipped)
            data = np.where(x.valid(), data, np.asarray(_identity(name, data.dtype), data.dtype))
        with np.errstate(all="ignore"):
            r = fn(data, axis=axis, keepdims=keepdims)
        r = np.asarray(r)
        if r.ndim == 0:
            r = r.reshape(1)
        return InterpTile(r.astype(dtypes.to_numpy(dt)), dt, result_extents(x, axis, keepdims))

    return rule


_rule("sum", np.sum)
_rule("prod", np.prod)
_rule("max", np.max)
_rule("min", np.min)


def _arg(name, fn):
    @interp_rule(name)
    def rule(x, axis, keepdims=False):
        data = x.data.astype(np.float32) if dtypes.is_half(x.dtype) else x.data
        if x.extents is not None:
            # invalid elements follow the valid ones along the axis: the identity of max
            # (min) there never wins a tie against a valid element before it
            ident = _identity("max" if name == "argmax" else "min", data.dtype)
            data = np.where(x.valid(), data, np.asarray(ident, data.dtype))
        r = np.asarray(fn(data, axis=axis, keepdims=keepdims))
        if r.ndim == 0:
            r = r.reshape(1)
        return InterpTile(r.astype(np.int32), dtypes.int32, result_extents(x, axis, keepdims))

    return rule


_arg("argmax", np.argmax)
_arg("argmin", np.argmin)


@interp_rule("cumsum")
def interp_cumsum(x, axis, dtype=None):
    dt = _result_dtype("cumsum", x, dtype)
    acc = dtypes.to_numpy(dtypes.compute_type(dt))
    data = x.data.astype(np.float32) if dtypes.is_half(x.dtype) else x.data
    data = data.astype(acc)
    if x.extents is not None:
        data = np.where(x.valid(), data, np.zeros((), data.dtype))
    with np.errstate(all="ignore"):
        r = np.cumsum(data, axis=axis)
    return InterpTile(r.astype(dtypes.to_numpy(dt)), dt, x.extents)
