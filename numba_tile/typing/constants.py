"""Constant folding of Constant parameters, so tile shapes may be computed from them.

Numba types ``2 * BLOCK`` as a plain ``int64`` even when ``BLOCK`` is a compile-time
constant, which would make ``load(x, (i,), (2 * BLOCK,))`` a non-static shape. This pass
runs just before type inference: it replaces each read of a Constant parameter by its
value (``ir.Const``) and folds integer arithmetic whose operands are all constants
(``+ - * // % ** << >> & | ^`` and unary ``-``), so such expressions type as integer
literals, then prunes branches whose condition became constant (Numba's
``dead_branch_prune``), so ``if OP == 0: ... elif OP == 1: ...`` types and compiles only
the taken branch. Values that are not compile-time constants are left alone.
"""

from __future__ import annotations

import operator

from numba.cuda import types
from numba.cuda.core import ir
from numba.cuda.core.compiler_machinery import FunctionPass, register_pass
from numba.cuda.core.ir_utils import build_definitions

_FOLDABLE = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
             operator.pow, operator.lshift, operator.rshift, operator.and_, operator.or_,
             operator.xor}


def _const_int(func_ir, var):
    try:
        d = func_ir.get_definition(var)
    except Exception:  # noqa: BLE001 - several or no definitions: not a constant
        return None
    if isinstance(d, ir.Const) and isinstance(d.value, int) and not isinstance(d.value, bool):
        return d.value
    return None


def fold_constants(func_ir, argtypes) -> bool:
    """Rewrite ``func_ir`` in place; returns True when anything changed."""
    values = {i: t.value for i, t in enumerate(argtypes) if isinstance(t, types.Omitted)}
    changed = False
    for block in func_ir.blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Arg) \
                    and inst.value.index in values:
                inst.value = ir.Const(values[inst.value.index], inst.value.loc)
                changed = True
    if not changed:
        return False
    func_ir._definitions = build_definitions(func_ir.blocks)
    progress = True
    while progress:
        progress = False
        for block in func_ir.blocks.values():
            for inst in block.body:
                if not (isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr)):
                    continue
                e = inst.value
                out = None
                if e.op == "binop" and e.fn in _FOLDABLE:
                    lhs, rhs = _const_int(func_ir, e.lhs), _const_int(func_ir, e.rhs)
                    if lhs is not None and rhs is not None:
                        try:
                            out = e.fn(lhs, rhs)
                        except (ZeroDivisionError, ValueError, OverflowError):
                            out = None
                elif e.op == "unary" and e.fn in (operator.neg, "-"):
                    v = _const_int(func_ir, e.value)
                    out = -v if v is not None else None
                if isinstance(out, int) and -2**63 <= out < 2**63:
                    inst.value = ir.Const(out, e.loc)
                    func_ir._definitions[inst.target.name] = [inst.value]
                    progress = True
    return True


@register_pass(mutates_CFG=False, analysis_only=False)
class FoldConstantsPass(FunctionPass):
    """Numba compiler pass running :func:`fold_constants` before type inference."""

    _name = "numba_tile_fold_constants"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        changed = fold_constants(state.func_ir, state.args)
        if changed:
            # branches on Constant parameters (``if OP == 0:``) are now branches on constants:
            # prune the dead ones, so only the taken branch is typed and compiled
            from numba.cuda.core.analysis import dead_branch_prune
            before = _assigned(state.func_ir)
            dead_branch_prune(state.func_ir, state.args)
            _refuse_reads_of_pruned(state.func_ir, before - _assigned(state.func_ir))
        return changed


def _assigned(func_ir) -> set:
    return {inst.target.name for block in func_ir.blocks.values() for inst in block.body
            if isinstance(inst, ir.Assign)}


def _refuse_reads_of_pruned(func_ir, lost: set) -> None:
    """Refuse a read of a variable that only pruned branches assigned (Triton's constexpr
    habit read outside its ``if``), at the read. A variable assigned and read only under
    ``if`` on a false Constant is gone with its branches: nothing to refuse."""
    lost = {name for name in lost if not name.startswith("$")}
    if not lost:
        return
    for label in sorted(func_ir.blocks):
        for inst in func_ir.blocks[label].body:
            hit = sorted(v.name for v in inst.list_vars()
                         if v.name in lost and not (isinstance(inst, ir.Assign)
                                                    and v.name == inst.target.name))
            if hit:
                from ..compiler_context import current
                from ..errors import TileTypingError
                kernel = getattr(current(), "kernel_name", None)
                prefix = f"kernel '{kernel}': " if kernel else ""
                raise TileTypingError(
                    f"{prefix}variable '{hit[0]}' is read here but assigned only under a "
                    f"branch that a Constant removes (an `if` on a Constant that is False "
                    f"here): assign it on every path, or read it under the same condition",
                    filename=inst.loc.filename, lineno=inst.loc.line)
