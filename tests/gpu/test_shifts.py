"""``<<`` and ``>>`` on integer tiles: NumPy's results for every shift
count, negative and too wide included (0 for ``<<``, the sign for ``>>``); on the GPU and in
the interpreter against NumPy."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError


@nt.jit
def shifts(x, s, lo: nt.Partition["B"], hi: nt.Partition["B"], B: nt.Constant):
    a = nt.load_like(x, lo)
    b = nt.load_like(s, lo)
    nt.store(lo, a << b)
    nt.store(hi, a >> b)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_shifts_match_numpy_for_every_count(tile_backend, dt):
    rng = np.random.default_rng()
    bits = np.dtype(dt).itemsize * 8
    n = 700 + int(rng.integers(1, 50))
    info = np.iinfo(dt)
    xh = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    sh = rng.integers(-bits - 3, 2 * bits + 3, n).astype(dt)
    sh[:6] = [0, bits - 1, bits, -1, 2 * bits, 1]
    lo = tile_backend.asarray(np.zeros(n, dt))
    hi = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(shifts, tile_backend.asarray(xh), tile_backend.asarray(sh),
                     nt.partition(lo, 256), nt.partition(hi, 256), 256)
    np.testing.assert_array_equal(tile_backend.to_numpy(lo), np.left_shift(xh, sh))
    np.testing.assert_array_equal(tile_backend.to_numpy(hi), np.right_shift(xh, sh))


@nt.jit
def shift_by_scalar(x, z: nt.Partition["B"], B: nt.Constant, S: nt.Constant):
    nt.store(z, (nt.load_like(x, z) << S) >> 1)


def test_a_scalar_count_and_promotion(tile_backend):
    xh = np.arange(-300, 300, dtype=np.int32)
    z = tile_backend.asarray(np.zeros(600, np.int32))
    tile_backend.run(shift_by_scalar, tile_backend.asarray(xh), nt.partition(z, 128), 128, 3)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.right_shift(np.left_shift(xh, 3), 1))


@nt.jit
def float_shift(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) << 1)


def test_shifts_refuse_float_tiles():
    x = np.zeros(256, np.float32)
    with pytest.raises(TileTypingError, match="<<.*integer tiles"):
        float_shift(x, nt.partition(np.zeros(256, np.float32), 128), 128, interpret=True)


def test_shifts_compile_without_poison_counts():
    x = np.zeros(256, np.int32)
    ptx = shifts.ptx(x, x, nt.partition(np.zeros(256, np.int32), 128),
                     nt.partition(np.zeros(256, np.int32), 128), 128)
    assert "shl.b32" in ptx and "shr.s32" in ptx and "setp.lt.u32" in ptx
