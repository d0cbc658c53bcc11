"""Shared by the examples (not an example itself): pick the GPU when there is one, else the
interpreter; check arguments and results; require an optional dependency."""

from __future__ import annotations

import importlib

import numpy as np

import numba_tile as nt


def pick_backend():
    """Return (interpret, to_device, to_host), printing which path runs."""
    if nt.gpu_available():
        try:
            import cupy

            print("running on the GPU (CuPy arrays)")
            return False, cupy.asarray, cupy.asnumpy
        except ImportError:
            from numba import cuda

            print("running on the GPU (Numba device arrays)")
            return False, cuda.to_device, lambda a: a.copy_to_host()
    print("no CUDA GPU found: running in the numba_tile interpreter (CPU, NumPy)")
    return True, np.array, np.array


def dtype_name(array) -> str:
    """The element type of a NumPy, CuPy, Numba or PyTorch array as a name numba_tile
    accepts ("float32", "bfloat16", ...)."""
    return str(array.dtype).replace("torch.", "")


ROW_DTYPES = ("float16", "bfloat16", "float32")


def check_rows(op: str, x, y, **vectors) -> str:
    """Check the arguments of a row-wise op before launching it: ``x`` and ``y`` 2-D of one
    shape and one dtype among :data:`ROW_DTYPES`, every ``vectors`` entry (weight, bias) 1-D
    of ``x.shape[1]`` elements of that dtype. Returns the dtype's name.

    Raises:
        ValueError: naming the argument, what was expected and what was given.
    """
    dt = dtype_name(x)
    if dt not in ROW_DTYPES:
        raise ValueError(f"{op}: x: expected float16, bfloat16 or float32, got {dt}")
    if len(x.shape) != 2:
        raise ValueError(f"{op}: x: expected a 2-D array (rows, columns), got shape "
                         f"{tuple(x.shape)}")
    if tuple(y.shape) != tuple(x.shape) or dtype_name(y) != dt:
        raise ValueError(f"{op}: y: expected {tuple(x.shape)} {dt} (x's shape and dtype), got "
                         f"{tuple(y.shape)} {dtype_name(y)}")
    for name, v in vectors.items():
        if tuple(v.shape) != (x.shape[1],) or dtype_name(v) != dt:
            raise ValueError(f"{op}: {name}: expected ({x.shape[1]},) {dt} (one per column of "
                             f"x), got {tuple(v.shape)} {dtype_name(v)}")
    return dt


def check_result(name: str, got, expected, rtol: float, atol: float, detail: str = "") -> None:
    """Print the largest error of ``got`` against the float64 ``expected`` and OK, or exit
    with WRONG RESULT when they differ beyond ``rtol``/``atol`` (``numpy.allclose``)."""
    err = np.max(np.abs(got - expected))
    print(f"{name}: {detail}max |error| = {err:.3g}")
    if not np.allclose(got, expected, rtol=rtol, atol=atol):
        raise SystemExit(f"{name}: WRONG RESULT")
    print(f"{name}: OK")


#: the command that installs numba_tile's optional PyTorch dependency (``pyproject.toml``)
TORCH_EXTRA = 'pip install -e ".[torch]"'


def require_torch(example: str, what: str = "PyTorch", modules=("torch",)):
    """``torch``, or exit (status 1) with a message naming the extra that installs it.

    Args:
        example: the example's name, which starts the message.
        what: what the example needs PyTorch for.
        modules: the modules to import (``"torch.distributed"``...).

    Raises:
        SystemExit: PyTorch (or one of ``modules``) cannot be imported.
    """
    try:
        for name in modules:
            importlib.import_module(name)
    except ImportError as exc:
        raise SystemExit(f"{example}: needs {what}, which cannot be imported here ({exc}).\n"
                         f"Install numba_tile with its torch extra: {TORCH_EXTRA}") from None
    return importlib.import_module("torch")


def empty_like(a):
    """An uninitialized array of ``a``'s shape and dtype on ``a``'s device, of ``a``'s kind
    (NumPy, CuPy, PyTorch or a Numba device array): a kernel's workspace."""
    module = type(a).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.empty_like(a)
    if module == "cupy":
        import cupy
        return cupy.empty_like(a)
    if module == "numba":
        from numba import cuda
        return cuda.device_array(a.shape, a.dtype)
    return np.empty_like(a)
