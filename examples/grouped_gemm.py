"""A grouped matrix product (Triton's tutorial 08, a mixture of experts' per-expert GEMMs):
``C_g = A_g @ B_g`` for groups of different shapes, in one persistent launch, written as a
safe kernel.

The kernel takes tuples of arrays: ``a`` holds the groups' A matrices, ``b`` their B, ``c``
partitions of their C. Each member is checked like a single array (no C overlaps any other
argument, every member of any group included), and ``nt.static_range(len(c))`` walks the
groups: the kernel is specialized for the number of groups, and ``c[g]`` is one member
(``numba_tile/groups.py``). Every C partition is mapped onto the same number of blocks, so
``for idx in nt.tiles(c[g])`` hands each block its share of each group's tiles (Triton's
tutorial passes raw pointers and sizes in device arrays instead, which nothing checks).

Runs on the GPU when there is one, otherwise in the interpreter (and says so), on integer-
valued float16 inputs with ragged shapes per group, and checks each C against NumPy's float64
product rounded once to float16.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, pick_backend
except ImportError:
    from examples._common import check_result, dtype_name, pick_backend


@nt.jit(num_warps=4)
def grouped_gemm_tiles(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                       BN: nt.Constant, BK: nt.Constant, DT: nt.Constant):
    """Every tile of every group's C this block is handed: ``A_g[i, :] @ B_g[:, j]``."""
    for g in nt.static_range(len(c)):
        for idx in nt.tiles(c[g]):
            i = idx[0]
            j = idx[1]
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a[g], 1, BK)):
                x = nt.load(a[g], (i, k), (BM, BK), padding=0)
                y = nt.load(b[g], (k, j), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            nt.store(c[g], nt.astype(acc, DT), idx)


def grouped_matmul(a, b, c, blocks: int, *, tile=(64, 64, 32), stream=None, interpret=False):
    """Launch ``c[g] = a[g] @ b[g]`` for every group on ``blocks`` blocks.

    Args:
        a, b, c: sequences of one length: (M_g, K_g), (K_g, N_g) and (M_g, N_g) arrays of one
            dtype (float16 or bfloat16), device arrays (host NumPy arrays in interpreter
            mode); the c's are written.
        blocks: the number of blocks (e.g. the GPU's multiprocessors).
        tile: (BM, BN, BK), powers of two.

    Raises:
        ValueError: groups of different counts, shapes that do not multiply, or another
            dtype (before any GPU work).
    """
    if not (len(a) == len(b) == len(c)) or not a:
        raise ValueError(f"grouped_matmul: a, b and c need one member per group, got "
                         f"{len(a)}, {len(b)} and {len(c)}")
    names = sorted({dtype_name(x) for x in (*a, *b, *c)})
    if len(names) != 1 or names[0] not in ("float16", "bfloat16"):
        raise ValueError(f"grouped_matmul: one dtype for every array, float16 or bfloat16, "
                         f"got {names}")
    dt = names[0]
    for g, (x, y, z) in enumerate(zip(a, b, c)):
        if x.shape[1] != y.shape[0] or z.shape != (x.shape[0], y.shape[1]):
            raise ValueError(f"grouped_matmul: group {g}: a {tuple(x.shape)} @ b "
                             f"{tuple(y.shape)} does not give c {tuple(z.shape)}")
    bm, bn, bk = tile
    parts = tuple(nt.partition(z, (bm, bn), blocks=blocks) for z in c)
    return grouped_gemm_tiles(tuple(a), tuple(b), parts, bm, bn, bk, dt, stream=stream,
                              interpret=interpret)


def main(shapes=None, blocks: int | None = None) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    shapes = shapes or ([(100, 72, 40), (37, 130, 64), (64, 64, 17)] if interpret else
                        [(1000, 700, 512), (130, 1024, 300), (513, 257, 1024), (64, 64, 64)])
    blocks = blocks or (8 if interpret else 132)
    ah = [rng.integers(-3, 4, (m, k)).astype(np.float16) for m, n, k in shapes]
    bh = [rng.integers(-3, 4, (k, n)).astype(np.float16) for m, n, k in shapes]
    cs = [to_device(np.zeros((m, n), np.float16)) for m, n, k in shapes]
    grouped_matmul([to_device(x) for x in ah], [to_device(y) for y in bh], cs, blocks,
                   interpret=interpret).sync()
    for g, (x, y, z) in enumerate(zip(ah, bh, cs)):
        want = (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float16)
        check_result("grouped_gemm", to_host(z), want, rtol=0, atol=0,
                     detail=f"group {g} {x.shape} @ {y.shape}, ")


if __name__ == "__main__":
    main()
