"""Read-only tensors on a peer GPU (``launch_device``, ``check_devices``, the plan's device,
streams of another device, overlap on addresses): a write on one device's legacy stream waits for
a peer read on another; a peer array's producer stream is ordered before the launch; a pooled
event is recorded only on a stream of its own device; a plan's guard asks the driver for the
pointers' device; a DLPack producer's device is not taken at its word; memory closed between
the ends of a peer array is refused; and the defences of plans, the verdict cache, reversed
views, groups, the interpreter, unchecked kernels, autotuning and explicit streams.

On the tests' recording driver with two fake devices (``peers`` of test_peer_devices.py). A
context-aware event model (``ctx_events``) stands in for the driver's rule that an event is
recorded only on a stream of its own context (cuEventRecord / cudaEventRecord: "event and stream
must be on the same CUDA context", else CUDA_ERROR_INVALID_HANDLE); handle 0/1/2 name the legacy
/ per-thread stream of the *current* context, one per device.
"""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import HostArrayError, TileArgumentError
from numba_tile.runtime import driver, launcher
from numba_tile.runtime.fakes import FakeDeviceArray, FakeDLPack
from tests.unit.test_device_restore import CTX, two_devices  # noqa: F401 - fixture
from tests.unit.test_launch_plans import _NumbaLike, _ptr, fake  # noqa: F401 - fixture
from tests.unit.test_peer_devices import _ends, _on, axpy, peers  # noqa: F401 - fixture

RNG = np.random.default_rng(15)


def _host(n):
    return RNG.standard_normal(n).astype(np.float32)


@pytest.fixture
def ctx_events(peers, fake, monkeypatch):
    """Events that remember the context current at their creation; recording one on a stream of
    another context fails as the driver does. Logs records and stream waits."""
    state = peers
    log = {"records": [], "waits": [], "pending": False}

    class _Ev:
        def __init__(self):
            self.ctx = state["current"]

    def stream_ctx(stream):
        if stream in (0, 1, 2):               # the current context's legacy / per-thread stream
            return state["current"]
        return CTX[fake.stream_devices.get(stream, 0)]

    def record(ev, stream):
        ctx = stream_ctx(stream)
        if ev.ctx != ctx:
            raise driver.CudaDriverError("cuEventRecord", 400, "CUDA_ERROR_INVALID_HANDLE",
                                         f"event of context {ev.ctx}, stream of {ctx}")
        log["records"].append((stream, ctx))

    def wait(stream, ev):
        log["waits"].append((stream, stream_ctx(stream), ev.ctx))

    # the fake's registry builds its DriverEventBackend lazily, at its first launch: after this
    monkeypatch.setattr(driver, "event_create", _Ev)
    monkeypatch.setattr(driver, "event_record", record)
    monkeypatch.setattr(driver, "stream_wait_event", wait)
    monkeypatch.setattr(driver, "event_query", lambda ev: not log["pending"])
    state["current"] = CTX[0]
    return log


# ============================================================================ ordering and devices

def test_a_legacy_stream_write_on_one_device_waits_for_a_peer_read_on_another(
        ctx_events, peers, fake):
    """docs/safety.md R16 'Ordering across devices': a launch on device 0 that writes memory a
    launch on device 1 is still reading waits for it, also when both run on their device's
    default (legacy) stream: the two legacy streams (both handle 0) belong to two contexts and
    are not one stream (tests/gpu/test_peer_devices.py's
    test_a_write_on_the_peer_waits_for_the_launch_reading_it is this case on the GPU)."""
    state = peers
    ctx_events["pending"] = True                     # device 1's read still running
    x = _on(state, 0, 1000)                          # device 0's memory
    copy, ones = _on(state, 1, 1000), _on(state, 1, 1000)
    axpy(x, ones, nt.partition(copy, 256), 256)      # device 1 reads x (peer), legacy stream
    assert (1, 0) in state["enabled"]
    n = len(fake.launches)
    y, z = _on(state, 0, 1000), _on(state, 0, 1000)
    axpy(y, z, nt.partition(x, 256), 256)            # device 0 overwrites x, legacy stream
    assert len(fake.launches) == n + 1
    assert any(ctx == CTX[0] and ev_ctx == CTX[1] for _s, ctx, ev_ctx in ctx_events["waits"]), (
        "device 0's legacy stream was not made to wait for device 1's launch that reads x: "
        f"waits {ctx_events['waits']}")


