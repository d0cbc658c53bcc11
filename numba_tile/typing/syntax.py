"""Python and NumPy syntax kernels are written in, rewritten to numba_tile's ops before typing.

A compiler pass over the kernel's untyped IR (after helpers are inlined and Constants folded,
before type inference), so both backends (the interpreter runs the same typed IR) and every
later analysis (pipelining, ``wgmma``, ownership) see the ops themselves:

* **Augmented assignment** ``a op= b`` is ``a = a op b``. Every value a kernel holds (tiles,
  scalars, tile indices) is immutable, so Numba's in-place operator (``operator.iadd``...)
  and the plain one compute the same; the plain one is what numba_tile's ops type and lower:
  ``acc += nt.mma(a, b, zero)``, ``m *= alpha``. A tensor cannot be written by an operator
  (``x += 1`` is refused as ``x + 1`` is: write with ``nt.store``).
* **NumPy's newaxis** ``t[:, None]``, ``t[None, :]``, ``t[None]``: a static index of full
  slices ``:`` and ``None`` is ``nt.expand_dims(t, axis)`` for each ``None``, at its position
  (``t[None, :, None]`` of a 1-D tile is a ``(1, n, 1)`` tile).
* **The transpose attribute** ``t.T`` is ``nt.transpose(t)`` (so a transposed operand of
  ``mma`` keeps the pipelined path); of anything but a tile it is refused as
  ``transpose()`` of it is.
"""

from __future__ import annotations

from numba.cuda.core import ir
from numba.cuda.core.compiler_machinery import FunctionPass, register_pass
from numba.cuda.core.ir_utils import mk_unique_var

__all__ = ["RewriteSyntax", "rewrite_syntax"]

_FULL = slice(None, None, None)


def _newaxis_positions(index) -> list[int] | None:
    """The positions of ``None`` in a static index made of ``None`` and full slices only, with
    at least one ``None``; None for any other index."""
    items = index if isinstance(index, tuple) else (index,)
    if not items or any(not (i is None or i == _FULL) for i in items):
        return None
    positions = [k for k, i in enumerate(items) if i is None]
    return positions or None


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
            elif expr.op == "static_getitem" and _newaxis_positions(expr.index) is not None:
                value = expr.value
                for pos in _newaxis_positions(expr.index):
                    fn = _global(body, scope, "expand_dims", numba_tile.expand_dims, loc)
                    axis = ir.Var(scope, mk_unique_var("$nt_axis"), loc)
                    body.append(ir.Assign(ir.Const(pos, loc), axis, loc))
                    out = ir.Var(scope, mk_unique_var("$nt_newaxis"), loc)
                    body.append(ir.Assign(ir.Expr.call(fn, [value, axis], (), loc), out, loc))
                    value = out
                st = ir.Assign(value, st.target, loc)
                changed = True
            elif expr.op == "getattr" and expr.attr == "T" and not _of_a_global(func_ir,
                                                                                 expr.value):
                fn = _global(body, scope, "transpose", numba_tile.transpose, loc)
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
