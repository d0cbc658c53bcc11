"""Warp specialization of TMA-fed ``wgmma`` loops (sm_90a): a producer warpgroup issues the
boxes, the kernel's own warps consume them.

Taken for the loops ``typing/pipeline`` marks ``ws`` (deferred, TMA, their product's wait
moved to the loop's exit or its group waited in the iteration; ``NUMBA_TILE_WS=0`` says no).
The block then has ``N + 128`` threads: the kernel's ``N = 32 * num_warps`` (the
*consumers*, which run the kernel as written, thread indices ``0 .. N-1``) and one producer
warpgroup (thread indices ``N .. N+127``). Facts and encodings:
``shared/notes/hopper-gemm.md`` sections 2.4, 3 and 4.2.

**Entry** (:func:`split_roles`, after the kernel is lowered). Thread 0 initializes the *job*
barrier (an ``mbarrier`` of arrival count 1), fences the initialization, and every thread
of the block passes ``bar.sync 0``. Then the producers branch off; with 8 consumer warps
(384 threads, 168 registers each at launch) the producers give registers back
(``setmaxnreg.dec 40``) and the consumers take them (``setmaxnreg.inc 232``: 40 * 128 +
232 * 256 = 168 * 384, the pool exactly, as CUTLASS's and the brief's probe; 104 with 16
consumer warps, :func:`consumer_registers`). Every block
barrier the consumers' code passes is ``bar.sync 1, N`` (``layouts.barrier``): the producers
are not part of it.

**Jobs.** Each run of a warp-specialized loop is a job. At ``k == 0``, after the loop's
restart barrier, consumer thread 0 initializes the loop's barriers (``full[s]``: arrival
count 1, completed by the expected bytes; ``empty[s]``: one arrival per consumer warp),
writes the job (the loop's number, its trip count ``n`` from ``_ws_post``, per staged load
its box coordinate across the loop and its tile grid along it) into a shared descriptor and
arrives on the job barrier (release); the consumers pass their block barrier. The producer's
one thread waits on the job barrier (acquire, parity = jobs seen mod 2), reads the job and,
for ``kk`` in ``0 .. n-1``: waits until slot ``kk mod S`` is empty (``kk >= S``: barrier
``empty[kk mod S]``, parity ``(kk / S + 1) mod 2``), posts the tile's bytes on
``full[kk mod S]`` and issues its boxes (``lowering/tma.issue_boxes``). Exactly ``n`` tiles:
nothing is in flight when the job ends. Every return of the consumers' code posts the stop
job (thread 0), and the producer returns. Consumers can return mid-loop (a ``return``, or an
exception Numba raises in the loop's body: a ``range`` step of 0, a tuple index past its end,
which end the GPU thread): the producer's wait for an empty slot also reads the job's loop
number and leaves on the stop value, and before returning it waits on the ``full`` barriers
of the last ``S`` positions it issued, so no box lands after the block has exited
(:func:`_wait_or_stop`, :func:`_drain`). In a cluster's kernel (below) consumers leaving
mid-loop can still hang the pair: the partner waits for their slot releases, a drain can wait
for the half of a multicast tile the partner's producer, stopped first, never issued, and
both blocks' exits pass a cluster barrier. Clusters are opt-in (``NUMBA_TILE_CLUSTER=1``),
and a kernel that can raise inside its K loop should not opt in.

**Consumers** in iteration ``k``: wait on ``full[k mod S]`` (no block barrier), issue the
``wgmma``s, commit, ``wgmma.wait_group P``, then lane 0 of every warp arrives on
``empty[(k - P) mod S]`` (``k >= P``): the ``wgmma``s that read that slot have completed.
Nothing is drained at the loop's end: the producer issued no tile past it.

**Clusters** (:func:`cluster`; opt-in, ``NUMBA_TILE_CLUSTER=1``: on the H200 they measured
0.2-2.4% slower than single blocks, ``docs/performance.md``). A kernel whose only
warp-specialized loop is a persistent one that every block runs with one trip count
(``typing/pipeline._cluster_ok``) is written for clusters of two blocks
(``CompiledKernel.cluster``; launched so on even grids, ``driver.set_cluster_width``; on an
odd grid the same code runs its blocks alone: ``%cluster_nctarank`` is 1). Blocks ``2c`` and
``2c + 1`` (ranks 0 and 1; the grid even) walk tiles ``t`` and ``t ^ 1`` in step, so ring
position ``g`` holds the same step ``kk`` of both blocks' tiles. At the entry thread 0 also
initializes the ring (``empty[s]`` counts ``nctarank x`` consumer warps) and every thread of
both blocks passes a cluster barrier: no block reaches the other's barriers before they
exist. Per tile the producer computes the partner's tile: *paired* when it exists (the end of
the sequence and blocks without tiles are not); a staged load whose box coordinates across
the loop are the partner's too (the shared operand: ``b`` in grouped order, ``a`` in
row-major order) is *multicast*: each block issues half of it (half its boxes, or each box's
half of the rows through a map of ``rows / 2``-row boxes, ``tma.multicast_split``) with
``.multicast::cluster`` to both blocks, landing at the same offsets and completing on both
blocks' ``full[s]``. The expected bytes are the tile's whole either way (a partner's bytes
may land before this block's ``expect_tx``; the phase cannot complete before this block's
producer arrives). The producer writes the slot's *paired* flag before posting its bytes;
the consumers' release reads it (acquired through ``full[s]``): paired, each warp arrives on
the partner's (``mapa``) and then its own ``empty[s]`` (in that order: its own arrival lets
its block run ``S`` tiles ahead, and those tiles' releases must not complete the partner's
phase for this one), so neither producer
refills a slot the other block still reads; alone, it arrives ``nctarank`` times on its own.
Every exit of both roles passes a cluster barrier: no block leaves while the other may still
write into its shared memory or arrive on its barriers.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils

from .. import compiler_context
from .common import I32, I64, const_i64, thread_index
from .shared import address32, pool

#: threads of the producer warpgroup
PRODUCER_THREADS = 128
#: the descriptor's loop number that tells the producer to return
STOP = 0xFFFFFFFF
#: bytes of the job region: the job barrier (8), the loop number (4 + 4), the trip count
#: (8), then 16 per staged load (box coordinate across the loop, 4 + 4, or, persistent,
#: the tile grid across it, 8; the tile grid along the loop, 8), then (persistent) the
#: partition's tile grid (2 x 8)
JOB_BYTES = 24 + 16 * 16 + 16 + 4 * 8
#: offset in the job region of the ring's per-slot flags (a cluster's kernel, i32 each, up to
#: 8 stages): 1 where the producer loaded the slot's tile with the partner block's (paired)
FLAGS_OFF = 24 + 16 * 16 + 16
#: the producer's registers after ``setmaxnreg.dec`` (CUTLASS's and the brief's 40)
PRODUCER_REGS = 40


def consumer_registers(n_cons: int) -> int:
    """The consumers' registers after ``setmaxnreg.inc`` (0: no ``setmaxnreg``): the block's
    pool at launch (``N + 128`` threads at the launch bound's cap, ``65536 / (N + 128)``
    rounded down to 8) less the producer's 40 each, shared by the ``N`` consumers, rounded
    down to 8, at most 240: 232 with 8 consumer warps (40 * 128 + 232 * 256 = 168 * 384, the
    brief's section 0.7), 104 with 16. With 4 consumer warps (256 threads, 255 registers
    each at launch) there is nothing to move."""
    if n_cons < 256:
        return 0
    cap = 65536 // (n_cons + PRODUCER_THREADS) // 8 * 8
    pool_regs = cap * (n_cons + PRODUCER_THREADS) - PRODUCER_REGS * PRODUCER_THREADS
    return min(240, pool_regs // n_cons // 8 * 8)


def _asm(builder, text, constraints="", args=(), types=()):
    fn = ir.InlineAsm(ir.FunctionType(ir.VoidType(), list(types)), text,
                      ",".join(filter(None, [constraints, "~{memory}"])), side_effect=True)
    builder.call(fn, list(args))


def active() -> bool:
    return bool(getattr(compiler_context.current(), "warp_specialized", False))


def cluster() -> bool:
    """The kernel pairs blocks in clusters of two (module docstring, *Clusters*): its only
    warp-specialized loop is a persistent one that ``typing/pipeline._cluster_ok`` admits."""
    loops = getattr(compiler_context.current(), "ws_typed_loops", None) or {}
    return len(loops) == 1 and all(loops.values())


def _job_region(builder):
    """``i8 addrspace(3)*`` of the kernel's job region (allocated by its first user)."""
    ctx = compiler_context.current()
    off = getattr(ctx, "ws_job_off", None)
    if off is None:
        pool().allocate(builder, JOB_BYTES, "the warp-specialized loops' job descriptor")
        off = ctx.ws_job_off = pool().persistent[-1][0]
    return pool().at(builder, off)


