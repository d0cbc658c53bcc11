"""Constants by identity: what tells two specializations' constants apart.

Python's equality merges values that compile to different code: ``0.0 == -0.0`` (``x / C``
is +inf or -inf), ``2 == 2.0`` (an int64 or a float64 product), ``True == 1``, NaNs of other
signs and payloads, and tuples holding any of those (``(2,) == (2.0,)``). Every key that
stands for a specialization (the kernel's specialization key and its Numba argument type,
the launch plans, the disk cache's key, the autotuner's tuning key) holds a constant's
:func:`identity` instead of the constant: its exact type and, for floating-point values, its
bits, recursively inside tuples and frozensets.

This module imports nothing from numba_tile, so every layer can use it.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["identity"]

_DOUBLE = struct.Struct("<d").pack
_COMPLEX = struct.Struct("<dd").pack
_REAL, _IMAG = complex.real.__get__, complex.imag.__get__


def identity(value):
    """A hashable stand-in for ``value`` that equals another's only when the two values are
    the same constant: the same exact type and, for ``float``, ``complex`` and NumPy scalars
    (and their subclasses), the same bits; tuples (and named tuples) and frozensets item by
    item.

    Args:
        value: a Constant parameter's value.

    Returns:
        ``(type, payload)``; hashable when ``value`` is (an unhashable value gives an
        unhashable identity, which its caller reports).

    Examples:
        >>> identity(0.0) == identity(-0.0), identity((2,)) == identity((2.0,))
        (False, False)
    """
    t = type(value)
    if t is float:
        return t, _DOUBLE(value)
    if t is int or t is bool or t is str or t is bytes or value is None:
        return t, value
    if t is complex:
        return t, _COMPLEX(value.real, value.imag)
    if isinstance(value, tuple):
        return t, tuple(identity(v) for v in value)
    if t is frozenset:
        return t, frozenset(identity(v) for v in value)
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        return t, value.tobytes()
    # an instance of a subclass of Python's numbers (``class F(float)``, an IntEnum member):
    # Numba types it as its base type (float64, int64...) and folds the value that base holds,
    # so its class and that value's bits, never the subclass's own ``__eq__`` or ``__hash__``
    # (``F(0.0) == F(-0.0)``). By its true type (an object's ``__class__`` may claim float)
    if issubclass(t, float):
        return t, _DOUBLE(value)                # struct reads the float's own value
    if issubclass(t, int):
        return t, int.__index__(value)
    if issubclass(t, complex):
        return t, _COMPLEX(_REAL(value), _IMAG(value))
    if issubclass(t, frozenset):
        return t, frozenset(identity(v) for v in value)
    return t, value
