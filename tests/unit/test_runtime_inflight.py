"""In-flight launch registry (runtime/inflight.py) with a fake event backend (case T1)."""

import gc
import weakref

import numpy as np

from numba_tile.runtime.arrays import as_array_arg
from numba_tile.runtime.fakes import FakeDeviceArray
from numba_tile.runtime.inflight import InflightRegistry, LaunchHandle


class FakeEvent:
    def __init__(self, n):
        self.n = n
        self.recorded_on = None
        self.complete = False


class FakeBackend:
    """Events complete only when the test says so (or a later event of their stream is waited on,
    as stream order implies); stream waits are logged."""

    def __init__(self):
        self.recorded = {}  # stream -> events in record order
        self.created = []
        self.destroyed = []
        self.waits = []
        self.synchronized = []
        self.wait_sources = []  # (waiting stream, stream the event was recorded on) at wait time

    def create(self):
        ev = FakeEvent(len(self.created))
        self.created.append(ev)
        return ev

    def record(self, event, stream):
        event.recorded_on = stream
        event.complete = False
        self.recorded.setdefault(stream, []).append(event)

    def query(self, event):
        return event.complete

    def synchronize(self, event):
        self.synchronized.append(event)
        order = self.recorded.get(event.recorded_on, [])
        for earlier in order[:order.index(event) + 1] if event in order else [event]:
            earlier.complete = True

    def wait(self, stream, event):
        self.waits.append((stream, event))
        self.wait_sources.append((stream, event.recorded_on))

    def destroy(self, event):
        self.destroyed.append(event)


class Buffer:
    """A weak-referenceable user array."""

    def __init__(self, n):
        self.data = np.zeros(n)


def _launch(reg, stream, *objs):
    return reg.register(stream, tuple(objs))


def test_refs_held_until_event_completes_even_if_handle_dropped():
    backend = FakeBackend()
    reg = InflightRegistry(backend)
    x, y = Buffer(4), Buffer(4)
    refs = [weakref.ref(x), weakref.ref(y)]
    handle = _launch(reg, 1, x, y)
    event = backend.created[0]
    assert event.recorded_on == 1
    del x, y, handle
    gc.collect()
    assert all(r() is not None for r in refs)  # the registry holds them (T1)
    assert reg.collect() == 0 and reg.pending() == 1
    event.complete = True
    assert reg.collect() == 1 and reg.pending() == 0
    gc.collect()
    assert all(r() is None for r in refs)


def test_register_releases_completed_entries():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=1)
    a = Buffer(1)
    ref = weakref.ref(a)
    _launch(reg, 5, a)
    del a
    backend.created[0].complete = True
    _launch(reg, 5, Buffer(1))
    gc.collect()
    assert ref() is None
    assert reg.pending() == 1
    # the completed event was reused from the pool, not created anew
    assert len(backend.created) == 1


def test_sync_returns_user_objects_and_earlier_launches_are_seen_done():
    backend = FakeBackend()
    reg = InflightRegistry(backend)
    host = np.zeros(8)
    arg = as_array_arg(FakeDeviceArray(host), "x")
    h1 = reg.register(3, (arg, 42))
    h2 = reg.register(3, (Buffer(2),))
    h3 = reg.register(4, (Buffer(2),))
    assert not h1.done() and not h2.done()
    out = h2.sync()
    assert isinstance(out[0], Buffer)
    assert h2.done() and not h3.done()
    assert h1.done()  # its event completed before h2's (stream order, modelled by the fake)
    assert reg.pending() == 1
    assert backend.synchronized == [backend.created[1]]
    got = h1.sync()
    assert got[0] is arg.obj and got[1] == 42
    assert reg.pending() == 1
    reg.synchronize_all()
    assert h3.done() and reg.pending() == 0


