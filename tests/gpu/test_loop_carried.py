"""Masked tiles carried around loops, on the GPU and in the interpreter.

A tile merely reassigned in a loop (``t = load(...)``) takes the valid box of the load that
made it, which is what the user wrote; a loop that *combines* the carried tile with a masked
load (``t = t + load(...)``) is refused, because every step would shrink the box.
"""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError

SENTINEL = -7.0


@nt.jit
def reassign_in_loop(x, z: nt.Partition["B"], B: nt.Constant, n):
    t = nt.load_like(x, z)
    for i in range(n):
        t = nt.load(x, (i,), (B,)) * 2.0
    nt.store(z, t)


@nt.jit
def combine_in_loop(x, z: nt.Partition["B"], B: nt.Constant, n):
    t = nt.load_like(x, z)
    for i in range(n):
        t = t + nt.load(x, (i,), (B,))  # combines
    nt.store(z, t)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_tile_reassigned_in_a_loop_keeps_the_last_loads_box(tile_backend, n):
    rng = np.random.default_rng()
    length, B = 40, 16                      # the last tile (32..40) holds 8 valid elements
    x = rng.standard_normal(length).astype(np.float32)
    z = np.full(length, SENTINEL, np.float32)
    zd = tile_backend.asarray(z)
    tile_backend.run(reassign_in_loop, tile_backend.asarray(x), nt.partition(zd, B), B, n)
    got = tile_backend.to_numpy(zd)
    want = np.full(length, SENTINEL)
    for b in range(3):                        # block b stores its last loaded tile
        lo, hi = b * B, min(length, (b + 1) * B)
        if n == 0:
            want[lo:hi] = x[lo:hi]
        else:
            src = x[(n - 1) * B:(n - 1) * B + B].astype(np.float64) * 2
            k = min(hi - lo, src.size)        # valid elements of the last load
            want[lo:lo + k] = src[:k]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_tile_combined_in_a_loop_is_refused():
    x, z = np.ones(40, np.float32), np.zeros(40, np.float32)
    with pytest.raises(TileTypingError, match="combines it with a tile loaded in the loop") as e:
        combine_in_loop(x, nt.partition(z, 16), 16, 3, interpret=True)
    with open(__file__) as f:
        line = next(i for i, text in enumerate(f, 1) if text.rstrip().endswith("# combines"))
    assert (e.value.filename, e.value.lineno) == (__file__, line)   # the combining statement


def test_the_reassigning_loop_compiles_and_the_combining_one_is_refused_there_too():
    x, z = np.ones(40, np.float32), np.zeros(40, np.float32)
    assert ".entry" in reassign_in_loop.ptx(x, nt.partition(z, 16), 16, 3)
    with pytest.raises(TileTypingError, match="combines it with a tile loaded in the loop"):
        combine_in_loop.ptx(x, nt.partition(z, 16), 16, 3)
