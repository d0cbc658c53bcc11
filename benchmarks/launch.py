"""Launch cost: host wall time per launch of one-block kernels, and CUDA graph replay.

Run on a GPU machine (``python benchmarks/launch.py``, ``--markdown`` for Markdown tables). Two
sections, each with every implementation measured in the same run, peers interleaved:

1. **Launch.** One-block kernels with 1, 3 and 8 array arguments (``--arrays``), on 256 float32:
   with 1 array an in-place negation of one partition (``z = -z``), with k > 1 arrays the sum of
   k - 1 input arrays stored into one partition of 256 elements. Implementations:

   * numba_tile, a normal safe launch with every check on, on the legacy default stream (no
     ``stream=``): ``k(a0, a1, nt.partition(z, 256), B=256)``; with arrays from CuPy, PyTorch and
     Numba (``numba.cuda`` device arrays); and the same with the partition object made once
     outside the loop and reused (``p = nt.partition(z, 256)``; ``k(a0, a1, p, B=256)``);
   * CuPy ``RawKernel`` (the same kernels in CUDA C, one ``RawModule``), CuPy arrays;
   * Triton (the same kernels in Triton, ``BLOCK=256``), PyTorch tensors;
   * numba-cuda ``@cuda.jit`` (one element per thread, 256 threads), Numba arrays and CuPy
     arrays (numba-cuda synchronizes the stream a CuPy array exports, as its CUDA Array
     Interface support does by default: that is part of its figure).

   Every launch takes the same arguments as a user's would: for the kernels with a length
   parameter (CUDA C, Triton) it is 256.

2. **Graph replay.** 100 (``--graph-kernels``) one-block launches of an in-place add of 256
   float32 (``z += x``), captured once and replayed: (a) numba_tile's graph API
   (``g = nt.Graph()``, ``with g.capture(): ...``, ``g.replay()``), (b) ``torch.cuda.graph``
   capturing the same numba_tile launches (``stream=torch.cuda.current_stream()`` inside the
   capture), (c) the reference, ``torch.cuda.graph`` of 100 ``z.add_(x)``, (d) CuPy stream
   capture of 100 ``RawKernel`` launches (``stream.begin_capture()`` / ``end_capture()``,
   ``graph.launch(stream)``), and (e) the same 100 numba_tile launches without a graph. All
   replays go to the legacy default stream. The figure is microseconds per kernel: the wall
   time of ``--replays`` back-to-back replays and one synchronization, divided by
   ``100 * replays``; once the host queues replays faster than the GPU runs them, this is the
   GPU's time per kernel node.

Method: each cell is checked once against NumPy in float64 on fresh random inputs before it is
timed (a result off by more than 2e-5 of the largest magnitude, 1e-4 after a replay of 100
adds, is WRONG and not timed), warmed up (``--warmup`` launches, 5 replays), and timed in
``--windows`` windows: ``time.perf_counter`` around ``--launches`` (2000) back-to-back launches
with no synchronization inside, one device synchronization at the end. Few enough launches
that the GPU's queue does not fill: with one-block kernels the GPU keeps up with every host
here, so the figure is the host's cost per launch. Windows interleave the cells (each window
visits every cell, starting one further each time), so drift hits all alike; the figure is the
median window's time per launch, with the fastest and slowest windows beside it. No spin
kernel: the host's time is what is measured. Ratios are of times (numba_tile's over the peer's,
same number of arrays): above 1, numba_tile's launch costs more.

A peer whose library does not import (or sees no GPU) is reported as n/a and skipped; a result
that is WRONG or raises is reported, the run goes on, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))           # this repository's numba_tile
if str(HERE) not in sys.path:
    sys.path.append(str(HERE))          # benchmarks/_plot.py (also when imported by a test)

import numba_tile as nt  # noqa: E402
import _env  # noqa: E402
import _plot  # noqa: E402

#: Elements of the one partition (one block).
N = 256
ARRAY_COUNTS = (1, 3, 8)
#: Largest |result - reference| over the largest |reference|.
TOL_LAUNCH = 2e-5
TOL_GRAPH = 1e-4

NT = "numba_tile"
NT_REUSED = "numba_tile, partition reused"
RAW = "CuPy RawKernel"
TRITON = "Triton"
NUMBA = "numba-cuda"
CUPY, TORCH, NUMBA_ARRAYS = "CuPy", "PyTorch", "Numba"
#: The cells of one row of the launch table: (implementation, arrays from).
COLUMNS = ((NT, CUPY), (NT_REUSED, CUPY), (NT, TORCH), (NT_REUSED, TORCH),
           (NT, NUMBA_ARRAYS), (NT_REUSED, NUMBA_ARRAYS),
           (RAW, CUPY), (TRITON, TORCH), (NUMBA, NUMBA_ARRAYS), (NUMBA, CUPY))
PEERS = (RAW, TRITON)           # the ratios' denominators

G_NT = "numba_tile Graph"
G_TORCH_NT = "torch.cuda.graph of numba_tile launches"
G_TORCH = "torch.cuda.graph of torch z.add_(x)"
G_CUPY = "CuPy graph of RawKernel"
G_EAGER = "numba_tile, no graph"
#: Setup order (the capture most likely to fail last); timing interleaves them all.
GRAPH_CASES = (G_TORCH, G_CUPY, G_EAGER, G_NT, G_TORCH_NT)
GRAPH_PEERS = (G_TORCH, G_CUPY)


# ------------------------------------------------------------------------------ numba_tile kernels

@nt.jit
def nt_neg(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, -nt.load(z))


@nt.jit
def nt_sum2(a0, a1, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(a0, z) + nt.load_like(a1, z))


@nt.jit
def nt_sum7(a0, a1, a2, a3, a4, a5, a6, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(a0, z) + nt.load_like(a1, z) + nt.load_like(a2, z)
             + nt.load_like(a3, z) + nt.load_like(a4, z) + nt.load_like(a5, z)
             + nt.load_like(a6, z))


@nt.jit
def nt_acc(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load(z) + nt.load_like(x, z))


NT_KERNELS = {1: nt_neg, 3: nt_sum2, 8: nt_sum7}


# ------------------------------------------------------------------------------ peers' kernels

RAW_SOURCE = r"""
extern "C" __global__ void neg(float* z, int n) {
    int i = threadIdx.x;
    if (i < n) z[i] = -z[i];
}
extern "C" __global__ void sum2(const float* a0, const float* a1, float* z, int n) {
    int i = threadIdx.x;
    if (i < n) z[i] = a0[i] + a1[i];
}
extern "C" __global__ void sum7(const float* a0, const float* a1, const float* a2,
                                const float* a3, const float* a4, const float* a5,
                                const float* a6, float* z, int n) {
    int i = threadIdx.x;
    if (i < n) z[i] = a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i];
}
extern "C" __global__ void acc(const float* x, float* z, int n) {
    int i = threadIdx.x;
    if (i < n) z[i] = z[i] + x[i];
}
"""
RAW_NAMES = {1: "neg", 3: "sum2", 8: "sum7"}


def raw_kernels(cupy) -> dict:
    """{1, 3, 8, "acc"}: CuPy ``RawKernel`` functions of :data:`RAW_SOURCE` (compiled at the
    first launch)."""
    module = cupy.RawModule(code=RAW_SOURCE)
    out = {k: module.get_function(name) for k, name in RAW_NAMES.items()}
    out["acc"] = module.get_function("acc")
    return out


def triton_kernels() -> dict:
    """{1, 3, 8}: Triton JIT functions of the same kernels (``BLOCK`` elements, masked at n)."""
    import triton
    import triton.language as tl

    @triton.jit
    def neg(z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(z_ptr + offs, -tl.load(z_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def sum2(a0, a1, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        s = tl.load(a0 + offs, mask=mask) + tl.load(a1 + offs, mask=mask)
        tl.store(z_ptr + offs, s, mask=mask)

    @triton.jit
    def sum7(a0, a1, a2, a3, a4, a5, a6, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        s = tl.load(a0 + offs, mask=mask) + tl.load(a1 + offs, mask=mask)
        s += tl.load(a2 + offs, mask=mask)
        s += tl.load(a3 + offs, mask=mask)
        s += tl.load(a4 + offs, mask=mask)
        s += tl.load(a5 + offs, mask=mask)
        s += tl.load(a6 + offs, mask=mask)
        tl.store(z_ptr + offs, s, mask=mask)

    return {1: neg, 3: sum2, 8: sum7}


def numba_kernels() -> dict:
    """{1, 3, 8}: numba-cuda ``@cuda.jit`` kernels, one element per thread."""
    from numba import cuda

    @cuda.jit
    def neg(z):
        i = cuda.threadIdx.x
        if i < z.shape[0]:
            z[i] = -z[i]

    @cuda.jit
    def sum2(a0, a1, z):
        i = cuda.threadIdx.x
        if i < z.shape[0]:
            z[i] = a0[i] + a1[i]

    @cuda.jit
    def sum7(a0, a1, a2, a3, a4, a5, a6, z):
        i = cuda.threadIdx.x
        if i < z.shape[0]:
            z[i] = a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i]

    return {1: neg, 3: sum2, 8: sum7}


def quiet_numba():
    """numba-cuda warns (``NumbaPerformanceWarning``) at every launch of fewer than 128 blocks,
    which costs time in the loop and floods the log: switch the warning off, as a user
    launching one-block kernels would."""
    import os

    os.environ["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
    try:
        from numba.cuda.core import config
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    except Exception:  # noqa: BLE001 - another layout of numba-cuda: the env var then
        pass


# ------------------------------------------------------------------------------ array sources

def brief(exc: BaseException) -> str:
    """Exception type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__


