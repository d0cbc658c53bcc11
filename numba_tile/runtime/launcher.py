"""The launch path after binding: queueing a launch (ordinary or captured), and launch plans, which
make a repeated call with the same kinds of arguments cost a fraction of the first.

**Queueing** (:func:`enqueue`, used by every launch). In order: the stream's capture status (one
``cuStreamIsCapturing``); outside capture, the in-flight registry's cross-stream ordering and the
producers' streams, the launch, and the registry entry that holds every argument until the GPU is
done; under capture (``capture.py``), the launch, and a hold on the graph being built.

**Plans.** The first launch of a kernel with a given *argument kind* runs every check the slow way
(``launch_checks.bind_arrays``: interfaces validated, ownership, self-overlap, read-only
producers, partition shapes and grid, aliasing; typing and compilation; module load). It then
stores a :class:`Plan` under the kind's key. A later call computes the key from what its
arguments' producers say (read through each producer's fastest path: CuPy's ``data.ptr`` and
``shape``, PyTorch's ``data_ptr()`` and ``stride()``, the CUDA Array Interface dict only for
Numba arrays) and, on a hit, runs only what can differ between two calls of one key. The key holds
every input of every check and of the specialization except the data pointers and runtime scalar
values:

* per array argument: whether it came in a partition (and the partition's tile shape, blocks and
  order), the producer type, shape, strides, dtype, device, read-only flag, and the pointer's
  residue modulo 16 (``-1`` for a null pointer): item-size alignment, and the 16-byte vector
  class of the specialization, are functions of it;
* per constant: its identity (``constant_identity.py``: exact type, a float's or complex's bits,
  so 0.0 and -0.0 find different plans); per runtime scalar: its exact type (``int``, ``float`` or
  ``bool``; anything else takes the slow path) and, for an int, whether it fits int32.

What a hit still checks per call: each array's byte range lies in the address space (its offsets
from the pointer are the plan's), and no mutable array's byte range intersects another argument's
(a hit whose ranges intersect takes the slow path, whose exact test decides). Everything the
launch uses comes from the plan (grid, tile shapes, parameter values other than pointers and
scalars), never from a second reading of the user's objects. Producers are recognised by exact
type (``type(x) is cupy.ndarray``), so a subclass or a class that imitates one takes the slow path.
"""

from __future__ import annotations

import struct
import sys

from numba_tile.runtime import capture, driver, inflight
from numba_tile.constant_identity import identity
from numba_tile.runtime.arrays import ArrayArg, _pointer_device
from numba_tile.runtime.params import PARAM_KINDS, ParamBuffer
from numba_tile.runtime.partition import Partition
from numba_tile.runtime.streams import producer_streams

__all__ = ["Plan", "plan_key", "make_plan", "enqueue", "enqueue_plan"]

_ADDRESS_END = 1 << 64
_INT32 = 1 << 31
ARRAY, PART = "A", "P"
#: constant types a plan key may hold (their hash and equality are Python's own)
_EXACT = frozenset((bool, int, float, str, bytes, complex, type(None)))
# by identity: a class whose metaclass lies in __hash__ and __eq__ is "in" a set of classes
_EXACT_IDS = frozenset(map(id, _EXACT))

# ----------------------------------------------------------------------------- readers
# Each returns (ptr, key fields..., producer stream) for one exact producer type, or None to send
# the call down the slow path. None of them validates: the slow path validated the layout the
# key stands for, and the fast path re-checks the pointer-dependent rules.

_cupy_version = None


def _cupy_stream():
    """CuPy's CUDA Array Interface ``stream`` entry (its current stream; 1 for the legacy one)."""
    global _cupy_version
    cupy = sys.modules["cupy"]
    if _cupy_version is None:
        try:
            _cupy_version = cupy._util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION
        except AttributeError:
            _cupy_version = 3
    if _cupy_version != 3:
        return None
    ptr = cupy.cuda.get_current_stream().ptr
    return ptr if ptr else 1


