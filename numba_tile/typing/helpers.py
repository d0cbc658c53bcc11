"""Helper functions: plain Python functions a kernel calls, inlined before typing.

A kernel may call a module-level (or closure-held) Python function: a tile helper such as an
activation or an attention inner loop, itself written with numba_tile's ops. Before type
inference the call is replaced by the helper's body (numba-cuda's ``InlineWorker``, the
machinery of ``@jit(inline="always")``), so from then on the helper *is* kernel code: it is
typed with the kernel's types, the closed-world pass sees every value and call it makes, and
the ownership pass counts its loads and stores as the kernel's own (a helper that stores to a
read-only tensor is refused at its line, as the kernel would be). Keyword arguments and
defaults bind as in Python.

What is inlined: a call whose callee is a Python function object (``types.FunctionType``,
not a generator) defined outside numba, numba-cuda, numba_tile, NumPy and the standard
library, reached as a global, a closure variable or a module attribute, that is not a
numba_tile op and that Numba has no typing template for (``@overload``, ``type_callable``). Numba dispatchers (``@cuda.jit`` device functions) are not plain functions
and keep their own rules (``typing/closed_world.py``). A helper that calls itself, directly
or through other helpers, is refused (:class:`~numba_tile.errors.TileTypingError` at the
call), as is more than :data:`MAX_INLINED` inlined calls in one kernel.

The interpreter runs the typed IR, so it runs an inlined helper as kernel code too, each
operation with the type Numba gave it (``interpreter/typed_ir.py``).
"""

from __future__ import annotations

import types as pytypes

from numba.cuda.core import ir
from numba.cuda.core.compiler_machinery import FunctionPass, register_pass

from .. import frozen
from .._registry import op_for_key
from ..errors import TileTypingError

__all__ = ["InlineHelpers", "is_helper", "MAX_INLINED"]

#: inlined calls per kernel at most (a guard against runaway expansion)
MAX_INLINED = 256

_LIBRARY_ROOTS = frozenset({"numba", "numba_cuda", "numba_tile", "numpy", "llvmlite", "math",
                            "cmath", "operator", "builtins", "functools", "itertools",
                            "typing", "collections", "cupy", "torch", "triton"})


def is_helper(fn) -> bool:
    """Whether ``fn`` is a user helper the pass inlines (see the module docstring)."""
    if type(fn) is not pytypes.FunctionType or op_for_key(fn) is not None:
        return False
    if fn.__code__.co_flags & 0x3A0:        # generator, coroutine, async generator
        return False
    root = (getattr(fn, "__module__", None) or "").split(".")[0]
    if root in _LIBRARY_ROOTS:
        return False
    return not _typed_by_numba(fn)


def _typed_by_numba(fn) -> bool:
    """Numba has typing templates for ``fn`` (``@overload``, ``type_callable``,
    ``register_jitable``): it is typed as such, not inlined (``typing/closed_world.py``
    decides about it)."""
    from numba.cuda.descriptor import cuda_target
    ctx = cuda_target.typing_context
    try:
        ctx.refresh()
        return ctx._lookup_global(fn) is not None
    except Exception:  # noqa: BLE001 - no registry answer: treat it as a plain function
        return False


def _kernel() -> str:
    """``"kernel 'name': "`` of the compilation in progress (or nothing)."""
    from ..compiler_context import _CURRENT
    ctx = _CURRENT.get()
    name = getattr(ctx, "kernel_name", None)
    return f"kernel '{name}': " if name else ""


def _callee(func_ir, expr):
    """The Python object a call expression calls, when the IR says (a global, a free
    variable, an attribute of a module global), else None. A callee held across a branch in
    the call's arguments (``h(t, 1.0 if c else 2.0)``: Numba passes it to the join block in a
    variable each predecessor assigns) counts where every definition names the same object."""
    return _resolve(func_ir, expr.func, 0)


_MISSING = object()


def _resolve(func_ir, var, depth):
    if depth > 16:
        return None
    defs = func_ir._definitions.get(var.name, ()) if isinstance(var, ir.Var) else ()
    if not defs:
        return None
    found = _MISSING
    for d in defs:
        if isinstance(d, ir.Var):
            v = _resolve(func_ir, d, depth + 1)
        elif isinstance(d, (ir.Global, ir.FreeVar)):
            v = d.value
        elif isinstance(d, ir.Expr) and d.op == "getattr":
            v = _callee_of_getattr(func_ir, d)
        else:
            v = None
        if v is None or (found is not _MISSING and v is not found):
            return None
        found = v
    return None if found is _MISSING else found


