"""A homogeneous tuple of scalars indexed at run time (``x.shape[i]``, ``T[i]`` of a tuple
Constant): negative indices count from the end, and an index outside the tuple reads the
item type's zero on the GPU and in the interpreter alike (numba-cuda raised IndexError,
which ends a GPU thread silently, where the interpreter raised)."""

import numpy as np
import pytest

import numba_tile as nt


@nt.jit
def shape_and_constant(x, idx, z: nt.Partition[(1, 2)], T: nt.Constant):
    i = idx[nt.bid(0)]
    col = nt.expand_dims(nt.arange(2), 0)
    out = nt.zeros((1, 2), nt.float64)
    out = nt.where(col == 0, nt.float64(x.shape[i]), out)
    out = nt.where(col == 1, nt.float64(T[i]), out)
    nt.store(z, out)


@pytest.mark.parametrize("T", [(2.5, -1.0, 7.25), (3, 9, -4)], ids=["float", "int"])
def test_a_tuple_read_at_a_run_time_index(tile_backend, T):
    rng = np.random.default_rng()
    shape = (int(rng.integers(1, 50)), int(rng.integers(1, 50)))
    x = np.zeros(shape, np.float32)
    idx = np.arange(-5, 6, dtype=np.int64)
    rng.shuffle(idx)
    z = tile_backend.asarray(np.full((idx.size, 2), np.nan))
    tile_backend.run(shape_and_constant, tile_backend.asarray(x), tile_backend.asarray(idx),
                     nt.partition(z, (1, 2)), T)

    def at(t, i):
        return float(t[i]) if -len(t) <= i < len(t) else 0.0

    want = np.array([[at(shape, i), at(T, i)] for i in idx])
    np.testing.assert_array_equal(tile_backend.to_numpy(z), want)
