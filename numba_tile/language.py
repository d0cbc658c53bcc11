"""The tile language: every op usable inside a ``@numba_tile.jit`` kernel.

Each function here is the op's public stub: its signature and docstring. Inside a
kernel Numba types and lowers the call through the op's rules; called from Python
(interpreter mode) it runs the op's NumPy rule. Operators on tiles (``+ - * / // %
** < <= > >= == != & | ^ ~``, unary ``-``, ``abs()``) are ops too and follow the
promotion table of :mod:`numba_tile.dtypes`.

Shapes are static: a tuple of integer literals or constant parameters, each a power of
two. Indices are in tile units: tile ``index`` of shape ``shape`` covers elements
``index[d] * shape[d] ... (index[d] + 1) * shape[d] - 1`` along each axis ``d``.
"""

from __future__ import annotations

import operator

from ._registry import op, operator_op

#: ``range`` for loops over the members of a tuple-of-arrays argument: ``for g in
#: static_range(len(As))`` is unrolled when the kernel is specialized for the tuple's length,
#: so ``As[g]`` names one member (``numba_tile/groups.py``); elsewhere it is ``range``.
static_range = range

# --------------------------------------------------------------------------- memory


@op("memory", reads=(0,))
def load(x, index=None, shape=None, padding=None):
    """Load a tile from a tensor, or a partition's own tile.

    Args:
        x (Tensor[dtype, ndim] | Partition): a read-only tensor parameter, or a
            partition parameter: then ``shape`` is left out (the partition's tile shape is
            used) and ``index`` is either left out (the block's own tile) or an index
            minted by ``tiles(x)``.
        index (tuple of ndim int): tile index, in tile units (not elements); runtime
            values. A tile wholly or partly outside the array (a negative index, or one
            past the end) is not read there: loads never fault.
        shape (tuple of ndim int, static): tile shape, powers of two: integer literals,
            Constant parameters or integer arithmetic on them (``2 * BLOCK``). Up to
            256 elements per thread (``numel / (32 * num_warps)``) stay in registers; up
            to 1024 compile, spilling, with a ``TilePerformanceWarning``.
        padding (scalar or None): None (the default): the elements outside the array are
            *invalid*: the tile is masked, reductions skip them and stores do not write
            them, through any elementwise ops in between (case E2: the variance of a row
            loaded at an edge counts only its real elements). A value: the elements
            outside the array hold it and count as ordinary elements, as Triton's
            ``other=`` (``-inf`` before a max, ``0`` before a running sum); for float
            arrays also ``float('nan')``, ``float('inf')``, ``-float('inf')``. It must be
            representable in x's dtype (no float padding for an integer array, no
            out-of-range int): it is converted to x's dtype.

    Returns:
        Tile[shape] of x's dtype; masked when ``padding`` is None (its invalid elements
        hold zeros, which no reduction or store reads; :func:`filled` turns them into a
        value and the tile into an unmasked one).

    Raises:
        TileTypingError: missing or non-static shape, rank mismatch, a shape over the
            register budget, a padding x's dtype cannot hold, or an ``index`` given for a
            partition (another block's tile of an array being written cannot be read:
            that would race).

    Examples:
        In a kernel with ``a: Tensor[float16, 2]`` and constants ``BM``, ``BK``::

            t = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)   # unmasked, 0 past the edge
            u = nt.load(a, (nt.bid(0), k), (BM, BK))              # masked past the edge
            own = nt.load(z)                                      # the block's tile of z
    """


@op("memory", reads=(0,))
def load_like(x, like, padding=None, index=None):
    """Load the tile of ``x`` that sits where the block's own tile of ``like`` sits (or, with
    ``index`` from ``tiles(like)``, where that tile sits).

    ``x`` and ``like``'s array may have different extents: the tile is taken at the same
    tile index; elements outside ``x`` are invalid (masked) unless ``padding`` gives them a
    value, and a longer ``x`` is read only where the tile lies. A store of a result that
    depends on a masked tile writes only its valid elements. Elementwise kernels usually
    pass arrays of one shape.

    Args:
        x (Tensor[dtype, ndim] | Partition): the array to read; same rank as ``like``;
            ``like`` itself is allowed (its own tile).
        like (Partition): the partition whose own tile index and tile shape are used.
        padding (scalar or None): value of elements outside ``x``; None (the default):
            they are invalid, the tile is masked (see :func:`load`).
        index (PartitionIndex of ``like``): a tile index minted by ``tiles(like)``; required
            when ``like`` is mapped onto a fixed number of blocks.

    Returns:
        Tile[like.tile_shape] of x's dtype, masked when ``padding`` is None.

    Raises:
        TileTypingError: ``like`` is not a partition, the ranks differ, ``x`` is another
            partition (its tiles are being written by other blocks), or a bad padding.

    Examples:
        ``z`` a partition parameter, ``x`` and ``y`` read-only arrays of z's shape::

            nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))
            for idx in nt.tiles(z):                       # z mapped onto blocks
                nt.store(z, 2.0 * nt.load_like(x, z, index=idx), idx)
    """


