"""Seeded dropout: ``out = where(rand(seed, offsets) > p, x / (1 - p), 0)``, one 1024-element
tile per block, as Triton's tutorial 04 ("low-memory dropout").

The mask is never stored: it is a function of the seed and each element's offset (Philox
counter-based random numbers, ``numba_tile.rand``, bit-identical to Triton's ``tl.rand``), so a
backward pass recomputes it from the seed alone. A safe kernel: the random ops read and write
no memory.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks the
result against NumPy, which recomputes the mask with a Philox4x32-10 of its own.
"""

import numpy as np

import numba_tile as nt

try:
    from _common import pick_backend
except ImportError:  # run as a module from the project root
    from examples._common import pick_backend


@nt.jit
def seeded_dropout(x, out: nt.Partition["BLOCK"], p, seed, BLOCK: nt.Constant):
    """out[tile] = x[tile] / (1 - p) where the element's random number exceeds p, else 0."""
    # int32 offsets, as Triton's ``pid * BLOCK + tl.arange(0, BLOCK)``: the same numbers
    offsets = nt.astype(nt.bid(0) * BLOCK + nt.arange(BLOCK), nt.int32)
    keep = nt.rand(seed, offsets) > p
    nt.store(out, nt.where(keep, nt.load_like(x, out) / (1 - p), 0.0))


def reference_rand(seed: int, offsets: np.ndarray) -> np.ndarray:
    """``rand(seed, offsets)`` for int32 offsets in NumPy: Philox4x32-10 (Salmon et al. 2011;
    Random123's constants) on counter ``(offset, 0, 0, 0)`` and key ``(seed low 32 bits, seed
    high 32 bits)``, then Triton's ``uint_to_uniform_float`` of the first word."""
    mask32 = 0xFFFFFFFF
    x0 = np.asarray(offsets).astype(np.int64) & mask32           # uint32 words held in int64
    x1 = x2 = x3 = np.zeros_like(x0)
    s = seed & 0xFFFFFFFFFFFFFFFF
    k0, k1 = s & mask32, s >> 32
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & mask32, (k1 + 0xBB67AE85) & mask32
        p0 = x0.astype(np.uint64) * np.uint64(0xD2511F53)      # exact: both below 2**32
        p1 = x2.astype(np.uint64) * np.uint64(0xCD9E8D57)
        hi0, lo0 = (p0 >> np.uint64(32)).astype(np.int64), (p0 & np.uint64(mask32)).astype(np.int64)
        hi1, lo1 = (p1 >> np.uint64(32)).astype(np.int64), (p1 & np.uint64(mask32)).astype(np.int64)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
    signed = np.where(x0 >= 2**31, x0 - 2**32, x0)
    magnitude = np.where(signed < 0, -signed - 1, signed)
    return magnitude.astype(np.float32) * np.float32(4.6566127342e-10)


def main(n: int = 1_000_003, block: int = 1024, p: float = 0.3) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    seed = int(rng.integers(2**32, 2**62))       # a 64-bit seed: both key words matter
    x_h = rng.standard_normal(n).astype(np.float32)
    x = to_device(x_h)

    def dropout(s):
        out = to_device(np.full(n, np.nan, np.float32))
        seeded_dropout(x, nt.partition(out, (block,)), p, s, block, interpret=interpret).sync()
        return to_host(out)

    got = dropout(seed)
    keep = reference_rand(seed, np.arange(n, dtype=np.int32)) > np.float32(p)
    expected = np.where(keep, x_h / np.float32(1 - p), np.float32(0))
    same_mask = np.array_equal(got != 0, keep & (x_h != 0))
    err = np.max(np.abs(got - expected))
    print(f"dropout: n={n}, tile={block}, p={p}, seed={seed}: kept {keep.mean():.4f} "
          f"(expected {1 - p}), mask {'equal' if same_mask else 'DIFFERENT'}, "
          f"max |error| = {err:.3g}")
    again = dropout(seed)
    other = dropout(seed + 1)
    if not (same_mask and np.allclose(got, expected, rtol=1e-6, atol=0)
            and np.array_equal(again, got) and not np.array_equal(other != 0, got != 0)
            and abs(keep.mean() - (1 - p)) < 0.01):
        raise SystemExit("dropout: WRONG RESULT")
    print("dropout: OK (the same seed gives the same mask, another seed another)")


if __name__ == "__main__":
    main()
