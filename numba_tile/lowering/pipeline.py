"""Lowering of staged loads: software pipelining of a loop's loads with ``cp.async`` (sm_80+).

``typing/pipeline.py`` marks the loads of a ``for k in range(n)`` loop that feed a matrix
product. Each gets a ring of ``S = num_stages`` tile-sized slots in shared memory (a
persistent region of the kernel's pool) and, at iteration ``k``:

1. on the first iteration (``k == 0``): ``cp.async.wait_all`` (copies a previous run of the
   loop left in flight, past its end, complete before their slots are reused), then the
   copies of tiles ``0 .. S-2`` into slots ``0 .. S-2``, one commit group per tile;
2. ``cp.async.wait_group N``: tile ``k`` of this load has landed (``N = S - 2`` until the
   pipeline is full, then ``n (S - 1) - 1`` with ``n`` staged loads in the loop: the groups
   committed after tile ``k``'s, see the derivation in the docstring of
   :func:`wait_depth`), and the block barrier, which makes every thread's copies visible and
   guarantees every thread is done reading the slot of tile ``k - 1``;
3. the copies of tile ``k + S - 1`` into that slot (``(k - 1) mod S``), one commit group.

The product then reads slot ``k mod S`` with ``ldmatrix`` (``lowering/mma.py``); the tile
never passes through registers. Each thread copies 16-byte chunks (``cp.async.cg ... 16``)
of the tile's rows into the swizzled layout ``mma`` reads; a chunk outside the array, or of
a tile index outside the tile grid, copies zero bytes and is zero-filled (``src-size`` 0):
the bounds are the load's. Tiles past the loop's end are fetched that way: zeros, no
memory traffic.
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


def wait_depth(count: int, stages: int) -> int:
    """Groups that may stay pending once tile ``k`` of a load has landed, pipeline full.

    Every iteration commits one group per staged load, in program order; tile ``k`` of load
    ``j`` was committed ``S - 1`` iterations earlier, after which the other ``n - 1`` loads
    of that iteration and ``n`` loads of each of the ``S - 2`` iterations in between
    committed theirs: ``n (S - 1) - 1``. Before the pipeline is full (``k < S - 1``) at
    least ``S - 2`` groups follow it (the load's own later prologue tiles), which is what
    is waited for then; a smaller depth only waits longer.
    """
    return count * (stages - 1) - 1


class Ring:
    """The ``stages`` slots of one staged load."""

    def __init__(self, builder, tile, stages: int, what: str):
        from .mma import Staged
        self.rows, self.cols = tile.shape
        self.itemsize = 2
        self.tile_bytes = self.rows * self.cols * self.itemsize
        self.stages = stages
        self.base = pool().allocate(builder, stages * self.tile_bytes, what)
        self.layout = Staged(self.base, self.rows, self.cols, self.itemsize)

    def slot(self, builder, k):
        """``i8 addrspace(3)*`` of the slot of tile ``k`` (i64)."""
        s = builder.urem(k, const_i64(self.stages))
        return builder.gep(self.base, [builder.mul(s, const_i64(self.tile_bytes))])


def _issue(builder, view, ring: Ring, index, axis, kk, grid):
    """Copies of the tile at ``index`` with ``index[axis] = kk`` into its slot."""
    from .mma import Staged
    ctx = compiler_context.current()
    chunks_per_row = ring.cols * ring.itemsize // 16
    chunks = ring.rows * chunks_per_row
    threads = ctx.num_threads
    idx = list(index)
    idx[axis] = kk
    tile_ok = None
    for d in range(2):
        ok = builder.icmp_unsigned("<", idx[d], grid[d])
        tile_ok = ok if tile_ok is None else builder.and_(tile_ok, ok)
    slot = Staged(ring.slot(builder, kk), ring.rows, ring.cols, ring.itemsize)
    base_row = builder.mul(idx[0], const_i64(ring.rows))
    base_col = builder.mul(idx[1], const_i64(ring.cols))
    t = thread_index(builder)
    for rep in range((chunks + threads - 1) // threads):
        c = builder.add(t, const_i64(rep * threads))
        r = builder.udiv(c, const_i64(chunks_per_row)) if chunks_per_row & (chunks_per_row - 1) \
            else builder.lshr(c, const_i64(chunks_per_row.bit_length() - 1))
        q = builder.and_(c, const_i64(chunks_per_row - 1))
        gr = builder.add(base_row, r)
        gc = builder.add(base_col, builder.mul(q, const_i64(8)))
        ok = builder.and_(tile_ok, builder.and_(
            builder.icmp_unsigned("<", gr, view.shape[0]),
            builder.icmp_unsigned("<", gc, view.shape[1])))
        offset = builder.add(builder.mul(gr, view.strides[0]), gc)
        offset = builder.select(ok, offset, const_i64(0))
        src = builder.ptrtoint(view.global_ptr(builder, offset, 1), I64)
        size = builder.select(ok, ir.Constant(I32, 16), ir.Constant(I32, 0))
        dst = slot.address(builder, builder.trunc(r, I32),
                           builder.trunc(builder.mul(q, const_i64(16)), I32))
        body = "cp.async.cg.shared.global [$0], [$1], 16, $2;"
        if chunks % threads and rep == chunks // threads:
            with builder.if_then(builder.icmp_unsigned("<", c, const_i64(chunks))):
                _asm(builder, body, "r,l,r", (dst, src, size), (I32, I64, I32))
        else:
            _asm(builder, body, "r,l,r", (dst, src, size), (I32, I64, I32))


def lower_staged_load(context, builder, sig, view, index, tile):
    """Emit a staged load's step of the pipeline; returns the tile value (its elements are
    never read: the product reads the slot, ``staged_operand``)."""
    from .memory import tile_grid
    info = sig.stage
    ctx = compiler_context.current()
    S = info.stages
    ring = Ring(builder, tile, S, f"{S} pipeline stages of a {tile.shape} tile")
    grid = tile_grid(builder, view, tile.shape)
    k = index[info.axis]
    first = builder.icmp_unsigned("==", k, const_i64(0))
    with builder.if_then(first):
        _asm(builder, "cp.async.wait_all;")
        for j in range(S - 1):
            _issue(builder, view, ring, index, info.axis, builder.add(k, const_i64(j)), grid)
            commit(builder)
    full = builder.icmp_unsigned(">=", k, const_i64(S - 1))
    with builder.if_else(full) as (then, otherwise):
        with then:
            wait_group(builder, wait_depth(info.count, S))
        with otherwise:
            wait_group(builder, max(S - 2, 0))
    barrier(builder)
    _issue(builder, view, ring, index, info.axis, builder.add(k, const_i64(S - 1)), grid)
    commit(builder)
    ctx.__dict__.setdefault("staged", {})[info.key] = ring.slot(builder, k)
    from .common import make_fragment
    from ..typing.types import element_llvm_type
    arr = ir.Constant(ir.ArrayType(element_llvm_type(tile.dtype), tile.layout.elems_per_thread),
                      ir.Undefined)
    elems = [builder.extract_value(arr, i) for i in range(tile.layout.elems_per_thread)]
    return make_fragment(builder, tile, elems,
                         [const_i64(s) for s in tile.shape] if tile.masked else None)


def staged_operand(key):
    """The slot (``i8 addrspace(3)*``) the staged load ``key`` filled this iteration."""
    return compiler_context.current().__dict__["staged"][key]


__all__ = ["lower_staged_load", "staged_operand", "wait_depth"]
