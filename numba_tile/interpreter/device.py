"""Interpreter rule of device-function calls on tiles (``typing/device.py``).

An interpreted kernel runs its Python code, so ``f(x)`` calls the numba-cuda dispatcher
itself; while a block is being interpreted, a device function's call is routed here (numba-cuda
refuses a device function called from the host otherwise). What runs is the Python function
of ``f``'s frozen copy (``typing/device.fresh_copy``): the very code the compiled kernel was
checked and compiled from, globals and all, whatever has changed since. It runs on each
element, the elements given as Python numbers (``int``, ``float``, ``bool``: integer
arithmetic then follows Numba's 64-bit rules rather than NumPy's fixed-width scalars), and
each result is cast to the compiled function's return type. Float arithmetic runs in float64
where the GPU may keep float32, and ``math`` functions are CPython's: results agree with the
GPU's to rounding, not bit for bit. Where Python's ``math`` raises (``log(0)``,
``sqrt(-1)``) and the GPU gives an IEEE result, the element is NaN (0 for integer and bool
results). Device functions the copy calls run as Python calls, keyword and default arguments
bound as Python binds them.
"""

from __future__ import annotations

import contextvars

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from ..typing.device import _RESULT_DTYPES, compiled_device_function, fresh_copy, is_device_function
from .common import result, result_extents
from .values import _BLOCK, InterpTile

#: True while one element's call runs (nested device functions are plain calls then)
_ELEMENT: contextvars.ContextVar = contextvars.ContextVar("numba_tile_element", default=False)


def _numba_type_of(v):
    from numba.cuda.typing.typeof import typeof
    return typeof(v)


def _wrap(v, dt):
    """A Python int as ``dt`` (two's complement wrap, as the compiled code's), else as is."""
    if dtypes.is_int(dt) and isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        bits = dtypes.itemsize(dt) * 8
        v = int(v) & ((1 << bits) - 1)
        return v - (1 << bits) if v >> (bits - 1) and not dtypes.is_unsigned(dt) else v
    return v


@interp_rule("_device_call")
def interp_device_call(fn, args):
    argtypes = tuple(dtypes.compute_type(v.dtype) if isinstance(v, InterpTile)
                     else _numba_type_of(v) for v in args)
    cres = compiled_device_function(fn, argtypes)
    ret = cres.signature.return_type
    dt = _RESULT_DTYPES[ret]
    py = fresh_copy(fn).py_func
    np_args = [v.data.astype(dtypes.to_numpy(t)) if isinstance(v, InterpTile)
               else np.asarray(v).astype(dtypes.to_numpy(t)) for v, t in zip(args, argtypes)]
    arrays = np.broadcast_arrays(*np_args)
    shape = arrays[0].shape if arrays else ()
    out = np.empty(shape, dtypes.to_numpy(dt))
    fail = np.nan if dtypes.is_float(dt) else 0
    token = _ELEMENT.set(True)
    try:
        with np.errstate(all="ignore"):
            for idx in np.ndindex(shape):
                try:
                    out[idx] = _wrap(py(*[a[idx].item() for a in arrays]), dt)
                except (ValueError, OverflowError, ZeroDivisionError, ArithmeticError):
                    out[idx] = fail
    finally:
        _ELEMENT.reset(token)
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
            if _ELEMENT.get():
                # a device function called by one being interpreted: the copy's own callee
                # (fresh_copy put it in the copy's globals), a plain Python call
                return self.py_func(*args, **kwargs)
            if kwargs:
                raise TypeError(f"device function '{self.py_func.__qualname__}': in a kernel, "
                                f"give a device function its arguments by position")
            return interp_device_call(self, args)
        return original(self, *args, **kwargs)

    __call__._numba_tile = True
    CUDADispatcher.__call__ = __call__


_install()
