"""Layout conversion between register layouts, through shared memory.

Two tiles of one shape can sit in different layouts (a float16 tile holds 8 elements
per chunk, a float32 tile 4). Before an elementwise op the right operand is moved
into the left operand's layout: every thread writes its fragment to a shared-memory
buffer at the elements' row-major positions, the block synchronizes (``bar.sync 0``),
and every thread reads the elements of the target layout. A leading barrier keeps a
conversion inside a loop from overwriting a buffer still being read. Each conversion
site has its own statically sized buffer (``.shared`` array of the tile's size).
The shape ops (reshape, broadcast, permute) use the same mechanism with a different
source index per destination element (:func:`remap`).
"""

from __future__ import annotations

import itertools

from llvmlite import ir
from numba.cuda import cgutils

from .. import compiler_context, dtypes
from ..errors import TileTypingError
from ..layout import BlockedLayout, SliceLayout
from ..typing.types import element_llvm_type
from .common import const_i64, is_storing_thread, thread_index

_MAX_SHARED = 48 * 1024   # static shared memory per block without opt-in (bytes)
_counter = itertools.count()


def barrier(builder):
    """``bar.sync 0`` for the whole block (``llvm.nvvm.barrier0``)."""
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


def same_distribution(a, b) -> bool:
    """True when layouts ``a`` and ``b`` put the same row-major linear indices in the same
    fragment slots of the same threads (then a reshape between them moves no data)."""
    if not (isinstance(a, BlockedLayout) and isinstance(b, BlockedLayout)):
        return a == b
    return (a.num_threads == b.num_threads and a.numel == b.numel and a.vec == b.vec
            and a.threads_used == b.threads_used and a.reps == b.reps)


def convert_layout(builder, dt, src_layout, elems, dst_layout):
    """Register elements of a tile of dtype ``dt`` in ``src_layout`` -> in ``dst_layout``
    (same shape: every element keeps its row-major index).

    Raises:
        TileTypingError: the tile does not fit the 48 KB of static shared memory.
    """
    if src_layout == dst_layout or same_distribution(src_layout, dst_layout):
        return list(elems)
    return remap(builder, dt, src_layout, elems, dst_layout, lambda coords, linear: linear)


def stage(builder, dt, src_layout, elems):
    """Put a tile's elements in shared memory at their row-major indices, for the whole block.

    Barrier, owning threads store, barrier (a replicating thread's copy may differ: an
    atomic's result is the old value only in the owning thread). Returns ``read(linear)``,
    which loads the register element at row-major index ``linear`` (an i64 value).

    Raises:
        TileTypingError: the kernel's rearrangements exceed 48 KB of static shared memory.
    """
    numel = src_layout.numel
    reg_ty = element_llvm_type(dt)
    smem_ty = ir.IntType(8) if dt == dtypes.bool_ else ir.IntType(8 * dtypes.itemsize(dt))
    nbytes = numel * max(dtypes.itemsize(dt), 1)
    ctx = compiler_context.current()
    if ctx.shared_bytes + nbytes > _MAX_SHARED:
        raise TileTypingError(
            f"rearranging a {src_layout.shape} tile of {dtypes.name(dt)} needs {nbytes} bytes of "
            f"shared memory; with the kernel's other rearrangements ({ctx.shared_bytes} bytes) "
            f"that is more than the {_MAX_SHARED} bytes of static shared memory a block has: "
            f"use smaller tiles")
    ctx.shared_bytes += nbytes
    module = builder.module
    arr_ty = ir.ArrayType(smem_ty, numel)
    gv = ir.GlobalVariable(module, arr_ty, name=f"__numba_tile_smem_{next(_counter)}", addrspace=3)
    gv.linkage = "internal"
    gv.initializer = ir.Constant(arr_ty, ir.Undefined)
    # No over-alignment: with ``align 16`` NVVM's load/store vectorizer merges the accesses
    # into vector forms its backend then rejects ("unsupported operation", libNVVM 13.0 and
    # 13.5, -opt >= 1).
    base = builder.bitcast(gv, smem_ty.as_pointer(3))

    barrier(builder)
    if isinstance(src_layout, SliceLayout):
        # every slot of a line holds the same value: owners of the parent write it, maybe
        # several times, always the same value
        with builder.if_then(is_storing_thread(builder, src_layout.parent)):
            for e, (_coords, linear) in zip(elems, dst_slots(builder, src_layout)):
                e = builder.zext(e, smem_ty) if dt == dtypes.bool_ else builder.bitcast(e, smem_ty)
                builder.store(e, builder.gep(base, [linear]))
        barrier(builder)
        return _reader(builder, dt, base, smem_ty, reg_ty)
    owner = is_storing_thread(builder, src_layout)
    with builder.if_then(owner):
        k = 0
        for rep in range(src_layout.reps):
            start = chunk_linear(builder, src_layout, rep)
            for v in range(src_layout.vec):
                e = elems[k]
                k += 1
                e = builder.zext(e, smem_ty) if dt == dtypes.bool_ else builder.bitcast(e, smem_ty)
                builder.store(e, builder.gep(base, [builder.add(start, const_i64(v))]))
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
    out = []
    for rep in range(dst_layout.reps):
        start = chunk_linear(builder, dst_layout, rep)
        first = _coords_of(builder, dst_layout, start)
        for v in range(dst_layout.vec):
            linear = builder.add(start, const_i64(v))
            coords = first[:-1] + [builder.add(first[-1], const_i64(v))] if first else []
            out.append((coords, linear))
    return out


def remap(builder, dt, src_layout, elems, dst_layout, source):
    """Rearrange a tile through shared memory: the element of destination slot with
    multi-index ``coords`` and row-major index ``linear`` is the source element at
    row-major index ``source(coords, linear)`` (an i64 value).

    Raises:
        TileTypingError: the source tile does not fit the kernel's shared-memory budget.
    """
    read = stage(builder, dt, src_layout, elems)
    return [read(source(coords, linear)) for coords, linear in dst_slots(builder, dst_layout)]


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


__all__ = ["barrier", "chunk_linear", "convert_layout", "remap", "linear_of", "same_distribution"]
