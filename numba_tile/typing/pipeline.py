"""Which loads a kernel's loops software-pipeline (``num_stages > 1``): an analysis of the
typed IR that marks the calls the lowering then emits as ``cp.async`` stages.

A load is *staged* when all of these hold (anything else is lowered as an ordinary load):

* it is ``load(t, index, shape[, padding])`` of a read-only tensor parameter ``t`` of two or
  more dimensions whose specialization allows 16-byte vector accesses (``vec16``), of
  float16, bfloat16, float32, float64, int8, int32, int64 or FP8, with tile rows of 16 bytes
  or more; a tile of an N-D tensor has extent 1 on all but its last axis and one other
  (:func:`plane_axes`: ``(1, 1, BM, D)`` of a (B, H, S, D) tensor, ``(BM, 1, D)`` of a
  packed (S, H, D) one; the copies walk that plane at the other coordinates,
  ``lowering/pipeline.PlaneView``);
* it sits in a ``for k in range(n)`` or ``for k in range(a, n)`` loop (step 1; ``a`` the same
  in every iteration), in a block that runs on every iteration (it dominates the loop's back
  edges) and not in a nested loop;
* its index is a tuple whose components are ``k`` itself on exactly one of the tile's two axes
  and values that do not change within the loop on the others (defined before the loop,
  constants, ``bid``/``num_blocks``/``num_tiles`` of such values, ``idx[d]`` of an index
  defined before the loop, and integer arithmetic on them);
* or it is ``load_at(t, offset, shape, padding)`` whose offset is ``k * C`` or ``o + k * C``
  (``C`` a constant, ``o`` loop-invariant) on exactly one of the tile's two axes and
  loop-invariant on the others, the last axis' offset whole 16-byte chunks (``C`` and ``o``
  multiples of them there, else an offset visibly one: ``j * BN`` with ``BN`` a constant
  multiple); tile ``k``'s copies start at ``o + k * C`` (``StageInfo.step``);
* if its tile (16-bit floats or FP8, no padding or a literal zero) is used only as operand
  ``a`` or ``b`` of ``mma``/``matmul``/``@`` products in the same block (one or several),
  directly or through a ``reshape`` of an N-D tile to its two axes and then a ``transpose``
  (``.T``, ``permute(x, (1, 0))``) as operand ``b``, the products read the slot itself (a
  transposed ``b``'s slot holds N rows of K: K-major, the only form FP8 ``wgmma`` reads, so
  an FP8 ``b`` is staged only that way); any other use of a 16-bit or wider tile (the
  accumulator of a product included) gets it read back into registers from the slot
  (padding applied there, the same valid extents as the ordinary load); FP8 tiles are staged
  only into a product's slots.

The load's and the product's call signatures are replaced by :class:`StagedSignature`
copies carrying the facts the lowering needs (``lowering/pipeline.py``). Staging changes
where the tile's bytes travel (global memory to shared memory, no registers), never which
bytes are read: the same bounds, the same zero fill.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba.cuda import types
from numba.cuda.core import ir
from numba.cuda.typing.templates import Signature

from .. import dtypes
from .._registry import op_for_key
from .operand_uses import (PRODUCT_DTYPES, REGISTER_DTYPES, as_matmul_call, bound_args,
                           is_transpose, plane_axes, product_uses, zero_padding)
from .types import TensorType, TileType
from .loop_ir import (_INT_BINOPS, _aligned, _induction_variable, _invariant, _latches,
                      _loop_linear, _op, _pair_first, _range_bound, _range_start, _single_def,
                      with_copies)


@dataclass(frozen=True)
class StageInfo:
    """Facts of one staged load.

    Attributes:
        key: identifies the load in this compilation (its product refers to it).
        loop: identifies the loop; ``count``: staged loads in it, ``order``: this load's
            position among them (program order).
        axis: the index axis that is the loop's induction variable.
        stages: ``num_stages``.
    """

    key: int
    loop: int
    count: int
    order: int
    axis: int
    stages: int
    #: ``"shared"``: the product reads the slot; ``"registers"``: the load reads it back into
    #: the tile's registers itself
    mode: str = "shared"
    #: the product issues this load's copies (:func:`defer_to_product`): every staged load of
    #: the loop feeds one ``wgmma`` product
    deferred: bool = False
    #: the copies are TMA boxes (``lowering/tma.py``) rather than ``cp.async`` chunks
    tma: bool = False
    #: ``load_at``: the offset's elements per iteration along ``axis`` (its ``k * step``);
    #: None for ``load`` (tile indices)
    step: int | None = None
    #: a producer warpgroup issues them (``lowering/ws.py``; TMA loops only): True, or
    #: ``("persistent", d0, d1, ...)`` where the producer walks a ``tiles(z)`` loop itself
    #: (``d``: which coordinate of the tile index each staged load takes across the loop)
    ws: object = False
    #: the loop's iterations are counted from its start, which ``_stage_origin`` records
    #: (:func:`_insert_origin`): ``range(a, n)`` with ``a`` not 0, or a ``load_at`` offset
    #: ``o + k * C``; tile indices may then be negative (cp.async only, no TMA)
    origin: bool = False


class StagedSignature(Signature):
    """A call signature with the pipelining facts of its call (``stage``: a
    :class:`StageInfo` for a staged load; ``operands``: ``{0: key, 1: key}`` for a product
    fed by staged loads, ``wait``: ``(last operand order, wait depth)``; ``deferred``: the
    product issues its operands' copies, :func:`defer_to_product`)."""

    __slots__ = ("stage", "operands", "wait", "deferred", "pending", "tma", "b_kmajor",
                 "passthrough", "ws", "loop")

    @classmethod
    def of(cls, sig, stage=None, operands=None, wait=None, deferred=False, pending=0,
           tma=False, b_kmajor=False, passthrough=False, ws=False, loop=None):
        new = cls(sig.return_type, sig.args, sig.recvr, sig.pysig)
        #: ``_stage_origin``: the loop whose start it records (:func:`_insert_origin`)
        new.loop = loop
        new.stage, new.operands, new.wait = stage, operands or {}, wait
        new.deferred, new.pending, new.tma = deferred, pending, tma
        #: warp-specialized: the producer warpgroup issues the TMA boxes (``lowering/ws.py``)
        new.ws = ws
        #: a product whose operand b is a staged load of a transposed tile: its slot holds N
        #: rows of K (K-major, what FP8 wgmma needs), not K rows of N
        new.b_kmajor = b_kmajor
        #: a ``transpose`` of such a load: its value is never read (the product reads the slot)
        new.passthrough = passthrough
        return new


def defer_to_product(found, typemap_product) -> bool:
    """Whether a loop's staged loads take the *deferred* schedule (``lowering/pipeline.py``):
    every one of them feeds the same product, and that product lowers to Hopper's ``wgmma``
    (its accumulator's layout says so). The product then issues all the copies itself, one
    commit group per tile holding every operand's chunks, right after it has issued its
    asynchronous ``wgmma``: ``S - 1`` tiles in flight, and the copies' issue overlaps the
    tensor cores' work."""
    products = {id(prod) for (_st, _axis, prod, _operand, _pos, _ppos) in found}
    if len(products) != 1 or found[0][2] is None:
        return False
    layout = getattr(typemap_product, "layout", None)
    return bool(getattr(layout, "wgmma", False))


def wait_depth(count: int, last: int, before: int, stages: int) -> int:
    """Copy groups that may stay pending when a product reads tile ``k`` of its operands, once
    the pipeline is full (``lowering/pipeline.py``).

    Each iteration commits one group per staged load, in program order, each for the tile
    ``S - 2`` iterations ahead. Tile ``k`` of the last operand load (order ``last``) was
    committed in iteration ``k - S + 2``; after it came the ``count - 1 - last`` later loads of
    that iteration, ``count`` loads in each of the ``S - 3`` iterations in between, and the
    ``before`` loads of this iteration that precede the product.
    """
    return max(0, (count - 1 - last) + count * (stages - 3) + before)


def count_after_own(count: int, stages: int) -> int:
    """Groups that may stay pending when a load that reads its slot back into registers waits
    for its tile ``k``, right after committing tile ``k + S - 2``: the other loads' of the
    iteration it was committed in and of the ``S - 3`` between, and this iteration's up to
    itself: ``count (S - 2)`` (see :func:`wait_depth`)."""
    return count * (stages - 2)


def pending_products(num_stages: int) -> int:
    """``wgmma`` groups a deferred product leaves in flight when it returns (0 or 1): 1 from 4
    stages on, else 0. With 1 the next iteration's ``wgmma`` queues behind the running one
    across the block barrier, and the refill targets the slot of ``k - 2`` (``S - 3`` tiles in
    flight besides): with 3 stages that leaves one tile in flight, too few. Measured on the
    H200 (2026-12-01, TMA, 128 x 256 x 64 over 8 warps, float16 at 8192^3): 4 stages 723
    TFLOP/s with 1, 627 with 0; 3 stages 530 with 1, 626 with 0. ``NUMBA_TILE_WGMMA_PENDING``
    ``0`` or ``1`` overrides it (1 from 3 stages); part of ``Kernel.compile``'s cache keys."""
    import os

    from ..compiler_context import current
    if getattr(current(), "no_pending", False):
        return 0                 # compiler.compile_kernel's retry: ptxas serialized the wgmmas
    env = os.environ.get("NUMBA_TILE_WGMMA_PENDING", "").strip()
    if env in ("0", "1"):
        return int(env) if num_stages >= 3 else 0
    return 1 if num_stages >= 4 else 0


def _drain_in_last_iteration(func_ir, typemap, calltypes, typingctx, cfg, loop, st_prod,
                             induction, bound, uses, operands):
    """Insert ``acc' = _wgmma_drain(acc, k, n)`` right after a deferred product
    ``acc = mma(x, y, acc0)`` and carry ``acc'`` around the loop: in the iteration
    ``k + 1 == n`` it waits for the TMA boxes issued past the loop's end
    (``lowering/mma.lower_wgmma_drain``). Its shape checks also admit a product that leaves its
    group in flight (``_wait_at_loop_exit``).

    Only where the registers in flight are read by nothing but the next ``wgmma``: the loop is
    a ``for k in range(n)`` left through one exit block entered from its header alone (no
    ``break`` or ``return`` inside), the product's result feeds only the header's phi, and
    that phi (``acc0``) is read inside the loop only by the product. Returns the drain's
    :class:`StagedSignature` (``operands``: the product's staged loads; the caller sets
    ``pending`` and ``tma``), or None where it was not inserted (the product then waits for
    its group itself and its loads stay on ``cp.async``)."""
    from .. import language
    if typingctx is None or bound is None or len(loop.exits) != 1:
        return None
    blocks = func_ir.blocks
    (exit_label,) = loop.exits
    if [src for src, _ in cfg.predecessors(exit_label)] != [loop.header]:
        return None
    expr = st_prod.value
    if getattr(expr, "op", None) != "call" or len(expr.args) < 3 or expr.kws:
        return None              # ``acc + x @ y`` (a binop), or acc by keyword
    acc_new, acc_old = st_prod.target, st_prod.value.args[2]
    phi = next((st for st in blocks[loop.header].body if isinstance(st, ir.Assign)
                and st.target.name == acc_old.name and isinstance(st.value, ir.Expr)
                and st.value.op == "phi"), None)
    if phi is None or [v.name for v in phi.value.incoming_values].count(acc_new.name) != 1:
        return None
    if [st for _lb, st in uses.get(acc_new.name, [])] != [phi]:
        return None
    if [st for lb, st in uses.get(acc_old.name, []) if lb in loop.body] != [st_prod]:
        return None
    k = next(iter(sorted(induction)))
    if not (isinstance(typemap.get(k), types.Integer)
            and isinstance(typemap.get(bound.name), types.Integer)):
        return None              # range(True): nothing for the internal op to say
    label = next(lb for lb in loop.body if st_prod in blocks[lb].body)
    blk = blocks[label]
    scope, loc = blk.scope, st_prod.loc
    fn_var = scope.redefine("$wgmma_drain_fn", loc)
    out_var = scope.redefine(acc_new.name + ".drained", loc)
    k_var = ir.Var(scope, k, loc)
    fnty = typingctx.resolve_value_type(language._wgmma_drain)
    sig = fnty.get_call_type(typingctx, (typemap[acc_new.name], typemap[k],
                                         typemap[bound.name]), {})
    if sig is None:
        return None
    sig = StagedSignature.of(sig, operands=operands)
    call = ir.Expr.call(fn_var, [acc_new, k_var, bound], (), loc)
    typemap[fn_var.name] = fnty
    typemap[out_var.name] = typemap[acc_new.name]
    dict.__setitem__(calltypes, call, sig)
    from numba.cuda.core.ir_utils import replace_vars_stmt
    replace_vars_stmt(phi, {acc_new.name: out_var})
    i = blk.body.index(st_prod)
    blk.body[i + 1:i + 1] = [
        ir.Assign(ir.Global("_wgmma_drain", language._wgmma_drain, loc), fn_var, loc),
        ir.Assign(call, out_var, loc)]
    return sig


def _wait_at_loop_exit(func_ir, typemap, calltypes, typingctx, loop, acc_old) -> bool:
    """Where a deferred product leaves its last ``wgmma`` group in flight (``pending = 1``):
    ``acc' = _wgmma_wait(acc)`` as the first statement of the loop's exit block (``acc``: the
    accumulator's header phi), and the code after the loop reads ``acc'``. The caller has
    checked the loop's shape (``_drain_in_last_iteration``). The wait is the exit block's first
    instruction: ptxas keeps the pipeline then (a wait inside the loop, under a test other
    than the loop's own exit test, made ptxas inject another into the latch, C7517; a
    ``%tid.x`` read before the wait made it serialize the wgmmas, C7514: the lowering reads
    the thread index once, at the kernel's entry, ``lowering/common.thread_index``)."""
    from numba.cuda.core.ir_utils import replace_vars_stmt

    from .. import language
    from ..compiler_context import current
    blocks = func_ir.blocks
    (exit_label,) = loop.exits
    scope, loc = blocks[exit_label].scope, blocks[exit_label].loc
    fnty = typingctx.resolve_value_type(language._wgmma_wait)
    sig = fnty.get_call_type(typingctx, (typemap[acc_old.name],), {})
    if sig is None:
        return False
    fn_var = scope.redefine("$wgmma_wait_fn", loc)
    out_var = scope.redefine(acc_old.name + ".waited", loc)
    call = ir.Expr.call(fn_var, [acc_old], (), loc)
    typemap[fn_var.name] = fnty
    typemap[out_var.name] = typemap[acc_old.name]
    dict.__setitem__(calltypes, call, sig)
    for label, blk in blocks.items():
        if label not in loop.body:
            for st in blk.body:
                replace_vars_stmt(st, {acc_old.name: out_var})
    blocks[exit_label].body[:0] = [
        ir.Assign(ir.Global("_wgmma_wait", language._wgmma_wait, loc), fn_var, loc),
        ir.Assign(call, out_var, loc)]
    current().entry_sregs = True
    return True


def mark_staged_loads(func_ir, typemap, calltypes, num_stages: int, typingctx=None) -> int:
    """Mark the staged loads of ``func_ir`` (see the module docstring); returns how many.
    Each load's path, or why it is not staged, goes to ``compiler_context.note``."""
    loads = {id(st.value): st.loc for blk in func_ir.blocks.values() for st in blk.body
             if isinstance(st, ir.Assign) and (d := _op(typemap, st.value)) is not None
             and d.name in ("load", "load_at")}
    why: dict = {}
    staged: set = set()
    try:
        marked = _mark(func_ir, typemap, calltypes, num_stages, typingctx, why, staged)
    finally:
        from ..compiler_context import note
        for key, loc in loads.items():
            if key not in staged:
                note("load", *why.get(key, (loc, "not pipelined: num_stages=1" if num_stages < 2
                                            else "not pipelined: not in a `for k in range(n)` "
                                                 "loop")), ident=key)
    return marked


def _mark(func_ir, typemap, calltypes, num_stages, typingctx, why, staged) -> int:
    if num_stages < 2:
        return 0
    from numba.cuda.core.analysis import compute_cfg_from_blocks
    blocks = func_ir.blocks
    cfg = compute_cfg_from_blocks(blocks)
    doms = cfg.dominators()
    defs = {}
    for label, blk in blocks.items():
        for st in blk.body:
            if isinstance(st, ir.Assign):
                defs.setdefault(st.target.name, []).append((label, st.value))
    uses = {}
    for label, blk in blocks.items():
        for st in blk.body:
            for v in st.list_vars():
                if not (isinstance(st, ir.Assign) and v.name == st.target.name):
                    uses.setdefault(v.name, []).append((label, st))
    marked = 0
    loops = cfg.loops()
    for loop_id, (header, loop) in enumerate(sorted(loops.items())):
        inner = set()
        for other, lp in loops.items():
            if other != header and lp.body < loop.body:
                inner |= lp.body
        induction = _induction_variable(blocks, loop, defs, inner)
        if induction is None:
            for lb in loop.body - inner:         # a nested loop's loads: its own reason
                for st in blocks[lb].body:
                    if isinstance(st, ir.Assign) and id(st.value) not in why:
                        why[id(st.value)] = (st.loc, "not pipelined: its loop is not a "
                                                     "`for k in range(n)` loop")
            continue
        start = _range_start(blocks, loop, defs, inner)
        if start is not None and not (_invariant(start.name, loop, defs, typemap)
                                      and isinstance(typemap.get(start.name), types.Integer)):
            for lb in loop.body - inner:
                for st in blocks[lb].body:
                    if isinstance(st, ir.Assign) and id(st.value) not in why:
                        why[id(st.value)] = (st.loc, "not pipelined: its loop's range does "
                                                     "not start at one integer value")
            continue
        every = [lb for lb in loop.body if lb not in inner
                 and all(lb in doms[latch] for latch in _latches(cfg, loop))]
        for lb in loop.body - inner - set(every):
            for st in blocks[lb].body:
                if isinstance(st, ir.Assign) and id(st.value) not in why:
                    why[id(st.value)] = (st.loc, "not pipelined: it does not run in every "
                                                 "iteration of its loop (under an `if`, or "
                                                 "after a `break` or `continue`)")
        found = []
        transposed = {}
        steps = {}
        every_product = {}
        for label in sorted(every):
            for st in blocks[label].body:
                if not isinstance(st, ir.Assign):
                    continue
                info = _staged_load(st, label, loop, induction, typemap, calltypes, defs,
                                    uses, blocks, transposed, steps, typingctx, every_product)
                if isinstance(info, str):
                    why[id(st.value)] = (st.loc, "not pipelined: " + info)
                elif info is not None:
                    prod = info[2]
                    ppos = None if prod is None else next(
                        (label, i) for i, s2 in enumerate(blocks[label].body)
                        if isinstance(s2, ir.Assign) and s2.value is prod)
                    found.append(info + ((label, blocks[label].body.index(st)), ppos))
        # positions again: a later load's product rewrite (as_matmul_call) inserts a
        # statement, moving those recorded before it
        found = [f[:4] + (_position(blocks, f[4][0], f[0]),
                          None if f[2] is None else _position(blocks, f[5][0], f[2]))
                 for f in found]
        # a loop not starting at 0, or a load_at offset o + k * C: the lowering counts the
        # iterations from the start _stage_origin records (cp.async only)
        origin = bool(found) and (start is not None or any(
            steps.get(id(f[0].value), (0, None))[1] is not None for f in found))
        kvar = _pair_first(blocks, loop, inner)
        if origin and (typingctx is None or kvar is None
                       or not isinstance(typemap.get(kvar.name), types.Integer)):
            for f in found:
                why[id(f[0].value)] = (f[0].loc, "not pipelined: its loop's variable is not "
                                                 "an integer")
            found = []
            origin = False
        n = len(found)
        # a tile read by several products: each product waits for it, the loads' own copies
        several = any(len(every_product.get(id(f[0].value), ())) > 1 for f in found)
        deferred = bool(found) and not several and defer_to_product(
            found, found[0][2] is not None and calltypes[found[0][2]].return_type)
        pending, tma, ws = 0, False, False
        # why not TMA / warp specialization, for Kernel.explain (None: taken)
        no_tma = ("TMA carries only loads that all feed one wgmma product"
                  if found and not deferred else None)
        no_ws = None
        if deferred:
            want_tma = not origin and all(_tma_fits(typemap, calltypes, f[0]) for f in found)
            no_tma = None if want_tma else (
                "TMA: a loop that does not start at 0 (range(a, n)), or load_at offsets "
                "o + k * C, take cp.async copies" if origin else
                "TMA: off (NUMBA_TILE_TMA=0), or a tile that is not 2-D 16-bit or FP8 rows of "
                "whole 128-byte atoms, at most 256 rows, of a read-only 2-D tensor")
            want_pending = pending_products(num_stages)
            if want_tma or want_pending:
                prod = found[0][2]
                st_prod = next(st for lb in loop.body for st in blocks[lb].body
                               if isinstance(st, ir.Assign) and st.value is prod)
                drain = _drain_in_last_iteration(
                    func_ir, typemap, calltypes, typingctx, cfg, loop, st_prod, induction,
                    _range_bound(blocks, loop, defs, inner), uses,
                    {f[3]: id(f[0].value) for f in found})
                if not drain and want_tma:
                    no_tma = ("TMA: the loop's product is not acc = nt.mma(a, b, acc) (or "
                              "acc += a @ b) with acc read by nothing else in a loop without "
                              "break or return")
                if drain:
                    tma = want_tma
                    # a group left in flight may read only slots: an operand written from
                    # registers into the product's scratch would be overwritten by the next
                    # iteration under the running wgmma
                    both_staged = {f[3] for f in found} == {0, 1}
                    if want_pending and both_staged and _wait_at_loop_exit(
                            func_ir, typemap, calltypes, typingctx, loop,
                            st_prod.value.args[2]):
                        pending = 1
                        from ..compiler_context import current
                        current().used_pending = True
                    if tma and ws_enabled() and ws_fits():
                        bound = _range_bound(blocks, loop, defs, inner)
                        persist = _persistent_tiles(cfg, loops, header, loop, found, defs,
                                                    typemap, bound, blocks, doms)
                        ws = _post_trip_count(func_ir, typemap, calltypes, typingctx, found,
                                              bound, persist and persist[0])
                        if ws and persist:
                            ws = ("persistent",) + tuple(persist[1])
                            _note_ws_loop(header, _cluster_ok(cfg, persist[2], bound, defs,
                                                              typemap))
                        elif ws:
                            _note_ws_loop(header, False)
                        if not ws:
                            no_ws = "the loop's trip count is not known before it starts"
                    elif tma:
                        no_ws = ("NUMBA_TILE_WS=0" if not ws_enabled() else
                                 "no room for a producer warpgroup (1,024 threads), "
                                 "min_blocks_per_sm above 1, or an unchecked kernel")
                    drain.pending, drain.tma, drain.ws = pending, tma, ws
        positions = [pos for (_st, _axis, _prod, _operand, pos, _ppos) in found]
        # (label, statement) positions compare in program order only within one block; the
        # loads of a loop run in label order, which Numba gives in program order
        for order, (st, axis, product, operand, lpos, ppos) in enumerate(found):
            key = id(st.value)
            stage = StageInfo(key, loop_id, n, order, axis, num_stages,
                              "shared" if product is not None else "registers", deferred, tma,
                              steps[key][0] if key in steps else None, ws, origin)
            # calltypes refuses a second assignment: replace through dict's own method
            dict.__setitem__(calltypes, st.value, StagedSignature.of(
                calltypes[st.value], stage=stage,
                wait=None if product is not None else (order, count_after_own(n, num_stages))))
            marked += 1
            staged.add(key)
            from ..compiler_context import note
            why_not = "; ".join(w for w in (
                no_tma if product is not None else None,
                f"no warp specialization: {no_ws}" if no_ws else None) if w)
            note("load", st.loc, ident=key, text=f"pipelined: {num_stages} stages of "
                 f"{'TMA boxes' if tma else 'cp.async copies'}"
                 f"{', warp-specialized (a producer warpgroup)' if ws else ''}, "
                 + ("read by the product from shared memory" if product is not None
                    else "read back into registers")
                 + (f" ({why_not})" if why_not else ""))
            if product is None:
                continue
            for through in transposed.get(key, ()):
                if not isinstance(calltypes[through.value], StagedSignature):
                    dict.__setitem__(calltypes, through.value, StagedSignature.of(
                        calltypes[through.value], passthrough=True))
            for prod, op_index, via in every_product.get(key, [(product, operand, ())]):
                # each product's own position (a product may come back: x @ x.T reads the
                # slot as b through the transpose and as a directly)
                ppos = _position(blocks, lpos[0], prod)
                psig = calltypes[prod]
                ops = dict(getattr(psig, "operands", None) or {})
                ops[op_index] = key
                last = max(order, getattr(psig, "wait", None) and psig.wait[0] or 0)
                before = sum(1 for q in positions if q < ppos)
                kmajor = any(is_transpose(typemap, through.value) for through in via)
                dict.__setitem__(calltypes, prod, StagedSignature.of(
                    psig, operands=ops, wait=(last, wait_depth(n, last, before, num_stages)),
                    deferred=deferred, pending=pending, tma=tma,
                    b_kmajor=getattr(psig, "b_kmajor", False) or kmajor, ws=ws))
        if origin:
            _insert_origin(func_ir, typemap, calltypes, typingctx, found, kvar, start, loop_id)
    return marked


def _insert_origin(func_ir, typemap, calltypes, typingctx, found, kvar, start, loop_id):
    """Insert ``_stage_origin(k, a)`` (``a``: the ``range``'s start, 0 where it has none) right
    before the loop's first staged load, its signature marked with the loop: the lowering
    counts the loop's iterations as ``k - a`` (the pipeline's slots and its first iteration)
    and places tile ``k``'s copies at ``k`` (a ``load_at``: at ``o + k * C``, with ``o`` the
    offset less ``k * C``). That block runs on every iteration and dominates the loop's
    other staged loads (each in a block that dominates the back edges)."""
    from .. import language
    label, i = min(_position(func_ir.blocks, f[4][0], f[0]) for f in found)
    blk = func_ir.blocks[label]
    scope, loc = blk.scope, blk.body[i].loc
    stmts = []
    if start is None:
        start = scope.redefine("$stage_start", loc)
        stmts.append(ir.Assign(ir.Const(0, loc), start, loc))
        typemap[start.name] = types.int64
    fnty = typingctx.resolve_value_type(language._stage_origin)
    sig = fnty.get_call_type(typingctx, (typemap[kvar.name], typemap[start.name]), {})
    sig = StagedSignature.of(sig, loop=loop_id)
    fn_var = scope.redefine("$stage_origin_fn", loc)
    out_var = scope.redefine("$stage_origin", loc)
    call = ir.Expr.call(fn_var, [ir.Var(scope, kvar.name, loc), start], (), loc)
    typemap[fn_var.name] = fnty
    typemap[out_var.name] = types.none
    dict.__setitem__(calltypes, call, sig)
    stmts += [ir.Assign(ir.Global("_stage_origin", language._stage_origin, loc), fn_var, loc),
              ir.Assign(call, out_var, loc)]
    blk.body[i:i] = stmts


def _position(blocks, label, item):
    """``(label, index)`` of the statement ``item`` (a statement, or the expression it
    assigns) in block ``label``."""
    body = blocks[label].body
    return label, next(i for i, st in enumerate(body)
                       if st is item or (isinstance(st, ir.Assign) and st.value is item))


def tma_enabled() -> bool:
    """``NUMBA_TILE_TMA``: ``0`` keeps deferred loads on ``cp.async``; anything else (the
    default) lets them take the tensor memory accelerator where they fit (:func:`_tma_fits`).
    Part of ``Kernel.compile``'s cache keys."""
    import os
    return os.environ.get("NUMBA_TILE_TMA", "").strip() != "0"


def ws_enabled() -> bool:
    """Whether TMA-fed ``wgmma`` loops are warp-specialized (``lowering/ws.py``: a producer
    warpgroup issues the boxes, the kernel's warps consume them, slots released through
    ``mbarrier``s instead of a block barrier per iteration). ``NUMBA_TILE_WS=0`` says no.
    Part of ``Kernel.compile``'s cache keys."""
    import os
    return os.environ.get("NUMBA_TILE_WS", "").strip() != "0"


def ws_fits() -> bool:
    """A producer warpgroup fits beside the kernel's warps: at most 1024 threads a block, no
    ``min_blocks_per_sm`` above 1 asked (its register cap counts the kernel's own threads:
    with the producer's 128 more, a kernel that fits would not assemble, C7602), and a safe
    kernel (an unchecked one may branch per thread: a thread 0 that returned early would
    stop the producer while other threads still wait for its tiles)."""
    from ..compiler_context import current
    ctx = current()
    return (ctx.num_threads + 128 <= 1024 and not getattr(ctx, "unchecked", False)
            and (getattr(ctx, "min_blocks_per_sm", None) or 1) <= 1)


def _persistent_tiles(cfg, loops, header, loop, found, defs, typemap, bound, blocks, doms):
    """``(partition variable, [d per staged load])`` where the warp-specialized loop runs once
    per tile of an outermost ``for idx in tiles(z)`` loop over a 2-D partition and each staged
    load's index across the loop is ``idx[d]``: the producer then walks ``tiles(z)``'s
    sequence itself and runs ahead into the next tile (``lowering/ws.py``). None otherwise.

    Asked, so that the producer issues exactly the tiles the consumers read: the tiles loop
    contains no loop but this one (and its inner loops), is in no loop itself, is left only
    through its header (no ``break``, no ``return``), runs this loop in every iteration (its
    header dominates the latches), and the trip count does not change across it."""
    from .types import TilesIterable
    outer = [(h, lp) for h, lp in loops.items() if h != header and loop.body < lp.body]
    if len(outer) != 1 or bound is None:
        return None
    t_head, tl = outer[0]
    if any(h not in (header, t_head) and lp.body & tl.body and not lp.body <= loop.body
           for h, lp in loops.items()):
        return None
    nexts = [(lb, st) for lb in tl.body if lb not in loop.body for st in blocks[lb].body
             if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)
             and st.value.op == "iternext"]
    if len(nexts) != 1:
        return None
    # left only where the iterator is exhausted: from the header, or from the block after a
    # header of phis that holds the iternext (as _induction_variable allows)
    if len(tl.exits) != 1:
        return None
    (t_exit,) = tl.exits
    if [src for src, _ in cfg.predecessors(t_exit)] not in ([t_head], [nexts[0][0]]):
        return None
    nexts = [st for _lb, st in nexts]
    if not all(header in doms[latch] for latch in _latches(cfg, tl)):
        return None
    if not _invariant(bound.name, tl, defs, typemap):
        return None
    gi = _single_def(nexts[0].value.value.name, defs)
    while isinstance(gi, ir.Var):
        gi = _single_def(gi.name, defs)
    if not (isinstance(gi, ir.Expr) and gi.op == "getiter"):
        return None
    it_ty = typemap.get(gi.value.name)
    call = _single_def(gi.value.name, defs)
    from ..layout import SMALL_TILE_ELEMS
    if not (isinstance(it_ty, TilesIterable) and not it_ty.reverse and it_ty.ptype.ndim == 2
            and it_ty.ptype.tile_shape[0] * it_ty.ptype.tile_shape[1] >= SMALL_TILE_ELEMS
            and isinstance(call, ir.Expr) and call.op == "call" and call.args):
        return None
    pair = nexts[0].target.name
    idx = {st.target.name for lb in tl.body for st in blocks[lb].body
           if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)
           and st.value.op == "pair_first" and st.value.value.name == pair}
    idx = with_copies(idx, defs)         # copies of the index
    ds_out = []
    for f in found:
        st, axis = f[0], f[1]
        tup = _single_def(bound_args(st.value)[1].name, defs)
        v = tup.items[1 - axis]
        d = _single_def(v.name, defs)
        while isinstance(d, ir.Var):
            d = _single_def(d.name, defs)
        if not (isinstance(d, ir.Expr) and d.op == "static_getitem"
                and d.value.name in idx and isinstance(d.index, int) and d.index in (0, 1)):
            return None
        ds_out.append(d.index)
    return call.args[0], ds_out, t_head


