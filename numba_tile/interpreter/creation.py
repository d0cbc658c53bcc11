"""Interpreter rules of the tile constructors."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from .common import scalar_kind, scalar_to
from .values import InterpTile


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


@interp_rule("full")
def interp_full(shape, value, dtype=None):
    if dtype is None:
        # typing/creation.type_full: a literal int by its value, a typed one by its width
        kind = scalar_kind(value)
        if kind == "int":
            fits = value.dtype.itemsize <= 4 if isinstance(value, np.integer) \
                else dtypes.int_fits(int(value), dtypes.int32)
            dt = dtypes.int32 if fits else dtypes.int64
        else:
            dt = {"bool": dtypes.bool_, "float": dtypes.float32}[kind]
    else:
        dt = dtypes.from_any(dtype)
    return InterpTile(np.full(_shape(shape), scalar_to(value, dt)), dt)


@interp_rule("zeros")
def interp_zeros(shape, dtype=None):
    dt = dtypes.float32 if dtype is None else dtypes.from_any(dtype)
    return InterpTile(np.zeros(_shape(shape), dtypes.to_numpy(dt)), dt)


@interp_rule("arange")
def interp_arange(n):
    return InterpTile(np.arange(n, dtype=np.int32), dtypes.int32)
