"""Host partitions (runtime/partition.py)."""

import math

import numpy as np
import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime.partition import Partition, partition


@pytest.mark.parametrize("tile", [1, 2, 64, (4,), (2, 8), [16, 1, 4], (np.int64(8),)])
def test_valid_tile_shapes(tile):
    a = np.zeros(3)
    p = partition(a, tile)
    expected = tuple(int(t) for t in (tile if isinstance(tile, (tuple, list)) else (tile,)))
    assert isinstance(p, Partition) and p.array is a and p.tile_shape == expected


@pytest.mark.parametrize("tile", [0, 3, -4, (4, 6), (), 2.0, True, (8, False), "8", None,
                                  (4, None)])
def test_invalid_tile_shapes_name_tile_shape(tile):
    with pytest.raises(TileArgumentError) as info:
        partition(np.zeros(3), tile)
    assert "'tile_shape'" in str(info.value)
    assert repr(tile) in str(info.value) or repr(tuple(tile)) in str(info.value)


@pytest.mark.parametrize("shape,tile", [((10,), (4,)), ((8, 8), (4, 4)), ((0, 5), (2, 2)),
                                        ((17, 1, 33), (16, 1, 32)), ((3, 4), (8, 8))])
def test_grid_is_ceil_div(shape, tile):
    p = partition(None, tile)
    assert p.grid(shape) == tuple(math.ceil(n / t) for n, t in zip(shape, tile))


def test_grid_rank_mismatch():
    with pytest.raises(TileArgumentError, match="rank"):
        partition(None, (4, 4)).grid((8,))
