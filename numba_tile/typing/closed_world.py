"""The closed world of a safe kernel: memory only through its parameters and numba_tile's ops.

A safe kernel (one not marked ``@jit(unchecked=True)``) may reach memory only through its
Tensor and Partition parameters, and only with numba_tile's ops, whose effects the
ownership pass checks. Numba itself would let a kernel reach much more: a device array
held in a module global or a closure cell (numba-cuda bakes its address into the PTX),
numba-cuda's SIMT API (``cuda.threadIdx``, ``cuda.shared.array``, ``cuda.syncthreads``,
``cuda.atomic.add``), device functions, ``@intrinsic`` code and raw pointers. This pass
runs on the typed IR, right after type inference, before the ownership pass, and refuses
all of them by *allowlist*:

* every variable's type must be one a safe kernel may hold: numba_tile's own types
  (tensor and partition parameters, tiles, branded indices, ``tiles()`` iterators),
  scalars and their literals, ``None``, omitted arguments, strings, slices, ranges,
  number classes (``nt.float32``), modules other than numba-cuda's, and tuples / lists
  of those. Anything else (an array, a pointer, a numba-cuda SIMT object, an unknown
  extension type) is refused where it first appears, naming where it came from (a
  module global, a closure variable, an attribute, a call);
* every call must go to a numba_tile op or to one of Python's and NumPy's own
  scalar functions (``range``, ``float``, ``abs``, ``math.sqrt``, NumPy ufuncs...) with no
  implementation registered by code outside Numba. Device functions, ``@intrinsic``
  functions and other extension functions are opaque: the pass cannot see what they
  read or write, even when they receive only numbers (an integer is enough to forge an
  address).

Errors: :class:`~numba_tile.errors.ClosedWorldError` for what a safe kernel cannot reach;
:class:`~numba_tile.errors.UnanalyzedCallError` for an opaque callee that receives a
tensor, a partition or a ``tiles()`` iterator (also in unchecked kernels: read-only
parameters stay read-only there). Both carry the user's line.
"""

from __future__ import annotations

import builtins
import cmath
import math
import operator
import os
import sys
import types as pytypes

import numpy as np
from numba.cuda import types
from numba.cuda.core import ir

from .._registry import op_for_key, typed_by_rule
from ..errors import ClosedWorldError, UnanalyzedCallError
from .scalar_ufuncs import check_scalar_ufunc, is_scalar_ufunc_call
from .types import (PartitionIndexType, PartitionType, StripsIterable, StripsIterator,
                    StripTilesIterable, StripTilesIterator, TensorType, TileType, TilesIterable,
                    TilesIterator)

#: the iterables and iterators of branded indices (each holds its partition)
_INDEX_ITERABLES = (TilesIterable, StripsIterable, StripTilesIterable)
_INDEX_ITERATORS = (TilesIterator, StripsIterator, StripTilesIterator)


#: the walks ``zip`` may pair: tiles, not strips (a strip reached through zip would hide which
#: partition's strips index a partition, typing/ownership.check_index_schemes)
_TILE_WALKS = (TilesIterable, StripTilesIterable, TilesIterator, StripTilesIterator)


def _lockstep(ty) -> bool:
    """Numba's ``zip`` of numba_tile's tile walks (``zip(tiles(dx, row), tiles(loss, row))``:
    two partitions' tiles of one strip in lockstep). Each index keeps its partition's brand
    (a store checks it as in a plain walk) and zip only pairs them: nothing else reaches
    them."""
    return isinstance(ty, types.ZipType) and all(
        isinstance(t, _TILE_WALKS) for t in ty.source_types)

__all__ = ["check_closed_world", "pointer_params_in", "describe_callee"]

#: the verdict on a call of a device function inside a device function being checked:
#: ``typing/device.nested_verdict``, which registers itself (it checks device functions'
#: bodies with this module, so it sits above it); numba_tile/__init__ imports it
_NESTED_VERDICT: list = []


def judges_nested_device_calls(verdict) -> None:
    """Have calls of device functions inside device functions judged by ``verdict(fnty,
    sig)`` (a verdict as :func:`_callee_verdict`'s)."""
    _NESTED_VERDICT[:] = [verdict]

#: numba_tile's own types: what the kernel's parameters and ops give
_TILE_TYPES = (TensorType, PartitionType, TileType, PartitionIndexType, *_INDEX_ITERABLES,
               *_INDEX_ITERATORS)
#: types that hold no address and reach no memory
_SCALAR_TYPES = (types.Number, types.Boolean, types.NoneType, types.Omitted,
                 types.IntegerLiteral, types.BooleanLiteral, types.StringLiteral,
                 types.UnicodeType, types.SliceType, types.SliceLiteral, types.EllipsisType,
                 types.NumberClass, types.DType, types.RangeType, types.RangeIteratorType,
                 types.EnumMember, types.ExceptionClass, types.ExceptionInstance)