def test_a_peer_arrays_legacy_producer_stream_is_ordered_before_the_launch(
        ctx_events, peers, fake):
    """A CUDA Array Interface v3 producer on device 0 exports stream 1 (its legacy default
    stream, where its writes of w are queued; CuPy does so). The launch on device 1's legacy
    stream (handle 0) is not 'the same stream' as device 0's: it waits on an event recorded on
    device 0's stream, so device 1 reads w only after device 0 has written it."""
    state = peers
    w = FakeDeviceArray(_host(1000), stream=1)       # device 0 (its pointer is not device 1's)
    x, out = _on(state, 1, 1000), _on(state, 1, 1000)
    axpy(w, x, nt.partition(out, 256), 256)
    assert fake.launches
    recorded_on_peer_legacy = [r for r in ctx_events["records"]
                               if r[0] in (0, 1) and r[1] == CTX[0]]
    assert recorded_on_peer_legacy and any(ctx == CTX[1] for _s, ctx, _e in ctx_events["waits"]), (
        "device 1's stream did not wait for device 0's legacy stream (w's producer stream): "
        f"records {ctx_events['records']}, waits {ctx_events['waits']}")


@pytest.mark.parametrize("streams", ["legacy", "own"])
def test_a_pooled_event_is_recorded_only_on_a_stream_of_its_own_device(
        ctx_events, peers, fake, streams):
    """The in-flight registry pools completed events per device (created and recorded inside
    driver.device_context of the stream's device). A launch on device 1 that has completed,
    then a launch on device 0: device 0's launch does not get device 1's pooled event (which
    cuEventRecord would refuse with INVALID_HANDLE after the kernel was queued, leaving its
    arguments held as orphans). 'legacy': both on the default stream, the first one sync()'d
    (examples/peer_reduce.py run twice in a process); 'own': a stream of each device, no sync
    at all (the conflict scan collects the completed launch first)."""
    state = peers
    fake.stream_devices.update({0x91: 1, 0x90: 0})
    s1, s0 = (0, 0) if streams == "legacy" else (0x91, 0x90)
    a = [_on(state, 1, 512) for _ in range(3)]
    h = axpy(a[0], a[1], nt.partition(a[2], 256), 256, stream=s1)
    if streams == "legacy":
        h.sync()
    b = [_on(state, 0, 512) for _ in range(3)]
    axpy(b[0], b[1], nt.partition(b[2], 256), 256, stream=s0).sync()   # CudaDriverError


@pytest.mark.parametrize("liar", ["w", "out"])
def test_a_plans_guard_asks_the_driver_for_the_pointers_device(peers, fake, monkeypatch, liar):
    """numba-cuda's DeviceNDArray names the device of its MemoryPointer's context, which for
    cuda.as_cuda_array / from_cuda_array_interface is the context current when the wrapper was
    made, not the device of the pointer. The plan's guard (and launcher._read_numba) ask the
    driver for the pointer's device, as the slow path does (_from_cai): after a plan on device
    1, an array on device 0 that says 'device 1' gets the peer checks ('w': access flags asked,
    peer access enabled, or a refusal) and is not written from device 1 ('out': rule 1)."""
    monkeypatch.setitem(launcher._READERS, _NumbaLike, launcher._read_numba)
    state = peers
    # plans made by earlier tests were built for a process of one device (device_count is
    # fixed for a real process's life; the fixture says two)
    monkeypatch.setattr(axpy, "_plans", {})

    def on1(n):
        a = _NumbaLike(_host(n))
        a.gpu_data.context.device.id = 1
        state["on_1"].add(_ptr(a))
        return a
    w, x, out = on1(1536), on1(1536), on1(1536)
    axpy(w, x, nt.partition(out, 256), 256)
    axpy(on1(1536), on1(1536), nt.partition(on1(1536), 256), 256)
    assert axpy._last_plan is not None and axpy._last_plan.device == 1
    lying = _NumbaLike(_host(1536))                  # device 0's memory (pointer not on_1) ...
    lying.gpu_data.context.device.id = 1             # ... wrapped while device 1 was current
    asked = len(state["asked"])
    n = len(fake.launches)
    if liar == "w":
        axpy(lying, on1(1536), nt.partition(on1(1536), 256), 256)
    else:
        axpy(on1(1536), on1(1536), nt.partition(lying, 256), 256)
    assert len(fake.launches) == n + 1
    assert len(state["asked"]) > asked, (
        "an array whose pointer is on device 0 launched on device 1's plan without the peer "
        "checks (no access flags asked, no peer access enabled)")


