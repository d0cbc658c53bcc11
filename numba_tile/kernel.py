"""``@numba_tile.jit``: kernel objects, specialization, compilation cache and launch.

A kernel is a Python function whose parameters are annotated to declare their roles
(:mod:`numba_tile.signature` reads them):

* ``x`` (no annotation) or ``x: numba_tile.Tensor``: a read-only array (or a runtime
  scalar when given a Python number);
* ``z: numba_tile.Partition`` or ``z: numba_tile.Partition["BLOCK"]``: a mutable array,
  which must be given a host-side :func:`numba_tile.partition`; the subscript declares
  the tile shape from constants or integers (``Partition[("BM", "BN")]``,
  ``Partition[128]``), checked at launch;
* ``BLOCK: numba_tile.Constant``: a compile-time constant (tile sizes): each value
  compiles its own specialization.

Calling the kernel launches it: one block per tile of the first partition (the grid),
on ``stream`` (default: the legacy default stream, 0), asynchronously, and returns a
:class:`~numba_tile.runtime.inflight.LaunchHandle`. Launch-time ownership checks run
before anything is queued. With ``interpret=True`` (on the decorator or the call), or
``NUMBA_TILE_INTERPRET=1`` in the environment when the kernel is defined, the same
kernel runs block by block on the CPU with NumPy, after the same typing and ownership
pass.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
import threading

import numpy as np

from . import binding, cache, dtypes, frozen, references
from . import groups as groups_mod
from .compiler import check_kernel, compile_kernel
from .argtypes import scalar_type, vec16, zero_axes
from .constant_identity import identity as constant_identity
from .errors import TileArgumentError, shown
from .inspection import KernelInspection
from .options import FIXED as _FIXED
from .options import check_options as _check_options
from .options import fixed_error as _fixed_error
from .runtime import devices as devices_mod
from .runtime import driver, guards, inflight, launcher
from .runtime.launchable import Launchable
from .runtime.defaults import current as _current_defaults
from .runtime.devices import launch_owner
from .runtime.launch_checks import BoundArray, ParamSpec, bind_arrays, launch_grid
from .runtime.linker import ptx_to_cubin
from .runtime.params import ParamBuffer
from .runtime.partition import Partition  # noqa: F401 - re-exported
from .runtime.streams import stream_handle
from .signature import (  # noqa: F401 - re-exported
    Constant, Mutable, Tensor, _at_definition, check_kernel_function, parse_params)
from .typing.types import ConstantArgType, PartitionType, TensorType

INTERPRET_ENV = "NUMBA_TILE_INTERPRET"
_defaults = _current_defaults()
#: the target an interpreter launch compiles for, to refuse what a GPU launch would
#: (Hopper, the design's main target)
INTERPRETER_CC = (9, 0)
_MAX_GRID = 2**31 - 1
#: dynamic shared memory a block gets without the opt-in (bytes; CUDA C++ Programming Guide)
_STATIC_SHARED = 48 * 1024
_SCALARS = (bool, int, float, np.number, np.bool_)
_EXACT = frozenset((bool, int, float, str, complex, bytes))
_UNSET = object()
#: plans kept per kernel (argument kinds); the table is emptied when full
_MAX_PLANS = 256
_SCALAR_LIKE = (int, float, str, complex, bytes, np.generic)


# ----------------------------------------------------------------------------- launch handles

class CompletedLaunch:
    """Handle of a launch that queued no GPU work (zero-size grid, or interpreter mode)."""

    def __init__(self, arrays: tuple, stream=None, interpret: bool = False):
        self._arrays = arrays
        self._stream = stream
        self._interpret = interpret

    def done(self) -> bool:
        return True

    def sync(self) -> tuple:
        return self._arrays

    def then(self, kernel, *args, **kwargs):
        """Launch ``kernel`` after this launch, on its stream (see ``LaunchHandle.then``)."""
        inflight.check_then(kernel, kwargs)
        if self._interpret:
            kwargs.setdefault("interpret", True)
            return kernel(*args, **kwargs)
        return kernel(*args, stream=self._stream, **kwargs)

    def __repr__(self):
        return "<CompletedLaunch>"


# ----------------------------------------------------------------------------- kernel

def load_function(module, ck, cluster=None):
    """``ck``'s function in the loaded ``module``, its launch attributes set: the dynamic
    shared memory above the static 48 KiB, and the cluster width of a kernel written for
    clusters (``ck.cluster``; ``cluster=1``: launched without)."""
    func = driver.get_function(module, ck.entry)
    if ck.shared_bytes > _STATIC_SHARED:
        driver.set_dynamic_shared(func, ck.shared_bytes)
    width = ck.cluster if cluster is None else cluster
    if width > 1:
        driver.set_cluster_width(func, width)
    return func


def launch_syntax_message(what: str, name: str, params) -> str:
    """The refusal of ``kernel[...]`` for kernel ``name`` with ``params``: the grid of a
    numba_tile launch comes from its partitions (or ``grid=``), never from an index."""
    head = (f"{what} is launched by calling it, not by indexing it with a launch "
            f"configuration (numba-cuda's kernel[blocks, threads](...))")
    if any(p.role == "partition" for p in params):
        return (f"{head}: call {name}(...) with its arguments; the grid is one block per tile "
                f"of its partitions (nt.partition(z, tile_shape), or blocks= for a fixed "
                f"number of blocks) and the threads are 32 * num_warps "
                f"(@nt.jit(num_warps=...))")
    return (f"{head}: it has no Partition parameter, so give the number of blocks as "
            f"{name}(..., grid=N); the threads are 32 * num_warps (@nt.jit(num_warps=...))")


def _list_members(value) -> str | None:
    """What a group argument ``value`` holds, when that is not arrays or partitions (numbers,
    nested lists): "a Python list of 16 float", else None."""
    if all(hasattr(m, "__cuda_array_interface__") or hasattr(m, "__array_interface__")
           or hasattr(m, "__dlpack__") or isinstance(m, (np.ndarray, Partition))
           for m in value):
        return None
    kinds = sorted({type(m).__name__ for m in value})
    return (f"a Python {type(value).__name__} of {len(value)} items"
            f"{' of type ' + ' and '.join(kinds) if kinds else ''}")


def _pass_an_array(name: str, role: str) -> str:
    """How to pass an array for parameter ``name`` of ``role`` instead of a list."""
    if role == "partition":
        return (f"pass a partition of an array: nt.partition(numpy.asarray({name}), "
                f"tile_shape) in interpreter mode, of cupy.asarray({name}) (or another device "
                f"array) on the GPU")
    return (f"pass an array: numpy.asarray({name}) in interpreter mode, cupy.asarray({name}) "
            f"(or another device array) on the GPU")


def _arg_error(message: str) -> TileArgumentError:
    """A TileArgumentError pointing at the user's launch line."""
    from .runtime.call_site import user_call_site
    site = user_call_site() or (None, None)
    return TileArgumentError(message, filename=site[0], lineno=site[1])


