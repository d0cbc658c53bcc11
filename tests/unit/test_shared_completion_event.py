"""The legacy stream's shared completion event (runtime/inflight.py) on a simulated GPU: the
event is recorded in the context of its launches (one per device, also when synced from a thread
without a current context), legacy launches are flushed while only other streams launch, no
entry is released early and no live event reused under random interleavings of streams and
threads, conflicting launches wait for an event recorded after the launch they conflict with,
failing flushes and captures hold what they must, and a graph replay waits for the shared event
(refused under capture).
"""

import contextlib
import gc
import random
import sys
import threading
import weakref

import numpy as np
import pytest

from numba_tile.errors import CaptureError, StreamConflictError
from numba_tile.runtime import capture, inflight
from numba_tile.runtime.arrays import as_array_arg
from numba_tile.runtime.fakes import FakeDeviceArray
from numba_tile.runtime.inflight import InflightRegistry
from tests.unit.test_launch_plans import fake  # noqa: F401 - fixture
from tests.unit.test_runtime_inflight import Buffer, CapturingBackend, FakeBackend


# ============================================================================ a simulated GPU

class SimEvent:
    def __init__(self, n):
        self.n = n
        self.where = None       # (context, stream) it was last recorded on
        self.pos = 0            # the number of ops of that stream it covers
        self.destroyed = False


class SimGPU:
    """An event backend over a model of streams: each launch is an op at a position of its
    stream (per context); an event covers the ops queued on its stream before it was recorded;
    the GPU completes each stream's ops in order, when the test (or a synchronize) says so.

    It checks, at each call, what the registry must never do: re-record an event that an
    unreleased entry still relies on, and use a destroyed event. A registry subclass
    (:class:`CheckedRegistry`) checks every release against the model."""

    def __init__(self):
        self.ops = {}           # (ctx, stream) -> ops queued
        self.progress = {}      # (ctx, stream) -> ops completed
        self.created = []
        self.destroyed = []
        self.waits = []         # (ctx, waiting stream, (ctx, stream) of the event, pos)
        self.violations = []
        self.reg = None
        self.lock = threading.RLock()
        self._tls = threading.local()
        self.default_ctx = 0

    # the calling thread's current context (None: no context current)
    @property
    def ctx(self):
        return getattr(self._tls, "ctx", self.default_ctx)

    @ctx.setter
    def ctx(self, value):
        self._tls.ctx = value

    def key(self, stream):
        ctx = self.ctx
        if stream == 1:
            stream = 0
        if stream == 2:
            return (ctx, ("ptds", threading.get_ident()))
        return (ctx, stream)

    def launch(self, stream):
        with self.lock:
            k = self.key(stream)
            self.ops[k] = self.ops.get(k, 0) + 1
            return k, self.ops[k]

    def finish(self, k=None, upto=None):
        with self.lock:
            keys = [k] if k is not None else list(self.ops)
            for kk in keys:
                self.progress[kk] = self.ops.get(kk, 0) if upto is None else upto

    def finish_random(self, rng):
        with self.lock:
            for kk, n in self.ops.items():
                done = self.progress.get(kk, 0)
                self.progress[kk] = rng.randint(done, n)

    def complete(self, k, pos):
        return self.progress.get(k, 0) >= pos

    def _live_users(self, event):
        reg = self.reg
        if reg is None:
            return []
        return [e for q in reg._streams.values() for e in q
                if not e.finished and e.event is event]

    def in_device(self, device):
        """The registry's context switch for a recording (DriverEventBackend.in_device)."""
        gpu = self

        @contextlib.contextmanager
        def scope():
            old = gpu.ctx
            gpu.ctx = device
            try:
                yield
            finally:
                gpu.ctx = old
        return scope()

    # -- the backend
    def create(self):
        if self.ctx is None:
            raise RuntimeError("cuEventCreate: CUDA_ERROR_INVALID_CONTEXT (no current context)")
        ev = SimEvent(len(self.created))
        ev.ctx = self.ctx
        self.created.append(ev)
        return ev

    def record(self, event, stream):
        with self.lock:
            if self.ctx is None:
                raise RuntimeError("cuEventRecord: CUDA_ERROR_INVALID_CONTEXT")
            if event.destroyed:
                self.violations.append(("record of a destroyed event", event.n))
            users = self._live_users(event)
            if users:
                self.violations.append(("re-recorded while an entry relies on it", event.n))
            k = self.key(stream)
            event.where = k
            event.pos = self.ops.get(k, 0)

    def query(self, event):
        with self.lock:
            if event.destroyed:
                self.violations.append(("query of a destroyed event", event.n))
            return self.complete(event.where, event.pos)

    def synchronize(self, event):
        with self.lock:
            if event.destroyed:
                self.violations.append(("synchronize on a destroyed event", event.n))
            k = event.where
            self.progress[k] = max(self.progress.get(k, 0), event.pos)

    def wait(self, stream, event):
        with self.lock:
            self.waits.append((self.ctx, stream, event.where, event.pos))

    def destroy(self, event):
        with self.lock:
            if self._live_users(event):
                self.violations.append(("destroyed while an entry relies on it", event.n))
            event.destroyed = True
            self.destroyed.append(event)


