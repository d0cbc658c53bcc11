"""Attention forward, ``o = softmax(q k^T * scale) v``, as FlashAttention computes it: a block
owns a ``(BM, D)`` tile of queries of one head and walks the keys and values in ``(BN, D)``
tiles with an online softmax (a running row maximum and a rescaled running sum), so the
``(S, S)`` score matrix never leaves the registers. It also writes the log-sum-exp of each
query row's scores, ``lse = m + log(sum exp(s - m))``, the one statistic the backward
(``attention_backward.py``) needs to recompute the probabilities.

* ``attention``: q ``(batch, heads, seq_q, D)``, k and v ``(batch, kv_heads, seq_k, D)`` (the
  layout of ``torch.nn.functional.scaled_dot_product_attention``): grouped-query and
  multi-query attention where ``kv_heads`` divides ``heads`` (query head ``h`` reads key head
  ``h // (heads // kv_heads)``), causal or not (causal as SDPA's ``is_causal``: query ``i``
  sees keys ``j <= i``), a softmax scale (default ``D ** -0.5``).
* ``attention_varlen``: variable-length packed batches as training frameworks pass them: q
  ``(total_q, heads, D)``, k and v ``(total_k, kv_heads, D)``, sequence ``b`` at rows
  ``cu_seqlens_q[b] .. cu_seqlens_q[b + 1]`` (FlashAttention's ``flash_attn_varlen_func``);
  causal aligned at the bottom right as there (with ``L_q`` queries and ``L_k`` keys,
  query ``i`` sees keys ``j <= i + L_k - L_q``).

Both are safe kernels: the output and the log-sum-exp are partitions, a block stores only its
own query tile, and every read goes through bounds-checked loads. In the packed form a tile
of ``BM`` query rows may span several sequences: each row finds its sequence from
``cu_seqlens`` (a compare against the boundaries, no data-chosen address), the tile walks the
union of its rows' key ranges, and a mask keeps each row to its own. The products are
``wgmma`` (on Hopper) or ``mma.sync`` tensor-core products with float32 accumulation, and the
key and value loads of the loop are software-pipelined (``num_stages``); on Hopper the
queries and the probabilities are ``wgmma``'s register operands and the softmax's statistics
stay in the scores' rows (``docs/guide/attention.md`` shows ``kernel.explain`` of it).

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks the
result against NumPy in float64 on ragged shapes.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, pick_backend
except ImportError:
    from examples._common import check_result, dtype_name, pick_backend

#: log2(e): the scores are scaled by ``scale * log2(e)`` once, so the softmax is ``exp2``
LOG2E = 1.4426950408889634
#: ln(2): the natural log-sum-exp is the base-2 one times it (a product, not a division:
#: the float32 division's slow path is a call, which serializes wgmma, C7509)
LN2 = 0.6931471805599453
#: the largest int32, the padding of the sequence boundaries past the last
_BIG = 2147483647


@nt.jit(num_warps=4)
def attention_rows(q, k, v, o: nt.Partition[(1, 1, "BM", "D")],
                   lse: nt.Partition[(1, 1, "BM", 1)], scale, BM: nt.Constant,
                   BN: nt.Constant, D: nt.Constant, CAUSAL: nt.Constant, GROUP: nt.Constant):
    """``o`` and ``lse`` of the (batch, head, query tile) strips of ``o`` this block owns."""
    n_keys = k.shape[2]
    for row in nt.strips(o):
        b, h, m = row[0], row[1], row[2]
        kh = h // GROUP
        qt = nt.reshape(nt.load(q, (b, h, m, 0), (1, 1, BM, D), padding=0), (BM, D))
        acc = nt.zeros((BM, D), nt.float32)
        m_i = nt.full((BM, 1), -np.inf, nt.float32)
        l_i = nt.zeros((BM, 1), nt.float32)
        n = nt.num_tiles(k, 2, BN)
        if CAUSAL:                       # the key tiles at or left of the diagonal
            n = min(n, ((m + 1) * BM + BN - 1) // BN)
        q_pos = m * BM + nt.arange(BM)[:, None]
        for j in range(n):
            kt = nt.reshape(nt.load(k, (b, kh, j, 0), (1, 1, BN, D), padding=0), (BN, D))
            vt = nt.reshape(nt.load(v, (b, kh, j, 0), (1, 1, BN, D), padding=0), (BN, D))
            s = (qt @ kt.T) * (scale * LOG2E)
            k_pos = j * BN + nt.arange(BN)[None, :]
            keep = k_pos < n_keys
            if CAUSAL:
                keep = keep & (k_pos <= q_pos)
            s = nt.where(keep, s, -np.inf)
            m_new = nt.maximum(m_i, nt.max(s, axis=1, keepdims=True))
            p = nt.exp2(s - m_new)
            alpha = nt.exp2(m_i - m_new)
            l_i = l_i * alpha + nt.sum(p, axis=1, keepdims=True)
            acc = acc * alpha + nt.astype(p, q.dtype) @ vt
            m_i = m_new
        for idx in nt.tiles(o, row):
            out = nt.where(l_i > 0, nt.fdiv(acc, l_i), 0.0)
            nt.store(o, nt.reshape(nt.astype(out, o.dtype), (1, 1, BM, D)), idx)
        for idx in nt.tiles(lse, row):
            nt.store(lse, nt.reshape((m_i + nt.log2(l_i)) * LN2, (1, 1, BM, 1)), idx)


def sequence_bounds(cu_q, cu_k, rows, NB, n_seq):
    """For packed query rows ``rows`` (an ``(R, 1)`` tile), the start and end of each row's
    sequence in q and in k, each ``(R, 1)``: the sequence is the last boundary of ``cu_q`` at
    or below the row (an empty sequence's boundary repeats; the row belongs to the next).
    ``NB``: a power of two above the number of sequences (the boundaries' tile)."""
    cq = nt.load(cu_q, (0,), (NB,), padding=_BIG)[None, :]
    ck = nt.load(cu_k, (0,), (NB,), padding=_BIG)[None, :]
    j = nt.arange(NB)[None, :]
    seq = nt.sum(nt.where((cq <= rows) & (j < n_seq), 1, 0), axis=1, keepdims=True) - 1
    q0 = nt.sum(nt.where(j == seq, cq, 0), axis=1, keepdims=True)
    q1 = nt.sum(nt.where(j == seq + 1, cq, 0), axis=1, keepdims=True)
    k0 = nt.sum(nt.where(j == seq, ck, 0), axis=1, keepdims=True)
    k1 = nt.sum(nt.where(j == seq + 1, ck, 0), axis=1, keepdims=True)
    return q0, q1, k0, k1


def key_range(cu_q, cu_k, rows, NB, CAUSAL):
    """The keys each packed query row reads, ``k0 <= key < hi`` (``(R, 1)`` tiles): its
    sequence's, up to ``i + L_k - L_q`` when causal (aligned at the bottom right)."""
    _, q1, k0, k1 = sequence_bounds(cu_q, cu_k, rows, NB, cu_q.shape[0] - 1)
    hi = k1
    if CAUSAL:
        hi = nt.minimum(k1, rows + k1 - q1 + 1)
    return k0, hi


@nt.jit(num_warps=4)
def attention_varlen_rows(q, k, v, cu_q, cu_k, o: nt.Partition[("BM", 1, "D")],
                          lse: nt.Partition[("BM", 1, 1)], scale, BM: nt.Constant,
                          BN: nt.Constant, D: nt.Constant, NB: nt.Constant,
                          CAUSAL: nt.Constant, GROUP: nt.Constant):
    """``o`` and ``lse`` of the (packed query tile, head) strips of ``o`` this block owns."""
    for row in nt.strips(o):
        m, h = row[0], row[1]
        kh = h // GROUP
        rows = m * BM + nt.arange(BM)[:, None]
        k0, hi = key_range(cu_q, cu_k, rows, NB, CAUSAL)
        first = nt.item(nt.min(k0, axis=0))          # the union of the rows' key ranges
        last = nt.item(nt.max(hi, axis=0))
        qt = nt.reshape(nt.load(q, (m, h, 0), (BM, 1, D), padding=0), (BM, D))
        acc = nt.zeros((BM, D), nt.float32)
        m_i = nt.full((BM, 1), -np.inf, nt.float32)
        l_i = nt.zeros((BM, 1), nt.float32)
        for j in range((last - first + BN - 1) // BN):
            start = first + j * BN
            kt = nt.reshape(nt.load_at(k, (start, kh, 0), (BN, 1, D), padding=0), (BN, D))
            vt = nt.reshape(nt.load_at(v, (start, kh, 0), (BN, 1, D), padding=0), (BN, D))
            s = (qt @ kt.T) * (scale * LOG2E)
            k_pos = start + nt.arange(BN)[None, :]
            s = nt.where((k_pos >= k0) & (k_pos < hi), s, -np.inf)
            m_new = nt.maximum(m_i, nt.max(s, axis=1, keepdims=True))
            # a row none of whose keys has come yet keeps m = -inf: exp2 of 0 offsets
            m_off = nt.where(m_new == -np.inf, 0.0, m_new)
            p = nt.exp2(s - m_off)
            alpha = nt.exp2(m_i - m_off)
            l_i = l_i * alpha + nt.sum(p, axis=1, keepdims=True)
            acc = acc * alpha + nt.astype(p, q.dtype) @ vt
            m_i = m_new
        for idx in nt.tiles(o, row):
            out = nt.where(l_i > 0, nt.fdiv(acc, l_i), 0.0)
            nt.store(o, nt.reshape(nt.astype(out, o.dtype), (BM, 1, D)), idx)
        for idx in nt.tiles(lse, row):
            nt.store(lse, nt.reshape((m_i + nt.log2(l_i)) * LN2, (BM, 1, 1)), idx)


# ----------------------------------------------------------------------------- host side

#: the head dimensions the kernels take (a tile's extents are powers of two)
HEAD_DIMS = (16, 32, 64, 128, 256)
DTYPES = ("float16", "bfloat16")


def config(d: int, causal: bool, interpret: bool = False) -> dict:
    """``BM``, ``BN``, ``num_warps`` and ``num_stages`` of the forward for head dimension
    ``d`` (the interpreter takes small tiles: its time grows with the tile)."""
    if interpret:
        return dict(BM=32, BN=32, num_warps=4, num_stages=1)
    if d <= 128:
        # two warpgroups of 64 query rows, 64 keys a step, three stages: 195-255 registers
        # without spills (explain, sm_90)
        return dict(BM=128, BN=64, num_warps=8, num_stages=3)
    return dict(BM=64, BN=32, num_warps=4, num_stages=2)


_KERNELS: dict = {}


def _kernel(fn, warps: int, stages: int):
    key = (fn.__name__, warps, stages)
    if key not in _KERNELS:
        _KERNELS[key] = fn.with_options(num_warps=warps, num_stages=stages)
    return _KERNELS[key]


def check_attention(who: str, q, k, v, o, lse, packed: bool) -> tuple:
    """The shapes and dtypes the kernels take (ValueError naming the argument, before any
    work). Returns ``(heads, kv_heads, D, dtype)``."""
    rank = 3 if packed else 4
    what = "(total, heads, D)" if packed else "(batch, heads, seq, D)"
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse)):
        if not (hasattr(t, "shape") and hasattr(t, "dtype")):
            raise ValueError(f"{who}: {name}: expected an array (NumPy, CuPy, Numba or PyTorch) "
                             f"{what if name != 'lse' else ''}, got {type(t).__name__}")
    dt = dtype_name(q)
    if dt not in DTYPES or len(q.shape) != rank:
        raise ValueError(f"{who}: q: expected a {rank}-D float16 or bfloat16 array {what}, "
                         f"got {len(q.shape)}-D {dt}")
    d = q.shape[-1]
    if d not in HEAD_DIMS:
        raise ValueError(f"{who}: q: expected a head dimension D in {HEAD_DIMS}, got {d}")
    h_ax = 1
    hq, hk = q.shape[h_ax], k.shape[h_ax] if len(k.shape) == rank else -1
    kv_shape = ((None, None, d) if packed else (q.shape[0], None, None, d))
    for name, t in (("k", k), ("v", v)):
        ok = len(t.shape) == rank and all(w is None or w == g for w, g in zip(kv_shape, t.shape))
        if not ok or dtype_name(t) != dt:
            want = ("(total_k, kv_heads, %d)" % d if packed
                    else "(%d, kv_heads, seq_k, %d)" % (q.shape[0], d))
            raise ValueError(f"{who}: {name}: expected {want} {dt}, got {tuple(t.shape)} "
                             f"{dtype_name(t)}")
    if tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"{who}: v: expected k's shape {tuple(k.shape)}, got {tuple(v.shape)}")
    if hk < 1 or hq % hk:
        raise ValueError(f"{who}: k: expected a number of heads that divides q's {hq}, "
                         f"got {hk}")
    if tuple(o.shape) != tuple(q.shape) or dtype_name(o) != dt:
        raise ValueError(f"{who}: o: expected {tuple(q.shape)} {dt} (q's shape and dtype), "
                         f"got {tuple(o.shape)} {dtype_name(o)}")
    want = tuple(q.shape[:-1])
    if tuple(lse.shape) != want or dtype_name(lse) != "float32":
        raise ValueError(f"{who}: lse: expected {want} float32, got {tuple(lse.shape)} "
                         f"{dtype_name(lse)}")
    return hq, hk, d, dt


