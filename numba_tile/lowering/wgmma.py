"""Lowering of ``mma`` to Hopper's ``wgmma.mma_async`` (sm_90a), operands staged from registers.

Taken for the products ``typing/mma.use_wgmma`` admits (float16 / bfloat16 / FP8 inputs, a
float32 accumulator, ``M`` a multiple of ``16 * num_warps``, ``K`` whole 128-byte atoms,
``N`` a multiple of 64, ``N <= 256``); the accumulator is an
:class:`~numba_tile.layout.MmaLayout` with ``wgmma=True``. Facts and encodings:
``shared/notes/hopper-gemm.md`` (sections 1.1-1.7, the numbers below are from there).

1. **Staging.** The block barrier; every thread writes its elements of ``a`` (``M x K``,
   K-major) and ``b`` (``K x N``, N-major) to the kernel's shared scratch region, rebased to a
   1024-byte boundary (the 128-byte swizzle XORs absolute address bits 4-6 with bits 7-9), zero
   where a masked operand is invalid. Each operand is stored as 128-byte *atom columns*: the
   bytes ``[128 c, 128 c + 128)`` of every row form column ``c``, ``rows x 128`` bytes, rows
   consecutive, the 16-byte chunk ``j`` of row ``r`` at ``j ^ (r % 8)`` (CUTLASS
   ``Swizzle<3,4,3>``, TMA's ``CU_TENSOR_MAP_SWIZZLE_128B``). Then ``fence.proxy.async`` (the
   stores are generic-proxy writes that the async proxy reads) and the block barrier.
2. **Descriptors** (64-bit, section 1.5): start address >> 4 in bits 0-13, the leading byte
   offset >> 4 in bits 16-29, the stride byte offset >> 4 in bits 32-45, swizzle mode 1
   (128 bytes) in bits 62-63. A (K-major): stride 1024 (8 rows of 128 bytes), leading offset
   unused (16); the K step of one instruction (32 bytes: 16 16-bit elements, 32 FP8 ones)
   is +32 bytes inside an atom column, and the next atom column is ``M * 128`` bytes on. B
   (N-major, ``imm-trans-b = 1``): stride 1024 (8 K rows), leading offset ``K * 128`` (from
   one 64-column atom to the next); a K step is 16 rows, +2048 bytes. B K-major (``N`` rows
   of ``K``, as A): FP8 always (its ``wgmma`` form has no transpose operands; registers are
   written transposed, a pipelined ``transpose`` of an (N, K) tile lands so), 16-bit where a
   pipelined load staged a transposed tile (``imm-trans-b = 0``).
3. **Issue.** Warpgroup ``g`` (threads ``128 g .. 128 g + 127``) multiplies its 64-row slabs of
   A (rows ``64 g + 16 num_warps s ..`` for slab ``s``: ``layout.MmaLayout``) by all of B: ``wgmma.fence``, one ``wgmma.mma_async.m64nNk16``
   (``k32`` for FP8) per K step accumulating into the thread's ``N / 2`` registers (outputs tied to inputs, so nothing
   else touches them in flight), ``commit_group``, ``wait_group 0`` (also tied: later uses of
   the accumulator depend on the wait). The registers come back in the layout's slot order:
   ``d[4 jn + i]`` is ``mma.sync``'s C fragment of atom ``jn`` (section 1.4).
4. **A from registers.** Where ``a`` is itself in a ``wgmma`` accumulator's layout of its
   shape (the probabilities of attention, ``p = exp2(s - m)`` of an earlier product ``s``,
   cast to 16 bits) it is not staged: the register form ``wgmma ... {a0, a1, a2, a3}, desc-b``
   takes it as it is. Warp ``w`` of a warpgroup holds rows ``16 w ..`` of each 64-row slab in
   both layouts, and ``mma.sync``'s A fragment of a 16-column K step is the C fragments of
   the two 8-column atoms under it (``a0 a1 | a2 a3`` of the first, ``a4 a5 | a6 a7`` of the
   second): FlashAttention's reuse of the accumulator, with no data movement.
"""

from __future__ import annotations

from llvmlite import ir

from .. import compiler_context, dtypes
from ..typing.mma import FP8_KINDS
from ..layout import MmaLayout
from .common import F32, I16, I32, I64, const_i64, fragment_elements
from .layouts import barrier
from .shared import address32, pool
from .staging import AtomStaged, align_1024, fence_proxy_async, staging_layout



