"""Exception classes of numba_tile.

Every error a user can act on derives from :class:`TileError`. Errors found while
compiling a kernel carry the user's source location (``filename``, ``lineno``) and
show the offending line; errors found at launch name the kernel parameter(s).

Hierarchy::

    TileError
    +-- TileTypingError            bad op use inside a kernel (shape, dtype, argument)
    +-- DataRaceError              conflicting accesses of two blocks to one element, or a
                                   scatter writing one twice (interpreter's race detector)
    +-- TileArgumentError          bad launch argument (type, device, dtype, rank)
    |   +-- HostArrayError         a NumPy (host) array passed on the GPU path (case I1)
    +-- CaptureError               a launch that cannot be captured into a CUDA graph, or a
                                   graph call that cannot run (runtime/capture.py)
    +-- OwnershipError             a broken ownership rule (docs/safety.md, R1-R16)
        +-- StoreToReadOnlyError   store to a parameter not declared mutable (typing, case A5)
        +-- ForeignTileStoreError  store that is not to the block's own partition tile (typing)
        +-- UnanalyzedCallError    a tensor or partition handed to a callee the pass cannot see
        +-- ClosedWorldError       a safe kernel reaching memory other than its parameters
                                   (global/closure arrays, SIMT API, pointers, opaque code)
        +-- MissingPartitionError  mutable parameter given a plain array (launch)
        +-- UnexpectedPartitionError  partition given to a read-only parameter (launch)
        +-- AliasingError          mutable argument overlaps another argument (launch, A1/A2)
        +-- SelfOverlapError       mutable argument overlaps itself (launch, A3)
        +-- ReadOnlyProducerError  producer marked the buffer read-only (launch, A4)
        +-- PartitionShapeError    partition tile shape differs from the kernel's (launch)
        +-- GridMismatchError      two partitions imply different launch grids (launch)
        +-- StreamConflictError    an array in use by a launch in flight on another stream,
                                   with on_conflict="raise" (launch runtime)
        +-- UncheckedOpError       an unchecked op (atomic, scatter, gather) in a safe kernel
        +-- UncheckedLaunchError   an unchecked kernel launched without unchecked=True
"""

from __future__ import annotations

import linecache

__all__ = [
    "TileError",
    "CaptureError",
    "TileTypingError",
    "TileArgumentError",
    "FixedAttributeError",
    "DataRaceError",
    "HostArrayError",
    "OwnershipError",
    "StoreToReadOnlyError",
    "ForeignTileStoreError",
    "UnanalyzedCallError",
    "ClosedWorldError",
    "MissingPartitionError",
    "UnexpectedPartitionError",
    "AliasingError",
    "SelfOverlapError",
    "ReadOnlyProducerError",
    "PartitionShapeError",
    "GridMismatchError",
    "StreamConflictError",
    "UncheckedOpError",
    "UncheckedLaunchError",
    "TilePerformanceWarning",
]


def type_name(obj: object) -> str:
    """The type of ``obj`` as a message names it (module-qualified unless a builtin)."""
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def shown(value: object, *, with_type: bool = False, qualified: bool = True) -> str:
    """``repr(value)``, shortened to 60 characters, for a message (a hostile ``__repr__``
    cannot replace the refusal); with ``with_type``, followed by its type in parentheses
    (module-qualified, or its bare name with ``qualified=False``)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - any failure: the refusal must still be raised
        text = "<unprintable>"
    if len(text) > 60:
        text = text[:57] + "..."
    if not with_type:
        return text
    return f"{text} ({type_name(value) if qualified else type(value).__name__})"


class TileError(Exception):
    """Base class of every numba_tile error.

    Args:
        message: what is wrong, naming the argument or parameter.
        filename: source file of the user's line, if known.
        lineno: 1-based line number of the user's line, if known.
        col: 0-based column of the offending expression, if known.
    """

    rule: str = ""

    def __init__(self, message: str, *, filename: str | None = None,
                 lineno: int | None = None, col: int | None = None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        super().__init__(self._render())

    def _render(self) -> str:
        text = self.message
        if self.rule:
            text = f"{text}\n  rule: {self.rule}"
        if self.filename and self.lineno:
            text = f"{text}\n  at {self.filename}:{self.lineno}"
            src = linecache.getline(self.filename, self.lineno).rstrip()
            if src:
                text = f"{text}\n    {src}"
                if self.col is not None and 0 <= self.col < len(src):
                    text = f"{text}\n    {' ' * self.col}^"
        return text


class TileTypingError(TileError):
    """An op inside a kernel was used with invalid arguments (shape, dtype, rank)."""


class DataRaceError(TileError):
    """Two blocks of one launch made conflicting accesses to one element (write/write,
    read/write, or an atomic and a plain access), or one scatter wrote an element twice. Found
    by the interpreter, which records the blocks that wrote, read and atomically updated each
    element of every array a kernel may write. A kernel that passes numba_tile's checks cannot
    trip it; it exists for kernels that opt out of them."""

    rule = ("blocks of one launch share an element only to read it or to update it atomically; "
            "one scatter writes each element once")


class TileArgumentError(TileError, TypeError):
    """A launch argument cannot be used (unsupported type, dtype, rank or device)."""


class FixedAttributeError(TileArgumentError, AttributeError):
    """An attribute fixed when its object was made was assigned or deleted: a kernel's
    function, parameters or options, an autotuned kernel's configurations (an AttributeError
    too, as Python's own read-only attributes raise)."""


