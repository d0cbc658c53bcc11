"""Launch plans (the fast path of a repeated call, ``runtime/launcher.py``) and the capture path,
on a recording stand-in for the CUDA driver: every check the slow path makes must still hold on a
plan hit, and a plan hit must pack exactly what the slow path packs."""

import ctypes
import threading

import numpy as np
import pytest

import numba_tile as nt
import numba_tile.kernel as K
from numba_tile.errors import (AliasingError, ReadOnlyProducerError, StreamConflictError,
                               TileArgumentError)
from numba_tile.runtime import capture, driver, guards, inflight, launch_checks, launcher
from numba_tile.runtime.fakes import FakeDeviceArray
from numba_tile.runtime.params import ParamBuffer


class _Event:
    complete = True


_BUFFERS: dict = {}     # address -> ParamBuffer made under the fixture (kernels keep theirs)


def _read_params(address, buf):
    """The values a launch passes: read back from the parameter buffer the driver was given."""
    import struct
    from numba_tile.runtime.params import PARAM_KINDS
    raw = bytes((ctypes.c_char * max(buf.nbytes, 1)).from_address(ctypes.addressof(buf._buf)))
    return [struct.unpack_from("<" + PARAM_KINDS[k][0], raw, off)[0]
            for k, off in zip(buf.kinds, buf.offsets)]


class _FakeBindings:
    """The ``cuda.bindings.driver`` functions the plan path calls directly."""

    def __init__(self, fd):
        self.fd = fd

    def cuStreamIsCapturing(self, stream):
        return 0, self.fd.status_of(stream)

    def cuCtxGetCurrent(self):
        return 0, None          # no context current: the (patched) ensure_context sets it

    CUcontext = int

    def cuCtxSetCurrent(self, ctx):
        return (0,)

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.fd._launch(func, (gx, gy, gz), (bx, by, bz), shared, stream, params)
        return (0,)


class FakeDriver:
    """Records launches (the packed values) and answers capture queries as told."""

    def __init__(self, monkeypatch):
        self.launches = []
        self.capture_status = 0
        self.user_objects = []
        self.retained = []
        self.events_recorded = 0
        self.calls_in_capture = []
        self.stream_devices = {}
        fd = self
        monkeypatch.setattr(driver, "_available", True)
        for name, fn in {
            "gpu_available": lambda: True,
            "ensure_context": lambda d: None,
            "compute_capability": lambda d: (9, 0),
            "load_module": lambda img, d: object(),
            "get_function": lambda m, n: object(),
            "launch": self._launch,
            "event_create": _Event,
            "event_record": self._record,
            "event_query": self._query,
            "stream_wait_event": lambda s, e: None,
            "event_destroy": lambda e: None,
            "event_synchronize": lambda e: None,
            "pointer_device": lambda p: 0,
            # every stream is device 0's unless a test files it under another device
            "stream_owner": lambda s: (driver._context_ints.get(fd.stream_devices.get(s, 0)),
                                       fd.stream_devices.get(s, 0)),
            "current_device": lambda: 0,
            "stream_capture_status": lambda s: fd.status_of(s),
            "stream_capture_info": lambda s: (fd.capture_status, 77, "graph"),
            "capture_mode_exchange": lambda m: 0,
            "user_object_create": self._user_object,
            "graph_retain_user_object_move": lambda g, o: fd.retained.append((g, o)),
            "user_object_release": lambda o: None,
        }.items():
            monkeypatch.setattr(driver, name, fn)
        monkeypatch.setattr(driver, "_mod", _FakeBindings(self))
        monkeypatch.setattr(K, "ptx_to_cubin", lambda ptx, cc: None)
        monkeypatch.setattr(inflight, "_default", inflight.InflightRegistry())
        self.capturing_stream = None
        self.buffers = _BUFFERS
        real_init = ParamBuffer.__init__

        def init(buf, kinds, names=None):
            real_init(buf, kinds, names)
            _BUFFERS[buf.address] = buf
        monkeypatch.setattr(ParamBuffer, "__init__", init)

    def status_of(self, stream):
        if self.capture_status < 0 and stream == 0:
            return self.capture_status
        return self.capture_status if stream == self.capturing_stream else 0

    def _launch(self, func, grid, block, shared, stream, ptr):
        self.launches.append((_read_params(ptr, self.buffers[ptr]), grid, stream))

    def _record(self, event, stream):
        if stream == self.capturing_stream and self.capture_status:
            self.calls_in_capture.append("cuEventRecord")
        self.events_recorded += 1

    def _query(self, event):
        return True

    def _user_object(self, ptr, fn):
        self.user_objects.append((ptr, fn))
        return "userobj"

    def post_all(self):
        """What CUDA does when the graphs are destroyed: call each destructor (sem_post)."""
        post = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
        for ptr, fn in self.user_objects:
            post(fn)(ptr)
        self.user_objects.clear()