def _c32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _asm(builder, text, constraints="~{memory}"):
    builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, constraints,
                              side_effect=True), [])


#: the descriptor's layout type (bits 62-63) per swizzle width
_SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}


def _descriptor(builder, addr32, lead_bytes: int, width: int = 128):
    """The smem matrix descriptor (i64) of the ``width``-byte swizzled operand at ``addr32``:
    8-row groups ``8 * width`` bytes apart (the stride byte offset)."""
    start = builder.lshr(builder.and_(builder.zext(addr32, I64), const_i64(0x3FFFF)),
                         const_i64(4))
    fixed = (_SWIZZLE_MODE[width] << 62) | (((8 * width) >> 4) << 32) | ((lead_bytes >> 4) << 16)
    return builder.or_(start, const_i64(fixed))


def _mma_async(builder, ptx_type: str, n: int, desc_a, desc_b, acc, b_kmajor: bool = False):
    """One ``wgmma.mma_async`` (A K-major; B N-major, ``imm-trans-b = 1``, or K-major),
    accumulating into ``acc``: ``m64nNk16`` for 16-bit inputs, ``m64nNk32`` for FP8 (whose
    form has no transpose operands: both K-major)."""
    nd = n // 2
    d = ",".join(f"${i}" for i in range(nd))
    fp8 = ptx_type in ("e4m3", "e5m2")
    kdim = 32 if fp8 else 16
    tail = "1, 1, 1" if fp8 else f"1, 1, 1, 0, {0 if b_kmajor else 1}"
    asm = ir.InlineAsm(
        ir.FunctionType(ir.LiteralStructType([F32] * nd), [I64, I64] + [F32] * nd),
        f"wgmma.mma_async.sync.aligned.m64n{n}k{kdim}.f32.{ptx_type}.{ptx_type} "
        f"{{{d}}}, ${nd}, ${nd + 1}, {tail};",
        ",".join(["=f"] * nd) + ",l,l," + ",".join(str(i) for i in range(nd)) + ",~{memory}",
        side_effect=True)
    out = builder.call(asm, [desc_a, desc_b] + list(acc))
    return [builder.extract_value(out, i) for i in range(nd)]


def _mma_async_rs(builder, ptx_type: str, n: int, a_regs, desc_b, acc, b_kmajor: bool):
    """One ``wgmma.mma_async.m64nNk16`` with A in registers (four 32-bit words of two 16-bit
    elements each, section 4 above), B from shared memory, accumulating into ``acc``."""
    nd = n // 2
    d = ",".join(f"${i}" for i in range(nd))
    a = ",".join(f"${nd + i}" for i in range(4))
    asm = ir.InlineAsm(
        ir.FunctionType(ir.LiteralStructType([F32] * nd), [I32] * 4 + [I64] + [F32] * nd),
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx_type}.{ptx_type} "
        f"{{{d}}}, {{{a}}}, ${nd + 4}, 1, 1, 1, {0 if b_kmajor else 1};",
        ",".join(["=f"] * nd) + ",r,r,r,r,l," + ",".join(str(i) for i in range(nd))
        + ",~{memory}", side_effect=True)
    out = builder.call(asm, list(a_regs) + [desc_b] + list(acc))
    return [builder.extract_value(out, i) for i in range(nd)]


def registers_a(aty, layout, m: int, k: int) -> bool:
    """Operand ``a`` (``m x k``, unmasked, 16-bit floats) lies in the registers the register
    form of ``wgmma`` reads: a ``wgmma`` accumulator layout of its shape over the product's
    threads (section 4 above)."""
    la = getattr(aty, "layout", None)
    return (isinstance(la, MmaLayout) and la.wgmma and tuple(la.shape) == (m, k)
            and la.num_threads == layout.num_threads and not aty.masked
            and aty.dtype in (dtypes.float16, dtypes.bfloat16))


def _pack16(builder, lo, hi):
    """Two 16-bit elements in one 32-bit word, ``lo`` in the low half."""
    def bits(e):
        return builder.zext(e if isinstance(e.type, ir.IntType) else builder.bitcast(e, I16), I32)
    return builder.or_(bits(lo), builder.shl(bits(hi), _c32(16)))


