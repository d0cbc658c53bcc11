"""View-aware memory overlap of array arguments (addresses only; memory is never read), exact within
a bound on the work.

Two arguments overlap when some byte belongs to an element of each; an argument overlaps itself when
two different index tuples address elements that share a byte. Both questions are answered for any
strides (transposes, shifted slices, negative strides, stride 0, interleaved views): cheap exact
tests settle the usual layouts, and the rest goes to NumPy's ``shares_memory`` (an exact bounded
Diophantine solver), run on stand-in NumPy arrays built from address, shape and byte strides through
``__array_interface__``. NumPy never dereferences such an array's data pointer in ``shares_memory``,
so device addresses are fine and nothing is copied.

NumPy's solver computes in fixed-width integers: each array's offsets from its data pointer in
int64 (``offset_bounds_from_strides``, which overflows silently: past ``2**63`` bytes of span it
answers "no overlap" for arrays that do overlap) and the absolute byte range in uint64. So NumPy is
only ever handed stand-ins whose span is at most ``arrays.MAX_SPAN`` (``2**61`` bytes; validated
arguments never span more, and any other layout is *undecided*), translated together so that the
lower of the two lowest bytes lies in ``[2**20, 2**21)``: overlap is invariant under translation,
the translation is a multiple of ``2**20`` (every address keeps its residue modulo ``2**20``, so
alignment is kept), and two byte ranges that intersect then lie below ``2**21 + 2 * MAX_SPAN``,
far from ``2**63``. Every other step of the solver checks for overflow itself (``safe_add``,
``safe_mul``, 128-bit intermediates) and raises ``OverflowError``, which is *undecided* here.

The general problem is NP-hard (NumPy's ``mem_overlap.c`` says so, and its solver's work grows
exponentially with the rank: a rank-20 layout can take minutes). Every call to the solver is
therefore given ``max_work=``:data:`MAX_WORK`; past it NumPy raises ``TooHardError`` and the answer
is *undecided* (``None`` from :func:`overlap_verdict` and :func:`internal_overlap_verdict`). An
undecided layout is never taken as disjoint: the launch checks refuse it (their message says so and
what to pass instead), and :func:`shares_memory` / :func:`has_internal_overlap` report it as an
overlap. Ranks are bounded too (``arrays.MAX_NDIM``), so a verdict costs at most ``MAX_NDIM``
bounded solver calls.
"""

from __future__ import annotations

import numpy

from numba_tile.runtime.arrays import MAX_SPAN, ArrayArg

try:
    from numpy.exceptions import TooHardError as _TooHardError
except ImportError:  # NumPy before 1.25
    _TooHardError = numpy.TooHardError

__all__ = ["MAX_WORK", "overlap_verdict", "internal_overlap_verdict", "shares_memory",
           "has_internal_overlap"]

#: Work bound of one exact test: NumPy's ``shares_memory(..., max_work=MAX_WORK)``, which counts
#: the candidate partial solutions its depth-first search visits (about 0.7 microseconds each on a
#: current CPU, so one test costs at most ~7 ms and a self-overlap verdict, one test per axis, at
#: most ~0.2 s at rank 32). Layouts from slicing, transposing, reshaping or broadcasting need a
#: handful of steps per axis (``mem_overlap.c``, "Performance"); NumPy's own ufuncs use far less.
MAX_WORK = 10_000

# Lowest byte of the canonical placement of a self-overlap problem (translation preserves overlap;
# a fixed placement makes the verdict a function of shape, strides and item size alone).
_BASE = 1 << 12

# Stand-ins are translated by multiples of _ALIGN, so that the lower of two arrays' lowest bytes
# lands in [_ALIGN, 2 * _ALIGN): never a null data pointer (NumPy would allocate), far below 2**63.
_ALIGN = 1 << 20


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


def _solve(x: numpy.ndarray, y: numpy.ndarray) -> bool | None:
    """NumPy's exact test within :data:`MAX_WORK`; None when it gives up (or overflows int64)."""
    try:
        return bool(numpy.shares_memory(x, y, max_work=MAX_WORK))
    except (_TooHardError, OverflowError):
        return None


