"""Tiles larger than the registers of the block's threads: compiled, with a warning.

A tile lives in its threads' registers, ``elems_per_thread`` elements each (its layout,
``layout.py``). Past :data:`~numba_tile.typing.common.REGISTER_ELEMS_PER_THREAD` the thread
cannot keep it there: ptxas spills it to local memory (per-thread memory that travels
through the L1 and L2), and the unrolled code takes seconds to assemble. Triton compiles such
tiles the same way. numba_tile compiles them too, up to
:data:`~numba_tile.typing.common.MAX_ELEMS_PER_THREAD` elements per thread (past that the
typing rule that makes the tile refuses it), and warns once per tile: a
:class:`~numba_tile.errors.TilePerformanceWarning` at the line that first makes a tile of
that shape and dtype, naming the tile, its elements per thread and the ``num_warps`` that
would hold it in registers. The rule sees the typed IR, so both backends warn alike.
"""

from __future__ import annotations

import math
import warnings

from numba.cuda.core import ir

from .. import dtypes
from ..layout import SliceLayout
from ..errors import TilePerformanceWarning
from .common import REGISTER_ELEMS_PER_THREAD, warps_for
from .types import TileType

__all__ = ["warn_spilled_tiles"]

# warnings.warn_explicit's registry: under the default filter a warning is shown once per
# text and line, however often the kernel is compiled (each specialization, each backend)
_REGISTRY: dict = {}


def warn_spilled_tiles(func_ir, typemap, kernel_name: str, num_warps: int) -> None:
    """Warn about each tile of the typed kernel that holds more than
    ``REGISTER_ELEMS_PER_THREAD`` elements in a thread: once per (shape, dtype, layout), at
    the first statement that assigns one (in source order)."""
    seen = set()
    stmts = []
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                stmts.append(stmt)
    stmts.sort(key=lambda s: (s.loc.line or 0))
    for stmt in stmts:
        ty = typemap.get(stmt.target.name)
        # a reduction's keepdims result (SliceLayout) repeats its operand's slots: the operand
        # is the tile to name
        if not isinstance(ty, TileType) or isinstance(ty.layout, SliceLayout):
            continue
        per = ty.layout.elems_per_thread
        if per <= REGISTER_ELEMS_PER_THREAD:
            continue
        key = (ty.shape, ty.dtype, ty.layout)
        if key in seen:
            continue
        seen.add(key)
        warnings.warn_explicit(_message(ty, per, kernel_name, num_warps),
                               TilePerformanceWarning, stmt.loc.filename or "<kernel>",
                               stmt.loc.line or 0, registry=_REGISTRY)


def _message(ty: TileType, per: int, kernel_name: str, num_warps: int) -> str:
    numel = math.prod(ty.shape)
    # the row kernels of examples/ keep 16 to 64 elements a thread; 64 where 32 warps can
    nw = warps_for(numel, 64) or warps_for(numel, 128) or warps_for(numel)
    hint = (f"num_warps={nw} holds it in {-(-numel // (32 * nw))} per thread"
            if nw and nw > num_warps else
            "a loop over smaller tiles of it keeps it in registers")
    return (f"kernel '{kernel_name}': a {dtypes.name(ty.dtype)} tile of shape {ty.shape} puts "
            f"{per} elements in each of {32 * num_warps} threads (num_warps={num_warps}), more "
            f"than {REGISTER_ELEMS_PER_THREAD} (what a thread keeps in registers): it spills to "
            f"local memory and assembles slowly; {hint}")