def _a_fragment(builder, elems, atoms_n: int, slab: int, ks: int):
    """The four A words of K step ``ks`` (16 columns) of slab ``slab`` from the elements of
    an accumulator-layout tile with ``atoms_n`` 8-column atoms per row."""
    words = []
    for jn in (2 * ks, 2 * ks + 1):
        base = 4 * (slab * atoms_n + jn)
        words += [_pack16(builder, elems[base], elems[base + 1]),
                  _pack16(builder, elems[base + 2], elems[base + 3])]
    return words


def fence_tied(builder, values):
    """``wgmma.fence`` with ``values`` (f32 accumulator registers, i32 A words) tied through
    it: every later use reads the fence's outputs, so the instructions that wrote them stay
    before it. At most 128 values an instruction (several fences for more: each orders what
    it ties, and the last is the fence the first wgmma follows)."""
    if not values:
        _asm(builder, "wgmma.fence.sync.aligned;")
        return []
    out = []
    for i in range(0, len(values), 128):
        part = values[i:i + 128]
        tys = [v.type for v in part]
        cons = ["=f" if t == F32 else "=r" for t in tys]
        asm = ir.InlineAsm(ir.FunctionType(ir.LiteralStructType(tys), tys),
                           "wgmma.fence.sync.aligned;",
                           ",".join(cons) + "," + ",".join(str(j) for j in range(len(part)))
                           + ",~{memory}", side_effect=True)
        res = builder.call(asm, part)
        out += [builder.extract_value(res, j) for j in range(len(part))]
    return out


def wait_tied(builder, acc, pending: int = 0):
    """``wgmma.wait_group pending`` (after the caller's ``commit_group``), the accumulator
    tied through it: every later use of the registers depends on the wait. With
    ``pending = 1`` the group just committed may still run; its accumulator then only
    feeds the next ``wgmma`` (which orders itself after it) or ``_wgmma_drain``. More than
    128 registers (several slabs) are tied through one wait each 128 (a later wait of a
    queue already drained that far returns at once)."""
    if len(acc) > 128:
        out = []
        for i in range(0, len(acc), 128):
            out.extend(wait_tied(builder, acc[i:i + 128], pending))
        return out
    nd = len(acc)
    asm = ir.InlineAsm(
        ir.FunctionType(ir.LiteralStructType([F32] * nd), [F32] * nd),
        f"wgmma.wait_group.sync.aligned {pending};",
        ",".join(["=f"] * nd) + "," + ",".join(str(i) for i in range(nd)) + ",~{memory}",
        side_effect=True)
    out = builder.call(asm, list(acc))
    return [builder.extract_value(out, i) for i in range(nd)]