class Token:
    """What a launch holds: its place in the model (and a weakref target)."""

    def __init__(self, where, pos):
        self.where, self.pos = where, pos


class CheckedRegistry(InflightRegistry):
    """Every release is checked against the model: the launch must have completed."""

    def __init__(self, gpu, **kw):
        super().__init__(gpu, **kw)
        self.gpu = gpu
        gpu.reg = self

    def _release_locked(self, entry):
        for r in entry.refs:
            if isinstance(r, Token) and not self.gpu.complete(r.where, r.pos):
                self.gpu.violations.append(("released early", r.where, r.pos))
        super()._release_locked(entry)


def sim_launch(reg, gpu, stream, *extra, writes=(), arrays=None):
    where, pos = gpu.launch(stream)
    tok = Token(where, pos)
    return reg.register(stream, (tok,) + tuple(extra), writes=writes, arrays=arrays,
                        device=gpu.ctx), tok


def check_users_consistent(reg):
    """_users counts == the number of unreleased entries sharing each event; no pooled event
    is held by an unreleased entry."""
    live = [e for q in reg._streams.values() for e in q if not e.finished]
    counts = {}
    for e in live:
        if e.event is not None:
            counts[id(e.event)] = counts.get(id(e.event), 0) + 1
    for k, n in reg._users.items():
        assert counts.get(k) == n, (k, n, counts.get(k))
    pooled = {id(e) for e in reg._pool}
    assert not pooled & set(counts), "a pooled event is held by an unreleased entry"
    assert len(reg._pool) == len(pooled), "an event is in the pool twice"
    nulls = sum(1 for e in reg._streams.get(0, ()) if e.event is None and not e.finished)
    assert nulls == reg._unflushed


# ============================================================================ contexts

def test_the_shared_event_is_recorded_in_the_context_of_its_launches():
    """Handle 0 is the legacy stream *of the current context*, and contexts are per thread and
    per device. The shared event is recorded when it is needed, in the context of the unflushed
    batch, not in whatever context the flushing thread has current: a sync() (or done(),
    collect(), a conflicting launch) from a thread bound to device 1 does not record it on
    device 1's legacy stream (which would release the device-0 launch, and free its arrays,
    while it may still run)."""
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=8)
    h, tok = sim_launch(reg, gpu, 0)                  # device 0's legacy stream, not flushed
    done = []

    def on_device_1():
        gpu.ctx = 1                                    # this thread has device 1 current
        h.sync()
        done.append(h.done())
    t = threading.Thread(target=on_device_1)
    t.start()
    t.join()
    assert done == [True]
    assert gpu.violations == [], gpu.violations      # not: (released early, (0, 0), 1)