def test_done_polls_without_blocking():
    backend = FakeBackend()
    reg = InflightRegistry(backend)
    h = _launch(reg, 0, Buffer(1))
    assert not h.done()
    backend.created[0].complete = True
    assert h.done() and reg.pending() == 0
    assert h.sync() and backend.synchronized == []  # already done: no wait


def test_pool_overflow_destroys_events():
    backend = FakeBackend()
    reg = InflightRegistry(backend, pool_size=2)
    handles = [_launch(reg, s, Buffer(1)) for s in range(1, 6)]  # 5 streams: 5 events
    for ev in backend.created:
        ev.complete = True
    reg.collect()
    assert len(backend.destroyed) == 3
    assert all(h.done() for h in handles)


def test_cross_stream_conflicts_make_the_new_stream_wait():
    backend = FakeBackend()
    reg = InflightRegistry(backend)
    buf = np.zeros(16)
    out = as_array_arg(FakeDeviceArray(buf[:8]), "z")
    inp = as_array_arg(FakeDeviceArray(buf[8:]), "x")
    reg.register(1 << 20, (out, inp), writes=(out,))
    writer_event = backend.created[0]
    # reading what stream A writes, from stream B: wait
    reader = as_array_arg(FakeDeviceArray(buf[4:6]), "y")
    assert reg.order_after_conflicts(2 << 20, [reader], []) == 1
    assert backend.waits[-1] == (2 << 20, writer_event)
    # writing what stream A reads: wait
    w = as_array_arg(FakeDeviceArray(buf[10:12]), "w")
    assert reg.order_after_conflicts(2 << 20, [w], [w]) == 1
    # reading what A only reads: no wait; same stream: no wait
    r = as_array_arg(FakeDeviceArray(buf[10:12]), "r")
    assert reg.order_after_conflicts(2 << 20, [r], []) == 0
    assert reg.order_after_conflicts(1 << 20, [reader], []) == 0
    # after completion: nothing to wait for
    writer_event.complete = True
    assert reg.order_after_conflicts(2 << 20, [reader], []) == 0


def test_wait_for_producer_streams():
    backend = FakeBackend()
    reg = InflightRegistry(backend)
    reg.wait_for_streams(9, [7, 8])
    assert backend.wait_sources == [(9, 7), (9, 8)]
    assert reg.pending() == 0


def test_handle_type():
    reg = InflightRegistry(FakeBackend())
    assert isinstance(_launch(reg, 0), LaunchHandle)


def test_release_never_rests_on_stream_order_alone():
    # A stream handle reused after its stream was destroyed: the older entry's event is still
    # pending although a newer entry on the "same" handle has completed.
    backend = FakeBackend()
    reg = InflightRegistry(backend)
    old, new = Buffer(1), Buffer(1)
    ref_old = weakref.ref(old)
    reg.register(7, (old,))
    h_new = reg.register(7, (new,))
    backend.created[1].complete = True  # only the newer launch is done
    del old
    assert h_new.done()
    reg.collect()
    gc.collect()
    assert ref_old() is not None and reg.pending() == 1
    backend.created[0].complete = True
    reg.collect()
    gc.collect()
    assert ref_old() is None and reg.pending() == 0


def test_conflicts_name_the_touched_argument():
    backend = FakeBackend()
    reg = InflightRegistry(backend)
    buf = np.zeros(32)
    out = as_array_arg(FakeDeviceArray(buf[:8]), "z")
    inp = as_array_arg(FakeDeviceArray(buf[8:16]), "x")
    reg.register(1 << 20, (out, inp), writes=(out,))
    a = as_array_arg(FakeDeviceArray(buf[20:24]), "a")       # untouched
    b = as_array_arg(FakeDeviceArray(buf[6:10]), "b")        # overlaps z (written) and x
    found = reg.conflicts(2 << 20, [a, b], [])
    assert len(found) == 1 and found[0][1] is b
    assert reg.conflicts(2 << 20, [a], [a]) == []
    assert backend.waits == []                               # conflicts() only looks