def cluster_enabled() -> bool:
    """``NUMBA_TILE_CLUSTER=1`` lets warp-specialized persistent loops pair blocks in
    clusters of two with multicast operand boxes (``lowering/ws.py``) where
    :func:`_cluster_ok` holds; unset or anything else, they do not: on the H200 the pairs
    measured 0.2-2.4% slower than single blocks (2026-12-02, ``docs/performance.md``).
    Part of ``Kernel.compile``'s cache keys."""
    import os
    return os.environ.get("NUMBA_TILE_CLUSTER", "").strip() == "1"


def _note_ws_loop(header, cluster_ok: bool) -> None:
    """Record a warp-specialized loop (by its header) and whether it may run in a cluster of
    two blocks (``lowering/ws.py``: taken when it is the kernel's only such loop)."""
    from ..compiler_context import current
    current().__dict__.setdefault("ws_typed_loops", {})[header] = cluster_ok


def _cluster_ok(cfg, t_head, bound, defs, typemap) -> bool:
    """A persistent warp-specialized loop may pair blocks in a cluster (two blocks, one
    operand box multicast to both, ``lowering/ws.py``) when both blocks of a pair walk their
    tiles loops in step: every block runs the tiles loop (its header lies on every path from
    the kernel's entry to its exits) and the loop's trip count is one value in every block
    (:func:`_block_uniform`), so the ``g``-th tile of both blocks' rings holds the same step
    of their tiles."""
    if not cluster_enabled():
        return False
    entry = cfg.entry_point()
    pdoms = cfg.post_dominators()
    if t_head not in pdoms.get(entry, ()):
        return False
    return _block_uniform(bound.name, defs, typemap)


