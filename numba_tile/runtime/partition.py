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

__all__ = ["Partition", "partition", "normalize_tile_shape", "launch_fields"]

_MAX_BLOCKS = 2**31 - 1


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
    return tuple(out)


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
    ...`` in row-major order for block ``b``, so no two blocks share a tile.

    A partition is immutable (assignment raises :class:`~numba_tile.errors.TileArgumentError`);
    a launch checks its fields again (:func:`launch_fields`).

    Attributes:
        array: the user's array object, unchanged (converted at launch).
        tile_shape: tile extents per axis, each a positive power of two.
        blocks: blocks the partition is mapped onto, or None (one block per tile).
    """

    __slots__ = ("array", "tile_shape", "blocks")

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

    def __init__(self, array: object, tile_shape: tuple[int, ...], blocks: int | None = None):
        if isinstance(tile_shape, (tuple, list)) and not tile_shape and _is_0d(array):
            raise TileArgumentError(f"argument 'array': {ZERO_D_MESSAGE}")
        tile_shape = normalize_tile_shape(tile_shape)
        if isinstance(blocks, numpy.integer):
            blocks = int(blocks)
        if blocks is not None and (isinstance(blocks, bool) or not isinstance(blocks, int)
                                   or not 1 <= blocks <= _MAX_BLOCKS):
            raise TileArgumentError(f"argument 'blocks': expected a number of blocks from 1 to "
                                    f"2**31 - 1, or None, got {blocks!r}")
        setattr_ = object.__setattr__
        setattr_(self, "array", array)
        setattr_(self, "tile_shape", tile_shape)
        setattr_(self, "blocks", blocks)

    def __setattr__(self, attr: str, value: object) -> None:
        raise _at_user_line(f"Partition is immutable: cannot set '{attr}'; make a new one with "
                            f"numba_tile.partition(array, tile_shape, blocks)")

    def __delattr__(self, attr: str) -> None:
        raise _at_user_line(f"Partition is immutable: cannot delete '{attr}'; make a new one "
                            f"with numba_tile.partition(array, tile_shape, blocks)")

    def __reduce__(self):
        # copy and pickle rebuild through __init__ (the default would set the slots one by one)
        return (Partition, (self.array, self.tile_shape, self.blocks))

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
        return f"Partition({t.__module__}.{t.__qualname__}, tile_shape={tile_shape!r}{mapped})"




def _at_user_line(message: str) -> TileArgumentError:
    """A TileArgumentError pointing at the innermost line outside numba_tile."""
    from numba_tile.runtime.launch_checks import user_call_site

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


def launch_fields(p: Partition, name: str) -> tuple[object, tuple[int, ...], int | None]:
    """``(array, tile_shape, blocks)`` of a partition, checked again for the launch.

    ``Partition`` refuses assignment, but ``object.__setattr__`` (or ``__delattr__``) bypasses that,
    so a launch does not trust the values :func:`partition` checked: it checks them again here,
    with exact type tests (a float or bool extent, or a tuple subclass, is refused).

    Args:
        p: the partition given for a mutable parameter.
        name: the kernel parameter, for messages.

    Returns:
        tuple: the array (checked later, as any array argument), the tile shape (positive powers
        of two, exact ints) and the block count (None, or an exact int from 1 to 2**31 - 1).

    Raises:
        TileArgumentError: a field is missing or no longer holds what :func:`partition` checked.
    """
    try:
        array, tile_shape, blocks = p.array, p.tile_shape, p.blocks
    except AttributeError as exc:
        raise TileArgumentError(
            f"argument '{name}': the partition has lost a field ({exc}); make a new one with "
            f"numba_tile.partition(array, tile_shape)") from None
    if type(tile_shape) is tuple and tile_shape:
        for t in tile_shape:
            if type(t) is not int or t <= 0 or t & (t - 1):
                break
        else:
            if blocks is None or (type(blocks) is int and 1 <= blocks <= _MAX_BLOCKS):
                return array, tile_shape, blocks
            raise TileArgumentError(
                f"argument '{name}': the partition's blocks was changed after "
                f"numba_tile.partition() checked it: expected None or an int from 1 to "
                f"2**31 - 1, got {blocks!r}; make a new partition")
    raise TileArgumentError(
        f"argument '{name}': the partition's tile_shape was changed after numba_tile.partition() "
        f"checked it: expected a non-empty tuple of positive powers of two (ints), got "
        f"{tile_shape!r}; make a new partition")


def partition(array: object, tile_shape: int | tuple[int, ...],
              blocks: int | None = None) -> Partition:
    """Splits ``array`` into disjoint tiles, to pass it to a mutable kernel parameter.

    Args:
        array: a device array (CuPy, Numba, PyTorch, CUDA Array Interface or DLPack producer), or a
            NumPy array in interpreter mode. Not inspected here; checked at launch.
        tile_shape: tile extents, one positive power of two per array axis; an int for a 1-D array.
        blocks: map the partition onto this many blocks (a persistent kernel, e.g. one block per
            multiprocessor): the kernel then iterates ``for idx in tiles(z)`` and stores with
            ``store(z, tile, idx)``. None (default): one block per tile.

    Returns:
        Partition: holds ``array``, the tile shape and the block count.

    Raises:
        TileArgumentError: ``tile_shape`` is not a tuple of positive powers of two, or ``blocks``
            is not a positive int; ``tile_shape`` is ``()`` for a 0-d array (the message says
            what to pass instead).

    Examples:
        >>> z = partition(out, (64, 64))   # doctest: +SKIP
        >>> kernel(x, y, z)                # doctest: +SKIP
    """
    try:
        return Partition(array, tile_shape, blocks)
    except TileArgumentError as exc:
        if exc.lineno is not None:
            raise
        raise _at_user_line(exc.message) from None
