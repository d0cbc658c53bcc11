"""Interpreter values: tensors, partitions and tiles as NumPy arrays, and the block context.

The interpreter runs a kernel's typed IR once per block (``typed_ir.py``). Kernel parameters
become :class:`InterpTensor` (read-only, or writable: an ``nt.Mutable`` parameter) and
:class:`InterpPartition` (the block's own tile of a mutable array); a writable array keeps
an :class:`AccessRecord` (the race detector). Tiles are :class:`InterpTile`, a NumPy
array with a numba_tile dtype whose operators call the same ops' interpreter rules.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..runtime.partition import tile_coords

_BLOCK: contextvars.ContextVar = contextvars.ContextVar("numba_tile_block", default=None)


@dataclass(frozen=True)
class BlockContext:
    """The block being interpreted: its linear id, the launch grid (tiles per axis) and the
    grid partition's tile order (``"row"`` or ``("grouped", GROUP)``; row for a mapped or
    explicit grid): block ``linear`` handles tile number ``linear`` in that order."""

    linear: int
    grid: tuple
    order: object = "row"

    @property
    def index(self) -> tuple:
        """The block's coordinates on the grid: its own tile of the grid partition (``bid``)."""
        return self.coords(self.linear)

    def coords(self, linear: int) -> tuple:
        """Grid coordinates of block ``linear`` (in the grid partition's order)."""
        return tile_coords(linear, self.grid, self.order)


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


_PAST = {"write": "written", "read": "read", "atomic": "updated atomically",
         "cta_atomic": "updated atomically with scope='cta'"}

_WHY_AND_FIX = {
    frozenset(["write"]): (
        "so the element ends with either block's value",
        "Have one block write each element (e.g. its own tile of a partition), or combine "
        "the values with an atomic (atomic_add, atomic_max, atomic_min, atomic_xchg)."),
    frozenset(["write", "read"]): (
        "so the read sees the old value or the new one",
        "A block may read only elements that no other block of the launch writes: read "
        "them in a later launch, once this one has written them."),
    frozenset(["write", "atomic"]): (
        "so the plain write and the atomic updates overwrite each other",
        "Access an element that blocks update atomically only through atomics "
        "(atomic_xchg sets it), or write it in another launch."),
    frozenset(["read", "atomic"]): (
        "so the read sees the element part-way through the other blocks' atomic updates",
        "Read it through an atomic (atomic_add of 0 returns its value), or in a later "
        "launch, once every update is done."),
}
_CTA = ("and an atomic with scope='cta' is atomic only with respect to the threads of its own "
        "block (PTX memory model: the two operations are not morally strong)",
        "Use scope='gpu' (the default) for an element that several blocks update.")
for _other in ("write", "read", "atomic", "cta_atomic"):
    _WHY_AND_FIX[frozenset(["cta_atomic", _other])] = _CTA


def _block_name(linear: int, blk: BlockContext) -> str:
    return f"block {blk.coords(linear)} (linear {linear})"


def _race_error(name: str, element: tuple, other: int, other_kind: str, blk: BlockContext,
                kind: str, op: str):
    """The :class:`~numba_tile.errors.DataRaceError` of two blocks' conflicting accesses,
    pointing at the kernel line making the second one (the current block's)."""
    from ..errors import DataRaceError
    from ..runtime.call_site import user_call_site
    why, fix = _WHY_AND_FIX[frozenset([kind, other_kind])]
    site = user_call_site() or (None, None)
    return DataRaceError(
        f"data race on '{name}', element {element}: {_PAST[other_kind]} by "
        f"{_block_name(other, blk)} and {_PAST[kind]} by "
        f"{_block_name(blk.linear, blk)} with {op}(); the blocks of one launch run "
        f"concurrently on the GPU, in no fixed order, {why}. {fix}",
        filename=site[0], lineno=site[1])


