"""A tensor-parallel matrix product: numba_tile computes, torch.distributed communicates.

Each of the world's ``P`` ranks holds a slice of the inner dimension, ``A[:, k0:k1]`` and
``B[k0:k1, :]``, computes its partial product ``C_r = A_r @ B_r`` with numba_tile's GEMM
(``examples/gemm.py``'s kernel: a safe kernel, each block writes its own tiles of ``C_r``), and
``torch.distributed.all_reduce(C, SUM)`` gives every rank ``C = A @ B``: NCCL between GPUs
(each rank on its own device, ``LOCAL_RANK``), gloo between CPU processes (where numba_tile
runs in its interpreter and says so). numba_tile launches on PyTorch's current stream, the
stream the collective waits for, so the reduction starts after the product.

    torchrun --nproc-per-node 2 examples/data_parallel.py     # two ranks (two GPUs, or CPUs)
    python examples/data_parallel.py                          # one process: a world of one

Every rank checks its result exactly against NumPy's product of the same integer-valued
inputs (entries in {-1, 0, 1}: every partial and total sum is an integer below 2048 in
magnitude, exact in float16) and prints ``data_parallel: OK`` (rank 0 also the world size
and backend).

Needs PyTorch: ``pip install -e ".[torch]"``. Without it the example says so and exits with
status 1.
"""

from __future__ import annotations

import os
import socket
import sys

import numpy as np

import numba_tile as nt

try:
    import gemm
    from _common import require_torch
except ImportError:
    from examples import gemm
    from examples._common import require_torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_world():
    """``(dist, rank, world, device, on_gpu)``: the process group (a world of one when not
    started by torchrun), NCCL and this rank's GPU where there are GPUs, gloo and the CPU
    otherwise."""
    import torch
    import torch.distributed as dist
    if "RANK" not in os.environ:                  # python examples/data_parallel.py
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(_free_port()))
    on_gpu = torch.cuda.is_available() and nt.gpu_available()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if on_gpu:
        if local >= torch.cuda.device_count():
            raise RuntimeError(f"data_parallel: LOCAL_RANK {local} but {torch.cuda.device_count()} "
                               f"GPU(s): start at most one rank per GPU")
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if on_gpu else "gloo")
    device = torch.device("cuda", local) if on_gpu else torch.device("cpu")
    return dist, dist.get_rank(), dist.get_world_size(), device, on_gpu


def shard(k: int, rank: int, world: int) -> tuple:
    """This rank's slice ``[k0, k1)`` of the inner dimension (as even as possible)."""
    return rank * k // world, (rank + 1) * k // world


def tensor_parallel_matmul(a_shard, b_shard, c, dist, *, on_gpu: bool):
    """``c = sum over ranks of a_shard @ b_shard``: numba_tile's product into ``c``, then an
    all-reduce of ``c``. ``a_shard`` (M, k1 - k0), ``b_shard`` (k1 - k0, N), ``c`` (M, N), one
    float16 or bfloat16 dtype, PyTorch tensors on this rank's device (CPU tensors: the
    interpreter, through their NumPy views)."""
    import torch
    if on_gpu:
        gemm.matmul(a_shard, b_shard, c, stream=torch.cuda.current_stream())
    else:
        gemm.matmul(a_shard.numpy(), b_shard.numpy(), c.numpy(), interpret=True).sync()
    dist.all_reduce(c, op=dist.ReduceOp.SUM)
    return c


def main() -> None:
    torch = require_torch("data_parallel", "PyTorch (torch.distributed)",
                          ("torch", "torch.distributed"))
    dist, rank, world, device, on_gpu = init_world()
    try:
        if rank == 0:
            print(f"data_parallel: world of {world}, backend {dist.get_backend()}"
                  + ("" if on_gpu else " (no CUDA GPU: numba_tile runs in its interpreter)"))
        m, n, k = (512, 384, 1536) if on_gpu else (48, 40, 96)
        # one seed for every rank: the same full operands everywhere, each rank its slice
        seed = torch.tensor([np.random.SeedSequence().entropy % (1 << 62)], dtype=torch.int64,
                            device=device)
        dist.broadcast(seed, 0)
        rng = np.random.default_rng(int(seed.item()))
        a_h = rng.integers(-1, 2, (m, k)).astype(np.float16)
        b_h = rng.integers(-1, 2, (k, n)).astype(np.float16)
        k0, k1 = shard(k, rank, world)
        a = torch.from_numpy(np.ascontiguousarray(a_h[:, k0:k1])).to(device)
        b = torch.from_numpy(np.ascontiguousarray(b_h[k0:k1])).to(device)
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
        tensor_parallel_matmul(a, b, c, dist, on_gpu=on_gpu)
        got = c.cpu().numpy().astype(np.float64)
        want = a_h.astype(np.float64) @ b_h.astype(np.float64)
        err = float(np.abs(got - want).max())
        ok = err == 0.0
        print(f"data_parallel: rank {rank}: C = A @ B ({m}x{n}x{k}, K slice {k0}:{k1}), "
              f"max |error| = {err:.3g}")
        print("data_parallel: OK" if ok else "data_parallel: WRONG RESULT")
        if not ok:
            sys.exit(1)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