#: calls whose value is one for every block of a launch (``bid`` is not)
_UNIFORM_INT_OPS = ("num_blocks", "num_tiles")


def _block_uniform(name, defs, typemap, depth=0) -> bool:
    """``name`` has one value in every block of a launch: made of the kernel's arguments,
    constants, their attributes (shapes) and items, integer arithmetic and
    :data:`_UNIFORM_INT_OPS`, each defined once (no loop index, no ``bid``, no value read
    from memory)."""
    ds = defs.get(name)
    if ds is None:
        return True                      # an argument
    if len(ds) != 1 or depth > 16:
        return False
    v = ds[0][1]
    if isinstance(v, (ir.Const, ir.FreeVar, ir.Global, ir.Arg)):
        return True
    if isinstance(v, ir.Var):
        return _block_uniform(v.name, defs, typemap, depth + 1)
    if isinstance(v, ir.Expr):
        if v.op == "binop" and v.fn in _INT_BINOPS:
            return all(_block_uniform(x.name, defs, typemap, depth + 1) for x in (v.lhs, v.rhs))
        if v.op == "call":
            d = op_for_key(getattr(typemap.get(v.func.name), "typing_key", None))
            if d is not None and d.name in _UNIFORM_INT_OPS and not v.kws and not v.vararg:
                return all(_block_uniform(x.name, defs, typemap, depth + 1) for x in v.args)
        if v.op == "getattr":
            return _block_uniform(v.value.name, defs, typemap, depth + 1)
        # items of tuples only (a shape's): an item of an array is a read of memory another
        # stream may write during the launch, so two blocks could see two values
        if v.op in ("static_getitem", "getitem") and isinstance(typemap.get(v.value.name),
                                                                   types.BaseTuple):
            return _block_uniform(v.value.name, defs, typemap, depth + 1) and (
                v.op == "static_getitem" or _block_uniform(v.index.name, defs, typemap,
                                                           depth + 1))
    return False