class AccessRecord:
    """Which blocks of one launch read, wrote and atomically updated each element of one
    array: the interpreter's race detector.

    The interpreter runs blocks one after another; on the GPU they run concurrently, in no
    fixed order. Two accesses to one element by different blocks conflict unless both are
    reads or both are atomics; a conflict raises
    :class:`~numba_tile.errors.DataRaceError` at the second access. Accesses by one block
    never conflict with each other (its ops run in program order).

    Per element, each kind keeps block ids (``none``, the id dtype's largest value: no
    block), in arrays of the array's shape allocated at the kind's first access:

    * ``writer``: the block that wrote it (plain writes: stores, scatters). One slot is
      enough: a second block writing it raises.
    * ``readers``, ``atomics``: two slots, the first block that read (or atomically
      updated) it and the latest one other than the first; together they tell whether any
      block but a given one did.

    Selections are either a region (a tuple of ``slice(lo, hi)`` with integer bounds, a
    box of the array) or element coordinates (a tuple of equal-length int64 arrays, one
    per axis, duplicates allowed); every check and update is vectorized over the selected
    elements. While the current block's id is the largest recorded (blocks arriving in
    increasing order, as the runner's row-major order does), one ``min`` over the first
    slot decides whether another block is there; otherwise the test is elementwise.

    Args:
        name: the kernel parameter's name (for messages).
        shape: the array's shape.
    """

    def __init__(self, name: str, shape: tuple):
        self.name, self.shape = name, tuple(shape)
        self.id_dtype = self.none = None
        self.writer = self.readers = self.atomics = self.cta_atomics = None
        self.latest = -1                        # the largest block id recorded so far

    def _new(self, blk: BlockContext) -> np.ndarray:
        if self.id_dtype is None:
            self.id_dtype = np.int32 if int(np.prod(blk.grid)) < 2**31 - 1 else np.int64
            self.none = np.iinfo(self.id_dtype).max
        return np.full(self.shape, self.none, self.id_dtype)

    # ------------------------------------------------------------------ checks

    def _others(self, seen: np.ndarray, me: int) -> np.ndarray:
        """True where ``seen`` (block ids) holds a block other than ``me``."""
        return (seen != me) & (seen != self.none)

    def _clash(self, sel: tuple, slots, kinds: str, blk: BlockContext, kind: str, op: str):
        """Raise if ``slots`` (arrays of block ids, the first slot first) name another block
        at ``sel``."""
        me = blk.linear
        first = slots[0][sel]
        if not first.size:
            return
        if me >= self.latest:
            # Every id held is <= me. The first slot holds me only where this block came
            # first, and then no other block came since (blocks run one at a time), so
            # another block is there exactly where the first slot holds an id below me.
            if not first.min() < me:
                return
        elif not any(self._others(s[sel], me).any() for s in slots):
            return
        seen = [first] + [s[sel] for s in slots[1:]]
        clash = self._others(seen[0], me)
        for more in seen[1:]:
            clash |= self._others(more, me)
        local = tuple(int(i) for i in np.argwhere(clash)[0])   # the first, in order
        other = next(int(v[local]) for v in seen if int(v[local]) not in (self.none, me))
        raise _race_error(self.name, _element(sel, local), other, kinds, blk, kind, op)

    def _check(self, sel: tuple, blk: BlockContext, kind: str, op: str) -> None:
        if self.writer is not None:
            self._clash(sel, (self.writer,), "write", blk, kind, op)
        if kind != "read" and self.readers is not None:
            self._clash(sel, self.readers, "read", blk, kind, op)
        if kind != "atomic" and self.atomics is not None:
            # every atomic is recorded here; a scope='cta' one is also in cta_atomics
            self._clash(sel, self.atomics, "atomic", blk, kind, op)
        if kind == "atomic" and self.cta_atomics is not None:
            self._clash(sel, self.cta_atomics, "cta_atomic", blk, kind, op)

    def _add(self, pair: tuple, sel: tuple, me: int) -> None:
        first, second = pair
        a = first[sel]
        if not a.size:
            return
        if me >= self.latest and a.min() >= me:     # held by no block but this one
            first[sel] = me
            return
        other = self._others(a, me)
        if isinstance(sel[0], slice):          # views: update in place
            np.copyto(second[sel], me, where=other)
            np.copyto(a, me, where=a == self.none)
        else:                                   # copies (duplicates get equal values)
            second[sel] = np.where(other, me, second[sel])
            first[sel] = np.where(a == self.none, me, a)

    # ------------------------------------------------------------------ recording

    def write(self, sel: tuple, op: str) -> None:
        """Record a plain write by the current block of the elements at ``sel``.

        Args:
            sel: a region (tuple of slices) or coordinates (tuple of int64 arrays).
            op: the op writing (for messages): ``"store"``, ``"scatter"``.

        Raises:
            DataRaceError: another block of this launch wrote, read or atomically updated
                one of them.
        """
        blk = current_block()
        if self.writer is None:
            self.writer = self._new(blk)
        self._check(sel, blk, "write", op)
        self.writer[sel] = blk.linear
        self.latest = max(self.latest, blk.linear)

    def read(self, sel: tuple, op: str) -> None:
        """Record a plain read (``load``, ``load_like``, ``gather``) by the current block.

        Raises:
            DataRaceError: another block of this launch wrote or atomically updated one of
                the elements.
        """
        blk = current_block()
        if self.readers is None:
            self.readers = (self._new(blk), self._new(blk))
        self._check(sel, blk, "read", op)
        self._add(self.readers, sel, blk.linear)
        self.latest = max(self.latest, blk.linear)

    def atomic(self, sel: tuple, op: str, scope: str = "gpu") -> None:
        """Record an atomic update (``atomic_*``) by the current block. Atomics of other
        blocks to the same element are legal when both have scope ``'gpu'`` or ``'sys'``; an
        atomic with scope ``'cta'`` is atomic only within its block, so any access of
        another block to its element conflicts with it.

        Raises:
            DataRaceError: another block of this launch wrote or read (plainly) one of the
                elements, or one of the two atomics has scope ``'cta'``.
        """
        blk = current_block()
        if self.atomics is None:
            self.atomics = (self._new(blk), self._new(blk))
        cta = scope == "cta"
        if cta and self.cta_atomics is None:
            self.cta_atomics = (self._new(blk), self._new(blk))
        self._check(sel, blk, "cta_atomic" if cta else "atomic", op)
        self._add(self.atomics, sel, blk.linear)
        if cta:
            self._add(self.cta_atomics, sel, blk.linear)
        self.latest = max(self.latest, blk.linear)