def test_one_thread_launching_on_two_devices_legacy_streams_records_one_event_per_device():
    """The same through launches alone: a multi-GPU loop on the default stream (the launcher
    calls ensure_context(device) before each launch). A batch holds one device's launches: the
    device-1 launch first records the device-0 batch's event, in device 0's context, so no
    event of device 1's legacy stream releases the device-0 launch."""
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=2)
    gpu.ctx = 0
    h0, _ = sim_launch(reg, gpu, 0)
    gpu.ctx = 1
    h1, _ = sim_launch(reg, gpu, 0)
    assert h0.event is not None and h0.event.where == (0, 0)
    assert h1.event is not h0.event
    reg.collect()
    assert h1.event is not None and h1.event.where == (1, 0)
    gpu.finish((1, 0))                            # device 1 is done, device 0 is not
    reg.collect()
    assert gpu.violations == [], gpu.violations   # not: device 0's launch released early


def test_sync_from_a_thread_without_a_current_context_records_in_the_launches_context():
    """sync()/done() may first create and record the shared event on the NULL stream, which
    needs a current context: they do so in the batch's context, so a worker thread that never
    touched CUDA can poll a handle (no CUDA_ERROR_INVALID_CONTEXT)."""
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=8)
    h, _tok = sim_launch(reg, gpu, 0)
    gpu.finish()
    errors = []

    def worker():
        gpu.ctx = None
        try:
            errors.append(h.done())
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert errors == [True], errors                   # not: RuntimeError INVALID_CONTEXT


# ============================================================================ retention

def test_legacy_launches_are_flushed_while_only_other_streams_launch():
    """Completed entries are released by later register() calls (the held set is
    O(live launches + collect_every)), also a legacy-stream launch followed only by launches on
    other streams: _collect_locked flushes (every collect_every registrations) when
    _unflushed > 0 and capture allows, so its arrays are not held until the user syncs."""
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=4)
    big = Buffer(1 << 10)
    ref = weakref.ref(big)
    sim_launch(reg, gpu, 0, big)
    del big
    for _ in range(100):
        sim_launch(reg, gpu, 5)
        gpu.finish()
    gc.collect()
    assert gpu.violations == []
    assert ref() is None, "the legacy launch's arrays are still held"


# ============================================================================ invariants

def test_random_interleavings_of_streams_never_release_early_or_reuse_a_live_event():
    for seed in range(60):
        rng = random.Random(seed)
        gpu = SimGPU()
        reg = CheckedRegistry(gpu, collect_every=rng.choice([1, 2, 3, 8]),
                              pool_size=rng.choice([0, 1, 2, 64]))
        handles = []
        for _ in range(150):
            op = rng.random()
            if op < 0.5:
                h, _ = sim_launch(reg, gpu, rng.choice([0, 0, 0, 1, 5, 7]))
                handles.append(h)
            elif op < 0.6 and handles:
                rng.choice(handles).sync()
            elif op < 0.75 and handles:
                rng.choice(handles).done()
            elif op < 0.8:
                reg.collect()
            elif op < 0.85:
                reg.synchronize_all()
                assert reg.pending() == 0
            else:
                gpu.finish_random(rng)
            check_users_consistent(reg)
            assert gpu.violations == [], (seed, gpu.violations)
        reg.synchronize_all()
        assert reg.pending() == 0 and reg._users == {} and reg._unflushed == 0
        # every event went back to the pool or was destroyed, exactly once
        pooled = [e for pool in reg._pools.values() for e in pool]   # every device's pool
        live = {id(e) for e in pooled} | {id(e) for e in gpu.destroyed}
        assert len(pooled) + len(gpu.destroyed) == len(gpu.created) == len(live)


