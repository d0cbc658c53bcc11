"""Layout placement after typing: tiles made directly in the layout their consumers read.

Typing gives each tile the layout its own op prefers, going forwards; a consumer that wants
another converts it, through shared memory. These passes run once typing and the checks are
done (``typing/ownership.py``) and retype a producer where its consumers all want one layout
it can make as cheaply: nothing else changes, the values are the same.

* :func:`place_register_operands`: operand ``a`` of a ``wgmma`` product made in the
  registers the instruction reads (attention's queries);
* :func:`place_index_tiles`: positions computed from ``arange`` (a causal mask's query and
  key positions) made in the rows and columns of the accumulator they are compared with.

``typing/mma.place_constant_tiles`` does the same for ``zeros`` and ``full``.
"""

from __future__ import annotations

import math
import operator

from numba.cuda.core import ir

from .. import compiler_context, dtypes
from .._registry import UNIT_AXES_OPS as _UNIT_AXES
from .._registry import op_for_key
from ..layout import MmaLayout, VectorLayout, local_slots
from .mma import _defs_and_uses
from .pipeline import StagedSignature
from .types import TileType


def register_a_enabled() -> bool:
    """``NUMBA_TILE_REGISTER_A=1``: :func:`place_register_operands` retypes loaded operands."""
    import os
    return os.environ.get("NUMBA_TILE_REGISTER_A", "").strip() == "1"


def place_register_operands(func_ir, typemap, calltypes, typingctx) -> int:
    """Make a product's operand ``a`` directly in the registers ``wgmma`` reads it from.

    A ``wgmma`` product takes ``a`` from registers, with no staging through shared memory,
    when ``a`` lies in a ``wgmma`` accumulator's layout of its shape
    (``lowering/wgmma.registers_a``): attention's probabilities ``p @ v`` do, coming from the
    scores' product. A tile in another layout read only as operand ``a`` of such products
    (the queries of attention, loaded once before the loop over keys, ``q @ k.T``) is
    retyped to that layout: Numba converts it where it is made, once, instead of the
    product writing it to shared memory before every instruction. 16-bit float tiles,
    unmasked, made outside a loop of the products that read them, whose products
    accumulate over the same rows and threads, at most 64 registers of fragments a thread;
    not a pipelined load (the product reads its slots). Returns how many were retyped.

    Off unless ``NUMBA_TILE_REGISTER_A=1`` (part of ``Kernel.compile``'s cache keys): on the
    H100 (2026-12-08) kernels with such a tile of K = 64 columns (attention at head dimension
    64, a backward's key tile) gave wrong results, and any one of this retyping, the index
    placement, the register form or the fence's ties taken away made them right; K = 128 ones
    were right. Not explained yet; the operand is staged through shared memory meanwhile.
    """
    if not register_a_enabled():
        return 0
    defs, uses = _defs_and_uses(func_ir)

    def product_of(st, name):
        """The wgmma accumulator layout of the product ``st`` whose operand a is ``name``."""
        if not isinstance(st, ir.Assign) or not isinstance(st.value, ir.Expr):
            return None
        expr = st.value
        if expr.op == "binop" and expr.fn is operator.matmul:
            args = [expr.lhs, expr.rhs]
        elif expr.op == "call" and not expr.kws and expr.vararg is None:
            d = op_for_key(getattr(typemap.get(expr.func.name), "typing_key", None))
            if d is None or d.name not in ("mma", "matmul"):
                return None
            args = expr.args
        else:
            return None
        if not args or args[0].name != name or any(a.name == name for a in args[1:]):
            return None
        res = typemap.get(st.target.name)
        lay = getattr(res, "layout", None)
        return lay if isinstance(lay, MmaLayout) and lay.wgmma else None

    from numba.cuda.core.analysis import compute_cfg_from_blocks
    loops = list(compute_cfg_from_blocks(func_ir.blocks).loops().values())
    block_of = {id(st): label for label, blk in func_ir.blocks.items() for st in blk.body}

    def made_outside_loops_of(def_st, use_st) -> bool:
        """A loop holds ``use_st`` but not ``def_st``: the tile is made once for several
        products (attention's queries, made per query tile, read per key tile)."""
        d, u = block_of.get(id(def_st)), block_of.get(id(use_st))
        return d is not None and u is not None and any(
            u in lp.body and d not in lp.body for lp in loops)

    count = 0
    for name, ds in defs.items():
        ty = typemap.get(name)
        if len(ds) != 1 or not isinstance(ty, TileType) or ty.masked or ty.ndim != 2 \
                or ty.dtype not in (dtypes.float16, dtypes.bfloat16) \
                or isinstance(ty.layout, MmaLayout):
            continue
        expr = ds[0].value
        if not (isinstance(expr, ir.Expr) and expr.op == "call"):
            continue
        sig = calltypes.get(expr)
        if sig is None or getattr(sig, "passthrough", False) \
                or getattr(sig, "stage", None) is not None:
            continue                  # a staged load: the product reads its slots
        users = uses.get(name, [])
        layouts = {product_of(st, name) for st in users}
        if not users or len(layouts) != 1 or None in layouts:
            continue
        (acc,) = layouts
        # made outside a loop of the products (made beside them, a conversion a product
        # costs what the staging does), and at most 64 registers of fragments a thread
        words = ty.shape[0] * ty.shape[1] // (2 * acc.num_threads)
        if acc.shape[0] != ty.shape[0] or words > 64 or not all(
                made_outside_loops_of(ds[0], st) for st in users):
            continue
        want = TileType(ty.dtype, ty.shape, MmaLayout(ty.shape, acc.num_threads, wgmma=True),
                        False, ty.align)
        retyped = [_with_operand_a(st.value, want, typemap, calltypes, typingctx)
                   for st in users]
        if None in retyped:
            continue
        # the variable only: Numba converts the op's result to it where it is made, once
        typemap.pop(name)
        typemap[name] = want
        for st, new_sig in zip(users, retyped):
            dict.__setitem__(calltypes, st.value, new_sig)
            n = new_sig.return_type.shape[1]
            compiler_context.note("mma", st.loc, f"wgmma m64n{n}k16, operand a from registers")
        count += 1
    return count