def test_register_polls_every_collect_every_launches_and_stays_bounded():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=4)
    refs = []
    for i in range(40):
        b = Buffer(1)
        refs.append(weakref.ref(b))
        _launch(reg, 5, b)
        del b
        for e in backend.created:
            e.complete = True          # the GPU has finished everything queued so far
        # completed launches are released within collect_every registrations
        assert reg.pending() <= 4
    gc.collect()
    assert sum(r() is not None for r in refs) <= 4
    reg.collect()
    gc.collect()
    assert all(r() is None for r in refs) and reg.pending() == 0


# -- the legacy stream's shared event -------------------------------------------------------------

class CapturingBackend(FakeBackend):
    """A fake whose legacy stream may be off limits, as while a blocking stream captures."""

    def __init__(self):
        super().__init__()
        self.forbidden = False

    def capturing(self, stream):
        return self.forbidden and stream == 0


def test_legacy_stream_launches_share_one_event_recorded_after_the_last():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=4)
    bufs = [Buffer(1) for _ in range(4)]
    refs = [weakref.ref(b) for b in bufs]
    handles = [_launch(reg, 0, b) for b in bufs[:3]]
    assert backend.created == [] and reg.pending() == 3       # filed without an event
    handles.append(_launch(reg, 0, bufs[3]))
    assert len(backend.created) == 1                          # one event for the four
    event = backend.created[0]
    assert backend.recorded[0] == [event]
    assert all(h.event is event for h in handles)
    del bufs
    gc.collect()
    assert all(r() is not None for r in refs) and reg.collect() == 0
    event.complete = True
    assert reg.collect() == 4 and reg.pending() == 0
    del handles                                  # a handle keeps what sync() returns
    gc.collect()
    assert all(r() is None for r in refs)
    # the shared event went back to the pool once, not once per entry
    assert reg._pool == [event] and backend.destroyed == [] and reg._users == {}


def test_a_legacy_launch_without_an_event_gets_one_when_it_is_needed():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=64)
    h1 = _launch(reg, 0, Buffer(1))
    h2 = _launch(reg, 0, Buffer(1))
    assert backend.created == []
    assert not h1.done()                         # done() records the shared event, then polls
    assert len(backend.created) == 1 and h1.event is h2.event
    h3 = _launch(reg, 0, Buffer(1))
    assert h3.event is None
    assert h3.sync() and backend.synchronized == [backend.created[1]]
    assert h1.done() and h2.done() and reg.pending() == 0
    # collect() records one too: nothing stays unobservable
    h4 = _launch(reg, 0, Buffer(1))
    reg.collect()
    assert h4.event is not None and h4.event.recorded_on == 0 and not h4.event.complete


def test_another_stream_waits_for_the_shared_event_recorded_after_the_conflicting_launch():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=64)
    buf = np.zeros(16)
    out = as_array_arg(FakeDeviceArray(buf[:8]), "z")
    reg.register(0, (out,), writes=(out,))
    later = reg.register(0, (as_array_arg(FakeDeviceArray(buf[8:]), "x"),))
    assert backend.created == []
    reader = as_array_arg(FakeDeviceArray(buf[2:4]), "y")
    assert reg.order_after_conflicts(5, [reader], []) == 1
    event = backend.created[0]
    assert event.recorded_on == 0 and backend.waits == [(5, event)]
    assert later.event is event                  # recorded after every legacy launch so far


def test_a_shared_event_is_pooled_only_after_every_entry_that_shares_it_is_released():
    backend = FakeBackend()
    reg = InflightRegistry(backend, collect_every=64)
    old = _launch(reg, 0, Buffer(1))
    reg.collect()                                # old gets an event of its own
    first = backend.created[0]
    a, b = _launch(reg, 0, Buffer(1)), _launch(reg, 0, Buffer(1))
    reg.collect()
    shared = backend.created[1]
    assert a.event is shared and b.event is shared and old.event is first
    shared.complete = True                       # the fake: only the newer event is done
    assert b.done()                              # b released, a waits behind old
    assert a.event is shared and shared not in reg._pool
    _launch(reg, 3, Buffer(1))                   # takes no event that a still needs
    assert backend.created[2].recorded_on == 3 and shared.recorded_on == 0
    first.complete = True
    assert reg.collect() >= 2 and old.finished and a.finished
    assert reg._pool.count(shared) == 1 and reg._users == {}


