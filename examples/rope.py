"""Rotary position embedding (RoPE) of LLaMA-style attention, as Liger-Kernel's and TileGym's
rope kernels compute it: for a query or key tensor ``q`` of shape ``(batch, seq, heads, D)``
and tables ``cos``, ``sin`` of shape ``(seq, D)`` (each row the two halves' frequencies
repeated, as HF's ``rotate_half`` convention builds them),

    out[..., :D/2] = q[..., :D/2] * cos[s, :D/2] - q[..., D/2:] * sin[s, :D/2]
    out[..., D/2:] = q[..., D/2:] * cos[s, D/2:] + q[..., :D/2] * sin[s, D/2:]

The output, viewed as ``(batch * seq, heads, D)``, is partitioned into ``(1, HB, D/2)`` tiles:
half rows of up to ``HB`` heads of one position (``rope``: all of them for LLaMA's 32 and 8
heads at D = 128; ``rope_qk``: 16 query heads a tile, ``qk_config``); a block owns whole rows (``nt.strips``: the strip of ``(row, head block)`` is those
heads' two halves), so it can read both halves of ``q`` and store both halves of ``out``.
``cos`` and ``sin`` are read through views that repeat each row for every head (stride 0), so
every operand of the rotation is a tile of one shape and layout. ``D`` is a power of two
(64, 128, 256). A safe kernel: each block writes only its own rows.

``rope_qk`` rotates the query and the key tensors (grouped-query attention: fewer key heads) in
one launch, as Liger's kernel does: a block owns a row through a strip of the query output,
whose coordinates name the same row of the key output.

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


def rotate_heads(x, cos, sin, out, row, r, s, hb, H, H2, DT):
    """Rotate the ``H`` heads of head block ``hb`` of row ``r`` (position ``s``) of ``x`` into
    the tiles of ``out``'s strip ``row`` (its two halves): a helper of both kernels.

    The loads are padded (``padding=0.0``): a padded tile carries no valid extents through
    the arithmetic, and the stores are masked at the array's edges all the same. A tile
    wholly inside the array is read and written without masks, and the tables' stride-0
    head axis makes one read of each table chunk serve every head
    (``lowering/memory.py``)."""
    x1 = nt.astype(nt.load(x, (r, hb, 0), (1, H, H2), padding=0.0), nt.float32)
    x2 = nt.astype(nt.load(x, (r, hb, 1), (1, H, H2), padding=0.0), nt.float32)
    c1 = nt.astype(nt.load(cos, (s, hb, 0), (1, H, H2), padding=0.0), nt.float32)
    c2 = nt.astype(nt.load(cos, (s, hb, 1), (1, H, H2), padding=0.0), nt.float32)
    s1 = nt.astype(nt.load(sin, (s, hb, 0), (1, H, H2), padding=0.0), nt.float32)
    s2 = nt.astype(nt.load(sin, (s, hb, 1), (1, H, H2), padding=0.0), nt.float32)
    for idx in nt.tiles(out, row):            # the row's two halves
        if idx[2] == 0:
            nt.store(out, nt.astype(x1 * c1 - x2 * s1, DT), idx)
        else:
            nt.store(out, nt.astype(x2 * c2 + x1 * s2, DT), idx)


@nt.jit
def rope_rows(q, cos, sin, out: nt.Partition[(1, "HB", "H2")], seq, HB: nt.Constant,
              H2: nt.Constant, DT: nt.Constant):
    """out = rope(q) for every (batch * seq) row of heads this block owns. ``q`` and ``out``
    are (batch * seq, heads, D) views; ``cos`` and ``sin`` (seq, heads, D) views whose head
    axis has stride 0 (the table row repeated for every head), so that every operand is a
    (1, HB, D/2) tile in one layout: no broadcast, no layout conversion."""
    for row in nt.strips(out):
        r = row[0]
        rotate_heads(q, cos, sin, out, row, r, r % seq, row[1], HB, H2, DT)


@nt.jit
def rope_qk_rows(q, k, cos_q, sin_q, cos_k, sin_k, q_out: nt.Partition[(1, "HQ", "H2")],
                 k_out: nt.Partition[(1, "HK", "H2")], seq, HQ: nt.Constant, HK: nt.Constant,
                 H2: nt.Constant, DT: nt.Constant):
    """q_out = rope(q), k_out = rope(k) for every strip of ``q_out`` this block owns (a group
    of ``HQ`` query heads of one (batch * seq) row): Liger's one program per position for
    the query and the key heads. The strip's coordinates name the same tiles of ``k_out`` (a
    strip of another partition names its tiles at those coordinates, so no two blocks store
    one tile of either): the first group's strip holds all the key heads, the others' name
    no key head (their key loads and stores are masked out)."""
    for row in nt.strips(q_out):
        r, hb = row[0], row[1]
        s = r % seq                           # the position of row r = b * seq + s
        rotate_heads(q, cos_q, sin_q, q_out, row, r, s, hb, HQ, H2, DT)
        rotate_heads(k, cos_k, sin_k, k_out, row, r, s, hb, HK, H2, DT)


def _contiguous(a) -> bool:
    """C-contiguous (element strides of a NumPy, CuPy or PyTorch array)."""
    shape = tuple(a.shape)
    strides = tuple(a.stride()) if callable(getattr(a, "stride", None)) else \
        tuple(st // a.itemsize for st in a.strides)
    step = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def _rows_of_heads(a):
    """(batch, seq, heads, D) -> its (batch * seq, heads, D) view (a C-contiguous array)."""
    b, s, h, d = a.shape
    return a.reshape(b * s, h, d)


def _per_head(table, heads):
    """(seq, D) -> a read-only (seq, heads, D) view repeating each row for every head (stride
    0 over heads: no copy)."""
    if hasattr(table, "expand"):                          # PyTorch
        return table[:, None, :].expand(table.shape[0], heads, table.shape[1])
    xp = np
    if type(table).__module__.split(".")[0] == "cupy":
        import cupy as xp
    return xp.broadcast_to(table[:, None, :], (table.shape[0], heads, table.shape[1]))


def _check(q, cos, sin, out, who: str) -> None:
    """The shapes, dtypes and layouts :func:`rope` takes (ValueError naming the argument)."""
    dt = dtype_name(q)
    if dt not in ("float32", "float16", "bfloat16") or len(q.shape) != 4:
        raise ValueError(f"{who}: q: expected a 4-D float32, float16 or bfloat16 array "
                         f"(batch, seq, heads, D), got {len(q.shape)}-D {dt}")
    bsz, seq, heads, d = q.shape
    if d < 2 or d & (d - 1):
        raise ValueError(f"{who}: q: expected a head dimension D that is a power of two, "
                         f"got {d}")
    for name, v, shape in (("cos", cos, (seq, d)), ("sin", sin, (seq, d)),
                           ("out", out, tuple(q.shape))):
        if tuple(v.shape) != shape or dtype_name(v) != dt:
            raise ValueError(f"{who}: {name}: expected {shape} {dt}, got {tuple(v.shape)} "
                             f"{dtype_name(v)}")
    for name, v in (("q", q), ("out", out)):
        if not _contiguous(v):
            raise ValueError(f"{who}: {name}: expected a C-contiguous array (its rows of heads "
                             f"are viewed as one axis)")


def rope(q, cos, sin, out, *, blocks=None, stream=None, interpret=False):
    """Launch ``out = rope(q, cos, sin)``.

    Args:
        q: (batch, seq, heads, D) of float32, float16 or bfloat16, C-contiguous (NumPy in
            interpreter mode, CuPy or PyTorch); D a power of two, >= 2.
        cos, sin: (seq, D) of q's dtype.
        out: like q (C-contiguous), written.
        blocks: blocks of the grid (default: one per (batch, seq) row of heads, at most
            65536; with fewer, each block owns several rows).

    Raises:
        ValueError: shapes, dtypes or layouts that do not match (before any GPU work).
    """
    _check(q, cos, sin, out, "rope")
    bsz, seq, heads, d = q.shape
    dt = dtype_name(q)
    # the heads of a position in one tile: a block's strip is one position's heads
    hb = _heads_tile(heads, d)
    rows = bsz * seq * -(-heads // hb)
    b = max(1, min(rows, 65536)) if blocks is None else blocks
    return rope_rows(_rows_of_heads(q), _per_head(cos, heads), _per_head(sin, heads),
                     nt.partition(_rows_of_heads(out), (1, hb, d // 2), blocks=b), seq, hb,
                     d // 2, dt, stream=stream, interpret=interpret)


#: the most elements of a half row of heads in one tile (a block's registers hold two such
#: tiles of q and four of the tables, in float32)
MAX_HALF_ROW = 4096


def _heads_tile(heads: int, d: int, cap: int | None = None) -> int:
    """The heads of a position in one tile: a power of two, up to ``cap`` (MAX_HALF_ROW)
    elements of a half row (all the heads where they fit; the rest masked)."""
    cap = MAX_HALF_ROW if cap is None else cap
    hb = 1
    while hb < heads and hb * d // 2 < cap:
        hb *= 2
    return hb


def qk_config(itemsize: int) -> tuple:
    """``(elements of a half row of query heads per tile at most, num_warps,
    min_blocks_per_sm)`` of :func:`rope_qk`: the fastest of a sweep on the H200
    (``benchmarks/sweeps.py rope_qk``, ``docs/performance.md``,
    2026-12-02: 8, 16, 32 query heads per tile x 1, 2, 4 warps, with and without a register
    bound, two grids, LLaMA-3 8B heads): in both dtypes 1024 elements (16 heads of D = 128)
    over two warps, with registers bounded so that 16 blocks fit a multiprocessor (bfloat16
    0.90x and 0.99x Triton at 1 x 2048 and 4 x 8192, float32 0.93x and 0.98x)."""
    return (1024, 2, 16)


_QK_KERNELS: dict = {}


def _qk_kernel(warps: int, min_blocks: int | None = None):
    key = (warps, min_blocks)
    if key not in _QK_KERNELS:
        _QK_KERNELS[key] = rope_qk_rows.with_options(num_warps=warps,
                                                     min_blocks_per_sm=min_blocks)
    return _QK_KERNELS[key]


def rope_qk(q, k, cos, sin, q_out, k_out, *, blocks=None, stream=None, interpret=False):
    """Launch ``q_out = rope(q)`` and ``k_out = rope(k)`` (one launch: Liger's kernel rotates
    the query and the key heads of a position in one program).

    Args:
        q, k: (batch, seq, heads, D) and (batch, seq, kv_heads, D), one dtype (float32,
            float16 or bfloat16), C-contiguous; D a power of two, >= 2.
        cos, sin: (seq, D) of q's dtype.
        q_out, k_out: like q and k (C-contiguous), written.
        blocks: blocks of the grid (default: one per group of query heads of a (batch, seq)
            row, at most 65536; with fewer, each block owns several).

    A block owns a group of query heads of a position (all of them where ``qk_config`` allows)
    through a strip of ``q_out``, and the first group's block the key heads too. Where the key
    heads of a position do not fit one tile (``kv_heads * D / 2`` above ``MAX_HALF_ROW``), two
    :func:`rope` launches do the work.

    Raises:
        ValueError: shapes, dtypes or layouts that do not match (before any GPU work).
    """
    for name, v in (("q", q), ("k", k)):
        if len(v.shape) != 4:
            raise ValueError(f"rope_qk: {name}: expected a 4-D array (batch, seq, heads, D), "
                             f"got {len(v.shape)}-D")
    bsz, seq, hq, d = q.shape
    if tuple(k.shape[:2]) != (bsz, seq) or k.shape[3] != d or dtype_name(k) != dtype_name(q):
        raise ValueError(f"rope_qk: k: expected ({bsz}, {seq}, kv_heads, {d}) {dtype_name(q)}, "
                         f"got {tuple(k.shape)} {dtype_name(k)}")
    hk = k.shape[2]
    _check(q, cos, sin, q_out, "rope_qk")
    _check(k, cos, sin, k_out, "rope_qk")
    cap, warps, min_blocks = qk_config(4 if dtype_name(q) == "float32" else 2)
    # the key heads of a position in one tile (the strips of q_out, one per group of query
    # heads, reach k_out's tiles at their coordinates: k_out's one group is the first's)
    hbq, hbk = _heads_tile(hq, d, cap), _heads_tile(hk, d)
    if hbk < hk:
        rope(q, cos, sin, q_out, blocks=blocks, stream=stream, interpret=interpret)
        return rope(k, cos, sin, k_out, blocks=blocks, stream=stream, interpret=interpret)
    strips = bsz * seq * -(-hq // hbq)
    b = max(1, min(strips, 65536)) if blocks is None else blocks
    return _qk_kernel(warps, min_blocks)(
        _rows_of_heads(q), _rows_of_heads(k), _per_head(cos, hq), _per_head(sin, hq),
        _per_head(cos, hk), _per_head(sin, hk),
        nt.partition(_rows_of_heads(q_out), (1, hbq, d // 2), blocks=b),
        nt.partition(_rows_of_heads(k_out), (1, hbk, d // 2), blocks=b), seq, hbq, hbk,
        d // 2, dtype_name(q), stream=stream, interpret=interpret)


def tables(seq: int, d: int, base: float = 10000.0):
    """HF's ``cos``, ``sin`` tables (seq, d), float64."""
    inv = 1.0 / base ** (np.arange(0, d, 2) / d)
    ang = np.arange(seq)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=1)
    return np.cos(ang), np.sin(ang)


