"""Layout conversion between register layouts, through shared memory (or, where every thread
already holds the elements it needs, a choice of its registers: ``layout.local_slots``,
``layout.local_lines``).

Two tiles of one shape can sit in different layouts (a float16 tile holds 8 elements
per chunk, a float32 tile 4). Before an elementwise op the right operand is moved
into the left operand's layout: every thread writes its fragment to a shared-memory
buffer at the elements' row-major positions, the block synchronizes (``bar.sync 0``),
and every thread reads the elements of the target layout. A leading barrier keeps a
conversion inside a loop from overwriting a buffer still being read, and lets every
conversion site use the one shared scratch region of the kernel (``lowering/shared.py``).
The shape ops (reshape, broadcast, permute) use the same mechanism with a different
source index per destination element (:func:`remap`). A tile larger than the target's
shared memory moves in several passes over ranges of its row-major indices
(:func:`pass_bytes`), each pass a barrier, the owners' stores of that range, a barrier and
every thread's reads of the elements it takes from that range: a conversion is never
refused for its size (a (64, 1024) float32 permute, 256 KB, takes two passes of 128 KB on
sm_90 and sm_80).
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils

from .. import compiler_context, dtypes
from ..layout import (ATOM_M, ATOM_N, MmaLayout, VectorLayout, SliceLayout, local_slots,
                      same_distribution)
from ..typing.types import element_llvm_type
from .common import const_i64, is_storing_thread, thread_index
from .shared import limit_for, pool



def barrier(builder):
    """``bar.sync 0`` for the whole block (``llvm.nvvm.barrier0``); in a warp-specialized
    kernel (``lowering/ws.py``) ``bar.sync 1, N`` for its ``N`` consumer threads
    (``llvm.nvvm.barrier.sync.cnt``): the producer warpgroup never passes it."""
    from .. import compiler_context
    ctx = compiler_context.current()
    if getattr(ctx, "warp_specialized", False):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(32), ir.IntType(32)]),
            "llvm.nvvm.barrier.sync.cnt")
        builder.call(fn, [ir.Constant(ir.IntType(32), 1),
                          ir.Constant(ir.IntType(32), ctx.num_threads)])
        return
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                        "llvm.nvvm.barrier0")
    builder.call(fn, [])


def chunk_linear(builder, layout, rep: int):
    """Row-major index in the tile of the first element of this thread's chunk ``rep``."""
    t = thread_index(builder)
    if layout.threads_used < layout.num_threads:
        t = builder.and_(t, const_i64(layout.threads_used - 1))
    return builder.add(builder.mul(t, const_i64(layout.vec)),
                       const_i64(rep * layout.threads_used * layout.vec))


def convert_layout(builder, dt, src_layout, elems, dst_layout):
    """Register elements of a tile of dtype ``dt`` in ``src_layout`` -> in ``dst_layout``
    (same shape: every element keeps its row-major index): the registers themselves where
    :func:`local_slots` finds each in its thread, else through shared memory.
    """
    if src_layout == dst_layout or same_distribution(src_layout, dst_layout):
        return list(elems)
    local = local_slots(src_layout, dst_layout)
    if local is not None:
        return [elems[j] for j in local]
    return remap(builder, dt, src_layout, elems, dst_layout, lambda coords, linear: linear)


def pass_bytes() -> int:
    """The most bytes one pass of :func:`remap` stages: the largest power of two within the
    target's shared memory beside the persistent regions allocated so far (pipeline stages,
    ``lowering/shared.py``). A tile that fits moves in one pass: more passes would keep
    both the fragments still to be staged and the ones already read in registers (about
    1.5 times the tile's share of registers: a (32, 1024) float32 transpose on 8 warps takes
    214 registers in one pass of 128 KB and spills in two of 64 KB)."""
    ctx = compiler_context.current()
    room = limit_for(ctx.cc) - sum(n for _o, n, _w in pool().persistent)
    return 1 << (max(room, 1024).bit_length() - 1)