class Source:
    """Device arrays of one library: ``asarray`` (from NumPy), ``to_numpy``, ``copy_in``
    (NumPy values into an existing array, in place), ``sync`` (the whole device)."""

    def __init__(self, name, module, asarray, to_numpy, copy_in, sync):
        self.name, self.module = name, module
        self.asarray, self.to_numpy, self.copy_in, self.sync = asarray, to_numpy, copy_in, sync


def load_sources() -> dict:
    """{"CuPy", "PyTorch", "Numba"}: a :class:`Source`, or the reason it is missing (a str)."""
    out = {}
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("CuPy sees no CUDA GPU")
        out[CUPY] = Source(CUPY, cupy, cupy.asarray, cupy.asnumpy,
                           lambda a, host: a.set(host), cupy.cuda.runtime.deviceSynchronize)
    except Exception as exc:  # ImportError, or a CuPy that cannot reach the GPU
        out[CUPY] = brief(exc)
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA GPU")
        out[TORCH] = Source(TORCH, torch, lambda a: torch.from_numpy(a).to("cuda"),
                            lambda t: t.cpu().numpy(),
                            lambda t, host: t.copy_(torch.from_numpy(host)),
                            torch.cuda.synchronize)
    except Exception as exc:
        out[TORCH] = brief(exc)
    try:
        from numba import cuda
        out[NUMBA_ARRAYS] = Source(NUMBA_ARRAYS, cuda, cuda.to_device,
                                   lambda d: d.copy_to_host(),
                                   lambda d, host: d.copy_to_device(host), cuda.synchronize)
    except Exception as exc:
        out[NUMBA_ARRAYS] = brief(exc)
    return out


