"""CUDA stream handles from the stream objects of CuPy, Numba, PyTorch and ``cuda.core``.

Handle values follow the driver API: 0 is the NULL stream, which for the driver API (non-``_ptsz``
entry points, which numba_tile uses) is the legacy default stream; ``CU_STREAM_LEGACY`` (1) names
the legacy default stream explicitly and ``CU_STREAM_PER_THREAD`` (2) the per-thread default stream.
"""

from __future__ import annotations

import ctypes
import operator
from typing import Iterable

import numpy

from numba_tile.errors import TileArgumentError

__all__ = [
    "stream_handle", "same_stream", "producer_streams", "LEGACY_DEFAULT", "PER_THREAD_DEFAULT",
]

#: ``CU_STREAM_LEGACY``: the legacy default stream, the same stream as handle 0 here.
LEGACY_DEFAULT = 1
#: ``CU_STREAM_PER_THREAD``: the calling thread's per-thread default stream.
PER_THREAD_DEFAULT = 2


def _as_int(value: object) -> int | None:
    if value is None:
        return 0
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, ctypes.c_void_p):
        return value.value or 0
    try:
        return int(value)  # cuda.bindings CUstream and other handle wrappers
    except Exception:  # noqa: BLE001 - a wrapper whose __int__ raises is no handle
        return None


def _probe(stream: object) -> int | None:
    """The handle a stream object exports, or None (any attribute or call that raises, or
    returns something that is not a handle, gives None)."""
    try:
        if hasattr(type(stream), "__index__"):       # NumPy integers and other int-likes
            return operator.index(stream)
        proto = getattr(stream, "__cuda_stream__", None)
        if proto is not None:
            pair = proto() if callable(proto) else proto
            try:
                _version, raw = pair
            except (TypeError, ValueError):
                return None
            return _as_int(raw)
        if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
            return _as_int(stream.cuda_stream)
        if type(stream).__module__.startswith("cupy") and hasattr(stream, "ptr"):
            return _as_int(stream.ptr)
        if hasattr(stream, "handle"):  # numba.cuda stream
            return _as_int(stream.handle)
    except Exception:  # noqa: BLE001 - a stream object whose attributes raise is no stream
        return None
    return None


def stream_handle(stream: object) -> int:
    """Returns the raw ``CUstream`` handle (an int) of a user's ``stream=`` argument.

    ``None`` gives 0, the legacy default stream. That is the stream CuPy, Numba and PyTorch use when
    the user has not chosen one (unless per-thread default streams were switched on), so a launch
    without ``stream=`` is ordered after the producers' default-stream work, and work queued by them
    afterwards is ordered after the launch.

    Args:
        stream: None; an int handle (0, 1 = legacy default, 2 = per-thread default, or a stream
            address); an object with the ``__cuda_stream__`` protocol (``cuda.core``, Numba; returns
            ``(version, handle)``); a PyTorch stream (``.cuda_stream``); a CuPy stream (``.ptr``); a
            Numba stream (``.handle``, a ``ctypes.c_void_p`` or ``CUstream``).

    Returns:
        int: the handle, from 0 to 2**64 - 1.

    Raises:
        TileArgumentError: ``stream`` is none of the above, a bool, a handle outside 0 to
            2**64 - 1, or a stream object whose attributes raise (naming ``stream`` and its type).
    """
    if stream is None:
        return 0
    if type(stream) is int:
        handle = stream
    elif isinstance(stream, (bool, numpy.bool_)):
        handle = None
    else:
        handle = _probe(stream)
    if handle is None or not 0 <= handle < 1 << 64:
        t = type(stream)
        try:
            shown = repr(stream)
        except Exception:  # noqa: BLE001 - a hostile __repr__ must not replace the refusal
            shown = "<unprintable>"
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise TileArgumentError(
            f"argument 'stream': expected None, an int handle from 0 to 2**64 - 1, or a CuPy, "
            f"Numba, PyTorch or cuda.core stream, got {t.__module__}.{t.__qualname__} ({shown})")
    return handle


def _canonical(handle: int) -> int:
    return LEGACY_DEFAULT if handle == 0 else handle


def same_stream(a: int, b: int) -> bool:
    """True when two handles name the same stream (0 and 1 are both the legacy default stream)."""
    return _canonical(a) == _canonical(b)


def producer_streams(streams: Iterable[int | None], stream: int) -> list[int]:
    """The producers' streams (CUDA Array Interface v3 ``stream`` fields) a launch must wait on.

    Args:
        streams: the ``stream`` field of each argument (None where the producer gave none, meaning
            no synchronisation is required).
        stream: the launch stream's handle.

    Returns:
        list[int]: distinct handles, in first-seen order, that name a stream other than ``stream``.
    """
    out: list[int] = []
    for s in streams:
        if s is None or same_stream(s, stream):
            continue
        if s not in out:
            out.append(s)
    return out