def check_boundaries(who: str, q, k, cu_q, cu_k) -> int:
    """The ``cu_seqlens`` the packed kernels take: two 1-D int32 arrays of one length
    ``batch + 1 >= 2``; where they are NumPy arrays (their values cost nothing to read), each
    non-decreasing from 0 to its tensor's rows. Returns ``batch + 1``.

    Raises:
        ValueError: naming the function, the argument, what was expected and what was given.
    """
    for name, cu in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        shape = tuple(getattr(cu, "shape", ()))
        if len(shape) != 1 or shape[0] < 2 or dtype_name(cu) != "int32":
            raise ValueError(f"{who}: {name}: expected a 1-D int32 array of batch + 1 >= 2 "
                             f"sequence boundaries, got shape {shape} "
                             f"{dtype_name(cu) if hasattr(cu, 'dtype') else type(cu).__name__}")
    if len(cu_k) != len(cu_q):
        raise ValueError(f"{who}: cu_seqlens_k: expected {len(cu_q)} boundaries (as "
                         f"cu_seqlens_q), got {len(cu_k)}")
    for name, cu, rows in (("cu_seqlens_q", cu_q, q.shape[0]), ("cu_seqlens_k", cu_k,
                                                                 k.shape[0])):
        if isinstance(cu, np.ndarray) and (cu[0] != 0 or cu[-1] != rows
                                           or (np.diff(cu) < 0).any()):
            raise ValueError(f"{who}: {name}: expected boundaries non-decreasing from 0 to "
                             f"{rows} (the packed rows), got {cu.tolist()}")
    return len(cu_q)


