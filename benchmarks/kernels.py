"""The kernels people write (issue 12's examples) against their Triton originals, on the GPU.

Run on a GPU machine (``python benchmarks/kernels.py``). For each case it prints the bandwidth
of every implementation (the bytes an ideal kernel moves, divided by its device time) and the
ratio numba_tile / Triton, all measured in the same run:

* ``softmax_chunked``: ``examples/softmax_chunked.py`` (block-owned strips, ``(1, 4096)``
  column tiles, one online pass for the maximum and the sum, then the output pass) against
  a Triton kernel written here in the same style (TileGym's and Triton's chunked softmax:
  one program per row, a loop over ``BLOCK`` columns with a running maximum and a rescaled
  sum, then a second loop that writes), on rows of 8192 to 131072 columns (a vocabulary);
  bytes: ``2 * M * N * itemsize``;
* ``swiglu``: ``examples/swiglu.py`` (``(4, 1024)`` tiles) against Liger-Kernel's forward
  kernel on the flattened arrays (``BLOCK=1024``); bytes: ``3 * M * N * itemsize``;
* ``cross_entropy``: ``examples/cross_entropy.py`` (loss and in-place gradient, strips,
  ``ignore_index`` on 10% of the rows) against Liger-Kernel's ``liger_cross_entropy_kernel``
  (mean reduction) with its launch (one program per row, 32 warps); bytes:
  ``2 * M * V * itemsize``; the loss is checked against PyTorch's in float64;
* ``dropout``: ``examples/dropout.py`` (``rand`` Philox, 1024-element tiles) against Triton's
  tutorial 04 ``_seeded_dropout`` (``BLOCK_SIZE=1024``); bytes: ``2 * n * 4``.

Method (``benchmarks/norms.py``'s): CUDA events on PyTorch's current stream, which every
implementation launches on; after the check and 3 warm-up launches each timed launch is
queued behind a spin kernel (about 1 ms), the figure is the median over ``--reps`` launches;
inputs rotate over enough sets to exceed 120 MiB, so the L2 cannot serve a launch from the
previous one. Each result is checked before it is timed: softmax against PyTorch's in
float64 (largest error over largest magnitude under 1e-4 for float32, 2e-2 for bfloat16),
dropout against Triton's output (the same mask: the same Philox numbers; the kept values to
float32 rounding). A wrong result is WRONG and
not timed; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))

import norms as _norms  # noqa: E402  (timing: time_ms, measure_spin_ms)

SOFTMAX_SHAPES = ((4096, 8192), (1024, 32768), (256, 131072))
DROPOUT_SIZES = (1 << 22, 1 << 24, 1 << 26)
SETS_BYTES = 120 * 2**20


def triton_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_chunked(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        x_row = x_ptr + row.to(tl.int64) * stride
        y_row = y_ptr + row.to(tl.int64) * stride
        m = tl.full((1,), float("-inf"), tl.float32)
        s = tl.zeros((1,), tl.float32)
        for k in range(0, n_cols, BLOCK):
            cols = k + tl.arange(0, BLOCK)
            t = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(t, 0))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(t - m_new), 0)
            m = m_new
        inv = 1.0 / s
        for k in range(0, n_cols, BLOCK):
            cols = k + tl.arange(0, BLOCK)
            t = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
            tl.store(y_row + cols, (tl.exp(t - m) * inv).to(y_ptr.dtype.element_ty),
                     mask=cols < n_cols)

    @triton.jit
    def seeded_dropout(x_ptr, out_ptr, n, p, seed, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        random = tl.rand(seed, offsets)
        x_keep = random > p
        output = tl.where(x_keep, x / (1 - p), 0.0)
        tl.store(out_ptr + offsets, output, mask=mask)

    @triton.jit
    def swiglu_fwd(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
        # Liger-Kernel's _swiglu_forward_kernel, on the flattened arrays
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs, mask=mask, other=0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0)
        c = (a * tl.sigmoid(a)).to(b.dtype) * b
        tl.store(c_ptr + offs, c, mask=mask)

    @triton.jit
    def liger_ce(X_ptr, X_stride, Y_ptr, loss_ptr, n_cols, n_non_ignore, ignore_index,
                 BLOCK_SIZE: tl.constexpr):
        # Liger-Kernel's liger_cross_entropy_kernel (mean reduction, no label smoothing):
        # online softmax over the row, then the gradient written in place of the logits
        program_id = tl.program_id(0).to(tl.int64)
        Y_ptr += program_id
        y = tl.load(Y_ptr)
        X_ptr += program_id * X_stride
        if y == ignore_index:
            for i in range(0, n_cols, BLOCK_SIZE):
                X_offsets = i + tl.arange(0, BLOCK_SIZE)
                tl.store(X_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
            tl.store(loss_ptr + program_id, 0.0)
            return
        loss_ptr += program_id
        m = float("-inf")
        d = 0.0
        ori_X_y = tl.load(X_ptr + y).cast(tl.float32)
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tl.arange(0, BLOCK_SIZE)
            X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols,
                              other=float("-inf")).cast(tl.float32)
            block_max = tl.max(X_block)
            m_new = tl.maximum(m, block_max)
            d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X_block - m_new))
            m = m_new
        lse = m + tl.log(d)
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tl.arange(0, BLOCK_SIZE)
            X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols,
                              other=float("-inf")).cast(tl.float32)
            X_block = tl.exp(X_block - lse) / n_non_ignore
            X_block = tl.where(X_offsets == y, X_block - 1.0 / n_non_ignore, X_block)
            tl.store(X_ptr + X_offsets, X_block.to(X_ptr.dtype.element_ty),
                     mask=X_offsets < n_cols)
        tl.store(loss_ptr, (lse - ori_X_y) / n_non_ignore)

    def cross_entropy(x, target, loss, n_valid):
        # Liger's launch: one program per row, BLOCK_SIZE = min(65536 // 2, next power of 2)
        block = min(32768, triton.next_power_of_2(x.shape[1]))
        liger_ce[(x.shape[0],)](x, x.stride(0), target, loss, x.shape[1], n_valid, -100,
                                BLOCK_SIZE=block, num_warps=32)

    def swiglu(a, b, c):
        n = a.numel()
        swiglu_fwd[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024, num_warps=4)

    def softmax(x, y):
        softmax_chunked[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=4096, num_warps=8)

    def dropout(x, out, p, seed):
        n = x.numel()
        seeded_dropout[(triton.cdiv(n, 1024),)](x, out, n, p, seed, BLOCK_SIZE=1024)

    return softmax, dropout, swiglu, cross_entropy


def _sets(make, nbytes):
    return [make() for _ in range(max(1, math.ceil(SETS_BYTES / max(nbytes, 1))))]


def bench_softmax(args, torch, spin_ms, t_softmax, rows):
    import softmax_chunked as ex
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    tol = {"fp32": 1e-4, "bf16": 2e-2}
    for dname in args.dtypes:
        dt = dtypes[dname]
        for m, n in SOFTMAX_SHAPES:
            nbytes = m * n * dt.itemsize
            sets = _sets(lambda: (torch.randn(m, n, device="cuda").mul_(3).to(dt),
                                  torch.empty(m, n, device="cuda", dtype=dt)), nbytes)
            ref = torch.softmax(sets[0][0].double(), dim=1)
            row = {"case": f"softmax_chunked {dname}", "size": f"{m}x{n}"}
            for name, fn in (("numba_tile", lambda x, y: ex.softmax_chunked(x, y)),
                             ("triton", t_softmax)):
                x, y = sets[0]
                try:
                    fn(x, y)
                    torch.cuda.synchronize()
                    err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
                    if not err < tol[dname]:
                        row[name] = "WRONG"
                        print(f"WRONG: {name} softmax {dname} {m}x{n}: error {err:.3g}",
                              file=sys.stderr)
                        continue
                    ms = _norms.time_ms(fn, sets, args, spin_ms, torch)
                    row[name] = 2 * nbytes / ms / 1e6
                except Exception as exc:  # noqa: BLE001 - reported, the run goes on
                    print(f"error: {name} softmax {dname} {m}x{n}: {_norms.brief(exc)}",
                          file=sys.stderr)
                    row[name] = "error"
            rows.append(row)


def bench_dropout(args, torch, spin_ms, t_dropout, rows):
    import dropout as ex
    p, seed = 0.3, 123456789
    for n in DROPOUT_SIZES:
        sets = _sets(lambda: (torch.randn(n, device="cuda"), torch.empty(n, device="cuda")),
                     n * 4)
        x, y = sets[0]
        ref = torch.empty_like(y)
        t_dropout(x, ref, p, seed)
        row = {"case": "dropout fp32", "size": f"2^{n.bit_length() - 1}"}

        def nt_fn(x, out):
            ex.seeded_dropout(x, ex.nt.partition(out, 1024), p, seed, 1024)

        for name, fn in (("numba_tile", nt_fn), ("triton", lambda x, out: t_dropout(x, out, p,
                                                                                     seed))):
            try:
                y.fill_(float("nan"))
                fn(x, y)
                torch.cuda.synchronize()
                # the same mask (the same Philox numbers); the kept values to float32
                # rounding (x / (1 - p): the scalar's precision is each implementation's)
                same_mask = torch.equal(y == 0, ref == 0)
                close = torch.allclose(y, ref, rtol=1e-6, atol=0)
                if not (same_mask and close):
                    row[name] = "WRONG"
                    print(f"WRONG: {name} dropout n={n}: mask equal {same_mask}, values close "
                          f"{close} (against Triton's output)", file=sys.stderr)
                    continue
                ms = _norms.time_ms(fn, sets, args, spin_ms, torch)
                row[name] = 2 * n * 4 / ms / 1e6
            except Exception as exc:  # noqa: BLE001
                print(f"error: {name} dropout n={n}: {_norms.brief(exc)}", file=sys.stderr)
                row[name] = "error"
        rows.append(row)


SWIGLU_SHAPES = ((4096, 14336), (16384, 14336))


def bench_swiglu(args, torch, spin_ms, t_swiglu, rows):
    import swiglu as ex
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    for dname in args.dtypes:
        dt = dtypes[dname]
        for m, n in SWIGLU_SHAPES:
            nbytes = 3 * m * n * dt.itemsize
            sets = _sets(lambda: (torch.randn(m, n, device="cuda").to(dt),
                                  torch.randn(m, n, device="cuda").to(dt),
                                  torch.empty(m, n, device="cuda", dtype=dt)), nbytes)
            a, b, c = sets[0]
            ref = torch.nn.functional.silu(a.double()) * b.double()
            row = {"case": f"swiglu {dname}", "size": f"{m}x{n}"}
            for name, fn in (("numba_tile", lambda a, b, c: ex.swiglu(a, b, c)),
                             ("triton", t_swiglu)):
                try:
                    c.fill_(float("nan"))
                    fn(a, b, c)
                    torch.cuda.synchronize()
                    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
                    if not err < (1e-5 if dname == "fp32" else 2e-2):
                        row[name] = "WRONG"
                        print(f"WRONG: {name} swiglu {dname}: error {err:.3g}", file=sys.stderr)
                        continue
                    ms = _norms.time_ms(fn, sets, args, spin_ms, torch)
                    row[name] = nbytes / ms / 1e6
                except Exception as exc:  # noqa: BLE001
                    print(f"error: {name} swiglu: {_norms.brief(exc)}", file=sys.stderr)
                    row[name] = "error"
            rows.append(row)


CE_SHAPES = ((4096, 32000), (1024, 128256))


def bench_ce(args, torch, spin_ms, t_ce, rows):
    """Loss and in-place gradient. Each launch overwrites its logits with their gradient, so
    timed launches after the first run on gradients: the same work (the check runs first,
    on fresh logits)."""
    import cross_entropy as ex
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    for dname in args.dtypes:
        dt = dtypes[dname]
        for m, v in CE_SHAPES:
            nbytes = 2 * m * v * dt.itemsize
            target = torch.randint(0, v, (m,), device="cuda")
            target[torch.rand(m, device="cuda") < 0.1] = -100
            n_valid = int((target != -100).sum())
            sets = _sets(lambda: (torch.randn(m, v, device="cuda").mul_(3).to(dt), target,
                                  torch.empty(m, 1, device="cuda")), nbytes // 2)
            x0 = sets[0][0].clone()
            xd = x0.double()
            lse = torch.logsumexp(xd, 1)
            valid = target != -100
            ref_loss = torch.where(valid, lse - xd.gather(1, target.clamp(min=0)[:, None])[:, 0],
                                   0.0) / n_valid
            row = {"case": f"cross_entropy {dname}", "size": f"{m}x{v}"}
            for name, fn in (("numba_tile", lambda x, t, l: ex.cross_entropy(x, t, l, n_valid)),
                             ("triton", lambda x, t, l: t_ce(x, t, l[:, 0], n_valid))):
                x, t, l = sets[0]
                x.copy_(x0)
                try:
                    fn(x, t, l)
                    torch.cuda.synchronize()
                    err = ((l[:, 0].double() - ref_loss).abs().max()
                           / ref_loss.abs().max()).item()
                    if not err < (1e-4 if dname == "fp32" else 2e-2):
                        row[name] = "WRONG"
                        print(f"WRONG: {name} cross_entropy {dname}: loss error {err:.3g}",
                              file=sys.stderr)
                        continue
                    ms = _norms.time_ms(fn, sets, args, spin_ms, torch)
                    row[name] = nbytes / ms / 1e6
                except Exception as exc:  # noqa: BLE001
                    print(f"error: {name} cross_entropy: {_norms.brief(exc)}", file=sys.stderr)
                    row[name] = "error"
            rows.append(row)


def _fmt(v):
    return f"{v:.0f}" if isinstance(v, float) else str(v)


def print_table(rows, markdown):
    head = ["case", "size", "numba_tile GB/s", "Triton GB/s", "numba_tile/Triton"]
    lines = []
    for r in rows:
        a, b = r.get("numba_tile"), r.get("triton")
        ratio = f"{a / b:.3f}" if isinstance(a, float) and isinstance(b, float) else "n/a"
        lines.append([r["case"], r["size"], _fmt(a), _fmt(b), ratio])
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for x in lines:
        print("  ".join(c.ljust(w) for c, w in zip(x, widths)))
    if markdown:
        print()
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for x in lines:
            print("| " + " | ".join(x) + " |")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="softmax_chunked,dropout,swiglu,cross_entropy")
    p.add_argument("--dtypes", default="fp32,bf16", type=lambda s: s.split(","))
    p.add_argument("--reps", type=int, default=25)
    p.add_argument("--budget", type=float, default=0.5)
    p.add_argument("--markdown", action="store_true")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    import numba_tile as nt
    if not (torch.cuda.is_available() and nt.gpu_available()):
        print("no CUDA GPU: nothing to measure (the examples run in the interpreter: "
              "python examples/softmax_chunked.py, python examples/dropout.py)")
        return 0
    t_softmax, t_dropout, t_swiglu, t_ce = triton_kernels()
    spin_ms = _norms.measure_spin_ms(torch)
    rows: list = []
    cases = args.cases.split(",")
    if "softmax_chunked" in cases:
        bench_softmax(args, torch, spin_ms, t_softmax, rows)
    if "dropout" in cases:
        bench_dropout(args, torch, spin_ms, t_dropout, rows)
    if "swiglu" in cases:
        bench_swiglu(args, torch, spin_ms, t_swiglu, rows)
    if "cross_entropy" in cases:
        bench_ce(args, torch, spin_ms, t_ce, rows)
    print(f"device: {torch.cuda.get_device_name()}")
    print_table(rows, args.markdown)
    bad = any(v in ("WRONG", "error") for r in rows for v in r.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
