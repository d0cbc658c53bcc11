"""Tutorial 8: reads at any position, ``nt.gather`` and ``nt.load_at``.

An embedding lookup (``out[t] = table[ids[t]]``, rows at computed coordinates, zeros for ids
outside the table) and a 1-D convolution (windows of ``x`` that start at any element, not at
tile boundaries, zero past the edges). Both read only read-only tensors, so they are safe
kernels. Runs on the GPU when there is one (CuPy arrays), otherwise in the numba_tile
interpreter (NumPy arrays), and says which; checks against NumPy in float64 and exits
nonzero on a mismatch.
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
def embedding(table, ids, out: nt.Partition[("BT", "BD")], BT: nt.Constant, BD: nt.Constant):
    """out[t, :] = table[ids[t], :] for this block's (BT, BD) tile; 0 for an id out of range."""
    rows = nt.load(ids, (nt.bid(0),), (BT,), padding=-1)          # (BT,) ids of these tokens
    i = nt.broadcast_to(nt.expand_dims(rows, 1), (BT, BD))          # row of every element
    j = nt.broadcast_to(nt.expand_dims(nt.arange(BD) + nt.bid(1) * BD, 0), (BT, BD))
    nt.store(out, nt.gather(table, (i, j), padding=0.0))            # element coordinates


@nt.jit
def conv1d(x, w, y: nt.Partition["B"], B: nt.Constant, K: nt.Constant):
    """y[i] = sum over k of w[k] * x[i + k - K // 2], zero past the ends of x."""
    start = nt.bid(0) * B - K // 2              # element offset of this block's first window
    acc = nt.zeros((B,), nt.float32)
    for k in range(K):
        acc = acc + w[k] * nt.load_at(x, start + k, (B,), padding=0.0)   # any offset
    nt.store(y, acc)


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    scale = 1 if interpret else 100

    vocab, dim, n_tok = int(rng.integers(50, 500)), int(rng.integers(20, 100)), 300 * scale
    table_h = rng.standard_normal((vocab, dim)).astype(np.float32)
    ids_h = rng.integers(-5, vocab + 5, n_tok).astype(np.int32)      # a few out of range
    out = to_device(np.full((n_tok, dim), np.nan, np.float32))
    embedding(to_device(table_h), to_device(ids_h), nt.partition(out, (32, 64)), 32, 64,
              interpret=interpret).sync()
    inside = (ids_h >= 0) & (ids_h < vocab)
    want = np.where(inside[:, None], table_h[np.clip(ids_h, 0, vocab - 1)], 0.0)
    check(f"embedding ({n_tok} tokens, table {vocab} x {dim})", to_host(out), want, 0, 0)

    n, taps = int(rng.integers(1000, 5000)) * scale, 7
    x_h = rng.standard_normal(n).astype(np.float32)
    w_h = rng.standard_normal(taps).astype(np.float32)
    y = to_device(np.full(n, np.nan, np.float32))
    conv1d(to_device(x_h), to_device(w_h), nt.partition(y, 256), 256, taps,
           interpret=interpret).sync()
    xp = np.pad(x_h.astype(np.float64), taps // 2)                   # zeros past the ends
    want = sum(w_h[k] * xp[k:k + n] for k in range(taps))
    check(f"conv1d ({n} elements, {taps} taps)", to_host(y), want, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
