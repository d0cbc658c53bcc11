"""Device functions: numba-cuda ``@cuda.jit(device=True)`` scalar functions applied to tiles.

A kernel may call an existing numba-cuda device function on tiles: ``y = f(x)`` applies ``f``
to every element of ``x`` (several tile arguments broadcast as the elementwise operators
broadcast; scalars go to every call as they are). Before typing, ``typing/helpers.py``
rewrites such a call into the internal op ``_device_call(f, (x, ...))``, whose rule here
types it:

* each tile argument is passed as its dtype's compute type (16-bit floats as float32),
  each scalar as Numba types it;
* what is compiled is a *frozen copy* of ``f`` (:func:`fresh_copy`: its Python function with
  its globals and closure cells as they are at the kernel's compile, and the device functions
  it calls replaced by their own frozen copies), one per version of its code and of what it
  reads, compiled by numba-cuda for those types with NumPy's error model (no exceptions);
  what is checked, linked and interpreted is that copy, so a later change of a global is a
  new copy, never a stale compile;
* in a safe kernel, the copy's typed body is then checked like kernel code (an unchecked
  kernel's device functions are its author's responsibility, like its other opaque calls):
  it may hold only numbers, booleans and what Python's and NumPy's scalar functions need; it
  may call only those functions and other device functions that pass the same check
  (recursion refused); it may not raise, neither by a ``raise`` statement nor by code
  Numba's lowering can fail in (an out-of-range tuple index, ``range`` with step 0): the
  compiled body may return no error status. So it reads and writes no memory, reads no
  thread index and ends no thread early (``typing/closed_world.py`` decides what a call may
  be). A device function that fails any of this is refused, naming it and the line in its
  source;
* a device function declared with explicit signatures is applied only to element types it
  was declared for (its declared casts are not numba_tile's);
* the result is a tile of the broadcast shape whose dtype is ``f``'s return type as Numba
  types it (float64, float32, float16, int64, int32, int8 or bool; anything else is
  refused).

The interpreter runs the typed IR of that compile on each element (``interpreter/device.py``).
"""

from __future__ import annotations

import sys
import types as pytypes

from numba.cuda import types
from numba.cuda.core import ir

from .. import dtypes, frozen
from .._registry import typing_rule
from ..errors import ClosedWorldError, TileTypingError, UnanalyzedCallError
from . import closed_world
from .common import is_scalar
from .types import TileType

__all__ = ["is_device_function", "compiled_device_function", "fresh_copy", "compile_for_cc"]

#: (user's dispatcher, digest of its code and what it reads) -> its frozen copy
_FRESH: dict = {}
#: device functions whose copy is being made (a cycle of calls meets one again)
_BUILDING: set = set()
#: id -> compile result, of every compile result whose typed body passed the check
_CHECKED: dict = {}

#: what a device function's result may be, as a tile dtype
_RESULT_DTYPES = {types.float64: dtypes.float64, types.float32: dtypes.float32,
                  types.float16: dtypes.float16, types.int64: dtypes.int64,
                  types.int32: dtypes.int32, types.int16: dtypes.int16,
                  types.int8: dtypes.int8, types.uint64: dtypes.uint64,
                  types.uint32: dtypes.uint32, types.uint16: dtypes.uint16,
                  types.uint8: dtypes.uint8, types.boolean: dtypes.bool_}


def is_device_function(fn) -> bool:
    """Whether ``fn`` is a numba-cuda ``@cuda.jit(device=True)`` dispatcher."""
    try:
        from numba.cuda.dispatcher import CUDADispatcher
    except ImportError:  # pragma: no cover - numba-cuda is a dependency
        return False
    return isinstance(fn, CUDADispatcher) and bool(fn.targetoptions.get("device"))


def _name(disp) -> str:
    disp = getattr(disp, "_numba_tile_original", None) or disp
    return getattr(disp.py_func, "__qualname__", None) or str(disp)


def _kernel() -> str:
    from ..compiler_context import _CURRENT
    ctx = _CURRENT.get()
    name = getattr(ctx, "kernel_name", None)
    return f"kernel '{name}': " if name else ""


