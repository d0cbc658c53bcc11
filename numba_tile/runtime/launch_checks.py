"""Launch-time ownership checks (docs/safety.md R3, R5-R7, R14, R16), run before anything is
queued.

:func:`bind_arrays` turns a launch's arguments into :class:`BoundArray` descriptions and enforces,
for each kernel parameter and between parameters:

* a mutable (``'partition'``) parameter receives a :class:`Partition`
  (:class:`MissingPartitionError`), a read-only (``'tensor'``) one does not
  (:class:`UnexpectedPartitionError`);
* host arrays only in interpreter mode and device arrays only on the GPU path
  (:class:`HostArrayError`, :class:`TileArgumentError`); every mutable device array on the
  launch's device, read-only ones on it or on a peer GPU it can read (``runtime/devices.py``);
* a mutable array does not overlap itself (:class:`SelfOverlapError`) and was not marked read-only
  by its producer (:class:`ReadOnlyProducerError`);
* a partition's tile shape has the array's rank and the kernel's declared shape
  (:class:`PartitionShapeError`), and all partitions imply one grid (:class:`GridMismatchError`);
* a mutable argument overlaps no other argument, read-only or mutable (:class:`AliasingError`).

Before all of these, every array argument's interface is validated (``arrays.as_array_arg``:
rank, extents, strides, pointer, byte range, CAI ``data`` and ``stream``) and every partition's
fields are checked again (``partition.launch_fields``), so no malformed description reaches the
overlap tests, the verdict caches or the kernel. An overlap the exact test cannot settle within its
work bound (``overlap.MAX_WORK``) is refused, never taken as disjoint.

Every error names the kernel, the parameter(s) and the rule (the class's ``rule``), and points at
the user's call site.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from numba_tile.errors import (
    AliasingError,
    GridMismatchError,
    HostArrayError,
    MissingPartitionError,
    PartitionShapeError,
    ReadOnlyProducerError,
    SelfOverlapError,
    TileArgumentError,
    TileError,
    UnexpectedPartitionError,
    type_name,
)
from numba_tile.layout import MAX_TILES_32, SMALL_TILE_ELEMS
from numba_tile.runtime.arrays import ArrayArg, as_array_arg
from numba_tile.runtime.call_site import user_call_site
from numba_tile.runtime.overlap import MAX_WORK, internal_overlap_verdict, overlap_verdict
from numba_tile.runtime.devices import check_devices
from numba_tile.runtime.partition import ROW, Partition, launch_fields

__all__ = ["ParamSpec", "BoundArray", "bind_arrays", "launch_grid", "user_call_site",
           "PARAM_KINDS"]

#: parameter kinds: array kinds first ('mutable': a whole array an unchecked kernel may write).
PARAM_KINDS = ("tensor", "partition", "mutable", "constant", "scalar")



@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter as the launch checks see it.

    Attributes:
        name: the parameter's name in the kernel signature.
        kind: ``'tensor'`` (read-only array), ``'partition'`` (mutable array, receives a
            :class:`Partition`), ``'constant'`` (compile-time value) or ``'scalar'`` (runtime
            number).
        tile_shape: for a partition, the tile shape the kernel declares (ints, resolved); None
            accepts any tile shape of the right rank.
    """

    name: str
    kind: str
    tile_shape: tuple[int, ...] | None = None


