"""FP8 GEMM: numba_tile's scaled FP8 product against ``torch._scaled_mm`` (cuBLASLt).

Run on a GPU machine of compute capability 8.9 or later (``python benchmarks/gemm_fp8.py``).
For ``float8_e4m3fn`` inputs A (M, K) and B (K, N) (B column-major: ``bt`` (N, K) row-major,
``B = bt.T``), float32 scales, a bfloat16 C, it prints the TFLOP/s of each implementation,
``2 * M * N * K / time``, and the ratios, all measured in the same run.

Implementations:

* numba_tile: ``examples/gemm_fp8.py`` (``C = (A @ B) * scale_a * scale_b``: one block per
  (BM, BN) tile, a K loop of ``nt.mma(x, nt.transpose(y), acc)``, the scales applied to the
  float32 accumulator), over a sweep of (BM, BN, BK, num_warps, num_stages) (``CONFIGS``;
  on the H200 all but the last take ``wgmma ... k32 .e4m3`` with TMA loads, the last
  ``mma.sync ... m16n8k32 .e4m3``: its figure is the ``mma.sync`` column); with
  ``--persistent`` each also as the persistent kernel (``blocks=`` one per multiprocessor,
  ``pN`` in the config column). The fastest is reported and named.
* ``torch._scaled_mm(a, bt.t(), scale_a, scale_b, out_dtype=torch.bfloat16,
  use_fast_accum=...)``, both settings: ``fast`` (the tensor cores' accumulator only, as
  numba_tile) and ``exact`` (``use_fast_accum=False``: cuBLASLt promotes the partial sums
  to float32 periodically, slower).

Scales (``--scales``): ``row`` (default: ``scale_a`` (M, 1), ``scale_b`` (1, N), as
DeepSeek-style row-wise scaling) or ``tensor`` (one float32 each, shape (1, 1)).

Method: the GEMM benchmark's (``benchmarks/gemm.py``: CUDA events on PyTorch's current
stream, each timed launch behind a ~1 ms spin and a 256 MiB L2 flush, median of up to
``--reps`` launches). Verification, before timing: every result against the float32 product
of the inputs (TF32 off) times the scales; max |C - ref| / max |ref| under 1e-2 (C is
bfloat16). WRONG results are not timed and make the run exit with status 1.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))

import gemm as bench  # noqa: E402  (benchmarks/gemm.py: timing, checks, formatting)
from examples import gemm_fp8 as nt_fp8  # noqa: E402
from examples.gemm import GemmConfig  # noqa: E402

SHAPES = ((8192, 8192, 4096), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096),
          (4096, 4096, 14336))
#: (BM, BN, BK, num_warps, num_stages); BK = 128: one 128-byte swizzle atom of FP8
CONFIGS = ((128, 256, 128, 8, 4), (128, 128, 128, 8, 5), (128, 256, 128, 8, 3),
           (128, 128, 64, 4, 3))
TOL = 1e-2


def _configs(text):
    return [bench.parse_config(t) for t in text.split(",")] if text else \
        [GemmConfig(*c) for c in CONFIGS]


def run(args) -> bool:
    torch = bench.import_torch()
    torch.backends.cuda.matmul.allow_tf32 = False
    timer = bench.Timer(torch, args.reps, args.budget)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    print(f"GPU: {props.name} (sm_{props.major}{props.minor}), driver {bench.driver_version()}; "
          f"torch {torch.__version__}, numba_tile {bench._git_commit()}; scales {args.scales}")
    head = ("| M | N | K | numba_tile TFLOP/s | config | mma.sync TFLOP/s | _scaled_mm fast | "
            "_scaled_mm exact | nt/fast | nt/exact | nt err |")
    print(head)
    print("|---" * 11 + "|")
    ok = True
    for (m, n, k) in args.shapes:
        gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 13 + k)
        a = (torch.randn(m, k, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
        bt = (torch.randn(n, k, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
        if args.scales == "row":
            sa = torch.rand(m, 1, device="cuda", generator=gen) + 0.5
            sb = torch.rand(1, n, device="cuda", generator=gen) + 0.5
        else:
            sa = torch.full((1, 1), 0.75, device="cuda")
            sb = torch.full((1, 1), 1.25, device="cuda")
        ref = (a.float() @ bt.float().t()) * sa * sb
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        text = f"{m}x{n}x{k}"
        res = {}
        best, best_cfg, best_err, sync = None, None, None, None
        blocks_opts = [None] + ([props.multi_processor_count] if args.persistent else [])
        for cfg in args.configs:
            for blocks in blocks_opts:
                name = f"{cfg}" + (f" p{blocks}" if blocks else "")
                r = bench.check_and_time(
                    f"numba_tile {name}",
                    lambda cfg=cfg, blocks=blocks: nt_fp8.scaled_mm(a, bt, sa, sb, c, config=cfg,
                                                                    blocks=blocks),
                    c, ref, TOL, timer, text)
                ok = ok and r["status"] != "WRONG"
                if r["status"] != "ok":
                    continue
                tf = bench.tflops(m, n, k, r["ms"])
                if cfg.bk < 128 or cfg.num_warps * 16 != cfg.bm:
                    if sync is None or tf > sync:
                        sync = tf
                elif best is None or tf > best:
                    best, best_cfg, best_err = tf, name, r["rel_err"]
        for name, fast in (("fast", True), ("exact", False)):
            def peer(fast=fast):
                torch._scaled_mm(a, bt.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                 use_fast_accum=fast, out=c)
            r = bench.check_and_time(f"_scaled_mm {name}", peer, c, ref, TOL, timer, text)
            ok = ok and r["status"] != "WRONG"
            res[name] = bench.tflops(m, n, k, r["ms"]) if r["status"] == "ok" else math.nan
        f = bench.fmt
        print(f"| {m} | {n} | {k} | {f(best, '.1f')} | {best_cfg or '-'} | {f(sync, '.1f')} | "
              f"{f(res['fast'], '.1f')} | {f(res['exact'], '.1f')} | "
              f"{f(best / res['fast'] if best else None, '.3f')} | "
              f"{f(best / res['exact'] if best else None, '.3f')} | "
              f"{f(best_err, '.1e')} |", flush=True)
        del a, bt, c, ref
        torch.cuda.empty_cache()
    return ok


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=None, help="MxNxK,... (default: the issue's shapes)")
    p.add_argument("--configs", default=None, help="BMxBNxBKxWARPSxSTAGES,...")
    p.add_argument("--scales", choices=("row", "tensor"), default="row")
    p.add_argument("--persistent", action="store_true",
                   help="also time each configuration as the persistent kernel on one block "
                        "per multiprocessor (pN in the config column)")
    p.add_argument("--reps", type=int, default=25)
    p.add_argument("--budget", type=float, default=0.4)
    args = p.parse_args(argv)
    args.shapes = [bench.parse_shape(t) for t in args.sizes.split(",")] if args.sizes \
        else list(SHAPES)
    args.configs = _configs(args.configs)
    sys.exit(0 if run(args) else 1)


if __name__ == "__main__":
    main()
