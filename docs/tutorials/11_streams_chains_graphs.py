"""Tutorial 11: streams, chains and CUDA graphs.

Three kernels in a row, ``y = a x + b`` then ``z = x + y``: as a chain of launches with one
``sync()`` at the end (works in the interpreter too); on the GPU, also on explicit streams
(a launch on another stream that reads ``y`` waits for the one that writes it), under
``nt.launch_defaults``, and captured once into a CUDA graph and replayed on new inputs.
Runs on the GPU when there is one (CuPy arrays), otherwise in the numba_tile interpreter
(NumPy arrays), and says which; checks against NumPy and exits nonzero on a mismatch.
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
def axpb(x, y: nt.Partition["B"], a, b, B: nt.Constant):
    nt.store(y, a * nt.load_like(x, y) + b)


@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


def gpu_streams_and_graph(x_h, to_device, to_host):
    """Streams, launch defaults and a CUDA graph (GPU only)."""
    n = x_h.size
    try:
        import cupy
        s1, s2 = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
        upload = lambda dev, host: dev.set(host)                        # noqa: E731
    except ImportError:
        from numba import cuda
        s1, s2 = cuda.stream(), cuda.stream()
        upload = lambda dev, host: dev.copy_to_device(host)             # noqa: E731
    x, (y, z) = to_device(x_h), (to_device(np.zeros(n, np.float32)) for _ in range(2))
    # [streams]
    axpb(x, nt.partition(y, 1024), 2.0, 1.0, 1024, stream=s1)       # writes y on s1
    add(x, y, nt.partition(z, 1024), 1024, stream=s2).sync()        # s2 waits for s1's launch
    check("two streams", to_host(z), 3.0 * x_h.astype(np.float64) + 1.0, 1e-6, 1e-6)

    with nt.launch_defaults(stream=s1):                             # launches without stream=
        axpb(x, nt.partition(y, 1024), -1.0, 0.5, 1024)
        add(x, y, nt.partition(z, 1024), 1024).sync()
    # [streams-end]
    check("launch_defaults", to_host(z), np.full(n, 0.5), 1e-6, 1e-6)
    # [graph]
    g = nt.Graph()
    with g.capture():                   # recorded on g.stream, checked as any launch
        axpb(x, nt.partition(y, 1024), 3.0, -2.0, 1024)
        add(x, y, nt.partition(z, 1024), 1024)
    for step in range(3):               # new input values, same arrays, same graph
        x_new = np.random.default_rng().standard_normal(n).astype(np.float32)
        upload(x, x_new)
        g.replay().sync()
        check(f"graph replay {step}", to_host(z), 4.0 * x_new.astype(np.float64) - 2.0,
              1e-6, 1e-6)
    # [graph-end]


def main():
    interpret, to_device, to_host = backend()
    rng = np.random.default_rng()
    n = int(rng.integers(3000, 9000)) * (1 if interpret else 300)
    x_h = rng.standard_normal(n).astype(np.float32)
    x, (y, z, w) = to_device(x_h), (to_device(np.zeros(n, np.float32)) for _ in range(3))

    # [chain]
    (axpb(x, nt.partition(y, 1024), 2.0, 1.0, 1024, interpret=interpret)
     .then(add, x, y, nt.partition(z, 512), 512)                    # same stream, no host wait
     .then(add, y, z, nt.partition(w, 256), 256)
     .sync())                                                       # one wait for all three
    # [chain-end]
    y64 = 2.0 * x_h.astype(np.float64) + 1.0
    check(f"chain of three launches ({n} elements)", to_host(w), y64 + (x_h + y64), 1e-6, 1e-6)

    if interpret:
        with nt.launch_defaults(interpret=True):                    # no interpret= per call
            add(x, y, nt.partition(z, 1024), 1024).sync()
        check("launch_defaults(interpret=True)", to_host(z), x_h + y64, 1e-6, 1e-6)
        try:
            with nt.Graph().capture():
                pass
        except nt.errors.CaptureError as e:
            print(f"CUDA graphs need a GPU: {type(e).__name__}: {e.message}")
        print("streams and CUDA graphs: skipped (they need a CUDA GPU)")
    else:
        gpu_streams_and_graph(x_h, to_device, to_host)


if __name__ == "__main__":
    main()
