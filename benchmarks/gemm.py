"""GEMM: numba_tile's tensor-core matrix product against cuBLAS (PyTorch) and Triton.

Run on a GPU machine (``python benchmarks/gemm.py``). For float16 and bfloat16 inputs
(C of the inputs' dtype, products accumulated in float32 by all three) and each shape
(M, N, K) it prints the TFLOP/s of every implementation, ``2 * M * N * K / time``, and the
ratios numba_tile / cuBLAS and numba_tile / Triton, all measured in the same run, then the
geometric means of those ratios.

Shapes: square M = N = K of 1024, 2048, 4096 and 8192, and the projections of a
transformer layer: M (tokens) of 16, 128 and 4096 against (K, N) of (4096, 4096),
(4096, 14336) and (14336, 4096) (attention output, MLP up, MLP down of a 4096-wide model
with a 14336-wide MLP). ``--quick`` runs three of them; ``--sizes`` names others.

Implementations:

* numba_tile: ``examples/gemm.py`` (one block per (BM, BN) tile of C, a K loop of
  ``nt.mma``) and, from 256 rows, ``examples/gemm_persistent.py`` on one block per
  multiprocessor for :data:`PERSISTENT_CONFIGS` (``pN`` in the config column;
  ``--no-persistent``: not), launched with PyTorch tensors, over a small sweep of configurations
  (:func:`sweep_configs`: (BM, BN, BK, num_warps[, num_stages]), a few per shape, smaller
  tiles for small M); the fastest is reported, and printed, and beside it the fastest of
  the configurations that lowered to ``mma.sync`` (on the H200 the others take ``wgmma``
  with TMA loads). C's tiles are taken in the grouped order (``nt.grouped(8)``, as Triton's
  GROUP_SIZE_M = 8); the stage count goes to ``nt.jit(num_stages=...)``, which pipelines the
  K loop's loads (TMA boxes for a ``wgmma`` product, ``cp.async`` otherwise).
* cuBLAS: ``torch.matmul(a, b, out=c)``, with PyTorch's reduced-precision reductions for
  16-bit GEMMs switched off (``allow_fp16_reduced_precision_reduction`` and the bf16 twin),
  so cuBLAS also reduces in float32.
* Triton: the kernel of Triton's matrix multiplication tutorial
  (``python/tutorials/03-matrix-multiplication.py``) with its 16 CUDA autotuning
  configurations and key (M, N, K), written in this file; it tunes once per shape and dtype,
  before timing, and the configuration it picked is printed.

Method: CUDA events on PyTorch's current stream, which every implementation launches on.
Each timed launch is queued behind a spin kernel (``torch.cuda._sleep``, about 1 ms), so the
queue stays ahead of the host and the host's launch cost is not counted, and behind a write
of a 256 MiB buffer, which evicts the inputs from the L2 cache (as ``triton.testing.do_bench``
does): every implementation starts from a cold L2. The figure is the median over ``--reps``
launches (fewer when one implementation would take more than ``--budget`` seconds on one
shape, at least 5), after 3 warm-up launches.

Verification: each result (every numba_tile configuration of the sweep, cuBLAS, Triton) is
compared once, before it is timed, with ``torch.matmul`` of the inputs converted to float32
(IEEE float32, TF32 off): the largest absolute error over the largest magnitude of the
reference must stay under 2e-3 (float16: C's rounding is 2**-11 relative) or 1e-2
(bfloat16: 2**-8). A failing result is printed as WRONG (on stdout and stderr) and not
timed; an implementation that raises is printed as error; the run goes on and exits with
status 1.

After the tables, ``--plot PATH`` (default ``docs/plots/gemm.png``) draws them: the ratios
numba_tile / cuBLAS and numba_tile / Triton per dtype and shape, and the TFLOP/s
(``--no-plot``: none; never in ``--interpret`` runs).

``--interpret`` runs only numba_tile, in its interpreter (CPU, NumPy arrays; neither PyTorch
nor Triton needed), over every configuration the sweep would try, on small ragged shapes of
integer-valued inputs, and checks each result exactly against NumPy: a smoke test of the
example, the configurations and this harness on a machine without a GPU.

Total time on an H200 (full run, cold compile caches): numba_tile compiles 7 configurations
per dtype (about 1-3 s each), Triton compiles its 16 per dtype and tunes them on each shape;
the run prints how long each implementation's first calls (compiles, tuning, checks) and its
timed launches took.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))           # this repository's numba_tile and examples
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))   # benchmarks/_plot.py (also from a test)

import _env  # noqa: E402
import _plot  # noqa: E402
import numba_tile as nt  # noqa: E402
# examples/gemm.py as examples.gemm: run as a script, this file's own directory comes first
# on sys.path, and a plain "import gemm" would import this file
from examples import gemm as nt_gemm  # noqa: E402
from examples import gemm_persistent as nt_gemm_persistent  # noqa: E402

GemmConfig = nt_gemm.GemmConfig

DTYPES = ("fp16", "bf16")
DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16"}
SQUARE = (1024, 2048, 4096, 8192)
LAYER_M = (16, 128, 4096)
#: (K, N) of a transformer layer's projections: attention output, MLP up, MLP down
LAYER_KN = ((4096, 4096), (4096, 14336), (14336, 4096))
QUICK_SHAPES = ((4096, 4096, 4096), (16, 4096, 4096), (4096, 14336, 4096))
#: one shape per row of the sweep tables (M from 256, 65 to 255, up to 64): every configuration
INTERPRET_SHAPES = ((300, 264, 72), (200, 136, 100), (16, 72, 48))
#: largest |C - reference| allowed, relative to the largest |reference|
TOL = {"fp16": 2e-3, "bf16": 1e-2}
IMPLS = ("numba_tile", "cublas", "triton")
IMPL_TITLES = {"numba_tile": "numba_tile", "cublas": "cuBLAS", "triton": "Triton"}
WARMUP = 3
MIN_REPS = 5
SPIN_CYCLES = 2_000_000       # about 1 ms at H200 clocks: longer than any host launch cost
FLUSH_BYTES = 256 * 2**20     # written before each timed launch: past the 60 MB L2

#: numba_tile configurations tried from 256 rows of C: (BM, BN, BK, num_warps, num_stages).
#: On Hopper the products with BM a multiple of 16 * num_warps, BK a multiple of 32 and BN of 32
#: take wgmma (typing/mma.use_wgmma), with TMA loads where BK is a multiple of 64 and cp.async
#: ones otherwise; the others keep mma.sync (the "mma.sync" column).
#: 128 x 256 x 64 over 8 warps with 4 stages leaves a wgmma group in flight across iterations
#: (typing/pipeline.pending_products). 128 x 128 x 64 over 4 warps spills (255 registers).
LARGE_M_CONFIGS = ((128, 256, 64, 8, 4), (128, 128, 64, 8, 3), (128, 128, 32, 4, 4),
                   (128, 128, 32, 4, 3))
#: ... from 65 to 255 rows
MEDIUM_M_CONFIGS = ((64, 128, 64, 4, 4), (64, 256, 64, 4, 4), (64, 64, 64, 4, 3),
                    (64, 128, 32, 4, 4), (128, 128, 32, 4, 3))
#: ... up to 64 rows (BM = the rows' next power of two, at least 16, and 64)
#: configurations also timed as ``examples/gemm_persistent.py`` on one block per
#: multiprocessor (from 256 rows; ``--no-persistent`` says no): the Hopper default, whose
#: producer then walks the block's tiles and runs ahead into the next one
PERSISTENT_CONFIGS = (GemmConfig(128, 256, 64, 8, 4),)
SMALL_M_BN_BK = ((64, 64, 4, 3), (128, 64, 4, 3))


# ------------------------------------------------------------------------------ shapes, configs

def default_shapes() -> list:
    """(M, N, K) of the full run: the squares, then the transformer-layer shapes."""
    shapes = [(s, s, s) for s in SQUARE]
    shapes += [(m, n, k) for m in LAYER_M for k, n in LAYER_KN]
    return shapes


def parse_shape(text: str) -> tuple:
    """``"4096"`` is (4096, 4096, 4096); ``"16x14336x4096"`` is (M, N, K) = (16, 14336, 4096).

    Raises:
        argparse.ArgumentTypeError: anything else, or an extent below 1.
    """
    parts = text.lower().split("x")
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        dims = []
    if len(dims) == 1:
        dims = dims * 3
    if len(dims) != 3 or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"expected a square size (4096) or MxNxK (16x14336x4096), "
                                         f"got {text!r}")
    return tuple(dims)


def parse_config(text: str) -> GemmConfig:
    """``"128x128x32x4"`` or ``"128x128x32x4x3"``: BM x BN x BK x num_warps[ x num_stages]
    (num_stages 1 when left out: no pipelining).

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    try:
        dims = [int(p) for p in text.lower().split("x")]
    except ValueError:
        dims = []
    if len(dims) not in (4, 5) or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"expected BMxBNxBKxWARPS[xSTAGES] (128x128x32x4x3), "
                                         f"got {text!r}")
    return GemmConfig(*dims)


