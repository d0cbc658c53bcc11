"""``load_at`` with uint64 offsets on both backends: what the interpreter computes
(tests/unit/test_load_at_uint64_offsets.py) is what the GPU computes. The ``gpu`` halves skip
without a GPU."""

import numpy as np
import pytest

import numba_tile as nt
from tests.unit.test_load_at_uint64_offsets import _load_at_from_u64_tensor, _load_at_u64, _window


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
