"""Completion events and queues with several GPUs: events pooled per device, peer launches filed
apart from the default streams' batches (each entry knows its device; a default stream's queue is
scanned per device), peer producers' streams, the driver's device for a pointer, ``range_access``
at granule edges; a peer read is refused inside a graph capture; an event of unknown device is
the current context's; a graph replay gives the thread's context back.

On the tests' recording driver with two fake devices (``peers``) and the context-aware event
model of test_peer_read_checks.py (``ctx_events``: an event is recorded only on a stream of its
own context; handles 0/1/2 name the current context's default streams).
"""

import contextlib

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import CaptureError
from numba_tile.runtime import capture, driver, inflight
from numba_tile.runtime.arrays import as_array_arg
from numba_tile.runtime.fakes import FakeDeviceArray
from tests.unit.test_device_restore import CTX, two_devices  # noqa: F401 - fixture
from tests.unit.test_launch_plans import _ptr, fake  # noqa: F401 - fixture
from tests.unit.test_launch_plans_hostile_arguments import _graph_driver
from tests.unit.test_peer_devices import _on, axpy, bindings, peers  # noqa: F401 - fixture
from tests.unit.test_peer_read_checks import ctx_events  # noqa: F401 - fixture

RNG = np.random.default_rng(151)


def _host(n):
    return RNG.standard_normal(n).astype(np.float32)


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(axpy, "_plans", {})
    monkeypatch.setattr(capture, "_held", [])
    monkeypatch.setattr(capture, "_by_capture", {})
    monkeypatch.setattr(capture, "_ours", {})


def _cross_waits(log, stream_ctx, event_ctx):
    return [w for w in log["waits"] if w[1] == stream_ctx and w[2] == event_ctx]


# ============================================================================ ordering

def test_a_peer_launch_waits_for_every_devices_legacy_writer(ctx_events, peers, fake, fresh):
    """All on the default streams. A (device 1) writes y; B (device 0) writes x; Q (device 0,
    its output on 0) reads x and, as a peer, y. A default stream's queue is scanned per device
    (the newest conflicting launch covers the earlier ones only on its own device's legacy
    stream): Q waits for B and for A, so it reads y after A has written it (y has no CAI
    producer stream: a PyTorch tensor exports CAI v2)."""
    state = peers
    ctx_events["pending"] = True
    y = _on(state, 1, 1000)
    axpy(_on(state, 1, 1000), _on(state, 1, 1000), nt.partition(y, 256), 256)     # A
    x = _on(state, 0, 1000)
    axpy(_on(state, 0, 1000), _on(state, 0, 1000), nt.partition(x, 256), 256)     # B
    out = _on(state, 0, 1000)
    axpy(y, x, nt.partition(out, 256), 256)                                       # Q
    assert (0, 1) in state["enabled"]
    assert _cross_waits(ctx_events, CTX[0], CTX[1]), (
        f"device 0's launch reading y was not ordered after device 1's launch writing it: "
        f"waits {ctx_events['waits']}")


def test_the_same_on_an_explicit_stream_reading_both(ctx_events, peers, fake, fresh):
    """As above with Q on an explicit stream of device 1 (the launch device of its output):
    A (device 1, legacy) writes y, B (device 0, legacy) writes x, Q reads both. Q waits for
    both: A's legacy stream is not Q's stream."""
    state = peers
    ctx_events["pending"] = True
    fake.stream_devices[0x91] = 1
    y = _on(state, 1, 1000)
    axpy(_on(state, 1, 1000), _on(state, 1, 1000), nt.partition(y, 256), 256)     # A
    x = _on(state, 0, 1000)
    axpy(_on(state, 0, 1000), _on(state, 0, 1000), nt.partition(x, 256), 256)     # B
    out = _on(state, 1, 1000)
    axpy(x, y, nt.partition(out, 256), 256, stream=0x91)                          # Q
    assert _cross_waits(ctx_events, CTX[1], CTX[0]), "no wait for B"
    assert _cross_waits(ctx_events, CTX[1], CTX[1]), (
        f"the launch on stream 0x91 reading y was not ordered after device 1's legacy launch "
        f"writing it: waits {ctx_events['waits']}")


def _peer_graph(state, fake, monkeypatch, w):
    _graph_driver(fake, monkeypatch)
    fake.stream_devices[0x51] = 1
    g = nt.Graph()
    with g.capture(device=1):
        axpy(w, _on(state, 1, 1000), nt.partition(_on(state, 1, 1000), 256), 256)
    return g


