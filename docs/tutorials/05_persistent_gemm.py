"""Tutorial 5: persistent and grouped-order GEMM.

``C = A @ B`` in float16 with float32 accumulation, twice: one block per tile of C walked in
Triton's grouped order (bands of tile rows, for L2 reuse), then a persistent kernel where a
fixed number of blocks share out C's tiles through branded indices. A third kernel shows the
order in which the tiles are handed out. Runs on the GPU when there is one (CuPy arrays),
otherwise in the numba_tile interpreter (NumPy arrays), and says which; integer inputs make
every float32 sum exact, so C must equal NumPy's float64 product rounded once to float16.
"""

import os
import sys

import numpy as np

import numba_tile as nt


def backend():
    """``(interpret, to_device, to_host)``: the GPU when there is one, else the interpreter
    (``NUMBA_TILE_INTERPRET=1`` asks for the interpreter on a GPU machine too)."""
    if os.environ.get("NUMBA_TILE_INTERPRET", "0") in ("", "0") and nt.gpu_available():
        try:
            import cupy
            print("running on the GPU (CuPy arrays)")
            return False, cupy.asarray, cupy.asnumpy
        except ImportError:
            from numba import cuda
            print("running on the GPU (Numba device arrays)")
            return False, cuda.to_device, lambda a: a.copy_to_host()
    print("running in the numba_tile interpreter (CPU, NumPy arrays)")
    return True, np.asarray, np.asarray


def check(name, got, want, rtol, atol):
    """Exit with a message unless ``got`` matches the float64 ``want``."""
    err = np.max(np.abs(np.asarray(got, np.float64) - want))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        sys.exit(f"{name}: WRONG RESULT, max |error| = {err:.3g}")
    print(f"{name}: checked against NumPy (float64), max |error| = {err:.3g}")


@nt.jit(num_stages=3)
def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
         BK: nt.Constant):
    """One block per tile of C; bid() is the tile's place in the partition's order."""
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=0),
                     nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0), acc)
    nt.store(c, nt.astype(acc, nt.float16))


@nt.jit(num_stages=3)
def gemm_persistent(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                    BK: nt.Constant):
    """A fixed number of blocks; each computes every tile tiles(c) hands it."""
    for idx in nt.tiles(c):             # block b: tile numbers b, b + blocks, b + 2 blocks...
        i = idx[0]                      # the tile's coordinates, plain integers for loads
        j = idx[1]
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (i, k), (BM, BK), padding=0),
                         nt.load(b, (k, j), (BK, BN), padding=0), acc)
        nt.store(c, nt.astype(acc, nt.float16), idx)     # a store needs the branded index


@nt.jit
def walk(z: nt.Partition[(1, 1)]):
    """z[tile] = the tile's number in the walk: block b's s-th tile is b + s * blocks."""
    step = 0
    for idx in nt.tiles(z):
        nt.store(z, nt.full((1, 1), nt.bid(0) + step * nt.num_blocks(), nt.int64), idx)
        step += 1


def grouped_numbers(rows, cols, group):
    """Tile numbers of the grouped order by Triton's formula: tile number t -> (row, col)."""
    want = np.empty((rows, cols), np.int64)
    for t in range(rows * cols):
        first = t // (group * cols) * group
        height = min(rows - first, group)
        want[first + t % (group * cols) % height, t % (group * cols) // height] = t
    return want


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    scale = 1 if interpret else 8
    m, n = (int(v) for v in rng.integers(130, 330, 2) * scale)
    k = 8 * int(rng.integers(8, 24)) * scale
    a_h = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b_h = rng.integers(-3, 4, (k, n)).astype(np.float16)
    want = (a_h.astype(np.float64) @ b_h).astype(np.float16).astype(np.float64)
    a, b = to_device(a_h), to_device(b_h)

    c = to_device(np.full((m, n), np.nan, np.float16))
    gemm(a, b, nt.partition(c, (64, 64), order=nt.grouped(2)), 64, 64, 64,
         interpret=interpret).sync()
    check(f"gemm, grouped order (M={m} N={n} K={k})", to_host(c), want, 0, 0)

    blocks = 3
    if not interpret:
        from numba import cuda
        blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT   # one block per SM
    c = to_device(np.full((m, n), np.nan, np.float16))
    gemm_persistent(a, b, nt.partition(c, (64, 64), blocks=blocks, order=nt.grouped(2)),
                    64, 64, 64, interpret=interpret).sync()
    check(f"gemm_persistent ({blocks} blocks)", to_host(c), want, 0, 0)

    order = to_device(np.full((6, 5), -1, np.int64))
    walk(nt.partition(order, (1, 1), blocks=4, order=nt.grouped(2)), interpret=interpret).sync()
    print("tile numbers of a 6 x 5 tile grid in grouped(2) order (block = number % 4):")
    print(to_host(order))
    check("grouped order", to_host(order), grouped_numbers(6, 5, 2), 0, 0)


if __name__ == "__main__":
    main()