def sweep_configs(m: int) -> list:
    """The numba_tile configurations tried for M rows of C (the same for every N and K)."""
    if m >= 256:
        table = LARGE_M_CONFIGS
        if m <= 2048:
            # few 128-row tiles fill 132 SMs there (1024^3: 64 blocks of 128 x 128): the
            # 64-row wgmma tiles give 2-4x the blocks
            table += MEDIUM_M_CONFIGS[:2]
    elif m > 64:
        table = MEDIUM_M_CONFIGS
    else:
        bm = max(16, 1 << max(0, (m - 1).bit_length()))
        table = tuple((bm, bn, bk, w, s) for bn, bk, w, s in SMALL_M_BN_BK)
        table += ((64, 64, 64, 4, 3),) if bm < 64 else ()
    configs = []
    for t in table:
        c = GemmConfig(*t)
        if c not in configs:
            configs.append(c)
    return configs


def configs_for(m: int, override) -> list:
    """``override`` (``--configs``) when given, else :func:`sweep_configs`."""
    return list(override) if override else sweep_configs(m)


def product_kind(cfg, a, b, c) -> str:
    """``"wgmma"`` or ``"mma.sync"``: what ``examples/gemm.py``'s kernel compiled to for this
    configuration (its PTX says; "-" where it cannot be compiled)."""
    try:
        kern = nt_gemm.kernel_for(cfg)
        ptx = kern.ptx(a, b, nt_gemm.c_partition(c, cfg), cfg.bm, cfg.bn, cfg.bk,
                       nt_gemm.dtype_name(a))
    except Exception:  # noqa: BLE001 - the timing reports the error
        return "-"
    return "wgmma" if "wgmma.mma_async" in ptx else "mma.sync"


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """``2 * m * n * k`` floating-point operations in ``ms`` milliseconds, in TFLOP/s."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def geomean(values) -> float:
    return statistics.geometric_mean(values) if values else math.nan


def fmt(value, spec) -> str:
    """``value`` formatted, "-" for NaN or None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def brief(exc: BaseException) -> str:
    """Exception type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__


def cell_tflops(res: dict, impl: str) -> float:
    """TFLOP/s of ``impl`` in one shape's results, NaN unless it was timed."""
    v = res.get(impl, {}).get("tflops")
    return v if isinstance(v, float) else math.nan