def _element(sel: tuple, local: tuple) -> tuple:
    """Array coordinates of entry ``local`` of the elements selected by ``sel``."""
    if isinstance(sel[0], slice):
        return tuple(int(s.start) + i for s, i in zip(sel, local))
    return tuple(int(c[local[0]]) for c in sel)


def duplicate_error(name: str, shape: tuple, coords: tuple, positions: np.ndarray,
                    tile_shape: tuple, op: str):
    """The :class:`~numba_tile.errors.DataRaceError` of one op of the current block writing
    one element twice, or None when the coordinates are distinct.

    Args:
        name: the array parameter's name.
        shape: the array's shape.
        coords: element coordinates written (tuple of equal-length int64 arrays, in bounds).
        positions: for each written element, its flat position in the index tiles.
        tile_shape: the index tiles' shape.
        op: the writing op (``"scatter"``).

    Returns:
        DataRaceError | None: the error naming the element and the two positions in the
        index tiles of its first repeated write (in row-major order of the tiles).
    """
    if len(coords[0]) < 2:
        return None
    flat = np.ravel_multi_index(coords, shape) if len(coords) > 1 else coords[0]
    order = np.argsort(flat, kind="stable")
    ranked = flat[order]
    repeat = ranked[1:] == ranked[:-1]
    if not repeat.any():
        return None
    from ..errors import DataRaceError
    from ..runtime.call_site import user_call_site
    second = int(order[1:][repeat].min())                  # the earliest repeated write
    first = int(np.argmax(flat == flat[second]))
    element = tuple(int(c[second]) for c in coords)
    at = [tuple(int(i) for i in np.unravel_index(positions[k], tile_shape))
          for k in (first, second)]
    blk = current_block()
    site = user_call_site() or (None, None)
    return DataRaceError(
        f"data race on '{name}', element {element}: written twice by one {op}() of "
        f"{_block_name(blk.linear, blk)}, from positions {at[0]} and {at[1]} of its "
        f"index tiles; on the GPU two threads write it, in no fixed order. Make the indices "
        f"of one {op} distinct (mask the repeats off), or combine the values with an atomic "
        f"(atomic_add, atomic_max, atomic_min, atomic_xchg).",
        filename=site[0], lineno=site[1])


