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
            dead_branch_prune(state.func_ir, state.args)
            _drop_unused_undefined(state.func_ir)
        return changed


def _drop_unused_undefined(func_ir) -> None:
    """Remove the ``v = Undefined`` assignments a pruned branch leaves where nothing reads
    ``v`` (Triton's constexpr habit: ``if HAS_BIAS: b = ...`` and ``if HAS_BIAS: t = t + b``
    with ``HAS_BIAS=False``); the SSA join of ``b`` became an undefined value no one uses,
    which Numba's type inference refuses ("Unsupported assignment")."""
    used = set()
    for block in func_ir.blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.Assign):
                value = inst.value
                if isinstance(value, ir.Var):
                    used.add(value.name)
                elif isinstance(value, ir.Expr):
                    used.update(v.name for v in value.list_vars())
            else:
                used.update(v.name for v in inst.list_vars())
    undefined = {}
    for block in func_ir.blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.Assign) and inst.value is ir.UNDEFINED:
                undefined[inst.target.name] = inst.target.unversioned_name
        block.body = [inst for inst in block.body
                      if not (isinstance(inst, ir.Assign) and inst.value is ir.UNDEFINED
                              and inst.target.name not in used)]
    read = {name: var for name, var in undefined.items() if name in used}
    if not read:
        return
    for block in func_ir.blocks.values():
        for inst in block.body:
            names = {v.name for v in inst.list_vars()} if not isinstance(inst, ir.Assign) \
                else {v.name for v in getattr(inst.value, "list_vars", lambda: [])()}
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Var):
                names = {inst.value.name}
            hit = sorted(names & set(read))
            if hit:
                from ..compiler_context import current
                from ..errors import TileTypingError
                kernel = getattr(current(), "kernel_name", None)
                prefix = f"kernel '{kernel}': " if kernel else ""
                raise TileTypingError(
                    f"{prefix}variable '{read[hit[0]]}' is read here but assigned only under "
                    f"a branch that a Constant removes (an `if` on a Constant that is False "
                    f"here): assign it on every path, or read it under the same condition",
                    filename=inst.loc.filename, lineno=inst.loc.line)