@op("memory", reads=(0,))
def load_at(x, offset, shape, padding):
    """Load the tile of ``shape`` whose first element sits at element coordinates ``offset``
    of a tensor: ``x[o0:o0 + shape[0], o1:o1 + shape[1], ...]``, at any position (not only at
    multiples of the tile shape), as Triton's ``tl.load(ptr + offs, mask, other)``.

    Nothing writes a read-only tensor while the kernel runs, so a read at any coordinates
    cannot race (``docs/safety.md``); a partition, which other blocks write, is refused.

    Args:
        x (Tensor[dtype, ndim]): a read-only tensor parameter (or, in an unchecked kernel, a
            ``Mutable`` one).
        offset (tuple of ndim int, or an int for 1-D): element coordinates of the tile's
            first element; runtime values, negative or past the end allowed: the elements
            outside the array are not read.
        shape (tuple of ndim int, static): the tile shape (as :func:`load`).
        padding (scalar): the value of the elements outside the array (required: the valid
            elements of a tile at a negative offset are not a prefix of it, which a masked
            tile's extents cannot say); converted to x's dtype as :func:`load`'s.

    Returns:
        Tile[shape] of x's dtype, unmasked.

    Raises:
        TileTypingError: ``x`` a partition, an offset of another rank or not of integers, a
            missing or non-static shape, a missing padding or one x's dtype cannot hold.

    Examples:
        A three-point stencil over a 1-D array, one tile of ``B`` outputs per block::

            start = nt.bid(0) * B
            left = nt.load_at(x, start - 1, (B,), 0.0)
            right = nt.load_at(x, start + 1, (B,), 0.0)
            nt.store(z, 0.5 * (left + right))
    """


@op("memory", writes=(0,), store_index=2)
def store(z, tile, index=None):
    """Store ``tile`` into the block's own tile of partition ``z``.

    Elements outside the array are masked off. The tile is converted to ``z``'s dtype
    only when that is no narrowing, ``promote(tile dtype, z dtype) == z dtype`` (float32
    into float16, int64 into int32, float into int are refused: narrow explicitly with
    :func:`astype`).

    Args:
        z (Partition): a mutable parameter (declared ``numba_tile.Partition``).
        tile (Tile[z.tile_shape] | scalar): the values; a scalar is broadcast and must be
            representable in z's dtype.
        index (PartitionIndex of ``z``): a tile index minted by ``tiles(z)`` (required when
            ``z`` is mapped onto a fixed number of blocks). An index of another partition, or
            one built by hand, is refused: only ``tiles(z)`` knows which tiles are this
            block's.

    Raises:
        StoreToReadOnlyError: ``z`` is a read-only tensor (typing).
        ForeignTileStoreError: ``index`` is not one of ``tiles(z)``'s (typing).
        TileTypingError: shape mismatch, or a dtype or scalar that would be narrowed.

    Examples:
        ``z: Partition[("BM", "BN")]`` of float16::

            nt.store(z, nt.astype(acc, nt.float16))       # the block's own tile
            nt.store(z, 0.0)                              # a scalar, broadcast
            for idx in nt.tiles(z):                       # z mapped onto blocks
                nt.store(z, nt.load_like(x, z, index=idx), idx)
    """


@op("memory")
def _stage_origin(k, start):
    """Internal (inserted by the compiler before the first pipelined load of a loop
    ``for k in range(start, n)`` that does not start at 0, or whose ``load_at`` offsets are
    ``o + k * C``, ``typing/pipeline.py``): the loop's variable and its start, from which the
    pipeline counts the loop's iterations (``lowering/pipeline.py``). No value; in the
    interpreter, nothing."""