#: the modules whose functions and classes a safe kernel may call (scalar functions only:
#: an array or pointer they could take is refused by the type allowlist)
_LIBRARY_NAMESPACES = (builtins, math, cmath, operator, np)
_LIBRARY_KINDS = (type(len), type, np.ufunc)


def _library_callees() -> frozenset:
    ids = set()
    for ns in _LIBRARY_NAMESPACES:
        for value in vars(ns).values():
            if isinstance(value, _LIBRARY_KINDS):
                ids.add(id(value))
    return frozenset(ids)


_LIBRARY_IDS = _library_callees()
_LIBRARY_VALUES = [v for ns in _LIBRARY_NAMESPACES for v in vars(ns).values()
                   if isinstance(v, _LIBRARY_KINDS)]   # keeps the ids above alive


def _is_simt(obj) -> bool:
    """numba-cuda's own API object (module, stub class, intrinsic)."""
    if isinstance(obj, type(math)):
        name = obj.__name__
    else:
        name = getattr(obj, "__module__", None) or \
            getattr(getattr(obj, "_defn", None), "__module__", None) or ""
    return name == "numba.cuda" or name.startswith(("numba.cuda.", "numba_cuda"))


def pointer_params_in(ty) -> list:
    """The tensor and partition parameters whose memory a value of type ``ty`` carries: the
    value itself, a ``tiles()`` iterable or iterator (which holds its partition), and the
    members of tuples, lists and optionals."""
    if isinstance(ty, (TensorType, PartitionType)):
        return [ty]
    if isinstance(ty, (*_INDEX_ITERABLES, *_INDEX_ITERATORS)):
        return [ty.ptype]
    if isinstance(ty, types.BaseTuple):
        return [t for inner in ty.types for t in pointer_params_in(inner)]
    if isinstance(ty, (types.List, types.Optional)):
        inner = getattr(ty, "dtype", None) or getattr(ty, "type", None)
        return pointer_params_in(inner) if inner is not None else []
    return []


def _holds_index(ty) -> bool:
    """A value of type ``ty`` holds a branded tile index (``PartitionIndex[z]``)."""
    if isinstance(ty, PartitionIndexType):
        return True
    if isinstance(ty, types.BaseTuple):
        return any(_holds_index(t) for t in ty.types)
    if isinstance(ty, (types.List, types.Optional)):
        inner = getattr(ty, "dtype", None) or getattr(ty, "type", None)
        return inner is not None and _holds_index(inner)
    return False


def _guarded_leaves(tys) -> list:
    """The tensors, partitions, ``tiles()`` iterators and tile indices inside ``tys``."""
    out = []
    for ty in tys:
        if isinstance(ty, (TensorType, PartitionType, *_INDEX_ITERABLES, *_INDEX_ITERATORS,
                           PartitionIndexType)):
            out.append(ty)
        elif isinstance(ty, types.BaseTuple):
            out.extend(_guarded_leaves(ty.types))
        elif isinstance(ty, (types.List, types.Optional)):
            inner = getattr(ty, "dtype", None) or getattr(ty, "type", None)
            if inner is not None:
                out.extend(_guarded_leaves([inner]))
    return out


def _guarded(ty) -> bool:
    """Values only parameters, numba_tile's ops and Numba's plumbing may make or consume:
    those holding a parameter's memory, and branded tile indices (whose brand lets a store
    reach the tile they name)."""
    return bool(pointer_params_in(ty)) or _holds_index(ty)


def describe_callee(fnty) -> str:
    if isinstance(fnty, types.BoundFunction):        # C.index: "UniTuple(int64 x 2).index"
        key = fnty.typing_key
        attr = key[1] if isinstance(key, tuple) and len(key) == 2 else None
        if isinstance(attr, str):
            return f"{fnty.this}.{attr}"
    key = getattr(fnty, "typing_key", None)
    if isinstance(fnty, types.Dispatcher):
        key = getattr(fnty.dispatcher, "py_func", key)
    return getattr(key, "__qualname__", None) or getattr(key, "__name__", None) or str(fnty)


def _allowed_type(ty) -> bool:
    if isinstance(ty, _TILE_TYPES) or isinstance(ty, _SCALAR_TYPES):
        return True
    if isinstance(ty, types.Module):
        return not _is_simt(ty.pymod)
    if isinstance(ty, (types.BaseTuple, types.Pair)):
        members = ty.types if isinstance(ty, types.BaseTuple) else (ty.first_type,
                                                                  ty.second_type)
        return all(_allowed_type(t) for t in members)
    if isinstance(ty, types.List):
        return _allowed_type(ty.dtype)
    if isinstance(ty, types.Optional):
        return _allowed_type(ty.type)
    if _lockstep(ty):
        return True
    # functions are checked where they are called
    return isinstance(ty, (types.Function, types.Dispatcher, types.BoundFunction,
                           types.ExternalFunction))


