"""Attention backward: ``dq``, ``dk``, ``dv`` of ``o = softmax(q k^T * scale) v`` from the
forward's output ``o``, its row log-sum-exp ``lse`` (``attention.py``) and the gradient
``do``, as FlashAttention-2 and Triton's fused-attention tutorial compute them, **without
atomics**:

1. ``delta = rowsum(do * o)`` per query row (``D_i`` of FlashAttention-2);
2. a block owns a ``(BN, D)`` tile of keys of one key head and walks the query tiles of every
   query head that reads it (grouped-query attention: ``heads / kv_heads`` of them),
   recomputing ``p = exp(q k^T * scale - lse)`` and accumulating ``dv += p^T do`` and
   ``dk += (p * (do v^T - delta))^T q * scale`` in registers (the scores computed
   transposed, ``k q^T``, so that ``p^T`` is a product's result); it stores its own ``dk``
   and ``dv`` tiles once;
3. a block owns a ``(BM, D)`` tile of queries and walks the key tiles, accumulating
   ``dq += (p * (do v^T - delta)) k * scale``.

No two blocks write one element, so the result does not depend on the order blocks run in:
the backward is deterministic (FlashAttention-3's fast backward adds ``dq`` with atomics and is
not). Steps 2 and 3 recompute the scores twice, the price of owning every output tile. The
same holds for the packed variable-length layout (``attention_varlen``'s), where a tile of
keys (or queries) may span sequences and each row keeps to its own sequence's range.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks the
gradients against NumPy in float64 on ragged shapes.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, empty_like, pick_backend
    from attention import (LOG2E, _column, _kernel, attention, attention_varlen,
                           check_attention, check_boundaries, key_range,
                           launch_mode, sequence_bounds)
except ImportError:
    from examples._common import check_result, dtype_name, empty_like, pick_backend
    from examples.attention import (LOG2E, _column, _kernel, attention, attention_varlen,
                                    check_attention, check_boundaries,
                                    key_range, launch_mode, sequence_bounds)


@nt.jit(num_warps=4)
def row_dots(o, do, delta: nt.Partition[(1, 1, "BM", 1)], BM: nt.Constant, D: nt.Constant):
    """``delta = rowsum(do * o)`` for the (batch, head, query tile) tiles of this block."""
    for idx in nt.tiles(delta):
        ot = nt.astype(nt.load(o, idx, (1, 1, BM, D), padding=0), nt.float32)
        dot = nt.astype(nt.load(do, idx, (1, 1, BM, D), padding=0), nt.float32)
        nt.store(delta, nt.sum(ot * dot, axis=3, keepdims=True), idx)


@nt.jit(num_warps=4)
def row_dots_packed(o, do, delta: nt.Partition[("BM", 1, 1)], BM: nt.Constant,
                    D: nt.Constant):
    """``delta = rowsum(do * o)`` for the (packed query tile, head) tiles of this block."""
    for idx in nt.tiles(delta):
        ot = nt.astype(nt.load(o, idx, (BM, 1, D), padding=0), nt.float32)
        dot = nt.astype(nt.load(do, idx, (BM, 1, D), padding=0), nt.float32)
        nt.store(delta, nt.sum(ot * dot, axis=2, keepdims=True), idx)


@nt.jit(num_warps=4)
def key_grads(q, k, v, do, lse, delta, dk: nt.Partition[(1, 1, "BN", "D")],
              dv: nt.Partition[(1, 1, "BN", "D")], scale, BM: nt.Constant, BN: nt.Constant,
              D: nt.Constant, CAUSAL: nt.Constant, GROUP: nt.Constant):
    """``dk`` and ``dv`` of the (batch, key head, key tile) strips of ``dk`` this block owns.
    The scores are computed transposed, ``s^T = k q^T`` (BN, BM), as FlashAttention-2 does:
    then ``p^T`` and ``ds^T`` come out of a product in its accumulator layout and feed
    ``dv += p^T do`` and ``dk += ds^T q`` as register operands (on Hopper), and the key
    and value tiles, fixed for the block, are register operands of the other two products.
    ``lse`` and ``delta`` are read as rows ``(1, BM)`` of their ``(B, H, 1, S)`` views."""
    n_q, n_k = q.shape[2], k.shape[2]
    for row in nt.strips(dk):
        b, kh, n = row[0], row[1], row[2]
        kt = nt.reshape(nt.load(k, (b, kh, n, 0), (1, 1, BN, D), padding=0), (BN, D))
        vt = nt.reshape(nt.load(v, (b, kh, n, 0), (1, 1, BN, D), padding=0), (BN, D))
        k_pos = n * BN + nt.arange(BN)[:, None]
        dk_acc = nt.zeros((BN, D), nt.float32)
        dv_acc = nt.zeros((BN, D), nt.float32)
        first = 0
        if CAUSAL:                       # the query tiles at or below the diagonal
            first = (n * BN) // BM
        for g in range(GROUP):
            h = kh * GROUP + g
            for m in range(first, nt.num_tiles(q, 2, BM)):
                qt = nt.reshape(nt.load(q, (b, h, m, 0), (1, 1, BM, D), padding=0), (BM, D))
                dot = nt.reshape(nt.load(do, (b, h, m, 0), (1, 1, BM, D), padding=0),
                                 (BM, D))
                lse_t = nt.reshape(nt.load(lse, (b, h, 0, m), (1, 1, 1, BM), padding=0),
                                   (1, BM))
                delta_t = nt.reshape(nt.load(delta, (b, h, 0, m), (1, 1, 1, BM), padding=0),
                                     (1, BM))
                q_pos = m * BM + nt.arange(BM)[None, :]
                keep = (k_pos < n_k) & (q_pos < n_q)
                if CAUSAL:
                    keep = keep & (k_pos <= q_pos)
                st = (kt @ qt.T) * (scale * LOG2E)
                pt = nt.where(keep, nt.exp2(st - lse_t * LOG2E), 0.0)
                dv_acc += nt.astype(pt, q.dtype) @ dot
                dst = pt * (vt @ dot.T - delta_t)
                dk_acc += nt.astype(dst, q.dtype) @ qt
        for idx in nt.tiles(dk, row):
            nt.store(dk, nt.reshape(nt.astype(dk_acc * scale, dk.dtype), (1, 1, BN, D)), idx)
        for idx in nt.tiles(dv, row):
            nt.store(dv, nt.reshape(nt.astype(dv_acc, dv.dtype), (1, 1, BN, D)), idx)


@nt.jit(num_warps=4)
def query_grads(q, k, v, do, lse, delta, dq: nt.Partition[(1, 1, "BM", "D")], scale,
                BM: nt.Constant, BN: nt.Constant, D: nt.Constant, CAUSAL: nt.Constant,
                GROUP: nt.Constant):
    """``dq`` of the (batch, head, query tile) tiles of ``dq`` this block owns."""
    n_k = k.shape[2]
    for idx in nt.tiles(dq):
        b, h, m = idx[0], idx[1], idx[2]
        kh = h // GROUP
        qt = nt.reshape(nt.load(q, idx, (1, 1, BM, D), padding=0), (BM, D))
        dot = nt.reshape(nt.load(do, idx, (1, 1, BM, D), padding=0), (BM, D))
        lse_t = nt.reshape(nt.load(lse, (b, h, m, 0), (1, 1, BM, 1), padding=0), (BM, 1))
        delta_t = nt.reshape(nt.load(delta, (b, h, m, 0), (1, 1, BM, 1), padding=0), (BM, 1))
        q_pos = m * BM + nt.arange(BM)[:, None]
        acc = nt.zeros((BM, D), nt.float32)
        n = nt.num_tiles(k, 2, BN)
        if CAUSAL:
            n = min(n, ((m + 1) * BM + BN - 1) // BN)
        for j in range(n):
            kt = nt.reshape(nt.load(k, (b, kh, j, 0), (1, 1, BN, D), padding=0), (BN, D))
            vt = nt.reshape(nt.load(v, (b, kh, j, 0), (1, 1, BN, D), padding=0), (BN, D))
            k_pos = j * BN + nt.arange(BN)[None, :]
            keep = k_pos < n_k
            if CAUSAL:
                keep = keep & (k_pos <= q_pos)
            s = (qt @ kt.T) * (scale * LOG2E)
            p = nt.where(keep, nt.exp2(s - lse_t * LOG2E), 0.0)
            ds = p * (dot @ vt.T - delta_t)
            acc += nt.astype(ds, q.dtype) @ kt
        nt.store(dq, nt.reshape(nt.astype(acc * scale, dq.dtype), (1, 1, BM, D)), idx)


@nt.jit(num_warps=4)
def key_grads_packed(q, k, v, do, lse, delta, cu_q, cu_k,
                     dk: nt.Partition[("BN", 1, "D")], dv: nt.Partition[("BN", 1, "D")],
                     scale, BM: nt.Constant, BN: nt.Constant, D: nt.Constant,
                     NB: nt.Constant, CAUSAL: nt.Constant, GROUP: nt.Constant):
    """``dk`` and ``dv`` of the (packed key tile, key head) strips of ``dk`` this block owns:
    each key row is read by the queries of its own sequence (from the bottom-right diagonal
    on, when causal)."""
    for row in nt.strips(dk):
        n, kh = row[0], row[1]
        keys = n * BN + nt.arange(BN)[:, None]
        k0, k1, q0, q1 = sequence_bounds(cu_k, cu_q, keys, NB, cu_k.shape[0] - 1)
        lo = q0
        if CAUSAL:                       # query i of the sequence sees key j <= i + L_k - L_q
            lo = nt.maximum(q0, keys - k1 + q1)
        first = nt.item(nt.min(lo, axis=0))
        last = nt.item(nt.max(q1, axis=0))
        lo_c = nt.reshape(lo, (1, BN))   # per key, as the scores' columns
        hi_c = nt.reshape(q1, (1, BN))
        kt = nt.reshape(nt.load(k, (n, kh, 0), (BN, 1, D), padding=0), (BN, D))
        vt = nt.reshape(nt.load(v, (n, kh, 0), (BN, 1, D), padding=0), (BN, D))
        dk_acc = nt.zeros((BN, D), nt.float32)
        dv_acc = nt.zeros((BN, D), nt.float32)
        for g in range(GROUP):
            h = kh * GROUP + g
            for t in range((last - first + BM - 1) // BM):
                start = first + t * BM
                qt = nt.reshape(nt.load_at(q, (start, h, 0), (BM, 1, D), padding=0), (BM, D))
                dot = nt.reshape(nt.load_at(do, (start, h, 0), (BM, 1, D), padding=0),
                                 (BM, D))
                lse_t = nt.reshape(nt.load_at(lse, (start, h, 0), (BM, 1, 1), padding=0),
                                   (BM, 1))
                delta_t = nt.reshape(nt.load_at(delta, (start, h, 0), (BM, 1, 1), padding=0),
                                     (BM, 1))
                q_pos = start + nt.arange(BM)[:, None]
                keep = (q_pos >= lo_c) & (q_pos < hi_c)
                s = (qt @ kt.T) * (scale * LOG2E)
                p = nt.where(keep, nt.exp2(s - lse_t * LOG2E), 0.0)
                dv_acc += nt.astype(p, q.dtype).T @ dot
                ds = p * (dot @ vt.T - delta_t)
                dk_acc += nt.astype(ds, q.dtype).T @ qt
        for idx in nt.tiles(dk, row):
            nt.store(dk, nt.reshape(nt.astype(dk_acc * scale, dk.dtype), (BN, 1, D)), idx)
        for idx in nt.tiles(dv, row):
            nt.store(dv, nt.reshape(nt.astype(dv_acc, dv.dtype), (BN, 1, D)), idx)


@nt.jit(num_warps=4)
def query_grads_packed(q, k, v, do, lse, delta, cu_q, cu_k, dq: nt.Partition[("BM", 1, "D")],
                       scale, BM: nt.Constant, BN: nt.Constant, D: nt.Constant,
                       NB: nt.Constant, CAUSAL: nt.Constant, GROUP: nt.Constant):
    """``dq`` of the (packed query tile, head) tiles of ``dq`` this block owns."""
    for idx in nt.tiles(dq):
        m, h = idx[0], idx[1]
        kh = h // GROUP
        rows = m * BM + nt.arange(BM)[:, None]
        k0, hi = key_range(cu_q, cu_k, rows, NB, CAUSAL)
        first = nt.item(nt.min(k0, axis=0))
        last = nt.item(nt.max(hi, axis=0))
        qt = nt.reshape(nt.load(q, idx, (BM, 1, D), padding=0), (BM, D))
        dot = nt.reshape(nt.load(do, idx, (BM, 1, D), padding=0), (BM, D))
        lse_t = nt.reshape(nt.load(lse, (m, h, 0), (BM, 1, 1), padding=0), (BM, 1))
        delta_t = nt.reshape(nt.load(delta, (m, h, 0), (BM, 1, 1), padding=0), (BM, 1))
        acc = nt.zeros((BM, D), nt.float32)
        for j in range((last - first + BN - 1) // BN):
            start = first + j * BN
            kt = nt.reshape(nt.load_at(k, (start, kh, 0), (BN, 1, D), padding=0), (BN, D))
            vt = nt.reshape(nt.load_at(v, (start, kh, 0), (BN, 1, D), padding=0), (BN, D))
            k_pos = start + nt.arange(BN)[None, :]
            s = (qt @ kt.T) * (scale * LOG2E)
            p = nt.where((k_pos >= k0) & (k_pos < hi), nt.exp2(s - lse_t * LOG2E), 0.0)
            ds = p * (dot @ vt.T - delta_t)
            acc += nt.astype(ds, q.dtype) @ kt
        nt.store(dq, nt.reshape(nt.astype(acc * scale, dq.dtype), (BM, 1, D)), idx)


# ----------------------------------------------------------------------------- host side

def config(d: int, causal: bool, interpret: bool = False) -> dict:
    """``BM``, ``BN``, ``num_warps`` and ``num_stages`` of the backward's kernels."""
    if interpret:
        return dict(BM=32, BN=32, num_warps=4, num_stages=1)
    return dict(BM=64, BN=64, num_warps=4, num_stages=2)