def ratio(res: dict, peer: str) -> float:
    """numba_tile's TFLOP/s over ``peer``'s, NaN unless both were timed."""
    a, b = cell_tflops(res, "numba_tile"), cell_tflops(res, peer)
    return a / b if not (math.isnan(a) or math.isnan(b)) else math.nan


def status(res: dict, impl: str) -> str:
    """A timed implementation's TFLOP/s as text, else its marker (WRONG, error, n/a)."""
    r = res.get(impl)
    if r is None:
        return "n/a"
    if isinstance(r.get("tflops"), float):
        return f"{r['tflops']:.1f}"
    return r.get("status", "n/a")


ROW_FORMAT = ("{:<5} {:>5} {:>6} {:>6}  {:>8} {:<19} {:>8} {:>8} {:>8}  {:>9} {:>9}  {:>8}  "
              "{:<20}")
HEADER = ("dtype", "M", "N", "K", "nt TF/s", "nt config", "mma.sync", "cuBLAS", "Triton",
          "nt/cuBLAS", "nt/Triton", "nt err", "Triton config")


def sync_best(res: dict):
    """The best TFLOP/s of the sweep's configurations that lowered to ``mma.sync``."""
    got = [r["tflops"] for r in res.get("numba_tile", {}).get("sweep", [])
           if "tflops" in r and r.get("mma") == "mma.sync"]
    return max(got) if got else None


