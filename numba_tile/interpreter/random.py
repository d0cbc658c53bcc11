"""Interpreter rules of the random ops: Philox4x32-10 in NumPy unsigned arithmetic.

Words are ``uint32`` arrays for either offsets dtype (the counter is ``(offset, 0, 0, 0)`` for
int32 offsets and ``(low 32 bits, high 32 bits, 0, 0)`` of an int64 one, as Triton 3.6's
``randint4x``), so ``randint``, ``randint4x`` and ``rand`` give the compiled kernel's bits
exactly. The high half of a 32-bit product comes from the exact ``uint64`` product.
``randn`` computes ``log`` and ``cos`` in float64 and rounds to float32 (the correctly rounded
values, which libdevice's are within its error bounds of); everything else is float32
arithmetic as on the GPU.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from ..typing.random import (BOX_MULLER_MIN, KEY_A, KEY_B, ROUND_A, ROUND_B, ROUNDS, TWO_PI,
                             UNIFORM_SCALE, WORD_DTYPE)
from .values import InterpTile

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


def _mulhilo(a: int, b: np.ndarray):
    """``(hi, lo)`` halves of ``a * b`` (``a`` a 32-bit constant, ``b`` uint32 words)."""
    p = b.astype(np.uint64) * np.uint64(a)
    return (p >> np.uint64(32)).astype(np.uint32), p.astype(np.uint32)


def philox(c0, c1, c2, c3, k0: int, k1: int, rounds: int = ROUNDS):
    """Philox4x32-``rounds`` of the counters ``c0..c3`` (arrays of uint32) and the key
    ``(k0, k1)`` (Python ints below 2**32); returns the four output words."""
    c0, c1, c2, c3 = (np.asarray(v, np.uint32) for v in (c0, c1, c2, c3))
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + KEY_A) & _M32, (k1 + KEY_B) & _M32
        hi_b, lo_b = _mulhilo(ROUND_B, c2)
        hi_a, lo_a = _mulhilo(ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ np.uint32(k0), lo_b, hi_a ^ c3 ^ np.uint32(k1), lo_a
    return c0, c1, c2, c3


def counter(offsets: np.ndarray):
    """The counter words ``(c0, c1)`` (uint32; ``c2 = c3 = 0``) of int32 or int64 offsets:
    the low 32 bits and, for int64, the high 32 bits (``offset >> 32`` truncated), else 0."""
    lo = offsets.astype(np.uint32)                     # the low 32 bits (wraps modulo 2**32)
    if offsets.dtype.itemsize == 4:
        return lo, np.zeros_like(lo)
    return lo, (offsets.astype(np.int64) >> np.int64(32)).astype(np.uint32)


def words(seed, offsets: InterpTile):
    """The four Philox words (uint32) of each offset, as the compiled kernel makes them."""
    s = int(seed) & _M64                               # an int32 seed sign-extends
    c0, c1 = counter(offsets.data)
    zero = np.zeros_like(c0)
    return philox(c0, c1, zero, zero, s & _M32, s >> 32)


def uniform(word: np.ndarray) -> np.ndarray:
    """Triton's ``uint_to_uniform_float`` of uint32 words: float32 in [0, 1)."""
    x = np.asarray(word, np.uint32).view(np.int32)
    magnitude = np.where(x < 0, ~x, x)
    return magnitude.astype(np.float32) * np.float32(UNIFORM_SCALE)


def normal(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """The first output of Triton's ``pair_uniform_to_normal`` on two words, float32."""
    u1 = np.maximum(np.float32(BOX_MULLER_MIN), uniform(w0))
    th = np.float32(TWO_PI) * uniform(w1)
    log_u1 = np.log(u1.astype(np.float64)).astype(np.float32)
    r = np.sqrt(np.float32(-2.0) * log_u1)
    return r * np.cos(th.astype(np.float64)).astype(np.float32)


def _signed(word: np.ndarray, offsets: InterpTile) -> InterpTile:
    """uint32 words as the int32 tile of the same bits (randint's dtype, as on the GPU)."""
    return InterpTile(word.view(np.int32), WORD_DTYPE, offsets.extents)


@interp_rule("randint")
def interp_randint(seed, offsets):
    return _signed(words(seed, offsets)[0], offsets)


@interp_rule("randint4x")
def interp_randint4x(seed, offsets):
    return tuple(_signed(w, offsets) for w in words(seed, offsets))


@interp_rule("rand")
def interp_rand(seed, offsets):
    return InterpTile(uniform(words(seed, offsets)[0]), dtypes.float32, offsets.extents)


@interp_rule("randn")
def interp_randn(seed, offsets):
    w = words(seed, offsets)
    return InterpTile(normal(w[0], w[1]), dtypes.float32, offsets.extents)