@op("partition")
def tiles(z, strip=None, reverse=False):
    """The tiles of partition ``z`` that this block owns, as branded tile indices.

    With ``strip`` (from :func:`strips`): the tiles of that strip, in order along the last
    axis: ``(*strip, 0), (*strip, 1), ...``.

    With ``reverse=True``: the same tiles, last first. A second pass over a row that a first
    pass has just read then starts with the tiles the first pass read last, which are the
    likeliest to be in L2 still: Liger-Kernel's cross entropy at 1024 x 128,256 bfloat16
    read 336 MB from DRAM with its gradient pass forward and 270 MB reversed (the logits are
    263 MB), 231 us against 204 us (H200, Nsight Compute, 2026-12-02,
    ``docs/performance.md``). The set of tiles, and so what the block may store, is unchanged.

    ``for idx in tiles(z): ... store(z, tile, idx)``. Two walks of one strip go in lockstep
    with ``zip(tiles(dx, row), tiles(loss, row))`` (each index keeps its partition's brand).
    For a partition mapped onto ``B`` blocks (``partition(a, shape, blocks=B)``) block ``b``
    gets tile numbers ``b, b + B, b + 2B, ...`` of the partition's order (row-major by default; ``partition(...,
    order=grouped(G))`` for Triton's grouped GEMM order), so no two blocks share a tile; for
    a plain partition the only tile is the block's own. Each index carries the *brand* of
    ``z``: a store to another partition refuses it.

    ``idx[d]`` (``d`` a static int, negative counts from the end) is the tile's coordinate
    along axis ``d`` (int64, tile units), e.g. to load the matching tiles of a GEMM's inputs:
    ``load(a, (idx[0], k), (BM, BK))``. It is a plain integer: arithmetic on it gives plain
    integers, and a store refuses an index rebuilt from it (``(idx[0], idx[1])`` is built by
    hand); only ``idx`` itself stores.

    Args:
        z (Partition): a partition parameter.
        strip (StripIndex, optional): a strip from :func:`strips` (of ``z`` or of another
            partition whose rows go to blocks alike).
        reverse (static bool): the same tiles in the opposite order.

    Returns:
        An iterable of PartitionIndex[z]: tile coordinates (int64, tile units), usable as the
        ``index`` of ``load`` (any tensor), ``load_like`` and ``store`` (``z`` only).

    Raises:
        TileTypingError: ``z`` is not a partition parameter; ``idx[d]`` with ``d`` not a
            static int in ``[-ndim, ndim)``; ``reverse`` not a static bool.

    Examples:
        A persistent GEMM over ``c`` mapped onto blocks (``partition(c, (BM, BN), blocks=n)``)::

            for idx in nt.tiles(c):
                acc = nt.zeros((BM, BN), nt.float32)
                for k in range(nt.num_tiles(a, 1, BK)):
                    acc = nt.mma(nt.load(a, (idx[0], k), (BM, BK)),
                                 nt.load(b, (k, idx[1]), (BK, BN)), acc)
                nt.store(c, nt.astype(acc, nt.float16), idx)
    """


@op("partition")
def strips(z):
    """The strips of partition ``z`` that this block owns: for long rows that do not fit one
    tile (a softmax or cross entropy over a 128K vocabulary), a block owns whole rows of tiles.

    A strip is the set of tiles that share all but their last coordinate (a row of tiles of a
    2-D partition). ``z`` must be mapped onto blocks (``partition(a, shape, blocks=B)``):
    block ``b`` owns strips ``b, b + B, b + 2B, ...`` (row-major over the leading axes of the
    tile grid), so no two blocks share a tile::

        for row in nt.strips(y):                      # y: Partition["BM", "BN"], mapped
            for k in range(nt.num_tiles(x, 1, BN)):   # first pass: read the row of x
                t = nt.load(x, (row[0], k), (BM, BN))
                ...
            for idx in nt.tiles(y, row):              # second pass: store the row's tiles
                nt.store(y, ..., idx)

    ``row[d]`` is the strip's coordinate along axis ``d`` (int64, tile units), a plain
    integer; ``tiles(y, row)`` gives the strip's tiles as branded indices of ``y``. A kernel
    uses one scheme per partition: a partition iterated with ``strips`` may not also be
    iterated with ``tiles(y)`` (the two give a block different tiles), which the ownership
    pass refuses.

    Args:
        z (Partition): a partition parameter of rank 2 or more, mapped onto blocks.

    Returns:
        An iterable of StripIndex[z].

    Raises:
        TileTypingError: ``z`` is not a mapped partition parameter of rank 2 or more.
        ForeignTileStoreError: ``z`` is also iterated with ``tiles(z)`` in the kernel.
    """


#: ``idx[d]`` on a branded index (``PartitionIndex[z]``): its coordinate along axis ``d``
operator_op("index_getitem", "partition", operator.getitem, 2)


@op("partition")
def num_tiles(x, axis, tile):
    """Number of tiles of extent ``tile`` along ``axis`` of ``x``: ``ceil(x.shape[axis] / tile)``.

    For loops over a read-only tensor's tiles, ``for k in range(num_tiles(x, 1, BK))``; the
    loads in such a loop are masked at the edge (the last tile is padded), so they are in
    bounds by construction.

    Args:
        x (Tensor | Partition): an array parameter.
        axis (int, static): the axis, ``0 <= axis < x.ndim``.
        tile (int, static): the tile extent along that axis, a power of two.

    Returns:
        int64.

    Raises:
        TileTypingError: a non-static or out-of-range axis, or a tile that is not a power of two.

    Examples:
        A loop over the column tiles of a row block of ``x``::

            for k in range(nt.num_tiles(x, 1, BN)):
                t = nt.load(x, (nt.bid(0), k), (BM, BN), padding=0)
    """


