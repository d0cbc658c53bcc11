"""Tutorial 12: PyTorch custom ops under ``torch.compile``.

Two numba_tile kernels registered as ``torch.library`` custom ops with ``nt.torch_op``: a
fused bias + GELU that returns a new tensor, and an in-place ``acc += alpha * x``; then one
``torch.compile(fullgraph=True)`` function that calls both between PyTorch ops. On a GPU the
tensors are CUDA tensors and inductor compiles the graph; without one they are CPU tensors,
the kernels run in the numba_tile interpreter and the graph uses the ``aot_eager`` backend.
Needs PyTorch 2.4 or newer: without it, says so and exits 0. Checks against NumPy in float64
and exits nonzero on a mismatch.
"""

import math
import os
import sys

import numpy as np

import numba_tile as nt

try:
    import torch
except ImportError:
    torch = None


def check(name, got, want, rtol, atol):
    """Exit with a message unless ``got`` matches the float64 ``want``."""
    err = np.max(np.abs(np.asarray(got, np.float64) - want))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        sys.exit(f"{name}: WRONG RESULT, max |error| = {err:.3g}")
    print(f"{name}: checked against NumPy (float64), max |error| = {err:.3g}")


@nt.jit
def bias_gelu_kernel(x, bias, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    t = nt.load_like(x, y) + nt.load(bias, (nt.bid(1),), (BN,))
    nt.store(y, 0.5 * t * (1.0 + nt.erf(t * (1.0 / math.sqrt(2.0)))))


@nt.jit
def axpy_kernel(x, acc: nt.Partition[("BM", "BN")], alpha, BM: nt.Constant, BN: nt.Constant):
    nt.store(acc, nt.load(acc) + alpha * nt.load_like(x, acc))      # in place


def define_ops():
    """Register the two custom ops (needs torch)."""
    @nt.torch_op("tutorial::bias_gelu", fake=lambda x, bias: torch.empty_like(x))
    def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)                      # the op allocates its output
        bias_gelu_kernel(x, bias, nt.partition(y, (32, 64)), BM=32, BN=64)
        return y                                     # tensors, never a launch handle

    @nt.torch_op("tutorial::axpy_", mutates_args=("acc",))
    def axpy_(acc: torch.Tensor, x: torch.Tensor, alpha: float) -> None:
        axpy_kernel(x, nt.partition(acc, (32, 64)), alpha, BM=32, BN=64)

    return bias_gelu, axpy_


def main():
    if torch is None or not hasattr(torch.library, "custom_op"):
        print("12_torch_custom_ops: skipped: needs PyTorch 2.4 or newer (pip install torch)")
        return
    bias_gelu, axpy_ = define_ops()
    on_gpu = (os.environ.get("NUMBA_TILE_INTERPRET", "0") in ("", "0")
              and nt.gpu_available() and torch.cuda.is_available())
    device, backend = ("cuda", "inductor") if on_gpu else ("cpu", "aot_eager")
    where = "the GPU" if on_gpu else "the CPU, the kernels in the numba_tile interpreter"
    print(f"running on {where} (torch.compile backend {backend!r})")

    # [compile]
    def layer(x, bias, acc):
        h = bias_gelu(x, bias)                       # a custom op: one node of the graph
        axpy_(acc, h, 0.5)                           # in place on an input
        return h.sum(dim=1) * 2.0                    # PyTorch ops on the op's result

    compiled = torch.compile(layer, fullgraph=True, backend=backend)
    # [compile-end]
    rng = np.random.default_rng()
    m, n = (int(v) for v in rng.integers(50, 300, 2))
    x_h = rng.standard_normal((m, n)).astype(np.float32)
    b_h = rng.standard_normal(n).astype(np.float32)
    acc_h = rng.standard_normal((m, n)).astype(np.float32)
    acc = torch.from_numpy(acc_h.copy()).to(device)
    out = compiled(torch.from_numpy(x_h).to(device), torch.from_numpy(b_h).to(device), acc)

    t = x_h.astype(np.float64) + b_h
    h = 0.5 * t * (1.0 + np.vectorize(math.erf)(t / math.sqrt(2.0)))
    check(f"compiled layer ({m} x {n}, {device})", out.cpu().numpy(), 2.0 * h.sum(1), 1e-4, 1e-3)
    check("in-place op on acc", acc.cpu().numpy(), acc_h + 0.5 * h, 1e-5, 1e-5)
    check("op called eagerly", bias_gelu(torch.from_numpy(x_h).to(device),
                                         torch.from_numpy(b_h).to(device)).cpu().numpy(),
          h, 1e-5, 1e-5)


if __name__ == "__main__":
    main()
