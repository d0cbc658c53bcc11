"""An unchecked kernel without partitions launches on an explicit grid of up to three axes
(Triton's ``grid=(B, H)``): ``bid(d)`` and ``num_blocks(d)`` along each, 0 and 1 past the
grid's rank; both backends, against NumPy. Grids past the launch's limits are refused before
any GPU work."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError


@nt.jit(unchecked=True)
def coordinates(out: nt.Mutable, counts: nt.Mutable, B: nt.Constant):
    i, h, z = nt.bid(0), nt.bid(1), nt.bid(2)
    at = (nt.full((B,), i, nt.int32), nt.full((B,), h, nt.int32), nt.full((B,), z, nt.int32))
    first = nt.arange(B) < 1
    nt.scatter(out, at, nt.full((B,), i * 10000 + h * 100 + z, nt.int64), mask=first)
    n = nt.num_blocks(0) * 10000 + nt.num_blocks(1) * 100 + nt.num_blocks(2)
    nt.atomic_add(counts, nt.full((B,), 0, nt.int32), nt.full((B,), n, nt.int64), mask=first)


@pytest.mark.parametrize("grid", [(3, 4, 2), (5, 3), (7,), 6])
def test_every_block_of_an_explicit_grid_runs_once_with_its_coordinates(tile_backend, grid):
    axes = grid if isinstance(grid, tuple) else (grid,)
    full = axes + (1,) * (3 - len(axes))
    out = tile_backend.asarray(np.full(full, -1, np.int64))
    counts = tile_backend.asarray(np.zeros(1, np.int64))
    tile_backend.run(coordinates, out, counts, 32, grid=grid, unchecked=True)
    i, h, z = np.indices(full)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), i * 10000 + h * 100 + z)
    n = full[0] * 10000 + full[1] * 100 + full[2]
    np.testing.assert_array_equal(tile_backend.to_numpy(counts), [n * int(np.prod(full))])


@pytest.mark.parametrize("grid", [(1, 2, 3, 4), (2, 65536), (1, 1, 70000), (-1,), (2 ** 31,),
                                  1.5, (True,), ()])
def test_grids_past_the_launch_limits_are_refused(grid):
    out = np.zeros((2, 2, 2), np.int64)
    with pytest.raises(TileArgumentError, match="grid: expected a number of blocks"):
        coordinates(out, np.zeros(1, np.int64), 32, grid=grid, interpret=True, unchecked=True)
    assert not out.any()
