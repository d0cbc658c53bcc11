"""Tutorial 2: fused elementwise, y = gelu(x + bias) in one pass over float16 activations.

A bias broadcast along the rows, the exact (erf) GELU computed in float32, one rounding to
float16 at the store; then the same update done in place on one array. Runs on the GPU when
there is one (CuPy arrays), otherwise in the numba_tile interpreter (NumPy arrays), and says
which; checks against NumPy in float64 and exits nonzero on a mismatch.
"""

import math
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
def bias_gelu(x, bias, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """y = gelu(x + bias) for this block's (BM, BN) tile; bias has one value per column."""
    t = nt.astype(nt.load_like(x, y), nt.float32)              # (BM, BN), float32
    b = nt.astype(nt.load(bias, (nt.bid(1),), (BN,)), nt.float32)  # (BN,): this tile's columns
    t = t + b                                                  # broadcasts over the rows
    g = 0.5 * t * (1.0 + nt.erf(t * (1.0 / math.sqrt(2.0))))
    nt.store(y, nt.astype(g, nt.float16))                      # one rounding, explicit


@nt.jit
def bias_gelu_inplace(h: nt.Partition[("BM", "BN")], bias, BM: nt.Constant, BN: nt.Constant):
    """h = gelu(h + bias) in place: load and store the block's own tile of one partition."""
    t = nt.astype(nt.load(h), nt.float32) + nt.astype(nt.load(bias, (nt.bid(1),), (BN,)),
                                                      nt.float32)
    nt.store(h, nt.astype(0.5 * t * (1.0 + nt.erf(t * (1.0 / math.sqrt(2.0)))), nt.float16))


def gelu64(v):
    """The exact GELU in float64."""
    return 0.5 * v * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    m, n = (int(v) for v in rng.integers(50, 300, 2))          # ragged in both axes
    x_h = (2 * rng.standard_normal((m, n))).astype(np.float16)
    b_h = rng.standard_normal(n).astype(np.float16)
    want = gelu64(x_h.astype(np.float64) + b_h.astype(np.float64))

    y = to_device(np.full((m, n), np.nan, np.float16))
    bias_gelu(to_device(x_h), to_device(b_h), nt.partition(y, (32, 64)), 32, 64,
              interpret=interpret).sync()
    check(f"bias_gelu ({m} x {n}, float16)", to_host(y), want, rtol=2e-3, atol=2e-3)

    h = to_device(x_h.copy())
    bias_gelu_inplace(nt.partition(h, (32, 64)), to_device(b_h), 32, 64,
                      interpret=interpret).sync()
    check(f"bias_gelu_inplace ({m} x {n}, float16)", to_host(h), want, rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    main()