_CUPY_STREAM = object()      # "CuPy's current stream": asked once per call (plan_key), and
                             # again after a CUDA Array Interface read (Python code)


def _read_cupy(a):
    data = a.data
    return data.ptr, (a.shape, a.strides, a.dtype, data.device_id, False), _CUPY_STREAM


def _read_torch(t):
    if not t.is_cuda:
        return None
    return t.data_ptr(), (tuple(t.shape), t.stride(), t.dtype, t.get_device(), False), None


def _read_cai(a):
    # a CUDA Array Interface is built by Python code from attributes anyone can set: every field
    # must have the exact type the slow path's validation requires (an equal float, bool or
    # object with a lying __eq__ must not find the plan of the ints it equals), the pointer must
    # be an address and the stream None or a handle (0 is refused there)
    cai = a.__cuda_array_interface__
    if type(cai) is not dict or cai.get("mask") is not None:
        return None
    data = cai["data"]
    if type(data) is not tuple or len(data) != 2:
        return None
    ptr, ro = data
    if ptr is None:
        ptr = 0
    shape, strides, typestr, stream = cai["shape"], cai.get("strides"), cai["typestr"], \
        cai.get("stream")
    if (type(ptr) is not int or not 0 <= ptr < _ADDRESS_END or (ro is not False and ro is not True)
            or type(shape) is not tuple or type(typestr) is not str
            or (stream is not None and (type(stream) is not int
                                        or not 0 < stream < _ADDRESS_END))):
        return None
    for n in shape:
        if type(n) is not int:
            return None
    if strides is not None:
        if type(strides) is not tuple:
            return None
        for n in strides:
            if type(n) is not int:
                return None
    return (ptr, (shape, strides, typestr, _pointer_device(ptr), ro), stream)


def _read_numba(a):
    # numba-cuda's own __cuda_array_interface__ (devicearray.py), without building the dict:
    # the pointer of gpu_data (0 without one), shape and byte strides as the array holds them,
    # the stream entry (None for stream 0, else int(stream)); the device is the one of the
    # context that holds the memory (the slow path asks the driver for the pointer's: a plan
    # is stored only when describes() finds them equal, so a disagreement costs speed only)
    gpu_data = a.gpu_data
    try:
        ptr = gpu_data.device_ctypes_pointer.value
    except AttributeError:
        ptr = None
    if ptr is None:
        ptr = 0
    try:
        device = gpu_data.context.device.id
    except AttributeError:
        device = _pointer_device(ptr)
    stream = a.stream
    stream = int(stream) if stream != 0 else None
    shape, strides = a.shape, a.strides
    if (type(ptr) is not int or type(shape) is not tuple or type(strides) is not tuple
            or (stream is not None and not 0 < stream < _ADDRESS_END)):
        return None
    # plain attributes, which may hold anything: exact ints (a float, or an int subclass whose
    # __eq__ says yes, would find or poison another layout's plan), as _read_cai's
    for n in shape:
        if type(n) is not int:
            return None
    for n in strides:
        if type(n) is not int:
            return None
    if type(device) is not int:
        return None
    return ptr, (shape, strides, a.dtype, device, False), stream


_READERS: dict[type, object] = {}


def _reader(t: type):
    r = _READERS.get(t)
    if r is None:
        r = False
        mod = getattr(t, "__module__", None)
        if type(mod) is not str:     # a class may set any __module__: no reader
            mod = ""
        if mod.startswith("cupy"):
            cupy = sys.modules.get("cupy")
            if cupy is not None and t is cupy.ndarray:
                r = _read_cupy
        elif mod.startswith("torch"):
            torch = sys.modules.get("torch")
            if torch is not None and (t is torch.Tensor or t is torch.nn.Parameter):
                r = _read_torch
        elif mod == "numba_tile.runtime.fakes":
            from numba_tile.runtime.fakes import FakeDeviceArray
            if t is FakeDeviceArray:
                r = _read_cai
        elif mod.startswith("numba"):
            dev = sys.modules.get("numba.cuda.cudadrv.devicearray")
            if dev is not None and t is dev.DeviceNDArray:
                r = _read_numba
        _READERS[t] = r
    return r