def test_while_a_capture_forbids_the_legacy_stream_its_launches_stay_held_and_waits_refuse():
    import pytest
    from numba_tile.errors import CaptureError
    backend = CapturingBackend()
    reg = InflightRegistry(backend, collect_every=2)
    buf = np.zeros(8)
    out = as_array_arg(FakeDeviceArray(buf), "z")
    keep = Buffer(1)
    ref = weakref.ref(keep)
    h = reg.register(0, (out, keep), writes=(out,))
    del keep
    backend.forbidden = True
    assert not h.done() and reg.collect() == 0
    reg.register(0, (Buffer(1),))                 # the second: the batch is full, not recorded
    assert backend.created == [] and reg.pending() == 2
    gc.collect()
    assert ref() is not None
    with pytest.raises(CaptureError, match="legacy default stream"):
        h.sync()
    with pytest.raises(CaptureError, match="synchronize"):
        reg.synchronize_all()
    reader = as_array_arg(FakeDeviceArray(buf[:2]), "y")
    found = reg.conflicts(7, [reader], [])
    assert [e for e, _ in found] == [h]
    with pytest.raises(CaptureError, match="kernel 'k'"):
        reg.wait_entry(7, h, "kernel 'k'")
    del found
    assert backend.waits == []
    backend.forbidden = False                    # the capture ended
    assert reg.order_after_conflicts(7, [reader], []) == 1
    backend.synchronize(backend.created[0])
    assert h.done() and reg.pending() == 0
    del h                                        # a handle keeps what sync() returns
    gc.collect()
    assert ref() is None


class FailingBackend(FakeBackend):
    """Recording fails while ``failing`` is set (a CUDA error)."""

    def __init__(self):
        super().__init__()
        self.failing = False

    def record(self, event, stream):
        if self.failing:
            raise RuntimeError("cuEventRecord: CUDA_ERROR_LAUNCH_FAILED")
        super().record(event, stream)


def test_a_launch_whose_event_cannot_be_recorded_keeps_its_references():
    import pytest
    backend = FailingBackend()
    reg = InflightRegistry(backend)
    keep = Buffer(1)
    ref = weakref.ref(keep)
    backend.failing = True
    with pytest.raises(RuntimeError, match="cuEventRecord"):
        reg.register(3, (keep,))
    del keep
    gc.collect()
    assert ref() is not None                  # the kernel was queued: nothing says it is done
    backend.failing = False
    h = reg.register(3, (Buffer(1),))
    assert h.event is not None and reg.pending() == 1


def test_another_devices_batch_that_cannot_be_recorded_stays_held_and_the_launch_is_filed():
    backend = FailingBackend()
    backend.in_device = lambda device: __import__("contextlib").nullcontext()
    reg = InflightRegistry(backend, collect_every=64)
    first = Buffer(1)
    ref = weakref.ref(first)
    h0 = reg.register(0, (first,), device=0, arrays=())
    del first
    backend.failing = True
    second = Buffer(1)
    ref2 = weakref.ref(second)
    try:
        reg.register(0, (second,), device=1, arrays=())   # its own event fails too: raises
    except RuntimeError:
        pass
    del second
    gc.collect()
    assert ref() is not None and ref2() is not None      # both held
    assert h0.event is None and reg._unflushed == 1 and reg._unflushed_device == 0
    backend.failing = False
    h2 = reg.register(0, (Buffer(1),), device=1, arrays=())
    assert h0.event is not None and h0.event.recorded_on == 0
    assert h2.event is None and reg._unflushed_device == 1
