"""Launch plans: the generated guards and runners (``runtime/guards.py``),
interned partition fields (``runtime/partition.py``) and the plan launch (``runtime/launcher.py``),
on the recording stand-in for the CUDA driver of ``test_launch_plans.py``. Each test asserts what
the slow path does: its refusal (by name), or a launch whose memory is held as the slow path
holds it."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError
from numba_tile.runtime import capture, driver, launcher, partition as partition_module
from numba_tile.runtime.arrays import ArrayArg
from numba_tile.runtime.fakes import FakeDeviceArray
from tests.unit.test_launch_plans import _dev, fake  # noqa: F401 - fixture


@nt.jit
def tadd(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


class _Hooked:
    """A host array for FakeDeviceArray whose ``__array_interface__`` runs ``hook`` once: user
    code that runs while a launch reads its arguments."""

    def __init__(self, arr):
        self.arr, self.hook = arr, None

    @property
    def __array_interface__(self):
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return self.arr.__array_interface__


@pytest.fixture
def cuda_torch(monkeypatch):
    """CPU tensors that say they are on CUDA device 0 (their data pointers are real host
    addresses, so the fake driver records them and storages can be compared)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True), raising=False)
    monkeypatch.setattr(torch.Tensor, "device",
                        property(lambda self: torch.device("cuda", 0)), raising=False)
    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: 0, raising=False)
    return torch


def _covered(torch, refs, ptr, nbytes):
    """Whether a storage among ``refs`` (or an ArrayArg's owner there) holds the bytes."""
    refs = [r.owner if isinstance(r, ArrayArg) else r for r in refs]
    return any(isinstance(r, torch.UntypedStorage) and r.data_ptr() <= ptr
               and ptr + nbytes <= r.data_ptr() + r.nbytes() for r in refs)


# ----------------------------------------------------------------------------- PyTorch storage

@pytest.mark.parametrize("path", ["runner", "key", "capture"])
def test_a_tensor_given_other_memory_while_a_plan_call_reads_its_arguments_stays_held(
        fake, cuda_torch, monkeypatch, path):
    """x.set_() while the call reads a later argument (user code in an interface) drops x's old
    storage: the slow path holds the storage it read the pointer from; a plan launch must not
    launch on memory no storage it holds covers (use after free: PyTorch's allocator hands that
    memory to the next tensor while the kernel runs)."""
    torch = cuda_torch
    x = torch.ones(1024)
    hooked = _Hooked(np.zeros(1024, np.float32))
    y = FakeDeviceArray(hooked, readonly=False)
    z = _dev(1024)
    tadd(x, y, nt.partition(z, 1024), B=1024)
    plan = tadd._last_plan
    assert plan is not None and plan.torch_arrays == (0,)
    if path == "key":
        monkeypatch.setattr(plan, "run", launcher._never_run)
    if path == "capture":
        monkeypatch.setattr(capture, "_held", [])
        monkeypatch.setattr(capture, "_by_capture", {})
        monkeypatch.setattr(capture, "_ours", {})
        fake.capturing_stream, fake.capture_status = 0x99, driver.CAPTURE_ACTIVE

    def move():
        x.set_(torch.zeros(1024))           # the old storage has no other reference
    hooked.hook = move
    h = tadd(x, y, nt.partition(z, 1024), B=1024, stream=0x99 if path == "capture" else None)
    launched = fake.launches[-1][0][0]      # x's pointer as packed
    if path == "capture":
        refs = [r for hold in capture._held for group in hold.refs for r in group]
        fake.capture_status = 0
        fake.post_all()
    else:
        refs = h.refs
    assert _covered(torch, refs, launched, 1024 * 4)


# ----------------------------------------------------------------------------- partitions

class _Unhashable:
    __hash__ = None

    def __index__(self):
        return 1024


class _EqualRaises:
    def __hash__(self):
        return hash(1024)

    def __eq__(self, other):
        raise RuntimeError("eq")