def _with_operand_a(expr, a_type, typemap, calltypes, typingctx):
    """The signature of product ``expr`` (a call or an ``@``) typed again with operand ``a``
    of type ``a_type``, keeping the pipelining facts of its old one; None where the product
    does not type so or its result would change."""
    old = calltypes.get(expr)
    if old is None or typingctx is None:
        return None
    args = (a_type,) + tuple(old.args[1:])
    try:
        if expr.op == "binop":
            new = typingctx.resolve_function_type(operator.matmul, args, {})
        else:
            new = typemap[expr.func.name].get_call_type(typingctx, args, {})
    except Exception:  # noqa: BLE001 - a product that does not type so stays as it is
        return None
    if new is None or new.return_type != old.return_type or tuple(new.args) != args:
        return None
    if isinstance(old, StagedSignature):
        staged = StagedSignature(old.return_type, args, old.recvr, old.pysig)
        for slot in StagedSignature.__slots__:
            setattr(staged, slot, getattr(old, slot))
        return staged
    return new




def _tile_operands(expr):
    """The variables an elementwise expression reads (``binop``, ``unary``, a call)."""
    if expr.op == "binop":
        return [expr.lhs, expr.rhs]
    if expr.op == "unary":
        return [expr.value]
    if expr.op == "call" and not expr.kws and expr.vararg is None:
        return list(expr.args)
    return None


def _vector_for(shape, acc):
    """The layout a tile of ``shape`` takes beside accumulator layout ``acc`` (of shape
    ``(M, N)``, NumPy's broadcast aligning the trailing axes): ``acc`` itself, its rows or
    its columns; None for a shape that is none of those."""
    m, n = acc.shape
    shape = tuple(shape)
    if shape == (m, n):
        return acc
    if shape == (m, 1) and m > 1:
        return VectorLayout(acc, 0, 2)
    if shape == (1, n) and n > 1:
        return VectorLayout(acc, 1, 2)
    if shape == (n,) and n > 1:
        return VectorLayout(acc, 1, 1)
    return None