class _Specialization:
    """One specialization of a kernel: its key, Numba argument types, grid parameter, and
    per device the loaded function ``(module, CUfunction, ParamBuffer, threads)``."""

    __slots__ = ("key", "argtypes", "grid_param", "loaded", "cluster")

    def __init__(self, key, argtypes, grid_param):
        self.key, self.argtypes, self.grid_param = key, argtypes, grid_param
        self.loaded = {}
        #: blocks per cluster of the loaded kernel (CompiledKernel.cluster)
        self.cluster = 1


class Kernel(KernelInspection, Launchable):
    """A ``@numba_tile.jit`` kernel. Call it to launch.

    Its function, parameters and options are fixed when it is made: assigning or deleting
    one raises ``errors.FixedAttributeError``, an AttributeError (:meth:`with_options`
    makes a kernel with other options; ``numba_tile/options.py``).

    Attributes:
        fn: a new copy, on each read, of the function as decorated (what the kernel runs).
        num_warps: warps per block (threads = 32 * num_warps).
        min_blocks_per_sm: blocks the compiler must fit on one multiprocessor (None: no
            requirement).
        num_stages: software-pipeline stages of the loads that feed matrix products in loops.
        unchecked: the kernel is marked unchecked (every launch must say ``unchecked=True``).
        interpret: run in the interpreter by default.
        params: the parameters and their roles (a tuple of ``signature.Param``).
    """

    def __setattr__(self, name, value):
        if name in _FIXED and (name in self.__dict__ or name == "fn"):
            raise _fixed_error(self, name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in _FIXED:
            raise _fixed_error(self, name)
        object.__delattr__(self, name)

    def __init__(self, fn, *, num_warps: int = 4, interpret: bool = False,
                 unchecked: bool = False, min_blocks_per_sm: int | None = None,
                 num_stages: int = 1, _caller_locals: dict | None = None, _params=None,
                 _source=None):
        """Checks the function and the options, and reads the parameters' roles.

        Raises:
            TileArgumentError: ``fn`` is not a Python function (or is a generator, or already a
                kernel), an option is of the wrong type or out of range (:func:`jit` lists
                them), or a parameter or annotation cannot be a kernel's; pointing at the line
                that applied ``numba_tile.jit`` or at the kernel's definition.
        """
        if isinstance(fn, Kernel):
            raise _arg_error(f"numba_tile.jit: {fn.__qualname__!r} is already a numba_tile kernel; "
                             f"apply numba_tile.jit once (its options go in that one call)")
        check_kernel_function(fn)
        _check_options(num_warps, interpret, unchecked, min_blocks_per_sm, num_stages)
        # what every specialization snapshots and every group rewrite starts from: the
        # function as decorated (a later ``fn.__code__ = ...`` or ``fn.__defaults__ = ...``
        # on the user's function changes nothing this kernel runs)
        self._fn = frozen.function_copy(fn)
        self.num_stages = num_stages
        self.num_warps = num_warps
        self.min_blocks_per_sm = min_blocks_per_sm
        self.unchecked = unchecked
        # the environment switch is read when the kernel is defined (as Triton's
        # TRITON_INTERPRET), not on every launch
        self.interpret = interpret or os.environ.get(INTERPRET_ENV, "") not in ("", "0")
        self.params = tuple(parse_params(fn, _caller_locals) if _params is None else _params)
        # the source the kernel's group rewrites start from (groups.py), read now: a file
        # edited after the decoration changes nothing this kernel runs
        self._source = groups_mod.capture_source(fn) if _source is None else _source
        for p in self.params:
            if p.name in binding.LAUNCH_OPTION_NAMES:
                raise _at_definition(
                    fn, f"parameter '{p.name}' is named like a launch option of the kernel's "
                        f"call ({', '.join(n + '=' for n in binding.LAUNCH_OPTION_NAMES)}): "
                        f"k(..., {p.name}=v) would set the option, never the parameter; "
                        f"rename it")
        if not self.unchecked:
            for p in self.params:
                if p.role == "mutable":
                    raise TileArgumentError(
                        f"kernel '{fn.__qualname__}': parameter '{p.name}' is annotated Mutable, "
                        f"which only kernels marked @numba_tile.jit(unchecked=True) may declare; "
                        f"a safe kernel writes through partitions")
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._compiled: dict = {}      # specialization key -> CompiledKernel
        self._checked: set = set()     # specialization keys typed and ownership-checked
        self._snapshots: dict = {}     # specialization key -> frozen.Snapshot (what is checked,
                                       # compiled, interpreted and keyed on disk)
        self._programs: dict = {}      # specialization key -> its typed IR, as interpreted
        self._signatures: dict = {}    # cheap key -> (key, argtypes, grid_param)
        self._spec_cache: dict = {}    # constants and scalar flags -> launch-check specs
        self._plans: dict = {}         # plan key -> launcher.Plan (the fast path)
        self._last_plan = None         # the plan of the last fast launch (its guard goes first)
        self._roles = tuple(p.role for p in self.params)   # 'array' holds arrays or scalars
        self._kw_orders: dict = {}      # (positional count, *keyword names) -> binder
        self._groups: dict = {}         # tuple-argument lengths -> the rewritten kernel
        self._lock = threading.Lock()
        # constants and defaulted parameters bound by CPython on the repeated call (binding.py)
        # (a subclass of Kernel keeps its own class and __call__)
        cls = binding.call_class(Kernel, self.params, self.__qualname__, _defaults) \
            if type(self) is Kernel else None
        if cls is not None:
            self.__class__ = cls

    def __repr__(self):
        return f"<numba_tile kernel {self.__qualname__} num_warps={self.num_warps}>"

    def __getitem__(self, config):
        """``kernel[blocks, threads](...)``, numba-cuda's launch syntax, is refused with a
        TileArgumentError (a TypeError) saying how a numba_tile kernel is launched."""
        raise _arg_error(launch_syntax_message(f"kernel '{self.__qualname__}'",
                                               self.__qualname__, self.params))

    #: not iterable (``__getitem__`` alone would make ``iter(kernel)`` succeed)
    __iter__ = None

    @property
    def fn(self):
        """A new copy, on each read, of the function as decorated (what this kernel runs):
        changing it changes nothing the kernel runs, and ``numba_tile.jit(...)(kernel.fn)``
        decorates what it runs even after the decorated function changed."""
        return frozen.function_copy(self._fn)

    # -- copies and pickles: as a function's (numba_tile/references.py) ------------------

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return references.reduce(self, "kernel", self._fn.__module__, self.__qualname__,
                                 Kernel)

    def with_options(self, **options) -> "Kernel":
        """This kernel with other ``num_warps`` / ``num_stages`` / ``min_blocks_per_sm`` (the
        autotuner's variants; ``min_blocks_per_sm=None`` drops the bound, leaving it out keeps
        this kernel's): the same function and parameters, its own compiled specializations.

        Args:
            **options: ``num_warps``, ``num_stages``, ``min_blocks_per_sm`` (as :func:`jit`);
                an option left out keeps this kernel's.

        Raises:
            TileArgumentError: another option, or an option out of range (as :func:`jit`),
                naming the kernel, at the user's line.
        """
        from .options import check_variant_options
        check_variant_options(self.__qualname__, options)
        nw, ns = options.get("num_warps"), options.get("num_stages")   # None: this kernel's
        nw, ns = self.num_warps if nw is None else nw, self.num_stages if ns is None else ns
        mb = options.get("min_blocks_per_sm", self.min_blocks_per_sm)
        _check_options(nw, self.interpret, self.unchecked, mb, ns,
                       where=f"kernel '{self.__qualname__}': with_options()")
        k = object.__new__(type(self))
        k.__dict__.update(self.__dict__)
        for name, value in (("num_warps", nw), ("num_stages", ns), ("min_blocks_per_sm", mb)):
            object.__setattr__(k, name, value)     # the new kernel's, before anyone sees it
        k._compiled, k._checked, k._snapshots, k._programs = {}, set(), {}, {}
        k._signatures, k._spec_cache, k._plans, k._kw_orders = {}, {}, {}, {}
        k._groups = {}
        k._last_plan = None
        k._lock = threading.Lock()
        return k

    # -- argument binding -----------------------------------------------------------------

    def _bind(self, args, kwargs):
        """The launch's values, one per parameter; numbers and strings of subclass types are
        made exact (``frozen.exact_scalar``): Numba types a Constant or scalar by its value,
        so the interpreter must not let a subclass's ``__bool__`` decide a branch the check
        pruned."""
        out = self._bind_values(args, kwargs)
        for i, v in enumerate(out):
            if v.__class__ not in _EXACT and isinstance(v, _SCALAR_LIKE):
                out[i] = frozen.exact_scalar(v)
        return out

    def _bind_values(self, args, kwargs):
        if not kwargs and len(args) == len(self.params):
            return list(args)
        names = [p.name for p in self.params]
        if len(args) > len(names):
            raise _arg_error(f"kernel '{self.__qualname__}' takes {len(names)} arguments "
                                    f"({', '.join(names)}), got {len(args)}")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise _arg_error(f"kernel '{self.__qualname__}' has no parameter '{k}'")
            if k in values:
                raise _arg_error(f"kernel '{self.__qualname__}': argument '{k}' given twice")
            values[k] = v
        out = []
        for p in self.params:
            if p.name in values:
                out.append(values[p.name])
            elif p.default is not inspect.Parameter.empty:
                out.append(p.default)
            else:
                raise _arg_error(f"kernel '{self.__qualname__}': missing argument '{p.name}'")
        return out

    def _specs(self, values) -> list:
        """Launch-check specs of the parameters (cached by constant values and scalar-ness)."""
        # a constant by identity (constant_identity.py): 128.0 and True equal 128 and 1, but
        # only ints size tiles
        ckey = tuple(constant_identity(v) if p.role == "constant" else isinstance(v, _SCALARS)
                     for p, v in zip(self.params, values))
        try:
            hit = self._spec_cache.get(ckey)
        except TypeError:          # an unhashable constant: reported by _signature
            hit, ckey = None, None
        if hit is None:
            hit = self._make_specs(values)
            if ckey is not None:
                self._spec_cache[ckey] = hit
        return hit

    def _make_specs(self, values) -> list:
        consts = {p.name: v for p, v in zip(self.params, values) if p.role == "constant"}
        specs = []
        for p, v in zip(self.params, values):
            if p.role == "partition":
                shape = None
                if p.declared is not None:
                    shape = []
                    for s in p.declared:
                        if isinstance(s, str):
                            if s not in consts:
                                raise _arg_error(
                                    f"kernel '{self.__qualname__}': Partition[...] of '{p.name}' "
                                    f"names '{s}', which is not a Constant parameter")
                            s = self._tile_extent(p, s, consts[s])
                        shape.append(s)
                    shape = tuple(shape)
                specs.append(ParamSpec(p.name, "partition", shape))
            elif p.role == "constant":
                specs.append(ParamSpec(p.name, "constant"))
            elif p.role == "mutable":
                specs.append(ParamSpec(p.name, "mutable"))
            elif isinstance(v, _SCALARS):
                specs.append(ParamSpec(p.name, "scalar"))
            else:
                specs.append(ParamSpec(p.name, "tensor"))
        return specs

    def _tile_extent(self, p, name, value) -> int:
        """The value of Constant ``name``, which sizes a tile of partition ``p``: a positive
        power of two, an exact int (NumPy integers are converted; bools, floats and anything
        else are refused, whatever they equal)."""
        extent = None
        if not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer)):
            extent = int(value)
        if extent is None or extent <= 0 or extent & (extent - 1):
            declared = p.declared if len(p.declared) > 1 else p.declared[0]
            raise _arg_error(
                f"kernel '{self.__qualname__}': the Constant '{name}' sizes a tile of partition "
                f"'{p.name}' (Partition[{declared!r}]), so it must be a positive power-of-two "
                f"int, got {shown(value, with_type=True, qualified=False)}")
        return extent

    def _signature(self, bound):
        """Specialization key and Numba argument types of a bound launch (cached per key)."""
        key = []
        for p, b in zip(self.params, bound):
            if b.__class__ is BoundArray:
                a = b.array
                key.append((b.mutable, a.dtype, len(a.shape), b.tile_shape, vec16(a),
                            zero_axes(a), b.blocks is not None, b.order))
            elif p.role == "constant":
                try:
                    hash(b)
                except TypeError:
                    raise _arg_error(f"kernel '{self.__qualname__}': constant '{p.name}' must be "
                                     f"hashable, got "
                                            f"{type(b).__name__}") from None
                key.append(constant_identity(b))
            else:
                key.append(scalar_type(b, p.name, self.__qualname__))
        key = tuple(key)
        hit = self._signatures.get(key)
        if hit is None:
            argtypes, grid_param = self._argtypes(bound)
            groups_mod.check_parameter_space(self.__qualname__, self._fn,
                                             [p.name for p in self.params], argtypes)
            hit = self._signatures[key] = _Specialization(key, argtypes, grid_param)
        return hit

    def _argtypes(self, bound):
        argtypes, grid_param = [], None
        for i, (p, b) in enumerate(zip(self.params, bound)):
            if isinstance(b, BoundArray):
                a = b.array
                dt = dtypes.from_any(a.dtype)
                if b.spec.kind == "partition":
                    if grid_param is None:
                        grid_param = i
                    argtypes.append(PartitionType(dt, a.ndim, b.tile_shape, vec16(a), p.name,
                                                  mapped=b.blocks is not None, order=b.order,
                                                  zero_axes=zero_axes(a)))
                else:
                    argtypes.append(TensorType(dt, a.ndim, vec16(a), p.name,
                                               writable=b.spec.kind == "mutable",
                                               zero_axes=zero_axes(a)))
            elif p.role == "constant":
                argtypes.append(ConstantArgType(b))
            else:
                argtypes.append(scalar_type(b, p.name, self.__qualname__))
        if grid_param is None and not self.unchecked:
            raise _arg_error(
                f"kernel '{self.__qualname__}' has no Partition parameter: a safe kernel writes "
                f"only through partitions, and the first one defines the launch grid")
        return tuple(argtypes), grid_param

    # -- compilation ---------------------------------------------------------------------

    def snapshot(self, key) -> frozen.Snapshot:
        """The kernel's function frozen for a specialization, taken when the specialization is
        first checked or compiled (:mod:`numba_tile.frozen`): the same snapshot is typed and
        ownership-checked, compiled, run by the interpreter and digested for the disk cache, so
        a global or closure variable changed later changes nothing already checked (a new
        kernel, or a new specialization, sees the new value)."""
        snap = self._snapshots.get(key)
        if snap is None:
            snap = self._snapshots.setdefault(key, frozen.snapshot(self._fn))
        return snap

    def compile(self, key, argtypes, grid_param, cc=(9, 0), on_typed=None):
        """The compiled kernel of a specialization: from memory, else from the disk cache
        (:mod:`numba_tile.cache`), else compiled now. A disk entry supplies only the PTX:
        the snapshot is typed and ownership-checked before it is used. ``on_typed`` gets the
        interpreter's program whenever this call types the snapshot (``compiler.TypedIRPass``)."""
        import os
        from .compiler import mma_impl
        impl = mma_impl()           # NUMBA_TILE_MMA, read once per lookup
        # the experiment switch of typing/pipeline.pending_products, keyed like the rest
        from .typing.pipeline import cluster_enabled, tma_enabled, ws_enabled
        from .typing.placement import register_a_enabled
        pend = (os.environ.get("NUMBA_TILE_WGMMA_PENDING", "").strip(), tma_enabled(),
                ws_enabled(), cluster_enabled(), register_a_enabled())
        ck = self._compiled.get((key, cc, impl, pend))
        if ck is None:
            with self._lock:
                ck = self._compiled.get((key, cc, impl, pend))
                if ck is None:
                    snap = self.snapshot(key)
                    options = {"num_warps": self.num_warps, "unchecked": self.unchecked,
                               "mma": impl, "wgmma_pending": pend[0], "tma": pend[1],
                               "ws": pend[2], "cluster": pend[3], "register_a": pend[4],
                               "min_blocks_per_sm": self.min_blocks_per_sm,
                               "num_stages": self.num_stages,
                               "params": tuple((p.name, p.role, p.declared) for p in self.params)}
                    digest = cache.entry_key(snap, key, options, cc)
                    ck = cache.load(digest) if digest else None
                    if ck is None:
                        try:
                            ck = compile_kernel(snap.fn, argtypes, num_warps=self.num_warps,
                                                min_blocks_per_sm=self.min_blocks_per_sm,
                                                num_stages=self.num_stages, mma=impl,
                                                grid_param=grid_param, cc=cc,
                                                unchecked=self.unchecked, on_typed=on_typed)
                        except Exception:
                            self._snapshots.pop(key, None)   # a retry sees the values then
                            self._programs.pop(key, None)
                            raise
                        self._checked.add(key)
                        if digest:
                            cache.store(digest, ck)
                    else:
                        self.check(key, argtypes, grid_param, on_typed)   # never the cache's
                    self._compiled[(key, cc, impl, pend)] = ck
        return ck

    def check(self, key, argtypes, grid_param, on_typed=None):
        """Type the specialization's snapshot and run the ownership pass, once per key (a
        refused snapshot is dropped: fixing a global and launching again checks the fix)."""
        if key not in self._checked:
            try:
                check_kernel(self.snapshot(key).fn, argtypes, num_warps=self.num_warps,
                             grid_param=grid_param, unchecked=self.unchecked,
                             on_typed=on_typed)
            except Exception:
                self._snapshots.pop(key, None)       # a retry sees the values then
                self._programs.pop(key, None)
                raise
            self._checked.add(key)

    def program(self, key, argtypes, grid_param):
        """What the interpreter runs: the snapshot's typed IR as the compile (run first: the
        interpreter refuses what a GPU launch would) typed and checked it; typed again only
        where it was compiled before without keeping it (``interpreter/typed_ir.py``)."""
        def keep(program):
            self._programs[key] = program

        self.compile(key, argtypes, grid_param, INTERPRETER_CC, on_typed=keep)
        with self._lock:
            if key not in self._programs:
                check_kernel(self.snapshot(key).fn, argtypes, num_warps=self.num_warps,
                             grid_param=grid_param, unchecked=self.unchecked, on_typed=keep,
                             cc=INTERPRETER_CC)
            return self._programs[key]

    # -- launch --------------------------------------------------------------------------

    def __call__(self, /, *args, stream=None, interpret=None, on_conflict="wait", grid=None,
                 unchecked=False, **kwargs):
        """Launch the kernel.

        Args:
            *args: one argument per kernel parameter: device arrays (CuPy, Numba,
                PyTorch, any ``__cuda_array_interface__`` or DLPack producer) for tensors,
                :func:`numba_tile.partition` objects for partitions, Python values for
                constants and scalars. NumPy arrays only in interpreter mode.
            **kwargs: the same, by parameter name (``B=1024``).
            stream: CuPy/Numba/PyTorch stream, raw ``CUstream`` handle, or None for the
                legacy default stream.
            interpret: run in the interpreter; default: the kernel's ``interpret`` option,
                which ``NUMBA_TILE_INTERPRET=1`` at the kernel's definition turns on.
            on_conflict: what to do when an argument's memory is in use by a launch still in
                flight on another stream (it writes what this launch uses, or uses what this
                launch writes): ``"wait"`` (default) makes ``stream`` wait for that launch's
                event; ``"raise"`` refuses the launch with StreamConflictError.
            grid: blocks to launch (an int, or a tuple of up to three: ``bid(d)`` and
                ``num_blocks(d)`` along each, as Triton's grid), for an unchecked kernel
                without a Partition parameter; otherwise the first partition defines the grid.
            unchecked: the call site's acknowledgement that it launches an unchecked kernel;
                required for kernels marked ``unchecked``, without effect on safe kernels.

        Returns:
            A launch handle: ``sync()`` waits and returns the arguments' arrays; dropping it
            releases nothing before the GPU is done.

        Raises:
            TileArgumentError, HostArrayError: unusable arguments.
            OwnershipError: a launch-time ownership rule is broken (nothing is queued);
                StreamConflictError with ``on_conflict="raise"``; UncheckedLaunchError for an
                unchecked kernel launched without ``unchecked=True``.
            TileTypingError: the kernel does not type for these arguments.
        """
        if _defaults.watch is not None:
            _defaults.watch(self, args, kwargs)       # inside a torch_op body (torch_library)
        # interpret=False asks for the GPU as the default does (examples pass it through)
        if (grid is None and (interpret is False or (
                interpret is None and not self.interpret and _defaults.interpret is not True))
                and (unchecked is True or (unchecked is False and not self.unchecked))
                and (on_conflict == "wait" or on_conflict == "raise")):
            plan = self._last_plan
            if plan is not None:
                # the last plan's runner first (runtime/guards.py): no key to build and hash
                if stream is None:
                    stream = _defaults.stream
                handle = 0 if stream is None else self._handle(stream)
                if handle is not None:
                    h = plan.run(args if not kwargs and len(args) == len(self._roles)
                                 else self._fast_values(args, kwargs) or (), handle, on_conflict)
                    if h is not None:
                        return h
            fast = self._fast(args, kwargs, stream, on_conflict)
            if fast is not None:
                return fast
        return self._call(args, kwargs, stream, interpret, on_conflict, grid, unchecked)

    @staticmethod
    def _handle(stream):
        try:
            return stream_handle(stream)
        except TileArgumentError:
            return None            # the slow path words the refusal

    def _fast(self, args, kwargs, stream, on_conflict):
        """A launch through a plan (``runtime/launcher.py``), or None: take the slow path."""
        if kwargs or len(args) != len(self._roles):
            args = self._fast_values(args, kwargs)
            if args is None:
                return None
        got = launcher.plan_key(self._roles, args)
        if got is None:
            return None
        try:
            plan = self._plans.get(got[0])
        except TypeError:          # an unhashable constant: the slow path says so
            return None
        if plan is None or (on_conflict != "wait" and on_conflict != "raise"):
            return None
        self.__dict__["_last_plan"] = plan      # not a fixed attribute: skip __setattr__'s test
        if stream is None:
            stream = _defaults.stream
        if stream is None:
            handle = 0
        else:
            try:
                handle = stream_handle(stream)
            except TileArgumentError:
                return None
        _key, ptrs, scalars, arrays, streams, objs = got
        if not plan.admits(ptrs):
            return None
        with driver.device_context(plan.device):
            return launcher.enqueue_plan(self, plan, handle, ptrs, scalars, arrays, streams,
                                         tuple(objs), on_conflict)

    def _fast_values(self, args, kwargs):
        """The call's values in parameter order (a tuple) when the call names every parameter
        once (positionally, then by keyword, defaults filled in), else None: the slow path binds
        (and words the refusal). Each positional count and keyword sequence gets a generated
        binder, made once."""
        kwkey = (len(args), *kwargs)
        binder = self._kw_orders.get(kwkey)
        if binder is None:
            binder = binding.make_binder(self.params, self.__qualname__, len(args), kwkey[1:])
            if len(self._kw_orders) < 64:
                self._kw_orders[kwkey] = binder
        if binder is False:
            return None
        return binder(args, kwargs)

    def _conflict_raiser(self, arrays, names):
        def raise_conflict(found, stream):
            self._raise_conflict_named(
                {id(a): n for a, n in zip(arrays, names)}, found, stream)
        return raise_conflict

    def _call(self, args, kwargs, stream, interpret, on_conflict, grid, unchecked):
        """The launch with every check run the full way (the first launch of an argument kind,
        the interpreter, explicit grids, anything the fast path does not cover)."""
        grid_arg = grid
        if interpret is None:
            interpret = self.interpret or _defaults.interpret is True
        elif interpret is not True and interpret is not False:
            raise _arg_error(f"kernel '{self.__qualname__}': interpret: expected True, False or "
                             f"None (the kernel's default), got {shown(interpret, with_type=True, qualified=False)}")
        if unchecked is not True and unchecked is not False:
            raise _arg_error(f"kernel '{self.__qualname__}': unchecked: expected True or False, "
                             f"got {shown(unchecked, with_type=True, qualified=False)}; only the bool True acknowledges an "
                             f"unchecked kernel")
        if on_conflict not in ("wait", "raise"):
            raise _arg_error(f"kernel '{self.__qualname__}': on_conflict: expected 'wait' or "
                             f"'raise', got {on_conflict!r}")
        if stream is None:
            stream = _defaults.stream     # launch_defaults / a Graph capture / a torch op
        try:
            # checked on both paths (the interpreter ignores the stream, but a launch that says
            # stream='x' is wrong wherever it runs); None costs one test
            handle = stream_handle(stream)
        except TileArgumentError as exc:
            raise _arg_error(f"kernel '{self.__qualname__}': {exc.message}") from None
        if self.unchecked and unchecked is not True:
            from .errors import UncheckedLaunchError
            from .runtime.call_site import user_call_site
            site = user_call_site() or (None, None)
            raise UncheckedLaunchError(
                f"kernel '{self.__qualname__}' is marked unchecked (it may use atomics, scatter "
                f"and stores at any index, which numba_tile does not check): launch it with "
                f"unchecked=True", filename=site[0], lineno=site[1])
        values = self._bind(args, kwargs)
        groups = self._group_lengths(values)
        if groups:
            return self._grouped(groups, values)(
                *self._flatten(groups, values), stream=stream, interpret=interpret,
                on_conflict=on_conflict, grid=grid_arg, unchecked=unchecked)
        specs = self._specs(values)
        if interpret:
            handle = None
        bound = bind_arrays(self.__qualname__, specs, values, allow_host=bool(interpret),
                            call_site=None, stream=handle)
        spec = self._signature(bound)
        grid = launch_grid(bound)
        if grid is None:
            grid = self._explicit_grid(grid_arg)
        elif grid_arg is not None:
            raise _arg_error(f"kernel '{self.__qualname__}': grid= is for kernels without "
                             f"a Partition parameter; here the first partition defines it")
        if grid and math.prod(grid) > _MAX_GRID:
            raise _arg_error(f"kernel '{self.__qualname__}': {math.prod(grid)} tiles exceed the "
                             f"{_MAX_GRID} blocks of a launch; use larger tiles")
        if interpret:
            # the whole compile path, lowering and libNVVM included (cached like any compile):
            # the interpreter refuses exactly what a GPU launch would (a layout conversion
            # over the shared-memory budget is found only while lowering)
            program = self.program(spec.key, spec.argtypes, spec.grid_param)
            from .interpreter.runner import run_blocks
            run_blocks(program, self.params, bound, spec.argtypes, grid)
            return CompletedLaunch(tuple(b.array.obj if isinstance(b, BoundArray) else b
                                         for b in bound), interpret=True)
        plan_for = None
        if grid_arg is None:      # a plan launches on the partitions' grid only
            vals = self._fast_values(args, kwargs)
            plan_for = launcher.plan_key(self._roles, vals) if vals is not None else None
        return self._launch(spec, bound, grid, handle, on_conflict, plan_for)

    def _group_lengths(self, values) -> dict:
        """Parameter name -> length, for the arguments that are tuples of arrays."""
        return {p.name: len(v) for p, v in zip(self.params, values)
                if p.role != "constant" and groups_mod.is_group(v)}

    def _flatten(self, groups, values) -> list:
        return [m for p, v in zip(self.params, values)
                for m in (v if p.name in groups else (v,))]

    def _grouped(self, groups: dict, values) -> "Kernel":
        """The kernel rewritten for tuples of arrays of these lengths (``numba_tile/groups.py``),
        made once per lengths."""
        by_name = {p.name: v for p, v in zip(self.params, values) if p.name in groups}
        roles = {p.name: p.role for p in self.params}
        for name, v in by_name.items():
            if any(groups_mod.is_group(m) for m in v):
                held = type(next(m for m in v if groups_mod.is_group(m))).__name__
                raise _arg_error(
                    f"kernel '{self.__qualname__}': argument '{name}': a tuple or list of arrays "
                    f"or partitions (one level: a group), got a {type(v).__name__} holding a "
                    f"{held}; for one array, {_pass_an_array(name, roles[name])}")
        key = tuple(sorted(groups.items()))
        with self._lock:
            k = self._groups.get(key)
            if k is None:
                try:
                    fn = groups_mod.expand(self._fn, groups, self._source)
                except TileArgumentError as exc:
                    whole = getattr(exc, "group_used_whole", None)
                    held = _list_members(by_name[whole]) if whole in by_name else None
                    if held is None:
                        raise
                    raise _arg_error(
                        f"kernel '{self.__qualname__}': argument '{whole}': got {held}, and "
                        f"the kernel uses '{whole}' whole, as an array (line {exc.lineno}): "
                        f"{_pass_an_array(whole, roles[whole])}. A tuple or list is a group, "
                        f"used through its members {whole}[k] and len({whole})") from None
                k = self._groups[key] = Kernel(
                    fn, num_warps=self.num_warps, interpret=self.interpret,
                    unchecked=self.unchecked, min_blocks_per_sm=self.min_blocks_per_sm,
                    num_stages=self.num_stages, _source=self._source,
                    _params=groups_mod.member_params(self.params, groups))
        return k

    def _explicit_grid(self, grid):
        """``grid=`` of a kernel without partitions: blocks along up to three axes (``bid(d)``,
        CUDA's ``blockIdx``), as Triton's grid: the first axis below 2**31, the others at most
        65535 (the launch's own limits)."""
        if grid is None:
            raise _arg_error(f"kernel '{self.__qualname__}' has no Partition parameter: "
                             f"pass grid=<number of blocks> (or a tuple of up to three)")
        axes = grid if isinstance(grid, (tuple, list)) else (grid,)
        axes = tuple(int(g) if isinstance(g, np.integer) else g for g in axes)
        limits = (2**31 - 1, 65535, 65535)
        if not 1 <= len(axes) <= 3 or any(
                isinstance(g, bool) or not isinstance(g, int) or not 0 <= g <= limit
                for g, limit in zip(axes, limits)):
            raise _arg_error(f"kernel '{self.__qualname__}': grid: expected a number of blocks "
                             f"from 0 to 2**31 - 1, or a tuple of up to three (the second and "
                             f"third at most 65535), got {grid!r}")
        return axes

    def _launch(self, spec, bound, grid, stream, on_conflict="wait", plan_for=None):
        flat, positions, arrays, writes, objs, streams = [], [], [], [], [], []
        devices = set()
        for p, b in zip(self.params, bound):
            if b.__class__ is BoundArray:
                a = b.array
                arrays.append(a)
                streams.append(a.stream)
                if b.mutable:
                    writes.append(a)
                if a.size:
                    devices.add(a.device)
                objs.append(a.obj)
                positions.append(len(flat))
                flat.append(a.ptr)
                flat.extend(a.shape)
                flat.extend(a.element_strides)
            else:
                objs.append(b)
                if p.role != "constant":
                    positions.append(len(flat))
                    flat.append(b)
                else:
                    positions.append(None)
        objs = tuple(objs)
        nblocks = math.prod(grid) if grid else 0
        if nblocks == 0:
            return CompletedLaunch(objs, stream)  # case E3: nothing reaches the driver
        # the device of the mutable arrays (devices.launch_device); read-only arrays
        # may live on peers of it, checked by bind_arrays on every such call
        barrays = [b for b in bound if b.__class__ is BoundArray]
        owner = launch_owner(barrays) if barrays else None
        device = (owner.array.device if owner is not None else None) or 0
        # the arrays' device current for the launch, the thread's previous context restored
        # after it (as PyTorch's device guards do): a launch on device 1's arrays leaves a
        # thread whose current device is 0 on device 0
        key = None
        with driver.device_context(device):
            if stream not in (0, 1, 2):
                devices_mod.check_stream_device(self.__qualname__, stream, device,
                                                owner.spec.name if owner is not None else None)
            if len(devices) > 1:
                key = devices_mod.prepare_peer_launch(self.__qualname__, stream, device,
                                                      devices, arrays, streams)
            loaded = spec.loaded.get(device)
            if loaded is None:
                loaded = self._load(spec, device, stream)
            if nblocks % 2 and spec.cluster > 1:
                # a kernel written for clusters of two, on an odd grid: the same code in a
                # function loaded without clusters (lowering/ws.py: it runs its blocks alone)
                loaded = spec.loaded.get((device, 1)) or self._load(spec, device, stream, 1)
            if loaded[2].tensor_maps:
                flat = flat + self._tensor_maps(loaded[2].tensor_maps, bound)
            names = [b.spec.name for b in bound if b.__class__ is BoundArray]
            # an explicit grid launches its axes as CUDA's (bid(d) is blockIdx); a partition's
            # grid is one axis of tiles (its own bid arithmetic)
            dims = tuple(grid) + (1,) * (3 - len(grid)) if spec.grid_param is None else nblocks
            handle = launcher.enqueue(self, loaded, dims, stream, flat, list(arrays), writes,
                                      objs, streams, on_conflict, device,
                                      self._conflict_raiser(arrays, names), key)
            if plan_for is not None and len(devices) < 2:
                # no plan for a launch reading a peer's memory: a plan is keyed on layouts,
                # and the access the launch device has is a property of each allocation
                self._store_plan(plan_for, loaded, nblocks, bound, positions, flat, device,
                                 arrays, names)
        return handle

    def _load(self, spec, device, stream, cluster=None):
        """Compiles (or reads from the caches) and loads the specialization on ``device``; under
        a stream capture, with this thread's capture mode relaxed (module loads are not
        capture operations). A kernel written for clusters (``CompiledKernel.cluster``) is
        launched in them (``spec.loaded[device]``), except on odd grids: ``cluster=1`` loads
        its module once more, the function without clusters (``spec.loaded[(device, 1)]``)."""
        import contextlib
        from .runtime import capture
        cc = driver.compute_capability(device)
        ck = self.compile(spec.key, spec.argtypes, spec.grid_param, cc)
        cubin = ptx_to_cubin(ck.ptx, cc)
        if ck.shared_bytes > _STATIC_SHARED:
            have = driver.max_shared_per_block_optin(device)
            if ck.shared_bytes > have:
                raise _arg_error(
                    f"kernel '{self.__qualname__}' needs {ck.shared_bytes} bytes of shared "
                    f"memory per block; device {device} allows {have}: use smaller tiles or "
                    f"fewer pipeline stages (num_stages)")
        st = driver.stream_capture_status(stream)
        with capture.relaxed() if st else contextlib.nullcontext():
            module = driver.load_module(cubin if cubin is not None else ck.ptx, device)
            func = load_function(module, ck, cluster)
        loaded = (module, func, self._param_buffer(ck), ck.num_threads, ck.shared_bytes)
        spec.cluster = ck.cluster
        spec.loaded[device if cluster is None else (device, cluster)] = loaded
        return loaded

    def _param_buffer(self, ck):
        """The ParamBuffer of a compiled kernel, with its tensor maps' parameters by index."""
        pb = ParamBuffer(ck.param_kinds)
        names = [p.name for p in self.params]
        pb.tensor_maps = tuple((names.index(name), rows) for name, rows in ck.tensor_maps)
        return pb

    def _tensor_maps(self, tmaps, bound):
        """The launch's tensor map parameters (``runtime/tensormap.py``), after checking that
        each array can be described (a clear error before any GPU work otherwise)."""
        from .runtime import tensormap
        out = []
        for i, rows in tmaps:
            a = bound[i].array
            tensormap.check_encodable(self.__qualname__, self.params[i].name, a.shape,
                                      a.element_strides, a.dtype.itemsize, a.ptr)
            out.append(tensormap.encode(a.ptr, a.shape, a.element_strides, a.dtype.name, rows))
        return out

    def _store_plan(self, got, loaded, nblocks, bound, positions, flat, device, arrays, names):
        """Remember a checked launch for its plan key, if the fast readers read the same
        pointers and shapes as the checks did (else the kind always takes the slow path)."""
        key, ptrs, _scalars, objs, _streams, _o = got
        if len(ptrs) != len(arrays):
            return
        known = self._plans.get(key)
        if known is not None:
            # this kind has a plan (a call the fast path declined, e.g. a pointer range it left
            # to the checks): keep it, building a runner costs ~1.5 ms
            self._last_plan = known
            return
        for a, ptr, obj in zip(arrays, ptrs, objs):
            if a.obj is not obj or (a.ptr != ptr and a.size):   # an empty array's is unused
                return
        if not launcher.describes(key, bound):     # and the same layouts (read twice)
            return
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
            self._last_plan = None
        plan = launcher.make_plan(loaded, nblocks, self.params, bound, positions, flat, device)
        plan.names = tuple(names)
        plan.torch_arrays = tuple(i for i, a in enumerate(arrays)
                                  if launcher._READERS.get(type(a.obj)) is launcher._read_torch)
        plan.run = guards.runner_for(key, self._roles, plan, self)
        self._plans[key] = plan
        self._last_plan = plan

    def _raise_conflict_named(self, names, found, stream):
        from .errors import StreamConflictError
        from .runtime.call_site import user_call_site
        entry, arg = found[0]
        site = user_call_site() or (None, None)
        raise StreamConflictError(
            f"kernel '{self.__qualname__}': argument '{names.get(id(arg), '?')}' is in use by a "
            f"launch still in flight on stream {entry.stream:#x}, and this launch is on stream "
            f"{stream:#x}; synchronize, launch on the same stream, or use on_conflict='wait'",
            filename=site[0], lineno=site[1])