@pytest.fixture
def fake(monkeypatch):
    fd = FakeDriver(monkeypatch)
    calls = {"n": 0}
    real = launch_checks.bind_arrays

    def counting(*a, **k):
        calls["n"] += 1
        return real(*a, **k)
    monkeypatch.setattr(K, "bind_arrays", counting)
    fd.slow_calls = calls
    return fd


@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def axpb(x, z: nt.Partition["B"], a, b, B: nt.Constant):
    nt.store(z, a * nt.load_like(x, z) + b)


def _dev(n, dtype=np.float32, rng=np.random.default_rng()):
    return FakeDeviceArray(rng.standard_normal(n).astype(dtype))


def _ptr(a):
    return a.__cuda_array_interface__["data"][0]


def test_a_repeated_call_takes_the_plan_and_packs_what_the_slow_path_packs(fake):
    x, y, z = _dev(3000), _dev(3000), _dev(3000)
    add(x, y, nt.partition(z, 1024), B=1024)
    assert fake.slow_calls["n"] == 1
    slow, grid, _ = fake.launches[-1]
    x2, y2, z2 = _dev(3000), _dev(3000), _dev(3000)
    h = add(x2, y2, nt.partition(z2, 1024), B=1024)
    assert fake.slow_calls["n"] == 1                # the plan, no second binding
    fast, grid2, _ = fake.launches[-1]
    assert grid2 == grid == (3, 1, 1)
    expected = list(slow)
    for old, new in ((x, x2), (y, y2), (z, z2)):
        expected[slow.index(_ptr(old))] = _ptr(new)
    assert fast == expected
    assert h.sync()[0] is x2 and h.sync()[2] is z2


def test_runtime_scalars_are_per_call_values_and_int_width_is_part_of_the_key(fake):
    x, z = _dev(500), _dev(500)
    axpb(x, nt.partition(z, 256), 2.0, 1.0, 256)
    axpb(x, nt.partition(z, 256), -3.5, 7.25, 256)
    assert fake.slow_calls["n"] == 1
    assert fake.launches[-1][0][-2:] == [-3.5, 7.25]
    axpb(x, nt.partition(z, 256), 2, 1, 256)          # ints: another specialization
    assert fake.slow_calls["n"] == 2
    axpb(x, nt.partition(z, 256), 2, 2**40, 256)      # an int64 scalar: another again
    assert fake.slow_calls["n"] == 3
    assert fake.launches[-1][0][-1] == 2**40


@pytest.mark.parametrize("change", ["shape", "dtype", "tile", "constant", "strides", "align"])
def test_anything_that_can_change_a_check_or_the_specialization_misses_the_plan(fake, change):
    x, y, z = _dev(2048), _dev(2048), _dev(2048)
    add(x, y, nt.partition(z, 1024), B=1024)
    n0 = fake.slow_calls["n"]
    tile, b = 1024, 1024
    if change == "shape":
        x, y, z = _dev(4096), _dev(4096), _dev(4096)
    elif change == "dtype":
        x, y, z = _dev(2048, np.float64), _dev(2048, np.float64), _dev(2048, np.float64)
    elif change == "tile":
        tile = b = 512
    elif change == "constant":
        b = 1024.0                  # equal to the int, refused by the slow path
    elif change == "strides":
        big = _dev(4096)
        x = big[::2]
    elif change == "align":
        big = _dev(2049)
        x = big[1:]                 # 4-byte aligned, not 16
    if change == "constant":
        with pytest.raises(TileArgumentError, match="power-of-two"):   # checked before binding
            add(x, y, nt.partition(z, tile), B=b)
        return
    add(x, y, nt.partition(z, tile), B=b)
    assert fake.slow_calls["n"] == n0 + 1