def _translated_solve(p1: int, shape1: tuple, strides1: tuple, itemsize1: int, lo1: int, hi1: int,
                      p2: int, shape2: tuple, strides2: tuple, itemsize2: int, lo2: int,
                      hi2: int) -> bool | None:
    """NumPy's exact test on two non-empty layouts whose byte ranges ``[lo, hi)`` intersect.

    Both are translated by one multiple of ``_ALIGN`` that puts ``min(lo1, lo2)`` in
    ``[_ALIGN, 2 * _ALIGN)`` (overlap is translation-invariant), so that no offset or address
    NumPy computes comes near 2**63 (module docstring). A layout spanning more than
    ``arrays.MAX_SPAN`` bytes (never a validated argument) is not handed to NumPy: undecided.

    Returns:
        bool | None: the verdict, None if undecided.
    """
    if hi1 - lo1 > MAX_SPAN or hi2 - lo2 > MAX_SPAN:
        return None
    low = min(lo1, lo2)
    shift = low - low % _ALIGN - _ALIGN
    try:
        x = _stand_in(p1 - shift, shape1, strides1, itemsize1)
        y = _stand_in(p2 - shift, shape2, strides2, itemsize2)
    except (ValueError, OverflowError):  # more elements than NumPy's int64 size (unvalidated)
        return None
    return _solve(x, y)


def _raw_shares(p1: int, shape1, strides1, p2: int, shape2, strides2,
                itemsize: int) -> bool | None:
    """Overlap of two non-empty layouts with the same item size (bytes); None if undecided."""
    lo1, hi1 = _bounds(p1, shape1, strides1, itemsize)
    lo2, hi2 = _bounds(p2, shape2, strides2, itemsize)
    if hi1 <= lo2 or hi2 <= lo1:
        return False
    return _translated_solve(p1, tuple(shape1), tuple(strides1), itemsize, lo1, hi1,
                             p2, tuple(shape2), tuple(strides2), itemsize, lo2, hi2)


def overlap_verdict(a: ArrayArg, b: ArrayArg) -> bool | None:
    """Whether two arguments have a byte in common, exact within :data:`MAX_WORK`.

    Args:
        a: first argument (validated: any shape, byte strides possibly negative or 0).
        b: second argument.

    Returns:
        bool | None: True iff some element of ``a`` and some element of ``b`` share a byte, False
        iff none do, None when NumPy's solver could not decide within :data:`MAX_WORK`.
        Zero-size arguments never overlap. Devices are not compared: with unified addressing
        (every 64-bit CUDA process) no two allocations share an address, whichever devices
        (or the host) they are on, so two ranges that meet are one memory, whatever device its
        producers name (pinned host memory is read at its host address on the device, and a
        producer may misname a device).
    """
    if a.size == 0 or b.size == 0:
        return False
    lo1, hi1 = a.byte_bounds
    lo2, hi2 = b.byte_bounds
    if hi1 <= lo2 or hi2 <= lo1:
        return False
    pa, pb = a.ptr, b.ptr
    if pa < pb + b.itemsize and pb < pa + a.itemsize:
        return True               # their elements [0, ..., 0] share a byte (an array and itself)
    return _translated_solve(pa, a.shape, a.strides, a.itemsize, lo1, hi1,
                             pb, b.shape, b.strides, b.itemsize, lo2, hi2)


def shares_memory(a: ArrayArg, b: ArrayArg) -> bool:
    """Whether two arguments may have a byte in common (:func:`overlap_verdict`, undecided = True).

    For callers that need a yes/no answer and must err on the safe side (the in-flight registry
    orders launches that may conflict).

    Args:
        a: first argument.
        b: second argument.

    Returns:
        bool: False only when the two are proven to share no byte.
    """
    return overlap_verdict(a, b) is not False


