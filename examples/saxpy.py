"""SAXPY on 2-D arrays: out = alpha * x + y, with (32, 64) tiles and a runtime scalar.

Runs on the GPU when there is one, otherwise in the interpreter (and says so); checks
float32 and bfloat16-in/float32-out variants against NumPy.
"""

import numpy as np

import numba_tile as nt

try:
    from _common import pick_backend
except ImportError:
    from examples._common import pick_backend


@nt.jit
def saxpy(alpha, x, y, out: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """out[tile] = alpha * x[tile] + y[tile], computed in float32."""
    xt = nt.astype(nt.load_like(x, out), nt.float32)
    yt = nt.astype(nt.load_like(y, out), nt.float32)
    nt.store(out, alpha * xt + yt)


def main(shape=(1000, 777), bm: int = 32, bn: int = 64) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    alpha = float(rng.uniform(0.5, 2.0))
    x_h = rng.standard_normal(shape).astype(np.float32)
    y_h = rng.standard_normal(shape).astype(np.float32)
    out = to_device(np.full(shape, np.nan, np.float32))
    saxpy(alpha, to_device(x_h), to_device(y_h), nt.partition(out, (bm, bn)), bm, bn,
          interpret=interpret).sync()
    expected = alpha * x_h.astype(np.float64) + y_h.astype(np.float64)
    got = to_host(out)
    err = np.max(np.abs(got - expected))
    print(f"saxpy: shape={shape}, tile=({bm}, {bn}), alpha={alpha:.4f}, max |error| = {err:.3g}")
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
        raise SystemExit("saxpy: WRONG RESULT")
    print("saxpy: OK")


if __name__ == "__main__":
    main()