def launch_mode(q, interpret):
    """The launch's ``interpret``: the caller's, else the interpreter for host arrays (NumPy,
    CPU tensors), else the launch defaults (``None``)."""
    if interpret is not None:
        return interpret
    return True if on_host(q) else None


def on_host(a) -> bool:
    """``a`` lives in host memory (a NumPy array or a CPU tensor): the launch runs in the
    interpreter."""
    device = getattr(a, "device", None)
    return isinstance(a, np.ndarray) or getattr(device, "type", None) == "cpu"


def _column(a):
    """``a`` with a trailing axis of extent 1 (a view)."""
    return a.reshape(tuple(a.shape) + (1,))


def attention(q, k, v, o, lse, *, causal=False, scale=None, stream=None, interpret=None,
              cfg=None):
    """Launch ``o = softmax(q k^T * scale) v`` and its row log-sum-exp.

    Args:
        q: (batch, heads, seq_q, D) float16 or bfloat16 (NumPy in interpreter mode, CuPy,
            Numba or PyTorch device arrays; any strides); D in :data:`HEAD_DIMS`.
        k, v: (batch, kv_heads, seq_k, D) of q's dtype, ``kv_heads`` dividing ``heads``.
        o: like q, written. lse: (batch, heads, seq_q) float32, written (natural log).
        causal: query ``i`` sees keys ``j <= i`` (SDPA's ``is_causal``).
        scale: the softmax scale (default ``D ** -0.5``).
        cfg: ``BM``, ``BN``, ``num_warps``, ``num_stages`` (default :func:`config`).
        stream, interpret: as a kernel launch takes them; ``interpret=None`` runs host arrays
            (NumPy, CPU tensors) in the interpreter and device arrays on the GPU (inside an
            ``nt.torch_op``, on the tensors' stream).

    Raises:
        ValueError: shapes or dtypes that do not match (before any GPU work).
    """
    _, _, d, _ = check_attention("attention", q, k, v, o, lse, packed=False)
    group = q.shape[1] // k.shape[1]     # query heads per key head
    interpret = launch_mode(q, interpret)
    c = cfg or config(d, causal, bool(interpret))
    bsz, hq, sq, _ = q.shape
    blocks = bsz * hq * -(-sq // c["BM"])
    kern = _kernel(attention_rows, c["num_warps"], c["num_stages"])
    return kern(q, k, v, nt.partition(o, (1, 1, c["BM"], d), blocks=max(blocks, 1)),
                nt.partition(_column(lse), (1, 1, c["BM"], 1), blocks=max(blocks, 1)),
                float(d ** -0.5 if scale is None else scale), c["BM"], c["BN"], d,
                bool(causal), group, stream=stream, interpret=interpret)


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, o, lse, *, causal=False,
                     scale=None, stream=None, interpret=None, cfg=None):
    """Launch attention over variable-length sequences packed along the first axis.

    Args:
        q: (total_q, heads, D) float16 or bfloat16; sequence ``b`` is rows
            ``cu_seqlens_q[b] .. cu_seqlens_q[b + 1]``.
        k, v: (total_k, kv_heads, D), sequence ``b`` at ``cu_seqlens_k[b] ..``.
        cu_seqlens_q, cu_seqlens_k: (batch + 1,) int32, non-decreasing from 0 to total_q and
            total_k. NumPy arrays are checked; the values of device arrays are not (reading
            them would wait for the device): the kernel reads them, and boundaries out of
            order give wrong rows but no access outside the tensors (every load is checked).
        o: like q, written. lse: (total_q, heads) float32, written.
        causal: bottom-right aligned (query ``i`` of a sequence sees keys
            ``j <= i + L_k - L_q``), as ``flash_attn_varlen_func``.

    Raises:
        ValueError: shapes or dtypes that do not match (before any GPU work).
    """
    _, _, d, _ = check_attention("attention_varlen", q, k, v, o, lse, packed=True)
    group = q.shape[1] // k.shape[1]     # query heads per key head
    n = check_boundaries("attention_varlen", q, k, cu_seqlens_q, cu_seqlens_k)
    interpret = launch_mode(q, interpret)
    c = cfg or config(d, causal, bool(interpret))
    total, hq, _ = q.shape
    blocks = max(1, -(-total // c["BM"]) * hq)
    kern = _kernel(attention_varlen_rows, c["num_warps"], c["num_stages"])
    return kern(q, k, v, cu_seqlens_q, cu_seqlens_k,
                nt.partition(o, (c["BM"], 1, d), blocks=blocks),
                nt.partition(_column(lse), (c["BM"], 1, 1), blocks=blocks),
                float(d ** -0.5 if scale is None else scale), c["BM"], c["BN"], d,
                1 << (n - 1).bit_length(), bool(causal), group, stream=stream,
                interpret=interpret)


# ------------------------------------------------------------------------- references

def reference(q, k, v, causal=False, scale=None):
    """``(o, lse)`` in float64 (NumPy arrays of the fixed-length layout)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("bhmd,bhnd->bhmn", q, k) * scale
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None], s, -np.inf)
    return _softmax_out(s, v, "bhmn,bhnd->bhmd")


def _softmax_out(s, v, spec):
    mx = s.max(-1, keepdims=True, initial=-np.inf)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    e = np.exp(s - mx)
    ls = e.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.einsum(spec, np.where(ls > 0, e / ls, 0.0), v)
        lse = (mx + np.log(ls))[..., 0]
    return o, lse


def reference_varlen(q, k, v, cu_q, cu_k, causal=False, scale=None):
    """``(o, lse)`` in float64 of the packed layout, sequence by sequence."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    g = q.shape[1] // k.shape[1]
    o = np.zeros(q.shape)
    lse = np.full(q.shape[:2], -np.inf)
    for b in range(len(cu_q) - 1):
        qs = q[cu_q[b]:cu_q[b + 1]]
        ks = np.repeat(k[cu_k[b]:cu_k[b + 1]], g, axis=1)
        vs = np.repeat(v[cu_k[b]:cu_k[b + 1]], g, axis=1)
        s = np.einsum("mhd,nhd->hmn", qs, ks) * scale
        lq, lk = len(qs), len(ks)
        if causal:
            s = np.where(np.arange(lk)[None, :] <= np.arange(lq)[:, None] + lk - lq, s,
                         -np.inf)
        ob, lb = _softmax_out(s, vs, "hmn,nhd->mhd")
        o[cu_q[b]:cu_q[b + 1]] = ob
        lse[cu_q[b]:cu_q[b + 1]] = lb.T
    return o, lse


def main(shape=(2, 4, 2, 100, 64)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    bsz, hq, hk, seq, d = shape
    for causal in (False, True):
        q_h = rng.standard_normal((bsz, hq, seq, d)).astype(np.float16)
        k_h = rng.standard_normal((bsz, hk, seq, d)).astype(np.float16)
        v_h = rng.standard_normal((bsz, hk, seq, d)).astype(np.float16)
        o = to_device(np.full(q_h.shape, np.nan, np.float16))
        lse = to_device(np.full(q_h.shape[:3], np.nan, np.float32))
        attention(to_device(q_h), to_device(k_h), to_device(v_h), o, lse, causal=causal,
                  interpret=interpret).sync()
        want_o, want_lse = reference(q_h, k_h, v_h, causal)
        detail = f"q {q_h.shape}, k {k_h.shape}, causal={causal}, "
        check_result("attention", to_host(o), want_o, rtol=2e-2, atol=2e-3, detail=detail)
        check_result("attention lse", to_host(lse), want_lse, rtol=1e-4, atol=1e-4,
                     detail=detail)
    # packed sequences of ragged lengths (one empty), more keys than queries
    lq = np.array([37, 0, 100, 64, 1])
    lk = lq + np.array([0, 5, 0, 3, 20])
    cu_q = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
    q_h = rng.standard_normal((cu_q[-1], hq, d)).astype(np.float16)
    k_h = rng.standard_normal((cu_k[-1], hk, d)).astype(np.float16)
    v_h = rng.standard_normal((cu_k[-1], hk, d)).astype(np.float16)
    o = to_device(np.full(q_h.shape, np.nan, np.float16))
    lse = to_device(np.full(q_h.shape[:2], np.nan, np.float32))
    attention_varlen(to_device(q_h), to_device(k_h), to_device(v_h), to_device(cu_q),
                     to_device(cu_k), o, lse, causal=True, interpret=interpret).sync()
    want_o, want_lse = reference_varlen(q_h, k_h, v_h, cu_q, cu_k, causal=True)
    check_result("attention_varlen", to_host(o), want_o, rtol=2e-2, atol=2e-3,
                 detail=f"lengths q {lq.tolist()} k {lk.tolist()}, causal, ")
    check_result("attention_varlen lse", to_host(lse), want_lse, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    main()