def _package_dir(module) -> str:
    return os.path.dirname(os.path.realpath(module.__file__)) + os.sep


def _trusted_dirs() -> tuple:
    import numba
    import numba.cuda
    import numba_tile
    cuda_pkg = os.path.dirname(os.path.dirname(_package_dir(numba.cuda).rstrip(os.sep)))
    return (_package_dir(numba), cuda_pkg + os.sep, _package_dir(numba_tile))


_TRUSTED_DIRS: tuple | None = None


def _untrusted_file(fn, depth=0) -> str | None:
    """The source file of ``fn``, or of a function its closure holds, outside Numba,
    numba-cuda and numba_tile (None if all are inside)."""
    global _TRUSTED_DIRS
    if _TRUSTED_DIRS is None:
        _TRUSTED_DIRS = _trusted_dirs()
    if depth > 4:
        return None
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    overload_func = getattr(fn, "_overload_func", None)      # an @overload* template
    if overload_func is not None and not isinstance(fn, pytypes.FunctionType):
        found = _untrusted_file(overload_func, depth + 1)
        if found:
            return found
    if isinstance(fn, type):
        # a template class and the classes it derives from (a method template made per
        # receiver type): the functions they hold (a type_callable's generic, an attribute
        # template's resolvers)
        for cls in fn.__mro__[:4]:
            if cls is object:
                break
            for value in vars(cls).values():
                found = _untrusted_file(value, depth + 1)
                if found:
                    return found
        return None
    py_func = getattr(fn, "py_func", None)          # a dispatcher an @overload compiled
    if py_func is not None and not isinstance(fn, pytypes.FunctionType):
        return _untrusted_file(py_func, depth + 1)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    path = os.path.realpath(code.co_filename)
    if not path.startswith(_TRUSTED_DIRS):
        return code.co_filename
    # a file name is only a claim (compile() takes any): the function's globals must be those
    # of the imported module of that file. Its globals, not its ``__module__``, which anyone
    # may set and ``functools.wraps`` copies from the function it wraps (Numba's
    # ``register_simple_overload`` of ``len``, ``hash`` and ``abs`` for jitclasses wraps a
    # function made by ``exec``, whose ``__module__`` is None)
    glb = getattr(fn, "__globals__", None)
    modname = glb.get("__name__") if isinstance(glb, dict) else getattr(fn, "__module__", None)
    module = sys.modules.get(modname if isinstance(modname, str) else "")
    mfile = getattr(module, "__file__", None)
    if mfile is None or os.path.realpath(mfile) != path or (
            isinstance(glb, dict) and vars(module) is not glb):
        return f"{code.co_filename} (claimed by a function of module {modname!r})"
    for cell in fn.__closure__ or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        found = _untrusted_file(inner, depth + 1)
        if found:
            return found
    for default in getattr(fn, "__defaults__", None) or ():
        # Numba's call of a compiled function (an @overload's implementation, a device
        # function) carries its function descriptor: judge the module it was compiled from
        modname = getattr(default, "modname", None)
        if modname is not None and hasattr(default, "qualname"):
            module = sys.modules.get(modname)
            mfile = getattr(module, "__file__", None)
            if mfile is None or not os.path.realpath(mfile).startswith(_TRUSTED_DIRS):
                return f"{mfile or modname} ({default.qualname}, compiled by Numba)"
    return None


def _user_implementation(fnty) -> str | None:
    """The source file of an implementation of a library function registered by code outside
    Numba, numba-cuda and numba_tile (an ``@overload``, ``type_callable`` or similar of
    ``math.ldexp``...), or None. Judged by where the functions that make up each typing
    template are defined (a template's own methods and the functions their closures hold)."""
    for template in getattr(fnty, "templates", ()):
        for value in vars(template).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            found = _untrusted_file(value)
            if found:
                return found
    return None


def _user_lowering(key) -> str | None:
    """The source file of a lowering registered for library function ``key`` by code outside
    Numba, numba-cuda and numba_tile, or None."""
    from numba.cuda.descriptor import cuda_target
    selector = cuda_target.target_context._defns.get(key)
    for _sig, impl in getattr(selector, "versions", ()):
        found = _untrusted_file(impl)
        if found:
            return found
    return None


