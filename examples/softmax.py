"""Row-wise softmax, ``y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :])))``.

One tile holds whole rows: ``(rows_per_block, BN)`` with ``BN`` the row length rounded up
to a power of two. Short rows are packed several to a block so that a block still moves
a few kilobytes; long rows (up to 32768 columns) take one block each, spread over up to
32 warps. The lanes past the row's end are masked (the load has no ``padding=``), so the
maximum and the sum skip them without a ``-inf`` padding trick. 16-bit inputs are computed
in float32 and rounded once, at the store.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks
the result against NumPy in float64.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    import long_rows
    from _common import check_result, check_rows, pick_backend
except ImportError:
    from examples import long_rows
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


def kernel_for(fn, num_warps: int, min_blocks_per_sm: int | None = None):
    """One ``nt.jit`` kernel of ``fn`` per configuration (kept for the process)."""
    key = (fn, num_warps, min_blocks_per_sm)
    if key not in _KERNELS:
        _KERNELS[key] = nt.jit(num_warps=num_warps, min_blocks_per_sm=min_blocks_per_sm)(fn)
    return _KERNELS[key]


def softmax(x, y, *, stream=None, interpret=False, variant="auto"):
    """Launch ``y = softmax(x, axis=1)``.

    Args:
        x: (M, N) device array (host NumPy array in interpreter mode) of float16, bfloat16
            or float32.
        y: (M, N) array of x's dtype, written.
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.
        variant: ``"registers"`` (whole rows in registers), ``"looped"`` (column tiles,
            pipelined loads: ``long_rows.py``) or ``"auto"`` (``long_rows.LOOPED_AT``).

    Returns:
        The launch handle (``.sync()`` waits).

    Raises:
        ValueError: another dtype, or shapes or dtypes that differ (before any GPU work).
    """
    dt = check_rows("softmax", x, y)
    itemsize = 4 if dt == "float32" else 2
    if long_rows.use_looped("softmax", x.shape[1], itemsize, variant):
        part, bc = long_rows.row_partition(y, x.shape[1], itemsize)
        return long_rows.kernel(long_rows.softmax_looped, itemsize)(
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
