"""``astype`` from float to every integer dtype, out of range, on both backends: what the
interpreter computes (tests/unit/test_astype_float_to_int.py) is what the GPU computes. The
``gpu`` halves skip without a GPU."""

import numpy as np
import pytest

import numba_tile as nt
from tests.unit.test_astype_float_to_int import _ASTYPE, INT_DTYPES, SPECIAL, saturating


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_astype_float_to_int_saturates_on_both_backends(tile_backend, dt):
    out = tile_backend.asarray(np.zeros(16, dt))
    tile_backend.run(_ASTYPE[np.dtype(dt)], tile_backend.asarray(SPECIAL), nt.partition(out, 16),
                     16)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), saturating(SPECIAL, dt))
