"""Partitions of different rank whose tile grids agree but for extent-1 axes ((M,) beside
(M, 1): a per-row output next to its rows) launch together, on both backends; grids
that differ otherwise, or that are walked in different orders, are refused."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import GridMismatchError


@nt.jit
def rows_and_sums(x, y: nt.Partition[(1, "B")], r: nt.Partition[(1,)], B: nt.Constant):
    t = nt.load_like(x, y, padding=0)
    nt.store(y, t * 2.0)
    nt.store(r, nt.reshape(nt.sum(t, 1), (1,)))


@nt.jit
def three_d(x, y: nt.Partition[(1, 1, "B")], r: nt.Partition[(1, 1)], B: nt.Constant):
    t = nt.load_like(x, y, padding=0)
    nt.store(y, t + 1.0)
    nt.store(r, nt.reshape(nt.max(t, 2), (1, 1)))


def test_rows_beside_a_vector_of_their_sums(tile_backend):
    rng = np.random.default_rng()
    m, n = 37, 200
    xh = rng.standard_normal((m, n)).astype(np.float32)
    y = tile_backend.asarray(np.zeros((m, n), np.float32))
    r = tile_backend.asarray(np.zeros(m, np.float32))
    tile_backend.run(rows_and_sums, tile_backend.asarray(xh), nt.partition(y, (1, 256)),
                     nt.partition(r, (1,)), 256)
    np.testing.assert_allclose(tile_backend.to_numpy(y), 2 * xh, rtol=1e-6)
    np.testing.assert_allclose(tile_backend.to_numpy(r), xh.astype(np.float64).sum(1),
                               rtol=1e-4, atol=1e-4)


def test_a_3d_grid_beside_a_2d_one(tile_backend):
    rng = np.random.default_rng()
    a, b, n = 3, 5, 100
    xh = rng.standard_normal((a, b, n)).astype(np.float32)
    y = tile_backend.asarray(np.zeros((a, b, n), np.float32))
    r = tile_backend.asarray(np.zeros((a, b), np.float32))
    tile_backend.run(three_d, tile_backend.asarray(xh), nt.partition(y, (1, 1, 128)),
                     nt.partition(r, (1, 1)), 128)
    np.testing.assert_allclose(tile_backend.to_numpy(y), xh + 1, rtol=1e-6)
    np.testing.assert_array_equal(tile_backend.to_numpy(r), xh.max(2))


def test_grids_that_differ_are_refused():
    x = np.zeros((8, 256), np.float32)
    with pytest.raises(GridMismatchError, match="'r'"):
        rows_and_sums(x, nt.partition(np.zeros((8, 256), np.float32), (1, 256)),
                      nt.partition(np.zeros(4, np.float32), (1,)), 256, interpret=True)


def test_a_grouped_order_or_another_shape_of_grid_is_refused():
    x = np.zeros((8, 256), np.float32)
    y = nt.partition(np.zeros((8, 256), np.float32), (1, 128))       # grid (8, 2)
    with pytest.raises(GridMismatchError):                            # (16,) is not (8, 2)
        rows_and_sums(x, y, nt.partition(np.zeros(16, np.float32), (1,)), 128,
                      interpret=True)
    g = nt.partition(np.zeros((8, 256), np.float32), (1, 256), order=nt.grouped(2))
    with pytest.raises(GridMismatchError):
        rows_and_sums(x, g, nt.partition(np.zeros(8, np.float32), (1,)), 256, interpret=True)