def _unchecked() -> bool:
    """The kernel being compiled is marked unchecked: its device functions' bodies are its
    author's responsibility, as its other opaque calls are (``typing/closed_world.py``)."""
    from ..compiler_context import _CURRENT
    return bool(getattr(_CURRENT.get(), "unchecked", False))


def _cc() -> tuple:
    from ..compiler_context import _CURRENT
    ctx = _CURRENT.get()
    return tuple(getattr(ctx, "cc", None) or (9, 0))[:2]


def fresh_copy(disp, memo=None):
    """The dispatcher numba_tile compiles, checks and interprets for the user's ``disp``: a
    new ``@cuda.jit(device=True)`` dispatcher over a frozen copy of its Python function
    (``frozen.py``: globals and closure cells as they are now), with the device functions that
    copy reaches replaced by their own frozen copies, recursively. One per version of the code
    and what it reads (by digest), so a changed global is a new copy, compiled and checked
    afresh, never numba-cuda's first compile of the old one; ``debug``, ``lineinfo`` and
    ``opt`` are dropped (NumPy's error model: no exceptions), ``fastmath``, inlining and
    linked files kept.

    Raises:
        TileTypingError: ``disp`` was declared with explicit signatures (handled by the
            caller) or its function cannot be copied.
    """
    if getattr(disp, "_numba_tile_original", None) is not None:
        return disp                          # a frozen copy already
    memo = {} if memo is None else memo
    if disp in memo:
        return memo[disp]
    if disp in _BUILDING:
        return disp          # a cycle (recursion): left live, and refused by the check
    _BUILDING.add(disp)
    try:
        snap = frozen.snapshot(disp.py_func)
    finally:
        _BUILDING.discard(disp)
    key = (disp, snap.digest) if snap.digest is not None else None
    if key is not None and key in _FRESH:
        return _FRESH[key]
    from numba import cuda
    opts = {k: v for k, v in disp.targetoptions.items()
            if k in ("fastmath", "inline", "forceinline", "link", "lto")}
    fresh = cuda.jit(device=True, **opts)(snap.fn)
    fresh._numba_tile_original = disp
    memo[disp] = fresh
    fn = snap.fn
    glb = fn.__globals__
    for name, value in list(glb.items()):
        if is_device_function(value):
            glb[name] = fresh_copy(value, memo)
        elif isinstance(value, pytypes.ModuleType) and sys.modules.get(value.__name__) \
                is not value:                   # frozen.py's copy of a user module
            for attr, inner in list(vars(value).items()):
                if is_device_function(inner):
                    setattr(value, attr, fresh_copy(inner, memo))
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if is_device_function(value):
            cell.cell_contents = fresh_copy(value, memo)
    if key is not None:
        _FRESH[key] = fresh
    return fresh


def _declared(disp, argtypes):
    """Refuse element types a device function with explicit signatures was not declared for
    (its declared casts would not be applied)."""
    disp = getattr(disp, "_numba_tile_original", None) or disp
    if getattr(disp, "_can_compile", True):
        return
    declared = [tuple(args) for args in disp.overloads]
    if tuple(argtypes) not in declared:
        raise TileTypingError(
            f"{_kernel()}device function '{_name(disp)}' was declared for "
            f"{', '.join('(' + ', '.join(map(str, d)) + ')' for d in declared) or 'no types'}, "
            f"and is applied to elements of ({', '.join(map(str, argtypes))}): numba_tile "
            f"compiles device functions for the tiles' element types; cast the tiles "
            f"(astype) to a declared signature, or declare the function without one")