def _candidates(func_ir, var, depth=0, seen=None):
    """Every object ``var``'s definitions name, through copies (None for one that names
    none): the helpers a call may reach where :func:`_resolve` finds no single one."""
    seen = set() if seen is None else seen
    if depth > 16 or not isinstance(var, ir.Var) or var.name in seen:
        return [None]
    seen.add(var.name)
    out = []
    for d in func_ir._definitions.get(var.name, ()) or (None,):
        if isinstance(d, ir.Var):
            out += _candidates(func_ir, d, depth + 1, seen)
        elif isinstance(d, (ir.Global, ir.FreeVar)):
            out.append(d.value)
        elif isinstance(d, ir.Expr) and d.op == "getattr":
            out.append(_callee_of_getattr(func_ir, d))
        else:
            out.append(None)
    return out


def _refuse_chosen_helper(func_ir, st):
    """A call whose callee is one of several helpers, chosen by a branch (``f = h1 if c else
    h2; f(t)``): refused at the call, where Numba would report an untyped global."""
    found = [c for c in _candidates(func_ir, st.value.func) if c is not None and is_helper(c)]
    names = sorted({getattr(c, "__qualname__", c.__name__) for c in found})
    if len(names) > 1:
        raise TileTypingError(
            f"{_kernel()}this call reaches one of the helper functions "
            f"{', '.join(repr(n) for n in names)}, chosen by a branch: kernels inline their "
            f"helpers before typing, so a call must name one helper; call each helper in its "
            f"own branch", filename=st.loc.filename, lineno=st.loc.line)


@register_pass(mutates_CFG=True, analysis_only=False)
class InlineHelpers(FunctionPass):
    """Inline the kernel's calls of user helper functions (module docstring)."""

    _name = "numba_tile_inline_helpers"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        from numba.cuda.core import inline_closurecall, postproc
        from numba.cuda.core.analysis import compute_cfg_from_blocks
        from numba.cuda.core.ir_utils import simplify_CFG

        worker = inline_closurecall.InlineWorker(
            state.typingctx, state.targetctx, state.locals, state.pipeline, state.flags,
            validator=inline_closurecall.callee_ir_validator)
        func_ir = state.func_ir
        # the helpers each block's code came from (a call of one of them is recursion)
        origin = {label: () for label in func_ir.blocks}
        work = list(func_ir.blocks.items())
        count = 0
        while work:
            label, block = work.pop()
            chain = origin.get(label, ())
            for i, st in enumerate(block.body):
                if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)
                        and st.value.op == "call"):
                    continue
                fn = _callee(func_ir, st.value)
                if fn is None:
                    _refuse_chosen_helper(func_ir, st)
                if fn is None or not is_helper(fn):
                    continue
                name = getattr(fn, "__qualname__", fn.__name__)
                if fn in chain:
                    raise TileTypingError(
                        f"{_kernel()}helper function '{name}' calls itself (through "
                        f"{' -> '.join(getattr(f, '__qualname__', '?') for f in chain)}): "
                        f"kernels inline their helpers, and a recursive one has no end",
                        filename=st.loc.filename, lineno=st.loc.line)
                count += 1
                if count > MAX_INLINED:
                    raise TileTypingError(
                        f"{_kernel()}more than {MAX_INLINED} helper calls to inline (the "
                        f"last: '{name}')", filename=st.loc.filename, lineno=st.loc.line)
                before = set(func_ir.blocks)
                try:
                    _, _, _, new_blocks = worker.inline_function(func_ir, block, i, fn)
                except TileTypingError:
                    raise
                except Exception as exc:  # noqa: BLE001 - Numba's frontend refused the body
                    first = (str(exc).strip().splitlines() or [""])[0]
                    raise TileTypingError(
                        f"{_kernel()}helper function '{name}' cannot be inlined into the "
                        f"kernel: {type(exc).__name__}: {first}",
                        filename=st.loc.filename, lineno=st.loc.line) from None
                inner = chain + (fn,)
                for lb in set(func_ir.blocks) - before:
                    origin[lb] = inner            # the helper's own blocks
                # InlineWorker lists the rest of the caller's block first, then the helper's
                origin[new_blocks[0][0]] = chain
                work.extend(new_blocks)
                work.extend((lb, func_ir.blocks[lb]) for lb in set(func_ir.blocks) - before
                            if all(lb != n for n, _ in new_blocks))
                break
        rewritten = _rewrite_device_calls(func_ir)
        if count:
            cfg = compute_cfg_from_blocks(func_ir.blocks)
            for dead in cfg.dead_nodes():
                del func_ir.blocks[dead]
            _drop_helper_references(func_ir)
            postproc.PostProcessor(func_ir).run()
            func_ir.blocks = simplify_CFG(func_ir.blocks)
        elif rewritten:
            from numba.cuda.core.ir_utils import build_definitions
            func_ir._definitions = build_definitions(func_ir.blocks)
        return bool(count or rewritten)


