"""mulhi / umulhi: the high half of the full signed / unsigned product of
int32 and int64 operands, exact against Python integers, on the GPU and in the interpreter;
the PTX uses mul.hi; refusals."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError


@nt.jit
def hi_kernel(x, y, s: nt.Partition["B"], u: nt.Partition["B"], B: nt.Constant):
    a = nt.load_like(x, s)
    b = nt.load_like(y, s)
    nt.store(s, nt.mulhi(a, b))
    nt.store(u, nt.umulhi(a, b))


@nt.jit
def hi_scalar(x, s: nt.Partition["B"], c, B: nt.Constant):
    nt.store(s, nt.mulhi(nt.load_like(x, s), c))


def _ref(a, b, bits, unsigned):
    mask = (1 << bits) - 1
    out = []
    for u, v in zip(a.tolist(), b.tolist()):
        if unsigned:
            u, v = u & mask, v & mask
        h = ((u * v) >> bits) & mask
        out.append(h - (1 << bits) if h >> (bits - 1) else h)
    return np.array(out, dtype=np.int64)


@pytest.mark.parametrize("dt", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_mulhi_and_umulhi_are_exact(tile_backend, dt):
    rng = np.random.default_rng()
    info = np.iinfo(dt)
    n = 700 + int(rng.integers(1, 50))
    xh = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    yh = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    xh[:6] = [info.min, info.max, -1, 0, info.min, 1]
    yh[:6] = [info.min, info.max, -1, info.max, -1, info.min]
    s = tile_backend.asarray(np.zeros(n, dt))
    u = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(hi_kernel, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(s, 256), nt.partition(u, 256), 256)
    bits = np.dtype(dt).itemsize * 8
    np.testing.assert_array_equal(tile_backend.to_numpy(s).astype(np.int64),
                                  _ref(xh, yh, bits, False))
    np.testing.assert_array_equal(tile_backend.to_numpy(u).astype(np.int64),
                                  _ref(xh, yh, bits, True))


def test_mulhi_with_a_runtime_scalar(tile_backend):
    rng = np.random.default_rng()
    xh = rng.integers(-2**31, 2**31, 500, dtype=np.int64).astype(np.int32)
    s = tile_backend.asarray(np.zeros(500, np.int32))
    c = int(rng.integers(-2**31, 2**31))
    tile_backend.run(hi_scalar, tile_backend.asarray(xh), nt.partition(s, 128), c, 128)
    np.testing.assert_array_equal(tile_backend.to_numpy(s).astype(np.int64),
                                  _ref(xh, np.full(500, c), 32, False))


def test_the_ptx_uses_one_high_multiply():
    # int32: mul.wide (its upper register is the high word); int64: mul.hi
    for dt, forms in ((np.int32, ("mul.wide.s32", "mul.wide.u32")),
                      (np.int64, ("mul.hi.s64", "mul.hi.u64"))):
        x = np.zeros(256, dt)
        ptx = hi_kernel.ptx(x, x, nt.partition(x.copy(), 256), nt.partition(x.copy(), 256), 256)
        assert all(f in ptx for f in forms)


@nt.jit
def hi_float(x, s: nt.Partition["B"], B: nt.Constant):
    nt.store(s, nt.mulhi(nt.load_like(x, s), nt.load_like(x, s)))


def test_floats_and_narrow_ints_are_refused():
    x = np.zeros(64, np.float32)
    with pytest.raises(TileTypingError, match="mulhi"):
        hi_float.ptx(x, nt.partition(x.copy(), 64), 64)
    x8 = np.zeros(64, np.int8)
    with pytest.raises(TileTypingError, match="int32, int64, uint32 or uint64"):
        hi_float.ptx(x8, nt.partition(x8.copy(), 64), 64)


@pytest.mark.parametrize("dt", [np.uint32, np.uint64], ids=lambda d: np.dtype(d).name)
def test_unsigned_operands_give_the_unsigned_high_half(tile_backend, dt):
    rng = np.random.default_rng()
    bits = np.dtype(dt).itemsize * 8
    n = 500 + int(rng.integers(1, 40))
    a = [int(v) for v in rng.integers(0, 2 ** 62, n)]
    b = [int(v) for v in rng.integers(0, 2 ** 62, n)]
    a = [(v << 2 | 3) % 2 ** bits for v in a]                 # the top bits set often
    b = [(v << 2 | 1) % 2 ** bits for v in b]
    a[:2], b[:2] = [2 ** bits - 1, 0], [2 ** bits - 1, 5]
    s = tile_backend.asarray(np.zeros(n, dt))
    u = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(hi_kernel, tile_backend.asarray(np.array(a, dt)),
                     tile_backend.asarray(np.array(b, dt)), nt.partition(s, 128),
                     nt.partition(u, 128), 128)
    want = [(x * y) >> bits for x, y in zip(a, b)]
    assert [int(v) for v in tile_backend.to_numpy(s)] == want
    assert [int(v) for v in tile_backend.to_numpy(u)] == want


def test_unsigned_ptx_uses_the_unsigned_high_multiply():
    for dt, op in ((np.uint32, "mul.hi.u32"), (np.uint64, "mul.hi.u64")):
        x = np.zeros(256, dt)
        p = hi_kernel.ptx(x, x, nt.partition(x.copy(), 128), nt.partition(x.copy(), 128), 128,
                          cc=(9, 0))
        assert op in p or "mul.wide.u32" in p, dt
        assert "mul.hi.s" not in p and "mul.wide.s32" not in p
