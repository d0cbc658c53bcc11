"""Lowering of staged loads: software pipelining of a loop's loads with ``cp.async`` (sm_80+).

``typing/pipeline.py`` marks the loads of a ``for k in range(n)`` loop that feed a matrix
product. Each gets a ring of ``S = num_stages`` tile-sized slots in shared memory (a
persistent region of the kernel's pool); tile ``t`` lives in slot ``t mod S``. At iteration
``k`` each staged load

1. on the first iteration (``k == 0``): the loop's first staged load waits for every copy
   still in flight (``cp.async.wait_all``: a previous run of the loop left copies past its
   end, which must land before their slots are reused) and passes the block barrier (that
   run's last product read the slots after its last barrier), then each load copies tiles
   ``0 .. S-3``, one commit group per tile;
2. copies tile ``k + S - 2`` into slot ``(k - 2) mod S``, one commit group: that slot was
   last read by the product of iteration ``k - 2``, and every thread has passed iteration
   ``k - 1``'s barrier since;

and the product, before it reads, waits until tile ``k`` of its operands has landed
(``cp.async.wait_group N``: ``N`` from ``typing/pipeline.wait_depth`` once the pipeline is
full, ``S - 2`` before) and passes the block barrier (every thread's copies visible). One
barrier per iteration, ``S - 2`` tiles in flight while a product computes.

A loop ``for k in range(a, n)`` with ``a`` not 0, or one whose ``load_at`` offsets are
``o + k * C`` (``StageInfo.origin``), counts its iterations ``j = k - a`` from the start the
compiler's ``_stage_origin`` records: ``j`` takes ``k``'s place above (first iteration,
slots, wait depths) and tile ``k``'s copies stay where the load reads, tile indices of any
sign (``ChunkPlan``).

The product reads slot ``k mod S`` with ``ldmatrix`` (``lowering/mma.py``); the tile never
passes through registers. Each thread copies 16-byte chunks (``cp.async.cg ... 16``) of the
tile's rows into the swizzled layout ``mma`` reads; a chunk outside the array, or of a tile
index outside the tile grid, copies zero bytes and is zero-filled (``src-size`` 0): the
bounds are the load's. Tiles past the loop's end are fetched that way: zeros, no memory
traffic.
"""

from __future__ import annotations

from llvmlite import ir

from .. import compiler_context
from .common import I32, I64, const_i64, thread_index
from .layouts import barrier
from .shared import address32, pool


def _asm(builder, text, constraints="", args=(), types=()):
    fn = ir.InlineAsm(ir.FunctionType(ir.VoidType(), list(types)), text,
                      ",".join(filter(None, [constraints, "~{memory}"])), side_effect=True)
    builder.call(fn, list(args))


def commit(builder):
    _asm(builder, "cp.async.commit_group;")


def wait_group(builder, n: int):
    _asm(builder, f"cp.async.wait_group {n};")


class Ring:
    """The ``stages`` slots of one staged load."""

    def __init__(self, builder, tile, stages: int, what: str):
        from .staging import AtomStaged, align_1024, staging_layout
        from .. import dtypes
        from ..typing.operand_uses import plane_axes
        p, last = plane_axes(tile.shape)            # an N-D tile: extent 1 on the others
        self.rows, self.cols = tile.shape[p], tile.shape[last]
        self.itemsize = dtypes.itemsize(tile.dtype)
        self.tile_bytes = self.rows * self.cols * self.itemsize
        self.stages = stages
        probe = staging_layout(None, self.rows, self.cols, self.itemsize)
        if isinstance(probe, AtomStaged):
            # wgmma reads the slots through descriptors: 1024-byte aligned (each slot a
            # multiple of 1024 bytes: 8-row groups of 128-byte atoms)
            self.base = align_1024(builder, pool().allocate(
                builder, stages * self.tile_bytes + 1024, what))
        else:
            self.base = pool().allocate(builder, stages * self.tile_bytes, what)
        self.layout = staging_layout(self.base, self.rows, self.cols, self.itemsize)

    def slot(self, builder, k):
        """``i8 addrspace(3)*`` of the slot of tile ``k`` (i64)."""
        s = builder.urem(k, const_i64(self.stages))
        return builder.gep(self.base, [builder.mul(s, const_i64(self.tile_bytes))])


