"""Thin layer over ``cuda.bindings.driver``: contexts, modules, launches, events, streams.

``cuda.bindings`` is imported inside the functions, so this module imports on machines without a GPU
or without ``libcuda``; only :func:`gpu_available` may be called there (it answers False). Every
``CUresult`` is checked; a failure raises :class:`CudaDriverError` with the result's name.

Handles (modules, functions, events) are the ``cuda.bindings`` objects; streams are plain ints (see
:mod:`numba_tile.runtime.streams`).

The launch path calls ``cuda.bindings`` directly too: measured on the H200 machine, its Cython
wrappers of ``cuLaunchKernel``, ``cuEventRecord`` and ``cuEventQuery`` cost less per call than
ctypes calls into ``libcuda`` with declared argument types.
"""

from __future__ import annotations

import threading

from numba_tile.runtime.params import ParamBuffer

__all__ = [
    "CudaDriverError",
    "ParamBuffer",
    "gpu_available",
    "ensure_context",
    "compute_capability",
    "current_device",
    "pointer_device",
    "can_access_peer",
    "enable_peer_access",
    "pointer_access",
    "range_access",
    "stream_owner",
    "load_module",
    "get_function",
    "set_cluster_width",
    "max_shared_per_block_optin",
    "set_dynamic_shared",
    "launch",
    "event_create",
    "event_record",
    "event_query",
    "event_synchronize",
    "event_destroy",
    "stream_wait_event",
    "wait_for_peer_stream",
    "synchronize_stream",
]


class CudaDriverError(RuntimeError):
    """A CUDA driver call returned an error.

    Attributes:
        function: the driver function, e.g. ``"cuLaunchKernel"``.
        result: the ``CUresult`` value (int).
        name: the ``CUresult`` name, e.g. ``"CUDA_ERROR_INVALID_VALUE"``.
    """

    def __init__(self, function: str, result: int, name: str, detail: str = ""):
        self.function = function
        self.result = int(result)
        self.name = name
        text = f"{function} failed: {name} ({self.result})"
        if detail:
            text = f"{text}: {detail}"
        super().__init__(text)


_mod = None


def _cu():
    """The ``cuda.bindings.driver`` module, imported on first use."""
    global _mod
    if _mod is None:
        from cuda.bindings import driver

        _mod = driver
    return _mod


def _raise(function: str, err) -> None:
    try:
        err = _cu().CUresult(int(err))
    except ValueError:
        pass
    name = getattr(err, "name", None) or f"CUresult {int(err)}"
    detail = ""
    try:
        res, text = _cu().cuGetErrorString(err)
        if int(res) == 0 and text:
            detail = text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # the description is a courtesy; the name is what matters
        pass
    raise CudaDriverError(function, int(err), name, detail)


def _check(function: str, result: tuple):
    """Checks a ``cuda.bindings`` result tuple ``(err, *values)``; returns the value(s)."""
    err = result[0]
    if err:
        _raise(function, err)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


_lock = threading.Lock()
_initialised = False
_available: bool | None = None
_contexts: dict[int, object] = {}
_context_ints: dict[int, int] = {}


def _init() -> None:
    global _initialised
    if _initialised:
        return
    with _lock:
        if not _initialised:
            _check("cuInit", _cu().cuInit(0))
            _initialised = True


_device_count = None


def device_count():
    """The number of CUDA devices the process sees (``cuDeviceGetCount``; fixed for the
    process's life: ``CUDA_VISIBLE_DEVICES`` is read once, at ``cuInit``), None when the driver
    cannot tell. Cached. Never raises."""
    global _device_count
    if _device_count is None:
        try:
            _init()
            n = _check("cuDeviceGetCount", _cu().cuDeviceGetCount())
        except Exception:  # noqa: BLE001 - no driver, or a stand-in without the call
            return None
        if type(n) is int:
            _device_count = n
        else:
            return None
    return _device_count


def gpu_available() -> bool:
    """Whether kernels can be launched on a GPU in this process.

    True when ``cuda.bindings`` imports, ``cuInit`` succeeds and at least one device exists.
    The answer is computed once and cached. Never raises. A launch without ``interpret=True``
    needs a GPU; the interpreter (``interpret=True``) and :meth:`Kernel.ptx
    <numba_tile.Kernel.ptx>` do not.

    Returns:
        bool: True when a CUDA device is usable.

    Examples:
        >>> import numba_tile as nt
        >>> interpret = not nt.gpu_available()   # the GPU when there is one, else the interpreter
    """
    global _available
    if _available is None:
        try:
            _init()
            _available = _check("cuDeviceGetCount", _cu().cuDeviceGetCount()) > 0
        except Exception:
            _available = False
    return _available


