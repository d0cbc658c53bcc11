"""The op registry: one definition per op, with its typing, lowering and interpreter rules.

Each public op is declared once (its stub in :mod:`numba_tile.language`, with its
docstring and Python signature) together with its *effects*: which arguments it
reads and which it writes. Its three rules live in files of the same family name in
``typing/``, ``lowering/`` and ``interpreter/``. :func:`finalize` checks at import
that every op has all three rules, then registers the typing and lowering rules with
numba-cuda's extension registries. The ownership pass (``typing/ownership.py``)
reads only the effects, so a new op cannot bypass it.

Operators (``+``, ``<`` ...) are ops keyed by the ``operator`` function; their
interpreter rule is called by the interpreter's tile class.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Callable

from numba.cuda import types
from numba.cuda.core.errors import TypingError as NumbaTypingError
from numba.cuda.typing.templates import AbstractTemplate, signature, fold_arguments

from .errors import TileError, TileTypingError


@dataclass(frozen=True)
class Effects:
    """What an op does to its operands, by positional index after binding.

    Attributes:
        reads: indices of array operands (tensors or partitions) the op reads.
        writes: indices of array operands the op writes; each must be a partition.
        store_index: index of an argument that selects *which* tile a write goes to;
            anything but the default (the block's own tile) is refused until branded
            indices exist.
    """

    reads: tuple = ()
    writes: tuple = ()
    store_index: int | None = None


@dataclass
class OpDef:
    name: str
    family: str
    key: Callable                  # what Numba resolves: the stub or an operator function
    pysig: inspect.Signature
    effects: Effects
    stub: Callable | None = None
    typer: Callable | None = None
    lower: Callable | None = None
    interp: Callable | None = None
    lower_types: tuple | None = None   # explicit lowering signature (operators)
    unchecked: bool = False            # usable only in kernels marked unchecked
    extra: dict = field(default_factory=dict)


OPS: dict[str, OpDef] = {}
_BY_KEY: dict[int, OpDef] = {}
_finalized = False


def op_for_key(key) -> OpDef | None:
    """The op whose Numba key is ``key`` (a stub or an ``operator`` function)."""
    return _BY_KEY.get(id(key))


def op(family: str, *, reads=(), writes=(), store_index=None, name=None, unchecked=False):
    """Declare a public op from its stub. The stub runs the interpreter rule when
    called from Python (interpreter mode). ``unchecked`` ops (atomics, scatter, gather)
    compile only in kernels marked unchecked."""

    def deco(fn):
        opname = name or fn.__name__
        pysig = inspect.signature(fn)
        d = OpDef(opname, family, key=None, pysig=pysig,
                  effects=Effects(tuple(reads), tuple(writes), store_index), unchecked=unchecked)

        def stub(*args, **kwargs):
            if d.interp is None:
                raise RuntimeError(f"{opname}() has no interpreter rule")
            bound = pysig.bind(*args, **kwargs)
            bound.apply_defaults()
            return d.interp(*bound.args)

        stub.__name__ = fn.__name__
        stub.__qualname__ = fn.__qualname__
        stub.__doc__ = fn.__doc__
        stub.__module__ = fn.__module__
        stub.__signature__ = pysig
        stub.__wrapped__ = fn
        d.key = stub
        d.stub = stub
        _add(d)
        return stub

    return deco


def operator_op(name: str, family: str, key, nargs: int):
    """Declare an op reached through a Python operator or builtin (``operator.add``)."""
    params = [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(nargs)]
    d = OpDef(name, family, key=key, pysig=inspect.Signature(params), effects=Effects())
    _add(d)
    return d


def _add(d: OpDef):
    if d.name in OPS:
        raise RuntimeError(f"op {d.name!r} declared twice")
    OPS[d.name] = d
    _BY_KEY[id(d.key)] = d


def _rule_setter(attr):
    def register(name: str):
        def deco(fn):
            d = OPS.get(name)
            if d is None:
                raise RuntimeError(f"{attr} rule for unknown op {name!r}")
            if getattr(d, attr) is not None:
                raise RuntimeError(f"op {name!r} has two {attr} rules")
            setattr(d, attr, fn)
            return fn
        return deco
    return register


typing_rule = _rule_setter("typer")
lowering_rule = _rule_setter("lower")
interp_rule = _rule_setter("interp")


def _typing_loc():
    """Source location of the call Numba is typing right now.

    Numba hands a template the argument types only; the location lives on the call
    constraint being resolved, a few frames up (``CallConstraint.loc``). Returns None if
    no such frame is found (then errors carry no line rather than a wrong one).
    """
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if owner is not None and type(owner).__name__.endswith("CallConstraint"):
            return getattr(owner, "loc", None)
        frame = frame.f_back
    return None


#: ops that only add or drop axes of extent 1 (their lowering takes a tile in any layout)
UNIT_AXES_OPS = ("expand_dims", "reshape", "_getitem_static")


def _argument_type(d: OpDef, ty, ret=None):
    """The type an op's lowering receives for an argument of type ``ty``: elementwise ops
    and the matrix products take tiles in any layout, ``store`` also a ``wgmma`` accumulator's,
    a reduction whose result ``ret`` lies in the rows of the argument's layout that argument's
    (``lowering/reduction._mma_row_tree``), a unit-axes reshape a vector of an accumulator's
    rows or columns as it is; the others get them in the blocked layout (Numba
    inserts the conversion, ``lowering/elementwise.py``'s cast)."""
    from .typing.types import TileType   # late: avoids an import cycle
    if not isinstance(ty, TileType) or d.family in ("elementwise", "mma"):
        return ty
    from .layout import BlockedLayout, MmaLayout, VectorLayout
    from .typing.common import make_tile
    if isinstance(ty.layout, BlockedLayout):
        return ty
    if d.name == "store" and isinstance(ty.layout, MmaLayout) and ty.layout.wgmma:
        return ty        # stored from its fragments (lowering/memory._emit_store_mma)
    if (isinstance(ret, TileType) and isinstance(ret.layout, VectorLayout)
            and ret.layout.parent == ty.layout):
        return ty        # a row reduction that stays in the rows of an mma accumulator
    if isinstance(ty.layout, VectorLayout) and d.name in UNIT_AXES_OPS:
        return ty        # axes of extent 1 added or dropped: lowering/shape._same_linear
    return make_tile(ty.dtype, ty.shape, masked=ty.masked, align=ty.align)


def record_typed(d: OpDef, sig) -> None:
    """Remember, for the compilation in progress, that ``d``'s own typing rule gave ``sig``: the
    closed-world pass then accepts a call of an op only with a signature its rule made, so a
    typing template someone else registers for an op's key (or for an operator on tiles)
    cannot type a call behind the op's effects."""
    from .compiler_context import _CURRENT
    ctx = _CURRENT.get()
    if ctx is not None:
        ctx.__dict__.setdefault("op_signatures", set()).add(
            (d.name, tuple(sig.args), sig.return_type))


def typed_by_rule(d: OpDef, sig) -> bool:
    """Whether ``d``'s own typing rule gave ``sig`` in the compilation in progress."""
    from .compiler_context import _CURRENT
    ctx = _CURRENT.get()
    seen = getattr(ctx, "op_signatures", None) or ()
    return (d.name, tuple(sig.args), sig.return_type) in seen


def call_mismatch(name: str, pysig: inspect.Signature, nargs: int, kws) -> str:
    """Why a call of op ``name`` with ``nargs`` positional arguments and keywords ``kws`` does
    not bind to its signature: the required arguments missing, an unknown keyword, an argument
    given twice, or too many positional ones."""
    kws = dict(kws)
    params = list(pysig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if nargs > len(positional) and not any(p.kind is p.VAR_POSITIONAL for p in params):
        n = len(positional)
        return (f"{name}() takes at most {n} positional argument{'s' if n != 1 else ''} "
                f"({', '.join(p.name for p in positional)}), got {nargs}")
    names = {p.name: i for i, p in enumerate(params)}
    for k in kws:
        if k not in names or params[names[k]].kind in (params[names[k]].POSITIONAL_ONLY,
                                                       params[names[k]].VAR_POSITIONAL,
                                                       params[names[k]].VAR_KEYWORD):
            return f"{name}() has no argument '{k}'"
        if names[k] < nargs and params[names[k]].kind is not params[names[k]].KEYWORD_ONLY:
            return f"{name}() got argument '{k}' twice (by position and by keyword)"
    missing = [p.name for i, p in enumerate(params)
               if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and p.name not in kws
               and not (i < nargs and p.kind is not p.KEYWORD_ONLY)]
    if missing:
        s = "s" if len(missing) > 1 else ""
        return (f"{name}() missing required argument{s} "
                f"{', '.join(repr(m) for m in missing)}: it takes "
                f"({', '.join(str(p) for p in params)})")
    return f"{name}(): the arguments do not match its signature ({pysig})"


def _make_template(d: OpDef):
    from . import compiler_context  # late: avoids an import cycle

    class OpTemplate(AbstractTemplate):
        key = d.key
        prefer_literal = True   # static shapes and axes arrive as literals

        def generic(self, args, kws):
            if d.stub is not None:
                try:
                    folded = fold_arguments(
                        d.pysig, args, kws,
                        lambda index, param, value: value,
                        lambda index, param, default: types.Omitted(default),
                        lambda index, param, values: types.StarArgTuple(values))
                except (TypeError, NumbaTypingError):     # numba-cuda's: "Cannot bind"
                    folded = None
            else:
                if kws:
                    return None
                folded = tuple(args)
            loc = _typing_loc()
            try:
                if folded is None:
                    # a numba_tile op whose call does not bind (a required argument left
                    # out, one too many): say so, rather than "no implementation" and a hint
                    # that tiles need numba_tile's ops
                    raise TileTypingError(call_mismatch(d.name, d.pysig, len(args), kws))
                ret = d.typer(*folded)
            except TileError as exc:
                # Numba does not carry this error's class or line through its own error
                # handling: keep it, with the call's line, for compiler._translate.
                if loc is not None and exc.lineno is None:
                    exc = type(exc)(exc.message, filename=loc.filename, lineno=loc.line)
                compiler_context.record_error(exc, loc)
                raise NumbaTypingError(exc.message) from exc
            if ret is None:
                return None
            # typed (maybe on Numba's second, non-literal attempt): earlier errors at this
            # call are void
            compiler_context.clear_errors(loc)
            sig = signature(ret, *(_argument_type(d, a, ret) for a in folded))
            if d.stub is not None:
                sig = sig.replace(pysig=d.pysig)
            record_typed(d, sig)
            return sig

    OpTemplate.__name__ = f"Template_{d.name}"
    return OpTemplate


def finalize():
    """Check every op has typing, lowering and interpreter rules; register with Numba."""
    global _finalized
    if _finalized:
        return
    missing = [f"{d.name}: {', '.join(a for a in ('typer', 'lower', 'interp') if getattr(d, a) is None)}"
               for d in OPS.values()
               if d.typer is None or d.lower is None or d.interp is None]
    if missing:
        raise RuntimeError("numba_tile ops missing rules:\n  " + "\n  ".join(missing))

    from numba.cuda.cudadecl import registry as typing_registry
    from numba.cuda.cudaimpl import registry as lowering_registry

    for d in OPS.values():
        typing_registry.register_global(d.key, types.Function(_make_template(d)))
        if d.lower_types is not None:
            for tys in d.lower_types:
                lowering_registry.lower(d.key, *tys)(d.lower)
        else:
            lowering_registry.lower(d.key, types.VarArg(types.Any))(d.lower)
    _finalized = True
