"""The interpreter's executor: it runs a function's typed Numba IR, statement by statement.

What the interpreter runs is what the compiler typed and checked: the kernel's IR right after
Numba's type inference and numba_tile's closed-world and ownership passes (helpers already
inlined, Constant parameters folded), with the type Numba gave every variable and the
signature it chose for every operation. A device function runs from the IR numba-cuda
compiled for its argument types (``compiled_device_function``). Running that IR rather than
the Python function makes every scalar operation follow Numba's typing, per operation
(``interpreter/scalars.py``): each assignment converts its value to the target variable's
type, each operator and library call on scalars computes in its signature's types. Tiles,
tensors and the other values of numba_tile's types go to the same ops' interpreter rules
as before (an operator on a tile calls the tile's Python operator).

Calls run what the compiled code calls: a call Numba typed with one of its own ``@overload``
implementations (``min(C)``, ``sum(C)``, ``sum(range(n))``) runs that implementation's typed
IR (:func:`overload_result`); a library function gets its arguments converted to the
signature Numba chose (``range(x)`` of a float); and a module's attribute (``math.exp``,
``nt.exp``, ``math.pi``) is the one it held when the kernel was typed, not what the module
holds at a later launch.

Numba's rules for a variable read where no assignment reached it (a loop that ran zero
times) hold too: it is zero-initialized. A number is 0, a tile is all zeros (and, if its
type is masked, has no valid element), a tile index of ``tiles()`` or ``strips()`` is not
valid (loads give padding, stores write nothing, ``idx[d]`` is -1); the compiler refuses such
reads of any other type on both paths (``typing/undefined.py``).

While a statement runs, :data:`numba_tile.runtime.call_site.INTERPRETED` holds its
source line, so errors an op raises name the kernel's line, as the compiled kernel's would.
"""

from __future__ import annotations

import operator

import numpy as np
from numba.cuda import types
from numba.cuda.core import ir

from ..errors import TileTypingError
from ..runtime.call_site import INTERPRETED
from ..typing.closed_world import _LIBRARY_IDS
from ..typing.device import is_device_function
from ..typing.linked import linked_call, refusal
from ..typing.types import PartitionIndexType, StripIndexType, TileType
from . import scalars

__all__ = ["Program", "build", "from_state", "null_value", "device_program"]

#: the environment key of a run's arguments (no IR variable has this name)
_ARGS = " args"


class _Return:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Frame:
    """The statement being run (``loc``: Numba's ``ir.Loc``), for error locations."""

    __slots__ = ("loc",)

    def __init__(self):
        self.loc = None

    def site(self):
        loc = self.loc
        return (loc.filename, loc.line) if loc is not None else None


class _Block:
    __slots__ = ("phis", "steps", "term", "term_loc")

    def __init__(self, phis, steps, term, term_loc):
        self.phis, self.steps, self.term, self.term_loc = phis, steps, term, term_loc


class Program:
    """A typed function ready to run.

    Attributes:
        name: the function's name (for messages).
        return_type: the Numba type of its result.
    """

    def __init__(self, name: str, blocks: dict, entry: int, return_type):
        self.name, self._blocks, self._entry = name, blocks, entry
        self.return_type = return_type

    def run(self, args):
        """Run the function on ``args`` (interpreter values, in parameter order) and return
        its result."""
        return self.run_each((args,))[0]

    def run_each(self, rows) -> list:
        """:meth:`run` on each of ``rows`` (argument lists), in order: the results."""
        frame = _Frame()
        token = INTERPRETED.set(frame)
        try:
            return [self._execute(args, frame) for args in rows]
        except Exception as exc:
            _note(exc, frame, self.name)
            raise
        finally:
            INTERPRETED.reset(token)

    def _execute(self, args, frame):
        env = {_ARGS: args}
        blocks = self._blocks
        label, prev = self._entry, None
        while True:
            blk = blocks[label]
            if blk.phis:
                _enter(blk.phis, env, prev)
            for step, loc in blk.steps:
                frame.loc = loc
                step(env)
            frame.loc = blk.term_loc
            nxt = blk.term(env)
            if nxt.__class__ is _Return:
                return nxt.value
            prev, label = label, nxt


