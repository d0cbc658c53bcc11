"""Read-only tensors on a peer GPU, on the tests' recording driver with two
fake devices: a launch runs on the device of its mutable arrays; a read-only array may live on
another device only when the launch device can read it (``cuDeviceCanAccessPeer``, peer access
enabled, the access flags of its first and last byte); mutable arrays on two devices, a peer
without a path, memory its owner did not open, a stream of another device are refused before
anything reaches the driver, naming the arguments. Overlap is decided on addresses whatever
device a producer names. The driver layer's own answers (caching, ``ALREADY_ENABLED``, unknown
pointers) are tested on a fake ``cuda.bindings``."""

import enum

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import AliasingError, TileArgumentError
from numba_tile.runtime import driver
from numba_tile.runtime.devices import launch_device
from numba_tile.runtime.launch_checks import ParamSpec, bind_arrays
from tests.unit.test_device_restore import CTX, two_devices  # noqa: F401 - fixture
from tests.unit.test_launch_plans import _dev, _ptr, fake  # noqa: F401 - fixture


@nt.jit
def axpy(w, x, out: nt.Partition["B"], B: nt.Constant):
    """out = w * x: ``w`` may be read on a peer of ``out``'s device."""
    nt.store(out, nt.load_like(w, out) * nt.load_like(x, out))


@nt.jit
def two_outs(x, a: nt.Partition["B"], b: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, a)
    nt.store(a, t)
    nt.store(b, t + 1.0)


@pytest.fixture
def peers(two_devices, monkeypatch):
    """Devices 0 and 1 with a peer-to-peer path both ways; every allocation opened to both
    unless a test says otherwise (``state["access"]``: pointer -> flags)."""
    state = two_devices
    state.update(enabled=[], asked=[], access={}, possible=True)

    def can(d, p):
        return d == p or state["possible"]

    def enable(d, p):
        state["enabled"].append((d, p))

    def ranges(lo, hi, d):
        # the "allocation ranges" of an array: its first byte's, one per entry of
        # state["access"] strictly inside, its last byte's
        state["asked"].extend([(lo, d), (hi - 1, d)])
        inside = [f for p, f in sorted(state["access"].items()) if lo < p < hi - 1]
        return [state["access"].get(lo, 3), *inside, state["access"].get(hi - 1, 3)]

    monkeypatch.setattr(driver, "device_count", lambda: 2)
    monkeypatch.setattr(driver, "can_access_peer", can)
    monkeypatch.setattr(driver, "enable_peer_access", enable)
    monkeypatch.setattr(driver, "range_access", ranges)
    return state


def _on(state, device, n, dtype=np.float32):
    a = _dev(n, dtype)
    if device == 1:
        state["on_1"].add(_ptr(a))
    return a


def _ends(a):
    cai = a.__cuda_array_interface__
    n = int(np.prod(cai["shape"]))
    return _ptr(a), _ptr(a) + n * a.host.itemsize - 1


# -- the launch device ------------------------------------------------------------------------

def test_the_launch_runs_on_the_mutable_arrays_device_with_a_peer_read(peers, fake):
    state = peers
    state["current"] = CTX[0]
    w = _on(state, 0, 1000)                       # read on the peer (device 0)
    x, out = _on(state, 1, 1000), _on(state, 1, 1000)
    axpy(w, x, nt.partition(out, 256), 256)
    assert fake.launches, "the launch reached the driver"
    assert (1, 0) in state["enabled"]             # device 1 reads device 0's memory
    assert set(state["asked"]) == {(p, 1) for p in _ends(w)}
    assert state["current"] == CTX[0]             # the thread's device given back
    args = fake.launches[-1][0]
    assert args[0] == _ptr(w)


