"""The parts of a launch's arguments a kernel specializes on: an array's 16-byte vector
access and its stride-0 axes (part of its ``TensorType`` / ``PartitionType``), a runtime
scalar's Numba type."""

from __future__ import annotations

import numpy as np
from numba.cuda import types

from .errors import TileArgumentError, shown


def _arg_error(message: str) -> TileArgumentError:
    """A TileArgumentError pointing at the user's launch line."""
    from .runtime.call_site import user_call_site
    site = user_call_site() or (None, None)
    return TileArgumentError(message, filename=site[0], lineno=site[1])


def vec16(a) -> bool:
    """16-byte vector accesses are legal for this array (see lowering/memory.py)."""
    if a.size == 0 or a.ndim == 0:
        return False
    isz = a.itemsize
    return (a.ptr % 16 == 0 and a.strides[-1] == isz and (a.shape[-1] * isz) % 16 == 0
            and all(s % 16 == 0 for s in a.strides[:-1]))


#: the largest power-of-two divisor of a stride-0 extent a key records (beyond any tile)
_DIVISOR_CAP = 1 << 16


def zero_axes(a) -> tuple:
    """``(axis, divisor)`` for each axis along which the array's stride is 0 (a broadcast
    view): the lowering uses the constant 0 for the stride, and the extent's largest
    power-of-two divisor (capped, 0 for an empty axis) tells it which tiles along the axis
    are wholly inside or wholly outside (``lowering/memory._load_masked``), so both are part
    of the key."""
    return tuple((d, min(n & -n, _DIVISOR_CAP))
                 for d, (n, st) in enumerate(zip(a.shape, a.strides)) if st == 0)


def scalar_type(value, name, kernel_name):
    """The Numba type of runtime scalar argument ``name``: a bool, an int that fits 32 (else 64)
    bits, a float (float64); anything else is a TileArgumentError naming the kernel."""
    if isinstance(value, (bool, np.bool_)):
        return types.boolean
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if -2**31 <= v < 2**31:
            return types.int32          # as Triton: int arguments that fit are int32
        if -2**63 <= v < 2**63:
            return types.int64
        raise _arg_error(f"kernel '{kernel_name}': argument '{name}': a runtime int scalar is "
                         f"an int64, got {v}, which does not fit in 64 bits")
    if isinstance(value, (float, np.floating)):
        return types.float64
    raise _arg_error(f"kernel '{kernel_name}': argument '{name}': expected an array or a "
                     f"runtime scalar (a bool, an int or a float), got "
                     f"{shown(value, with_type=True, qualified=False)}")
