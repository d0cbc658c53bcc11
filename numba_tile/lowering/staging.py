"""Shared-memory layouts of matrix operands staged for the tensor cores, and the fence
that hands them from the generic proxy to the async one.

* :class:`Staged`: a row-major matrix, rows swizzled in 16-byte chunks (the layout of
  ``mma.sync``'s operands, read with ``ldmatrix``: ``mma.py``'s module docstring);
* :class:`AtomStaged`: atom columns of 128 or 64 bytes with CUTLASS's ``Swizzle<.., 4, 3>``
  (what ``wgmma`` reads through descriptors and TMA writes: ``wgmma.py``'s module docstring);
* :func:`staging_layout` picks one for a kernel; :func:`align_1024` rebases a region for the
  swizzle; :func:`fence_proxy_async` orders generic-proxy writes before async-proxy reads.

Below the operand producers (``pipeline.py``, ``tma.py``, ``ws.py``) and the products
(``mma.py``, ``wgmma.py``), which all address the same slots.
"""

from __future__ import annotations

from llvmlite import ir

from .. import compiler_context
from .common import I32, I64
from .shared import address32


def _c32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _asm(builder, text, constraints="~{memory}"):
    builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, constraints,
                              side_effect=True), [])


class Staged:
    """A row-major ``rows x cols`` matrix of ``itemsize``-byte elements in shared memory,
    rows swizzled in 16-byte chunks (``mma.py``'s module docstring)."""

    def __init__(self, base, rows: int, cols: int, itemsize: int):
        self.base, self.rows, self.cols, self.itemsize = base, rows, cols, itemsize
        self.row_bytes = cols * itemsize
        self.nbytes = rows * self.row_bytes

    def offset(self, builder, row, byte_col):
        """Byte offset (i32) of byte ``byte_col`` of row ``row`` (i32 values)."""
        chunks = self.row_bytes // 16
        chunk = builder.lshr(byte_col, _c32(4))
        within = builder.and_(byte_col, _c32(15))
        if chunks >= 8:
            phase = builder.and_(row, _c32(7))
        else:
            phase = builder.and_(builder.lshr(row, _c32(_log2(8 // chunks))), _c32(chunks - 1))
        return builder.add(builder.add(builder.mul(row, _c32(self.row_bytes)),
                                       builder.shl(builder.xor(chunk, phase), _c32(4))), within)

    def pointer(self, builder, row, byte_col, ty):
        off = builder.zext(self.offset(builder, row, byte_col), I64)
        return builder.bitcast(builder.gep(self.base, [off]), ty.as_pointer(3))

    def address(self, builder, row, byte_col):
        """32-bit ``.shared`` address of a byte, for inline PTX."""
        return builder.add(address32(builder, self.base), self.offset(builder, row, byte_col))


def atom_width(cols: int, itemsize: int) -> int | None:
    """Bytes of the swizzle atoms a ``cols``-wide operand is stored in: 128 where its rows are
    whole 128-byte atoms, else 64 where they are whole 64-byte ones (a K of 32 16-bit
    elements: wgmma's 64-byte swizzle mode), else None."""
    row = cols * itemsize
    return 128 if row % 128 == 0 else 64 if row % 64 == 0 else None


class AtomStaged:
    """A ``rows x cols`` matrix of ``itemsize``-byte elements in shared memory as atom
    columns of ``width`` bytes (128, or 64 where the rows are not whole 128-byte atoms:
    :func:`atom_width`), swizzled by CUTLASS's ``Swizzle<log2(width / 16), 4, 3>``: the 16-byte chunk ``j`` of row ``r`` at ``j ^ ((r * width / 128) % (width /
    16))``, the XOR of address bits 4.. with bits 7.. (``base`` 1024-byte aligned;
    ``wgmma.py``'s module docstring)."""

    def __init__(self, base, rows: int, cols: int, itemsize: int):
        self.base, self.rows, self.cols, self.itemsize = base, rows, cols, itemsize
        self.nbytes = rows * cols * itemsize
        self.width = atom_width(cols, itemsize)
        # the distance between two rows of one atom column: what ``mma.sync``'s ``ldmatrix``
        # path (``lowering/mma._tensor_core_product``) moves by, as with ``Staged.row_bytes``
        self.row_bytes = self.width

    @staticmethod
    def fits(rows: int, cols: int, itemsize: int) -> bool:
        return atom_width(cols, itemsize) is not None and rows % 8 == 0

    def address(self, builder, row, byte_col):
        """32-bit ``.shared`` address of a byte, for inline PTX."""
        return builder.add(address32(builder, self.base), self.offset(builder, row, byte_col))

    def offset(self, builder, row, byte_col):
        w = self.width
        chunks = w // 16
        atom = builder.lshr(byte_col, _c32(w.bit_length() - 1))
        chunk = builder.and_(builder.lshr(byte_col, _c32(4)), _c32(chunks - 1))
        within = builder.and_(byte_col, _c32(15))
        # bits 7.. of the row's byte offset row * w within the atom column
        phase = builder.and_(builder.lshr(row, _c32(8 - w.bit_length())), _c32(chunks - 1)) \
            if w < 128 else builder.and_(row, _c32(chunks - 1))
        swz = builder.shl(builder.xor(chunk, phase), _c32(4))
        return builder.add(builder.add(builder.mul(atom, _c32(self.rows * w)),
                                       builder.mul(row, _c32(w))),
                           builder.add(swz, within))

    def pointer(self, builder, row, byte_col, ty):
        off = builder.zext(self.offset(builder, row, byte_col), I64)
        return builder.bitcast(builder.gep(self.base, [off]), ty.as_pointer(3))


def staging_layout(base, rows: int, cols: int, itemsize: int):
    """The shared-memory layout of a staged operand (a pipeline slot, ``lowering/pipeline.py``,
    or an operand ``mma.sync`` stages): :class:`AtomStaged` in a kernel with a wgmma product
    (``typing/mma.use_wgmma`` said so) where the tile is whole 128-byte atoms (wgmma reads it
    through descriptors, ``ldmatrix`` as well), else :class:`Staged` (a kernel of
    ``mma.sync`` products only keeps the layout it was measured with: the atom layout made a
    128 x 128 x 64 product over 4 warps spill)."""
    if getattr(compiler_context.current(), "uses_wgmma", False) and AtomStaged.fits(
            rows, cols, itemsize):
        return AtomStaged(base, rows, cols, itemsize)
    return Staged(base, rows, cols, itemsize)


def align_1024(builder, base):
    """``base`` (an ``i8 addrspace(3)*``) moved up to the next 1024-byte boundary (the caller
    reserved 1024 bytes more)."""
    pad = builder.and_(builder.sub(_c32(0), address32(builder, base)), _c32(1023))
    return builder.gep(base, [builder.zext(pad, I64)])


def fence_proxy_async(builder):
    """``fence.proxy.async.shared::cta``: this thread's generic-proxy writes to shared memory
    (``st.shared``, ``cp.async``) visible to the async proxy (wgmma), before the barrier that
    hands them over."""
    _asm(builder, "fence.proxy.async.shared::cta;")
