"""Shared by the examples: pick the GPU when there is one, else the interpreter."""

from __future__ import annotations

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
