"""nt.load_at: tiles at element coordinates of read-only tensors, on both backends, against
NumPy slicing: any offset (aligned or not to the 16-byte vectors, negative, past the end),
1-3 dimensions, contiguous and strided arrays, several dtypes; and its refusals."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import TileTypingError


def _window(x, origin, shape, pad):
    """x[origin : origin + shape] with ``pad`` outside x, by index arithmetic."""
    out = np.full(shape, pad, dtype=np.float64)
    idx = np.indices(shape).reshape(len(shape), -1).T
    for i in idx:
        src = tuple(int(o) + int(j) for o, j in zip(origin, i))
        if all(0 <= s < n for s, n in zip(src, x.shape)):
            out[tuple(i)] = x[src]
    return out


@nt.jit
def window_2d(x, z: nt.Partition["BM", "BN"], r, c, BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.astype(nt.load_at(x, (r, c), (BM, BN), padding=-2), nt.float32))


@nt.jit
def windows_1d(x, z: nt.Partition["B"], step, B: nt.Constant):
    # block b reads B elements starting at b * step - 3: overlapping, unaligned windows
    nt.store(z, nt.load_at(x, nt.bid(0) * step - 3, (B,), padding=0.5) * 2.0)


@nt.jit
def window_3d(x, z: nt.Partition["A", "BM", "BN"], o0, o1, o2, A: nt.Constant,
              BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load_at(x, (o0, o1, o2), (A, BM, BN), padding=0))


OFFSETS = [(0, 0), (3, 5), (2, 8), (-4, -7), (-20, 3), (30, 290), (36, 303), (40, 0), (0, 400),
           (-100, -100)]


@pytest.mark.parametrize("dt", [np.float32, np.float16, BFLOAT16_NP, np.int32, np.int8],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cols", [304, 301])
def test_2d_windows_at_any_offset(tile_backend, dt, cols):
    rng = np.random.default_rng()
    host = (rng.standard_normal((37, cols)) * 20).astype(dt)
    x = tile_backend.asarray(host)
    for r, c in OFFSETS + [tuple(rng.integers(-40, 320, 2))]:
        out = tile_backend.asarray(np.zeros((16, 64), np.float32))
        tile_backend.run(window_2d, x, nt.partition(out, (16, 64)), int(r), int(c), 16, 64)
        want = _window(host.astype(np.float64), (r, c), (16, 64), -2.0)
        np.testing.assert_array_equal(tile_backend.to_numpy(out).astype(np.float64),
                                      want.astype(np.float32), err_msg=f"offset {(r, c)}")


def test_strided_view(tile_backend):
    rng = np.random.default_rng()
    host = rng.standard_normal((64, 256)).astype(np.float32)
    x = tile_backend.asarray(host)[::3, 1::2]          # no 16-byte accesses: element loads
    view = host[::3, 1::2]
    for r, c in ((0, 0), (5, 9), (-3, 60), (20, 100)):
        out = tile_backend.asarray(np.zeros((16, 64), np.float32))
        tile_backend.run(window_2d, x, nt.partition(out, (16, 64)), r, c, 16, 64)
        np.testing.assert_array_equal(tile_backend.to_numpy(out),
                                      _window(view, (r, c), (16, 64), -2.0).astype(np.float32))


def test_overlapping_1d_windows(tile_backend):
    rng = np.random.default_rng()
    n, step, b = 5003, 77, 128
    host = rng.standard_normal(n).astype(np.float32)
    blocks = 70
    out = tile_backend.asarray(np.zeros(blocks * b, np.float32))
    tile_backend.run(windows_1d, tile_backend.asarray(host), nt.partition(out, b), step, b)
    got = tile_backend.to_numpy(out).reshape(blocks, b)
    for k in range(blocks):
        np.testing.assert_array_equal(
            got[k], (_window(host, (k * step - 3,), (b,), 0.5) * 2.0).astype(np.float32))


def test_3d(tile_backend):
    rng = np.random.default_rng()
    host = rng.integers(-1000, 1000, (5, 40, 72)).astype(np.int32)
    x = tile_backend.asarray(host)
    for o in ((0, 0, 0), (1, 3, 4), (-1, 30, 70), (3, -5, 9)):
        out = tile_backend.asarray(np.zeros((4, 16, 32), np.int32))
        tile_backend.run(window_3d, x, nt.partition(out, (4, 16, 32)), *o, 4, 16, 32)
        np.testing.assert_array_equal(tile_backend.to_numpy(out),
                                      _window(host, o, (4, 16, 32), 0).astype(np.int32))


@nt.jit
def _from_partition(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_at(z, (3,), (B,), padding=0))


@nt.jit
def _no_padding(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_at(x, (3,), (B,)))


@nt.jit
def _wrong_rank(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_at(x, (3, 4), (B,), padding=0))


@nt.jit
def _float_offset(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_at(x, (1.5,), (B,), padding=0))


@pytest.mark.parametrize("kernel, what", [(_from_partition, "partition"),
                                          (_no_padding, "padding"),
                                          (_wrong_rank, "offset"),
                                          (_float_offset, "offset")])
def test_refusals_name_the_argument(kernel, what):
    x = np.zeros(300, np.float32)
    with pytest.raises(TileTypingError, match=what):
        kernel(x, nt.partition(np.zeros(256, np.float32), 128), 128, interpret=True)
    with pytest.raises(TileTypingError, match=what):
        kernel.ptx(x, nt.partition(np.zeros(256, np.float32), 128), 128, cc=(9, 0))


def test_vector_and_element_paths_in_the_ptx():
    """A vec16 tensor gets both the 16-byte path (aligned offsets) and the element path."""
    x = np.zeros((37, 304), np.float32)
    p = window_2d.ptx(x, nt.partition(np.zeros((16, 64), np.float32), (16, 64)), 3, 5, 16, 64,
                      cc=(9, 0))
    assert "ld.global.nc.v4" in p and "ld.global.nc.f32" in p and ".local" not in p