def _callee_verdict(fnty, sig=None):
    """None when a safe kernel may call ``fnty`` (with signature ``sig``); else why not, and
    whether it is SIMT."""
    if isinstance(fnty, (types.NumberClass, types.ExceptionClass)):
        return None
    if isinstance(fnty, types.BoundFunction):
        if isinstance(fnty.this, _SCALAR_TYPES):
            module = _user_implementation(fnty)
            return None if module is None else (f"an implementation registered in "
                                                f"{module}", False)
        return ("a method of a value that is not a number", False)
    if isinstance(fnty, types.Dispatcher) and _NESTED_VERDICT:
        # a device function called from a device function being checked (typing/device.py);
        # a kernel's own calls of device functions are rewritten to numba_tile's op
        return _NESTED_VERDICT[0](fnty, sig)
    if isinstance(fnty, types.Function):
        key = fnty.typing_key
        if op_for_key(key) is not None:
            return None
        if _is_simt(key):
            return ("numba-cuda's SIMT API", True)
        if id(key) in _LIBRARY_IDS:
            module = _user_implementation(fnty) or _user_lowering(key)
            return None if module is None else (f"with an implementation registered in "
                                                f"{module} (an @overload or similar)", False)
        kind = type(key).__name__
        what = "an @intrinsic" if kind == "_Intrinsic" else "an extension function"
        return (what, False)
    return (f"a {type(fnty).__name__} callee", False)


class _Origins:
    """Where each variable of the function came from, for messages."""

    def __init__(self, func_ir):
        self.defs = {}
        for block in func_ir.blocks.values():
            for inst in block.body:
                if isinstance(inst, ir.Assign):
                    self.defs.setdefault(inst.target.name, inst.value)

    def chain(self, name, depth=0) -> str | None:
        """``cuda.threadIdx.x``-style text of a variable made of a global and attributes."""
        value = self.defs.get(name)
        if depth > 20 or value is None:
            return None
        if isinstance(value, (ir.Global, ir.FreeVar)):
            return value.name
        if isinstance(value, ir.Var):
            return self.chain(value.name, depth + 1)
        if isinstance(value, ir.Expr) and value.op == "getattr":
            base = self.chain(value.value.name, depth + 1)
            return f"{base}.{value.attr}" if base else None
        return None

    def describe(self, name) -> str:
        value = self.defs.get(name)
        if isinstance(value, ir.Global):
            return f"module global '{value.name}'"
        if isinstance(value, ir.FreeVar):
            return f"closure variable '{value.name}'"
        if isinstance(value, ir.Var):
            return self.describe(value.name)
        if isinstance(value, (ir.Const, ir.Arg)) and not name.startswith("$"):
            return f"Constant parameter '{name.split('.')[0]}' (a compile-time value)"
        if isinstance(value, ir.Expr):
            if value.op == "getattr":
                text = self.chain(name)
                return f"attribute '{text}'" if text else f"attribute '.{value.attr}'"
            if value.op == "call":
                callee = self.chain(value.func.name)
                return f"the result of {callee or 'a call'}()"
        user = name.split(".")[0]
        return f"variable '{user}'" if not user.startswith("$") else "a value"


def _what(ty) -> str:
    if isinstance(ty, types.Buffer):
        return f"an array ({ty})"
    if isinstance(ty, (types.CPointer, types.RawPointer, types.MemInfoPointer,
                       types.EphemeralPointer)):
        return f"a pointer ({ty})"
    return f"a value of type {ty}"


def _loc(inst):
    loc = inst.loc
    return dict(filename=loc.filename, lineno=loc.line, col=getattr(loc, "col", None))


_UNCHECKED_HINT = ("or mark the kernel @numba_tile.jit(unchecked=True) and launch it with "
                   "unchecked=True")


def _simt_error(kernel, text, inst):
    return ClosedWorldError(
        f"kernel '{kernel}' uses numba-cuda's SIMT API ({text}): thread and block indices, "
        f"shared and local arrays, barriers and atomics are outside numba_tile's checks; use "
        f"numba_tile's ops (bid(), num_blocks(), tiles(), reductions, ...), {_UNCHECKED_HINT}",
        **_loc(inst))


def _tile_typed(ty) -> bool:
    """``ty`` is one of numba_tile's own types, or a container holding one."""
    if isinstance(ty, _TILE_TYPES):
        return True
    if isinstance(ty, types.BaseTuple):
        return any(_tile_typed(t) for t in ty.types)
    if isinstance(ty, (types.List, types.Optional)):
        inner = getattr(ty, "dtype", None) or getattr(ty, "type", None)
        return inner is not None and _tile_typed(inner)
    return False


def _mentions_tile_types(sig_types) -> bool:
    for t in sig_types:
        if isinstance(t, type) and issubclass(t, _TILE_TYPES):
            return True
        if isinstance(t, types.Type) and _tile_typed(t):
            return True
    return False