class HostArrayError(TileArgumentError):
    """A host (NumPy) array was passed to a kernel launched on the GPU (case I1)."""


class OwnershipError(TileError):
    """A kernel or a launch breaks one of numba_tile's ownership rules."""


class StoreToReadOnlyError(OwnershipError):
    """A kernel stores (or scatters, or updates atomically) into a parameter its signature
    does not declare mutable; raised at compile time at the store's line. Annotate the
    parameter ``numba_tile.Partition`` and pass a partition, or write another array."""

    rule = "a parameter is mutable only if the kernel signature declares it so"


class ForeignTileStoreError(OwnershipError):
    """A store to a partition at an index that is not one of the block's own tiles: an index
    built by hand, one minted by ``tiles()`` of another partition, or a partition iterated
    both by ``strips`` and by ``tiles``; raised at compile time. Store at the block's own
    tile (``store(z, t)``) or at an index from ``tiles(z)``."""

    rule = ("a store to a partition goes to one of the block's own tiles: its own tile, an "
            "index minted by tiles() of that same partition, or by tiles(z, strip) with a strip "
            "the block owns (of z, or of another partition of z's rank; above rank 2 all of z's "
            "strips from one partition)")


class UnanalyzedCallError(OwnershipError):
    """A tensor or partition is handed to a function the ownership pass cannot see into (a
    numba-cuda device function, an unknown callee); raised at compile time. Pass tiles or
    scalars instead, or write the callee as a helper with numba_tile's ops."""

    rule = "tensors and partitions may only be passed to numba_tile ops"


class ClosedWorldError(OwnershipError):
    """A safe kernel reaches something other than its parameters and numba_tile's ops: an
    array or pointer held in a global or closure variable, numba-cuda's SIMT API (thread
    indices, shared/local arrays, barriers, atomics), or opaque code (device functions,
    ``@intrinsic``, extension functions)."""

    rule = "a safe kernel reaches memory only through its parameters and numba_tile's ops"


class MissingPartitionError(OwnershipError):
    """A mutable (``Partition``) parameter was given a plain array at launch; wrap it:
    ``numba_tile.partition(array, tile_shape)``."""

    rule = "a mutable parameter must receive a partition"


class UnexpectedPartitionError(OwnershipError):
    """A read-only parameter was given a partition at launch; pass the array itself."""

    rule = "a read-only parameter must not receive a partition"


class AliasingError(OwnershipError):
    """A mutable argument shares memory with another argument of the launch (the same
    buffer, a view, a transpose, an overlapping slice); nothing is queued. For an in-place
    kernel, pass the array once, as the partition, and ``load`` the block's own tile of it."""

    rule = "a mutable argument overlaps no other argument"


class SelfOverlapError(OwnershipError):
    """A mutable array overlaps itself (a stride-0 or overlapping-strides view), so two
    tiles would share elements; nothing is queued. Pass a contiguous copy."""

    rule = "a mutable array does not overlap itself"


class ReadOnlyProducerError(OwnershipError):
    """A mutable argument's producer marked its memory read-only (CUDA Array Interface
    ``data[1]``, DLPack's read-only flag, NumPy's ``writeable=False``); nothing is queued."""

    rule = "an array its producer marked read-only cannot be written"


class PartitionShapeError(OwnershipError):
    """A partition's tile shape differs from the shape the kernel declares for the parameter
    (``Partition[("BM", "BN")]`` with the constants given); raised at launch."""

    rule = "partition tile shapes match the kernel's declared tile shape"


class GridMismatchError(OwnershipError):
    """Two partitions of one launch imply different launch grids (their tile counts per axis
    differ); raised at launch. Use tile shapes that give every partition the same grid, map
    the partitions onto blocks (``blocks=``) and iterate them with ``tiles()``, or launch
    one kernel per output."""

    rule = "all partitions of one launch imply the same grid"


class StreamConflictError(OwnershipError):
    """With ``on_conflict="raise"``: an argument is in use by a launch still in flight on
    another stream, and one of the two writes it. The default ``on_conflict="wait"``
    orders the launches instead."""

    rule = ("an array in use by a launch in flight on another stream is not handed to a launch "
            "on this stream without ordering")


class UncheckedOpError(OwnershipError):
    """An unchecked op (``scatter``, an atomic, ``gather`` from a partition or a ``Mutable``
    array) in a kernel not marked ``@numba_tile.jit(unchecked=True)``; raised at compile time.
    In a safe kernel ``gather`` reads read-only tensors only."""

    rule = "unchecked operations only in kernels marked unchecked"


class UncheckedLaunchError(OwnershipError):
    """A kernel marked ``unchecked=True`` launched without ``unchecked=True`` at the call;
    raised before anything is queued."""

    rule = "launching an unchecked kernel needs an explicit unchecked=True at the call site"


class CaptureError(TileError):
    """A launch or call that cannot be recorded into a CUDA stream capture, or a graph call that
    cannot run (``runtime/capture.py``): a legacy-stream launch while another stream captures,
    ``sync()`` of a captured launch, a replay before capture."""


class TilePerformanceWarning(UserWarning):
    """A kernel compiles, but to code that will be slow: a tile too large for the registers
    of the block's threads (it spills to local memory). Issued while the kernel is typed, at
    the line that makes the tile, on both backends; the message says what to change."""