# ------------------------------------------------------------------------ reduction

def _reduction(name, what, accumulate, identity, example):
    def fn(x, axis, keepdims=False, dtype=None):
        pass
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = f"""{what} of a tile along ``axis``.

    {accumulate} The invalid elements of a masked tile (loaded without ``padding=``) are
    skipped; a line with no valid element gives {identity} and is itself invalid. Along the
    last axis with ``keepdims=True`` the result stays in the registers of the rows it came
    from and broadcasts back over them without data movement.

    Args:
        x (Tile[S]): the tile.
        axis (int, static): the axis, ``-ndim <= axis < ndim``.
        keepdims (bool, static): keep the reduced axis with extent 1.
        dtype: result dtype (default: x's; int32 for bool). No narrowing below x's dtype.

    Returns:
        Tile of S without ``axis`` (or with extent 1 there) of ``dtype``.

    Raises:
        TileTypingError: a bad axis, a narrowing dtype, or a reduction whose scratch does not
            fit the shared memory a block can have on the target (227 KB on compute
            capability 9.0, 163 KB on 8.0), found while compiling.

    Examples:
        {example}
    """
    return op("reduction")(fn)


_WIDE = ("float16 and bfloat16 tiles accumulate in float32 and the result is rounded to "
         "``dtype`` (the input's by default), so {0}. Integer tiles accumulate in their own "
         "dtype (int32 stays int32, as in Triton; NumPy would widen); bool tiles {1} as "
         "int32.")
sum = _reduction("sum", "Sum", _WIDE.format("the sum of 4096 float16 ones is 4096", "sum"),
                 "0",
                 "Row sums of a (BM, BN) tile, kept as a column: "
                 "``s = nt.sum(t, 1, keepdims=True)``  # (BM, 1)")
prod = _reduction("prod", "Product", _WIDE.format(
                  "a product of float16 factors does not round at every step", "multiply"),
                  "1", "Per-column products: ``p = nt.prod(t, 0)``  # (BN,)")
max = _reduction("max", "Maximum", "Compared in the tile's dtype (bool tiles as int32); NaN "
                 "propagates (as ``numpy.max``).", "-inf (the dtype's minimum for integers)",
                 "A softmax's row maximum, from a load padded with -inf: "
                 "``m = nt.max(t, 1, keepdims=True)``")
min = _reduction("min", "Minimum", "Compared in the tile's dtype (bool tiles as int32); NaN "
                 "propagates (as ``numpy.min``).", "+inf (the dtype's maximum for integers)",
                 "Per-row minimum: ``lo = nt.min(t, 1)``  # (BM,)")


@op("reduction")
def argmax(x, axis, keepdims=False):
    """Index of the maximum along ``axis`` (the first one on ties; the first NaN if there is
    one, as ``numpy.argmax``). Invalid elements of a masked tile are skipped (a line with
    none valid gives 0).

    Args:
        x (Tile[S]): the tile.
        axis (int, static): the axis.
        keepdims (bool, static): keep the reduced axis with extent 1.

    Returns:
        Tile of int32: indices along ``axis``, in ``[0, S[axis])``.
    """


@op("reduction")
def argmin(x, axis, keepdims=False):
    """Index of the minimum along ``axis`` (the first one on ties; the first NaN if there is
    one, as ``numpy.argmin``). Invalid elements of a masked tile are skipped (a line with
    none valid gives 0).

    Args:
        x (Tile[S]): the tile.
        axis (int, static): the axis.
        keepdims (bool, static): keep the reduced axis with extent 1.

    Returns:
        Tile of int32: indices along ``axis``, in ``[0, S[axis])``.
    """


@op("reduction")
def cumsum(x, axis, dtype=None):
    """Inclusive cumulative sum along ``axis`` (as ``numpy.cumsum``); 16-bit floats
    accumulate in float32, bool sums as int32; invalid elements of a masked tile count as
    0 and stay invalid.

    Args:
        x (Tile[S]): the tile.
        axis (int, static): the axis.
        dtype: result dtype (default: x's; int32 for bool). No narrowing.

    Returns:
        Tile[S] of ``dtype``.
    """


# ------------------------------------------------------------------------------ mma