def _note(exc, frame, name):
    """Add the kernel's line to an exception raised while a statement ran (once: the
    innermost function's)."""
    site = frame.site()
    if site is None or getattr(exc, "_numba_tile_site", None) is not None:
        return
    try:
        exc._numba_tile_site = site
        exc.add_note(f"(raised in '{name}' at {site[0]}, line {site[1]}, run by the "
                     f"numba_tile interpreter)")
    except (AttributeError, TypeError):     # an exception that takes no attributes
        pass


def _enter(phis, env, prev):
    """Assign a block's phi nodes for the edge from block ``prev``, all at once."""
    values = []
    for target, incoming, conv in phis:
        src = incoming.get(prev, _MISSING)
        if src is _MISSING:
            raise RuntimeError(f"internal error: no phi value for '{target}' from block {prev}")
        values.append((target, src(env) if callable(src) else src, conv))
    for target, value, conv in values:
        env[target] = conv(value) if conv is not None else value


_MISSING = object()


# ----------------------------------------------------------------------------- values


def null_value(ty):
    """The value of a variable of type ``ty`` that no assignment reached, as the compiled
    code has it (Numba zero-initializes it: ``get_constant_null``).

    Raises:
        TypeError: a type whose zero value the interpreter does not reproduce (the compiler
            refuses such reads: ``typing/undefined.py``).
    """
    if isinstance(ty, types.Literal) and scalars.is_scalar(ty):
        return ty.literal_value
    if scalars.is_scalar(ty):
        return scalars.null(ty)
    if isinstance(ty, TileType):
        from .. import dtypes
        from .values import InterpTile
        data = np.zeros(ty.shape, dtypes.to_numpy(ty.dtype))
        return InterpTile(data, ty.dtype, (0,) * len(ty.shape) if ty.masked else None)
    if isinstance(ty, StripIndexType):
        from .values import InterpStrip
        return InterpStrip(ty.brand, (-1,) * ty.ndim)
    if isinstance(ty, PartitionIndexType):
        from .values import InterpIndex
        return InterpIndex(ty.brand, (-1,) * ty.ndim)
    if isinstance(ty, types.BaseTuple):
        return tuple(null_value(t) for t in ty.types)
    if isinstance(ty, (types.NoneType, types.Omitted)):
        return None
    raise TypeError(f"no zero value for a variable of type {ty}")


def _converter(ty):
    """The conversion an assignment to a variable of type ``ty`` applies (Numba casts every
    assigned value to its target's type), or None."""
    if ty is None:
        return None
    if isinstance(ty, (types.IntegerLiteral, types.BooleanLiteral)):
        value = ty.literal_value
        return lambda _v: value
    if isinstance(ty, types.Literal) or not scalars.is_scalar(ty):
        return None
    return scalars.caster(ty)


# ----------------------------------------------------------------------------- building