def row_cells(dname: str, shape: tuple, res: dict) -> list:
    """The printed cells of one shape (see :data:`HEADER`)."""
    m, n, k = shape
    nt_res = res.get("numba_tile", {})
    return [dname, m, n, k, status(res, "numba_tile"), nt_res.get("config") or "-",
            fmt(sync_best(res), ".1f"),
            status(res, "cublas"), status(res, "triton"), fmt(ratio(res, "cublas"), ".3f"),
            fmt(ratio(res, "triton"), ".3f"), fmt(nt_res.get("rel_err"), ".1e"),
            res.get("triton", {}).get("config") or "-"]


def summary(rows) -> list:
    """[(label, [nt/cuBLAS ratios], [nt/Triton ratios])] per dtype, then over all rows."""
    out = []
    labels = sorted({d for d, _, _ in rows}, key=DTYPES.index) + ["all"]
    for label in labels:
        sel = [res for d, _, res in rows if label in (d, "all")]
        per_peer = [[r for r in (ratio(res, p) for res in sel) if not math.isnan(r)]
                    for p in ("cublas", "triton")]
        out.append((label, *per_peer))
    return out


def print_table(rows, markdown: bool = False) -> None:
    if markdown:
        print("| dtype | M | N | K | numba_tile TFLOP/s | numba_tile config | numba_tile mma.sync "
              "TFLOP/s | cuBLAS TFLOP/s | Triton TFLOP/s | numba_tile/cuBLAS | numba_tile/Triton "
              "| numba_tile max rel err | Triton config |")
        print("|" + "---|" * len(HEADER))
        for dname, shape, res in rows:
            print("| " + " | ".join(str(c) for c in row_cells(dname, shape, res)) + " |")
        return
    for dname, shape, res in rows:
        print(ROW_FORMAT.format(*row_cells(dname, shape, res)))


def print_summary(summ, markdown: bool = False) -> None:
    if markdown:
        print("| dtype | geomean numba_tile/cuBLAS (shapes) | geomean numba_tile/Triton (shapes) |")
        print("|---|---|---|")
        for label, rc, rt in summ:
            print(f"| {label} | {fmt(geomean(rc), '.3f')} ({len(rc)}) | "
                  f"{fmt(geomean(rt), '.3f')} ({len(rt)}) |")
        return
    for label, rc, rt in summ:
        print(f"  {label:<5} nt/cuBLAS {fmt(geomean(rc), '.3f')} ({len(rc)})   "
              f"nt/Triton {fmt(geomean(rt), '.3f')} ({len(rt)})")


def plot_panels(rows) -> list:
    """The figure of :func:`_plot.plot`: numba_tile / peer and TFLOP/s per dtype and shape."""
    cats = [(dname, "x".join(map(str, shape))) for dname, shape, _ in rows]
    peers = [p for p in IMPLS if p != "numba_tile"]
    ratios = {IMPL_TITLES[p]: [ratio(res, p) for _, _, res in rows] for p in peers}
    absolute = {IMPL_TITLES[i]: [cell_tflops(res, i) for _, _, res in rows] for i in IMPLS}
    return [_plot.Panel("numba_tile's TFLOP/s over each peer's, per dtype and shape (MxNxK)",
                        cats, ratios, "numba_tile / peer TFLOP/s", ratio=True, better="higher"),
            _plot.Panel("TFLOP/s (numba_tile: the best configuration of its sweep)", cats,
                        absolute, "TFLOP/s (log)", log=True)]


def features_text() -> str:
    return (f"numba_tile: C's tiles in grouped({nt_gemm.GROUP_M}) order; configurations "
            f"BMxBNxBK, w = num_warps, s = num_stages (cp.async pipelining of the K loop)")


# ------------------------------------------------------------------------------ Triton

#: The CUDA autotuning configurations of Triton's matmul tutorial:
#: (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, num_stages, num_warps).
TRITON_CONFIGS = (
    (128, 256, 64, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4),
    (128, 64, 32, 8, 4, 4), (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4),
    (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2),
    # the tutorial's "good config for fp8 inputs", also in its list
    (128, 256, 128, 8, 3, 8), (256, 128, 128, 8, 3, 8), (256, 64, 128, 8, 4, 4),
    (64, 256, 128, 8, 4, 4), (128, 128, 128, 8, 4, 4), (128, 64, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4), (128, 32, 64, 8, 4, 4),
)


