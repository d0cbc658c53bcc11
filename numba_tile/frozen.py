"""Snapshots of kernel functions: what is typed, compiled, interpreted and keyed on disk.

Numba freezes what a kernel reads from outside its body (globals, closure cells, attributes
of modules) into the code it compiles, at the moment it compiles. A Python function keeps
reading the live values. So that what runs is what was checked, numba_tile takes one
:class:`Snapshot` of a kernel's function per specialization, when the specialization is first
checked or compiled, and uses it for everything:

* ``Snapshot.fn`` is a new function object over the same code, whose globals are a shallow
  copy of the original's with every value the code reads replaced by a frozen copy (deep
  copies of lists, dicts, sets and NumPy arrays; a user module read through attributes is
  replaced by a :class:`types.ModuleType` holding frozen copies of the attributes read),
  and whose closure cells are new cells holding frozen copies. Library modules
  (:data:`LIBRARY_PACKAGES` and the standard library) stay the live modules, and functions,
  intrinsics and device functions stay the live objects (Numba's registries know them by
  identity). The ownership pass types this function, the compiler lowers it, and the
  interpreter runs it.
* ``Snapshot.digest`` is a SHA-256 over everything the code depends on: the bytecode and
  constants of the function and of its nested code objects; the globals and closure cells
  it reads, by value; for a module, the attributes read from it (the bytecode's
  ``LOAD_GLOBAL``/``LOAD_DEREF`` + ``LOAD_ATTR`` chains); and, recursively and with cycle
  protection, the code, globals, closures and defaults of every user function it reaches
  (``@intrinsic`` definitions, numba-cuda device functions, registered overloads).
  Library code is named, not walked: its version is part of the disk key
  (:mod:`numba_tile.cache`).
* Where the digest cannot cover an input, ``digest`` is None and ``uncovered`` says why: an
  object of a type the digest does not know (its value could change what Numba generates
  without changing anything the digest sees), anything holding a device pointer (an object
  with ``__cuda_array_interface__`` or ``__dlpack__``: Numba bakes the address into the
  PTX), a function without a source file, a user module used other than through attribute
  reads. Such a kernel still compiles, but gets no disk entry.

The digest is computed from the snapshot itself, so the snapshot that is checked, the one
that is compiled or interpreted, and the key of its PTX on disk agree by construction.
"""

from __future__ import annotations

import ctypes
import dis
import enum
import functools
import hashlib
import os
import struct
import sys
import sysconfig
import types
from dataclasses import dataclass

import numpy as np

__all__ = ["Snapshot", "snapshot", "function_copy", "digest_value", "LIBRARY_PACKAGES",
           "is_library_module"]

#: top-level packages whose code is covered by their versions in the disk key (never walked,
#: never copied); the standard library is covered by the Python version
LIBRARY_PACKAGES = frozenset({"numba_tile", "numba", "numba_cuda", "llvmlite", "numpy",
                              "ml_dtypes"})

_ATTR_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})
_DEREF_OPS = frozenset({"LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF"})
_MISSING = object()

#: what the freezer copies besides containers and arrays, registered by the modules that know
#: those kinds (they sit above this one): predicates of the plain functions copied as
#: functions (``typing/helpers.is_helper``: helpers inlined into the kernel), and
#: ``(is_kind, copy)`` of the dispatchers that get a frozen copy of their own
#: (``typing/device``: numba-cuda device functions). ``numba_tile/__init__`` imports both
#: modules, so both are registered before any kernel is frozen.
_COPIED_FUNCTIONS: list = []
_COPIED_DISPATCHERS: list = []


def copies_functions(is_kind) -> None:
    """Have the freezer copy plain functions for which ``is_kind(fn)`` is true."""
    if is_kind not in _COPIED_FUNCTIONS:
        _COPIED_FUNCTIONS.append(is_kind)


def copies_dispatchers(is_kind, copy) -> None:
    """Have the freezer replace each dispatcher ``d`` with ``is_kind(d)`` by ``copy(d)``."""
    if (is_kind, copy) not in _COPIED_DISPATCHERS:
        _COPIED_DISPATCHERS.append((is_kind, copy))