def reference(q, cos, sin):
    q = q.astype(np.float64)
    h = q.shape[-1] // 2
    rot = np.concatenate([-q[..., h:], q[..., :h]], axis=-1)
    return q * cos[None, :, None, :] + rot * sin[None, :, None, :]


def main(shape=(2, 37, 5, 128)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    q_h = rng.standard_normal(shape).astype(np.float32)
    c64, s64 = tables(shape[1], shape[3])
    c_h, s_h = c64.astype(np.float32), s64.astype(np.float32)
    out = to_device(np.full(shape, np.nan, np.float32))
    rope(to_device(q_h), to_device(c_h), to_device(s_h), out, blocks=23,
         interpret=interpret).sync()
    check_result("rope", to_host(out), reference(q_h, c_h.astype(np.float64),
                                                  s_h.astype(np.float64)),
                 rtol=1e-5, atol=1e-6, detail=f"shape={shape}, 23 blocks, ")
    # the query and the key heads in one launch (grouped-query attention: fewer key heads)
    k_shape = shape[:2] + (3,) + shape[3:]
    k_h = rng.standard_normal(k_shape).astype(np.float32)
    q_out = to_device(np.full(shape, np.nan, np.float32))
    k_out = to_device(np.full(k_shape, np.nan, np.float32))
    rope_qk(to_device(q_h), to_device(k_h), to_device(c_h), to_device(s_h), q_out, k_out,
            blocks=19, interpret=interpret).sync()
    c_d, s_d = c_h.astype(np.float64), s_h.astype(np.float64)
    check_result("rope_qk q", to_host(q_out), reference(q_h, c_d, s_d), rtol=1e-5, atol=1e-6,
                 detail=f"{shape}, 19 blocks, ")
    check_result("rope_qk k", to_host(k_out), reference(k_h, c_d, s_d), rtol=1e-5, atol=1e-6,
                 detail=f"{k_shape}, ")


if __name__ == "__main__":
    main()