def record_trip_count(builder, n, grid=None, order=None):
    """``_ws_post``'s lowering: the trip count of the loop whose staged loads come next (and,
    in a persistent tiles loop, its partition's tile grid and order)."""
    ctx = compiler_context.current()
    ctx.ws_trip_count, ctx.ws_grid, ctx.ws_order = n, grid, order


def ring_counter(builder, k, first: bool):
    """A persistent loop's ring position of its tile ``k`` (i64): ``base + k``, where
    ``base`` counts the tiles of the earlier runs (a cell set to 0 at the kernel's entry,
    advanced by the trip count at each run's ``k == 0``). ``first``: the loop's first staged
    load, which emits it; the others reuse it."""
    ctx = compiler_context.current()
    if not first:
        return ctx.ws_counter
    nxt = cgutils.alloca_once(builder, I64, name="ws.next")     # zero at the kernel's entry
    base = cgutils.alloca_once(builder, I64, name="ws.base")
    with builder.if_then(builder.icmp_unsigned("==", k, const_i64(0))):
        cur = builder.load(nxt)
        builder.store(cur, base)
        builder.store(builder.add(cur, ctx.ws_trip_count), nxt)
    g = builder.add(builder.load(base), k)
    ctx.ws_counter = g
    return g


def init_and_post(builder, loop: dict, bars, plans, num_warps: int):
    """At ``k == 0`` of a loop's run (the caller's branch, after the restart barrier): thread
    0 initializes ``full``/``empty``, writes the job and arrives on the job barrier. The
    caller passes the consumers' block barrier next."""
    ctx = compiler_context.current()
    n = getattr(ctx, "ws_trip_count", None)
    assert n is not None, "a warp-specialized loop without its _ws_post"
    S = loop["stages"]
    base = address32(builder, bars)
    job = _job_region(builder)
    with builder.if_then(builder.icmp_unsigned("==", thread_index(builder), const_i64(0))):
        if not cluster():         # a cluster's: at the kernel's entry (split_roles)
            _init_ring(builder, base, S, num_warps)

        def put(offset, value):
            ptr = builder.gep(job, [const_i64(offset)])
            builder.store(value, builder.bitcast(ptr, value.type.as_pointer(3)))
        put(8, ir.Constant(I32, loop["id"]))
        put(16, builder.sext(n, I64) if n.type.width < 64 else n)
        for j, plan in enumerate(plans):
            if loop["persistent"]:
                put(24 + 16 * j, plan.grid[1 - plan.axis])
            else:
                put(24 + 16 * j, plan.other)
            put(32 + 16 * j, plan.grid[plan.axis])
        if loop["persistent"]:
            for a, g in enumerate(ctx.ws_grid):
                put(24 + 16 * len(plans) + 8 * a, g)
        _asm(builder, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r",
             (address32(builder, job),), (I32,))


