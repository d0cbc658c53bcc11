"""Attention forward and backward in Triton, the peer ``benchmarks/attention.py`` times: the
algorithm of Triton's fused-attention tutorial (``python/tutorials/06-fused-attention.py``:
FlashAttention-2's online softmax in ``exp2``, the causal loop split into the blocks left of
the diagonal and the diagonal block, a backward with one kernel for ``dk``/``dv`` and one for
``dq``), written here for the layouts of ``examples/attention.py``: q ``(B, H, S, D)``, k and
v ``(B, H_kv, S, D)`` (grouped-query heads read through ``h // (H / H_kv)``), the log-sum-exp
``(B, H, S)`` in natural log. Sequence lengths are multiples of the blocks (the benchmark's
are powers of two); nothing is masked at ragged edges.

Imported only where Triton and PyTorch are installed.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _fwd_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, start_m, lo, hi, qk_scale,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr):
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_ptrs + start_n * stride_kn)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if DIAGONAL:
            s = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], s, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * stride_kn)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _fwd(Q, K, V, O, LSE, sm_scale, H, GROUP, S,
         stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
         CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b, h = bh // H, bh % H
    kh = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = b * stride_qb + h * stride_qh
    kv_base = b * stride_kb + kh * stride_kh
    q = tl.load(Q + q_base + offs_m[:, None] * stride_qm + offs_d[None, :])
    k_ptrs = K + kv_base + offs_n[:, None] * stride_kn + offs_d[None, :]
    v_ptrs = V + kv_base + offs_n[:, None] * stride_kn + offs_d[None, :]
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, start_m, 0,
                                    start_m * BLOCK_M, qk_scale, BLOCK_M, BLOCK_N, False)
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, start_m,
                                    start_m * BLOCK_M, (start_m + 1) * BLOCK_M, qk_scale,
                                    BLOCK_M, BLOCK_N, True)
    else:
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, start_m, 0,
                                    S, qk_scale, BLOCK_M, BLOCK_N, False)
    acc = acc / l_i[:, None]
    tl.store(LSE + bh * S + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453)
    tl.store(O + q_base + offs_m[:, None] * stride_qm + offs_d[None, :], acc.to(O.dtype.element_ty))


@triton.jit
def _bwd_delta(O, DO, DELTA, S, stride_b, stride_h, stride_m, H,
               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b, h = bh // H, bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    ptrs = b * stride_b + h * stride_h + offs_m[:, None] * stride_m + offs_d[None, :]
    o = tl.load(O + ptrs).to(tl.float32)
    do = tl.load(DO + ptrs).to(tl.float32)
    tl.store(DELTA + bh * S + offs_m, tl.sum(o * do, axis=1))


@triton.jit
def _bwd_dkdv(Q, K, V, DO, LSE, DELTA, DK, DV, sm_scale, H, HK, GROUP, S,
              stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              CAUSAL: tl.constexpr):
    start_n = tl.program_id(0)
    bkh = tl.program_id(1)
    b, kh = bkh // HK, bkh % HK
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    kv = b * stride_kb + kh * stride_kh + offs_n[:, None] * stride_kn + offs_d[None, :]
    k = tl.load(K + kv)
    v = tl.load(V + kv)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    lo = start_n * BLOCK_N if CAUSAL else 0
    for g in range(GROUP):
        h = kh * GROUP + g
        bh = b * H + h
        q_base = b * stride_qb + h * stride_qh
        for start_m in range(lo, S, BLOCK_M):
            offs_m = start_m + offs_m0
            ptrs = q_base + offs_m[:, None] * stride_qm + offs_d[None, :]
            q = tl.load(Q + ptrs)
            do = tl.load(DO + ptrs)
            lse = tl.load(LSE + bh * S + offs_m) * 1.4426950408889634
            delta = tl.load(DELTA + bh * S + offs_m)
            s = tl.dot(q, tl.trans(k)) * qk_scale
            p = tl.math.exp2(s - lse[:, None])
            if CAUSAL:
                p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
            dv += tl.dot(tl.trans(p.to(do.dtype)), do)
            dp = tl.dot(do, tl.trans(v))
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q)
    tl.store(DK + kv, (dk * sm_scale).to(DK.dtype.element_ty))
    tl.store(DV + kv, dv.to(DV.dtype.element_ty))


@triton.jit
def _bwd_dq(Q, K, V, DO, LSE, DELTA, DQ, sm_scale, H, GROUP, S,
            stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
            CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b, h = bh // H, bh % H
    kh = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    ptrs = b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :]
    q = tl.load(Q + ptrs)
    do = tl.load(DO + ptrs)
    lse = tl.load(LSE + bh * S + offs_m) * 1.4426950408889634
    delta = tl.load(DELTA + bh * S + offs_m)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = (start_m + 1) * BLOCK_M if CAUSAL else S
    kv_base = b * stride_kb + kh * stride_kh
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + offs_n0
        kv = kv_base + offs_n[:, None] * stride_kn + offs_d[None, :]
        k = tl.load(K + kv)
        v = tl.load(V + kv)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        p = tl.math.exp2(s - lse[:, None])
        if CAUSAL:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    tl.store(DQ + ptrs, (dq * sm_scale).to(DQ.dtype.element_ty))


def _strides(t):
    return t.stride(0), t.stride(1), t.stride(2)


def forward(q, k, v, causal, scale):
    """``(o, lse)``: the forward at the tutorial's Hopper configurations."""
    bsz, hq, s, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((bsz, hq, s), device=q.device, dtype=torch.float32)
    bm, bn = 128, (64 if d > 64 else 128)
    warps, stages = (8, 3) if d > 64 else (4, 3)
    _fwd[(s // bm, bsz * hq)](q, k, v, o, lse, scale, hq, hq // k.shape[1], s, *_strides(q),
                              *_strides(k), HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                              num_warps=warps, num_stages=stages)
    return o, lse


def backward(q, k, v, o, lse, do, causal, scale):
    """``(dq, dk, dv)`` without atomics (a program owns its key tile's or query tile's
    gradient)."""
    bsz, hq, s, d = q.shape
    hk = k.shape[1]
    delta = torch.empty_like(lse)
    _bwd_delta[(s // 128, bsz * hq)](o, do, delta, s, *_strides(o), hq, HEAD_DIM=d,
                                     BLOCK_M=128)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    # head dimension 64: the tutorial's blocks; 128: (64, 64) blocks at 4 warps (the
    # tutorial's (32, 128) at 8 warps gave wrong gradients there with Triton 3.6)
    (bm1, bn1, bm2, bn2, warps) = (32, 128, 128, 32, 8) if d <= 64 else (64, 64, 64, 64, 4)
    _bwd_dkdv[(s // bn1, bsz * hk)](q, k, v, do, lse, delta, dk, dv, scale, hq, hk, hq // hk,
                                    s, *_strides(q), *_strides(k), HEAD_DIM=d, BLOCK_M=bm1,
                                    BLOCK_N=bn1, CAUSAL=causal, num_warps=warps, num_stages=3)
    _bwd_dq[(s // bm2, bsz * hq)](q, k, v, do, lse, delta, dq, scale, hq, hq // hk, s,
                                  *_strides(q), *_strides(k), HEAD_DIM=d, BLOCK_M=bm2,
                                  BLOCK_N=bn2, CAUSAL=causal, num_warps=warps, num_stages=3)
    return dq, dk, dv
