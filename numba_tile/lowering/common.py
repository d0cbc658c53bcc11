"""Helpers shared by the lowering rules: fragments, conversions, thread coordinates.

A tile value in LLVM IR is the thread's fragment, ``[E x elem]`` (see
``typing/types.py``). Element representation in registers: ``i1`` for bool, ``i16``
(raw bits) for bfloat16, ``half``/``float``/``double`` and ``i32``/``i64`` otherwise.
16-bit floats are computed in float32: :func:`to_compute` widens, :func:`from_compute`
rounds (``cvt.rn.bf16.f32`` for bfloat16, ``fptrunc`` for float16).
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import nvvmutils, types

from .. import dtypes
from ..typing.types import element_llvm_type

I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()


def const_i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def thread_index(builder) -> ir.Value:
    """``%tid.x`` as i64."""
    return builder.zext(nvvmutils.call_sreg(builder, "tid.x"), I64)


def block_index(builder) -> ir.Value:
    """``%ctaid.x`` as i64 (the launch grid is one-dimensional)."""
    return builder.zext(nvvmutils.call_sreg(builder, "ctaid.x"), I64)


def fragment_elements(builder, value, count: int) -> list:
    return [builder.extract_value(value, i) for i in range(count)]


def make_fragment(builder, tile_type, elems) -> ir.Value:
    arrty = ir.ArrayType(element_llvm_type(tile_type.dtype), tile_type.layout.elems_per_thread)
    out = ir.Constant(arrty, ir.Undefined)
    for i, e in enumerate(elems):
        out = builder.insert_value(out, e, i)
    return out


def bf16_to_f32(builder, bits):
    wide = builder.shl(builder.zext(bits, I32), ir.Constant(I32, 16))
    return builder.bitcast(wide, F32)


def f32_to_bf16(builder, value):
    """Round to nearest even (``cvt.rn.bf16.f32``, PTX ISA 7.0, sm_80+)."""
    fnty = ir.FunctionType(I16, [F32])
    asm = ir.InlineAsm(fnty, "cvt.rn.bf16.f32 $0, $1;", "=h,f")
    return builder.call(asm, [value])


def to_compute(context, builder, value, dt):
    """Register element of ``dt`` -> value of ``dtypes.compute_type(dt)``."""
    if dt == dtypes.bfloat16:
        return bf16_to_f32(builder, value)
    if dt == dtypes.float16:
        return builder.fpext(value, F32)
    return value


def from_compute(context, builder, value, dt):
    """Value of ``dtypes.compute_type(dt)`` -> register element of ``dt``."""
    if dt == dtypes.bfloat16:
        return f32_to_bf16(builder, value)
    if dt == dtypes.float16:
        return builder.fptrunc(value, ir.HalfType())
    return value


def convert(context, builder, value, src, dst):
    """Convert one register element from dtype ``src`` to ``dst`` (NumPy cast rules)."""
    if src == dst:
        return value
    csrc, cdst = dtypes.compute_type(src), dtypes.compute_type(dst)
    v = to_compute(context, builder, value, src)
    if csrc != cdst:
        v = context.cast(builder, v, csrc, cdst)
    return from_compute(context, builder, v, dst)


def scalar_to(context, builder, value, numba_ty, dt):
    """A Numba scalar of ``numba_ty`` -> register element of tile dtype ``dt``."""
    ct = dtypes.compute_type(dt)
    v = context.cast(builder, value, numba_ty, ct)
    return from_compute(context, builder, v, dt)


def constant_element(context, builder, pyvalue, dt):
    """A Python constant as a register element of ``dt``."""
    ct = dtypes.compute_type(dt)
    if ct == types.boolean:
        v = ir.Constant(I1, int(bool(pyvalue)))
    elif isinstance(ct, types.Float):
        v = context.get_constant(ct, float(pyvalue))
    else:
        v = context.get_constant(ct, int(pyvalue))
    return from_compute(context, builder, v, dt)


def padding_element(context, builder, padty, padval, dt):
    """Padding argument (Omitted default or a runtime scalar) as an element of ``dt``."""
    if isinstance(padty, types.Omitted):
        return constant_element(context, builder, padty.value, dt)
    return scalar_to(context, builder, padval, padty, dt)


def chunk_coords(builder, layout, rep: int):
    """Multi-index (i64 values) inside the tile of the first element of this thread's
    chunk ``rep``. Dimensions are powers of two, so this is shifts and masks."""
    t = thread_index(builder)
    if layout.threads_used < layout.num_threads:
        t = builder.and_(t, const_i64(layout.threads_used - 1))
    lin = builder.add(builder.mul(t, const_i64(layout.vec)),
                      const_i64(rep * layout.threads_used * layout.vec))
    coords = []
    for s in reversed(layout.shape):
        coords.append(builder.and_(lin, const_i64(s - 1)))
        lin = builder.lshr(lin, const_i64(s.bit_length() - 1))
    return list(reversed(coords))


def is_storing_thread(builder, layout):
    """i1: this thread owns (not replicates) its elements."""
    if layout.threads_used == layout.num_threads:
        return ir.Constant(I1, 1)
    return builder.icmp_unsigned("<", thread_index(builder), const_i64(layout.threads_used))