@dataclass(frozen=True)
class Snapshot:
    """A kernel function frozen for one specialization.

    Attributes:
        fn: what is typed, compiled and interpreted (same code as the kernel's function,
            frozen globals and closure cells).
        digest: SHA-256 hex of everything ``fn`` depends on; None if that cannot be covered.
        uncovered: why ``digest`` is None (for messages and docs), else None.
    """

    fn: types.FunctionType
    digest: str | None
    uncovered: str | None


def snapshot(fn) -> Snapshot:
    """Freeze ``fn``'s globals and closure cells and digest the result.

    Args:
        fn: the kernel's Python function.

    Returns:
        Snapshot.

    Raises:
        TypeError: ``fn`` is not a Python function.
    """
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"a kernel must be a Python function, got {type(fn).__name__}")
    frozen = _Freezer().function(fn)
    digester = _Digester()
    try:
        digester.function(frozen, kernel=True)
    except _Uncovered as exc:
        return Snapshot(frozen, None, str(exc))
    return Snapshot(frozen, digester.hexdigest(), None)


def function_copy(fn: types.FunctionType) -> types.FunctionType:
    """A new function over ``fn``'s code, globals, closure cells and defaults, with its name,
    annotations and attributes: what a kernel keeps of the function it decorated, so that
    assigning the original's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` later
    changes nothing the kernel snapshots (:func:`snapshot` freezes the globals and cells)."""
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__annotations__ = dict(fn.__annotations__)
    new.__dict__.update(fn.__dict__)
    return new


def digest_value(value) -> tuple[str | None, str | None]:
    """SHA-256 hex of a value as the snapshot digest encodes it (constants, dtypes, types).

    Returns:
        ``(digest, None)``, or ``(None, why)`` when the value cannot be covered.
    """
    digester = _Digester()
    try:
        digester.value(value, "a specialization constant")
    except _Uncovered as exc:
        return None, str(exc)
    return digester.hexdigest(), None


def is_library_module(name: str | None, module: types.ModuleType | None = None) -> bool:
    """Whether a module belongs to a library covered by its version (not walked): a package of
    :data:`LIBRARY_PACKAGES`, or the standard library (a user module that shadows a
    standard-library name, such as a local ``test`` package, is not).

    Args:
        name: the module's name (a function's ``__module__``).
        module: the module itself, when known (else looked up in ``sys.modules``).
    """
    if not name:
        return False
    top = name.partition(".")[0]
    if top in LIBRARY_PACKAGES or top == "builtins":
        return True
    if top not in sys.stdlib_module_names:
        return False
    path = getattr(module if module is not None else sys.modules.get(top), "__file__", None)
    return path is None or _in_stdlib(path)