def stage(builder, dt, src_layout, elems, lo=0, span=None):
    """Put a tile's elements in shared memory at their row-major indices, for the whole block.

    Barrier, owning threads store, barrier (a replicating thread's copy may differ: an
    atomic's result is the old value only in the owning thread). Returns ``read(linear)``,
    which loads the register element at row-major index ``linear`` (an i64 value).

    With ``span``, only the elements of row-major indices ``lo <= i < lo + span`` are put,
    at ``i - lo`` (one pass of :func:`remap`); ``read`` then takes ``i - lo``.

    The buffer is the kernel's shared scratch region (``lowering/shared.py``): every read
    must happen before the caller's lowering returns, and the leading barrier keeps this
    use's writes after every read of the previous use (of any site, or of this one in the
    previous iteration of a loop).
    """
    numel = src_layout.numel
    span = numel if span is None else span
    reg_ty = element_llvm_type(dt)
    smem_ty = ir.IntType(8) if dt == dtypes.bool_ else ir.IntType(8 * dtypes.itemsize(dt))
    nbytes = span * max(dtypes.itemsize(dt), 1)
    raw = pool().scratch(builder, nbytes, f"rearranging a {src_layout.shape} tile")
    base = builder.bitcast(raw, smem_ty.as_pointer(3))
    partial = span < numel

    def put(e, linear):
        e = builder.zext(e, smem_ty) if dt == dtypes.bool_ else builder.bitcast(e, smem_ty)
        if not partial:
            builder.store(e, builder.gep(base, [linear]))
            return
        rel = builder.sub(linear, const_i64(lo))
        with builder.if_then(builder.icmp_unsigned("<", rel, const_i64(span))):
            builder.store(e, builder.gep(base, [rel]))

    barrier(builder)
    if isinstance(src_layout, (SliceLayout, VectorLayout)):
        # every slot of a line holds the same value: owners of the parent write it, maybe
        # several times, always the same value
        with builder.if_then(is_storing_thread(builder, src_layout.parent)):
            for e, (_coords, linear) in zip(elems, dst_slots(builder, src_layout)):
                put(e, linear)
        barrier(builder)
        return _reader(builder, dt, base, smem_ty, reg_ty)
    owner = is_storing_thread(builder, src_layout)
    if isinstance(src_layout, MmaLayout):
        with builder.if_then(owner):
            for e, (_coords, linear) in zip(elems, mma_slots(builder, src_layout)):
                put(e, linear)
        barrier(builder)
        return _reader(builder, dt, base, smem_ty, reg_ty)
    per_rep = src_layout.threads_used * src_layout.vec     # row-major indices of one rep
    with builder.if_then(owner):
        k = 0
        for rep in range(src_layout.reps):
            first = rep * per_rep
            if partial and span % per_rep == 0 and not lo <= first < lo + span:
                k += src_layout.vec          # the whole rep is in another pass
                continue
            start = chunk_linear(builder, src_layout, rep)
            for v in range(src_layout.vec):
                e = elems[k]
                k += 1
                linear = builder.add(start, const_i64(v))
                if partial and span % per_rep == 0:    # the rep is in this pass: no test
                    e = builder.zext(e, smem_ty) if dt == dtypes.bool_ else \
                        builder.bitcast(e, smem_ty)
                    builder.store(e, builder.gep(base, [builder.sub(linear, const_i64(lo))]))
                else:
                    put(e, linear)
    barrier(builder)
    return _reader(builder, dt, base, smem_ty, reg_ty)


def _reader(builder, dt, base, smem_ty, reg_ty):
    def read(linear):
        e = builder.load(builder.gep(base, [linear]))
        if dt == dtypes.bool_:
            return builder.icmp_unsigned("!=", e, ir.Constant(smem_ty, 0))
        return builder.bitcast(e, reg_ty)

    return read


def dst_slots(builder, dst_layout):
    """``(coords, linear)`` of every fragment slot of ``dst_layout``, in fragment order
    (a :class:`SliceLayout` slot: its parent slot's coordinates, 0 along the reduced axis)."""
    if isinstance(dst_layout, SliceLayout):
        out = []
        for coords, _linear in dst_slots(builder, dst_layout.parent):
            c = list(coords)
            c[dst_layout.axis] = const_i64(0)
            out.append((c, linear_of(builder, dst_layout.shape, c)))
        return out
    if isinstance(dst_layout, MmaLayout):
        return mma_slots(builder, dst_layout)
    if isinstance(dst_layout, VectorLayout):
        lines = mma_slots(builder, dst_layout.parent)
        out = []
        for slot in range(dst_layout.elems_per_thread):
            at = lines[dst_layout.parent_slot(slot)][0][dst_layout.axis]
            if dst_layout.ndim == 1:
                coords = [at]
            else:
                coords = [at, const_i64(0)] if dst_layout.axis == 0 else [const_i64(0), at]
            out.append((coords, at))
        return out
    out = []
    for rep in range(dst_layout.reps):
        start = chunk_linear(builder, dst_layout, rep)
        first = _coords_of(builder, dst_layout, start)
        for v in range(dst_layout.vec):
            linear = builder.add(start, const_i64(v))
            coords = first[:-1] + [builder.add(first[-1], const_i64(v))] if first else []
            out.append((coords, linear))
    return out


