"""The kernels people write (the row-wise examples of examples/) against their Triton originals,
on the GPU.

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
  tutorial 04 ``_seeded_dropout`` (``BLOCK_SIZE=1024``); bytes: ``2 * n * 4``;
* ``rope``: ``examples/rope.py``'s ``rope_qk`` (half-row tiles of all the heads of a
  position, q's and k's in one launch) against Liger-Kernel's ``_triton_rope`` forward (one
  program per token for all its q and k heads), out of place, on LLaMA-3 8B heads (32
  query, 8 key/value, D = 128) in the ``(batch, seq, heads, D)`` layout, batch x seq from
  1 x 2048 to 4 x 8192; bytes: ``2 * B * S * (Hq + Hkv) * D * itemsize + 2 * S * D *
  itemsize``;
* ``layernorm_backward``: ``examples/layernorm_backward.py`` (both phases: dx with per-block
  float32 partial dw, db rows, then their sums) against Triton's tutorial 05 backward
  (``_layer_norm_bwd_dx_fused`` with its locked ``GROUP_SIZE_M`` partial buffers, then
  ``_layer_norm_bwd_dwdb``), M = 4096, N in 1024, 4096, 8192; bytes:
  ``3 * M * N * itemsize + 3 * N * itemsize + 8 * M``.

Method (``benchmarks/norms.py``'s): CUDA events on PyTorch's current stream, which every
implementation launches on; after the check and 3 warm-up launches each timed launch is
queued behind a spin kernel (about 1 ms), the figure is the median over ``--reps`` launches;
inputs rotate over enough sets to exceed 120 MiB, so the L2 cannot serve a launch from the
previous one. Each result is checked before it is timed: softmax against PyTorch's in
float64 (largest error over largest magnitude under 1e-4 for float32, 2e-2 for bfloat16),
dropout against Triton's output (the same mask: the same Philox numbers; the kept values to
float32 rounding), rope (q and k) and layer-norm backward (dx, dw and db) against float64
(1e-5 and 1e-4 for float32, 2e-2 for bfloat16). A wrong result is WRONG and
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


def triton_rope_layernorm_bwd():
    """The Triton originals of ``rope`` and ``layernorm_backward``: ``(rope, ln_backward)``.

    (A function of its own so that :func:`triton_kernels` keeps returning its four.)

    ``rope(q, k, cos, sin, q_out, k_out)``: Liger-Kernel's ``_triton_rope`` forward
    (linkedin/Liger-Kernel ``src/liger_kernel/ops/rope.py``). Liger's ``LigerRopeFunction``
    takes HF's logical layout ``(bsz, n_heads, seq, head_dim)``, transposes it back to the
    physical ``(bsz, seq, n_heads, head_dim)`` (made contiguous) and launches one program per
    ``(batch, position)`` row that rotates all the query heads and all the key heads of that
    token, in place, with ``cos``, ``sin`` of shape ``(1, seq, head_dim)`` (or
    ``(bsz, seq, head_dim)``), reading only their first halves. ``examples/rope.py`` takes the
    physical layout ``(batch, seq, heads, D)`` contiguous directly, with ``(seq, D)`` tables,
    and writes a separate output. Adapted here: the kernel's algorithm, masks and launch are
    Liger's (a ``(seq, D)`` table is its ``cos_bs == 1`` case, row stride ``stride(-2)``); the
    only change is that it stores into ``q_out``, ``k_out`` (same layout and strides as ``q``,
    ``k``) instead of over ``q``, ``k``, so both implementations compute the same thing and
    move the same bytes. The backward branch is left out (forward only). As in Liger, the
    rotation is computed in the tables' dtype (bfloat16 for bfloat16 inputs).

    ``ln_backward(x, dy, w, mean, rstd, dx, dw, db)``: Triton's tutorial 05
    (triton-lang/triton ``python/tutorials/05-layer-norm.py``): ``_layer_norm_bwd_dx_fused``
    (dx, and partial dw/db accumulated into ``GROUP_SIZE_M`` buffers of x's dtype under a
    spin lock, ``atomic_cas``) and ``_layer_norm_bwd_dwdb``, with ``LayerNorm.backward``'s
    launch (its ``GROUP_SIZE_M`` heuristic, the forward's block size and warps, ``32 x 128``
    blocks for the second kernel). Departure: the lock/count array and the partial buffers
    are allocated once per shape instead of per call; each call zeroes the locks (the
    tutorial's ``torch.zeros``: one memset, in the timed region). The partial buffers are not
    zeroed (the tutorial's ``torch.zeros`` for them is not needed: the first store into each
    buffer does not accumulate, the count flag says which is first, and the second kernel
    reads only ``min(GROUP_SIZE_M, M)`` of them).
    """
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _triton_rope(q_ptr, q_out_ptr, q_row_stride, k_ptr, k_out_ptr, k_row_stride, cos,
                     cos_row_stride, sin, sin_row_stride, sl, bs: tl.constexpr,
                     cos_bs: tl.constexpr, n_qh: tl.constexpr, n_kh: tl.constexpr,
                     hd: tl.constexpr, pad_n_qh: tl.constexpr, pad_n_kh: tl.constexpr,
                     pad_hd: tl.constexpr, BLOCK_SIZE: tl.constexpr):
        # Liger-Kernel's _triton_rope (forward); departure: q_out_ptr, k_out_ptr (the same
        # layout as q, k) receive the result, where Liger stores over q, k.
        pid = tl.program_id(0).to(tl.int64)
        q_ptr = q_ptr + pid * q_row_stride
        k_ptr = k_ptr + pid * k_row_stride
        q_out_ptr = q_out_ptr + pid * q_row_stride
        k_out_ptr = k_out_ptr + pid * k_row_stride
        batch_idx = pid // sl
        cos_row_idx = pid % sl
        cos = cos + tl.where(
            cos_bs == 1,
            cos_row_idx * cos_row_stride,
            batch_idx * (sl * cos_row_stride) + cos_row_idx * cos_row_stride,
        )
        sin = sin + tl.where(
            cos_bs == 1,
            cos_row_idx * sin_row_stride,
            batch_idx * (sl * sin_row_stride) + cos_row_idx * sin_row_stride,
        )
        cos_offsets = tl.arange(0, pad_hd // 2)
        cos_mask = cos_offsets < hd // 2
        cos_row = tl.load(cos + cos_offsets, mask=cos_mask, other=0)
        sin_row = tl.load(sin + cos_offsets, mask=cos_mask, other=0)
        first_half_q_offsets = (tl.arange(0, pad_n_qh)[:, None] * hd
                                + tl.arange(0, pad_hd // 2)[None, :])
        first_half_k_offsets = (tl.arange(0, pad_n_kh)[:, None] * hd
                                + tl.arange(0, pad_hd // 2)[None, :])
        first_q_mask = ((tl.arange(0, pad_n_qh)[:, None] < n_qh)
                        & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2))
        first_k_mask = ((tl.arange(0, pad_n_kh)[:, None] < n_kh)
                        & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2))
        q_tile_1 = tl.load(q_ptr + first_half_q_offsets, mask=first_q_mask,
                           other=0).to(sin_row.dtype)
        k_tile_1 = tl.load(k_ptr + first_half_k_offsets, mask=first_k_mask,
                           other=0).to(sin_row.dtype)
        second_half_q_offsets = first_half_q_offsets + (hd // 2)
        second_half_k_offsets = first_half_k_offsets + (hd // 2)
        second_q_mask = first_q_mask
        second_k_mask = first_k_mask
        q_tile_2 = tl.load(q_ptr + second_half_q_offsets, mask=second_q_mask,
                           other=0).to(sin_row.dtype)
        k_tile_2 = tl.load(k_ptr + second_half_k_offsets, mask=second_k_mask,
                           other=0).to(sin_row.dtype)
        # y = [x1, x2] * [cos, cos] + [-x2, x1] * [sin, sin]
        new_q_tile_1 = q_tile_1 * cos_row - q_tile_2 * sin_row
        tl.store(q_out_ptr + first_half_q_offsets, new_q_tile_1, mask=first_q_mask)
        new_q_tile_2 = q_tile_2 * cos_row + q_tile_1 * sin_row
        tl.store(q_out_ptr + second_half_q_offsets, new_q_tile_2, mask=second_q_mask)
        new_k_tile_1 = k_tile_1 * cos_row - k_tile_2 * sin_row
        tl.store(k_out_ptr + first_half_k_offsets, new_k_tile_1, mask=first_k_mask)
        new_k_tile_2 = k_tile_2 * cos_row + k_tile_1 * sin_row
        tl.store(k_out_ptr + second_half_k_offsets, new_k_tile_2, mask=second_k_mask)

    @triton.jit
    def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                                 GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
        # Triton's tutorial 05, as written there
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE_N)
        mask = cols < N
        X += row * stride
        DY += row * stride
        DX += row * stride
        lock_id = row % GROUP_SIZE_M
        Lock += lock_id
        Count = Lock + GROUP_SIZE_M
        DW = DW + lock_id * N + cols
        DB = DB + lock_id * N + cols
        x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
        dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        xhat = (x - mean) * rstd
        wdy = w * dy
        xhat = tl.where(mask, xhat, 0.)
        wdy = tl.where(mask, wdy, 0.)
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + cols, dx, mask=mask)
        partial_dw = (dy * xhat).to(w.dtype)
        partial_db = (dy).to(w.dtype)
        while tl.atomic_cas(Lock, 0, 1) == 1:
            pass
        count = tl.load(Count)
        # First store doesn't accumulate
        if count == 0:
            tl.atomic_xchg(Count, 1)
        else:
            partial_dw += tl.load(DW, mask=mask)
            partial_db += tl.load(DB, mask=mask)
        tl.store(DW, partial_dw, mask=mask)
        tl.store(DB, partial_db, mask=mask)
        # need a barrier to ensure all threads finished before releasing the lock
        tl.debug_barrier()
        tl.atomic_xchg(Lock, 0)

    @triton.jit
    def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                             BLOCK_SIZE_N: tl.constexpr):
        # Triton's tutorial 05, as written there
        pid = tl.program_id(0)
        cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for i in range(0, M, BLOCK_SIZE_M):
            rows = i + tl.arange(0, BLOCK_SIZE_M)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            offs = rows[:, None] * N + cols[None, :]
            dw += tl.load(DW + offs, mask=mask, other=0.)
            db += tl.load(DB + offs, mask=mask, other=0.)
        sum_dw = tl.sum(dw, axis=0)
        sum_db = tl.sum(db, axis=0)
        tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
        tl.store(FINAL_DB + cols, sum_db, mask=cols < N)

    def rope(q, k, cos, sin, q_out, k_out):
        # Liger's rope_forward launch, on tensors already in the kernel's physical layout
        # (batch, seq, heads, head_dim), contiguous; (seq, D) tables: cos_bs = 1
        batch_size, seq_len, n_q_head, head_dim = q.shape
        n_kv_head = k.shape[2]
        pad_hd = triton.next_power_of_2(head_dim)
        pad_n_q_head = triton.next_power_of_2(n_q_head)
        pad_n_kv_head = triton.next_power_of_2(n_kv_head)
        _triton_rope[(batch_size * seq_len,)](
            q, q_out, q.stride(1), k, k_out, k.stride(1), cos, cos.stride(-2), sin,
            sin.stride(-2), seq_len, batch_size, 1, n_q_head, n_kv_head, head_dim,
            pad_n_q_head, pad_n_kv_head, pad_hd,
            BLOCK_SIZE=max(pad_n_q_head, pad_n_kv_head))

    scratch = {}

    def ln_backward(x, dy, w, mean, rstd, dx, dw, db):
        # LayerNorm.forward's block size and warps, then LayerNorm.backward
        M, N = x.shape
        MAX_FUSED_SIZE = 65536 // x.element_size()
        BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(N))
        if N > BLOCK_SIZE:
            raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
        num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
        GROUP_SIZE_M = 64
        if N <= 8192: GROUP_SIZE_M = 96  # noqa: E701 (the tutorial's lines)
        if N <= 4096: GROUP_SIZE_M = 128  # noqa: E701
        if N <= 1024: GROUP_SIZE_M = 256  # noqa: E701
        key = (x.dtype, N, x.device)
        if key not in scratch:
            scratch[key] = (
                torch.zeros(2 * GROUP_SIZE_M, dtype=torch.int32, device=w.device),
                torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device),
                torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device))
        locks, _dw, _db = scratch[key]
        locks.zero_()
        _layer_norm_bwd_dx_fused[(M,)](dx, dy, _dw, _db, x, w, mean, rstd, locks,
                                       x.stride(0), N, BLOCK_SIZE_N=BLOCK_SIZE,
                                       GROUP_SIZE_M=GROUP_SIZE_M, num_warps=num_warps)
        _layer_norm_bwd_dwdb[(triton.cdiv(N, 128),)](_dw, _db, dw, db, min(GROUP_SIZE_M, M),
                                                    N, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128,
                                                    num_ctas=1)

    return rope, ln_backward


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


#: (batch, seq) of LLaMA-style attention (LLaMA-3 8B: 32 query heads, 8 key/value heads, 128)
ROPE_SHAPES = ((1, 2048), (2, 4096), (4, 8192))
ROPE_HEADS = (32, 8, 128)


def bench_rope(args, torch, spin_ms, t_rope, rows):
    """RoPE forward of the query and the key tensors, ``(batch, seq, heads, D)`` contiguous
    (the physical layout Liger's kernel works on), tables ``cos``, ``sin`` of ``(seq, D)``
    in the inputs' dtype (HF's, both halves equal), out of place. numba_tile: the example's
    ``rope_qk`` (one launch for both tensors); Triton: Liger's kernel, one launch for both
    (see :func:`triton_rope_layernorm_bwd`). The time is of both tensors.

    Bytes: ``2 * batch * seq * (Hq + Hkv) * D * itemsize`` (read q, k; write their outputs)
    plus ``2 * seq * D * itemsize`` (the two tables, once: every batch and head reads them,
    an ideal kernel from DRAM once). Each result is checked against the float64 rotation of
    the same inputs and tables: largest error over largest magnitude under 1e-5 (float32),
    2e-2 (bfloat16; Liger computes in the tables' dtype, numba_tile in float32)."""
    import rope as ex
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    hq, hk, d = ROPE_HEADS
    for dname in args.dtypes:
        if dname not in dtypes:
            continue
        dt = dtypes[dname]
        for bsz, seq in ROPE_SHAPES:
            c64, s64 = ex.tables(seq, d)
            cos = torch.from_numpy(c64).to("cuda", dt)
            sin = torch.from_numpy(s64).to("cuda", dt)
            qk_bytes = bsz * seq * (hq + hk) * d * dt.itemsize
            nbytes = 2 * qk_bytes + 2 * seq * d * dt.itemsize
            sets = _sets(lambda: (torch.randn(bsz, seq, hq, d, device="cuda").to(dt),
                                  torch.randn(bsz, seq, hk, d, device="cuda").to(dt),
                                  torch.empty(bsz, seq, hq, d, device="cuda", dtype=dt),
                                  torch.empty(bsz, seq, hk, d, device="cuda", dtype=dt)),
                         qk_bytes)
            q, k, qo, ko = sets[0]
            c, s = cos.double()[None, :, None, :], sin.double()[None, :, None, :]

            def rot(t):
                t = t.double()
                h = d // 2
                return t * c + torch.cat([-t[..., h:], t[..., :h]], dim=-1) * s

            ref_q, ref_k = rot(q), rot(k)
            row = {"case": f"rope {dname}", "size": f"{bsz}x{seq}x({hq}+{hk})x{d}"}

            def nt_fn(q, k, qo, ko):
                ex.rope_qk(q, k, cos, sin, qo, ko)

            for name, fn in (("numba_tile", nt_fn),
                             ("triton", lambda q, k, qo, ko: t_rope(q, k, cos, sin, qo, ko))):
                try:
                    qo.fill_(float("nan"))
                    ko.fill_(float("nan"))
                    fn(q, k, qo, ko)
                    torch.cuda.synchronize()
                    err = max(((o.double() - r).abs().max() / r.abs().max()).item()
                              for o, r in ((qo, ref_q), (ko, ref_k)))
                    if not err < (1e-5 if dname == "fp32" else 2e-2):
                        row[name] = "WRONG"
                        print(f"WRONG: {name} rope {dname} {row['size']}: error {err:.3g}",
                              file=sys.stderr)
                        continue
                    ms = _norms.time_ms(fn, sets, args, spin_ms, torch)
                    row[name] = nbytes / ms / 1e6
                except Exception as exc:  # noqa: BLE001
                    print(f"error: {name} rope {dname} {row['size']}: {_norms.brief(exc)}",
                          file=sys.stderr)
                    row[name] = "error"
            rows.append(row)


LN_BWD_M, LN_BWD_N = 4096, (1024, 4096, 8192)


def bench_ln_backward(args, torch, spin_ms, t_ln_bwd, rows):
    """Layer norm backward, both kernels: numba_tile's ``layer_norm_backward`` (phase 1: dx
    and one float32 partial row of dw, db per block; phase 2: their sums) against the
    tutorial's ``_layer_norm_bwd_dx_fused`` (locked partial buffers) then
    ``_layer_norm_bwd_dwdb`` (see :func:`triton_rope_layernorm_bwd`). Inputs as the
    tutorial's: ``x = -2.3 + 0.5 * normal``, ``w`` uniform, ``dy = 0.1 * normal``; ``mean``,
    ``rstd`` float32 (computed from x in float64, eps 1e-5), shared by both.

    Bytes: ``3 * M * N * itemsize`` (read x, dy; write dx) plus ``3 * N * itemsize`` (read w;
    write dw, db) plus ``2 * M * 4`` (read mean, rstd); the partial buffers are not counted
    (the tutorial counts ``3 * M * N * itemsize``). dx, dw and db are each checked against
    float64 (largest error over largest magnitude under 1e-4 for float32, 2e-2 for
    bfloat16)."""
    import layernorm_backward as ex
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    m = LN_BWD_M
    for dname in args.dtypes:
        if dname not in dtypes:
            continue
        dt = dtypes[dname]
        for n in LN_BWD_N:
            nbytes = 3 * m * n * dt.itemsize + 3 * n * dt.itemsize + 2 * m * 4
            w = torch.rand(n, device="cuda").to(dt)

            def make():
                x = (-2.3 + 0.5 * torch.randn(m, n, device="cuda")).to(dt)
                xd = x.double()
                mean = xd.mean(1)
                rstd = 1 / torch.sqrt(((xd - mean[:, None]) ** 2).mean(1) + 1e-5)
                return (x, (0.1 * torch.randn(m, n, device="cuda")).to(dt), w,
                        mean.float(), rstd.float(), torch.empty(m, n, device="cuda", dtype=dt),
                        torch.empty(n, device="cuda", dtype=dt),
                        torch.empty(n, device="cuda", dtype=dt))

            sets = _sets(make, 2 * m * n * dt.itemsize)
            x, dy, _, mean, rstd, dx, dw, db = sets[0]
            xd, dyd, wd = x.double(), dy.double(), w.double()
            mu = xd.mean(1, keepdim=True)
            rs = 1 / torch.sqrt(((xd - mu) ** 2).mean(1, keepdim=True) + 1e-5)
            xhat = (xd - mu) * rs
            wdy = wd * dyd
            c1 = (xhat * wdy).mean(1, keepdim=True)
            c2 = wdy.mean(1, keepdim=True)
            refs = ((wdy - (xhat * c1 + c2)) * rs, (dyd * xhat).sum(0), dyd.sum(0))
            rp = ex.partial_rows(m, n, dt.itemsize)
            parts = [torch.empty(rp, n, device="cuda") for _ in range(2)]
            row = {"case": f"layernorm_backward {dname}", "size": f"{m}x{n}"}

            def nt_fn(x, dy, w, mean, rstd, dx, dw, db):
                ex.layer_norm_backward(x, dy, w, mean, rstd, dx, dw, db, *parts)

            for name, fn in (("numba_tile", nt_fn), ("triton", t_ln_bwd)):
                try:
                    for o in (dx, dw, db):
                        o.fill_(float("nan"))
                    fn(*sets[0])
                    torch.cuda.synchronize()
                    errs = [((o.double() - r).abs().max() / r.abs().max()).item()
                            for o, r in zip((dx, dw, db), refs)]
                    if not max(errs) < (1e-4 if dname == "fp32" else 2e-2):
                        row[name] = "WRONG"
                        print(f"WRONG: {name} layernorm_backward {dname} {m}x{n}: error dx "
                              f"{errs[0]:.3g}, dw {errs[1]:.3g}, db {errs[2]:.3g}",
                              file=sys.stderr)
                        continue
                    ms = _norms.time_ms(fn, sets, args, spin_ms, torch)
                    row[name] = nbytes / ms / 1e6
                except Exception as exc:  # noqa: BLE001
                    print(f"error: {name} layernorm_backward {dname} {m}x{n}: "
                          f"{_norms.brief(exc)}", file=sys.stderr)
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
    p.add_argument("--cases", default="softmax_chunked,dropout,swiglu,cross_entropy,rope,"
                                      "layernorm_backward")
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
    t_rope, t_ln_bwd = triton_rope_layernorm_bwd()
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
    if "rope" in cases:
        bench_rope(args, torch, spin_ms, t_rope, rows)
    if "layernorm_backward" in cases:
        bench_ln_backward(args, torch, spin_ms, t_ln_bwd, rows)
    print(f"device: {torch.cuda.get_device_name()}")
    print_table(rows, args.markdown)
    bad = any(v in ("WRONG", "error") for r in rows for v in r.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