def triton_matmul(tuning=TRITON_CONFIGS):
    """``(matmul(a, b, c), best_config())``: Triton's tutorial matmul kernel, autotuned over
    ``tuning`` (default: the tutorial's configurations, :data:`TRITON_CONFIGS`).

    The kernel is the tutorial's ``matmul_kernel`` (triton-lang/triton,
    ``python/tutorials/03-matrix-multiplication.py``); departures: no ``ACTIVATION``
    parameter (the tutorial's default is none), C is stored in C's dtype (the tutorial
    writes float16 only), and C is passed in rather than allocated per call.
    """
    import triton
    import triton.language as tl

    configs = [triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                              "GROUP_SIZE_M": g}, num_stages=s, num_warps=w)
               for bm, bn, bk, g, s, w in tuning]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m

        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        # Departure: C's dtype (float16 or bfloat16) rather than float16.
        c = accumulator.to(c_ptr.dtype.element_ty)

        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)

    def matmul(a, b, c):
        M, K = a.shape
        K, N = b.shape
        grid = lambda META: (  # noqa: E731 - the tutorial's form
            triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]), )
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                            b.stride(1), c.stride(0), c.stride(1))
        return c

    def best_config() -> str | None:
        cfg = getattr(matmul_kernel, "best_config", None)
        if cfg is None:
            return None
        kw = cfg.kwargs
        return (f"{kw['BLOCK_SIZE_M']}x{kw['BLOCK_SIZE_N']}x{kw['BLOCK_SIZE_K']} "
                f"w{cfg.num_warps} s{cfg.num_stages}")

    return matmul, best_config


# ------------------------------------------------------------------------------ GPU timing

class Timer:
    """Median device milliseconds of one launch, each behind a spin and an L2 flush."""

    def __init__(self, torch, reps: int, budget: float):
        self.torch, self.reps, self.budget = torch, reps, budget
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        torch.cuda._sleep(SPIN_CYCLES)
        stop.record()
        self.flush.zero_()
        stop.synchronize()
        self.spin_ms = start.elapsed_time(stop)

    def __call__(self, fn) -> float:
        torch = self.torch
        t0 = time.perf_counter()
        for _ in range(WARMUP):
            fn()
        torch.cuda.synchronize()
        per_launch_s = (time.perf_counter() - t0) / WARMUP + self.spin_ms * 1e-3
        reps = max(MIN_REPS, min(self.reps, int(self.budget / per_launch_s)))
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(reps)]
        for start, stop in events:
            torch.cuda._sleep(SPIN_CYCLES)
            self.flush.zero_()
            start.record()
            fn()
            stop.record()
        torch.cuda.synchronize()
        return statistics.median(start.elapsed_time(stop) for start, stop in events)


def relative_error(c, ref) -> float:
    """Largest |c - ref| over the largest |ref| (NaN when c holds a NaN)."""
    return float((c.float() - ref).abs().max() / ref.abs().max())


def check_and_time(name: str, fn, c, ref, tol: float, timer, shape_text: str) -> dict:
    """Run ``fn`` once into ``c`` (NaN first), compare with ``ref``, then time it.

    Returns:
        {"status": "ok", "rel_err", "ms"} or {"status": "WRONG"/"error", ...}, with the host
        seconds of the check (``check_s``: the first call, so compiling or tuning included)
        and of the timing (``time_s``).
    """
    t0 = time.perf_counter()
    try:
        c.fill_(math.nan)
        fn()
        err = relative_error(c, ref)
    except Exception as exc:  # a configuration that does not compile or launch
        print(f"  error {name} {shape_text}: {brief(exc)}", flush=True)
        return {"status": "error", "error": brief(exc), "check_s": time.perf_counter() - t0}
    check_s = time.perf_counter() - t0
    if not err <= tol:
        msg = (f"  WRONG {name} {shape_text}: max |C - reference| / max |reference| = {err:.3g} "
               f"(allowed {tol:g})")
        print(msg, flush=True)
        print(msg, file=sys.stderr, flush=True)
        return {"status": "WRONG", "rel_err": err, "check_s": check_s}
    t0 = time.perf_counter()
    try:
        ms = timer(fn)
    except Exception as exc:
        print(f"  error {name} {shape_text} (timing): {brief(exc)}", flush=True)
        return {"status": "error", "rel_err": err, "error": brief(exc), "check_s": check_s}
    return {"status": "ok", "rel_err": err, "ms": ms, "check_s": check_s,
            "time_s": time.perf_counter() - t0}


