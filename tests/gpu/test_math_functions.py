"""The libdevice math functions beyond exp/log (trunc ... atanh), the binary float functions
(atan2, hypot, copysign) and the float predicates (isnan, isinf, isfinite), on both backends,
against NumPy / math in float64 over each function's domain, every float dtype."""

import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

#: name -> (float64 reference, low, high): inputs drawn from [low, high]
UNARY = {
    "trunc": (np.trunc, -50, 50), "rint": (np.rint, -50, 50),
    "erf": (np.vectorize(math.erf), -3, 3), "erfc": (np.vectorize(math.erfc), -3, 3),
    "log1p": (np.log1p, -0.9, 5), "expm1": (np.expm1, -3, 3), "log10": (np.log10, 0.01, 100),
    "cbrt": (np.cbrt, -30, 30), "tan": (np.tan, -1.4, 1.4), "asin": (np.arcsin, -0.99, 0.99),
    "acos": (np.arccos, -0.99, 0.99), "atan": (np.arctan, -10, 10), "sinh": (np.sinh, -4, 4),
    "cosh": (np.cosh, -4, 4), "asinh": (np.arcsinh, -10, 10), "acosh": (np.arccosh, 1.01, 10),
    "atanh": (np.arctanh, -0.95, 0.95),
}
DTYPES = [np.float32, np.float64, np.float16, BFLOAT16_NP]


def _tol(dt):
    return {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13,
            np.dtype(np.float16): 2e-3}.get(np.dtype(dt), 1.6e-2)


def _unary_kernel(name):
    fn = getattr(nt, name)

    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, fn(nt.load_like(x, z)))
    return k


_KERNELS = {n: _unary_kernel(n) for n in UNARY}


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(tile_backend, name, dt):
    ref, lo, hi = UNARY[name]
    rng = np.random.default_rng()
    xh = rng.uniform(lo, hi, 1000).astype(dt)
    if name in ("trunc", "rint"):
        xh[:8] = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -7.0]).astype(dt)  # ties
    out = tile_backend.asarray(np.zeros(1000, dt))
    tile_backend.run(_KERNELS[name], tile_backend.asarray(xh), nt.partition(out, 256), 256)
    want = ref(xh.astype(np.float64))
    got = tile_backend.to_numpy(out).astype(np.float64)
    if name in ("trunc", "rint"):
        np.testing.assert_array_equal(got, want)
    else:
        # the result rounded to dt, within a few ulp of the float64 value
        t = _tol(dt)
        np.testing.assert_allclose(got, want, rtol=t, atol=t)


@nt.jit
def binary(x, y, z: nt.Partition["B"], OP: nt.Constant, B: nt.Constant):
    a = nt.load_like(x, z)
    b = nt.load_like(y, z)
    if OP == 0:
        r = nt.atan2(a, b)
    elif OP == 1:
        r = nt.hypot(a, b)
    elif OP == 2:
        r = nt.copysign(a, b)
    else:
        r = nt.atan2(a, 1.5)               # a scalar operand
    nt.store(z, r)


BINARY = [lambda a, b: np.arctan2(a, b), np.hypot, np.copysign, lambda a, b: np.arctan2(a, 1.5)]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", range(4))
def test_binary(tile_backend, op, dt):
    rng = np.random.default_rng()
    xh = rng.uniform(-5, 5, 700).astype(dt)
    yh = rng.uniform(-5, 5, 700).astype(dt)
    yh[:3] = np.array([0.0, -0.0, 2.0]).astype(dt)
    out = tile_backend.asarray(np.zeros(700, dt))
    tile_backend.run(binary, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(out, 256), op, 256)
    want = BINARY[op](xh.astype(np.float64), yh.astype(np.float64))
    t = _tol(dt)
    np.testing.assert_allclose(tile_backend.to_numpy(out).astype(np.float64), want, rtol=t,
                               atol=t)


@nt.jit
def int_binary(x, z: nt.Partition["B"], B: nt.Constant):
    # integer operands are computed in float32
    a = nt.load_like(x, z)
    nt.store(z, nt.hypot(a, 3))