class _Builder:
    def __init__(self, name, blocks, typemap, calltypes, typingctx, label):
        self.name, self.blocks, self.label = name, blocks, label
        self.typemap, self.calltypes, self.typingctx = typemap, calltypes, typingctx

    def refuse(self, what, loc):
        raise TileTypingError(
            f"{self.label}the interpreter has no rule for {what}, and a kernel it cannot run "
            f"is refused on both paths (CI could not check it): write it without",
            filename=getattr(loc, "filename", None), lineno=getattr(loc, "line", None))

    # -- values

    def value(self, value, target, loc):
        """A function of the environment computing ``value`` (the right side of an
        assignment to ``target``)."""
        if isinstance(value, ir.Var):
            name = value.name
            return lambda env: env[name]
        if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)):
            v = value.value
            return lambda env: v
        if isinstance(value, ir.Arg):
            index = value.index
            return lambda env: env[_ARGS][index]
        if isinstance(value, ir.Expr):
            method = getattr(self, "expr_" + value.op, None)
            if method is None:
                self.refuse(f"the operation '{value.op}'", loc)
            return method(value, target, loc)
        self.refuse(f"the value {value!r}", loc)

    def _scalar_sig(self, expr, tuples=False):
        """The signature of ``expr`` if it takes scalars and returns a scalar, else None. With
        ``tuples``, tuples of scalars count as scalars (``divmod`` and ``np.modf`` return
        one, ``min(C)`` of a tuple Constant takes one)."""
        sig = self.calltypes.get(expr)
        if sig is None:
            return None

        def ok(t):
            return scalars.is_scalar(t) or (tuples and isinstance(t, types.BaseTuple) and t.types
                                            and all(scalars.is_scalar(u) for u in t.types))

        if not ok(sig.return_type) or not all(ok(t) for t in sig.args):
            return None
        return sig

    def expr_binop(self, expr, target, loc):
        fn, lhs, rhs = expr.fn, expr.lhs.name, expr.rhs.name
        full = self.calltypes.get(expr)
        if fn in (operator.eq, operator.ne) and full is not None:
            from ..typing.memory import same_dtype_class
            same = same_dtype_class(*full.args)
            if same is not None:                # dtypes compare by their types: static
                value = np.bool_(same == (fn is operator.eq))
                return lambda env: value
        sig = self._scalar_sig(expr)
        try:
            impl = scalars.binop_impl(fn, sig) if sig is not None else None
        except scalars.Untabled:            # Python's, the result cast to its variable's type
            impl = None
        if impl is None:
            return lambda env: fn(env[lhs], env[rhs])
        return lambda env: impl(env[lhs], env[rhs])

    expr_inplace_binop = expr_binop

    def expr_unary(self, expr, target, loc):
        fn, arg = expr.fn, expr.value.name
        sig = self._scalar_sig(expr)
        if sig is None:
            return lambda env: fn(env[arg])
        unary = scalars.unary

        def scalar(env):
            a = env[arg]
            try:
                return unary(fn, sig, a)
            except scalars.Untabled:
                return fn(a)

        return scalar

    def expr_call(self, expr, target, loc):
        func = expr.func.name
        args = [a.name for a in expr.args]
        kws = [(k, v.name) for k, v in expr.kws]
        vararg = expr.vararg.name if expr.vararg is not None else None
        varkwarg = expr.varkwarg.name if expr.varkwarg is not None else None
        sig = self.calltypes.get(expr)
        scalar_sig = self._scalar_sig(expr, tuples=True) if not kws and varkwarg is None \
            else None
        typingctx = self.typingctx
        fnty = self.typemap.get(func)
        key = fnty.typing_key if isinstance(fnty, types.Function) else None
        if scalar_sig is not None and key not in (min, max) and any(
                isinstance(t, types.BaseTuple) for t in scalar_sig.args):
            scalar_sig = None           # a tuple argument: only min(C) and max(C) take one
        if (isinstance(fnty, types.NumberClass) and scalar_sig is not None and len(args) == 1
                and vararg is None and scalars.is_scalar(scalar_sig.return_type)):
            # nt.int32(x), nt.float16(x): Numba's cast, as the compiled kernel converts
            # (a NaN or out-of-range float saturates: lowering/scalars.py), not NumPy's
            (arg,), at, ret = args, scalar_sig.args[0], scalar_sig.return_type
            return lambda env: scalars.cast(scalars.cast(env[arg], at), ret)
        linked = linked_call(fnty, sig, overload_result(fnty, sig))
        if linked is not None:              # refused on both paths (typing/linked.py)
            raise TileTypingError(f"{self.label}{refusal(linked)}",
                                  filename=getattr(loc, "filename", None),
                                  lineno=getattr(loc, "line", None))
        overload = None
        if not (scalar_sig is not None and scalars.has_rule(key)):
            overload = self._overload(fnty, sig, loc)
        # a library function given its arguments as Numba converts them to the signature it
        # chose (range(x) of a float64 x: range of int32, truncated and saturated)
        converted = None
        if (overload is None and sig is not None and id(key) in _LIBRARY_IDS and vararg is None
                and len(sig.args) == len(args) and all(scalars.is_scalar(t) for t in sig.args)):
            converted = tuple(scalars.caster(t) if scalars.is_scalar(t)
                              and not isinstance(t, types.Literal) else None for t in sig.args)
            if not any(converted):
                converted = None

        def call(env):
            a = [env[n] for n in args]
            if vararg is not None:
                a.extend(env[vararg])
            kw = {k: env[v] for k, v in kws}
            if varkwarg is not None:
                kw.update(env[varkwarg])
            if overload is not None:
                return overload(a, kw)
            f = env[func]
            if scalar_sig is not None and _is_library(f):
                return scalars.call(f, scalar_sig, a, typingctx)
            if converted is not None:
                a = [c(v) if c is not None and scalars.is_value(v) else v
                     for c, v in zip(converted, a)]
            if sig is not None and _is_device_function(f):
                return _call_device_function(f, sig, a, kw)
            return f(*a, **kw)

        return call

    def _overload(self, fnty, sig, loc):
        """The :class:`_OverloadCall` of a call Numba typed with one of its ``@overload``
        implementations (``min`` or ``sum`` of a tuple, ``sum(range(n))``...), or None."""
        found = overload_result(fnty, sig)
        if found is None:
            return None
        disp, cres = found
        call = _OVERLOADS.get(id(cres))
        if call is None or call.cres is not cres:
            name = getattr(fnty, "typing_key", None)
            name = getattr(name, "__name__", None) or str(fnty)
            try:
                call = _OverloadCall(disp, cres)
            except TileTypingError as exc:
                # refused at the kernel's call, naming the implementation's own line
                where = f" at {exc.filename}:{exc.lineno}" if exc.lineno else ""
                inner = exc.message.split(", and a kernel it cannot run")[0]
                inner = inner.split("the interpreter has no rule for ")[-1]
                self.refuse(f"Numba's implementation of {name}() for {sig} (it uses {inner}"
                            f"{where})", loc)
            _OVERLOADS[id(cres)] = call
        return call

    def expr_getattr(self, expr, target, loc):
        obj, attr = expr.value.name, expr.attr
        module = self.typemap.get(obj)
        if isinstance(module, types.Module):
            # a module's attribute (math.exp, np.exp, nt.exp, math.pi) as it was when the
            # kernel was typed: the compiled code calls the function Numba typed and holds the
            # constant it read then (BaseContext.get_getattr), so a later assignment to the
            # module's attribute changes neither
            try:
                value = getattr(module.pymod, attr)
            except AttributeError:
                pass
            else:
                return lambda env: value
        return lambda env: getattr(env[obj], attr)

    def expr_getitem(self, expr, target, loc):
        obj, index = expr.value.name, expr.index.name
        tty = self.typemap.get(obj)
        if isinstance(tty, types.UniTuple) and isinstance(self.typemap.get(index),
                                                          types.Integer):
            # an index outside the tuple reads the item type's zero, as the compiled kernel
            # does (lowering/scalars._tuple_getitem)
            n, zero = tty.count, (scalars.null(tty.dtype) if scalars.is_scalar(tty.dtype)
                                  else None)

            def item(env):
                i = int(env[index])
                if -n <= i < n:
                    return env[obj][i]
                if zero is None:
                    raise IndexError("tuple index out of range")
                return zero
            return item
        return lambda env: env[obj][env[index]]

    expr_typed_getitem = expr_getitem

    def expr_static_getitem(self, expr, target, loc):
        obj, index = expr.value.name, expr.index
        return lambda env: env[obj][index]

    def expr_build_tuple(self, expr, target, loc):
        items = [v.name for v in expr.items]
        return lambda env: tuple(env[n] for n in items)

    def expr_build_list(self, expr, target, loc):
        items = [v.name for v in expr.items]
        return lambda env: [env[n] for n in items]

    def expr_build_set(self, expr, target, loc):
        items = [v.name for v in expr.items]
        return lambda env: {env[n] for n in items}

    def expr_build_map(self, expr, target, loc):
        items = [(k.name, v.name) for k, v in expr.items]
        return lambda env: {env[k]: env[v] for k, v in items}

    def expr_getiter(self, expr, target, loc):
        obj = expr.value.name
        return lambda env: iter(env[obj])

    def expr_iternext(self, expr, target, loc):
        obj = expr.value.name
        sig = self.calltypes.get(expr)
        pair = sig.return_type if sig is not None else None
        first = getattr(pair, "first_type", None)
        try:
            done = null_value(first) if first is not None else None
        except TypeError:
            done = None

        def iternext(env):
            try:
                return next(env[obj]), True
            except StopIteration:
                return done, False

        return iternext

    def expr_pair_first(self, expr, target, loc):
        obj = expr.value.name
        return lambda env: env[obj][0]

    def expr_pair_second(self, expr, target, loc):
        obj = expr.value.name
        return lambda env: env[obj][1]

    def expr_exhaust_iter(self, expr, target, loc):
        obj, count = expr.value.name, expr.count

        def exhaust(env):
            out = tuple(env[obj])
            if len(out) != count:
                raise ValueError(f"expected {count} values to unpack, got {len(out)}")
            return out

        return exhaust

    def expr_cast(self, expr, target, loc):
        obj = expr.value.name
        return lambda env: env[obj]

    def expr_null(self, expr, target, loc):
        value = self._null(target, loc)
        return lambda env: value

    expr_undef = expr_null

    def _null(self, target, loc):
        """Numba's zero of ``target``'s type; for a type without one, a marker no statement
        reads (``typing/undefined.py`` refused every read of such a variable)."""
        try:
            return null_value(self.typemap.get(target))
        except TypeError:
            return _UNASSIGNED

    # -- statements

    def statement(self, inst):
        """A function of the environment running statement ``inst`` (None: nothing to do)."""
        loc = inst.loc
        if isinstance(inst, ir.Assign):
            target = inst.target.name
            conv = _converter(self.typemap.get(target))
            if isinstance(inst.value, (ir.Const, ir.Global, ir.FreeVar)):
                v = inst.value.value
                v = conv(v) if conv is not None else v

                def const(env):
                    env[target] = v
                return const
            ev = self.value(inst.value, target, loc)
            if conv is None:
                def assign(env):
                    env[target] = ev(env)
            else:
                def assign(env):
                    env[target] = conv(ev(env))
            return assign
        if isinstance(inst, ir.Del):
            return None
        if isinstance(inst, ir.SetItem):
            t, i, v = inst.target.name, inst.index.name, inst.value.name

            def setitem(env):
                env[t][env[i]] = env[v]
            return setitem
        if isinstance(inst, ir.StaticSetItem):
            t, i, v = inst.target.name, inst.index, inst.value.name

            def static_setitem(env):
                env[t][i] = env[v]
            return static_setitem
        if isinstance(inst, ir.SetAttr):
            t, a, v = inst.target.name, inst.attr, inst.value.name
            return lambda env: setattr(env[t], a, env[v])
        if isinstance(inst, ir.Print):
            args = [a.name for a in inst.args]
            return lambda env: print(*[env[a] for a in args])
        self.refuse(f"the statement '{inst}'", loc)

    def terminator(self, inst):
        if isinstance(inst, ir.Jump):
            target = inst.target
            return lambda env: target
        if isinstance(inst, ir.Branch):
            cond, yes, no = inst.cond.name, inst.truebr, inst.falsebr
            truth = scalars.truth
            return lambda env: yes if truth(env[cond]) else no
        if isinstance(inst, ir.Return):
            v = inst.value.name
            return lambda env: _Return(env[v])
        if isinstance(inst, (ir.StaticRaise, ir.StaticTryRaise)):
            cls, args = inst.exc_class, inst.exc_args

            def static_raise(env):
                if cls is None:
                    raise RuntimeError("re-raise in kernel code")
                raise cls(*(args or ()))
            return static_raise
        dynamic = tuple(c for c in (getattr(ir, "DynamicRaise", None),
                                    getattr(ir, "DynamicTryRaise", None)) if c is not None)
        if dynamic and isinstance(inst, dynamic):
            cls, args = inst.exc_class, inst.exc_args

            def dynamic_raise(env):
                vals = [env[a.name] if isinstance(a, ir.Var) else a for a in (args or ())]
                raise (cls or RuntimeError)(*vals)
            return dynamic_raise
        if isinstance(inst, (ir.Raise, ir.TryRaise)):
            exc = inst.exception.name if inst.exception is not None else None

            def raise_(env):
                e = env[exc] if exc is not None else RuntimeError("re-raise in kernel code")
                raise e
            return raise_
        self.refuse(f"the statement '{inst}'", inst.loc)

    def block(self, blk):
        phis, steps = [], []
        for inst in blk.body[:-1]:
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr) \
                    and inst.value.op == "phi":
                phis.append(self.phi(inst))
                continue
            step = self.statement(inst)
            if step is not None:
                steps.append((step, inst.loc))
        term = blk.body[-1]
        return _Block(tuple(phis), tuple(steps), self.terminator(term), term.loc)

    def phi(self, inst):
        target = inst.target.name
        incoming = {}
        for value, label in zip(inst.value.incoming_values, inst.value.incoming_blocks):
            if isinstance(value, ir.Var):
                name = value.name
                incoming[label] = (lambda n: (lambda env: env[n]))(name)
            else:                                   # ir.UNDEFINED: Numba's zero
                incoming[label] = _Const(self._null(target, inst.loc))
        return target, incoming, _converter(self.typemap.get(target))