def compiled_device_function(disp, argtypes: tuple, cc: tuple | None = None):
    """``disp``'s frozen copy (:func:`fresh_copy`) compiled for ``argtypes``, its typed body
    checked in a safe kernel; cached by numba-cuda per copy and argument types.

    Raises:
        TileTypingError: it does not compile for these types, or returns a type no tile holds.
        ClosedWorldError: its body does what a safe kernel may not (module docstring).
    """
    cc = tuple(cc or _cc())
    _declared(disp, argtypes)
    fresh = fresh_copy(disp)
    try:
        with compile_for_cc(cc):
            cres = fresh.compile_device(tuple(argtypes))
    except TileTypingError:
        raise
    except Exception as exc:  # noqa: BLE001 - Numba's typing or lowering refused it
        first = (str(exc).strip().splitlines() or [""])[0]
        raise TileTypingError(
            f"{_kernel()}device function '{_name(disp)}' does not compile for "
            f"({', '.join(map(str, argtypes))}) (the element types of its arguments): "
            f"{type(exc).__name__}: {first}") from None
    ret = cres.signature.return_type
    if ret not in _RESULT_DTYPES:
        raise TileTypingError(
            f"{_kernel()}device function '{_name(disp)}' returns {ret} for "
            f"({', '.join(map(str, argtypes))}); applied to tiles it must return a number or "
            f"a bool a tile can hold ({', '.join(sorted(map(str, _RESULT_DTYPES)))})")
    if id(cres) not in _CHECKED and not _unchecked():
        check_body(fresh, cres, ())
        _CHECKED[id(cres)] = cres
    return cres


class _Device:
    def __init__(self, cc):
        self.compute_capability = cc


class compile_for_cc:
    """While a kernel or a device function compiles, the numba-cuda dispatchers compiled
    inside it (the device functions it calls, and the implementations of Numba's own
    ``@overload``s of builtins: ``min`` and ``sum`` of a tuple, ``sum(range(n))``...) compile
    for the kernel's compute capability: numba-cuda asks the current device's
    (``CUDADispatcher.compile_device``), which needs a GPU even to type a call. Under the
    compiler lock, which every compile holds. What compiles inside is numba_tile's code
    (``compiler_context.own_code``)."""

    def __init__(self, cc):
        self.cc = cc

    def __enter__(self):
        from numba.cuda import dispatcher

        from ..compiler_context import own_code
        self.saved = dispatcher.get_current_device
        dispatcher.get_current_device = lambda: _Device(self.cc)
        self.own = own_code()          # numba_tile's code: lowering/scalars.py applies
        self.own.__enter__()

    def __exit__(self, *exc):
        from numba.cuda import dispatcher
        dispatcher.get_current_device = self.saved
        self.own.__exit__(*exc)
        return False


_RAISES = (ir.Raise, ir.StaticRaise, ir.TryRaise, ir.StaticTryRaise)


def check_body(disp, cres, chain: tuple) -> None:
    """Refuse a device function whose typed body a safe kernel could not contain, or that
    raises (an exception would end some threads of a block early), or that calls itself."""
    check_closed_world = closed_world.check_closed_world
    name = _name(disp)
    if disp in chain:
        raise ClosedWorldError(
            f"{_kernel()}device function '{name}' calls itself (through "
            f"{' -> '.join(_name(d) for d in chain)}): numba_tile checks a device function's "
            f"body before it runs, and cannot check a recursive one")
    ta = cres.type_annotation        # its typed blocks (all the check reads of an IR)
    func_ir, typemap, calltypes = ta, ta.typemap, ta.calltypes
    for label in sorted(func_ir.blocks):
        for inst in func_ir.blocks[label].body:
            if isinstance(inst, _RAISES):
                raise ClosedWorldError(
                    f"{_kernel()}device function '{name}' may raise an exception (line "
                    f"{inst.loc.line}): applied to tiles, each element's call runs in one "
                    f"thread, and a thread that stops early leaves its block's other threads "
                    f"waiting; return a value instead (NaN, a flag)",
                    filename=inst.loc.filename, lineno=inst.loc.line)
    with _nested(disp, chain):
        check_closed_world(func_ir, typemap, calltypes,
                           f"{_kernel_name()}', device function '{name}", unchecked=False)
    status = _error_status(cres)
    if status == -2:
        raise ClosedWorldError(
            f"{_kernel()}device function '{name}' may return None (Numba's status -2): "
            f"applied to tiles, every call must return a number or a bool",
            filename=func_ir.filename, lineno=int(func_ir.linenum))
    if status is not None:
        raise ClosedWorldError(
            f"{_kernel()}device function '{name}' may fail at run time (its compiled body can "
            f"return the error status {status}: an out-of-range tuple index, a range with step "
            f"0 or similar, which Numba's lowering turns into an exception): applied to tiles, "
            f"an element whose call fails would be silently wrong; check the operands "
            f"instead", filename=func_ir.filename, lineno=int(func_ir.linenum))