def device_sync(sources):
    """A whole-device synchronization: PyTorch's, else CuPy's, else Numba's (all three wait for
    every stream of the primary context that numba_tile launches into)."""
    for name in (TORCH, CUPY, NUMBA_ARRAYS):
        src = sources.get(name)
        if isinstance(src, Source):
            return src.sync
    raise SystemExit("benchmarks/launch.py: none of PyTorch, CuPy, numba.cuda can reach the GPU")


def relative_error(out, ref) -> float:
    """Largest |out - ref| over the largest |ref| (NaN when out holds a NaN)."""
    out = np.asarray(out, dtype=np.float64)
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))


# ------------------------------------------------------------------------------ launch section

@dataclass
class Cell:
    """One (number of arrays, implementation, array source) of the launch table."""

    nargs: int
    impl: str
    source: str
    launch: object = None        # one launch, no arguments
    status: str = "n/a"          # "ok", "n/a", "WRONG", "error"
    note: str = ""
    times: list = field(default_factory=list)     # microseconds per launch, one per window

    @property
    def label(self) -> str:
        return f"{self.impl} ({self.source} arrays)"

    @property
    def us(self) -> float:
        return statistics.median(self.times) if self.times else math.nan


def make_launcher(cell: Cell, ins, z, peers):
    """The zero-argument callable that launches ``cell``'s kernel once on ``ins`` and ``z``."""
    k, impl = cell.nargs, cell.impl
    if impl in (NT, NT_REUSED):
        kern = NT_KERNELS[k]
        if impl == NT_REUSED:
            part = nt.partition(z, N)
            return lambda: kern(*ins, part, B=N)
        return lambda: kern(*ins, nt.partition(z, N), B=N)
    kernels = peers[impl]
    if isinstance(kernels, str):
        raise LookupError(kernels)
    kern = kernels[k]
    if impl == RAW:
        n32 = np.int32(N)
        return lambda: kern((1,), (N,), (*ins, z, n32))
    if impl == TRITON:
        return lambda: kern[(1,)](*ins, z, N, BLOCK=N)
    return lambda: kern[1, N](*ins, z)           # numba-cuda