def _foreign_lowering(d) -> str | None:
    """Where a lowering registered for op ``d``'s key by code other than numba_tile is
    defined, or None. A stub op has only numba_tile's own lowering; an operator op (``+`` on
    tiles) may share its key with Numba's lowerings for numbers, but no one else may lower it
    for numba_tile's types (a more specific signature would win over numba_tile's)."""
    from numba.cuda.descriptor import cuda_target
    selector = cuda_target.target_context._defns.get(d.key)
    for sig, impl in getattr(selector, "versions", ()):
        if impl is d.lower:
            continue
        if d.stub is not None or _mentions_tile_types(sig):
            where = _untrusted_file(impl) or getattr(impl, "__module__", None) or repr(impl)
            return f"{getattr(impl, '__qualname__', impl)} in {where}"
    return None


def _check_op(inst, d, sig, argtys, ret) -> None:
    """A call of op ``d`` (or an operator on tiles) must have been typed by the op's own rule
    and be lowered by the op's own lowering."""
    if d.stub is not None or _tile_typed(ret) or any(_tile_typed(t) for t in argtys):
        if sig is None or not typed_by_rule(d, sig):
            raise UnanalyzedCallError(
                f"{d.name}() was typed by a rule registered outside numba_tile (for arguments "
                f"{tuple(argtys)}), which numba_tile cannot check", **_loc(inst))
    foreign = _foreign_lowering(d)
    if foreign is not None:
        raise UnanalyzedCallError(
            f"{d.name}() has a lowering registered outside numba_tile ({foreign}), which "
            f"numba_tile cannot check; numba_tile's ops are lowered only by numba_tile",
            **_loc(inst))


def _chosen_lowering(fnty, sig):
    """The lowering Numba will call for ``fnty`` typed as ``sig`` (as
    ``BaseContext.get_function`` picks it), or None when it cannot be found here."""
    from numba.cuda.descriptor import cuda_target
    targetctx = cuda_target.target_context
    try:
        key = fnty.get_impl_key(sig) if hasattr(fnty, "get_impl_key") else fnty
    except Exception:  # noqa: BLE001 - a callee without an impl key: the type is the key
        key = fnty
    candidates = [key]
    if isinstance(fnty, types.NumberClass):
        candidates.append(type(fnty))
    args = tuple(sig.args)
    if getattr(sig, "recvr", None) is not None:      # a method: lowered with its receiver
        args = (sig.recvr,) + args
    for k in candidates:
        selector = targetctx._defns.get(k)
        if selector is None:
            continue
        try:
            return selector.find(args)
        except Exception:  # noqa: BLE001 - no version for these types under this key
            continue
    return None


def _check_chosen_lowering(inst, fnty, sig, what) -> None:
    """The lowering a call will run, and the typing template behind a method, must come from
    Numba, numba-cuda or numba_tile."""
    if isinstance(fnty, types.BoundFunction):
        found = _untrusted_file(fnty.template)
        if found:
            raise ClosedWorldError(
                f"method {what}() was typed by code registered outside Numba and numba_tile "
                f"(in {found}), which numba_tile cannot check", **_loc(inst))
    impl = _chosen_lowering(fnty, sig)
    found = _untrusted_file(impl) if impl is not None else None
    if found:
        raise ClosedWorldError(
            f"{what}() on {tuple(sig.args)} is lowered by code registered outside Numba and "
            f"numba_tile ({getattr(impl, '__qualname__', impl)} in {found}), which numba_tile "
            f"cannot check", **_loc(inst))


def _check_operator_lowering(inst, expr, sig) -> None:
    """The lowering that will implement an operator expression (``x + y`` on numbers too) for
    its argument types must be Numba's or numba_tile's: one registered by other code would run
    behind the expression."""
    from numba.cuda.descriptor import cuda_target
    key = expr.immutable_fn if expr.op == "inplace_binop" else expr.fn
    try:
        fnty = cuda_target.typing_context.resolve_value_type(key)
    except Exception:  # noqa: BLE001
        fnty = None
    impl = _chosen_lowering(fnty, sig) if fnty is not None else None
    if impl is None:
        selector = cuda_target.target_context._defns.get(key)
        try:
            impl = selector.find(tuple(sig.args)) if selector is not None else None
        except Exception:  # noqa: BLE001 - no implementation: Numba reports that when lowering
            impl = None
    if impl is None:
        return
    found = _untrusted_file(impl)
    if found:
        raise ClosedWorldError(
            f"operator {getattr(key, '__name__', key)} on {tuple(sig.args)} is lowered by code "
            f"registered outside Numba and numba_tile ({getattr(impl, '__qualname__', impl)} "
            f"in {found}), which numba_tile cannot check", **_loc(inst))


