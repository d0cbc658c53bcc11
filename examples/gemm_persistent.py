"""A persistent matrix product: a fixed number of blocks (one per multiprocessor on the GPU)
walk over all the (BM, BN) tiles of ``C = A @ B``, through indices minted by ``tiles(c)``.

``nt.partition(c, (BM, BN), blocks=B, order=nt.grouped(8))`` launches B blocks; ``for idx
in nt.tiles(c)`` hands block ``b`` tile numbers ``b, b + B, b + 2B, ...`` of the grouped
order (so the B tiles in work at one time share rows of A and columns of B in L2), no two
blocks the same tile, and ``nt.store(c, tile, idx)`` accepts only those indices. For each
tile the block runs the K loop of ``examples/gemm.py``: the (BM, BK) tile of A and the
(BK, BN) tile of B at the tile's coordinates ``idx[0]`` and ``idx[1]`` (plain integers: the
loads of a read-only tensor may use them; a store needs ``idx`` itself), added to a float32
accumulator with ``nt.mma``.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), on integer-
valued float16 inputs with ragged M, N and K, and checks that the result equals NumPy's
float64 product rounded once to float16, element for element.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, pick_backend
    from gemm import (GROUP_M, as_config, c_partition, check_operands, default_config,
                      device_cc, integer_operands, kernel_for, rounded_product)
except ImportError:
    from examples._common import check_result, pick_backend
    from examples.gemm import (GROUP_M, as_config, c_partition, check_operands,
                               default_config, device_cc, integer_operands, kernel_for,
                               rounded_product)


def gemm_persistent_tiles(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                          BN: nt.Constant, BK: nt.Constant, DT: nt.Constant):
    """Every tile of C this block is handed: ``sum over k of A[i, k] @ B[k, j]`` in float32."""
    for idx in nt.tiles(c):
        i = idx[0]          # read before the K loop: its loads then have loop-invariant
        j = idx[1]          # coordinates, as num_stages pipelining asks
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (i, k), (BM, BK), padding=0)
            y = nt.load(b, (k, j), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, nt.astype(acc, DT), idx)


def matmul_persistent(a, b, c, blocks: int, *, config=None, stream=None, interpret=False):
    """Launch ``c = a @ b`` on ``blocks`` blocks that share out C's tiles.

    Args:
        a: (M, K) device array (host NumPy array in interpreter mode) of float16 or bfloat16.
        b: (K, N) array of a's dtype.
        c: (M, N) array of a's dtype, written.
        blocks: the number of blocks (e.g. the GPU's multiprocessors), at least 1.
        config: as ``examples/gemm.py``'s ``matmul``.
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.

    Returns:
        The launch handle (``.sync()`` waits).

    Raises:
        ValueError: another dtype, or shapes or dtypes that do not match (before any GPU work).
        numba_tile.errors.TileArgumentError: ``blocks`` is not an int from 1 to 2**31 - 1.
    """
    dt = check_operands("matmul_persistent", a, b, c)
    m, k = a.shape
    cfg = as_config(config, m, b.shape[1], k, None if config is not None else
                    device_cc(interpret))
    return kernel_for(cfg, gemm_persistent_tiles)(
        a, b, c_partition(c, cfg, blocks=blocks), cfg.bm, cfg.bn, cfg.bk, dt, stream=stream,
        interpret=interpret)


def main(shape=None, blocks: int | None = None) -> None:
    interpret, to_device, to_host = pick_backend()
    m, n, k = shape or ((200, 136, 100) if interpret else (1000, 1000, 700))
    if blocks is None:
        blocks = 3
        if not interpret:
            from numba import cuda
            blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT
    rng = np.random.default_rng()
    a_h, b_h = integer_operands(rng, m, n, k)
    c = to_device(np.full((m, n), np.nan, np.float16))
    cfg = default_config(m, n, k, device_cc(interpret))     # Hopper: wgmma (examples/gemm.py)
    matmul_persistent(to_device(a_h), to_device(b_h), c, blocks, config=cfg,
                      interpret=interpret).sync()
    tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
    check_result("gemm_persistent", to_host(c).astype(np.float64),
                 rounded_product(a_h, b_h, np.float16), rtol=0, atol=0,
                 detail=f"M={m} N={n} K={k}, {tiles} tiles of {cfg} over {blocks} blocks "
                        f"(grouped({GROUP_M}) order), against NumPy's float64 product rounded "
                        f"once to float16: ")


if __name__ == "__main__":
    main()
