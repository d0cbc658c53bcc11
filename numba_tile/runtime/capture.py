"""Launches under CUDA stream capture, and numba_tile's own graphs.

A launch on a stream that is being captured (numba_tile's :class:`Graph`, PyTorch's
``torch.cuda.graph``, CuPy's ``Stream.begin_capture``) is recorded into the graph, not run. What
changes on that path (``kernel.py`` asks :func:`status` before anything touches the stream):

* nothing that capture forbids is called on the capturing stream: no event is recorded on it,
  queried or waited for (an event recorded during capture cannot be queried afterwards: the
  ``cuEventQuery: CUDA_ERROR_INVALID_VALUE`` of a registry that treats a captured launch as an
  ordinary one), nothing is synchronized; a first-time module load runs with this thread's capture
  mode relaxed (``cuThreadExchangeStreamCaptureMode``), as PyTorch does for its allocations;
* every argument the launch uses (and its owner) is held for the life of the **graph**, not of the
  launch: a CUDA user object is attached to the graph being built (``cuGraphRetainUserObject``);
  CUDA drops the graph's references when the graph and every executable graph made from it are
  destroyed and their launches have completed, and then calls the user object's destructor on an
  internal thread. That destructor is C's ``sem_post`` on a semaphore of the hold (no Python, no
  GIL on the driver's thread); :func:`poll` releases the holds whose semaphore was posted (it runs
  on every registry collection and in ``numba_tile.synchronize()``);
* the in-flight registry's cross-stream ordering is not applied at capture time (nothing runs
  then); a :class:`Graph` applies it at each :meth:`Graph.replay`, like a launch of all the
  arguments of its kernels. A graph captured by PyTorch or CuPy is replayed by them, ordered by
  their stream semantics;
* a launch on the legacy default stream while a blocking stream of the device is capturing would
  invalidate that capture (``CUDA_ERROR_STREAM_CAPTURE_IMPLICIT``): it is refused before any CUDA
  call touches the stream, with the capturing stream to use instead.

The handle of a captured launch is a :class:`CapturedLaunch`: nothing ran, so ``sync()`` refuses
(with the reason) rather than wait for work that will only run at replay.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import weakref

from numba_tile.errors import CaptureError, TileArgumentError
from numba_tile.runtime import inflight

__all__ = ["CaptureError", "CapturedLaunch", "Graph", "status", "hold", "poll", "relaxed"]

_RELAXED = 2


# ----------------------------------------------------------------------------- status

def status(stream: int) -> int:
    """The capture status of ``stream`` (``driver.CAPTURE_*``, or -906 for the legacy stream
    while a blocking stream captures). One ``cuStreamIsCapturing`` call (legal during capture)."""
    from numba_tile.runtime import driver
    return driver.stream_capture_status(stream)


@contextlib.contextmanager
def relaxed():
    """This thread's capture mode relaxed for the block (module loads, attribute sets)."""
    from numba_tile.runtime import driver
    old = driver.capture_mode_exchange(_RELAXED)
    try:
        yield
    finally:
        driver.capture_mode_exchange(old)


# ----------------------------------------------------------------------------- holds

_libc = None


def _sem_functions():
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        for name in ("sem_init", "sem_trywait", "sem_destroy", "sem_post"):
            getattr(libc, name).restype = ctypes.c_int
        libc.sem_init.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]
        libc.sem_trywait.argtypes = [ctypes.c_void_p]
        libc.sem_destroy.argtypes = [ctypes.c_void_p]
        _libc = libc
    return _libc


#: bytes of a POSIX ``sem_t`` on every 64-bit glibc and musl target (32 on x86-64 and AArch64)
_SEM_BYTES = 64


class _Hold:
    """What one graph holds: references, and the semaphore its user object's destructor posts."""

    __slots__ = ("refs", "sem", "graph_owner", "__weakref__")

    def __init__(self):
        libc = _sem_functions()
        self.sem = (ctypes.c_char * _SEM_BYTES)()
        if libc.sem_init(ctypes.addressof(self.sem), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "sem_init failed")
        self.refs: list = []
        self.graph_owner = None      # weakref to the Graph, for numba_tile's own captures

    def posted(self) -> bool:
        return _sem_functions().sem_trywait(ctypes.addressof(self.sem)) == 0

    def release(self) -> None:
        self.refs = []
        _sem_functions().sem_destroy(ctypes.addressof(self.sem))