class InterpTensor:
    """A tensor parameter over a host array (``array`` is a NumPy array).

    Args:
        name: the kernel parameter's name.
        array: the host array (no copy).
        dtype: its numba_tile dtype.
        writable: the kernel may write it (an ``nt.Mutable`` parameter of an unchecked
            kernel): its reads and writes are recorded in ``accesses`` for the race
            detector. A read-only tensor's reads are not recorded (no kernel can write it).
    """

    def __init__(self, name: str, array: np.ndarray, dtype, writable: bool = False):
        self.name, self.array, self.dtype = name, array, dtype
        self.accesses = AccessRecord(name, array.shape) if writable else None

    @property
    def shape(self) -> tuple:
        """The array's extents (``x.shape`` in a kernel: int64 values)."""
        return tuple(np.int64(n) for n in self.array.shape)

    @property
    def ndim(self):
        return self.array.ndim

    def __getitem__(self, index):
        """``x[i]`` in a kernel (``interpreter/memory.tensor_element``)."""
        from .._registry import OPS
        return OPS["index_getitem"].interp(self, index)

    @property
    def writable(self) -> bool:
        return self.accesses is not None

    def written(self) -> AccessRecord:
        """The access record, for an op about to write this array (an unchecked op or a
        store: typing lets them only at writable parameters). A tensor built without
        ``writable=True`` becomes writable here; its reads before this are not recorded."""
        if self.accesses is None:
            self.accesses = AccessRecord(self.name, self.array.shape)
        return self.accesses

    def record_writes(self, region: tuple, op: str = "store") -> None:
        """Record that the current block writes ``array[region]`` (a tuple of slices).

        Raises:
            DataRaceError: another block of this launch wrote, read or atomically updated
                an element of it, naming both blocks and the element.
        """
        self.written().write(region, op)


class InterpPartition(InterpTensor):
    """A mutable partition parameter: the block's own tile of ``array``, always writable
    (its accesses are recorded for the race detector). ``order`` is its tile order
    (``"row"`` or ``("grouped", GROUP)``): block ``b`` owns tile number ``b`` in it."""

    def __init__(self, name: str, array: np.ndarray, dtype, tile_shape: tuple,
                 order="row"):
        super().__init__(name, array, dtype, writable=True)
        self.tile_shape = tuple(tile_shape)
        self.order = order

    def own_index(self) -> tuple:
        grid = tuple(-(-s // t) for s, t in zip(self.array.shape, self.tile_shape))
        return tile_coords(current_block().linear, grid, self.order)


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

    @property
    def ndim(self):
        return self.data.ndim

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
    __lshift__, __rlshift__ = _op("lshift")
    __rshift__, __rrshift__ = _op("rshift")
    __matmul__, __rmatmul__ = _op("matmul_operator")
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


# --- the indices tiles() and strips() mint (interpreter/partition.py)

@dataclass(frozen=True)
class InterpIndex:
    """A tile index minted by ``tiles(z)``: ``brand`` is z's parameter name."""

    brand: str
    coords: tuple

    def __getitem__(self, d):
        from .._registry import OPS
        return OPS["index_getitem"].interp(self, d)


@dataclass(frozen=True)
class InterpStrip:
    """A strip minted by ``strips(z)``: its leading tile coordinates."""

    brand: str
    coords: tuple

    def __getitem__(self, d):
        from .._registry import OPS
        return OPS["index_getitem"].interp(self, d)