@pytest.mark.parametrize("extent", [[1024], _EqualRaises()])
def test_a_tile_shape_of_odd_objects_is_refused_by_name(extent):
    """The fast path of Partition() checks the items before it looks the tuple up in the
    interning table: an unhashable item, or an item whose __eq__ raises, is refused as the
    checked path refuses every item that is not an int (TileArgumentError), not with the
    TypeError or the exception of the lookup."""
    nt.partition(np.zeros(2048, np.float32), (1024,))     # (1024,) interned
    with pytest.raises(TileArgumentError, match="tile extent"):
        nt.partition(np.zeros(2048, np.float32), (extent,))


def test_an_unhashable_index_extent_is_normalized_as_the_checked_path_does():
    nt.partition(np.zeros(2048, np.float32), (1024,))
    p = nt.partition(np.zeros(2048, np.float32), (_Unhashable(),))
    assert p.tile_shape == (1024,) and type(p.tile_shape[0]) is int


def test_one_tile_shape_is_one_object_after_the_interning_table_fills(monkeypatch):
    """When the interning table fills and is emptied, an int tile shape seen before
    (``_SEEN_INT``) is emptied with it: ``partition(z, 1024)`` and ``partition(z, (1024,))``
    keep one tile shape object, so a plan's guard, which recognises tile shapes by identity,
    takes both (else one of the two would take the key path on every call). Performance only:
    identity implies equality."""
    monkeypatch.setattr(partition_module, "_INTERNED", {})
    monkeypatch.setattr(partition_module, "_SEEN_INT", {})
    a = np.zeros(4096, np.float32)
    first = nt.partition(a, 1024).tile_shape
    b = np.zeros((1, 1), np.float32)
    for i in range(64):                         # 4096 more tile shapes: a full table
        for j in range(64):
            nt.partition(b, (1 << i, 1 << j))
    assert nt.partition(a, (1024,)).tile_shape is nt.partition(a, 1024).tile_shape is first


def test_a_tensor_view_launched_through_its_plan_holds_its_storage(fake, cuda_torch):
    """The common case still takes the runner: a view at an offset lies inside its storage."""
    torch = cuda_torch
    base = torch.ones(4096)
    z = _dev(1024)
    y = _dev(1024)
    tadd(base[1024:2048], y, nt.partition(z, 1024), B=1024)
    calls = fake.slow_calls["n"]
    for lo in (0, 2048, 3072):
        x = base[lo:lo + 1024]
        h = tadd(x, y, nt.partition(z, 1024), B=1024)
        assert fake.launches[-1][0][0] == x.data_ptr()
        assert _covered(torch, h.refs, x.data_ptr(), 4096)
    assert fake.slow_calls["n"] == calls


# ----------------------------------------------------------------------------- CuPy's stream

@pytest.fixture
def fake_cupy(monkeypatch):
    """A stand-in ``cupy`` module: an ``ndarray`` over a NumPy array's memory whose CUDA Array
    Interface names CuPy's current stream, as CuPy's does (``cupy.cuda.current``)."""
    import sys
    import types
    from numba_tile.runtime import arrays
    mod = types.ModuleType("cupy")
    cuda = types.SimpleNamespace(current=types.SimpleNamespace(ptr=0))
    cuda.get_current_stream = lambda: cuda.current
    mod.cuda = cuda
    mod._util = types.SimpleNamespace(CUDA_ARRAY_INTERFACE_EXPORT_VERSION=3)

    class ndarray:
        def __init__(self, host):
            self.host = host
            self.data = types.SimpleNamespace(ptr=host.__array_interface__["data"][0],
                                              device_id=0)
            self.device = types.SimpleNamespace(id=0)
            self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype

        @property
        def __cuda_array_interface__(self):
            return {"version": 3, "shape": self.shape, "strides": None,
                    "typestr": self.dtype.str, "data": (self.data.ptr, False),
                    "stream": cuda.current.ptr or 1}
    ndarray.__module__ = "cupy"
    mod.ndarray = ndarray
    monkeypatch.setitem(sys.modules, "cupy", mod)
    monkeypatch.setattr(launcher, "_cupy_version", None)
    monkeypatch.setattr(launcher, "_fast_launch", None)
    monkeypatch.setattr(launcher, "_READERS", {})
    monkeypatch.setattr(arrays, "_ADAPTERS", {})
    return mod


