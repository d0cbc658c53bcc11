"""Typing rules of the random ops: randint, randint4x, rand, randn (Philox, as Triton).

Each takes a scalar integer ``seed`` and a tile of int32 or int64 ``offsets`` and makes a tile
of the offsets' shape, register layout and valid extents: int32 words (randint, randint4x) or
float32 (rand, randn) for either offsets dtype (Philox4x32-10 for both, as Triton 3.6). The
ops read and write no memory (no effects), so safe kernels may call them.
"""

from __future__ import annotations

import numpy as np
from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from ..layout import BlockedLayout
from .common import fail, make_tile
from .types import TileType

#: the offsets dtypes. Both run Philox4x32-10 on 32-bit words, as Triton 3.6's ``randint4x``:
#: the counter is ``(offset low 32 bits, offset high 32 bits, 0, 0)``, the high word 0 for
#: int32 offsets and ``(offset >> 32)`` truncated to uint32 for int64 ones
OFFSET_DTYPES = (dtypes.int32, dtypes.int64)
#: the dtype of randint's and randint4x's words for either offsets dtype: Triton's uint32
#: bits as int32 (``astype(words, uint32)`` gives Triton's values)
WORD_DTYPE = dtypes.int32

#: Philox rounds (Triton's ``N_ROUNDS_DEFAULT``)
ROUNDS = 10

#: Philox4x32 constants (Triton's ``philox_impl`` for uint32 words; Salmon et al. 2011,
#: Random123's ``PHILOX_W32_0/1`` and ``PHILOX_M4x32_0/1``): the Weyl increments of the key
#: and the round multipliers
KEY_A = 0x9E3779B9
KEY_B = 0xBB67AE85
ROUND_A = 0xD2511F53
ROUND_B = 0xCD9E8D57

#: float32 scale of Triton's ``uint_to_uniform_float`` for 32-bit words: its literal
#: ``4.6566127342e-10`` rounded to float32, bits 0x2fffffff (``2**-31 - 2**-55``): the largest
#: word then gives ``1 - 2**-24``, below 1 (``float32(2**31 - 1)`` is ``2**31``)
UNIFORM_SCALE = float(np.float32(4.6566127342e-10))
#: Triton's ``pair_uniform_to_normal``: ``u1 = maximum(1.0e-7, u1)`` (no log(0)) and
#: ``th = 6.283185307179586 * u2``, both constants rounded to float32
BOX_MULLER_MIN = float(np.float32(1.0e-7))
TWO_PI = float(np.float32(6.283185307179586))


def check_seed(opname: str, seed) -> None:
    """``seed`` must be a scalar integer (a runtime parameter, a constant, arithmetic on them).

    Raises:
        TileTypingError: a tile, a float, a bool or anything else.
    """
    expected = ("an integer scalar (int32 or int64: a runtime kernel parameter, a Constant or "
                "integer arithmetic on them)")
    if isinstance(seed, TileType):
        raise fail(opname, "seed", expected, f"a tile ({seed}); one seed keys the whole tile, "
                   "the offsets tell its elements apart")
    if not isinstance(seed, types.Integer):            # Numba's Boolean is no Integer
        raise fail(opname, "seed", expected, seed)


def offsets_tile(opname: str, offsets) -> TileType:
    """The offsets tile as the op's lowering receives it: the blocked layout it has, or the
    blocked layout of its shape (the registry converts a tile in another layout,
    ``_registry._argument_type``).

    Raises:
        TileTypingError: not a tile of int32 or int64.
    """
    expected = "a tile of int32 or int64 (counters, e.g. bid(0) * BLOCK + arange(BLOCK))"
    if not isinstance(offsets, TileType):
        raise fail(opname, "offsets", expected, offsets)
    if offsets.dtype not in OFFSET_DTYPES:
        raise fail(opname, "offsets", expected, f"a tile of {dtypes.name(offsets.dtype)}")
    if isinstance(offsets.layout, BlockedLayout):
        return offsets
    return make_tile(offsets.dtype, offsets.shape, opname, masked=offsets.masked,
                     align=offsets.align)


def _checked(opname, seed, offsets) -> TileType:
    check_seed(opname, seed)
    return offsets_tile(opname, offsets)


@typing_rule("randint")
def type_randint(seed, offsets):
    return _checked("randint", seed, offsets).with_dtype(WORD_DTYPE)


@typing_rule("randint4x")
def type_randint4x(seed, offsets):
    return types.UniTuple(_checked("randint4x", seed, offsets).with_dtype(WORD_DTYPE), 4)


@typing_rule("rand")
def type_rand(seed, offsets):
    return _checked("rand", seed, offsets).with_dtype(dtypes.float32)


@typing_rule("randn")
def type_randn(seed, offsets):
    return _checked("randn", seed, offsets).with_dtype(dtypes.float32)
