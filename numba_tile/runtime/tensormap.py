"""Tensor maps for TMA loads (``lowering/tma.py``), built on the host at launch.

A kernel whose staged loads travel by TMA takes one 128-byte tensor map per (tensor, box) as a
kernel parameter (``CompiledKernel.tensor_maps``). :func:`encode` builds it with the driver's
``cuTensorMapEncodeTiled`` (through ``cuda.bindings``) from the array the launch passes: its
pointer, extents and row stride, so the map describes exactly the array's elements (the TMA
zero-fills every element outside them, and no box reads past them). The arguments, per
``shared/notes/hopper-gemm.md`` section 2.1:

* element type float16, bfloat16 or, for FP8, 8-bit unsigned (the copy converts nothing),
  rank 2, extents ``{cols, rows}`` (innermost first), the row stride in bytes;
* box ``{128 / itemsize, box_rows}`` (one 128-byte swizzle atom: 64 16-bit or 128 FP8
  elements), element strides 1;
* no interleave, ``CU_TENSOR_MAP_SWIZZLE_128B`` (the layout ``wgmma`` reads), L2 promotion of
  128 bytes (as CUTLASS and Triton), out-of-bound elements zero
  (``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``).

Maps are cached per (pointer, extents, stride, dtype, box): a repeated launch on the same
arrays costs a dictionary lookup. :func:`encoder_for` gives a launch plan (fixed extents and
strides) a function of the pointer alone.
"""

from __future__ import annotations

import struct

from numba_tile.errors import TileArgumentError

__all__ = ["encode", "encoder_for", "check_encodable"]

#: entries kept in the process-wide cache (then it is cleared: a map costs ~10 us to build)
_MAX_CACHED = 1024
_CACHE: dict = {}

#: the maps' L2 promotion (``CUtensorMapL2promotion`` member, without its prefix)
L2_PROMOTION = "L2_128B"

#: extents the TMA's signed 32-bit box coordinates can reach (``lowering/tma.py`` clamps tile
#: indices to the tile grid, at most ``extent + 255``)
MAX_EXTENT = 2**31 - 256


#: element bytes of the dtypes a map describes (FP8 travels as 8-bit unsigned: the TMA only
#: copies bytes, it converts nothing)
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}


def _dtype_code(drv, name: str):
    t = drv.CUtensorMapDataType
    codes = {"float16": t.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
             "bfloat16": t.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
             "float8_e4m3fn": t.CU_TENSOR_MAP_DATA_TYPE_UINT8,
             "float8_e5m2": t.CU_TENSOR_MAP_DATA_TYPE_UINT8}
    return codes[name]


def box_cols(dtype_name: str) -> int:
    """Elements per box row: one 128-byte swizzle atom."""
    return 128 // ITEMSIZE[dtype_name]


def check_encodable(kernel: str, param: str, shape, strides, itemsize: int, ptr: int):
    """Raise :class:`TileArgumentError` (naming the kernel and the argument) for an array a
    tensor map cannot describe: empty, an extent of ``MAX_EXTENT`` or more, a row stride or
    base that is not a multiple of 16 bytes, or a last stride other than 1 element."""
    rows, cols = shape
    why = None
    if rows == 0 or cols == 0:
        why = f"it is empty (shape {tuple(shape)})"
    elif rows >= MAX_EXTENT or cols >= MAX_EXTENT:
        why = f"an extent of {max(rows, cols)} is {MAX_EXTENT} or more"
    elif strides[1] != 1 or strides[0] <= 0 or (strides[0] * itemsize) % 16 or ptr % 16:
        why = (f"its strides {tuple(strides)} (elements) and address {ptr:#x} are not a "
               f"contiguous last axis with positive 16-byte row strides")
    if why is not None:
        raise TileArgumentError(
            f"kernel '{kernel}': argument '{param}': its tiles travel by the tensor memory "
            f"accelerator (a pipelined wgmma loop on compute capability 9.0), which cannot take "
            f"this array: {why}. Pass a copy (a contiguous array), or set NUMBA_TILE_TMA=0 "
            f"before the kernel's first launch in the process (cp.async copies instead)")


def encode(ptr: int, shape, strides, dtype_name: str, box_rows: int) -> bytes:
    """The 128 bytes of the tensor map of the 2-D array at ``ptr`` (``shape`` in elements,
    ``strides`` in elements, last stride 1) with boxes of ``{128 bytes, box_rows}``."""
    key = (ptr, tuple(shape), tuple(strides), dtype_name, box_rows, L2_PROMOTION)
    got = _CACHE.get(key)
    if got is not None:
        return got
    from cuda.bindings import driver as drv
    rows, cols = shape
    itemsize = ITEMSIZE[dtype_name]
    err, tmap = drv.cuTensorMapEncodeTiled(
        _dtype_code(drv, dtype_name), 2, ptr,
        [drv.cuuint64_t(cols), drv.cuuint64_t(rows)],
        [drv.cuuint64_t(strides[0] * itemsize)],
        [drv.cuuint32_t(box_cols(dtype_name)), drv.cuuint32_t(box_rows)],
        [drv.cuuint32_t(1), drv.cuuint32_t(1)],
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        getattr(drv.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_" + L2_PROMOTION),
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise TileArgumentError(
            f"cuTensorMapEncodeTiled refused a ({rows}, {cols}) {dtype_name} array with row "
            f"stride {strides[0]} at {ptr:#x} and boxes of ({box_cols(dtype_name)}, {box_rows}): "
            f"{err} (raised "
            f"before the launch; see Kernel.compiled(...).tensor_maps for the argument)")
    data = struct.pack("<16Q", *(int(w) for w in tmap.opaque))
    if len(_CACHE) >= _MAX_CACHED:
        _CACHE.clear()
    _CACHE[key] = data
    return data


def encoder_for(shape, strides, dtype_name: str, box_rows: int):
    """``ptr -> map bytes`` for arrays of one layout (a launch plan's): the cache of
    :func:`encode` keyed by the pointer alone."""
    own: dict = {}
    shape, strides = tuple(shape), tuple(strides)

    def enc(ptr):
        got = own.get(ptr)
        if got is None:
            if len(own) >= 64:
                own.clear()
            got = own[ptr] = encode(ptr, shape, strides, dtype_name, box_rows)
        return got

    return enc
