"""Interpreter rule of device-function calls on tiles and scalars (``typing/device.py``).

The compiler rewrites ``f(x, ...)`` (``f`` a numba-cuda ``@cuda.jit(device=True)`` function)
into the op ``_device_call(f, (x, ...))``. What runs here is the typed IR of the frozen copy of
``f`` that the compiled kernel links (``typing/device.compiled_device_function``), compiled
for the same argument types as the lowering's (a tile's elements as its dtype's compute type,
a scalar as Numba types it), run by the interpreter's executor (``interpreter/typed_ir.py``)
on each element: every operation inside ``f`` (and inside the device functions it calls)
follows the type Numba gave it, as in a kernel (``interpreter/scalars.py``). Integer
arithmetic agrees with the GPU's bit for bit, float arithmetic to rounding (the GPU may fuse a
multiply and an add, and its libdevice functions are not NumPy's).
"""

from __future__ import annotations

import numpy as np
from numba.cuda import types

from .. import dtypes
from .._registry import interp_rule
from ..typing.device import _RESULT_DTYPES
from . import scalars
from .common import result, result_extents
from .typed_ir import device_program
from .values import InterpTile


def _numba_type_of(v):
    from numba.cuda.typing.typeof import typeof
    return types.unliteral(typeof(v))


@interp_rule("_device_call")
def interp_device_call(fn, args):
    argtypes = tuple(dtypes.compute_type(v.dtype) if isinstance(v, InterpTile)
                     else _numba_type_of(v) for v in args)
    program = device_program(fn, argtypes)
    ret = program.return_type
    tiles = [v for v in args if isinstance(v, InterpTile)]
    if not tiles:
        return program.run([scalars.cast(v, t) for v, t in zip(args, argtypes)])
    dt = _RESULT_DTYPES[ret]
    np_args = [v.data.astype(dtypes.to_numpy(t)) if isinstance(v, InterpTile)
               else np.asarray(scalars.cast(v, t)) for v, t in zip(args, argtypes)]
    arrays = np.broadcast_arrays(*np_args)
    shape = arrays[0].shape
    # one call per element, its arguments NumPy scalars of the compute types
    rows = [list(row) for row in zip(*(list(a.reshape(-1)) for a in arrays))]
    with np.errstate(all="ignore"):
        values = program.run_each(rows)
    out = np.array(values, dtype=dtypes.to_numpy(dt)).reshape(shape)
    return result(out, dt, result_extents(tuple(tiles), shape))
