"""Process-wide registry of in-flight launches: keeps arguments alive until the GPU is done.

After each launch the launcher calls :func:`register` with everything the kernel uses (the
:class:`~numba_tile.runtime.arrays.ArrayArg` of each argument, whose ``obj`` and ``owner`` keep the
memory alive, and anything else). The registry holds those references until a CUDA event recorded
on the launch stream after the kernel has completed. The returned :class:`LaunchHandle` is a view on
that entry: dropping it releases nothing (case T1).

**Events.** A launch on any stream but the legacy default stream gets its own event, recorded right
after the kernel. Launches on the legacy default stream (handle 0, the default of numba_tile, CuPy
and PyTorch) share one: their entries are filed without an event, and one event recorded after the
last of them covers them all (stream order: it completes only after every earlier launch on that
stream). Handle 0 names the legacy stream *of the current context*, one per device: a batch
holds the launches of one device (a legacy launch on another device first records the pending
batch's event), and its event is recorded with that device's context current, whichever thread
records it. The event is recorded at every ``collect_every``-th registration on any stream,
and at once whenever an event of theirs is needed: another stream's launch that must wait for one of them, ``sync()``, ``done()``,
:meth:`InflightRegistry.collect`, ``numba_tile.synchronize()``. Recording an event costs 1.5 us on
the H200 host (one run, 2026-12-01): a third of a launch. Only the legacy stream is treated so
because it is never destroyed (a user's stream may be destroyed, and its handle reused, between a
launch and a later recording) and names one stream of a device for every thread (the per-thread default
stream, handle 2, names the *calling* thread's). While a blocking stream is being captured, CUDA
forbids touching the legacy stream: then the shared event cannot be recorded, the entries stay
held, and what needs their event is refused with :class:`~numba_tile.errors.CaptureError`
(synchronize before beginning such a capture).

Completed entries are released on every :func:`register` call and by :func:`collect`. Events
recorded on one stream complete in order, so polling stops at the first pending entry of each
stream: the cost per launch is one event query per active stream, not per pending launch.

The event backend is an object with ``create``, ``record``, ``query``, ``synchronize``, ``wait`` and
``destroy`` (:class:`DriverEventBackend` uses the CUDA driver); tests pass a fake one to an
:class:`InflightRegistry` of their own.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import Iterable, Protocol, Sequence

from numba_tile.runtime.arrays import ArrayArg
from numba_tile.runtime.streams import same_stream

__all__ = [
    "EventBackend",
    "DriverEventBackend",
    "InflightRegistry",
    "LaunchHandle",
    "default_registry",
    "register",
    "collect",
    "synchronize_all",
]


class EventBackend(Protocol):
    """Events as the registry needs them; streams are int handles."""

    def create(self) -> object:
        """Returns a new event."""

    def record(self, event: object, stream: int) -> None:
        """Records ``event`` on ``stream`` after the work queued so far."""

    def query(self, event: object) -> bool:
        """True when the work captured by ``event`` has completed."""

    def synchronize(self, event: object) -> None:
        """Blocks until the work captured by ``event`` has completed."""

    def wait(self, stream: int, event: object) -> None:
        """Makes later work on ``stream`` wait for the work ``event`` has captured."""

    def destroy(self, event: object) -> None:
        """Frees ``event``."""

    # optional: ``capturing(stream) -> bool``, whether recording an event on ``stream`` is
    # forbidden now (it is capturing, or it is the legacy stream while a blocking stream
    # captures); a backend without it is never capturing. Optional: ``in_device(device)``, a
    # context manager making ``device``'s context current (handle 0 names the legacy stream of
    # the current context); a backend without it has one device.


class DriverEventBackend:
    """:class:`EventBackend` over the CUDA driver (events created with timing disabled)."""

    def __init__(self):
        from numba_tile.runtime import driver

        self.create = driver.event_create
        self.record = driver.event_record
        self.query = driver.event_query
        self.synchronize = driver.event_synchronize
        self.wait = driver.stream_wait_event
        self.destroy = driver.event_destroy
        self.current_device = driver.current_device

    @staticmethod
    def capturing(stream: int) -> bool:
        from numba_tile.runtime import driver
        return driver.stream_capture_status(stream) != driver.CAPTURE_NONE

    @staticmethod
    def in_device(device: int):
        """A context manager: the primary context of ``device`` current on this thread for
        the block (the thread's own context restored after it, none if it had none)."""
        from numba_tile.runtime import driver
        return driver.device_context(device)


class LaunchHandle:
    """Handle of one asynchronous launch, and the registry's entry for it.

    Holds the user's arrays (what :meth:`sync` returns). The registry holds the entry, and with
    it the references that keep the launch's memory alive, until the launch's event has
    completed, so dropping the handle releases nothing early. (One object is both, to keep the
    launch path short.)
    """

    __slots__ = ("event", "stream", "refs", "writes", "finished", "lazy", "_registry",
                 "_arrays", "device", "__weakref__")

    def __init__(self, registry: "InflightRegistry", event: object, stream: int, refs: tuple,
                 writes: tuple, arrays: tuple, lazy=None, device=None):
        self._registry = registry
        # the event that covers the launch; None until the legacy stream's shared event is
        # recorded (see the module docstring), and again once the entry is released
        self.event = event
        #: handle of the stream the kernel was queued on
        self.stream = stream
        self.refs = refs
        self.writes = writes
        self.finished = False
        # a launch through a plan: (plan, pointers, arrays, streams), described as ArrayArgs only
        # when another stream's launch asks what it touches (refs holds the arrays meanwhile)
        self.lazy = lazy
        self._arrays = arrays
        #: the launch's device (None: unknown): default-stream handles name one stream per
        #: device, and their queues hold the launches of every device
        self.device = device

    @property
    def _entry(self) -> "LaunchHandle":
        return self

    def materialize(self) -> None:
        lazy = self.lazy
        if lazy is not None:
            plan, ptrs, arrays, streams = lazy
            args, writes = plan.describe(ptrs, arrays, streams)
            self.refs = tuple(args) + self.refs
            self.writes = tuple(writes)
            self.lazy = None

    def done(self) -> bool:
        """True when the kernel (and all earlier work on its stream) has completed; never blocks."""
        return self._registry._poll(self)

    def sync(self) -> tuple:
        """Waits until the kernel has completed; returns the launch's arguments, in order (a
        partition's array in place of the partition; scalars and constants as given).

        Returns:
            tuple: the user's objects, in the order given to :func:`register`.

        Raises:
            CudaDriverError: the event wait failed (e.g. the kernel faulted).
        """
        self._registry._wait(self)
        return self._arrays

    def then(self, kernel, *args, **kwargs):
        """Launch ``kernel(*args, **kwargs)`` on this launch's stream, after it: an async chain
        (cuTile Rust's ``.then()``). Stream order runs it after this kernel; the in-flight
        registry still holds both launches' arguments, and ``sync()`` on the last handle
        of the chain waits for all of it.

        Returns:
            The new launch's handle (chain further with ``.then``).

        Raises:
            TileArgumentError: ``kernel`` is not a numba_tile kernel, or ``stream=`` given (the
                chain's stream is this launch's).
        """
        check_then(kernel, kwargs)
        return kernel(*args, stream=self.stream, **kwargs)

    def __repr__(self) -> str:
        state = "done" if self.finished else "in flight"
        return f"<LaunchHandle stream={self.stream} {state}>"


def _first_touch(theirs: Sequence[ArrayArg], ours: Sequence[ArrayArg]) -> ArrayArg | None:
    """The first of ``ours`` that shares memory with any of ``theirs``, or None."""
    from numba_tile.runtime.overlap import shares_memory

    for y in ours:
        for x in theirs:
            if shares_memory(x, y):
                return y
    return None


_thread = threading.local()

#: called by every :meth:`InflightRegistry.collect` before it looks at the launches: holds of
#: other kinds that finish on their own (a graph's, ``runtime/capture.py``, which registers
#: its ``poll`` when imported: no graph exists before that). The registry sits below them.
_COLLECT_HOOKS: list = []


def on_collect(hook) -> None:
    """Have every ``collect()`` call ``hook()`` first (once per hook)."""
    if hook not in _COLLECT_HOOKS:
        _COLLECT_HOOKS.append(hook)


def peer_key(stream: int, device: int):
    """The queue of a launch on ``device`` that reads a peer GPU's memory, on a default stream
    (handles 0, 1, 2 name a stream of the current context: one per device). Such a launch is
    filed apart from the default stream's other launches, with an event of its own, so that
    launches of other devices on their own default streams (which the registry files under
    the same handle) see it as another stream's launch and order themselves after it, and it
    after them. Other handles name one stream of one device already."""
    if stream in (0, 1, 2):
        return ("peer launch", device, queue_key(stream))
    return stream


def queue_key(stream: int):
    """The registry's key of a stream handle: the handle itself, except ``CU_STREAM_PER_THREAD``
    (2), which names the calling thread's own per-thread default stream: two threads' launches
    on handle 2 are on two streams, which nothing orders (each thread's key is its own object,
    never reused while the registry holds it)."""
    if stream != 2:
        return stream
    key = getattr(_thread, "key", None)
    if key is None:
        key = _thread.key = (_PER_THREAD, object())
    return key


_PER_THREAD = "per-thread default stream"


class InflightRegistry:
    """Registry of launches whose completion has not been observed yet.

    Args:
        backend: the event backend; None creates a :class:`DriverEventBackend` on first use.
        pool_size: completed events kept for reuse (the rest are destroyed).
    """

    def __init__(self, backend: EventBackend | None = None, pool_size: int = 64,
                 collect_every: int = 32):
        self._backend = backend
        self._pool_size = pool_size
        # register() polls the oldest events every collect_every launches, not on every one
        # (an event query costs as much as a third of a launch); sync(), done(), conflicts()
        # and collect() still release at once, and the held set stays O(live launches + this).
        # 32: the legacy stream's batch event and the poll cost about 3,200 of the 42,800 CPython
        # instructions of a repeated 8-array launch at 8, 800 at 32 (callgrind, fake driver)
        self._collect_every = collect_every
        self._since_collect = 0
        # completed events for reuse, per device: an event is recorded only on a stream of the
        # context it was made in (a launch's device; None: unknown, a one-device backend)
        self._pools: dict[object, list] = {}
        self._event_device: dict[int, object] = {}     # id(event) -> its device
        # launches on the legacy stream filed without an event: the newest entries of its queue,
        # all of one device (_unflushed_device)
        self._unflushed = 0
        self._unflushed_device = None
        # id(event) -> threads blocked in synchronize() on it, and the events whose last entry
        # was released meanwhile (pooled or destroyed when the last waiter is done)
        self._waiting: dict[int, int] = {}
        self._parked: dict[int, object] = {}
        # what launches whose event could not be created or recorded use: the kernel is
        # queued and nothing will tell when it is done, so these are never released
        self._orphans: list = []
        # id(event) -> the number of entries that share it, for events shared by more than one
        self._users: dict[int, int] = {}
        # queue_key(stream) -> its launches, oldest first
        self._streams: dict[object, collections.deque[LaunchHandle]] = {}
        self._lock = threading.RLock()

    @property
    def _pool(self) -> list:
        """The pool of events of an unknown device (a one-device backend's)."""
        return self._pools.setdefault(None, [])

    def _take_event_locked(self, device):
        """A completed event of ``device`` from its pool, or a new one (made with ``device``'s
        context current: the caller's). An unknown device (None) on a backend of several
        devices is the current context's."""
        if device is None:
            backend = self._backend or self.backend
            current = getattr(backend, "current_device", None)
            if current is not None:
                device = current()
        pool = self._pools.get(device)
        if pool:
            return pool.pop()
        event = (self._backend or self.backend).create()
        self._event_device[id(event)] = device
        return event

    def _pool_event_locked(self, event) -> None:
        """Back to its device's pool, at once (a wait captured its state already)."""
        self._pools.setdefault(self._event_device.get(id(event)), []).append(event)

    @property
    def backend(self) -> EventBackend:
        if self._backend is None:
            self._backend = DriverEventBackend()
        return self._backend

    def pending(self) -> int:
        """Number of launches still held (not yet observed complete)."""
        with self._lock:
            return sum(not e.finished for q in self._streams.values() for e in q)

    # -- registration ----------------------------------------------------------------------------

    def register(self, stream: int, refs: tuple, *, writes: Sequence[ArrayArg] = (),
                 arrays: tuple | None = None, device: int | None = None,
                 key: object = None) -> LaunchHandle:
        """Records an event after the kernel on ``stream``; holds ``refs`` until it completes.

        Call right after the launch, before anything else is queued on ``stream``.

        Args:
            stream: handle of the launch stream.
            refs: everything the kernel uses: :class:`ArrayArg` objects (their ``obj`` and ``owner``
                are kept alive through them) and any other object to keep alive.
            writes: the :class:`ArrayArg` objects the kernel may write (a subset of ``refs``), used
                by :meth:`order_after_conflicts`.
            arrays: what :meth:`LaunchHandle.sync` returns; by default ``refs`` with every
                :class:`ArrayArg` replaced by its ``obj``.
            device: the device whose context is current (the launch's); None: unknown, and a
                legacy-stream launch then gets an event of its own (unless the backend has
                one device: no ``in_device``).
            key: the queue to file the launch in, instead of the stream's (:func:`peer_key`:
                a launch that reads a peer GPU's memory); it gets an event of its own.

        Returns:
            LaunchHandle: the handle; dropping it releases nothing.

        Raises:
            CudaDriverError: creating or recording the event failed.
        """
        with self._lock:
            if arrays is None:
                arrays = [r.obj if type(r) is ArrayArg else r for r in refs]
            return self.file_locked(stream, tuple(refs), tuple(writes), tuple(arrays),
                                    device=device, key=key)

    def file_locked(self, stream: int, keep: tuple, writes: tuple, arrays: tuple,
                    lazy=None, device: int | None = None, key: object = None) -> LaunchHandle:
        """The registration step of :meth:`register`, with the lock held by the caller (the
        launch path holds it around the conflict check, the launch and this): polls completed
        launches every ``collect_every`` calls, records a pooled event on ``stream`` and queues
        the entry. ``lazy`` is a plan launch's ``(plan, pointers, arrays, streams)``, described
        as ArrayArgs only if another stream's launch asks (``LaunchHandle.materialize``).

        Raises:
            CudaDriverError: creating or recording an event failed. The launch's references
                are held all the same: in its entry (a legacy-stream launch, filed before any
                recording), or for the life of the process (an event of its own could not be
                recorded: nothing will say when the kernel is done).
        """
        queues = self._streams
        collect_now = False
        if queues:
            self._since_collect += 1
            collect_now = self._since_collect >= self._collect_every
        lazy_ok = stream == 0 and key is None and (device is not None or not hasattr(
            self._backend or self.backend, "in_device"))
        if lazy_ok and self._unflushed and self._unflushed_device != device:
            # a batch holds one device's launches: the other device's pending batch first (a
            # failure, or a capture that forbids it, gives this launch an event of its own)
            try:
                lazy_ok = self._flush_locked()
            except Exception:  # noqa: BLE001 - the batch stays held; this launch: below
                lazy_ok = False
        if lazy_ok:
            # the legacy stream's launches share an event (the module docstring)
            entry = LaunchHandle(self, None, 0, keep, writes, arrays, lazy, device)
            queue = queues.get(0)
            if queue is None:
                queue = queues[0] = collections.deque()
            queue.append(entry)
            self._unflushed += 1
            self._unflushed_device = device
            # the entry is filed: a failure below leaves it held, and raises
            if self._unflushed >= self._collect_every:
                self._flush_locked()
            if collect_now:
                self._collect_locked()
            return entry
        if collect_now:
            self._collect_locked()             # first: completed events go back to the pool
        backend = self._backend or self.backend
        try:
            event = self._take_event_locked(device)
        except BaseException:
            self._orphans.append(keep)         # the kernel is queued: never release its refs
            raise
        try:
            backend.record(event, stream)
        except BaseException:
            self._pool_event_locked(event)
            self._orphans.append(keep)
            raise
        entry = LaunchHandle(self, event, stream, keep, writes, arrays, lazy, device)
        if key is None:
            key = queue_key(stream)
        queue = queues.get(key)
        if queue is None:
            queue = queues[key] = collections.deque()
        queue.append(entry)
        if collect_now and self._unflushed:
            self._flush_locked()               # after filing: a failure leaves it held
        return entry

    #: :meth:`file_locked`'s legacy-stream branch for a launch whose registration neither
    #: flushes the batch nor polls, as statements for a generated launch path (the plan runner
    #: of ``runtime/guards.py``) to run inline with the lock held: they file the entry and bind
    #: it to the result name, or leave it None (then call :meth:`file_locked`). The names
    #: ``reg`` (the registry), ``queues`` (its ``_streams``), ``stream``, ``keep``, ``objs``,
    #: ``DEV`` (the launch's device, an int) and ``LH`` (:class:`LaunchHandle`) are the
    #: caller's; ``{lazy}`` is the text of the lazy description. The same state changes as
    #: :meth:`file_locked` in that case, without the call and its other branches (with the
    #: guard's folded range tests, 55,800 -> 54,700 CPython instructions per repeated 8-array
    #: launch: callgrind, fake driver and CuPy arrays, ``PYTHONHASHSEED=0``).
    INLINE_FILING = (
        "{result} = None",
        "if stream == 0:",
        "    q0 = queues.get(0)",
        "    if q0 is not None and (not reg._unflushed or reg._unflushed_device == DEV):",
        "        n_unflushed = reg._unflushed + 1",
        "        n_since = reg._since_collect + 1",
        "        if n_unflushed < reg._collect_every and n_since < reg._collect_every:",
        "            {result} = LH(reg, None, 0, keep, (), objs, {lazy}, DEV)",
        "            q0.append({result})",
        "            reg._unflushed = n_unflushed",
        "            reg._unflushed_device = DEV",
        "            reg._since_collect = n_since",
    )

    def _flush_locked(self) -> bool:
        """Records the legacy stream's shared event after its launches filed without one; False
        (nothing recorded, the entries stay held) while recording on the legacy stream is
        forbidden by a capture.

        Raises:
            CudaDriverError: creating or recording the event failed (the entries stay held).
        """
        n = self._unflushed
        if not n:
            return True
        backend = self._backend or self.backend
        capturing = getattr(backend, "capturing", None)
        if capturing is not None and capturing(0):
            return False
        in_device = getattr(backend, "in_device", None)
        scope = in_device(self._unflushed_device) if in_device is not None \
            and self._unflushed_device is not None else contextlib.nullcontext()
        with scope:
            event = self._take_event_locked(self._unflushed_device)
            try:
                backend.record(event, 0)
            except BaseException:
                self._pool_event_locked(event)
                raise
        # the entries without an event, newest first (a legacy launch of unknown device, with
        # an event of its own, may sit among them)
        left = n
        for entry in reversed(self._streams[0]):
            if entry.event is None and not entry.finished:
                entry.event = event
                left -= 1
                if not left:
                    break
        if n > 1:
            self._users[id(event)] = n
        self._unflushed = 0
        return True

    def _event_locked(self, entry: LaunchHandle, why: str):
        """The event covering ``entry`` (recording the legacy stream's shared event if it has
        none yet); None when the entry is released.

        Raises:
            CaptureError: the shared event cannot be recorded now (a capture forbids it).
        """
        event = entry.event
        if event is None and not entry.finished:
            if not self._flush_locked():
                from numba_tile.errors import CaptureError
                raise CaptureError(
                    f"{why}: it must wait for a numba_tile launch on the legacy default stream "
                    f"queued before a CUDA graph capture began, and that launch's completion "
                    f"event cannot be recorded while a blocking stream is being captured (CUDA "
                    f"forbids touching the legacy stream then). Call numba_tile.synchronize() "
                    f"before beginning the capture, or capture on a non-blocking stream")
            event = entry.event
        return event

    def wait_entry(self, stream: int, entry: LaunchHandle, why: str = "a launch") -> None:
        """Makes ``stream`` wait for ``entry``'s launch (``cuStreamWaitEvent`` on its event).

        Raises:
            CaptureError: see :meth:`_event_locked`.
        """
        with self._lock:
            event = self._event_locked(entry, why)
            if event is not None:
                (self._backend or self.backend).wait(stream, event)

    # -- completion ------------------------------------------------------------------------------

    def _release_locked(self, entry: LaunchHandle) -> None:
        entry.finished = True
        entry.refs = ()
        entry.writes = ()
        entry.lazy = None
        event, entry.event = entry.event, None
        if event is None:
            return
        users = self._users
        if users:
            count = users.pop(id(event), 1) - 1
            if count > 0:
                users[id(event)] = count       # other entries still share the event
                return
        if self._waiting and id(event) in self._waiting:
            self._parked[id(event)] = event    # a thread is blocked on it: not reused yet
            return
        self._retire_locked(event)

    def _retire_locked(self, event) -> None:
        pool = self._pools.setdefault(self._event_device.get(id(event)), [])
        if len(pool) < self._pool_size:
            pool.append(event)
        else:
            self._event_device.pop(id(event), None)
            self.backend.destroy(event)

    def _collect_locked(self) -> int:
        # Events of one stream complete in order, so each queue is polled from its oldest entry and
        # polling stops at the first pending one. Entries released out of order (by sync() or
        # done()) stay as done tombstones until they reach the head. Nothing is released on the
        # strength of stream order alone: a stream handle may be reused after its stream is
        # destroyed, so each release rests on its own event.
        # A run of entries that share one completed event (the legacy stream's batch) is
        # released inline, and the event's count of users settled once for the run
        # (_settle_locked): what _release_locked does entry by entry, at a fraction of the cost.
        released = 0
        self._since_collect = 0
        query = (self._backend or self.backend).query
        for stream, queue in list(self._streams.items()):
            done = None                  # the event last seen complete (a batch shares one)
            run = 0                      # entries released on `done` and not yet settled
            while queue:
                head = queue[0]
                if not head.finished:
                    event = head.event
                    if event is None:
                        break
                    if event is not done:
                        if run:
                            self._settle_locked(done, run)
                            run = 0
                        if not query(event):
                            break
                        done = event
                    head.finished = True
                    head.refs = head.writes = ()
                    head.lazy = head.event = None
                    run += 1
                    released += 1
                queue.popleft()
            if run:
                self._settle_locked(done, run)
            if not queue:
                del self._streams[stream]
        return released

    def _settle_locked(self, event, released: int) -> None:
        """``released`` entries that shared ``event`` were released: the event goes back to the
        pool (or is parked for a waiting thread) once no entry uses it (as _release_locked)."""
        users = self._users
        if users:
            count = users.pop(id(event), 1) - released
            if count > 0:
                users[id(event)] = count       # other entries still share the event
                return
        if self._waiting and id(event) in self._waiting:
            self._parked[id(event)] = event    # a thread is blocked on it: not reused yet
            return
        self._retire_locked(event)

    def collect(self) -> int:
        """Releases every launch whose event has completed (non-blocking).

        Returns:
            int: number of launches released.
        """
        for poll in _COLLECT_HOOKS:  # runtime/capture.poll: graphs destroyed since, their holds
            poll()
        with self._lock:
            self._flush_locked()
            return self._collect_locked()

    def _poll(self, entry: LaunchHandle) -> bool:
        with self._lock:
            if entry.finished:
                return True
            if entry.event is None and not self._flush_locked():
                return False     # a capture forbids recording its event: not observed done
            if self.backend.query(entry.event):
                self._release_locked(entry)
                self._collect_locked()
                return True
            return False

    def _wait(self, entry: LaunchHandle) -> None:
        with self._lock:
            if entry.finished:
                return
            event = self._event_locked(entry, "sync()")
            key = id(event)
            # pinned while this thread blocks outside the lock: an entry released meanwhile
            # (by another thread's done() or collect) parks the event instead of pooling or
            # destroying it
            self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            self.backend.synchronize(event)
        finally:
            with self._lock:
                left = self._waiting.pop(key) - 1
                if left:
                    self._waiting[key] = left
                else:
                    parked = self._parked.pop(key, None)
                    if parked is not None:
                        self._retire_locked(parked)
        with self._lock:
            if not entry.finished:
                self._release_locked(entry)
            self._collect_locked()

    def synchronize_all(self) -> None:
        """Waits for every registered launch and releases them all."""
        with self._lock:
            if not self._flush_locked():
                from numba_tile.errors import CaptureError
                raise CaptureError(
                    "numba_tile.synchronize(): launches on the legacy default stream are in "
                    "flight and their completion event cannot be recorded while a blocking "
                    "stream is being captured (CUDA forbids touching the legacy stream then); "
                    "synchronize before beginning the capture, or after it ends")
            pending = [e for q in self._streams.values() for e in q if not e.finished]
        for entry in pending:
            self._wait(entry)
        self.collect()

    # -- cross-stream ordering -------------------------------------------------------------------

    def conflicts(self, stream: int, args: Sequence[ArrayArg],
                  writes: Sequence[ArrayArg], key: object = None) -> list:
        """In-flight launches on other streams that a launch on ``stream`` would race with.

        A conflict is an in-flight launch on another stream that writes memory of any of
        ``args`` (read-after-write, write-after-write), or that uses memory ``writes`` will
        write (write-after-read). Launches on the same stream are ordered already.

        Args:
            stream: handle of the stream of the launch about to be queued.
            args: every array argument of that launch.
            writes: its mutable array arguments (a subset of ``args``).
            key: the queue the launch will be filed in, if not its stream's (:func:`peer_key`).

        Returns:
            list: ``(entry, arg)`` per conflicting stream: its newest conflicting launch (which
            covers all earlier ones on that stream) and the first argument it touches.
        """
        with self._lock:
            if key is None:
                key = queue_key(stream)
            if not self._streams or (len(self._streams) == 1 and key in self._streams):
                return []
            self._collect_locked()
            found = []
            for other, queue in self._streams.items():
                if same_stream(other, key):     # keys: handles, and per-thread stream keys
                    continue
                # a default stream's queue holds the launches of every device (one stream per
                # device under one handle): there the newest conflicting launch covers the
                # earlier ones of its own device only
                mixed = other in (0, 1) or (type(other) is tuple
                                            and other[0] == _PER_THREAD)
                covered = set()
                for entry in reversed(queue):
                    if entry.finished:
                        continue
                    if mixed and entry.device in covered:
                        continue
                    if entry.lazy is not None:
                        entry.materialize()
                    reads = [r for r in entry.refs if isinstance(r, ArrayArg)]
                    hit = _first_touch(entry.writes, args) or _first_touch(reads, writes)
                    if hit is not None:
                        found.append((entry, hit))
                        if not mixed:
                            break
                        covered.add(entry.device)
            return found

    def order_after_conflicts(self, stream: int, args: Sequence[ArrayArg],
                              writes: Sequence[ArrayArg]) -> int:
        """Makes ``stream`` wait (``cuStreamWaitEvent``) for every launch :meth:`conflicts`
        finds. Returns the number of waits queued."""
        found = self.conflicts(stream, args, writes)
        for entry, _arg in found:
            self.wait_entry(stream, entry)
        return len(found)

    def wait_for_streams(self, stream: int, producers: Iterable[int],
                         device: int | None = None) -> None:
        """Makes ``stream`` wait for the work queued so far on each producer stream.

        Used for the CUDA Array Interface v3 ``stream`` field (see
        :func:`numba_tile.runtime.streams.producer_streams`). Each wait uses a pooled event, which
        may be reused right away: a stream wait captures the event's state at the time of the call.
        ``device``: the device whose context is current (the streams'; None: unknown).
        """
        backend = self.backend
        with self._lock:
            for producer in producers:
                event = self._take_event_locked(device)
                try:
                    backend.record(event, producer)
                    backend.wait(stream, event)
                finally:
                    self._pool_event_locked(event)


_default: InflightRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> InflightRegistry:
    """The process-wide registry (driver-backed), created on first use."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = InflightRegistry()
    return _default


def register(stream: int, refs: tuple, *, writes: Sequence[ArrayArg] = (),
             arrays: tuple | None = None) -> LaunchHandle:
    """:meth:`InflightRegistry.register` on the process-wide registry."""
    return default_registry().register(stream, refs, writes=writes, arrays=arrays)


def collect() -> int:
    """:meth:`InflightRegistry.collect` on the process-wide registry."""
    return default_registry().collect()


def synchronize_all() -> None:
    """Waits for every numba_tile launch in flight, on every stream, and releases the arguments
    they hold (``numba_tile.synchronize()``).

    A launch handle's ``sync()`` waits for that launch (and what came before it on its
    stream); this waits for all of them. Call it before a CUDA graph capture on a blocking
    stream when launches on the legacy default stream may still be in flight (they cannot be
    waited on while the capture runs). Launches run in the interpreter are complete when they
    return.

    Raises:
        CaptureError: launches on the legacy default stream are in flight while a blocking
            stream is being captured.
        CudaDriverError: waiting failed (a kernel faulted).

    Examples:
        >>> import numba_tile as nt
        >>> nt.synchronize()
    """
    return default_registry().synchronize_all()


def check_then(kernel, kwargs) -> None:
    """What every launch handle's ``then()`` refuses, at the user's line: something that is
    not a numba_tile kernel (``@numba_tile.jit`` or ``@numba_tile.autotune``), and a
    ``stream=`` (the chain's stream is the launch's it follows).

    Raises:
        TileArgumentError: either of those.
    """
    from numba_tile.errors import TileArgumentError, type_name
    from numba_tile.runtime.call_site import user_call_site
    from numba_tile.runtime.launchable import Launchable
    site = None
    if not isinstance(kernel, Launchable):
        message = (f"then(): expected a numba_tile kernel (@numba_tile.jit or "
                   f"@numba_tile.autotune) to launch next, got {type_name(kernel)}")
    elif "stream" in kwargs:
        message = ("then(): the chained launch runs on the stream of the launch it follows; "
                   "leave stream= out (or launch it on its own)")
    else:
        return
    site = user_call_site() or (None, None)
    raise TileArgumentError(message, filename=site[0], lineno=site[1])

