"""Facts of a loop in the typed IR that the pipelining analysis (``pipeline.py``) asks:
its back edges, its ``for k in range(a, n)`` induction variable, start and bound, whether a
value is the same in every iteration, the int a variable holds where typing knows it, an
offset's ``o + k * C`` step and base, and whether a value is visibly a multiple of a power of
two. Pure questions of
the IR: nothing here changes it.
"""

from __future__ import annotations

import operator as _operator

from numba.cuda.core import ir

from .._registry import op_for_key

_PURE_INT_OPS = ("bid", "num_blocks", "num_tiles")


def _op(typemap, expr):
    if not (isinstance(expr, ir.Expr) and expr.op == "call"):
        return None
    return op_for_key(getattr(typemap.get(expr.func.name), "typing_key", None))


def _own_expr(blocks, loop, op, inner=frozenset()):
    """The first ``target = <op expr>`` statement of the loop's own blocks (not of an inner
    loop), in label order, or None."""
    for lb in sorted(loop.body):
        if lb in inner:
            continue
        for st in blocks[lb].body:
            if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and st.value.op == op:
                return st
    return None


def _range_call(blocks, loop, defs, inner=frozenset()):
    """The ``range(...)`` call the loop iterates, or None."""
    st = _own_expr(blocks, loop, "iternext", inner)
    return None if st is None else _iterated_call(st.value.value.name, defs)


def _range_bound(blocks, loop, defs, inner=frozenset()):
    """The ``n`` of the loop's ``for k in range(n)`` (or ``range(a, n)``), an IR variable, or
    None (``_induction_variable`` has checked the form)."""
    call = _range_call(blocks, loop, defs, inner)
    return call.args[-1] if call is not None and call.args else None


def _range_start(blocks, loop, defs, inner=frozenset()):
    """The ``a`` of the loop's ``for k in range(a, n)``, an IR variable; None where the loop
    starts at 0 (``range(n)``, ``range(0, n)``)."""
    call = _range_call(blocks, loop, defs, inner)
    if call is None or len(call.args) != 2:
        return None
    start = _single_def(call.args[0].name, defs)
    if isinstance(start, ir.Const) and start.value == 0 and not isinstance(start.value, bool):
        return None
    return call.args[0]


def _pair_first(blocks, loop, inner=frozenset()):
    """The variable the loop's ``iternext`` binds (``k`` itself, defined where the iteration
    is tested: it dominates the loop's body), or None."""
    st = _own_expr(blocks, loop, "pair_first", inner)
    return None if st is None else st.target


def _latches(cfg, loop):
    return [src for src, _ in cfg.predecessors(loop.header) if src in loop.body]


def _induction_variable(blocks, loop, defs, inner=frozenset()):
    """Names bound to ``k`` of ``for k in range(n)`` or ``range(a, n)`` (step 1), or None: the
    loop's one ``iternext`` (in its header or the block after a header of phis; not in an inner
    loop)."""
    own = [lb for lb in sorted(loop.body) if lb not in inner and any(
        isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and st.value.op == "iternext"
        for st in blocks[lb].body)]
    if len(own) != 1:
        return None
    first = None
    for st in blocks[own[0]].body:
        if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and \
                st.value.op == "iternext":
            it = st.value.value.name
            if not _is_plain_range(it, defs):
                return None
        if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and \
                st.value.op == "pair_first":
            first = st.target.name
    if first is None:
        return None
    return with_copies({first}, defs)


def with_copies(names: set, defs) -> set:
    """``names`` and every variable that is (through a chain of copies) one of them."""
    changed = True
    while changed:
        changed = False
        for name, ds in defs.items():
            if name not in names and len(ds) == 1 and isinstance(ds[0][1], ir.Var) \
                    and ds[0][1].name in names:
                names.add(name)
                changed = True
    return names


def _single_def(name, defs):
    ds = defs.get(name, [])
    return ds[0][1] if len(ds) == 1 else None


def _iterated_call(iter_name, defs):
    """The call expression whose result the iterator ``iter_name`` iterates (through copies
    and ``getiter``), or None."""
    seen = set()
    v = _single_def(iter_name, defs)
    while isinstance(v, ir.Var) and v.name not in seen:
        seen.add(v.name)
        v = _single_def(v.name, defs)
    if not (isinstance(v, ir.Expr) and v.op == "getiter"):
        return None
    call = _single_def(v.value.name, defs)
    return call if isinstance(call, ir.Expr) and call.op == "call" else None


def _is_plain_range(iter_name, defs):
    call = _iterated_call(iter_name, defs)
    if call is None or call.kws or call.vararg:
        return False
    fn = _single_def(call.func.name, defs)
    if not (isinstance(fn, ir.Global) and fn.value is range):
        return False
    return len(call.args) in (1, 2)


