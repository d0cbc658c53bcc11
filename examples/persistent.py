"""A persistent kernel: a fixed number of blocks (one per multiprocessor on the GPU) walk
over all the tiles of the output, through indices minted by ``tiles(z)``.

Each index carries the brand of ``z``: a store to ``z`` accepts only indices of ``z``,
and ``tiles(z)`` hands every block a disjoint set of tiles, so the kernel is race-free by
construction. Runs on the GPU when there is one, otherwise in the interpreter (and says
so), and checks the result against NumPy.
"""

import numpy as np

import numba_tile as nt

try:
    from _common import pick_backend
except ImportError:
    from examples._common import pick_backend


@nt.jit
def persistent_axpby(a, x, b, y, z: nt.Partition[("BM", "BN")], BM: nt.Constant,
                     BN: nt.Constant):
    """z = a * x + b * y over (BM, BN) tiles, each block taking every num_blocks-th tile."""
    for idx in nt.tiles(z):
        t = a * nt.load_like(x, z, index=idx) + b * nt.load_like(y, z, index=idx)
        nt.store(z, t, idx)


def main(shape=(3000, 1000), bm: int = 32, bn: int = 128) -> None:
    interpret, to_device, to_host = pick_backend()
    blocks = 132
    if not interpret:
        from numba import cuda
        blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT
    rng = np.random.default_rng()
    a, b = float(rng.uniform(-2, 2)), float(rng.uniform(-2, 2))
    x_h = rng.standard_normal(shape).astype(np.float32)
    y_h = rng.standard_normal(shape).astype(np.float32)
    z = to_device(np.full(shape, np.nan, np.float32))
    persistent_axpby(a, to_device(x_h), b, to_device(y_h), nt.partition(z, (bm, bn), blocks=blocks),
                     bm, bn, interpret=interpret).sync()
    expected = a * x_h.astype(np.float64) + b * y_h.astype(np.float64)
    got = to_host(z)
    tiles = -(-shape[0] // bm) * -(-shape[1] // bn)
    err = np.max(np.abs(got - expected))
    print(f"persistent: {tiles} tiles over {blocks} blocks, max |error| = {err:.3g}")
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
        raise SystemExit("persistent: WRONG RESULT")
    print("persistent: OK")


if __name__ == "__main__":
    main()
