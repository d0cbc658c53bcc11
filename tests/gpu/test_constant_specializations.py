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
