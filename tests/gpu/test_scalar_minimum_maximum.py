"""``nt.minimum`` and ``nt.maximum`` of two scalars (Triton's ``tl.minimum`` on scalars): NumPy's
``np.minimum``/``np.maximum`` of the two in their promoted type, NaN propagating, on the GPU
and in the interpreter."""

import numpy as np
import pytest

import numba_tile as nt

PAIRS = [(np.float32, np.float32), (np.float32, np.int64), (np.int32, np.int32),
         (np.uint8, np.int16), (np.float64, np.float32), (np.float16, np.float16),
         (np.uint32, np.uint32), (np.bool_, np.bool_)]


@nt.jit
def scalar_minmax(a, b, z: nt.Partition[(1, 2)]):
    x = a[nt.bid(0)]
    y = b[nt.bid(0)]
    col = nt.expand_dims(nt.arange(2), 0)
    out = nt.zeros((1, 2), nt.float64)
    out = nt.where(col == 0, nt.float64(nt.minimum(x, y)), out)
    out = nt.where(col == 1, nt.float64(nt.maximum(x, y)), out)
    nt.store(z, out)


def _values(rng, dt, n):
    if dt == np.bool_:
        return rng.random(n) < 0.5
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True
                            ).astype(dt)
    v = (rng.standard_normal(n) * 100).astype(dt)
    v[rng.random(n) < 0.1] = np.nan
    return v


@pytest.mark.parametrize("da, db", PAIRS, ids=lambda d: np.dtype(d).name)
def test_scalar_minimum_maximum_against_numpy(tile_backend, da, db):
    rng = np.random.default_rng()
    n = 64 + int(rng.integers(0, 20))
    a, b = _values(rng, da, n), _values(rng, db, n)
    z = tile_backend.asarray(np.zeros((n, 2), np.float64))
    tile_backend.run(scalar_minmax, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(z, (1, 2)))
    dt = np.result_type(a.dtype, b.dtype)
    want = np.stack([np.minimum(a.astype(dt), b.astype(dt)),
                     np.maximum(a.astype(dt), b.astype(dt))], axis=1).astype(np.float64)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), want)
