"""Row-wise softmax, ``y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :])))``.

One tile holds whole rows: ``(rows_per_block, BN)`` with ``BN`` the row length rounded up
to a power of two. Short rows are packed several to a block so that a block still moves
a few kilobytes; long rows (up to 32768 columns) take one block each, spread over up to
32 warps. The lanes past the row's end are masked (the load has no ``padding=``), so the
maximum and the sum skip them without a ``-inf`` padding trick. 16-bit inputs are computed
in float32 and rounded once, at the store.

Long rows can instead loop over ``(1, BC)`` column tiles (``softmax_looped``; layer norm and
RMS norm have their own in ``layernorm.py`` and ``rmsnorm.py``): each pass a
``for k in range(num_tiles(x, 1, BC))`` loop whose loads numba_tile software-pipelines
(``num_stages``: ``cp.async`` copies into shared memory, ``S - 2`` tiles ahead), the output
written through a partition mapped onto one block per row (``blocks=M``,
``order=nt.grouped(M)``: block ``r`` gets the tiles ``(r, 0), (r, 1), ...`` of row ``r``, in
order). The statistics pass reads ``x`` from DRAM and the output pass reads it again, from the
L2 (as Triton's layer-norm tutorial does). For softmax: one online pass (running maximum and
rescaled running sum, ``-inf`` padding), then ``exp(x - max) / sum`` per tile. ``variant=`` of
the host functions picks one kernel or the other; ``"auto"`` loops where :data:`LOOPED_AT`
says it is faster.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks
the result against NumPy in float64.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, check_rows, pick_backend
except ImportError:
    from examples._common import check_result, check_rows, pick_backend


def softmax_rows(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                 DT: nt.Constant):
    """y = softmax(x) along axis 1 for this block's (BM, BN) tile of rows."""
    t = nt.astype(nt.load_like(x, y), nt.float32)
    # exp(t - max) as exp2((t - max) * log2(e)), as Triton lowers tl.exp and FlashAttention
    # writes it: fewer registers than libdevice's expf (exp2f: 2 ulp, CUDA math API; the
    # product adds a relative error of about |t - max| * 2**-24)
    e = nt.exp2((t - nt.max(t, axis=1, keepdims=True)) * LOG2E)
    # one division per row, then a multiply per element
    nt.store(y, nt.astype(e * (1.0 / nt.sum(e, axis=1, keepdims=True)), DT))


#: log2(e), for exp(x) = exp2(x * log2(e))
LOG2E = 1.4426950408889634

_KERNELS: dict = {}


#: Elements per thread for one row per block, by padded row length, for each op and for
#: 32-bit / 16-bit inputs (computed in float32 either way). Picked from a sweep of 16, 32
#: and 64 on the H200 (4096 rows; benchmarks/norms.py's method, 2026-11-30): short rows
#: want more warps, long ones fewer threads with more bytes each, and layer norm, which
#: also holds its weight and bias, fewer elements at 32768 columns (64 spill there).
_PER_THREAD = {
    ("softmax", 4): {1024: 16, 2048: 16, 4096: 16, 8192: 64, 16384: 32, 32768: 64},
    ("softmax", 2): {1024: 16, 2048: 32, 4096: 32, 8192: 64, 16384: 32, 32768: 64},
    ("layernorm", 4): {1024: 16, 2048: 32, 4096: 32, 8192: 64, 16384: 32, 32768: 64},
    ("layernorm", 2): {1024: 16, 2048: 16, 4096: 32, 8192: 32, 16384: 32, 32768: 32},
}


#: ``min_blocks_per_sm`` where ptxas fits more blocks per multiprocessor than it would on
#: its own without spilling (checked by tests/compile/test_norm_spills.py): more rows in
#: flight per multiprocessor while one block reduces.
_MIN_BLOCKS = {("softmax", 2, 4096): 6, ("softmax", 2, 8192): 4,
               ("softmax", 2, 16384): 2, ("layernorm", 4, 4096): 4}


def min_blocks(n_cols: int, itemsize: int, op: str = "softmax") -> int | None:
    """The ``min_blocks_per_sm`` of the kernel for rows of ``n_cols`` (None: no bound)."""
    bn = 1 << max(0, (n_cols - 1).bit_length())
    return _MIN_BLOCKS.get((op, 4 if itemsize >= 4 else 2, bn))