def _error_status(cres):
    """A constant non-zero status the compiled function can return (Numba's call convention:
    0 is success, anything else an exception), or None."""
    import re
    name = cres.fndesc.mangled_name
    text = cres.library.get_llvm_str()
    start = text.find(f'@"{name}"(') if f'@"{name}"(' in text else text.find(f"@{name}(")
    if start < 0:
        return None
    start = text.rfind("define", 0, start)
    end = text.find("\n}\n", start)
    body = text[start:end if end > 0 else None]
    for m in re.finditer(r"ret i32 (-?\d+)", body):
        if int(m.group(1)) != 0:
            return int(m.group(1))
    return None


_CHAIN: list = []


class _nested:
    """The device functions being checked, innermost last (for nested calls' checks)."""

    def __init__(self, disp, chain):
        self.entry = chain + (disp,)

    def __enter__(self):
        _CHAIN.append(self.entry)

    def __exit__(self, *exc):
        _CHAIN.pop()
        return False


def _kernel_name() -> str:
    from ..compiler_context import _CURRENT
    return getattr(_CURRENT.get(), "kernel_name", None) or "?"


def nested_verdict(fnty, sig):
    """``typing/closed_world._callee_verdict`` of a call of a device function inside a device
    function being checked: None when its body passes the same check (else it raises)."""
    disp = fnty.dispatcher
    if not _CHAIN or not is_device_function(disp) or sig is None:
        return ("a numba-cuda device function", False)
    cres = disp.overloads.get(tuple(sig.args))
    if cres is None or getattr(disp, "_numba_tile_original", None) is None:
        # only the frozen copies fresh_copy makes are linked into a checked device function
        return ("a numba-cuda device function numba_tile could not find compiled", False)
    if id(cres) not in _CHECKED:
        check_body(disp, cres, _CHAIN[-1])
        _CHECKED[id(cres)] = cres
    return None


def argument_types(items) -> tuple:
    """The scalar types a device function is called with, for the kernel's argument types
    (tiles and scalars)."""
    out = []
    for t in items:
        if isinstance(t, TileType):
            out.append(dtypes.compute_type(t.dtype))
        else:
            out.append(types.unliteral(t))
    return tuple(out)


@typing_rule("_device_call")
def type_device_call(fn, args):
    disp = getattr(fn, "dispatcher", None)
    if not isinstance(fn, types.Dispatcher) or not is_device_function(disp):
        raise TileTypingError(f"{_kernel()}_device_call: expected a numba-cuda device "
                              f"function, got {fn}")
    items = tuple(args.types) if isinstance(args, types.BaseTuple) else None
    if items is None:
        raise TileTypingError(f"{_kernel()}device function '{_name(disp)}': its arguments "
                              f"must be given by position")
    pointer_params_in = closed_world.pointer_params_in
    passed = [p for t in items for p in pointer_params_in(t)]
    if passed:
        names = ", ".join(f"'{p.param}'" for p in dict.fromkeys(passed))
        raise UnanalyzedCallError(
            f"{_kernel()}parameter(s) {names} passed to device function '{_name(disp)}': "
            f"tensors and partitions can only be given to numba_tile ops; a device function "
            f"takes tiles (it is applied to each element) and scalars")
    for k, t in enumerate(items):
        if not isinstance(t, TileType) and not is_scalar(t):
            raise TileTypingError(
                f"{_kernel()}device function '{_name(disp)}': argument {k + 1} is {t}; in a "
                f"kernel a device function takes tiles (it is applied to each element) and "
                f"scalars, nothing else")
    cres = compiled_device_function(disp, argument_types(items))
    ret = cres.signature.return_type
    tiles = [t for t in items if isinstance(t, TileType)]
    if not tiles:
        return ret
    from .elementwise import result_tile
    return result_tile(tiles, _name(disp)).with_dtype(_RESULT_DTYPES[ret])


# snapshots replace a device function by its own frozen copy: frozen.py asks this module
frozen.copies_dispatchers(is_device_function, fresh_copy)


# calls of device functions inside device functions: closed_world.py asks this module
closed_world.judges_nested_device_calls(nested_verdict)
