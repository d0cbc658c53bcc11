"""A mapped partition's ``tiles()`` walk numbers tiles of 256 or more elements in 32 bits
(``layout.SMALL_TILE_ELEMS``): ragged tiles can number 2**32 or more in an array of a few
GiB, and such a launch is refused before any work, naming the partition, its shape, the
tile count and what to do, in the interpreter as on the GPU (the check is the launch's)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import PartitionShapeError


@nt.jit
def copy_walk(x, z: nt.Partition[(1, 256)]):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(x, (idx[0], idx[1]), (1, 256)), idx)


@nt.jit
def copy_walk_reversed(x, z: nt.Partition[(1, 256)]):
    for idx in nt.tiles(z, reverse=True):
        nt.store(z, nt.load(x, (idx[0], idx[1]), (1, 256)), idx)


@nt.jit
def copy_strips(x, z: nt.Partition[(1, 256)]):
    for row in nt.strips(z):
        for idx in nt.tiles(z, row):
            nt.store(z, nt.load(x, (idx[0], idx[1]), (1, 256)), idx)


def _huge(rows):
    # np.zeros maps zero pages lazily: nothing is touched before the refusal
    return np.zeros((rows, 1), np.int8)


@pytest.mark.parametrize("kernel", [copy_walk, copy_walk_reversed, copy_strips],
                         ids=["tiles", "reversed", "strips"])
@pytest.mark.parametrize("rows", [2**32, 2**32 + 16])
def test_mapped_partition_of_2_32_ragged_tiles_is_refused(kernel, rows):
    z = _huge(rows)
    x = np.ones((1, 1), np.int8)
    blocks = int(np.random.default_rng().integers(1, 64))
    with pytest.raises(PartitionShapeError) as info:
        kernel(x, nt.partition(z, (1, 256), blocks=blocks), interpret=True)
    msg = str(info.value)
    assert "'z'" in msg and str(rows) in msg and "(1, 256)" in msg and "2**32 - 1" in msg
    assert info.value.lineno is not None and info.value.filename == __file__
    assert not z[:16].any() and not z[-16:].any()


def test_just_below_the_limit_is_accepted_by_the_check():
    """2**32 - 1 tiles pass the launch check (the walk's numbers fit in 32 bits); the check
    is run alone here: walking 2**32 tiles in the interpreter is not a unit test."""
    from numba_tile.layout import MAX_TILES_32, SMALL_TILE_ELEMS
    from numba_tile.runtime.launch_checks import _check_tile_count

    class Spec:
        name = "z"

    class Arr:
        shape = (MAX_TILES_32 - 1, 1)

    _check_tile_count(Spec, Arr, (1, SMALL_TILE_ELEMS), None)      # no error
    _check_tile_count(Spec, type("A", (), {"shape": (MAX_TILES_32, 1)}),
                      (1, SMALL_TILE_ELEMS // 2), None)              # 64-bit numbering