def _check_getattr_lowering(inst, expr, typemap) -> None:
    """The lowering of an attribute read (``n.real`` on a number) must be Numba's: one
    registered by other code (``lower_getattr``) would run behind the expression."""
    from numba.cuda.descriptor import cuda_target
    ty = typemap.get(expr.value.name)
    if ty is None or isinstance(ty, types.Module):
        return
    try:
        impl = cuda_target.target_context.get_getattr(ty, expr.attr)
    except Exception:  # noqa: BLE001 - none: Numba reports that while lowering
        return
    found = _untrusted_file(impl) if impl is not None else None
    if found:
        raise ClosedWorldError(
            f"attribute '.{expr.attr}' of {ty} is lowered by code registered outside Numba and "
            f"numba_tile (in {found}), which numba_tile cannot check", **_loc(inst))


def _actual_types(expr, typemap) -> list:
    """The types of the variables a call passes (positional, keyword, star), whatever the
    signature it was typed with says: Numba casts an argument to the signature's type, and
    that cast is code too."""
    out = [typemap[a.name] for a in expr.args]
    out += [typemap[v.name] for _k, v in expr.kws]
    for extra in (expr.vararg, getattr(expr, "varkwarg", None)):
        if extra is not None:
            out.append(typemap[extra.name])
    return out


def _check_call(kernel, inst, expr, typemap, calltypes, origins, unchecked):
    fnty = typemap[expr.func.name]
    sig = calltypes.get(expr)
    actual = _actual_types(expr, typemap)
    argtys = (list(sig.args) if sig is not None else []) + actual
    d = op_for_key(fnty.typing_key) if isinstance(fnty, types.Function) else None
    if d is not None:
        if sig is not None and sorted(map(str, _guarded_leaves(actual))) != sorted(
                map(str, _guarded_leaves(sig.args))):
            raise UnanalyzedCallError(
                f"{d.name}() was typed with signature {sig}, which converts the tensor, "
                f"partition or tile index it is given ({_guarded_leaves(actual)}): numba_tile "
                f"cannot check that conversion; they can only be given, as they are, to "
                f"numba_tile ops", **_loc(inst))
        _check_op(inst, d, sig, argtys, typemap.get(inst.target.name))
        if sig is not None:
            _check_chosen_lowering(inst, fnty, sig, d.name)
        return
    passed = [t for a in argtys for t in pointer_params_in(a)]
    if passed and getattr(fnty, "typing_key", None) is zip and actual and all(
            isinstance(a, _TILE_WALKS) for a in actual) and not expr.kws:
        if sig is not None:
            _check_chosen_lowering(inst, fnty, sig, "zip")
        return
    if passed:
        names = ", ".join(f"'{t.param}'" for t in dict.fromkeys(passed))
        raise UnanalyzedCallError(
            f"parameter(s) {names} passed to {describe_callee(fnty)}(), which numba_tile cannot "
            f"check; tensors and partitions can only be given to numba_tile ops", **_loc(inst))
    if is_scalar_ufunc_call(fnty, sig):      # np.exp(s): lowered, and as NumPy computes it
        check_scalar_ufunc(fnty, sig, _loc(inst))
    if unchecked:
        return
    verdict = _callee_verdict(fnty, sig)
    if verdict is None and isinstance(fnty, types.Dispatcher):
        return          # a checked device function: Numba's call of the body just checked
    if verdict is None and sig is not None:
        _check_chosen_lowering(inst, fnty, sig, origins.chain(expr.func.name)
                               or describe_callee(fnty))
        return
    if verdict is None:
        return
    why, simt = verdict
    name = origins.chain(expr.func.name) or describe_callee(fnty)
    if simt:
        raise _simt_error(kernel, name, inst)
    raise ClosedWorldError(
        f"kernel '{kernel}' calls {name}(), {why}, which numba_tile cannot check (opaque code "
        f"may read thread indices or forge addresses even from plain numbers): a safe kernel "
        f"calls only numba_tile ops and Python's and NumPy's scalar functions; {_UNCHECKED_HINT}",
        **_loc(inst))


#: expressions Numba itself evaluates on a value that holds a parameter's memory, by the
#: operand type they are safe for (tuple and list plumbing, numba_tile's own iterators)
_PLUMBING = {"build_tuple", "build_list", "phi", "cast", "pair_first", "pair_second"}
_CONTAINER_OPS = {"static_getitem", "getitem", "typed_getitem", "exhaust_iter"}


