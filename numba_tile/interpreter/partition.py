"""Interpreter rules of ``tiles`` (the block's tiles, as branded indices) and ``idx[d]``.

Tile number ``k`` of a partition is ``runtime/partition.tile_coords(k, grid, order)``, the
mapping the GPU lowering computes (``lowering/tile_order.tile_coords``), so each block gets
the same tiles in both.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .._registry import interp_rule
from ..runtime.partition import tile_coords
from .values import InterpIndex, InterpStrip, current_block


@interp_rule("strips")
def interp_strips(z):
    blk = current_block()
    grid = tuple(-(-s // t) for s, t in zip(z.array.shape, z.tile_shape))
    lead = grid[:-1]
    nblocks = math.prod(blk.grid)
    for s in range(blk.linear, math.prod(lead), nblocks):
        yield InterpStrip(z.name, tile_coords(s, lead, "row"))


@interp_rule("tiles")
def interp_tiles(z, strip=None, reverse=False):
    if not isinstance(reverse, (bool, np.bool_)):
        from ..errors import TileTypingError
        raise TileTypingError(f'Invalid argument "reverse" of tiles(): expected a static bool '
                              f'(True/False written in the kernel, or a Constant parameter), '
                              f'got {reverse!r}')
    blk = current_block()
    grid = tuple(-(-s // t) for s, t in zip(z.array.shape, z.tile_shape))
    if strip is not None:
        cols = range(grid[-1])
        for j in (reversed(cols) if reverse else cols):
            yield InterpIndex(z.name, tuple(strip.coords) + (j,))
        return
    total = math.prod(grid)
    nblocks = math.prod(blk.grid)
    lins = range(blk.linear, total, nblocks)
    for lin in (reversed(lins) if reverse else lins):
        yield InterpIndex(z.name, tile_coords(lin, grid, z.order))


@interp_rule("index_getitem")
def interp_index_getitem(index, d):
    from .values import InterpTensor
    if isinstance(index, InterpTensor):            # x[i] on a tensor parameter
        from .memory import tensor_element
        return tensor_element(index, d)
    # typing allowed only a static int axis in [-ndim, ndim) on a branded index; int64, as
    # the compiled kernel types it
    return np.int64(index.coords[operator.index(d)])


@interp_rule("num_tiles")
def interp_num_tiles(x, axis, tile):
    return np.int64(-(-x.array.shape[axis] // int(tile)))