#: the value of a variable no assignment reached, of a type with no zero value (never read)
_UNASSIGNED = object()


class _Const:
    """A phi's incoming constant (callable like the others)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __call__(self, env):
        return self.value


def build(name: str, blocks: dict, typemap: dict, calltypes: dict, return_type,
          typingctx=None, label: str = "") -> Program:
    """A :class:`Program` of typed IR.

    Args:
        name: the function's name (messages).
        blocks: label -> ``ir.Block``; the lowest label is the entry. Phi nodes (the IR
            right after type inference) and their stripped form (assignments in the
            predecessors, numba-cuda's ``PreLowerStripPhis``) both run.
        typemap: variable name -> Numba type.
        calltypes: IR expression -> signature.
        return_type: the function's result type.
        typingctx: Numba's typing context (unifies the arguments of ``min``/``max``).
        label: what starts a refusal's message (a kernel's compile adds its name).

    Raises:
        TileTypingError: a statement or operation the interpreter has no rule for.
    """
    if typingctx is None:
        from numba.cuda.descriptor import cuda_target
        typingctx = cuda_target.typing_context
    b = _Builder(name, blocks, typemap, calltypes, typingctx, label)
    built = {label: b.block(blk) for label, blk in blocks.items()}
    return Program(name, built, min(blocks), return_type)


def from_state(state, name: str) -> Program:
    """The :class:`Program` of a kernel from Numba's compiler state right after the checks
    (``compiler.TypedIRPass``, on every compile: what it cannot run is refused on both
    paths), built at once: later passes rewrite that IR."""
    return build(name, state.func_ir.blocks, state.typemap, state.calltypes,
                 state.return_type, state.typingctx)


# ----------------------------------------------------------------------------- callees


def overload_result(fnty, sig):
    """``(dispatcher, compile result)`` of the ``@overload`` implementation Numba compiled for
    a call of function type ``fnty`` typed as ``sig`` (the implementation the compiled code
    calls: ``fnty.get_impl_key(sig)`` is the compile result's entry point), or None for a
    call lowered otherwise."""
    if not isinstance(fnty, types.Function) or sig is None:
        return None
    try:
        key = fnty.get_impl_key(sig)
    except Exception:  # noqa: BLE001 - no implementation key recorded: not an overload
        return None
    if not isinstance(key, int):            # a CUDA compile result's entry point is its id
        return None
    for template in getattr(fnty, "templates", ()):
        cache = getattr(template, "_impl_cache", None)
        if not isinstance(cache, dict):
            continue
        for entry in list(cache.values()):
            disp = entry[0] if isinstance(entry, tuple) and entry else None
            for cres in list(getattr(disp, "overloads", {}).values()):
                if id(cres) == key:
                    return disp, cres
    return None


class _OverloadCall:
    """A call of one of Numba's ``@overload`` implementations: its typed IR (the code the
    compiled kernel calls), run by this executor on the arguments bound as Numba binds them
    (defaults, ``*args`` as a tuple)."""

    def __init__(self, disp, cres):
        import inspect
        self.cres = cres
        self.pysig = inspect.signature(disp.py_func)
        self.argtypes = tuple(cres.signature.args)
        ann = cres.type_annotation
        name = getattr(disp.py_func, "__qualname__", str(disp))
        self.program = build(name, ann.blocks, ann.typemap, ann.calltypes,
                             cres.signature.return_type, cres.typing_context)

    def __call__(self, args, kwargs):
        import inspect
        bound = self.pysig.bind(*args, **kwargs)
        bound.apply_defaults()
        values = []
        for name, p in self.pysig.parameters.items():
            v = bound.arguments[name]
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                values.append(tuple(v))
            elif p.kind is inspect.Parameter.VAR_KEYWORD:
                raise TypeError(f"{self.program.name}: keyword arguments as **kwargs")
            else:
                values.append(v)
        values = [scalars.cast(v, t) if scalars.is_scalar(t) and v is not None else v
                  for v, t in zip(values, self.argtypes)]
        return self.program.run(values)


#: id(compile result) -> _OverloadCall
_OVERLOADS: dict = {}


def _is_library(f) -> bool:
    """``f`` is one of Python's, ``math``'s or NumPy's own functions (the scalar functions a
    safe kernel may call: ``typing/closed_world.py``)."""
    return id(f) in _LIBRARY_IDS or isinstance(f, np.ufunc)


def _is_device_function(f) -> bool:
    return is_device_function(f)


def _call_device_function(f, sig, args, kwargs):
    """A device function called by one being interpreted: its keyword and default arguments
    bound as Numba binds them (``sig.args`` holds every parameter's type, a default's as
    ``Omitted``), then its own typed IR run."""
    import inspect
    bound = inspect.signature(f.py_func).bind(*args, **kwargs)
    bound.apply_defaults()
    values = [scalars.cast(v, t) if scalars.is_scalar(t) else v
              for v, t in zip(bound.args, sig.args)]
    return device_program(f, tuple(types.unliteral(t) for t in sig.args)).run(values)


#: (frozen device function, argument types) -> Program
_DEVICE_PROGRAMS: dict = {}


def device_program(fn, argtypes: tuple) -> Program:
    """The :class:`Program` of device function ``fn`` (a numba-cuda ``@cuda.jit(device=True)``
    dispatcher) for ``argtypes``: the typed IR of the frozen copy the compiled kernel links
    (``typing/device.compiled_device_function``)."""
    from ..typing.device import compiled_device_function, fresh_copy
    fresh = fresh_copy(fn)
    key = (fresh, tuple(argtypes))
    prog = _DEVICE_PROGRAMS.get(key)
    if prog is None:
        cres = compiled_device_function(fn, tuple(argtypes))
        ann = cres.type_annotation
        name = getattr(fresh.py_func, "__qualname__", str(fn))
        prog = build(name, ann.blocks, ann.typemap, ann.calltypes, cres.signature.return_type,
                     cres.typing_context, label=f"device function '{name}': ")
        _DEVICE_PROGRAMS[key] = prog
    return prog
