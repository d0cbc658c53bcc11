"""Device functions: numba-cuda ``@cuda.jit(device=True)`` scalar functions applied to tiles.

A kernel may call an existing numba-cuda device function on tiles: ``y = f(x)`` applies ``f``
to every element of ``x`` (several tile arguments broadcast as the elementwise operators
broadcast; scalars go to every call as they are). Before typing, ``typing/helpers.py``
rewrites such a call into the internal op ``_device_call(f, (x, ...))``, whose rule here
types it:

* each tile argument is passed as its dtype's compute type (16-bit floats as float32),
  each scalar as Numba types it;
* ``f`` is compiled for those types from its Python function, with numba-cuda's own
  pipeline (``compile_cuda``) and NumPy's error model (no exceptions), for the kernel's
  compute capability, once per (function, argument types, capability);
* in a safe kernel, its typed body is then checked like kernel code (an unchecked kernel's
  device functions are its author's responsibility, like its other opaque calls): it may hold only numbers, booleans
  and what Python's and NumPy's scalar functions need; it may call only those functions
  and other device functions that pass the same check (recursion refused); it may not
  raise. So it reads and writes no memory and reads no thread index
  (``typing/closed_world.py`` decides what a call may be). A device function that fails
  any of this is refused, naming it and the line in its source;
* the result is a tile of the broadcast shape whose dtype is ``f``'s return type as Numba
  types it (float64, float32, float16, int64, int32, int8 or bool; anything else is
  refused).

The interpreter runs ``f``'s Python function on each element (``interpreter/device.py``).
"""

from __future__ import annotations

from numba.cuda import types
from numba.cuda.core import ir

from .. import dtypes
from .._registry import typing_rule
from ..errors import ClosedWorldError, TileTypingError, UnanalyzedCallError
from .common import is_scalar
from .types import TileType

__all__ = ["is_device_function", "compiled_device_function", "find_compiled"]

#: (dispatcher, argument types, compute capability) -> numba-cuda CompileResult
_COMPILED: dict = {}
#: dispatchers whose typed bodies passed the check, by (dispatcher, argument types)
_CHECKED: set = set()

#: what a device function's result may be, as a tile dtype
_RESULT_DTYPES = {types.float64: dtypes.float64, types.float32: dtypes.float32,
                  types.float16: dtypes.float16, types.int64: dtypes.int64,
                  types.int32: dtypes.int32, types.int8: dtypes.int8,
                  types.boolean: dtypes.bool_}


def is_device_function(fn) -> bool:
    """Whether ``fn`` is a numba-cuda ``@cuda.jit(device=True)`` dispatcher."""
    try:
        from numba.cuda.dispatcher import CUDADispatcher
    except ImportError:  # pragma: no cover - numba-cuda is a dependency
        return False
    return isinstance(fn, CUDADispatcher) and bool(fn.targetoptions.get("device"))


def _name(disp) -> str:
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


def find_compiled(disp, argtypes):
    """A compile result of ``disp`` for ``argtypes`` (any capability), or None."""
    for (d, a, _cc_), cres in _COMPILED.items():
        if d is disp and a == argtypes:
            return cres
    return None


def compiled_device_function(disp, argtypes: tuple, cc: tuple | None = None):
    """``disp`` compiled for ``argtypes`` (its typed body checked), cached.

    Raises:
        TileTypingError: it does not compile for these types, or returns a type no tile holds.
        ClosedWorldError: its body does what a safe kernel may not (module docstring).
    """
    cc = tuple(cc or _cc())
    key = (disp, argtypes, cc)
    cres = _COMPILED.get(key)
    if cres is None:
        from numba.cuda.compiler import compile_cuda
        fastmath = bool(disp.targetoptions.get("fastmath"))
        try:
            with _target_cc(cc):
                cres = compile_cuda(disp.py_func, None, argtypes, debug=False, lineinfo=False,
                                    fastmath=fastmath,
                                    nvvm_options={"opt": 3, "fastmath": fastmath}, cc=cc)
        except Exception as exc:  # noqa: BLE001 - Numba's typing or lowering refused it
            first = (str(exc).strip().splitlines() or [""])[0]
            raise TileTypingError(
                f"{_kernel()}device function '{_name(disp)}' does not compile for "
                f"({', '.join(map(str, argtypes))}) (the element types of its arguments): "
                f"{type(exc).__name__}: {first}") from None
        _COMPILED[key] = cres
    if (disp, argtypes) not in _CHECKED and not _unchecked():
        check_body(disp, cres, ())
        _CHECKED.add((disp, argtypes))
    ret = cres.signature.return_type
    if ret not in _RESULT_DTYPES:
        raise TileTypingError(
            f"{_kernel()}device function '{_name(disp)}' returns {ret} for "
            f"({', '.join(map(str, argtypes))}); applied to tiles it must return a number or "
            f"a bool a tile can hold ({', '.join(sorted(map(str, _RESULT_DTYPES)))})")
    return cres


class _Device:
    def __init__(self, cc):
        self.compute_capability = cc


class _target_cc:
    """While a device function compiles, the device functions it calls compile for the
    kernel's compute capability (numba-cuda asks the current device's, which needs a GPU, in
    ``CUDADispatcher.compile_device``). Under the compiler lock, which every compile holds."""

    def __init__(self, cc):
        self.cc = cc

    def __enter__(self):
        from numba.cuda import dispatcher
        self.saved = dispatcher.get_current_device
        dispatcher.get_current_device = lambda: _Device(self.cc)

    def __exit__(self, *exc):
        from numba.cuda import dispatcher
        dispatcher.get_current_device = self.saved
        return False


_RAISES = (ir.Raise, ir.StaticRaise, ir.TryRaise, ir.StaticTryRaise)


def check_body(disp, cres, chain: tuple) -> None:
    """Refuse a device function whose typed body a safe kernel could not contain, or that
    raises (an exception would end some threads of a block early), or that calls itself."""
    from .closed_world import check_closed_world
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
    if cres is None:
        return ("a numba-cuda device function numba_tile could not find compiled", False)
    if (disp, tuple(sig.args)) not in _CHECKED:
        check_body(disp, cres, _CHAIN[-1])
        _CHECKED.add((disp, tuple(sig.args)))
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
    from .closed_world import pointer_params_in
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
