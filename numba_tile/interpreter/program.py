"""Interpreter rules of the program ops."""

from __future__ import annotations

import numpy as np

from .._registry import interp_rule
from .values import current_block


@interp_rule("bid")
def interp_bid(axis=0):
    # int64, as the compiled kernel types it (a typed scalar: promotion by width)
    return np.int64(current_block().index[axis])


@interp_rule("num_blocks")
def interp_num_blocks(axis=0):
    return np.int64(current_block().grid[axis])
