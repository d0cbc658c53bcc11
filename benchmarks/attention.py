"""Attention forward and backward: numba_tile against cuDNN, FlashAttention-2 and Triton.

Run on a GPU machine (``python benchmarks/attention.py``). For each dtype, head dimension,
causal or not, pass (forward, backward) and sequence length, with the total tokens fixed
(``--tokens``, default 16384: batch = tokens / seq) and ``2048 / D`` query heads (the hidden
size of FlashAttention's benchmarks), it prints every implementation's TFLOP/s and the ratios
numba_tile / peer, then their geometric means per pass. ``--gqa N`` adds cells with ``N``
query heads per key head.

FLOPs: the forward ``4 * B * H * S^2 * D`` (two products), halved when causal; the backward
2.5 times the forward's (five products, FlashAttention's convention).

Implementations, all on PyTorch tensors of the layout (B, H, S, D) on PyTorch's current stream:

* numba_tile: ``examples/attention.py`` (``attention``) and ``examples/attention_backward.py``
  (``attention_backward``, given the forward's output and log-sum-exp);
* cuDNN: ``torch.nn.functional.scaled_dot_product_attention`` under
  ``sdpa_kernel(SDPBackend.CUDNN_ATTENTION)`` (the backward through ``torch.autograd.grad``);
* FlashAttention-2: the same under ``SDPBackend.FLASH_ATTENTION``;
* Triton: ``benchmarks/attention_triton.py``, the algorithm of Triton's fused-attention
  tutorial at its Hopper configurations.

Method: CUDA events, a ~1 ms spin kernel ahead of each timed launch (so the host's launch
cost stays out), the median of ``--reps`` launches (fewer past ``--budget`` seconds). Every
implementation is checked first against float64 on the GPU for the first batch's first key
head and the query heads that read it (max error / max |reference| under 2e-2); a result
that fails is marked WRONG, an implementation that raises (a backend that does not take the
shape) ``error``; neither is timed. The exit status is 1 when anything was WRONG.

``--plot PATH`` (default ``docs/plots/attention.png``) draws the ratios and the TFLOP/s.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "examples"))
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))

import _env  # noqa: E402
import _plot  # noqa: E402

IMPLS = ("numba_tile", "cudnn", "flash", "triton")
TITLES = {"numba_tile": "numba_tile", "cudnn": "cuDNN", "flash": "FlashAttention-2",
          "triton": "Triton"}
PEERS = IMPLS[1:]
SPIN_CYCLES = 2_000_000
WARMUP = 3
MIN_REPS = 5
TOL = 2e-2


def flops(b, h, s, d, causal, bwd):
    f = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    return f * 2.5 if bwd else f


def time_ms(fn, reps, budget, torch):
    t0 = time.perf_counter()
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    per = (time.perf_counter() - t0) / WARMUP + 1e-3
    n = max(MIN_REPS, min(reps, int(budget / per)))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(n)]
    for start, stop in ev:
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def implementations(torch):
    """{name: (forward(q, k, v, causal, scale) -> (o, lse or None),
    backward(q, k, v, o, lse, do, causal, scale) -> (dq, dk, dv))}"""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional

    from examples import attention as nt_fwd
    from examples import attention_backward as nt_bwd

    def nt_forward(q, k, v, causal, scale):
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
        nt_fwd.attention(q, k, v, o, lse, causal=causal, scale=scale)
        return o, lse

    def nt_backward(q, k, v, o, lse, do, causal, scale):
        grads = [torch.empty_like(x) for x in (q, k, v)]
        nt_bwd.attention_backward(q, k, v, o, lse, do, *grads, causal=causal, scale=scale)
        return grads

    def sdpa(backend):
        def forward(q, k, v, causal, scale):
            with sdpa_kernel(backend):
                gqa = q.shape[1] != k.shape[1]
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                      enable_gqa=gqa), None

        def backward(q, k, v, o, lse, do, causal, scale):
            q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                     enable_gqa=q.shape[1] != k.shape[1])
            return _Replay(torch, out, (q, k, v), do)
        return forward, backward

    impls = {"numba_tile": (nt_forward, nt_backward),
             "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
             "flash": sdpa(SDPBackend.FLASH_ATTENTION)}
    try:
        import attention_triton as tri
        impls["triton"] = (tri.forward, tri.backward)
    except Exception as exc:  # noqa: BLE001 - reported, the others still run
        print(f"Triton unavailable: {type(exc).__name__}: {exc}")
    return impls


class _Replay:
    """An autograd graph whose backward can be run again (the timed call) and whose gradients
    are read as a tuple (the checked call)."""

    def __init__(self, torch, out, inputs, do):
        self.torch, self.out, self.inputs, self.do = torch, out, inputs, do

    def __call__(self):
        return self.torch.autograd.grad(self.out, self.inputs, self.do, retain_graph=True)


def reference(torch, q, k, v, do, causal, scale):
    """float64 (o, dq, dk, dv) of the first batch's first key head and its query heads."""
    g = q.shape[1] // k.shape[1]
    q64, k64, v64 = (x[:1, :n].double().detach().requires_grad_()
                     for x, n in ((q, g), (k, 1), (v, 1)))
    kr, vr = k64.repeat_interleave(g, 1), v64.repeat_interleave(g, 1)
    s = q64 @ kr.transpose(-1, -2) * scale
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, device=s.device, dtype=torch.bool).triu(1),
                          -math.inf)
    o = torch.softmax(s, -1) @ vr
    dq, dk, dv = torch.autograd.grad(o, (q64, k64, v64), do[:1, :g].double())
    return o.detach(), dq, dk, dv