def _rewrite_device_calls(func_ir) -> int:
    """``f(a, b)`` -> ``_device_call(f, (a, b))`` for every call of a numba-cuda device
    function (``typing/device.py``), the kernel's and its inlined helpers' alike. Returns the
    number rewritten.

    Raises:
        TileTypingError: a device function called with keyword or starred arguments.
    """
    from numba.cuda.core.ir_utils import mk_unique_var

    from .. import language
    from .device import is_device_function
    n = 0
    for block in func_ir.blocks.values():
        body = []
        for st in block.body:
            if (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)
                    and st.value.op == "call"):
                expr = st.value
                fn = _callee(func_ir, expr)
                if fn is not None and is_device_function(fn):
                    if expr.kws or expr.vararg is not None or expr.varkwarg is not None:
                        raise TileTypingError(
                            f"{_kernel()}device function '{fn.py_func.__qualname__}' is "
                            f"called with keyword or starred arguments: in a kernel, give a "
                            f"device function its arguments by position",
                            filename=st.loc.filename, lineno=st.loc.line)
                    loc, scope = st.loc, block.scope
                    op_var = ir.Var(scope, mk_unique_var("$device_call"), loc)
                    args_var = ir.Var(scope, mk_unique_var("$device_args"), loc)
                    body.append(ir.Assign(ir.Global("_device_call", language._device_call,
                                                    loc), op_var, loc))
                    body.append(ir.Assign(ir.Expr.build_tuple(list(expr.args), loc),
                                          args_var, loc))
                    st.value = ir.Expr.call(op_var, [expr.func, args_var], (), loc)
                    n += 1
            body.append(st)
        block.body = body
    return n


def _drop_helper_references(func_ir):
    """Remove the assignments of helper functions (``$f = global(helper)``, or a module's
    attribute), and the copies of them a branch in a call's arguments made, that the
    inlined calls left unused: Numba cannot type a plain function."""
    from numba.cuda.core.ir_utils import build_definitions
    changed = True
    while changed:
        changed = False
        func_ir._definitions = build_definitions(func_ir.blocks)
        used = set()
        for blk in func_ir.blocks.values():
            for st in blk.body:
                for v in st.list_vars():
                    if not (isinstance(st, ir.Assign) and v.name == st.target.name):
                        used.add(v.name)
        for blk in func_ir.blocks.values():
            keep = []
            for st in blk.body:
                if isinstance(st, ir.Assign) and st.target.name not in used and _refers_helper(
                        func_ir, st.value):
                    changed = True
                    continue
                keep.append(st)
            blk.body = keep
    func_ir._definitions = build_definitions(func_ir.blocks)


def _refers_helper(func_ir, value) -> bool:
    if isinstance(value, ir.Var):
        return is_helper(_resolve(func_ir, value, 0))
    if isinstance(value, (ir.Global, ir.FreeVar)):
        return is_helper(value.value)
    if isinstance(value, ir.Expr) and value.op == "getattr":
        return is_helper(_callee_of_getattr(func_ir, value))
    return False


def _callee_of_getattr(func_ir, expr):
    """``module.attr`` where the IR says ``module`` is a module global or free variable."""
    try:
        base = func_ir.get_definition(expr.value)
    except Exception:  # noqa: BLE001
        return None
    if isinstance(base, (ir.Global, ir.FreeVar)) and isinstance(base.value, pytypes.ModuleType):
        return getattr(base.value, expr.attr, None)
    return None


# snapshots copy helpers as functions (their globals as they were): frozen.py asks this module
frozen.copies_functions(is_helper)
