"""Layer normalization (forward) over the rows of a matrix:
``y = (x - mean) / sqrt(var + eps) * weight + bias``, mean and (biased) variance per row.

The kernel is the textbook formula, with nothing for the row's ragged end: the row is
loaded without ``padding=``, so the lanes past its last column are masked and the sums
skip them (``sum((x - mean) ** 2)`` counts only real elements, case E2), and the store
does not write them. The row stays in registers between the two reductions and the
normalization (one read of x, one write of y). Rows are packed several to a block when
short (see ``softmax.row_config``). 16-bit inputs are computed in float32.

Long rows loop over ``(1, BC)`` column tiles instead (``layer_norm_looped``, pipelined loads,
one block per row: see ``softmax.py``): a pass for the mean, one for the variance (two passes,
as Triton's layer-norm tutorial, rather than ``E[x^2] - mean^2``), then the output.

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


def layer_norm_rows(x, weight, bias, y: nt.Partition[("BM", "BN")], n_cols, eps,
                    BM: nt.Constant, BN: nt.Constant, DT: nt.Constant):
    """y = layer_norm(x) * weight + bias for this block's (BM, BN) tile of rows."""
    t = nt.astype(nt.load_like(x, y), nt.float32)
    mean = nt.sum(t, axis=1, keepdims=True) / n_cols
    d = t - mean
    var = nt.sum(d * d, axis=1, keepdims=True) / n_cols
    w = nt.astype(nt.load(weight, (0,), (BN,)), nt.float32)
    b = nt.astype(nt.load(bias, (0,), (BN,)), nt.float32)
    nt.store(y, nt.astype(d * nt.rsqrt(var + eps) * w + b, DT))


def layer_norm_looped(x, weight, bias, y: nt.Partition[("BM", "BC")], n_cols, eps,
                      BM: nt.Constant, BC: nt.Constant, DT: nt.Constant):
    """y = layer_norm(x) * weight + bias for the row(s) of this block, BC columns at a time."""
    r = nt.bid(0)
    acc = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        acc = acc + nt.sum(nt.astype(nt.load(x, (r, k), (BM, BC), padding=0), nt.float32), 1,
                           keepdims=True)
    mean = acc / n_cols
    acc2 = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (r, k), (BM, BC), padding=0), nt.float32)
        d = nt.where(nt.arange(BC) + k * BC < n_cols, t - mean, 0.0)
        acc2 = acc2 + nt.sum(d * d, 1, keepdims=True)
    inv = nt.rsqrt(acc2 / n_cols + eps)
    for idx in nt.tiles(y):
        t = nt.astype(nt.load(x, (idx[0], idx[1]), (BM, BC), padding=0), nt.float32)
        w = nt.astype(nt.load(weight, (idx[1],), (BC,), padding=0), nt.float32)
        b = nt.astype(nt.load(bias, (idx[1],), (BC,), padding=0), nt.float32)
        nt.store(y, nt.astype((t - mean) * inv * w + b, DT), idx)


def layer_norm(x, weight, bias, y, eps=1e-5, *, stream=None, interpret=False, variant="auto"):
    """Launch ``y = layer_norm(x, eps) * weight + bias`` along axis 1.

    Args:
        x: (M, N) device array (host NumPy array in interpreter mode) of float16, bfloat16
            or float32.
        weight, bias: (N,) arrays of x's dtype.
        y: (M, N) array of x's dtype, written.
        eps: added to the variance (PyTorch's default 1e-5).
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.
        variant: ``"registers"`` (whole rows in registers), ``"looped"`` (column tiles,
            pipelined loads: :func:`layer_norm_looped`) or ``"auto"`` (``softmax.LOOPED_AT``).

    Returns:
        The launch handle (``.sync()`` waits).

    Raises:
        ValueError: another dtype, or shapes or dtypes that differ (before any GPU work).
    """
    dt = check_rows("layer_norm", x, y, weight=weight, bias=bias)
    n = x.shape[1]
    itemsize = 4 if dt == "float32" else 2
    if use_looped("layernorm", n, itemsize, variant):
        part, bc = row_partition(y, n, itemsize)
        return looped_kernel(layer_norm_looped, itemsize)(
            x, weight, bias, part, n, float(eps), 1, bc, dt, stream=stream, interpret=interpret)
    bm, bn, num_warps = row_config(n, itemsize, "layernorm")
    kernel = kernel_for(layer_norm_rows, num_warps, min_blocks(n, itemsize, "layernorm"))
    return kernel(x, weight, bias, nt.partition(y, (bm, bn)), n, float(eps), bm, bn, dt,
                  stream=stream, interpret=interpret)


def reference(x, weight, bias, eps=1e-5):
    """NumPy float64 layer norm of the rows of ``x``."""
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight.astype(np.float64) + bias.astype(np.float64)


def main(shape=(300, 1000)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    x_h = (3 + 2 * rng.standard_normal(shape)).astype(np.float32)
    w_h = rng.uniform(0.5, 1.5, shape[1]).astype(np.float32)
    b_h = rng.standard_normal(shape[1]).astype(np.float32)
    y = to_device(np.full(shape, np.nan, np.float32))
    layer_norm(to_device(x_h), to_device(w_h), to_device(b_h), y, interpret=interpret).sync()
    expected = reference(x_h, w_h, b_h)
    check_result("layernorm", to_host(y), expected, rtol=1e-4, atol=1e-4,
                 detail=f"shape={shape}, ")


if __name__ == "__main__":
    main()
