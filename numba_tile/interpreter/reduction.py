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


def _rule(name, fn):
    @interp_rule(name)
    def rule(x, axis, keepdims=False, dtype=None):
        dt = _result_dtype(name, x, dtype)
        acc = dtypes.to_numpy(dtypes.compute_type(dt))
        data = x.data.astype(np.float32) if dtypes.is_half(x.dtype) else x.data
        with np.errstate(all="ignore"):
            r = fn(data.astype(acc) if name in ("sum", "prod") else data, axis=axis,
                   keepdims=keepdims)
        r = np.asarray(r)
        if r.ndim == 0:
            r = r.reshape(1)
        return InterpTile(r.astype(dtypes.to_numpy(dt)), dt)

    return rule


_rule("sum", np.sum)
_rule("prod", np.prod)
_rule("max", np.max)
_rule("min", np.min)


def _arg(name, fn):
    @interp_rule(name)
    def rule(x, axis, keepdims=False):
        data = x.data.astype(np.float32) if dtypes.is_half(x.dtype) else x.data
        r = np.asarray(fn(data, axis=axis, keepdims=keepdims))
        if r.ndim == 0:
            r = r.reshape(1)
        return InterpTile(r.astype(np.int32), dtypes.int32)

    return rule


_arg("argmax", np.argmax)
_arg("argmin", np.argmin)


@interp_rule("cumsum")
def interp_cumsum(x, axis, dtype=None):
    dt = _result_dtype("cumsum", x, dtype)
    acc = dtypes.to_numpy(dtypes.compute_type(dt))
    data = x.data.astype(np.float32) if dtypes.is_half(x.dtype) else x.data
    with np.errstate(all="ignore"):
        r = np.cumsum(data.astype(acc), axis=axis)
    return InterpTile(r.astype(dtypes.to_numpy(dt)), dt)
