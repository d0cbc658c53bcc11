"""RMS normalization (forward) over the rows of a matrix:
``y = x / sqrt(mean(x ** 2) + eps) * weight`` per row (Zhang and Sennrich, 2019).

As ``layernorm.py``: the row is loaded masked (no ``padding=``), so the mean of squares
counts only the row's real elements; the row stays in registers (one read of x, one write
of y); short rows are packed several to a block. 16-bit inputs are computed in float32.

Long rows loop over ``(1, BC)`` column tiles instead (``rms_norm_looped``, pipelined loads,
one block per row: see ``softmax.py``): one pass for the mean of squares, then the output.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks
the result against NumPy in float64.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, check_rows, pick_backend
    from softmax import (kernel_for, looped_kernel, min_blocks, row_config, row_partition,
                         use_looped)
except ImportError:
    from examples._common import check_result, check_rows, pick_backend
    from examples.softmax import (kernel_for, looped_kernel, min_blocks, row_config,
                                  row_partition, use_looped)


def rms_norm_rows(x, weight, y: nt.Partition[("BM", "BN")], n_cols, eps,
                  BM: nt.Constant, BN: nt.Constant, DT: nt.Constant):
    """y = rms_norm(x) * weight for this block's (BM, BN) tile of rows."""
    t = nt.astype(nt.load_like(x, y), nt.float32)
    ms = nt.sum(t * t, axis=1, keepdims=True) / n_cols
    w = nt.astype(nt.load(weight, (0,), (BN,)), nt.float32)
    nt.store(y, nt.astype(t * nt.rsqrt(ms + eps) * w, DT))


def rms_norm_looped(x, weight, y: nt.Partition[("BM", "BC")], n_cols, eps,
                    BM: nt.Constant, BC: nt.Constant, DT: nt.Constant):
    """y = rms_norm(x) * weight for the row(s) of this block, BC columns at a time."""
    r = nt.bid(0)
    acc = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (r, k), (BM, BC), padding=0), nt.float32)
        acc = acc + nt.sum(t * t, 1, keepdims=True)
    inv = nt.rsqrt(acc / n_cols + eps)
    for idx in nt.tiles(y):
        t = nt.astype(nt.load(x, (idx[0], idx[1]), (BM, BC), padding=0), nt.float32)
        w = nt.astype(nt.load(weight, (idx[1],), (BC,), padding=0), nt.float32)
        nt.store(y, nt.astype(t * inv * w, DT), idx)


def rms_norm(x, weight, y, eps=1e-6, *, stream=None, interpret=False, variant="auto"):
    """Launch ``y = x / sqrt(mean(x**2, axis=1) + eps) * weight``.

    Args:
        x: (M, N) device array (host NumPy array in interpreter mode) of float16, bfloat16
            or float32.
        weight: (N,) array of x's dtype.
        y: (M, N) array of x's dtype, written.
        eps: added to the mean of squares.
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.
        variant: ``"registers"`` (whole rows in registers), ``"looped"`` (column tiles,
            pipelined loads: :func:`rms_norm_looped`) or ``"auto"`` (``softmax.LOOPED_AT``).

    Returns:
        The launch handle (``.sync()`` waits).

    Raises:
        ValueError: another dtype, or shapes or dtypes that differ (before any GPU work).
    """
    dt = check_rows("rms_norm", x, y, weight=weight)
    n = x.shape[1]
    itemsize = 4 if dt == "float32" else 2
    if use_looped("rmsnorm", n, itemsize, variant):
        part, bc = row_partition(y, n, itemsize)
        return looped_kernel(rms_norm_looped, itemsize)(
            x, weight, part, n, float(eps), 1, bc, dt, stream=stream, interpret=interpret)
    bm, bn, num_warps = row_config(n, itemsize, "layernorm")
    kernel = kernel_for(rms_norm_rows, num_warps, min_blocks(n, itemsize, "layernorm"))
    return kernel(x, weight, nt.partition(y, (bm, bn)), n, float(eps), bm, bn, dt,
                  stream=stream, interpret=interpret)


def reference(x, weight, eps=1e-6):
    """NumPy float64 RMS norm of the rows of ``x``."""
    x = x.astype(np.float64)
    return x / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + eps) * weight.astype(np.float64)


def main(shape=(300, 1000)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    x_h = (1 + 2 * rng.standard_normal(shape)).astype(np.float32)
    w_h = rng.uniform(0.5, 1.5, shape[1]).astype(np.float32)
    y = to_device(np.full(shape, np.nan, np.float32))
    rms_norm(to_device(x_h), to_device(w_h), y, interpret=interpret).sync()
    expected = reference(x_h, w_h)
    check_result("rmsnorm", to_host(y), expected, rtol=1e-4, atol=1e-4,
                 detail=f"shape={shape}, ")


if __name__ == "__main__":
    main()