_MMA_TABLE = """
    ==================  ==================  ==========================================
    a, b dtype          accumulator dtype   computed as
    ==================  ==================  ==========================================
    float16             float32 (default)   tensor cores, products exact, float32 sums
    float16             float16             tensor cores, float16 accumulation
    bfloat16            float32             tensor cores, products exact, float32 sums
    float8_e4m3fn       float32             tensor cores (sm_89+), products exact, sums in
                                            the tensor cores' accumulator
    float8_e5m2         float32             as float8_e4m3fn
    int8                int32               tensor cores, exact (int32 wraps on overflow)
    float32             float32             IEEE float32 fused multiply-adds (default)
    float32             float32             TF32 tensor cores with ``precision="tf32"``
    float64             float64             IEEE float64 fused multiply-adds
    ==================  ==================  ==========================================

    float32 inputs are never rounded to TF32 unless ``precision="tf32"`` is written at the
    call (a static string): TF32 keeps 10 of float32's 23 significand bits (each input is
    rounded to nearest, ties away from zero, ``cvt.rna.tf32.f32``), so ``(1 + 2**-12) * I``
    stays exact only in the default ``"ieee"`` precision. ``precision`` is refused for any
    other input dtype. Mixed input dtypes are refused: cast with :func:`astype` first.

    Shapes: ``a`` is ``(M, K)``, ``b`` ``(K, N)``, the result ``(M, N)``; M, N and K powers
    of two, at least 16 (at least 32 for K with int8 and FP8 inputs). FP8 products need
    compute capability 8.9 or later (``mma.sync ... .e4m3`` / ``.e5m2``; ``wgmma ... k32``
    on 9.0) and are refused at compile time for 8.0. On 9.0 FP8 ``wgmma`` reads both
    operands K-major: ``b`` written as ``transpose`` of an (N, K) tile loaded in the K loop
    is staged so; an FP8 ``b`` loaded as (K, N) is transposed by the threads first. The
    tensor cores' FP8 accumulator keeps fewer bits than float32 (DeepGEMM promotes its
    partial sums for that reason); the interpreter sums in float32. Masked operands (loads at an
    array's edge without ``padding``) count their invalid elements as zero, so a K not a
    multiple of the tile sums no garbage; the result is masked only when ``acc`` is.

    Accumulation order: the tensor-core paths add the K products in groups of the
    instruction's depth (16 for 16-bit inputs, 32 for int8 and FP8, 8 for TF32), group after group
    in K order; the IEEE paths accumulate one product at a time in K order with a fused
    multiply-add. The interpreter computes in the same dtypes (float32 sums of exact
    products for 16-bit inputs; float16 accumulation rounded after each group of 16)."""


@op("mma")
def mma(a, b, acc, precision=None):
    """``acc + a @ b`` on tensor cores: the matrix product of two tiles added to an accumulator.

    Args:
        a (Tile[M, K]): the left operand.
        b (Tile[K, N]): the right operand, of a's dtype.
        acc (Tile[M, N]): the accumulator; its dtype selects the accumulation (table below).
        precision (str or None, static): ``None``/``"ieee"`` or, for float32 inputs only,
            ``"tf32"``.

    Returns:
        Tile[M, N] of acc's dtype, in the tensor-core accumulator layout
        (:class:`~numba_tile.layout.MmaLayout`): keep it as the loop-carried accumulator of a
        K loop; elementwise ops work on it in place, and a store or any other op converts it
        to the blocked layout through shared memory.
    {table}

    Raises:
        TileTypingError: a non-tile operand, a rank other than 2, mismatched K or (M, N), a
            dimension below 16, mixed or unsupported input dtypes, an accumulator dtype the
            table does not list for the inputs, or a bad ``precision``.

    Examples:
        A K loop with float32 accumulation and a ReLU epilogue::

            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK)),
                             nt.load(b, (k, nt.bid(1)), (BK, BN)), acc)
            nt.store(c, nt.astype(nt.maximum(acc, 0.0), nt.float16))
    """


@op("mma")
def matmul(a, b, out_dtype=None, precision=None):
    """``a @ b`` of two tiles (also written ``a @ b`` in a kernel).

    Args:
        a (Tile[M, K]), b (Tile[K, N]): the operands, of one dtype.
        out_dtype (dtype or None, static): the result's dtype: by default float32 for
            16-bit float inputs, int32 for int8, the input dtype otherwise; float16 inputs
            may ask for ``float16`` (float16 accumulation).
        precision (str or None, static): as :func:`mma`.

    Returns:
        Tile[M, N] of ``out_dtype`` in the accumulator layout (see :func:`mma`).
    {table}

    Raises:
        TileTypingError: as :func:`mma`.

    Examples:
        Two products of 16-bit tiles, float32 results::

            s = q @ nt.transpose(k)                       # (BM, D) x (D, BN)
            o = nt.matmul(nt.astype(p, nt.float16), v)
    """


@op("mma")
def _wgmma_drain(acc, k, n):
    """Internal (inserted by the compiler after a pipelined K loop's product,
    ``typing/pipeline.py``): ``acc``; in the loop's last iteration (``k + 1 >= n``) it waits
    for the TMA boxes issued past the loop's end. Identity on values; in the interpreter,
    identity."""


@op("mma")
def _wgmma_wait(acc):
    """Internal (inserted by the compiler at the exit of a pipelined K loop whose products
    leave one ``wgmma`` group in flight, ``typing/pipeline.py``): ``acc`` once every group has
    completed. Identity on values; in the interpreter, identity."""


