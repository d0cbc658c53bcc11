"""Tutorial 9: helpers and numba-cuda device functions.

Kernels call plain Python functions written with numba_tile's ops (inlined and checked as
kernel code), and existing ``@cuda.jit(device=True)`` scalar functions, which are applied
to each element of a tile. Here: an elementwise Huber loss written as a numba-cuda device
function, and a leaky ReLU and a load-and-convert written as helpers. Runs on the GPU when
there is one (CuPy arrays), otherwise in the numba_tile interpreter (NumPy arrays), and says
which; checks against NumPy in float64 and exits nonzero on a mismatch.
"""

import os
import sys

import numpy as np
from numba import cuda

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


@cuda.jit(device=True)
def huber(d, delta):
    """Huber loss of one difference: scalar numba-cuda code, branches and all."""
    a = abs(d)
    if a <= delta:
        return 0.5 * d * d
    return delta * (a - 0.5 * delta)


def load_f32(x, like):
    """A helper: the tile of ``x`` at ``like``'s tile, as float32."""
    return nt.astype(nt.load_like(x, like), nt.float32)


def leaky_relu(t, slope=0.01):
    """A helper with a keyword default."""
    return nt.where(t > 0, t, t * slope)


@nt.jit
def huber_and_act(pred, target, loss: nt.Partition["B"], act: nt.Partition["B"], delta,
                  B: nt.Constant):
    """loss = huber(pred - target, delta) per element; act = leaky_relu(pred, 0.1)."""
    p = load_f32(pred, loss)                  # helpers are inlined: this is the kernel's load
    t = load_f32(target, loss)
    h = huber(p - t, delta)                   # a device function applied to each element
    nt.store(loss, nt.astype(h, nt.float32))  # float64 by Numba's typing: narrow explicitly
    nt.store(act, leaky_relu(p, slope=0.1))


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    n = int(rng.integers(2000, 20000)) * (1 if interpret else 100)
    pred_h = (2 * rng.standard_normal(n)).astype(np.float16)
    target_h = (2 * rng.standard_normal(n)).astype(np.float16)
    loss = to_device(np.full(n, np.nan, np.float32))
    act = to_device(np.full(n, np.nan, np.float32))
    huber_and_act(to_device(pred_h), to_device(target_h), nt.partition(loss, 1024),
                  nt.partition(act, 1024), 1.5, 1024, interpret=interpret).sync()

    p, t = pred_h.astype(np.float64), target_h.astype(np.float64)
    d = np.abs(p - t)
    check(f"huber ({n} elements, float16 inputs)", to_host(loss),
          np.where(d <= 1.5, 0.5 * d * d, 1.5 * (d - 0.75)), rtol=1e-6, atol=1e-6)
    check("leaky_relu", to_host(act), np.where(p > 0, p, 0.1 * p), rtol=1e-6, atol=1e-7)


if __name__ == "__main__":
    main()