def test_aliasing_is_checked_on_every_call_with_a_plan(fake):
    buf = np.random.default_rng().standard_normal(4096).astype(np.float32)
    x, y, z = _dev(2048), _dev(2048), _dev(2048)
    add(x, y, nt.partition(z, 1024), B=1024)
    # same kinds (shape, strides, alignment), but the output now overlaps an input
    a = FakeDeviceArray(buf[:2048])
    b = FakeDeviceArray(buf[1024:3072])
    with pytest.raises(AliasingError, match="'z' overlaps read-only argument 'x'"):
        add(a, y, nt.partition(b, 1024), B=1024)
    with pytest.raises(AliasingError):
        add(x, y, nt.partition(x, 1024), B=1024)        # the same array read and written
    assert len(fake.launches) == 1                      # nothing queued by the refusals


def test_interleaved_disjoint_views_take_the_exact_test_and_launch(fake):
    buf = np.random.default_rng().standard_normal(4096).astype(np.float32)
    even, odd = FakeDeviceArray(buf[0::2]), FakeDeviceArray(buf[1::2])
    y = _dev(2048)
    add(even, y, nt.partition(odd, 1024), B=1024)
    add(even, y, nt.partition(odd, 1024), B=1024)      # ranges intersect: the slow path says
    assert len(fake.launches) == 2


def test_a_read_only_producer_is_refused_every_time(fake):
    x, y = _dev(1024), _dev(1024)
    z = FakeDeviceArray(np.zeros(1024, np.float32), readonly=True)
    for _ in range(2):
        with pytest.raises(ReadOnlyProducerError):
            add(x, y, nt.partition(z, 1024), B=1024)
    zw = _dev(1024)
    add(x, y, nt.partition(zw, 1024), B=1024)
    add(x, y, nt.partition(zw, 1024), B=1024)
    with pytest.raises(ReadOnlyProducerError):          # a plan exists: still refused
        add(x, y, nt.partition(z, 1024), B=1024)


def test_a_byte_range_past_the_address_space_is_refused_with_a_plan(fake):
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024)

    class Iface:
        __array_interface__ = {"shape": (1024,), "typestr": "<f4", "version": 3,
                               "data": (2**64 - 2048, False)}
    forged = FakeDeviceArray(np.asarray(Iface()))
    with pytest.raises(TileArgumentError, match="64-bit address space"):
        add(forged, y, nt.partition(z, 1024), B=1024)
    assert len(fake.launches) == 1


def test_a_partition_field_changed_to_an_equal_float_is_refused_with_a_plan(fake):
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024)
    p = nt.partition(z, 1024)
    object.__setattr__(p, "tile_shape", (1024.0,))
    with pytest.raises(TileArgumentError, match="tile_shape was changed"):
        add(x, y, p, B=1024)


def test_stream_conflicts_are_found_with_a_plan(fake):
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024, stream=5)
    _Event.complete = False
    try:
        inflight.default_registry().backend.query = lambda e: False
        with pytest.raises(StreamConflictError, match="argument 'z'"):
            add(x, y, nt.partition(z, 1024), B=1024, stream=9, on_conflict="raise")
    finally:
        _Event.complete = True


def test_launch_defaults_give_the_stream_of_launches_without_one(fake):
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024)
    with nt.launch_defaults(stream=0x1234):
        h = add(x, y, nt.partition(z, 1024), B=1024)
        assert h.stream == 0x1234
        assert add(x, y, nt.partition(z, 1024), B=1024, stream=7).stream == 7
    assert add(x, y, nt.partition(z, 1024), B=1024).stream == 0
    with pytest.raises(TileArgumentError, match="stream"):
        with nt.launch_defaults(stream="s"):
            pass