def _init_ring(builder, base, S: int, empty_count):
    """``full[s]`` (arrival count 1) and ``empty[s]`` (``empty_count`` arrivals: an int, or
    an i32 value) from ``base`` (32-bit shared address), then the initialization fence."""
    for s in range(S):
        _asm(builder, "mbarrier.init.shared::cta.b64 [$0], 1;", "r",
             (builder.add(base, ir.Constant(I32, 8 * s)),), (I32,))
        empty = builder.add(base, ir.Constant(I32, 8 * (S + s)))
        if isinstance(empty_count, int):
            _asm(builder, f"mbarrier.init.shared::cta.b64 [$0], {empty_count};", "r",
                 (empty,), (I32,))
        else:
            _asm(builder, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
                 (empty, empty_count), (I32, I32))
    _asm(builder, "fence.mbarrier_init.release.cluster;")


def release(builder, bars, stages: int, k, pending: int):
    """After ``wgmma.wait_group pending`` in iteration ``k``: lane 0 of every consumer warp
    arrives on ``empty[(k - pending) mod S]`` (``k >= pending``); in a cluster's kernel, on
    both blocks' where the slot held a paired tile (its flag; with ``pending``, position
    ``k`` paired too: the partner's release of ``k - pending`` comes from its position ``k``),
    else ``nctarank`` times on its own."""
    lane0 = builder.icmp_unsigned("==", builder.and_(thread_index(builder), const_i64(31)),
                                  const_i64(0))
    cond = lane0 if pending == 0 else builder.and_(
        lane0, builder.icmp_unsigned(">=", k, const_i64(pending)))
    with builder.if_then(cond):
        t = builder.sub(k, const_i64(pending))
        s = builder.trunc(builder.urem(t, const_i64(stages)), I32)
        bar = builder.add(address32(builder, bars),
                          builder.mul(builder.add(s, ir.Constant(I32, stages)),
                                      ir.Constant(I32, 8)))
        if not cluster():
            _asm(builder, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", (bar,), (I32,))
            return
        flag = builder.load(_flag_ptr(builder, s))
        if pending:
            # slot t's partner releases it from its own position k, which exists only while
            # k is paired too: a block whose partner has run out (its extra tiles) stands in
            # for the partner's arrival on its own barrier
            now = builder.trunc(builder.urem(k, const_i64(stages)), I32)
            flag = builder.and_(flag, builder.load(_flag_ptr(builder, now)))
        with builder.if_else(builder.icmp_unsigned("!=", flag, ir.Constant(I32, 0))) \
                as (paired, alone):
            with paired:
                # the partner's barrier first: this warp's own arrival lets its block's
                # producer refill the slot and its block's warps run S tiles ahead, whose
                # releases to the partner must not count in the phase this one belongs to
                _asm(builder, "{\n\t.reg .b32 R1;\n\t"
                              "mapa.shared::cluster.u32 R1, $0, $1;\n\t"
                              "mbarrier.arrive.shared::cluster.b64 _, [R1];"
                              "\n\t}", "r,r",
                     (bar, builder.xor(_sreg32(builder, "%cluster_ctarank"),
                                       ir.Constant(I32, 1))), (I32, I32))
                _asm(builder, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", (bar,), (I32,))
            with alone:
                _asm(builder, "mbarrier.arrive.shared::cta.b64 _, [$0], $1;", "r,r",
                     (bar, _sreg32(builder, "%cluster_nctarank")), (I32, I32))


def _flag_ptr(builder, s):
    """``i32 addrspace(3)*`` of slot ``s``'s flag (i32) in the job region."""
    job = _job_region(builder)
    ptr = builder.gep(job, [builder.add(const_i64(FLAGS_OFF),
                                        builder.mul(builder.zext(s, I64), const_i64(4)))])
    return builder.bitcast(ptr, I32.as_pointer(3))


def _cluster_sync(builder, aligned: bool):
    """Every thread of both blocks: ``barrier.cluster.arrive`` (release) then ``wait``
    (acquire); ``aligned``: every thread of the warp executes it together."""
    a = ".aligned" if aligned else ""
    _asm(builder, f"barrier.cluster.arrive{a};\n\tbarrier.cluster.wait{a};")


def _post_stop(builder):
    job = _job_region(builder)
    tid = _tid(builder)
    with builder.if_then(builder.icmp_unsigned("==", tid, ir.Constant(I32, 0))):
        # volatile: the producer may be polling the word (_stopped), not only waiting on
        # the job barrier; the arrive's release orders it for the job-barrier path
        _asm(builder, "st.volatile.shared.u32 [$0], $1;", "r,r",
             (builder.add(address32(builder, job), ir.Constant(I32, 8)),
              ir.Constant(I32, STOP)), (I32, I32))
        _asm(builder, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r",
             (address32(builder, job),), (I32,))


def _tid(builder):
    fn = ir.InlineAsm(ir.FunctionType(I32, []), "mov.u32 $0, %tid.x;", "=r", side_effect=True)
    return builder.call(fn, [])


def _wait(builder, bar32, parity32):
    _asm(builder, "{\n\t.reg .pred P1;\n\tNT_WS_WAIT:\n\t"
                  "mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n\t"
                  "@!P1 bra NT_WS_WAIT;\n\t}", "r,r", (bar32, parity32), (I32, I32))


def _try_wait(builder, bar32, parity32):
    """i1: one ``mbarrier.try_wait.parity`` (it suspends the thread for a while in the
    hardware before it answers no)."""
    fn = ir.InlineAsm(ir.FunctionType(I32, [I32, I32]),
                      "{\n\t.reg .pred P1;\n\t"
                      "mbarrier.try_wait.parity.shared::cta.b64 P1, [$1], $2;\n\t"
                      "selp.u32 $0, 1, 0, P1;\n\t}", "=r,r,r,~{memory}", side_effect=True)
    return builder.icmp_unsigned("!=", builder.call(fn, [bar32, parity32]), ir.Constant(I32, 0))


def _stopped(builder):
    """i1: the consumers have posted the stop job (a volatile read of the job's loop number:
    the consumers may write it at any time)."""
    job = _job_region(builder)
    fn = ir.InlineAsm(ir.FunctionType(I32, [I32]), "ld.volatile.shared.u32 $0, [$1];",
                      "=r,r,~{memory}", side_effect=True)
    which = builder.call(fn, [builder.add(address32(builder, job), ir.Constant(I32, 8))])
    return builder.icmp_unsigned("==", which, ir.Constant(I32, STOP))


def _wait_or_stop(builder, bar32, parity32, stop_block):
    """The producer's wait for a slot to be empty, watching for the consumers' stop job: a
    consumer that leaves mid-loop (a return, or an exception Numba raises in the loop's body:
    a ``range`` step of 0, a tuple index out of range) releases no more slots, so the
    producer, instead of waiting forever, goes to ``stop_block`` (drain and return)."""
    fn = builder.function
    spin = fn.append_basic_block("ws.spin")
    check = fn.append_basic_block("ws.check")
    ready = fn.append_basic_block("ws.ready")
    builder.branch(spin)
    builder.position_at_end(spin)
    builder.cbranch(_try_wait(builder, bar32, parity32), ready, check)
    builder.position_at_end(check)
    builder.cbranch(_stopped(builder), stop_block, spin)
    builder.position_at_end(ready)


def _drain(builder, bars, S: int, issued):
    """Before the producer returns: every box it issued has landed (``full`` of the last
    ``S`` ring positions below ``issued``, i64, each the newest tile of its slot), so no TMA
    copy writes the block's shared memory after the block has exited. Positions whose tiles
    the consumers read have completed already: the waits return at once."""
    for j in range(1, S + 1):
        with builder.if_then(builder.icmp_unsigned(">=", issued, const_i64(j))):
            pos = builder.sub(issued, const_i64(j))
            s = builder.trunc(builder.urem(pos, const_i64(S)), I32)
            lap = builder.trunc(builder.udiv(pos, const_i64(S)), I32)
            _wait(builder, builder.add(bars, builder.mul(s, ir.Constant(I32, 8))),
                  builder.and_(lap, ir.Constant(I32, 1)))


def split_roles(kernel) -> None:
    """Give ``kernel`` (its ``llvmlite.ir`` function, the consumers' code as lowered) its
    producer warpgroup: a new entry block (the old one's ``alloca``s moved into it) that
    initializes the job barrier and branches on the thread index; every return of the
    consumers' code posts the stop job first (see the module docstring)."""
    from .tile_order import tile_coords_of_grid
    from .tma import (expect_bytes, issue_boxes, issue_boxes_multicast, map_index,
                      multicast_split)
    ctx = compiler_context.current()
    loops = ctx.ws_loops
    n_cons = ctx.num_threads
    paired_kernel = cluster()
    old_entry = kernel.blocks[0]
    for block in list(kernel.blocks):
        term = block.terminator
        if isinstance(term, ir.Ret):
            block.instructions.remove(term)
            block.terminator = None
            b = ir.IRBuilder(block)
            _post_stop(b)
            if paired_kernel:       # no block leaves while its partner may still reach it
                _cluster_sync(b, aligned=False)
            if term.operands:
                b.ret(term.operands[0])
            else:
                b.ret_void()
    entry = kernel.insert_basic_block(0, "ws.entry")
    allocas = [i for i in old_entry.instructions if isinstance(i, ir.AllocaInstr)]
    for i in allocas:
        old_entry.instructions.remove(i)
        i.parent = entry
    entry.instructions[:0] = allocas
    b = ir.IRBuilder(entry)
    tid = _tid(b)
    job = _job_region(b)
    with b.if_then(b.icmp_unsigned("==", tid, ir.Constant(I32, 0))):
        _asm(b, "mbarrier.init.shared::cta.b64 [$0], 1;", "r", (address32(b, job),), (I32,))
        if paired_kernel:
            # the ring's barriers before any block of the cluster may reach them: empty[s]
            # counts every consumer warp of the blocks that read the slot's boxes
            (loop,) = loops
            _init_ring(b, address32(b, pool().at(b, loop["bars_off"])), loop["stages"],
                       b.mul(_sreg32(b, "%cluster_nctarank"), ir.Constant(I32, n_cons // 32)))
        _asm(b, "fence.mbarrier_init.release.cluster;")
    b.call(cgutils.get_or_insert_function(b.module, ir.FunctionType(ir.VoidType(), []),
                                          "llvm.nvvm.barrier0"), [])
    if paired_kernel:
        _cluster_sync(b, aligned=True)
    regs = consumer_registers(n_cons)
    producer = kernel.append_basic_block("ws.producer")
    consumer = kernel.append_basic_block("ws.consumer")
    b.cbranch(b.icmp_unsigned(">=", tid, ir.Constant(I32, n_cons)), producer, consumer)
    b.position_at_end(consumer)
    if regs:
        _asm(b, f"setmaxnreg.inc.sync.aligned.u32 {regs};")
    b.branch(old_entry)

    b.position_at_end(producer)
    if regs:
        _asm(b, f"setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGS};")
    done = kernel.append_basic_block("ws.done")
    head = kernel.append_basic_block("ws.job")
    parity = cgutils.alloca_once_value(b, ir.Constant(I32, 0))
    # per loop, the ring positions its current job has issued (0 for a loop not running):
    # what a stop drains
    issued = {loop["id"]: cgutils.alloca_once_value(b, const_i64(0)) for loop in loops}
    b.cbranch(b.icmp_unsigned("==", tid, ir.Constant(I32, n_cons)), head, done)
    b.position_at_end(done)
    if paired_kernel:
        _cluster_sync(b, aligned=False)
    b.ret_void()

    stop = kernel.append_basic_block("ws.stop")
    b.position_at_end(stop)
    for loop in loops:
        _drain(b, address32(b, pool().at(b, loop["bars_off"])), loop["stages"],
               b.load(issued[loop["id"]]))
    b.branch(done)

    b.position_at_end(head)
    job = _job_region(b)
    ph = b.load(parity)
    _wait(b, address32(b, job), ph)
    b.store(b.xor(ph, ir.Constant(I32, 1)), parity)

    def get(offset, ty):
        return b.load(b.bitcast(b.gep(job, [const_i64(offset)]), ty.as_pointer(3)))
    which = get(8, I32)
    switch = b.switch(which, stop)
    for loop in loops:
        blk = kernel.append_basic_block(f"ws.loop{loop['id']}")
        switch.add_case(ir.Constant(I32, loop["id"]), blk)
        b.position_at_end(blk)
        for cell in issued.values():        # a new job: only this loop's ring is in use
            b.store(const_i64(0), cell)
        mine = issued[loop["id"]]
        n = get(16, I64)
        others = None if loop["persistent"] else [get(24 + 16 * j, I32)
                                                  for j in range(len(loop["loads"]))]
        grids = [get(32 + 16 * j, I64) for j in range(len(loop["loads"]))]
        S = loop["stages"]
        bars = address32(b, pool().at(b, loop["bars_off"]))
        if paired_kernel:
            nct = _sreg32(b, "%cluster_nctarank")
            rank = _sreg32(b, "%cluster_ctarank")
            for ld in loop["loads"]:
                ld["split"] = multicast_split(ld["rows"], ld["cols"], ld["itemsize"])
                ld["mc_map"] = (ld["map"] if ld["split"] != "rows"
                                else map_index(ld["param"], ld["rows"] // 2))
        slots = [_ring_base(b, ld["ring_off"]) for ld in loop["loads"]]
        total = sum(ld["tile_bytes"] for ld in loop["loads"])
        loads = loop["loads"]

        def tile(g, kk, others, paired=None, shared=None):
            """Ring position ``g`` (i64): tile ``kk`` of the run, box coordinates ``others``;
            a cluster's kernel: ``paired`` (i1) the partner block loads its position ``g``
            too, ``shared[j]`` (i1 or None) load ``j``'s tile is the partner's (multicast)."""
            s = b.trunc(b.urem(g, const_i64(S)), I32)
            lap = b.trunc(b.udiv(g, const_i64(S)), I32)
            with b.if_then(b.icmp_unsigned(">=", g, const_i64(S))):
                empty = b.add(bars, b.mul(b.add(s, ir.Constant(I32, S)), ir.Constant(I32, 8)))
                _wait_or_stop(b, empty, b.and_(b.add(lap, ir.Constant(I32, 1)),
                                               ir.Constant(I32, 1)), stop)
            full = b.add(bars, b.mul(s, ir.Constant(I32, 8)))
            b.store(b.add(g, const_i64(1)), mine)       # position g is issued below
            if paired is not None:      # read by the consumers' release (acquired on full)
                b.store(b.zext(paired, I32), _flag_ptr(b, s))
            expect_bytes(b, full, total)
            for j, (ld, slot, other, grid) in enumerate(zip(loads, slots, others, grids)):
                dst = b.add(slot, b.mul(s, ir.Constant(I32, ld["tile_bytes"])))
                t = b.select(b.icmp_unsigned("<", kk, grid), kk, grid)
                start = b.trunc(b.mul(t, const_i64(_tile_along(ld))), I32)
                if shared is None or shared[j] is None:
                    issue_boxes(b, ld["map"], ld["rows"], ld["cols"], ld["itemsize"],
                                ld["axis"], dst, start, other, full)
                    continue
                with b.if_else(shared[j]) as (both, own):
                    with both:
                        issue_boxes_multicast(b, ld["split"], ld["mc_map"], ld["rows"],
                                              ld["cols"], ld["itemsize"], ld["axis"], dst,
                                              start, other, full, rank)
                    with own:
                        issue_boxes(b, ld["map"], ld["rows"], ld["cols"], ld["itemsize"],
                                    ld["axis"], dst, start, other, full)

        if not loop["persistent"]:
            with cgutils.for_range(b, n) as it:
                tile(it.index, it.index, others)
            b.branch(head)
            continue
        # persistent: the tiles loop's own sequence (lowering/partition._block_strided:
        # bid, bid + nctaid, ... below the tile count), each tile's n tiles along the loop
        across = [get(24 + 16 * j, I64) for j in range(len(loads))]
        pgrid = [get(24 + 16 * len(loads) + 8 * a, I64) for a in range(2)]
        count = b.mul(pgrid[0], pgrid[1])
        step = b.zext(_sreg32(b, "%nctaid.x"), I64)
        g_cell = cgutils.alloca_once_value(b, const_i64(0))
        cur_cell = cgutils.alloca_once_value(b, b.zext(_sreg32(b, "%ctaid.x"), I64))
        t_head = kernel.append_basic_block(f"ws.tiles{loop['id']}")
        t_body = kernel.append_basic_block(f"ws.tile{loop['id']}")
        b.branch(t_head)
        b.position_at_end(t_head)
        cur = b.load(cur_cell)
        b.cbranch(b.icmp_unsigned("<", cur, count), t_body, head)
        b.position_at_end(t_body)
        # C's tile count is below 2**32 in any C a device holds (tiles of at least 16 x 16
        # elements): 32-bit divisions, no call (a call serializes the consumers' wgmmas)
        def box_others(cur):
            coords = tile_coords_of_grid(b, pgrid, loop["order"], cur, small=True)
            out = []
            for ld, g_o in zip(loads, across):
                t = coords[ld["d"]]
                t = b.select(b.icmp_unsigned("<", t, g_o), t, g_o)
                out.append(b.trunc(b.mul(t, const_i64(_tile_across(ld))), I32))
            return out
        tiles_others = box_others(cur)
        paired = shared = None
        if paired_kernel:
            # the partner walks tile cur ^ 1 in step (a cluster's blocks 2c, 2c + 1 and an
            # even grid): paired while that tile exists; a load whose box coordinates are
            # the partner's too is multicast, half of it issued by each block
            mate = b.xor(cur, const_i64(1))
            paired = b.and_(b.icmp_unsigned("==", nct, ir.Constant(I32, 2)),
                            b.icmp_unsigned("<", mate, count))
            mate_others = box_others(b.select(paired, mate, cur))
            shared = [b.and_(paired, b.icmp_unsigned("==", mine, theirs))
                      if ld["split"] else None
                      for ld, mine, theirs in zip(loads, tiles_others, mate_others)]
        with cgutils.for_range(b, n) as it:
            g = b.load(g_cell)
            tile(g, it.index, tiles_others, paired, shared)
            b.store(b.add(g, const_i64(1)), g_cell)
        b.store(b.add(cur, step), cur_cell)
        b.branch(t_head)


def _tile_along(ld) -> int:
    return ld["rows"] if ld["axis"] == 0 else ld["cols"]


def _tile_across(ld) -> int:
    return ld["cols"] if ld["axis"] == 0 else ld["rows"]


def _sreg32(builder, name: str):
    fn = ir.InlineAsm(ir.FunctionType(I32, []), f"mov.u32 $0, {name};", "=r", side_effect=True)
    return builder.call(fn, [])


def _ring_base(builder, off):
    """32-bit shared address of a TMA ring's slot 0 (``pipeline.Ring``: 1024-byte aligned)."""
    from .staging import align_1024
    return address32(builder, align_1024(builder, pool().at(builder, off)))


__all__ = ["PRODUCER_THREADS", "active", "init_and_post", "record_trip_count", "release",
           "split_roles"]