class ChunkPlan:
    """What a thread copies of every tile of one staged load, computed once per run of the
    loop (in its first iteration) and carried across iterations (entry-block cells that
    become loop phis). Per chunk: its destination offset in a slot (swizzled), the global byte
    address of its source in tile ``k = 0``, and ``limit``: the chunk lies inside the array
    exactly in the tiles ``k < limit`` (0 when it lies outside along the other axis). An
    iteration's copy of a chunk is then a compare, an add, two selects and the ``cp.async``.

    ``k < limit`` also keeps ``k * tile`` from wrapping (a loop bound is any int):
    ``limit <= ceil(extent / tile)``, the tile grid along the loop's axis.

    ``start`` (a loop with an origin, ``StageInfo.origin``: tile indices ``k`` of any sign,
    a ``load_at`` offset ``o + k * C``): the chunk's coordinate along the axis in tile ``k``
    is ``t0 + row`` with ``t0 = start + k * C`` (``start``: ``o``, or 0; the load sets it in
    every iteration, :attr:`start`), inside where ``t0 + row`` is below the extent as an
    unsigned number (a negative one is huge) and the chunk lies inside along the other axis.
    The chunk's source address in tile ``k`` is its address at ``k = 0`` plus ``k`` steps,
    computed in wrapping 64-bit arithmetic and used only inside.
    """

    def __init__(self, builder, view, ring: Ring, index, axis: int, step: int | None = None,
                 start=None):
        from .staging import staging_layout
        ctx = compiler_context.current()
        self.axis = axis
        per_row = ring.cols * ring.itemsize // 16
        chunks = ring.rows * per_row
        threads = ctx.num_threads
        reps = (chunks + threads - 1) // threads
        other = 1 - axis
        tile_o = ring.rows if other == 0 else ring.cols
        extent_k = view.shape[axis]
        if step is None:            # load: tile indices, tile k at k * tile along the axis
            tile_k = ring.rows if axis == 0 else ring.cols
            grid_o = builder.lshr(builder.add(view.shape[other], const_i64(tile_o - 1)),
                                  const_i64(tile_o.bit_length() - 1))
            other_in_grid = builder.icmp_unsigned("<", index[other], grid_o)
            origin_o = builder.mul(index[other], const_i64(tile_o))
        else:                       # load_at: element offsets, k * step along the axis
            tile_k = step
            other_in_grid = ir.Constant(ir.IntType(1), 1)
            origin_o = index[other]
        layout = staging_layout(ring.base, ring.rows, ring.cols, ring.itemsize)
        self.base = builder.ptrtoint(view.global_ptr(builder, const_i64(0), 1), I64)
        t = thread_index(builder)
        self.cells = []
        self.general = start is not None
        self.start = start
        self.step = step
        for rep in range(reps):
            c = builder.add(t, const_i64(rep * threads))
            r = builder.lshr(c, const_i64(per_row.bit_length() - 1))
            q = builder.and_(c, const_i64(per_row - 1))
            local = (r, builder.mul(q, const_i64(16 // ring.itemsize)))   # (row, col) in the tile
            coord = [None, None]
            coord[axis] = local[axis] if start is None else builder.add(start, local[axis])
            coord[other] = builder.add(origin_o, local[other])
            src0 = builder.add(builder.mul(coord[0], view.strides[0]), coord[1])
            src0 = builder.add(self.base, builder.mul(src0, const_i64(ring.itemsize)))
            ok = builder.and_(other_in_grid,
                              builder.icmp_unsigned("<", coord[other], view.shape[other]))
            active = None
            if chunks % threads and rep == reps - 1:
                # fewer chunks than threads (the tile's chunks are a power of two, so this is
                # the only partial repetition): the threads past the tile copy nothing. A
                # zero-byte copy still zero-fills its 16-byte destination, which for them lies
                # past the slot (rows >= the tile's): they must not issue one at all.
                active = builder.icmp_unsigned("<", c, const_i64(chunks))
                ok = builder.and_(ok, active)
            dst = layout.offset(builder, builder.trunc(r, I32),
                                builder.trunc(builder.mul(q, const_i64(16)), I32))
            active32 = None if active is None else builder.zext(active, I32)
            if start is not None:      # (dst, src0, row, active, inside along the other axis)
                self.cells.append((dst, src0, local[axis], active32, builder.zext(ok, I32)))
                continue
            inside = builder.icmp_unsigned("<", coord[axis], extent_k)
            ahead = builder.add(builder.sub(extent_k, coord[axis]), const_i64(tile_k - 1))
            # the iterations whose copy of this chunk lies inside: ceil(rest / step)
            tiles = (builder.lshr(ahead, const_i64(tile_k.bit_length() - 1))
                     if tile_k & (tile_k - 1) == 0 else builder.udiv(ahead, const_i64(tile_k)))
            limit = builder.select(builder.and_(ok, inside), tiles, const_i64(0))
            self.cells.append((dst, src0, limit, active32, None))
        self.tile_k = tile_k

    def step_bytes(self, view, builder, itemsize):
        stride = view.strides[0] if self.axis == 0 else const_i64(1)
        return builder.mul(stride, const_i64(self.tile_k * itemsize))

    def issue(self, builder, view, ring: Ring, jj, kk=None):
        """The copies of tile ``kk`` (i64; ``jj`` where None) along the loop's axis into the
        slot of the loop's iteration ``jj`` (its iterations counted from 0)."""
        kk = jj if kk is None else kk
        slot32 = address32(builder, ring.slot(builder, jj))
        shift = builder.mul(kk, self.step_bytes(view, builder, ring.itemsize))
        if self.general:
            t0 = builder.add(self.start, builder.mul(kk, const_i64(self.tile_k)))
            extent = view.shape[self.axis]
            in_grid = None
            if self.step is None:
                # a tile index: inside the tile grid (an unsigned compare, as the ordinary
                # load's), so that k * tile cannot wrap back into the array
                grid = builder.udiv(builder.add(extent, const_i64(self.tile_k - 1)),
                                    const_i64(self.tile_k))
                in_grid = builder.icmp_unsigned("<", kk, grid)
        for dst, src0, limit, active, other in self.cells:
            if other is None:
                ok = builder.icmp_unsigned("<", kk, limit)
            else:                  # limit: the chunk's row; other: inside along the other axis
                ok = builder.and_(builder.icmp_unsigned("<", builder.add(t0, limit), extent),
                                  builder.icmp_unsigned("!=", other, ir.Constant(I32, 0)))
                if in_grid is not None:
                    ok = builder.and_(ok, in_grid)
            src = builder.select(ok, builder.add(src0, shift), self.base)
            size = builder.select(ok, ir.Constant(I32, 16), ir.Constant(I32, 0))
            args = (builder.add(slot32, dst), src, size)
            if active is None:
                _asm(builder, "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r",
                     args, (I32, I64, I32))
            else:                        # a thread past the tile's chunks issues no copy
                _asm(builder, "{ .reg .pred p; setp.ne.u32 p, $3, 0; "
                     "@p cp.async.cg.shared.global [$0], [$1], 16, $2; }", "r,l,r,r",
                     args + (active,), (I32, I64, I32, I32))

    def carry(self, builder):
        """Cells holding the plan across iterations: store now (in the first iteration)."""
        from numba.cuda import cgutils
        self._slots = []
        for values in self.cells:
            slots = []
            for v in values:
                if v is None:
                    slots.append(None)
                    continue
                cell = cgutils.alloca_once(builder, v.type)
                builder.store(v, cell)
                slots.append(cell)
            self._slots.append(slots)

    def reload(self, builder, view):
        """The plan's values in any iteration (after the first iteration's branch)."""
        self.cells = [tuple(None if c is None else builder.load(c) for c in slots)
                      for slots in self._slots]
        self.base = builder.ptrtoint(view.global_ptr(builder, const_i64(0), 1), I64)


class PlaneView:
    """Axes ``(p, last)`` of an N-D tensor (``typing/operand_uses.plane_axes``) at a staged load's
    coordinates on the others (its tile has extent 1 there: a coordinate is the index
    itself), as the 2-D view the copies walk: data at ``sum(index[d] * stride[d])`` over the
    other axes, the two axes' extents and strides. Where one of those coordinates lies outside
    its extent (negative ones read as huge unsigned ones) the plane has no rows and its data
    is the tensor's own: every copy is a zero-byte one, the tile all padding, as the ordinary
    load gives."""

    def __init__(self, builder, view, index, plane):
        ok = ir.Constant(ir.IntType(1), 1)
        off = const_i64(0)
        for d in range(view.ty.ndim):
            if d in plane:
                continue
            ok = builder.and_(ok, builder.icmp_unsigned("<", index[d], view.shape[d]))
            off = builder.add(off, builder.mul(index[d], view.strides[d]))
        p, last = plane
        self.ty, self.itemsize, self.storage_llvm = view.ty, view.itemsize, view.storage_llvm
        self.data = builder.gep(view.data, [builder.select(ok, off, const_i64(0))])
        self.shape = [builder.select(ok, view.shape[p], const_i64(0)), view.shape[last]]
        self.strides = [view.strides[p], view.strides[last]]

    def global_ptr(self, builder, offset, lanes: int):
        from .views import ArrayView
        return ArrayView.global_ptr(self, builder, offset, lanes)


def _restart(builder):
    """Before a run of the loop fills its slots: this thread's copies still in flight land
    (``cp.async.wait_all``), and the block barrier: the last product of a previous run of the
    loop read its slots after that run's last barrier, so without this one a fast warp's
    first copies could overwrite a slot a slow warp is still reading (a loop inside another
    loop, a persistent kernel's tile loop)."""
    _asm(builder, "cp.async.wait_all;")
    barrier(builder)


def lower_staged_load(context, builder, sig, view, index, tile, padty=None, pad=None):
    """Emit a staged load's step of the pipeline; returns the tile value (its elements are
    never read: the product reads the slot, :func:`staged_operand`)."""
    info = sig.stage
    ctx = compiler_context.current()
    S = info.stages
    ring = Ring(builder, tile, S, f"{S} pipeline stages of a {tile.shape} tile")
    ring_off = pool().persistent[-1][0] if pool().persistent else None
    step = getattr(info, "step", None)
    start = shift = None
    if getattr(info, "origin", False):
        # typing/pipeline._insert_origin: the loop's k and its start a; the iterations count
        # from 0 as j = k - a (slots, first iteration), tile k's copies stay at k (a load_at's
        # at o + k * step: o is the offset less k * step)
        k_abs, a = ctx.__dict__["stage_origin"][info.loop]
        k = builder.sub(k_abs, a)
        shift = a
        start = const_i64(0) if step is None else builder.sub(
            index[info.axis], builder.mul(k_abs, const_i64(step)))
    else:
        # load_at: the offset is k * step (typing/loop_ir._loop_step), k >= 0
        k = index[info.axis] if step is None else builder.udiv(index[info.axis],
                                                               const_i64(step))
    if info.tma:                    # lowering/tma.py: the product issues boxes, thread 0
        from .tma import TmaPlan
        persistent = isinstance(info.ws, tuple)
        if persistent:
            # lowering/ws.py: one ring for the kernel's whole tiles loop; tile k of this run
            # is the g-th tile the ring carries, g counted across the runs
            from .ws import ring_counter
            k = ring_counter(builder, k, info.order == 0)
        elif info.order == 0:
            with builder.if_then(builder.icmp_unsigned("==", k, const_i64(0))):
                _restart(builder)
        # warp-specialized (lowering/ws.py): S "full" barriers, then S "empty" ones
        nbars = 2 * S if info.ws else S
        bars = pool().allocate(builder, 8 * nbars, f"{nbars} barriers of a {tile.shape} TMA ring")
        bars_off = pool().persistent[-1][0]
        d = info.ws[1 + info.order] if persistent else None
        ctx.__dict__.setdefault("staged", {})[info.key] = (
            ring.slot(builder, k), k, S, ("tma", TmaPlan(builder, view, ring, index, info.axis),
                                          ring, bars, ring_off, bars_off, d))
        return _placeholder_tile(builder, tile)
    plan = None
    full_view, full_index = view, index
    if view.ty.ndim > 2:            # the plane at the other coordinates (loop-invariant)
        from ..typing.operand_uses import plane_axes
        plane = plane_axes(tile.shape)
        view, index = PlaneView(builder, view, index, plane), [index[d] for d in plane]
        axis = plane.index(info.axis)
    else:
        axis = info.axis

    def tile_at(j):                 # the tile index of the iteration k + j
        return None if shift is None else builder.add(builder.add(k, const_i64(j)), shift)

    with builder.if_then(builder.icmp_unsigned("==", k, const_i64(0))):
        if info.order == 0:
            _restart(builder)
        plan = ChunkPlan(builder, view, ring, index, axis, step, start)
        if not info.deferred:
            for j in range(S - 2):
                plan.issue(builder, view, ring, builder.add(k, const_i64(j)), tile_at(j))
                commit(builder)
        plan.carry(builder)
    plan.reload(builder, view)
    plan.start = start
    if not info.deferred:           # deferred: the product issues the copies (_deferred_*)
        plan.issue(builder, view, ring, builder.add(k, const_i64(S - 2)), tile_at(S - 2))
        commit(builder)
    ctx.__dict__.setdefault("staged", {})[info.key] = (ring.slot(builder, k), k, S,
                                                       (plan, ring, view))
    if shift is not None:           # _issue_tile: tile index = iteration + a
        ctx.__dict__.setdefault("stage_shift", {})[info.key] = shift
    if info.mode == "registers":
        _await(builder, k, S, sig.wait[1])
        return _read_back(context, builder, full_view, full_index, tile, ring, k, padty, pad,
                          at=step is not None)
    return _placeholder_tile(builder, tile)


def _placeholder_tile(builder, tile):
    """The value of a load whose product reads its slot: elements never read."""
    from ..typing.types import element_llvm_type
    from .common import make_fragment
    arr = ir.Constant(ir.ArrayType(element_llvm_type(tile.dtype), tile.layout.elems_per_thread),
                      ir.Undefined)
    elems = [builder.extract_value(arr, i) for i in range(tile.layout.elems_per_thread)]
    return make_fragment(builder, tile, elems,
                         [const_i64(s) for s in tile.shape] if tile.masked else None)


def _await(builder, k, S, depth):
    """``cp.async.wait_group``: ``depth`` groups may stay pending once the pipeline is full
    (``k >= S - 2``), ``min(depth, S - 2)`` before; then the block barrier."""
    early = min(depth, S - 2) if S > 2 else depth
    if early == depth:
        wait_group(builder, depth)
    else:
        with builder.if_else(builder.icmp_unsigned(">=", k, const_i64(S - 2))) as (full, fill):
            with full:
                wait_group(builder, depth)
            with fill:
                wait_group(builder, early)
    if getattr(compiler_context.current(), "uses_wgmma", False):
        from .staging import fence_proxy_async
        fence_proxy_async(builder)       # cp.async wrote in the generic proxy; wgmma reads async
    barrier(builder)


def _read_back(context, builder, view, index, tile, ring: Ring, k, padty, pad, at=False):
    """The tile of slot ``k mod S`` in its blocked layout's registers: one 16-byte
    ``ld.shared`` per chunk of the layout (element loads for chunks narrower than 16 bytes);
    where the array ends, the padding (the copies zero-filled it) and, for a masked tile,
    the ordinary load's valid extents. ``at``: ``index`` holds a ``load_at``'s element
    offsets (an element is inside where ``0 <= offset + coordinate < extent`` on every
    axis)."""
    from .common import chunk_coords, make_fragment, padding_element, valid_bits
    from .staging import staging_layout
    from .views import _storage_to_reg, load_extents, tile_in_grid
    from numba.cuda import types as ntypes
    layout, dt = tile.layout, tile.dtype
    slot = staging_layout(ring.slot(builder, k), ring.rows, ring.cols, ring.itemsize)
    storage = ir.IntType(8 * ring.itemsize)
    elems = []
    from ..typing.operand_uses import plane_axes
    p, last = plane_axes(tile.shape)
    for rep in range(layout.reps):
        coords = chunk_coords(builder, layout, rep)        # N-D: extent 1 on the others
        r, c = coords[p], coords[last]
        r32 = builder.trunc(r, I32)
        col_bytes = builder.trunc(builder.mul(c, const_i64(ring.itemsize)), I32)
        if layout.vec * ring.itemsize == 16:
            vty = ir.VectorType(storage, layout.vec)
            ptr = slot.pointer(builder, r32, col_bytes, vty)
            vec = builder.load(ptr, align=16)
            elems += [_storage_to_reg(builder, builder.extract_element(vec, ir.Constant(I32, v)), dt)
                      for v in range(layout.vec)]
        else:
            for v in range(layout.vec):
                ptr = slot.pointer(builder, r32, builder.add(col_bytes, ir.Constant(
                    I32, v * ring.itemsize)), storage)
                elems.append(_storage_to_reg(builder, builder.load(ptr), dt))
    zero = padty is None or isinstance(padty, ntypes.NoneType) or (
        isinstance(padty, ntypes.Omitted) and padty.value is None)
    if at:
        lit = getattr(padty, "literal_value", None)
        if isinstance(lit, int) and not isinstance(lit, bool) and lit == 0:
            return make_fragment(builder, tile, elems, None)     # the copies zero-filled
        padv = padding_element(context, builder, padty, pad, dt)
        out, i = [], 0
        for rep in range(layout.reps):
            coords = chunk_coords(builder, layout, rep)
            for v in range(layout.vec):
                c = coords[:-1] + [builder.add(coords[-1], const_i64(v))]
                ok = ir.Constant(ir.IntType(1), 1)
                for d, cd in enumerate(c):
                    ok = builder.and_(ok, builder.icmp_unsigned(
                        "<", builder.add(index[d], cd), view.shape[d]))
                out.append(builder.select(ok, elems[i], padv))
                i += 1
        return make_fragment(builder, tile, out, None)
    axes = [True] * len(tile.shape)
    in_grid = tile_in_grid(builder, view, index, tile.shape, axes)
    extents = load_extents(builder, view, index, tile.shape, in_grid)
    if not zero:
        padv = padding_element(context, builder, padty, pad, dt)
        out, i = [], 0
        for rep in range(layout.reps):
            *lead, c = chunk_coords(builder, layout, rep)
            for v in range(layout.vec):
                ok = valid_bits(builder, lead + [builder.add(c, const_i64(v))], extents)
                out.append(builder.select(ok, elems[i], padv))
                i += 1
        elems = out
    return make_fragment(builder, tile, elems, extents if tile.masked else None)


def await_operands(builder, sig):
    """Before a product reads staged operands: wait until their tile ``k`` has landed
    (``typing/pipeline.wait_depth`` groups may stay pending once the pipeline is full,
    ``S - 2`` before: a load's own later prologue copies follow its tile ``k``), then the block
    barrier (every thread's copies visible; the slot refilled next iteration, ``k - 1``'s, is
    read by nobody after it)."""
    keys = list((getattr(sig, "operands", None) or {}).values())
    if not keys:
        return
    staged = compiler_context.current().__dict__["staged"]
    _slot, k, S, _copy = staged[keys[0]]
    if not getattr(sig, "deferred", False):
        _await(builder, k, S, sig.wait[1])
        return
    # deferred schedule: at k == 0 the prologue, tiles 0 .. S-2-P (one group per tile, every
    # operand's chunks in it; P: the wgmma groups a product leaves pending); then tile k is
    # the oldest of S - 1 - P pending groups
    P = getattr(sig, "pending", 0) or 0
    if getattr(sig, "tma", False) and getattr(sig, "ws", False):
        from . import ws
        from .tma import wait_tile
        bars = staged[keys[0]][3][3]
        with builder.if_then(builder.icmp_unsigned("==", k, const_i64(0))):
            ctx = compiler_context.current()
            loops = ctx.__dict__.setdefault("ws_loops", [])
            stage = getattr(sig, "ws", None)
            loop = {"id": len(loops), "stages": S, "bars_off": staged[keys[0]][3][5],
                    "persistent": stage[1:] if isinstance(stage, tuple) else None,
                    "order": getattr(ctx, "ws_order", None),
                    "loads": [{"ring_off": staged[key][3][4], "map": staged[key][3][1].map,
                               "rows": staged[key][3][1].rows, "cols": staged[key][3][1].cols,
                               "itemsize": staged[key][3][1].itemsize,
                               "param": staged[key][3][1].param,
                               "axis": staged[key][3][1].axis, "d": staged[key][3][6],
                               "tile_bytes": staged[key][3][1].tile_bytes} for key in keys]}
            loops.append(loop)
            ws.init_and_post(builder, loop, bars, [staged[key][3][1] for key in keys],
                             ctx.num_warps)
            barrier(builder)             # every consumer sees the barriers initialized
        wait_tile(builder, bars, S, k)
        return
    if getattr(sig, "tma", False):
        from .tma import init_barriers, wait_tile
        bars = staged[keys[0]][3][3]
        with builder.if_then(builder.icmp_unsigned("==", k, const_i64(0))):
            init_barriers(builder, bars, S)
            barrier(builder)             # every thread sees the barriers initialized
            for j in range(S - 1 - P):
                _issue_tile(builder, staged, keys, builder.add(k, const_i64(j)))
        wait_tile(builder, bars, S, k)
        barrier(builder)                 # and every thread is past the product of k - 1 - P
        return
    with builder.if_then(builder.icmp_unsigned("==", k, const_i64(0))):
        for j in range(S - 1 - P):
            _issue_tile(builder, staged, keys, builder.add(k, const_i64(j)))
    wait_group(builder, S - 2 - P)
    from .staging import fence_proxy_async
    fence_proxy_async(builder)       # cp.async wrote in the generic proxy; wgmma reads async
    barrier(builder)


def _issue_tile(builder, staged, keys, kk):
    """Tile ``kk`` of every staged operand ``keys``: one commit group of ``cp.async`` copies,
    or (TMA) thread 0's expected bytes on the tile's barrier and its boxes."""
    first = staged[keys[0]][3]
    if first[0] == "tma":
        from .tma import barrier_of, expect_bytes
        bars, S = first[3], staged[keys[0]][2]
        with builder.if_then(builder.icmp_unsigned("==", thread_index(builder), const_i64(0))):
            bar = barrier_of(builder, bars, S, kk)
            expect_bytes(builder, bar, sum(staged[key][3][1].tile_bytes for key in keys))
            for key in keys:
                _tag, plan, ring = staged[key][3][:3]
                plan.issue(builder, ring.slot(builder, kk), bar, kk)
        return
    shifts = compiler_context.current().__dict__.get("stage_shift", {})
    for key in keys:
        plan, ring, view = staged[key][3]
        plan.issue(builder, view, ring, kk,
                   builder.add(kk, shifts[key]) if key in shifts else None)
    commit(builder)


def drain_copies(builder, sig, k):
    """In a TMA loop's last iteration (the caller's branch): wait for the tiles issued past
    its end (``k + 1 .. k + S - 1 - P``: the prologue's and the refills'), so no box is in
    flight when the barriers are initialized again or the block exits."""
    keys = list((getattr(sig, "operands", None) or {}).values())
    if not keys or not getattr(sig, "tma", False) or getattr(sig, "ws", False):
        return                           # warp-specialized: no tile was issued past the end
    from .tma import wait_tile
    staged = compiler_context.current().__dict__["staged"]
    _slot, _k, S, first = staged[keys[0]]
    P = getattr(sig, "pending", 0) or 0
    for j in range(1, S - P):
        wait_tile(builder, first[3], S, builder.add(k, const_i64(j)))


def refill_operands(builder, sig):
    """The deferred schedule's refill, emitted by the product right after it has issued (and
    committed) its ``wgmma``s on tile ``k``: tile ``k + S - 1 - P`` of every staged operand
    into slot ``(k - 1 - P) mod S``. That slot's last reader was the product of iteration
    ``k - 1 - P``, which every thread waited for (``wgmma.wait_group P`` in iteration
    ``k - 1``) before this iteration's barrier; with ``P = 1`` the product of ``k - 1`` may
    still read slot ``k - 1``, a different slot when ``S >= 3``. A no-op for a product whose
    operands are not deferred."""
    keys = list((getattr(sig, "operands", None) or {}).values())
    if not keys or not getattr(sig, "deferred", False) or getattr(sig, "ws", False):
        return                           # warp-specialized: the producer issues them
    staged = compiler_context.current().__dict__["staged"]
    _slot, k, S, _copy = staged[keys[0]]
    P = getattr(sig, "pending", 0) or 0
    _issue_tile(builder, staged, keys, builder.add(k, const_i64(S - 1 - P)))


def release_operands(builder, sig):
    """Warp-specialized loops (``lowering/ws.py``): after the product's ``wgmma.wait_group
    P``, release the slot its ``wgmma``s of iteration ``k - P`` read. A no-op otherwise."""
    keys = list((getattr(sig, "operands", None) or {}).values())
    if not keys or not getattr(sig, "ws", False):
        return
    from .ws import release
    staged = compiler_context.current().__dict__["staged"]
    _slot, k, S, first = staged[keys[0]]
    release(builder, first[3], S, k, getattr(sig, "pending", 0) or 0)


def drain_at_exit(kernel) -> None:
    """``cp.async.wait_all`` before every return of ``kernel`` (an ``llvmlite.ir`` function)
    that stages loads: the copies a loop issues past its end (zero fills), or after a
    ``break``, land before the block exits, so none writes shared memory the next block on
    the multiprocessor may already use."""
    for block in kernel.blocks:
        term = block.terminator
        if isinstance(term, ir.Ret):
            b = ir.IRBuilder(block)
            b.position_before(term)
            _asm(b, "cp.async.wait_all;")


def staged_operand(key):
    """The slot (``i8 addrspace(3)*``) the staged load ``key`` filled this iteration."""
    return compiler_context.current().__dict__["staged"][key][0]


__all__ = ["await_operands", "drain_at_exit", "lower_staged_load", "refill_operands",
           "release_operands", "staged_operand"]
