"""The interpreter's race detector: every element of a partition remembers the block that
wrote it, and a second block writing it is reported with both block ids and the element."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import dtypes
from numba_tile.errors import DataRaceError
from numba_tile.interpreter.values import BlockContext, InterpPartition, InterpTile, running_block
from numba_tile.interpreter.memory import interp_store


def test_two_blocks_writing_one_element_are_reported():
    z = np.zeros((8, 8), np.float32)
    part = InterpPartition("z", z, dtypes.float32, (4, 4))
    tile = InterpTile(np.ones((4, 4), np.float32), dtypes.float32)
    with running_block(BlockContext(1, (2, 2))):             # block (0, 1): z[0:4, 4:8]
        interp_store(part, tile)
    with running_block(BlockContext(1, (2, 2))):             # the same block again: no race
        interp_store(part, tile)
    # a (buggy) block whose own-tile computation lands on block 1's tile
    part.own_index = lambda: (0, 1)
    with running_block(BlockContext(3, (2, 2))):
        with pytest.raises(DataRaceError) as info:
            interp_store(part, tile)
    msg = str(info.value)
    assert "'z'" in msg and "(0, 4)" in msg and "block (0, 1)" in msg and "block (1, 1)" in msg


@pytest.mark.parametrize("example", ["vecadd", "saxpy"])
def test_safe_kernels_never_trip_it(example, monkeypatch):
    """Every block of the safe example kernels writes only its own tile (the detector runs on
    every interpreted store)."""
    import importlib
    import sys
    from pathlib import Path
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples"))
    mod = importlib.import_module(example)
    rng = np.random.default_rng()
    if example == "vecadd":
        x, y = rng.standard_normal(5000).astype(np.float32), rng.standard_normal(5000).astype(np.float32)
        z = np.zeros(5000, np.float32)
        mod.vecadd(x, y, nt.partition(z, 1024), 1024, interpret=True)
        np.testing.assert_allclose(z, x + y, rtol=1e-6)
    else:
        x = rng.standard_normal((100, 70)).astype(np.float32)
        out = np.zeros((100, 70), np.float32)
        mod.saxpy(2.0, x, x, nt.partition(out, (32, 64)), 32, 64, interpret=True)
        np.testing.assert_allclose(out, 3.0 * x, rtol=1e-6)
    sys.modules.pop(example, None)
