"""A histogram with atomics: an *unchecked* kernel.

Atomics let many blocks update one array, which numba_tile's ownership checks cannot
prove race-free, so the kernel is marked ``@nt.jit(unchecked=True)`` and every launch says
``unchecked=True``. The launch-time argument checks (aliasing, read-only producers) still
apply. Runs on the GPU when there is one, otherwise in the interpreter (and says so), and
checks the counts against NumPy.
"""

import numpy as np

import numba_tile as nt

try:
    from _common import pick_backend
except ImportError:
    from examples._common import pick_backend


@nt.jit(unchecked=True)
def histogram(x, hist: nt.Mutable, lo, hi, B: nt.Constant, NBINS: nt.Constant):
    """hist[k] += number of x in [lo + k * w, lo + (k + 1) * w), w = (hi - lo) / NBINS."""
    t = nt.load(x, (nt.bid(0),), (B,), padding=float("nan"))
    scaled = (t - lo) * (NBINS / (hi - lo))
    bins = nt.astype(nt.floor(scaled), nt.int32)
    inside = (scaled >= 0.0) & (scaled < NBINS)          # NaN padding is never inside
    nt.atomic_add(hist, bins, 1, mask=inside)


def main(n: int = 2_000_003, nbins: int = 64, block: int = 1024) -> None:
    interpret, to_device, to_host = pick_backend()
    if interpret:
        n = n // 20 + 1          # the interpreter applies atomics one by one
    rng = np.random.default_rng()
    x_h = rng.normal(0.0, 1.0, n).astype(np.float32)
    lo, hi = -3.0, 3.0
    hist = to_device(np.zeros(nbins, np.int32))
    histogram(to_device(x_h), hist, lo, hi, block, nbins, grid=-(-n // block),
              interpret=interpret, unchecked=True).sync()
    # reference with the kernel's float32 arithmetic for the bin of each value
    scaled = (x_h - np.float32(lo)) * np.float32(nbins / (hi - lo))
    keep = (scaled >= 0) & (scaled < nbins)
    expected = np.bincount(np.floor(scaled[keep]).astype(np.int64), minlength=nbins)
    got = to_host(hist)
    print(f"histogram: {n} values into {nbins} bins, {int(got.sum())} counted, "
          f"max |count error| = {int(np.abs(got - expected).max())}")
    if not np.array_equal(got, expected):
        raise SystemExit("histogram: WRONG RESULT")
    print("histogram: OK")


if __name__ == "__main__":
    main()
