"""Autotuning over kernel configurations, safe for kernels that write their arguments in place.

``@numba_tile.autotune(configs=[...], key=[...])`` over a ``@numba_tile.jit`` kernel picks,
per tuning key, the fastest of several configurations (values of ``Constant`` parameters,
``num_warps``, ``num_stages``, and how each raw array given for a ``Partition`` parameter is
partitioned) and launches it.

What a call does, the first time for a key:

1. every configuration is compiled for the call's arguments: to PTX and, on the GPU, to a
   cubin (nvJitLink, when it is installed), which is then loaded, so that no trial assembles
   or loads anything (interpreter mode compiles to PTX only, as a launch there does). One that
   does not compile (a tile over the register or shared-memory budget, a shape the op
   refuses; on the GPU also PTX that ptxas refuses, more shared memory than the device gives
   a block) is pruned, with the reason in :attr:`Autotuned.trials`;
2. each surviving configuration runs ``warmup`` times and then ``reps`` timed times on
   **scratch copies** of the mutable (partition) arguments, never on the caller's arrays: an
   in-place kernel (``z = z + x``) is applied to the caller's data exactly once per call,
   unlike a tuner that re-runs it on the user's data (Triton's autotuner without
   ``restore_value``). Read-only arguments are shared (nothing writes them);
3. the fastest (median wall time of launch and stream synchronization; the interpreter's
   own wall time in interpreter mode) is remembered for the key, in memory and, when the disk
   cache is on (``NUMBA_TILE_CACHE_DIR``), on disk per kernel, key and device;
4. that configuration is launched on the caller's arguments.

Later calls with the same key launch the remembered configuration directly. Every launch,
trial or real, goes through the kernel's ordinary checks (ownership, overlap, read-only
arrays, in-flight ordering, lifetime).

The key: by default the dtype and shape of every array argument and the value of every
scalar argument; ``key=["M", "N"]`` restricts it to the named parameters (an array's dtype
and shape, a scalar's value).

What compiles in parallel (``compile_workers``): only the PTX-to-cubin step, so only on the
GPU. Numba's compiler holds a process-wide lock (numba-cuda's ``global_compiler_lock``, which
takes ``numba.core.compiler_lock``'s too; numba_tile's ``compile_kernel`` and
``check_kernel`` hold it) over typing, lowering and libNVVM:
two configurations cannot be typed, lowered or turned into PTX at once, whatever the threads.
nvJitLink (ptxas) is a C call that releases the GIL and takes no lock. So the calling thread
compiles the configurations to PTX one after the other, in their order, and
``compile_workers - 1`` threads assemble each PTX while the next configuration compiles.
Measured, first call of a tuner of 9 GEMM configurations (2048^3 float16; 64x64 to 256x128
tiles, 2 to 4 stages, one pruned) on the H200 machine (16 cores), medians of 3 in each of two
runs: 4.64 s and 4.12 s with ``compile_workers=1`` (about 1.1 s to 1.3 s of it
assembling), 3.48 s and 3.09 s with the default, 1.33x both times (the tuner before this
pipeline, which assembled at each configuration's first launch: 4.74 s and 4.17 s). On a
2-core CPU machine (Xeon, no GPU, about one core taken by other work) the same pipeline over
six GEMM configurations' PTX measured 0.95x to 1.1x (medians of 9 to 11 runs, 1.4 s to
1.7 s): no gain one can count on with one free core. Compiling to PTX in threads, the other
option, gains nothing anywhere: the threads wait on the lock (1.16 s against 1.05 s one after
the other, 2-core CPU).

What stays on the calling thread, in the configurations' order: the binding and checks of the
arguments, the compiles, loading the cubins (``cuModuleLoadData``, GPU only) and every trial,
so the trials, their order, the log's order and the reasons for pruning are those of
``compile_workers=1`` (everything on the calling thread, one after the other), and no trial
is timed while a cubin is being built. The worker threads touch no numba_tile state: a PTX
string in, the cubin's bytes out. One tuning runs at a time per tuner; a second thread
calling with the same key waits for the first one's choice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import cache
from .constant_identity import identity
from .errors import TileArgumentError, shown
from .runtime.launchable import Launchable
from .runtime.linker import LinkError, ptx_to_cubin
from .groups import is_group
from .runtime.partition import Partition, partition as make_partition


@dataclass(frozen=True)
class Config:
    """One configuration for :func:`autotune` to try: constant values and launch options.

    Args:
        constants (dict of str to int or other Constant value): the values of the kernel's
            ``Constant`` parameters this configuration sets (``{"BM": 128, "BN": 64}``); a
            call of the autotuned kernel leaves these parameters out.
        num_warps (int): warps per block, as :func:`numba_tile.jit`'s (default 4).
        num_stages (int): software-pipeline stages, as :func:`numba_tile.jit`'s (default 1).
        partitions (dict of str to dict): per ``Partition`` parameter that the call gives as a
            raw array, extra keyword arguments of :func:`numba_tile.partition`
            (``{"c": {"order": nt.grouped(8)}}`` or ``{"c": {"blocks": 132}}``); the tile shape
            is the parameter's declared shape with ``constants`` filled in.

    Attributes:
        constants: values of the kernel's ``Constant`` parameters (``{"BM": 128, ...}``).
        num_warps, num_stages: the ``jit`` options.
        partitions: per ``Partition`` parameter given a raw array, extra arguments of
            :func:`numba_tile.partition` (``{"c": {"order": nt.grouped(8)}}``); the tile
            shape comes from the parameter's declared shape with ``constants`` filled in.

    Examples:
        >>> import numba_tile as nt
        >>> configs = [nt.Config({"BM": 128, "BN": 128, "BK": 32}, num_warps=4, num_stages=4),
        ...            nt.Config({"BM": 64, "BN": 128, "BK": 64}, num_warps=4, num_stages=3,
        ...                      partitions={"c": {"order": nt.grouped(8)}})]
        >>> configs[0].describe()
        'BM=128, BN=128, BK=32, num_warps=4, num_stages=4'
    """

    constants: dict = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 1
    partitions: dict = field(default_factory=dict)

    def describe(self) -> str:
        """The configuration in one line, as the tuner's log and pruning reasons show it:
        ``"BM=128, BN=64, num_warps=4, num_stages=3"``."""
        parts = [f"{k}={v}" for k, v in self.constants.items()]
        parts += [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"]
        return ", ".join(parts)


@dataclass
class Trial:
    """What tuning learnt of one configuration: its time (ms, median) or why it was pruned."""

    config: Config
    ms: float | None = None
    error: str | None = None


@dataclass
class _Build:
    """One configuration compiled for a call: its kernel variant, the specialization and
    compiled kernel that the call's launch finds, the device, and the cubin (or the pending
    assembly, or why the configuration is pruned)."""

    config: Config
    kern: object = None
    owner: object = None        # the kernel of ``spec``: ``kern``, or its rewrite for groups
    spec: object = None
    ck: object = None
    device: int = 0
    cubin: bytes | None = None
    link: object = None         # a Future of ptx_to_cubin while a worker assembles
    error: str | None = None


def _clone(obj):
    """A fresh copy of an array argument of any supported producer."""
    if isinstance(obj, np.ndarray):
        return obj.copy()
    for method in ("clone", "copy"):          # PyTorch, CuPy
        fn = getattr(obj, method, None)
        if callable(fn):
            try:
                return fn()
            except TypeError:
                pass
    copy = getattr(obj, "copy_to_host", None)  # a Numba device array
    if callable(copy):
        from numba import cuda
        return cuda.to_device(copy())
    raise TileArgumentError(f"autotune: cannot make a scratch copy of a {type(obj).__name__} "
                            f"(it has no clone(), copy() or copy_to_host()): pass a CuPy, "
                            f"PyTorch, Numba or NumPy array for each mutable argument")


def _error(message: str, cls=TileArgumentError) -> TileArgumentError:
    """A refusal of ``cls`` at the user's line: the line that applied ``numba_tile.autotune``
    (configuration errors) or that called the tuned kernel (the call's errors)."""
    from .runtime.call_site import user_call_site
    site = user_call_site() or (None, None)
    return cls(message, filename=site[0], lineno=site[1])


class ConfigurationError(TileArgumentError):
    """A configuration's own values are unusable for this call (a tile extent that is no power
    of two, say): the configuration is pruned, with this reason in the trials."""


def _config_errors():
    from .errors import GridMismatchError, PartitionShapeError, TileTypingError
    return (TileTypingError, PartitionShapeError, GridMismatchError, ConfigurationError)


#: errors that depend on the configuration (it is pruned); any other refusal is the call's
_CONFIG_ERRORS = _config_errors()


def _scratch(obj, name: str):
    """A scratch copy of argument ``name``, proven to share no byte with it (a producer whose
    ``copy()`` returned a view would let the trials write the caller's data)."""
    from .runtime.arrays import as_array_arg
    from .runtime.overlap import shares_memory
    try:
        twin = _clone(obj)
    except TileArgumentError as exc:
        raise _error(f"argument {name!r}: {exc.message}") from None
    if shares_memory(as_array_arg(twin, name), as_array_arg(obj, name)):
        raise _error(f"autotune: argument {name!r}: the copy of a "
                                f"{type(obj).__name__} shares memory with the original, so the "
                                f"trials would write the caller's data: pass an array whose "
                                f"copy() / clone() copies")
    return twin


def _reason(exc) -> str:
    """Why a configuration is pruned, for :attr:`Trial.error`."""
    return f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"


def _default_workers(n_configs: int) -> int:
    return max(1, min(n_configs, os.cpu_count() or 1))


def _key_part(value):
    """One argument's part of a tuning key: an array's dtype and shape; a group each member's;
    a number, string or None by identity (``constant_identity.py``: 0.0 and -0.0, 2 and 2.0
    are other keys, as they are other specializations); a tuple or list item by item (a tuple
    constant); anything else by its type's name."""
    if is_group(value):             # a group: each member's part
        return ("group", tuple(_key_part(m) for m in value))
    if isinstance(value, Partition):
        value = value.array
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return ("array", str(dtype), tuple(int(s) for s in shape))
    if type(value) in (bool, int, float, complex, str, bytes) or value is None:
        return ("value", identity(value))
    if type(value) in (tuple, list):
        return (type(value).__name__, tuple(_key_part(v) for v in value))
    return ("type", type(value).__name__)


#: an autotuned kernel's definition, set once when it is made (its tunings depend on it)
_FIXED = frozenset({"kernel", "configs", "key", "warmup", "reps", "log", "compile_workers"})


class Autotuned(Launchable):
    """A kernel with an autotuner in front, made by :func:`autotune`. Call it like the kernel,
    giving raw arrays (or partitions) for its partition parameters and leaving out the
    parameters a configuration sets; the launch options (``stream=``, ``interpret=``,
    ``unchecked=``, ``on_conflict=``, ``grid=``) are the kernel's. It returns the launch
    handle of the chosen configuration's launch.

    Its kernel, configurations, key and tuning options are fixed when it is made (its tunings,
    in memory and on disk, depend on them): assigning one raises AttributeError; apply
    :func:`autotune` again for others.

    Attributes:
        kernel: the decorated :class:`~numba_tile.Kernel`.
        configs: the configurations, a tuple of :class:`Config`.
        key: the parameter names of the tuning key, or None (every argument the call gives).
        trials: ``{tuning key: [Trial, ...]}`` of every tuning done in this process: each
            ``Trial`` has its ``config``, its median time ``ms`` (None when pruned) and the
            ``error`` that pruned it (None otherwise). A choice read from the disk cache runs no
            trials, so that key has no entry.
    """

    def __setattr__(self, name, value):
        if name in _FIXED and name in self.__dict__:
            raise self._fixed(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in _FIXED:
            raise self._fixed(name)
        object.__delattr__(self, name)

    # copies and pickles: as its kernel's, by reference (numba_tile/references.py)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        from . import references
        return references.reduce(self, "autotuned kernel", self.kernel._fn.__module__,
                                 self.__qualname__, Autotuned)

    def __getitem__(self, config):
        """``tuned[blocks, threads](...)`` (numba-cuda's launch syntax) is refused, as for a
        kernel: the grid comes from the partitions."""
        from .kernel import _arg_error, launch_syntax_message
        raise _arg_error(launch_syntax_message(f"autotune '{self.__qualname__}'",
                                               self.__qualname__, self.kernel.params))

    #: not iterable (``__getitem__`` alone would make ``iter(tuned)`` succeed)
    __iter__ = None

    def _fixed(self, name):
        from .errors import FixedAttributeError
        from .options import at_user_line
        return at_user_line(
            FixedAttributeError,
            f"autotune '{self.__dict__.get('__qualname__', '?')}': '{name}' is fixed when the "
            f"autotuned kernel is made (its tunings depend on it) and cannot be changed; "
            f"apply numba_tile.autotune(...) to the kernel again for another")

    def __init__(self, kernel, configs, key=None, warmup: int = 2, reps: int = 10,
                 log: bool = False, compile_workers: int | None = None):
        from .kernel import Kernel
        if not isinstance(kernel, Kernel):
            raise _error(f"numba_tile.autotune: expected a @numba_tile.jit kernel, got "
                         f"{type(kernel).__name__}")
        try:
            configs = list(configs)
        except TypeError:
            configs = None
        if not configs or not all(isinstance(c, Config) for c in configs):
            raise _error("numba_tile.autotune: configs: expected a non-empty list of "
                         "numba_tile.Config")
        names = {p.name for p in kernel.params}
        constants = {p.name for p in kernel.params if p.role == "constant"}
        partitions = {p.name for p in kernel.params if p.role == "partition"}
        from .options import check_options as _check_options
        for c in configs:
            for what in ("constants", "partitions"):
                value = getattr(c, what)
                if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                    raise _error(f"numba_tile.autotune: a configuration's {what}: expected a "
                                 f"dict of parameter names, got {shown(value, with_type=True)}")
            unknown = sorted(set(c.constants) - names)
            if unknown:
                raise _error(f"numba_tile.autotune: configuration {c.describe()} names no "
                             f"parameter of kernel '{kernel.__qualname__}': {unknown}")
            others = sorted(set(c.constants) - constants)
            if others:
                raise _error(
                    f"numba_tile.autotune: configuration {c.describe()} sets {others} of kernel "
                    f"'{kernel.__qualname__}', which are not Constant parameters: a "
                    f"configuration sets only compile-time constants")
            bad = sorted(set(c.partitions) - partitions)
            if bad:
                raise _error(
                    f"numba_tile.autotune: configuration {c.describe()}: partitions names "
                    f"{bad}, not Partition parameters of kernel '{kernel.__qualname__}'")
            for pname, opts in c.partitions.items():
                if not isinstance(opts, dict) or set(opts) - {"blocks", "order"}:
                    raise _error(
                        f"numba_tile.autotune: configuration {c.describe()}: partitions[{pname!r}]"
                        f": expected a dict of 'blocks' and/or 'order', got {opts!r}")
            try:
                _check_options(c.num_warps, False, False, None, c.num_stages)
            except TileArgumentError as exc:
                raise _error(f"numba_tile.autotune: configuration {c.describe()}: "
                             f"{exc.message}") from None
        if key is not None:
            if isinstance(key, str) or not isinstance(key, (list, tuple)) \
                    or not all(isinstance(k, str) for k in key):
                raise _error(f"numba_tile.autotune: key: expected a list of parameter names "
                             f"of kernel '{kernel.__qualname__}', got "
                             f"{shown(key, with_type=True)}")
            unknown = sorted(set(key) - names)
            if unknown:
                raise _error(f"numba_tile.autotune: key names no parameter of "
                             f"kernel '{kernel.__qualname__}': {unknown}")
        for what, v in (("warmup", warmup), ("reps", reps)):
            if type(v) is not int or v < (0 if what == "warmup" else 1):
                raise _error(f"numba_tile.autotune: {what}: expected an int "
                             f"{'>= 0' if what == 'warmup' else '>= 1'}, got {v!r}")
        if compile_workers is None:
            compile_workers = _default_workers(len(configs))
        elif type(compile_workers) is not int or compile_workers < 1:
            raise _error(f"numba_tile.autotune: compile_workers: expected an int "
                         f">= 1 or None, got {compile_workers!r}")
        self.__qualname__ = kernel.__qualname__
        self.kernel, self.configs = kernel, tuple(configs)
        self.key = tuple(key) if key is not None else None
        self.warmup, self.reps, self.log = warmup, reps, log
        #: threads that compile at once, the calling thread included (module docstring)
        self.compile_workers = compile_workers
        self._variants: dict = {}
        self._best: dict = {}
        self._tuning = threading.Lock()     # one tuning at a time (see _choose)
        #: ``{key: [Trial, ...]}`` of every tuning done in this process
        self.trials: dict = {}
        self.__doc__ = kernel.__doc__

    # ------------------------------------------------------------------ configurations

    def _variant(self, c: Config):
        k = self._variants.get((c.num_warps, c.num_stages))
        if k is None:
            # setdefault: a thread that raced this one gets the same variant (and so the same
            # compiled specializations)
            k = self._variants.setdefault(
                (c.num_warps, c.num_stages),
                self.kernel.with_options(num_warps=c.num_warps, num_stages=c.num_stages))
        return k

    def _bind(self, c: Config, args, kwargs, scratch: bool):
        """Positional arguments of the kernel for configuration ``c``: the call's arguments,
        the configuration's constants, raw partition arrays partitioned (scratch copies of
        them, and of given partitions' arrays, when ``scratch``). A group (a tuple or list
        given for a parameter, ``numba_tile/groups.py``) is handled member by member and
        stays a tuple: the kernel's launch rewrites it."""
        params = self.kernel.params
        if len(args) > len(params):
            raise _error(f"kernel '{self.__qualname__}': {len(args)} positional "
                         f"arguments for {len(params)} parameters")
        given = dict(zip((p.name for p in params), args))
        for k, v in kwargs.items():
            if k in given:
                raise _error(f"kernel '{self.__qualname__}': argument {k!r} given twice")
            given[k] = v
        out = []
        for p in params:
            if p.name in c.constants:
                if p.name in given:
                    raise _error(
                        f"kernel '{self.__qualname__}': argument {p.name!r} is set by the "
                        f"autotuner's configurations; leave it out of the call")
                out.append(c.constants[p.name])
                continue
            if p.name not in given:
                import inspect
                if p.default is inspect.Parameter.empty:
                    raise _error(f"kernel '{self.__qualname__}': missing argument {p.name!r}")
                out.append(p.default)
                continue
            v = given.pop(p.name)
            if p.role in ("mutable", "partition") and is_group(v):
                v = tuple(self._bind_array(c, p, m, f"{p.name}[{i}]", scratch)
                          for i, m in enumerate(v))
            else:
                v = self._bind_array(c, p, v, p.name, scratch)
            out.append(v)
        if given:
            raise _error(f"kernel '{self.__qualname__}': unexpected arguments {sorted(given)}")
        return out

    def _bind_array(self, c: Config, p, v, name: str, scratch: bool):
        """The argument ``v`` of parameter ``p`` (``name``: the parameter, or a member of its
        group) for configuration ``c``: partitioned with the configuration's tile shape if
        ``p`` is a Partition given a raw array; a scratch copy where ``scratch`` and ``p`` is
        written."""
        if p.role == "mutable" and scratch:      # an unchecked kernel's Mutable array
            return _scratch(v, name)
        if p.role != "partition":
            return v
        opts = dict(c.partitions.get(p.name, {}))
        if isinstance(v, Partition):
            arr = _scratch(v.array, name) if scratch else v.array
            opts.setdefault("blocks", v.blocks)
            opts.setdefault("order", v.order)
            return make_partition(arr, v.tile_shape, **opts)
        shape = tuple(c.constants.get(s, s) if isinstance(s, str) else s
                      for s in (p.declared or ()))
        if any(isinstance(s, str) for s in shape):
            raise _error(
                f"kernel '{self.__qualname__}': partition {p.name!r} is declared "
                f"{p.declared} and configuration {c.describe()} sets no value for "
                f"{[s for s in shape if isinstance(s, str)]}")
        target = _scratch(v, name) if scratch else v
        try:
            return make_partition(target, shape, **opts)
        except TileArgumentError as exc:     # the configuration's tile shape
            raise _error(
                f"kernel '{self.__qualname__}': configuration {c.describe()} "
                f"partitions '{name}' (declared {p.declared}) with tile shape "
                f"{shape}: {exc.message}", ConfigurationError) from None

    def tuning_key(self, args, kwargs) -> tuple:
        params = self.kernel.params
        given = dict(zip((p.name for p in params), args))
        given.update(kwargs)
        names = self.key if self.key is not None else [p.name for p in params
                                                      if p.name in given]
        return tuple((n, _key_part(given.get(n))) for n in names)

    # ------------------------------------------------------------------------- tuning

    def _time(self, kern, argv, launch_kw, interpret) -> float:
        for _ in range(self.warmup):
            kern(*argv, interpret=interpret, **launch_kw).sync()
        times = []
        for _ in range(self.reps):
            t0 = time.perf_counter()
            kern(*argv, interpret=interpret, **launch_kw).sync()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    def _precheck(self, launch_kw):
        """The call's own checks that no compile makes: an unchecked kernel launched without
        ``unchecked=True``. (The arguments' checks, aliasing, a read-only producer, a kernel
        that writes a read-only parameter, run when :meth:`_build` binds and compiles each
        configuration, before any trial.)"""
        if self.kernel.unchecked and launch_kw.get("unchecked") is not True:
            from .errors import UncheckedLaunchError
            raise _error(f"kernel '{self.__qualname__}' is marked unchecked: launch it with "
                         f"unchecked=True", UncheckedLaunchError)

    def _build(self, args, kwargs, interpret) -> list:
        """Every configuration compiled for the call's arguments (module docstring, "What
        compiles in parallel"), one :class:`_Build` per configuration, in their order.

        The calling thread binds the arguments and compiles each configuration to PTX (Numba's
        compiler lock would serialize threads there anyway) and, on the GPU, hands the PTX to
        a worker thread for nvJitLink while it compiles the next one; it then collects the
        cubins in the configurations' order and loads them. A configuration error
        (``_CONFIG_ERRORS``, a ``LinkError``, too much shared memory for the device) prunes
        that configuration; any other error is the call's and is raised, the first in the
        order "configuration i compiles, then assembles" (as with ``compile_workers=1``).
        """
        assemble = self._assembler(interpret)
        workers = min(self.compile_workers - 1, len(self.configs))
        pool = (ThreadPoolExecutor(workers, thread_name_prefix="numba_tile-autotune")
                if assemble is not None and workers > 0 else None)
        builds = []
        try:
            for c in self.configs:
                b = _Build(c)
                builds.append(b)
                try:
                    b.kern = self._variant(c)
                    argv = self._bind(c, args, kwargs, scratch=False)
                    b.owner, b.spec, b.ck, b.device, cc = _specialize(b.kern, argv, interpret)
                except _CONFIG_ERRORS as exc:
                    b.error = _reason(exc)
                    continue
                except Exception:
                    _collect(builds[:-1])      # an earlier configuration's error comes first
                    raise
                if pool is not None:
                    b.link = pool.submit(assemble, b.ck.ptx, cc)
                elif assemble is not None:
                    try:
                        b.cubin = assemble(b.ck.ptx, cc)
                    except LinkError as exc:
                        b.error = _reason(exc)
            _collect(builds)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        if not interpret:
            from .runtime import driver
            for b in builds:
                if b.error is None:
                    with driver.device_context(b.device):   # the thread's context given back
                        b.error = _install(b)
        return builds

    def _assembler(self, interpret):
        """What each configuration's PTX goes through before its trials: on the GPU
        :func:`~numba_tile.runtime.linker.ptx_to_cubin` (the cubin the launch loads; None
        without nvJitLink), in interpreter mode nothing (None), as ``Kernel.__call__``: the
        interpreter runs no cubin."""
        return None if interpret else ptx_to_cubin

    def _tune(self, key, args, kwargs, launch_kw, interpret):
        self._precheck(launch_kw)
        trials = []
        for b in self._build(args, kwargs, interpret):
            c, t = b.config, Trial(b.config, error=b.error)
            if t.error is None:
                # the scratch copies made on the launch device (a producer's copy() allocates
                # on the current one), the thread's context given back after the trials
                scope = contextlib.nullcontext() if interpret or b.device is None \
                    else _device_scope(b.device)
                try:
                    with scope:
                        argv = self._bind(c, args, kwargs, scratch=True)
                        t.ms = self._time(b.kern, argv, launch_kw, interpret)
                except _CONFIG_ERRORS as exc:
                    t.error = _reason(exc)
            trials.append(t)
            if self.log:
                print(f"numba_tile.autotune {self.__qualname__}: {c.describe()}: "
                      f"{f'{t.ms:.4f} ms' if t.ms is not None else t.error}")
        self.trials[key] = trials
        ok = [t for t in trials if t.ms is not None]
        if not ok:
            reasons = "; ".join(f"{t.config.describe()}: {t.error}" for t in trials)
            raise _error(f"kernel '{self.__qualname__}': no configuration of the "
                                    f"autotuner compiles for these arguments ({reasons})")
        return min(ok, key=lambda t: t.ms).config

    # ------------------------------------------------------------------------- disk

    def _disk_path(self, key, device) -> str | None:
        d = cache.cache_dir()
        if d is None:
            return None
        code = self.kernel.fn.__code__
        text = repr((self.kernel.__module__, self.__qualname__, code.co_code, code.co_consts,
                     code.co_names, self.kernel.unchecked, self.kernel.min_blocks_per_sm,
                     [repr(c) for c in self.configs], key, device))
        digest = hashlib.sha256(text.encode()).hexdigest()
        return os.path.join(d, f"autotune-{digest}.json")

    def _load(self, key, device):
        path = self._disk_path(key, device)
        if path is None:
            return None
        try:
            i = json.loads(cache.read_regular(path))["config"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None
        # an exact int in range (not a bool, a float or a string that int() would take);
        # anything else tunes again
        return self.configs[i] if type(i) is int and 0 <= i < len(self.configs) else None

    def _store(self, key, device, c: Config):
        path = self._disk_path(key, device)
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = path + f".{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump({"config": self.configs.index(c)}, f)
            os.replace(tmp, path)
        except OSError:
            pass

    # ------------------------------------------------------------------------- calls

    def best_config(self, *args, **kwargs):
        """The configuration a call with these arguments would launch (tuning first if needed)."""
        return self._choose(args, kwargs, {}, None)

    def explain(self, *args, config=None, cc=(9, 0), device=None, flops=None, **kwargs):
        """:meth:`Kernel.explain <numba_tile.Kernel.explain>` of one configuration (``config``:
        a :class:`Config` of this kernel's or its index) for these arguments, or, with
        ``config=None``, of each: a list of ``(Config, Explanation)`` in the configurations'
        order. Nothing is tuned or launched."""
        chosen = self.configs if config is None else [self._config_named(config)]
        out = [(c, self._variant(c).explain(*self._bind(c, args, kwargs, scratch=False),
                                            cc=cc, device=device, flops=flops))
               for c in chosen]
        return out if config is None else out[0][1]

    def ptx(self, *args, config=0, cc=(9, 0), **kwargs) -> str:
        """:meth:`Kernel.ptx <numba_tile.Kernel.ptx>` of one configuration (a :class:`Config`
        of this kernel's or its index; the first by default) for these arguments."""
        c = self._config_named(config)
        return self._variant(c).ptx(*self._bind(c, args, kwargs, scratch=False), cc=cc)

    def _config_named(self, config):
        if isinstance(config, int) and not isinstance(config, bool) \
                and 0 <= config < len(self.configs):
            return self.configs[config]
        if any(config is c for c in self.configs):
            return config
        raise _error(f"autotune '{self.__qualname__}': config: expected one of its "
                     f"{len(self.configs)} configurations or an index from 0 to "
                     f"{len(self.configs) - 1}, got {config!r}")

    def _choose(self, args, kwargs, launch_kw, interpret):
        from .runtime.defaults import current
        # as Kernel.__call__ decides: the call's switch, else the kernel's option or the
        # thread's launch_defaults (nt.launch_defaults, a torch_op on CPU tensors)
        interp = (self.kernel.interpret or current().interpret is True) if interpret is None \
            else interpret
        device = "interpreter" if interp else _device_name()
        if "+" in device:
            # GPUs of several kinds: the tuning is the launch device's kind's
            device = self._launch_device_name(args, kwargs)
        key = self.tuning_key(args, kwargs)
        best = self._best.get((key, device))
        if best is None:
            # one tuning at a time: a second thread with the same key waits for the first's
            # result instead of tuning again (and two tunings never time each other's launches)
            with self._tuning:
                best = self._best.get((key, device))
                if best is None:
                    best = self._load(key, device)
                    if best is None:
                        if not interp:
                            _refuse_under_capture(self.__qualname__, launch_kw.get("stream"))
                        best = self._tune(key, args, kwargs, launch_kw, interp)
                        self._store(key, device, best)
                    self._best[(key, device)] = best
        return best

    def _launch_device_name(self, args, kwargs) -> str:
        """The compute capability of the device a call would launch on (its arguments bound
        and checked as the launch binds them), for a process with GPUs of several kinds."""
        from .runtime import driver
        from .runtime.devices import launch_device
        from .runtime.launch_checks import BoundArray
        c = self.configs[0]
        _kern, bound = _bound(self._variant(c), self._bind(c, args, kwargs, scratch=False),
                              False)
        cc = driver.compute_capability(
            launch_device([b for b in bound if b.__class__ is BoundArray]) or 0)
        return f"cc{cc[0]}.{cc[1]}"

    def __call__(self, *args, stream=None, interpret=None, unchecked=False, on_conflict="wait",
                 grid=None, **kwargs):
        launch_kw = {"stream": stream, "unchecked": unchecked, "on_conflict": on_conflict,
                     "grid": grid}
        best = self._choose(args, kwargs, launch_kw, interpret)
        argv = self._bind(best, args, kwargs, scratch=False)
        return self._variant(best)(*argv, interpret=interpret, **launch_kw)


def _refuse_under_capture(name, stream):
    """Tuning runs timed trials and synchronizes: never on a stream being captured into a CUDA
    graph (that would invalidate the capture). Raises CaptureError first."""
    from .errors import CaptureError
    from .runtime import capture, driver
    from .runtime.defaults import current
    from .runtime.streams import stream_handle
    if not driver.gpu_available():
        return
    handle = stream_handle(current().stream if stream is None else stream)
    if capture.status(handle) != driver.CAPTURE_NONE:
        raise CaptureError(
            f"autotune '{name}': the first call for a tuning key times its configurations and "
            f"synchronizes, which a stream capture forbids; call it once with the same argument "
            f"shapes before capturing (later calls launch the chosen configuration, which can "
            f"be captured)")


def _specialize(kern, argv, interpret):
    """Bind ``kern(*argv)`` as a launch would (the same checks) and compile it for its target:
    ``(kernel, specialization, CompiledKernel, device, cc)``, the kernel being ``kern`` or its
    rewrite for the call's groups. The specialization and the compiled kernel are the ones the
    launch then finds in that kernel's caches (``Kernel.__call__``, ``Kernel._launch``)."""
    from .kernel import INTERPRETER_CC
    from .runtime.devices import launch_device
    from .runtime.launch_checks import BoundArray
    kern, bound = _bound(kern, argv, bool(interpret))
    spec = kern._signature(bound)
    device = launch_device([b for b in bound if b.__class__ is BoundArray]) or 0
    if interpret:
        cc = INTERPRETER_CC
    else:
        from .runtime import driver
        cc = driver.compute_capability(device)
    ck = kern.compile(spec.key, spec.argtypes, spec.grid_param, cc)
    return kern, spec, ck, device, cc


def _bound(kern, argv, allow_host):
    """``kern(*argv)``'s arguments bound and checked as its launch binds them: ``(kernel,
    bound)``, the kernel being the one rewritten for the call's groups (``Kernel._grouped``,
    made once per group lengths: the same one the launch then runs) where it has any."""
    from .runtime.launch_checks import bind_arrays
    values = kern._bind(argv, {})
    groups = kern._group_lengths(values)
    if groups:
        flat = kern._flatten(groups, values)
        kern = kern._grouped(groups, values)
        values = kern._bind(flat, {})
    bound = bind_arrays(kern.__qualname__, kern._specs(values), values,
                        allow_host=allow_host, call_site=None)
    return kern, bound


def _collect(builds) -> None:
    """Wait for the workers' cubins, in the configurations' order: a ``LinkError`` prunes its
    configuration, any other error is raised (the first in order)."""
    for b in builds:
        link, b.link = b.link, None
        if link is not None:
            try:
                b.cubin = link.result()
            except LinkError as exc:
                b.error = _reason(exc)


def _install(b: _Build) -> str | None:
    """Load a configuration's cubin on its device, as ``Kernel._launch`` does on a
    specialization's first launch (the same steps and the same ``loaded`` entry), so that the
    trials launch it without assembling or loading. On the calling thread only (driver calls,
    GPU only). Returns why the configuration is pruned (more shared memory than the device
    gives a block), or None."""
    from .kernel import _STATIC_SHARED, load_function
    from .runtime import driver
    spec, ck, device = b.spec, b.ck, b.device
    if device in spec.loaded:
        return None
    if ck.shared_bytes > _STATIC_SHARED:
        have = driver.max_shared_per_block_optin(device)
        if ck.shared_bytes > have:
            return (f"TileArgumentError: kernel '{b.kern.__qualname__}' needs "
                    f"{ck.shared_bytes} bytes of shared memory per block; device {device} "
                    f"allows {have}")       # what the launch would raise
    module = driver.load_module(b.cubin if b.cubin is not None else ck.ptx, device)
    func = load_function(module, ck)
    spec.cluster = ck.cluster
    spec.loaded.setdefault(device, (module, func, b.owner._param_buffer(ck), ck.num_threads,
                                    ck.shared_bytes))
    return None


def _device_scope(device: int):
    """``device``'s context current for a block, the thread's given back after it; PyTorch's
    current device too where PyTorch is loaded (its ``clone()`` allocates on the tensor's
    device, CuPy's ``copy()`` on the current one)."""
    from .runtime import driver
    scopes = contextlib.ExitStack()
    scopes.enter_context(driver.device_context(device))
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            scopes.enter_context(torch.cuda.device(device))
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with contextlib.suppress(Exception):
            scopes.enter_context(cupy.cuda.Device(device))
    return scopes


def _device_name() -> str:
    """The kind of GPU a tuning is valid for: the compute capability of the process's
    devices, each named where they differ (a tuning on one kind of GPU is not reused on
    another; on a machine of one kind, every device shares it)."""
    from .runtime import driver
    try:
        if driver.gpu_available():
            n = driver.device_count() or 1
            ccs = sorted({driver.compute_capability(d) for d in range(n)})
            return "+".join(f"cc{a}.{b}" for a, b in ccs)
    except Exception:  # noqa: BLE001 - a name for a cache key only
        pass
    return "unknown"


def autotune(configs, key=None, *, warmup: int = 2, reps: int = 10, log: bool = False,
             compile_workers: int | None = None):
    """Decorate a ``@numba_tile.jit`` kernel with an autotuner: per tuning key, the fastest of
    several configurations (:class:`Config`: ``Constant`` values, ``num_warps``,
    ``num_stages``, how raw arrays are partitioned) is found once and then launched.

    The first call for a key compiles every configuration for the call's arguments (one that
    does not compile, or on the GPU needs more registers or shared memory than the device
    gives, is pruned, with its reason in :attr:`Autotuned.trials`), runs each ``warmup`` times
    and then ``reps`` timed times on scratch copies of the mutable arguments (never on the
    caller's arrays, so an in-place kernel changes the caller's data exactly once per call),
    remembers the fastest (median) in memory and, when the disk cache is on
    (``NUMBA_TILE_CACHE_DIR``), on disk, and launches it on the caller's arguments. Later calls
    with the same key launch the remembered configuration directly. Every launch, trial or
    real, goes through the kernel's ordinary checks. In interpreter mode the trials run in the
    interpreter and time it. The first call for a key synchronizes, so it cannot run while a
    stream is being captured into a CUDA graph: call it once before capturing.

    Call the result like the kernel, leaving out the parameters the configurations set and
    giving a raw array (or a partition) for each ``Partition`` parameter.

    Args:
        configs: the :class:`Config` objects to try.
        key: parameter names whose arguments form the tuning key (arrays: dtype and shape;
            scalars: value); None: every argument the call gives.
        warmup, reps: untimed and timed launches per configuration (median of the timed).
        log: print each trial's time or why it was pruned.
        compile_workers: threads that compile the configurations at once, the calling thread
            included (an int >= 1; None: ``min(len(configs), os.cpu_count())``). The calling
            thread compiles to PTX, one configuration after the other (Numba's compiler lock),
            and on the GPU the other ``compile_workers - 1`` assemble the PTX into cubins
            meanwhile; 1: everything on the calling thread. The results do not depend on it
            (module docstring, "What compiles in parallel").

    Returns:
        A decorator; it returns an :class:`Autotuned` kernel.

    Raises:
        TileArgumentError: not a kernel, an empty or malformed ``configs``, a configuration or
            key naming no parameter, a ``compile_workers`` that is not an int >= 1 or None.
            When called: the call's own refusals (as a launch), and a call whose every
            configuration is pruned (the message lists each one's reason).
        CaptureError: the first call for a key made while its stream is being captured.

    Examples:
        >>> import numba_tile as nt
        >>> @nt.autotune(configs=[nt.Config({"B": 256}), nt.Config({"B": 1024}, num_warps=8)])
        ... @nt.jit
        ... def scale(x, z: nt.Partition["B"], B: nt.Constant):
        ...     nt.store(z, 2.0 * nt.load_like(x, z))
        >>> scale(x, z)                    # z a raw array: each configuration partitions it  # doctest: +SKIP
        >>> scale.best_config(x, z).describe()                                                 # doctest: +SKIP
        'B=1024, num_warps=8, num_stages=1'
    """
    def deco(kernel):
        return Autotuned(kernel, configs, key, warmup, reps, log, compile_workers)
    return deco


__all__ = ["Autotuned", "Config", "Trial", "autotune"]
