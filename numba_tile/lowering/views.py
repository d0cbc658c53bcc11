"""Array views: a tensor or partition parameter unpacked for the lowering (data pointer,
extents, strides) and the bounds arithmetic of tiles over it (the tile grid, whether a
hand-built tile index lies in it, a tile's valid extents), and the conversion of elements
between their memory and register forms. Used by every lowering that reads or writes an
array: the loads and stores (``memory.py``), the pipelined loads (``pipeline.py``), the
partitions' tile walks (``partition.py``, ``tile_order.py``), products and unchecked ops.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils, types

from .. import dtypes
from ..typing.types import PartitionIndexType, element_llvm_type
from .common import const_i64

#: a constant tile index ``c`` with ``|c| * tile`` below this cannot wrap: the element
#: masks alone are exact for it
_NO_WRAP = 2 ** 62

class ArrayView:
    """Unpacked Tensor/Partition parameter: data pointer, extents and strides (i64)."""

    def __init__(self, context, builder, ty, value):
        s = cgutils.create_struct_proxy(ty)(context, builder, value=value)
        self.ty = ty
        self.data = s.data
        self.shape = cgutils.unpack_tuple(builder, s.shape, ty.ndim)
        self.strides = cgutils.unpack_tuple(builder, s.strides, ty.ndim)
        self.zero = {d: div for d, div in getattr(ty, "zero_axes", ())}
        for d in self.zero:                    # 0 in this specialization (argtypes.zero_axes)
            self.strides[d] = const_i64(0)
        if ty.vec16 and ty.ndim and (ty.ndim - 1) not in self.zero:
            self.strides[-1] = const_i64(1)        # vec16: the last axis is contiguous
        self.storage_llvm = context.get_data_type(ty.storage)
        self.itemsize = dtypes.itemsize(ty.dtype)

    def global_ptr(self, builder, offset, lanes: int):
        """Pointer into address space 1 at element ``offset``, as ``lanes``-vector."""
        p = builder.gep(self.data, [offset])
        elem = self.storage_llvm if lanes == 1 else ir.VectorType(self.storage_llvm, lanes)
        p = builder.bitcast(p, elem.as_pointer())
        return builder.addrspacecast(p, elem.as_pointer(1))

    def word_ptr(self, builder, ptr, lanes: int):
        """``ptr`` (a ``lanes``-vector of sub-word elements covering 4, 8 or 16 bytes) as a
        pointer to 32-bit words (one, or a vector of 2 or 4), else None: NVVM splits a vector
        of 8 16-bit elements into two 8-byte accesses (``ld.global.v4.u16``), while 4 words
        are one 16-byte access (``ld.global.v4.u32``)."""
        nbytes = lanes * self.itemsize
        if self.itemsize >= 4 or lanes < 2 or nbytes not in (4, 8, 16):
            return None
        words = nbytes // 4
        wty = ir.IntType(32) if words == 1 else ir.VectorType(ir.IntType(32), words)
        return builder.bitcast(ptr, wty.as_pointer(1))


def tile_grid(builder, view: ArrayView, tile_shape):
    """Tiles per axis, ``ceil(extent / tile)``, as i64 values."""
    out = []
    for ext, s in zip(view.shape, tile_shape):
        out.append(builder.lshr(builder.add(ext, const_i64(s - 1)), const_i64(s.bit_length() - 1)))
    return out


def hand_built_axes(ty, ndim: int, tile_shape) -> list:
    """Which axes of a tile index of Numba type ``ty`` must be checked against the tile grid
    before use: every axis of an index built by hand (an integer or a tuple of integers),
    except an integer literal too small to wrap when multiplied by the tile's extent; no axis
    of a branded index (``PartitionIndexType``: made from the block id by ``tiles()``)."""
    if isinstance(ty, PartitionIndexType):
        return [False] * ndim
    tys = list(ty.types) if isinstance(ty, types.BaseTuple) else [ty]
    out = []
    for t, s in zip(tys, tile_shape):
        lit = getattr(t, "literal_value", None) if isinstance(t, types.Literal) else None
        out.append(not (isinstance(lit, int) and abs(lit) * s < _NO_WRAP))
    return out


def tile_in_grid(builder, view: ArrayView, index, tile_shape, axes) -> list | None:
    """Per axis, i1 ``0 <= index[d] < ceil(extent[d] / tile[d])`` (one unsigned compare: a
    negative index is a huge unsigned one) for the axes ``axes`` marks, None for the others;
    None when no axis needs it. The grid, ``(extent + tile - 1) >> log2(tile)`` on unsigned
    64-bit values, cannot wrap: extents are below 2**63."""
    if not any(axes):
        return None
    grid = tile_grid(builder, view, tile_shape)
    return [builder.icmp_unsigned("<", index[d], grid[d]) if axes[d] else None
            for d in range(len(index))]


def _grid_mask(in_grid) -> list:
    """The checked axes' in-grid bits as a list of masks (empty when nothing is checked)."""
    return [b for b in in_grid if b is not None] if in_grid is not None else []


def _storage_to_reg(builder, v, dt):
    """Element as stored in memory -> register element (bool: i8 -> i1; float16 is stored
    as i16 bits by numba-cuda's data model and bit-cast to ``half``)."""
    if dt == dtypes.bool_:
        return builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
    reg = element_llvm_type(dt)
    return v if v.type == reg else builder.bitcast(v, reg)


def _reg_to_storage(builder, v, dt, storage):
    """Register element -> element as stored in memory (LLVM type ``storage``)."""
    if dt == dtypes.bool_:
        return builder.zext(v, storage)
    return v if v.type == storage else builder.bitcast(v, storage)


def load_extents(builder, view: ArrayView, index, tile_shape, in_grid=None) -> list:
    """Valid extents (i64) of the tile at ``index``: ``clamp(shape - index * tile, 0, tile)``
    per axis, 0 along an axis whose index is not valid (negative, or outside the tile grid
    where ``in_grid`` checks it: then ``index * tile``, which may have wrapped, is not used)."""
    out = []
    for d, s in enumerate(tile_shape):
        rest = builder.sub(view.shape[d], builder.mul(index[d], const_i64(s)))
        e = builder.select(builder.icmp_signed(">", rest, const_i64(s)), const_i64(s), rest)
        ok = in_grid[d] if in_grid is not None else None
        if ok is not None:        # in the grid: 0 < rest, so e is the extent
            out.append(builder.select(ok, e, const_i64(0)))
            continue
        bad = builder.or_(builder.icmp_signed("<", rest, const_i64(0)),
                          builder.icmp_signed("<", index[d], const_i64(0)))
        out.append(builder.select(bad, const_i64(0), e))
    return out