def test_threads_launching_through_one_plan(fake):
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024)
    errors = []

    def run():
        try:
            for _ in range(200):
                zz = _dev(1024)
                add(x, y, nt.partition(zz, 1024), B=1024).sync()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    ts = [threading.Thread(target=run) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


# ----------------------------------------------------------------------------- capture

def test_a_captured_launch_records_no_event_and_is_held_by_the_graph(fake):
    import gc
    import weakref
    x, y = _dev(1024), _dev(1024)
    add(x, y, nt.partition(_dev(1024), 1024), B=1024)  # a plan exists
    fake.capturing_stream, fake.capture_status = 0x99, driver.CAPTURE_ACTIVE
    before = fake.events_recorded
    z = _dev(1024)
    ref = weakref.ref(z)
    h = add(x, y, nt.partition(z, 1024), B=1024, stream=0x99)
    h2 = add(x, y, nt.partition(_dev(1024), 1024), B=1024, stream=0x99)
    assert isinstance(h, capture.CapturedLaunch) and not h.done()
    assert fake.events_recorded == before and not fake.calls_in_capture
    assert len(fake.user_objects) == 1 and fake.retained == [("graph", "userobj")]
    with pytest.raises(capture.CaptureError, match="replayed"):
        h.sync()
    del h, h2, z
    fake.capture_status = 0
    gc.collect()
    assert ref() is not None                 # the graph still holds it
    fake.post_all()                          # CUDA destroyed the graph
    nt.synchronize()
    gc.collect()
    assert ref() is None and capture.held() == 0


def test_a_legacy_stream_launch_while_another_stream_captures_is_refused_before_launching(fake):
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024)
    n = len(fake.launches)
    fake.capture_status = -driver.ERROR_CAPTURE_IMPLICIT
    with pytest.raises(capture.CaptureError, match="legacy default stream"):
        add(x, y, nt.partition(z, 1024), B=1024)
    with pytest.raises(capture.CaptureError, match="legacy default stream"):
        add(x, y, nt.partition(_dev(2048), 1024), B=1024)     # the slow path too
    assert len(fake.launches) == n


# ----------------------------------------------------------------------------- guards

def test_a_repeated_call_is_recognised_by_the_last_plans_guard_without_a_key(fake, monkeypatch):
    x, y, z = _dev(3000), _dev(3000), _dev(3000)
    add(x, y, nt.partition(z, 1024), B=1024)
    n0 = fake.slow_calls["n"]
    calls = []
    real = launcher.plan_key
    monkeypatch.setattr(launcher, "plan_key", lambda *a: calls.append(1) or real(*a))
    for _ in range(3):
        x2, z2 = _dev(3000), _dev(3000)
        add(x2, y, nt.partition(z2, 1024), B=1024)
        assert fake.launches[-1][0][0] == _ptr(x2)
    assert calls == [] and fake.slow_calls["n"] == n0
    add(x, y, nt.partition(_dev(3000), 512), B=512)      # another kind: the key path
    assert calls


def test_the_guard_refuses_what_the_key_would(fake):
    x, y, z = _dev(2048), _dev(2048), _dev(2048)
    add(x, y, nt.partition(z, 1024), B=1024)
    p = nt.partition(z, 1024)
    object.__setattr__(p, "tile_shape", (1024,))        # equal, but not the interned object
    add(x, y, p, B=1024)                                 # the key path accepts exact ints
    object.__setattr__(p, "tile_shape", (True,) and (1024.0,))
    with pytest.raises(TileArgumentError, match="tile_shape was changed"):
        add(x, y, p, B=1024)
    with pytest.raises(AliasingError):
        add(x, y, nt.partition(y, 1024), B=1024)
    with pytest.raises(TileArgumentError, match="power-of-two"):
        add(x, y, nt.partition(z, 1024), B=True)


def test_zero_and_negative_zero_constants_are_two_specializations():
    @nt.jit(interpret=True)
    def recip(x, z: nt.Partition["B"], C: nt.Constant, B: nt.Constant):
        nt.store(z, nt.load_like(x, z) / C)
    x = np.ones(16, np.float32)
    zp, zn = np.zeros(16, np.float32), np.zeros(16, np.float32)
    recip(x, nt.partition(zp, 16), 0.0, 16)
    recip(x, nt.partition(zn, 16), -0.0, 16)
    assert np.all(zp == np.inf) and np.all(zn == -np.inf)


def test_a_torch_tensors_launch_holds_its_storage_across_set_():
    torch = pytest.importorskip("torch")
    from numba_tile.runtime.arrays import as_array_arg
    t = torch.ones(64)
    a = as_array_arg(t, "x")
    storage = a.owner
    assert isinstance(storage, torch.UntypedStorage) and storage.data_ptr() == a.ptr
    t.set_(torch.zeros(8))                   # t now uses other memory; the launch's is held
    assert a.owner is storage and storage.data_ptr() == a.ptr and t.data_ptr() != a.ptr