def prepare_cell(cell: Cell, rng, sources, peers, sync) -> None:
    """Fresh inputs, one launch, the check against NumPy in float64; ``cell.status`` says."""
    src = sources[cell.source]
    if isinstance(src, str):
        cell.status, cell.note = "n/a", f"{cell.source}: {src}"
        return
    if cell.impl in peers and isinstance(peers[cell.impl], str):
        cell.status, cell.note = "n/a", f"{cell.impl}: {peers[cell.impl]}"
        return
    host = [rng.standard_normal(N).astype(np.float32) for _ in range(cell.nargs - 1)]
    z0 = rng.standard_normal(N).astype(np.float32)
    if cell.nargs == 1:
        ref = -z0.astype(np.float64)
        zh = z0
    else:
        ref = np.sum([a.astype(np.float64) for a in host], axis=0)
        zh = np.full(N, np.nan, np.float32)
    try:
        ins = tuple(src.asarray(a) for a in host)
        z = src.asarray(zh)
        sync()
        launch = make_launcher(cell, ins, z, peers)
        launch()
        sync()
        err = relative_error(src.to_numpy(z), ref)
    except Exception as exc:
        cell.status, cell.note = "error", brief(exc)
        print(f"  error {cell.label}, {cell.nargs} arrays: {cell.note}", flush=True)
        return
    if not err <= TOL_LAUNCH:
        cell.status, cell.note = "WRONG", f"max |err| / max |ref| = {err:.3g}"
        print(f"  WRONG {cell.label}, {cell.nargs} arrays: {cell.note}", flush=True)
        print(f"WRONG {cell.label}, {cell.nargs} arrays: {cell.note}", file=sys.stderr)
        return
    cell.status, cell.launch = "ok", launch


def time_window(launch, n: int, sync) -> float:
    """Microseconds per launch of ``n`` back-to-back launches and one synchronization."""
    t0 = time.perf_counter()
    for _ in range(n):
        launch()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def run_windows(items, time_one, windows: int, what: str) -> None:
    """``windows`` rounds over the items whose status is "ok", each round starting one item
    further; ``item.times`` gets ``time_one(item)`` per round (an item that raises is marked
    error and left out of later rounds)."""
    for w in range(windows):
        live = [c for c in items if c.status == "ok"]
        if not live:
            return
        shift = w % len(live)
        for c in live[shift:] + live[:shift]:
            gc.collect()
            try:
                c.times.append(time_one(c))
            except Exception as exc:
                c.status, c.note = "error", f"while timing: {brief(exc)}"
                print(f"  error {what} {c.label}: {c.note}", flush=True)


def bench_launch(args, sources, sync) -> list:
    """The launch section: every :class:`Cell`, checked and timed."""
    peers = {}
    try:
        peers[RAW] = raw_kernels(sources[CUPY].module) if isinstance(sources[CUPY], Source) \
            else sources[CUPY]
    except Exception as exc:
        peers[RAW] = brief(exc)
    try:
        if not isinstance(sources[TORCH], Source):
            raise ImportError(f"Triton's tensors come from PyTorch: {sources[TORCH]}")
        peers[TRITON] = triton_kernels()
    except Exception as exc:
        peers[TRITON] = brief(exc)
    try:
        peers[NUMBA] = numba_kernels()
    except Exception as exc:
        peers[NUMBA] = brief(exc)
    rng = np.random.default_rng(args.seed)
    cells = [Cell(k, impl, source) for k in args.arrays for impl, source in COLUMNS]
    t0 = time.perf_counter()
    for cell in cells:
        prepare_cell(cell, rng, sources, peers, sync)
    for cell in cells:
        if cell.status == "ok":
            try:
                for _ in range(args.warmup):
                    cell.launch()
                sync()
            except Exception as exc:
                cell.status, cell.note = "error", f"while warming up: {brief(exc)}"
                print(f"  error {cell.label}: {cell.note}", flush=True)
    t1 = time.perf_counter()
    run_windows(cells, lambda c: time_window(c.launch, args.launches, sync), args.windows,
                "launch")
    print(f"launch section: {t1 - t0:.1f} s compiles, checks and warm-up, "
          f"{time.perf_counter() - t1:.1f} s timing", flush=True)
    return cells


