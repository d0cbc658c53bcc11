"""Interpreter rules of the program ops."""

from __future__ import annotations

import numpy as np

from .._registry import interp_rule
from .values import current_block


@interp_rule("bid")
def interp_bid(axis=0):
    # int64, as the compiled kernel types it (a typed scalar: promotion by width); an axis
    # past an explicit grid's is 0, as the GPU's ctaid.y and ctaid.z of a 1-D launch
    index = current_block().index
    return np.int64(index[axis] if axis < len(index) else 0)


@interp_rule("num_blocks")
def interp_num_blocks(axis=0):
    grid = current_block().grid
    return np.int64(grid[axis] if axis < len(grid) else 1)
