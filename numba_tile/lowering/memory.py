"""Lowering of the memory ops: tile loads and stores between global memory and registers.

For each chunk of ``vec`` consecutive elements a thread holds (``layout.py``), a load
computes the chunk's global coordinates ``index[d] * shape[d] + coord[d]`` in 64-bit
integers, masks them against the array's extents, and reads either

* with 16-byte (or narrower, ``vec * itemsize``) vector accesses
  (``ld.global.v4.f32``, ``ld.global.v4.b32`` ...) when the tensor's specialization
  says it is legal (``vec16``: 16-byte aligned base, contiguous last axis, other
  strides and the last extent multiples of 16 bytes), one predicate per access; or
* element by element with a predicate each, for any strided or unaligned view.

A load or store at a tile from ``tiles()``, a strip or a hand-built index first asks one
uniform question of the tile (``full_tile``: does it lie wholly inside the array?). A tile
inside, every tile but the edges', is accessed without masks, each chunk at the thread's one
base offset plus a constant of the repetition; an edge tile takes the masked path below, as
does every access at a block's own tile and any fragment above 128 bytes a thread
(``_two_paths`` says what was measured). Axes of stride 0 in the specialization (a broadcast view:
``argtypes.zero_axes``) use the constant 0, so the chunks that differ only along them are one
access (a ``(seq, heads, D)`` table repeated over heads is read once per row, not per head).

A tile index built by hand (a runtime integer, not the block's own tile nor one minted by
``tiles()``) is first compared with the tile grid, ``0 <= index < ceil(extent / tile)``
along each axis, before it is multiplied by the tile's extent: ``index * tile`` wraps
modulo 2**64 (``2**61 * 8 == 0``), and a wrapped coordinate would pass the element masks
and land inside the array. Indices from the block's id or from ``tiles()`` are below the
grid of an array in memory and cannot wrap.

Loads from read-only tensors are marked ``!invariant.load``: the launch has proven no
argument of the kernel writes them, so NVVM may use the non-coherent read-only path
(``ld.global.nc``). Loads of a partition or of an unchecked kernel's ``Mutable`` array,
which the kernel itself may write, are ordinary coherent loads. Stores go only to the
block's own partition tile, are masked the same way, and are skipped by replicating
threads.

Ordering within the block: two accesses of one partition tile in different register
layouts touch an element from two threads, so in a safe kernel each load and store of a
partition the ownership pass lists in ``CompileContext.ordered_partitions`` starts with
a block barrier (``bar.sync 0``, which also orders the block's global-memory accesses),
before any per-thread predicate of its lowering. Every thread reaches it: a safe kernel's
control flow depends only on scalars and block ids, the same in all threads of a block.
Unchecked kernels get no such barrier (they may branch per thread): they order their own
accesses.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils, types

from .. import compiler_context
from .._registry import lowering_rule
from ..layout import MmaLayout
from ..typing.types import PartitionIndexType, PartitionType, TensorType, TileType
from ..typing.common import make_tile
from .common import (I1, I64, block_index, chunk_coords, const_i64, convert,
                     fragment_elements, is_storing_thread, make_fragment, padding_element,
                     scalar_to, thread_index, tile_extents, umin)
from .layouts import barrier
from .tile_order import tile_coords
from .views import (ArrayView, _grid_mask, _reg_to_storage, _storage_to_reg, hand_built_axes,
                    load_extents, tile_in_grid)

#: a load or store whose fragment holds more bytes a thread than this takes the masked path
#: alone:
#: both paths' values are live where they merge, and ptxas spilled with two paths where it
#: did not with one: 236 bytes at a (64, 128) int64 gather over 4 warps (512 bytes a
#: thread), 24 bytes at a (64, 128) float32 load beside it (256 bytes a thread);
#: tests/compile/test_conversion_sizes.py. The kernels measured faster with two paths (rope,
#: cross entropy) load at most 128.
_TWO_PATH_BYTES = 128


def own_tile_index(builder, view: ArrayView, tile_shape):
    """The block's tile of a partition: tile number ``ctaid.x`` in the partition's order
    (row-major, or grouped: ``tile_order.tile_coords``)."""
    lin = block_index(builder)
    if view.ty.ndim == 1:
        return [lin]
    from .. import compiler_context
    # a block index is below 2**32: 32-bit divisions, for now where wgmma is forced (a 64-bit
    # one is a call, which serializes wgmma); everywhere once run on the GPU
    # 32-bit divisions where the kernel has a wgmma product (a 64-bit division is a call,
    # which makes ptxas serialize the wgmmas); other kernels keep their measured code
    small = bool(getattr(compiler_context.current(), "uses_wgmma", False))
    return tile_coords(builder, view, tile_shape, view.ty.order, lin, small)


def order_access(builder, ty):
    """A block barrier before an access of partition ``ty`` when the kernel needs its
    accesses ordered (``CompileContext.orders``); nothing for tensors and in unchecked
    kernels. Call it at the op itself, before any per-thread predicate."""
    if isinstance(ty, PartitionType) and compiler_context.current().orders(ty.param):
        barrier(builder)


def _masked_load(builder, mask, ptr, fallback, align, invariant):
    if isinstance(mask, ir.Constant) and mask.constant == 1:
        ld = builder.load(ptr, align=align)
        if invariant:
            ld.set_metadata("invariant.load", builder.module.add_metadata([]))
        return ld
    entry = builder.block
    with builder.if_then(mask, likely=True):
        then_block = builder.block
        ld = builder.load(ptr, align=align)
        if invariant:
            ld.set_metadata("invariant.load", builder.module.add_metadata([]))
    phi = builder.phi(ptr.type.pointee)
    phi.add_incoming(ld, then_block)
    phi.add_incoming(fallback, entry)
    return phi


def _and_all(builder, bits):
    out = ir.Constant(I1, 1)
    for b in bits:
        out = b if (isinstance(out, ir.Constant) and out.constant == 1) else builder.and_(out, b)
    return out


def _chunk_geometry(builder, view, index, tile_shape, layout, rep, limits=None):
    """Global coordinates of the chunk's first element, the mask of all axes but the last
    (against ``limits``, default the array's extents), and the element offset of the chunk
    start along all axes but the last."""
    limits = view.shape if limits is None else limits
    coords = chunk_coords(builder, layout, rep)
    g = [builder.add(builder.mul(index[d], const_i64(tile_shape[d])), coords[d])
         for d in range(view.ty.ndim)]
    outer_mask = [builder.icmp_unsigned("<", g[d], limits[d]) for d in range(view.ty.ndim - 1)]
    base = const_i64(0)
    for d in range(view.ty.ndim - 1):
        base = builder.add(base, builder.mul(g[d], view.strides[d]))
    return g, outer_mask, base


def emit_load(context, builder, view: ArrayView, index, tile: TileType, pad, in_grid=None,
              own=False):
    """Load tile ``index`` (list of i64) of ``tile.shape`` from ``view`` into a fragment.

    A tile wholly inside the array (:func:`full_tile`: every tile but the edges') is read
    without masks, each chunk at the thread's one base offset plus a constant of the
    repetition (:func:`_chunk_offsets`); an edge tile, or one at an index outside the grid,
    chunk by chunk, each access masked. The branch is uniform: the index is one value for
    the block. Where :func:`_two_paths` says no (a block's own tile, a large fragment), the
    masked path alone.

    Args:
        pad: the padding as a register element of the tile's dtype.
        in_grid: from :func:`tile_in_grid` (a hand-built index): per axis an i1 that the
            index lies in the tile grid, or None; an index outside reads nothing (all
            padding, and for a masked tile extent 0 along that axis).
        own: the index is the block's own tile (:func:`_two_paths`).
    """
    layout, dt = tile.layout, tile.dtype
    # only a read-only tensor is invariant: a partition or a Mutable array may be written
    # by this very kernel, and a non-coherent or hoisted load would miss that write
    invariant = isinstance(view.ty, TensorType) and not view.ty.writable
    lanes = min(layout.vec, 16 // view.itemsize) if view.ty.vec16 else 1
    pad_storage = _reg_to_storage(builder, pad, dt, view.storage_llvm)
    if not _two_paths(layout, view, own):
        elems = _load_masked(builder, view, index, tile, pad_storage, lanes, invariant,
                             _grid_mask(in_grid), unpack=True)
        extents = load_extents(builder, view, index, tile.shape, in_grid) if tile.masked else None
        return make_fragment(builder, tile, elems, extents)
    with builder.if_else(full_tile(builder, view, index, tile.shape), likely=True) \
            as (whole, edge):
        with whole:
            fast, seen = [], {}
            for rep, off in enumerate(_chunk_offsets(builder, view, index, tile.shape, layout)):
                key = _address_key(view, layout, rep)
                if key not in seen:        # chunks apart only along stride-0 axes: one read
                    seen[key] = [v for v, _pad in _read_chunk_raw(
                        builder, view, off, layout.vec, lanes, pad_storage, invariant,
                        lambda a: None)]
                fast.append(seen[key])
            fast_block = builder.block
        with edge:
            slow = _load_masked(builder, view, index, tile, pad_storage, lanes, invariant,
                                _grid_mask(in_grid))
            slow_block = builder.block
    merged, chunks = {}, []
    for f_chunk, s_chunk in zip(fast, slow):   # every phi first, then the unpacking
        raws = []
        for a, b in zip(f_chunk, s_chunk):
            if (id(a), id(b)) not in merged:   # one merge per distinct pair of reads
                phi = builder.phi(a.type)
                phi.add_incoming(a, fast_block)
                phi.add_incoming(b, slow_block)
                merged[id(a), id(b)] = phi
            raws.append(merged[id(a), id(b)])
        chunks.append(raws)
    elems = []
    for raws in chunks:
        elems += _unpack_chunk(builder, view, raws, lanes, dt)
    extents = load_extents(builder, view, index, tile.shape, in_grid) if tile.masked else None
    return make_fragment(builder, tile, elems, extents)


def _two_paths(layout, view, own: bool) -> bool:
    """Whether an access takes a path for a tile inside the array beside the masked one: at a
    tile index from ``tiles()``, a strip or the kernel's hand (a block that walks several
    tiles), with a fragment of at most :data:`_TWO_PATH_BYTES` a thread. A block's own tile
    (``own``: one tile a block, an elementwise kernel) keeps the one masked path: measured on
    the H200 (2026-12-02), the SwiGLU example in bfloat16 ran at 0.99-1.00x Triton
    with one path and 0.90x with two (two paths for loads alone 0.89x, stores alone
    0.91-0.93x), where rope and cross entropy, whose tiles come from strips, gained 2-10%."""
    return not own and layout.elems_per_thread * view.itemsize <= _TWO_PATH_BYTES


def full_tile(builder, view: ArrayView, index, tile_shape):
    """i1: the tile at ``index`` lies wholly inside the array, ``index[d] < extent[d] >>
    log2(tile[d])`` on every axis. Unsigned: a negative index (a hand-built one, or an index
    not minted by ``tiles()``, which reads as -1) is a huge one and fails, and a true
    compare bounds ``index * tile + tile <= extent < 2**63``, so nothing wraps."""
    bits = [builder.icmp_unsigned("<", index[d], builder.lshr(view.shape[d],
                                                              const_i64(s.bit_length() - 1)))
            for d, s in enumerate(tile_shape)]
    return _and_all(builder, bits)


def _rep_coords(layout, rep: int) -> list:
    """``chunk_coords(rep) - chunk_coords(0)``: the constant per axis that repetition ``rep``
    adds to the thread's coordinates (the two share no bit: ``common.chunk_coords``)."""
    rep_lin = rep * layout.threads_used * layout.vec
    out = []
    for s in reversed(layout.shape):
        out.append(rep_lin & (s - 1))
        rep_lin >>= s.bit_length() - 1
    return list(reversed(out))


def _chunk_offsets(builder, view: ArrayView, index, tile_shape, layout) -> list:
    """Per repetition, the element offset of this thread's chunk of the tile at ``index``:
    one base, ``sum((index * tile + thread coordinate) * stride)``, plus a constant multiple
    of the strides per repetition (a multiple NVVM hoists out of a loop over tiles)."""
    c0 = chunk_coords(builder, layout, 0)
    base = const_i64(0)
    for d, s in enumerate(tile_shape):
        g = builder.add(builder.mul(index[d], const_i64(s)), c0[d])
        base = builder.add(base, builder.mul(g, view.strides[d]))
    offs = []
    for rep in range(layout.reps):
        off = base
        for d, k in enumerate(_rep_coords(layout, rep)):
            if k:
                off = builder.add(off, builder.mul(const_i64(k), view.strides[d]))
        offs.append(off)
    return offs


def _read_chunk(builder, view, off, vec, lanes, pad_storage, dt, invariant, mask_of):
    """The ``vec`` register elements of one chunk starting at element offset ``off``, read
    ``lanes`` elements per access (``lanes > 1``: vec16, the last stride is 1); access ``a``
    is predicated on ``mask_of(a)`` (None: unconditional)."""
    raws = _read_chunk_raw(builder, view, off, vec, lanes, pad_storage, invariant, mask_of)
    return _unpack_chunk(builder, view, [r for r, _fallback in raws], lanes, dt)


def _read_chunk_raw(builder, view, off, vec, lanes, pad_storage, invariant, mask_of) -> list:
    """:func:`_read_chunk`'s accesses as read, ``(value, padding value)`` per access: 32-bit
    words for sub-word elements, a vector of elements, or one element. Kept packed until the
    paths of :func:`emit_load` merge: a merge of unpacked 16-bit elements takes a register
    each, of words one per two elements."""
    last = view.ty.ndim - 1
    out = []
    for a in range(vec // lanes):
        mask = mask_of(a)
        mask = ir.Constant(I1, 1) if mask is None else mask
        if lanes > 1:
            ptr = view.global_ptr(builder, builder.add(off, const_i64(a * lanes)) if a else off,
                                  lanes)
            vty = ptr.type.pointee
            fallback = ir.Constant(vty, [pad_storage] * lanes) \
                if isinstance(pad_storage, ir.Constant) else _splat(builder, pad_storage, vty)
            wptr = view.word_ptr(builder, ptr, lanes)
            if wptr is not None:               # sub-word elements: one access of words
                ptr, fallback = wptr, builder.bitcast(fallback, wptr.type.pointee)
            out.append((_masked_load(builder, mask, ptr, fallback, lanes * view.itemsize,
                                     invariant), fallback))
        else:
            o = builder.add(off, builder.mul(const_i64(a), view.strides[last])) if a else off
            ptr = view.global_ptr(builder, o, 1)
            out.append((_masked_load(builder, mask, ptr, pad_storage, view.itemsize, invariant),
                        pad_storage))
    return out


def _unpack_chunk(builder, view, raws, lanes, dt) -> list:
    """The register elements of a chunk's accesses as :func:`_read_chunk_raw` read them."""
    elems = []
    for raw in raws:
        if lanes == 1:
            elems.append(_storage_to_reg(builder, raw, dt))
            continue
        if isinstance(raw.type, ir.VectorType) and raw.type.element == view.storage_llvm:
            values = [builder.extract_element(raw, ir.Constant(ir.IntType(32), j))
                      for j in range(lanes)]
        else:                                  # words of sub-word elements
            values = _unpack_words(builder, raw, view.storage_llvm, lanes)
        elems += [_storage_to_reg(builder, v, dt) for v in values]
    return elems


def _address_key(view, layout, rep: int) -> tuple:
    """What sets the address of chunk ``rep`` beyond the thread's base: its repetition's
    coordinates along the axes whose stride is not 0 in this specialization (the last axis
    always counts). Two chunks of one key read the same elements."""
    zero = set(view.zero) - {view.ty.ndim - 1}
    return tuple(k for d, k in enumerate(_rep_coords(layout, rep)) if d not in zero)


def _load_masked(builder, view, index, tile, pad_storage, lanes, invariant, grid_mask,
                 unpack=False):
    """:func:`emit_load`'s edge path, as :func:`_read_chunk_raw` reads (one list of accesses
    per repetition; with ``unpack``, the register elements, each chunk unpacked right after
    its reads, the order ptxas assembles large tiles best in): every access masked against the array's extents (and the hand-built
    index's grid bits ``grid_mask``).

    Along an axis of stride 0 (not the last) a chunk's address does not depend on its
    coordinate, and the chunks of one :func:`_address_key` share one access. Where the tile's
    extent divides the axis' (the key's power-of-two divisor), the tile lies wholly inside or
    wholly outside along it: one uniform compare, ``index < extent / tile``, masks the shared
    access. Elsewhere the access is masked on the axis being non-empty, and each chunk's own
    compare selects between it and the padding (no address outside the array is read either
    way)."""
    layout = tile.layout
    last = view.ty.ndim - 1
    shift = {d: tile.shape[d].bit_length() - 1 for d in view.zero}
    whole = [d for d, div in view.zero.items()
             if d != last and div and div % tile.shape[d] == 0]
    ragged = [d for d in view.zero if d != last and d not in whole]
    shared = [builder.icmp_unsigned("<", index[d], builder.lshr(view.shape[d],
                                                                const_i64(shift[d])))
              for d in whole]
    shared += [builder.icmp_unsigned("!=", view.shape[d], const_i64(0)) for d in ragged]
    out, seen = [], {}
    for rep in range(layout.reps):
        g, outer_mask, base = _chunk_geometry(builder, view, index, tile.shape, layout, rep)
        key = _address_key(view, layout, rep)
        if key not in seen:
            off = builder.add(base, builder.mul(g[last], view.strides[last]))
            addr_mask = [m for d, m in enumerate(outer_mask)
                         if d not in whole and d not in ragged] + shared

            def mask_of(a, g=g, addr_mask=addr_mask):
                col = builder.add(g[last], const_i64(a * lanes))
                return _and_all(builder, grid_mask + addr_mask
                                + [builder.icmp_unsigned("<", col, view.shape[last])])
            seen[key] = _read_chunk_raw(builder, view, off, layout.vec, lanes, pad_storage,
                                        invariant, mask_of)
        chunk = seen[key]
        if ragged:
            inside = _and_all(builder, [outer_mask[d] for d in ragged])
            chunk = [(builder.select(inside, v, pad), pad) for v, pad in chunk]
        raws = [v for v, _pad in chunk]
        if unpack:
            out += _unpack_chunk(builder, view, raws, lanes, tile.dtype)
        else:
            out.append(raws)
    return out


def _unpack_words(builder, words, storage, lanes):
    """The ``lanes`` sub-word elements (LLVM type ``storage``) held in ``words`` (one 32-bit
    word or a vector of them, little-endian), by shifts and truncations: the inverse of
    :func:`_pack_words`. A bitcast of the words to a vector of 16-bit elements hides the halves
    from NVPTX's folding (each became a ``mov.b32`` to 16-bit registers, then a ``cvt.u32.u16``
    and a ``shl`` in a bfloat16 -> float32 conversion); a shifted word folds into the
    conversion (``shl``/``and`` of the word: one instruction per element)."""
    i32 = ir.IntType(32)
    per = 32 // storage.width
    out = []
    for lane in range(lanes):
        w = words if isinstance(words.type, ir.IntType) \
            else builder.extract_element(words, ir.Constant(i32, lane // per))
        j = lane % per
        if j:
            w = builder.lshr(w, ir.Constant(i32, storage.width * j))
        out.append(builder.trunc(w, storage))
    return out


def _pack_words(builder, vec, wty):
    """The sub-word elements of ``vec`` packed into 32-bit words (little-endian) by shifts and
    ors: a plain bitcast of the vector lets NVVM split the store into 8-byte halves again."""
    count = vec.type.count
    bits = 32 * (wty.count if isinstance(wty, ir.VectorType) else 1) // count
    ety, i32 = ir.IntType(bits), ir.IntType(32)
    per = 32 // bits
    words = []
    for w in range(count // per):
        word = ir.Constant(i32, 0)
        for j in range(per):
            e = builder.extract_element(vec, ir.Constant(i32, w * per + j))
            e = builder.zext(builder.bitcast(e, ety), i32)
            word = builder.or_(word, builder.shl(e, ir.Constant(i32, bits * j)) if j else e)
        words.append(word)
    if not isinstance(wty, ir.VectorType):
        return words[0]
    out = ir.Constant(wty, ir.Undefined)
    for w, word in enumerate(words):
        out = builder.insert_element(out, word, ir.Constant(i32, w))
    return out


def _splat(builder, scalar, vty):
    out = ir.Constant(vty, ir.Undefined)
    for i in range(vty.count):
        out = builder.insert_element(out, scalar, ir.Constant(ir.IntType(32), i))
    return out


def emit_store(context, builder, view: ArrayView, index, tile: TileType, frag_elems,
               extents=None, in_grid=None, own=False):
    """Store register elements ``frag_elems`` (tile dtype == view dtype) to tile ``index``;
    with ``extents`` (a masked tile's), only its valid elements; with ``in_grid`` (from
    :func:`tile_in_grid`), nothing when the index lies outside the tile grid. A tile wholly
    inside the array whose extents are all valid goes out without masks (as
    :func:`emit_load`), an edge tile access by access, masked."""
    layout, dt = tile.layout, tile.dtype
    if isinstance(layout, MmaLayout):          # a wgmma accumulator (_registry._argument_type)
        return _emit_store_mma(builder, view, index, tile, frag_elems, extents, in_grid)
    lanes = min(layout.vec, 16 // view.itemsize) if view.ty.vec16 else 1
    owner = is_storing_thread(builder, layout)
    if not _two_paths(layout, view, own):
        return _store_masked(builder, view, index, tile, frag_elems, extents, in_grid, owner)
    full = full_tile(builder, view, index, tile.shape)
    if extents is not None:
        full = _and_all(builder, [full] + [builder.icmp_signed("==", extents[d],
                                                               const_i64(tile.shape[d]))
                                           for d in range(view.ty.ndim)])
    with builder.if_else(full, likely=True) as (whole, edge):
        with whole:
            offs = _chunk_offsets(builder, view, index, tile.shape, layout)
            with builder.if_then(owner, likely=True):
                for rep, off in enumerate(offs):
                    _write_chunk(builder, view, off, frag_elems[rep * layout.vec:], layout.vec,
                                 lanes, dt, lambda a: None)
        with edge:
            _store_masked(builder, view, index, tile, frag_elems, extents, in_grid, owner)


def _write_chunk(builder, view, off, elems, vec, lanes, dt, mask_of):
    """Store the first ``vec`` of ``elems`` (register elements) as one chunk at element offset
    ``off``, ``lanes`` per access (``lanes > 1``: vec16), access ``a`` predicated on
    ``mask_of(a)`` (None: unconditional)."""
    last = view.ty.ndim - 1
    for a in range(vec // lanes):
        mask = mask_of(a)
        if lanes > 1:
            ptr = view.global_ptr(builder, builder.add(off, const_i64(a * lanes)) if a else off,
                                  lanes)
            val = ir.Constant(ptr.type.pointee, ir.Undefined)
            for lane in range(lanes):
                val = builder.insert_element(
                    val, _reg_to_storage(builder, elems[a * lanes + lane], dt, view.storage_llvm),
                    ir.Constant(ir.IntType(32), lane))
            wptr = view.word_ptr(builder, ptr, lanes)
            if wptr is not None:               # sub-word elements: one access of words
                val, ptr = _pack_words(builder, val, wptr.type.pointee), wptr
            align = lanes * view.itemsize
        else:
            o = builder.add(off, builder.mul(const_i64(a), view.strides[last])) if a else off
            ptr = view.global_ptr(builder, o, 1)
            val = _reg_to_storage(builder, elems[a], dt, view.storage_llvm)
            align = view.itemsize
        if mask is None:
            builder.store(val, ptr, align=align)
        else:
            with builder.if_then(mask, likely=True):
                builder.store(val, ptr, align=align)


def _store_masked(builder, view, index, tile, frag_elems, extents, in_grid, owner):
    """:func:`emit_store`'s edge path: every access masked against the array's extents, a
    masked tile's valid extents, the hand-built index's grid bits and the owning thread."""
    layout, dt = tile.layout, tile.dtype
    grid_mask = _grid_mask(in_grid)
    last = view.ty.ndim - 1
    lanes = min(layout.vec, 16 // view.itemsize) if view.ty.vec16 else 1
    if extents is not None and tile.align % lanes:
        lanes = 1     # the valid extent may end inside a chunk: element by element
    limits = view.shape
    if extents is not None:
        limits = [umin(builder, view.shape[d], builder.add(
            builder.mul(index[d], const_i64(tile.shape[d])), extents[d]))
            for d in range(view.ty.ndim)]
    for rep in range(layout.reps):
        g, outer_mask, base = _chunk_geometry(builder, view, index, tile.shape, layout, rep,
                                              limits)
        off = builder.add(base, builder.mul(g[last], view.strides[last]))

        def mask_of(a, g=g, outer_mask=outer_mask):
            col = builder.add(g[last], const_i64(a * lanes))
            return _and_all(builder, [owner] + grid_mask + outer_mask
                            + [builder.icmp_unsigned("<", col, limits[last])])
        _write_chunk(builder, view, off, frag_elems[rep * layout.vec:], layout.vec, lanes, dt,
                     mask_of)


def _emit_store_mma(builder, view: ArrayView, index, tile: TileType, frag_elems, extents,
                    in_grid):
    """A ``wgmma`` accumulator stored from its fragments, with no layout conversion (no
    shared memory, no barrier; an ``mma.sync`` accumulator still converts: stored this way,
    a 128 x 128 tile over 4 warps spilled): slots ``2 j`` and ``2 j + 1`` of a thread are
    one row's columns ``c`` and ``c + 1`` (``c`` even; ``layouts.mma_slots``), written as one
    two-element vector where the array allows 16-byte accesses (``vec16``: then ``c`` even
    keeps the pair aligned) and both lie inside, else element by element, each masked
    against the array's extents (and a masked tile's valid extents)."""
    from .layouts import mma_slots
    dt = tile.dtype
    limits = view.shape
    if extents is not None:
        limits = [umin(builder, view.shape[d], builder.add(
            builder.mul(index[d], const_i64(tile.shape[d])), extents[d])) for d in range(2)]
    base_mask = [is_storing_thread(builder, tile.layout)] + _grid_mask(in_grid)
    r0 = builder.mul(index[0], const_i64(tile.shape[0]))
    c0 = builder.mul(index[1], const_i64(tile.shape[1]))
    slots = mma_slots(builder, tile.layout)
    pair = view.ty.vec16
    if pair and view.itemsize == 2 and tile.layout.atoms[1] % 4 == 0:
        # a tile wholly inside the array (every tile but the edges'; the same for the whole
        # block, so the quad's shuffles run in full warps) goes out in 16-byte row segments;
        # an edge tile pair by pair, masked (one path each: the masks do not stay live
        # across the shuffles)
        inside = _and_all(builder, base_mask + [
            builder.icmp_unsigned("<=", builder.add(r0, const_i64(tile.shape[0])), limits[0]),
            builder.icmp_unsigned("<=", builder.add(c0, const_i64(tile.shape[1])), limits[1])])
        with builder.if_else(inside, likely=True) as (whole, edge):
            with whole:
                _store_mma_rows_of_16_bytes(builder, view, tile, frag_elems, slots, r0, c0)
            with edge:
                _store_mma_pairs(builder, view, tile, frag_elems, slots, r0, c0, limits,
                                 base_mask, pair)
        return
    _store_mma_pairs(builder, view, tile, frag_elems, slots, r0, c0, limits, base_mask, pair)


def _store_mma_pairs(builder, view, tile, frag_elems, slots, r0, c0, limits, base_mask, pair):
    """:func:`_emit_store_mma`'s column pairs, each masked."""
    dt = tile.dtype
    for j in range(0, len(slots), 2):
        (row, col), _linear = slots[j]
        g_row, g_col = builder.add(r0, row), builder.add(c0, col)
        row_ok = builder.icmp_unsigned("<", g_row, limits[0])
        ok0 = _and_all(builder, base_mask + [row_ok, builder.icmp_unsigned("<", g_col, limits[1])])
        g_col1 = builder.add(g_col, const_i64(1))
        ok1 = _and_all(builder, base_mask + [row_ok, builder.icmp_unsigned("<", g_col1, limits[1])])
        v0 = _reg_to_storage(builder, frag_elems[j], dt, view.storage_llvm)
        v1 = _reg_to_storage(builder, frag_elems[j + 1], dt, view.storage_llvm)
        row_off = builder.mul(g_row, view.strides[0])
        if pair:                                  # vec16: the last stride is 1
            ptr = view.global_ptr(builder, builder.add(row_off, g_col), 2)
            vec = ir.Constant(ptr.type.pointee, ir.Undefined)
            vec = builder.insert_element(vec, v0, ir.Constant(ir.IntType(32), 0))
            vec = builder.insert_element(vec, v1, ir.Constant(ir.IntType(32), 1))
            with builder.if_else(ok1, likely=True) as (both, edge):
                with both:
                    builder.store(vec, ptr, align=2 * view.itemsize)
                with edge:
                    with builder.if_then(ok0):
                        builder.store(v0, view.global_ptr(builder, builder.add(row_off, g_col), 1),
                                      align=view.itemsize)
            continue
        for v, gc, ok in ((v0, g_col, ok0), (v1, g_col1, ok1)):
            off = builder.add(row_off, builder.mul(gc, view.strides[1]))
            with builder.if_then(ok, likely=True):
                builder.store(v, view.global_ptr(builder, off, 1), align=view.itemsize)


def _quad_transpose(builder, words, q):
    """The 4 x 4 transpose of 32-bit ``words`` across the 4 lanes of a quad (lane ``q`` =
    ``lane % 4``, i32): lane ``q`` ends with word ``q`` of lanes 0, 1, 2, 3, in that order.
    Two butterfly stages (``shfl.sync.bfly`` by 2, then by 1), two shuffles each."""
    from .reduction import _shfl_bfly
    i32 = ir.IntType(32)
    r = list(words)
    for bit, (keep, swap) in ((2, ((0, 1), (2, 3))), (1, ((0, 2), (1, 3)))):
        hi = builder.icmp_unsigned("!=", builder.and_(q, ir.Constant(i32, bit)),
                                   ir.Constant(i32, 0))
        # a lane of the low half sends its `swap` words and keeps `keep`; the high half
        # the other way round
        sent = [builder.select(hi, r[k], r[s]) for k, s in zip(keep, swap)]
        got = [_shfl_bfly(builder, v, bit) for v in sent]
        out = list(r)
        for (k, s_), g in zip(zip(keep, swap), got):
            out[s_] = builder.select(hi, r[s_], g)
            out[k] = builder.select(hi, g, r[k])
        r = out
    return r


def _store_mma_rows_of_16_bytes(builder, view, tile, frag_elems, slots, r0, c0):
    """A 16-bit accumulator tile wholly inside the array stored as 16-byte row segments: in
    each group of 4 atoms (32 columns) a quad's lanes hold one row's column pairs
    ``8 i + 2 q`` of atom ``i``; a 4 x 4 transpose of the pairs across the quad
    (:func:`_quad_transpose`) gives lane ``q`` the 8 consecutive columns ``8 q .. 8 q + 7``
    of atom ``q``: one ``st.global.v4`` (the array allows 16-byte accesses, ``vec16``). A
    warp's store covers 8 rows x 64 bytes (whole 32-byte sectors) instead of 8 rows x 16
    bytes: measured on the H200, 128 x 256 bfloat16 tiles at 4096^3, 680 -> 742 TFLOP/s."""
    i32 = ir.IntType(32)
    dt = tile.dtype
    am, an = tile.layout.atoms
    storage = view.storage_llvm
    lane = builder.trunc(builder.and_(thread_index(builder), const_i64(31)), i32)
    q = builder.and_(lane, ir.Constant(i32, 3))
    q64 = builder.zext(q, I64)
    v2 = ir.VectorType(storage, 2)
    # every pair packed first (half the accumulator's registers), then group by group
    packed = []
    for k in range(0, len(frag_elems), 2):
        vec = ir.Constant(v2, ir.Undefined)
        for e in range(2):
            val = _reg_to_storage(builder, frag_elems[k + e], dt, storage)
            vec = builder.insert_element(vec, val, ir.Constant(i32, e))
        packed.append(builder.bitcast(vec, i32))
    for im in range(am):
        for h in range(2):
            for t in range(an // 4):
                words = [packed[(4 * (im * an + 4 * t + i) + 2 * h) // 2] for i in range(4)]
                got = _quad_transpose(builder, words, q)
                (row, col), _lin = slots[4 * (im * an + 4 * t) + 2 * h]
                # col = the warp's first column + 32 t + 2 q: this lane's segment starts at
                # the warp's first column + 32 t + 8 q
                col8 = builder.add(builder.sub(col, builder.shl(q64, const_i64(1))),
                                   builder.shl(q64, const_i64(3)))
                g_row, g_col = builder.add(r0, row), builder.add(c0, col8)
                row_off = builder.mul(g_row, view.strides[0])
                v4 = ir.VectorType(i32, 4)
                vec = ir.Constant(v4, ir.Undefined)
                for e, w in enumerate(got):
                    vec = builder.insert_element(vec, w, ir.Constant(i32, e))
                # as 4 words: one 16-byte access (8 halves would be two)
                ptr = builder.bitcast(view.global_ptr(builder, builder.add(row_off, g_col), 8),
                                      v4.as_pointer(1))
                builder.store(vec, ptr, align=16)


def _index_values(context, builder, ty, val, ndim):
    if isinstance(ty, PartitionIndexType):
        idx = cgutils.create_struct_proxy(ty)(context, builder, value=val)
        # an index not minted by tiles() (a zero-initialized variable) points outside the
        # array: every access at it is masked off
        valid = builder.trunc(idx.valid, I1) if idx.valid.type != I1 else idx.valid
        return [builder.select(valid, c, const_i64(-1))
                for c in cgutils.unpack_tuple(builder, idx.coords, ndim)]
    if isinstance(ty, types.BaseTuple):
        vals = cgutils.unpack_tuple(builder, val, ndim)
        return [context.cast(builder, v, t, types.int64) for v, t in zip(vals, ty.types)]
    return [context.cast(builder, val, ty, types.int64)]


@lowering_rule("load")
def lower_load(context, builder, sig, args):
    xty, idxty, _shape, padty = sig.args
    x, idx, _s, pad = args
    tile = sig.return_type
    order_access(builder, xty)
    view = ArrayView(context, builder, xty, x)
    in_grid = None
    own = isinstance(xty, PartitionType) and isinstance(idxty, (types.Omitted, types.NoneType))
    if own:
        index = own_tile_index(builder, view, xty.tile_shape)
    else:
        index = _index_values(context, builder, idxty, idx, xty.ndim)
        if getattr(sig, "stage", None) is not None:     # typing/pipeline.py
            from .pipeline import lower_staged_load
            return lower_staged_load(context, builder, sig, view, index, tile, padty, pad)
        in_grid = tile_in_grid(builder, view, index, tile.shape,
                               hand_built_axes(idxty, xty.ndim, tile.shape))
    padv = padding_element(context, builder, padty, pad, tile.dtype)
    return emit_load(context, builder, view, index, tile, padv, in_grid, own)


def _load_at_elems(builder, view, origin, tile, pad_storage, dt, invariant, lanes):
    """The register elements of the tile at element coordinates ``origin`` (i64 list), read
    ``lanes`` elements per access (a vector access needs ``origin[-1] % lanes == 0``)."""
    layout = tile.layout
    last = view.ty.ndim - 1
    elems = []
    for rep in range(layout.reps):
        coords = chunk_coords(builder, layout, rep)
        g = [builder.add(origin[d], coords[d]) for d in range(view.ty.ndim)]
        # a negative coordinate reads as a huge unsigned one: masked like one past the end
        outer = [builder.icmp_unsigned("<", g[d], view.shape[d]) for d in range(last)]
        off = const_i64(0)
        for d in range(last + 1):
            off = builder.add(off, builder.mul(g[d], view.strides[d]))

        def mask_of(a, g=g, outer=outer):
            col = builder.add(g[last], const_i64(a * lanes))
            return _and_all(builder, outer + [builder.icmp_unsigned("<", col, view.shape[last])])
        elems += _read_chunk(builder, view, off, layout.vec, lanes, pad_storage, dt, invariant,
                             mask_of)
    return elems


@lowering_rule("load_at")
def lower_load_at(context, builder, sig, args):
    """A tile at element coordinates: element by element, or, for a tensor whose
    specialization allows 16-byte accesses (``vec16``), by vectors when the last coordinate
    is a multiple of the vector's elements at run time (a uniform branch: the offset is one
    value for the block), element by element otherwise."""
    xty, offty, _shape, padty = sig.args
    x, off, _s, pad = args
    tile = sig.return_type
    order_access(builder, xty)
    view = ArrayView(context, builder, xty, x)
    origin = _index_values(context, builder, offty, off, xty.ndim)
    if getattr(sig, "stage", None) is not None:     # typing/pipeline.py
        from .pipeline import lower_staged_load
        return lower_staged_load(context, builder, sig, view, origin, tile, padty, pad)
    dt = tile.dtype
    invariant = isinstance(view.ty, TensorType) and not view.ty.writable
    padv = padding_element(context, builder, padty, pad, dt)
    pad_storage = _reg_to_storage(builder, padv, dt, view.storage_llvm)
    lanes = min(tile.layout.vec, 16 // view.itemsize) if view.ty.vec16 else 1
    if lanes == 1:
        elems = _load_at_elems(builder, view, origin, tile, pad_storage, dt, invariant, 1)
        return make_fragment(builder, tile, elems, None)
    aligned = builder.icmp_unsigned(
        "==", builder.and_(origin[-1], const_i64(lanes - 1)), const_i64(0))
    with builder.if_else(aligned, likely=True) as (then, otherwise):
        with then:
            vec_elems = _load_at_elems(builder, view, origin, tile, pad_storage, dt, invariant,
                                       lanes)
            vec_block = builder.block
        with otherwise:
            one_elems = _load_at_elems(builder, view, origin, tile, pad_storage, dt, invariant,
                                       1)
            one_block = builder.block
    elems = []
    for a, b in zip(vec_elems, one_elems):
        phi = builder.phi(a.type)
        phi.add_incoming(a, vec_block)
        phi.add_incoming(b, one_block)
        elems.append(phi)
    return make_fragment(builder, tile, elems, None)


@lowering_rule("load_like")
def lower_load_like(context, builder, sig, args):
    xty, likety, padty, idxty = sig.args
    x, like, pad, idx = args
    tile = sig.return_type
    order_access(builder, xty)
    view = ArrayView(context, builder, xty, x)
    own = not isinstance(idxty, PartitionIndexType)
    if own:
        like_view = ArrayView(context, builder, likety, like)
        index = own_tile_index(builder, like_view, likety.tile_shape)
    else:
        index = _index_values(context, builder, idxty, idx, xty.ndim)
    padv = padding_element(context, builder, padty, pad, tile.dtype)
    return emit_load(context, builder, view, index, tile, padv, own=own)


@lowering_rule("store")
def lower_store(context, builder, sig, args):
    zty, tty, idxty = sig.args
    z, t, idx = args
    order_access(builder, zty)
    view = ArrayView(context, builder, zty, z)
    extents = None
    if isinstance(tty, TileType):
        elems = [convert(context, builder, e, tty.dtype, zty.dtype)
                 for e in fragment_elements(builder, t, tty.layout.elems_per_thread)]
        if tty.masked:
            extents = tile_extents(builder, tty, t)
    if isinstance(zty, TensorType):     # an unchecked kernel's Mutable array, at a tile index
        index = _index_values(context, builder, idxty, idx, zty.ndim)
        in_grid = tile_in_grid(builder, view, index, tty.shape,
                               hand_built_axes(idxty, zty.ndim, tty.shape))
        emit_store(context, builder, view, index, tty.with_dtype(zty.dtype), elems, extents,
                   in_grid)
        return context.get_dummy_value()
    if isinstance(tty, TileType):
        tile = tty
    else:
        tile = make_tile(zty.dtype, zty.tile_shape)
        e = scalar_to(context, builder, t, tty, zty.dtype)
        elems = [e] * tile.layout.elems_per_thread
    in_grid = None
    own = isinstance(idxty, (types.Omitted, types.NoneType))
    if own:
        index = own_tile_index(builder, view, zty.tile_shape)
    else:   # a branded index, or (unchecked kernels) a tuple built by hand
        index = _index_values(context, builder, idxty, idx, zty.ndim)
        in_grid = tile_in_grid(builder, view, index, zty.tile_shape,
                               hand_built_axes(idxty, zty.ndim, zty.tile_shape))
    emit_store(context, builder, view, index, tile.with_dtype(zty.dtype), elems, extents,
               in_grid, own)
    return context.get_dummy_value()


def lower_tensor_element(context, builder, sig, args):
    """``x[i]`` / ``x[i, j, ...]`` on a read-only tensor (``typing/memory.type_tensor_element``):
    every thread reads the one element (a uniform value). A coordinate of a signed type is
    taken from the end when negative (NumPy's rule, ``-n <= i < 0``); one of an unsigned type
    (uint8 to uint64, zero-extended) never is, so a uint64 of 2**63 or more is past the end,
    as in the interpreter. Each is then compared with its extent (unsigned, so anything still
    negative fails too) before it is multiplied by the stride; an element outside the array is
    0, and no address outside it is formed or read."""
    xty, ity = sig.args
    view = ArrayView(context, builder, xty, args[0])
    if isinstance(ity, types.BaseTuple):
        raw = cgutils.unpack_tuple(builder, args[1], xty.ndim)
        tys = list(ity.types)
    else:
        raw, tys = [args[1]], [ity]
    ok = ir.Constant(I1, 1)
    off = const_i64(0)
    for d, (v, t) in enumerate(zip(raw, tys)):
        c = context.cast(builder, v, t, types.int64)
        if t.signed:    # an unsigned coordinate is never negative, whatever its top bit
            c = builder.select(builder.icmp_signed("<", c, const_i64(0)),
                               builder.add(c, view.shape[d]), c)
        inside = builder.icmp_unsigned("<", c, view.shape[d])
        ok = builder.and_(ok, inside)
        off = builder.add(off, builder.mul(builder.select(inside, c, const_i64(0)),
                                           view.strides[d]))
    res = sig.return_type
    zero = context.get_constant(res, 0)
    before = builder.block
    with builder.if_then(ok, likely=True):
        raw_v = builder.load(view.global_ptr(builder, off, 1), align=view.itemsize)
        val = convert(context, builder, _storage_to_reg(builder, raw_v, xty.dtype), xty.dtype,
                      res)
        then = builder.block
    phi = builder.phi(zero.type)
    phi.add_incoming(zero, before)
    phi.add_incoming(val, then)
    return phi


# ------------------------------------------------------------- attributes of an array parameter


def _register_array_attributes():
    """``x.shape``, ``x.ndim``, ``x.dtype`` of a tensor or partition (``typing/memory.py``):
    the extents its argument carries, and constants."""
    from numba.cuda.cudaimpl import registry

    for cls in (TensorType, PartitionType):
        @registry.lower_getattr(cls, "shape")
        def array_shape(context, builder, typ, val):
            view = ArrayView(context, builder, typ, val)
            return context.make_tuple(builder, types.UniTuple(types.int64, typ.ndim), view.shape)

        @registry.lower_getattr(cls, "ndim")
        def array_ndim(context, builder, typ, val):
            return context.get_constant(types.int64, typ.ndim)

        @registry.lower_getattr(cls, "dtype")
        def array_dtype(context, builder, typ, val):
            return context.get_dummy_value()


_register_array_attributes()


# ----------------------------------------------------------------------- dtype comparisons


def _register_dtype_comparisons():
    """``x.dtype == nt.float16`` (``typing/memory.same_dtype_class``): a constant."""
    import operator

    from numba.cuda.cudaimpl import registry

    from ..typing.memory import same_dtype_class

    def make(negate):
        def impl(context, builder, sig, args):
            return context.get_constant(types.boolean, same_dtype_class(*sig.args) != negate)
        return impl

    for op, negate in ((operator.eq, False), (operator.ne, True)):
        for a in (types.NumberClass, types.DType):
            for b in (types.NumberClass, types.DType):
                registry.lower(op, a, b)(make(negate))


_register_dtype_comparisons()



@lowering_rule("_stage_origin")
def lower_stage_origin(context, builder, sig, args):
    """Where the compiler inserted the call (``typing/pipeline._insert_origin`` marks its
    signature with the loop): the loop's variable and start, for the loop's staged loads
    (``lowering/pipeline.lower_staged_load``). A call in a kernel's own code does nothing."""
    loop = getattr(sig, "loop", None)
    if loop is not None:
        k = context.cast(builder, args[0], sig.args[0], types.int64)
        start = context.cast(builder, args[1], sig.args[1], types.int64)
        compiler_context.current().__dict__.setdefault("stage_origin", {})[loop] = (k, start)
    return context.get_dummy_value()
