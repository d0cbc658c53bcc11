"""Kernel signatures: the parameter annotations and how a kernel's parameters are read.

A parameter's *role* comes from its annotation:

* none, ``numba_tile.Tensor`` or anything else: a read-only array (or a runtime scalar
  when given a Python number);
* ``numba_tile.Partition`` / ``Partition["B"]`` / ``Partition[("BM", "BN")]`` /
  ``Partition[(64, 64)]``: a mutable array that receives a host-side partition;
* ``numba_tile.Constant``: a compile-time constant;
* ``numba_tile.Mutable``: a whole array an unchecked kernel may write anywhere.

Annotations may be strings (quoted, or every annotation under ``from __future__ import
annotations``). They are evaluated in the kernel's globals, its closure and the locals of
the scope that applied the decorator; one that still does not evaluate (a module alias
imported inside a function that has returned) is read from its syntax: an attribute or
name ending in one of the four annotation names, with a literal subscript. A string that
names one of them but cannot be read either way is an error, never a silent read-only
parameter.
"""

from __future__ import annotations

import ast
import functools
import inspect
import types
from dataclasses import dataclass

from .errors import TileArgumentError, shown, type_name
from .runtime.partition import Partition, PartitionAnnotation

__all__ = ["Tensor", "Mutable", "Constant", "Param", "parse_params", "check_kernel_function"]


class Tensor:
    """Annotation of a read-only array parameter (the default for unannotated ones).

    ``x`` and ``x: numba_tile.Tensor`` mean the same: the kernel may read the array (``load``,
    ``load_like``, ``load_at``, ``gather``, ``x[i]``) but not write it; a store to it is a
    :class:`~numba_tile.errors.StoreToReadOnlyError` at compile time. At launch it takes a
    device array (CuPy, Numba, PyTorch, any ``__cuda_array_interface__`` or DLPack producer;
    NumPy arrays in the interpreter), never a partition. An unannotated parameter given a
    Python number is a runtime scalar instead.

    Examples:
        >>> import numba_tile as nt
        >>> @nt.jit
        ... def scale(x: nt.Tensor, alpha, z: nt.Partition["B"], B: nt.Constant):
        ...     nt.store(z, alpha * nt.load_like(x, z))
    """


class Mutable:
    """Annotation of a whole array an *unchecked* kernel may write anywhere (atomics, scatter,
    stores at any index): it takes a plain array, not a partition. The launch still checks
    that it overlaps no other argument and not itself, and that it is writable."""


class Constant:
    """Annotation of a compile-time constant parameter (``BLOCK: numba_tile.Constant``).

    A constant's value is part of the kernel's specialization: each distinct value compiles
    its own code (``-0.0`` apart from ``0.0``, ``(2.0,)`` apart from ``(2,)``). Tile shapes,
    ``Partition[...]`` declarations, static axes and dtypes come from constants. Constants may
    be given by position or by keyword (``k(x, part, BLOCK=1024)``). ``Constant[int]`` is
    accepted as a synonym.

    Examples:
        >>> import numba_tile as nt
        >>> @nt.jit
        ... def fill(z: nt.Partition[("BM", "BN")], value, BM: nt.Constant, BN: nt.Constant):
        ...     nt.store(z, nt.full((BM, BN), value))
    """

    def __class_getitem__(cls, item):
        return cls


@dataclass(frozen=True)
class Param:
    """One kernel parameter.

    Attributes:
        name: the parameter's name.
        role: ``'array'`` (tensor or scalar), ``'partition'``, ``'mutable'`` or ``'constant'``.
        declared: a partition's declared tile shape (ints or Constant names), or None.
        default: the default value, or ``inspect.Parameter.empty``.
    """

    name: str
    role: str
    declared: tuple | None
    default: object


_NAMES = {"Partition": Partition, "Constant": Constant, "Tensor": Tensor, "Mutable": Mutable}


def _namespace(fn, caller_locals) -> dict:
    """Names an annotation string may use besides the kernel's globals: the decorating scope's
    locals and the kernel's closure cells."""
    ns = dict(caller_locals or {})
    code = getattr(fn, "__code__", None)
    for name, cell in zip(getattr(code, "co_freevars", ()), getattr(fn, "__closure__", None) or ()):
        try:
            ns[name] = cell.cell_contents
        except ValueError:           # an empty cell
            pass
    return ns


