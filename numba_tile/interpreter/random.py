"""Interpreter rules of the random ops: Philox in NumPy unsigned arithmetic.

Words are ``uint32`` (int32 offsets) or ``uint64`` (int64 offsets) arrays, so ``randint``,
``randint4x`` and ``rand`` give the compiled kernel's bits exactly. The high half of a 32-bit
product comes from the exact ``uint64`` product; of a 64-bit one, from four 32 x 32-bit
partial products. ``randn`` computes ``log`` and ``cos`` in float64 and rounds to float32 (the
correctly rounded values, which libdevice's are within its error bounds of); everything else
is float32 arithmetic as on the GPU.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from ..typing.random import BOX_MULLER_MIN, PHILOX, ROUNDS, TWO_PI, UNIFORM_SCALE, word_bits
from .values import InterpTile

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


def _mulhilo(a: int, b: np.ndarray, bits: int):
    """``(hi, lo)`` halves of ``a * b`` (``a`` a constant, ``b`` words of ``bits``)."""
    if bits == 32:
        p = b.astype(np.uint64) * np.uint64(a)
        return (p >> np.uint64(32)).astype(np.uint32), p.astype(np.uint32)
    m32, s32 = np.uint64(_M32), np.uint64(32)
    a_lo, a_hi = np.uint64(a & _M32), np.uint64(a >> 32)
    b_lo, b_hi = b & m32, b >> s32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> s32) + (p1 & m32) + (p2 & m32)            # < 3 * 2**32: no wrap
    hi = p3 + (p1 >> s32) + (p2 >> s32) + (mid >> s32)
    return hi, b * np.uint64(a)                            # the low half wraps mod 2**64


def philox(c0, c1, c2, c3, k0: int, k1: int, bits: int, rounds: int = ROUNDS):
    """Philox4x{bits}-``rounds`` of the counters ``c0..c3`` (arrays of uint32 or uint64) and
    the key ``(k0, k1)`` (Python ints); returns the four output words."""
    c = PHILOX[bits]
    mask = _M32 if bits == 32 else _M64
    word = np.uint32 if bits == 32 else np.uint64
    c0, c1, c2, c3 = (np.asarray(v, word) for v in (c0, c1, c2, c3))
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + c["KEY_A"]) & mask, (k1 + c["KEY_B"]) & mask
        hi_b, lo_b = _mulhilo(c["ROUND_B"], c2, bits)
        hi_a, lo_a = _mulhilo(c["ROUND_A"], c0, bits)
        c0, c1, c2, c3 = hi_b ^ c1 ^ word(k0), lo_b, hi_a ^ c3 ^ word(k1), lo_a
    return c0, c1, c2, c3


def words(seed, offsets: InterpTile):
    """The four Philox words of each offset, as the compiled kernel makes them."""
    bits = word_bits(offsets.dtype)
    s = int(seed) & _M64                               # an int32 seed sign-extends
    word = np.uint32 if bits == 32 else np.uint64
    counter = offsets.data.astype(word)                # the same bits
    zero = np.zeros_like(counter)
    key = (s & _M32, s >> 32) if bits == 32 else (s, 0)
    return philox(counter, zero, zero, zero, *key, bits)


def uniform(word: np.ndarray) -> np.ndarray:
    """Triton's ``uint_to_uniform_float`` of uint32 or uint64 words: float32 in [0, 1)."""
    bits = word.dtype.itemsize * 8
    x = word.view(np.int32 if bits == 32 else np.int64)
    magnitude = np.where(x < 0, ~x, x)
    return magnitude.astype(np.float32) * np.float32(UNIFORM_SCALE[bits])


def normal(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """The first output of Triton's ``pair_uniform_to_normal`` on two words, float32."""
    u1 = np.maximum(np.float32(BOX_MULLER_MIN), uniform(w0))
    th = np.float32(TWO_PI) * uniform(w1)
    log_u1 = np.log(u1.astype(np.float64)).astype(np.float32)
    r = np.sqrt(np.float32(-2.0) * log_u1)
    return r * np.cos(th.astype(np.float64)).astype(np.float32)


def _signed(word: np.ndarray, offsets: InterpTile) -> InterpTile:
    return InterpTile(word.view(offsets.data.dtype), offsets.dtype, offsets.extents)


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
