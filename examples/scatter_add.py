"""Scatter-add with atomics: out[index[i]] += values[i], an *unchecked* kernel.

Many values may land on one output element, from different blocks: only atomics make that
correct, so the kernel is marked unchecked and launched with ``unchecked=True``. Runs on
the GPU when there is one, otherwise in the interpreter (and says so), and checks the sums
against NumPy's ``np.add.at`` (float32 sums in another order: compared with a tolerance).
"""

import numpy as np

import numba_tile as nt

try:
    from _common import pick_backend
except ImportError:
    from examples._common import pick_backend


@nt.jit(unchecked=True)
def scatter_add(index, values, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    idx = nt.load(index, (i,), (B,), padding=-1)        # -1: out of bounds, skipped
    v = nt.load(values, (i,), (B,))
    nt.atomic_add(out, idx, v)


def main(n: int = 1_000_000, m: int = 5000, block: int = 512) -> None:
    interpret, to_device, to_host = pick_backend()
    if interpret:
        n //= 20                 # the interpreter applies atomics one by one
    rng = np.random.default_rng()
    index_h = rng.integers(0, m, n).astype(np.int32)
    values_h = rng.standard_normal(n).astype(np.float32)
    out = to_device(np.zeros(m, np.float32))
    scatter_add(to_device(index_h), to_device(values_h), out, block, grid=-(-n // block),
                interpret=interpret, unchecked=True).sync()
    expected = np.zeros(m)
    np.add.at(expected, index_h, values_h.astype(np.float64))
    got = to_host(out)
    err = np.max(np.abs(got - expected))
    print(f"scatter_add: {n} values into {m} slots, max |error| = {err:.3g}")
    if not np.allclose(got, expected, rtol=1e-4, atol=1e-3):
        raise SystemExit("scatter_add: WRONG RESULT")
    print("scatter_add: OK")


if __name__ == "__main__":
    main()
