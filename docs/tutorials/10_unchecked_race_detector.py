"""Tutorial 10: unchecked kernels and the interpreter's race detector.

A histogram with atomics and a scatter to computed positions: writes the ownership checks
cannot prove disjoint, so the kernels say ``unchecked=True`` and so does every launch. Then
the race detector (interpreter) catches a scatter in which two blocks write one element.
Runs on the GPU when there is one (CuPy arrays), otherwise in the numba_tile interpreter
(NumPy arrays), and says which; the race detector always runs in the interpreter. Checks
against NumPy and exits nonzero on a mismatch or a race that goes unreported.
"""

import os
import sys

import numpy as np

import numba_tile as nt
from numba_tile.errors import DataRaceError, UncheckedLaunchError


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


@nt.jit(unchecked=True)
def histogram(x, hist: nt.Mutable, lo, hi, B: nt.Constant, NBINS: nt.Constant):
    """hist[k] += the number of x in bin k of NBINS equal bins over [lo, hi)."""
    t = nt.load(x, (nt.bid(0),), (B,), padding=float("nan"))
    bins = nt.astype(nt.floor((t - lo) * (NBINS / (hi - lo))), nt.int32)
    inside = (bins >= 0) & (bins < NBINS) & (t == t)        # NaN (the padding) is never in
    nt.atomic_add(hist, bins, 1, mask=inside)               # many blocks, one counter


@nt.jit(unchecked=True)
def scatter(src, dest, out: nt.Mutable, B: nt.Constant):
    """out[dest[i]] = src[i]: correct only if no two elements share a destination."""
    i = nt.bid(0)
    nt.scatter(out, nt.load(dest, (i,), (B,), padding=-1), nt.load(src, (i,), (B,)))


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    n = int(rng.integers(10_000, 30_000)) * (1 if interpret else 100)
    blocks = -(-n // 1024)                       # no partition: the launch gives the grid

    x_h = rng.standard_normal(n).astype(np.float32)
    hist = to_device(np.zeros(64, np.int32))
    histogram(to_device(x_h), hist, -3.0, 3.0, 1024, 64, grid=blocks, unchecked=True,
              interpret=interpret).sync()
    scaled = (x_h - np.float32(-3.0)) * np.float32(64 / 6.0)    # the kernel's float32 bins
    keep = (scaled >= 0) & (scaled < 64)
    check(f"histogram ({n} values, {blocks} blocks)", to_host(hist),
          np.bincount(np.floor(scaled[keep]).astype(np.int64), minlength=64), 0, 0)

    perm = rng.permutation(n).astype(np.int64)
    out = to_device(np.full(n, np.nan, np.float32))
    scatter(to_device(x_h), to_device(perm), out, 1024, grid=blocks, unchecked=True,
            interpret=interpret).sync()
    want = np.empty(n)
    want[perm] = x_h
    check("scatter of a permutation", to_host(out), want, 0, 0)

    m = 4096                                     # the interpreter from here on: small
    try:                                         # the launch must acknowledge it too
        scatter(x_h[:m], perm[:m] % m, np.zeros(m, np.float32), 1024, grid=4, interpret=True)
        sys.exit("UncheckedLaunchError not raised")
    except UncheckedLaunchError as e:
        print(f"launch without unchecked=True: {type(e).__name__}")

    # [race]
    bad = rng.permutation(m)                     # two blocks write one element
    bad[-1] = bad[0]
    out_h = np.zeros(m, np.float32)
    try:
        scatter(x_h[:m], bad, out_h, 1024, grid=4, unchecked=True, interpret=True)
        sys.exit("race not reported")
    except DataRaceError as e:
        print(f"the race detector: {e.message}")
    # [race-end]
    if out_h.any():
        sys.exit("a launch with a race wrote its output")
    print("race detector: checked (race reported, output untouched)")


if __name__ == "__main__":
    main()
