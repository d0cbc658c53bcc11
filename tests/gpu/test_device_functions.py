"""numba-cuda ``@cuda.jit(device=True)`` functions applied to tiles: each element's call,
broadcasting, scalars, masks, 16-bit and integer tiles, nested device functions; on the GPU and in
the interpreter against NumPy in float64."""

import math

import numpy as np
import pytest
from numba import cuda

import numba_tile as nt


@cuda.jit(device=True)
def leaky_relu(x):
    return x if x > 0 else x * 0.01


@cuda.jit(device=True)
def gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@cuda.jit(device=True)
def clamp_mul(x, y, lo, hi):
    v = x * y
    if v < lo:
        v = lo
    elif v > hi:
        v = hi
    return v


@cuda.jit(device=True)
def collatz_steps(n):
    steps = 0
    while n > 1 and steps < 200:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@cuda.jit(device=True)
def inner(x):
    return math.exp(-x * x)


@cuda.jit(device=True)
def outer(x, s):
    return inner(x) * s + leaky_relu(x)


@nt.jit
def apply_leaky(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(leaky_relu(nt.load_like(x, z)), nt.float32))


@nt.jit
def apply_gelu(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(gelu_tanh(nt.load_like(x, z)), nt.float32))


@nt.jit
def apply_clamp(x, y, z: nt.Partition["BM", "BN"], lo, hi, BM: nt.Constant, BN: nt.Constant):
    # a (BM, BN) tile times a (1, BN) row: the device function broadcasts as operators do
    row = nt.load(y, index=(0,), shape=(BN,))
    t = clamp_mul(nt.load_like(x, z), nt.reshape(row, (1, BN)), lo, hi)
    nt.store(z, nt.astype(t, nt.float32))


@nt.jit
def apply_collatz(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, collatz_steps(nt.load_like(x, z)))


@nt.jit
def apply_nested(x, z: nt.Partition["B"], s, B: nt.Constant):
    nt.store(z, nt.astype(outer(nt.load_like(x, z), s), nt.float32))


@nt.jit
def apply_half(x, z: nt.Partition["B"], B: nt.Constant):
    # a float16 tile goes to the device function as float32
    nt.store(z, nt.astype(leaky_relu(nt.load_like(x, z)), nt.float16))


@nt.jit
def predicate(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    nt.store(z, nt.where(positive(t), t, nt.zeros((B,), nt.float32)))


@cuda.jit(device=True)
def positive(x):
    return x > 0


def _leaky(x):
    return np.where(x > 0, x, x * 0.01)


def test_a_branching_device_function_on_a_ragged_tile(tile_backend):
    rng = np.random.default_rng()
    n = 900 + int(rng.integers(1, 100))
    xh = rng.standard_normal(n).astype(np.float32)
    z = tile_backend.asarray(np.full(n, 7.0, np.float32))
    tile_backend.run(apply_leaky, tile_backend.asarray(xh), nt.partition(z, 256), 256)
    np.testing.assert_allclose(tile_backend.to_numpy(z), _leaky(xh.astype(np.float64)),
                               rtol=1e-6, atol=1e-7)


def test_math_inside_a_device_function(tile_backend):
    rng = np.random.default_rng()
    n = 513
    xh = (3 * rng.standard_normal(n)).astype(np.float32)
    z = tile_backend.asarray(np.zeros(n, np.float32))
    tile_backend.run(apply_gelu, tile_backend.asarray(xh), nt.partition(z, 128), 128)
    x = xh.astype(np.float64)
    ref = 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(tile_backend.to_numpy(z), ref, rtol=2e-6, atol=2e-6)


def test_broadcast_tiles_and_runtime_scalars(tile_backend):
    rng = np.random.default_rng()
    m, n = 37, 200
    xh = rng.standard_normal((m, n)).astype(np.float32)
    yh = rng.standard_normal(64).astype(np.float32)
    z = tile_backend.asarray(np.zeros((m, n), np.float32))
    tile_backend.run(apply_clamp, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(z, (16, 64)), -0.5, 0.75, 16, 64)
    # every column block multiplies by the same first 64 entries of y
    cols = np.arange(n) % 64
    ref = np.clip(xh.astype(np.float64) * yh[cols].astype(np.float64), -0.5, 0.75)
    np.testing.assert_allclose(tile_backend.to_numpy(z), ref, rtol=1e-6, atol=1e-7)


def test_integer_loops_inside_a_device_function(tile_backend):
    rng = np.random.default_rng()
    n = 300
    xh = rng.integers(1, 10_000, n).astype(np.int64)
    z = tile_backend.asarray(np.zeros(n, np.int64))
    tile_backend.run(apply_collatz, tile_backend.asarray(xh), nt.partition(z, 128), 128)

    def steps(v):
        s = 0
        while v > 1 and s < 200:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s
    np.testing.assert_array_equal(tile_backend.to_numpy(z), [steps(int(v)) for v in xh])


def test_a_device_function_calling_device_functions(tile_backend):
    rng = np.random.default_rng()
    n = 700
    xh = rng.standard_normal(n).astype(np.float32)
    z = tile_backend.asarray(np.zeros(n, np.float32))
    s = float(rng.uniform(0.5, 2.0))
    tile_backend.run(apply_nested, tile_backend.asarray(xh), nt.partition(z, 256), s, 256)
    x = xh.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(z), np.exp(-x * x) * s + _leaky(x),
                               rtol=2e-6, atol=2e-6)


def test_a_float16_tile_goes_in_as_float32(tile_backend):
    rng = np.random.default_rng()
    n = 333
    xh = rng.standard_normal(n).astype(np.float16)
    z = tile_backend.asarray(np.zeros(n, np.float16))
    tile_backend.run(apply_half, tile_backend.asarray(xh), nt.partition(z, 128), 128)
    ref = _leaky(xh.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(tile_backend.to_numpy(z).astype(np.float64),
                               ref.astype(np.float64), rtol=1e-3, atol=1e-4)


def test_a_bool_result_feeds_where(tile_backend):
    rng = np.random.default_rng()
    n = 250
    xh = rng.standard_normal(n).astype(np.float32)
    z = tile_backend.asarray(np.full(n, 3.0, np.float32))
    tile_backend.run(predicate, tile_backend.asarray(xh), nt.partition(z, 64), 64)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.where(xh > 0, xh, 0))
