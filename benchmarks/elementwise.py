"""Elementwise benchmark: add and saxpy, numba_tile against Triton, CuPy and numba-cuda.

Run on a GPU machine (``python benchmarks/elementwise.py``). For each op, dtype
(float32, float16, bfloat16) and size (2^20 ... 2^28 elements) it prints the bandwidth
of every implementation, counted as bytes read plus bytes written (3 * n * itemsize),
and the ratio numba_tile / Triton, all measured in the same run. Then it prints the
launch overhead of a one-block kernel: host wall time per launch over many launches.

Method (``/work/shared/GPU.md``): CUDA events around a window of ``--reps`` launches,
median over ``--windows`` windows, after warm-up; when one set of buffers is smaller
than 4x the 60 MB L2, launches rotate over several sets so the cache cannot serve
them. Results are checked against NumPy (float64) before timing.

Figures from the H200 (2026-11-30; full table in ``docs/performance.md``): float32 add
at 2^28 elements, numba_tile 4.36 TB/s against Triton 4.38 TB/s (0.995x), CuPy 2.52,
numba-cuda 3.39; every dtype and op at 2^26 and 2^28 at 0.98x to 1.00x Triton. Launch
overhead of a one-block kernel: numba_tile about 40 us, CuPy ``RawKernel`` 5.5 us,
Triton 11.5 us, numba-cuda 21 us (Numba arrays) and 62 us (CuPy arrays).

Peers: Triton (the tutorial's ``add`` kernel, BLOCK_SIZE=1024), CuPy (``x + y``,
``a * x + y`` as CuPy computes them, float32/float16 only: CuPy has no bfloat16), and
a plain numba-cuda kernel (one element per thread, 256 threads per block;
float32/float16 only: the CUDA Array Interface has no bfloat16). A peer that does not
import is n/a in the table.

After the table, ``--plot PATH`` (default ``docs/plots/elementwise.png``) draws it: the
ratios numba_tile / peer per op, dtype and size, and the bandwidths (``--no-plot``: none).
``benchmarks/launch.py`` measures the launch cost in more detail (1, 3 and 8 arrays, every
array library, graph replay).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import numba_tile as nt

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))          # benchmarks/_plot.py (also when imported by a test)
import _plot  # noqa: E402

L2_BYTES = 60 * 2**20
PEERS = ("triton", "cupy", "numba-cuda")


# ------------------------------------------------------------------------------ kernels

@nt.jit
def nt_add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def nt_saxpy(alpha, x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, alpha * nt.load_like(x, z) + nt.load_like(y, z))


def _triton_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @triton.jit
    def saxpy_kernel(alpha, x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, (alpha * x + y).to(x.dtype), mask=mask)

    def add(x, y, z):
        n = z.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK_SIZE=1024)

    def saxpy(a, x, y, z):
        n = z.numel()
        saxpy_kernel[(triton.cdiv(n, 1024),)](a, x, y, z, n, BLOCK_SIZE=1024)

    return add, saxpy


def _numba_kernels():
    from numba import cuda

    @cuda.jit
    def add_kernel(x, y, z):
        i = cuda.grid(1)
        if i < z.shape[0]:
            z[i] = x[i] + y[i]

    @cuda.jit
    def saxpy_kernel(a, x, y, z):
        i = cuda.grid(1)
        if i < z.shape[0]:
            z[i] = a * x[i] + y[i]

    def add(x, y, z):
        n = z.shape[0]
        add_kernel[(n + 255) // 256, 256](x, y, z)

    def saxpy(a, x, y, z):
        n = z.shape[0]
        saxpy_kernel[(n + 255) // 256, 256](np.float32(a), x, y, z)

    return add, saxpy


# ------------------------------------------------------------------------------ timing

def time_launches(fn, sets, reps, windows, torch):
    """Median milliseconds per launch of ``fn(*sets[i % len(sets)])``."""
    for s in sets[:2]:
        fn(*s)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(windows):
        start.record()
        for i in range(reps):
            fn(*sets[i % len(sets)])
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop) / reps)
    return statistics.median(out)


def bench_bandwidth(args, torch):
    try:
        triton_add, triton_saxpy = _triton_kernels()
    except Exception as exc:  # ImportError: the column is n/a
        print(f"Triton unavailable ({type(exc).__name__}: {exc}): its column is n/a")
        triton_add = triton_saxpy = None
    numba_add, numba_saxpy = _numba_kernels()
    try:
        import cupy
    except Exception as exc:
        print(f"CuPy unavailable ({type(exc).__name__}: {exc}): its column is n/a")
        cupy = None
    from numba import cuda

    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    rows = []
    alpha = 1.75
    for op in args.ops:
        for dname in args.dtypes:
            tdt = dtypes[dname]
            for logn in args.sizes:
                n = 2**logn
                itemsize = torch.tensor([], dtype=tdt).element_size()
                nset = max(1, -(-4 * L2_BYTES // (3 * n * itemsize)))
                sets_t = []
                for _ in range(nset):
                    x = torch.randn(n, device="cuda", dtype=tdt)
                    y = torch.randn(n, device="cuda", dtype=tdt)
                    z = torch.empty(n, device="cuda", dtype=tdt)
                    sets_t.append((x, y, z))
                ref = (sets_t[0][0].double() + sets_t[0][1].double()) if op == "add" else \
                    (alpha * sets_t[0][0].double() + sets_t[0][1].double())
                impls = {}
                block = args.block

                if op == "add":
                    impls["numba_tile"] = (lambda x, y, z: nt_add(x, y, nt.partition(z, block), block), sets_t)
                    if triton_add is not None:
                        impls["triton"] = (triton_add, sets_t)
                else:
                    impls["numba_tile"] = (lambda x, y, z: nt_saxpy(alpha, x, y, nt.partition(z, block), block), sets_t)
                    if triton_saxpy is not None:
                        impls["triton"] = (lambda x, y, z: triton_saxpy(alpha, x, y, z), sets_t)
                if dname != "bf16":
                    if cupy is not None:
                        sets_c = [tuple(cupy.asarray(t) for t in s) for s in sets_t]
                        if op == "add":
                            impls["cupy"] = (lambda x, y, z: cupy.add(x, y, out=z), sets_c)
                        else:
                            impls["cupy"] = (lambda x, y, z: cupy.add(cupy.multiply(alpha, x, dtype=x.dtype), y, out=z), sets_c)
                    sets_n = [tuple(cuda.as_cuda_array(t) for t in s) for s in sets_t]
                    impls["numba-cuda"] = (numba_add if op == "add" else
                                           (lambda x, y, z: numba_saxpy(alpha, x, y, z)), sets_n)
                res = {}
                for name, (fn, sets) in impls.items():
                    sets_t[0][2].fill_(float("nan"))
                    fn(*sets[0])
                    torch.cuda.synchronize()
                    err = (sets_t[0][2].double() - ref).abs().max().item()
                    bound = 1e-5 if dname == "fp32" else 2e-2
                    scale = ref.abs().max().item()
                    if not err <= bound * max(scale, 1.0):
                        print(f"WRONG RESULT: {name} {op} {dname} 2^{logn}: max err {err}", file=sys.stderr)
                        res[name] = float("nan")
                        continue
                    ms = time_launches(fn, sets, args.reps, args.windows, torch)
                    res[name] = 3 * n * itemsize / (ms * 1e-3) / 1e12
                rows.append((op, dname, logn, res))
                del sets_t, impls
                torch.cuda.empty_cache()
    return rows


def print_bandwidth(rows):
    names = ["numba_tile", "triton", "cupy", "numba-cuda"]
    head = "| op | dtype | n | " + " | ".join(f"{n} TB/s" for n in names) + \
        " | numba_tile/triton | numba_tile/cupy | numba_tile/numba-cuda |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for op, dname, logn, res in rows:
        cells = [f"{res[n]:.2f}" if n in res else "n/a" for n in names]
        ratios = [f"{res['numba_tile'] / res[n]:.3f}" if n in res and res[n] > 0 else "n/a"
                  for n in PEERS]
        print(f"| {op} | {dname} | 2^{logn} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


def bandwidth_ratio(res, peer):
    """numba_tile's TB/s over ``peer``'s in one row, NaN unless both were measured."""
    a, b = res.get("numba_tile", math.nan), res.get(peer, math.nan)
    return a / b if b > 0 else math.nan


def plot_panels(rows):
    """The figure of :func:`_plot.plot`: numba_tile / peer and TB/s per op, dtype and size."""
    cats = [(f"{op} {dname}", f"2^{logn}") for op, dname, logn, _ in rows]
    ratios = {p: [bandwidth_ratio(res, p) for _, _, _, res in rows] for p in PEERS}
    absolute = {n: [res.get(n, math.nan) for _, _, _, res in rows]
                for n in ("numba_tile", *PEERS)}
    return [_plot.Panel("numba_tile's bandwidth over each peer's, per op, dtype and size "
                        "(elements)", cats, ratios, "numba_tile / peer bandwidth", ratio=True,
                        better="higher"),
            _plot.Panel("bandwidth, bytes read + written over time", cats, absolute,
                        "TB/s (log)", log=True, style="lines")]


def bench_launch(args, torch):
    """Host wall time per launch of a one-block kernel, microseconds."""
    import cupy
    import triton
    import triton.language as tl
    from numba import cuda

    n = 256
    x = torch.randn(n, device="cuda")
    z = torch.empty(n, device="cuda")
    xc, zc = cupy.asarray(x), cupy.asarray(z)
    xd, zd = cuda.to_device(np.ones(n, np.float32)), cuda.device_array(n, np.float32)

    @nt.jit
    def nt_copy(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z))

    raw = cupy.RawKernel(r'''
    extern "C" __global__ void copy(const float* x, float* z, int n) {
        int i = threadIdx.x; if (i < n) z[i] = x[i]; }''', "copy")

    @triton.jit
    def tcopy(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    @cuda.jit
    def ncopy(x, z):
        i = cuda.threadIdx.x
        if i < z.shape[0]:
            z[i] = x[i]

    cases = {
        "numba_tile (torch arrays)": lambda: nt_copy(x, nt.partition(z, n), n),
        "numba_tile (cupy arrays)": lambda: nt_copy(xc, nt.partition(zc, n), n),
        "cupy RawKernel": lambda: raw((1,), (n,), (xc, zc, np.int32(n))),
        "triton": lambda: tcopy[(1,)](x, z, n, BLOCK=n),
        "numba-cuda (numba arrays)": lambda: ncopy[1, n](xd, zd),
        "numba-cuda (cupy arrays)": lambda: ncopy[1, n](xc, zc),
    }
    out = {}
    for name, fn in cases.items():
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(args.launches):
                fn()
            torch.cuda.synchronize()
            best.append((time.perf_counter() - t0) / args.launches * 1e6)
        out[name] = min(best)
    return out


def profile_launch(torch):
    import cProfile
    import pstats

    n = 256
    x = torch.randn(n, device="cuda")
    z = torch.empty(n, device="cuda")

    @nt.jit
    def nt_copy2(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z))

    for _ in range(10):
        nt_copy2(x, nt.partition(z, n), n)
    torch.cuda.synchronize()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        nt_copy2(x, nt.partition(z, n), n)
    torch.cuda.synchronize()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[20, 22, 24, 26, 28], help="log2 sizes")
    p.add_argument("--dtypes", nargs="+", default=["fp32", "fp16", "bf16"])
    p.add_argument("--ops", nargs="+", default=["add", "saxpy"])
    p.add_argument("--block", type=int, default=1024, help="numba_tile tile size")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--windows", type=int, default=15)
    p.add_argument("--launches", type=int, default=2000)
    p.add_argument("--skip-bandwidth", action="store_true")
    p.add_argument("--profile-launch", action="store_true", help="cProfile 2000 one-block launches")
    _plot.add_plot_arguments(p, "elementwise")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not nt.gpu_available():
        raise SystemExit("benchmarks/elementwise.py needs a CUDA GPU")
    import torch

    print(f"device: {torch.cuda.get_device_name()}")
    if not args.skip_bandwidth:
        rows = bench_bandwidth(args, torch)
        print(f"\nbandwidth (bytes read + written over time), numba_tile tile={args.block}:\n")
        print_bandwidth(rows)
        sys.stdout.flush()
        _plot.plot(args.plot, f"numba_tile elementwise bandwidth: {torch.cuda.get_device_name()}",
                   plot_panels(rows),
                   note=f"numba_tile tile {args.block}; median of {args.windows} windows of "
                        f"{args.reps} launches (CUDA events)")
    if args.profile_launch:
        profile_launch(torch)
    try:
        lo = bench_launch(args, torch)
    except ImportError as exc:
        print(f"\nlaunch overhead skipped ({exc}); benchmarks/launch.py measures it with the "
              f"peers that are installed")
        return
    print(f"\nlaunch overhead, one-block kernel, host wall time per launch over {args.launches} launches:\n")
    print("| kernel | us/launch | ratio to cupy RawKernel |")
    print("|---|---|---|")
    for name, us in lo.items():
        print(f"| {name} | {us:.1f} | {us / lo['cupy RawKernel']:.2f} |")


if __name__ == "__main__":
    main()
