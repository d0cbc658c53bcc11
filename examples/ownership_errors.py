"""Ownership errors as a user sees them: each broken rule, the error raised and its message.

numba_tile checks, before any work runs, that no two blocks write the same memory and that
nothing writes an input. This example breaks each rule once, in interpreter mode (so it runs
anywhere, with NumPy arrays), catches the error and prints its class and message: what is wrong,
the rule, and the user's line. It exits non-zero if an expected error was not raised.

    python examples/ownership_errors.py
"""

import sys

import numpy as np

import numba_tile as nt
from numba_tile import errors


@nt.jit
def add(x, y, z: nt.Partition["BLOCK"], BLOCK: nt.Constant):
    """z = x + y, tile by tile."""
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def add2d(x, y, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """z = x + y with 2-D tiles."""
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def normalize_in_place(x, z: nt.Partition["BLOCK"], BLOCK: nt.Constant):
    """Wrong: writes its input x, which the signature does not declare mutable."""
    t = nt.load_like(x, z)
    nt.store(x, t / 2.0)
    nt.store(z, t)


@nt.jit
def split(x, lo: nt.Partition, hi: nt.Partition):
    """lo = x, hi = 2 x: two outputs, which must be partitioned into the same grid of tiles."""
    nt.store(lo, nt.load_like(x, lo))
    nt.store(hi, nt.load_like(x, hi) * 2.0)


def store_to_input():
    """A5: a store to a parameter not declared mutable is refused when the kernel is typed."""
    x = np.arange(8, dtype=np.float32)
    normalize_in_place(x, nt.partition(np.zeros(8, np.float32), 8), 8, interpret=True)


def aliasing_transpose():
    """A1: the output x overlaps its inputs x and x.T."""
    x = np.arange(16, dtype=np.int64).reshape(4, 4)
    add2d(x, x.T, nt.partition(x, (2, 2)), 2, 2, interpret=True)


def shifted_views():
    """A2: output buf[1:] and input buf[:-1] share 9 elements."""
    buf = np.arange(10, dtype=np.float32)
    add(buf[:-1], np.ones(9, np.float32), nt.partition(buf[1:], 4), 4, interpret=True)


def stride0_output():
    """A3: a stride-0 broadcast view as output: four logical elements at one address."""
    z = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (4,), (0,), writeable=True)
    x = np.arange(4, dtype=np.float32)
    add(x, x, nt.partition(z, 4), 4, interpret=True)


def read_only_producer():
    """A4: an output its producer marked read-only.

    A non-writeable NumPy array here; ``__cuda_array_interface__`` data = (ptr, True) on the GPU.
    """
    z = np.zeros(8, np.float32)
    z.flags.writeable = False
    x = np.arange(8, dtype=np.float32)
    add(x, x, nt.partition(z, 4), 4, interpret=True)


def partition_to_read_only():
    """A partition given to the read-only parameter x."""
    x = np.arange(8, dtype=np.float32)
    add(nt.partition(x, 4), x, nt.partition(np.zeros(8, np.float32), 4), 4, interpret=True)


def missing_partition():
    """A plain array given to the mutable parameter z."""
    x = np.arange(8, dtype=np.float32)
    add(x, x, np.zeros(8, np.float32), 4, interpret=True)


def tile_shape_mismatch():
    """z is partitioned into tiles of 256 but the kernel declares Partition["BLOCK"] = 512."""
    x = np.arange(1000, dtype=np.float32)
    add(x, x, nt.partition(np.zeros(1000, np.float32), 256), 512, interpret=True)


def grid_mismatch():
    """lo has 4 tiles of 32 and hi 2 tiles of 64: no single launch grid."""
    x = np.arange(100, dtype=np.float32)
    split(x, nt.partition(np.zeros(100, np.float32), 32),
          nt.partition(np.zeros(100, np.float32), 64), interpret=True)


SCENARIOS = [
    (store_to_input, errors.StoreToReadOnlyError),
    (aliasing_transpose, errors.AliasingError),
    (shifted_views, errors.AliasingError),
    (stride0_output, errors.SelfOverlapError),
    (read_only_producer, errors.ReadOnlyProducerError),
    (partition_to_read_only, errors.UnexpectedPartitionError),
    (missing_partition, errors.MissingPartitionError),
    (tile_shape_mismatch, errors.PartitionShapeError),
    (grid_mismatch, errors.GridMismatchError),
]


def main() -> int:
    missed = []
    for scenario, expected in SCENARIOS:
        print(f"== {scenario.__name__}: {scenario.__doc__.splitlines()[0]}")
        try:
            scenario()
        except errors.TileError as e:
            print(f"{type(e).__name__}: {e}\n")
            if type(e) is not expected:
                missed.append(f"{scenario.__name__}: expected {expected.__name__}, "
                              f"got {type(e).__name__}")
        else:
            print(f"NOT RAISED (expected {expected.__name__})\n")
            missed.append(f"{scenario.__name__}: {expected.__name__} not raised")
    if missed:
        print("ownership_errors: FAILED\n  " + "\n  ".join(missed))
        return 1
    print(f"ownership_errors: OK ({len(SCENARIOS)} errors raised as expected)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
