"""Lowering of the random ops: Philox per register element, as Triton's ``random.py``.

Each thread runs Philox on the elements of its fragment of ``offsets``; no data moves
between threads and no memory is touched. Words are signless LLVM integers (i32 for int32
offsets, i64 for int64 ones): Philox's unsigned arithmetic is the same bits. The high half of
a product is libdevice's ``__nv_umulhi`` / ``__nv_umul64hi`` (PTX ``mul.hi.u32`` /
``mul.hi.u64``), the low half a plain ``mul``. The round keys depend only on the seed: they
are computed once per call, not per element. ``rand`` converts a word as Triton's
``uint_to_uniform_float`` (``cvt.rn.f32.s32``/``s64`` then ``mul.f32``), ``randn`` adds the
Box-Muller transform with libdevice's ``__nv_logf``, ``__nv_sqrtf`` and ``__nv_cosf``.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils, types

from .._registry import lowering_rule
from ..typing.random import BOX_MULLER_MIN, PHILOX, ROUNDS, TWO_PI, UNIFORM_SCALE, word_bits
from .common import F32, fragment_elements, make_fragment, result_extents
from .elementwise import _libdevice


def _umulhi(builder, a, b):
    """High half of the unsigned product of two words (i32 or i64)."""
    ty = a.type
    name = "__nv_umulhi" if ty.width == 32 else "__nv_umul64hi"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty, [ty, ty]), name)
    return builder.call(fn, [a, b])


def round_keys(context, builder, seed_ty, seed, bits):
    """The ``ROUNDS`` keys ``(k0, k1)`` of a seed: ``(seed lo, seed hi)`` for 32-bit words,
    ``(seed, 0)`` for 64-bit ones (the seed as 64 bits, an int32 one sign-extended), raised by
    ``(KEY_A, KEY_B)`` before every round after the first."""
    ty = ir.IntType(bits)
    s = context.cast(builder, seed, seed_ty, types.int64)
    if bits == 32:
        k0 = builder.trunc(s, ty)
        k1 = builder.trunc(builder.lshr(s, ir.Constant(s.type, 32)), ty)
    else:
        k0, k1 = s, ir.Constant(ty, 0)
    c = PHILOX[bits]
    keys = [(k0, k1)]
    for _ in range(ROUNDS - 1):
        k0 = builder.add(k0, ir.Constant(ty, c["KEY_A"]))
        k1 = builder.add(k1, ir.Constant(ty, c["KEY_B"]))
        keys.append((k0, k1))
    return keys


def philox(builder, offset, keys):
    """The four output words of Philox for counter ``(offset, 0, 0, 0)`` and ``keys``."""
    ty = offset.type
    c = PHILOX[ty.width]
    a, b = ir.Constant(ty, c["ROUND_A"]), ir.Constant(ty, c["ROUND_B"])
    zero = ir.Constant(ty, 0)
    c0, c1, c2, c3 = offset, zero, zero, zero
    for k0, k1 in keys:
        c0, c1, c2, c3 = (builder.xor(builder.xor(_umulhi(builder, b, c2), c1), k0),
                          builder.mul(b, c2),
                          builder.xor(builder.xor(_umulhi(builder, a, c0), c3), k1),
                          builder.mul(a, c0))
    return c0, c1, c2, c3


def uniform(builder, word):
    """Triton's ``uint_to_uniform_float``: the word as a signed integer, ``-x - 1`` (``~x``)
    where negative, converted to float32 (round to nearest even) and scaled in float32."""
    ty = word.type
    negative = builder.icmp_signed("<", word, ir.Constant(ty, 0))
    magnitude = builder.select(negative, builder.not_(word), word)
    return builder.fmul(builder.sitofp(magnitude, F32),
                        ir.Constant(F32, UNIFORM_SCALE[ty.width]))


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
    """Per register element of ``offsets``, its four Philox words."""
    seed_ty, off_ty = sig.args
    keys = round_keys(context, builder, seed_ty, args[0], word_bits(off_ty.dtype))
    elems = fragment_elements(builder, args[1], off_ty.layout.elems_per_thread)
    return [philox(builder, e, keys) for e in elems]


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
