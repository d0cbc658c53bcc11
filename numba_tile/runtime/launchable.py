"""What a launch handle's ``then()`` may launch next: a numba_tile kernel. The kernel front
(``kernel.Kernel``, ``autotune.Autotuned``) derives from :class:`Launchable`, so that the
runtime can recognize a kernel without importing the front (the runtime sits below it)."""

from __future__ import annotations

__all__ = ["Launchable"]


class Launchable:
    """Base of the objects a launch can chain (``@numba_tile.jit`` and ``@numba_tile.autotune``
    kernels); it holds nothing."""

    __slots__ = ()
