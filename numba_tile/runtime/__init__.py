"""Host-side runtime of numba_tile: everything between a user's launch call and the CUDA driver.

Modules, one concern each (private; the public API is re-exported by ``numba_tile/__init__.py``):

* :mod:`~numba_tile.runtime.arrays`: launch arguments (NumPy, CUDA Array Interface, PyTorch, DLPack)
  described as :class:`~numba_tile.runtime.arrays.ArrayArg` (address, shape, byte strides, dtype).
* :mod:`~numba_tile.runtime.dlpack`: reading DLPack capsules with ctypes.
* :mod:`~numba_tile.runtime.overlap`: exact memory overlap between and within arguments.
* :mod:`~numba_tile.runtime.partition`: host :class:`~numba_tile.runtime.partition.Partition`
  objects.
* :mod:`~numba_tile.runtime.launch_checks`: the launch-time ownership checks.
* :mod:`~numba_tile.runtime.streams`: stream handles from CuPy, Numba, PyTorch and cuda.core
  streams.
* :mod:`~numba_tile.runtime.params`: kernel parameter packing (precomputed offsets).
* :mod:`~numba_tile.runtime.driver`: thin layer over ``cuda.bindings.driver`` (imported lazily).
* :mod:`~numba_tile.runtime.inflight`: the process-wide registry that keeps in-flight launches'
  arguments alive.
* :mod:`~numba_tile.runtime.launcher`: queueing a checked launch, and launch plans (a repeated
  call of one argument kind pays the full checks once).
* :mod:`~numba_tile.runtime.guards`: each plan's generated guard and runner (the fast path).
* :mod:`~numba_tile.runtime.capture`: launches under CUDA stream capture, and ``Graph``.
* :mod:`~numba_tile.runtime.defaults`: per-thread launch defaults (``launch_defaults``).
* :mod:`~numba_tile.runtime.fakes`: a ``__cuda_array_interface__`` stand-in over NumPy memory, for
  tests without a GPU.

Nothing here needs a GPU to import.
"""