def test_interpret_false_takes_the_plan_and_a_declined_call_keeps_the_plan(fake, monkeypatch):
    """``interpret=False`` (what examples pass through) asks for the GPU as the default does: a
    repeated call takes the plan, not the slow path. And a call the plan declines (here: its
    guard and pointer rules forced to decline) is checked by the slow path, which keeps the kind's
    plan rather than building its runner again."""
    x, y, z = _dev(3000), _dev(3000), _dev(3000)
    add(x, y, nt.partition(z, 1024), B=1024, interpret=False)
    n0 = fake.slow_calls["n"]
    for _ in range(3):
        add(_dev(3000), y, nt.partition(_dev(3000), 1024), B=1024, interpret=False)
    assert fake.slow_calls["n"] == n0
    plan = add._last_plan
    built = []
    real = guards.runner_for
    monkeypatch.setattr(guards, "runner_for", lambda *a: built.append(1) or real(*a))
    monkeypatch.setattr(plan, "run", lambda *a: None)
    monkeypatch.setattr(launcher.Plan, "admits", lambda self, ptrs: False)
    x2 = _dev(3000)
    add(x2, y, nt.partition(z, 1024), B=1024)
    assert fake.slow_calls["n"] == n0 + 1 and fake.launches[-1][0][0] == _ptr(x2)
    assert built == [] and add._last_plan is plan


@nt.jit
def mixed(x, z: nt.Partition["B"], a, n, y, B: nt.Constant):
    nt.store(z, a * nt.load_like(x, z) + nt.load_like(y, z) + n)


def test_the_runners_single_pack_writes_every_value_the_slow_path_would(fake):
    # the runner writes pointers and scalars in one pack_into, with the plan's own values of
    # the parameters between them: every byte must be what a fresh slow-path launch packs
    rng = np.random.default_rng(7)
    x, y, z = _dev(700), _dev(700), _dev(700)
    mixed(x, nt.partition(z, 256), 1.5, 123457, y, B=256)
    slow, _, _ = fake.launches[-1]
    for _ in range(4):                           # the key path once, then the runner
        x2, y2, z2 = _dev(700), _dev(700), _dev(700)
        a, n = float(rng.standard_normal()), int(rng.integers(-2**31, 2**31))
        mixed(x2, nt.partition(z2, 256), a, n, y2, B=256)
        got, _, _ = fake.launches[-1]
        expected = list(slow)
        for old, new in ((x, x2), (y, y2), (z, z2)):
            expected[slow.index(_ptr(old))] = _ptr(new)
        expected[expected.index(1.5)] = a           # a Python float: a float64 parameter
        expected[expected.index(123457)] = n
        assert got == expected
    assert fake.slow_calls["n"] == 1
    assert "PACKALL" in mixed._last_plan.run.source


@pytest.mark.parametrize("devices", [(0, 0), (0, 1)])
def test_the_runners_inline_filing_leaves_the_registry_as_file_locked_does(fake, monkeypatch,
                                                                           devices):
    """The plan runner files a legacy-stream launch inline (``InflightRegistry.INLINE_FILING``)
    when it neither flushes nor polls; launch by launch, the registry must be in the state that
    ``file_locked`` leaves it in: the same queue, batch count, batch device, poll counter, the
    batch event recorded at the same launches, the same entries released. Two kernels whose
    arrays live on ``devices`` alternate in runs of uneven length (each a plan hit)."""
    def states(inline):
        with monkeypatch.context() as m:
            # the primary context of every device current, as on a GPU: the runner launches
            # inline (the fake's bindings report none current, which takes enqueue_plan_on)
            m.setattr(_FakeBindings, "cuCtxGetCurrent", lambda self: (0, 0x5A))
            m.setattr(driver, "_context_ints", {d: 0x5A for d in devices})
            filed = []
            real_file = inflight.InflightRegistry.file_locked
            m.setattr(inflight.InflightRegistry, "file_locked",
                      lambda *a, **kw: filed.append(1) or real_file(*a, **kw))
            reg = inflight.InflightRegistry()
            m.setattr(inflight, "_default", reg)
            if not inline:
                m.setattr(inflight.InflightRegistry, "INLINE_FILING", ("{result} = None",))

            def kernel():
                @nt.jit
                def k(x, z: nt.Partition["B"], B: nt.Constant):
                    nt.store(z, nt.load_like(x, z) + 1.0)
                return k
            kernels = [kernel(), kernel()]
            arrays = [(_dev(700), _dev(700)) for _ in kernels]
            where = {_ptr(a): d for (x, z), d in zip(arrays, devices) for a in (x, z)}
            m.setattr(driver, "pointer_device", lambda p: where[p])
            out, handles, recorded = [], [], fake.events_recorded
            for i in range(120):
                j = 0 if i % 11 < 6 else 1
                m.setattr(driver, "current_device", lambda d=devices[j]: d)
                x, z = arrays[j]
                handles.append(kernels[j](x, nt.partition(z, 256), B=256))
                q = reg._streams.get(0, ())
                out.append((reg._unflushed, reg._unflushed_device, reg._since_collect, len(q),
                            fake.events_recorded - recorded, [e.event is None for e in q],
                            [e.finished for e in handles]))
            # the inline filing took every launch but the first two (no plan yet), those
            # that flushed or polled, and those after a batch of the other device
            if inline:
                assert len(filed) <= (40 if devices[0] != devices[1] else 12)
            else:
                assert len(filed) == 120
            return out, all(k._last_plan is not None for k in kernels)
    inline, planned = states(True)
    called, _ = states(False)
    assert planned
    assert inline == called