def place_index_tiles(func_ir, typemap, calltypes, typingctx) -> int:
    """Make tiles of positions (``arange`` and what unit axes, scalars and elementwise ops
    make of it) in the layout of the ``mma`` accumulator they meet.

    ``s = nt.where(k_pos <= q_pos, s, -inf)`` with ``k_pos = j * BN + arange(BN)[None, :]``
    and ``q_pos = m * BM + arange(BM)[:, None]``: typed forwards, the positions are blocked
    tiles, and the comparison and the ``where`` convert them to the scores' layout through
    shared memory in every iteration. An ``arange`` costs nothing in any layout (each thread
    computes its coordinates), so a chain of such tiles that meets a ``wgmma`` accumulator
    ``S`` in an elementwise op is retyped: ``(M, N)`` tiles in ``S``'s layout, ``(M, 1)`` in its rows,
    ``(1, N)`` and ``(N,)`` in its columns (:class:`~numba_tile.layout.VectorLayout`), and
    every op of the chain and the ops that read it are typed again for those layouts. A
    chain whose tiles would need two layouts, or whose ops do not type so, stays as it
    was. Returns how many tiles were retyped."""
    defs, uses = _defs_and_uses(func_ir)
    memo: dict = {}

    def op_of(expr):
        if expr.op != "call":
            return None
        return op_for_key(getattr(typemap.get(expr.func.name), "typing_key", None))

    def is_index(name, depth=0):
        """``name`` is a tile computed from ``arange``, scalars and unit-axis reshapes."""
        if name in memo:
            return memo[name]
        memo[name] = False                  # cycles (loop phis) are not index chains
        ty = typemap.get(name)
        ds = defs.get(name, [])
        ok = False
        if isinstance(ty, TileType) and not ty.masked and len(ds) == 1 and depth < 32 \
                and isinstance(ds[0].value, ir.Var):
            src = typemap.get(ds[0].value.name)
            ok = src == ty and is_index(ds[0].value.name, depth + 1)    # a copy
        elif isinstance(ty, TileType) and not ty.masked and len(ds) == 1 and depth < 32 \
                and isinstance(ds[0].value, ir.Expr):
            expr = ds[0].value
            d = op_of(expr)
            if d is not None and d.name == "arange":
                ok = True
            elif d is not None and d.name in _UNIT_AXES and expr.args:
                src = typemap.get(expr.args[0].name)
                ok = (isinstance(src, TileType) and is_index(expr.args[0].name, depth + 1)
                      and math.prod(src.shape) == math.prod(ty.shape) and all(   # unit axes only
                          not isinstance(typemap.get(a.name), TileType)
                          for a in expr.args[1:]))
            elif expr.op in ("binop", "unary") or (d is not None and d.family == "elementwise"):
                args = _tile_operands(expr)
                tiles = [a for a in args or () if isinstance(typemap.get(a.name), TileType)]
                ok = args is not None and bool(tiles) and all(
                    is_index(a.name, depth + 1) for a in tiles)
        memo[name] = ok
        return ok

    # anchors: an elementwise op whose result is in an accumulator layout reads an index tile
    want: dict = {}
    conflict: set = set()

    def assign(name, layout):
        if layout is None:
            conflict.add(name)
            return
        have = want.get(name, layout)
        if have != layout:
            # the rows (columns) of two accumulators of the same rows (columns) hold the same
            # elements in the same registers: the first placement serves both
            if isinstance(have, VectorLayout) and isinstance(layout, VectorLayout) and \
                    (have.axis, have.ndim) == (layout.axis, layout.ndim) and \
                    local_slots(layout, have) is not None and local_slots(have, layout) \
                    is not None:
                return
            conflict.add(name)
        want[name] = layout
        expr = defs[name][0].value
        if isinstance(expr, ir.Var):
            assign(expr.name, layout)
            return
        d = op_of(expr)
        if d is not None and d.name == "arange":
            return
        if d is not None and d.name in _UNIT_AXES:
            src = expr.args[0].name
            sty = typemap[src]
            if not isinstance(layout, VectorLayout):
                conflict.add(name)
                return
            nd = len(sty.shape)
            assign(src, VectorLayout(layout.parent, layout.axis, nd) if nd in (1, 2)
                   and sty.shape[-1 if layout.axis == 1 or nd == 1 else 0] ==
                   layout.parent.shape[layout.axis] else None)
            return
        parent = layout if isinstance(layout, MmaLayout) else layout.parent
        for a in _tile_operands(expr):
            aty = typemap.get(a.name)
            if isinstance(aty, TileType):
                assign(a.name, layout if tuple(aty.shape) == tuple(typemap[name].shape)
                       else _vector_for(aty.shape, parent))

    for blk in func_ir.blocks.values():
        for st in blk.body:
            if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)):
                continue
            res = typemap.get(st.target.name)
            # wgmma accumulators: with mma.sync (sm_80) ptxas keeps the mask's elements live
            # across the product and spills, where the conversions it saves did not
            if not (isinstance(res, TileType) and isinstance(res.layout, MmaLayout)
                    and res.layout.wgmma):
                continue
            d = op_of(st.value)
            if not (st.value.op in ("binop", "unary")
                    or (d is not None and d.family == "elementwise")):
                continue
            for a in _tile_operands(st.value) or ():
                aty = typemap.get(a.name)
                if isinstance(aty, TileType) and not isinstance(aty.layout, MmaLayout) \
                        and is_index(a.name):
                    assign(a.name, _vector_for(aty.shape, res.layout))
    # a chain touching a conflict stays as it was (conservatively: all of them)
    if conflict or not want:
        return 0
    new_types = {n: TileType(typemap[n].dtype, typemap[n].shape, lay, False, typemap[n].align)
                 for n, lay in want.items() if typemap[n].layout != lay}
    if not new_types:
        return 0

    def arg_type(v):
        return new_types.get(v.name, typemap.get(v.name))

    # type again every op that makes or reads a retyped tile, before changing anything
    resig = {}
    readers = {id(st): st for n in new_types for st in uses.get(n, [])}
    makers = {id(defs[n][0]): defs[n][0] for n in new_types}
    for st in list(makers.values()) + list(readers.values()):
        if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)):
            continue                       # a copy: both sides are retyped alike
        expr = st.value
        old = calltypes.get(expr)
        if old is None:
            continue
        target = new_types.get(st.target.name, typemap.get(st.target.name))
        d = op_of(expr)
        if d is not None and d.name == "arange":
            resig[id(expr)] = (expr, old.replace(return_type=target))
            continue
        if d is not None and d.family not in ("elementwise",) and d.name not in _UNIT_AXES:
            continue        # its argument is converted to the blocked layout as before
        new = _retype(expr, [arg_type(a) for a in _call_args(expr)], typemap, typingctx,
                      old, target, d)
        if new is None:
            return 0
        resig[id(expr)] = (expr, new)
    for n, t in new_types.items():
        typemap.pop(n)
        typemap[n] = t
    for expr, sig in resig.values():
        dict.__setitem__(calltypes, expr, sig)
    return len(new_types)