def test_launch_device_prefers_a_non_empty_mutable_array():
    x = ParamSpec("x", "tensor")
    z = ParamSpec("z", "partition")

    class _A:
        def __init__(self, device, size):
            self.device, self.size = device, size

    class _B:
        def __init__(self, spec, device, size):
            self.spec, self.array = spec, _A(device, size)

        mutable = property(lambda self: self.spec.kind == "partition")

    assert launch_device([_B(x, 0, 4), _B(z, 1, 4)]) == 1
    assert launch_device([_B(x, 0, 4), _B(z, 1, 0), _B(z, 2, 4)]) == 2
    assert launch_device([_B(x, 0, 0), _B(x, 3, 4), _B(z, 1, 0)]) == 3
    assert launch_device([_B(x, 5, 0), _B(z, 1, 0)]) == 5
    assert launch_device([]) is None


def test_a_peer_launch_is_checked_on_every_call(peers, fake):
    """No plan and no cached verdict for a launch that reads a peer: the access a device has
    is a property of each allocation, and the next call's may be closed to it."""
    state = peers
    x, out = _on(state, 1, 512), _on(state, 1, 512)
    w = _on(state, 0, 512)
    for _ in range(3):
        axpy(w, x, nt.partition(out, 256), 256)
    assert fake.slow_calls["n"] == 3
    assert len(state["asked"]) == 6
    closed = _on(state, 0, 512)
    state["access"][_ptr(closed)] = 0
    n = len(fake.launches)
    with pytest.raises(TileArgumentError, match="no read access"):
        axpy(closed, x, nt.partition(out, 256), 256)
    assert len(fake.launches) == n


def test_same_device_launches_still_take_a_plan(peers, fake):
    state = peers
    for _ in range(3):
        axpy(_on(state, 1, 512), _on(state, 1, 512), nt.partition(_on(state, 1, 512), 256), 256)
    assert fake.slow_calls["n"] == 1 and state["asked"] == [] and state["enabled"] == []


# -- refusals -----------------------------------------------------------------------------------

def test_mutable_arrays_on_two_devices_are_refused_naming_both(peers, fake):
    state = peers
    x = _on(state, 0, 512)
    a, b = _on(state, 0, 512), _on(state, 1, 512)
    with pytest.raises(TileArgumentError) as info:
        two_outs(x, nt.partition(a, 256), nt.partition(b, 256), 256)
    text = str(info.value)
    assert "'a' (CUDA device 0)" in text and "'b' (CUDA device 1)" in text, text
    assert "two_outs" in text and "only read-only arguments may live on a peer" in text
    assert info.value.filename is not None and info.value.lineno is not None
    assert fake.launches == [] and state["enabled"] == []


def test_a_mutable_array_on_a_peer_of_the_read_only_ones_is_the_launch_device(peers, fake):
    """The launch device is the mutable array's, whatever order the arguments come in."""
    state = peers
    x = _on(state, 0, 512)
    a, b = _on(state, 1, 512), _on(state, 1, 512)
    two_outs(x, nt.partition(a, 256), nt.partition(b, 256), 256)
    assert state["enabled"] == [(1, 0)]


def test_no_peer_path_is_refused_naming_both(peers, fake):
    state = peers
    state["possible"] = False
    w, x, out = _on(state, 0, 512), _on(state, 1, 512), _on(state, 1, 512)
    with pytest.raises(TileArgumentError) as info:
        axpy(w, x, nt.partition(out, 256), 256)
    text = str(info.value)
    assert "read-only argument 'w' (CUDA device 0)" in text, text
    assert "mutable argument 'out' (CUDA device 1, the launch's)" in text
    assert "cuDeviceCanAccessPeer" in text and "copy 'w' to device 1" in text
    assert fake.launches == [] and state["enabled"] == []


@pytest.mark.parametrize("first,last", [(0, 3), (3, 0), (None, 3), (2, 2)])
def test_memory_not_opened_to_the_launch_device_is_refused(peers, fake, first, last):
    """Flags 0 (none), None (unknown pointer) or 2 (no read bit) at either end: refused."""
    state = peers
    w = _on(state, 0, 700)
    lo, hi = _ends(w)
    state["access"].update({lo: first, hi: last})
    x, out = _on(state, 1, 700), _on(state, 1, 700)
    with pytest.raises(TileArgumentError,
                       match=r"no read access to all of 'w'.*cuMemPoolSetAccess"):
        axpy(w, x, nt.partition(out, 256), 256)
    assert fake.launches == []


