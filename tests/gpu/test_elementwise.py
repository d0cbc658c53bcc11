"""Elementwise kernels against NumPy (float64 reference), on the GPU and in the interpreter.

Every test takes the ``tile_backend`` fixture of numba_tile's pytest plugin, so it runs
twice: on the GPU (skipped without one) and in the interpreter.
"""

import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

FLOATS = [np.float16, BFLOAT16_NP, np.float32, np.float64]


def tol(dt):
    return {np.dtype(np.float16): 2e-3, BFLOAT16_NP: 1.6e-2, np.dtype(np.float32): 2e-6,
            np.dtype(np.float64): 1e-12}[np.dtype(dt)]


@nt.jit
def add_kernel(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@pytest.mark.parametrize("dt", FLOATS + [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 1000, 4096 + 3])
def test_add(tile_backend, dt, n):
    rng = np.random.default_rng()
    xh = (rng.standard_normal(n) * 100).astype(dt)
    yh = (rng.standard_normal(n) * 100).astype(dt)
    x, y = tile_backend.asarray(xh), tile_backend.asarray(yh)
    z = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(add_kernel, x, y, nt.partition(z, 512), 512)
    ref = xh.astype(np.float64) + yh.astype(np.float64)
    got = tile_backend.to_numpy(z).astype(np.float64)
    if np.issubdtype(np.dtype(dt), np.integer):
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=tol(dt), atol=tol(dt) * 100)


@nt.jit
def saxpy_kernel(alpha, x, y, out: nt.Partition):
    nt.store(out, alpha * nt.load_like(x, out) + nt.load_like(y, out))


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_saxpy_2d(tile_backend, dt):
    rng = np.random.default_rng()
    shape = (70, 133)
    alpha = float(rng.uniform(-2, 2))
    xh = rng.standard_normal(shape).astype(dt)
    yh = rng.standard_normal(shape).astype(dt)
    out = tile_backend.asarray(np.zeros(shape, dt))
    tile_backend.run(saxpy_kernel, alpha, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(out, (16, 32)))
    # reference with the kernel's rounding: alpha is rounded to the tile dtype first
    a = np.array(alpha).astype(dt).astype(np.float64)
    ref = a * xh.astype(np.float64) + yh.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(out).astype(np.float64), ref,
                               rtol=tol(dt) * 4, atol=tol(dt) * 8)


@nt.jit
def math_kernel(x, out: nt.Partition, OP: nt.Constant):
    t = nt.load_like(x, out)
    if OP == 0:
        r = nt.exp(t)
    elif OP == 1:
        r = nt.exp2(t)
    elif OP == 2:
        r = nt.log(nt.abs(t) + 1.0)
    elif OP == 3:
        r = nt.log2(nt.abs(t) + 1.0)
    elif OP == 4:
        r = nt.sqrt(nt.abs(t))
    elif OP == 5:
        r = nt.rsqrt(nt.abs(t) + 0.5)
    elif OP == 6:
        r = nt.tanh(t)
    elif OP == 7:
        r = nt.sigmoid(t)
    elif OP == 8:
        r = nt.maximum(t, 0.25)
    elif OP == 9:
        r = nt.minimum(t, -t)
    elif OP == 10:
        r = nt.where(t > 0.0, t * 2.0, -t)
    else:
        r = abs(t) - t / 3.0
    nt.store(out, r)


MATH_REF = [np.exp, np.exp2, lambda v: np.log(np.abs(v) + 1), lambda v: np.log2(np.abs(v) + 1),
            lambda v: np.sqrt(np.abs(v)), lambda v: 1 / np.sqrt(np.abs(v) + 0.5), np.tanh,
            lambda v: 1 / (1 + np.exp(-v)), lambda v: np.maximum(v, 0.25),
            lambda v: np.minimum(v, -v), lambda v: np.where(v > 0, 2 * v, -v),
            lambda v: np.abs(v) - v / 3]


@pytest.mark.parametrize("op", range(len(MATH_REF)))
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BFLOAT16_NP],
                         ids=lambda d: np.dtype(d).name)
def test_math(tile_backend, op, dt):
    rng = np.random.default_rng()
    xh = rng.uniform(-3, 3, 1500).astype(dt)
    out = tile_backend.asarray(np.zeros(1500, dt))
    tile_backend.run(math_kernel, tile_backend.asarray(xh), nt.partition(out, 256), op)
    ref = MATH_REF[op](xh.astype(np.float64))
    t = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}.get(np.dtype(dt), tol(dt) * 2)
    np.testing.assert_allclose(tile_backend.to_numpy(out).astype(np.float64), ref, rtol=t, atol=t)