def launch_ratio(cells, cell: Cell, peer: str) -> float:
    """``cell``'s median time over ``peer``'s (same number of arrays), NaN unless both timed."""
    other = [c for c in cells if c.impl == peer and c.nargs == cell.nargs]
    if not other or not cell.times or not other[0].times:
        return math.nan
    return cell.us / other[0].us


# ------------------------------------------------------------------------------ graph section

@dataclass
class GraphCase:
    """One implementation of the graph section; ``replay()`` runs ``kernels`` kernels once."""

    name: str
    arrays: str = "-"
    replay: object = None
    status: str = "n/a"
    note: str = ""
    times: list = field(default_factory=list)     # microseconds per kernel, one per window
    keep: tuple = ()                              # graphs and arrays the replay needs

    @property
    def label(self) -> str:
        return self.name

    @property
    def us(self) -> float:
        return statistics.median(self.times) if self.times else math.nan


def _graph_source(sources):
    """The arrays numba_tile's graph cases use: PyTorch's (the torch capture needs them), else
    CuPy's, else Numba's."""
    for name in (TORCH, CUPY, NUMBA_ARRAYS):
        if isinstance(sources.get(name), Source):
            return sources[name]
    return None


def _setup_nt_eager(case, src, x, z, kernels):
    def replay():
        for _ in range(kernels):
            nt_acc(x, nt.partition(z, N), B=N)
    return replay, ()


def _setup_nt_graph(case, src, x, z, kernels):
    g = nt.Graph()
    with g.capture():
        for _ in range(kernels):
            nt_acc(x, nt.partition(z, N), B=N)
    return g.replay, (g,)


def _setup_torch_nt(case, src, x, z, kernels):
    torch = src.module
    for mode in ("global", "relaxed"):   # torch.cuda.graph's default, then the tolerant one
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g, capture_error_mode=mode):
                stream = torch.cuda.current_stream()
                for _ in range(kernels):
                    nt_acc(x, nt.partition(z, N), B=N, stream=stream)
        except Exception as exc:
            if mode == "relaxed":
                raise
            case.note = f"capture_error_mode='global' failed ({brief(exc)}); relaxed used"
            print(f"  {case.name}: {case.note}", flush=True)
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - the retry reports what is left
                pass
            continue
        return g.replay, (g,)
    raise AssertionError("unreachable")