def _post_trip_count(func_ir, typemap, calltypes, typingctx, found, bound,
                     partition=None) -> bool:
    """Insert ``_ws_post(n)`` (``n``: the loop's ``range`` bound; ``_ws_post(n, z)`` with the
    partition of a persistent tiles loop, :func:`_persistent_tiles`) right before the loop's
    first staged load: the warp-specialized lowering posts the trip count to the producer
    (``lowering/ws.py``). False (the loop keeps the single-role schedule) where it cannot."""
    from .. import language
    from ..compiler_context import current
    if typingctx is None or bound is None or not isinstance(typemap.get(bound.name),
                                                              types.Integer):
        return False
    st, pos = found[0][0], found[0][4]
    for f in found[1:]:
        if f[4] < pos:
            st, pos = f[0], f[4]
    label, index = pos
    blk = func_ir.blocks[label]
    scope, loc = blk.scope, st.loc
    fnty = typingctx.resolve_value_type(language._ws_post)
    args = [bound] + ([partition] if partition is not None else [])
    sig = fnty.get_call_type(typingctx, tuple(typemap[a.name] for a in args), {})
    if sig is None:
        return False
    # the mark the lowering acts on: a _ws_post a kernel's own code calls does nothing
    sig = StagedSignature.of(sig, ws=True)
    fn_var = scope.redefine("$ws_post_fn", loc)
    out_var = scope.redefine("$ws_post", loc)
    call = ir.Expr.call(fn_var, args, (), loc)
    typemap[fn_var.name] = fnty
    typemap[out_var.name] = types.none
    dict.__setitem__(calltypes, call, sig)
    i = blk.body.index(st)
    blk.body[i:i] = [ir.Assign(ir.Global("_ws_post", language._ws_post, loc), fn_var, loc),
                     ir.Assign(call, out_var, loc)]
    current().warp_specialized = True
    return True