def _axes_free_of_overlap(axes: list[tuple[int, int]], itemsize: int) -> int:
    """How many of ``axes`` (extent > 1, stride > 0, sorted by ascending stride), counted from
    the smallest stride, pass the sufficient test: each stride at least the byte span of the
    smaller-stride axes together (``itemsize + sum s_j * (n_j - 1)``). Those axes alone address
    every byte at most once."""
    span = itemsize
    for count, (n, s) in enumerate(axes):
        if s < span:
            return count
        span += s * (n - 1)
    return len(axes)


def internal_overlap_verdict(a: ArrayArg) -> bool | None:
    """Whether two different elements of ``a`` share a byte, exact within :data:`MAX_WORK`.

    Derivation. Drop the axes of extent 1 (they index nothing twice); a zero-size array has no
    overlap, and an axis of extent > 1 with stride 0 is overlap (indices 0 and 1 address the same
    element). Flipping an axis (``s -> -s``) maps the set of element offsets onto a translate of
    itself, so strides can be taken positive; two axes with ``s_2 == n_1 * s_1`` address exactly
    what one axis ``(n_1 * n_2, s_1)`` does, so they merge. Then, in order:

    * pigeonhole: more bytes in the elements (``size * itemsize``) than in the byte range means
      overlap;
    * the sufficient test (:func:`_axes_free_of_overlap`) over all axes means no overlap;
    * otherwise pick the largest-stride axis k of extent n and stride s, and write ``A_i`` for the
      slice at index i along k. Every ``A_i`` is ``A_0`` translated by ``i * s`` bytes. Two elements
      of ``A`` share a byte iff they lie in one slice (iff ``A_0`` overlaps itself) or in two
      slices ``A_i``, ``A_j`` with i < j; translating by ``-i * s``, the latter happens iff ``A_0``
      meets ``A_d`` for some d = j - i in 1..n-1, i.e. iff ``A_0`` meets ``A[1:]`` (along k). So

          overlap(A) = overlap(A_0) or shares_memory(A_0, A[1:] along k),

      and ``A_0`` has one axis fewer. The recursion stops once the remaining axes pass the
      sufficient test, so it costs one bounded ``shares_memory`` per axis above that prefix.

    Args:
        a: the argument (validated: any shape, byte strides possibly negative or 0).

    Returns:
        bool | None: True iff two distinct index tuples of ``a`` address elements that share a
        byte, False iff none do, None when NumPy's solver could not decide within
        :data:`MAX_WORK`. Depends only on shape, strides and item size, not on the address.
    """
    shape, strides, itemsize = a.shape, a.strides, a.itemsize
    if len(shape) == 1:  # the common case, answered directly
        n, s = shape[0], strides[0]
        return n > 1 and abs(s) < itemsize
    if 0 in shape:
        return False
    axes = sorted(((n, abs(s)) for n, s in zip(shape, strides) if n > 1), key=lambda ax: ax[1])
    if not axes:
        return False
    if axes[0][1] == 0:
        return True
    merged = [axes[0]]
    for n, s in axes[1:]:
        n0, s0 = merged[-1]
        if s == n0 * s0:
            merged[-1] = (n0 * n, s0)
        else:
            merged.append((n, s))
    axes = merged
    size = 1
    span = itemsize
    for n, s in axes:
        size *= n
        span += s * (n - 1)
    if size * itemsize > span:
        return True
    free = _axes_free_of_overlap(axes, itemsize)
    if free == len(axes):
        return False
    # Exact recursion, largest stride first, down to the prefix the sufficient test settles.
    while len(axes) > free:
        n, s = axes[-1]
        rest = axes[:-1]
        shape0 = tuple(m for m, _ in rest)
        strides0 = tuple(t for _, t in rest)
        verdict = _raw_shares(_BASE, shape0, strides0,
                              _BASE + s, (n - 1,) + shape0, (s,) + strides0, itemsize)
        if verdict is not False:
            return verdict
        axes = rest
    return False


def has_internal_overlap(a: ArrayArg) -> bool:
    """Whether two different elements of ``a`` may share a byte (undecided counts as True).

    Args:
        a: the argument.

    Returns:
        bool: False only when ``a`` is proven free of self-overlap
        (:func:`internal_overlap_verdict`).
    """
    return internal_overlap_verdict(a) is not False