def _check_plumbing(inst, typemap):
    """A value holding a parameter's memory may only be moved around (tuples, lists, phis),
    iterated by numba_tile's own ``tiles()`` iterators, or given to an op: an operator,
    attribute or item assignment on it could only be typed by someone else's extension
    (numba_tile gives tensors none), whose code the pass cannot see."""
    if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr):
        expr = inst.value
        if expr.op == "call" or expr.op in _PLUMBING:
            return
        operands = [(v, typemap.get(v.name)) for v in expr.list_vars()]
        carriers = [(v, t) for v, t in operands if t is not None and _guarded(t)]
        made = typemap.get(inst.target.name)
        if not carriers and made is not None and _guarded(made) and expr.op not in (
                "getiter", "iternext", "exhaust_iter", *_CONTAINER_OPS):
            # an operator or attribute that *makes* a tensor, partition or tile index: only
            # an extension could type that
            raise UnanalyzedCallError(
                f"a '{expr.op}' expression makes a value of type {made}, which numba_tile "
                f"cannot check; tensors and partitions come only from the kernel's parameters "
                f"and tile indices only from tiles()", **_loc(inst))
        if not carriers:
            return
        if expr.op in _CONTAINER_OPS and isinstance(typemap.get(expr.value.name),
                                                     (types.BaseTuple, types.List)):
            return
        if expr.op in _INDEX_ITEM_OPS and isinstance(typemap.get(expr.value.name),
                                                     (PartitionIndexType, TensorType)):
            return          # idx[d], x[i]: numba_tile's op, checked by _check_index_item
        if expr.op == "getiter" and isinstance(typemap.get(expr.value.name), _INDEX_ITERABLES):
            return
        if expr.op in ("getiter", "iternext") and _lockstep(typemap.get(expr.value.name)):
            return
        if expr.op == "getattr" and expr.attr in ("shape", "ndim", "dtype") and isinstance(
                typemap.get(expr.value.name), (TensorType, PartitionType)):
            return          # x.shape, x.ndim, x.dtype: metadata (typing/memory.py), no access
        if expr.op == "iternext" and isinstance(typemap.get(expr.value.name), _INDEX_ITERATORS):
            return
        what = f"'{expr.op}' expression" if expr.op not in ("binop", "inplace_binop", "unary") \
            else f"operator {getattr(expr.fn, '__name__', expr.fn)}"
    elif isinstance(inst, (ir.SetItem, ir.StaticSetItem, ir.SetAttr, ir.DelItem, ir.DelAttr)):
        carriers = [(inst.target, typemap.get(inst.target.name))]
        if not pointer_params_in(carriers[0][1]):
            return
        what = f"{type(inst).__name__} statement"
    else:
        return
    names = ", ".join(f"'{p.param}'" for _v, t in carriers for p in pointer_params_in(t))
    if not names:                 # a branded index
        names = ", ".join(f"'{v.name.split('.')[0]}' ({t})" for v, t in carriers)
        raise UnanalyzedCallError(
            f"tile index {names} used in a {what}, which numba_tile cannot check; an index "
            f"from tiles() can only be given to numba_tile ops", **_loc(inst))
    raise UnanalyzedCallError(
        f"parameter(s) {names} used in a {what}, which numba_tile cannot check; tensors and "
        f"partitions can only be given to numba_tile ops", **_loc(inst))


#: expressions that read an item of a value: on a branded index ``idx[d]``, on a tensor
#: parameter ``x[i]`` (numba_tile's op ``index_getitem``, keyed by ``operator.getitem``)
_INDEX_ITEM_OPS = ("static_getitem", "getitem")


def _check_index_item(inst, expr, typemap, calltypes) -> None:
    """``idx[d]`` on a branded index must be numba_tile's ``index_getitem``: typed by its own
    rule (Numba types ``static_getitem`` through ``operator.getitem``'s templates only when no
    ``"static_getitem"`` template claims the type, so a claim by other code leaves no
    signature here) and lowered by its own lowering, with no ``"static_getitem"`` lowering
    for the type (Numba would try that one first)."""
    from numba.cuda.descriptor import cuda_target
    from .._registry import OPS
    d = OPS["index_getitem"]
    sig = calltypes.get(expr)
    argtys = list(sig.args) if sig is not None else [typemap.get(expr.value.name)]
    _check_op(inst, d, sig, argtys, typemap.get(inst.target.name))
    chosen = _chosen_lowering(cuda_target.typing_context.resolve_value_type(operator.getitem),
                              sig)
    if chosen is None:               # no single lowering: another one matches as well
        raise UnanalyzedCallError(
            f"index_getitem() on {argtys[0]} has no single lowering: a lowering of "
            f"operator.getitem registered outside numba_tile matches it as well as numba_tile's, "
            f"which numba_tile cannot check", **_loc(inst))
    if chosen is not d.lower:        # a more specific lowering of operator.getitem
        where = _untrusted_file(chosen) or getattr(chosen, "__module__", None) or repr(chosen)
        raise UnanalyzedCallError(
            f"index_getitem() on {argtys[0]} would be lowered by "
            f"{getattr(chosen, '__qualname__', chosen)} (in {where}), not by numba_tile, which "
            f"cannot check it", **_loc(inst))
    if expr.op != "static_getitem":
        return
    selector = cuda_target.target_context._defns.get("static_getitem")
    try:
        index_ty = types.literal(expr.index)
    except Exception:  # noqa: BLE001 - as Numba's lowering: an index with no literal type
        index_ty = types.Omitted(expr.index)
    try:
        impl = selector.find((argtys[0], index_ty)) if selector is not None else None
    except Exception:  # noqa: BLE001 - none for these types: Numba falls back on getitem
        impl = None
    if impl is not None:
        where = _untrusted_file(impl) or getattr(impl, "__module__", None) or repr(impl)
        raise UnanalyzedCallError(
            f"index_getitem() on {argtys[0]} has a 'static_getitem' lowering registered "
            f"outside numba_tile ({getattr(impl, '__qualname__', impl)} in {where}), which "
            f"numba_tile cannot check; numba_tile's ops are lowered only by numba_tile",
            **_loc(inst))


