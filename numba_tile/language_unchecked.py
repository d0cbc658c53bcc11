"""The unchecked ops of the tile language (re-exported by :mod:`numba_tile.language`): gather,
scatter and the atomics, usable only in kernels marked ``@jit(unchecked=True)``. Their typing,
lowering and interpreter rules are in the ``unchecked`` modules of ``typing/``, ``lowering/``
and ``interpreter/``."""

from __future__ import annotations

from ._registry import op


# ------------------------------------------------------------------------ unchecked
# Available only in kernels marked @jit(unchecked=True), launched with unchecked=True.

_ELEMENT_INDICES = """indices (Tile of int32/int64, or a tuple of ndim of them): element
            coordinates in ``x`` (a tile for a 1-D array, one tile per axis otherwise). The
            coordinate tiles, the mask and the values broadcast together as operators do
            (NumPy's rules): ``(r[:, None], c[None, :])`` is the box of rows ``r`` and
            columns ``c``; S is the broadcast shape.
            Elements whose coordinates fall outside ``x`` are skipped (bounds-checked),
            and so are the invalid elements of masked tile operands (indices, mask or
            values loaded past an array's edge without ``padding=``).
        mask (Tile[S] of bool, optional): only elements where it is True take part."""

_SEMANTICS = """sem (str, static): memory order, ``"relaxed"`` (default), ``"acquire"``,
            ``"release"`` or ``"acq_rel"`` (PTX ``atom.sem``).
        scope (str, static): ``"gpu"`` (default), ``"cta"`` or ``"sys"`` (PTX ``atom.scope``)."""


@op("unchecked", reads=(0,), unchecked=True)
def gather(x, indices, mask=None, padding=0):
    """Read ``x`` at computed element coordinates: from a read-only tensor in any kernel, from
    any array in unchecked kernels.

    In a safe kernel ``x`` must be a read-only ``Tensor`` parameter: nothing writes it while
    the kernel runs, so reads at any coordinates cannot race. A partition (which the kernel
    may write) needs an unchecked kernel.

    Args:
        x (Tensor | Partition | Mutable): the array.
        {indices}
        padding (scalar): value of skipped elements.

    Returns:
        Tile[S] of x's dtype.

    Raises:
        UncheckedOpError: ``x`` is a partition or a ``Mutable`` array in a kernel not marked
            unchecked (a read-only tensor needs no mark).

    Examples:
        An embedding lookup: rows of ``table`` (read-only) at the ids of the block's tokens::

            ids = nt.load(token_ids, (nt.bid(0),), (BT,), padding=0)          # (BT,) int32
            rows = nt.expand_dims(ids, 1) + nt.zeros((BT, D), nt.int32)        # (BT, D)
            cols = nt.expand_dims(nt.arange(D), 0) + nt.zeros((BT, D), nt.int32)
            nt.store(out, nt.gather(table, (rows, cols)))
    """


@op("unchecked", writes=(0,), unchecked=True)
def scatter(x, indices, values, mask=None):
    """Write ``values`` into ``x`` at computed element coordinates (unchecked kernels only).

    Two blocks writing one element race; the interpreter's race detector reports it.

    Args:
        x (Mutable | Partition): the array.
        {indices}
        values (Tile[S] | scalar): converted to x's dtype without narrowing.

    Raises:
        UncheckedOpError: used in a kernel not marked unchecked.
    """


def _atomic(name, what, dtypes_text):
    def fn(x, indices, values, mask=None, sem="relaxed", scope="gpu"):
        pass
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = (f"Atomic {what} at computed element coordinates (unchecked kernels only).\n\n"
                  f"    Each element's read-modify-write is one PTX ``atom`` instruction; the order\n"
                  f"    between elements (and blocks) is unspecified.\n\n"
                  f"    Args:\n        x (Mutable | Partition): the array, of {dtypes_text}.\n"
                  f"        {_ELEMENT_INDICES}\n        values (Tile[S] | scalar): the operands.\n"
                  f"        {_SEMANTICS}\n\n    Returns:\n        Tile[S] of x's dtype: the values "
                  f"before the operation (0 where the mask is False or the coordinates are out "
                  f"of bounds).\n\n    Raises:\n        UncheckedOpError: used in a "
                  f"kernel not marked unchecked.\n")
    return op("unchecked", writes=(0,), unchecked=True)(fn)


atomic_add = _atomic("atomic_add", "add, ``x[i] += v``",
                     "int32, int64, float16, bfloat16 (compute capability 9.0), float32 or "
                     "float64")
atomic_max = _atomic("atomic_max", "maximum, ``x[i] = max(x[i], v)``",
                     "int32, int64, float32 or float64 (floats ordered by IEEE 754 "
                     "totalOrder: -NaN < -inf < -0.0 < +0.0 < +inf < +NaN)")
atomic_min = _atomic("atomic_min", "minimum, ``x[i] = min(x[i], v)``",
                     "int32, int64, float32 or float64 (floats ordered by IEEE 754 "
                     "totalOrder, as atomic_max)")
atomic_xchg = _atomic("atomic_xchg", "exchange, ``x[i] = v``",
                      "int32, int64, float32 or float64")


@op("unchecked", writes=(0,), unchecked=True)
def atomic_cas(x, indices, expected, desired, mask=None, sem="relaxed", scope="gpu"):
    """Atomic compare-and-swap: ``x[i] = desired if x[i] == expected`` (unchecked kernels only).

    Args:
        x (Mutable | Partition): the array, of int32 or int64.
        {indices}
        expected, desired (Tile[S] | scalar): the operands.
        {sem}

    Returns:
        Tile[S] of x's dtype: the values before the operation (equal to ``expected`` where the
        swap happened; 0 where the mask is False or the coordinates are out of bounds).

    Raises:
        UncheckedOpError: used in a kernel not marked unchecked.
    """


for _f in (gather, scatter, atomic_cas):
    _f.__doc__ = _f.__doc__.format(indices=_ELEMENT_INDICES, sem=_SEMANTICS)
