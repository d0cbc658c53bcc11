"""Typing rules of the random ops: randint, randint4x, rand, randn (Philox, as Triton).

Each takes a scalar integer ``seed`` and a tile of int32 or int64 ``offsets`` and makes a tile
of the offsets' shape, register layout and valid extents. The ops read and write no memory
(no effects), so safe kernels may call them.
"""

from __future__ import annotations

import numpy as np
from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from ..layout import BlockedLayout
from .common import fail, make_tile
from .types import TileType

#: the offsets dtypes (int32: Philox4x32-10 on 32-bit words; int64: Philox4x64-10 on 64-bit
#: words, as Triton's ``philox`` picks by the offsets' bit width)
OFFSET_DTYPES = (dtypes.int32, dtypes.int64)

#: Philox rounds (Triton's ``N_ROUNDS_DEFAULT``)
ROUNDS = 10

#: Philox constants by word size (Triton's ``philox_impl``; Salmon et al. 2011, Random123's
#: ``PHILOX_W32_0/1``, ``PHILOX_M4x32_0/1`` and their 64-bit counterparts): the Weyl
#: increments of the key (KEY_A, KEY_B) and the round multipliers (ROUND_A, ROUND_B)
PHILOX = {
    32: {"KEY_A": 0x9E3779B9, "KEY_B": 0xBB67AE85,
         "ROUND_A": 0xD2511F53, "ROUND_B": 0xCD9E8D57},
    64: {"KEY_A": 0x9E3779B97F4A7C15, "KEY_B": 0xBB67AE8584CAA73B,
         "ROUND_A": 0xD2E7470EE14C6C93, "ROUND_B": 0xCA5A826395121157},
}

#: float32 scale of Triton's ``uint_to_uniform_float`` by word size: its literals
#: ``4.6566127342e-10`` and ``1.0842020432385337e-19`` rounded to float32, bits 0x2fffffff
#: (``2**-31 - 2**-55``) and 0x1ffffffe (``2**-63 - 2**-86``): the largest word then gives
#: ``1 - 2**-24`` and ``1 - 2**-23``, below 1 (``float32(2**31 - 1)`` is ``2**31``)
UNIFORM_SCALE = {32: float(np.float32(4.6566127342e-10)),
                 64: float(np.float32(1.0842020432385337e-19))}
#: Triton's ``pair_uniform_to_normal``: ``u1 = maximum(1.0e-7, u1)`` (no log(0)) and
#: ``th = 6.283185307179586 * u2``, both constants rounded to float32
BOX_MULLER_MIN = float(np.float32(1.0e-7))
TWO_PI = float(np.float32(6.283185307179586))


def word_bits(dt) -> int:
    """Philox word size selected by an offsets dtype."""
    return 32 if dt == dtypes.int32 else 64


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
    return _checked("randint", seed, offsets)


@typing_rule("randint4x")
def type_randint4x(seed, offsets):
    return types.UniTuple(_checked("randint4x", seed, offsets), 4)


@typing_rule("rand")
def type_rand(seed, offsets):
    return _checked("rand", seed, offsets).with_dtype(dtypes.float32)


@typing_rule("randn")
def type_randn(seed, offsets):
    return _checked("randn", seed, offsets).with_dtype(dtypes.float32)
