"""Host partitions (runtime/partition.py)."""

import math

import numpy as np
import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime.partition import Partition, grouped, launch_fields, partition, tile_coords


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
    assert launch_fields(partition(a, 4), "z") == (a, (4,), None, "row")
    assert launch_fields(partition(a, (np.int64(2),), blocks=np.int32(3)), "z") == (a, (2,), 3,
                                                                                    "row")
    b = np.zeros((8, 8))
    fields = launch_fields(partition(b, (2, 2), order=("grouped", np.int64(3))), "z")
    assert fields == (b, (2, 2), None, ("grouped", 3)) and type(fields[3][1]) is int


@pytest.mark.parametrize("attr,value", [
    ("tile_shape", (3,)), ("tile_shape", (0,)), ("tile_shape", (-4,)), ("tile_shape", (4.0,)),
    ("tile_shape", (True,)), ("tile_shape", (np.int64(4),)), ("tile_shape", [4]),
    ("tile_shape", ()), ("tile_shape", None), ("blocks", 0), ("blocks", -1), ("blocks", True),
    ("blocks", 2**31), ("blocks", 1.0), ("blocks", "2"),
    ("order", None), ("order", "col"), ("order", ["grouped", 2]), ("order", ("grouped", 0)),
    ("order", ("grouped", True)), ("order", ("grouped", 2.0)), ("order", ("grouped", -1)),
    ("order", ("grouped", 2**31)), ("order", ("grouped", np.int64(2))), ("order", ("grouped",)),
    ("order", ("grouped", 2, 3))])
def test_launch_fields_refuses_fields_changed_behind_the_guard(attr, value):
    p = partition(np.zeros((8, 8)), (4, 4)) if attr == "order" else partition(np.zeros(8), 4)
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


# ----------------------------------------------------------------------------- tile orders


def test_orders_are_normalized():
    a = np.zeros((8, 8))
    assert partition(a, (2, 2)).order == "row"
    assert partition(a, (2, 2), order="row").order == "row"
    assert partition(a, (2, 2), order=None).order == "row"
    assert partition(a, (2, 2), order=grouped(8)).order == ("grouped", 8)
    assert partition(a, (2, 2), order=["grouped", np.int32(3)]).order == ("grouped", 3)
    assert grouped(np.int64(5)) == ("grouped", 5) and type(grouped(np.int64(5))[1]) is int
    assert partition(a, (2, 2, 1), order=grouped(1)).order == ("grouped", 1)


@pytest.mark.parametrize("group", [0, -1, True, False, np.bool_(True), 2.0, "3", None, 2**31,
                                   (2,)])
def test_grouped_refuses_a_bad_group(group):
    with pytest.raises(TileArgumentError) as info:
        grouped(group)
    msg = info.value.message
    assert msg.startswith("argument 'group': expected a positive int (from 1 to 2**31 - 1), got ")
    assert f"({type(group).__name__})" in msg
    assert info.value.filename == __file__ and info.value.lineno is not None


@pytest.mark.parametrize("order,fragment", [
    ("col", "expected None or 'row' (row-major), or numba_tile.grouped(GROUP)"),
    ("ROW", "got 'ROW' (str)"),
    (3, "got 3 (int)"),
    (("grouped",), "got ('grouped',) (tuple)"),
    (("Grouped", 2), "got ('Grouped', 2) (tuple)"),
    (("grouped", 0), "the group of a grouped order must be a positive int"),
    (("grouped", -4), "got -4 (int)"),
    (("grouped", True), "got True (bool)"),
    (("grouped", 2.0), "got 2.0 (float)"),
])
def test_partition_refuses_a_bad_order(order, fragment):
    with pytest.raises(TileArgumentError) as info:
        partition(np.zeros((8, 8)), (2, 2), order=order)
    assert "argument 'order'" in info.value.message and fragment in info.value.message
    assert info.value.filename == __file__ and info.value.lineno is not None


def test_a_grouped_order_needs_rank_two():
    with pytest.raises(TileArgumentError, match="needs a tile shape of rank 2 or more"):
        partition(np.zeros(8), 4, order=grouped(2))


def test_an_ordered_partition_stays_immutable_and_copies():
    import copy
    import pickle

    p = partition(np.zeros((8, 8)), (4, 4), blocks=2, order=grouped(3))
    with pytest.raises(TileArgumentError, match="immutable: cannot set 'order'"):
        p.order = "row"
    for q in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert (q.tile_shape, q.blocks, q.order) == ((4, 4), 2, ("grouped", 3))
    assert "order=('grouped', 3)" in repr(p) and "order" not in repr(partition(None, (4, 4)))


def triton_grouped(pid, m, n, group):
    """Triton's grouped order, as its matmul tutorial writes it."""
    num_pid_in_group = group * n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * group
    group_size_m = min(m - first_pid_m, group)
    return (first_pid_m + ((pid % num_pid_in_group) % group_size_m),
            (pid % num_pid_in_group) // group_size_m)


@pytest.mark.parametrize("grid", [(5, 7), (7, 5), (1, 1), (1, 9), (9, 1), (8, 8), (13, 3)])
@pytest.mark.parametrize("group", [1, 2, 3, 8, 100])
def test_grouped_coords_are_tritons_formula_and_a_bijection(grid, group):
    m, n = grid
    seen = set()
    for pid in range(m * n):
        c = tile_coords(pid, grid, ("grouped", group))
        assert c == triton_grouped(pid, m, n, group)
        seen.add(c)
    assert seen == {(i, j) for i in range(m) for j in range(n)}


def test_grouped_coords_with_leading_axes_are_row_major_outermost():
    grid = (2, 3, 5, 7)
    for pid in range(math.prod(grid)):
        lead, rest = divmod(pid, 35)
        assert tile_coords(pid, grid, ("grouped", 3)) == (lead // 3, lead % 3,
                                                          *triton_grouped(rest, 5, 7, 3))


def test_row_coords_and_grouped_one_are_row_major():
    for grid in [(6,), (4, 5), (2, 3, 4)]:
        for pid in range(math.prod(grid)):
            want = tuple(int(i) for i in np.unravel_index(pid, grid))
            assert tile_coords(pid, grid, "row") == want
            if len(grid) > 1:
                assert tile_coords(pid, grid, ("grouped", 1)) == want