@op("mma")
def _ws_post(n, z=None):
    """Internal (inserted by the compiler before the first staged load of a warp-specialized
    K loop, ``typing/pipeline.py``): the loop's trip count (and the partition of the
    ``tiles(z)`` loop a persistent one runs in), for the job the loop posts to the producer
    warpgroup (``lowering/ws.py``). No value; in the interpreter, nothing."""


for _f in (mma, matmul):
    _f.__doc__ = _f.__doc__.format(table=_MMA_TABLE)

operator_op("matmul_operator", "mma", operator.matmul, 2)


# ---------------------------------------------------------------------------- shape
# Rearrangements of a tile's elements between threads go through shared memory (unless
# the register layouts happen to coincide, as for most expand_dims/reshape of 1-D tiles).


@op("shape")
def reshape(x, shape):
    """The tile's elements, in row-major order, in a new static shape.

    Args:
        x (Tile[S]): the tile.
        shape (tuple of int, static): the new shape, powers of two, with ``prod(shape) ==
            prod(S)``.

    Returns:
        Tile[shape] of x's dtype.

    Raises:
        TileTypingError: the element counts differ or the shape is not static.
    """


@op("shape")
def expand_dims(x, axis):
    """Insert an axis of extent 1 at ``axis`` (as ``numpy.expand_dims``).

    Args:
        x (Tile[S]): the tile.
        axis (int, static): position of the new axis, ``-(ndim + 1) <= axis <= ndim``.

    Returns:
        Tile of x's dtype, of rank ``ndim + 1``.
    """


@op("shape")
def broadcast_to(x, shape):
    """Broadcast a tile to a larger static shape (NumPy's rules: trailing axes aligned, each
    axis of ``x`` either 1 or equal to the target's).

    Args:
        x (Tile[S]): the tile.
        shape (tuple of int, static): the target shape, powers of two.

    Returns:
        Tile[shape] of x's dtype.

    Raises:
        TileTypingError: the shapes do not broadcast.
    """


@op("shape")
def permute(x, dims):
    """Reorder the tile's axes: axis ``k`` of the result is axis ``dims[k]`` of ``x``.

    Args:
        x (Tile[S]): the tile.
        dims (tuple of int, static): a permutation of ``range(ndim)``.

    Returns:
        Tile of x's dtype, of shape ``tuple(S[d] for d in dims)``.
    """


@op("shape")
def transpose(x):
    """Reverse the tile's axes (the matrix transpose of a 2-D tile; ``permute(x, (1, 0))``).

    Args:
        x (Tile[S]): the tile.

    Returns:
        Tile of x's dtype, of shape ``S[::-1]``.
    """


@op("shape")
def subtile(x, start, shape):
    """The static box of ``x`` of shape ``shape`` whose first element is at ``start``: NumPy's
    ``x[start[0]:start[0] + shape[0], ...]``, also written ``x[0:G]`` or ``x[:, 64:128]`` in a
    kernel (static slices: integer literals or Constants, step 1). A masked tile's valid box
    moves with it.

    Args:
        x (Tile[S]): the tile.
        start (tuple of static ints): the box's first element, one coordinate per axis,
            ``0 <= start[d]`` and ``start[d] + shape[d] <= S[d]``.
        shape (tuple of static ints): the box's shape, powers of two.

    Returns:
        Tile of x's dtype and shape ``shape``.

    Raises:
        TileTypingError: not static, not powers of two, or a box past the tile's edge.

    Examples:
        The first G rows of a 16-row product (grouped queries)::

            s = nt.mma(q, k, nt.zeros((16, BN), nt.float32))[0:G]
    """


@op("shape")
def _getitem_static(x, starts, stops, newaxes):
    """Internal (``x[a:b, None, c:d]`` with static slices and ``None``, rewritten by
    ``typing/syntax.py``): of a tile, :func:`subtile` of the box Python's slicing rules give,
    then an axis of extent 1 at each position in ``newaxes``; of a tuple, its slice; a stop
    left out is ``typing/shape.OPEN_STOP``."""


@op("shape")
def _attr_T(x):
    """Internal (``x.T``, rewritten by ``typing/syntax.py``): :func:`transpose` of a tile; a
    named tuple's field ``T``."""


@op("shape")
def item(x):
    """The one element of a 1-element tile, as a scalar: ``if nt.item(nt.max(t, 0)) < eps:
    return``. Every thread of the block gets the value of the thread that owns the element
    (through shared memory, one barrier), so a branch on it is uniform across the block.

    Args:
        x (Tile): a tile of one element (any rank: ``(1,)``, ``(1, 1)``, ...), unmasked.

    Returns:
        A scalar of x's dtype; float16 and bfloat16 come as float32 (exactly).

    Raises:
        TileTypingError: a tile of more than one element, a masked one (``filled`` it
            first: its element may be invalid), or FP8 (``astype`` first).

    Examples:
        A block-uniform early exit::

            t = nt.load(x, (nt.bid(0),), (B,), padding=0.0)
            if nt.item(nt.max(nt.abs(t), 0)) < eps:
                return
    """


