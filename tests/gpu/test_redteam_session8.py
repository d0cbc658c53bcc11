"""Red team of session 8 (load_at, new math ops, unsigned/int16/FP8 dtypes), both backends:
what the interpreter computes (tests/unit/test_redteam_session8.py) must be what the GPU
computes. The ``gpu`` halves skip without a GPU."""

import numpy as np
import pytest

import numba_tile as nt
from tests.unit.test_redteam_session8 import (_ASTYPE, INT_DTYPES, SPECIAL,
                                              _load_at_from_u64_tensor, _load_at_u64, _window,
                                              saturating)


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_astype_float_to_int_saturates_on_both_backends(tile_backend, dt):
    out = tile_backend.asarray(np.zeros(16, dt))
    tile_backend.run(_ASTYPE[np.dtype(dt)], tile_backend.asarray(SPECIAL), nt.partition(out, 16),
                     16)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), saturating(SPECIAL, dt))


@pytest.mark.parametrize("r", [-3, -1, -(2 ** 63), 5])
def test_load_at_uint64_offsets_on_both_backends(tile_backend, r):
    host = np.arange(300, dtype=np.float32)
    x = tile_backend.asarray(host)
    out = tile_backend.asarray(np.zeros(8, np.float32))
    tile_backend.run(_load_at_u64, x, nt.partition(out, 8), r, 8)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), _window(host, r, 8, -1.0))
    out = tile_backend.asarray(np.zeros(8, np.float32))
    offs = tile_backend.asarray(np.array([r % (1 << 64)], np.uint64))
    tile_backend.run(_load_at_from_u64_tensor, x, offs, nt.partition(out, 8), 8)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), _window(host, r, 8, -1.0))
