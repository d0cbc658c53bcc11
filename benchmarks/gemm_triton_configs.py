"""GEMM at each configuration of Triton's matmul tutorial: numba_tile against Triton, config by config.

Run on a GPU machine (``python benchmarks/gemm_triton_configs.py``). For each of the 16 CUDA
autotuning configurations of Triton's matrix multiplication tutorial
(``benchmarks/gemm.TRITON_CONFIGS``: BLOCK_SIZE_M, _N, _K, GROUP_SIZE_M, num_stages,
num_warps) and each input dtype, it times at one shape (default 4096 x 4096 x 4096):

* numba_tile: the tutorial's kernel as its author would write it in numba_tile
  (:func:`tutorial_matmul`: ``acc += a @ b`` over the K loop, C's tiles in the grouped order
  of GROUP_SIZE_M, the loads' ragged edges zero-padded), launched with that configuration's
  tile shape, ``num_warps`` and ``num_stages``;
* Triton: the tutorial's kernel (``benchmarks/gemm.triton_matmul``) with that one
  configuration (no autotuning).

Both in the same run, with ``benchmarks/gemm.py``'s method (CUDA events, each launch behind a
spin and an L2 flush, the median of up to ``--reps`` launches) and its check of every result
against ``torch.matmul`` in float32 before timing. The table gives each configuration's
TFLOP/s, the ratio numba_tile / Triton, and what numba_tile compiled it to (``wgmma`` or
``mma.sync``, and how its K loop's loads travel: ``Kernel.explain``); then the geometric mean
of the ratios and the configurations more than 10% behind Triton. ``--plot PATH`` (default
``docs/plots/gemm_triton_configs.png``) draws the ratios and the TFLOP/s.

``--interpret`` runs numba_tile's kernel alone in its interpreter, every configuration on a
small ragged shape, against NumPy: a check of the kernel and the harness without a GPU.
A configuration whose pipeline stages need more shared memory than a block has (64 x 256 x 128
with 4 stages) is refused by numba_tile at its launch and fails to compile in Triton
(``OutOfResources``); the table says "refused" for either.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))

import _plot  # noqa: E402
import gemm as bench  # noqa: E402  (benchmarks/gemm.py: method, Triton's kernel)
import numba_tile as nt  # noqa: E402


def tutorial_matmul(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                    BK: nt.Constant):
    """Triton's tutorial ``matmul_kernel`` in numba_tile: the block's (BM, BN) tile of C
    (``c``'s grouped order stands for the tutorial's GROUP_SIZE_M program-id swizzle), a
    float32 accumulator, ``acc += a @ b`` over K (the tutorial's ``tl.dot(a, b, acc)``;
    ``typing/mma.fuse_accumulating_products`` makes it one ``mma``)."""
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
        y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
        acc += x @ y
    nt.store(c, nt.astype(acc, c.dtype))


_KERNELS: dict = {}


def kernel(cfg):
    """The numba_tile kernel of one Triton configuration ``(bm, bn, bk, group, stages,
    warps)``."""
    _bm, _bn, _bk, _g, stages, warps = cfg
    key = (stages, warps)
    if key not in _KERNELS:
        _KERNELS[key] = nt.jit(num_warps=warps, num_stages=stages)(tutorial_matmul)
    return _KERNELS[key]


def launch(cfg, a, b, c, stream=None, interpret=False):
    bm, bn, bk, group, _s, _w = cfg
    part = nt.partition(c, (bm, bn), order=nt.grouped(group))
    return kernel(cfg)(a, b, part, bm, bn, bk, stream=stream, interpret=interpret)


def cfg_text(cfg) -> str:
    bm, bn, bk, g, s, w = cfg
    return f"{bm}x{bn}x{bk} g{g} w{w} s{s}"


def path_of(cfg, a, b, c) -> str:
    """What numba_tile compiled the configuration to (``Kernel.explain``'s words, short)."""
    bm, bn, bk, group, _s, _w = cfg
    try:
        text = str(kernel(cfg).explain(a, b, nt.partition(c, (bm, bn),
                                                          order=nt.grouped(group)), bm, bn, bk))
    except Exception as exc:  # noqa: BLE001 - the timing reports it
        return f"- ({bench.brief(exc)})"
    mma = "wgmma" if "mma: wgmma" in text else "mma.sync"
    if "TMA boxes, warp-specialized" in text:
        loads = "TMA+WS"
    elif "TMA boxes" in text:
        loads = "TMA"
    elif "cp.async" in text:
        loads = "cp.async"
    else:
        loads = "unpipelined"
    return f"{mma} {loads}"


def _resource_refusal(text: str) -> bool:
    """Whether an error says the configuration needs more shared memory than a block has."""
    return "shared memory per block" in text or "OutOfResources" in text or \
        "out of resource" in text


def run_interpret() -> bool:
    rng = np.random.default_rng()
    ok = True
    for dname in bench.DTYPES:
        dt = nt.dtypes.BFLOAT16_NP if dname == "bf16" else np.float16
        for cfg in bench.TRITON_CONFIGS:
            m, n, k = 130, 72, 100
            a = rng.integers(-2, 3, (m, k)).astype(np.float64).astype(dt)
            b = rng.integers(-2, 3, (k, n)).astype(np.float64).astype(dt)
            c = np.full((m, n), np.nan, dt)
            try:
                launch(cfg, a, b, c, interpret=True)
            except nt.errors.TileTypingError as exc:
                if not _resource_refusal(str(exc)):
                    raise
                print(f"{dname} {cfg_text(cfg)}: refused ({str(exc).splitlines()[0][:90]}...)")
                continue
            want = (a.astype(np.float64) @ b.astype(np.float64)).astype(dt)
            same = np.array_equal(c.astype(np.float64), want.astype(np.float64))
            print(f"{dname} {cfg_text(cfg)}: {'ok' if same else 'WRONG'}", flush=True)
            ok = ok and same
    return ok


def run_gpu(args) -> bool:
    torch = bench.import_torch()
    torch.backends.cuda.matmul.allow_tf32 = False
    import triton
    timer = bench.Timer(torch, args.reps, args.budget)
    m, n, k = args.shape
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    print(f"GPU: {props.name}; triton {triton.__version__}, torch {torch.__version__}, "
          f"numba_tile {nt.__version__} ({bench._git_commit()}); M={m} N={n} K={k}")
    head = (f"{'dtype':5} {'configuration':22} {'numba_tile':>10} {'Triton':>8} {'ratio':>6}  "
            f"numba_tile's path")
    print(head + "\n" + "-" * len(head))
    rows, ok = [], True
    stream = torch.cuda.current_stream()
    for dname in args.dtypes:
        dt = getattr(torch, bench.DTYPE_NAMES[dname])
        gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 13 + k)
        a = torch.randn(m, k, device="cuda", dtype=dt, generator=gen)
        b = torch.randn(k, n, device="cuda", dtype=dt, generator=gen)
        c = torch.empty(m, n, device="cuda", dtype=dt)
        ref = torch.matmul(a.float(), b.float())
        text = f"{dname} M={m} N={n} K={k}"
        for cfg in bench.TRITON_CONFIGS:
            r_nt = bench.check_and_time(f"numba_tile {cfg_text(cfg)}",
                                        lambda: launch(cfg, a, b, c, stream=stream), c, ref,
                                        bench.TOL[dname], timer, text)
            matmul, _best = bench.triton_matmul((cfg,))
            r_tr = bench.check_and_time(f"Triton {cfg_text(cfg)}", lambda: matmul(a, b, c), c,
                                        ref, bench.TOL[dname], timer, text)
            # a configuration past the block's shared memory is refused (numba_tile, at the
            # launch) or fails to compile (Triton's OutOfResources): not a failure of the run
            for r in (r_nt, r_tr):
                if r["status"] == "error" and _resource_refusal(r.get("error", "")):
                    r["status"] = "refused"
            ok = ok and r_nt["status"] in ("ok", "refused") and r_tr["status"] in ("ok",
                                                                                  "refused")
            t_nt = bench.tflops(m, n, k, r_nt["ms"]) if "ms" in r_nt else math.nan
            t_tr = bench.tflops(m, n, k, r_tr["ms"]) if "ms" in r_tr else math.nan
            path = path_of(cfg, a, b, c)
            rows.append((dname, cfg, t_nt, t_tr, path))
            print(f"{dname:5} {cfg_text(cfg):22} {bench.fmt(t_nt, '.0f'):>10} "
                  f"{bench.fmt(t_tr, '.0f'):>8} {bench.fmt(t_nt / t_tr, '.3f'):>6}  {path}",
                  flush=True)
    ratios = [t / u for _, _, t, u, _ in rows if t > 0 and u > 0]
    print(f"\ngeometric mean numba_tile / Triton over {len(ratios)} configurations: "
          f"{bench.fmt(bench.geomean(ratios), '.3f')}")
    behind = [(d, cfg_text(c), t / u) for d, c, t, u, _ in rows if t > 0 and u > 0
              and t / u < 0.9]
    print(f"more than 10% behind Triton: {len(behind)}"
          + "".join(f"\n  {d} {c}: {r:.3f}" for d, c, r in behind))
    if args.markdown:
        print("\n| dtype | configuration | numba_tile TFLOP/s | Triton TFLOP/s | ratio | "
              "numba_tile's path |\n| --- | --- | ---: | ---: | ---: | --- |")
        for d, c, t, u, p in rows:
            print(f"| {d} | {cfg_text(c)} | {bench.fmt(t, '.0f')} | {bench.fmt(u, '.0f')} | "
                  f"{bench.fmt(t / u, '.3f')} | {p} |")
    cats = [(d, cfg_text(c)) for d, c, *_ in rows]
    _plot.plot(args.plot, f"numba_tile and Triton at Triton's tutorial configurations: "
                          f"{props.name}, {m}x{n}x{k}",
               [_plot.Panel("numba_tile / Triton TFLOP/s, per configuration", cats,
                            {"Triton": [t / u if u > 0 else math.nan for _, _, t, u, _ in rows]},
                            "numba_tile / Triton", ratio=True),
                _plot.Panel("TFLOP/s", cats, {"numba_tile": [r[2] for r in rows],
                                              "Triton": [r[3] for r in rows]}, "TFLOP/s")])
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=bench.parse_shape, default=(4096, 4096, 4096),
                   help="MxNxK or a square size (default 4096)")
    p.add_argument("--dtypes", nargs="+", choices=bench.DTYPES, default=list(bench.DTYPES))
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--budget", type=float, default=2.0)
    p.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    p.add_argument("--plot", default=str(ROOT / "docs" / "plots" / "gemm_triton_configs.png"))
    p.add_argument("--no-plot", dest="plot", action="store_const", const=None)
    p.add_argument("--interpret", action="store_true",
                   help="numba_tile only, in its interpreter, against NumPy (no GPU)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    ok = run_interpret() if args.interpret else run_gpu(args)
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