def test_a_dlpack_producer_naming_the_launch_device_gets_the_peer_checks(peers, fake):
    """A DLPack (or CuPy, or PyTorch) producer's device id is not taken at its word: memory that
    the driver places on device 0, exported as 'CUDA device 1', beside arrays on device 1, goes
    through check_devices (cuDeviceCanAccessPeer, the access flags) and, with no peer path
    between the devices, is refused naming the argument before any launch (overlap.py makes the
    same assumption that producers may misname devices)."""
    state = peers
    state["possible"] = False                        # no peer path between the devices
    host = _host(1000)
    w = FakeDLPack(host.__array_interface__["data"][0], (1000,), device=(2, 1), keepalive=host)
    x, out = _on(state, 1, 1000), _on(state, 1, 1000)
    with pytest.raises(TileArgumentError, match="'w'"):
        axpy(w, x, nt.partition(out, 256), 256)
    assert fake.launches == []


def test_a_dlpack_output_naming_another_device_is_not_written_from_the_wrong_device(
        peers, fake):
    """Rule 1 despite the producer's word: an output the driver places on device 0, exported as
    'CUDA device 1', with inputs on device 1, is refused, or its device is asked of the driver;
    it is never written from device 1 unchecked (a write into a peer, which R16 says never
    happens)."""
    state = peers
    host = np.full(1000, np.nan, np.float32)
    out = FakeDLPack(host.__array_interface__["data"][0], (1000,), device=(2, 1), keepalive=host)
    w, x = _on(state, 1, 1000), _on(state, 1, 1000)
    try:
        axpy(w, x, nt.partition(out, 256), 256)
    except TileArgumentError:
        return
    # launched: it must then run on the device that holds the output's memory
    assert state["asked"], "the launch wrote device 0's memory from device 1 unchecked"


def test_memory_closed_between_the_ends_of_a_peer_array_is_refused(peers, fake):
    """A virtual-memory reservation made of several mappings (cuMemMap per chunk) may be opened
    to the launch device chunk by chunk (cuMemSetAccess per mapping): ends opened, a middle
    chunk not. Asking only the first and last byte's access flags would accept it and the
    kernel would fault on the middle (a sticky error that kills the context); the check walks
    the allocation ranges between lo and hi (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR /
    RANGE_SIZE) and asks the flags of each."""
    state = peers
    w = _on(state, 0, 1000)
    state["access"][_ptr(w) + 4 * 500] = 0           # a middle chunk not opened to device 1
    x, out = _on(state, 1, 1000), _on(state, 1, 1000)
    with pytest.raises(TileArgumentError, match="no read access"):
        axpy(w, x, nt.partition(out, 256), 256)
    assert fake.launches == []


# ============================================================================ defences

def test_a_plan_made_on_one_device_does_not_admit_a_peer_array(peers, fake):
    """Plan first (all on device 1), then the same kinds with w on device 0 and closed: the key
    holds each array's device (the pointer's for an interface), so the slow path refuses."""
    state = peers
    axpy(_on(state, 1, 1792), _on(state, 1, 1792), nt.partition(_on(state, 1, 1792), 256), 256)
    axpy(_on(state, 1, 1792), _on(state, 1, 1792), nt.partition(_on(state, 1, 1792), 256), 256)
    assert axpy._last_plan is not None and axpy._last_plan.device == 1
    w = _on(state, 0, 1792)
    state["access"][_ends(w)[1]] = 0
    n = len(fake.launches)
    with pytest.raises(TileArgumentError, match="'w'.*no read access"):
        axpy(w, _on(state, 1, 1792), nt.partition(_on(state, 1, 1792), 256), 256)
    assert len(fake.launches) == n