def test_conflicting_launches_wait_for_an_event_recorded_after_the_launch_they_conflict_with():
    """Random legacy / other-stream launches reading or writing slices of one buffer: each
    conflict found makes the new stream wait for an event of the conflicting launch's stream
    covering that launch (so covering all its earlier ones)."""
    buf = np.zeros(64)
    for seed in range(40):
        rng = random.Random(seed)
        gpu = SimGPU()
        reg = CheckedRegistry(gpu, collect_every=rng.choice([1, 3, 8, 64]))
        launches = []      # (stream key, pos, reads, writes)
        for _ in range(60):
            stream = rng.choice([0, 0, 5, 7])
            lo = rng.randrange(0, 56)
            arg = as_array_arg(FakeDeviceArray(buf[lo:lo + 8]), "x")
            writes = [arg] if rng.random() < 0.5 else []
            expect = [(k, pos) for (k, pos, r, w) in launches
                      if k != gpu.key(stream) and not gpu.complete(k, pos)
                      and (any(_overlap(arg, x) for x in w)
                           or (writes and any(_overlap(arg, x) for x in r)))]
            before = len(gpu.waits)
            with reg._lock:
                reg.order_after_conflicts(stream, [arg], writes)
                h, tok = sim_launch(reg, gpu, stream, arg, writes=writes)
            new = gpu.waits[before:]
            for k, pos in expect:
                assert any(w[2] == k and w[3] >= pos for w in new), (seed, k, pos, new)
            launches.append((tok.where, tok.pos, [arg], writes))
            if rng.random() < 0.3:
                gpu.finish_random(rng)
            assert gpu.violations == []


def _overlap(a, b):
    from numba_tile.runtime.overlap import shares_memory
    return shares_memory(a, b)


def test_threads_launching_syncing_and_collecting_keep_the_invariants():
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=3, pool_size=2)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    errors = []

    def worker(seed):
        rng = random.Random(seed)
        try:
            mine = []
            for _ in range(300):
                op = rng.random()
                if op < 0.5:
                    with reg._lock:
                        h, _ = sim_launch(reg, gpu, rng.choice([0, 0, 2, 5]))
                    mine.append(h)
                elif op < 0.65 and mine:
                    rng.choice(mine).sync()
                elif op < 0.8 and mine:
                    rng.choice(mine).done()
                elif op < 0.85:
                    reg.collect()
                else:
                    gpu.finish_random(rng)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    try:
        ts = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    reg.synchronize_all()
    assert gpu.violations == [] and reg.pending() == 0 and reg._users == {}


def test_out_of_order_sync_and_done_on_entries_sharing_an_event_pool_it_once():
    for pool_size in (0, 64):
        backend = FakeBackend()
        reg = InflightRegistry(backend, collect_every=4, pool_size=pool_size)
        hs = [reg.register(0, (Buffer(1),)) for _ in range(4)]
        ev = backend.created[0]
        assert all(h.event is ev for h in hs)
        ev.complete = True
        assert hs[2].done()                 # releases 2, then the collection the rest
        assert all(h.finished for h in hs)
        assert reg._users == {}
        if pool_size:
            assert reg._pool == [ev] and backend.destroyed == []
        else:
            assert backend.destroyed == [ev] and reg._pool == []
        hs[0].sync()
        hs[3].sync()
        assert backend.synchronized == []   # already released: no wait, nothing pooled again
        assert len(reg._pool) + len(backend.destroyed) == 1


def test_a_shared_event_is_not_reused_while_the_head_of_its_batch_waits():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=2, pool_size=64)
    stuck = reg.register(7, (Buffer(1),))
    a = reg.register(0, (Buffer(1),))
    b = reg.register(0, (Buffer(1),))
    shared = a.event
    assert b.event is shared
    shared.complete = True
    b.sync()                                  # b released; a still relies on shared
    assert not a.finished or a.event is None
    # a was released by the collection after b (its event completed): pooled once
    assert a.finished and reg._pool.count(shared) == 1 and reg._users == {}
    assert not stuck.finished


def test_a_failing_flush_leaves_every_entry_held_and_the_next_flush_covers_them():
    class Flaky(FakeBackend):
        fail = 0

        def record(self, event, stream):
            if self.fail:
                self.fail -= 1
                raise RuntimeError("cuEventRecord failed")
            super().record(event, stream)
    backend = Flaky()
    reg = InflightRegistry(backend, collect_every=2)
    keep = Buffer(1)
    ref = weakref.ref(keep)
    h1 = reg.register(0, (keep,))
    del keep
    backend.fail = 1
    with pytest.raises(RuntimeError):
        reg.register(0, (Buffer(1),))       # the batch is full: its flush fails
    # the launch was filed (held) although register raised; nothing half-done
    assert reg._unflushed == 2 and reg.pending() == 2 and reg._users == {}
    assert h1.event is None and len(reg._pool) == 1
    backend.fail = 1
    with pytest.raises(RuntimeError):
        h1.sync()                           # its flush fails: nothing waited, nothing released
    assert backend.synchronized == [] and not h1.finished and h1.event is None
    gc.collect()
    assert ref() is not None
    assert not h1.done()                    # records now: one event after both launches
    ev = h1.event
    assert ev is not None and reg._users == {id(ev): 2} and reg._unflushed == 0
    assert reg._pool == [] and len(backend.created) == 1    # the returned event was reused
    ev.complete = True
    assert reg.collect() == 2 and reg._pool == [ev]


