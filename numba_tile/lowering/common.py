"""Helpers shared by the lowering rules: fragments, conversions, thread coordinates.

A tile value in LLVM IR is the thread's fragment, ``[E x elem]`` (see
``typing/types.py``). Element representation in registers: ``i1`` for bool, ``i16``
(raw bits) for bfloat16, ``i8`` (raw bits) for FP8, ``half``/``float``/``double`` and
``i8``..``i64`` for the integers (LLVM integers carry no sign: an unsigned dtype is the same
``iN``, and the ops pick ``udiv``/``lshr``/``icmp ult``/``zext``/``uitofp`` from the dtype).
16-bit floats are computed in float32: :func:`to_compute` widens, :func:`from_compute`
rounds (``cvt.rn.bf16.f32`` for bfloat16, ``fptrunc`` for float16). FP8 converts through
float32 the same way (``cvt.rn.f16x2.e4m3x2`` + ``cvt.f32.f16`` to widen,
``cvt.rn.satfinite.e4m3x2.f32`` to narrow; e5m2 alike; sm_89+), two elements per
instruction where a whole fragment converts (:func:`convert_elements`).
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


def thread_index(builder, fresh: bool = False) -> ir.Value:
    """``%tid.x`` as i64.

    ``fresh``: read it through a volatile ``mov`` that LLVM cannot merge with another
    read, so that values computed from it are not common subexpressions of earlier ones
    and are recomputed (a few integer instructions) instead of held in registers. A
    masked reduction uses it: otherwise the per-element validity bits of its first
    reduction stay live through the next one (softmax: 128 registers instead of 78 for
    32 float32 elements per thread, ptxas 13, sm_90).
    """
    if fresh:
        asm = ir.InlineAsm(ir.FunctionType(I32, []), "mov.u32 $0, %tid.x;", "=r",
                           side_effect=True)
        return builder.zext(builder.call(asm, []), I64)
    return builder.zext(_sreg(builder, "tid.x"), I64)


def _sreg(builder, name: str) -> ir.Value:
    """A special register. Where the compile context asks for it (``entry_sregs``: a
    ``wgmma`` pipeline that ends with a wait at its loop's exit, ``typing/pipeline``), it is
    read once, at the top of the function's entry block, so no read lands before that wait."""
    from .. import compiler_context
    ctx = compiler_context.current()
    if not getattr(ctx, "entry_sregs", False):
        return nvvmutils.call_sreg(builder, name)
    fn = builder.function
    cache = ctx.__dict__.setdefault("sreg_values", {})
    key = (id(fn), name)
    got = cache.get(key)
    if got is None:
        entry = fn.entry_basic_block
        b = ir.IRBuilder(entry)
        if entry.instructions:
            b.position_before(entry.instructions[0])
        got = cache[key] = nvvmutils.call_sreg(b, name)
    return got


def block_index(builder) -> ir.Value:
    """``%ctaid.x`` as i64 (the launch grid is one-dimensional)."""
    return builder.zext(_sreg(builder, "ctaid.x"), I64)


def fragment_elements(builder, value, count: int) -> list:
    """The register elements of a tile value (a masked tile's extents are left out)."""
    if isinstance(value.type, ir.LiteralStructType):
        value = builder.extract_value(value, 0)
    return [builder.extract_value(value, i) for i in range(count)]


def make_fragment(builder, tile_type, elems, extents=None) -> ir.Value:
    """A tile value of ``tile_type`` from its register elements and, for a masked tile,
    its valid extents (i64 values, one per axis)."""
    arrty = ir.ArrayType(element_llvm_type(tile_type.dtype), tile_type.layout.elems_per_thread)
    out = ir.Constant(arrty, ir.Undefined)
    for i, e in enumerate(elems):
        out = builder.insert_value(out, e, i)
    if not getattr(tile_type, "masked", False):
        return out
    if extents is None:
        raise AssertionError(f"lowering of a masked {tile_type} without extents")
    ext = ir.Constant(ir.ArrayType(I64, tile_type.ndim), ir.Undefined)
    for d, e in enumerate(extents):
        ext = builder.insert_value(ext, e, d)
    full = ir.Constant(ir.LiteralStructType([arrty, ext.type]), ir.Undefined)
    return builder.insert_value(builder.insert_value(full, out, 0), ext, 1)


def tile_extents(builder, ty, value) -> list:
    """Valid extent of each axis of a tile (i64): its shape unless it is masked."""
    if not ty.masked:
        return [const_i64(s) for s in ty.shape]
    ext = builder.extract_value(value, 1)
    return [builder.extract_value(ext, d) for d in range(ty.ndim)]


def umin(builder, a, b):
    if isinstance(a, ir.Constant) and isinstance(b, ir.Constant):
        return a if a.constant <= b.constant else b
    return builder.select(builder.icmp_unsigned("<", a, b), a, b)


def broadcast_extents(builder, ty, value, shape) -> list:
    """Valid extents of tile ``ty`` broadcast to ``shape`` (NumPy rules: an axis of extent 1
    stretches, and is valid along all of it when its one element is)."""
    ext = tile_extents(builder, ty, value)
    lead = len(shape) - ty.ndim
    out = [const_i64(s) for s in shape[:lead]]
    for d, (s, e) in enumerate(zip(ty.shape, ext)):
        n = shape[lead + d]
        out.append(builder.mul(e, const_i64(n)) if s == 1 and n != 1 else e)
    return out


def result_extents(builder, operands, res) -> list | None:
    """Valid extents of an elementwise result ``res``: the intersection of its masked
    operands' (``operands``: ``(type, value)`` pairs, scalars allowed); None if unmasked."""
    if not res.masked:
        return None
    out = None
    for ty, v in operands:
        if getattr(ty, "masked", False):
            e = broadcast_extents(builder, ty, v, res.shape)
            out = e if out is None else [umin(builder, a, b) for a, b in zip(out, e)]
    return out


def valid_bits(builder, coords, extents, axes=None) -> ir.Value:
    """i1: the element at ``coords`` lies inside ``extents`` (along ``axes``, default all)."""
    out = None
    for d in (range(len(coords)) if axes is None else axes):
        b = builder.icmp_unsigned("<", coords[d], extents[d])
        out = b if out is None else builder.and_(out, b)
    return out if out is not None else ir.Constant(I1, 1)


def bf16_to_f32(builder, bits):
    wide = builder.shl(builder.zext(bits, I32), ir.Constant(I32, 16))
    return builder.bitcast(wide, F32)


def f32_to_bf16(builder, value):
    """Round to nearest even (``cvt.rn.bf16.f32``, PTX ISA 7.0, sm_80+)."""
    fnty = ir.FunctionType(I16, [F32])
    asm = ir.InlineAsm(fnty, "cvt.rn.bf16.f32 $0, $1;", "=h,f")
    return builder.call(asm, [value])


def _float8_target(dt):
    """Backstop of ``typing/common.check_float8_target``: the FP8 ``cvt`` forms need sm_89."""
    from ..typing.common import check_float8_target
    check_float8_target("astype", dt)


def f8x2_to_f32(builder, lo, hi, dt):
    """Two FP8 bytes (``i8``) of ``dt`` -> two float32 values, exactly:
    ``cvt.rn.f16x2.e4m3x2`` (``e5m2x2``) on the pair packed in a ``b16`` (``hi`` in the upper
    byte, PTX ISA 7.8, sm_89), then ``half`` -> ``float``."""
    _float8_target(dt)
    pair = builder.zext(lo, I16)
    if hi is not None:
        pair = builder.or_(pair, builder.shl(builder.zext(hi, I16), ir.Constant(I16, 8)))
    asm = ir.InlineAsm(ir.FunctionType(I32, [I16]), f"cvt.rn.f16x2.{dt.ptx} $0, $1;", "=r,h")
    both = builder.call(asm, [pair])
    halves = [builder.trunc(both, I16), builder.trunc(builder.lshr(both, ir.Constant(I32, 16)), I16)]
    return [builder.fpext(builder.bitcast(h, ir.HalfType()), F32) for h in halves]


def f32x2_to_f8(builder, lo, hi, dt):
    """Two float32 values -> two FP8 bytes of ``dt``: ``cvt.rn.satfinite.e4m3x2.f32``
    (``e5m2x2``; PTX ISA 7.8, sm_89): round to nearest even, beyond the largest finite value
    (infinity included) the signed largest finite value, NaN a NaN (``dtypes``). ``hi``
    None: one value (the other operand is 0)."""
    _float8_target(dt)
    asm = ir.InlineAsm(ir.FunctionType(I16, [F32, F32]),
                       f"cvt.rn.satfinite.{dt.ptx}.f32 $0, $1, $2;", "=h,f,f")
    pair = builder.call(asm, [ir.Constant(F32, 0.0) if hi is None else hi, lo])
    i8 = ir.IntType(8)
    return [builder.trunc(pair, i8), builder.trunc(builder.lshr(pair, ir.Constant(I16, 8)), i8)]


def to_compute(context, builder, value, dt):
    """Register element of ``dt`` -> value of ``dtypes.compute_type(dt)``."""
    if dt == dtypes.bfloat16:
        return bf16_to_f32(builder, value)
    if dt == dtypes.float16:
        return builder.fpext(value, F32)
    if dtypes.is_float8(dt):
        return f8x2_to_f32(builder, value, None, dt)[0]
    return value


def from_compute(context, builder, value, dt):
    """Value of ``dtypes.compute_type(dt)`` -> register element of ``dt``."""
    if dt == dtypes.bfloat16:
        return f32_to_bf16(builder, value)
    if dt == dtypes.float16:
        return builder.fptrunc(value, ir.HalfType())
    if dtypes.is_float8(dt):
        return f32x2_to_f8(builder, value, None, dt)[0]
    return value


def convert(context, builder, value, src, dst):
    """Convert one register element from dtype ``src`` to ``dst`` (NumPy cast rules; FP8
    through float32, ``dtypes``)."""
    if src == dst:
        return value
    csrc, cdst = dtypes.compute_type(src), dtypes.compute_type(dst)
    v = to_compute(context, builder, value, src)
    if dtypes.is_float(csrc) and dtypes.is_int(cdst):
        return _float_to_int_sat(context, builder, v, csrc, cdst)
    if csrc != cdst:
        v = context.cast(builder, v, csrc, cdst)
    return from_compute(context, builder, v, dst)


def _float_to_int_sat(context, builder, v, csrc, dst):
    """Float -> integer ``dst``, truncating toward zero, saturating to ``dst``'s range, NaN
    to 0 (PTX ``cvt.rzi``'s rule). LLVM's ``fptosi``/``fptoui`` are poison out of range, and
    NVVM lowers an 8-bit one to a 16-bit ``cvt`` and a truncation, which wraps (-1.0 -> uint8
    gave 0 but 300.0 gave 44): the bounds are tested here, so the result is defined, and the
    interpreter computes the same (``interpreter/common.float_to_int``)."""
    lo, hi = dtypes.INT_RANGE[dst]
    fty = v.type
    r = context.cast(builder, v, csrc, dst)              # poison where a select below drops it
    ity = r.type
    # lo and hi + 1 are 0 or powers of two: exact in every float type
    below = builder.fcmp_ordered("<", v, ir.Constant(fty, float(lo)))
    above = builder.fcmp_ordered(">=", v, ir.Constant(fty, float(hi + 1)))
    nan = builder.fcmp_unordered("uno", v, v)
    r = builder.select(above, ir.Constant(ity, hi), r)
    r = builder.select(below, ir.Constant(ity, lo), r)
    return builder.select(nan, ir.Constant(ity, 0), r)


def convert_elements(context, builder, elems, src, dst) -> list:
    """:func:`convert` of a fragment's elements; conversions from or to FP8 take them two by
    two (one ``cvt`` ``x2`` instruction per pair)."""
    if src == dst:
        return list(elems)
    if not (dtypes.is_float8(src) or dtypes.is_float8(dst)):
        return [convert(context, builder, e, src, dst) for e in elems]
    elems = list(elems)
    wide = []                      # float32 values
    for k in range(0, len(elems), 2):
        pair = elems[k:k + 2]
        if dtypes.is_float8(src):
            got = f8x2_to_f32(builder, pair[0], pair[1] if len(pair) > 1 else None, src)
            wide += got[:len(pair)]
        else:
            wide += [convert(context, builder, e, src, dtypes.float32) for e in pair]
    if not dtypes.is_float8(dst):
        return [convert(context, builder, w, dtypes.float32, dst) for w in wide]
    out = []
    for k in range(0, len(wide), 2):
        pair = wide[k:k + 2]
        got = f32x2_to_f8(builder, pair[0], pair[1] if len(pair) > 1 else None, dst)
        out += got[:len(pair)]
    return out


def scalar_to(context, builder, value, numba_ty, dt):
    """A Numba scalar of ``numba_ty`` -> register element of tile dtype ``dt``."""
    ct = dtypes.compute_type(dt)
    v = context.cast(builder, value, numba_ty, ct)
    return from_compute(context, builder, v, dt)


def constant_element(context, builder, pyvalue, dt):
    """A Python constant as a register element of ``dt``."""
    if dtypes.is_float8(dt):            # converted here, as the GPU would (no sm_89 needed)
        return ir.Constant(ir.IntType(8), dtypes.float8_bits(float(pyvalue), dt))
    ct = dtypes.compute_type(dt)
    if ct == types.boolean:
        v = ir.Constant(I1, int(bool(pyvalue)))
    elif isinstance(ct, types.Float):
        v = context.get_constant(ct, float(pyvalue))
    else:
        v = context.get_constant(ct, int(pyvalue))
    return from_compute(context, builder, v, dt)


def padding_element(context, builder, padty, padval, dt):
    """Padding argument (Omitted default or a runtime scalar) as an element of ``dt``; no
    padding (a masked load) leaves zeros in the invalid elements."""
    if isinstance(padty, types.NoneType) or (isinstance(padty, types.Omitted)
                                             and padty.value is None):
        return constant_element(context, builder, 0, dt)
    if isinstance(padty, types.Omitted):
        return constant_element(context, builder, padty.value, dt)
    return scalar_to(context, builder, padval, padty, dt)


def chunk_coords(builder, layout, rep: int, t=None):
    """Multi-index (i64 values) inside the tile of the first element of this thread's
    chunk ``rep`` (``t``: the thread index to use, default ``%tid.x``).

    The chunk's row-major index is ``t * vec + rep * threads_used * vec``: the first term
    is below ``threads_used * vec`` and the second a multiple of it, both powers of two, so
    the two share no bit and every axis' coordinate (a bit field of the index, the
    dimensions being powers of two) is the thread's coordinate plus a constant of the
    repetition. Computed that way, the chunks of a thread differ by constants: one base
    address per thread, immediate offsets per chunk, no 64-bit address register per chunk.
    """
    t = thread_index(builder) if t is None else t
    if layout.threads_used < layout.num_threads:
        t = builder.and_(t, const_i64(layout.threads_used - 1))
    lin = builder.mul(t, const_i64(layout.vec))
    rep_lin = rep * layout.threads_used * layout.vec
    coords = []
    for s in reversed(layout.shape):
        c = builder.and_(lin, const_i64(s - 1))
        k = rep_lin & (s - 1)
        coords.append(builder.add(c, const_i64(k)) if k else c)
        lin = builder.lshr(lin, const_i64(s.bit_length() - 1))
        rep_lin >>= s.bit_length() - 1
    return list(reversed(coords))


def is_storing_thread(builder, layout):
    """i1: this thread owns (not replicates) its elements."""
    if layout.threads_used == layout.num_threads:
        return ir.Constant(I1, 1)
    return builder.icmp_unsigned("<", thread_index(builder), const_i64(layout.threads_used))
