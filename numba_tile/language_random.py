"""The random-number ops of the tile language (re-exported by :mod:`numba_tile.language`):
counter-based Philox, bit-identical to Triton's ``tl.rand`` family. Their typing, lowering
and interpreter rules are in the ``random`` modules of ``typing/``, ``lowering/`` and
``interpreter/``."""

from __future__ import annotations

from ._registry import op


# --------------------------------------------------------------------------- random
# Counter-based random numbers (Philox), bit-identical to Triton's ``tl.rand`` family
# (``triton/language/random.py``). They read and write no memory: usable in safe kernels.

_RANDOM_ARGS = """seed (int32 or int64 scalar): the key: a runtime kernel parameter, a
            ``Constant`` or integer arithmetic on them (not a tile). An int32 seed is
            sign-extended to 64 bits first, as Triton does (``seed.to(tl.uint64)``).
        offsets (Tile[S] of int32 or int64): the counters, one per element; equal (seed,
            offset) pairs give equal numbers in any kernel, block or launch. An int32 and an
            int64 offset of the same value in ``[0, 2**31)`` give the same numbers; an int64
            offset's high 32 bits are a second counter word, so a negative int64 offset
            differs from the same int32 one. Writing the dtype out, ``astype(bid(0) * BLOCK +
            arange(BLOCK), int32)`` (``bid()`` is int64, Triton's ``program_id`` int32), keeps
            the two backends on one counter for negative offsets too (the interpreter gives
            such a tile the dtype its values fit: ``docs/random.md``, "Offsets")."""

_RANDOM_GENERATOR = """Generator: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
    as 1, 2, 3", SC 2011) with key ``(seed & 0xffffffff, (seed >> 32) & 0xffffffff)`` for
    both offsets dtypes, as Triton 3.6's ``triton/language/random.py``: counter ``(offset as
    uint32, 0, 0, 0)`` for int32 offsets, ``(offset & 0xffffffff, (offset >> 32) &
    0xffffffff, 0, 0)`` for int64 ones; the outputs are 32-bit words either way. The result
    has the shape of ``offsets`` and its register layout (a tile in another layout than the
    blocked one is converted first), and is masked where ``offsets`` is. ``docs/random.md``
    has the constants and the exact conversions."""

_RANDOM_RAISES = """Raises:
        TileTypingError: ``seed`` is not an integer scalar (a float, a bool, a tile), or
            ``offsets`` is not a tile of int32 or int64."""


@op("random")
def randint(seed, offsets):
    """Random 32-bit words: the first output word of Philox4x32-10 for each offset.

    Triton's ``tl.randint`` returns these bits as uint32, for int32 and int64 offsets alike
    (Triton 3.6); numba_tile returns the same bits as int32: a word of ``2**31`` or more reads
    as a negative number. ``astype(words, uint32)`` in the kernel (integer conversions wrap),
    or ``.view(numpy.uint32)`` on the host copy, gives Triton's value.

    Args:
        {args}

    Returns:
        Tile[S] of int32, for int32 and int64 offsets.

    {generator}

    {raises}
    """


@op("random")
def randint4x(seed, offsets):
    """All four output words of Philox for each offset (``randint`` is the first), as
    Triton's ``tl.randint4x``.

    Args:
        {args}

    Returns:
        A tuple of four Tile[S] of int32, for int32 and int64 offsets (Triton's uint32 bits
        as int32, see :func:`randint`): ``a, b, c, d = randint4x(seed, offsets)``.

    {generator}

    {raises}
    """


@op("random")
def rand(seed, offsets):
    """Uniform random float32 numbers in ``[0, 1)``, as Triton's ``tl.rand``.

    The first Philox word ``x`` (32 bits, for int32 and int64 offsets alike) becomes Triton's
    ``uint_to_uniform_float(x)``: its bits as a signed int32, ``-x - 1`` where negative
    (``~x``), converted to float32 (rounded to nearest even) and multiplied in float32 by
    ``4.6566127342e-10`` (as float32 ``2**-31 - 2**-55``), so the largest result is
    ``1 - 2**-24``, never 1.0. Results are bit-identical on the GPU and in the interpreter.

    Args:
        {args}

    Returns:
        Tile[S] of float32.

    {generator}

    {raises}
    """


@op("random")
def randn(seed, offsets):
    """Standard normal random float32 numbers, as Triton's ``tl.randn``.

    The Box-Muller transform of the first two (32-bit) Philox words, as Triton computes it,
    in float32: ``u1 = max(1e-7, rand word 0)`` (the guard against ``log(0)``), ``u2 = rand word
    1``, ``sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2)``. On the GPU ``log``, ``cos`` and
    ``sqrt`` are libdevice's ``__nv_logf``, ``__nv_cosf`` and ``__nv_sqrtf`` (IEEE square
    root); the interpreter computes ``log`` and ``cos`` in float64 and rounds to float32, so
    the two agree to a few ulp (libdevice's documented error bounds), not bit for bit.

    Args:
        {args}

    Returns:
        Tile[S] of float32.

    {generator}

    {raises}
    """


for _f in (randint, randint4x, rand, randn):
    _f.__doc__ = _f.__doc__.format(args=_RANDOM_ARGS, generator=_RANDOM_GENERATOR,
                                   raises=_RANDOM_RAISES)
