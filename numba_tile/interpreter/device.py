"""Interpreter rule of device-function calls on tiles (``typing/device.py``).

An interpreted kernel runs its Python code, so ``f(x)`` calls the numba-cuda dispatcher
itself; while a block is being interpreted, a device function's call is routed here (numba-cuda
refuses a device function called from the host otherwise). ``f``'s Python function runs on
each element, the elements given as NumPy scalars of the types the compiled kernel passes
(16-bit floats as float32), and each result is cast to the compiled function's return type.
Arithmetic inside ``f`` follows NumPy's scalar rules where the GPU follows Numba's, and
``math`` functions compute in float64 there: results agree to rounding, not bit for bit.
Where Python's ``math`` raises (``log(0)``, ``sqrt(-1)``) and the GPU gives an IEEE result,
the element is NaN (0 for integer and bool results).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from ..typing.device import (_RESULT_DTYPES, argument_types, compiled_device_function,
                             find_compiled, is_device_function)
from .common import result, result_extents
from .values import _BLOCK, InterpTile


def _numba_type_of(v):
    from numba.cuda.typing.typeof import typeof
    return typeof(v)


@interp_rule("_device_call")
def interp_device_call(fn, args):
    items = []
    for v in args:
        if isinstance(v, InterpTile):
            items.append(v.dtype)
        else:
            items.append(_numba_type_of(v))
    argtypes = tuple(dtypes.compute_type(t) if isinstance(v, InterpTile) else t
                     for t, v in zip(items, args))
    cres = find_compiled(fn, argtypes) or compiled_device_function(fn, argtypes)
    ret = cres.signature.return_type
    dt = _RESULT_DTYPES[ret]
    np_args = [v.data.astype(dtypes.to_numpy(t)) if isinstance(v, InterpTile)
               else np.asarray(v).astype(dtypes.to_numpy(t)) for v, t in zip(args, argtypes)]
    arrays = np.broadcast_arrays(*np_args)
    shape = arrays[0].shape if arrays else ()
    out = np.empty(shape, dtypes.to_numpy(dt))
    fail = np.nan if dtypes.is_float(dt) else 0
    py = fn.py_func
    with np.errstate(all="ignore"):
        for idx in np.ndindex(shape):
            try:
                out[idx] = py(*[a[idx] for a in arrays])
            except (ValueError, OverflowError, ZeroDivisionError):
                out[idx] = fail
    tiles = [v for v in args if isinstance(v, InterpTile)]
    if not tiles:
        return out[()]
    return result(out, dt, result_extents(tuple(tiles), shape))


def _install():
    """Route device functions' calls made while a block is interpreted to the rule above."""
    from numba.cuda.dispatcher import CUDADispatcher
    if getattr(CUDADispatcher.__call__, "_numba_tile", False):
        return
    original = CUDADispatcher.__call__

    def __call__(self, *args, **kwargs):
        if _BLOCK.get() is not None and is_device_function(self):
            if kwargs:
                raise TypeError(f"device function '{self.py_func.__qualname__}': in a kernel, "
                                f"give a device function its arguments by position")
            return interp_device_call(self, args)
        return original(self, *args, **kwargs)

    __call__._numba_tile = True
    CUDADispatcher.__call__ = __call__


_install()
