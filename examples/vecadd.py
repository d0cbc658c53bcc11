"""Vector add: z = x + y, one 1024-element tile per block.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and
checks the result against NumPy.
"""

import numpy as np

import numba_tile as nt

try:
    from _common import pick_backend
except ImportError:  # run as a module from the project root
    from examples._common import pick_backend


@nt.jit
def vecadd(x, y, z: nt.Partition["BLOCK"], BLOCK: nt.Constant):
    """z[tile] = x[tile] + y[tile] for the block's own tile of z."""
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


def main(n: int = 1_000_003, block: int = 1024) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    x_h = rng.standard_normal(n).astype(np.float32)
    y_h = rng.standard_normal(n).astype(np.float32)
    x, y = to_device(x_h), to_device(y_h)
    z = to_device(np.full(n, np.nan, np.float32))
    vecadd(x, y, nt.partition(z, (block,)), block, interpret=interpret).sync()
    got = to_host(z)
    expected = x_h.astype(np.float64) + y_h.astype(np.float64)
    err = np.max(np.abs(got - expected))
    print(f"vecadd: n={n}, tile={block}, max |error| = {err:.3g}")
    if not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
        raise SystemExit("vecadd: WRONG RESULT")
    print("vecadd: OK")


if __name__ == "__main__":
    main()