def _invariant(name, loop, defs, typemap, depth=0):
    """``name`` has one value throughout the loop."""
    ds = defs.get(name)
    if ds is None:
        return True                      # an argument
    if len(ds) != 1 or depth > 16:
        return False
    label, v = ds[0]
    if label not in loop.body:
        return True
    if isinstance(v, (ir.Const, ir.FreeVar, ir.Global)):
        return True
    if isinstance(v, ir.Var):
        return _invariant(v.name, loop, defs, typemap, depth + 1)
    if isinstance(v, ir.Expr):
        if v.op == "binop" and v.fn in _INT_BINOPS:
            return all(_invariant(x.name, loop, defs, typemap, depth + 1)
                       for x in (v.lhs, v.rhs))
        if v.op == "call":
            d = op_for_key(getattr(typemap.get(v.func.name), "typing_key", None))
            if d is not None and d.name in _PURE_INT_OPS and not v.kws and not v.vararg:
                return all(_invariant(x.name, loop, defs, typemap, depth + 1) for x in v.args)
        if v.op == "getattr":
            return _invariant(v.value.name, loop, defs, typemap, depth + 1)
        if v.op == "static_getitem":       # idx[0] of a branded index from an outer loop
            return _invariant(v.value.name, loop, defs, typemap, depth + 1)
        if v.op == "getitem":
            return all(_invariant(x.name, loop, defs, typemap, depth + 1)
                       for x in (v.value, v.index))
    return False


_INT_BINOPS = (_operator.add, _operator.sub, _operator.mul, _operator.floordiv)


def _literal_int(name, defs, typemap):
    """The int a variable holds where typing knows it (a literal, a folded Constant)."""
    lit = getattr(typemap.get(name), "literal_value", None)
    if isinstance(lit, int) and not isinstance(lit, bool):
        return lit
    v = _single_def(name, defs)
    if isinstance(v, ir.Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    return None


def _loop_step(name, induction, defs, typemap, depth=0):
    """``C`` where ``name`` is ``k * C`` or ``C * k`` (``k`` the loop's variable, ``C`` an int
    literal or Constant from 1 to 2**31 - 1), through copies; else None."""
    v = _single_def(name, defs)
    while isinstance(v, ir.Var) and depth < 16:
        if v.name in induction:
            return None
        v = _single_def(v.name, defs)
        depth += 1
    if not (isinstance(v, ir.Expr) and v.op == "binop" and v.fn is _operator.mul):
        return None
    for a, b in ((v.lhs, v.rhs), (v.rhs, v.lhs)):
        if a.name in induction:
            c = _literal_int(b.name, defs, typemap)
            # below 2**31: the lowering recovers k as (k * C) // C, exact while k * C stays
            # below 2**64, that is for the first 2**33 iterations at least
            if c is not None and 0 < c < 2**31:
                return c
    return None


def _loop_linear(name, induction, loop, defs, typemap, depth=0):
    """``(C, o)`` where ``name`` is ``k * C`` (``o`` None) or a sum ``o + k * C`` / ``k * C + o``
    with ``o`` (an IR variable) the same in every iteration of ``loop``, through copies. Else
    None (also ``o1 + k * C + o2``: no one variable holds its base; ``(o1 + o2) + k * C``
    is taken)."""
    c = _loop_step(name, induction, defs, typemap)
    if c is not None:
        return c, None
    v = _single_def(name, defs)
    while isinstance(v, ir.Var) and depth < 16:
        if v.name in induction:
            return None
        name, v = v.name, _single_def(v.name, defs)
        depth += 1
    if depth >= 16 or not (isinstance(v, ir.Expr) and v.op == "binop"
                           and v.fn is _operator.add):
        return None
    for a, b in ((v.lhs, v.rhs), (v.rhs, v.lhs)):
        if not _invariant(b.name, loop, defs, typemap):
            continue
        inner = _loop_linear(a.name, induction, loop, defs, typemap, depth + 1)
        if inner is not None and inner[1] is None:
            return inner[0], b
        if inner is not None:
            return None
    return None


def _aligned(name, m, defs, typemap, depth=0) -> bool:
    """``name`` is visibly a multiple of ``m`` (a power of two): a literal multiple, a product
    with one, or a sum or difference of such values, through copies."""
    lit = _literal_int(name, defs, typemap)
    if lit is not None:
        return lit % m == 0
    v = _single_def(name, defs)
    if depth > 16:
        return False
    if isinstance(v, ir.Var):
        return _aligned(v.name, m, defs, typemap, depth + 1)
    if isinstance(v, ir.Expr) and v.op == "binop":
        if v.fn is _operator.mul:
            return any(_aligned(x.name, m, defs, typemap, depth + 1) for x in (v.lhs, v.rhs))
        if v.fn in (_operator.add, _operator.sub):
            return all(_aligned(x.name, m, defs, typemap, depth + 1) for x in (v.lhs, v.rhs))
    return False