def jit(fn=None, *, num_warps: int = 4, interpret: bool = False, unchecked: bool = False,
        min_blocks_per_sm: int | None = None, num_stages: int = 1):
    """Decorate a tile kernel.

    Args:
        fn: the kernel function (parameters annotated as in :mod:`numba_tile.kernel`).
        num_warps: warps per block (a power of two, 1 to 32; default 4, as Triton).
        min_blocks_per_sm: ask the compiler to fit this many blocks on one multiprocessor
            (CUDA's ``__launch_bounds__`` second argument, PTX ``.minnctapersm``): it then
            caps the registers per thread at ``65536 / (min_blocks_per_sm * 32 *
            num_warps)`` (Hopper's 64K registers). A request, not a demand: where ptxas
            would have to spill registers to meet it, numba_tile assembles the kernel
            without it (``runtime/linker.py``). None (default): no request.
        num_stages: software-pipeline the loads that feed matrix products in ``for k in
            range(n)`` loops over this many stages of ``cp.async`` copies into shared memory
            (1 to 8, as Triton's ``num_stages``; default 1: no pipelining). Which loads
            qualify: ``typing/pipeline.py``. Each stage holds one tile per staged load, so
            shared memory grows with it (a compile error names the limit).
        interpret: run in the interpreter by default (CPU, NumPy).
        unchecked: mark the kernel unchecked: it may use atomics, scatter/gather, stores at
            any tile index and ``Mutable`` parameters, which numba_tile does not check; every
            launch must then say ``unchecked=True``. The launch-time argument checks
            (aliasing, self-overlap, read-only producers) still apply.

    Returns:
        Kernel.

    Raises:
        TileArgumentError: ``fn`` is not a Python function (a ``functools.partial``, a class, a
            built-in, a number...), is a generator or ``async`` function, has a ``*args``,
            ``**kwargs`` or keyword-only parameter or a malformed ``Partition[...]``; or an option
            has the wrong type (``num_warps`` and ``min_blocks_per_sm`` exact ints, not bools;
            ``interpret`` and ``unchecked`` exactly True or False) or is out of range. The error
            points at the line that applied ``numba_tile.jit`` (the kernel's definition).

    Examples:
        >>> import numba_tile as nt
        >>> @nt.jit
        ... def add(x, y, z: nt.Partition["BLOCK"], BLOCK: nt.Constant):
        ...     nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))
    """
    def deco(f, caller):
        # the decorating scope's locals: string annotations (``from __future__ import
        # annotations``) may name a module imported there
        return Kernel(f, num_warps=num_warps, interpret=interpret, unchecked=unchecked,
                      min_blocks_per_sm=min_blocks_per_sm, num_stages=num_stages,
                      _caller_locals=caller.f_locals)

    _check_options(num_warps, interpret, unchecked, min_blocks_per_sm, num_stages)
    if fn is None:
        return lambda f: deco(f, sys._getframe(1))
    return deco(fn, sys._getframe(1))