def _call_args(expr):
    if expr.op == "binop":
        return [expr.lhs, expr.rhs]
    if expr.op == "unary":
        return [expr.value]
    return list(expr.args)


def _retype(expr, args, typemap, typingctx, old, target, d):
    """``expr``'s signature typed again for argument types ``args``; None unless its result
    is ``target``. A unit-axes op takes ``target`` as given (its lowering moves the elements
    into the result's layout, ``lowering/shape.py``)."""
    args = tuple(args)
    if d is not None and d.name in _UNIT_AXES:
        try:                # registers the op's implementation for these argument types
            typed = typemap[expr.func.name].get_call_type(typingctx, args, {})
        except Exception:  # noqa: BLE001 - as below
            return None
        if typed is None or tuple(typed.return_type.shape) != tuple(target.shape):
            return None
        return old.replace(args=typed.args, return_type=target)
    try:
        if expr.op == "binop":
            new = typingctx.resolve_function_type(expr.fn, args, {})
        elif expr.op == "unary":
            new = typingctx.resolve_function_type(expr.fn, args, {})
        else:
            new = typemap[expr.func.name].get_call_type(typingctx, args, {})
    except Exception:  # noqa: BLE001 - an op that does not type so keeps the chain as it was
        return None
    if new is None or new.return_type != target:
        return None
    return new