def plan_key(roles: tuple, values) -> tuple | None:
    """The plan key of a call and its per-call values, or None when the call must take the slow
    path (an argument no reader knows, a scalar of another type, a partition missing a field).

    Returns:
        ``(key, ptrs, scalars, arrays, streams, objs)``: the key; the arrays' pointers and the
        runtime scalar values, each in parameter order; the arrays' objects; their producers'
        streams (None where none); what the launch handle's ``sync()`` returns.
    """
    key, ptrs, scalars, arrays, streams, objs = [], [], [], [], [], []
    cupy_stream = _CUPY_STREAM
    for role, v in zip(roles, values):
        # type(), never __class__ (a property may say anything), and classes by identity
        t = type(v)
        if role == "constant":
            if id(t) not in _EXACT_IDS:    # a subclass's hash and eq could find another's plan
                return None
            # a float or complex by its bits: 0.0 == -0.0, but 1 / C tells them apart
            key.append(identity(v))
            objs.append(v)
            continue
        if role == "array" and (t is int or t is float or t is bool):   # a runtime scalar
            if t is int:
                if -_INT32 <= v < _INT32:
                    key.append("i32")
                elif -(1 << 63) <= v < (1 << 63):
                    key.append("i64")
                else:
                    return None
            else:
                key.append(t)
            scalars.append(v)
            objs.append(v)
            continue
        if t is Partition:
            try:
                a, ts, blocks, order = v.array, v.tile_shape, v.blocks, v.order
            except AttributeError:
                return None
            # exact types, as launch_fields requires: an equal float or bool must not find
            # the plan of the int it equals (the slow path refuses it)
            if type(ts) is not tuple or (blocks is not None and type(blocks) is not int):
                return None
            for n in ts:
                if type(n) is not int:
                    return None
            if type(order) is not str and (type(order) is not tuple or len(order) != 2
                                           or type(order[1]) is not int
                                           or type(order[0]) is not str):
                return None
            part = (PART, ts, blocks, order)
        else:
            a, part = v, ARRAY
        ta = type(a)
        try:
            r = _READERS.get(ta)
            if r is None:
                r = _reader(ta)
            if not r:
                return None
            got = r(a)
            if got is None:
                return None
            ptr, fields, stream = got
            if stream is _CUPY_STREAM:
                if cupy_stream is _CUPY_STREAM:
                    cupy_stream = _cupy_stream()
                stream = cupy_stream
            elif r is _read_cai or r is _read_numba:
                # an interface is Python code, which may make another CuPy stream current: the
                # next CuPy array asks again (as the slow path, which reads each interface)
                cupy_stream = _CUPY_STREAM
        except Exception:  # noqa: BLE001 - an interface that raises: the slow path words it
            return None
        if type(ptr) is not int:
            return None
        key.append((part, ta, (ptr & 15) if ptr else -1, fields))
        ptrs.append(ptr)
        arrays.append(a)
        streams.append(stream)
        objs.append(a)
    return tuple(key), ptrs, scalars, arrays, streams, objs


def _never_run(values, stream, on_conflict):
    """The runner of a plan that has no guard: it always says no (the key path decides)."""
    return None


def _pointer_owner(ptr: int):
    """``driver.pointer_device``, None where the driver cannot tell (the slow path decides)."""
    from numba_tile.runtime import driver
    try:
        return driver.pointer_device(ptr)
    except Exception:  # noqa: BLE001
        return None