def _setup_torch(case, src, x, z, kernels):
    torch = src.module
    side = torch.cuda.Stream()             # torch.cuda.graph's documented warm-up
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            z.add_(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(kernels):
            z.add_(x)
    return g.replay, (g,)


def _setup_cupy(case, src, x, z, kernels):
    cupy = src.module
    acc = raw_kernels(cupy)["acc"]
    n32 = np.int32(N)
    acc((1,), (N,), (x, z, n32))           # compile and load before the capture
    cupy.cuda.runtime.deviceSynchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            for _ in range(kernels):
                acc((1,), (N,), (x, z, n32))
        finally:
            graph = stream.end_capture()
    null = cupy.cuda.Stream.null
    return (lambda: graph.launch(null)), (graph, stream)


GRAPH_SETUP = {G_EAGER: _setup_nt_eager, G_NT: _setup_nt_graph, G_TORCH_NT: _setup_torch_nt,
               G_TORCH: _setup_torch, G_CUPY: _setup_cupy}


def prepare_graph_case(case: GraphCase, src, rng, kernels: int, sync) -> None:
    """Fresh arrays, a warm-up launch, the capture, z reset, one replay, the check."""
    if src is None or isinstance(src, str):
        case.status = "n/a"
        case.note = case.note or (src if isinstance(src, str) else "no array library")
        return
    case.arrays = src.name
    xh = rng.random(N).astype(np.float32)
    z0 = rng.standard_normal(N).astype(np.float32)
    ref = z0.astype(np.float64) + kernels * xh.astype(np.float64)
    try:
        x, z = src.asarray(xh), src.asarray(z0)
        sync()
        if case.name in (G_EAGER, G_NT, G_TORCH_NT):    # compile and load before any capture
            stream = src.module.cuda.current_stream() if case.name == G_TORCH_NT else None
            nt_acc(x, nt.partition(z, N), B=N, stream=stream)
            sync()
        replay, keep = GRAPH_SETUP[case.name](case, src, x, z, kernels)
        sync()
        src.copy_in(z, z0)                # the warm-ups (and a capture that also ran) undone
        sync()
        handle = replay()
        if hasattr(handle, "sync"):       # numba_tile's replay returns a LaunchHandle
            handle.sync()
        sync()
        err = relative_error(src.to_numpy(z), ref)
    except Exception as exc:
        case.status = "error"
        case.note = (case.note + "; " if case.note else "") + brief(exc)
        print(f"  error {case.name}: {brief(exc)}", flush=True)
        return
    if not err <= TOL_GRAPH:
        case.status, case.note = "WRONG", f"max |err| / max |ref| = {err:.3g}"
        print(f"  WRONG {case.name}: {case.note}", flush=True)
        print(f"WRONG {case.name}: {case.note}", file=sys.stderr)
        return
    case.status, case.replay, case.keep = "ok", replay, keep + (x, z)


def time_replays(replay, replays: int, kernels: int, sync) -> float:
    """Microseconds per kernel of ``replays`` back-to-back replays and one synchronization."""
    t0 = time.perf_counter()
    for _ in range(replays):
        replay()
    sync()
    return (time.perf_counter() - t0) / (replays * kernels) * 1e6


def bench_graph(args, sources, sync) -> list:
    """The graph section: every :class:`GraphCase`, checked and timed."""
    rng = np.random.default_rng(None if args.seed is None else args.seed + 1)
    nt_src = _graph_source(sources)
    cases = []
    t0 = time.perf_counter()
    for name in GRAPH_CASES:
        case = GraphCase(name)
        if name in (G_TORCH, G_TORCH_NT):
            src = sources[TORCH]
        elif name == G_CUPY:
            src = sources[CUPY]
        else:
            src = nt_src
        if isinstance(src, str):
            case.note = f"{TORCH if name != G_CUPY else CUPY}: {src}"
        if name == G_NT and not hasattr(nt, "Graph"):
            case.note = "numba_tile has no Graph (this version predates the graph API)"
        else:
            prepare_graph_case(case, src, rng, args.graph_kernels, sync)
        cases.append(case)
    for case in cases:
        if case.status == "ok":
            try:
                for _ in range(5):
                    case.replay()
                sync()
            except Exception as exc:
                case.status, case.note = "error", f"while warming up: {brief(exc)}"
                print(f"  error {case.name}: {case.note}", flush=True)
    t1 = time.perf_counter()
    order = [c for name in (G_NT, G_TORCH_NT, G_TORCH, G_CUPY, G_EAGER)
             for c in cases if c.name == name]
    run_windows(order, lambda c: time_replays(c.replay, args.replays, args.graph_kernels, sync),
                args.graph_windows, "graph")
    print(f"graph section: {t1 - t0:.1f} s captures and checks, "
          f"{time.perf_counter() - t1:.1f} s timing", flush=True)
    return order


def graph_ratio(cases, case: GraphCase, peer: str) -> float:
    other = [c for c in cases if c.name == peer]
    if not other or not case.times or not other[0].times:
        return math.nan
    return case.us / other[0].us


# ------------------------------------------------------------------------------ output

def fmt(value, spec) -> str:
    """``value`` formatted, "-" for NaN."""
    return "-" if value is None or math.isnan(value) else format(value, spec)


def spread(item) -> str:
    """The fastest and slowest windows' figures."""
    if not item.times:
        return "-"
    lo, hi = min(item.times), max(item.times)
    spec = ".2f" if hi < 10 else ".1f"
    return f"{lo:{spec}}-{hi:{spec}}"


def _value(item) -> str:
    return f"{item.us:.2f}" if item.times else item.status


def launch_rows(cells) -> list:
    """Rows of the launch table: [arrays, implementation, arrays from, us, min-max, ratios]."""
    return [[str(c.nargs), c.impl, c.source, _value(c), spread(c)]
            + [fmt(launch_ratio(cells, c, p), ".2f") for p in PEERS] for c in cells]


LAUNCH_HEAD = ["arrays", "implementation", "arrays from", "us/launch (median)",
               "windows min-max", "x CuPy RawKernel", "x Triton"]
GRAPH_HEAD = ["implementation", "arrays", "us/kernel (median)", "windows min-max",
              "x torch.cuda.graph of torch ops", "x CuPy graph of RawKernel"]


def graph_rows(cases) -> list:
    return [[c.name, c.arrays, _value(c), spread(c)]
            + [fmt(graph_ratio(cases, c, p), ".2f") for p in GRAPH_PEERS] for c in cases]


def print_table(head, rows, markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))