def test_integer_operands_give_float32(tile_backend):
    rng = np.random.default_rng()
    xh = rng.integers(-1000, 1000, 300).astype(np.int32)
    out = tile_backend.asarray(np.zeros(300, np.float32))
    tile_backend.run(int_binary, tile_backend.asarray(xh), nt.partition(out, 128), 128)
    np.testing.assert_allclose(tile_backend.to_numpy(out), np.hypot(xh, 3.0), rtol=2e-6)


@nt.jit
def predicates(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    code = nt.astype(nt.isnan(t), nt.int32) + 2 * nt.astype(nt.isinf(t), nt.int32) \
        + 4 * nt.astype(nt.isfinite(t), nt.int32)
    nt.store(z, code)


@pytest.mark.parametrize("dt", DTYPES + [np.int32, np.int8], ids=lambda d: np.dtype(d).name)
def test_predicates(tile_backend, dt):
    rng = np.random.default_rng()
    if np.dtype(dt).kind == "i":
        xh = rng.integers(-100, 100, 500).astype(dt)
    else:
        xh = rng.standard_normal(500).astype(dt)
        xh[rng.random(500) < 0.1] = np.nan
        xh[rng.random(500) < 0.1] = np.inf
        xh[rng.random(500) < 0.1] = -np.inf
        xh[:2] = np.array([np.finfo(np.float16).max, -0.0]).astype(dt)
    out = tile_backend.asarray(np.zeros(500, np.int32))
    tile_backend.run(predicates, tile_backend.asarray(xh), nt.partition(out, 128), 128)
    f = xh.astype(np.float64)
    want = np.isnan(f) + 2 * np.isinf(f) + 4 * np.isfinite(f)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)


@nt.jit
def fdiv_tiles(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.fdiv(nt.load_like(x, z), nt.load_like(y, z)))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fdiv_is_within_two_ulp_of_the_quotient(tile_backend, dt):
    rng = np.random.default_rng()
    n = 700
    xh = rng.uniform(-1e3, 1e3, n).astype(dt)
    yh = (rng.uniform(1e-3, 1e3, n) * rng.choice([-1.0, 1.0], n)).astype(dt)
    out = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(fdiv_tiles, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(out, 256), 256)
    want = xh.astype(np.float64) / yh.astype(np.float64)
    got = tile_backend.to_numpy(out).astype(np.float64)
    # float32: 2 ulp of div.full.f32; 16-bit dtypes: computed in float32, rounded once more
    ulp = {np.float32: 2.0 ** -23, np.float64: 2.0 ** -52}.get(dt, 2.0 ** -7)
    np.testing.assert_allclose(got, want, rtol=2.5 * ulp if dt != np.float64 else ulp, atol=0)


@nt.jit
def normalized(a, b, d, c: nt.Partition[(64, 64)], DIV: nt.Constant):
    """A product's tile divided by a column: by ``nt.fdiv`` (DIV) or by ``/``."""
    acc = nt.load(a, (nt.bid(0), 0), (64, 64), padding=0) @ nt.load(b, (0, 0), (64, 64),
                                                                    padding=0)
    den = nt.load(d, (nt.bid(0), 0), (64, 1), padding=1.0)
    nt.store(c, nt.fdiv(acc, den) if DIV else acc / den)


def normalized_args():
    x = np.zeros((64, 64), np.float16)
    return (x, x, np.ones((64, 1), np.float32),
            nt.partition(np.zeros((64, 64), np.float32), (64, 64)))


def test_fdiv_keeps_the_ieee_division_s_call_out_of_a_wgmma_kernel():
    """``/`` of float32 is ``div.rn.f32`` (ptxas gives it a slow-path call, which serializes
    a kernel's ``wgmma``s); ``fdiv`` is ``div.full.f32``."""
    args = normalized_args()
    slow = normalized.ptx(*args, False, cc=(9, 0))
    fast = normalized.ptx(*args, True, cc=(9, 0))
    assert "wgmma.mma_async" in fast and "div.rn.f32" in slow
    assert "div.rn" not in fast and "div.full.f32" in fast