class device_context:
    """``with device_context(device):`` the primary context of ``device`` current on the
    calling thread for the block; the thread's previous context restored after it (a thread
    with none current keeps this one).
    Costs one ``cuCtxGetCurrent`` when that context is current already."""

    __slots__ = ("device", "previous")

    def __init__(self, device: int):
        self.device = device
        self.previous = False

    def __enter__(self):
        cu = _mod or _cu()
        current = cu.cuCtxGetCurrent()[1]
        mine = _context_ints.get(self.device)
        if mine is not None and current is not None and int(current) == mine:
            return self
        ensure_context(self.device)
        # another device's context is given back after the block; a thread that had none
        # keeps this one (what the runtime API would make current on its first call), so
        # its next launch finds it current
        self.previous = current if current is not None and int(current) else False
        return self

    def __exit__(self, *exc):
        previous = self.previous
        if previous is not False:
            self.previous = False
            cu = _mod or _cu()
            cu.cuCtxSetCurrent(previous if previous is not None else cu.CUcontext(0))
        return False


def ensure_context(device: int):
    """Makes the primary context of ``device`` current on the calling thread.

    The primary context is retained once per device and cached (it is shared with CuPy, Numba and
    PyTorch, which also use primary contexts). Contexts are per thread, so the current context is
    compared (cheaply) on each call and set when it differs.

    Args:
        device: CUDA device ordinal.

    Returns:
        the ``CUcontext``.

    Raises:
        CudaDriverError: no driver, an invalid ordinal, or a failing context call.
    """
    cu = _mod or _cu()
    ctx = _contexts.get(device)
    if ctx is not None:
        current = cu.cuCtxGetCurrent()[1]
        if current is not None and int(current) == _context_ints[device]:
            return ctx
    if ctx is None:
        ctx = _primary_context(device)
    current = _check("cuCtxGetCurrent", cu.cuCtxGetCurrent())
    if current is None or int(current) != int(ctx):
        _check("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    return ctx


def _primary_context(device: int):
    """The primary context of ``device``, retained once and cached; not made current."""
    ctx = _contexts.get(device)
    if ctx is None:
        cu = _mod or _cu()
        _init()
        with _lock:
            ctx = _contexts.get(device)
            if ctx is None:
                dev = _check("cuDeviceGet", cu.cuDeviceGet(device))
                ctx = _check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev))
                _context_ints[device] = int(ctx)
                _contexts[device] = ctx
    return ctx


_peer_possible: dict[tuple[int, int], bool] = {}
_peer_enabled: set[tuple[int, int]] = set()


def can_access_peer(device: int, peer: int) -> bool:
    """Whether kernels on ``device`` can read memory of ``peer`` once peer access is enabled
    (``cuDeviceCanAccessPeer``: NVLink or PCIe peer-to-peer between the two). Cached: the
    answer is a property of the machine. True for ``device == peer``.

    Raises:
        CudaDriverError: no driver, or an invalid ordinal.
    """
    if device == peer:
        return True
    key = (device, peer)
    ok = _peer_possible.get(key)
    if ok is None:
        cu = _mod or _cu()
        _init()
        dev = _check("cuDeviceGet", cu.cuDeviceGet(device))
        other = _check("cuDeviceGet", cu.cuDeviceGet(peer))
        ok = _peer_possible[key] = bool(_check("cuDeviceCanAccessPeer",
                                               cu.cuDeviceCanAccessPeer(dev, other)))
    return ok


def enable_peer_access(device: int, peer: int) -> None:
    """Lets kernels in ``device``'s primary context read allocations of ``peer``'s primary
    context (``cuCtxEnablePeerAccess``), once per pair and process. Access enabled already
    (by PyTorch, CuPy or an earlier call) counts as enabled. The calling thread's current
    context is given back afterwards. Peer access is one-way and lasts for the context's life.

    Raises:
        CudaDriverError: the driver refused (``CUDA_ERROR_PEER_ACCESS_UNSUPPORTED``,
            ``CUDA_ERROR_TOO_MANY_PEERS``, ...).
    """
    key = (device, peer)
    if device == peer or key in _peer_enabled:
        return
    cu = _mod or _cu()
    target = _primary_context(peer)
    with device_context(device):
        err = cu.cuCtxEnablePeerAccess(target, 0)[0]
    if err and err != cu.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
        _raise("cuCtxEnablePeerAccess", err)
    _peer_enabled.add(key)


