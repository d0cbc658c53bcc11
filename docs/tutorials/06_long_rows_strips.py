"""Tutorial 6: long rows with strips, a layer norm over rows longer than any tile.

Each block owns whole rows (*strips*) of the output: it reads its row in column tiles twice
(mean, then variance), then walks the row's tiles again to normalize and store them, and
stores the row's statistics in a second output. Runs on the GPU when there is one (CuPy
arrays), otherwise in the numba_tile interpreter (NumPy arrays), and says which; checks
against NumPy in float64 and exits nonzero on a mismatch.
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


@nt.jit(num_warps=8)
def layer_norm(x, y: nt.Partition[(1, "BC")], stats: nt.Partition[(1, 2)], n_cols, eps,
               BC: nt.Constant):
    """y = (x - mean) / sqrt(var + eps) per row; stats[r] = (mean, 1 / sqrt(var + eps))."""
    for row in nt.strips(y):                    # the rows of tiles this block owns
        r = row[0]                              # its tile row: row r of x
        acc = nt.zeros((1, 1), nt.float32)
        for k in range(nt.num_tiles(x, 1, BC)):     # pass 1: the sum, zeros past the end
            acc = acc + nt.sum(nt.load(x, (r, k), (1, BC), padding=0), 1, keepdims=True)
        mean = acc / n_cols
        acc = nt.zeros((1, 1), nt.float32)
        for k in range(nt.num_tiles(x, 1, BC)):     # pass 2: the squared deviations
            d = nt.load(x, (r, k), (1, BC)) - mean      # masked past the row's end
            acc = acc + nt.sum(nt.filled(d * d, 0.0), 1, keepdims=True)
        rstd = nt.rsqrt(acc / n_cols + eps)
        for idx in nt.tiles(y, row):            # pass 3: this row's tiles of y, in order
            nt.store(y, (nt.load(x, idx, (1, BC)) - mean) * rstd, idx)
        for sidx in nt.tiles(stats, row):       # the same row of another mapped partition
            nt.store(stats, nt.where(nt.arange(2) == 0, mean, rstd), sidx)


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    if interpret:                               # the interpreter is slow: small shapes
        m, n, bc, blocks = int(rng.integers(8, 20)), int(rng.integers(2500, 5000)), 1024, 5
    else:
        from numba import cuda
        m, n, bc = int(rng.integers(100, 300)), int(rng.integers(20_000, 50_000)), 4096
        blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT
    x_h = (rng.standard_normal((m, n)) * 3 + 1).astype(np.float32)
    y = to_device(np.full((m, n), np.nan, np.float32))
    stats = to_device(np.full((m, 2), np.nan, np.float32))
    layer_norm(to_device(x_h), nt.partition(y, (1, bc), blocks=blocks),
               nt.partition(stats, (1, 2), blocks=blocks), n, 1e-5, bc,
               interpret=interpret).sync()

    x64 = x_h.astype(np.float64)
    mean, var = x64.mean(1, keepdims=True), x64.var(1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5)
    check(f"layer_norm ({m} rows of {n}, (1, {bc}) tiles, {blocks} blocks)", to_host(y),
          (x64 - mean) * rstd, rtol=1e-4, atol=1e-4)
    check("row statistics", to_host(stats), np.hstack([mean, rstd]), rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    main()