@pytest.mark.parametrize("producer_stream", [None, 1])
def test_a_peer_read_cannot_be_captured_into_a_graph(
        ctx_events, peers, fake, monkeypatch, fresh, producer_stream):
    """A graph captured on device 1 holding a launch that reads w (device 0) would replay it
    without the per-call peer checks: filed under the legacy batch (a later device-0 write of
    w would not wait for it) and without waiting for w's producer stream. Such a capture is
    refused, before anything is captured, naming the kernel and the devices."""
    state = peers
    w = _on(state, 0, 1000) if producer_stream is None else FakeDeviceArray(
        _host(1000), stream=producer_stream)
    n = len(fake.launches)
    with pytest.raises(CaptureError, match=r"axpy.*'w' is on CUDA device 0.*cannot be captured"):
        _peer_graph(state, fake, monkeypatch, w)
    assert len(fake.launches) == n


class _CtxBackend:
    """An event backend with two contexts: events remember the context current at creation;
    streams 0x90 / 0x91 are device 0's / 1's, 0 the current context's legacy stream."""

    def __init__(self):
        self.current = 0
        self.created = 0

    def create(self):
        self.created += 1
        return {"ctx": self.current}

    def _ctx(self, stream):
        return {0x90: 0, 0x91: 1}.get(stream, self.current)

    def record(self, event, stream):
        if event["ctx"] != self._ctx(stream):
            raise driver.CudaDriverError("cuEventRecord", 400, "CUDA_ERROR_INVALID_HANDLE")

    def query(self, event):
        return True

    def synchronize(self, event):
        pass

    def wait(self, stream, event):
        pass

    def destroy(self, event):
        pass

    def current_device(self):
        return self.current

    def in_device(self, device):
        @contextlib.contextmanager
        def scope():
            old, self.current = self.current, device
            try:
                yield
            finally:
                self.current = old
        return scope()


def _arg(n=8):
    return as_array_arg(FakeDeviceArray(np.zeros(n, np.float32)), "a")


def test_events_of_an_unknown_device_are_not_pooled_across_contexts():
    """register(device=None) (what the public inflight.register() always passes, and what
    wait_for_streams / order_after_conflicts default to) creates its event in whichever context
    is current. The next unknown-device launch from another context does not get that event
    (the driver would refuse to record it on its stream after the kernel was queued, and its
    arguments would become orphans): with a backend that has in_device, an event of unknown
    device is the current context's."""
    b = _CtxBackend()
    reg = inflight.InflightRegistry(backend=b)
    b.current = 1
    reg.register(0x91, (_arg(),)).sync()              # an event of context 1, pooled under None
    b.current = 0
    reg.register(0x90, (_arg(),)).sync()              # CudaDriverError: reused on context 0


def test_wait_for_streams_without_a_device_does_not_reuse_another_contexts_event():
    """The same through wait_for_streams (a public method, device defaults to None)."""
    b = _CtxBackend()
    reg = inflight.InflightRegistry(backend=b)
    b.current = 1
    reg.wait_for_streams(0x91, [0])                   # event made in context 1, pooled (None)
    b.current = 0
    reg.wait_for_streams(0x90, [0])                   # recorded on context 0's legacy stream


# ============================================================================ pools and queues

def test_events_of_each_device_stay_in_their_pool(monkeypatch):
    b = _CtxBackend()
    reg = inflight.InflightRegistry(backend=b, pool_size=2)
    for _ in range(5):
        for dev, s in ((1, 0x91), (0, 0x90), (1, 0), (0, 0)):
            with b.in_device(dev):
                reg.register(s, (_arg(),), device=dev).sync()
    reg.collect()
    assert set(reg._pools) <= {0, 1, None}
    assert all(len(p) <= 2 for p in reg._pools.values())
    assert all(e["ctx"] == d for d, p in reg._pools.items() if d is not None for e in p)
    # every live event (pooled) known, nothing else kept
    assert len(reg._event_device) == sum(len(p) for p in reg._pools.values())


