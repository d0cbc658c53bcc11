"""Shape ops (reshape, expand_dims, broadcast_to, permute, transpose) against NumPy, on the
GPU and in the interpreter, including case E1 written with tile broadcasting."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError


@nt.jit
def e1_kernel(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    row = nt.load(x, (nt.bid(1),), (BN,))                       # x[j] for this column tile
    nt.store(z, nt.broadcast_to(nt.expand_dims(row, 0), (BM, BN)) + 1.0)


def test_case_e1_with_tile_broadcasting(tile_backend):
    """E1: z = x[None, :] + ones((10, 6)) with (4, 4) tiles leaves the guard values alone."""
    buf = np.full(60 + 64, -1.0, np.float32)
    dev = tile_backend.asarray(buf)
    z = dev[:60].reshape(10, 6)
    x = tile_backend.asarray(np.arange(6, dtype=np.float32))
    tile_backend.run(e1_kernel, x, nt.partition(z, (4, 4)), 4, 4)
    got = tile_backend.to_numpy(dev)
    np.testing.assert_array_equal(got[:60].reshape(10, 6), np.arange(6)[None, :] + np.ones((10, 6)))
    np.testing.assert_array_equal(got[60:], -1.0)


@nt.jit
def transpose_kernel(x, z: nt.Partition[("B", "B")], B: nt.Constant):
    t = nt.load(x, (nt.bid(1), nt.bid(0)), (B, B))
    nt.store(z, nt.transpose(t))


@pytest.mark.parametrize("b", [8, 32])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int64], ids=lambda d: np.dtype(d).name)
def test_tiled_transpose(tile_backend, b, dt):
    rng = np.random.default_rng()
    xh = (rng.standard_normal((70, 50)) * 100).astype(dt)
    z = tile_backend.asarray(np.zeros((50, 70), dt))
    tile_backend.run(transpose_kernel, tile_backend.asarray(xh), nt.partition(z, (b, b)), b)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), xh.T)


@nt.jit
def reshape_kernel(x, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    flat = nt.load(x, (nt.bid(0),), (R * C,), padding=0)
    nt.store(z, nt.reshape(flat, (R, C)) * 2.0)


@pytest.mark.parametrize("r,c", [(4, 64), (16, 16), (1, 256), (64, 4)])
def test_reshape_rows(tile_backend, r, c):
    rng = np.random.default_rng()
    rows = 7 * r
    xh = rng.standard_normal(rows * c).astype(np.float32)
    z = tile_backend.asarray(np.zeros((rows, c), np.float32))
    tile_backend.run(reshape_kernel, tile_backend.asarray(xh), nt.partition(z, (r, c)), r, c)
    np.testing.assert_allclose(tile_backend.to_numpy(z), 2.0 * xh.reshape(rows, c), rtol=1e-6)


@nt.jit
def permute_kernel(x, z: nt.Partition[("A", "B", "C")], A: nt.Constant, B: nt.Constant,
                   C: nt.Constant):
    t = nt.load(x, (0, 0, 0), (B, C, A))
    nt.store(z, nt.permute(t, (2, 0, 1)))


def test_permute_3d(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal((4, 8, 2)).astype(np.float32)
    z = tile_backend.asarray(np.zeros((2, 4, 8), np.float32))
    tile_backend.run(permute_kernel, tile_backend.asarray(xh), nt.partition(z, (2, 4, 8)), 2, 4, 8)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.transpose(xh, (2, 0, 1)))


@nt.jit
def outer_kernel(a, b, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    col = nt.expand_dims(nt.load(a, (nt.bid(0),), (BM,)), 1)      # (BM, 1)
    row = nt.expand_dims(nt.load(b, (nt.bid(1),), (BN,)), 0)      # (1, BN)
    nt.store(z, nt.broadcast_to(col, (BM, BN)) * nt.broadcast_to(row, (BM, BN)))


def test_outer_product_by_broadcasting(tile_backend):
    rng = np.random.default_rng()
    ah = rng.standard_normal(45).astype(np.float32)
    bh = rng.standard_normal(70).astype(np.float32)
    z = tile_backend.asarray(np.zeros((45, 70), np.float32))
    tile_backend.run(outer_kernel, tile_backend.asarray(ah), tile_backend.asarray(bh),
                     nt.partition(z, (16, 32)), 16, 32)
    np.testing.assert_allclose(tile_backend.to_numpy(z), np.outer(ah, bh), rtol=1e-6)


@nt.jit
def bad_broadcast(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.broadcast_to(nt.load(x, (0,), (B,)), (2 * B,)))


@nt.jit
def bad_reshape(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.reshape(nt.load(x, (0,), (B,)), (2 * B,)))


@pytest.mark.parametrize("kernel,fragment", [(bad_broadcast, "broadcasts to"),
                                             (bad_reshape, "elements")])
def test_shape_errors(kernel, fragment):
    x = np.ones(16, np.float32)
    with pytest.raises(TileTypingError, match=fragment):
        kernel(x, nt.partition(np.zeros(16, np.float32), 8), 8, interpret=True)