@pytest.mark.parametrize("path", ["runner", "key"])
@pytest.mark.parametrize("order", ["hook first", "cupy, hook, cupy"])
def test_cupys_stream_is_read_when_the_slow_path_reads_it(fake, fake_cupy, monkeypatch, order,
                                                          path):
    """The slow path reads CuPy's current stream (the CuPy array's interface ``stream``) when it
    reads each CuPy array, and so do the guard and the plan key: user code in an earlier
    argument's interface that makes another CuPy stream current (``with stream:``) does not
    leave a CuPy array's producer stream unordered before the launch."""
    from numba_tile.runtime import inflight
    cuda = fake_cupy.cuda
    hooked = _Hooked(np.zeros(1024, np.float32))
    x = FakeDeviceArray(hooked, readonly=False)
    y = fake_cupy.ndarray(np.zeros(1024, np.float32))
    z = _dev(1024)
    zc = fake_cupy.ndarray(np.zeros(1024, np.float32))

    def use_stream():
        cuda.current = type(cuda.current)(ptr=0x77)
        hooked.hook = use_stream            # on every read
    waits = []
    monkeypatch.setattr(inflight.default_registry(), "wait_for_streams",
                        lambda s, producers, device=None: waits.append((s, tuple(producers))))
    for i in range(3):
        cuda.current = type(cuda.current)(ptr=0)
        hooked.hook = use_stream
        if order == "hook first":
            tadd(x, y, nt.partition(z, 1024), B=1024)
        else:                       # y on the legacy stream, z on 0x77
            tadd(y, x, nt.partition(zc, 1024), B=1024)
        if i == 0:
            calls = fake.slow_calls["n"]
            if path == "key":
                monkeypatch.setattr(tadd._last_plan, "run", launcher._never_run)
    assert tadd._last_plan is not None and fake.slow_calls["n"] == calls
    assert waits == [(0, (0x77,))] * 3


# ----------------------------------------------------------------------------- per-thread stream

@pytest.mark.parametrize("second", ["plan", "slow"])
def test_two_threads_per_thread_default_streams_are_two_streams(fake, monkeypatch, second):
    """Handle 2 (CU_STREAM_PER_THREAD) is the calling thread's own per-thread default stream:
    the registry files two threads' launches under two streams, so a launch reading z on the
    second thread's stream waits for the first thread's launch writing z (with
    on_conflict='raise': is refused); on the same thread they stay one stream."""
    import threading
    from numba_tile.errors import StreamConflictError
    from numba_tile.runtime import inflight
    from tests.unit.test_launch_plans import axpb
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    tadd(x, y, nt.partition(z, 1024), B=1024, stream=2)
    monkeypatch.setattr(inflight.default_registry().backend, "query", lambda e: False)
    tadd(x, y, nt.partition(z, 1024), B=1024, stream=2)          # writes z, in flight
    tadd(z, y, nt.partition(_dev(1024), 1024), B=1024, stream=2, on_conflict="raise")
    out = []

    def other():
        try:
            if second == "plan":
                tadd(z, y, nt.partition(_dev(1024), 1024), B=1024, stream=2,
                     on_conflict="raise")
            else:
                axpb(z, nt.partition(_dev(1024), 256), 2.0, 1.0, 256, stream=2,
                     on_conflict="raise")
            out.append("launched")
        except StreamConflictError:
            out.append("refused")
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert out == ["refused"]


# ----------------------------------------------------------------------------- constants' bits

def test_nan_constants_of_other_bits_are_other_specializations():
    import struct
    import numba_tile.kernel as K
    nan = float("nan")
    assert struct.pack("<d", nan) != struct.pack("<d", -nan)
    assert K.constant_identity(nan) != K.constant_identity(-nan)