def row_config(n_cols: int, itemsize: int, op: str = "softmax") -> tuple:
    """``(rows per block, padded row length, num_warps)`` for rows of ``n_cols`` elements.

    Rows of up to 512 elements are packed into blocks of 2048 elements over 4 warps (a
    block then moves a few kilobytes); longer rows take a block each, with the elements
    per thread of :data:`_PER_THREAD` (``op``: "softmax" or "layernorm", which RMS norm
    shares; ``itemsize``: 4 or 2 bytes).
    """
    bn = 1 << max(0, (n_cols - 1).bit_length())
    if bn <= 512:
        return 2048 // bn, bn, 4
    per_thread = _PER_THREAD[(op, 4 if itemsize >= 4 else 2)].get(bn, 32)
    return 1, bn, min(32, max(1, bn // (32 * per_thread)))


def kernel_for(fn, num_warps: int, min_blocks_per_sm: int | None = None, num_stages: int = 1):
    """One ``nt.jit`` kernel of ``fn`` per configuration (kept for the process)."""
    key = (fn, num_warps, min_blocks_per_sm, num_stages)
    if key not in _KERNELS:
        _KERNELS[key] = nt.jit(num_warps=num_warps, min_blocks_per_sm=min_blocks_per_sm,
                               num_stages=num_stages)(fn)
    return _KERNELS[key]


# ----------------------------------------------------------------------- long rows: loops

#: (columns per tile, num_warps, num_stages) of the looped kernels, for 32-bit / 16-bit inputs
LOOPED_CONFIG = {4: (4096, 8, 3), 2: (4096, 8, 3)}

#: padded row lengths at which ``variant="auto"`` loops, by op and input itemsize: the cells
#: where the looped kernel beat the one holding rows in registers on the H200
#: (benchmarks/norms.py --variant registers / looped, 4096 rows, 2026-12-01; e.g. RMS norm
#: bfloat16 at 32768 columns: 2478 against 1532 GB/s, layer norm float32 at 32768: 2303
#: against 1970). Rows longer than 32768 columns always loop (not measured: there the
#: in-register kernels need 64 or more elements per thread at 32 warps).
LOOPED_AT = {("softmax", 4): {16384}, ("softmax", 2): set(),
             ("layernorm", 4): {32768}, ("layernorm", 2): set(),
             ("rmsnorm", 4): {32768}, ("rmsnorm", 2): {16384, 32768}}


def use_looped(op: str, n_cols: int, itemsize: int, variant: str) -> bool:
    """Whether a host function with ``variant`` runs the looped kernel."""
    if variant not in ("auto", "registers", "looped"):
        raise ValueError(f"variant: expected 'auto', 'registers' or 'looped', got {variant!r}")
    if variant != "auto":
        return variant == "looped"
    bn = 1 << max(0, (n_cols - 1).bit_length())
    return bn > 32768 or bn in LOOPED_AT[(op, 4 if itemsize >= 4 else 2)]


def looped_kernel(fn, itemsize: int):
    """The kernel of a looped ``fn`` for ``itemsize``-byte inputs (:data:`LOOPED_CONFIG`)."""
    _bc, warps, stages = LOOPED_CONFIG[4 if itemsize >= 4 else 2]
    return kernel_for(fn, warps, None, stages)


def row_partition(y, n_cols: int, itemsize: int):
    """``(partition, BC)``: ``y`` partitioned into (1, BC) tiles, one block per row walking
    its own row."""
    bc = min(LOOPED_CONFIG[4 if itemsize >= 4 else 2][0],
             1 << max(0, (n_cols - 1).bit_length()))
    rows = y.shape[0]
    return nt.partition(y, (1, bc), blocks=max(rows, 1), order=nt.grouped(max(rows, 1))), bc


def softmax_looped(x, y: nt.Partition[("BM", "BC")], BM: nt.Constant, BC: nt.Constant,
                   DT: nt.Constant):
    """y = softmax(x) along axis 1 for the row(s) of this block, BC columns at a time."""
    r = nt.bid(0)
    m = nt.full((BM, 1), -float("inf"), nt.float32)
    s = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (r, k), (BM, BC), padding=-float("inf")), nt.float32)
        m_new = nt.maximum(m, nt.max(t, 1, keepdims=True))
        s = s * nt.exp2((m - m_new) * LOG2E) + nt.sum(nt.exp2((t - m_new) * LOG2E), 1,
                                                      keepdims=True)
        m = m_new
    inv = 1.0 / s
    for idx in nt.tiles(y):
        t = nt.astype(nt.load(x, (idx[0], idx[1]), (BM, BC), padding=-float("inf")),
                      nt.float32)
        nt.store(y, nt.astype(nt.exp2((t - m) * LOG2E) * inv, DT), idx)


def softmax(x, y, *, stream=None, interpret=False, variant="auto"):
    """Launch ``y = softmax(x, axis=1)``.

    Args:
        x: (M, N) device array (host NumPy array in interpreter mode) of float16, bfloat16
            or float32.
        y: (M, N) array of x's dtype, written.
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.
        variant: ``"registers"`` (whole rows in registers), ``"looped"`` (column tiles,
            pipelined loads: :func:`softmax_looped`) or ``"auto"`` (:data:`LOOPED_AT`).

    Returns:
        The launch handle (``.sync()`` waits).

    Raises:
        ValueError: another dtype, or shapes or dtypes that differ (before any GPU work).
    """
    dt = check_rows("softmax", x, y)
    itemsize = 4 if dt == "float32" else 2
    if use_looped("softmax", x.shape[1], itemsize, variant):
        part, bc = row_partition(y, x.shape[1], itemsize)
        return looped_kernel(softmax_looped, itemsize)(
            x, part, 1, bc, dt, stream=stream, interpret=interpret)
    bm, bn, num_warps = row_config(x.shape[1], itemsize)
    kernel = kernel_for(softmax_rows, num_warps, min_blocks(x.shape[1], itemsize))
    return kernel(x, nt.partition(y, (bm, bn)), bm, bn, dt, stream=stream, interpret=interpret)


def main(shape=(300, 1000)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    x_h = (4 * rng.standard_normal(shape)).astype(np.float32)
    y = to_device(np.full(shape, np.nan, np.float32))
    softmax(to_device(x_h), y, interpret=interpret).sync()
    x64 = x_h.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    check_result("softmax", to_host(y), expected, rtol=1e-5, atol=1e-6,
                 detail=f"shape={shape}, ")


if __name__ == "__main__":
    main()
