"""Float scalars in the interpreter follow the GPU's IEEE arithmetic (float64, NumPy's error
model): a division by a zero scalar or constant gives inf or nan, as the compiled kernel does,
not Python's ZeroDivisionError."""

import numpy as np
import pytest

import numba_tile as nt


@nt.jit(interpret=True)
def scale_by_inverse(x, z: nt.Partition["B"], c: float, C: nt.Constant, B: nt.Constant):
    t = nt.load_like(x, z)
    nt.store(z, t * (1.0 / c) + t * (C / c) + (0.0 / C) * t)


@pytest.mark.parametrize("c, C", [(0.0, 2.0), (-0.0, 2.0), (0.0, 0.0), (0.5, 0.0)])
def test_division_by_a_zero_float_scalar_is_ieee(c, C):
    rng = np.random.default_rng()
    n = 37
    x = (rng.random(n) + 0.5).astype(np.float32)
    z = np.zeros(n, np.float32)
    scale_by_inverse(x, nt.partition(z, 64), c, C, 64)
    with np.errstate(all="ignore"):
        xd = x.astype(np.float64)
        want = (xd * (np.float64(1.0) / np.float64(c)) + xd * (np.float64(C) / np.float64(c))
                + (np.float64(0.0) / np.float64(C)) * xd).astype(np.float32)
    np.testing.assert_array_equal(z, want)
    assert not np.isfinite(z).all()          # inf or nan, not an exception


def test_finite_float_scalars_are_unchanged():
    rng = np.random.default_rng()
    x = rng.standard_normal(100).astype(np.float32)
    z = np.zeros(100, np.float32)
    scale_by_inverse(x, nt.partition(z, 64), 4.0, 2.0, 64)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(z, xd * 0.25 + xd * 0.5, rtol=1e-6)
