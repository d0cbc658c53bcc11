"""Tutorial 7: scalars and data-dependent control flow, a segment mean over ragged sequences.

Sequences of different lengths are packed one after another in ``x`` (tokens, features);
``offsets[b]:offsets[b + 1]`` are the rows of sequence ``b``. Each block reads its bounds
from ``offsets`` as scalars, loops over its rows, branches on the count, and rescales the
mean when its norm, a scalar taken from a reduction, is over a limit. Runs on the GPU when
there is one (CuPy arrays), otherwise in the numba_tile interpreter (NumPy arrays), and says
which; checks against NumPy in float64 and exits nonzero on a mismatch.
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
def segment_mean(x, offsets, out: nt.Partition[(1, "BD")], max_norm, BD: nt.Constant):
    """out[b] = mean of x[offsets[b]:offsets[b + 1]], scaled down to a norm of max_norm."""
    b = nt.bid(0)
    start = offsets[b]                      # a scalar read from a read-only tensor
    end = offsets[b + 1]
    acc = nt.zeros((1, BD), nt.float32)
    for t in range(start, end):             # a loop whose bounds come from memory
        acc = acc + nt.load(x, (t, 0), (1, BD), padding=0)     # row t of x
    if end > start:                         # a branch on scalars, the same in every thread
        acc = acc / (end - start)
    norm = nt.item(nt.sqrt(nt.sum(acc * acc, axis=1)))         # the 1-element tile's value
    if norm > max_norm:
        acc = acc * (max_norm / norm)
    nt.store(out, acc)


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    n_seq = int(rng.integers(20, 60)) * (1 if interpret else 100)
    lengths = rng.integers(0, 12, n_seq)                    # empty sequences too
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    d = int(rng.integers(40, 128))                          # features: one tile of 128 columns
    x_h = rng.standard_normal((int(offsets[-1]), d)).astype(np.float32)
    out = to_device(np.full((n_seq, d), np.nan, np.float32))
    segment_mean(to_device(x_h), to_device(offsets), nt.partition(out, (1, 128)), 3.0, 128,
                 interpret=interpret).sync()

    want = np.zeros((n_seq, d))
    for b in range(n_seq):
        if lengths[b]:
            want[b] = x_h[offsets[b]:offsets[b + 1]].astype(np.float64).mean(0)
        norm = np.linalg.norm(want[b])
        if norm > 3.0:
            want[b] *= 3.0 / norm
    check(f"segment_mean ({n_seq} sequences of 0 to 11 rows, {d} features)", to_host(out),
          want, rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    main()
