"""Lowering of the matrix products on tensor cores (``mma.sync``, sm_80 and later).

``mma(a, b, acc)`` for an ``(M, K) @ (K, N)`` product, in a block of ``num_warps`` warps:

1. **Staging.** The block barrier, then every thread writes its elements of ``a`` and ``b``
   to the kernel's shared scratch region (``lowering/shared.py``), zero where a masked
   operand is invalid: ``a`` as ``M`` rows of ``K`` (row-major), ``b`` as ``K`` rows of
   ``N`` for 16-bit inputs and transposed, ``N`` rows of ``K``, for int8, FP8 and TF32
   (whose fragments ``ldmatrix .trans`` cannot produce: it transposes 16-bit elements). A thread's
   16-byte chunk of a blocked tile is one ``st.shared.v4``. TF32 inputs are rounded here
   (``cvt.rna.tf32.f32``), once per element. Then the block barrier again.
2. **Swizzle.** Rows are stored with their 16-byte chunks permuted, chunk ``c`` of row
   ``r`` at ``c ^ phase(r)`` (CUTLASS's ``Swizzle<3,4,3>`` for rows of 128 bytes or more,
   its 64- and 32-byte forms for shorter rows), so the eight row addresses of one
   ``ldmatrix`` phase hit eight different bank groups: conflict-free reads, and
   conflict-free 16-byte stores of a warp's consecutive chunks.
3. **Fragments.** Each warp owns a ``wtm x wtn`` sub-tile of the accumulator
   (:class:`~numba_tile.layout.MmaLayout`). Per K step of the instruction (32 bytes of K:
   16 halves, 32 int8, 8 TF32) it reads its A fragments with ``ldmatrix.x4`` (one per 16
   rows) and its B fragments with ``ldmatrix.x4.trans`` (16-bit B) or ``ldmatrix.x4``
   (transposed B), two 8-column atoms per instruction, and issues
   ``mma.sync.aligned.m16n8k16`` (``.f32.f16``, ``.f32.bf16``, ``.f16.f16``),
   ``m16n8k32 .s32.s8``, ``m16n8k32 .f32.e4m3`` / ``.f32.e5m2`` (FP8, sm_89 and later: the
   int8 fragments) or ``m16n8k8 .f32.tf32`` for every atom. The accumulator stays in
   registers, in the layout the result tile carries.

float32 (IEEE, the default) and float64 products stage the same way and have each thread
accumulate its own elements with one fused multiply-add per K index, in K order.

A loop-carried accumulator (``acc = mma(x, y, acc)``) keeps the accumulator layout across
iterations; only a store or another non-elementwise op converts it (``lowering/layouts.py``).
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils, types

from .. import dtypes
from .._registry import OPS, lowering_rule
from ..layout import BlockedLayout, MmaLayout
from ..typing.mma import default_acc_dtype, plan, precision_value
from ..typing.types import TileType, element_llvm_type
from .common import (F32, I32, const_i64, fragment_elements, make_fragment,
                     tile_extents, valid_bits)
from .layouts import barrier, convert_layout, dst_slots, warp_coords
from .shared import pool
from .staging import Staged

_V4I32 = ir.VectorType(I32, 4)


def _c32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _i32(builder, v):
    return builder.trunc(v, I32) if v.type != I32 else v


def _zero(dt):
    ty = element_llvm_type(dt)
    return ir.Constant(ty, 0.0 if isinstance(ty, (ir.HalfType, ir.FloatType, ir.DoubleType)) else 0)


def _to_tf32_bits(builder, e):
    asm = ir.InlineAsm(ir.FunctionType(I32, [F32]), "cvt.rna.tf32.f32 $0, $1;", "=r,f")
    return builder.bitcast(builder.call(asm, [e]), F32)


def _store_operand(builder, ty, value, staged: Staged, transpose: bool, tf32: bool):
    """Write tile ``ty``'s elements into ``staged`` (element ``(i, j)`` at row ``i``, or at row
    ``j`` when ``transpose``), zero where a masked tile is invalid."""
    layout = ty.layout
    elems = fragment_elements(builder, value, layout.elems_per_thread)
    slots = dst_slots(builder, layout)
    ext = tile_extents(builder, ty, value) if ty.masked else None
    isz = dtypes.itemsize(ty.dtype)
    zero = _zero(ty.dtype)
    fixed = []
    for e, (coords, _lin) in zip(elems, slots):
        if ext is not None:
            e = builder.select(valid_bits(builder, coords, ext), e, zero)
        if tf32:
            e = _to_tf32_bits(builder, e)
        fixed.append(e)
    owner = _owner(builder, layout)
    with builder.if_then(owner):
        if (isinstance(layout, BlockedLayout) and not transpose
                and layout.vec * isz == 16):
            for rep in range(layout.reps):
                coords = slots[rep * layout.vec][0]
                row, col = _i32(builder, coords[0]), _i32(builder, coords[1])
                vec = ir.Constant(ir.VectorType(fixed[0].type, layout.vec), ir.Undefined)
                for v in range(layout.vec):
                    vec = builder.insert_element(vec, fixed[rep * layout.vec + v], _c32(v))
                ptr = staged.pointer(builder, row, builder.mul(col, _c32(isz)), _V4I32)
                builder.store(builder.bitcast(vec, _V4I32), ptr, align=16)
            return
        for e, (coords, _lin) in zip(fixed, slots):
            r, c = (coords[1], coords[0]) if transpose else (coords[0], coords[1])
            ptr = staged.pointer(builder, _i32(builder, r), builder.mul(_i32(builder, c), _c32(isz)),
                                 e.type)
            builder.store(e, ptr)


def _owner(builder, layout):
    from .common import is_storing_thread
    return is_storing_thread(builder, layout)


def _ldmatrix(builder, addr, count: int, trans: bool, imm: int = 0):
    """``ldmatrix`` of ``count`` 8x8 matrices from ``[addr + imm]`` (``imm``: a constant byte
    offset, folded into the instruction's address)."""
    regs = ",".join(f"${i}" for i in range(count))
    off = f"+{imm}" if imm else ""
    asm = ir.InlineAsm(
        ir.FunctionType(ir.LiteralStructType([I32] * count), [I32]),
        f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 "
        f"{{{regs}}}, [${count}{off}];",
        ",".join(["=r"] * count) + ",r,~{memory}", side_effect=True)
    out = builder.call(asm, [addr])
    return [builder.extract_value(out, i) for i in range(count)]


_MMA = {
    "f16": ("m16n8k16", "f32.f16.f16.f32", "f"),
    "bf16": ("m16n8k16", "f32.bf16.bf16.f32", "f"),
    "f16acc": ("m16n8k16", "f16.f16.f16.f16", "r"),
    "s8": ("m16n8k32", "s32.s8.s8.s32", "r"),
    "e4m3": ("m16n8k32", "f32.e4m3.e4m3.f32", "f"),
    "e5m2": ("m16n8k32", "f32.e5m2.e5m2.f32", "f"),
    "tf32": ("m16n8k8", "f32.tf32.tf32.f32", "f"),
}


def _mma_sync(builder, kind, a_regs, b_regs, c_regs):
    shape, types_, cc = _MMA[kind]
    nc = len(c_regs)
    cty = F32 if cc == "f" else I32
    d = ",".join(f"${i}" for i in range(nc))
    a = ",".join(f"${nc + i}" for i in range(4))
    b = ",".join(f"${nc + 4 + i}" for i in range(2))
    c = ",".join(f"${nc + 6 + i}" for i in range(nc))
    asm = ir.InlineAsm(
        ir.FunctionType(ir.LiteralStructType([cty] * nc), [I32] * 6 + [cty] * nc),
        f"mma.sync.aligned.{shape}.row.col.{types_} {{{d}}}, {{{a}}}, {{{b}}}, {{{c}}};",
        ",".join([f"={cc}"] * nc) + "," + ",".join(["r"] * 6) + "," +
        ",".join(str(i) for i in range(nc)))
    out = builder.call(asm, list(a_regs) + list(b_regs) + list(c_regs))
    return [builder.extract_value(out, i) for i in range(nc)]


def _pack_half2(builder, lo, hi):
    v = ir.Constant(ir.VectorType(ir.HalfType(), 2), ir.Undefined)
    v = builder.insert_element(builder.insert_element(v, lo, _c32(0)), hi, _c32(1))
    return builder.bitcast(v, I32)


def _unpack_half2(builder, word):
    v = builder.bitcast(word, ir.VectorType(ir.HalfType(), 2))
    return builder.extract_element(v, _c32(0)), builder.extract_element(v, _c32(1))


def _tensor_core_product(builder, p, layout: MmaLayout, sa: Staged, sb: Staged, acc, k: int,
                         b_kmajor: bool = False):
    """The accumulator elements (fragment order) after ``acc + A @ B`` on tensor cores.
    ``sb`` holds B as K rows of N for 16-bit inputs unless ``b_kmajor`` (N rows of K, as for
    int8, FP8 and TF32)."""
    lane, wm, wn = (_i32(builder, v) for v in warp_coords(builder, layout))
    _wtm, wtn = layout.warp_tile
    am, an = layout.atoms
    j = builder.lshr(lane, _c32(3))
    r8 = builder.and_(lane, _c32(7))
    j_lo, j_hi = builder.and_(j, _c32(1)), builder.lshr(j, _c32(1))
    row_a = builder.add(builder.add(builder.mul(wm, _c32(layout.warp_row_step)),
                                  builder.mul(j_lo, _c32(8))), r8)
    col_n = builder.mul(wn, _c32(wtn))
    isz = dtypes.itemsize(p.in_dtype)
    trans_b = p.kind in ("f16", "bf16", "f16acc") and not b_kmajor
    if p.kind == "f16acc":
        c = [[_pack_half2(builder, acc[4 * t], acc[4 * t + 1]),
              _pack_half2(builder, acc[4 * t + 2], acc[4 * t + 3])] for t in range(am * an)]
    else:
        c = [acc[4 * t:4 * t + 4] for t in range(am * an)]
    # The swizzle's phase repeats every 8 rows (``Staged.offset``), so moving by a multiple of
    # 8 rows moves the address by a constant: one swizzled address per K step for A (its 16-row
    # atoms at immediate offsets) and, for B, one per pair of 8-column atoms (its K steps at
    # immediate offsets) or per K step (transposed B: its atoms at immediate offsets).
    b_pairs = list(range(0, an, 2))
    if trans_b:
        krow = builder.add(builder.mul(j_lo, _c32(8)), r8)
        b_base = []
        for jn in b_pairs:
            ncol = builder.add(col_n, _c32(jn * 8))
            if an - jn >= 2:
                ncol = builder.add(ncol, builder.mul(j_hi, _c32(8)))
            b_base.append(sb.address(builder, krow, builder.mul(ncol, _c32(isz))))
    else:
        nrow = builder.add(col_n, r8)
        if an >= 2:
            nrow = builder.add(nrow, builder.mul(j_hi, _c32(8)))
    for ks in range(k // p.k_step):
        kb = ks * 32                                        # byte column of this K step
        a_addr = sa.address(builder, row_a, builder.add(_c32(kb), builder.mul(j_hi, _c32(16))))
        a_frag = [_ldmatrix(builder, a_addr, 4, False, im * layout.atom_row_step * sa.row_bytes)
                  for im in range(am)]
        if not trans_b:
            b_addr = sb.address(builder, nrow, builder.add(_c32(kb), builder.mul(j_lo, _c32(16))))
        b_frag = []
        for i, jn in enumerate(b_pairs):
            pair = an - jn >= 2
            if trans_b:        # sb: K rows of N (16-bit); .trans gives the col-major fragment
                regs = _ldmatrix(builder, b_base[i], 4 if pair else 2, True,
                                 ks * p.k_step * sb.row_bytes)
            else:              # sb: N rows of K
                regs = _ldmatrix(builder, b_addr, 4 if pair else 2, False, jn * 8 * sb.row_bytes)
            b_frag.append(regs[0:2])
            if pair:
                b_frag.append(regs[2:4])
        for im in range(am):
            for jn in range(an):
                t = im * an + jn
                c[t] = _mma_sync(builder, p.kind, a_frag[im], b_frag[jn], c[t])
    if p.kind == "f16acc":
        out = []
        for t in range(am * an):
            for word in c[t]:
                out.extend(_unpack_half2(builder, word))
        return out
    return [e for t in range(am * an) for e in c[t]]


def _fma_product(context, builder, p, layout: MmaLayout, sa: Staged, sb: Staged, acc, k: int):
    """``acc + A @ B`` by IEEE fused multiply-adds, one K index after the other."""
    ety = element_llvm_type(p.in_dtype)
    isz = dtypes.itemsize(p.in_dtype)
    fma = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ety, [ety, ety, ety]),
        "llvm.fma.f64" if isz == 8 else "llvm.fma.f32")
    lane, wm, wn = (_i32(builder, v) for v in warp_coords(builder, layout))
    _wtm, wtn = layout.warp_tile
    am, an = layout.atoms
    row0 = builder.add(builder.mul(wm, _c32(layout.warp_row_step)), builder.lshr(lane, _c32(2)))
    col0 = builder.add(builder.mul(wn, _c32(wtn)), builder.shl(builder.and_(lane, _c32(3)), _c32(1)))
    rows = [builder.add(row0, _c32(layout.atom_row_step * im + 8 * h)) for im in range(am)
            for h in range(2)]
    cols = [builder.add(col0, _c32(8 * jn + q)) for jn in range(an) for q in range(2)]
    # slot 4 * (im * an + jn) + i holds (row 2 * im + i // 2, col 2 * jn + i % 2)
    slots = [(2 * (t // an) + i // 2, 2 * (t % an) + i % 2) for t in range(am * an) for i in range(4)]
    cells = [cgutils.alloca_once_value(builder, e) for e in acc]
    with cgutils.for_range(builder, const_i64(k)) as loop:
        kk = _i32(builder, loop.index)
        kb = builder.mul(kk, _c32(isz))
        a_val = [builder.load(sa.pointer(builder, r, kb, ety)) for r in rows]
        b_val = [builder.load(sb.pointer(builder, kk, builder.mul(c, _c32(isz)), ety)) for c in cols]
        for cell, (r, c) in zip(cells, slots):
            builder.store(builder.call(fma, [a_val[r], b_val[c], builder.load(cell)]), cell)
    return [builder.load(cell) for cell in cells]


def lower_product(context, builder, aty, a, bty, b, res: TileType, acc, precision: str,
                  sig=None):
    """Register elements (``res.layout`` order) of ``acc + a @ b``; ``acc`` in that layout.
    ``sig``: the call's signature; a ``typing/pipeline.StagedSignature`` names the operands a
    staged load already put in shared memory (``lowering/pipeline.py``)."""
    from .pipeline import staged_operand
    staged = getattr(sig, "operands", None) or {}
    p = plan("mma", aty.dtype, res.dtype, precision)
    layout = res.layout
    if layout.wgmma:                         # Hopper (typing/mma.use_wgmma): lowering/wgmma.py
        from .wgmma import wgmma_product
        return wgmma_product(builder, p, layout, aty, a, bty, b, acc,
                             lambda bl, ty, v, st, tr=False: _store_operand(bl, ty, v, st, tr,
                                                                            False),
                             staged, sig)
    from .staging import staging_layout
    (m, k), n = aty.shape, bty.shape[1]
    isz = dtypes.itemsize(aty.dtype)
    b_kmajor = bool(getattr(sig, "b_kmajor", False))    # a staged, transposed b
    transpose_b = p.kind in ("s8", "e4m3", "e5m2", "tf32")
    a_bytes = m * k * isz
    if len(staged) < 2:
        base = pool().scratch(builder, a_bytes + k * n * isz,
                              f"mma operands {aty.shape} @ {bty.shape}")
        sb_base = builder.gep(base, [const_i64(a_bytes)])
    if 0 in staged:
        sa = staging_layout(staged_operand(staged[0]), m, k, isz)
    else:
        sa = Staged(base, m, k, isz)
    if 1 in staged:
        sb = staging_layout(staged_operand(staged[1]), *((n, k) if b_kmajor else (k, n)), isz)
    else:
        sb = Staged(sb_base, n, k, isz) if transpose_b else Staged(sb_base, k, n, isz)
    from .pipeline import await_operands
    await_operands(builder, sig)
    if len(staged) < 2:
        barrier(builder)
        if 0 not in staged:
            _store_operand(builder, aty, a, sa, False, p.kind == "tf32")
        if 1 not in staged:
            _store_operand(builder, bty, b, sb, transpose_b, p.kind == "tf32")
        barrier(builder)
    if p.kind == "fma":
        return _fma_product(context, builder, p, layout, sa, sb, acc, k)
    return _tensor_core_product(builder, p, layout, sa, sb, acc, k, b_kmajor)


def _acc_elements(builder, accty, value, res):
    elems = fragment_elements(builder, value, accty.layout.elems_per_thread)
    return convert_layout(builder, accty.dtype, accty.layout, elems, res.layout)


def _zeros(res):
    return [_zero(res.dtype)] * res.layout.elems_per_thread


@lowering_rule("mma")
def lower_mma(context, builder, sig, args):
    aty, bty, accty, prec = sig.args
    res = sig.return_type
    acc = _acc_elements(builder, accty, args[2], res)
    out = lower_product(context, builder, aty, args[0], bty, args[1], res, acc,
                        precision_value("mma", prec), sig)
    return make_fragment(builder, res, out,
                         tile_extents(builder, accty, args[2]) if res.masked else None)


@lowering_rule("_wgmma_wait")
def lower_wgmma_wait(context, builder, sig, args):
    """``wgmma.wait_group 0`` with the accumulator tied through it (``lowering/wgmma.py``):
    every later read of the tile depends on the wait. Identity for other layouts."""
    (ty,) = sig.args
    if not (isinstance(ty.layout, MmaLayout) and ty.layout.wgmma):
        return args[0]
    from .wgmma import wait_tied
    out = wait_tied(builder, fragment_elements(builder, args[0], ty.layout.elems_per_thread), 0)
    return make_fragment(builder, ty, out, tile_extents(builder, ty, args[0]) if ty.masked
                         else None)


@lowering_rule("_wgmma_drain")
def lower_wgmma_drain(context, builder, sig, args):
    """The last iteration of a deferred K loop whose loads are TMA boxes
    (``typing/pipeline._drain_in_last_iteration``; ``k + 1 >= n``): wait for the tiles issued
    past the loop's end (``pipeline.drain_copies``). The accumulator passes unchanged (a
    product that leaves a group in flight is waited for at the loop's exit, ``_wgmma_wait``)."""
    ty, kty, nty = sig.args
    if getattr(sig, "tma", False) and not getattr(sig, "ws", False):
        from .pipeline import drain_copies
        k = context.cast(builder, args[1], kty, types.int64)
        n = context.cast(builder, args[2], nty, types.int64)
        last = builder.icmp_signed(">=", builder.add(k, const_i64(1)), n)
        with builder.if_then(last, likely=False):
            drain_copies(builder, sig, k)
    return args[0]


@lowering_rule("_ws_post")
def lower_ws_post(context, builder, sig, args):
    """The trip count of a warp-specialized loop (``lowering/ws.py``), where the compiler
    inserted the call (``typing/pipeline._post_trip_count`` marks its signature); a call in
    the kernel's own code does nothing (its count would make the producer issue tiles no
    consumer reads, and the block would never finish)."""
    if not getattr(sig, "ws", False):
        return context.get_dummy_value()
    from ..typing.types import PartitionType
    from .ws import record_trip_count
    grid = order = None
    if len(sig.args) > 1 and isinstance(sig.args[1], PartitionType):
        from .views import ArrayView, tile_grid
        zty = sig.args[1]
        grid = tile_grid(builder, ArrayView(context, builder, zty, args[1]), zty.tile_shape)
        order = zty.order
    record_trip_count(builder, context.cast(builder, args[0], sig.args[0], types.int64),
                      grid, order)
    return context.get_dummy_value()


@lowering_rule("matmul")
def lower_matmul(context, builder, sig, args):
    aty, bty, _dt, prec = sig.args
    res = sig.return_type
    out = lower_product(context, builder, aty, args[0], bty, args[1], res, _zeros(res),
                        precision_value("matmul", prec), sig)
    return make_fragment(builder, res, out)


OPS["matmul_operator"].lower_types = ((TileType, TileType),)


@lowering_rule("matmul_operator")
def lower_matmul_operator(context, builder, sig, args):
    aty, bty = sig.args
    res = sig.return_type
    assert res.dtype == default_acc_dtype(aty.dtype)
    out = lower_product(context, builder, aty, args[0], bty, args[1], res, _zeros(res), "ieee", sig)
    return make_fragment(builder, res, out)
