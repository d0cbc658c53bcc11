"""Interpreter rules of the shape ops (NumPy)."""

from __future__ import annotations

import numpy as np

from .._registry import interp_rule
from .values import InterpTile


def _shape(s):
    return (s,) if isinstance(s, int) else tuple(s)


@interp_rule("reshape")
def interp_reshape(x, shape):
    return InterpTile(x.data.reshape(_shape(shape)).copy(), x.dtype)


@interp_rule("expand_dims")
def interp_expand_dims(x, axis):
    return InterpTile(np.expand_dims(x.data, axis).copy(), x.dtype)


@interp_rule("broadcast_to")
def interp_broadcast_to(x, shape):
    return InterpTile(np.broadcast_to(x.data, _shape(shape)).copy(), x.dtype)


@interp_rule("permute")
def interp_permute(x, dims):
    return InterpTile(np.transpose(x.data, _shape(dims)).copy(), x.dtype)


@interp_rule("transpose")
def interp_transpose(x):
    return InterpTile(x.data.T.copy(), x.dtype)