def test_the_legacy_batch_of_one_device_is_recorded_in_its_context():
    b = _CtxBackend()
    reg = inflight.InflightRegistry(backend=b, collect_every=1000)
    with b.in_device(1):
        h1 = reg.register(0, (_arg(),), device=1)
    with b.in_device(0):
        h0 = reg.register(0, (_arg(),), device=0)     # flushes device 1's batch in context 1
        assert h1.event is not None and h1.event["ctx"] == 1
        h0.sync()                                     # device 0's batch, in context 0
    assert h0.finished and h1.done()


def test_a_legacy_launch_of_unknown_device_gets_its_own_event():
    b = _CtxBackend()
    reg = inflight.InflightRegistry(backend=b, collect_every=1000)
    with b.in_device(1):
        h = reg.register(0, (_arg(),), device=None)
    assert h.event is not None and reg._unflushed == 0


def test_peer_launches_of_two_devices_are_different_queues():
    assert inflight.peer_key(0, 0) != inflight.peer_key(0, 1)
    assert inflight.peer_key(0, 1) != 0 and inflight.peer_key(0x91, 1) == 0x91


def test_the_plan_refuses_a_pointer_moved_to_the_other_device(peers, fake, fresh):
    """A plan made for all-on-device-1 arrays; then the same kinds whose output pointer the
    driver places on device 0 (the producer's field is not looked at by FakeDeviceArray):
    the plan's owner check sends it to the slow path, which launches on device 0 or refuses."""
    state = peers
    for _ in range(2):
        axpy(_on(state, 1, 1536), _on(state, 1, 1536), nt.partition(_on(state, 1, 1536), 256),
             256)
    assert axpy._last_plan is not None and axpy._last_plan.device == 1
    slow = fake.slow_calls["n"]
    w, x = _on(state, 1, 1536), _on(state, 1, 1536)
    out = _on(state, 0, 1536)
    axpy(w, x, nt.partition(out, 256), 256)
    assert fake.slow_calls["n"] == slow + 1
    assert (0, 1) in state["enabled"]                # launched on device 0, reading device 1


def test_owner_device_is_not_asked_for_empty_or_host_arrays(peers, fake, monkeypatch):
    from numba_tile.runtime import arrays
    asked = []
    real = arrays._owner_device
    monkeypatch.setattr(arrays, "_owner_device", lambda p, d: asked.append(p) or real(p, d))
    as_array_arg(FakeDeviceArray(np.zeros(0, np.float32)), "e")
    as_array_arg(np.zeros(4, np.float32), "h")
    assert asked == []
    as_array_arg(FakeDeviceArray(np.zeros(4, np.float32)), "f")
    assert len(asked) == 1


def test_owner_device_without_a_device_count_keeps_the_producers_word(monkeypatch):
    from numba_tile.runtime import arrays
    monkeypatch.setattr(driver, "device_count", lambda: None)
    monkeypatch.setattr(driver, "pointer_device",
                        lambda p: (_ for _ in ()).throw(AssertionError("asked")))
    monkeypatch.setattr(arrays, "_driver", None)
    assert arrays._owner_device(0x1000, 3) == 3


def test_range_access_at_granule_edges(bindings, monkeypatch):
    """hi exactly on a granule boundary asks no granule past it; lo on a boundary asks its own
    granule once; a range ending exactly at hi ends the walk (no query past the array)."""
    from tests.unit.test_peer_devices import _ranges
    r = _ranges(bindings, monkeypatch, [(1120, 64, 0, 0, [3, 0, 3, 1])])
    assert driver.range_access(1120, 1136, 0) == [3] and r.asked == [1120]
    r.asked.clear()
    assert driver.range_access(1121, 1152, 0) == [3, 0] and r.asked == [1121, 1136]
    r.asked.clear()
    assert driver.range_access(1136, 1184, 0) == [0, 3, 1] and r.asked == [1136, 1152, 1168]


def test_a_graph_replay_gives_the_threads_context_back(peers, fake, monkeypatch, fresh):
    """Graph.replay makes the graph's device current for the replay and gives the thread's
    context back after it, as a kernel launch does (not the graph's device current for good)."""
    state = peers
    _graph_driver(fake, monkeypatch)
    fake.stream_devices[0x51] = 1
    g = nt.Graph()
    with g.capture(device=1):
        axpy(_on(state, 1, 1000), _on(state, 1, 1000), nt.partition(_on(state, 1, 1000), 256),
             256)
    try:
        state["current"] = CTX[0]
        g.replay().sync()
        assert state["current"] == CTX[0]
    finally:
        g.close()
        fake.post_all()