def bench_shape(dname, shape, args, timer, triton_impl, torch) -> tuple:
    """One dtype and shape: ``(results, ok)``; results per implementation (see
    :func:`check_and_time`, plus ``tflops``, ``config`` and numba_tile's ``sweep``)."""
    m, n, k = shape
    dt = getattr(torch, DTYPE_NAMES[dname])
    gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
    a = torch.randn(m, k, device="cuda", dtype=dt, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=dt, generator=gen)
    c = torch.empty(m, n, device="cuda", dtype=dt)
    ref = torch.matmul(a.float(), b.float())
    tol = TOL[dname]
    text = f"{dname} M={m} N={n} K={k}"
    stream = torch.cuda.current_stream()
    res, ok = {}, True

    def finish(r):
        if isinstance(r.get("ms"), float):
            r["tflops"] = tflops(m, n, k, r["ms"])
        return r

    sweep = []
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    for cfg in configs_for(m, args.configs):
        kinds = [None] + ([sms] if getattr(args, "persistent", False) and m >= 256
                          and (args.configs or cfg in PERSISTENT_CONFIGS) else [])
        for blocks in kinds:
            if blocks is None:
                fn = (lambda cfg=cfg: nt_gemm.matmul(a, b, c, config=cfg, stream=stream))
            else:
                fn = (lambda cfg=cfg, blocks=blocks: nt_gemm_persistent.matmul_persistent(
                    a, b, c, blocks, config=cfg, stream=stream))
            name = str(cfg) + (f" p{blocks}" if blocks else "")
            r = finish(check_and_time(f"numba_tile {name}", fn, c, ref, tol, timer, text))
            r["config"] = name
            r["mma"] = product_kind(cfg, a, b, c)
            ok = ok and r["status"] == "ok"
            sweep.append(r)
    timed = [r for r in sweep if "tflops" in r]
    if timed:
        res["numba_tile"] = dict(max(timed, key=lambda r: r["tflops"]), sweep=sweep)
    else:
        res["numba_tile"] = {"status": sweep[0]["status"] if sweep else "n/a", "sweep": sweep}

    r = finish(check_and_time("cuBLAS", lambda: torch.matmul(a, b, out=c), c, ref, tol, timer,
                              text))
    ok = ok and r["status"] == "ok"
    res["cublas"] = r

    if triton_impl is not None:
        matmul, best_config = triton_impl
        r = finish(check_and_time("Triton", lambda: matmul(a, b, c), c, ref, tol, timer, text))
        r["config"] = best_config()
        ok = ok and r["status"] == "ok"
        res["triton"] = r
    return res, ok


_dist_version, _git_commit = _env.dist_version, _env.git_commit


