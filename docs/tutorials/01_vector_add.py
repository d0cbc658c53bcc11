"""Tutorial 1: vector add, z = x + y.

The smallest numba_tile kernel: one block per 1024-element tile of the output, the grid
inferred from the partition, the ragged last tile masked. Runs on the GPU when there is one
(CuPy arrays), otherwise in the numba_tile interpreter (NumPy arrays), and says which;
checks the result against NumPy in float64 and exits nonzero on a mismatch.
"""

import os
import sys

import numpy as np

import numba_tile as nt


def backend():
    """``(interpret, to_device, to_host)``: the GPU when there is one, else the interpreter
    (``NUMBA_TILE_INTERPRET=1`` asks for the interpreter on a GPU machine too)."""
    if os.environ.get("NUMBA_TILE_INTERPRET", "0") in ("", "0") and nt.gpu_available():
        try:
            import cupy
            print("running on the GPU (CuPy arrays)")
            return False, cupy.asarray, cupy.asnumpy
        except ImportError:
            from numba import cuda
            print("running on the GPU (Numba device arrays)")
            return False, cuda.to_device, lambda a: a.copy_to_host()
    print("running in the numba_tile interpreter (CPU, NumPy arrays)")
    return True, np.asarray, np.asarray


def check(name, got, want, rtol, atol):
    """Exit with a message unless ``got`` matches the float64 ``want``."""
    err = np.max(np.abs(np.asarray(got, np.float64) - want))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        sys.exit(f"{name}: WRONG RESULT, max |error| = {err:.3g}")
    print(f"{name}: checked against NumPy (float64), max |error| = {err:.3g}")


@nt.jit
def vector_add(x, y, z: nt.Partition["B"], B: nt.Constant):
    """z = x + y on this block's own (B,) tile of z."""
    a = nt.load_like(x, z)          # the tile of x at the position of z's tile
    b = nt.load_like(y, z)
    nt.store(z, a + b)              # the block's own tile of z: the only place it may write


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    n = int(rng.integers(5_000, 50_000))        # not a multiple of the tile: a ragged edge
    x_h = rng.standard_normal(n).astype(np.float32)
    y_h = rng.standard_normal(n).astype(np.float32)
    x, y = to_device(x_h), to_device(y_h)
    z = to_device(np.full(n, np.nan, np.float32))

    # [launch]
    handle = vector_add(x, y, nt.partition(z, 1024), 1024, interpret=interpret)
    handle.sync()                               # the launch is asynchronous: wait for it
    # [launch-end]

    check(f"vector_add (n={n}, {-(-n // 1024)} blocks)", to_host(z),
          x_h.astype(np.float64) + y_h, rtol=1e-6, atol=1e-6)


if __name__ == "__main__":
    main()