@dataclass(frozen=True, init=False)
class BoundArray:
    """An array argument bound to its parameter, after conversion.

    Attributes:
        spec: the parameter.
        array: the argument's description (address, shape, byte strides, dtype, device).
        tile_shape: the partition's tile shape for partition parameters; None for tensors.
        blocks: the blocks a mapped partition is mapped onto; None otherwise.
        order: a partition's tile order (``"row"`` or ``("grouped", GROUP)``,
            ``partition.normalize_order``); None for tensors.
    """

    spec: ParamSpec
    array: ArrayArg
    tile_shape: tuple[int, ...] | None
    blocks: int | None
    order: object

    def __init__(self, spec: ParamSpec, array: ArrayArg, tile_shape: tuple[int, ...] | None,
                 blocks: int | None = None, order: object = None):
        # One dict update instead of five object.__setattr__ calls (launch path).
        self.__dict__.update(spec=spec, array=array, tile_shape=tile_shape, blocks=blocks,
                             order=order)

    @property
    def mutable(self) -> bool:
        """True for a mutable parameter: a partition, or an unchecked kernel's Mutable array."""
        return self.spec.kind in ("partition", "mutable")

    @property
    def tile_grid(self) -> tuple[int, ...] | None:
        """Tiles per axis for a partition (ceil-div of shape by tile shape); None for a tensor."""
        if self.tile_shape is None:
            return None
        return tuple(-(-n // t) for n, t in zip(self.array.shape, self.tile_shape))

    @property
    def grid(self) -> tuple[int, ...] | None:
        """The launch grid this partition implies: its tile grid, or ``(blocks,)`` when it is
        mapped onto a fixed number of blocks (``(0,)`` if it has no tile); None for a tensor."""
        tiles = self.tile_grid
        if tiles is None or self.blocks is None:
            return tiles
        return (self.blocks,) if all(tiles) else (0,)


# Verdicts depend only on numbers (addresses, extents, strides, item sizes, devices, tile shapes),
# so layouts that passed are remembered: a loop relaunching on the same arrays skips the overlap
# work. The keys hold ints and tuples only, never the arrays; as_array_arg and launch_fields make
# every one an exact int (a float or bool would hash like the int it equals and could hit the
# entry of another layout). Failures are not cached in _VERIFIED; self-overlap verdicts (True,
# False, or None for undecided within overlap.MAX_WORK) are, being deterministic.
_CACHE_SIZE = 1024
_VERIFIED: dict[tuple, None] = {}
_SELF_OVERLAP: dict[tuple, bool | None] = {}
_MISSING = object()


def _self_overlap_verdict(array: ArrayArg) -> bool | None:
    key = (array.shape, array.strides, array.itemsize)  # independent of the address
    verdict = _SELF_OVERLAP.get(key, _MISSING)
    if verdict is _MISSING:
        verdict = internal_overlap_verdict(array)
        if len(_SELF_OVERLAP) >= _CACHE_SIZE:
            _SELF_OVERLAP.clear()
        _SELF_OVERLAP[key] = verdict
    return verdict




def _named(bound: list[BoundArray]) -> str:
    return " and ".join(
        f"{'mutable' if o.mutable else 'read-only'} argument '{o.spec.name}'" for o in bound)


def _in_place_idiom(b: BoundArray) -> str:
    """How to write the in-place update an overlap refusal of mutable argument ``b`` usually
    stands for: pass the array once and read it through its own parameter."""
    z = b.spec.name
    if b.tile_shape is None:            # an unchecked kernel's Mutable array
        return (f"to update an array in place, pass it once, as the Mutable argument '{z}', "
                f"and read it there (nt.gather({z}, indices))")
    return (f"to update an array in place, pass it once, as the partition '{z}', and load and "
            f"store the block's own tile: nt.store({z}, f(nt.load({z}))) (or "
            f"nt.load({z}, idx) and nt.store({z}, t, idx) with idx from nt.tiles({z}))")


def _empty_grid(grid: tuple[int, ...]) -> bool:
    return any(n == 0 for n in grid)


def launch_grid(bound: Sequence[BoundArray | object]) -> tuple[int, ...] | None:
    """The launch grid implied by the partitions of a bound argument list.

    Args:
        bound: the result of :func:`bind_arrays` (already checked to agree).

    Returns:
        tuple[int, ...] | None: tiles per axis of the first partition (an axis of 0 means no work:
        do not launch), or None when the kernel has no partition parameter.
    """
    for b in bound:
        if isinstance(b, BoundArray) and b.tile_shape is not None:
            return b.grid
    return None


def _same_blocks(a: BoundArray, b: BoundArray) -> bool:
    """Whether two partitions of tile grids that differ only by extent-1 axes (``(M,)`` and
    ``(M, 1)``: a per-row output beside its rows) give every block the same tile: both in
    row-major order (a grouped order walks a 2-D grid in bands, a 1-D one straight), neither
    mapped (a mapped partition's grid is its block count). The block's own tile of each is
    then tile number ``blockIdx.x`` of the same row-major walk, with 0 along the extent-1
    axes (``lowering/memory.own_tile_index``, ``interpreter``'s ``own_index``)."""
    if a.blocks is not None or b.blocks is not None or a.order != ROW or b.order != ROW:
        return False
    squeeze = lambda g: tuple(n for n in g if n != 1)   # noqa: E731
    return squeeze(a.grid) == squeeze(b.grid)


class _Raiser:
    """Builds errors carrying the kernel name and the user's call site (found lazily)."""

    __slots__ = ("kernel", "site")

    def __init__(self, kernel: str, site: tuple[str, int] | None):
        self.kernel = kernel
        self.site = site

    def __call__(self, cls: type[TileError], message: str) -> TileError:
        if self.site is None:
            self.site = user_call_site() or ("", 0)
        filename, lineno = self.site
        return cls(f"kernel '{self.kernel}': {message}", filename=filename or None,
                   lineno=lineno or None)


def _bind_one(spec: ParamSpec, value: object, err: _Raiser, allow_host: bool | None,
              stream: int | None) -> BoundArray | object:
    """Converts one argument and runs the checks that concern it alone."""
    kind = spec.kind
    if kind == "tensor":
        if type(value) is Partition:
            raise err(UnexpectedPartitionError,
                      f"read-only parameter '{spec.name}' received a partition {value!r}; pass the "
                      f"array itself (only parameters the kernel declares mutable take a "
                      f"partition)")
        target, tile_shape, blocks, order = value, None, None, None
    elif kind == "partition":
        if type(value) is not Partition:
            raise err(MissingPartitionError,
                      f"mutable parameter '{spec.name}' received a plain {type_name(value)}; "
                      f"pass partition(array, tile_shape) so that each tile block owns one tile")
        try:
            target, tile_shape, blocks, order = launch_fields(value, spec.name)
        except TileArgumentError as exc:
            raise err(TileArgumentError, exc.message) from None
    elif kind == "mutable":
        if type(value) is Partition:
            raise err(UnexpectedPartitionError,
                      f"Mutable parameter '{spec.name}' received a partition {value!r}; an "
                      f"unchecked kernel's Mutable parameter takes the whole array")
        target, tile_shape, blocks, order = value, None, None, None
    elif kind == "constant" or kind == "scalar":
        if type(value) is Partition:
            raise err(TileArgumentError,
                      f"argument '{spec.name}': a {kind} parameter received a partition {value!r}")
        if kind == "constant":
            _check_constant_leaves(spec.name, value, err)
        return value
    else:
        raise ValueError(
            f"parameter '{spec.name}' has unknown kind {kind!r} (known: {PARAM_KINDS})")

    try:
        array = as_array_arg(target, spec.name, stream=stream)
    except TileArgumentError as exc:
        # A mutable array that overlaps itself is reported as such even when its strides are not
        # whole elements (the overlap test works on bytes): the ownership verdict comes first.
        layout = getattr(exc, "odd_strides_layout", None)
        if layout is not None and kind != "tensor" and _self_overlap_verdict(layout):
            _refuse_self_overlap(spec.name, layout, True, err)
        raise err(type(exc), exc.message) from None

    if allow_host is not None and allow_host is (array.device is not None):
        if allow_host:
            raise err(TileArgumentError,
                      f"argument '{spec.name}': interpreter mode runs on NumPy (host) arrays; got "
                      f"an array on CUDA device {array.device} ({type_name(target)})")
        raise err(HostArrayError,
                  f"argument '{spec.name}': host arrays ({type_name(target)}: NumPy arrays, "
                  f"PyTorch CPU tensors) run only in interpreter mode; pass a CuPy/Numba/PyTorch "
                  f"device array or launch with interpret=True")

    if tile_shape is not None:
        _check_partition(spec, array, tile_shape, target, err)
        if blocks is not None:
            _check_tile_count(spec, array, tile_shape, err)
    elif kind == "mutable":
        _check_writable(spec, array, target, err)
    if tile_shape is None:
        return BoundArray(spec, array, None)
    return BoundArray(spec, array, tile_shape, blocks, order)


def _check_tile_count(spec: ParamSpec, array: ArrayArg, tile_shape: tuple[int, ...],
                      err: _Raiser) -> None:
    """A mapped partition whose ``tiles()`` walk numbers its tiles in 32 bits (tiles of
    ``SMALL_TILE_ELEMS`` elements or more) has fewer than 2**32 tiles (``layout.py``)."""
    if math.prod(tile_shape) < SMALL_TILE_ELEMS:
        return
    count = math.prod(-(-n // t) for n, t in zip(array.shape, tile_shape))
    if count >= MAX_TILES_32:
        raise err(PartitionShapeError,
                  f"partition '{spec.name}' of shape {array.shape} has {count} tiles of "
                  f"{tile_shape}: a mapped partition's tiles() walk numbers tiles of "
                  f"{SMALL_TILE_ELEMS} or more elements in 32 bits, so it takes at most "
                  f"2**32 - 1 of them; choose a tile shape the array fills better (fewer, "
                  f"fuller tiles), or tiles of fewer than {SMALL_TILE_ELEMS} elements")


def _scalar_text(value) -> str:
    t = type(value)
    return f"{value!r} ({t.__module__}.{t.__qualname__}, dtype {value.dtype})"


#: the integers a Constant may hold: a kernel types them as int64, or uint64 from 2**63
_CONSTANT_INTS = (-2**63, 2**64)


#: the NumPy scalars' dtypes a Constant may hold: those a kernel computes with
_CONSTANT_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "float32", "float64", "complex64", "complex128")


def _constant_numpy_ok(value) -> bool:
    """``value`` (a NumPy scalar) has a dtype a kernel computes with; datetimes, strings and
    other NumPy scalars Numba types for itself are left to typing."""
    dt = value.dtype
    return dt.kind in "mMSU" or dt.name in _CONSTANT_DTYPES


def _check_constant_leaves(name: str, value: object, err: _Raiser, where: str = "") -> None:
    """Refuses a Constant holding an integer outside int64 and uint64, or a NumPy scalar of a
    dtype no kernel computes with (``np.longdouble``, ml_dtypes' ``bfloat16`` and float8
    types), as the value itself or an element of a tuple, at any depth: the kernel could not
    type or fold it (Numba's own message named a ``tuple`` or an internal selector)."""
    import numbers

    import numpy as np
    if isinstance(value, tuple):
        for i, v in enumerate(value):
            _check_constant_leaves(name, v, err, f"{where}[{i}]")
        return
    if isinstance(value, np.generic) and not _constant_numpy_ok(value):
        held = f"holds {_scalar_text(value)} at {where}" if where else \
            f"is {_scalar_text(value)}"
        raise err(TileArgumentError,
                  f"Constant '{name}' {held}, a NumPy scalar of a dtype a kernel does not "
                  f"compute with; a Constant holds Python numbers, bools, strings and None, "
                  f"NumPy scalars of {', '.join(_CONSTANT_DTYPES)}, and tuples of them: "
                  f"convert it first (float(x), np.float32(x))")
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        v = int(value)
        lo, hi = _CONSTANT_INTS
        if not lo <= v < hi:
            held = f"holds {v} at {where}" if where else f"is {v}"
            raise err(TileArgumentError,
                      f"Constant '{name}' {held}, outside the 64-bit integers a kernel can "
                      f"compute with (-2**63 to 2**63 - 1 as int64, 2**63 to 2**64 - 1 as "
                      f"uint64); pass a value in that range, or a float")


def _check_partition(spec: ParamSpec, array: ArrayArg, tile_shape: tuple[int, ...],
                     target: object, err: _Raiser) -> None:
    name = spec.name
    if len(tile_shape) != len(array.shape):
        raise err(PartitionShapeError,
                  f"partition '{name}' has a rank-{len(tile_shape)} tile shape {tile_shape} "
                  f"for a rank-{array.ndim} array of shape {array.shape}")
    if spec.tile_shape is not None and tuple(spec.tile_shape) != tile_shape:
        raise err(PartitionShapeError,
                  f"partition '{name}' has tile shape {tile_shape}; the kernel declares "
                  f"{tuple(spec.tile_shape)}")
    _check_writable(spec, array, target, err)


def _check_writable(spec: ParamSpec, array: ArrayArg, target: object, err: _Raiser) -> None:
    """The checks of any array a kernel may write: no self-overlap, not read-only."""
    name = spec.name
    verdict = _self_overlap_verdict(array)
    if verdict is not False:
        _refuse_self_overlap(name, array, verdict, err)
    if array.readonly:
        raise err(ReadOnlyProducerError,
                  f"mutable argument '{name}' was marked read-only by its producer "
                  f"({type_name(target)})")


def _refuse_self_overlap(name: str, array: ArrayArg, verdict: bool | None, err: _Raiser) -> None:
    """Raises the SelfOverlapError of a verdict that is not False (True, or None: undecided)."""
    if verdict is None:
        raise err(SelfOverlapError,
                  f"mutable argument '{name}' could not be proven free of self-overlap within "
                  f"the bound on the exact test (shape {array.shape} with byte strides "
                  f"{array.strides}; NumPy shares_memory with max_work={MAX_WORK} per axis), so "
                  f"it is refused; pass a contiguous array (e.g. a copy made with "
                  f"cupy.ascontiguousarray(a) or numpy.ascontiguousarray(a)) and copy the result "
                  f"back")
    raise err(SelfOverlapError,
              f"mutable argument '{name}' overlaps itself: shape {array.shape} with byte "
              f"strides {array.strides} makes two elements share memory")


def bind_arrays(kernel_name: str, specs: Sequence[ParamSpec], values: Sequence[object], *,
                allow_host: bool | None, call_site: tuple[str, int] | None,
                stream: int | None = None) -> list[BoundArray | object]:
    """Converts a launch's arguments and runs every launch-time ownership check.

    Args:
        kernel_name: the kernel's name, for messages.
        specs: one :class:`ParamSpec` per kernel parameter, in order.
        values: the user's arguments, in the same order (arrays, :class:`Partition` objects,
            constants, scalars).
        allow_host: True in interpreter mode (arrays must then be host arrays), False on the GPU
            path (arrays must be device arrays, mutable ones all on the launch's device), None to accept host and device
            arrays alike (inspection, e.g. compiling for given arguments; never for a launch).
        call_site: ``(filename, lineno)`` of the user's launch line, or None to find it on the stack
            (:func:`user_call_site`) when an error is raised.
        stream: the launch stream's handle, handed to DLPack producers (see :func:`as_array_arg`).

    Returns:
        list: per parameter, a :class:`BoundArray` for ``'tensor'`` and ``'partition'``
        parameters and the value itself for ``'constant'`` and ``'scalar'`` ones.

    Raises:
        TileArgumentError: wrong argument count, an unsupported argument or dtype, a malformed
            array interface (0-d, too many axes, bad extents or strides, a null, misaligned or
            wrapping pointer, CAI stream 0: ``arrays.as_array_arg``), a partition whose fields
            were changed after it was made, a device array in interpreter mode, mutable arrays
            on two devices, a read-only array on a device the launch's cannot read (no
            peer-to-peer path, or memory its owner did not open to it), a partition given to a
            constant or scalar, a Constant holding an integer outside int64 and uint64
            (below -2**63 or from 2**64).
        HostArrayError: a host (NumPy) array on the GPU path (case I1).
        MissingPartitionError: a mutable parameter given a plain array.
        UnexpectedPartitionError: a read-only parameter given a partition.
        SelfOverlapError: a mutable array whose elements overlap (stride 0, overlapping strides;
            A3), or whose layout could not be proven free of overlap within
            ``overlap.MAX_WORK``.
        ReadOnlyProducerError: a mutable array its producer marked read-only (A4).
        PartitionShapeError: a partition tile shape of the wrong rank or not the declared one.
        AliasingError: a mutable argument overlapping any other argument (A1, A2), naming both,
            or not proven disjoint from it within ``overlap.MAX_WORK``.
        GridMismatchError: two partitions implying different grids.
        ValueError: a :class:`ParamSpec` of unknown kind (an internal error).
    """
    err = _Raiser(kernel_name, call_site)
    if len(values) != len(specs):
        raise err(TileArgumentError,
                  f"takes {len(specs)} arguments ({', '.join(s.name for s in specs)}), "
                  f"got {len(values)}")
    out = []
    arrays = []
    key = [allow_host]
    devices = None
    for spec, value in zip(specs, values):
        b = _bind_one(spec, value, err, allow_host, stream)
        out.append(b)
        if type(b) is BoundArray:
            arrays.append(b)
            a = b.array
            key.append((b.spec.kind, b.tile_shape, b.blocks, a.ptr, a.shape, a.strides,
                        a.dtype.itemsize, a.device))
            if devices is None:
                devices = a.device
            elif devices != a.device:
                devices = False
    if len(arrays) < 2:
        return out
    key = tuple(key)
    if key not in _VERIFIED:
        _check_between(arrays, allow_host, err)
        if len(_VERIFIED) >= _CACHE_SIZE:
            _VERIFIED.clear()
        _VERIFIED[key] = None
    if devices is False and allow_host is False:
        # every call (what a peer grants may change between two calls with the same
        # pointers), and last: a launch refused for aliasing enables no peer access
        check_devices(arrays, err, stream)
    return out


def _check_between(arrays: list[BoundArray], allow_host: bool | None, err: _Raiser) -> None:
    """Aliasing and grids: the checks between arguments (devices: ``devices.check_devices``).

    Overlap is decided on addresses whichever devices the arrays are on: with unified
    addressing (every 64-bit CUDA process) no two allocations of one process share an
    address, on one device or several, and a peer's memory is read at its own address."""
    for i, b in enumerate(arrays):
        if not b.mutable:
            continue
        hits, undecided = [], []
        for j, other in enumerate(arrays):
            if j == i or (other.mutable and j < i):  # each mutable pair once
                continue
            verdict = overlap_verdict(b.array, other.array)
            if verdict:
                hits.append(other)
            elif verdict is None:
                undecided.append(other)
        if hits:
            raise err(AliasingError,
                      f"mutable argument '{b.spec.name}' overlaps {_named(hits)}: a kernel may not "
                      f"write memory that another argument reads or writes; "
                      f"{_in_place_idiom(b)}")
        if undecided:
            raise err(AliasingError,
                      f"mutable argument '{b.spec.name}' could not be proven disjoint from "
                      f"{_named(undecided)} within the bound on the exact overlap test (NumPy "
                      f"shares_memory with max_work={MAX_WORK}), so the launch is refused; pass "
                      f"contiguous arrays (e.g. copies made with cupy.ascontiguousarray or "
                      f"numpy.ascontiguousarray) or views from separate allocations")

    grid_owner = None
    for b in arrays:
        if b.tile_shape is None:
            continue
        if grid_owner is None:
            grid_owner = b
            continue
        g1, g2 = grid_owner.grid, b.grid
        if g1 != g2 and not (_empty_grid(g1) and _empty_grid(g2)) \
                and not _same_blocks(grid_owner, b):
            raise err(GridMismatchError,
                      f"partitions '{grid_owner.spec.name}' (shape {grid_owner.array.shape}, tiles "
                      f"{grid_owner.tile_shape}, grid {g1}) and '{b.spec.name}' (shape "
                      f"{b.array.shape}, tiles {b.tile_shape}, grid {g2}) imply different launch "
                      f"grids")