def driver_version() -> str:
    """The NVIDIA driver's version (nvidia-smi), else the CUDA driver API's version."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from cuda.bindings import driver
        err, v = driver.cuDriverGetVersion()
        return f"CUDA driver API {v // 1000}.{v % 1000 // 10}"
    except Exception:  # noqa: BLE001 - only for the header
        return "?"


def import_torch():
    """PyTorch, or SystemExit with what to install: cuBLAS is reached through it."""
    try:
        import torch
    except ImportError as exc:
        raise SystemExit(f"benchmarks/gemm.py needs PyTorch (cuBLAS is timed through "
                         f"torch.matmul, and the inputs are torch tensors): {brief(exc)}. "
                         f"Install it (pip install torch), or run --interpret for the "
                         f"numba_tile-only check on the CPU.") from None
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/gemm.py: PyTorch sees no CUDA GPU")
    return torch


def run_gpu(args) -> bool:
    """The benchmark; True when every check passed and nothing raised."""
    if not nt.gpu_available():
        raise SystemExit("benchmarks/gemm.py needs a CUDA GPU (or --interpret)")
    t_start = time.perf_counter()
    torch = import_torch()
    import numba

    torch.backends.cuda.matmul.allow_tf32 = False       # the float32 reference is IEEE
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    versions = {"torch": torch.__version__, "cuda (torch)": torch.version.cuda,
                "numba": numba.__version__, "numba-cuda": _dist_version("numba-cuda"),
                "numba_tile": f"{nt.__version__} ({_git_commit()})", "numpy": np.__version__}
    triton_impl = None
    try:
        import triton
        versions["triton"] = triton.__version__
        triton_impl = triton_matmul()
    except Exception as exc:
        print(f"Triton unavailable ({brief(exc)}): its column is n/a")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    gpu = {"name": props.name, "cc": f"{props.major}.{props.minor}",
           "sms": props.multi_processor_count, "memory_gib": round(props.total_memory / 2**30),
           "driver": driver_version()}
    timer = Timer(torch, args.reps, args.budget)
    print(f"GPU: {gpu['name']} (sm_{props.major}{props.minor}, {gpu['sms']} SMs, "
          f"{gpu['memory_gib']} GiB), driver {gpu['driver']}")
    print(", ".join(f"{k} {v}" for k, v in versions.items()))
    print(features_text())
    print(f"TFLOP/s = 2*M*N*K / median device time of up to {args.reps} launches "
          f"({args.budget} s budget per implementation and shape), each behind a "
          f"{timer.spin_ms * 1e3:.0f} us spin and a {FLUSH_BYTES >> 20} MiB L2 flush; "
          f"numba_tile: the best of its sweep\n")
    head = ROW_FORMAT.format(*HEADER)
    print(head)
    print("-" * len(head))
    rows, ok = [], True
    for dname in args.dtypes:
        for shape in args.shapes:
            try:
                res, cell_ok = bench_shape(dname, shape, args, timer, triton_impl, torch)
            except Exception as exc:  # inputs or reference, e.g. out of memory
                print(f"  error {dname} {shape}: {brief(exc)}")
                res, cell_ok = {impl: {"status": "error"} for impl in IMPLS}, False
            torch.cuda.empty_cache()          # the shape's inputs are gone: give back memory
            ok = ok and cell_ok
            rows.append((dname, shape, res))
            print_table([rows[-1]])
            sys.stdout.flush()
    summ = summary(rows)
    print("\ngeometric means over the shapes where both were timed (number of shapes):")
    print_summary(summ)
    elapsed = time.perf_counter() - t_start
    print(f"\ntotal {elapsed:.0f} s; {time_split(rows)}")
    if args.markdown:
        print()
        print_table(rows, markdown=True)
        print()
        print_summary(summ, markdown=True)
    sys.stdout.flush()
    _plot.plot(args.plot, f"numba_tile GEMM: {gpu['name']}", plot_panels(rows),
               note=", ".join(f"{k} {v}" for k, v in versions.items()))
    if args.out:
        write_json(args.out, {"gpu": gpu, "versions": versions,
                              "method": {"reps": args.reps, "budget_s": args.budget,
                                         "spin_ms": timer.spin_ms, "flush_bytes": FLUSH_BYTES,
                                         "warmup": WARMUP, "tolerance": TOL},
                              "elapsed_s": elapsed, "rows": rows_json(rows),
                              "summary": summary_json(summ)})
    if not ok:
        print("\nSOME RESULTS WERE WRONG OR RAISED (see above)", file=sys.stderr)
    return ok


def time_split(rows) -> str:
    """Where the run's time went, per implementation: first calls (numba_tile's compiles,
    Triton's tuning, the checks) and timed launches, in host seconds."""
    parts = []
    for impl in IMPLS:
        runs = []
        for _, _, res in rows:
            r = res.get(impl, {})
            runs += r.get("sweep", [r]) if impl == "numba_tile" else [r]
        check = sum(r.get("check_s", 0.0) for r in runs)
        timing = sum(r.get("time_s", 0.0) for r in runs)
        parts.append(f"{IMPL_TITLES[impl]} {check:.0f} s first calls + {timing:.0f} s timing")
    return ", ".join(parts) + " (first calls: compiles, Triton's tuning, checks)"


def rows_json(rows) -> list:
    return [{"dtype": d, "M": s[0], "N": s[1], "K": s[2], **res} for d, s, res in rows]


def summary_json(summ) -> dict:
    return {label: {"numba_tile/cublas": geomean(rc), "cublas_shapes": len(rc),
                    "numba_tile/triton": geomean(rt), "triton_shapes": len(rt)}
            for label, rc, rt in summ}


def write_json(path, data) -> None:
    def clean(v):       # NaN is not JSON
        if isinstance(v, float) and math.isnan(v):
            return None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    Path(path).write_text(json.dumps(clean(data), indent=1) + "\n")
    print(f"raw numbers written to {path}")


# ------------------------------------------------------------------------------ interpreter

