"""Host partitions (runtime/partition.py)."""

import math

import numpy as np
import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime.partition import Partition, launch_fields, partition


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


def test_partitions_are_immutable_and_copy_through_init():
    import copy
    import pickle

    p = partition(np.zeros(8), 4, blocks=2)
    for attr, value in [("tile_shape", (3,)), ("blocks", -1), ("array", None), ("other", 1)]:
        with pytest.raises(TileArgumentError, match=f"immutable: cannot set '{attr}'"):
            setattr(p, attr, value)
    with pytest.raises(TileArgumentError, match="cannot delete 'array'"):
        del p.array
    for q in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert (q.tile_shape, q.blocks) == ((4,), 2) and q.array.shape == (8,)


def test_launch_fields_returns_checked_fields():
    a = np.zeros(8)
    assert launch_fields(partition(a, 4), "z") == (a, (4,), None)
    assert launch_fields(partition(a, (np.int64(2),), blocks=np.int32(3)), "z") == (a, (2,), 3)


@pytest.mark.parametrize("attr,value", [
    ("tile_shape", (3,)), ("tile_shape", (0,)), ("tile_shape", (-4,)), ("tile_shape", (4.0,)),
    ("tile_shape", (True,)), ("tile_shape", (np.int64(4),)), ("tile_shape", [4]),
    ("tile_shape", ()), ("tile_shape", None), ("blocks", 0), ("blocks", -1), ("blocks", True),
    ("blocks", 2**31), ("blocks", 1.0), ("blocks", "2")])
def test_launch_fields_refuses_fields_changed_behind_the_guard(attr, value):
    p = partition(np.zeros(8), 4)
    object.__setattr__(p, attr, value)
    with pytest.raises(TileArgumentError) as info:
        launch_fields(p, "out")
    assert "argument 'out'" in info.value.message
    assert f"{attr} was changed after numba_tile.partition() checked it" in info.value.message
    assert repr(value) in info.value.message


def test_launch_fields_refuses_a_deleted_field():
    p = partition(np.zeros(8), 4)
    object.__delattr__(p, "blocks")
    with pytest.raises(TileArgumentError, match="argument 'out': the partition has lost a field"):
        launch_fields(p, "out")


def test_an_empty_tile_shape_for_a_0d_array_says_what_to_pass():
    with pytest.raises(TileArgumentError) as info:
        partition(np.zeros(()), ())
    assert "0-d arrays are not supported; pass a Python number" in info.value.message
    assert info.value.lineno is not None and info.value.filename == __file__