_capabilities: dict[int, tuple[int, int]] = {}


def compute_capability(device: int) -> tuple[int, int]:
    """``(major, minor)`` compute capability of ``device`` (e.g. ``(9, 0)`` on H200), cached.

    Raises:
        CudaDriverError: no driver or an invalid ordinal.
    """
    cc = _capabilities.get(device)
    if cc is None:
        cu = _cu()
        _init()
        dev = _check("cuDeviceGet", cu.cuDeviceGet(device))
        attr = cu.CUdevice_attribute
        major = _check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
        minor = _check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
        cc = _capabilities[device] = (int(major), int(minor))
    return cc


def current_device() -> int | None:
    """Ordinal of the current context's device on this thread, or None if no context is current."""
    cu = _cu()
    _init()
    err, dev = cu.cuCtxGetDevice()
    if err:
        if err == cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:
            return None
        _raise("cuCtxGetDevice", err)
    return int(dev)


def pointer_device(ptr: int) -> int | None:
    """Ordinal of the device that owns the allocation at ``ptr`` (bytes address).

    Returns:
        int | None: the ordinal, or None when the driver does not know the pointer (not allocated,
        mapped or registered through CUDA).

    Raises:
        CudaDriverError: any other driver failure.
    """
    cu = _cu()
    _init()
    err, value = cu.cuPointerGetAttribute(
        cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
    if err:
        if err == cu.CUresult.CUDA_ERROR_INVALID_VALUE:
            return None
        _raise("cuPointerGetAttribute", err)
    return int(value)


#: most access queries :func:`range_access` makes for one array before it gives up (the
#: array is then refused as a peer array): 65,536 granules of 2 MiB are 128 GiB of mappings
MAX_QUERIES = 65536

_granularity: dict[int, int] = {}


def _mapping_granularity(device: int) -> int:
    """The minimum granularity of virtual-memory mappings of ``device``'s memory (2 MiB on
    an H200): no mapping starts or ends between two multiples of it."""
    g = _granularity.get(device)
    if g is None:
        cu = _mod or _cu()
        prop = cu.CUmemAllocationProp()
        prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = device
        g = _granularity[device] = int(_check("cuMemGetAllocationGranularity",
                                              cu.cuMemGetAllocationGranularity(
            prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
    return g


def range_access(lo: int, hi: int, device: int) -> list[int | None]:
    """The access flags ``device`` has to the memory ``[lo, hi)``, per piece that may differ,
    in address order (:func:`pointer_access` with ``device``'s context current).

    The address range holding ``lo`` (``CU_POINTER_ATTRIBUTE_RANGE_START_ADDR``,
    ``RANGE_SIZE``) is one allocation with one access setting when it is ``cuMemAlloc`` memory
    (``IS_LEGACY_CUDA_IPC_CAPABLE``) or a memory pool's (``MEMPOOL_HANDLE``): one query. Else
    it is a virtual-memory reservation, whose mappings may each have their own access (measured
    on an H200: the range reported is the whole reservation): one query per mapping
    granularity step (:func:`_mapping_granularity`). The walk goes on at the range's end. A
    byte no allocation holds ends it with None; so does passing :data:`MAX_QUERIES`.

    Raises:
        CudaDriverError: any driver failure but an unknown pointer.
    """
    cu = _mod or _cu()
    attr = cu.CUpointer_attribute
    get = cu.cuPointerGetAttribute
    out: list[int | None] = []
    p = lo
    with device_context(device):
        while p < hi:
            err, flags = get(attr.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p)
            if not err:
                err, start = get(attr.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p)
            if not err:
                err, size = get(attr.CU_POINTER_ATTRIBUTE_RANGE_SIZE, p)
            if not err:
                err, ipc = get(attr.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p)
            if not err:
                err, pool = get(attr.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p)
            if err:
                if err == cu.CUresult.CUDA_ERROR_INVALID_VALUE:
                    out.append(None)
                    break
                _raise("cuPointerGetAttribute", err)
            out.append(int(flags))
            end = min(int(start) + int(size), hi)
            if end <= p:                      # a range that does not advance: unknown
                out.append(None)
                break
            if not ipc and not int(pool):     # a reservation: each mapping's own access
                err, owner = get(attr.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)
                if err:
                    _raise("cuPointerGetAttribute", err)
                step = _mapping_granularity(int(owner))
                q = (p // step + 1) * step
                while q < end:
                    if len(out) >= MAX_QUERIES:
                        out.append(None)
                        return out
                    err, flags = get(attr.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, q)
                    if err:
                        if err == cu.CUresult.CUDA_ERROR_INVALID_VALUE:
                            out.append(None)
                            return out
                        _raise("cuPointerGetAttribute", err)
                    out.append(int(flags))
                    q += step
            if len(out) >= MAX_QUERIES:
                out.append(None)
                break
            p = end
    return out


def stream_owner(stream: int) -> tuple[int, int | None]:
    """``(context, device)`` of a stream that is not one of the default streams (handles 0, 1,
    2, which name a stream of whichever context is current): the context it was created in
    (``cuStreamGetCtx``, as an int) and that context's device ordinal (``cuStreamGetDevice``;
    None where the driver predates that call).

    Raises:
        CudaDriverError: the driver does not know the handle (e.g. a destroyed stream).
    """
    cu = _mod or _cu()
    _init()
    ctx = _check("cuStreamGetCtx", cu.cuStreamGetCtx(stream))
    try:
        getter = cu.cuStreamGetDevice
    except AttributeError:
        return int(ctx), None
    try:
        err, dev = getter(stream)
    except RuntimeError:            # the binding exists, the driver's entry point does not
        return int(ctx), None
    return int(ctx), (None if err else int(dev))


#: ``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_ACCESS_FLAGS)`` bit for read access
ACCESS_READ = 1


def pointer_access(ptr: int, device: int) -> int | None:
    """The access ``device`` has to the memory at ``ptr``: the ``CUmemAccess_flags`` bits
    (0: none, 1: read, 3: read and write) that ``cuPointerGetAttribute`` reports for
    ``CU_POINTER_ATTRIBUTE_ACCESS_FLAGS`` with ``device``'s primary context current. It covers
    every kind of allocation: ``cuMemAlloc`` memory of a peer (reachable once peer access is
    enabled), memory pools (``cuMemPoolSetAccess``) and virtual-memory mappings
    (``cuMemSetAccess``). The thread's current context is given back afterwards.

    Returns:
        int | None: the flags, or None when the driver does not know the pointer.

    Raises:
        CudaDriverError: any other driver failure.
    """
    cu = _mod or _cu()
    with device_context(device):
        err, value = cu.cuPointerGetAttribute(
            cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, ptr)
    if err:
        if err == cu.CUresult.CUDA_ERROR_INVALID_VALUE:
            return None
        _raise("cuPointerGetAttribute", err)
    return int(value)


def load_module(image: str | bytes, device: int):
    """Loads PTX (or a cubin) into the primary context of ``device``.

    Args:
        image: PTX text (``str`` or ASCII ``bytes``; a terminating NUL is added when missing, as
            ``cuModuleLoadData`` requires) or an ELF cubin (``bytes`` starting with ``\\x7fELF``).
        device: CUDA device ordinal.

    Returns:
        the ``CUmodule``.

    Raises:
        CudaDriverError: the driver refused the image (e.g. ``CUDA_ERROR_INVALID_PTX``).
    """
    if isinstance(image, str):
        image = image.encode()
    if not image.startswith(b"\x7fELF") and not image.endswith(b"\0"):
        image = image + b"\0"
    ensure_context(device)
    return _check("cuModuleLoadData", _cu().cuModuleLoadData(image))


def get_function(module, name: str):
    """Looks up the kernel ``name`` (the mangled entry name in the PTX) in ``module``.

    Raises:
        CudaDriverError: ``CUDA_ERROR_NOT_FOUND`` when no such entry exists.
    """
    return _check("cuModuleGetFunction", _cu().cuModuleGetFunction(module, name.encode()))


def max_shared_per_block_optin(device: int) -> int:
    """Most dynamic shared memory a block of ``device`` may have with the opt-in, bytes
    (``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``: 232448 on the H200)."""
    cu = _cu()
    _init()
    dev = _check("cuDeviceGet", cu.cuDeviceGet(device))
    return int(_check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev)))


def set_dynamic_shared(func, nbytes: int) -> None:
    """Let ``func`` launch with ``nbytes`` of dynamic shared memory (the opt-in above 48 KB,
    ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``)."""
    cu = _cu()
    _check("cuFuncSetAttribute", cu.cuFuncSetAttribute(
        func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes))


def set_cluster_width(func, width: int) -> None:
    """Launches of ``func`` group its blocks in clusters of ``width`` along x
    (``CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH``, height and depth 1: what ``__cluster_dims__``
    sets at compile time). Every launch's grid must then be a multiple of ``width``."""
    cu = _cu()
    attr = cu.CUfunction_attribute
    for a, v in ((attr.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, width),
                 (attr.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, 1),
                 (attr.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, 1)):
        _check("cuFuncSetAttribute", cu.cuFuncSetAttribute(func, a, v))


def launch(func, grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int,
           stream: int, params_ptr: int) -> None:
    """Queues one kernel launch (``cuLaunchKernel``) on ``stream``; returns without waiting.

    Args:
        func: the ``CUfunction`` from :func:`get_function`.
        grid: blocks per axis (x, y, z), each >= 1.
        block: threads per block (x, y, z).
        shared_mem: dynamic shared memory per block, in bytes.
        stream: stream handle (int; 0 is the legacy default stream).
        params_ptr: address of a ``void*[n]`` array whose i-th entry points at the i-th parameter's
            value (:meth:`ParamBuffer.pack`), or 0 for a kernel without parameters. The values are
            copied by the driver during this call, so the buffer may be reused right after it.

    Raises:
        CudaDriverError: the launch was refused.
    """
    err, = (_mod or _cu()).cuLaunchKernel(
        func, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_mem, stream,
        params_ptr, 0)
    if err:
        _raise("cuLaunchKernel", err)


def event_create():
    """Creates an event with ``CU_EVENT_DISABLE_TIMING`` (cheapest to record and query)."""
    cu = _cu()
    return _check("cuEventCreate",
                  cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))


def event_record(event, stream: int) -> None:
    """Records ``event`` on ``stream`` after the work queued so far."""
    err, = (_mod or _cu()).cuEventRecord(event, stream)
    if err:
        _raise("cuEventRecord", err)


def event_query(event) -> bool:
    """True when all work captured by ``event`` has completed (``CUDA_ERROR_NOT_READY``: False)."""
    err, = (_mod or _cu()).cuEventQuery(event)
    if not err:
        return True
    if err == _NOT_READY:
        return False
    _raise("cuEventQuery", err)


_NOT_READY = 600  # CUDA_ERROR_NOT_READY


def event_synchronize(event) -> None:
    """Blocks the calling thread until the work captured by ``event`` has completed."""
    _check("cuEventSynchronize", _cu().cuEventSynchronize(event))


def event_destroy(event) -> None:
    """Destroys ``event`` (safe while work it captured is still pending)."""
    _check("cuEventDestroy", _cu().cuEventDestroy(event))


def wait_for_peer_stream(stream: int, producer: int, producer_device: int) -> None:
    """Makes ``stream`` (of the current context) wait for the work queued so far on
    ``producer``, a stream of ``producer_device`` (handles 0, 1 and 2 name that device's
    default streams): an event made and recorded with that device's context current, waited
    on here (``cuStreamWaitEvent`` takes an event of another device) and destroyed at once
    (the wait has captured its state; the driver frees it when the wait is done)."""
    with device_context(producer_device):
        event = event_create()
        try:
            event_record(event, producer)
        except BaseException:
            event_destroy(event)
            raise
    try:
        stream_wait_event(stream, event)
    finally:
        event_destroy(event)


def stream_wait_event(stream: int, event) -> None:
    """Makes later work on ``stream`` wait for the work ``event`` has captured at call time."""
    _check("cuStreamWaitEvent", _cu().cuStreamWaitEvent(stream, event, 0))


def synchronize_stream(stream: int) -> None:
    """Blocks the calling thread until all work queued on ``stream`` has completed."""
    _check("cuStreamSynchronize", _cu().cuStreamSynchronize(stream))



# -- stream capture and graphs (runtime/capture.py) ------------------------------------------------

#: ``CU_STREAM_CAPTURE_STATUS_*``: not capturing, capturing, capture invalidated
CAPTURE_NONE, CAPTURE_ACTIVE, CAPTURE_INVALIDATED = 0, 1, 2
#: ``CUDA_ERROR_STREAM_CAPTURE_IMPLICIT``: the legacy stream was used while a blocking stream
#: of its device is capturing (the capture would be invalidated)
ERROR_CAPTURE_IMPLICIT = 906


def stream_capture_status(stream: int) -> int:
    """``CU_STREAM_CAPTURE_STATUS_*`` of ``stream`` (``cuStreamIsCapturing``; legal during a
    capture).

    Returns:
        int: :data:`CAPTURE_NONE`, :data:`CAPTURE_ACTIVE` or :data:`CAPTURE_INVALIDATED`, or
        :data:`ERROR_CAPTURE_IMPLICIT` negated (-906) for the legacy stream while a blocking
        stream of the device captures (a launch there would invalidate that capture).

    Raises:
        CudaDriverError: any other failure.
    """
    err, status = (_mod or _cu()).cuStreamIsCapturing(stream)
    if err:
        if int(err) == ERROR_CAPTURE_IMPLICIT:
            return -ERROR_CAPTURE_IMPLICIT
        _raise("cuStreamIsCapturing", err)
    return int(status)


def stream_capture_info(stream: int) -> tuple[int, int, object]:
    """``(status, capture id, CUgraph being built)`` of ``stream`` (``cuStreamGetCaptureInfo``);
    id and graph are meaningful only while the status is :data:`CAPTURE_ACTIVE`."""
    res = _cu().cuStreamGetCaptureInfo(stream)
    if res[0]:
        _raise("cuStreamGetCaptureInfo", res[0])
    return int(res[1]), int(res[2]), res[3]


def capture_mode_exchange(mode: int) -> int:
    """Sets this thread's stream-capture interaction mode (``cuThreadExchangeStreamCaptureMode``;
    0 global, 1 thread-local, 2 relaxed) and returns the previous one."""
    cu = _cu()
    err, old = cu.cuThreadExchangeStreamCaptureMode(cu.CUstreamCaptureMode(mode))
    if err:
        _raise("cuThreadExchangeStreamCaptureMode", err)
    return int(old)


def user_object_create(ptr: int, destroy_fn_address: int):
    """A CUDA user object whose destructor is the C function at ``destroy_fn_address`` called
    with ``ptr`` (``cuUserObjectCreate``, one reference, ``CU_USER_OBJECT_NO_DESTRUCTOR_SYNC``)."""
    cu = _cu()
    return _check("cuUserObjectCreate", cu.cuUserObjectCreate(
        ptr, cu.CUhostFn(destroy_fn_address), 1,
        cu.CUuserObject_flags.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC))


def graph_retain_user_object_move(graph, obj) -> None:
    """Moves the caller's one reference of ``obj`` to ``graph`` (``cuGraphRetainUserObject``)."""
    cu = _cu()
    _check("cuGraphRetainUserObject", cu.cuGraphRetainUserObject(
        graph, obj, 1, cu.CUuserObjectRetain_flags.CU_GRAPH_USER_OBJECT_MOVE))


def user_object_release(obj) -> None:
    """Drops one reference of ``obj`` (``cuUserObjectRelease``)."""
    _check("cuUserObjectRelease", _cu().cuUserObjectRelease(obj, 1))


def stream_create_nonblocking() -> int:
    """A new stream that does not synchronize with the legacy default stream; returns its handle."""
    cu = _cu()
    s = _check("cuStreamCreate", cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    return int(s)


def stream_destroy(stream: int) -> None:
    _check("cuStreamDestroy", _cu().cuStreamDestroy(stream))


def stream_begin_capture(stream: int, mode: int) -> None:
    cu = _cu()
    _check("cuStreamBeginCapture", cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode(mode)))


def stream_end_capture(stream: int):
    """Ends the capture of ``stream``; returns the CUgraph (raises for an invalidated capture)."""
    return _check("cuStreamEndCapture", _cu().cuStreamEndCapture(stream))


def graph_instantiate(graph):
    return _check("cuGraphInstantiate", _cu().cuGraphInstantiate(graph, 0))


def graph_launch(graph_exec, stream: int) -> None:
    err, = (_mod or _cu()).cuGraphLaunch(graph_exec, stream)
    if err:
        _raise("cuGraphLaunch", err)


def graph_destroy(graph) -> None:
    _check("cuGraphDestroy", _cu().cuGraphDestroy(graph))


def graph_exec_destroy(graph_exec) -> None:
    _check("cuGraphExecDestroy", _cu().cuGraphExecDestroy(graph_exec))