from .language_unchecked import (  # noqa: E402,F401 - the unchecked ops, re-exported
    gather, scatter, atomic_cas, atomic_add, atomic_max, atomic_min, atomic_xchg)


# ---------------------------------------------------------------------- elementwise

for _name, _key, _n in [
    ("add", operator.add, 2), ("sub", operator.sub, 2), ("mul", operator.mul, 2),
    ("truediv", operator.truediv, 2), ("floordiv", operator.floordiv, 2),
    ("mod", operator.mod, 2), ("pow", operator.pow, 2),
    ("lt", operator.lt, 2), ("le", operator.le, 2), ("gt", operator.gt, 2),
    ("ge", operator.ge, 2), ("eq", operator.eq, 2), ("ne", operator.ne, 2),
    ("and_", operator.and_, 2), ("or_", operator.or_, 2), ("xor", operator.xor, 2),
    ("lshift", operator.lshift, 2), ("rshift", operator.rshift, 2),
    ("neg", operator.neg, 1), ("pos", operator.pos, 1), ("invert", operator.invert, 1),
    ("builtin_abs", abs, 1),
]:
    operator_op(_name, "elementwise", _key, _n)


@op("elementwise")
def filled(x, value):
    """The tile with its invalid elements replaced by ``value``, unmasked (as
    ``numpy.ma.filled``): every element is then valid, reductions count them all.

    A masked tile (loaded without ``padding=``) cannot flow into a variable that also holds
    an unmasked one, nor be carried around a loop, as the accumulator of a loop
    (``acc = zeros(...)`` or ``acc = load(...)``, then ``acc = acc + load(...)``): the
    accumulator would lose the elements one step left invalid. Both are compile-time
    errors; load with ``padding=0`` there, or add ``filled(t, 0)``.

    Args:
        x (Tile[S]): a tile; an unmasked one is returned as it is.
        value (scalar): the value of the invalid elements, representable in x's dtype.

    Returns:
        Tile[S] of x's dtype, unmasked.

    Raises:
        TileTypingError: ``x`` is not a tile, or ``value`` does not fit x's dtype.

    Examples:
        A running sum over a row loaded without padding::

            acc = acc + nt.filled(nt.load(x, (nt.bid(0), k), (BM, BN)), 0)
    """


@op("elementwise")
def where(cond, x, y):
    """Elementwise ``x if cond else y``.

    Args:
        cond (Tile[S] of bool): the condition.
        x, y (Tile[S] or scalar): values; promoted together (promotion table).

    Returns:
        Tile[S] of the promoted dtype.

    Examples:
        A ReLU and a clamp::

            r = nt.where(t > 0, t, 0.0)
            c = nt.where(t > hi, hi, nt.where(t < lo, lo, t))
    """


@op("elementwise")
def astype(x, dtype):
    """Cast a tile to ``dtype`` (float to int truncates toward zero, as NumPy; out of the
    integer dtype's range it saturates, and NaN gives 0, as PTX's ``cvt.rzi``, on both
    backends: NumPy's own cast is undefined there).

    Args:
        x (Tile[S]): the tile.
        dtype: a numba_tile dtype (``numba_tile.float16`` ...) or NumPy type.

    Returns:
        Tile[S] of ``dtype``.

    Examples:
        Compute in float32, store float16::

            t = nt.astype(nt.load_like(x, z), nt.float32)
            nt.store(z, nt.astype(nt.exp(t), nt.float16))
    """


@op("elementwise")
def minimum(x, y):
    """Elementwise minimum; NaN propagates (as ``numpy.minimum``).

    Args:
        x, y (Tile or scalar): the operands, broadcast and promoted as arithmetic; two
            scalars give a scalar of NumPy's promoted type (``np.result_type``).

    Returns:
        Tile of the promoted dtype, or a scalar for two scalars.
    """


@op("elementwise")
def maximum(x, y):
    """Elementwise maximum; NaN propagates (as ``numpy.maximum``).

    Args:
        x, y (Tile or scalar): the operands, broadcast and promoted as arithmetic; two
            scalars give a scalar of NumPy's promoted type (``np.result_type``).

    Returns:
        Tile of the promoted dtype, or a scalar for two scalars.
    """


