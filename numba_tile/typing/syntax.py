"""Python and NumPy syntax kernels are written in, rewritten to numba_tile's ops before typing.

A compiler pass over the kernel's untyped IR (after helpers are inlined and Constants folded,
before type inference), so both backends (the interpreter runs the same typed IR) and every
later analysis (pipelining, ``wgmma``, ownership) see the ops themselves:

* **Augmented assignment** ``a op= b`` is ``a = a op b``. Every value a kernel holds (tiles,
  scalars, tile indices) is immutable, so Numba's in-place operator (``operator.iadd``...)
  and the plain one compute the same; the plain one is what numba_tile's ops type and lower:
  ``acc += nt.mma(a, b, zero)``, ``m *= alpha``. A tensor cannot be written by an operator
  (``x += 1`` is refused as ``x + 1`` is: write with ``nt.store``).
* **NumPy's newaxis** ``t[:, None]``, ``t[None, :]``, ``t[None]``: an axis of extent 1 at
  each ``None``'s position (``t[None, :, None]`` of a 1-D tile is a ``(1, n, 1)`` tile).
* **Static slices** ``t[0:G]``, ``t[:, 64:128]``, ``t[-4:]`` (starts and stops integer
  literals or Constants, step 1, mixed with ``None`` and ``:``): ``nt.subtile`` of the box
  Python's slicing rules give (the lengths must be powers of two).
  These indexes become ``_getitem_static``, which the typing dispatches on the value's type:
  a tile's slice and new axes, a tuple's slice (``shape[:2]``), and for an array parameter
  the refusal its element reads give.
* **The transpose attribute** ``t.T`` becomes ``_attr_T``: ``nt.transpose(t)`` of a tile (so
  a transposed operand of ``mma`` keeps the pipelined path), a named tuple's field ``T``.
"""

from __future__ import annotations

from numba.cuda.core import ir
from numba.cuda.core.compiler_machinery import FunctionPass, register_pass
from numba.cuda.core.ir_utils import mk_unique_var

__all__ = ["RewriteSyntax", "rewrite_syntax"]

_FULL = slice(None, None, None)


_UNRESOLVED = object()


def _static_slice(item) -> bool:
    return (isinstance(item, slice) and item.step in (None, 1)
            and all(v is None or (isinstance(v, int) and not isinstance(v, bool))
                    for v in (item.start, item.stop)))


def _tile_index(index):
    """``(slices, newaxes)`` of a static index made of ``None`` and static slices only: the
    slices in axis order and the positions of the ``None`` entries; None for any other
    index."""
    items = index if isinstance(index, tuple) else (index,)
    if not items or any(not (i is None or _static_slice(i)) for i in items):
        return None
    slices = [i for i in items if i is not None]
    newaxes = [k for k, i in enumerate(items) if i is None]
    return slices, newaxes


def _resolve(func_ir, var, depth=0):
    """The Python value of an index variable built from constants (``slice(0, G)`` after
    Constants are folded, tuples of them, ``None``), or ``_UNRESOLVED``."""
    if depth > 8:
        return _UNRESOLVED
    try:
        d = func_ir.get_definition(var)
    except Exception:  # noqa: BLE001 - several definitions: a run-time value
        return _UNRESOLVED
    if isinstance(d, (ir.Const, ir.Global, ir.FreeVar)):
        return d.value
    if isinstance(d, ir.Var):
        return _resolve(func_ir, d, depth + 1)
    if isinstance(d, ir.Expr) and d.op == "build_tuple":
        items = tuple(_resolve(func_ir, v, depth + 1) for v in d.items)
        return _UNRESOLVED if any(i is _UNRESOLVED for i in items) else items
    if isinstance(d, ir.Expr) and d.op == "call" and not d.kws and d.vararg is None \
            and _resolve(func_ir, d.func, depth + 1) is slice:
        args = [_resolve(func_ir, a, depth + 1) for a in d.args]
        if any(a is _UNRESOLVED for a in args):
            return _UNRESOLVED
        try:
            return slice(*args)
        except TypeError:
            return _UNRESOLVED
    return _UNRESOLVED


def _index_of(func_ir, expr):
    if expr.op == "static_getitem":
        return expr.index
    return _resolve(func_ir, expr.index)


def _const_tuple(body, scope, values, loc):
    items = []
    for v in values:
        var = ir.Var(scope, mk_unique_var("$nt_bound"), loc)
        body.append(ir.Assign(ir.Const(v, loc), var, loc))
        items.append(var)
    out = ir.Var(scope, mk_unique_var("$nt_bounds"), loc)
    body.append(ir.Assign(ir.Expr.build_tuple(items, loc), out, loc))
    return out


def _global(body, scope, name, value, loc):
    var = ir.Var(scope, mk_unique_var(f"$nt_{name}"), loc)
    body.append(ir.Assign(ir.Global(name, value, loc), var, loc))
    return var


def _of_a_global(func_ir, var) -> bool:
    """Whether ``var`` is a global, free variable or constant (a module's ``m.T`` is its own)."""
    try:
        d = func_ir.get_definition(var)
    except Exception:  # noqa: BLE001 - several definitions: a kernel value
        return False
    return isinstance(d, (ir.Global, ir.FreeVar, ir.Const))


def rewrite_syntax(func_ir) -> bool:
    """Rewrite the kernel's augmented assignments, newaxis indexing and ``.T`` (module
    docstring) in place. Returns whether anything changed."""
    import numba_tile
    changed = False
    for block in func_ir.blocks.values():
        body = []
        for st in block.body:
            if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)):
                body.append(st)
                continue
            expr, loc, scope = st.value, st.loc, st.target.scope
            if expr.op == "inplace_binop":
                st = ir.Assign(ir.Expr.binop(expr.immutable_fn, expr.lhs, expr.rhs, loc),
                               st.target, loc)
                changed = True
            elif expr.op in ("static_getitem", "getitem") \
                    and _tile_index(_index_of(func_ir, expr)) is not None:
                from .shape import OPEN_STOP
                slices, newaxes = _tile_index(_index_of(func_ir, expr))
                fn = _global(body, scope, "_getitem_static", numba_tile.language._getitem_static,
                             loc)
                starts = _const_tuple(body, scope, [sl.start or 0 for sl in slices], loc)
                stops = _const_tuple(body, scope, [OPEN_STOP if sl.stop is None else sl.stop
                                                   for sl in slices], loc)
                axes = _const_tuple(body, scope, newaxes, loc)
                st = ir.Assign(ir.Expr.call(fn, [expr.value, starts, stops, axes], (), loc),
                               st.target, loc)
                changed = True
            elif expr.op == "getattr" and expr.attr == "T" and not _of_a_global(func_ir,
                                                                                 expr.value):
                fn = _global(body, scope, "_attr_T", numba_tile.language._attr_T, loc)
                st = ir.Assign(ir.Expr.call(fn, [expr.value], (), loc), st.target, loc)
                changed = True
            body.append(st)
        block.body = body
    return changed


@register_pass(mutates_CFG=False, analysis_only=False)
class RewriteSyntax(FunctionPass):
    """Numba compiler pass running :func:`rewrite_syntax` before type inference."""

    _name = "numba_tile_rewrite_syntax"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        return rewrite_syntax(state.func_ir)