class _NumbaLike:
    """A stand-in for numba-cuda's ``DeviceNDArray`` over a NumPy array's memory: the attributes
    ``launcher._read_numba`` reads (``gpu_data``, ``stream``, ``shape``, ``strides``, ``dtype``),
    read by that reader on the key path and inline by the plan's guard, and the CUDA Array
    Interface the slow path reads (as numba-cuda builds it from the same attributes)."""

    def __init__(self, host, stream=0):
        import types
        self.host = host
        self.gpu_data = types.SimpleNamespace(
            device_ctypes_pointer=ctypes.c_size_t(host.__array_interface__["data"][0]),
            context=types.SimpleNamespace(device=types.SimpleNamespace(id=0)))
        self.stream = stream
        self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype

    @property
    def __cuda_array_interface__(self):
        return {"version": 3, "shape": tuple(self.shape), "strides": self.strides,
                "typestr": self.dtype.str,
                "data": (self.gpu_data.device_ctypes_pointer.value, False),
                "stream": int(self.stream) or None}


def test_numba_arrays_are_read_inline_by_the_guard_as_the_reader_reads_them(fake, monkeypatch):
    monkeypatch.setitem(launcher._READERS, _NumbaLike, launcher._read_numba)
    rng = np.random.default_rng()

    def dev(n, stream=0):
        return _NumbaLike(rng.standard_normal(n).astype(np.float32), stream)
    x, y, z = dev(3000), dev(3000), dev(3000)
    add(x, y, nt.partition(z, 1024), B=1024)
    slow, _, _ = fake.launches[-1]
    calls = fake.slow_calls["n"]
    runner = add._last_plan.run
    assert "gpu_data" in runner.source           # the inline reading, not the reader
    x2, y2, z2 = dev(3000), dev(3000), dev(3000)
    assert runner((x2, y2, nt.partition(z2, 1024), 1024), 0, "wait") is not None
    expected = list(slow)
    for old, new in ((x, x2), (y, y2), (z, z2)):
        expected[slow.index(_ptr(old))] = _ptr(new)
    assert fake.launches[-1][0] == expected
    # what the reader refuses, or reads into another key, the guard does not take
    odd = dev(3000)
    odd.shape = list(odd.shape)                  # not a tuple: the reader says no
    bad_stream = dev(3000)
    bad_stream.stream = -5                       # no stream handle
    other_shape = _NumbaLike(rng.standard_normal((3, 1000)).astype(np.float32))
    class _Liar(tuple):
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

        __hash__ = tuple.__hash__
    liar = dev(3000)
    liar.shape = _Liar((5,))                     # says it equals the plan's shape
    for v in (odd, bad_stream, other_shape, liar):
        assert runner((v, y2, nt.partition(z2, 1024), 1024), 0, "wait") is None
    # a producer stream other than the launch's: the ordering path, not the inline launch
    waits = []
    monkeypatch.setattr(inflight.default_registry(), "wait_for_streams",
                        lambda s, producers, device=None: waits.append((s, tuple(producers))))
    on_stream = dev(3000, stream=0x55)
    add(on_stream, y2, nt.partition(z2, 1024), B=1024)
    add(on_stream, y2, nt.partition(z2, 1024), B=1024)
    assert waits and all(w == (0, (0x55,)) for w in waits)
    # an overlapping output is refused on the plan's call as on the slow path
    buf = np.zeros(6000, np.float32)
    with pytest.raises(AliasingError):
        add(_NumbaLike(buf[:3000]), y2, nt.partition(_NumbaLike(buf[1000:4000]), 1024),
            B=1024)
    assert fake.slow_calls["n"] >= calls
