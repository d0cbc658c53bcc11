"""The ownership pass: checks a typed kernel against the ownership rules, from op effects.

It runs right after Numba's type inference, on the typed IR of the kernel, and reads
only what each op declares (:class:`numba_tile._registry.Effects`):

* every operand an op *writes* must be a partition (a parameter the kernel signature
  declares mutable), else :class:`StoreToReadOnlyError`;
* a write goes to one of the block's own tiles: an op's ``store_index`` argument must be
  left out (the block's own tile) or be an index minted by ``tiles(z)`` for that very
  partition ``z`` (its type carries z's brand), else :class:`ForeignTileStoreError`;
* a tensor or partition may be handed only to numba_tile ops, whose effects are
  known; a call to anything else that receives one is refused
  (:class:`UnanalyzedCallError`), so no helper can write behind the pass's back; in a
  safe kernel nothing but the parameters reaches memory at all
  (``typing/closed_world.py``, run first: :class:`ClosedWorldError`).

Tensor and partition types carry their parameter's name, so ``y = x; store(y, t)``
is reported against ``x`` with no alias analysis. Errors carry the user's line.

The pass also records, for the lowering, which partitions need their accesses ordered
within the block (:func:`partition_access_facts`): a tile's register layout depends on
its dtype, so a store and a later load (or two stores) of one partition tile can give
one element to two threads, which a block barrier must then separate.
"""

from __future__ import annotations

from numba.cuda import types
from numba.cuda.core import ir
from numba.cuda.core.compiler_machinery import AnalysisPass, register_pass

from .._registry import op_for_key
from ..errors import ForeignTileStoreError, StoreToReadOnlyError, TileTypingError, UncheckedOpError
from .closed_world import check_closed_world
from .types import (PartitionIndexType, PartitionType, StripIndexType, StripsIterable,
                    StripTilesIterable, TensorType, TilesIterable)


def _loc(inst):
    loc = inst.loc
    return dict(filename=loc.filename, lineno=loc.line, col=getattr(loc, "col", None))


def _safe_gather(d, argtys) -> bool:
    """``gather`` from a read-only tensor parameter, which safe kernels may use: nothing
    writes that tensor while the kernel runs (the launch refuses a mutable argument that
    overlaps it), so reads at any coordinates cannot race, and out-of-range coordinates read
    the padding (bounds-checked, as in unchecked kernels)."""
    return (d.name == "gather" and bool(argtys) and isinstance(argtys[0], TensorType)
            and not argtys[0].writable)


def check_call(inst, expr, typemap, calltypes, unchecked=False):
    """Check one call expression; raise an OwnershipError on a violation.

    In a kernel marked ``unchecked``: unchecked ops are allowed, ``Mutable`` tensors may be
    written, and a store may go to any tile index (the launch checks still apply)."""
    fnty = typemap[expr.func.name]
    sig = calltypes.get(expr)
    argtys = list(sig.args) if sig is not None else [typemap[a.name] for a in expr.args]
    d = op_for_key(getattr(fnty, "typing_key", None))
    if d is None:          # not an op: typing/closed_world.py has checked the call
        return
    if d.unchecked and not unchecked and not _safe_gather(d, argtys):
        extra = ""
        if d.name == "gather":
            extra = (f"; in a safe kernel gather() reads read-only tensors only (here "
                     f"'{getattr(argtys[0], 'param', '?')}' is a partition the kernel may write, "
                     f"so another block's stores could race with the read)")
        raise UncheckedOpError(
            f"{d.name}() is an unchecked operation: it is available only in kernels marked "
            f"@numba_tile.jit(unchecked=True), launched with unchecked=True{extra}",
            **_loc(inst))
    for j in d.effects.writes:
        t = argtys[j]
        if isinstance(t, TensorType) and not (unchecked and t.writable):
            how = ("annotate it 'numba_tile.Partition' and pass a partition, or "
                   "'numba_tile.Mutable' in this unchecked kernel" if unchecked else
                   "annotate it 'numba_tile.Partition' and pass a partition")
            raise StoreToReadOnlyError(
                f"{d.name}() writes parameter '{t.param}', which the kernel signature does not "
                f"declare mutable ({how})", **_loc(inst))
    j = d.effects.store_index
    if j is not None and j < len(argtys) and not unchecked:
        t = argtys[j]
        target = argtys[d.effects.writes[0]] if d.effects.writes else None
        brand = getattr(target, "param", "?")
        if isinstance(t, PartitionIndexType):
            if t.brand != brand:
                raise ForeignTileStoreError(
                    f"{d.name}() to partition '{brand}' with an index of partition '{t.brand}': "
                    f"indices of '{brand}' come from numba_tile.tiles({brand})", **_loc(inst))
        elif not isinstance(t, (types.Omitted, types.NoneType)):
            raise ForeignTileStoreError(
                f"{d.name}() to partition '{brand}' at an index built by hand ({t}): a block "
                f"stores only its own tiles, whose indices come from numba_tile.tiles({brand}) "
                f"(or leave the index out for the block's own tile)", **_loc(inst))


