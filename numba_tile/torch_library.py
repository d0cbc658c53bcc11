"""PyTorch custom ops whose body launches numba_tile kernels: :func:`torch_op`.

A kernel launch is opaque to PyTorch: ``torch.compile`` cannot trace into it, and a CUDA graph
records it only if it goes to the capturing stream. :func:`torch_op` registers the user's host
function (it allocates the outputs and launches the kernels) as a ``torch.library`` custom op
with a fake (meta) implementation, so that

* ``torch.compile(fullgraph=True)`` graphs call the op as one node (the fake gives the
  outputs' shapes, dtypes and devices while tracing; nothing runs);
* while the body runs, a launch that gives no ``stream=`` goes to
  ``torch.cuda.current_stream()`` of the tensors' device: the stream PyTorch orders its own
  work on, and under ``torch.cuda.graph`` the capturing stream;
* on CPU tensors the same launches run in numba_tile's interpreter (NumPy), so the op works
  on machines without a GPU.

The defaults are set with :func:`numba_tile.launch_defaults` (thread-local), so a launch inside
the body that names its own ``stream=`` or ``interpret=`` keeps it.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Callable, Iterable, Sequence

from .errors import TileArgumentError, shown
from .kernel import CompletedLaunch
from .runtime.defaults import launch_defaults
from .runtime.inflight import LaunchHandle

__all__ = ["torch_op"]

_HANDLES = (LaunchHandle, CompletedLaunch)


def _call_site() -> dict:
    from .runtime.call_site import user_call_site
    site = user_call_site()
    return {"filename": site[0], "lineno": site[1]} if site else {}


def _fn_site(fn) -> dict:
    code = getattr(fn, "__code__", None)
    if code is None:
        return {}
    return {"filename": code.co_filename, "lineno": code.co_firstlineno}


def _require_torch(name: object):
    """The ``torch`` module, refusing a missing one or one without ``torch.library.custom_op``
    and ``register_fake`` (PyTorch 2.4)."""
    try:
        import torch
    except ImportError as exc:
        raise TileArgumentError(
            f"torch_op({shown(name)}): needs PyTorch >= 2.4 (torch.library.custom_op), but "
            f"torch cannot be imported ({exc})", **_call_site()) from None
    library = getattr(torch, "library", None)
    if not (hasattr(library, "custom_op") and hasattr(library, "register_fake")):
        raise TileArgumentError(
            f"torch_op({shown(name)}): needs PyTorch >= 2.4 (torch.library.custom_op and "
            f"register_fake), got torch {getattr(torch, '__version__', '?')}", **_call_site())
    return torch


def _check_name(name: object) -> str:
    parts = name.split("::") if isinstance(name, str) else ()
    if len(parts) != 2 or not all(p.isidentifier() for p in parts):
        raise TileArgumentError(
            f"torch_op: name: expected 'namespace::op_name' (two Python identifiers, e.g. "
            f"'mylib::add'; use your project's name as the namespace), got "
            f"{shown(name, with_type=True, qualified=False)}", **_call_site())
    return name


def _check_mutates(name: str, mutates_args: object) -> "str | tuple[str, ...]":
    if isinstance(mutates_args, str) and mutates_args == "unknown":
        return "unknown"
    bad = isinstance(mutates_args, str) or not isinstance(mutates_args, Iterable)
    names = () if bad else tuple(mutates_args)
    if bad or not all(isinstance(n, str) for n in names):
        raise TileArgumentError(
            f"torch op '{name}': mutates_args: expected the names of the parameters the op "
            f"writes in place (a tuple of str, e.g. ('out',)) or 'unknown', got "
            f"{shown(mutates_args, with_type=True, qualified=False)}", **_call_site())
    return names


def _check_device_types(name: str, device_types: object):
    if device_types is None or isinstance(device_types, str):
        return device_types
    if isinstance(device_types, Sequence) and device_types \
            and all(isinstance(d, str) for d in device_types):
        return tuple(device_types)
    raise TileArgumentError(
        f"torch op '{name}': device_types: expected None (every device), a device type such "
        f"as 'cuda' or 'cpu', or a sequence of them, got "
        f"{shown(device_types, with_type=True, qualified=False)}", **_call_site())


def _infer_schema(torch, name: str, fn, mutates_args) -> str:
    infer = getattr(torch.library, "infer_schema", None)
    if infer is None:                       # PyTorch 2.4: not yet public
        from torch._library.infer_schema import infer_schema as infer
    try:
        return infer(fn, mutates_args=mutates_args)
    except ValueError as exc:
        raise TileArgumentError(
            f"torch op '{name}': PyTorch cannot infer the op's schema from the annotations of "
            f"{fn.__qualname__}{_signature_text(fn)}: {exc}", **_fn_site(fn)) from None


def _signature_text(fn) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


def _written_args(torch, schema: str) -> tuple[str, ...]:
    """The parameters ``schema`` marks as written (``Tensor(a!)``), for ``mutates_args='unknown'``."""
    parsed = torch._C.parse_schema(f"op{schema}")
    return tuple(a.name for a in parsed.arguments
                 if a.alias_info is not None and a.alias_info.is_write)


def _check_fake(name: str, fn, sig: inspect.Signature, fake, returns_none: bool):
    if fake is None:
        if returns_none:
            return
        raise TileArgumentError(
            f"torch op '{name}': fake: expected a fake (meta) implementation of "
            f"{fn.__qualname__}: a function of the op's arguments that returns empty tensors "
            f"with the outputs' shapes, dtypes and devices (e.g. fake=lambda x, y: "
            f"torch.empty_like(x)), got None; torch.compile and CUDA graph capture trace the "
            f"op through it (only an op that returns None, an in-place op with mutates_args, "
            f"needs none)", **_fn_site(fn))
    if not callable(fake):
        raise TileArgumentError(
            f"torch op '{name}': fake: expected a function of the op's arguments "
            f"{sig}, got {shown(fake, with_type=True, qualified=False)}", **_fn_site(fn))
    try:
        fake_sig = inspect.signature(fake)
    except (TypeError, ValueError):        # a builtin or C callable: torch will call it
        return
    args = [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kwargs = {p.name: p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}
    try:
        fake_sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise TileArgumentError(
            f"torch op '{name}': fake: expected a function that takes the op's arguments "
            f"{sig}, got {getattr(fake, '__qualname__', type(fake).__name__)}{fake_sig}, which "
            f"cannot ({exc})", **_fn_site(fake) or _fn_site(fn)) from None


class _Body:
    """The op's kernel: runs the user's function with the launch defaults of its tensors'
    device, and refuses launch handles among its results."""

    def __init__(self, torch, name: str, fn, sig: inspect.Signature, written=()):
        self.torch = torch
        self.name = name
        self.fn = fn
        self.params = [p.name for p in sig.parameters.values()]
        self.written = frozenset(written)
        self.__name__ = getattr(fn, "__name__", "op")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", None)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__signature__ = sig

    def __call__(self, *args, **kwargs):
        from .runtime.defaults import current
        local = current()
        kept = [(n, t) for n, t in self._tensors(args, kwargs)
                if isinstance(t, self.torch.Tensor) and n.split("[")[0] not in self.written]
        saved = local.watch
        local.watch = _Watch(self, kept, saved) if kept else saved
        try:
            with self._defaults(args, kwargs):
                out = self.fn(*args, **kwargs)
        finally:
            local.watch = saved
        self._check_result(out)
        return out

    def _tensors(self, args, kwargs):
        Tensor, device = self.torch.Tensor, self.torch.device
        named = list(zip(self.params, args)) + list(kwargs.items())
        for pname, value in named:
            if isinstance(value, (Tensor, device)):
                yield pname, value
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    if isinstance(v, (Tensor, device)):
                        yield f"{pname}[{i}]", v

    def _defaults(self, args, kwargs):
        """``launch_defaults`` for the op's tensors: the current stream of their CUDA device,
        the interpreter when all are on the CPU, none when the op has no tensor (or device)."""
        cuda = None            # (argument name, device) of the first CUDA tensor
        cpu = False
        for pname, value in self._tensors(args, kwargs):
            dev = value if isinstance(value, self.torch.device) else value.device
            if dev.type == "cpu":
                cpu = True
            elif dev.type == "cuda":
                if dev.index is None:
                    dev = self.torch.device("cuda", self.torch.cuda.current_device())
                if cuda is None:
                    cuda = (pname, dev)
                elif cuda[1] != dev:
                    raise TileArgumentError(
                        f"torch op '{self.name}': argument '{pname}': expected a tensor on "
                        f"{cuda[1]} (the device of '{cuda[0]}'; numba_tile launches of one op "
                        f"go to one device's current stream), got one on {dev}",
                        **_fn_site(self.fn))
            else:
                raise TileArgumentError(
                    f"torch op '{self.name}': argument '{pname}': expected a CUDA tensor (the "
                    f"kernels run on the GPU) or a CPU tensor (they run in numba_tile's "
                    f"interpreter), got one on device '{dev}'", **_fn_site(self.fn))
        if cuda is not None:
            stream = self.torch.cuda.current_stream(cuda[1]).cuda_stream
            return launch_defaults(stream=stream, interpret=False)
        if cpu:
            return launch_defaults(interpret=True)
        return contextlib.nullcontext()

    def _check_result(self, out):
        items = [("its return value", out)]
        if isinstance(out, (tuple, list)):
            items = [(f"item {i} of its return value", v) for i, v in enumerate(out)]
        for what, value in items:
            if isinstance(value, _HANDLES):
                raise TileArgumentError(
                    f"torch op '{self.name}': {self.__qualname__} returned a numba_tile launch "
                    f"handle as {what}; expected the output tensors (or None for an in-place "
                    f"op): PyTorch orders later work on the stream after the kernel, and the "
                    f"in-flight registry keeps the launch's arguments alive, so the handle "
                    f"need not be kept", **_fn_site(self.fn))


def _span(t):
    """``(device, lo, hi)``: the bytes a tensor's elements lie in (None when it has none);
    the device as :class:`~numba_tile.runtime.arrays.ArrayArg` names it (None: host memory)."""
    if t.numel() == 0:
        return None
    lo = hi = t.data_ptr()
    size = t.element_size()
    for extent, stride in zip(t.shape, t.stride()):
        step = (extent - 1) * stride * size
        if step < 0:
            lo += step
        else:
            hi += step
    dev = t.device
    return (None if dev.type == "cpu" else dev.index), lo, hi + size


class _Watch:
    """The check a torch op's body makes of each numba_tile launch in it, before the launch
    queues anything: a kernel's mutable argument (a partition, or an unchecked kernel's
    ``Mutable`` array) must not share memory with an op argument that ``mutates_args`` does
    not name. PyTorch's functionalization and ``torch.compile`` treat the other arguments as
    read-only: an undeclared write would be lost or seen by the wrong consumer, silently.

    The mutable argument may be any array a launch accepts (a tensor, or a NumPy, CuPy or
    DLPack view of an argument's memory). Byte ranges that meet are settled by the exact test
    of ``runtime/overlap.py``, so disjoint interleaved views of one buffer pass. The watch of
    an op whose body calls another op stays on inside the inner op's body (watches chain)."""

    __slots__ = ("body", "kept", "outer")

    def __init__(self, body, kept, outer):
        self.body = body
        self.kept = [(n, t, _span(t)) for n, t in kept]
        self.outer = outer

    def __call__(self, kernel, args, kwargs):
        if self.kept:
            self._check(kernel, args, kwargs)
        if self.outer is not None:
            self.outer(kernel, args, kwargs)

    def _check(self, kernel, args, kwargs):
        from .runtime.arrays import as_array_arg
        from .runtime.overlap import shares_memory
        from .runtime.partition import Partition
        Tensor = self.body.torch.Tensor
        params = getattr(kernel, "params", ())
        mutable = {p.name for p in params if getattr(p, "role", None) == "mutable"}
        named = [(params[i].name if i < len(params) else None, v) for i, v in enumerate(args)]
        named += list(kwargs.items())
        for pname, value in named:
            if type(value) is Partition:
                value = value.array
            elif pname not in mutable:         # an unchecked kernel's Mutable array
                continue
            mine = None
            if isinstance(value, Tensor):
                span = _span(value)
            else:
                try:
                    mine = as_array_arg(value, pname or "argument")
                except Exception:  # noqa: BLE001 - not an array: the launch refuses it
                    continue
                span = None if mine.size == 0 else (mine.device, *mine.byte_bounds)
            if span is None:
                continue
            for arg, tensor, theirs in self.kept:
                # byte ranges only: one address is one memory whatever device a producer
                # names (runtime/overlap.py)
                if theirs is None or not (theirs[1] < span[2] and span[1] < theirs[2]):
                    continue
                try:
                    if mine is None:
                        mine = as_array_arg(value, pname or "argument")
                    hit = shares_memory(mine, as_array_arg(tensor, arg))
                except Exception:  # noqa: BLE001 - undecidable: the ranges meet
                    hit = True
                if hit:
                    self._refuse(kernel, arg)

    def _refuse(self, kernel, arg):
        from .runtime.call_site import user_call_site
        site = user_call_site() or (None, None)
        raise TileArgumentError(
            f"torch op '{self.body.name}': kernel '{getattr(kernel, '__qualname__', kernel)}' "
            f"writes the memory of the op's argument '{arg}' (a partition or Mutable array of "
            f"it, or of a view of it), but mutates_args does not name '{arg}': PyTorch treats "
            f"it as read-only (torch.compile and functionalization would lose or misorder the "
            f"write); add '{arg.split('[')[0]}' to mutates_args, or write into a new output",
            filename=site[0], lineno=site[1])


def torch_op(name: str, *, mutates_args: "Iterable[str] | str" = (), fake: Callable | None = None,
             device_types: "str | Sequence[str] | None" = None):
    """Registers a host function that launches numba_tile kernels as a PyTorch custom op.

    The decorated function takes tensors (and the scalars ``torch.library.custom_op`` allows:
    int, float, bool, str, lists of them, ``torch.dtype``, ``torch.device``), allocates its
    outputs, launches kernels on them and returns them. It must carry type annotations
    (``x: torch.Tensor``, ``-> torch.Tensor``), from which PyTorch infers the op's schema.
    While it runs, launches that give no ``stream=`` (or ``interpret=``) use:

    * with a CUDA tensor among the arguments: ``torch.cuda.current_stream(device)`` of that
      tensor's device, on the GPU (so ``with torch.cuda.stream(s):`` sends the op's kernels to
      ``s``, and ``torch.cuda.graph`` records them);
    * with CPU tensors only: numba_tile's interpreter (``interpret=True``), on the tensors'
      memory;
    * with no tensor argument: the defaults of the caller.

    Args:
        name (str): the op's name, ``"namespace::op_name"`` (e.g. ``"mylib::add"``); it becomes
            ``torch.ops.namespace.op_name``.
        mutates_args (tuple of str, or ``"unknown"``): the parameters the op writes in place
            (each a tensor parameter the body hands to a kernel's ``nt.Partition``); default:
            none. It must be accurate: PyTorch's functionalization copies only these back.
            A launch in the body whose partition lies in the memory of a tensor argument not
            named here is refused (``TileArgumentError``) before it queues anything.
        fake (callable or None): the fake (meta) implementation, called with the op's
            arguments as fake tensors while ``torch.compile`` or ``torch.export`` traces; it
            returns empty tensors (``torch.empty_like``, ``x.new_empty(shape)``) with the
            outputs' shapes, dtypes and devices, and launches nothing. Required unless the op
            returns None.
        device_types (str, sequence of str, or None): the device types the body serves
            (``"cuda"``, ``"cpu"``); None (default) serves every device.

    Returns:
        A decorator; it returns the ``torch.library.CustomOpDef``, callable like the function
        (it dispatches to ``torch.ops.namespace.op_name``) and accepting PyTorch's further
        registrations (``register_autograd``, ``register_kernel``).

    Raises:
        TileArgumentError: at decoration: torch is missing or older than 2.4; ``name``,
            ``mutates_args``, ``fake`` or ``device_types`` is malformed; ``mutates_args`` names
            no parameter of the function; the function's annotations give no schema; ``fake``
            is None though the op returns something, or cannot take the op's arguments. When
            the op runs: tensors on two CUDA devices, or on a device that is neither CUDA nor
            the CPU; a launch in the body writes (through a partition) the memory of a tensor
            argument that ``mutates_args`` does not name; the body returned a launch handle
            instead of its output tensors.
        Errors of the body's launches (``TileArgumentError``, ``OwnershipError``, ...) pass
        through unchanged; PyTorch's own refusals (an output that aliases an input, a name
        already registered) are PyTorch's errors.

    Examples:
        >>> import torch, numba_tile as nt
        >>> @nt.jit
        ... def add_kernel(x, y, z: nt.Partition["B"], B: nt.Constant):
        ...     nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))
        >>> @nt.torch_op("mylib::add", fake=lambda x, y: torch.empty_like(x))
        ... def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ...     z = torch.empty_like(x)
        ...     add_kernel(x, y, nt.partition(z, 1024), B=1024)
        ...     return z
        >>> z = torch.compile(lambda a, b: add(a, b) * 2, fullgraph=True)(x, y)  # doctest: +SKIP
    """
    torch = _require_torch(name)
    name = _check_name(name)
    mutates = _check_mutates(name, mutates_args)
    device_types = _check_device_types(name, device_types)
    if fake is not None and not callable(fake):
        raise TileArgumentError(
            f"torch op '{name}': fake: expected a function of the op's arguments or None, got "
            f"{shown(fake, with_type=True, qualified=False)}", **_call_site())

    def decorate(fn):
        if not callable(fn) or isinstance(fn, type):
            raise TileArgumentError(
                f"torch op '{name}': expected the op's host function to decorate, got "
                f"{shown(fn, with_type=True, qualified=False)}", **_call_site())
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise TileArgumentError(
                f"torch op '{name}': expected a Python function with annotated parameters, got "
                f"{shown(fn, with_type=True, qualified=False)} ({exc})", **_call_site()) from None
        if not isinstance(mutates, str):
            for m in mutates:
                if m not in sig.parameters:
                    raise TileArgumentError(
                        f"torch op '{name}': mutates_args: expected names of parameters of "
                        f"{fn.__qualname__}{sig}, got {m!r}", **_fn_site(fn))
        schema = _infer_schema(torch, name, fn, mutates)
        written = _written_args(torch, schema) if isinstance(mutates, str) else mutates
        returns_none = schema.rsplit("->", 1)[1].strip() == "()"
        _check_fake(name, fn, sig, fake, returns_none)
        try:
            op = torch.library.custom_op(name, _Body(torch, name, fn, sig, written),
                                         mutates_args=written, device_types=device_types,
                                         schema=schema)
        except (ValueError, NotImplementedError) as exc:    # e.g. keyword-only tensors
            raise TileArgumentError(
                f"torch op '{name}': torch.library.custom_op refused {fn.__qualname__}{sig} "
                f"(schema {schema}): {exc}", **_fn_site(fn)) from None
        # an op that returns None (in place) traces to nothing
        op.register_fake(fake if fake is not None else _no_outputs)
        return op

    return decorate


def _no_outputs(*args, **kwargs):
    return None

