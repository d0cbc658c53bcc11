"""Tutorial 15: debugging, with the interpreter, ``kernel.ptx`` and the errors.

A kernel with a bug (zero padding before a maximum), found by running it in the interpreter
with ``print`` and fixed; the fixed kernel's PTX and resources, inspected without a GPU; and
three mistakes whose errors name the kernel, the argument and the line. Runs on the CPU
(the interpreter and the compiler need no GPU); checks the fixed kernel against NumPy in
float64 and exits nonzero on a mismatch or an error that is not raised as described.
"""

import sys

import numpy as np

import numba_tile as nt
from numba_tile import errors


def check(name, got, want, rtol, atol):
    """Exit with a message unless ``got`` matches the float64 ``want``."""
    err = np.max(np.abs(np.asarray(got, np.float64) - want))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        sys.exit(f"{name}: WRONG RESULT, max |error| = {err:.3g}")
    print(f"{name}: checked against NumPy (float64), max |error| = {err:.3g}")


@nt.jit
def scale_rows_buggy(x, y: nt.Partition[(1, "BN")], BN: nt.Constant):
    """y = x / max(|x|) per row. The bug: zeros padded past the row's end enter the max."""
    t = nt.load_like(x, y, padding=0)
    m = nt.max(t, axis=1, keepdims=True)                   # should be the max of |x|
    print("row", nt.bid(0), "max", nt.item(m))             # the interpreter prints per block
    nt.store(y, t / m)


@nt.jit
def scale_rows(x, y: nt.Partition[(1, "BN")], BN: nt.Constant):
    """y = x / max(|x|) per row; the masked load keeps the padding out of the max."""
    t = nt.load_like(x, y)
    nt.store(y, t / nt.max(nt.abs(t), axis=1, keepdims=True))


@nt.jit
def broken_shapes(x, y: nt.Partition[(1, "BN")], BN: nt.Constant):
    nt.store(y, nt.load_like(x, y) + nt.load(x, (0,), (BN,)))      # mistake 1: rank


@nt.jit
def broken_store(x, y: nt.Partition[(1, "BN")], BN: nt.Constant):
    nt.store(x, nt.load_like(x, y))                                 # mistake 2: read-only


def expect(error_class, launch, line_text):
    """Run ``launch``; it must raise ``error_class`` pointing at the line with ``line_text``."""
    try:
        launch()
    except error_class as e:
        print(f"\n{type(e).__name__}: {e}")
        with open(__file__) as f:
            if line_text not in f.read().splitlines()[e.lineno - 1]:
                sys.exit(f"{type(e).__name__} points at line {e.lineno}, not at {line_text!r}")
        return
    sys.exit(f"{error_class.__name__} not raised")


def main():
    rng = np.random.default_rng()
    x = rng.standard_normal((4, 500)).astype(np.float32)
    x[2] = -np.abs(x[2])                        # a row of negative numbers: max is below 0
    y = np.zeros_like(x)
    part = nt.partition(y, (1, 512))

    print("1. the interpreter, with print, on the buggy kernel:")
    scale_rows_buggy(x, part, 512, interpret=True)
    print(f"   row 2 of y starts {y[2, :3]}: the padding's 0.0 was row 2's maximum")
    scale_rows(x, part, 512, interpret=True)
    check("scale_rows, fixed", y, x / np.abs(x.astype(np.float64)).max(1, keepdims=True),
          rtol=1e-6, atol=0)

    print("\n2. the PTX, without a GPU:")
    for cc in ((8, 0), (9, 0)):
        ck = scale_rows.compiled(x, part, 512, cc=cc)      # what .ptx(...) returns, and more
        print(f"   sm_{cc[0]}{cc[1]}: {len(ck.ptx.splitlines())} lines, {ck.num_threads} "
              f"threads, {ck.shared_bytes} bytes of shared memory, 16-byte loads: "
              f"{'ld.global.nc.v4' in ck.ptx}, local-memory spills: {'.local' in ck.ptx}")
    if ".local" in scale_rows.ptx(x, part, 512):
        sys.exit("scale_rows spills to local memory")

    print("\n3. the errors:")
    expect(errors.TileTypingError,
           lambda: broken_shapes(x, part, 512, interpret=True), "mistake 1")
    expect(errors.StoreToReadOnlyError,
           lambda: broken_store(x, part, 512, interpret=True), "mistake 2")
    expect(errors.MissingPartitionError,
           lambda: scale_rows(x, y, 512, interpret=True), "mistake 3")    # mistake 3: no partition
    print("\nerrors: checked (each raised, at the line of the mistake)")


if __name__ == "__main__":
    main()