@nt.jit
def mixed_kernel(a, b, out: nt.Partition):
    # float16 + int32 -> float16; float16 + bfloat16 -> float32; comparisons -> bool
    ta = nt.load_like(a, out)
    tb = nt.load_like(b, out)
    s = nt.astype(ta, nt.float16) + nt.astype(tb, nt.bfloat16)
    nt.store(out, nt.where(ta < tb, s, nt.astype(tb // 3 + tb % 5, nt.float32)))


def test_promotion_and_casts(tile_backend):
    rng = np.random.default_rng()
    n = 777
    ah = rng.integers(-50, 50, n).astype(np.int32)
    bh = rng.integers(-50, 50, n).astype(np.int64)
    out = tile_backend.asarray(np.zeros(n, np.float32))
    tile_backend.run(mixed_kernel, tile_backend.asarray(ah), tile_backend.asarray(bh),
                     nt.partition(out, 128))
    s = ah.astype(np.float16).astype(np.float32) + bh.astype(BFLOAT16_NP).astype(np.float32)
    ref = np.where(ah < bh, s, (bh // 3 + bh % 5).astype(np.float32))
    np.testing.assert_array_equal(tile_backend.to_numpy(out), ref)


@nt.jit
def index_kernel(x, out: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    i = nt.bid(0)
    j = nt.bid(1)
    t = nt.load(x, (i, j), (BM, BN), padding=-1.0)
    rows = nt.full((BM, BN), i * BM, nt.int64) + nt.astype(nt.zeros((BM, BN), nt.int32), nt.int64)
    nt.store(out, nt.astype(t, nt.float64) + nt.astype(rows, nt.float64) * 0.0
             + nt.astype(nt.num_blocks(1) + nt.zeros((BM, BN), nt.int64), nt.float64) * 1000.0)


def test_tile_indexed_load_and_grid(tile_backend):
    rng = np.random.default_rng()
    shape = (45, 70)
    xh = rng.standard_normal(shape).astype(np.float32)
    out = tile_backend.asarray(np.zeros(shape, np.float64))
    tile_backend.run(index_kernel, tile_backend.asarray(xh), nt.partition(out, (16, 32)), 16, 32)
    nblocks1 = math.ceil(70 / 32)
    np.testing.assert_allclose(tile_backend.to_numpy(out), xh.astype(np.float64) + 1000.0 * nblocks1,
                               rtol=0, atol=0)


@nt.jit
def arange_kernel(out: nt.Partition["B"], B: nt.Constant):
    nt.store(out, nt.arange(B) + nt.full((B,), nt.bid(0) * B, nt.int32))


@pytest.mark.parametrize("block", [16, 128, 1024, 4096])
def test_arange_covers_every_element(tile_backend, block):
    n = 3 * block + 5
    out = tile_backend.asarray(np.full(n, -7, np.int32))
    tile_backend.run(arange_kernel, nt.partition(out, block), block)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), np.arange(n, dtype=np.int32))


@nt.jit
def padding_kernel(x, out: nt.Partition["B"], B: nt.Constant, PAD: nt.Constant):
    t = nt.load(x, (nt.bid(0),), (B,), padding=PAD)
    nt.store(out, t)


@pytest.mark.parametrize("pad", [0.0, float("nan"), float("inf"), -float("inf"), 3.5])
def test_padding_values(tile_backend, pad):
    rng = np.random.default_rng()
    xh = rng.standard_normal(10).astype(np.float32)
    # out is longer than x: its tail reads x's padding
    out = tile_backend.asarray(np.zeros(16, np.float32))
    tile_backend.run(padding_kernel, tile_backend.asarray(xh), nt.partition(out, 16), 16, pad)
    got = tile_backend.to_numpy(out)
    np.testing.assert_array_equal(got[:10], xh)
    np.testing.assert_array_equal(got[10:], np.full(6, pad, np.float32))


@nt.jit
def bool_kernel(x, out: nt.Partition):
    t = nt.load_like(x, out)
    nt.store(out, (t > 0.5) ^ (t < -0.5))


def test_bool_tiles(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(300).astype(np.float32)
    out = tile_backend.asarray(np.zeros(300, np.bool_))
    tile_backend.run(bool_kernel, tile_backend.asarray(xh), nt.partition(out, 64))
    np.testing.assert_array_equal(tile_backend.to_numpy(out), (xh > 0.5) ^ (xh < -0.5))


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_num_warps(tile_backend, num_warps):
    @nt.jit(num_warps=num_warps)
    def k(x, out: nt.Partition):
        nt.store(out, nt.load_like(x, out) * 3.0)

    rng = np.random.default_rng()
    xh = rng.standard_normal(5000).astype(np.float32)
    out = tile_backend.asarray(np.zeros(5000, np.float32))
    tile_backend.run(k, tile_backend.asarray(xh), nt.partition(out, 2048))
    np.testing.assert_allclose(tile_backend.to_numpy(out), xh * 3.0, rtol=1e-6)


@nt.jit
def mixed_layout_kernel(a, b, c, out: nt.Partition):
    ta = nt.load_like(a, out)           # float16: 8 elements per chunk
    tb = nt.load_like(b, out)           # float32: 4 elements per chunk
    tc = nt.load_like(c, out)           # float64: 2 elements per chunk
    nt.store(out, nt.where(tb > 0.0, ta + tb, tc - ta) * 2.0 + tc)


@pytest.mark.parametrize("n,block", [(1000, 256), (5000, 1024), (100, 16)])
def test_tiles_of_different_layouts(tile_backend, n, block):
    rng = np.random.default_rng()
    ah = rng.standard_normal(n).astype(np.float16)
    bh = rng.standard_normal(n).astype(np.float32)
    ch = rng.standard_normal(n)
    out = tile_backend.asarray(np.zeros(n))
    tile_backend.run(mixed_layout_kernel, tile_backend.asarray(ah), tile_backend.asarray(bh),
                     tile_backend.asarray(ch), nt.partition(out, block))
    a64 = ah.astype(np.float64)
    s = (a64.astype(np.float32) + bh).astype(np.float64)   # float16 + float32 -> float32
    ref = np.where(bh > 0, s, ch - a64) * 2.0 + ch
    np.testing.assert_allclose(tile_backend.to_numpy(out), ref, rtol=1e-6, atol=1e-6)


@nt.jit
def int_pow_kernel(a, b, out: nt.Partition):
    nt.store(out, nt.load_like(a, out) ** nt.load_like(b, out))


def test_integer_power_with_negative_exponents(tile_backend):
    rng = np.random.default_rng()
    ah = rng.integers(-3, 4, 500).astype(np.int64)
    bh = rng.integers(-3, 6, 500).astype(np.int64)
    out = tile_backend.asarray(np.full(500, 99, np.int64))
    tile_backend.run(int_pow_kernel, tile_backend.asarray(ah), tile_backend.asarray(bh),
                     nt.partition(out, 128))
    # independent reference: exact integer powers; negative exponents truncate 1/a**k toward 0
    ref = [a ** b if b >= 0 else (int(1 / (a ** -b)) if a != 0 else 0)
           for a, b in zip(ah.tolist(), bh.tolist())]
    got = tile_backend.to_numpy(out)
    ok = bh >= 0
    ok |= (bh < 0) & (ah != 0)     # 0 ** negative: undefined on the GPU (Numba raises, unseen)
    np.testing.assert_array_equal(got[ok], np.array(ref)[ok])


@nt.jit
def computed_shape_kernel(x, out: nt.Partition["B"], B: nt.Constant):
    i = nt.bid(0)
    t = nt.load(x, (2 * i + 1,), (B * 2 // 2,))      # shapes computed from B fold to literals
    nt.store(out, t + nt.astype(nt.arange(B - B // 2 * 2 + B), nt.float32))


def test_shapes_computed_from_constants(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(1000).astype(np.float32)
    out = tile_backend.asarray(np.zeros(200, np.float32))
    tile_backend.run(computed_shape_kernel, tile_backend.asarray(xh), nt.partition(out, 32), 32)
    ref = np.zeros(200, np.float32)
    for i in range(-(-200 // 32)):
        blk = xh[(2 * i + 1) * 32:(2 * i + 2) * 32]
        n = min(32, 200 - 32 * i)
        ref[32 * i:32 * i + n] = (np.pad(blk, (0, 32 - len(blk))) + np.arange(32))[:n]
    np.testing.assert_allclose(tile_backend.to_numpy(out), ref, rtol=1e-6)
