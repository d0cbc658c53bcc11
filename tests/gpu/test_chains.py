"""Async chains (cuTile Rust's ``.then()``): kernels queued one after another on one stream,
each reading what the previous one wrote, one ``sync()`` at the end; on the GPU and in the
interpreter."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError


@nt.jit
def axpb(x, z: nt.Partition["B"], a, b, B: nt.Constant):
    nt.store(z, a * nt.load_like(x, z) + b)


@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


def test_a_chain_of_three_kernels(tile_backend):
    rng = np.random.default_rng()
    n = 5000
    xh = rng.integers(-100, 100, n).astype(np.float32)
    x = tile_backend.asarray(xh)
    y = tile_backend.asarray(np.full(n, np.nan, np.float32))
    z = tile_backend.asarray(np.full(n, np.nan, np.float32))
    w = tile_backend.asarray(np.full(n, np.nan, np.float32))
    first = axpb(x, nt.partition(y, 1024), 3.0, 1.0, 1024, interpret=tile_backend.interpret)
    last = (first
            .then(axpb, y, nt.partition(z, 512), -2.0, 0.5, 512)
            .then(add, y, z, nt.partition(w, 256), 256))
    out = last.sync()
    assert out[-2] is w
    y64 = 3.0 * xh.astype(np.float64) + 1.0
    np.testing.assert_array_equal(tile_backend.to_numpy(w).astype(np.float64),
                                  y64 + (-2.0 * y64 + 0.5))


def test_then_keeps_the_stream(tile_backend):
    x = tile_backend.asarray(np.ones(64, np.float32))
    y = tile_backend.asarray(np.zeros(64, np.float32))
    h = axpb(x, nt.partition(y, 64), 1.0, 0.0, 64, interpret=tile_backend.interpret)
    with pytest.raises(TileArgumentError, match="leave stream= out"):
        h.then(axpb, x, nt.partition(tile_backend.asarray(np.zeros(64, np.float32)), 64), 1.0,
               0.0, 64, stream=None)
    h.sync()


def test_then_refuses_what_is_not_a_kernel(tile_backend):
    x = tile_backend.asarray(np.ones(256, np.float32))
    y = tile_backend.asarray(np.zeros(256, np.float32))
    h = axpb(x, nt.partition(y, 256), 1.0, 0.0, 256, interpret=tile_backend.interpret)
    with pytest.raises(TileArgumentError, match="expected a numba_tile kernel.*got builtin_function_or_method"):
        h.then(print, 1)
    with pytest.raises(TileArgumentError, match="leave stream= out"):
        h.then(axpb, x, nt.partition(y, 256), 1.0, 0.0, 256, stream=0)
    h.sync()
