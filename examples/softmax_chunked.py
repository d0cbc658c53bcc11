"""Row-wise softmax over rows longer than a tile (a 128K-entry vocabulary), with block-owned
strips: each block owns whole rows of the output (one row per block by default, several with
``blocks=``).

``nt.strips(y)`` gives block ``b`` the rows ``b, b + B, b + 2B, ...`` of ``y``'s tile grid
(``y`` is partitioned into ``(1, BC)`` column tiles and mapped onto ``B`` blocks); for each,
one online pass over ``x``'s column tiles keeps a running maximum and a rescaled running sum
(as TileGym's and Triton's chunked softmax do), then ``nt.tiles(y, row)`` walks the row's
tiles again and stores ``exp(x - max) / sum``. The second read of ``x`` comes mostly from the
L2. The column loops of float32 rows longer than 8192 are software-pipelined
(``num_stages``). 16-bit inputs are computed in float32 and rounded once, at the store. A safe kernel: the strips' tiles are the block's own,
so no two blocks write one element, which the interpreter's race detector checks.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks
the result against NumPy in float64 on ragged shapes.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, check_rows, pick_backend
except ImportError:
    from examples._common import check_result, check_rows, pick_backend

#: log2(e), for exp(x) = exp2(x * log2(e))
LOG2E = 1.4426950408889634

def config(n_cols: int, itemsize: int) -> tuple:
    """``(columns per tile, num_warps, num_stages)`` for rows of ``n_cols`` elements of
    ``itemsize`` bytes: the fastest of a sweep on the H200 (``benchmarks/kernels.py``'s
    shapes, 2026-12-01, ``docs/performance.md``); 16-bit rows loaded fastest unpipelined."""
    if itemsize >= 4:
        return (8192, 4, 1) if n_cols <= 8192 else (8192, 8, 3)
    return (4096, 4, 1) if n_cols <= 8192 else (8192, 8, 1)


def softmax_strips(x, y: nt.Partition[(1, "BC")], BC: nt.Constant, DT: nt.Constant):
    """y = softmax(x) along axis 1, for every row of tiles this block owns."""
    for row in nt.strips(y):
        r = row[0]
        m = nt.full((1, 1), -float("inf"), nt.float32)
        s = nt.zeros((1, 1), nt.float32)
        for k in range(nt.num_tiles(x, 1, BC)):
            t = nt.astype(nt.load(x, (r, k), (1, BC), padding=-float("inf")), nt.float32)
            m_new = nt.maximum(m, nt.max(t, 1, keepdims=True))
            s = s * nt.exp2((m - m_new) * LOG2E) + nt.sum(nt.exp2((t - m_new) * LOG2E), 1,
                                                          keepdims=True)
            m = m_new
        inv = 1.0 / s
        for idx in nt.tiles(y, row):
            t = nt.astype(nt.load(x, idx, (1, BC), padding=-float("inf")), nt.float32)
            nt.store(y, nt.astype(nt.exp2((t - m) * LOG2E) * inv, DT), idx)


_KERNELS: dict = {}


def _kernel(warps: int, stages: int):
    key = (warps, stages)
    if key not in _KERNELS:
        _KERNELS[key] = nt.jit(num_warps=warps, num_stages=stages)(softmax_strips)
    return _KERNELS[key]


def softmax_chunked(x, y, *, stream=None, interpret=False, blocks=None):
    """Launch ``y = softmax(x, axis=1)`` for rows of any length.

    Args:
        x: (M, N) device array (host NumPy array in interpreter mode) of float16, bfloat16
            or float32.
        y: (M, N) array of x's dtype, written.
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.
        blocks: blocks of the grid (default: one per row, which the H200 ran faster than 4 or
            8 persistent blocks per multiprocessor); with fewer, each block owns several rows.

    Returns:
        The launch handle (``.sync()`` waits).

    Raises:
        ValueError: another dtype, or shapes or dtypes that differ (before any GPU work).
    """
    dt = check_rows("softmax_chunked", x, y)
    itemsize = 4 if dt == "float32" else 2
    bc, warps, stages = config(x.shape[1], itemsize)
    bc = min(bc, 1 << max(0, (x.shape[1] - 1).bit_length()))
    b = max(1, x.shape[0]) if blocks is None else blocks
    return _kernel(warps, stages)(x, nt.partition(y, (1, bc), blocks=b), bc, dt, stream=stream,
                                  interpret=interpret)


def main(shape=(37, 20_000)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    x_h = (4 * rng.standard_normal(shape)).astype(np.float32)
    y = to_device(np.full(shape, np.nan, np.float32))
    # fewer blocks than rows: each block owns several strips
    softmax_chunked(to_device(x_h), y, interpret=interpret, blocks=5).sync()
    x64 = x_h.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    check_result("softmax_chunked", to_host(y), expected, rtol=1e-5, atol=1e-7,
                 detail=f"shape={shape}, 5 blocks, ")


if __name__ == "__main__":
    main()