def test_the_verdict_cache_does_not_keep_access_revoked_between_calls(peers, fake):
    """The same pointers twice (the _VERIFIED key repeats): the access flags are asked again."""
    state = peers
    w, x, out = _on(state, 0, 1100), _on(state, 1, 1100), _on(state, 1, 1100)
    axpy(w, x, nt.partition(out, 256), 256)
    state["access"][_ptr(w)] = 0
    n = len(fake.launches)
    with pytest.raises(TileArgumentError, match="no read access"):
        axpy(w, x, nt.partition(out, 256), 256)
    assert len(fake.launches) == n


def test_a_reversed_peer_view_asks_its_lowest_byte(peers, fake):
    """Negative strides: the flags are asked at byte_bounds (lowest and highest byte), not at
    the pointer (the last element in memory order)."""
    state = peers
    host = _host(1000)
    w = FakeDeviceArray(host[::-1])                  # device 0; ptr = &host[999]
    state["access"][host.__array_interface__["data"][0]] = 0
    x, out = _on(state, 1, 1000), _on(state, 1, 1000)
    with pytest.raises(TileArgumentError, match="no read access"):
        axpy(w, x, nt.partition(out, 256), 256)
    assert fake.launches == []


def test_group_members_on_a_peer_are_checked_one_by_one(peers, fake):
    from examples.peer_reduce import reduce_shards
    state = peers
    x0, x1, out = _on(state, 0, 700), _on(state, 1, 700), _on(state, 1, 700)
    reduce_shards((x1, x0), nt.partition(out, 256), 256)
    assert state["enabled"] == [(1, 0)]
    assert set(state["asked"]) == {(p, 1) for p in _ends(x0)}
    state["possible"] = False
    with pytest.raises(TileArgumentError, match="'xs__1' \\(CUDA device 0\\)"):
        reduce_shards((x1, _on(state, 0, 700)), nt.partition(out, 256), 256)


def test_device_arrays_are_refused_in_interpreter_mode(peers, fake):
    state = peers
    with pytest.raises(TileArgumentError, match="interpreter mode runs on NumPy"):
        axpy(_on(state, 0, 300), _host(300), nt.partition(np.zeros(300, np.float32), 256), 256,
             interpret=True)
    with pytest.raises(HostArrayError):
        axpy(_host(300), _on(state, 1, 300), nt.partition(_on(state, 1, 300), 256), 256)


@nt.jit(unchecked=True)
def u_two(x, a: nt.Mutable, b: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    t = nt.load(x, (i,), (B,))
    nt.store(a, (i,), t)
    nt.store(b, (i,), t)


def test_unchecked_mutable_arrays_on_two_devices_are_refused(peers, fake):
    state = peers
    with pytest.raises(TileArgumentError, match="mutable arguments 'a'.*'b'"):
        u_two(_on(state, 0, 256), _on(state, 0, 256), _on(state, 1, 256), 256, grid=1,
              unchecked=True)
    assert fake.launches == []


def test_autotune_specializes_on_the_mutable_arrays_device(peers, fake):
    from numba_tile.autotune import _specialize
    state = peers
    w, x, out = _on(state, 0, 512), _on(state, 1, 512), _on(state, 1, 512)
    _kern, _spec, _ck, device, _cc = _specialize(axpy, (w, x, nt.partition(out, 256), 256), False)
    assert device == 1 and (1, 0) in state["enabled"]
    state["possible"] = False
    with pytest.raises(TileArgumentError, match="cannot read"):
        _specialize(axpy, (_on(state, 0, 512), x, nt.partition(out, 256), 256), False)


def test_explicit_streams_of_two_devices_are_ordered_by_the_registry(ctx_events, peers,
                                                                     fake):
    """As on the legacy streams above, on a stream of each device: device 0's write of
    x waits (cuStreamWaitEvent) for device 1's launch reading it, with an event of device 1."""
    state = peers
    ctx_events["pending"] = True                     # device 1's launch still running
    fake.stream_devices.update({0x81: 1, 0x80: 0})
    x = _on(state, 0, 1000)
    copy, ones = _on(state, 1, 1000), _on(state, 1, 1000)
    axpy(x, ones, nt.partition(copy, 256), 256, stream=0x81)
    y, z = _on(state, 0, 1000), _on(state, 0, 1000)
    axpy(y, z, nt.partition(x, 256), 256, stream=0x80)
    assert (0x80, CTX[0], CTX[1]) in ctx_events["waits"]
