"""Runs a kernel block by block on the CPU with NumPy (interpreter mode).

The kernel has already been compiled exactly as for a GPU launch (typing, closed-world and
ownership checks, lowering, libNVVM: ``Kernel.compile``, cached in memory and on disk), so
the interpreter refuses what a GPU launch would; and it passed the same launch checks. Each
block runs the typed IR of the snapshot that was checked (``interpreter/typed_ir.py``) with
its parameters replaced by interpreter values: scalar operations follow Numba's types
(``interpreter/scalars.py``), and the op stubs it calls run their interpreter rules.

Two guarantees beyond running the blocks:

* **The memory checked is the memory used.** Each array parameter is a NumPy view built
  from the address, shape and strides the launch checks validated (``ArrayArg``), never
  from the producer again: a DLPack producer is not asked for a second export, which could
  describe other memory. Read-only parameters get read-only views.
* **All or nothing.** Blocks write into private copies of the arrays the kernel may write
  (partitions and ``Mutable`` parameters); the copies go back to the user's arrays only
  after every block has finished. A block that raises (a race the detector reports, an
  error in an op) leaves every output exactly as it was.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..runtime.arrays import ArrayArg
from ..runtime.launch_checks import BoundArray
from .values import BlockContext, InterpPartition, InterpTensor, running_block


class _Memory:
    """``__array_interface__`` of checked host memory; holds the objects that own it."""

    __slots__ = ("__array_interface__", "owners")

    def __init__(self, a: ArrayArg, readonly: bool):
        self.owners = (a.obj, a.owner)
        self.__array_interface__ = {
            "version": 3, "shape": tuple(a.shape), "strides": tuple(a.strides),
            "typestr": f"|V{a.itemsize}", "data": (a.ptr, readonly)}


def host_view(a: ArrayArg, *, writable: bool) -> np.ndarray:
    """The NumPy view of a checked host array argument: exactly the bytes the launch checks
    validated (address, shape, byte strides, dtype), never copied.

    Args:
        a: the argument's description (``a.device`` is None: host memory).
        writable: give a writable view (partitions, ``Mutable`` parameters); read-only
            otherwise.
    """
    if a.size == 0:
        return np.empty(a.shape, a.dtype)
    raw = np.asarray(_Memory(a, readonly=not writable))
    return raw.view(a.dtype)


def interp_values(params, bound, argtypes=None):
    """Interpreter values of a bound launch, and ``(user's view, private copy)`` pairs of the
    arrays the kernel may write. A runtime integer scalar becomes a NumPy integer of the width
    the compiled kernel types it with (int32 or int64): it then promotes by that width, as on
    the GPU (an int8 tile plus a runtime int is int64 there); constants stay Python ints."""
    from numba.cuda import types as nbtypes
    out, staged = [], []
    argtypes = list(argtypes) if argtypes is not None else [None] * len(params)
    for p, b, ty in zip(params, bound, argtypes):
        if type(b) is int and ty in (nbtypes.int32, nbtypes.int64):
            out.append(np.int32(b) if ty == nbtypes.int32 else np.int64(b))
            continue
        if isinstance(b, BoundArray):
            dt = dtypes.from_any(b.array.dtype)
            if b.mutable:
                view = host_view(b.array, writable=True)
                work = np.array(view, copy=True)
                staged.append((view, work))
                if b.spec.kind == "partition":
                    out.append(InterpPartition(p.name, work, dt, b.tile_shape, b.order))
                else:
                    out.append(InterpTensor(p.name, work, dt, writable=True))
            else:
                out.append(InterpTensor(p.name, host_view(b.array, writable=False), dt))
        elif type(b) is float:
            # a float scalar or constant is a float64 on the GPU, with IEEE arithmetic (the
            # kernel's error model is NumPy's): 1.0 / c with c == 0.0 is inf, not Python's
            # ZeroDivisionError. np.float64 is a float subclass: every other use is unchanged
            out.append(np.float64(b))
        else:
            out.append(b)
    return out, staged


def run_blocks(program, params, bound, argtypes, grid):
    """Run ``program`` (the kernel's :class:`~.typed_ir.Program`) once per block of ``grid``
    (tiles per axis), block 0 first, then write the outputs back (only if every block
    succeeded). Block ``b`` handles tile number ``b`` of the grid partition in its order
    (its ``bid``), as on the GPU."""
    if not grid or any(n == 0 for n in grid):
        return
    values, staged = interp_values(params, bound, argtypes)
    order = "row"
    for b in bound:
        if isinstance(b, BoundArray) and b.tile_shape is not None:   # the grid partition
            order = b.order if b.blocks is None else "row"
            break
    for linear in range(int(np.prod(grid))):
        # scalar float arithmetic on np.float64 follows IEEE, silently, as on the GPU
        with running_block(BlockContext(linear, tuple(grid), order)), np.errstate(all="ignore"):
            program.run(values)
    for view, work in staged:
        np.copyto(view, work)