_lock = threading.Lock()
_by_capture: dict[int, _Hold] = {}     # capture id -> its hold (ids are unique per process)
_held: list[_Hold] = []                # holds whose graph may still exist


def _attach(graph) -> _Hold:
    """A new hold whose semaphore is posted when ``graph`` (and its executables) are gone."""
    from numba_tile.runtime import driver
    h = _Hold()
    post = ctypes.cast(_sem_functions().sem_post, ctypes.c_void_p).value
    obj = driver.user_object_create(ctypes.addressof(h.sem), post)
    try:
        driver.graph_retain_user_object_move(graph, obj)
    except BaseException:
        # the release runs the destructor, which CUDA may defer to its own thread
        # (CU_USER_OBJECT_NO_DESTRUCTOR_SYNC): the semaphore it posts must outlive it, so the
        # hold stays listed (poll() drops it once posted)
        _held.append(h)
        driver.user_object_release(obj)
        raise
    return h


def hold(stream: int, refs: tuple, arrays=(), writes=(), producers=()) -> None:
    """Keeps ``refs`` alive for the life of the graph being captured on ``stream``; a
    :class:`Graph` capture also records the arrays, writes and producer streams for its replays.

    Raises:
        CaptureError: the capture was invalidated, or its graph cannot hold references.
    """
    from numba_tile.runtime import driver
    with relaxed():
        st, cid, graph = driver.stream_capture_info(stream)
        if st != driver.CAPTURE_ACTIVE:
            raise CaptureError(f"stream {stream:#x} is no longer capturing (status {st}); the "
                               f"capture was invalidated by an earlier call")
        with _lock:
            h = _by_capture.get(cid)
            if h is None:
                h = _attach(graph)
                _by_capture[cid] = h
                _held.append(h)
                g = _ours.get(stream)
                if g is not None and g._capture_id is None:
                    g._capture_id = cid
                    h.graph_owner = weakref.ref(g)     # no cycle through this module's lists
            h.refs.append(refs)
            owner = h.graph_owner() if h.graph_owner is not None else None
    if owner is not None:
        owner._record(arrays, writes, producers)


def poll() -> int:
    """Releases the holds of graphs that CUDA has destroyed; returns how many."""
    if not _held:
        return 0
    released = 0
    with _lock:
        for h in list(_held):
            if h.posted():
                _held.remove(h)
                for cid, other in list(_by_capture.items()):
                    if other is h:
                        del _by_capture[cid]
                h.release()
                released += 1
    return released


inflight.on_collect(poll)      # every collect() releases the holds of destroyed graphs


def held() -> int:
    """Number of graphs whose references are still held (for tests)."""
    return len(_held)


# ----------------------------------------------------------------------------- handles

class CapturedLaunch:
    """Handle of a launch recorded into a graph under capture: nothing ran yet."""

    __slots__ = ("_arrays", "_stream", "_graph")

    def __init__(self, arrays: tuple, stream: int):
        self._arrays = arrays
        self._stream = stream
        # a numba_tile Graph's capture stream is destroyed when its capture block ends
        self._graph = _ours.get(stream)

    @property
    def stream(self) -> int:
        return self._stream

    def done(self) -> bool:
        """False: a captured launch runs only when its graph is replayed."""
        return False

    def sync(self):
        """Refuses: the launch was captured into a graph and runs only when the graph is
        replayed (synchronizing a capturing stream would invalidate the capture)."""
        raise CaptureError(
            f"this launch was captured into a CUDA graph on stream {self._stream:#x}; it runs "
            f"when the graph is replayed: synchronize the replay (Graph.replay(...).sync(), or "
            f"torch.cuda.synchronize() after torch's graph.replay())")

    def then(self, kernel, *args, **kwargs):
        """Capture ``kernel`` next on the same stream."""
        inflight.check_then(kernel, kwargs)
        g = self._graph
        if g is not None and g._stream != self._stream:
            raise CaptureError(
                f"then(): this launch was captured into a numba_tile.Graph whose capture has "
                f"ended, and its capture stream {self._stream:#x} was destroyed with it; chain "
                f"inside the capture block, or launch on a stream of your own")
        return kernel(*args, stream=self._stream, **kwargs)

    def __repr__(self) -> str:
        return f"<CapturedLaunch stream={self._stream:#x}>"