def describes(key: tuple, bound) -> bool:
    """Whether the array entries of a plan key describe exactly the layouts the slow path checked
    (``bound``, from ``bind_arrays``). A slow call reads each interface twice, once for the
    checks and once for the key: an object whose answers differ between the two reads (a
    Python-level interface, another thread resizing the array) must not file the checked layout
    under the key of another one, where a later call with that other layout would find it.

    Strides are compared on the axes that step (extent above 1) of non-empty arrays: there a
    producer's own strides and the C strides the slow path computes for an interface without
    ``strides`` agree."""
    from numba_tile.runtime.arrays import _c_strides, _torch_dtype, _typestr_dtype
    from numba_tile.runtime.launch_checks import BoundArray
    entries = [e for e in key if type(e) is tuple and len(e) == 4]
    barrays = [b for b in bound if type(b) is BoundArray]
    if len(entries) != len(barrays):
        return False
    for (part, cls, _residue, fields), b in zip(entries, barrays):
        if b.tile_shape is None:
            if part != ARRAY:
                return False
        elif part != (PART, b.tile_shape, b.blocks, b.order):
            return False
        a = b.array
        shape, strides, dtype, device, ro = fields
        r = _READERS.get(cls)
        try:
            if r is _read_torch:
                dtype = _torch_dtype(dtype, "")
                strides = tuple(s * dtype.itemsize for s in strides)
            elif r is _read_cai:
                dtype = _typestr_dtype(dtype, "")
                if strides is None:
                    strides = _c_strides(shape, dtype.itemsize)
            elif r is not _read_cupy and r is not _read_numba:
                return False
        except Exception:  # noqa: BLE001 - fields no checked layout has
            return False
        if (type(shape) is not tuple or shape != a.shape or dtype != a.dtype
                or device != a.device or ro is not a.readonly or len(strides) != len(shape)):
            return False
        if 0 not in shape:
            for n, s, checked in zip(shape, strides, a.strides):
                if n != 1 and s != checked:
                    return False
    return True


# ----------------------------------------------------------------------------- plans

