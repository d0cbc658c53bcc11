"""Runs a kernel block by block on the CPU with NumPy (interpreter mode).

The kernel has already passed the same typing and ownership pass as a compiled launch
(:func:`numba_tile.compiler.check_kernel`) and the same launch checks. Each block runs
the kernel's Python function with its parameters replaced by interpreter values; the
op stubs it calls run their interpreter rules.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..runtime.launch_checks import BoundArray
from .values import BlockContext, InterpPartition, InterpTensor, running_block


def host_array(obj) -> np.ndarray:
    """The NumPy view of a host array argument (no copy)."""
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        return np.asarray(obj)
    return np.from_dlpack(obj)


def interp_values(params, bound):
    out = []
    for p, b in zip(params, bound):
        if isinstance(b, BoundArray):
            arr = host_array(b.array.obj)
            dt = dtypes.from_any(b.array.dtype)
            if b.spec.kind == "partition":
                out.append(InterpPartition(p.name, arr, dt, b.tile_shape))
            else:
                out.append(InterpTensor(p.name, arr, dt))
        else:
            out.append(b)
    return out


def run_blocks(fn, params, bound, argtypes, grid):
    """Run ``fn`` once per block of ``grid`` (tiles per axis), in row-major block order."""
    values = interp_values(params, bound)
    if not grid or any(n == 0 for n in grid):
        return
    for linear in range(int(np.prod(grid))):
        with running_block(BlockContext(linear, tuple(grid))):
            fn(*values)
