"""Backends for tests: where arrays live and how kernels are launched."""

from __future__ import annotations

import numpy as np


class Backend:
    """One way of running kernels in a test: on the GPU or in the interpreter.

    Attributes:
        name: ``'gpu'`` or ``'interpreter'``.
        interpret: passed as ``interpret=`` to every launch.
    """

    def __init__(self, name: str):
        if name not in ("gpu", "interpreter"):
            raise ValueError(f"backend name: expected 'gpu' or 'interpreter', got {name!r}")
        self.name = name
        self.interpret = name == "interpreter"

    def __repr__(self):
        return f"Backend({self.name!r})"

    def asarray(self, host: np.ndarray):
        """A copy of ``host`` where kernels of this backend read it: a device array on
        the GPU (CuPy when installed, else a Numba device array), a NumPy array in the
        interpreter."""
        host = np.asarray(host)
        if self.interpret:
            return host.copy()
        from ..dtypes import BFLOAT16_NP, FLOAT8_E4M3FN_NP, FLOAT8_E5M2_NP
        if host.dtype in (FLOAT8_E4M3FN_NP, FLOAT8_E5M2_NP):
            # CuPy has no FP8 and the CUDA Array Interface cannot say which FP8 it is:
            # PyTorch carries it (its own dtype, or DLPack)
            try:
                import torch
            except ImportError:
                import pytest
                pytest.skip("FP8 device arrays need PyTorch")
            tdt = torch.float8_e4m3fn if host.dtype == FLOAT8_E4M3FN_NP else torch.float8_e5m2
            bits = torch.from_numpy(np.ascontiguousarray(host).view(np.uint8).copy())
            return bits.view(tdt).to("cuda")
        if host.dtype == BFLOAT16_NP:
            # CuPy and the CUDA Array Interface have no bfloat16: PyTorch carries it (DLPack)
            try:
                import torch
            except ImportError:
                import pytest
                pytest.skip("bfloat16 device arrays need PyTorch")
            bits = torch.from_numpy(np.ascontiguousarray(host).view(np.int16).copy())
            return bits.view(torch.bfloat16).to("cuda")
        try:
            import cupy
            return cupy.asarray(host)
        except ImportError:
            from numba import cuda
            return cuda.to_device(np.ascontiguousarray(host))

    def to_numpy(self, arr) -> np.ndarray:
        """Host copy of an array made by :meth:`asarray` (or any view of one)."""
        if isinstance(arr, np.ndarray):
            return arr.copy()
        if hasattr(arr, "get"):
            return arr.get()
        if hasattr(arr, "copy_to_host"):
            return arr.copy_to_host()
        import torch
        t = arr.detach().cpu()
        if t.dtype == torch.bfloat16:
            from ..dtypes import BFLOAT16_NP
            return t.contiguous().view(torch.int16).numpy().view(BFLOAT16_NP)
        if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            from .. import dtypes
            fp8 = dtypes.to_numpy(dtypes.from_any(str(t.dtype).removeprefix("torch.")))
            return t.contiguous().view(torch.uint8).numpy().view(fp8)
        return t.numpy()

    def run(self, kernel, *args, **kwargs):
        """Launch ``kernel`` on this backend and wait for it; returns the launch's arrays."""
        return kernel(*args, interpret=self.interpret, **kwargs).sync()


def available_backends():
    """Names of the backends usable here (``'gpu'`` only where a GPU is present)."""
    from ..runtime.driver import gpu_available
    return ["gpu", "interpreter"] if gpu_available() else ["interpreter"]