class Plan:
    """What a repeated call needs of its first, fully checked launch (module docstring)."""

    __slots__ = ("loaded", "nblocks", "template", "ptr_slots", "scalar_slots", "layouts",
                 "spans", "pairs", "writes", "device", "names", "grid3", "block3", "params",
                 "ptr_setters", "scalar_setters", "map_setters", "func_address", "torch_arrays",
                 "pack", "run", "owners")

    def __init__(self, loaded, nblocks, template, ptr_slots, scalar_slots, bound_arrays, writes,
                 device, maps=()):
        self.loaded = loaded                 # (module, func, ParamBuffer, threads, shared)
        self.nblocks = nblocks
        self.grid3 = (nblocks, 1, 1)
        self.func_address = int(loaded[1]) if type(loaded[1]).__module__.startswith("cuda") \
            else 0
        self.block3 = (loaded[3], 1, 1)
        self.template = template             # the flat parameter values of the first launch
        # the plan's own parameter buffer, holding the first launch's values: a call rewrites
        # only its pointers and scalars (one struct pack_into each)
        own = ParamBuffer(loaded[2].kinds)
        own.pack(template)
        self.params = own
        self.ptr_setters = tuple(
            (struct.Struct("<" + PARAM_KINDS[own.kinds[i]][0]).pack_into, own.offsets[i])
            for i in ptr_slots)
        self.scalar_setters = tuple(
            (struct.Struct("<" + PARAM_KINDS[own.kinds[i]][0]).pack_into, own.offsets[i])
            for i in scalar_slots)
        # tensor maps (runtime/tensormap.py): a function of their array's pointer, the plan
        # fixing the layout; (pack_into, offset, array index, template index, encoder)
        self.map_setters = tuple(
            (struct.Struct("<128s").pack_into, own.offsets[slot], j, slot, enc)
            for j, slot, enc in maps)
        # pack(buf, ptrs, scalars): the setters as straight-line code
        env, lines = {}, ["def pack(buf, ptrs, scalars):"]
        for kind, setters in (("ptrs", self.ptr_setters), ("scalars", self.scalar_setters)):
            for k, (pack_into, off) in enumerate(setters):
                env[f"{kind}{k}"] = pack_into
                lines.append(f"    {kind}{k}(buf, {int(off)}, {kind}[{k}])")
        for k, (pack_into, off, j, _slot, enc) in enumerate(self.map_setters):
            env[f"maps{k}"], env[f"enc{k}"] = pack_into, enc
            lines.append(f"    maps{k}(buf, {int(off)}, enc{k}(ptrs[{j}]))")
        lines.append("    return None")
        exec("\n".join(lines), env)
        self.pack = env["pack"]
        self.ptr_slots = tuple(ptr_slots)    # template index of each array's pointer
        self.scalar_slots = tuple(scalar_slots)
        self.device = device
        self.names = ()                      # the arrays' parameter names (messages)
        # indices of PyTorch arrays: a launch also holds their storage (set_ gives a tensor
        # object other memory, and the old storage must outlive the launch)
        self.torch_arrays = ()
        self.writes = tuple(writes)          # per array: may the kernel write it
        self.layouts = []
        self.spans = []
        for a in bound_arrays:
            d = dict(a.__dict__)
            for k in ("obj", "owner", "ptr", "stream"):
                d.pop(k, None)
            self.layouts.append(d)
            if a.size == 0:
                self.spans.append(None)
            else:
                lo, hi = a.byte_bounds
                self.spans.append((lo - a.ptr, hi - a.ptr))
        # several devices in the process: each non-empty array's pointer must be on the device
        # the checked launch found (the driver's answer, arrays._owner_device), whatever its
        # producer names; with one device every device array is on it
        count = driver.device_count()
        self.owners = None if count is None or count < 2 else tuple(
            (k, a.device) for k, a in enumerate(bound_arrays) if a.size)
        n = len(bound_arrays)
        self.pairs = tuple((i, j) for i in range(n) if self.writes[i] for j in range(n)
                           if j != i and not (self.writes[j] and j < i)
                           and self.spans[i] is not None and self.spans[j] is not None)

    def flat(self, ptrs, scalars) -> list:
        """The parameter values of a call."""
        flat = self.template[:]
        for i, v in zip(self.ptr_slots, ptrs):
            flat[i] = v
        for i, v in zip(self.scalar_slots, scalars):
            flat[i] = v
        for _pack, _off, j, slot, enc in self.map_setters:
            flat[slot] = enc(ptrs[j])
        return flat

    def admits(self, ptrs) -> bool:
        """The pointer-dependent rules (module docstring): every byte range in the address
        space, no mutable array's range intersecting another argument's, and (several devices)
        each non-empty array's pointer on the device the checked launch found. False: take the slow
        path, whose checks decide (and word the refusal)."""
        if self.owners is not None:
            for k, device in self.owners:
                if _pointer_owner(ptrs[k]) != device:
                    return False
        ranges = []
        for span, ptr in zip(self.spans, ptrs):
            if span is None:
                ranges.append(None)
                continue
            lo, hi = ptr + span[0], ptr + span[1]
            if lo < 0 or hi >= _ADDRESS_END:
                return False
            ranges.append((lo, hi))
        for i, j in self.pairs:
            (lo1, hi1), (lo2, hi2) = ranges[i], ranges[j]
            if lo1 < hi2 and lo2 < hi1:
                return False
        return True

    def describe(self, ptrs, arrays, streams):
        """The call's ArrayArg descriptions and the mutable ones among them."""
        out, writes = [], []
        new = ArrayArg.__new__
        for layout, ptr, obj, stream, w in zip(self.layouts, ptrs, arrays, streams, self.writes):
            a = new(ArrayArg)
            d = a.__dict__
            d.update(layout)
            d["obj"] = obj
            d["owner"] = obj
            d["ptr"] = ptr
            d["stream"] = stream
            out.append(a)
            if w:
                writes.append(a)
        return out, writes