def test_a_driver_failure_while_enabling_is_a_clear_error(peers, fake, monkeypatch):
    state = peers

    def refuse(d, p):
        raise driver.CudaDriverError("cuCtxEnablePeerAccess", 217, "CUDA_ERROR_TOO_MANY_PEERS")
    monkeypatch.setattr(driver, "enable_peer_access", refuse)
    w, x, out = _on(state, 0, 512), _on(state, 1, 512), _on(state, 1, 512)
    with pytest.raises(TileArgumentError, match="could not be set up.*TOO_MANY_PEERS"):
        axpy(w, x, nt.partition(out, 256), 256)
    assert fake.launches == []


def test_an_empty_array_on_a_device_without_a_path_is_never_read(peers, fake):
    state = peers
    state["possible"] = False
    w = _on(state, 0, 0)
    x, out = _on(state, 1, 0), _on(state, 1, 0)
    axpy(w, x, nt.partition(out, 256), 256)          # an empty grid: nothing launched
    assert fake.launches == []
    w = _on(state, 0, 0)
    a, b = _on(state, 1, 300), _on(state, 1, 300)
    with pytest.raises(TileArgumentError):            # a non-empty x on device 0 is read
        two_outs(_on(state, 0, 300), nt.partition(a, 256), nt.partition(b, 256), 256)


def test_a_peer_array_at_a_mutable_arrays_addresses_is_aliasing(peers, fake, monkeypatch):
    """A producer that names device 0 for memory at the mutable array's addresses does not
    hide the overlap: overlap is decided on addresses."""
    state = peers
    out = _on(state, 1, 512)
    from numba_tile.runtime.fakes import FakeDeviceArray
    alias = FakeDeviceArray(out.host[::-1])            # the same bytes, reversed
    real = driver.pointer_device
    ptr = _ptr(alias)
    monkeypatch.setattr(driver, "pointer_device", lambda p: 0 if p == ptr else real(p))
    with pytest.raises(AliasingError, match="'out'.*'w'"):
        axpy(alias, _on(state, 1, 512), nt.partition(out, 256), 256)
    assert fake.launches == []


def test_bind_arrays_inspection_mode_does_not_ask_the_driver(peers):
    state = peers
    state["possible"] = False
    specs = [ParamSpec("w", "tensor"), ParamSpec("out", "partition")]
    w, out = _on(state, 0, 8), _on(state, 1, 8)
    bind_arrays("k", specs, [w, nt.partition(out, 8)], allow_host=None, call_site=None)
    with pytest.raises(TileArgumentError, match="different devices"):
        bind_arrays("k", specs, [w, nt.partition(out, 8)], allow_host=False, call_site=None)


# -- streams belong to their device ----------------------------------------------------------

def test_a_stream_of_another_device_is_refused(peers, fake):
    state = peers
    fake.stream_devices[0x70] = 0
    # a size no other test launches axpy with: the first call of a kind takes the slow path
    x, out, w = _on(state, 1, 640), _on(state, 1, 640), _on(state, 1, 640)
    with pytest.raises(TileArgumentError) as info:
        axpy(w, x, nt.partition(out, 256), 256, stream=0x70)
    text = str(info.value)
    assert "axpy" in text and "0x70 belongs to CUDA device 0" in text, text
    assert "launch runs on CUDA device 1" in text
    assert fake.launches == []
    fake.stream_devices[0x71] = 1
    axpy(w, x, nt.partition(out, 256), 256, stream=0x71)
    assert fake.launches[-1][2] == 0x71


def test_a_stream_of_another_context_of_the_device_is_refused(peers, fake, monkeypatch):
    monkeypatch.setattr(driver, "stream_owner", lambda s: (4242, 0))
    x, out, w = _dev(512), _dev(512), _dev(512)
    with pytest.raises(TileArgumentError, match="other than its primary one"):
        axpy(w, x, nt.partition(out, 256), 256, stream=0x72)