def _same_owners(layouts) -> bool:
    """True when every layout in ``layouts`` gives each element of the tile to one and the
    same thread: blocked layouts of one distribution (shape, chunk width, threads, chunks per
    thread) with no replicating threads (a replicating thread reads the elements its
    owner writes)."""
    from ..layout import BlockedLayout
    keys = set()
    for lay in layouts:
        if not isinstance(lay, BlockedLayout) or lay.threads_used != lay.num_threads:
            return False
        keys.add((lay.shape, lay.num_threads, lay.vec, lay.threads_used, lay.reps))
    return len(keys) == 1


def _access_layout(d, sig, argtys, target):
    """Register layout in which op ``d`` touches partition ``target``'s tile: a store's
    tile (a scalar is broadcast in the partition dtype's layout), a load's result; None
    when the op is not one of those (then the access is ordered)."""
    from .common import make_tile
    from .types import TileType
    if d.name == "store":
        tile = argtys[1]
        if isinstance(tile, TileType):
            return tile.layout
        return make_tile(target.dtype, target.tile_shape).layout
    ret = getattr(sig, "return_type", None)
    if d.name in ("load", "load_like") and isinstance(ret, TileType):
        return ret.layout
    return None


def partition_access_facts(func_ir, typemap, calltypes) -> frozenset:
    """Partitions whose accesses the lowering must order with a block barrier.

    Counts, per partition parameter, the calls of ops that read or write it (its effects:
    ``load``/``load_like`` of the block's own or a branded tile, ``store``) in the typed
    IR, with the register layout of each. A partition needs ordering when it is accessed
    at two or more places, one of them a write, unless every access gives each element
    to the same thread (:func:`_same_owners`): then the program order of that thread
    already orders them. One place alone needs nothing, even in a loop: its one layout
    gives every element to one writing thread each time round.

    Returns:
        frozenset of partition parameter names.
    """
    sites: dict = {}
    for block in func_ir.blocks.values():
        for inst in block.body:
            if not (isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr)
                    and inst.value.op == "call"):
                continue
            expr = inst.value
            d = op_for_key(getattr(typemap[expr.func.name], "typing_key", None))
            if d is None:
                continue
            sig = calltypes.get(expr)
            argtys = list(sig.args) if sig is not None else [typemap[a.name] for a in expr.args]
            for j in sorted(set(d.effects.reads) | set(d.effects.writes)):
                t = argtys[j] if j < len(argtys) else None
                if isinstance(t, PartitionType):
                    sites.setdefault(t.param, []).append(
                        (j in d.effects.writes, _access_layout(d, sig, argtys, t)))
    ordered = set()
    for param, accesses in sites.items():
        writes = any(w for w, _ in accesses)
        if len(accesses) > 1 and writes and not _same_owners([lay for _, lay in accesses]):
            ordered.add(param)
    return frozenset(ordered)


