"""Constants that compare equal but are other values run their own code on both backends, in
either order: ``x / C`` is -inf for C = -0.0 after C = 0.0 ran (and +inf the other way), and an
int64 product in a tuple constant is exact where the float64 one after it rounds
(``tests/unit/test_constant_specializations.py`` checks the PTX and the keys)."""

import numpy as np
import pytest

import numba_tile as nt

#: 3037000499**2 fits in int64 (exact); as a float64 it rounds to a multiple of 2048
ROOT, NEAR = 3037000499, 9223372030926249000


@nt.jit
def divide(x, z: nt.Partition["B"], C: nt.Constant, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) / C)


@nt.jit
def square_and_divide(x, z: nt.Partition["B"], C: nt.Constant, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) / C[1] + (C[0] * C[0] - NEAR))


def _run(backend, kernel, x, c):
    z = backend.asarray(np.zeros_like(x))
    backend.run(kernel, backend.asarray(x), nt.partition(z, 256), c, 256)
    return backend.to_numpy(z)


@pytest.mark.parametrize("order", [(0.0, -0.0, 0.0), (-0.0, 0.0, -0.0)])
def test_zero_and_negative_zero_divide_by_their_own_sign(tile_backend, order):
    rng = np.random.default_rng()
    x = rng.standard_normal(1000)
    for c in order:
        with np.errstate(divide="ignore"):
            expected = x / np.float64(c)
        np.testing.assert_array_equal(_run(tile_backend, divide, x, c), expected)


@pytest.mark.parametrize("order", [
    [(ROOT, 1.0), (float(ROOT), 1.0), (ROOT, 1.0)],
    [(float(ROOT), -0.0), (ROOT, 0.0), (ROOT, -0.0), (float(ROOT), 0.0)]])
def test_a_tuple_constant_runs_its_own_types_and_signs(tile_backend, order):
    rng = np.random.default_rng()
    x = rng.standard_normal(700) + 3.0
    for c in order:
        root = np.int64(c[0]) if type(c[0]) is int else np.float64(c[0])
        square = root * root - (np.int64(NEAR) if type(c[0]) is int else np.float64(NEAR))
        with np.errstate(divide="ignore"):
            expected = x / np.float64(c[1]) + np.float64(square)
        np.testing.assert_array_equal(_run(tile_backend, square_and_divide, x, c), expected)


class _Float(float):
    """A float subclass: Numba types it float64 (its leaves in a tuple shared one
    specialization, (F(0.0),) and (F(-0.0),))."""


@pytest.mark.parametrize("order", [(0.0, -0.0, 0.0), (-0.0, 0.0, -0.0)])
def test_float_subclass_zeros_in_a_tuple_divide_by_their_own_sign(tile_backend, order):
    rng = np.random.default_rng()
    x = rng.standard_normal(700) + 3.0
    for v in order:
        c = (ROOT, _Float(v))
        with np.errstate(divide="ignore"):
            expected = x / np.float64(v) + np.float64(np.int64(ROOT) * np.int64(ROOT) - NEAR)
        np.testing.assert_array_equal(_run(tile_backend, square_and_divide, x, c), expected)


@nt.jit
def half_constant(x, z: nt.Partition["B"], w: nt.Partition["B"], C: nt.Constant,
                  T: nt.Constant, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + C * 3.0 + T[1])
    nt.store(w, nt.astype(nt.load_like(x, w) * 0.0, nt.float16) + (C + T[0]))


def test_float16_constants_compute_as_float16(tile_backend):
    """A float16 Constant (top level and in a tuple) is folded as its bits: the GPU's
    ``C * 3.0`` is float64 arithmetic on that float16 (to rounding: it may be fused with the
    add), ``C + T[0]`` a float16 sum (exact)."""
    rng = np.random.default_rng()
    x = rng.standard_normal(500)
    for _ in range(3):
        C = np.float16(rng.standard_normal() * 10)
        T = (np.float16(rng.standard_normal()), np.float16(-rng.uniform(0.0, 1.0)))
        z = tile_backend.asarray(np.zeros(500))
        w = tile_backend.asarray(np.zeros(500, np.float16))
        tile_backend.run(half_constant, tile_backend.asarray(x), nt.partition(z, 256),
                         nt.partition(w, 256), C, T, 256)
        want_z = x + np.float64(C) * 3.0 + np.float64(T[1])
        want_w = np.float16(np.float32(C) + np.float32(T[0]))
        # to rounding: the GPU contracts x + C * 3.0 into one FMA (docs/safety.md)
        np.testing.assert_allclose(tile_backend.to_numpy(z), want_z, rtol=1e-15, atol=1e-15)
        np.testing.assert_array_equal(tile_backend.to_numpy(w).view(np.uint16),
                                      np.full(500, want_w).view(np.uint16))