def test_capture_toggling_mid_batch_holds_refuses_then_flushes_after():
    backend = CapturingBackend()
    reg = InflightRegistry(backend, collect_every=3)
    buf = np.zeros(16)
    z = as_array_arg(FakeDeviceArray(buf[:8]), "z")
    w = reg.register(0, (z,), writes=(z,))
    backend.forbidden = True
    # other streams still launch and file events while the legacy stream is off limits
    other = reg.register(5, (Buffer(1),))
    assert other.event is not None and w.event is None
    reader = as_array_arg(FakeDeviceArray(buf[2:4]), "y")
    with pytest.raises(CaptureError):
        reg.order_after_conflicts(7, [reader], [])
    assert backend.waits == []
    assert not w.done()
    with pytest.raises(CaptureError):
        w.sync()
    with pytest.raises(CaptureError):
        reg.synchronize_all()
    assert backend.synchronized == []        # refused before waiting on anything
    assert reg.collect() == 0 and reg.pending() == 2
    backend.forbidden = False
    reg.collect()
    ev = w.event
    assert ev is not None and ev.recorded_on == 0
    reg.synchronize_all()
    assert reg.pending() == 0


def test_synchronize_all_with_mixed_streams_and_per_thread_streams():
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=5)
    for s in (0, 2, 5, 0, 1, 2, 0):
        sim_launch(reg, gpu, s)
    out = []

    def other():
        sim_launch(reg, gpu, 2)
        sim_launch(reg, gpu, 0)
        out.append(1)
    t = threading.Thread(target=other)
    t.start()
    t.join()
    reg.synchronize_all()
    assert reg.pending() == 0 and gpu.violations == [] and reg._users == {}


def test_per_thread_stream_launch_conflicting_with_an_unflushed_legacy_launch_waits():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=64)
    buf = np.zeros(16)
    z = as_array_arg(FakeDeviceArray(buf[:8]), "z")
    reg.register(0, (z,), writes=(z,))
    later = reg.register(0, (Buffer(1),))
    res = []

    def other():
        y = as_array_arg(FakeDeviceArray(buf[1:3]), "y")
        res.append(reg.order_after_conflicts(2, [y], []))
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert res == [1]
    ev = later.event
    assert ev is not None and backend.waits == [(2, ev)] and ev.recorded_on == 0


def test_conflicts_materialize_a_lazy_legacy_entry():
    class FakePlan:
        def __init__(self):
            self.calls = 0

        def describe(self, ptrs, arrays, streams):
            self.calls += 1
            args = [as_array_arg(a, "z") for a in arrays]
            return args, args
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=64)
    plan = FakePlan()
    host = np.zeros(8)
    arr = FakeDeviceArray(host)
    with reg._lock:
        h = reg.file_locked(0, (arr,), (), (arr,), (plan, (0,), (arr,), (None,)))
    assert h.event is None and h.lazy is not None
    reader = as_array_arg(FakeDeviceArray(host[:2]), "y")
    assert reg.conflicts(0, [reader], []) == []          # same stream: no materialize
    assert reg.conflicts(1, [reader], []) == []          # 1 is the legacy stream too
    assert plan.calls == 0
    assert reg.order_after_conflicts(5, [reader], []) == 1
    assert plan.calls == 1 and h.lazy is None and h.event is not None
    assert backend.waits == [(5, h.event)]
    h.event.complete = True
    assert h.done() and h.refs == () and h.lazy is None


