"""Host-side partitions: a mutable array split into disjoint tiles, one per tile block.

A :class:`Partition` is immutable: its fields are checked when it is made, assignment raises, and
since ``object.__setattr__`` bypasses any guard, the launch checks read its fields through
:func:`launch_fields`, which checks them again (a few type tests).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy

from numba_tile.errors import TileArgumentError, shown
from numba_tile.runtime.arrays import ZERO_D_MESSAGE

__all__ = ["Partition", "partition", "grouped", "normalize_tile_shape", "normalize_order",
           "launch_fields", "tile_coords", "ROW"]

_MAX_BLOCKS = 2**31 - 1
#: the largest group of a grouped order (a larger one would act as the whole tile grid anyway)
_MAX_GROUP = 2**31 - 1
#: the row-major order of a partition's tiles (the default)
ROW = "row"
_ORDER_EXPECTED = ("None or 'row' (row-major), or numba_tile.grouped(GROUP), which is "
                   "('grouped', GROUP) with GROUP an int from 1 to 2**31 - 1")


def normalize_tile_shape(tile_shape: object, what: str = "tile_shape") -> tuple[int, ...]:
    """Checks a tile shape and returns it as a tuple of ints.

    Args:
        tile_shape: a tuple (or list) of positive powers of two, one per array axis; an int is
            accepted for 1-D and means ``(tile_shape,)``.
        what: the argument name used in error messages.

    Returns:
        tuple[int, ...]: the tile extents (elements per axis).

    Raises:
        TileArgumentError: not a tuple/list/int, empty, or an extent that is not a positive power of
            two (bools are refused).
    """
    if isinstance(tile_shape, (tuple, list)):
        items = tuple(tile_shape)
    else:
        items = (tile_shape,)
    if not items:
        raise TileArgumentError(
            f"argument '{what}': expected a tuple of positive powers of two, got ()")
    out = []
    for extent in items:
        if isinstance(extent, bool):
            value = None
        else:
            try:
                value = operator.index(extent)
            except TypeError:
                value = None
        if value is None or value <= 0 or value & (value - 1):
            raise TileArgumentError(
                f"argument '{what}': every tile extent must be a positive power of two, "
                f"got {tile_shape!r}")
        out.append(value)
    interned = intern_tile_shape(tuple(out))
    if type(tile_shape) is int and len(_SEEN_INT) < 4096:
        _SEEN_INT[tile_shape] = interned
    return interned


_SEEN_INT: dict = {}       # an int tile shape already checked -> its interned 1-D tuple


def _exact_ints(values: tuple) -> bool:
    for v in values:
        if type(v) is not int:
            return False
    return True


# Tile shapes and orders made by partition() are interned: one object per distinct value, so a
# launch plan's guard (guards.py) recognises a partition's fields by identity. A field replaced
# through object.__setattr__ is another object (whatever it equals): the guard says no and the
# launch checks it the full way. A canonical object never changes (the table is not emptied when
# full: _SEEN_INT and the guards keep the objects they were given); values beyond
# _MAX_INTERNED are not interned, and their partitions take the plan key's path.
_INTERNED: dict = {}
_MAX_INTERNED = 4096


def intern_tile_shape(tile_shape: tuple) -> tuple:
    """The canonical object of a checked tile shape (a tuple of exact ints); the tuple itself
    when the table is full."""
    got = _INTERNED.get(tile_shape)
    if got is None or type(got) is not tuple or got != tile_shape:
        if len(_INTERNED) >= _MAX_INTERNED:
            return tile_shape
        _INTERNED[tile_shape] = got = tile_shape
    return got


def intern_order(order):
    """The canonical object of a checked order (``ROW`` or ``("grouped", GROUP)``)."""
    if type(order) is str:
        return ROW if order == ROW else order
    return intern_tile_shape(order)


def _group_value(group: object) -> int | None:
    """``group`` as an int when it is a valid group of a grouped order (an int or NumPy
    integer from 1 to 2**31 - 1; bools refused), else None."""
    if isinstance(group, (bool, numpy.bool_)) or not isinstance(group, (int, numpy.integer)):
        return None
    value = int(group)
    return value if 1 <= value <= _MAX_GROUP else None


def grouped(group: int) -> tuple[str, int]:
    """Triton's *grouped* order of a partition's tiles, for ``partition(..., order=...)``.

    The tile grid's last two axes (``num_pid_m`` rows by ``num_pid_n`` columns of tiles) are
    walked in bands of ``group`` tile rows: the linear tile number ``pid`` of the band goes
    down the band's rows first, then to the next column, so consecutive blocks of a GEMM reuse
    the same rows of A and columns of B from L2::

        num_pid_in_group = group * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * group
        group_size_m = min(num_pid_m - first_pid_m, group)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m

    Leading axes (a batch of matrices) are walked row-major, outermost, one whole
    ``num_pid_m`` by ``num_pid_n`` grid at a time. The order is a bijection of the tile
    grid: each tile still has exactly one block. A ``group`` above ``num_pid_m`` orders the
    tiles as ``group = num_pid_m`` does (one band; column-major over the last two axes);
    ``grouped(1)`` is row-major.

    Args:
        group (int): tile rows per band, from 1 to 2**31 - 1 (NumPy integers are converted;
            bools and floats are refused).

    Returns:
        tuple: ``("grouped", group)``, the value ``order=`` takes (the tuple may also be
        written directly).

    Raises:
        TileArgumentError: ``group`` is not an int from 1 to 2**31 - 1.

    Examples:
        >>> c = partition(out, (128, 128), order=grouped(8))   # doctest: +SKIP
    """
    value = _group_value(group)
    if value is None:
        raise _at_user_line(f"argument 'group': expected a positive int (from 1 to 2**31 - 1), "
                            f"got {shown(group, with_type=True, qualified=False)}")
    return ("grouped", value)


def normalize_order(order: object, tile_shape: tuple[int, ...]) -> str | tuple[str, int]:
    """Checks the traversal order of a partition's tiles and returns its canonical form.

    Args:
        order: None or ``"row"`` (row-major), or ``("grouped", GROUP)`` (a tuple or list, as
            :func:`grouped` returns it).
        tile_shape: the partition's checked tile shape (a grouped order needs rank 2 or more).

    Returns:
        ``"row"`` or ``("grouped", GROUP)`` with GROUP an exact int.

    Raises:
        TileArgumentError: anything else (naming the argument ``order``, what it expects and
            what it got), or a grouped order for a rank-1 tile shape.
    """
    if order is None or (type(order) is str and order == ROW):
        return ROW
    if (type(order) in (tuple, list) and len(order) == 2 and type(order[0]) is str
            and order[0] == "grouped"):
        value = _group_value(order[1])
        if value is None:
            raise TileArgumentError(
                f"argument 'order': the group of a grouped order must be a positive int (from 1 "
                f"to 2**31 - 1), got {shown(order[1], with_type=True, qualified=False)}")
        if len(tile_shape) < 2:
            raise TileArgumentError(
                f"argument 'order': a grouped order groups the last two axes of the tile grid, "
                f"so it needs a tile shape of rank 2 or more, got tile_shape {tile_shape}")
        return intern_order(("grouped", value))
    raise TileArgumentError(f"argument 'order': expected {_ORDER_EXPECTED}, got "
                            f"{shown(order, with_type=True, qualified=False)}")


def _row_major(linear: int, grid) -> list:
    out = []
    for n in reversed(grid[1:]):
        linear, r = divmod(linear, n)
        out.append(r)
    out.append(linear)
    return out[::-1]


def tile_coords(linear: int, grid: tuple[int, ...], order) -> tuple[int, ...]:
    """Coordinates (tile units) of the tile numbered ``linear`` in ``order`` over ``grid``.

    The host's statement of the mapping the GPU lowering computes
    (``lowering/tile_order.tile_coords``): the interpreter uses it, so both give each block
    the same tiles.

    Args:
        linear: the tile number, ``0 <= linear < prod(grid)``.
        grid: tiles per axis.
        order: ``"row"`` or ``("grouped", GROUP)`` (canonical, see :func:`normalize_order`).

    Returns:
        tuple[int, ...]: one coordinate per axis.
    """
    linear = int(linear)
    grid = tuple(int(n) for n in grid)
    if order == ROW or len(grid) < 2:
        return tuple(_row_major(linear, grid))
    m, n = grid[-2], grid[-1]
    lead, pid = divmod(linear, m * n)
    group = min(order[1], m)          # a larger group orders the tiles as this one does
    num_pid_in_group = group * n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * group
    group_size_m = min(m - first_pid_m, group)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m
    return tuple(_row_major(lead, grid[:-2]) if len(grid) > 2 else ()) + (pid_m, pid_n)


@dataclass(frozen=True)
class PartitionAnnotation:
    """``Partition[...]`` in a kernel signature: a mutable parameter with a declared tile shape.

    Attributes:
        tile_shape: entries are ints (powers of two) or names of Constant parameters.
    """

    tile_shape: tuple


class Partition:
    """A user's array split into disjoint tiles of ``tile_shape``, for a mutable kernel parameter.

    The same class annotates mutable kernel parameters: ``z: Partition`` accepts any tile
    shape, ``z: Partition["BLOCK"]`` or ``Partition[("BM", "BN")]`` or ``Partition[(64, 64)]``
    declare it (names refer to Constant parameters), and a launch with another tile shape
    raises :class:`~numba_tile.errors.PartitionShapeError`.

    The kernel parameter bound to a partition is the block's own tile; the launch grid is the number
    of tiles per axis (:meth:`grid`). Edge tiles are partial and masked in the kernel. A partition
    *mapped* onto ``blocks`` blocks (persistent kernels) launches that many blocks instead, and
    each block iterates the tiles ``tiles(z)`` hands it: tiles ``b, b + blocks, b + 2 * blocks,
    ...`` of the partition's order for block ``b``, so no two blocks share a tile.

    ``order`` is the traversal order of the tiles: which tile block ``b`` (or the ``k``-th tile
    number of a mapped partition) is. Row-major by default; :func:`grouped` gives Triton's
    grouped order for GEMM schedules. Any order is a bijection of the tile grid, so each tile
    still has exactly one block. The order is static: each order compiles its own
    specialization.

    A partition is immutable (assignment raises :class:`~numba_tile.errors.TileArgumentError`);
    a launch checks its fields again (:func:`launch_fields`).

    Attributes:
        array: the user's array object, unchanged (converted at launch).
        tile_shape: tile extents per axis, each a positive power of two.
        blocks: blocks the partition is mapped onto, or None (one block per tile).
        order: ``"row"`` or ``("grouped", GROUP)`` (see :func:`grouped`).
    """

    __slots__ = ("array", "tile_shape", "blocks", "order")

    def __class_getitem__(cls, shape) -> PartitionAnnotation:
        """``Partition[...]``: the declared tile shape of a mutable parameter.

        Args:
            shape: one entry or a tuple of entries, one per array axis: a positive power of two
                (an int; NumPy integers are converted) or the name of a Constant parameter (a
                str).

        Returns:
            PartitionAnnotation: the annotation.

        Raises:
            TileArgumentError: no entry, or an entry that is neither (a bool, a float, None, an
                int that is not a positive power of two), pointing at the user's line.
        """
        items = shape if type(shape) is tuple else (shape,)
        if not items:
            raise _at_user_line(
                "Partition[()] declares no tile extent: write one entry per array axis, each a "
                "positive power of two or the name of a Constant parameter, e.g. Partition[128] "
                "or Partition[('BM', 'BN')]; or write plain Partition to accept any tile shape")
        out = []
        for axis, s in enumerate(items):
            if type(s) is not str:
                value = None
                if not isinstance(s, (bool, numpy.bool_)):
                    try:
                        value = operator.index(s)
                    except TypeError:
                        pass
                if value is None or value <= 0 or value & (value - 1):
                    got = (f"{value}, which is not a positive power of two" if value is not None
                           else f"{shown(s)} ({type(s).__name__})")
                    raise _at_user_line(
                        f"Partition[{shown(shape)}]: each declared tile extent must be a "
                        f"positive power of two (an int) or the name of a Constant parameter (a "
                        f"str), got {got} on axis {axis}; e.g. Partition[128] or "
                        f"Partition[('BM', 'BN')]")
                s = value
            out.append(s)
        return PartitionAnnotation(tuple(out))

    def __init__(self, array: object, tile_shape: tuple[int, ...], blocks: int | None = None,
                 order: object = None):
        if blocks is None and order is None:
            # the common case, without the checks a tile shape seen before has passed (an int,
            # or a tuple of exact ints: an equal float or bool is not in the table)
            # (the items are checked before the lookup: hashing and comparing a user's items
            # could raise anything, where the checked path refuses them by name)
            t = type(tile_shape)
            ts = _SEEN_INT.get(tile_shape) if t is int else \
                _INTERNED.get(tile_shape) if t is tuple and _exact_ints(tile_shape) else None
            if ts is not None:
                setattr_ = object.__setattr__
                setattr_(self, "array", array)
                setattr_(self, "tile_shape", ts)
                setattr_(self, "blocks", None)
                setattr_(self, "order", ROW)
                return
        if isinstance(tile_shape, (tuple, list)) and not tile_shape and _is_0d(array):
            raise TileArgumentError(f"argument 'array': {ZERO_D_MESSAGE}")
        tile_shape = normalize_tile_shape(tile_shape)
        if isinstance(blocks, numpy.integer):
            blocks = int(blocks)
        if blocks is not None and (isinstance(blocks, bool) or not isinstance(blocks, int)
                                   or not 1 <= blocks <= _MAX_BLOCKS):
            raise TileArgumentError(f"argument 'blocks': expected a number of blocks from 1 to "
                                    f"2**31 - 1, or None, got {blocks!r}")
        order = normalize_order(order, tile_shape)
        setattr_ = object.__setattr__
        setattr_(self, "array", array)
        setattr_(self, "tile_shape", tile_shape)
        setattr_(self, "blocks", blocks)
        setattr_(self, "order", order)

    def __setattr__(self, attr: str, value: object) -> None:
        raise _at_user_line(f"Partition is immutable: cannot set '{attr}'; make a new one with "
                            f"numba_tile.partition(array, tile_shape, blocks)")

    def __delattr__(self, attr: str) -> None:
        raise _at_user_line(f"Partition is immutable: cannot delete '{attr}'; make a new one "
                            f"with numba_tile.partition(array, tile_shape, blocks)")

    def __reduce__(self):
        # copy and pickle rebuild through __init__ (the default would set the slots one by one)
        return (Partition, (self.array, self.tile_shape, self.blocks, self.order))

    def grid(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Number of tiles per axis for an array of ``shape``: ``ceil(shape[i] / tile_shape[i])``.

        Args:
            shape: the array's extents (elements per axis), same rank as ``tile_shape``.

        Returns:
            tuple[int, ...]: tiles per axis; an axis of extent 0 gives 0 (no work).

        Raises:
            TileArgumentError: ``shape`` and ``tile_shape`` differ in rank.
        """
        if len(shape) != len(self.tile_shape):
            raise TileArgumentError(
                f"argument 'tile_shape': rank {len(self.tile_shape)} tile shape "
                f"{self.tile_shape} for a rank {len(shape)} array of shape {tuple(shape)}")
        return tuple(-(-n // t) for n, t in zip(shape, self.tile_shape))

    def __repr__(self) -> str:
        # getattr with defaults: a partition whose slots were emptied must still print in an error
        t = type(getattr(self, "array", None))
        tile_shape = getattr(self, "tile_shape", "<unset>")
        blocks = getattr(self, "blocks", None)
        mapped = f", blocks={blocks!r}" if blocks is not None else ""
        order = getattr(self, "order", ROW)
        ordered = "" if type(order) is str and order == ROW else f", order={shown(order)}"
        return (f"Partition({t.__module__}.{t.__qualname__}, tile_shape={tile_shape!r}{mapped}"
                f"{ordered})")




def _at_user_line(message: str) -> TileArgumentError:
    """A TileArgumentError pointing at the innermost line outside numba_tile."""
    from numba_tile.runtime.call_site import user_call_site

    site = user_call_site() or (None, None)
    return TileArgumentError(message, filename=site[0], lineno=site[1])


def _is_0d(array: object) -> bool:
    """Whether ``array`` looks 0-d (its ``shape``, or its CUDA Array Interface's, is empty).

    Only chooses the message for ``partition(a, ())``; never raises.
    """
    try:
        shape = getattr(array, "shape", None)
        if shape is None:
            shape = array.__cuda_array_interface__["shape"]
        return len(shape) == 0
    except Exception:  # noqa: BLE001 - any object may be passed; it is checked at launch
        return False


def launch_fields(p: Partition, name: str) -> tuple[object, tuple[int, ...], int | None, object]:
    """``(array, tile_shape, blocks, order)`` of a partition, checked again for the launch.

    ``Partition`` refuses assignment, but ``object.__setattr__`` (or ``__delattr__``) bypasses that,
    so a launch does not trust the values :func:`partition` checked: it checks them again here,
    with exact type tests (a float or bool extent, or a tuple subclass, is refused).

    Args:
        p: the partition given for a mutable parameter.
        name: the kernel parameter, for messages.

    Returns:
        tuple: the array (checked later, as any array argument), the tile shape (positive powers
        of two, exact ints), the block count (None, or an exact int from 1 to 2**31 - 1) and
        the order (the str ``"row"``, or the tuple ``("grouped", GROUP)`` with GROUP an exact
        int from 1 to 2**31 - 1, for a tile shape of rank 2 or more).

    Raises:
        TileArgumentError: a field is missing or no longer holds what :func:`partition` checked.
    """
    try:
        array, tile_shape, blocks, order = p.array, p.tile_shape, p.blocks, p.order
    except AttributeError as exc:
        raise TileArgumentError(
            f"argument '{name}': the partition has lost a field ({exc}); make a new one with "
            f"numba_tile.partition(array, tile_shape)") from None
    if type(tile_shape) is tuple and tile_shape:
        for t in tile_shape:
            if type(t) is not int or t <= 0 or t & (t - 1):
                break
        else:
            if not (blocks is None or (type(blocks) is int and 1 <= blocks <= _MAX_BLOCKS)):
                raise TileArgumentError(
                    f"argument '{name}': the partition's blocks was changed after "
                    f"numba_tile.partition() checked it: expected None or an int from 1 to "
                    f"2**31 - 1, got {blocks!r}; make a new partition")
            if (type(order) is str and order == ROW) or (
                    type(order) is tuple and len(order) == 2 and type(order[0]) is str
                    and order[0] == "grouped" and type(order[1]) is int
                    and 1 <= order[1] <= _MAX_GROUP and len(tile_shape) >= 2):
                return array, tile_shape, blocks, order
            raise TileArgumentError(
                f"argument '{name}': the partition's order was changed after "
                f"numba_tile.partition() checked it: expected 'row' or ('grouped', GROUP) with "
                f"GROUP an int from 1 to 2**31 - 1 (for a tile shape of rank 2 or more), got "
                f"{shown(order, with_type=True, qualified=False)}; make a new partition")
    raise TileArgumentError(
        f"argument '{name}': the partition's tile_shape was changed after numba_tile.partition() "
        f"checked it: expected a non-empty tuple of positive powers of two (ints), got "
        f"{tile_shape!r}; make a new partition")


_object_new = object.__new__
# the slots' own setters (Partition.__setattr__ refuses every assignment)
_set_array = Partition.array.__set__
_set_tile_shape = Partition.tile_shape.__set__
_set_blocks = Partition.blocks.__set__
_set_order = Partition.order.__set__


def partition(array: object, tile_shape: int | tuple[int, ...], blocks: int | None = None,
              order: object = None) -> Partition:
    """Splits ``array`` into disjoint tiles, to pass it to a mutable kernel parameter.

    Args:
        array: a device array (CuPy, Numba, PyTorch, CUDA Array Interface or DLPack producer), or a
            NumPy array in interpreter mode. Not inspected here; checked at launch.
        tile_shape: tile extents, one positive power of two per array axis; an int for a 1-D array.
        blocks: map the partition onto this many blocks (a persistent kernel, e.g. one block per
            multiprocessor): the kernel then iterates ``for idx in tiles(z)`` and stores with
            ``store(z, tile, idx)``. None (default): one block per tile.
        order: the traversal order of the tiles, i.e. which tile is tile number ``k``: block
            ``k``'s own tile (what ``load(z)``, ``store(z, t)`` and ``bid(axis)`` use), or for
            a mapped partition the ``k``-th tile ``tiles(z)`` hands out (block ``b`` gets
            numbers ``b, b + blocks, ...``). None or ``"row"`` (default): row-major over the
            tile grid. :func:`grouped` ``(GROUP)``, i.e. ``("grouped", GROUP)``: Triton's grouped
            order over the last two axes of the tile grid (bands of GROUP tile rows, for L2
            reuse in a GEMM), leading axes row-major outermost; needs rank 2 or more. Every
            order is a bijection of the tile grid, so each tile has exactly one block; the
            order is static (part of the kernel's specialization).

    Returns:
        Partition: holds ``array``, the tile shape, the block count and the order.

    Raises:
        TileArgumentError: ``tile_shape`` is not a tuple of positive powers of two, ``blocks``
            is not a positive int, or ``order`` is none of the above (a group that is not an
            int from 1 to 2**31 - 1: bools, floats, 0 and negative numbers are refused; a
            grouped order for a 1-D tile shape); ``tile_shape`` is ``()`` for a 0-d array (the
            message says what to pass instead).

    Examples:
        >>> z = partition(out, (64, 64))   # doctest: +SKIP
        >>> kernel(x, y, z)                # doctest: +SKIP
        >>> c = partition(c_out, (128, 128), order=grouped(8))   # GEMM, grouped tiles  # doctest: +SKIP
    """
    if blocks is None and order is None and type(tile_shape) is int:
        # the common case, as Partition.__init__'s first branch, without its call layers
        ts = _SEEN_INT.get(tile_shape)
        if ts is not None:
            p = _object_new(Partition)
            _set_array(p, array)
            _set_tile_shape(p, ts)
            _set_blocks(p, None)
            _set_order(p, ROW)
            return p
    try:
        return Partition(array, tile_shape, blocks, order)
    except TileArgumentError as exc:
        if exc.lineno is not None:
            raise
        raise _at_user_line(exc.message) from None