def print_notes(items) -> None:
    notes = [(i, i.note) for i in items if i.note and i.status != "ok"]
    notes += [(i, i.note) for i in items if i.note and i.status == "ok"]
    seen = set()
    for item, note in notes:
        key = (item.label, item.status, note)
        if key in seen:
            continue
        seen.add(key)
        same = [i for i in items if (i.label, i.status, i.note) == key]
        where = ""
        if isinstance(item, Cell):
            counts = ",".join(str(i.nargs) for i in same)
            where = f"{counts} array{'s' if counts != '1' else ''}: "
        print(f"  {where}{item.label}: {item.status}: {note}")


def plot_panels(cells, cases) -> list:
    """The figure of :func:`_plot.plot`: numba_tile / peer launch time per cell, the times of
    every implementation, and the graph section's times and ratios."""
    panels = []
    if cells:
        counts = sorted({c.nargs for c in cells})
        variants = [(impl, src) for impl, src in COLUMNS if impl in (NT, NT_REUSED)]
        cats, by_peer = [], {p: [] for p in PEERS}
        for k in counts:
            for impl, src in variants:
                cell = next(c for c in cells if (c.nargs, c.impl, c.source) == (k, impl, src))
                short = f"{src}, reused" if impl == NT_REUSED else src
                cats.append((f"{k} array{'s' if k > 1 else ''}", short))
                for p in PEERS:
                    by_peer[p].append(launch_ratio(cells, cell, p))
        panels.append(_plot.Panel(
            "launch: numba_tile's time per launch over the peer's (x: numba_tile's arrays; "
            "reused: one partition object for all launches)",
            cats, by_peer, "numba_tile time / peer time", ratio=True, better="lower"))
        series = {}
        for impl, src in COLUMNS:
            name = impl if impl in PEERS else f"{impl} ({src} arrays)"
            series[name] = [next(c.us for c in cells if (c.nargs, c.impl, c.source) ==
                                 (k, impl, src)) for k in counts]
        panels.append(_plot.Panel(
            "launch: host wall time per launch (median window)",
            [("", f"{k} array{'s' if k > 1 else ''}") for k in counts], series,
            "us per launch (log)", log=True))
    if cases:
        panels.append(_plot.Panel(
            "graph replay: time per kernel of a replayed sequence of one-block launches",
            [("", c.name) for c in cases], {"us per kernel": [c.us for c in cases]},
            "us per kernel (log)", log=True))
        mine = [c for c in cases if c.name in (G_NT, G_TORCH_NT, G_EAGER)]
        panels.append(_plot.Panel(
            "graph replay: numba_tile's time per kernel over the peers' graphs",
            [("", c.name) for c in mine],
            {p: [graph_ratio(cases, c, p) for c in mine] for p in GRAPH_PEERS},
            "numba_tile time / peer time", ratio=True, better="lower"))
    return panels


# ------------------------------------------------------------------------------ main

_dist_version, _git_commit = _env.dist_version, _env.git_commit


def device_name() -> str:
    """The current CUDA device's name (numba-cuda's view), "?" if that fails."""
    try:
        from numba import cuda
        name = cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 - only for the header
        return "?"