def test_an_unknown_stream_is_refused(peers, fake, monkeypatch):
    def unknown(s):
        raise driver.CudaDriverError("cuStreamGetCtx", 400, "CUDA_ERROR_INVALID_HANDLE")
    monkeypatch.setattr(driver, "stream_owner", unknown)
    with pytest.raises(TileArgumentError, match="does not know stream handle 0x73"):
        axpy(_dev(512), _dev(512), nt.partition(_dev(512), 256), 256, stream=0x73)
    assert fake.launches == []


def test_default_streams_are_the_launch_devices(peers, fake, monkeypatch):
    def never(s):
        raise AssertionError("a default stream names the current context's")
    monkeypatch.setattr(driver, "stream_owner", never)
    for s in (0, 1, 2):
        axpy(_dev(512), _dev(512), nt.partition(_dev(512), 256), 256, stream=s)


# -- the driver layer, on a fake cuda.bindings --------------------------------------------------

class _Bindings:
    CUresult = enum.IntEnum("CUresult", {"CUDA_ERROR_INVALID_VALUE": 1,
                                         "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED": 704})

    class CUpointer_attribute:
        CU_POINTER_ATTRIBUTE_ACCESS_FLAGS = 16

    def __init__(self):
        self.calls = []
        self.enable_result = 0
        self.flags = {}

    def cuInit(self, flags):
        return (0,)

    def cuDeviceGet(self, n):
        return 0, n

    def cuDeviceCanAccessPeer(self, d, p):
        self.calls.append(("can", d, p))
        return 0, int(abs(d - p) == 1)

    def cuDevicePrimaryCtxRetain(self, dev):
        return 0, 5000 + dev

    def cuCtxEnablePeerAccess(self, ctx, flags):
        self.calls.append(("enable", int(ctx), flags))
        return (self.enable_result,)

    def cuPointerGetAttribute(self, attr, ptr):
        if ptr not in self.flags:
            return self.CUresult.CUDA_ERROR_INVALID_VALUE, None
        return 0, self.flags[ptr]

    def cuGetErrorString(self, err):
        return 0, b"described"


@pytest.fixture
def bindings(monkeypatch):
    b = _Bindings()
    monkeypatch.setattr(driver, "_mod", b)
    monkeypatch.setattr(driver, "_initialised", True)
    monkeypatch.setattr(driver, "_contexts", {})
    monkeypatch.setattr(driver, "_context_ints", {})
    monkeypatch.setattr(driver, "_peer_possible", {})
    monkeypatch.setattr(driver, "_peer_enabled", set())
    made_current = []

    class _Scope:
        def __init__(self, d):
            self.d = d

        def __enter__(self):
            made_current.append(self.d)

        def __exit__(self, *e):
            return False
    monkeypatch.setattr(driver, "device_context", _Scope)
    b.made_current = made_current
    return b


def test_can_access_peer_is_asked_once_per_pair(bindings):
    assert driver.can_access_peer(0, 1) and driver.can_access_peer(0, 1)
    assert not driver.can_access_peer(0, 2)
    assert driver.can_access_peer(3, 3)                  # a device reads its own memory
    assert bindings.calls == [("can", 0, 1), ("can", 0, 2)]


@pytest.mark.parametrize("result", [0, 704])
def test_enable_peer_access_counts_already_enabled_as_enabled(bindings, result):
    bindings.enable_result = result
    driver.enable_peer_access(0, 1)
    driver.enable_peer_access(0, 1)
    assert bindings.calls == [("enable", 5001, 0)]       # device 1's primary context, once
    assert bindings.made_current == [0]                 # with device 0's current
    driver.enable_peer_access(1, 1)                     # nothing to enable
    assert len(bindings.calls) == 1


def test_enable_peer_access_raises_on_a_refusal_and_retries_later(bindings):
    bindings.enable_result = 217
    with pytest.raises(driver.CudaDriverError, match="cuCtxEnablePeerAccess"):
        driver.enable_peer_access(0, 1)
    bindings.enable_result = 0
    driver.enable_peer_access(0, 1)
    assert len(bindings.calls) == 2


def test_pointer_access_reads_flags_with_the_launch_device_current(bindings):
    bindings.flags = {0x1000: 3, 0x2000: 0}
    assert driver.pointer_access(0x1000, 1) == 3
    assert driver.pointer_access(0x2000, 1) == 0
    assert driver.pointer_access(0x3000, 0) is None      # a pointer the driver does not know
    assert bindings.made_current == [1, 1, 0]