@functools.lru_cache(maxsize=256)
def _in_stdlib(path: str) -> bool:
    paths = sysconfig.get_paths()
    real = os.path.realpath(path)
    roots = {os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")}
    return "site-packages" not in real and any(real.startswith(r) for r in roots)


# ----------------------------------------------------------------------------- reading code

@dataclass(frozen=True)
class _Reads:
    """What a code object (with its nested code objects) reads from outside its frame.

    Attributes:
        globals: global name -> attribute chains read from it (``()``: the value itself).
        derefs: closure variable name -> attribute chains.
        imports: modules imported by the code.
    """

    globals: dict
    derefs: dict
    imports: frozenset


@functools.lru_cache(maxsize=4096)
def _reads(code: types.CodeType) -> _Reads:
    globals_, derefs, imports = {}, {}, set()
    _collect(code, globals_, derefs, imports)
    return _Reads({k: frozenset(v) for k, v in globals_.items()},
                  {k: frozenset(v) for k, v in derefs.items()}, frozenset(imports))


def _collect(code, globals_, derefs, imports):
    insts = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    for n, inst in enumerate(insts):
        if inst.opname in _GLOBAL_OPS or inst.opname in _DEREF_OPS:
            chain = []
            for nxt in insts[n + 1:]:
                if nxt.opname not in _ATTR_OPS:
                    break
                chain.append(nxt.argval)
            table = globals_ if inst.opname in _GLOBAL_OPS else derefs
            table.setdefault(inst.argval, set()).add(tuple(chain))
        elif inst.opname == "IMPORT_NAME":
            imports.add(inst.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _collect(const, globals_, derefs, imports)


# ----------------------------------------------------------------------------- freezing

class _Freezer:
    """Builds frozen copies; ``memo`` maps ids of copied containers to their copies (cycles,
    shared references), ``keep`` holds the originals so their ids stay unique."""

    def __init__(self):
        self.memo: dict = {}
        self.keep: list = []

    def function(self, fn):
        """A new function over ``fn``'s code with frozen globals and closure cells. Helper
        functions the code reaches (``typing/helpers.is_helper``: inlined into the kernel) are
        frozen the same way, once each (the copy is in ``memo`` before its globals are filled,
        so helpers that call each other share copies): the interpreter, the compiler and the
        digest then all see the helpers' globals as they were at the snapshot."""
        code = fn.__code__
        reads = _reads(code)
        glb: dict = {}
        cells = None
        if fn.__closure__ is not None:
            cells = tuple(types.CellType() for _ in fn.__closure__)
        new = types.FunctionType(code, glb, fn.__name__, fn.__defaults__, cells)
        self.memo[id(fn)] = new
        self.keep.append(fn)
        glb.update(fn.__globals__)
        for name, chains in reads.globals.items():
            if name in glb:
                glb[name] = self.bind(glb[name], chains)
        if fn.__closure__ is not None:
            for name, cell, mine in zip(code.co_freevars, fn.__closure__, cells):
                try:
                    value = cell.cell_contents
                except ValueError:              # not assigned yet
                    continue
                mine.cell_contents = self.bind(value, reads.derefs.get(name, {()}))
        new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__module__ = fn.__module__
        new.__doc__ = fn.__doc__
        new.__annotations__ = dict(fn.__annotations__)
        new.__dict__.update(fn.__dict__)
        return new

    def bind(self, value, chains):
        """The frozen copy of a value the code reads through ``chains`` of attributes."""
        if isinstance(value, types.ModuleType):
            return self.module(value, chains)
        return self.value(value)

    def module(self, mod, chains):
        """A user module: a new module holding frozen copies of the attributes read, or of all
        its attributes when the code uses the module itself as a value (``m = cfg``).
        Library modules stay live."""
        if is_library_module(mod.__name__, mod):
            return mod
        hit = self.memo.get(id(mod))
        if hit is not None:
            return hit
        self.keep.append(mod)
        copy = self.memo[id(mod)] = types.ModuleType(mod.__name__, getattr(mod, "__doc__", None))
        for attr in ("__file__", "__package__"):
            if hasattr(mod, attr):
                setattr(copy, attr, getattr(mod, attr))
        if () in chains:
            wanted = {attr: {()} for attr in list(vars(mod)) if not attr.startswith("__")}
        else:
            wanted = _group(chains)
        for attr, rest in wanted.items():
            value = getattr(mod, attr, _MISSING)
            if value is not _MISSING:
                setattr(copy, attr, self.bind(value, rest))
        return copy

    def value(self, v):
        """A copy of ``v`` that later mutation of the original cannot reach (``v`` itself
        when it is immutable, or of a type that is not copied)."""
        t = type(v)
        if t is types.FunctionType:
            if any(is_kind(v) for is_kind in _COPIED_FUNCTIONS):    # typing/helpers.is_helper
                hit = self.memo.get(id(v))
                return hit if hit is not None else self.function(v)
            return v
        if type(v).__name__ == "CUDADispatcher":
            for is_kind, copy in _COPIED_DISPATCHERS:
                if is_kind(v):
                    # a device function: its own frozen copy (typing/device.fresh_copy), so
                    # what the kernel is compiled with and what the interpreter runs is one
                    # version
                    return copy(v)
            return v
        if t in (list, dict, set) or isinstance(v, np.ndarray):
            hit = self.memo.get(id(v))
            if hit is not None:
                return hit
            self.keep.append(v)
            if isinstance(v, np.ndarray):
                out = self.memo[id(v)] = _copy_array(v)
            elif t is list:
                out = self.memo[id(v)] = []
                out.extend(self.value(e) for e in v)
            elif t is dict:
                out = self.memo[id(v)] = {}
                out.update((self.value(k), self.value(e)) for k, e in v.items())
            else:
                out = self.memo[id(v)] = set()
                out.update(self.value(e) for e in v)
            return out
        if t is tuple or (isinstance(v, tuple) and hasattr(t, "_make")):
            items = [self.value(e) for e in v]
            if all(a is b for a, b in zip(items, v)):
                return v
            return tuple(items) if t is tuple else t._make(items)
        if t is frozenset:
            items = [self.value(e) for e in v]
            return v if all(a is b for a, b in zip(items, v)) else frozenset(items)
        return exact_scalar(v)


_DUNDERS = frozenset(
    f"__{n}__" for n in (
        "bool", "int", "index", "float", "complex", "str", "hash", "eq", "ne", "lt", "le", "gt",
        "ge", "neg", "pos", "abs", "invert", "round", "trunc", "floor", "ceil", "getattr",
        "getattribute", *(p + op for op in (
            "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
            "lshift", "rshift", "matmul", "divmod") for p in ("", "r", "i"))))


def _custom_dunders(cls) -> bool:
    """``cls`` (or a base outside the builtins and :mod:`enum`) defines an operator method."""
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins", "enum"):
            continue
        if _DUNDERS.intersection(vars(klass)):
            return True
    return False


def exact_scalar(v):
    """``v`` as its exact type when it is an instance of a subclass of ``int``, ``float``,
    ``complex``, ``str``, ``bytes`` or a NumPy scalar type, or an enum member whose class
    defines its own operators (then its value): Numba types and folds it by its value, so a
    subclass's own ``__bool__``, ``__eq__`` or ``__add__`` must not decide, in the
    interpreter, what the compiled code computes from the value."""
    t = type(v)
    if t in (int, float, bool, str, complex, bytes):
        return v
    if isinstance(v, enum.Enum):
        # Numba types a member by its value; one whose class defines its own operators would
        # run them in the interpreter: use the value itself then
        return exact_scalar(v.value) if _custom_dunders(t) else v
    if isinstance(v, np.generic):
        exact = np.dtype(t).type
        return v if t is exact else exact(v)
    if isinstance(v, int):
        return int.__index__(v)
    if isinstance(v, float):
        return float.__float__(v)
    if isinstance(v, complex):
        return complex(v.real, v.imag)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, bytes):
        return bytes(v)
    return v


def exact_constant(v):
    """A Constant's value with :func:`exact_scalar` applied to every leaf, inside tuples (and
    named tuples) at any depth: what the kernel is typed and folded with, so a subclass's own
    operators decide nothing in the interpreter there either."""
    if not issubclass(type(v), tuple):          # its true type (``__class__`` may lie)
        return exact_scalar(v)
    items = [exact_constant(x) for x in v]
    if all(a is b for a, b in zip(items, v)):
        return v
    t = type(v)
    if t is tuple:
        return tuple(items)
    make = getattr(t, "_make", None)             # a named tuple: its own class
    try:
        return make(items) if make is not None else t(items)
    except Exception:  # noqa: BLE001 - a tuple class that cannot be rebuilt: left as it is
        return v


def _group(chains) -> dict:
    """Attribute chains grouped by their first attribute: ``{a: {rest, ...}}``."""
    out: dict = {}
    for chain in chains:
        if chain:
            out.setdefault(chain[0], set()).add(chain[1:])
    return out


def _copy_array(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` with its dtype, shape, strides and flags (Numba types an array by its
    layout, alignment and writeability, so the copy must keep them)."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size == 0:
        out = a.copy(order="K")
    else:
        lo, hi = getattr(np.lib, "array_utils", np).byte_bounds(a)
        buf = bytearray(ctypes.string_at(lo, hi - lo))
        out = np.ndarray(a.shape, a.dtype, buffer=buf, offset=a.__array_interface__["data"][0] - lo,
                         strides=a.strides)
    if type(a) is not np.ndarray:
        out = out.view(type(a))
    out.flags.writeable = a.flags.writeable
    return out


# ----------------------------------------------------------------------------- digesting

class _Uncovered(Exception):
    """An input of the code the digest cannot cover (the message says which and why)."""


def _intrinsic_types() -> tuple:
    found = []
    for mod in ("numba.cuda.extending", "numba.core.extending"):
        try:
            found.append(getattr(__import__(mod, fromlist=["_Intrinsic"]), "_Intrinsic"))
        except (ImportError, AttributeError):
            pass
    return tuple(found)


_INTRINSICS: tuple | None = None


def _describe(v) -> str:
    t = type(v)
    return f"an object of type {t.__module__}.{t.__qualname__}"


def _holds_device_pointer(v) -> bool:
    t = type(v)
    for attr in ("__cuda_array_interface__", "__dlpack__"):
        try:
            if hasattr(t, attr) or hasattr(v, attr):
                return True
        except Exception:  # noqa: BLE001 - a property that raises still names a device array
            return True
    return False


class _Digester:
    """Feeds a canonical, length-prefixed encoding of everything the code depends on into
    one SHA-256; raises :class:`_Uncovered` at the first input it cannot cover."""

    def __init__(self):
        self._h = hashlib.sha256()
        self._functions: dict = {}      # id -> order of first visit (cycles, repeats)
        self._active: set = set()       # ids of containers being digested (cycles)
        self._keep: list = []

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    def put(self, *parts):
        for p in parts:
            b = p if isinstance(p, bytes) else str(p).encode("utf-8", "surrogatepass")
            self._h.update(len(b).to_bytes(8, "little"))
            self._h.update(b)

    # -- functions and code -------------------------------------------------------------

    def function(self, fn, kernel=False):
        """A user function: its code, the globals and closure cells it reads, its defaults,
        and (for a helper Numba types through registered templates) those templates."""
        seen = self._functions.get(id(fn))
        if seen is not None:
            self.put("function-ref", seen)
            return
        self._functions[id(fn)] = len(self._functions)
        self._keep.append(fn)
        code = fn.__code__
        who = f"'{fn.__qualname__}'"
        if not os.path.isfile(code.co_filename):
            raise _Uncovered(f"{who} has no source file ({code.co_filename}: defined in an "
                             f"interactive session or by exec), so its PTX is not cached on disk")
        self.put("function", fn.__module__, fn.__qualname__)
        self.code(code, who)
        reads = _reads(code)
        for name in sorted(reads.imports):
            if not is_library_module(name):
                raise _Uncovered(f"{who} imports module '{name}' in its body; import it at "
                                 f"module level so its attributes can be digested")
        glb = fn.__globals__
        builtins = glb.get("__builtins__", {})
        builtins = builtins.__dict__ if isinstance(builtins, types.ModuleType) else builtins
        for name in sorted(reads.globals):
            chains = reads.globals[name]
            self.put("global", name)
            if name in glb:
                self.bound(glb[name], chains, f"{who} reads global '{name}'")
            elif name in builtins:
                self.put("builtin")
            else:
                self.put("undefined")
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            self.put("cell", name)
            try:
                value = cell.cell_contents
            except ValueError:
                self.put("empty")
                continue
            self.bound(value, reads.derefs.get(name, {()}),
                       f"{who} reads closure variable '{name}'")
        self.value(fn.__defaults__, f"{who}'s defaults")
        self.value(fn.__kwdefaults__, f"{who}'s keyword defaults")
        if not kernel:
            self.templates(fn, who)

    def code(self, co, who):
        """A code object: bytecode, constants, names, flags, counts, line and exception
        tables, recursively through nested code objects."""
        self.put("code", co.co_name, getattr(co, "co_qualname", ""), co.co_filename,
                 co.co_firstlineno, co.co_argcount, co.co_posonlyargcount, co.co_kwonlyargcount,
                 co.co_nlocals, co.co_stacksize, co.co_flags, co.co_code,
                 co.co_linetable if hasattr(co, "co_linetable") else co.co_lnotab,
                 getattr(co, "co_exceptiontable", b""),
                 repr(co.co_names), repr(co.co_varnames), repr(co.co_freevars),
                 repr(co.co_cellvars), len(co.co_consts))
        for const in co.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const, who)
            else:
                self.value(const, f"{who}'s constants")

    def templates(self, fn, who):
        """A user function Numba types through registered templates (``@overload``,
        ``register_jitable``): digest their implementations; other templates (typed by
        ``type_callable`` with a separately registered lowering) cannot be covered."""
        from numba.cuda.descriptor import cuda_target
        ctx = cuda_target.typing_context
        ctx.refresh()
        fnty = ctx._lookup_global(fn)
        if fnty is None:
            return                      # Numba does not know it: typing refuses the call
        for template in getattr(fnty, "templates", ()) or (None,):
            impl = getattr(template, "_overload_func", None)
            if not isinstance(impl, types.FunctionType):
                raise _Uncovered(f"{who} is typed by a registered template "
                                 f"({template!r}) whose lowering the digest cannot see")
            self.put("overload", getattr(template, "_strict", None),
                     getattr(template, "prefer_literal", None),
                     repr(getattr(getattr(template, "_inline", None), "_inline", None)))
            self.value(getattr(template, "_jit_options", None), f"{who}'s overload options")
            self.value(impl, f"{who}'s overload")

    # -- values ----------------------------------------------------------------------------

    def bound(self, value, chains, what):
        """A value the code reads through ``chains`` of attributes (only modules are read
        attribute by attribute; any other value is digested whole)."""
        if isinstance(value, types.ModuleType):
            self.module(value, chains, what)
        else:
            self.value(value, what)

    def module(self, mod, chains, what):
        if is_library_module(mod.__name__, mod):
            self.put("library-module", mod.__name__)
            return
        if () in chains:
            raise _Uncovered(f"{what}, user module '{mod.__name__}', other than through "
                             f"attribute reads (module.name), so the digest cannot tell which "
                             f"of its attributes the code depends on")
        self.put("module", mod.__name__)
        for attr, rest in sorted(_group(chains).items()):
            self.put("attr", attr)
            value = getattr(mod, attr, _MISSING)
            if value is _MISSING:
                self.put("missing")
            else:
                self.bound(value, rest, f"{what}: attribute '{attr}'")

    def value(self, v, what):
        t = type(v)
        if v is None or v is Ellipsis or t in (bool, int, str):
            self.put(t.__name__, repr(v))
        elif t is float:
            self.put("float", struct.pack("<d", v).hex())      # every NaN's own bits
        elif t is complex:
            self.put("complex", struct.pack("<dd", v.real, v.imag).hex())
        elif t is bytes:
            self.put("bytes", v)
        elif isinstance(v, enum.Enum):
            self.klass(t, what)
            self.put("member", v.name)
        elif isinstance(v, np.ndarray):
            self.array(v, what)
        elif isinstance(v, np.generic):
            if v.dtype.hasobject:
                raise _Uncovered(f"{what}, a NumPy object scalar, whose contents the digest "
                                 f"cannot cover")
            self.put("np-scalar", repr(v.dtype), v.tobytes())
        elif _holds_device_pointer(v):
            raise _Uncovered(f"{what}, {_describe(v)} that holds a device pointer "
                             f"(__cuda_array_interface__ or __dlpack__): Numba bakes its address "
                             f"into the PTX, which must not be reused in another process; pass "
                             f"the array as a kernel argument instead")
        elif isinstance(v, np.dtype):
            self.put("dtype", repr(v))
        elif t in (tuple, list) or (isinstance(v, tuple) and hasattr(t, "_fields")):
            if t not in (tuple, list):
                self.klass(t, what, namedtuple=True)
            self.container(v, what, lambda: self._sequence(t, v, what))
        elif t in (set, frozenset, dict):
            self.container(v, what, lambda: self._unordered(t, v, what))
        elif isinstance(v, types.ModuleType):
            self.module(v, {()}, what)
        elif isinstance(v, type):
            self.klass(v, what)
        elif isinstance(v, types.FunctionType):
            if is_library_module(v.__module__):
                self.put("library-function", v.__module__, v.__qualname__)
            else:
                self.function(v)
        elif isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            owner = getattr(v, "__self__", None)
            if owner is not None and not (isinstance(owner, types.ModuleType)
                                          and is_library_module(owner.__name__)):
                raise _Uncovered(f"{what}, the bound method {v!r}, whose object the digest "
                                 f"cannot cover")
            self.put("builtin-function", v.__module__, v.__qualname__)
        else:
            self.numba_object(v, what)

    def numba_object(self, v, what):
        """Intrinsics, dispatchers (device functions) and Numba types; anything else is an
        object of unknown type."""
        global _INTRINSICS
        if _INTRINSICS is None:
            _INTRINSICS = _intrinsic_types()
        t = type(v)
        if isinstance(v, _INTRINSICS):
            defn = v._defn
            self.put("intrinsic", v._name, getattr(v, "_prefer_literal", False))
            self.value(getattr(v, "_ctor_kwargs", None), f"{what} (intrinsic options)")
            self.value(defn, what)
            return
        if (is_library_module(t.__module__) and isinstance(getattr(v, "py_func", None),
                                                           types.FunctionType)
                and isinstance(getattr(v, "targetoptions", None), dict)):
            opts = v.targetoptions
            if opts.get("link"):
                raise _Uncovered(f"{what}, a device function linking {opts['link']!r}, whose "
                                 f"contents the digest cannot cover")
            self.put("dispatcher", t.__module__, t.__qualname__)
            self.value(opts, f"{what} (device function options)")
            self.value(v.py_func, what)
            return
        from numba.core.types import Type
        if isinstance(v, Type) and is_library_module(t.__module__):
            self.put("numba-type", t.__module__, t.__qualname__, v.name)
            return
        raise _Uncovered(f"{what}, {_describe(v)}, which the cache key cannot cover (its "
                         f"value could change the compiled code unseen); use a number, string, "
                         f"tuple, enum or NumPy array, or pass it as an argument")

    def klass(self, cls, what, namedtuple=False):
        if issubclass(cls, enum.Enum):
            self.put("enum", cls.__module__, cls.__qualname__)
            for name, member in cls.__members__.items():
                self.put(name)
                self.value(member.value, f"{what} (enum {cls.__qualname__}.{name})")
        elif namedtuple:
            self.put("namedtuple", cls.__module__, cls.__qualname__, repr(cls._fields))
        elif is_library_module(cls.__module__):
            self.put("library-class", cls.__module__, cls.__qualname__)
        else:
            raise _Uncovered(f"{what}, the class {cls.__module__}.{cls.__qualname__}, defined "
                             f"outside the libraries the cache key covers by version")

    def array(self, a, what):
        if a.dtype.hasobject:
            raise _Uncovered(f"{what}, a NumPy array of Python objects, whose contents the "
                             f"digest cannot cover")
        if type(a) is not np.ndarray:
            raise _Uncovered(f"{what}, {_describe(a)} (an ndarray subclass)")
        f = a.flags
        self.put("ndarray", repr(a.dtype), a.shape, a.strides, f.c_contiguous, f.f_contiguous,
                 f.writeable, f.aligned, a.tobytes(order="A"))

    def container(self, v, what, body):
        if id(v) in self._active:
            self.put("cycle")
            return
        self._active.add(id(v))
        try:
            body()
        finally:
            self._active.discard(id(v))

    def _sequence(self, t, v, what):
        self.put(t.__name__, len(v))
        for e in v:
            self.value(e, what)

    def _unordered(self, t, v, what):
        # elements in the order of their own digests (sets and dicts have no canonical order)
        items = v.items() if t is dict else ((e, None) for e in v)
        parts = []
        for key, val in items:
            sub = _Digester()
            sub._functions, sub._active, sub._keep = self._functions, self._active, self._keep
            sub.value(key, what)
            if t is dict:
                sub.value(val, what)
            parts.append(sub.hexdigest())
        self.put(t.__name__, len(parts), *sorted(parts))
