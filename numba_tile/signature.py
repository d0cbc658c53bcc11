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
import inspect
from dataclasses import dataclass

from .errors import TileArgumentError
from .runtime.partition import Partition, PartitionAnnotation

__all__ = ["Tensor", "Mutable", "Constant", "Param", "parse_params"]


class Tensor:
    """Annotation of a read-only array parameter (the default for unannotated ones)."""


class Mutable:
    """Annotation of a whole array an *unchecked* kernel may write anywhere (atomics, scatter,
    stores at any index): it takes a plain array, not a partition. The launch still checks
    that it overlaps no other argument and not itself, and that it is writable."""


class Constant:
    """Annotation of a compile-time constant parameter (``BLOCK: numba_tile.Constant``).

    ``Constant[int]`` is accepted as a synonym.
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


def _resolve(fn, pname: str, ann, ns: dict, depth: int = 0):
    if not isinstance(ann, str) or depth > 1:
        return ann
    try:
        value = eval(ann, getattr(fn, "__globals__", {}), ns)   # noqa: S307 - as inspect does
    except Exception as exc:  # noqa: BLE001 - any failure falls back to the syntax
        found = _from_syntax(ann)
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


def parse_params(fn, caller_locals=None) -> list:
    """The parameters of kernel function ``fn``, with their roles.

    Args:
        fn: the kernel's Python function.
        caller_locals: locals of the scope that applied the decorator (string annotations
            may name them), or None.

    Returns:
        list[Param]: one per parameter, in order.

    Raises:
        TileArgumentError: a parameter is not a plain positional parameter, or a string
            annotation names a numba_tile annotation but cannot be read.
    """
    sig = inspect.signature(fn)
    ns = None
    out = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TileArgumentError(f"kernel '{fn.__qualname__}': parameter '{p.name}' must be a "
                                    f"plain positional parameter (no *args/**kwargs/keyword-only)")
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