def _check_grads(who, q, k, v, o, lse, do, dq, dk, dv, packed):
    _, _, d, dt = check_attention(who, q, k, v, o, lse, packed)
    for name, t, like in (("do", do, q), ("dq", dq, q), ("dk", dk, k), ("dv", dv, k)):
        if not (hasattr(t, "shape") and hasattr(t, "dtype")):
            raise ValueError(f"{who}: {name}: expected an array (NumPy, CuPy, Numba or "
                             f"PyTorch) {tuple(like.shape)} {dt}, got {type(t).__name__}")
        if tuple(t.shape) != tuple(like.shape) or dtype_name(t) != dt:
            raise ValueError(f"{who}: {name}: expected {tuple(like.shape)} {dt}, got "
                             f"{tuple(t.shape)} {dtype_name(t)}")
    return d


def attention_backward(q, k, v, o, lse, do, dq, dk, dv, *, causal=False, scale=None,
                       stream=None, interpret=None, cfg=None):
    """Launch the gradients of :func:`attention.attention`: ``dq``, ``dk``, ``dv`` (written)
    from its inputs, its outputs ``o`` and ``lse``, and ``do``, all in its layouts.

    Raises:
        ValueError: shapes or dtypes that do not match (before any GPU work).
    """
    d = _check_grads("attention_backward", q, k, v, o, lse, do, dq, dk, dv, packed=False)
    group = q.shape[1] // k.shape[1]     # query heads per key head
    interpret = launch_mode(q, interpret)
    c = cfg or config(d, causal, bool(interpret))
    bm, bn = c["BM"], c["BN"]
    bsz, hq, sq, _ = q.shape
    hk, sk = k.shape[1], k.shape[2]
    scale = float(d ** -0.5 if scale is None else scale)
    lse4 = _column(lse)
    delta = empty_like(lse4)
    run = dict(stream=stream, interpret=interpret)
    _kernel(row_dots, c["num_warps"], 1)(o, do, nt.partition(delta, (1, 1, bm, 1)), bm, d,
                                         **run)
    kv_blocks = max(1, bsz * hk * -(-sk // bn))
    # the statistics as rows of (B, H, 1, S) views for the transposed scores
    lse_rows, delta_rows = (x.reshape(bsz, hq, 1, sq) for x in (lse4, delta))
    _kernel(key_grads, c["num_warps"], c["num_stages"])(
        q, k, v, do, lse_rows, delta_rows, nt.partition(dk, (1, 1, bn, d), blocks=kv_blocks),
        nt.partition(dv, (1, 1, bn, d), blocks=kv_blocks), scale, bm, bn, d, bool(causal), group,
        **run)
    return _kernel(query_grads, c["num_warps"], c["num_stages"])(
        q, k, v, do, lse4, delta, nt.partition(dq, (1, 1, bm, d)), scale, bm, bn, d,
        bool(causal), group, **run)


def attention_varlen_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, o, lse, do, dq, dk, dv, *,
                              causal=False, scale=None, stream=None, interpret=None,
                              cfg=None):
    """Launch the gradients of :func:`attention.attention_varlen`: ``dq``, ``dk``, ``dv``
    (written) from its inputs, outputs ``o`` and ``lse`` and ``do``, all in its packed
    layouts (q, o, do, dq ``(total_q, heads, D)``; k, v, dk, dv ``(total_k, kv_heads, D)``;
    lse ``(total_q, heads)`` float32; ``cu_seqlens_q``, ``cu_seqlens_k`` as there).

    Raises:
        ValueError: shapes, dtypes or boundaries that do not match (before any GPU work).
    """
    d = _check_grads("attention_varlen_backward", q, k, v, o, lse, do, dq, dk, dv, packed=True)
    group = q.shape[1] // k.shape[1]     # query heads per key head
    n = check_boundaries("attention_varlen_backward", q, k, cu_seqlens_q, cu_seqlens_k)
    interpret = launch_mode(q, interpret)
    c = cfg or config(d, causal, bool(interpret))
    bm, bn = c["BM"], c["BN"]
    nb = 1 << (n - 1).bit_length()
    scale = float(d ** -0.5 if scale is None else scale)
    lse3 = _column(lse)
    delta = empty_like(lse3)
    run = dict(stream=stream, interpret=interpret)
    _kernel(row_dots_packed, c["num_warps"], 1)(o, do, nt.partition(delta, (bm, 1, 1)), bm,
                                                d, **run)
    kv_blocks = max(1, -(-k.shape[0] // bn) * k.shape[1])
    _kernel(key_grads_packed, c["num_warps"], c["num_stages"])(
        q, k, v, do, lse3, delta, cu_seqlens_q, cu_seqlens_k,
        nt.partition(dk, (bn, 1, d), blocks=kv_blocks),
        nt.partition(dv, (bn, 1, d), blocks=kv_blocks), scale, bm, bn, d, nb, bool(causal), group,
        **run)
    return _kernel(query_grads_packed, c["num_warps"], c["num_stages"])(
        q, k, v, do, lse3, delta, cu_seqlens_q, cu_seqlens_k, nt.partition(dq, (bm, 1, d)),
        scale, bm, bn, d, nb, bool(causal), group, **run)


# ------------------------------------------------------------------------- references

def _probabilities(s):
    mx = s.max(-1, keepdims=True, initial=-np.inf)
    e = np.exp(s - np.where(np.isfinite(mx), mx, 0.0))
    ls = e.sum(-1, keepdims=True)
    return np.where(ls > 0, e / np.where(ls > 0, ls, 1.0), 0.0)


def _grads(q, k, v, do, scale, shift):
    """``(dq, dk, dv)`` in float64 of (batch, heads, seq, D) arrays; query ``i`` sees keys
    ``j <= i + shift`` (every key where ``shift`` is None)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    bsz, hk = k.shape[:2]
    g = q.shape[1] // hk
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("bhmd,bhnd->bhmn", q, kr) * scale
    if shift is not None:
        sq, sk = s.shape[-2:]
        s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + shift, s, -np.inf)
    p = _probabilities(s)
    dp = np.einsum("bhmd,bhnd->bhmn", do, vr)
    ds = p * (dp - (do * (p @ vr)).sum(-1, keepdims=True))
    dq = ds @ kr * scale
    dk = np.einsum("bhmn,bhmd->bhnd", ds, q) * scale
    dv = np.einsum("bhmn,bhmd->bhnd", p, do)
    fold = (bsz, hk, g) + dk.shape[2:]
    return dq, dk.reshape(fold).sum(2), dv.reshape(fold).sum(2)


def reference(q, k, v, do, causal=False, scale=None):
    """``(dq, dk, dv)`` in float64 (the fixed-length layout; causal at the top left)."""
    q, k, v, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    return _grads(q, k, v, do, scale, 0 if causal else None)


def reference_varlen(q, k, v, do, cu_q, cu_k, causal=False, scale=None):
    """``(dq, dk, dv)`` in float64 of the packed layout, sequence by sequence (causal at the
    bottom right)."""
    q, k, v, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for b in range(len(cu_q) - 1):
        sq, sk = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        shift = (sk.stop - sk.start) - (sq.stop - sq.start) if causal else None
        one = _grads(*(x[None].transpose(0, 2, 1, 3) for x in (q[sq], k[sk], v[sk], do[sq])),
                     scale, shift)
        dq[sq], dk[sk], dv[sk] = (x[0].transpose(1, 0, 2) for x in one)
    return dq, dk, dv


def main(shape=(2, 4, 2, 100, 64)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    bsz, hq, hk, seq, d = shape
    for causal in (False, True):
        q_h, do_h = (rng.standard_normal((bsz, hq, seq, d)).astype(np.float16) for _ in "ab")
        k_h, v_h = (rng.standard_normal((bsz, hk, seq, d)).astype(np.float16) for _ in "ab")
        q, k, v, do = (to_device(x) for x in (q_h, k_h, v_h, do_h))
        o = to_device(np.zeros(q_h.shape, np.float16))
        lse = to_device(np.zeros(q_h.shape[:3], np.float32))
        grads = [to_device(np.full(x.shape, np.nan, np.float16)) for x in (q_h, k_h, v_h)]
        attention(q, k, v, o, lse, causal=causal, interpret=interpret)
        attention_backward(q, k, v, o, lse, do, *grads, causal=causal,
                           interpret=interpret).sync()
        for name, got, want in zip(("dq", "dk", "dv"), grads,
                                   reference(q_h, k_h, v_h, do_h, causal)):
            check_result("attention_backward", to_host(got), want, rtol=2e-2, atol=1e-2,
                         detail=f"{name}, q {q_h.shape}, k {k_h.shape}, causal={causal}, ")
    lq = np.array([37, 0, 100, 64, 1])
    lk = lq + np.array([0, 5, 0, 3, 20])
    cu_q = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
    q_h, do_h = (rng.standard_normal((cu_q[-1], hq, d)).astype(np.float16) for _ in "ab")
    k_h, v_h = (rng.standard_normal((cu_k[-1], hk, d)).astype(np.float16) for _ in "ab")
    q, k, v, do, cq, ck = (to_device(x) for x in (q_h, k_h, v_h, do_h, cu_q, cu_k))
    o = to_device(np.zeros(q_h.shape, np.float16))
    lse = to_device(np.zeros(q_h.shape[:2], np.float32))
    grads = [to_device(np.full(x.shape, np.nan, np.float16)) for x in (q_h, k_h, v_h)]
    attention_varlen(q, k, v, cq, ck, o, lse, causal=True, interpret=interpret)
    attention_varlen_backward(q, k, v, cq, ck, o, lse, do, *grads, causal=True,
                              interpret=interpret).sync()
    for name, got, want in zip(("dq", "dk", "dv"), grads,
                               reference_varlen(q_h, k_h, v_h, do_h, cu_q, cu_k, causal=True)):
        check_result("attention_backward", to_host(got), want, rtol=2e-2, atol=1e-2,
                     detail=f"{name}, packed, lengths q {lq.tolist()} k {lk.tolist()}, "
                            f"causal, ")


if __name__ == "__main__":
    main()
