"""Compatibility of numba_tile's base with newer NumPy releases.

numba-cuda 0.30.4, numba-cuda's last release (it is in maintenance mode), registers an
implementation for ``numpy.row_stack`` when its CUDA target initializes; NumPy 2.5 removed
that alias of ``numpy.vstack``, so the target fails to initialize (``AttributeError: module
'numpy' has no attribute 'row_stack'``) before any kernel compiles. :func:`ensure` restores
the alias where it is missing. numba_tile calls it when it is imported, before anything
initializes numba-cuda's target; a program that initializes that target itself (compiles a
numba-cuda kernel) before importing numba_tile needs the alias first too.
"""

from __future__ import annotations

import numpy


def ensure() -> None:
    """Give NumPy the aliases numba-cuda 0.30.4 needs (only those missing)."""
    if not hasattr(numpy, "row_stack"):
        numpy.row_stack = numpy.vstack


ensure()
