"""Tutorial 13: autotuning, ``C += A @ B`` over several tile configurations.

``nt.autotune`` compiles every configuration for the call's arguments, prunes those that do
not compile, times the others on scratch copies of the output (so an in-place kernel touches
your data exactly once per call), remembers the fastest per tuning key, and launches it.
Runs on the GPU when there is one (CuPy arrays), otherwise in the numba_tile interpreter
(NumPy arrays; the timings are then the interpreter's), and says which. Integer inputs make
the result exact: it must equal NumPy's.
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


# [configs]
CONFIGS = [
    nt.Config({"BM": 64, "BN": 64, "BK": 64}, num_warps=4, num_stages=3),
    nt.Config({"BM": 64, "BN": 128, "BK": 32}, num_warps=4, num_stages=4),
    nt.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=8, num_stages=3,
              partitions={"c": {"order": nt.grouped(8)}}),       # how c is partitioned too
    nt.Config({"BM": 256, "BN": 256, "BK": 64}, num_warps=1),    # too big: pruned
]
# [configs-end]


@nt.autotune(configs=CONFIGS, warmup=1, reps=3)
@nt.jit
def gemm_acc(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
    """c += a @ b, in place, float32 accumulation."""
    acc = nt.load(c)                                # the block's own tile, float32
    for k in range(nt.num_tiles(a, 1, BK)):
        acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=0),
                     nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0), acc)
    nt.store(c, acc)


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    scale = 1 if interpret else 16
    m, n = (int(v) for v in rng.integers(100, 250, 2) * scale)
    k = 8 * int(rng.integers(8, 20)) * scale
    a_h = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b_h = rng.integers(-3, 4, (k, n)).astype(np.float16)
    c0 = rng.integers(-100, 100, (m, n)).astype(np.float32)
    a, b, c = to_device(a_h), to_device(b_h), to_device(c0.copy())
    exact = a_h.astype(np.float64) @ b_h.astype(np.float64)

    gemm_acc(a, b, c, interpret=interpret).sync()   # c: the raw array; tunes, then runs once
    check(f"first call, tuned (M={m} N={n} K={k})", to_host(c), c0 + exact, 0, 0)
    trials = gemm_acc.trials.get(gemm_acc.tuning_key((a, b, c), {}), [])
    for t in trials:
        result = f"{t.ms:.3f} ms" if t.ms is not None else f"pruned: {t.error}"
        print(f"  {t.config.describe()}: {result}")
    if not trials:
        print("  (the choice for these shapes was read from the disk cache: no trials)")
    with nt.launch_defaults(interpret=interpret):   # best_config takes no interpret=
        print(f"chosen: {gemm_acc.best_config(a, b, c).describe()}")

    gemm_acc(a, b, c, interpret=interpret).sync()   # same key: no tuning, runs once
    check("second call, remembered", to_host(c), c0 + 2 * exact, 0, 0)


if __name__ == "__main__":
    main()
