"""Layout conversion between register layouts, through shared memory.

Two tiles of one shape can sit in different layouts (a float16 tile holds 8 elements
per chunk, a float32 tile 4). Before an elementwise op the right operand is moved
into the left operand's layout: every thread writes its fragment to a shared-memory
buffer at the elements' row-major positions, the block synchronizes (``bar.sync 0``),
and every thread reads the elements of the target layout. A leading barrier keeps a
conversion inside a loop from overwriting a buffer still being read. Each conversion
site has its own statically sized buffer (``.shared`` array of the tile's size).
"""

from __future__ import annotations

import itertools

from llvmlite import ir
from numba.cuda import cgutils

from .. import dtypes
from ..errors import TileTypingError
from ..typing.types import element_llvm_type
from .common import I64, const_i64, thread_index

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


def convert_layout(builder, dt, src_layout, elems, dst_layout):
    """Register elements of a tile of dtype ``dt`` in ``src_layout`` -> in ``dst_layout``.

    Raises:
        TileTypingError: the tile does not fit the 48 KB of static shared memory.
    """
    if src_layout == dst_layout:
        return list(elems)
    numel = src_layout.numel
    reg_ty = element_llvm_type(dt)
    # Elements travel through shared memory as plain integers of their width.
    smem_ty = ir.IntType(8) if dt == dtypes.bool_ else ir.IntType(8 * dtypes.itemsize(dt))
    nbytes = numel * max(dtypes.itemsize(dt), 1)
    if nbytes > _MAX_SHARED:
        raise TileTypingError(f"a layout conversion of a {src_layout.shape} tile needs {nbytes} "
                              f"bytes of shared memory, more than {_MAX_SHARED}")
    module = builder.module
    arr_ty = ir.ArrayType(smem_ty, numel)
    gv = ir.GlobalVariable(module, arr_ty, name=f"__numba_tile_cvt_{next(_counter)}", addrspace=3)
    gv.linkage = "internal"
    gv.initializer = ir.Constant(arr_ty, ir.Undefined)
    # No over-alignment: with ``align 16`` NVVM's load/store vectorizer merges the accesses
    # into vector forms its backend then rejects ("unsupported operation", libNVVM 13.0 and
    # 13.5, -opt >= 1).
    base = builder.bitcast(gv, smem_ty.as_pointer(3))

    def ptr(lin):
        return builder.gep(base, [lin])

    barrier(builder)
    k = 0
    for rep in range(src_layout.reps):
        start = chunk_linear(builder, src_layout, rep)
        for v in range(src_layout.vec):
            e = elems[k]
            k += 1
            e = builder.zext(e, smem_ty) if dt == dtypes.bool_ else builder.bitcast(e, smem_ty)
            builder.store(e, ptr(builder.add(start, const_i64(v))))
    barrier(builder)
    out = []
    for rep in range(dst_layout.reps):
        start = chunk_linear(builder, dst_layout, rep)
        for v in range(dst_layout.vec):
            e = builder.load(ptr(builder.add(start, const_i64(v))))
            if dt == dtypes.bool_:
                e = builder.icmp_unsigned("!=", e, ir.Constant(smem_ty, 0))
            else:
                e = builder.bitcast(e, reg_ty)
            out.append(e)
    return out


__all__ = ["barrier", "chunk_linear", "convert_layout", "I64"]