def versions(sources) -> str:
    parts = [f"numba_tile {nt.__version__} ({_git_commit()})",
             f"numba-cuda {_dist_version('numba-cuda')}", f"numpy {np.__version__}"]
    for name in (CUPY, TORCH):
        src = sources.get(name)
        parts.append(f"{src.module.__name__} {src.module.__version__}" if isinstance(src, Source)
                     else f"{name} n/a")
    try:
        import triton
        parts.append(f"triton {triton.__version__}")
    except Exception:  # noqa: BLE001
        parts.append("triton n/a")
    return ", ".join(parts)


def _counts(text: str) -> list:
    try:
        items = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        items = []
    if not items or any(k not in NT_KERNELS for k in items):
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of "
                                         f"{','.join(map(str, ARRAY_COUNTS))}, got {text!r}")
    return sorted(set(items))


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arrays", type=_counts, default=list(ARRAY_COUNTS),
                   help="array arguments per kernel, comma-separated subset of 1,3,8 (default all)")
    p.add_argument("--launches", type=_positive, default=2000,
                   help="back-to-back launches per timed window (default 2000)")
    p.add_argument("--windows", type=_positive, default=9,
                   help="timed windows per cell, interleaved (median; default 9)")
    p.add_argument("--warmup", type=_positive, default=200, help="launches before timing")
    p.add_argument("--graph-kernels", type=_positive, default=100,
                   help="one-block launches per captured graph (default 100)")
    p.add_argument("--replays", type=_positive, default=50,
                   help="back-to-back replays per timed window (default 50)")
    p.add_argument("--graph-windows", type=_positive, default=9,
                   help="timed windows per graph implementation (default 9)")
    p.add_argument("--skip-launch", action="store_true", help="leave out the launch section")
    p.add_argument("--skip-graph", action="store_true", help="leave out the graph section")
    p.add_argument("--seed", type=int, default=None, help="NumPy seed of the inputs (default: "
                   "fresh inputs every run)")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    _plot.add_plot_arguments(p, "launch")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not nt.gpu_available():
        raise SystemExit("benchmarks/launch.py needs a CUDA GPU")
    quiet_numba()
    sources = load_sources()
    sync = device_sync(sources)
    for name, src in sources.items():
        if isinstance(src, str):
            print(f"{name} arrays n/a: {src}")
    device = device_name()
    print(f"device: {device}")
    print(versions(sources))
    print(f"one-block kernels on {N} float32; numba_tile launches with every check, legacy "
          f"default stream; wall time per launch over {args.launches} launches and one sync, "
          f"median of {args.windows} interleaved windows")
    cells, cases = [], []
    if not args.skip_launch:
        cells = bench_launch(args, sources, sync)
        print("\nlaunch cost, host wall time per launch (us); ratios: this row's time over "
              "the peer's, same number of arrays (above 1: slower than the peer):\n")
        print_table(LAUNCH_HEAD, launch_rows(cells), args.markdown)
        print_notes(cells)
        sys.stdout.flush()
    if not args.skip_graph:
        try:
            cases = bench_graph(args, sources, sync)
        except Exception as exc:   # anything the cases did not catch: the launch table stands
            print(f"\ngraph section failed: {brief(exc)}")
            cases = []
        if cases:
            print(f"\ngraph replay: {args.graph_kernels} one-block launches of z += x ({N} "
                  f"float32) per replay; us per kernel = wall time of {args.replays} replays "
                  f"and one sync / ({args.graph_kernels} * {args.replays}), median of "
                  f"{args.graph_windows} interleaved windows; ratios: this row's time over the "
                  f"peer's:\n")
            print_table(GRAPH_HEAD, graph_rows(cases), args.markdown)
            print_notes(cases)
    sys.stdout.flush()
    _plot.plot(args.plot, f"numba_tile launch cost: {device}",
               plot_panels(cells, cases),
               note=f"{versions(sources)}; {args.launches} launches x {args.windows} windows, "
                    f"{args.replays} replays x {args.graph_windows} windows")
    bad = [i for i in (*cells, *cases) if i.status in ("WRONG", "error")]
    if bad:
        print("\nSOME RESULTS WERE WRONG OR RAISED (see above)", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