def test_collect_every_one_gives_each_legacy_launch_its_own_event():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=1)
    hs = [reg.register(0, (Buffer(1),)) for _ in range(3)]
    assert all(h.event is not None for h in hs) and reg._users == {} and reg._unflushed == 0
    assert len({id(h.event) for h in hs}) == 3 or len(backend.created) < 3
    for ev in backend.created:
        ev.complete = True
    reg.collect()
    assert reg.pending() == 0


def test_register_with_arrays_none_returns_the_objects_of_array_args():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=64)
    host = np.zeros(4)
    arr = FakeDeviceArray(host)
    a = as_array_arg(arr, "x")
    other = Buffer(1)
    h = reg.register(0, (a, other, 3))
    assert h.sync() == (arr, other, 3) or list(h.sync()) == [arr, other, 3]
    h2 = reg.register(0, [a], arrays=())
    assert h2.sync() == ()


def test_pool_size_zero_destroys_each_shared_event_once():
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=3, pool_size=0)
    for _ in range(9):
        sim_launch(reg, gpu, 0)
    gpu.finish()
    reg.collect()
    assert len(gpu.destroyed) == 3 == len(set(map(id, gpu.destroyed))) == len(gpu.created)
    assert gpu.violations == []


def test_sync_on_an_event_another_thread_releases_meanwhile_keeps_it_alive():
    """_wait() synchronizes outside the lock on the event it read; another thread that observes
    the event complete (done() on an entry sharing it, collect()) releases every entry, but the
    event keeps a use count while a thread waits on it outside the lock: it is not destroyed (or
    pooled) under the waiting thread (cuEventSynchronize on a destroyed handle is an error, or a
    wait on a new event that reuses the handle)."""
    gpu = SimGPU()
    reg = CheckedRegistry(gpu, collect_every=2, pool_size=0)
    h1, _ = sim_launch(reg, gpu, 0)
    h2, _ = sim_launch(reg, gpu, 0)
    real_sync = gpu.synchronize

    def racing_sync(event):
        gpu.finish()
        t = threading.Thread(target=h2.done)     # another thread polls meanwhile
        t.start()
        t.join()
        real_sync(event)
    gpu.synchronize = racing_sync
    h1.sync()
    assert gpu.violations == [], gpu.violations   # not: synchronize on a destroyed event


def test_graph_replay_waits_for_the_shared_event_and_refuses_under_capture(fake, monkeypatch):
    from numba_tile.runtime import driver
    reg = inflight.default_registry()
    queries = {"done": False}
    monkeypatch.setattr(reg.backend, "query", lambda e: queries["done"])
    waits, launched = [], []
    monkeypatch.setattr(reg.backend, "wait", lambda s, e: waits.append((s, e)))
    monkeypatch.setattr(driver, "graph_launch", lambda ex, s: launched.append(s), raising=False)
    buf = np.zeros(16, np.float32)
    z = as_array_arg(FakeDeviceArray(buf[:8]), "z")
    with reg._lock:
        w = reg.register(0, (z,), writes=(z,), device=0)
    assert w.event is None
    g = capture.Graph()
    g._exec = "exec"
    g._device = 0
    g._arrays = [as_array_arg(FakeDeviceArray(buf[2:4]), "y")]
    g._writes = []
    h = g.replay(stream=5)
    assert w.event is not None and waits == [(5, w.event)] and launched == [5]
    with pytest.raises(StreamConflictError):
        g.replay(stream=7, on_conflict="raise")
    # a capture forbids the legacy stream: a replay that must wait for an unflushed legacy
    # launch is refused before the graph is launched
    w2 = reg.register(0, (as_array_arg(FakeDeviceArray(buf[2:4]), "q"),),
                      writes=(as_array_arg(FakeDeviceArray(buf[2:4]), "q"),), device=0)
    assert w2.event is None
    monkeypatch.setattr(reg.backend, "capturing", lambda s: s == 0, raising=False)
    n = len(launched)
    with pytest.raises(CaptureError, match="Graph.replay"):
        g.replay(stream=9)
    assert len(launched) == n
    monkeypatch.setattr(reg.backend, "capturing", lambda s: False, raising=False)
    g._exec = None
    del h
