"""Kernel parameter packing for ``cuLaunchKernel`` (the hot launch path).

A :class:`ParamBuffer` is built once per compiled kernel: one ctypes byte buffer holding every
parameter value at a precomputed, naturally aligned offset, and one ``void*[n]`` array whose i-th
entry points at parameter i. :meth:`ParamBuffer.pack` then costs a single ``struct.pack_into`` call
and allocates nothing.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Sequence

from numba_tile.errors import TileArgumentError

__all__ = ["ParamBuffer", "PARAM_KINDS"]

#: kind -> (struct format code, size in bytes). ``ptr`` is a device address (64-bit).
PARAM_KINDS: dict[str, tuple[str, int]] = {
    "u8": ("B", 1), "i8": ("b", 1), "bool": ("?", 1),
    "u16": ("H", 2), "i16": ("h", 2), "f16": ("e", 2),
    "u32": ("I", 4), "i32": ("i", 4), "f32": ("f", 4),
    "u64": ("Q", 8), "i64": ("q", 8), "f64": ("d", 8), "ptr": ("Q", 8),
    # a TMA tensor map (``runtime/tensormap.py``): 128 opaque bytes; the host copy needs no
    # alignment (the driver copies it into the kernel's 64-aligned parameter)
    "map": ("128s", 128),
}


class ParamBuffer:
    """Preallocated storage for one kernel's parameters.

    Not thread-safe: :meth:`pack` followed by the launch must not interleave with another thread's
    ``pack`` on the same buffer (use one buffer per thread, or a lock). Reusing the buffer right
    after a launch is safe: ``cuLaunchKernel`` copies the values during the call.

    Args:
        kinds: one kind per kernel parameter, in order, from :data:`PARAM_KINDS` (``'u64'``,
            ``'i64'``, ``'i32'``, ``'f32'``, ``'f64'``, ``'u8'``, ``'ptr'``, ...).
        names: optional parameter names for error messages (same length as ``kinds``).

    Raises:
        ValueError: an unknown kind, or ``names`` of the wrong length.

    Attributes:
        kinds: the kinds, as a tuple.
        offsets: byte offset of each value in the buffer (each a multiple of its size, at
            most 8).
        nbytes: size of the value buffer in bytes.
        address: address of the ``void*[n]`` array (0 when there are no parameters).
    """

    __slots__ = ("kinds", "names", "offsets", "nbytes", "address", "_buf", "_ptrs", "_pack_into",
                 "tensor_maps")

    def __init__(self, kinds: Sequence[str], names: Sequence[str] | None = None):
        kinds = tuple(kinds)
        if names is not None and len(names) != len(kinds):
            raise ValueError(f"{len(names)} names for {len(kinds)} parameter kinds")
        fmt = ["<"]
        offsets = []
        pos = 0
        for kind in kinds:
            try:
                code, size = PARAM_KINDS[kind]
            except KeyError:
                raise ValueError(
                    f"unknown parameter kind {kind!r} (known: {', '.join(PARAM_KINDS)})") from None
            pad = -pos % min(size, 8)
            if pad:
                fmt.append(f"{pad}x")
            pos += pad
            offsets.append(pos)
            fmt.append(code)
            pos += size
        self.kinds = kinds
        #: ``(parameter index, box rows)`` per tensor map parameter (the kernel's last ones),
        #: set by the loader (``Kernel._load``)
        self.tensor_maps = ()
        if names is None:
            names = [f"#{i}" for i in range(len(kinds))]
        self.names = tuple(names)
        self.offsets = tuple(offsets)
        self.nbytes = pos
        # 8-byte aligned storage (c_uint64 array), so every natural alignment holds.
        self._buf = (ctypes.c_uint64 * max((pos + 7) // 8, 1))()
        base = ctypes.addressof(self._buf)
        self._ptrs = (ctypes.c_void_p * max(len(kinds), 1))(*[base + off for off in offsets])
        self.address = ctypes.addressof(self._ptrs) if kinds else 0
        self._pack_into = struct.Struct("".join(fmt)).pack_into

    def pack(self, values: Sequence) -> int:
        """Writes the parameter values; returns the ``void**`` address for ``cuLaunchKernel``.

        Args:
            values: one value per kind (ints for integer kinds and ``ptr``, floats for float kinds;
                NumPy scalars work).

        Returns:
            int: :attr:`address`.

        Raises:
            TileArgumentError: wrong number of values, or a value that does not fit its kind.
        """
        try:
            self._pack_into(self._buf, 0, *values)
        except (struct.error, OverflowError, TypeError) as exc:
            raise TileArgumentError(self._explain(values, exc)) from exc
        return self.address

    def _explain(self, values: Sequence, exc: Exception) -> str:
        values = list(values)
        if len(values) != len(self.kinds):
            return f"kernel takes {len(self.kinds)} parameter values, got {len(values)}"
        for name, kind, value in zip(self.names, self.kinds, values):
            try:
                struct.pack("<" + PARAM_KINDS[kind][0], value)
            except (struct.error, OverflowError, TypeError) as err:
                return f"parameter '{name}': value {value!r} does not fit {kind} ({err})"
        return f"parameter packing failed ({exc})"
