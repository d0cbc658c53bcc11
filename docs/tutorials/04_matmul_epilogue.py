"""Tutorial 4: a matrix product with an epilogue, y = relu(x @ w.T + bias) in float16.

A linear layer: x (M, K), the weight w (N, K) as PyTorch's ``nn.Linear`` stores it, a bias
(N,). Tensor-core products accumulate in float32 over the K loop; the epilogue (bias, ReLU,
one rounding to float16) runs on the accumulator before the only store. Runs on the GPU when
there is one (CuPy arrays), otherwise in the numba_tile interpreter (NumPy arrays), and says
which. Inputs are small integers, so every float32 sum is exact and the result must equal
NumPy's float64 result rounded once to float16, element for element.
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


@nt.jit(num_warps=4, num_stages=3)
def linear_relu(x, w, bias, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
    """y's (BM, BN) tile: relu(sum over k of x[i, k] @ w[j, k].T + bias[j])."""
    i = nt.bid(0)                                   # this block's tile row of y
    j = nt.bid(1)                                   # and tile column
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(x, 1, BK)):         # ceil(K / BK) steps along K
        a = nt.load(x, (i, k), (BM, BK), padding=0)         # (BM, BK)
        b = nt.load(w, (j, k), (BN, BK), padding=0)         # (BN, BK): rows of w are columns
        acc = nt.mma(a, nt.transpose(b), acc)               # acc + a @ b.T, tensor cores
    # the epilogue, on the float32 accumulator in registers
    acc = acc + nt.astype(nt.load(bias, (j,), (BN,), padding=0), nt.float32)
    nt.store(y, nt.astype(nt.maximum(acc, 0.0), nt.float16))


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    scale = 1 if interpret else 8                   # the interpreter is slow: small shapes
    m, n = (int(v) for v in rng.integers(60, 200, 2) * scale)     # ragged M and N
    k = 8 * int(rng.integers(10, 30)) * scale       # rows of 16-byte multiples: pipelined
    x_h = rng.integers(-3, 4, (m, k)).astype(np.float16)
    w_h = rng.integers(-3, 4, (n, k)).astype(np.float16)
    b_h = rng.integers(-20, 21, n).astype(np.float16)

    y = to_device(np.full((m, n), np.nan, np.float16))
    bm, bn, bk = 64, 64, 64
    linear_relu(to_device(x_h), to_device(w_h), to_device(b_h), nt.partition(y, (bm, bn)),
                bm, bn, bk, interpret=interpret).sync()

    exact = x_h.astype(np.float64) @ w_h.astype(np.float64).T + b_h
    want = np.maximum(exact, 0).astype(np.float16).astype(np.float64)   # rounded once
    check(f"linear_relu (M={m} N={n} K={k}, tiles {bm}x{bn}x{bk})", to_host(y), want, 0, 0)


if __name__ == "__main__":
    main()