def warp_coords(builder, layout: MmaLayout):
    """``(lane, warp_row, warp_col)`` of this thread in ``layout`` (i64 values; a replicating
    warp takes the coordinates of warp ``w % (warps_m * warps_n)``)."""
    t = thread_index(builder)
    lane = builder.and_(t, const_i64(31))
    w = builder.lshr(t, const_i64(5))
    used = layout.warps_m * layout.warps_n
    if used < layout.num_threads // 32:
        w = builder.and_(w, const_i64(used - 1))
    wm = builder.lshr(w, const_i64(layout.warps_n.bit_length() - 1))
    wn = builder.and_(w, const_i64(layout.warps_n - 1))
    return lane, wm, wn


def mma_slots(builder, layout: MmaLayout):
    """``([row, col], linear)`` of every fragment slot of an :class:`MmaLayout`, in fragment
    order (``layout.slot_coords`` as i64 values)."""
    lane, wm, wn = warp_coords(builder, layout)
    _wtm, wtn = layout.warp_tile
    row0 = builder.add(builder.mul(wm, const_i64(layout.warp_row_step)),
                       builder.lshr(lane, const_i64(2)))
    col0 = builder.add(builder.mul(wn, const_i64(wtn)),
                       builder.shl(builder.and_(lane, const_i64(3)), const_i64(1)))
    am, an = layout.atoms
    out = []
    for im in range(am):
        for jn in range(an):
            for i in range(4):
                row = builder.add(row0, const_i64(im * layout.atom_row_step + 8 * (i // 2)))
                col = builder.add(col0, const_i64(jn * ATOM_N + i % 2))
                out.append(([row, col], linear_of(builder, layout.shape, [row, col])))
    return out


def remap(builder, dt, src_layout, elems, dst_layout, source):
    """Rearrange a tile through shared memory: the element of destination slot with
    multi-index ``coords`` and row-major index ``linear`` is the source element at
    row-major index ``source(coords, linear)`` (an i64 value, ``< numel``).

    A tile of more than :func:`pass_bytes` bytes moves in several passes of that size (a
    barrier pair each), so the scratch it needs fits the target whatever the tile's size.
    """
    numel = src_layout.numel
    passes = max(1, numel * max(dtypes.itemsize(dt), 1) // pass_bytes())
    if passes == 1:
        read = stage(builder, dt, src_layout, elems)
        return [read(source(coords, linear)) for coords, linear in dst_slots(builder, dst_layout)]
    # several passes, each staging a contiguous range of row-major indices (powers of two:
    # the ranges are equal); a destination slot takes its element in the pass whose range
    # holds its source (a select), reading a valid address in the others
    span = numel // passes
    sources = [source(coords, linear) for coords, linear in dst_slots(builder, dst_layout)]
    out = [None] * len(sources)
    for p in range(passes):
        read = stage(builder, dt, src_layout, elems, p * span, span)
        for k, src in enumerate(sources):
            rel = builder.sub(src, const_i64(p * span))
            inside = builder.icmp_unsigned("<", rel, const_i64(span))
            v = read(builder.select(inside, rel, const_i64(0)))
            out[k] = v if out[k] is None else builder.select(inside, v, out[k])
    return out


def _coords_of(builder, layout, linear):
    """Multi-index (i64 values) of row-major index ``linear`` in ``layout.shape`` (powers of
    two: shifts and masks)."""
    coords = []
    lin = linear
    for s in reversed(layout.shape):
        coords.append(builder.and_(lin, const_i64(s - 1)))
        lin = builder.lshr(lin, const_i64(s.bit_length() - 1))
    return list(reversed(coords))


def linear_of(builder, shape, coords):
    """Row-major index (i64) of multi-index ``coords`` in ``shape`` (powers of two)."""
    lin = const_i64(0)
    for s, c in zip(shape, coords):
        lin = builder.add(builder.shl(lin, const_i64(s.bit_length() - 1)), c)
    return lin


__all__ = ["barrier", "chunk_linear", "convert_layout", "remap", "linear_of",
           "mma_slots", "warp_coords"]
