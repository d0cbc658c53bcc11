"""Interpreter rule of ``tiles``: the block's tiles, as branded indices."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._registry import interp_rule
from .values import current_block


@dataclass(frozen=True)
class InterpIndex:
    """A tile index minted by ``tiles(z)``: ``brand`` is z's parameter name."""

    brand: str
    coords: tuple


@interp_rule("tiles")
def interp_tiles(z):
    blk = current_block()
    grid = tuple(-(-s // t) for s, t in zip(z.array.shape, z.tile_shape))
    total = math.prod(grid)
    nblocks = math.prod(blk.grid)
    for lin in range(blk.linear, total, nblocks):
        yield InterpIndex(z.name, tuple(int(i) for i in np.unravel_index(lin, grid)))


@interp_rule("num_tiles")
def interp_num_tiles(x, axis, tile):
    return -(-x.array.shape[axis] // int(tile))