def _first_use(func_ir, name):
    """The first statement (in block order) that reads variable ``name``."""
    for label in sorted(func_ir.blocks):
        for inst in func_ir.blocks[label].body:
            if any(v.name == name for v in inst.list_vars()) and not (
                    isinstance(inst, ir.Assign) and inst.target.name == name):
                return inst
    return None


def check_closed_world(func_ir, typemap, calltypes, kernel: str, unchecked: bool) -> None:
    """Refuse what a safe kernel cannot reach (see the module docstring).

    Args:
        func_ir: the typed function's IR.
        typemap: variable name -> Numba type.
        calltypes: call expression -> signature.
        kernel: the kernel's qualified name, for messages.
        unchecked: the kernel is marked unchecked: only opaque calls receiving tensors or
            partitions are refused.

    Raises:
        ClosedWorldError: an array, pointer or SIMT object the kernel reaches, or a call to
            opaque code, at the first statement (in block order) that does it.
        UnanalyzedCallError: a tensor, partition or ``tiles()`` iterator handed to anything
            but a numba_tile op (a call, an operator, an item or attribute assignment).
    """
    origins = _Origins(func_ir)
    for label in sorted(func_ir.blocks):
        for inst in func_ir.blocks[label].body:
            _check_plumbing(inst, typemap)
            if not isinstance(inst, ir.Assign):
                continue
            value = inst.value
            if isinstance(value, ir.Expr) and value.op == "call":
                _check_call(kernel, inst, value, typemap, calltypes, origins, unchecked)
            elif isinstance(value, ir.Expr) and value.op in ("binop", "inplace_binop", "unary"):
                d = op_for_key(value.fn)
                sig = calltypes.get(value)
                if d is not None and sig is not None:
                    _check_op(inst, d, sig, list(sig.args), typemap.get(inst.target.name))
                if sig is not None:
                    _check_operator_lowering(inst, value, sig)
            elif isinstance(value, ir.Expr) and value.op == "getattr":
                _check_getattr_lowering(inst, value, typemap)
            elif (isinstance(value, ir.Expr) and value.op in _INDEX_ITEM_OPS
                    and isinstance(typemap.get(value.value.name),
                                   (PartitionIndexType, TensorType))):
                _check_index_item(inst, value, typemap, calltypes)
            if unchecked:
                continue
            ty = typemap.get(inst.target.name)
            if (isinstance(value, (ir.Global, ir.FreeVar, ir.Const)) and ty is not None
                    and _guarded(ty)):
                # numba_tile's parameter types come from the kernel's arguments only: one typed
                # for a global, a closure variable or a constant (an extension's typeof for a
                # user class) would carry an address no launch check has seen
                raise ClosedWorldError(
                    f"kernel '{kernel}' reaches a value typed as {ty} through "
                    f"{origins.describe(inst.target.name)}: tensors and partitions come only "
                    f"from the kernel's parameters, checked at every launch, and tile indices "
                    f"only from tiles()", **_loc(inst))
            if ty is None or _allowed_type(ty):
                continue
            name = inst.target.name
            if isinstance(ty, types.Module) or _is_simt(type(ty)):
                text = origins.chain(name) or str(ty)
                # name the attribute the kernel reads from it, if any
                for use in origins.defs.values():
                    if isinstance(use, ir.Expr) and use.op == "getattr" \
                            and use.value.name == name:
                        text = f"{text}.{use.attr}"
                        break
                raise _simt_error(kernel, text, inst)
            if isinstance(value, (ir.Const, ir.Arg)):
                inst = _first_use(func_ir, name) or inst     # a parameter: where it is used
            raise ClosedWorldError(
                f"kernel '{kernel}' reaches {_what(ty)} through {origins.describe(name)}: a "
                f"safe kernel reaches memory only through its parameters (tensors and "
                f"partitions) and numba_tile's ops; pass the array as a parameter (a partition "
                f"to write it), {_UNCHECKED_HINT}", **_loc(inst))
