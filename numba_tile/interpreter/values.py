"""Interpreter values: tensors, partitions and tiles as NumPy arrays, and the block context.

The interpreter runs a kernel's Python function once per block. Kernel parameters
become :class:`InterpTensor` (read-only) and :class:`InterpPartition` (the block's own
tile of a mutable array); tiles are :class:`InterpTile`, a NumPy array with a numba_tile
dtype whose operators call the same ops' interpreter rules.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .. import dtypes

_BLOCK: contextvars.ContextVar = contextvars.ContextVar("numba_tile_block", default=None)


@dataclass(frozen=True)
class BlockContext:
    """The block being interpreted: its linear id and the launch grid (tiles per axis)."""

    linear: int
    grid: tuple

    @property
    def index(self) -> tuple:
        return tuple(int(i) for i in np.unravel_index(self.linear, self.grid))


def current_block() -> BlockContext:
    blk = _BLOCK.get()
    if blk is None:
        raise RuntimeError("numba_tile ops run only inside a kernel (launch it, or use "
                           "interpret=True)")
    return blk


@contextmanager
def running_block(blk: BlockContext):
    token = _BLOCK.set(blk)
    try:
        yield blk
    finally:
        _BLOCK.reset(token)


class InterpTensor:
    """A read-only tensor parameter over a host array (``array`` is a NumPy array)."""

    def __init__(self, name: str, array: np.ndarray, dtype):
        self.name, self.array, self.dtype = name, array, dtype

    @property
    def ndim(self):
        return self.array.ndim


class InterpPartition(InterpTensor):
    """A mutable partition parameter: the block's own tile of ``array``.

    ``writers`` (same shape as ``array``, int64) records which block last wrote each
    element (-1: none yet): the interpreter's race detector.
    """

    def __init__(self, name: str, array: np.ndarray, dtype, tile_shape: tuple):
        super().__init__(name, array, dtype)
        self.tile_shape = tuple(tile_shape)
        self.writers = np.full(array.shape, -1, np.int64)

    def record_writes(self, region: tuple) -> None:
        """Record that the current block writes ``array[region]``.

        Raises:
            DataRaceError: another block of this launch already wrote an element of it,
                naming both blocks and the element.
        """
        from ..errors import DataRaceError
        blk = current_block()
        seen = self.writers[region]
        clash = (seen != -1) & (seen != blk.linear)
        if clash.any():
            local = tuple(int(i) for i in np.argwhere(clash)[0])
            element = tuple(r.start + i for r, i in zip(region, local))
            other = int(seen[local])
            raise DataRaceError(
                f"data race on '{self.name}': element {element} written by block "
                f"{tuple(int(i) for i in np.unravel_index(other, blk.grid))} (linear {other}) and "
                f"by block {blk.index} (linear {blk.linear})")
        self.writers[region] = blk.linear

    def own_index(self) -> tuple:
        grid = tuple(-(-s // t) for s, t in zip(self.array.shape, self.tile_shape))
        return tuple(int(i) for i in np.unravel_index(current_block().linear, grid))


class InterpTile:
    """A tile in the interpreter: ``data`` (NumPy array of the tile's shape), ``dtype``
    (a numba_tile dtype) and, for a masked tile, ``extents``: its valid elements are
    ``data[:extents[0], :extents[1], ...]`` (None: all valid). Operators dispatch to the
    registered interpreter rules."""

    __array_priority__ = 1000

    def __init__(self, data: np.ndarray, dtype, extents=None):
        self.dtype = dtype
        self.data = np.asarray(data).astype(dtypes.to_numpy(dtype), copy=False)
        self.extents = None if extents is None else tuple(int(e) for e in extents)

    def valid(self) -> np.ndarray:
        """Boolean array of the tile's shape: True at its valid elements."""
        mask = np.ones(self.data.shape, bool)
        if self.extents is not None:
            for d, e in enumerate(self.extents):
                idx = [None] * self.data.ndim
                idx[d] = slice(None)
                mask &= (np.arange(self.data.shape[d]) < e)[tuple(idx)]
        return mask

    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"InterpTile({dtypes.name(self.dtype)}, {self.data!r})"

    def _op(name):
        def binary(self, other):
            from .._registry import OPS
            return OPS[name].interp(self, other)

        def rbinary(self, other):
            from .._registry import OPS
            return OPS[name].interp(other, self)

        return binary, rbinary

    __add__, __radd__ = _op("add")
    __sub__, __rsub__ = _op("sub")
    __mul__, __rmul__ = _op("mul")
    __truediv__, __rtruediv__ = _op("truediv")
    __floordiv__, __rfloordiv__ = _op("floordiv")
    __mod__, __rmod__ = _op("mod")
    __pow__, __rpow__ = _op("pow")
    __and__, __rand__ = _op("and_")
    __or__, __ror__ = _op("or_")
    __xor__, __rxor__ = _op("xor")
    __lt__, _ = _op("lt")
    __le__, _ = _op("le")
    __gt__, _ = _op("gt")
    __ge__, _ = _op("ge")
    __eq__, _ = _op("eq")
    __ne__, _ = _op("ne")
    del _op
    __hash__ = None

    def __neg__(self):
        from .._registry import OPS
        return OPS["neg"].interp(self)

    def __pos__(self):
        from .._registry import OPS
        return OPS["pos"].interp(self)

    def __invert__(self):
        from .._registry import OPS
        return OPS["invert"].interp(self)

    def __abs__(self):
        from .._registry import OPS
        return OPS["builtin_abs"].interp(self)

    def __bool__(self):
        raise TypeError("a tile has no truth value; use where() or a reduction")
