"""A scalar converted by a dtype (``nt.int8(x)``, ``nt.uint32(h)``, ``int(h)``) from float32 or
float16 truncates toward zero, saturates at the type's range and gives 0 for NaN, on the GPU
and in the interpreter alike (``lowering/scalars.py``: numba-cuda's float16 conversion
rounds to nearest, NumPy's gives the type's least value for NaN; neither is numba_tile's)."""

import numpy as np
import pytest

import numba_tile as nt

TARGETS = [nt.int8, nt.uint8, nt.int16, nt.uint16, nt.int32, nt.uint32, nt.int64, nt.uint64]


def _kernel(target, half):
    @nt.jit
    def convert(a, z: nt.Partition[(1, "W")], W: nt.Constant):
        v = a[nt.bid(0)]
        if half:
            v = nt.float16(v)
        out = nt.zeros((1, W), nt.float64)
        col = nt.expand_dims(nt.arange(W), 0)
        out = nt.where(col == 0, nt.float64(target(v)), out)
        out = nt.where(col == 1, nt.float64(int(v)), out)
        nt.store(z, out)
    return convert


def _expected(x, np_dtype):
    """The converted values, as float64 (each computed with Python's integers)."""
    info = np.iinfo(np_dtype)
    out = []
    for v in x.astype(np.float64):
        i = 0 if np.isnan(v) else info.max if v == np.inf else info.min if v == -np.inf \
            else min(max(int(v), info.min), info.max)
        out.append(float(np.array(i, np_dtype)))
    return np.array(out)


@pytest.mark.parametrize("half", [False, True], ids=["float32", "float16"])
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: str(t))
def test_dtype_conversion_of_a_float_scalar(tile_backend, target, half):
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(-3, 3, 20), rng.uniform(-1e5, 1e5, 10),
                        [np.nan, np.inf, -np.inf, 0.5, -0.5, 1.5, 2.5, -1.5, 255.9, 256.0,
                         -128.9, 65504.0, 3e9, -3e9]]).astype(np.float32)
    if half:
        x = x.astype(np.float16).astype(np.float32)
    n = x.size
    z = tile_backend.asarray(np.zeros((n, 2), np.float64))
    tile_backend.run(_kernel(target, half), tile_backend.asarray(x), nt.partition(z, (1, 2)), 2)
    got = tile_backend.to_numpy(z)
    np_dtype = np.dtype(str(target))
    want_t = _expected(x, np_dtype)
    want_int = _expected(x, np.int64)
    bad = np.flatnonzero(got[:, 0] != want_t)
    assert bad.size == 0, (x[bad[:5]], got[bad[:5], 0], want_t[bad[:5]])
    bad = np.flatnonzero(got[:, 1] != want_int)
    assert bad.size == 0, (x[bad[:5]], got[bad[:5], 1], want_int[bad[:5]])