# ----------------------------------------------------------------------------- Graph

_ours: dict[int, "Graph"] = {}      # capture stream -> the Graph capturing on it


class Graph:
    """A sequence of numba_tile launches captured once and replayed as one CUDA graph.

    Examples:
        >>> g = nt.Graph()                                   # doctest: +SKIP
        >>> with g.capture():                                # doctest: +SKIP
        ...     k1(x, nt.partition(y, 256), B=256)           # captured on g.stream
        ...     k2(y, nt.partition(z, 256), B=256)
        >>> g.replay().sync()                                # doctest: +SKIP

    Every launch in the block is checked as usual (ownership, overlap, read-only arrays, the
    kernel's typing) when it is captured; the arguments are held until the graph is destroyed
    (:meth:`close`, or when the Graph is garbage-collected and no replay is in flight). A
    :meth:`replay` is ordered against other numba_tile launches by the in-flight registry like
    a launch of all the arrays of its kernels (waiting for conflicting launches on other
    streams, or refusing with ``on_conflict="raise"``), and after the streams the arrays'
    producers named at capture time.

    Launches in the block that give no ``stream=`` go to :attr:`stream` (a non-blocking stream of
    the graph's own, captured in relaxed mode: this thread's other CUDA calls stay legal). A launch
    given another stream explicitly runs there as usual, not in the graph.
    """

    def __init__(self):
        self._graph = None
        self._exec = None
        self._stream = None
        self._device = None
        self._capture_id = None
        self._arrays: list = []
        self._writes: list = []
        self._seen: set = set()
        self._producers: list = []
        self.launches = 0

    @property
    def stream(self) -> int | None:
        """The capture stream's handle while capturing (None otherwise)."""
        return self._stream

    def _record(self, arrays, writes, producers) -> None:
        self.launches += 1
        wset = {id(w) for w in writes}
        for a in arrays:
            key = (a.ptr, a.shape, a.strides, a.dtype.itemsize, id(a) in wset)
            if key in self._seen:
                continue
            self._seen.add(key)
            self._arrays.append(a)
            if id(a) in wset:
                self._writes.append(a)
        for p in producers:
            if p not in self._producers:
                self._producers.append(p)

    @contextlib.contextmanager
    def capture(self, device: int | None = None):
        """Captures the launches made in the block (on :attr:`stream`, the block's default
        stream) and instantiates the graph at its end.

        Args:
            device: the CUDA device (default: the current context's, else 0).

        Raises:
            CaptureError: the graph was already captured, a capture is already in progress on
                this Graph, or the capture was invalidated (by a call in the block that capture
                forbids, e.g. a synchronization).
        """
        from numba_tile.runtime import driver
        from numba_tile.runtime.defaults import launch_defaults
        if self._exec is not None or self._stream is not None:
            raise CaptureError("Graph.capture(): this graph was already captured; make a new "
                               "Graph for another sequence")
        if not driver.gpu_available():
            raise CaptureError("Graph.capture(): numba_tile.Graph records launches into a CUDA "
                               "graph, which needs a CUDA GPU and driver (none is usable here); "
                               "in the interpreter, launch the kernels directly")
        if device is None:
            device = driver.current_device()
            device = 0 if device is None else device
        # the graph's device current in the block, the thread's previous context given back
        # after it (as a launch: driver.device_context)
        with driver.device_context(device):
            self._device = device
            s = driver.stream_create_nonblocking()
            self._stream = s
            driver.stream_begin_capture(s, _RELAXED)
            _ours[s] = self
            graph = None
            try:
                with launch_defaults(stream=s):
                    yield self
            except BaseException:
                with contextlib.suppress(Exception):
                    graph = driver.stream_end_capture(s)
                if graph is not None:
                    with contextlib.suppress(Exception):
                        driver.graph_destroy(graph)
                self._close_stream()
                raise
            try:
                graph = driver.stream_end_capture(s)
            except Exception as exc:
                self._close_stream()
                raise CaptureError(f"Graph.capture(): the capture was invalidated ({exc}); a call "
                                   f"in the block that capture forbids (a synchronization, a "
                                   f"legacy-stream launch) ended it") from exc
            self._close_stream()
            self._graph = graph
            self._exec = driver.graph_instantiate(graph)

    def _close_stream(self):
        from numba_tile.runtime import driver
        s, self._stream = self._stream, None
        _ours.pop(s, None)
        if s is not None:
            with contextlib.suppress(Exception):
                driver.stream_destroy(s)

    def replay(self, stream=None, *, on_conflict: str = "wait"):
        """Queues the whole graph on ``stream`` (default: the legacy default stream, or the
        thread's ``launch_defaults``) and returns its LaunchHandle.

        Raises:
            CaptureError: the graph was not captured yet, or was closed; ``stream`` is capturing.
            StreamConflictError: with ``on_conflict="raise"``, an array of the graph is in use by a
                conflicting launch in flight on another stream.
        """
        from numba_tile.errors import StreamConflictError
        from numba_tile.runtime import driver
        from numba_tile.runtime.defaults import current
        from numba_tile.runtime.streams import producer_streams, stream_handle
        if self._exec is None:
            raise CaptureError("Graph.replay(): nothing captured yet (or the graph was closed); "
                               "capture with `with graph.capture(): ...` first")
        if on_conflict not in ("wait", "raise"):
            raise TileArgumentError(f"Graph.replay(): on_conflict: expected 'wait' or 'raise', "
                                    f"got {on_conflict!r}")
        if stream is None:
            stream = current().stream
        handle = stream_handle(stream)
        # the graph's device current for the replay, the thread's previous context given back
        # after it (as a kernel launch: driver.device_context)
        with driver.device_context(self._device):
            st = status(handle)
            if st != driver.CAPTURE_NONE:
                raise CaptureError(f"Graph.replay(): stream {handle:#x} is capturing (or the "
                                   f"legacy stream while another stream captures); replay "
                                   f"outside capture")
            registry = inflight.default_registry()
            # the conflict check, the launch and its registration as one step (as a kernel's
            # launch: launcher.enqueue)
            with registry._lock:
                found = registry.conflicts(handle, self._arrays, self._writes)
                if found:
                    if on_conflict == "raise":
                        entry, _ = found[0]
                        raise StreamConflictError(
                            f"Graph.replay(): an array of the graph is in use by a launch in "
                            f"flight on stream {entry.stream:#x}; synchronize or use "
                            f"on_conflict='wait'")
                    for entry, _arg in found:
                        registry.wait_entry(handle, entry, "Graph.replay()")
                producers = producer_streams(self._producers, handle)
                if producers:
                    registry.wait_for_streams(handle, producers, self._device)
                driver.graph_launch(self._exec, handle)
                return registry.register(handle, tuple(self._arrays) + (self,), writes=self._writes,
                                         device=self._device,
                                         arrays=())

    def close(self) -> None:
        """Destroys the graph (CUDA keeps it until replays in flight complete; the arguments are
        released once CUDA has dropped it, at the next collection)."""
        from numba_tile.runtime import driver
        ex, g = self._exec, self._graph
        self._exec = self._graph = None
        if ex is not None:
            with contextlib.suppress(Exception):
                driver.graph_exec_destroy(ex)
        if g is not None:
            with contextlib.suppress(Exception):
                driver.graph_destroy(g)

    def __del__(self):
        try:
            self.close()
        except Exception:   # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "captured" if self._exec is not None else "empty"
        return f"<numba_tile.Graph {state}, {self.launches} launches>"