def make_plan(loaded, nblocks, params, bound, positions, flat, device) -> Plan:
    """A Plan from a checked slow-path launch: ``positions`` holds, per parameter, the index of
    its first value in ``flat`` (the launch's parameter values; None for a constant)."""
    from numba_tile.runtime.launch_checks import BoundArray
    from numba_tile.runtime import tensormap
    ptr_slots, scalar_slots, arrays, writes, index_of = [], [], [], [], {}
    for i, (p, b, pos) in enumerate(zip(params, bound, positions)):
        if b.__class__ is BoundArray:
            index_of[i] = len(arrays)
            ptr_slots.append(pos)
            arrays.append(b.array)
            writes.append(b.mutable)
        elif p.role != "constant":
            scalar_slots.append(pos)
    tmaps = loaded[2].tensor_maps
    first = len(flat) - len(tmaps)          # the maps are the last parameters
    maps = []
    for m, (i, rows) in enumerate(tmaps):
        a = arrays[index_of[i]]
        maps.append((index_of[i], first + m,
                     tensormap.encoder_for(a.shape, a.element_strides, a.dtype.name, rows)))
    return Plan(loaded, nblocks, list(flat), ptr_slots, scalar_slots, arrays, writes, device,
                maps)


# ----------------------------------------------------------------------------- queueing

def enqueue(kernel, loaded, grid_x, stream: int, flat, arrays, writes, objs, streams,
            on_conflict: str, device: int, raise_conflict, key=None):
    """Queues one launch whose checks have passed (see the module docstring) and returns its
    handle. ``grid_x``: the blocks (one axis), or an explicit grid's three axes.
    ``key``: the registry queue of a launch that reads a peer GPU's memory
    (``inflight.peer_key``), None for the stream's.

    Raises:
        CaptureError: a legacy-stream launch while a blocking stream of the device captures.
        StreamConflictError: through ``raise_conflict`` with ``on_conflict="raise"``.
    """
    _module, func, params, nthreads, shared = loaded
    st = driver.stream_capture_status(stream)
    if st:
        return _enqueue_captured(kernel, func, params, nthreads, shared, grid_x, stream, st, flat,
                                 arrays, writes, objs, streams)
    registry = inflight.default_registry()
    # the conflict check, the launch and its registration as one step under the registry's
    # lock: a launch on another thread and stream cannot check in between and miss this one
    with registry._lock:
        if registry._streams:
            found = registry.conflicts(stream, arrays, writes, key)
            if found:
                if on_conflict == "raise":
                    raise_conflict(found, stream)
                for entry, _arg in found:
                    registry.wait_entry(stream, entry, f"kernel '{kernel.__qualname__}'")
        producers = producer_streams(streams, stream)
        if producers:
            registry.wait_for_streams(stream, producers, device)
        with kernel._lock:
            ptr = params.pack(flat)
            driver.launch(func, _dims(grid_x), (nthreads, 1, 1), shared, stream, ptr)
        arrays.append(kernel)
        return registry.register(stream, tuple(arrays), writes=writes, arrays=objs,
                                 device=device, key=key)


def _dims(grid) -> tuple:
    """The launch's ``(x, y, z)`` blocks: one axis, or an explicit grid's three."""
    return tuple(grid) if isinstance(grid, tuple) else (grid, 1, 1)