def run_interpret(args) -> bool:
    """numba_tile only, in the interpreter, every configuration checked exactly against NumPy
    on integer-valued inputs; True when all passed."""
    from numba_tile.dtypes import BFLOAT16_NP

    np_dtypes = {"fp16": np.float16, "bf16": BFLOAT16_NP}
    print(f"numba_tile {nt.__version__} interpreter (CPU, NumPy {np.__version__}): checks only")
    print(features_text())
    print(f"\n{'dtype':<5} {'M':>5} {'N':>5} {'K':>5}  {'config':<19} {'result':<6} "
          f"{'max |err|':>9} {'seconds':>8}")
    rng = np.random.default_rng(0)
    ok = True
    results = []
    for dname in args.dtypes:
        dt = np_dtypes[dname]
        for m, n, k in args.shapes:
            a, b = nt_gemm.integer_operands(rng, m, n, k, dt)
            expected = nt_gemm.rounded_product(a, b, dt)
            for cfg in configs_for(m, args.configs):
                c = np.full((m, n), np.nan, dt)
                t0 = time.perf_counter()
                try:
                    nt_gemm.matmul(a, b, c, config=cfg, interpret=True).sync()
                    err = float(np.max(np.abs(c.astype(np.float64) - expected)))
                    result = "OK" if np.array_equal(c.astype(np.float64), expected) else "WRONG"
                except Exception as exc:
                    print(f"  error numba_tile {cfg} {dname} {m}x{n}x{k}: {brief(exc)}")
                    result, err = "error", math.nan
                seconds = time.perf_counter() - t0
                ok = ok and result == "OK"
                results.append({"dtype": dname, "M": m, "N": n, "K": k, "config": str(cfg),
                                "result": result, "max_abs_err": err})
                print(f"{dname:<5} {m:>5} {n:>5} {k:>5}  {str(cfg):<19} {result:<6} "
                      f"{fmt(err, '9.3g'):>9} {seconds:8.2f}", flush=True)
    if args.out:
        write_json(args.out, {"interpret": True, "rows": results})
    return ok


# ------------------------------------------------------------------------------ main

def _list(choices):
    def parse(text):
        items = [s.strip() for s in text.split(",") if s.strip()]
        bad = [s for s in items if s not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated subset of "
                                             f"{','.join(choices)}, got {text!r}")
        return items
    return parse


def _items(parse_one):
    def parse(text):
        items = [parse_one(s.strip()) for s in text.split(",") if s.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        return items
    return parse


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtypes", type=_list(DTYPES), default=list(DTYPES),
                   help=f"comma-separated, default {','.join(DTYPES)}")
    p.add_argument("--sizes", type=_items(parse_shape), default=None,
                   help="comma-separated shapes instead of the default list: a square size "
                        "(4096) or MxNxK (16x14336x4096)")
    p.add_argument("--quick", action="store_true",
                   help="three shapes: " + ", ".join("x".join(map(str, s)) for s in QUICK_SHAPES))
    p.add_argument("--configs", type=_items(parse_config), default=None,
                   help="numba_tile configurations to try instead of the sweep, comma-separated "
                        "BMxBNxBKxWARPS[xSTAGES]")
    p.add_argument("--no-persistent", dest="persistent", action="store_false",
                   help="do not also time the persistent kernel (examples/gemm_persistent.py, "
                        "one block per multiprocessor; from 256 rows, PERSISTENT_CONFIGS or "
                        "every --configs entry)")
    p.add_argument("--reps", type=int, default=25, help="timed launches per implementation "
                   "and shape (median)")
    p.add_argument("--budget", type=float, default=0.4,
                   help="seconds of timed launches per implementation and shape (fewer reps "
                        f"when exceeded, at least {MIN_REPS})")
    p.add_argument("--out", default=None, help="write the raw numbers to this JSON file")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown too")
    p.add_argument("--interpret", action="store_true",
                   help="numba_tile only, in the interpreter on the CPU, checks only (small "
                        "ragged shapes unless --sizes)")
    _plot.add_plot_arguments(p, "gemm")
    args = p.parse_args(argv)
    if args.sizes is not None:
        args.shapes = list(args.sizes)
    elif args.interpret:
        args.shapes = list(INTERPRET_SHAPES)
    elif args.quick:
        args.shapes = list(QUICK_SHAPES)
    else:
        args.shapes = default_shapes()
    return args


def main(argv=None):
    args = parse_args(argv)
    ok = run_interpret(args) if args.interpret else run_gpu(args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
