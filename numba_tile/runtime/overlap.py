"""Exact, view-aware memory overlap of array arguments (addresses only; memory is never read).

Two arguments overlap when some byte belongs to an element of each; an argument overlaps itself when
two different index tuples address elements that share a byte. Both questions are answered exactly
for any strides (transposes, shifted slices, negative strides, stride 0, interleaved views): the
intersection test is NumPy's ``shares_memory`` with ``max_work=None`` (an exact bounded Diophantine
solver), run on stand-in NumPy arrays built from address, shape and byte strides through
``__array_interface__``. NumPy never dereferences such an array's data pointer in ``shares_memory``,
so device addresses are fine and nothing is copied.
"""

from __future__ import annotations

import numpy

from numba_tile.runtime.arrays import ArrayArg

__all__ = ["shares_memory", "has_internal_overlap"]


class _Interface:
    """An object whose ``__array_interface__`` describes memory at an address (never read)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int):
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "strides": strides,
            "typestr": f"|V{itemsize}",
            "data": (ptr, True),
        }


def _stand_in(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
              itemsize: int) -> numpy.ndarray:
    return numpy.asarray(_Interface(ptr, shape, strides, itemsize))


def _bounds(ptr: int, shape, strides, itemsize: int) -> tuple[int, int]:
    lo = hi = ptr
    for n, s in zip(shape, strides):
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi + itemsize


def _raw_shares(p1: int, shape1, strides1, p2: int, shape2, strides2, itemsize: int) -> bool:
    """Exact overlap of two non-empty layouts with the same item size (bytes)."""
    lo1, hi1 = _bounds(p1, shape1, strides1, itemsize)
    lo2, hi2 = _bounds(p2, shape2, strides2, itemsize)
    if hi1 <= lo2 or hi2 <= lo1:
        return False
    return bool(numpy.shares_memory(
        _stand_in(p1, tuple(shape1), tuple(strides1), itemsize),
        _stand_in(p2, tuple(shape2), tuple(strides2), itemsize),
        max_work=None))


def shares_memory(a: ArrayArg, b: ArrayArg) -> bool:
    """Whether two arguments have a byte in common (exact, view-aware).

    Args:
        a: first argument (any shape, byte strides possibly negative or 0).
        b: second argument.

    Returns:
        bool: True iff some element of ``a`` and some element of ``b`` share a byte. Arguments on
        different devices (or one on the host and one on a device) never overlap; zero-size
        arguments never overlap.
    """
    if a.device != b.device or a.size == 0 or b.size == 0:
        return False
    lo1, hi1 = a.byte_bounds
    lo2, hi2 = b.byte_bounds
    if hi1 <= lo2 or hi2 <= lo1:
        return False
    return bool(numpy.shares_memory(
        _stand_in(a.ptr, a.shape, a.strides, a.itemsize),
        _stand_in(b.ptr, b.shape, b.strides, b.itemsize),
        max_work=None))


def has_internal_overlap(a: ArrayArg) -> bool:
    """Whether two different elements of ``a`` share a byte (exact).

    Derivation. Drop the axes of extent 1 (they index nothing twice); a zero-size array has no
    overlap, and an axis of extent > 1 with stride 0 is overlap (indices 0 and 1 address the same
    element). Otherwise pick an axis k of extent n > 1 and stride s, and write ``A_i`` for the slice
    at index i along k. Every ``A_i`` is ``A_0`` translated by ``i * s`` bytes. Two elements of
    ``A`` share a byte iff they lie in one slice ``A_i`` (iff ``A_0`` overlaps itself, translation
    preserves overlap) or in two slices ``A_i``, ``A_j`` with i < j; translating by ``-i * s``, the
    latter happens iff ``A_0`` meets ``A_d`` for some d = j - i in 1..n-1, i.e. iff ``A_0`` meets
    ``A[1:]`` (along k), the union of those ``A_d``. So

        overlap(A) = overlap(A_0) or shares_memory(A_0, A[1:] along k),

    and ``A_0`` has one axis fewer: the recursion ends at a single element (no overlap). Each step
    is one exact ``shares_memory`` test.

    A sufficient test runs first and settles the usual layouts without NumPy: with the axes sorted
    by ``|stride|``, if each ``|stride|`` is at least the byte span of all smaller-stride axes
    together (itemsize plus ``sum |s_j| * (n_j - 1)``), the layout is injective on bytes.

    Args:
        a: the argument (any shape, byte strides possibly negative or 0).

    Returns:
        bool: True iff two distinct index tuples of ``a`` address elements that share a byte.
    """
    shape, strides = a.shape, a.strides
    if len(shape) == 1:  # the common case, answered directly
        n, s = shape[0], strides[0]
        return n > 1 and abs(s) < a.itemsize
    if 0 in shape:
        return False
    axes = [(n, s) for n, s in zip(shape, strides) if n > 1]
    if not axes:
        return False
    if any(s == 0 for _, s in axes):
        return True
    itemsize = a.itemsize
    span = itemsize
    for n, s in sorted(axes, key=lambda ax: abs(ax[1])):
        if abs(s) < span:
            break
        span += abs(s) * (n - 1)
    else:
        return False
    # Exact recursion; peel the largest-stride axis first.
    axes.sort(key=lambda ax: abs(ax[1]), reverse=True)
    ptr = a.ptr
    while axes:
        n, s = axes[0]
        rest = axes[1:]
        shape0 = tuple(m for m, _ in rest)
        strides0 = tuple(t for _, t in rest)
        if _raw_shares(ptr, shape0, strides0,
                       ptr + s, (n - 1,) + shape0, (s,) + strides0, itemsize):
            return True
        axes = rest
    return False
