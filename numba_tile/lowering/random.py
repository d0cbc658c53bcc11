"""Lowering of the random ops: Philox4x32-10 per register element, as Triton 3.6's
``random.py``.

Each thread runs Philox on the elements of its fragment of ``offsets``; no data moves
between threads and no memory is touched. Words are signless LLVM i32 for either offsets
dtype (Philox's unsigned arithmetic is the same bits): the counter is ``(offset, 0, 0, 0)``
for int32 offsets and ``(low 32 bits, high 32 bits, 0, 0)`` of an int64 one, as Triton's
``randint4x``. The high half of a product is libdevice's ``__nv_umulhi`` (PTX
``mul.hi.u32``), the low half a plain ``mul``. The round keys depend only on the seed: they
are computed once per call, not per element. ``rand`` converts a word as Triton's
``uint_to_uniform_float`` (``cvt.rn.f32.s32`` then ``mul.f32``), ``randn`` adds the
Box-Muller transform with libdevice's ``__nv_logf``, ``__nv_sqrtf`` and ``__nv_cosf``.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils, types

from .._registry import lowering_rule
from ..typing.random import (BOX_MULLER_MIN, KEY_A, KEY_B, ROUND_A, ROUND_B, ROUNDS, TWO_PI,
                             UNIFORM_SCALE)
from .common import F32, fragment_elements, make_fragment, result_extents
from .elementwise import _libdevice

I32 = ir.IntType(32)


def _umulhi(builder, a, b):
    """High half of the unsigned 64-bit product of two i32 words."""
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(I32, [I32, I32]),
                                        "__nv_umulhi")
    return builder.call(fn, [a, b])


def round_keys(context, builder, seed_ty, seed):
    """The ``ROUNDS`` keys ``(k0, k1)`` of a seed: ``(seed lo, seed hi)`` of the seed as 64
    bits (an int32 one sign-extended), raised by ``(KEY_A, KEY_B)`` before every round after
    the first."""
    s = context.cast(builder, seed, seed_ty, types.int64)
    k0 = builder.trunc(s, I32)
    k1 = builder.trunc(builder.lshr(s, ir.Constant(s.type, 32)), I32)
    keys = [(k0, k1)]
    for _ in range(ROUNDS - 1):
        k0 = builder.add(k0, ir.Constant(I32, KEY_A))
        k1 = builder.add(k1, ir.Constant(I32, KEY_B))
        keys.append((k0, k1))
    return keys


def counter(builder, offset):
    """The counter words ``(c0, c1)`` of an offset (``c2 = c3 = 0``), as Triton's
    ``randint4x``: an i32 offset is ``(offset, 0)``; an i64 one is ``(offset.to(uint32),
    (offset >> 32).to(uint32))``, its low and high 32 bits (the arithmetic shift truncated to
    32 bits is the high word either way)."""
    if offset.type.width == 32:
        return offset, ir.Constant(I32, 0)
    return (builder.trunc(offset, I32),
            builder.trunc(builder.ashr(offset, ir.Constant(offset.type, 32)), I32))


def philox(builder, c0, c1, keys):
    """The four output words of Philox4x32 for counter ``(c0, c1, 0, 0)`` and ``keys``."""
    a, b = ir.Constant(I32, ROUND_A), ir.Constant(I32, ROUND_B)
    zero = ir.Constant(I32, 0)
    c2, c3 = zero, zero
    for k0, k1 in keys:
        c0, c1, c2, c3 = (builder.xor(builder.xor(_umulhi(builder, b, c2), c1), k0),
                          builder.mul(b, c2),
                          builder.xor(builder.xor(_umulhi(builder, a, c0), c3), k1),
                          builder.mul(a, c0))
    return c0, c1, c2, c3


def uniform(builder, word):
    """Triton's ``uint_to_uniform_float`` of a 32-bit word: the word as a signed integer,
    ``-x - 1`` (``~x``) where negative, converted to float32 (round to nearest even) and
    scaled in float32."""
    negative = builder.icmp_signed("<", word, ir.Constant(I32, 0))
    magnitude = builder.select(negative, builder.not_(word), word)
    return builder.fmul(builder.sitofp(magnitude, F32), ir.Constant(F32, UNIFORM_SCALE))


def normal(builder, w0, w1):
    """Triton's ``pair_uniform_to_normal``, first output: ``sqrt(-2 log(max(1e-7, u1))) *
    cos(2 pi u2)`` in float32."""
    u1, u2 = uniform(builder, w0), uniform(builder, w1)
    floor = ir.Constant(F32, BOX_MULLER_MIN)
    u1 = builder.select(builder.fcmp_ordered("<", u1, floor), floor, u1)
    th = builder.fmul(ir.Constant(F32, TWO_PI), u2)
    r = _libdevice(builder, "sqrt",
                   builder.fmul(ir.Constant(F32, -2.0), _libdevice(builder, "log", u1)))
    return builder.fmul(r, _libdevice(builder, "cos", th))


def _words(context, builder, sig, args):
    """Per register element of ``offsets``, its four Philox words (i32)."""
    seed_ty, off_ty = sig.args
    keys = round_keys(context, builder, seed_ty, args[0])
    elems = fragment_elements(builder, args[1], off_ty.layout.elems_per_thread)
    return [philox(builder, *counter(builder, e), keys) for e in elems]


def _lowering(name, convert):
    def lower(context, builder, sig, args):
        res = sig.return_type
        out = [convert(builder, w) for w in _words(context, builder, sig, args)]
        return make_fragment(builder, res, out, result_extents(builder, [(sig.args[1], args[1])],
                                                               res))

    lower.__name__ = f"lower_{name}"
    lowering_rule(name)(lower)


_lowering("randint", lambda builder, w: w[0])
_lowering("rand", lambda builder, w: uniform(builder, w[0]))
_lowering("randn", lambda builder, w: normal(builder, w[0], w[1]))


@lowering_rule("randint4x")
def lower_randint4x(context, builder, sig, args):
    tup = sig.return_type
    tile = tup.types[0]
    words = _words(context, builder, sig, args)
    extents = result_extents(builder, [(sig.args[1], args[1])], tile)
    tiles = [make_fragment(builder, tile, [w[i] for w in words], extents) for i in range(4)]
    return context.make_tuple(builder, tup, tiles)