def _enqueue_captured(kernel, func, params, nthreads, shared, grid_x, stream, st, flat, arrays,
                      writes, objs, streams, keep_also=()):
    if st < 0:
        raise capture.CaptureError(
            f"kernel '{kernel.__qualname__}': launched on the legacy default stream while a "
            f"stream of the device is being captured into a CUDA graph: that launch would "
            f"invalidate the capture. Launch on the capturing stream (stream=torch.cuda."
            f"current_stream() inside torch.cuda.graph, the CuPy stream that captures, or "
            f"within numba_tile.Graph.capture() leave stream= out)")
    if st != driver.CAPTURE_ACTIVE:
        raise capture.CaptureError(
            f"kernel '{kernel.__qualname__}': stream {stream:#x} is in an invalidated capture; "
            f"end the capture (it was invalidated by an earlier call) and capture again")
    producers = producer_streams(streams, stream)
    # held before the launch is recorded: a graph never holds a kernel without its arguments
    capture.hold(stream, tuple(arrays) + tuple(keep_also) + (kernel,), arrays, writes,
                 producers)
    with kernel._lock:
        ptr = params.pack(flat)
        driver.launch(func, _dims(grid_x), (nthreads, 1, 1), shared, stream, ptr)
    return capture.CapturedLaunch(tuple(objs), stream)


_fast_launch = None


def _find_fast_launch():
    """CuPy's ``cuLaunchKernel`` binding (``cupy.cuda.driver.launchKernel``: a Cython function
    of C integers; one run on the H200 host, 2026-12-01: 5.6 us per call against 6.8 us for
    ``cuda.bindings``' wrapper, which converts its handle arguments to objects, and 8.3 us for
    ctypes), when CuPy is already imported; False otherwise (then ``cuda.bindings`` launches).
    Both call the same driver function of the same process: a ``CUfunction`` is a process-wide
    handle."""
    global _fast_launch
    found = False
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            from cupy.cuda import driver as cupy_driver
            found = cupy_driver.launchKernel
        except Exception:  # noqa: BLE001 - any CuPy without it
            found = False
    if cupy is not None:
        _fast_launch = found      # without CuPy imported yet: asked again at the next launch
    return found


def _cupy_binding(module: str, name: str):
    """``cupy.cuda.<module>.<name>``, one of CuPy's Cython bindings of C integers, or None
    without CuPy imported (or without that binding)."""
    if sys.modules.get("cupy") is None:
        return None
    import importlib
    # cupy.cuda re-exports cupy_backends' modules (as attributes, not always as submodules)
    for path in (f"cupy.cuda.{module}", f"cupy_backends.cuda.api.{module}"):
        try:
            return getattr(importlib.import_module(path), name)
        except Exception:  # noqa: BLE001 - any CuPy without it
            continue
    return None


def _cupy_context_current():
    """CuPy's ``cuCtxGetCurrent`` binding (``cupy.cuda.driver.ctxGetCurrent``: the context
    handle as a C integer, 0 for none), or None."""
    return _cupy_binding("driver", "ctxGetCurrent")


def _cupy_stream_is_capturing():
    """CuPy's ``cudaStreamIsCapturing`` binding (``cupy.cuda.runtime.streamIsCapturing``: a
    bool; raises ``CUDARuntimeError`` for the legacy stream while a blocking stream captures),
    or None."""
    return _cupy_binding("runtime", "streamIsCapturing")


