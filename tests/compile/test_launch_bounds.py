"""Launch bounds in the PTX: ``.maxntid`` from num_warps, ``.minnctapersm`` from
``min_blocks_per_sm``, and the option's argument checks."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError


def double(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(y, nt.load_like(x, y) * 2.0)


def _ptx(kernel):
    x = np.zeros((4, 1024), np.float32)
    return kernel.ptx(x, nt.partition(x.copy(), (1, 1024)), 1, 1024)


@pytest.mark.parametrize("num_warps, blocks", [(4, None), (8, 2), (16, 3)])
def test_launch_bounds_in_ptx(num_warps, blocks):
    ptx = _ptx(nt.jit(num_warps=num_warps, min_blocks_per_sm=blocks)(double))
    assert f".maxntid {32 * num_warps}, 1, 1" in ptx
    if blocks is None:
        assert ".minnctapersm" not in ptx
    else:
        assert f".minnctapersm {blocks}" in ptx


@pytest.mark.parametrize("bad", [0, 33, 2.0, "2"])
def test_bad_min_blocks_per_sm(bad):
    with pytest.raises(TileArgumentError, match="min_blocks_per_sm"):
        nt.jit(min_blocks_per_sm=bad)(double)


def test_with_options_sets_keeps_or_drops_the_bound():
    """``with_options(min_blocks_per_sm=n)`` gives a variant with the bound, leaving it out
    keeps the kernel's, ``None`` drops it; the original is unchanged; a bad value is refused."""
    base = nt.jit(num_warps=4, min_blocks_per_sm=2)(double)
    assert ".minnctapersm 2" in _ptx(base.with_options(num_warps=8))
    assert ".minnctapersm 6" in _ptx(base.with_options(min_blocks_per_sm=6))
    assert ".minnctapersm" not in _ptx(base.with_options(min_blocks_per_sm=None))
    assert ".minnctapersm 2" in _ptx(base)
    with pytest.raises(TileArgumentError, match="min_blocks_per_sm"):
        base.with_options(min_blocks_per_sm=0)
