"""``gather`` in safe kernels (safe reads at any position): from a read-only tensor,
at computed coordinates, bounds-checked (out-of-range coordinates read the padding); on the GPU
and in the interpreter against NumPy. From a partition it stays an unchecked operation."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import UncheckedOpError


@nt.jit
def embed(table, ids, out: nt.Partition["B"], B: nt.Constant, PAD: nt.Constant):
    """out[i] = table[ids[i]] (a 1-D lookup), PAD where ids[i] is outside the table."""
    nt.store(out, nt.gather(table, nt.load_like(ids, out), padding=PAD))


@nt.jit
def rows_gather(x, rows, out: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    """out[i, j] = x[rows[i], j + 3] (element offsets, not tile multiples), 0 outside."""
    r = nt.load(rows, (nt.bid(0),), (R,), padding=-1)
    i = nt.broadcast_to(nt.expand_dims(r, 1), (R, C))
    j = nt.broadcast_to(nt.expand_dims(nt.arange(C), 0), (R, C)) + nt.bid(1) * C + 3
    nt.store(out, nt.gather(x, (i, j), padding=0.0))


def test_a_lookup_from_a_read_only_table_with_out_of_range_ids(tile_backend):
    rng = np.random.default_rng()
    table = rng.standard_normal(500).astype(np.float32)
    n = 1000 + int(rng.integers(1, 50))
    ids = rng.integers(-20, 520, n).astype(np.int32)
    ids[:3] = [-(2**31), 2**31 - 1, 499]                   # extremes and the last element
    out = tile_backend.asarray(np.full(n, np.nan, np.float32))
    tile_backend.run(embed, tile_backend.asarray(table), tile_backend.asarray(ids),
                     nt.partition(out, 256), 256, -7.0)
    ok = (ids >= 0) & (ids < 500)
    want = np.where(ok, table[np.clip(ids, 0, 499)], np.float32(-7.0))
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)


def test_a_2d_gather_at_element_offsets(tile_backend):
    rng = np.random.default_rng()
    x = rng.standard_normal((90, 70)).astype(np.float32)
    rows = rng.integers(-5, 95, 64).astype(np.int64)
    out = tile_backend.asarray(np.full((64, 64), np.nan, np.float32))
    tile_backend.run(rows_gather, tile_backend.asarray(x), tile_backend.asarray(rows),
                     nt.partition(out, (16, 32)), 16, 32)
    want = np.zeros((64, 64), np.float32)
    for a in range(64):
        for b in range(64):
            r, c = rows[a], b + 3
            if 0 <= r < 90 and 0 <= c < 70:
                want[a, b] = x[r, c]
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)


@nt.jit
def gather_own_partition(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.gather(z, nt.arange(B) * 0) + nt.load_like(x, z))


def test_gather_from_a_partition_stays_unchecked():
    x = np.zeros(256, np.float32)
    with pytest.raises(UncheckedOpError, match="read-only tensors only.*'z' is a partition"):
        gather_own_partition(x, nt.partition(np.zeros(256, np.float32), 128), 128,
                             interpret=True)