def check_index_schemes(func_ir, typemap, calltypes=None) -> None:
    """One ownership scheme per partition: a partition iterated with ``strips(z)`` or
    ``tiles(z, strip)`` (block b owns the strips b, b + B, ...; a 2-D partition's rows by a
    strip of another 2-D partition: the same row numbers) may not also be iterated with
    ``tiles(z)`` (block b owns tiles b, b + B, ...): the two give a block different tiles, so a
    block's store through one could meet another block's access through the other.

    Raises:
        ForeignTileStoreError: at the first ``tiles(z)`` or ``strips(z)`` call of the second
            scheme.
    """
    schemes: dict = {}
    for label in sorted(func_ir.blocks):
        for inst in func_ir.blocks[label].body:
            if not (isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr)
                    and inst.value.op == "call"):
                continue
            made = typemap.get(inst.target.name)
            if isinstance(made, (StripsIterable, StripTilesIterable)):
                scheme = "strips"       # tiles(z, strip): z's rows by strip, whoever's strip
            elif isinstance(made, TilesIterable):
                scheme = "tiles"
            else:
                continue
            param = made.ptype.param
            source = None
            if scheme == "strips" and made.ptype.ndim > 2:
                # strips over two or more leading axes: numbered over their partition's own
                # tile grid, so all of z's must come from one partition (typing/partition.py)
                source = param
                if isinstance(made, StripTilesIterable):
                    # the strip's brand, from the call's typed signature (tiles(z, strip))
                    sig = (calltypes or {}).get(inst.value)
                    strip = sig.args[1] if sig is not None and len(sig.args) > 1 else None
                    source = strip.brand if isinstance(strip, StripIndexType) else inst
            first = schemes.setdefault(param, (scheme, source, inst))
            if first[0] != scheme:
                foreign = isinstance(made, StripTilesIterable) or \
                    typemap.get(first[2].target.name).__class__ is StripTilesIterable
                how = (f" (here through tiles({param}, strip) with a strip of another "
                       f"partition)" if foreign else "")
                raise ForeignTileStoreError(
                    f"partition '{param}' is iterated with both tiles({param}) and "
                    f"strips({param}){how}: tiles() gives block b the tiles b, b + B, ... and "
                    f"strips() the rows of tiles b, b + B, ..., so a tile one block owns by one "
                    f"is another block's by the other; use one of them for '{param}'",
                    **_loc(inst))
            if first[1] != source:
                a, b = sorted(s if isinstance(s, str) else "another partition"
                              for s in (first[1], source))
                raise ForeignTileStoreError(
                    f"the tiles of {made.ptype.ndim}-D partition '{param}' are reached through "
                    f"strips of '{a}' and of '{b}': strips over two or more leading axes are "
                    f"numbered over each partition's own tile grid, so the block that owns a "
                    f"strip of '{a}' need not own the strip of '{b}' at the same coordinates, "
                    f"and two blocks could store one tile of '{param}'; take all the strips "
                    f"of '{param}' from one partition", **_loc(inst))


def check_function(func_ir, typemap, calltypes, unchecked=False):
    for block in func_ir.blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr) \
                    and inst.value.op == "call":
                check_call(inst, inst.value, typemap, calltypes, unchecked)
    if not unchecked:
        check_index_schemes(func_ir, typemap, calltypes)
    check_loop_carried_masks(func_ir, typemap)


