"""Configuration sweeps of the examples on the GPU: the runs behind the defaults of
``examples/rope.py`` (``qk_config``), ``examples/layernorm_backward.py`` (``config``) and
``examples/cross_entropy.py`` (``config``).

Run on a GPU machine (``python benchmarks/sweeps.py rope_qk layernorm_backward
cross_entropy``). For each shape it times Triton's kernel (the one ``benchmarks/kernels.py``
writes) once, then every configuration of the sweep with the same method
(``benchmarks/norms.py``'s ``time_ms``: CUDA events, a spin kernel ahead of each launch, the
median of ``--reps``), and prints the configurations by their ratio to Triton, best first.
Every configuration's result is checked against float64 before it is timed (rope: the
largest error over the largest magnitude, printed beside the ratio; layer norm and cross
entropy: the examples' own checks run in the tests).

* ``rope_qk``: ``rope_qk_rows`` with 8, 16 or 32 query heads per tile (8 key heads), 1, 2 or
  4 warps, one block per strip or 2112 / 4224 persistent blocks; LLaMA-3 8B heads, 1 x 2048
  and 4 x 8192 tokens.
* ``layernorm_backward``: 132-1056 phase-1 blocks x 4, 8, 16 warps at 4096 rows of 1024,
  4096 and 8192 columns.
* ``cross_entropy``: column tiles of 2048-16384 over 2-16 warps at 1-10 blocks a
  multiprocessor (``min_blocks_per_sm``), the fold the chunks a thread holds
  (``examples/cross_entropy.fold_of``), one block per row or 264 persistent blocks (rows b,
  b + N, ...: fewer rows in flight, so the gradient pass may find its row still in the L2),
  at 4096 x 32000 and 1024 x 128256.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))

import norms as _norms  # noqa: E402

DTYPES = ("bf16", "fp32")


def _torch_dtype(torch, name):
    return {"bf16": torch.bfloat16, "fp32": torch.float32}[name]


def _dt_name(name: str) -> str:
    return {"bf16": "bfloat16", "fp32": "float32"}[name]


def sweep_rope_qk(args, torch, spin, kernels_mod):
    import numba_tile as nt
    import rope as ex
    t_rope, _ = kernels_mod.triton_rope_layernorm_bwd()
    hq, hk, d = 32, 8, 128
    for dname in args.dtypes:
        dt = _torch_dtype(torch, dname)
        for bsz, seq in ((1, 2048), (4, 8192)):
            c64, s64 = ex.tables(seq, d)
            cos = torch.from_numpy(c64).to("cuda", dt)
            sin = torch.from_numpy(s64).to("cuda", dt)
            qk = bsz * seq * (hq + hk) * d * dt.itemsize
            nbytes = 2 * qk + 2 * seq * d * dt.itemsize
            sets = kernels_mod._sets(lambda: (
                torch.randn(bsz, seq, hq, d, device="cuda").to(dt),
                torch.randn(bsz, seq, hk, d, device="cuda").to(dt),
                torch.empty(bsz, seq, hq, d, device="cuda", dtype=dt),
                torch.empty(bsz, seq, hk, d, device="cuda", dtype=dt)), qk)
            ms = _norms.time_ms(lambda q, k, qo, ko: t_rope(q, k, cos, sin, qo, ko), sets, args,
                                spin, torch)
            triton_gbs = nbytes / ms / 1e6
            c, s = cos.double()[None, :, None, :], sin.double()[None, :, None, :]

            def rot(t):
                t = t.double()
                h = d // 2
                return t * c + torch.cat([-t[..., h:], t[..., :h]], dim=-1) * s

            res = []
            rows = bsz * seq
            # (query heads a tile, warps, min_blocks_per_sm): the bound caps the registers so
            # that that many blocks fit an SM
            for hqt, warps, minb in ((8, 1, None), (16, 1, None), (16, 2, None), (32, 1, None),
                                     (32, 1, 12), (32, 1, 16), (32, 2, None), (32, 2, 8),
                                     (32, 4, None), (16, 2, 16)):
                kern = ex.rope_qk_rows.with_options(num_warps=warps, min_blocks_per_sm=minb)
                for blocks in sorted({min(rows * (hq // hqt), 65536), 132 * 16}):
                    def f(q, k, qo, ko, kern=kern, blocks=blocks, hqt=hqt):
                        kern(ex._rows_of_heads(q), ex._rows_of_heads(k),
                             ex._per_head(cos, hq), ex._per_head(sin, hq),
                             ex._per_head(cos, hk), ex._per_head(sin, hk),
                             nt.partition(ex._rows_of_heads(qo), (1, hqt, d // 2),
                                          blocks=blocks),
                             nt.partition(ex._rows_of_heads(ko), (1, hk, d // 2),
                                          blocks=blocks),
                             seq, hqt, hk, d // 2, _dt_name(dname))
                    q, k, qo, ko = sets[0]
                    qo.fill_(float("nan"))
                    ko.fill_(float("nan"))
                    f(q, k, qo, ko)
                    torch.cuda.synchronize()
                    err = max(((o.double() - rot(i)).abs().max() / rot(i).abs().max()).item()
                              for o, i in ((qo, q), (ko, k)))
                    ms = _norms.time_ms(f, sets, args, spin, torch)
                    res.append((nbytes / ms / 1e6 / triton_gbs, hqt, warps, minb or 0,
                                blocks, err))
            res.sort(reverse=True)
            print(f"rope_qk {dname} {bsz}x{seq} (Triton {triton_gbs:.0f} GB/s): " + " | ".join(
                f"{g:.3f} {h} heads x {w} warps (min {mb} blocks/SM), {b} blocks (err {e:.1e})"
                for g, h, w, mb, b, e in res[:8]), flush=True)


def sweep_layernorm_backward(args, torch, spin, kernels_mod):
    import numba_tile as nt
    import layernorm_backward as ex
    _, t_ln = kernels_mod.triton_rope_layernorm_bwd()
    for dname in args.dtypes:
        dt = _torch_dtype(torch, dname)
        for m, n in ((4096, 1024), (4096, 4096), (4096, 8192)):
            x = torch.randn(m, n, device="cuda").to(dt)
            dy = torch.randn(m, n, device="cuda").to(dt)
            w = torch.rand(n, device="cuda").to(dt)
            mean = x.float().mean(1)
            rstd = 1 / (x.float().var(1, unbiased=False) + 1e-5).sqrt()
            dx, dw, db = torch.empty_like(x), torch.empty(n, device="cuda", dtype=dt), \
                torch.empty(n, device="cuda", dtype=dt)
            nbytes = (3 * m * n + 3 * n) * dt.itemsize + 8 * m
            sets = [(x, dy, w, mean, rstd, dx, dw, db)]
            ms = _norms.time_ms(t_ln, sets, args, spin, torch)
            triton_gbs = nbytes / ms / 1e6
            bn = 1 << (n - 1).bit_length()
            res = []
            for blocks in (132, 256, 264, 396, 528, 1056):
                dwp = torch.empty(blocks, n, device="cuda")
                dbp = torch.empty_like(dwp)
                for warps in (4, 8, 16):
                    k1 = ex.ln_backward_dx.with_options(num_warps=warps)

                    def f(x, dy, w, mean, rstd, dx, dw, db, k1=k1, blocks=blocks, dwp=dwp,
                          dbp=dbp):
                        k1(x, dy, w, mean, rstd, nt.partition(dx, (1, bn), blocks=blocks),
                           nt.partition(dwp, (1, bn), blocks=blocks),
                           nt.partition(dbp, (1, bn), blocks=blocks), float(n), bn,
                           _dt_name(dname))
                        bc = min(bn, 256)
                        ex.ln_backward_dwdb(dwp, dbp, nt.partition(dw, (bc,)),
                                            nt.partition(db, (bc,)), 32, bc, _dt_name(dname))
                    ms = _norms.time_ms(f, sets, args, spin, torch)
                    res.append((nbytes / ms / 1e6 / triton_gbs, blocks, warps))
            res.sort(reverse=True)
            print(f"layernorm_backward {dname} {m}x{n} (Triton {triton_gbs:.0f} GB/s): "
                  + " | ".join(f"{g:.3f} {b} blocks x {w} warps" for g, b, w in res[:6]),
                  flush=True)


def sweep_cross_entropy(args, torch, spin, kernels_mod):
    import numba_tile as nt
    import cross_entropy as ex
    t_ce = kernels_mod.triton_kernels()[3]
    for dname in ("fp32", "bf16"):
        if dname not in args.dtypes:
            continue
        dt = _torch_dtype(torch, dname)
        for m, v in ((4096, 32000), (1024, 128256)):
            nbytes = 2 * m * v * dt.itemsize
            target = torch.randint(0, v, (m,), device="cuda")
            sets = [(torch.randn(m, v, device="cuda").to(dt), target,
                     torch.empty(m, 1, device="cuda")) for _ in range(2)]
            ms = _norms.time_ms(lambda x, t, loss: t_ce(x, t, loss[:, 0], m), sets, args, spin,
                                torch)
            triton_gbs = nbytes / ms / 1e6
            res = []
            # (columns, warps, min_blocks_per_sm): the last bounds the registers so that
            # that many blocks fit an SM; the fold is the chunks a thread holds
            for bc, warps, minb in ((2048, 2, 8), (2048, 2, 10), (2048, 4, 8), (4096, 2, 4),
                                    (4096, 4, 3), (4096, 4, 4), (4096, 4, 5), (4096, 4, 6),
                                    (4096, 8, 4), (8192, 4, 2), (8192, 8, 2), (8192, 8, 3),
                                    (16384, 8, 1), (16384, 16, 1)):
                kern = nt.jit(num_warps=warps, min_blocks_per_sm=minb)(ex.cross_entropy_rows)
                fold = ex.fold_of(bc, warps, dt.itemsize)
                for blocks in sorted({m, 264}):
                    def f(x, t, loss, kern=kern, bc=bc, blocks=blocks, fold=fold):
                        kern(nt.partition(x, (1, bc), blocks=blocks), t,
                             nt.partition(loss, (1, 1), blocks=blocks), 1.0, -100, bc,
                             _dt_name(dname), fold)
                    ms = _norms.time_ms(f, sets, args, spin, torch)
                    res.append((nbytes / ms / 1e6 / triton_gbs, bc, warps, minb or 0, blocks))
            res.sort(reverse=True)
            print(f"cross_entropy {dname} {m}x{v} (Triton {triton_gbs:.0f} GB/s): "
                  + " | ".join(f"{g:.3f} {bc} columns x {w} warps (min {mb} blocks/SM), "
                               f"{b} blocks" for g, bc, w, mb, b in res[:10]), flush=True)


SWEEPS = {"rope_qk": sweep_rope_qk, "layernorm_backward": sweep_layernorm_backward,
          "cross_entropy": sweep_cross_entropy}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweeps", nargs="*", help=f"which sweeps: {', '.join(SWEEPS)} (default: "
                                             f"all)")
    p.add_argument("--dtypes", default="bf16,fp32", type=lambda s: s.split(","))
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--budget", type=float, default=0.25)
    args = p.parse_args(argv)
    unknown = [s for s in args.sweeps if s not in SWEEPS]
    if unknown:
        p.error(f"unknown sweep {unknown[0]!r} (known: {', '.join(SWEEPS)})")
    args.sweeps = args.sweeps or list(SWEEPS)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("PyTorch sees no CUDA GPU")
        import kernels as kernels_mod
    except ImportError as exc:
        print(f"sweeps: needs a GPU with PyTorch and Triton ({exc})", file=sys.stderr)
        return 1
    spin = _norms.measure_spin_ms(torch)
    for name in args.sweeps:
        SWEEPS[name](args, torch, spin, kernels_mod)
    return 0


if __name__ == "__main__":
    sys.exit(main())
