"""Row-wise softmax, layer norm and RMS norm (forward): numba_tile against Triton and PyTorch.

Run on a GPU machine (``python benchmarks/norms.py``). For each op, dtype (float32, float16,
bfloat16) and row length N (256 ... 32768) over M = 4096 rows, it prints the bandwidth of
every implementation and the ratios numba_tile / Triton and numba_tile / PyTorch, then the
geometric means of those ratios per op and overall. Inputs, weights and outputs are in the
dtype of the row; each implementation computes in whatever precision it chooses.

Bandwidth counts the bytes an ideal kernel moves: ``2 * M * N * itemsize`` (read x, write y)
for softmax, plus ``2 * N * itemsize`` (weight, bias) for layer norm and ``N * itemsize``
(weight) for RMS norm. The Triton layer and RMS norm kernels also write one or two float32
per row (mean, 1/std), which is not counted.

Method: CUDA events on PyTorch's current stream, which every implementation launches on.
After the correctness check and 3 warm-up launches, each timed launch is queued behind a
spin kernel (``torch.cuda._sleep``, about 1 ms) and bracketed by its own pair of events;
the figure is the median over ``--reps`` launches (fewer when one cell and implementation
would take more than ``--budget`` seconds). The spin keeps the queue ahead of the host, so
the figure is the device time of one launch: the host's launch cost (which
``benchmarks/elementwise.py`` measures) is not in it. When the input x is smaller than
64 MiB, launches rotate over enough (x, y) pairs that the inputs total more than 120 MiB,
so the 50-60 MB L2 cache cannot serve a launch from what the previous ones left there;
weight and bias are shared, as in a real model. The L2 is not flushed between launches.

Before it is timed, each implementation's output is compared with a float64 reference that
PyTorch computes on the GPU from the same inputs: the largest absolute error, divided by
the largest magnitude of the reference, must stay under 1e-4 (float32), 1e-2 (float16) or
2e-2 (bfloat16). A result that fails is marked WRONG, an implementation that raises is
marked error (with the exception printed on the line above the row), and neither is timed
or counted in the geometric means; the run goes on.

Implementations:

* numba_tile: the host functions ``softmax``, ``layer_norm`` and ``rms_norm`` of
  ``examples/softmax.py``, ``examples/layernorm.py`` and ``examples/rmsnorm.py``, launched
  with PyTorch tensors; an example that does not exist yet is reported and left out.
* Triton: the kernels of the official tutorials (triton-lang/triton,
  ``python/tutorials/02-fused-softmax.py`` and ``05-layer-norm.py``), with their launch
  heuristics, and an RMS norm kernel written in the layer-norm tutorial's style.
* PyTorch: ``torch.softmax(x, dim=1)``, ``torch.nn.functional.layer_norm`` and
  ``torch.nn.functional.rms_norm``.

``--interpret`` runs only numba_tile, in its interpreter (CPU, NumPy arrays; neither PyTorch
nor Triton needed), on small sizes, and checks each result against NumPy in float64: a smoke
test of the examples and of this harness on a machine without a GPU.

After the tables, ``--plot PATH`` (default ``docs/plots/norms.png``) draws them: the ratios
numba_tile / Triton and numba_tile / PyTorch per op, dtype and N, and the GB/s (``--no-plot``:
none; never in ``--interpret`` runs).

The exit status is 1 when any result was WRONG or any implementation raised.
"""

from __future__ import annotations

import argparse
import importlib
import math
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))           # this repository's numba_tile
sys.path.append(str(ROOT / "examples"))  # the examples, imported by name (as they import siblings)
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))   # benchmarks/_plot.py (also from a test)

import _plot  # noqa: E402
import numba_tile as nt  # noqa: E402

OPS = ("softmax", "layernorm", "rmsnorm")
DTYPES = ("fp32", "fp16", "bf16")
#: numba_tile host function of each op: (module in examples/, function).
NUMBA_TILE_FUNCS = {"softmax": ("softmax", "softmax"), "layernorm": ("layernorm", "layer_norm"),
                    "rmsnorm": ("rmsnorm", "rms_norm")}
EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6}
#: Inputs are ``shift + scale * normal(0, 1)``; the layer-norm tutorial's values for layer norm.
INPUT_SHIFT_SCALE = {"softmax": (0.0, 1.0), "layernorm": (-2.3, 0.5), "rmsnorm": (0.0, 1.0)}
#: Largest error allowed, relative to the largest magnitude of the reference.
TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 2e-2}
IMPLS = ("numba_tile", "triton", "torch")
IMPL_TITLES = {"numba_tile": "numba_tile", "triton": "Triton", "torch": "PyTorch"}

GPU_M, GPU_N = 4096, (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
INTERPRET_M, INTERPRET_N = 8, (256, 1000)
ROTATE_BELOW = 64 * 2**20     # inputs smaller than this rotate over several copies ...
ROTATE_TOTAL = 120 * 2**20    # ... totalling more than this
WARMUP = 3
MIN_REPS = 5
SPIN_CYCLES = 2_000_000       # about 1 ms at H200 clocks: longer than any host launch cost


# ------------------------------------------------------------------------------ shared

def reference(op, xp, x, w, b):
    """``op`` of float64 arrays (NumPy, or PyTorch tensors with ``xp`` = torch)."""
    if op == "softmax":
        e = xp.exp(x - xp.amax(x, axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if op == "layernorm":
        d = x - x.mean(axis=1, keepdims=True)
        return d / xp.sqrt((d * d).mean(axis=1, keepdims=True) + EPS[op]) * w + b
    return x / xp.sqrt((x * x).mean(axis=1, keepdims=True) + EPS[op]) * w


def relative_error(out, ref, to64) -> float:
    """Largest |out - ref| over the largest |ref| (NaN when ``out`` holds a NaN)."""
    return float(abs(to64(out) - ref).max() / abs(ref).max())


def brief(exc: BaseException) -> str:
    """Exception type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__


def load_numba_tile(ops) -> dict:
    """{op: host function} from the examples; a missing or broken example is reported."""
    fns = {}
    for op in ops:
        module, func = NUMBA_TILE_FUNCS[op]
        path = ROOT / "examples" / f"{module}.py"
        if not path.exists():
            print(f"numba_tile {op}: {path.relative_to(ROOT)} does not exist (yet): skipped")
            continue
        try:
            fns[op] = getattr(importlib.import_module(module), func)
        except Exception as exc:
            print(f"numba_tile {op}: importing {path.relative_to(ROOT)} failed: {brief(exc)}")
    return fns


def numba_tile_impl(op, fn, **launch):
    """``fn(x, w, b, y) -> y`` calling the numba_tile host function of ``op``."""
    def run(x, w, b, y):
        if op == "softmax":
            fn(x, y, **launch)
        elif op == "layernorm":
            fn(x, w, b, y, EPS[op], **launch)
        else:
            fn(x, w, y, EPS[op], **launch)
        return y
    return run


def geomean(values):
    return statistics.geometric_mean(values) if values else math.nan


def fmt(value, spec):
    """``value`` formatted, "-" for NaN."""
    return "-" if math.isnan(value) else format(value, spec)


def ratio(res, peer):
    """numba_tile's GB/s over ``peer``'s in one cell's results, NaN unless both were timed."""
    a, b = res["numba_tile"], res[peer]
    return a / b if isinstance(a, float) and isinstance(b, float) else math.nan


# ------------------------------------------------------------------------------ GPU peers

def triton_impls(torch) -> dict:
    """Triton versions of the ops, {op: fn(x, w, b, y) -> y}, as the Triton tutorials write them.

    Softmax and layer norm follow triton-lang/triton ``python/tutorials/02-fused-softmax.py``
    (the persistent kernel) and ``python/tutorials/05-layer-norm.py`` (the forward kernel and
    its launch in ``LayerNorm.forward``); comments mark where this code departs from them.
    """
    import triton
    import triton.language as tl
    from triton.runtime import driver

    @triton.jit
    def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                       BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
        row_start = tl.program_id(0)
        row_step = tl.num_programs(0)
        for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
            row_start_ptr = input_ptr + row_idx * input_row_stride
            col_offsets = tl.arange(0, BLOCK_SIZE)
            input_ptrs = row_start_ptr + col_offsets
            mask = col_offsets < n_cols
            # Departure: the row is computed in float32 (the tutorial only runs float32 inputs;
            # numba_tile and PyTorch compute 16-bit rows in float32 too). The store rounds.
            row = tl.load(input_ptrs, mask=mask, other=-float('inf')).to(tl.float32)
            row_minus_max = row - tl.max(row, axis=0)
            numerator = tl.exp(row_minus_max)
            denominator = tl.sum(numerator, axis=0)
            softmax_output = numerator / denominator
            output_row_start_ptr = output_ptr + row_idx * output_row_stride
            output_ptrs = output_row_start_ptr + col_offsets
            tl.store(output_ptrs, softmax_output, mask=mask)

    @triton.jit
    def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        mean = 0
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y, mask=mask)

    @triton.jit
    def _rms_norm_fwd_fused(X, Y, W, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        # _layer_norm_fwd_fused without the mean and the bias.
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            y = x * rstd * w
            tl.store(Y + cols, y, mask=mask)

    properties = driver.active.utils.get_device_properties(torch.cuda.current_device())
    NUM_SM = properties["multiprocessor_count"]
    NUM_REGS = properties["max_num_regs"]
    SIZE_SMEM = properties["max_shared_mem"]
    WARP_SIZE = properties["warpSize"]
    programs = {}

    def softmax_programs(x, y, BLOCK_SIZE, num_stages, num_warps):
        """Persistent programs: SMs times blocks per SM, from the compiled kernel's registers
        and shared memory (the tutorial's NVIDIA branch); 4 per SM if that query fails."""
        n_rows, n_cols = x.shape
        try:
            kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                           BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages,
                                           num_warps=num_warps, grid=(1, ))
            kernel._init_handles()
            occupancy = NUM_REGS // (kernel.n_regs * WARP_SIZE * num_warps)
            if kernel.metadata.shared:
                occupancy = min(occupancy, SIZE_SMEM // kernel.metadata.shared)
        except Exception as exc:
            print(f"  triton softmax N={n_cols}: occupancy query failed ({brief(exc)}); "
                  f"using 4 programs per SM")
            occupancy = 4
        return min(NUM_SM * max(occupancy, 1), n_rows)

    def softmax(x, w, b, y):
        n_rows, n_cols = x.shape
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        num_warps = 8
        num_stages = 4 if SIZE_SMEM > 200000 else 2
        key = (x.dtype, n_rows, n_cols)
        if key not in programs:
            programs[key] = softmax_programs(x, y, BLOCK_SIZE, num_stages, num_warps)
        # Departure: launched through the JIT function (same compiled kernel) rather than the
        # handle warmup() returned; the host's launch cost is not in the measured time.
        softmax_kernel[(programs[key], 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                              BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages,
                                              num_warps=num_warps)
        return y

    def row_block(x):
        """The layer-norm tutorial's block size and warps. Departure: it refuses rows over
        64 KB (float32 N=32768), which its kernel handles by looping over column blocks."""
        MAX_FUSED_SIZE = 65536 // x.element_size()
        BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(x.shape[1]))
        return BLOCK_SIZE, min(max(BLOCK_SIZE // 256, 1), 8)

    def layer_norm(x, w, b, y):
        M, N = x.shape
        mean = torch.empty((M, ), dtype=torch.float32, device=x.device)
        rstd = torch.empty((M, ), dtype=torch.float32, device=x.device)
        BLOCK_SIZE, num_warps = row_block(x)
        _layer_norm_fwd_fused[(M, )](x, y, w, b, mean, rstd, x.stride(0), N, EPS["layernorm"],
                                     BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_ctas=1)
        return y

    def rms_norm(x, w, b, y):
        M, N = x.shape
        rstd = torch.empty((M, ), dtype=torch.float32, device=x.device)
        BLOCK_SIZE, num_warps = row_block(x)
        _rms_norm_fwd_fused[(M, )](x, y, w, rstd, x.stride(0), N, EPS["rmsnorm"],
                                   BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_ctas=1)
        return y

    return {"softmax": softmax, "layernorm": layer_norm, "rmsnorm": rms_norm}


def torch_impls(torch) -> dict:
    F = torch.nn.functional
    return {
        "softmax": lambda x, w, b, y: torch.softmax(x, dim=1),
        "layernorm": lambda x, w, b, y: F.layer_norm(x, (x.shape[1], ), w, b, EPS["layernorm"]),
        "rmsnorm": lambda x, w, b, y: F.rms_norm(x, (x.shape[1], ), w, EPS["rmsnorm"]),
    }


# ------------------------------------------------------------------------------ GPU timing

def time_ms(fn, sets, args, spin_ms, torch):
    """Median device milliseconds of one ``fn(*sets[i % len(sets)])``, after warm-up."""
    t0 = time.perf_counter()
    for i in range(WARMUP):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    per_launch_s = (time.perf_counter() - t0) / WARMUP + spin_ms * 1e-3
    reps = max(MIN_REPS, min(args.reps, int(args.budget / per_launch_s)))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for i, (start, stop) in enumerate(events):
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        fn(*sets[(WARMUP + i) % len(sets)])
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(stop) for start, stop in events)


def measure_spin_ms(torch) -> float:
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(SPIN_CYCLES)
    start.record()
    torch.cuda._sleep(SPIN_CYCLES)
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def bench_cell(op, dname, n, impls, args, spin_ms, torch):
    """{implementation: GB/s, or "WRONG", "error", "n/a"} for one (op, dtype, N)."""
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dname]
    m = args.m
    itemsize = torch.empty((), dtype=dtype).element_size()
    x_bytes = m * n * itemsize
    nsets = 1 if x_bytes >= ROTATE_BELOW else ROTATE_TOTAL // x_bytes + 1
    shift, scale = INPUT_SHIFT_SCALE[op]
    w = torch.rand(n, device="cuda", dtype=dtype) if op != "softmax" else None
    b = torch.rand(n, device="cuda", dtype=dtype) if op == "layernorm" else None
    sets = [(shift + scale * torch.randn(m, n, device="cuda", dtype=dtype), w, b,
             torch.empty(m, n, device="cuda", dtype=dtype)) for _ in range(nsets)]
    moved = 2 * x_bytes + {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[op] * n * itemsize

    def to64(a):
        return None if a is None else a.double()

    ref = reference(op, torch, to64(sets[0][0]), to64(w), to64(b))
    res = {}
    for name in IMPLS:
        fn = impls[name].get(op)
        if fn is None:
            res[name] = "n/a"
            continue
        try:
            sets[0][3].fill_(math.nan)
            err = relative_error(fn(*sets[0]), ref, to64)
            if not err <= TOL[dname]:
                print(f"  WRONG {name} {op} {dname} N={n}: max error / max |reference| = {err:.3g}")
                res[name] = "WRONG"
                continue
            res[name] = moved / time_ms(fn, sets, args, spin_ms, torch) / 1e6
        except Exception as exc:
            print(f"  error {name} {op} {dname} N={n}: {brief(exc)}")
            res[name] = "error"
    return res


ROW_FORMAT = "{:<10} {:<5} {:>6} {:>11} {:>11} {:>11} {:>10} {:>9}"


def cells(res):
    """One cell's GB/s (or marker) per implementation, then the two ratios, as text."""
    return ([f"{res[k]:.0f}" if isinstance(res[k], float) else res[k] for k in IMPLS]
            + [fmt(ratio(res, "triton"), ".3f"), fmt(ratio(res, "torch"), ".3f")])


def summary(rows, ops):
    """[(label, [numba_tile/Triton ratios], [numba_tile/PyTorch ratios])] per op, then all."""
    out = []
    for label in (*ops, "all"):
        sel = [res for op, _, _, res in rows if label in (op, "all")]
        by_peer = [[r for r in (ratio(res, peer) for res in sel) if not math.isnan(r)]
                   for peer in ("triton", "torch")]
        out.append((label, *by_peer))
    return out


def plot_panels(rows) -> list:
    """The figure of :func:`_plot.plot`: numba_tile / peer and GB/s per op, dtype and N."""
    cats = [(f"{op} {dname}", str(n)) for op, dname, n, _ in rows]
    peers = [p for p in IMPLS if p != "numba_tile"]
    ratios = {IMPL_TITLES[p]: [ratio(res, p) for _, _, _, res in rows] for p in peers}
    absolute = {IMPL_TITLES[i]: [res[i] if isinstance(res.get(i), float) else math.nan
                                 for _, _, _, res in rows] for i in IMPLS}
    return [_plot.Panel("numba_tile's bandwidth over each peer's, per op, dtype and row length N",
                        cats, ratios, "numba_tile / peer GB/s", ratio=True, better="higher"),
            _plot.Panel("bandwidth (ideal bytes moved / device time)", cats, absolute, "GB/s",
                        style="lines")]


def print_markdown(rows, summ):
    print("| op | dtype | N | " + " | ".join(f"{IMPL_TITLES[k]} GB/s" for k in IMPLS) +
          " | numba_tile/Triton | numba_tile/PyTorch |")
    print("|---|---|---|" + "---|" * (len(IMPLS) + 2))
    for op, dname, n, res in rows:
        print(f"| {op} | {dname} | {n} | " + " | ".join(cells(res)) + " |")
    print("\n| op | geomean numba_tile/Triton (cells) | geomean numba_tile/PyTorch (cells) |")
    print("|---|---|---|")
    for label, rt, rp in summ:
        print(f"| {label} | {fmt(geomean(rt), '.3f')} ({len(rt)}) | "
              f"{fmt(geomean(rp), '.3f')} ({len(rp)}) |")


def _dist_version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def run_gpu(args) -> bool:
    """The benchmark; True when every check passed and nothing raised."""
    if not nt.gpu_available():
        raise SystemExit("benchmarks/norms.py needs a CUDA GPU (or --interpret)")
    import numba
    import torch

    versions = [f"torch {torch.__version__}", f"numba {numba.__version__}",
                f"numba-cuda {_dist_version('numba-cuda')}", f"numba_tile {nt.__version__}"]
    impls = {"numba_tile": {op: numba_tile_impl(op, fn, stream=torch.cuda.current_stream(),
                                                variant=args.variant)
                            for op, fn in load_numba_tile(args.ops).items()},
             "torch": torch_impls(torch)}
    try:
        import triton
        versions.append(f"triton {triton.__version__}")
        impls["triton"] = triton_impls(torch)
    except Exception as exc:
        print(f"Triton unavailable: {brief(exc)}")
        impls["triton"] = {}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    spin_ms = measure_spin_ms(torch)
    print(f"GPU: {props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
          f"{props.total_memory / 2**30:.0f} GiB)")
    print(", ".join(versions))
    print(f"M = {args.m}; GB/s = ideal bytes moved / median device time of up to {args.reps} "
          f"launches ({args.budget} s budget), each behind a {spin_ms * 1e3:.0f} us spin; "
          f"inputs rotate over > {ROTATE_TOTAL >> 20} MiB when x < {ROTATE_BELOW >> 20} MiB\n")
    head = ROW_FORMAT.format("op", "dtype", "N", "nt GB/s", "triton GB/s", "torch GB/s",
                             "nt/triton", "nt/torch")
    print(head)
    print("-" * len(head))
    rows, ok = [], True
    for op in args.ops:
        for dname in args.dtypes:
            for n in args.n:
                try:
                    res = bench_cell(op, dname, n, impls, args, spin_ms, torch)
                except Exception as exc:  # inputs or reference, e.g. out of memory
                    print(f"  error {op} {dname} N={n}: {brief(exc)}")
                    res = dict.fromkeys(IMPLS, "error")
                ok = ok and not {"WRONG", "error"} & set(map(str, res.values()))
                rows.append((op, dname, n, res))
                print(ROW_FORMAT.format(op, dname, n, *cells(res)), flush=True)
    summ = summary(rows, args.ops)
    print("\ngeometric means over the cells where both are valid (number of cells):")
    for label, rt, rp in summ:
        print(f"  {label:<10} nt/triton {fmt(geomean(rt), '.3f')} ({len(rt)})   "
              f"nt/torch {fmt(geomean(rp), '.3f')} ({len(rp)})")
    if args.markdown:
        print()
        print_markdown(rows, summ)
    sys.stdout.flush()
    _plot.plot(args.plot, f"numba_tile row-wise norms: {props.name}, M = {args.m}",
               plot_panels(rows), note=", ".join(versions))
    return ok


# ------------------------------------------------------------------------------ interpreter

def run_interpret(args) -> bool:
    """numba_tile only, in the interpreter, checked against NumPy; True when all passed."""
    import ml_dtypes

    np_dtypes = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}
    print(f"numba_tile {nt.__version__} interpreter (CPU, NumPy {np.__version__}): checks only, "
          f"M = {args.m}")
    fns = load_numba_tile(args.ops)
    rng = np.random.default_rng(0)

    def to64(a):
        return None if a is None else np.asarray(a, dtype=np.float64)

    print(f"\n{'op':<10} {'dtype':<5} {'N':>6}  {'result':<6} {'max rel err':>11} {'seconds':>8}")
    ok = True
    for op in args.ops:
        if op not in fns:
            continue
        for dname in args.dtypes:
            dt = np_dtypes[dname]
            for n in args.n:
                shift, scale = INPUT_SHIFT_SCALE[op]
                x = (shift + scale * rng.standard_normal((args.m, n))).astype(dt)
                w = rng.random(n).astype(dt) if op != "softmax" else None
                b = rng.random(n).astype(dt) if op == "layernorm" else None
                y = np.full((args.m, n), np.nan, dtype=dt)
                t0 = time.perf_counter()
                try:
                    out = numba_tile_impl(op, fns[op], interpret=True)(x, w, b, y)
                    seconds = time.perf_counter() - t0
                    err = relative_error(out, reference(op, np, to64(x), to64(w), to64(b)), to64)
                    result = "OK" if err <= TOL[dname] else "WRONG"
                except Exception as exc:
                    print(f"  error numba_tile {op} {dname} N={n}: {brief(exc)}")
                    result, err, seconds = "error", math.nan, math.nan
                ok = ok and result == "OK"
                print(f"{op:<10} {dname:<5} {n:>6}  {result:<6} {fmt(err, '11.2e'):>11} "
                      f"{fmt(seconds, '8.2f'):>8}", flush=True)
    return ok


# ------------------------------------------------------------------------------ main

def _list(kind, choices=None):
    def parse(text):
        items = [s.strip() for s in text.split(",") if s.strip()]
        if kind is int:
            try:
                return [int(s) for s in items]
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected integers, got {text!r}") from None
        bad = [s for s in items if s not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated subset of "
                                             f"{','.join(choices)}, got {text!r}")
        return items
    return parse


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", type=_list(str, OPS), default=list(OPS),
                   help=f"comma-separated, default {','.join(OPS)}")
    p.add_argument("--dtypes", type=_list(str, DTYPES), default=list(DTYPES),
                   help=f"comma-separated, default {','.join(DTYPES)}")
    p.add_argument("--n", type=_list(int), default=None,
                   help=f"row lengths, comma-separated; default {','.join(map(str, GPU_N))} "
                        f"({','.join(map(str, INTERPRET_N))} with --interpret)")
    p.add_argument("--m", type=int, default=None,
                   help=f"rows; default {GPU_M} ({INTERPRET_M} with --interpret)")
    p.add_argument("--reps", type=int, default=30, help="timed launches per cell (median)")
    p.add_argument("--budget", type=float, default=0.5,
                   help="seconds of timed launches per cell and implementation (fewer reps "
                        f"when exceeded, at least {MIN_REPS})")
    p.add_argument("--variant", default="auto", choices=("auto", "registers", "looped"),
                   help="numba_tile's kernels: whole rows in registers, loops over column tiles "
                        "with pipelined loads (the examples' *_looped kernels), or their choice")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown too")
    p.add_argument("--interpret", action="store_true",
                   help="numba_tile only, in the interpreter on the CPU, checks only")
    _plot.add_plot_arguments(p, "norms")
    args = p.parse_args(argv)
    if args.n is None:
        args.n = list(INTERPRET_N if args.interpret else GPU_N)
    if args.m is None:
        args.m = INTERPRET_M if args.interpret else GPU_M
    return args


def main(argv=None):
    args = parse_args(argv)
    ok = run_interpret(args) if args.interpret else run_gpu(args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