def _tma_fits(typemap, calltypes, st) -> bool:
    """A staged load that feeds a ``wgmma`` product may travel by TMA
    (``lowering/tma.py``): TMA enabled, compute capability 9.0, a read-only 2-D tensor
    parameter of 16-bit floats or FP8, tile rows at most 256 (a box dimension's limit) and whole
    128-byte atoms per row (the 128-byte swizzle)."""
    from ..compiler_context import current
    ctx = current()
    if not tma_enabled() or tuple(ctx.cc[:2]) != (9, 0) or ctx.mma_impl != "wgmma":
        return False
    d = _op(typemap, st.value)
    if d is None or d.name != "load":
        return False                     # load_at: cp.async (its offsets are elements)
    sig = calltypes.get(st.value)
    tensor = typemap.get(st.value.args[0].name) if st.value.args else None
    tile = getattr(sig, "return_type", None)
    if not (isinstance(tensor, TensorType) and not tensor.writable and tensor.ndim == 2
            and isinstance(tile, TileType)):
        return False
    rows, cols = tile.shape
    isz = dtypes.itemsize(tile.dtype)
    return (tile.dtype in PRODUCT_DTYPES and rows <= 256 and (cols * isz) % 128 == 0
            and getattr(tensor, "param", None) is not None)


def _staged_load(st, label, loop, induction, typemap, calltypes, defs, uses, blocks,
                 transposed=None, steps=None, typingctx=None, every_product=None):
    """``(st, axis, product, operand)`` of a load the loop stages (``product`` None: read back
    into registers); None for a statement that is no load; else why the load is not staged
    (a str, for ``Kernel.explain``). ``transposed``: where a load reaches operand b of its
    product through ``transpose`` (``operand_uses.product_uses``), ``{id(load expr): transpose
    statement}`` gets the entry. ``steps``: a ``load_at``'s ``{id(expr): step}``."""
    expr = st.value
    d = _op(typemap, expr)
    if d is None or d.name not in ("load", "load_at"):
        return None
    at = d.name == "load_at"
    sig = calltypes.get(expr)
    if sig is None or len(sig.args) != 4:
        return "not a load of a tile of a tensor"
    tty, ity, _sty, pty = sig.args
    res = sig.return_type
    if not isinstance(tty, TensorType) or tty.writable:
        return "the array is not a read-only tensor parameter"
    if not tty.vec16:
        return "the array is not 16-byte aligned with unit stride rows (copies of 16 bytes)"
    if not (tty.dtype in REGISTER_DTYPES or dtypes.is_float8(tty.dtype)):
        return f"{dtypes.name(tty.dtype)} elements are not staged"
    if not (isinstance(res, TileType) and tty.ndim >= 2 and res.ndim == tty.ndim
            and plane_axes(res.shape) is not None):
        return ("not a 2-D tile of a 2-D tensor (or of an N-D one, extent 1 on all its axes "
                "but the last and one other)")
    if res.shape[-1] * dtypes.itemsize(tty.dtype) < 16:
        return "a tile row is narrower than 16 bytes"
    no_padding = isinstance(pty, types.NoneType) or (isinstance(pty, types.Omitted)
                                                      and pty.value is None)
    zero = no_padding or zero_padding(pty)
    args = bound_args(expr, "offset" if at else "index")
    if args is None:
        return "its arguments are not plain variables"
    tensor, index = args
    if not _invariant(tensor.name, loop, defs, typemap):
        return "the array changes in the loop"
    tup = _single_def(index.name, defs)
    if not (isinstance(tup, ir.Expr) and tup.op == "build_tuple"
            and len(tup.items) == tty.ndim):
        return "its index is not a tuple written at the load"
    if at:
        found_step = [(i, _loop_linear(v.name, induction, loop, defs, typemap))
                      for i, v in enumerate(tup.items)]
        axes = [i for i, c in found_step if c is not None]
        if len(axes) != 1 or axes[0] not in plane_axes(res.shape):
            return ("its offset is not `k * C` or `o + k * C` (C a constant, o the same in "
                    "every iteration) on exactly one axis of the tile's two (as (i * BM, k * BK) "
                    "in `for k in range(n)`)")
        step, base = found_step[axes[0]][1]
        vec = max(1, 16 // dtypes.itemsize(tty.dtype))
        last = tty.ndim - 1
        if axes[0] == last and step % vec:
            return (f"its offset along the last axis steps by {step} elements, not a multiple "
                    f"of 16 bytes ({vec} elements)")
        if axes[0] == last and base is not None and not _aligned(base.name, vec, defs,
                                                                 typemap):
            return (f"its offset along the last axis starts at a value that is not a visible "
                    f"multiple of {vec} elements (16 bytes)")
        if axes[0] != last and not _aligned(tup.items[last].name, vec, defs, typemap):
            return (f"its offset along the last axis is not a visible multiple of {vec} "
                    f"elements (16 bytes: as j * BN with BN a constant multiple of {vec})")
    else:
        axes = [i for i, v in enumerate(tup.items) if v.name in induction]
        if len(axes) != 1 or axes[0] not in plane_axes(res.shape):
            return ("its index is not the loop variable on exactly one axis of the tile's two "
                    "(as (i, k) or (k, j) in `for k in range(n)`)")
    if not all(_invariant(v.name, loop, defs, typemap) for i, v in enumerate(tup.items)
               if i != axes[0]):
        return "its other coordinate changes in the loop"
    if at and steps is not None:
        steps[id(expr)] = (step, base)
    products = product_uses(st, label, typemap, calltypes, uses) \
        if zero and tty.dtype in PRODUCT_DTYPES else None
    for i, (prod, operand, via) in enumerate(products or ()):
        if prod.op == "binop":
            # a bare ``x @ y``: Numba types a binop again when it lowers it, so the staging
            # facts would not reach the product; as ``matmul(x, y)`` (the same product) they do
            call = as_matmul_call(prod, blocks[label], typemap, calltypes, typingctx)
            if call is None:
                products = None
                break
            products[i] = (call, operand, via)
    if products:
        if transposed is not None:
            transposed[id(expr)] = [st2 for _p, _o, via in products for st2 in via]
        if every_product is not None:
            every_product[id(expr)] = products
        prod, operand, _via = products[0]
        return st, axes[0], prod, operand
    if tty.dtype not in REGISTER_DTYPES:
        return "FP8 tiles are staged only into a product's slots"
    return st, axes[0], None, None        # read back into registers by the load itself