def rel_err(got, want):
    return float((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30))


def run_cell(torch, impls, dtype, b, hq, hk, s, d, causal, bwd, args):
    dev = "cuda"
    q = torch.randn(b, hq, s, d, device=dev, dtype=dtype)
    k = torch.randn(b, hk, s, d, device=dev, dtype=dtype)
    v = torch.randn(b, hk, s, d, device=dev, dtype=dtype)
    do = torch.randn_like(q)
    scale = d ** -0.5
    ref = reference(torch, q, k, v, do, causal, scale)
    g = hq // hk
    res = {}
    for name, (fwd, bwd_fn) in impls.items():
        try:
            o, lse = fwd(q, k, v, causal, scale)
            if not bwd:
                err = rel_err(o[:1, :g], ref[0])
                call = lambda: fwd(q, k, v, causal, scale)  # noqa: E731
            else:
                if lse is None:          # SDPA: the replayable autograd graph
                    call = bwd_fn(q, k, v, o, lse, do, causal, scale)
                    grads = call()
                else:
                    grads = bwd_fn(q, k, v, o, lse, do, causal, scale)
                    call = lambda: bwd_fn(q, k, v, o, lse, do, causal, scale)  # noqa: E731
                sel = (grads[0][:1, :g], grads[1][:1, :1], grads[2][:1, :1])
                err = max(rel_err(x, w) for x, w in zip(sel, ref[1:]))
            if not err <= TOL:
                print(f"  WRONG {name}: max error / max |reference| = {err:.3g}")
                res[name] = "WRONG"
                continue
            ms = time_ms(call, args.reps, args.budget, torch)
            res[name] = flops(b, hq, s, d, causal, bwd) / ms / 1e9
        except Exception as exc:  # noqa: BLE001 - reported in the table
            print(f"  error {name}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            res[name] = "error"
    return res


def ratio(res, peer):
    a, p = res.get("numba_tile"), res.get(peer)
    return a / p if isinstance(a, float) and isinstance(p, float) and p > 0 else math.nan


def geomean(xs):
    xs = [x for x in xs if _plot.finite(x) and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def fmt(v):
    return f"{v:.0f}" if isinstance(v, float) else str(v)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seqs", type=lambda t: [int(x) for x in t.split(",")],
                   default=[1024, 2048, 4096, 8192, 16384])
    p.add_argument("--dims", type=lambda t: [int(x) for x in t.split(",")], default=[64, 128])
    p.add_argument("--dtypes", default="bf16", help="comma-separated: bf16, fp16")
    p.add_argument("--passes", default="fwd,bwd", help="comma-separated: fwd, bwd")
    p.add_argument("--causal", default="0,1", help="comma-separated: 0, 1")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--gqa", type=int, default=0,
                   help="also cells with this many query heads per key head (0: none)")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--budget", type=float, default=1.0)
    p.add_argument("--markdown", action="store_true")
    _plot.add_plot_arguments(p, "attention")
    args = p.parse_args(argv)

    import torch
    import numba_tile as nt
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/attention.py needs a CUDA GPU")
    name = torch.cuda.get_device_name()
    print(f"# {name}, {time.strftime('%Y-%m-%d')}, numba_tile {_env.git_commit()}, "
          f"torch {torch.__version__}, triton {_env.dist_version('triton')}, "
          f"numba-cuda {_env.dist_version('numba-cuda')}, numba_tile {nt.__version__}")
    impls = implementations(torch)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    rows = []
    header = (f"{'pass':<4} {'dt':<4} {'D':>4} {'causal':>6} {'Hq/Hk':>6} {'seq':>6} "
              + " ".join(f"{TITLES[i][:10]:>10}" for i in IMPLS)
              + " " + " ".join(f"{'/' + TITLES[x][:8]:>9}" for x in PEERS))
    print("TFLOP/s and numba_tile / peer")
    print(header)
    for pas in args.passes.split(","):
        for dn in args.dtypes.split(","):
            for d in args.dims:
                for causal in (c == "1" for c in args.causal.split(",")):
                    hq = 2048 // d
                    for hk in [hq] + ([hq // args.gqa] if args.gqa else []):
                        for s in args.seqs:
                            b = max(1, args.tokens // s)
                            res = run_cell(torch, impls, dtypes[dn], b, hq, hk, s, d, causal,
                                           pas == "bwd", args)
                            rows.append(((pas, dn, d, causal, f"{hq}/{hk}", s), res))
                            print(f"{pas:<4} {dn:<4} {d:>4} {int(causal):>6} "
                                  f"{hq}/{hk:<3} {s:>6} "
                                  + " ".join(f"{fmt(res.get(i, 'n/a')):>10}" for i in IMPLS)
                                  + " " + " ".join(f"{ratio(res, x):>9.3f}" for x in PEERS),
                                  flush=True)
    print("\ngeometric means of numba_tile / peer")
    for pas in args.passes.split(","):
        sel = [r for key, r in rows if key[0] == pas]
        print(f"{pas}: " + ", ".join(f"{TITLES[x]} {geomean([ratio(r, x) for r in sel]):.3f} "
                                     f"(min {min([ratio(r, x) for r in sel] or [math.nan]):.3f})"
                                     for x in PEERS))
    if args.markdown:
        print("\n| pass | dtype | D | causal | Hq/Hk | seq | "
              + " | ".join(f"{TITLES[i]} TFLOP/s" for i in IMPLS) + " | "
              + " | ".join(f"nt/{TITLES[x]}" for x in PEERS) + " |")
        print("|" + "---|" * (6 + len(IMPLS) + len(PEERS)))
        for key, res in rows:
            print("| " + " | ".join(str(int(x) if isinstance(x, bool) else x) for x in key)
                  + " | " + " | ".join(fmt(res.get(i, "n/a")) for i in IMPLS) + " | "
                  + " | ".join(f"{ratio(res, x):.3f}" for x in PEERS) + " |")
    if args.plot is not None and rows:
        cats = [(f"{k[0]} {k[1]} D={k[2]}{' causal' if k[3] else ''} {k[4]}", str(k[5]))
                for k, _ in rows]
        panels = [_plot.Panel("numba_tile's TFLOP/s over each peer's", cats,
                              {TITLES[x]: [ratio(r, x) for _, r in rows] for x in PEERS},
                              "numba_tile / peer", ratio=True),
                  _plot.Panel("TFLOP/s", cats,
                              {TITLES[i]: [r[i] if isinstance(r.get(i), float) else math.nan
                                           for _, r in rows] for i in IMPLS},
                              "TFLOP/s", style="lines")]
        _plot.plot(args.plot, f"Attention on {name}", panels)
    wrong = any(v == "WRONG" for _, r in rows for v in r.values())
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
