"""``partition()``'s fast path (runtime/partition.py) builds what the checked path builds, keeps
its refusals, and normalizes int-likes instead of trusting them."""

import numpy as np
import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime import partition as partition_module


def test_partition_fast_path_builds_what_the_checked_path_builds():
    arr = object()
    partition_module.partition(arr, 64)                       # seen
    p = partition_module.partition(arr, 64)
    q = partition_module.Partition(arr, 64)
    assert type(p) is partition_module.Partition
    assert (p.array, p.tile_shape, p.blocks, p.order) == (q.array, q.tile_shape, q.blocks,
                                                          q.order)
    assert p.tile_shape is q.tile_shape and p.order is partition_module.ROW
    with pytest.raises(TileArgumentError):
        p.array = 1
    import copy
    import pickle
    c = copy.copy(p)
    assert c.tile_shape == p.tile_shape
    pickle.dumps(partition_module.partition(np.zeros(4), 64))


@pytest.mark.parametrize("ts", [True, False, np.bool_(True), 0, -64, 3, 2.0, 64.0, None, "64",
                                (True,), (64.0,), []])
def test_partition_refusals_hold_on_the_fast_path(ts):
    partition_module.partition(object(), 64)
    partition_module.partition(object(), 1)
    with pytest.raises(TileArgumentError):
        partition_module.partition(object(), ts)


def test_partition_int_likes_are_normalized_not_trusted():
    class I(int):
        def __hash__(self):
            return hash(64)
    p = partition_module.partition(object(), np.int64(128))
    assert p.tile_shape == (128,) and type(p.tile_shape[0]) is int
    partition_module.partition(object(), 64)
    q = partition_module.partition(object(), I(64))
    assert type(q.tile_shape[0]) is int
    with pytest.raises(TileArgumentError):
        partition_module.partition(object(), I(3))
    r = partition_module.partition(object(), 64, blocks=2)
    assert r.blocks == 2
    with pytest.raises(TileArgumentError):
        partition_module.partition(object(), 64, blocks=True)
    with pytest.raises(TileArgumentError):
        partition_module.partition(object(), 64, order=("grouped", 2))