def wgmma_product(builder, p, layout, aty, a, bty, b, acc, store_operand, staged=None,
                  sig=None):
    """The accumulator elements (``layout``'s slot order) after ``acc + a @ b`` on Hopper's
    tensor cores. ``store_operand(builder, ty, value, staged)`` writes a register tile into a
    staged operand (``lowering/mma._store_operand``). ``staged``: the operands (0: a, 1: b) a
    pipelined load already put in shared memory (``lowering/pipeline.py``: their slots are
    :class:`AtomStaged`, see :func:`staging_layout`); ``sig`` the product's signature (its
    wait depth)."""
    from .common import thread_index
    from .pipeline import await_operands, refill_operands, release_operands, staged_operand
    staged = staged or {}
    ctx = compiler_context.current()
    ctx.arch_specific = True
    (m, k), n = aty.shape, bty.shape[1]
    isz = dtypes.itemsize(aty.dtype)
    # B K-major (N rows of K bytes, as A): FP8 always (its wgmma has no transpose), 16-bit B
    # when a pipelined load of a transposed tile staged it so (``b_kmajor`` on the signature)
    b_kmajor = p.kind in FP8_KINDS or bool(getattr(sig, "b_kmajor", False))
    b_shape = (n, k) if b_kmajor else (k, n)
    a_bytes, b_bytes = m * k * isz, k * n * isz
    ops = {}
    for i, (rows, cols) in ((0, (m, k)), (1, b_shape)):
        if i in staged and staged[i] is not None:
            ops[i] = staging_layout(staged_operand(staged[i]), rows, cols, isz)
            assert isinstance(ops[i], AtomStaged), "a pipelined wgmma operand in another layout"
    in_regs = 0 not in staged and registers_a(aty, layout, m, k)
    if in_regs:                              # section 4: the register form reads a as it is
        a_elems = fragment_elements(builder, a, aty.layout.elems_per_thread)
        staged = {**staged, 0: None}         # nothing to stage for a
    need = (0 not in staged) * a_bytes + (1 not in staged) * b_bytes
    if need:
        base = align_1024(builder, pool().scratch(builder, need + 1024,
                                                  f"wgmma operands {aty.shape} @ {bty.shape}"))
        if 0 not in staged:
            ops[0] = AtomStaged(base, m, k, isz)
        if 1 not in staged:
            ops[1] = AtomStaged(builder.gep(base, [const_i64(a_bytes if 0 not in staged else 0)]),
                                *b_shape, isz)
    await_operands(builder, sig)              # pipelined operands landed (and fenced)
    if need:
        barrier(builder)
        if 0 not in staged:
            store_operand(builder, aty, a, ops[0])
        if 1 not in staged:
            store_operand(builder, bty, b, ops[1], b_kmajor)
        fence_proxy_async(builder)
        barrier(builder)
    sa, sb = ops.get(0), ops[1]
    wb = sb.width
    if not in_regs:
        wa = sa.width
        group = builder.trunc(builder.lshr(thread_index(builder), const_i64(7)), I32)
        a_addr = builder.add(address32(builder, sa.base), builder.mul(group, _c32(64 * wa)))
    b_addr = address32(builder, sb.base)
    ptx_type = {"bf16": "bf16", "f16": "f16", "e4m3": "e4m3", "e5m2": "e5m2"}[p.kind]
    # the slabs of this warpgroup (``layout.MmaLayout``): slab s is rows
    # 64 g + s * atom_row_step .., its registers the s-th N / 2 of the accumulator's
    nd, slab_rows = n // 2, layout.atom_row_step
    slabs = [list(acc[s * nd:(s + 1) * nd]) for s in range(len(acc) // nd)]
    ksteps = k * isz // 32
    words = {}
    if in_regs:
        words = {(s, ks): _a_fragment(builder, a_elems, aty.layout.atoms[1], s, ks)
                 for s in range(len(slabs)) for ks in range(ksteps)}
    # the fence orders every earlier write of the accumulator's and A's registers (acc * alpha,
    # the packing of p) before the first wgmma reads them: tied through it (PTX ISA,
    # "wgmma.fence"), so no write can be scheduled past it
    flat = [r for regs in slabs for r in regs]
    keys = sorted(words)
    fenced = fence_tied(builder, flat + [w for key in keys for w in words[key]])
    slabs = [fenced[i * nd:(i + 1) * nd] for i in range(len(slabs))]
    rest = fenced[len(flat):]
    words = {key: rest[4 * i:4 * i + 4] for i, key in enumerate(keys)}
    # one instruction takes 32 bytes of K (16 16-bit elements, 32 FP8 ones)
    # (a K step is 32 bytes: ``width / 32`` steps an atom column, K-major)
    for ks in range(ksteps):
        if b_kmajor:
            per = wb // 32
            db = _descriptor(builder, builder.add(b_addr, _c32((ks // per) * n * wb
                                                               + (ks % per) * 32)), 16, wb)
        else:
            db = _descriptor(builder, builder.add(b_addr, _c32(ks * 16 * wb)), k * wb, wb)
        if in_regs:
            for s, regs in enumerate(slabs):
                slabs[s] = _mma_async_rs(builder, ptx_type, n, words[s, ks], db, regs,
                                         b_kmajor)
            continue
        per = wa // 32
        for s, regs in enumerate(slabs):
            da = _descriptor(builder, builder.add(a_addr, _c32(
                (ks // per) * m * wa + s * slab_rows * wa + (ks % per) * 32)), 16, wa)
            slabs[s] = _mma_async(builder, ptx_type, n, da, db, regs, b_kmajor)
    _asm(builder, "wgmma.commit_group.sync.aligned;")
    refill_operands(builder, sig)           # deferred copies overlap the tensor cores' work
    out = wait_tied(builder, [r for regs in slabs for r in regs], getattr(sig, "pending", 0) or 0)
    release_operands(builder, sig)          # warp-specialized: the slot read k - P is free
    return out
