"""Tutorial 3: row reductions and softmax, with whole rows in one tile.

Per row: the maximum, its column (argmax) and the mean; then a row-wise softmax. Rows of a
random length (not a power of two): the columns past the row's end are masked, and the
reductions skip them. Runs on the GPU when there is one (CuPy arrays), otherwise in the
numba_tile interpreter (NumPy arrays), and says which; checks against NumPy in float64 and
exits nonzero on a mismatch.
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


@nt.jit
def row_stats(x, vmax: nt.Partition["BM"], amax: nt.Partition["BM"],
              mean: nt.Partition["BM"], n_cols, BM: nt.Constant, BN: nt.Constant):
    """For the BM rows of this block: their maximum, its column, and their mean."""
    t = nt.load(x, (nt.bid(0), 0), (BM, BN))      # no padding=: past the row's end is masked
    nt.store(vmax, nt.max(t, axis=1))             # (BM,): the masked columns are skipped
    nt.store(amax, nt.argmax(t, axis=1))          # int32 column of the first maximum
    nt.store(mean, nt.sum(t, axis=1) / n_cols)


@nt.jit
def softmax(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """y = exp(x - max) / sum(exp(x - max)) along each row of this block's tile."""
    t = nt.load_like(x, y)                        # (BM, BN), masked past the row's end
    e = nt.exp(t - nt.max(t, axis=1, keepdims=True))   # (BM, 1) broadcasts over the row
    nt.store(y, e / nt.sum(e, axis=1, keepdims=True))


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    m, n = int(rng.integers(50, 200)), int(rng.integers(100, 1000))
    bn = 1 << (n - 1).bit_length()                # the row length rounded up to a power of two
    bm = max(1, 4096 // bn)                       # rows per block: about 4096 elements a tile
    assert bn >= n, "the kernels reduce one tile per row: the whole row must fit in it"
    x_h = (3 * rng.standard_normal((m, n))).astype(np.float32)
    x = to_device(x_h)
    x64 = x_h.astype(np.float64)

    vmax = to_device(np.full(m, np.nan, np.float32))
    amax = to_device(np.full(m, -1, np.int32))
    mean = to_device(np.full(m, np.nan, np.float32))
    row_stats(x, nt.partition(vmax, bm), nt.partition(amax, bm), nt.partition(mean, bm), n,
              bm, bn, interpret=interpret).sync()
    check(f"row max ({m} x {n}, tile ({bm}, {bn}))", to_host(vmax), x64.max(1), 0, 0)
    check("row argmax", to_host(amax), x64.argmax(1), 0, 0)
    check("row mean", to_host(mean), x64.mean(1), rtol=1e-5, atol=1e-6)

    y = to_device(np.full((m, n), np.nan, np.float32))
    softmax(x, nt.partition(y, (bm, bn)), bm, bn, interpret=interpret).sync()
    e = np.exp(x64 - x64.max(1, keepdims=True))
    check("softmax", to_host(y), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


if __name__ == "__main__":
    main()