def check_loop_carried_masks(func_ir, typemap):
    """Refuse a masked tile carried around a loop whose next value combines the carried value
    with a masked load made in the loop (a phi at a loop header fed from the body): each
    step intersects the valid boxes, so a loop accumulating chunks loaded at an edge would
    drop, from every earlier chunk, the lanes the last one lacks (the sum of 100 ones in
    chunks of 32 would be 16). A carried tile updated without new masked loads
    (``t = t * a + b``) keeps its box, and one replaced by a new load (``t = load(...)``)
    takes that load's box: both are allowed.

    Raises:
        TileTypingError: at the loop's variable, with the fix (``padding=``, ``filled``).
    """
    from numba.cuda.core.analysis import compute_cfg_from_blocks
    from .types import TileType
    cfg = compute_cfg_from_blocks(func_ir.blocks)
    for loop in cfg.loops().values():
        defs, where = {}, {}
        for label in loop.body:
            for inst in func_ir.blocks[label].body:
                if isinstance(inst, ir.Assign):
                    defs[inst.target.name] = inst.value
                    where[inst.target.name] = inst
        for inst in func_ir.blocks[loop.header].body:
            if not (isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr)
                    and inst.value.op == "phi"):
                continue
            ty = typemap.get(inst.target.name)
            if not (isinstance(ty, TileType) and ty.masked):
                continue
            carried = [v for v, b in zip(inst.value.incoming_values, inst.value.incoming_blocks)
                       if b in loop.body and isinstance(v, ir.Var)]
            combining = [v for v in carried
                         if all(_loop_sources(v.name, defs, typemap, inst.target.name))]
            if combining:
                name = inst.target.name.split(".")[0]
                # at the statement that makes the next step's value (the user's
                # ``t = t + load(...)``), not at the loop header
                at = where.get(combining[0].name, inst)
                raise TileTypingError(
                    f"'{name}' carries a masked tile around a loop and combines it with a tile "
                    f"loaded in the loop without padding= (elements past the array's edge are "
                    f"invalid): each step would keep only the elements valid in every step, so "
                    f"an accumulator would lose what earlier steps loaded. Load with a padding "
                    f"value (padding=0 for a running sum) or use filled(tile, 0)", **_loc(at))


def _loop_sources(name, defs, typemap, phi) -> tuple:
    """What variable ``name`` depends on within the loop body (``defs``: its assignments):
    ``(a masked load/load_like made there, the loop-carried value ``phi`` itself)``. Only
    both together shrink a valid box step after step; a tile merely reassigned in the loop
    (``t = load(...)``) keeps the box of the step that made it."""
    from .types import TileType
    masked = carried = False
    seen, todo = set(), [name]
    while todo:
        var = todo.pop()
        if var == phi:
            carried = True
            continue
        if var in seen or var not in defs:
            continue
        seen.add(var)
        value = defs[var]
        if isinstance(value, ir.Expr) and value.op == "call":
            d = op_for_key(getattr(typemap.get(value.func.name), "typing_key", None))
            ty = typemap.get(var)
            if d is not None and d.name in ("load", "load_like") and isinstance(ty, TileType) \
                    and ty.masked:
                masked = True
        if isinstance(value, ir.Var):
            todo.append(value.name)
        elif isinstance(value, ir.Expr):
            todo.extend(v.name for v in value.list_vars())
    return masked, carried


@register_pass(mutates_CFG=False, analysis_only=True)
class OwnershipPass(AnalysisPass):
    """Numba compiler pass running :func:`check_function` on the typed kernel."""

    _name = "numba_tile_ownership"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        from ..compiler_context import current
        ctx = current()
        check_closed_world(state.func_ir, state.typemap, state.calltypes, ctx.kernel_name,
                           ctx.unchecked)
        check_function(state.func_ir, state.typemap, state.calltypes, ctx.unchecked)
        # a union: should the pass ever run on more than one function of one compilation,
        # each function's partitions stay ordered
        ctx.ordered_partitions = (ctx.ordered_partitions or frozenset()) | partition_access_facts(
            state.func_ir, state.typemap, state.calltypes)
        # acc + a @ b -> mma(a, b, acc): after the checks (the kernel as written passed them)
        from .mma import fuse_accumulating_products
        fuse_accumulating_products(state.func_ir, state.typemap, state.calltypes,
                                   state.typingctx)
        if not ctx.unchecked:
            # after every check: staging changes how checked loads travel, not what they read
            from .pipeline import mark_staged_loads
            mark_staged_loads(state.func_ir, state.typemap, state.calltypes, ctx.num_stages,
                              state.typingctx)
        from .mma import place_constant_tiles
        from .placement import place_index_tiles, place_register_operands
        place_constant_tiles(state.func_ir, state.typemap, state.calltypes)
        place_register_operands(state.func_ir, state.typemap, state.calltypes, state.typingctx)
        place_index_tiles(state.func_ir, state.typemap, state.calltypes, state.typingctx)
        return False