def _cupy_current_stream():
    """What :func:`_cupy_stream` calls, for a runner to call inline: CuPy's
    ``get_current_stream`` when CuPy exports CUDA Array Interface v3 streams, False when it
    exports none, None when that cannot be told (the runner calls ``_cupy_stream``)."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    try:
        version = cupy._util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION
    except AttributeError:
        version = 3
    if version != 3:
        return False
    try:
        return cupy.cuda.get_current_stream
    except AttributeError:
        return None


def held_storages(plan: Plan, ptrs, arrays):
    """The storages of the plan's PyTorch arrays, to hold for the launch, read now (after every
    read of the call that can run user code), or None when one of them does not hold the bytes
    the launch would use: the tensor was given other memory (``set_()``) since its pointer was
    read, by user code that ran while the call read a later argument or its stream, so the
    storage the pointer belongs to may be gone. None: queue nothing, take the slow path (which
    holds the storage it reads each pointer from)."""
    out = []
    try:
        for i in plan.torch_arrays:
            st = arrays[i].untyped_storage()
            span = plan.spans[i]
            if span is not None:
                base = st.data_ptr()
                if type(base) is not int or not (base <= ptrs[i] + span[0]
                                                 and ptrs[i] + span[1] <= base + st.nbytes()):
                    return None
            out.append(st)
    except Exception:  # noqa: BLE001 - a tensor without a storage: the slow path says so
        return None
    return tuple(out)


def enqueue_plan_on(device: int, *args):
    """:func:`enqueue_plan` with ``device``'s context current, the thread's previous one given
    back after it (``driver.device_context``): a plan runner's call when another context is
    current."""
    from numba_tile.runtime import driver
    with driver.device_context(device):
        return enqueue_plan(*args)


def enqueue_plan(kernel, plan: Plan, stream: int, ptrs, scalars, arrays, streams, objs,
                 on_conflict: str):
    """:func:`enqueue` for a launch through a plan (its pointer rules already admitted), or None
    (nothing queued) when a PyTorch array's storage no longer holds its pointer
    (:func:`held_storages`): the caller takes the slow path.

    The hot path of a repeated launch: the driver calls are made through ``cuda.bindings``
    directly (each wrapper layer costs a few hundred nanoseconds on a busy host)."""
    holds = ()
    if plan.torch_arrays:
        holds = held_storages(plan, ptrs, arrays)
        if holds is None:
            return None
    _module, func, params, nthreads, shared = plan.loaded
    cu = driver._mod or driver._cu()
    err, st = cu.cuStreamIsCapturing(stream)
    if err or int(st):
        st = driver.stream_capture_status(stream)       # raises for a failing query
        args, writes = plan.describe(ptrs, arrays, streams)
        return _enqueue_captured(kernel, func, params, nthreads, shared, plan.nblocks, stream,
                                 st, plan.flat(ptrs, scalars), args, writes, objs, streams,
                                 holds)
    registry = inflight._default or inflight.default_registry()
    # one step under the registry's lock, as in enqueue
    with registry._lock:
        queues = registry._streams
        qkey = stream if stream != 2 else inflight.queue_key(stream)
        if queues and (len(queues) > 1 or qkey not in queues):
            args, writes = plan.describe(ptrs, arrays, streams)
            found = registry.conflicts(stream, args, writes)
            if found:
                if on_conflict == "raise":
                    kernel._raise_conflict_named({id(a): n for a, n in zip(args, plan.names)},
                                                 found, stream)
                for entry, _arg in found:
                    registry.wait_entry(stream, entry, f"kernel '{kernel.__qualname__}'")
        producers = producer_streams(streams, stream)
        if producers:
            registry.wait_for_streams(stream, producers, plan.device)
        own = plan.params
        buf = own._buf
        fast_launch = _fast_launch if _fast_launch is not None else _find_fast_launch()
        # the plan's buffer is written only here, under the registry's lock
        plan.pack(buf, ptrs, scalars)
        if fast_launch and plan.func_address:
            try:
                fast_launch(plan.func_address, plan.nblocks, 1, 1, nthreads, 1, 1, shared,
                            stream, own.address, 0)
                err = 0
            except Exception:  # noqa: BLE001 - CuPy's error: ask the driver again for ours
                err, = cu.cuLaunchKernel(func, plan.nblocks, 1, 1, nthreads, 1, 1, shared,
                                         stream, own.address, 0)
        else:
            err, = cu.cuLaunchKernel(func, plan.nblocks, 1, 1, nthreads, 1, 1, shared, stream,
                                     own.address, 0)
        if err:
            driver._raise("cuLaunchKernel", err)
        keep = tuple(arrays) + (kernel,) + holds
        return registry.file_locked(stream, keep, (), objs, (plan, ptrs, arrays, streams),
                                    plan.device)
