"""The row-wise examples (``examples/softmax.py``, ``layernorm.py``, ``rmsnorm.py``) against
float64 NumPy, on the GPU and in the interpreter, for one element up to rows of 32768
columns, in float32, float16 and bfloat16; and each example's ``main()``.

Rows whose length is not a power of two are loaded masked (no ``padding=``), so these are
also end-to-end tests of case E2: a padded lane counted in a max, a sum or a variance would
show in every row.
"""

import numpy as np
import pytest

from examples import layernorm, rmsnorm, softmax
from numba_tile.dtypes import BFLOAT16_NP

FLOATS = [np.float32, np.float16, BFLOAT16_NP]
SHAPES = [(1, 1), (3, 128), (7, 1000), (5, 1500), (64, 4096), (2, 32768)]


def dt_id(d):
    return np.dtype(d).name


def shape_id(s):
    return "x".join(map(str, s))


def tol(dt):
    """(rtol, atol) for outputs of magnitude about 1, computed in float32 and rounded once to
    ``dt`` (a few units in its last place)."""
    return {np.dtype(np.float32): (1e-5, 1e-5), np.dtype(np.float16): (4e-3, 4e-3),
            BFLOAT16_NP: (2e-2, 2e-2)}[np.dtype(dt)]


def softmax_reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dt", FLOATS, ids=dt_id)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_softmax(tile_backend, shape, dt):
    rng = np.random.default_rng()
    xh = (4 * rng.standard_normal(shape)).astype(dt)
    y = tile_backend.asarray(np.full(shape, np.nan, dt))
    softmax.softmax(tile_backend.asarray(xh), y, interpret=tile_backend.interpret).sync()
    got = tile_backend.to_numpy(y).astype(np.float64)
    ref = softmax_reference(xh.astype(np.float64))
    rtol, _ = tol(dt)
    # softmax values are small for long rows: relative error only (float16's subnormals,
    # below 6.1e-5, have an absolute spacing of 6e-8)
    atol = 1e-7 if dt is np.float16 else 1e-9
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=max(rtol, 1e-5) * 2)


@pytest.mark.parametrize("dt", FLOATS, ids=dt_id)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_layer_norm(tile_backend, shape, dt):
    rng = np.random.default_rng()
    n = shape[1]
    xh = (3 + 2 * rng.standard_normal(shape)).astype(dt)
    wh = rng.uniform(0.5, 1.5, n).astype(dt)
    bh = rng.standard_normal(n).astype(dt)
    y = tile_backend.asarray(np.full(shape, np.nan, dt))
    layernorm.layer_norm(tile_backend.asarray(xh), tile_backend.asarray(wh),
                         tile_backend.asarray(bh), y, interpret=tile_backend.interpret).sync()
    got = tile_backend.to_numpy(y).astype(np.float64)
    x = xh.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-5) * wh.astype(np.float64) + bh.astype(np.float64)
    rtol, atol = tol(dt)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * 4)
    if n > 1:    # the normalized rows have mean 0 and variance 1 (E2: no padded lane counted)
        z = (got - bh.astype(np.float64)) / wh.astype(np.float64)
        np.testing.assert_allclose(z.mean(axis=1), 0, atol=atol * 4)
        np.testing.assert_allclose(z.var(axis=1), 1, rtol=rtol * 4 + 1e-3)


@pytest.mark.parametrize("dt", FLOATS, ids=dt_id)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_rms_norm(tile_backend, shape, dt):
    rng = np.random.default_rng()
    n = shape[1]
    xh = (1 + 2 * rng.standard_normal(shape)).astype(dt)
    wh = rng.uniform(0.5, 1.5, n).astype(dt)
    y = tile_backend.asarray(np.full(shape, np.nan, dt))
    rmsnorm.rms_norm(tile_backend.asarray(xh), tile_backend.asarray(wh), y,
                     interpret=tile_backend.interpret).sync()
    got = tile_backend.to_numpy(y).astype(np.float64)
    x = xh.astype(np.float64)
    ref = x / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + 1e-6) * wh.astype(np.float64)
    rtol, atol = tol(dt)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * 4)


def test_layer_norm_of_case_e2(tile_backend):
    """E2 through the example: the row [1, 2, 3, 4, 5] (padded to 8 lanes) has variance 2, so
    y = (x - 3) / sqrt(2 + eps) with weight 1 and bias 0."""
    x = np.array([[1, 2, 3, 4, 5]], np.float32)
    y = tile_backend.asarray(np.full((1, 5), np.nan, np.float32))
    layernorm.layer_norm(tile_backend.asarray(x), tile_backend.asarray(np.ones(5, np.float32)),
                         tile_backend.asarray(np.zeros(5, np.float32)), y, eps=0.0,
                         interpret=tile_backend.interpret).sync()
    np.testing.assert_allclose(tile_backend.to_numpy(y)[0], (np.arange(1, 6) - 3) / np.sqrt(2.0),
                               rtol=1e-6)


@pytest.mark.parametrize("fn", [softmax.softmax, layernorm.layer_norm, rmsnorm.rms_norm],
                         ids=["softmax", "layer_norm", "rms_norm"])
def test_other_dtypes_are_refused(fn):
    x = np.zeros((2, 8))
    args = {softmax.softmax: (x, x.copy()), layernorm.layer_norm: (x, x[0], x[0], x.copy()),
            rmsnorm.rms_norm: (x, x[0], x.copy())}[fn]
    with pytest.raises(ValueError, match="float64"):
        fn(*args, interpret=True)


@pytest.mark.parametrize("module", [softmax, layernorm, rmsnorm], ids=lambda m: m.__name__)
def test_main(module, capsys):
    module.main()
    out = capsys.readouterr().out
    stem = module.__name__.rsplit(".", 1)[-1]
    assert f"{stem}: OK" in out, out
    assert "WRONG RESULT" not in out