def _from_syntax(text: str):
    """An annotation read from its syntax: ``[mod.]Name`` or ``[mod.]Name[literal]`` with Name
    one of the annotation names; None when the text is not of that form."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    sub = None
    if isinstance(node, ast.Subscript):
        node, sub = node.value, node.slice
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Name):
        name = node.id
    else:
        return None
    cls = _NAMES.get(name)
    if cls is None:
        return None
    if sub is None:
        return cls
    try:
        item = ast.literal_eval(sub)
    except ValueError:
        return None
    try:
        return cls[item] if cls is not Tensor and cls is not Mutable else None
    except TileArgumentError:
        raise                        # Partition[3]: the subscript itself is wrong; say why
    except TypeError:
        return None


def _mentions_role(text: str) -> bool:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return any(n in text for n in _NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _NAMES:
            return True
    return False


def _at_definition(fn, message: str) -> TileArgumentError:
    """A TileArgumentError naming kernel ``fn`` and pointing at its definition (the ``def`` line,
    or the first decorator's)."""
    code = getattr(fn, "__code__", None)
    return TileArgumentError(f"kernel '{fn.__qualname__}': {message}",
                             filename=getattr(code, "co_filename", None),
                             lineno=getattr(code, "co_firstlineno", None))


def _resolve(fn, pname: str, ann, ns: dict, depth: int = 0):
    if not isinstance(ann, str) or depth > 1:
        return ann
    try:
        value = eval(ann, getattr(fn, "__globals__", {}), ns)   # noqa: S307 - as inspect does
    except TileArgumentError as exc:     # Partition[3] and the like: the annotation is wrong
        raise _at_definition(fn, f"parameter '{pname}': {exc.message}") from None
    except Exception as exc:  # noqa: BLE001 - any failure falls back to the syntax
        try:
            found = _from_syntax(ann)
        except TileArgumentError as inner:
            raise _at_definition(fn, f"parameter '{pname}': {inner.message}") from None
        if found is not None:
            return found
        if _mentions_role(ann):
            code = getattr(fn, "__code__", None)
            raise TileArgumentError(
                f"kernel '{fn.__qualname__}': cannot read the annotation {ann!r} of parameter "
                f"'{pname}' (evaluating it failed: {type(exc).__name__}: {exc}); write it as "
                f"numba_tile.Partition[...] / Constant / Tensor / Mutable with a literal "
                f"subscript, or with names the kernel's module defines",
                filename=getattr(code, "co_filename", None),
                lineno=getattr(code, "co_firstlineno", None)) from None
        return inspect.Parameter.empty
    # a quoted annotation under ``from __future__ import annotations`` is a string twice
    return _resolve(fn, pname, value, ns, depth + 1) if isinstance(value, str) else value






def _not_a_function(fn) -> str:
    """What ``fn`` is and what to do instead, for the refusal of a non-function kernel."""
    if isinstance(fn, functools.partial):
        return (f"a functools.partial of {shown(fn.func)}: decorate the function itself and pass "
                f"the bound values as arguments at each launch (a Constant parameter for a "
                f"compile-time value)")
    if inspect.ismethod(fn):
        return (f"the bound method {shown(fn)}: define the kernel as a plain function and pass "
                f"what it needs from the object as arguments")
    if isinstance(fn, type):
        return f"the class {fn.__qualname__}: a kernel is a function, not a class"
    if isinstance(fn, (types.BuiltinFunctionType, types.BuiltinMethodType,
                       types.MethodWrapperType, types.WrapperDescriptorType)):
        return f"the built-in {shown(fn)}, which has no Python code to compile"
    if isinstance(fn, (staticmethod, classmethod)):
        return (f"a {type(fn).__name__} object: apply numba_tile.jit to the function itself "
                f"(a kernel is not a method)")
    if callable(fn):
        return (f"a callable {type_name(fn)} object: a kernel is a function (a def or a "
                f"lambda), and only its code is compiled")
    return f"{shown(fn)} ({type_name(fn)}), which is not callable"


def check_kernel_function(fn) -> None:
    """Refuses what cannot be a kernel, before anything else reads ``fn``.

    Args:
        fn: what ``numba_tile.jit`` was given.

    Raises:
        TileArgumentError: ``fn`` is not a Python function (a ``def`` or a lambda): a
            ``functools.partial``, a class, a built-in, a bound method, a callable object, a
            number...; pointing at the line that called ``numba_tile.jit``. Or ``fn`` is a
            generator or ``async`` function, pointing at its definition.
    """
    if not isinstance(fn, types.FunctionType):
        from .runtime.call_site import user_call_site
        site = user_call_site() or (None, None)
        raise TileArgumentError(
            f"numba_tile.jit: expected a Python function (a def or a lambda) to compile as a "
            f"kernel, got {_not_a_function(fn)}", filename=site[0], lineno=site[1])
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise _at_definition(fn, "is a generator function (it contains yield): a kernel returns "
                                 "nothing; it runs once per block and writes its results with "
                                 "numba_tile.store into its Partition parameters")
    if inspect.iscoroutinefunction(fn):
        raise _at_definition(fn, "is an async function: a kernel is a plain def that runs once "
                                 "per block on the GPU; launches are already asynchronous")


_KINDS = {inspect.Parameter.VAR_POSITIONAL: ("*", "variadic (*args)"),
          inspect.Parameter.VAR_KEYWORD: ("**", "variadic (**kwargs)"),
          inspect.Parameter.KEYWORD_ONLY: ("", "keyword-only (it follows * or *args)")}


def parse_params(fn, caller_locals=None) -> list:
    """The parameters of kernel function ``fn``, with their roles.

    Args:
        fn: the kernel's Python function.
        caller_locals: locals of the scope that applied the decorator (string annotations
            may name them), or None.

    Returns:
        list[Param]: one per parameter, in order.

    Raises:
        TileArgumentError: ``fn`` is not a Python function or is a generator
            (:func:`check_kernel_function`), a parameter is not a plain positional parameter, or
            an annotation is a malformed ``Partition[...]`` or names a numba_tile annotation but
            cannot be read (pointing at the kernel's definition).
    """
    check_kernel_function(fn)
    sig = inspect.signature(fn)
    ns = None
    out = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            stars, what = _KINDS[p.kind]
            raise _at_definition(
                fn, f"parameter '{stars}{p.name}' is {what}: a kernel takes plain positional "
                    f"parameters, one per launch argument; name each one")
        ann = p.annotation
        if isinstance(ann, str):
            if ns is None:
                ns = _namespace(fn, caller_locals)
            ann = _resolve(fn, p.name, ann, ns)
        default = p.default
        if ann is Partition:
            out.append(Param(p.name, "partition", None, default))
        elif isinstance(ann, PartitionAnnotation):
            out.append(Param(p.name, "partition", ann.tile_shape, default))
        elif ann is Constant:
            out.append(Param(p.name, "constant", None, default))
        elif ann is Mutable:
            out.append(Param(p.name, "mutable", None, default))
        else:
            out.append(Param(p.name, "array", None, default))
    return out