def test_a_capturing_stream_is_not_asked_its_owner(peers, fake, monkeypatch):
    """Asking a capturing stream's context would invalidate the capture: its device is the
    capture's, left to the driver."""
    def never(s):
        raise AssertionError("a capturing stream was asked its owner")
    monkeypatch.setattr(driver, "stream_owner", never)
    from numba_tile.runtime import capture
    monkeypatch.setattr(capture, "_by_capture", {})     # this test's capture holds: its own
    monkeypatch.setattr(capture, "_held", [])
    fake.capturing_stream, fake.capture_status = 0x74, 1
    # a size no other test launches axpy with: the slow path
    axpy(_dev(320), _dev(320), nt.partition(_dev(320), 256), 256, stream=0x74)
    assert fake.launches[-1][2] == 0x74


def test_the_owner_query_runs_with_the_capture_mode_relaxed(peers, fake, monkeypatch):
    modes = []
    monkeypatch.setattr(driver, "capture_mode_exchange", lambda m: modes.append(m) or 7)
    fake.stream_devices[0x75] = 1
    x, out, w = _on(peers, 1, 330), _on(peers, 1, 330), _on(peers, 1, 330)
    axpy(w, x, nt.partition(out, 256), 256, stream=0x75)
    assert len(modes) == 2 and modes[1] == 7           # relaxed, then the old mode back


class _Ranges(_Bindings):
    """Address ranges as the driver reports them: (start, size, ipc capable, pool, flags of
    each 16-byte granule)."""

    class CUpointer_attribute:
        CU_POINTER_ATTRIBUTE_ACCESS_FLAGS = "flags"
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = "start"
        CU_POINTER_ATTRIBUTE_RANGE_SIZE = "size"
        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = "ipc"
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = "pool"
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = "device"

    def __init__(self, regions):
        super().__init__()
        self.regions = regions
        self.asked = []

    def cuPointerGetAttribute(self, attr, ptr):
        for start, size, ipc, pool, flags in self.regions:
            if start <= ptr < start + size:
                if attr == "flags":
                    self.asked.append(ptr)
                value = {"flags": flags[(ptr - start) // 16], "start": start, "size": size,
                         "ipc": ipc, "pool": pool, "device": 0}[attr]
                return 0, value
        return self.CUresult.CUDA_ERROR_INVALID_VALUE, None


def _ranges(bindings, monkeypatch, regions):
    r = _Ranges(regions)
    r.made_current = bindings.made_current
    monkeypatch.setattr(driver, "_mod", r)
    monkeypatch.setattr(driver, "_granularity", {0: 16})
    return r


def test_range_access_asks_each_granule_of_a_reservation_once_per_allocation_else(
        bindings, monkeypatch):
    r = _ranges(bindings, monkeypatch, [
        (1024, 64, 1, 0, [3, 0, 0, 0]),       # cuMemAlloc: one access for the allocation
        (1088, 32, 0, 7, [3, 0]),             # a pool's: one too
        (1120, 64, 0, 0, [3, 0, 3, 1]),       # a reservation: per mapping granule
    ])
    assert driver.range_access(1030, 1184, 2) == [3, 3, 3, 0, 3, 1]
    assert r.asked == [1030, 1088, 1120, 1136, 1152, 1168]
    assert driver.range_access(1121, 1136, 2) == [3]          # inside one granule
    assert driver.range_access(1135, 1137, 2) == [3, 0]       # across a granule's edge
    assert driver.range_access(1180, 1200, 2) == [1, None]    # past the last allocation
    assert set(bindings.made_current) == {2}


def test_range_access_gives_up_past_its_query_bound(bindings, monkeypatch):
    _ranges(bindings, monkeypatch, [(0x10000, 16 * 100, 0, 0, [3] * 100)])
    monkeypatch.setattr(driver, "MAX_QUERIES", 10)
    got = driver.range_access(0x10000, 0x10000 + 16 * 100, 0)
    assert got[-1] is None and len(got) == 11
