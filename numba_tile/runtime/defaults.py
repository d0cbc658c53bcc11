"""Per-thread launch defaults: the stream (and interpreter switch) a launch uses when its call
gives none.

A launch without ``stream=`` runs on the legacy default stream, unless the calling thread is
inside :func:`launch_defaults` (or a :class:`numba_tile.Graph` capture, or a PyTorch custom op
made with :func:`numba_tile.torch_op`), which names another stream: PyTorch code usually runs on
``torch.cuda.current_stream()``, and a launch inside ``torch.cuda.graph`` must go to the
capturing stream to be recorded.

The defaults are thread-local (a ``threading.local``): one thread's capture never redirects
another thread's launches. Reading them costs one attribute lookup on the launch path.
"""

from __future__ import annotations

import threading

__all__ = ["launch_defaults", "current"]


class _Defaults(threading.local):
    stream = None          # a stream object or handle (None: the legacy default stream)
    interpret = None       # True/False, or None: each kernel's own option
    # a PyTorch custom op's check of its body's launches (torch_library._Body), called with
    # (kernel, args, kwargs) before a launch queues anything; None outside op bodies
    watch = None


_local = _Defaults()

_UNSET = object()


def current() -> _Defaults:
    """This thread's defaults (attributes ``stream`` and ``interpret``)."""
    return _local


def launch_defaults(*, stream: object = _UNSET, interpret: object = _UNSET):
    """Within the block, launches on this thread that give no ``stream=`` (``interpret=``) use
    these.

    Args:
        stream: any stream ``Kernel.__call__`` accepts (a CuPy, Numba, PyTorch or cuda.core
            stream, an int handle), checked at once; None restores the legacy default stream.
        interpret: True or False, the interpreter switch of launches that give none (and whose
            kernel was not decorated with ``interpret=True``); None: the kernels' own option.

    Nested blocks restore the outer defaults on exit (also when the block raises).

    Raises:
        TileArgumentError: ``stream`` is not a stream, or ``interpret`` is not True, False or None.

    Examples:
        >>> import numba_tile as nt
        >>> with nt.launch_defaults(stream=0):   # doctest: +SKIP
        ...     kernel(x, nt.partition(z, 256))
    """
    from numba_tile.errors import TileArgumentError, shown
    from numba_tile.runtime.streams import stream_handle

    from numba_tile.runtime.call_site import user_call_site
    message = None
    if stream is not _UNSET and stream is not None:
        try:
            stream_handle(stream)       # refuse a non-stream here, at the user's line
        except TileArgumentError as exc:
            message = f"launch_defaults: {exc.message}"
    if message is None and interpret is not _UNSET and interpret is not None \
            and interpret is not True and interpret is not False:
        message = (f"launch_defaults: interpret: expected True, False or None, got "
                   f"{shown(interpret, with_type=True, qualified=False)}")
    if message is not None:
        site = user_call_site() or (None, None)
        raise TileArgumentError(message, filename=site[0], lineno=site[1])
    return _Scope(stream, interpret)


class _Scope:
    """The block of one :func:`launch_defaults` call (checked when it was made)."""

    __slots__ = ("stream", "interpret", "saved")

    def __init__(self, stream, interpret):
        self.stream, self.interpret, self.saved = stream, interpret, []

    def __enter__(self):
        self.saved.append((_local.stream, _local.interpret))
        if self.stream is not _UNSET:
            _local.stream = self.stream
        if self.interpret is not _UNSET:
            _local.interpret = self.interpret
        return None

    def __exit__(self, *exc):
        _local.stream, _local.interpret = self.saved.pop()
        return False