@op("elementwise")
def mulhi(x, y):
    """The high half of the full product of two integers, elementwise: for int32 operands
    the upper 32 bits of their 64-bit signed product (one ``mul.wide.s32``), for int64 the
    upper 64 bits of the 128-bit signed product (``mul.hi.s64``), so ``x * y == (mulhi(x, y) << N) +
    (x * y mod 2**N)`` exactly.

    Args:
        x, y: integer tiles (or one a scalar), promoted as ``x * y`` is, to int32, int64,
            uint32 or uint64 (unsigned: the upper half of the unsigned product,
            ``mul.hi.u32`` / ``mul.hi.u64``).

    Returns:
        A tile of the promoted dtype.

    Raises:
        TileTypingError: a float or bool operand, or a promoted dtype other than int32,
            int64, uint32 and uint64.
    """


@op("elementwise")
def umulhi(x, y):
    """:func:`mulhi` of the operands' bits read as unsigned integers (``mul.wide.u32`` /
    ``mul.hi.u64``; Triton's ``tl.umulhi``): the upper word of the unsigned product, in the
    operands' dtype (for signed operands the same bits as a signed number; for uint32/uint64
    operands it equals :func:`mulhi`).

    Raises:
        TileTypingError: as :func:`mulhi`.
    """


from .language_math import (  # noqa: E402,F401 - the math ops, re-exported
    MATH_FUNCTIONS, MATH_FUNCTIONS2, PREDICATES, exp, exp2, log, log2, sqrt, rsqrt, tanh,
    sigmoid, sin, cos, floor, ceil, trunc, rint, erf, erfc, log1p, expm1, log10, cbrt, tan,
    asin, acos, atan, sinh, cosh, asinh, acosh, atanh, atan2, hypot, copysign, fdiv, isnan, isinf,
    isfinite)


@op("elementwise", name="abs")
def abs_(x):
    """Elementwise absolute value; keeps the dtype (same as builtin ``abs(tile)``).

    Args:
        x (Tile[S]): the tile.

    Returns:
        Tile[S] of x's dtype.
    """


# ------------------------------------------------------------------------- creation


@op("creation")
def full(shape, value, dtype=None):
    """A tile of ``shape`` filled with ``value``.

    Args:
        shape (tuple of int, static): powers of two.
        value (scalar): the fill value (runtime or constant).
        dtype: element dtype; by default float32 for a float ``value``, int32 for an
            int, bool for a bool.

    Returns:
        Tile[shape] of ``dtype``.

    Examples:
        The running maximum of an online softmax::

            m = nt.full((BM, 1), -float("inf"))
    """


@op("creation")
def zeros(shape, dtype=None):
    """A tile of ``shape`` of zeros.

    Args:
        shape (tuple of int, static): powers of two.
        dtype: element dtype (default float32).

    Returns:
        Tile[shape] of ``dtype``, unmasked.
    """


@op("creation")
def arange(n):
    """The 1-D tile ``[0, 1, ..., n - 1]``.

    Args:
        n (int, static): a power of two.

    Returns:
        Tile[n] of int32.
    """


from .language_random import (  # noqa: E402,F401 - the random ops, re-exported
    randint, randint4x, rand, randn)


# -------------------------------------------------------------------------- program


@op("program")
def bid(axis=0):
    """Index of this block along ``axis`` of the launch grid (the partition's tile grid).

    With one block per tile, block ``b`` handles tile number ``b`` of the grid partition (the
    kernel's first partition) in that partition's order, and ``bid(axis)`` is that tile's
    coordinate: row-major by default, Triton's grouped order with ``partition(...,
    order=grouped(G))``. For a mapped grid partition (``blocks=``) the grid is 1-D and
    ``bid(0)`` is the block's number. An unchecked kernel without partitions launched with
    ``grid=(B, H)`` (up to three axes) gets CUDA's block index along each, 0 past the
    grid's rank.

    Args:
        axis (int, static): grid axis, ``0 <= axis < ndim`` of the grid partition (``< 3``
            for an explicit grid).

    Returns:
        int64.

    Examples:
        The input tiles of the block's output tile ``(bid(0), bid(1))``::

            a_tile = nt.load(a, (nt.bid(0), k), (BM, BK))
            b_tile = nt.load(b, (k, nt.bid(1)), (BK, BN))
    """


@op("program")
def num_blocks(axis=0):
    """Number of blocks along ``axis`` of the launch grid.

    Args:
        axis (int, static): grid axis, as :func:`bid`'s.

    Returns:
        int64.
    """


# ------------------------------------------------------------------- device functions


@op("device")
def _device_call(fn, args):
    """Internal (the compiler's rewrite of ``f(x, ...)`` where ``f`` is a numba-cuda
    ``@cuda.jit(device=True)`` function, ``typing/helpers.py``): ``f`` applied to each element
    of the tiles in ``args`` (a tuple of tiles and scalars, broadcast as the elementwise
    operators broadcast); a scalar when ``args`` holds no tile. ``docs/ops.md``, "Device
    functions", gives the rules. In the interpreter, the typed IR of ``f``'s compile runs on
    each element."""
