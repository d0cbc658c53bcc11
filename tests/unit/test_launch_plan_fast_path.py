"""The plan runner's fast path agrees with the slow path:

1. ``runtime/guards.py``: (a) an array's pointer test and its range end in one chained comparison
   (``not 0 < p < LIM``), the overlap pairs written on those expressions (``p + H``), an end used
   by several pairs computed once; (b) numba-cuda ``DeviceNDArray`` arguments read inline
   (``gpu_data.device_ctypes_pointer.value``, ``stream``, ``shape``, ``strides``, ``dtype``,
   ``gpu_data.context.device.id``) instead of through ``launcher._read_numba``.
2. ``runtime/inflight.py``: ``InflightRegistry.INLINE_FILING``, the runner's inline filing of a
   legacy-stream launch.

On the recording stand-in for the CUDA driver of ``test_launch_plans.py``. Each test asserts what
the slow path does: its refusal (by exception class), or a launch whose packed values and held
references are the slow path's. Among them: in the guard's inline numba reading, a falsy non-int
pointer is not read as 0, a dtype or a device id that says it is equal (a dtype-like object, an
int subclass) does not take another plan; in the guard and in ``launcher._read_numba``, extents
and strides whose items are not exact ints (a float, an int subclass whose ``__eq__`` says yes)
neither find another layout's plan nor poison a plan for every array of its rank.
"""

import ctypes
import gc
import threading
import types
import weakref

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (AliasingError, SelfOverlapError, TileArgumentError,
                               TileTypingError)
from numba_tile.runtime import driver, inflight, launcher
from numba_tile.runtime.arrays import ArrayArg
from numba_tile.runtime.fakes import FakeDeviceArray
from tests.unit.test_launch_plans import _FakeBindings, _NumbaLike, _dev, fake  # noqa: F401

_END = 1 << 64


# ----------------------------------------------------------------------------- helpers

def _kernel_xz():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) + 1.0)
    return k


def _kernel_xwz():
    """``w`` is an extra array the kernel never touches (a zero-size one is allowed)."""
    @nt.jit
    def k(x, w, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) + 1.0)
    return k


def _kernel_xyz():
    """``z`` meets two inputs: its range end is used by two pairs (computed once)."""
    @nt.jit
    def k(x, y, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))
    return k


def _kernel_two_outputs():
    @nt.jit
    def k(x, z: nt.Partition["B"], w: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) + 1.0)
        nt.store(w, nt.load_like(x, w) + 2.0)
    return k


@pytest.fixture
def numba_reader(monkeypatch):
    """``_NumbaLike`` read as a numba-cuda DeviceNDArray (``launcher._read_numba``; inline by
    the plan's guard)."""
    monkeypatch.setitem(launcher._READERS, _NumbaLike, launcher._read_numba)


@pytest.fixture
def ctx_current(monkeypatch):
    """The primary context of device 0 current, as on a GPU: the runner launches inline and
    files inline (the fake's bindings otherwise report none current)."""
    monkeypatch.setattr(_FakeBindings, "cuCtxGetCurrent", lambda self: (0, 0x5A))
    monkeypatch.setattr(driver, "_context_ints", {0: 0x5A, 1: 0x5A})


def _numba(host, ptr=None, stream=0):
    a = _NumbaLike(host, stream)
    if ptr is not None:
        a.gpu_data.device_ctypes_pointer = types.SimpleNamespace(value=ptr)
    return a


def _forged_host(ptr, shape, strides=None, dtype=np.float32):
    """A NumPy array over memory at ``ptr`` (never read: the fake driver reads no data)."""
    iface = {"shape": tuple(shape), "typestr": np.dtype(dtype).str, "version": 3,
             "data": (ptr, False)}
    if strides is not None:
        iface["strides"] = tuple(strides)
    cls = type("Iface", (), {"__array_interface__": iface})
    return np.asarray(cls())


def _array(kind, host, ptr=None):
    """A device array of ``kind`` ('cai': FakeDeviceArray, 'numba': _NumbaLike) over ``host``,
    or over a forged pointer of ``host``'s layout."""
    if kind == "cai":
        if ptr is not None:
            host = _forged_host(ptr, host.shape, host.strides, host.dtype)
        return FakeDeviceArray(host)
    return _numba(host, ptr)


def _slow(k, values):
    """The slow path's launch of ``values`` (every check the full way): its packed values."""
    k._call(tuple(values), {}, None, None, "wait", None, False)


def _plan_then(fake, k, first, attack):
    """Launch ``first`` twice (the slow path, then the plan: its runner exists), then ``attack``;
    returns (slow calls taken by the attack, launches queued by it)."""
    k(*first[:-1], B=first[-1])
    k(*first[:-1], B=first[-1])
    assert k._last_plan is not None
    n, launches = fake.slow_calls["n"], len(fake.launches)
    k(*attack[:-1], B=attack[-1])
    return fake.slow_calls["n"] - n, len(fake.launches) - launches


# ============================================================================ 1(b) numba inline

@pytest.mark.parametrize("falsy", [
    pytest.param(False),
    pytest.param(0.0),
    pytest.param(""),
])
def test_a_falsy_non_int_numba_pointer_is_refused_as_the_slow_path_refuses_it(
        fake, numba_reader, falsy):
    """A zero-size numba array gives a null pointer (``c_void_p(None).value``): the plan of that
    kind holds residue -1. A pointer of another type that is falsy must not be read as 0."""
    k = _kernel_xwz()
    x, z = _dev(256), _dev(256)
    w = _numba(np.zeros(0, np.float32))
    w.gpu_data.device_ctypes_pointer = ctypes.c_void_p(None)       # numba-cuda's null pointer
    k(x, w, nt.partition(z, 256), B=256)
    k(x, w, nt.partition(z, 256), B=256)
    bad = _numba(np.zeros(0, np.float32), ptr=falsy)
    with pytest.raises(TileArgumentError):
        _slow(k, (x, bad, nt.partition(z, 256), 256))              # the slow path refuses
    launches = len(fake.launches)
    with pytest.raises(TileArgumentError):
        k(x, bad, nt.partition(z, 256), B=256)
    assert len(fake.launches) == launches


def test_a_null_numba_pointer_takes_the_plan_and_packs_what_the_slow_path_packs(
        fake, numba_reader):
    k = _kernel_xwz()
    x, z = _dev(256), _dev(256)
    w = _numba(np.zeros(0, np.float32))
    w.gpu_data.device_ctypes_pointer = ctypes.c_void_p(None)
    k(x, w, nt.partition(z, 256), B=256)
    k(x, w, nt.partition(z, 256), B=256)
    n = fake.slow_calls["n"]
    w2 = _numba(np.zeros(0, np.float32), ptr=None)
    w2.gpu_data.device_ctypes_pointer = ctypes.c_void_p(None)
    x2, z2 = _dev(256), _dev(256)
    k(x2, w2, nt.partition(z2, 256), B=256)
    assert fake.slow_calls["n"] == n                 # the plan
    fast = fake.launches[-1][0]
    _slow(k, (x2, w2, nt.partition(z2, 256), 256))
    assert fake.launches[-1][0] == fast


class _DtypeNeLies:
    """A dtype whose ``!=`` says "equal" to anything while ``==`` says "not equal"; its CUDA
    Array Interface typestr (``.str``, what numba-cuda exports) is another dtype."""

    def __init__(self, typestr):
        self.str = typestr

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


def test_a_dtype_whose_ne_lies_does_not_take_the_plan_of_another_dtype(fake, numba_reader):
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(np.ones(256))           # float64
    z2 = _numba(np.ones(256))
    z2.dtype = _DtypeNeLies("<f4")
    with pytest.raises(TileTypingError):
        _slow(k, (x, nt.partition(z2, 256), 256))
    with pytest.raises(TileTypingError):
        _plan_then(fake, k, (x, nt.partition(z, 256), 256), (x, nt.partition(z2, 256), 256))


@pytest.mark.parametrize("dtype", [
    pytest.param(None, id="None"), pytest.param(np.float64, id="scalar-type"),
    pytest.param("float64", id="str")])
def test_a_dtype_given_as_a_non_dtype_equal_to_the_plans_is_refused(fake, numba_reader, dtype):
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(np.ones(256))
    z2 = _numba(np.ones(256))
    z2.dtype = dtype
    with pytest.raises(TileArgumentError):
        _slow(k, (x, nt.partition(z2, 256), 256))
    with pytest.raises(TileArgumentError):
        _plan_then(fake, k, (x, nt.partition(z, 256), 256), (x, nt.partition(z2, 256), 256))


@pytest.mark.parametrize("path", ["runner", "key"])
@pytest.mark.parametrize("field,value", [("shape", (256.0,)), ("strides", (8.0,))])
def test_float_extents_or_strides_of_a_numba_array_are_refused(fake, numba_reader, monkeypatch,
                                                                path, field, value):
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(np.ones(256))
    z2 = _numba(np.ones(256))
    setattr(z2, field, value)
    with pytest.raises(TileArgumentError):
        _slow(k, (x, nt.partition(z2, 256), 256))
    k(x, nt.partition(z, 256), B=256)
    k(x, nt.partition(z, 256), B=256)
    if path == "key":
        monkeypatch.setattr(k._last_plan, "run", launcher._never_run)
    with pytest.raises(TileArgumentError):
        k(x, nt.partition(z2, 256), B=256)


class _IntEqLies(int):
    """An int that says it equals anything (its hash is its own value's)."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


def test_an_extent_that_says_it_equals_anything_packs_its_own_value(fake, numba_reader):
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(np.ones(256))
    z2 = _numba(np.ones(4))
    z2.shape = (_IntEqLies(4),)
    _plan_then(fake, k, (x, nt.partition(z, 256), 256), (x, nt.partition(z2, 256), 256))
    fast = fake.launches[-1][0]
    _slow(k, (x, nt.partition(z2, 256), 256))
    slow = fake.launches[-1][0]
    assert 4 in slow
    assert fast == slow


def test_a_plan_made_with_a_lying_extent_does_not_take_later_plain_arrays(fake, numba_reader):
    k = _kernel_xz()
    pbuf = np.ones(1024)
    px, pz = _numba(pbuf[0:256]), _numba(pbuf[512:516])
    pz.shape = (_IntEqLies(4),)
    k(px, nt.partition(pz, 256), B=256)                 # the slow path checks extent 4
    k(px, nt.partition(pz, 256), B=256)
    buf = np.ones(1024)
    z, x = _numba(buf[0:256]), _numba(buf[8:264])        # z overlaps x by 248 elements
    with pytest.raises(AliasingError):
        _slow(_kernel_xz(), (x, nt.partition(z, 256), 256))
    launches = len(fake.launches)
    with pytest.raises(AliasingError):
        k(x, nt.partition(z, 256), B=256)
    assert len(fake.launches) == launches


def test_a_stride_that_says_it_equals_anything_is_refused_as_self_overlap(fake, numba_reader):
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(np.ones(256))
    z2 = _numba(np.ones(256))
    z2.strides = (_IntEqLies(0),)
    with pytest.raises(SelfOverlapError):
        _slow(k, (x, nt.partition(z2, 256), 256))
    with pytest.raises(SelfOverlapError):
        _plan_then(fake, k, (x, nt.partition(z, 256), 256), (x, nt.partition(z2, 256), 256))


def test_a_device_id_whose_ne_lies_does_not_take_another_devices_plan(fake, numba_reader,
                                                                      monkeypatch):
    host0, host1 = np.ones(256), np.ones(256)
    on_one = {host1.ctypes.data}
    monkeypatch.setattr(driver, "pointer_device", lambda p: 1 if p in on_one else 0)
    monkeypatch.setattr(driver, "can_access_peer", lambda d, p: False)   # no peer path
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(host0)
    k(x, nt.partition(z, 256), B=256)
    k(x, nt.partition(z, 256), B=256)
    z1 = _numba(host1)
    z1.gpu_data.context.device.id = _IntEqLies(1)
    with pytest.raises(TileArgumentError, match="different devices"):
        _slow(_kernel_xz(), (x, nt.partition(z1, 256), 256))
    launches = len(fake.launches)
    with pytest.raises(TileArgumentError, match="different devices"):
        k(x, nt.partition(z1, 256), B=256)
    assert len(fake.launches) == launches


def test_a_numba_array_on_another_device_is_refused_by_the_slow_path(fake, numba_reader,
                                                                     monkeypatch):
    """The control of the test above: an exact device id 1 misses device 0's plan; the slow
    path refuses arguments on two devices."""
    host0, host1 = np.ones(256), np.ones(256)
    on_one = {host1.ctypes.data}
    monkeypatch.setattr(driver, "pointer_device", lambda p: 1 if p in on_one else 0)
    monkeypatch.setattr(driver, "can_access_peer", lambda d, p: False)   # no peer path
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(host0)
    k(x, nt.partition(z, 256), B=256)
    k(x, nt.partition(z, 256), B=256)
    z1 = _numba(host1)
    z1.gpu_data.context.device.id = 1
    launches = len(fake.launches)
    with pytest.raises(TileArgumentError, match="different devices"):
        k(x, nt.partition(z1, 256), B=256)
    assert len(fake.launches) == launches


def test_numba_arrays_with_exact_reads_take_the_plan_and_odd_ones_are_refused(
        fake, numba_reader):
    """The defence that holds: exact tuples of exact ints, the plan's dtype object, a stream
    handle in range; anything the reader refuses is refused (or takes the slow path)."""
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(np.ones(256))
    k(x, nt.partition(z, 256), B=256)
    k(x, nt.partition(z, 256), B=256)
    n = fake.slow_calls["n"]
    x2, z2 = _numba(np.ones(256)), _numba(np.ones(256))
    k(x2, nt.partition(z2, 256), B=256)
    assert fake.slow_calls["n"] == n
    fast = fake.launches[-1][0]
    _slow(k, (x2, nt.partition(z2, 256), 256))
    assert fake.launches[-1][0] == fast
    for attr, value, exc in (("stream", _END, TileArgumentError),
                             ("stream", -1, TileArgumentError),
                             ("shape", (True,) * 1, TileArgumentError),
                             ("strides", (0,), SelfOverlapError)):
        bad = _numba(np.ones(256))
        setattr(bad, attr, value)
        launches = len(fake.launches)
        with pytest.raises(exc):
            k(x2, nt.partition(bad, 256), B=256)
        assert len(fake.launches) == launches


@pytest.mark.parametrize("ptr", [-16, -(1 << 63), 0, _END, _END + 16])
def test_a_numba_pointer_outside_the_address_space_is_refused(fake, numba_reader, ptr):
    k = _kernel_xz()
    x, z = _numba(np.ones(256)), _numba(np.ones(256))
    k(x, nt.partition(z, 256), B=256)
    k(x, nt.partition(z, 256), B=256)
    launches = len(fake.launches)
    for bad in (_numba(np.ones(256), ptr=ptr),):
        with pytest.raises(TileArgumentError):
            k(bad, nt.partition(z, 256), B=256)
        with pytest.raises(TileArgumentError):
            k(x, nt.partition(bad, 256), B=256)
    assert len(fake.launches) == launches


# ============================================================================ 1(a) ranges

@pytest.mark.parametrize("kind", ["cai", "numba"])
@pytest.mark.parametrize("gap,accepted", [(-16, False), (0, False), (16, True), (4096, True)])
def test_a_range_ending_at_the_top_of_the_address_space(fake, numba_reader, kind, gap,
                                                         accepted):
    """``not 0 < p < LIM`` (``LIM = 2**64 - H``): a range whose end is 2**64 or past it is
    refused (as the slow path: "64-bit address space"), one that ends ``gap`` bytes below is
    launched on the plan, with the slow path's packed values."""
    k = _kernel_xz()
    n = 1024
    H = n * 4
    host = np.ones(n, np.float32)
    top = _array(kind, host, ptr=_END - H - 4096)        # accepted: the plan's kind (residue 0)
    z = _dev(n)
    k(top, nt.partition(z, 256), B=256)
    k(top, nt.partition(z, 256), B=256)
    calls, launches = fake.slow_calls["n"], len(fake.launches)
    x = _array(kind, host, ptr=_END - H - gap)
    if not accepted:
        with pytest.raises(TileArgumentError, match="64-bit address space"):
            k(x, nt.partition(z, 256), B=256)
        assert len(fake.launches) == launches
        return
    k(x, nt.partition(z, 256), B=256)
    assert fake.slow_calls["n"] == calls and len(fake.launches) == launches + 1
    fast = fake.launches[-1][0]
    assert fast[0] == _END - H - gap
    _slow(k, (x, nt.partition(z, 256), 256))
    assert fake.launches[-1][0] == fast


@pytest.mark.parametrize("kind", ["cai", "numba"])
def test_a_reversed_view_reaching_below_address_zero_is_refused(fake, numba_reader, kind):
    """A negative stride: the range starts below the pointer (the lo/hi branch, not the
    chained comparison)."""
    k = _kernel_xz()
    n = 256
    base = np.ones(2 * n, np.float32)
    rev = base[n:][::-1]                                      # strides (-4,)
    z = _dev(n)
    k(_array(kind, rev), nt.partition(z, 256), B=256)
    k(_array(kind, rev), nt.partition(z, 256), B=256)
    calls = fake.slow_calls["n"]
    other = np.ones(2 * n, np.float32)[n:][::-1]
    k(_array(kind, other), nt.partition(z, 256), B=256)       # the plan
    assert fake.slow_calls["n"] == calls
    launches = len(fake.launches)
    low = _array(kind, rev, ptr=16 * 10)                      # lowest byte 160 - 1020 < 0
    with pytest.raises(TileArgumentError, match="64-bit address space"):
        k(low, nt.partition(z, 256), B=256)
    assert len(fake.launches) == launches


_N = 256


@pytest.mark.parametrize("kind", ["cai", "numba"])
@pytest.mark.parametrize("where", ["x", "y"])
@pytest.mark.parametrize("order", ["output-above", "output-below"])
@pytest.mark.parametrize("gap,overlaps", [(0, False), (4, False), (-4, True), (-1, True),
                                          (-_N, True)])
def test_an_output_meeting_an_input_at_its_range_boundary(fake, numba_reader, kind, where,
                                                          order, gap, overlaps):
    """The pairs on ``p + H`` expressions, ``z``'s end shared by its two pairs: ``z`` placed
    ``gap`` elements past an input's end (0: touching, launched on the plan with the slow
    path's packed values) or reaching into it (refused as the slow path refuses:
    AliasingError); a gap of a multiple of 4 elements keeps every pointer's residue modulo 16,
    so the runner itself decides."""
    k = _kernel_xyz()
    n = _N
    buf = np.zeros(8 * n, np.float32)
    x, y, z = (_array(kind, buf[i * n:(i + 1) * n]) for i in (5, 6, 7))
    k(x, y, nt.partition(z, 256), B=256)
    k(x, y, nt.partition(z, 256), B=256)
    lower, upper = n, 2 * n + gap
    inp_at, out_at = (lower, upper) if order == "output-above" else (upper, lower)
    inp = _array(kind, buf[inp_at:inp_at + n])
    out = _array(kind, buf[out_at:out_at + n])
    args = (inp, y, nt.partition(out, 256)) if where == "x" else (x, inp, nt.partition(out, 256))
    calls, launches = fake.slow_calls["n"], len(fake.launches)
    if overlaps:
        with pytest.raises(AliasingError):
            _slow(k, (*args, 256))
        with pytest.raises(AliasingError):
            k(*args, B=256)
        assert len(fake.launches) == launches
        assert k._last_plan.run((*args, 256), 0, "wait") is None     # the runner's own no
    else:
        k(*args, B=256)
        assert fake.slow_calls["n"] == calls          # the plan took it
        fast = fake.launches[-1][0]
        _slow(k, (*args, 256))
        assert fake.launches[-1][0] == fast
        assert k._last_plan.run((*args, 256), 0, "wait") is not None


@pytest.mark.parametrize("kind", ["cai", "numba"])
@pytest.mark.parametrize("order", ["z-above", "z-below"])
@pytest.mark.parametrize("gap,overlaps", [(0, False), (4, False), (-4, True), (-1, True)])
def test_two_outputs_meeting_at_their_range_boundary(fake, numba_reader, kind, order, gap,
                                                     overlaps):
    k = _kernel_two_outputs()
    n = _N
    buf = np.zeros(8 * n, np.float32)
    x, z, w = (_array(kind, buf[i * n:(i + 1) * n]) for i in (5, 6, 7))
    k(x, nt.partition(z, 256), nt.partition(w, 256), B=256)
    k(x, nt.partition(z, 256), nt.partition(w, 256), B=256)
    lower, upper = n, 2 * n + gap
    z_at, w_at = (upper, lower) if order == "z-above" else (lower, upper)
    zz, ww = _array(kind, buf[z_at:z_at + n]), _array(kind, buf[w_at:w_at + n])
    args = (x, nt.partition(zz, 256), nt.partition(ww, 256))
    calls, launches = fake.slow_calls["n"], len(fake.launches)
    if overlaps:
        with pytest.raises(AliasingError):
            _slow(k, (*args, 256))
        with pytest.raises(AliasingError):
            k(*args, B=256)
        assert len(fake.launches) == launches
        assert k._last_plan.run((*args, 256), 0, "wait") is None     # the runner's own no
    else:
        k(*args, B=256)
        assert fake.slow_calls["n"] == calls        
        fast = fake.launches[-1][0]
        _slow(k, (*args, 256))
        assert fake.launches[-1][0] == fast
        assert k._last_plan.run((*args, 256), 0, "wait") is not None


def test_an_output_at_the_top_of_the_address_space_meeting_an_input(fake):
    """The chained comparison and the pairs together near 2**64: two forged ranges, touching
    (launched on the plan) and one element apart in the other direction (refused)."""
    k = _kernel_xyz()
    n = 256
    H = n * 4
    top = _END - 16 * H
    xs = [FakeDeviceArray(_forged_host(top + i * H, (n,))) for i in range(8)]
    y = _dev(n)
    k(xs[0], y, nt.partition(xs[2], 256), B=256)
    k(xs[0], y, nt.partition(xs[2], 256), B=256)
    calls = fake.slow_calls["n"]
    k(xs[3], y, nt.partition(xs[4], 256), B=256)                 # touching: the plan
    assert fake.slow_calls["n"] == calls
    fast = fake.launches[-1][0]
    _slow(k, (xs[3], y, nt.partition(xs[4], 256), 256))
    assert fake.launches[-1][0] == fast
    inside = FakeDeviceArray(_forged_host(top + 4 * H + 4, (n,)))
    with pytest.raises((AliasingError, TileArgumentError)):
        _slow(k, (inside, y, nt.partition(xs[4], 256), 256))
    launches = len(fake.launches)
    with pytest.raises(AliasingError):
        k(inside, y, nt.partition(xs[4], 256), B=256)
    assert len(fake.launches) == launches


def test_a_zero_size_array_inside_an_outputs_range_launches_as_on_the_slow_path(
        fake, numba_reader):
    """A zero-size array has no range: no pair is tested (the slow path's exact test finds no
    shared byte either)."""
    k = _kernel_xwz()
    n = 256
    x, z = _dev(n), _dev(n)
    w = _numba(np.zeros(n, np.float32)[16:16])
    k(x, w, nt.partition(z, 256), B=256)
    k(x, w, nt.partition(z, 256), B=256)
    calls = fake.slow_calls["n"]
    buf = np.zeros(n, np.float32)
    inside = _numba(buf[16:16])                 # a pointer inside z's range, residue 0
    assert inside.gpu_data.device_ctypes_pointer.value & 15 == \
        w.gpu_data.device_ctypes_pointer.value & 15
    zz = FakeDeviceArray(buf)
    k(x, inside, nt.partition(zz, 256), B=256)
    assert fake.slow_calls["n"] == calls
    fast = fake.launches[-1][0]
    _slow(k, (x, inside, nt.partition(zz, 256), 256))
    assert fake.launches[-1][0] == fast


# ============================================================================ 2 inline filing

class _LaggingBackend:
    """Events that complete ``lag`` recordings after their own (a GPU behind the host)."""

    def __init__(self, lag):
        self.lag, self.n, self.seq = lag, 0, {}

    def create(self):
        return types.SimpleNamespace()

    def record(self, event, stream):
        self.n += 1
        self.seq[id(event)] = self.n

    def query(self, event):
        return self.seq[id(event)] + self.lag <= self.n

    def synchronize(self, event):
        self.n += self.lag

    def wait(self, stream, event):
        pass

    def destroy(self, event):
        pass


@pytest.mark.parametrize("collect_every", [2, 3, 5, 32])
@pytest.mark.parametrize("lag", [0, 3])
def test_inline_filing_matches_file_locked_with_pending_events_and_other_streams(
        fake, monkeypatch, ctx_current, collect_every, lag):
    """Launch by launch, the registry after the runner's inline filing is the registry after
    ``file_locked``: events that complete late, a small ``collect_every`` (every flush and poll
    boundary), a launch on another stream now and then (the runner's enqueue path), a
    ``done()`` and a dropped handle between launches."""
    def states(inline):
        with monkeypatch.context() as m:
            backend = _LaggingBackend(lag)
            reg = inflight.InflightRegistry(backend, collect_every=collect_every)
            m.setattr(inflight, "_default", reg)
            if not inline:
                m.setattr(inflight.InflightRegistry, "INLINE_FILING", ("{result} = None",))
            real_file = inflight.InflightRegistry.file_locked
            m.setattr(inflight.InflightRegistry, "file_locked",
                      lambda *a, **kw: filed.append(1) or real_file(*a, **kw))
            k = _kernel_xz()
            x, z = _dev(300), _dev(300)
            out, handles = [], []
            for i in range(70):
                stream = 0x77 if i % 17 == 9 else None
                h = k(x, nt.partition(z, 256), B=256, stream=stream)
                if i % 5 == 0:
                    handles.append(h)
                if i % 13 == 4:
                    handles[-1].done()
                q = reg._streams.get(0, ())
                out.append((reg._unflushed, reg._unflushed_device, reg._since_collect,
                            sorted(map(str, reg._streams)), len(q), backend.n,
                            [e.event is None for e in q], [e.finished for e in q],
                            [h.finished for h in handles], len(reg._pool)))
            return out
    filed = []
    inline = states(True)
    n_inline, filed[:] = len(filed), []
    assert inline == states(False)
    assert len(filed) == 70
    if collect_every > 3 and lag == 0:
        # the inline filing took launches (with events pending, the other stream's queue
        # stays and sends legacy launches down the enqueue path, as it should)
        assert n_inline < 70 - 20


def test_an_inline_filed_launch_holds_what_the_slow_path_holds_until_its_batch_completes(
        fake, monkeypatch, ctx_current):
    """The handle is dropped and collected: the registry still holds every argument (and the
    kernel) until the legacy stream's batch event has completed."""
    backend = _LaggingBackend(10 ** 9)                  # never completes by itself
    reg = inflight.InflightRegistry(backend)
    monkeypatch.setattr(inflight, "_default", reg)
    k = _kernel_xyz()
    x, y, z = _dev(300), _dev(300), _dev(300)
    slow_h = k(x, y, nt.partition(z, 256), B=256)       # the slow path: a plan, an entry
    k(x, y, nt.partition(z, 256), B=256)
    filed = []
    real = inflight.InflightRegistry.file_locked
    monkeypatch.setattr(inflight.InflightRegistry, "file_locked",
                        lambda *a, **kw: filed.append(1) or real(*a, **kw))
    x2, y2, z2 = _dev(300), _dev(300), _dev(300)
    refs = [weakref.ref(a) for a in (x2, y2, z2)]
    calls = fake.slow_calls["n"]
    h = k(x2, y2, nt.partition(z2, 256), B=256)
    assert fake.slow_calls["n"] == calls and not filed     # the runner filed it inline
    held = {id(r) for r in h.refs}
    slow_held = {id(r.obj if type(r) is ArrayArg else r) for r in slow_h.refs}
    slow_owner = {id(r.owner) for r in slow_h.refs if type(r) is ArrayArg}
    assert {id(x), id(y), id(z), id(k)} <= slow_held and slow_owner <= slow_held
    assert {id(x2), id(y2), id(z2), id(k)} == held
    h.materialize()                                      # what a conflict check reads
    assert {id(a.obj) for a in h.refs if type(a) is ArrayArg} == {id(x2), id(y2), id(z2)}
    assert {a.ptr for a in h.writes} == {z2.__cuda_array_interface__["data"][0]}
    del h, x2, y2, z2
    gc.collect()
    assert all(r() is not None for r in refs)
    reg.collect()                                        # the batch event: recorded, pending
    gc.collect()
    assert all(r() is not None for r in refs)
    backend.lag = 0
    reg.collect()
    gc.collect()
    assert all(r() is None for r in refs)


def test_threads_filing_inline_leave_a_consistent_registry(fake, monkeypatch, ctx_current):
    """Four threads launch through one plan, filed inline under the registry's lock: every
    launch has one entry, the batch count is the number of entries without an event, and
    everything is released after synchronize."""
    backend = _LaggingBackend(10 ** 9)
    reg = inflight.InflightRegistry(backend, collect_every=7)
    monkeypatch.setattr(inflight, "_default", reg)
    k = _kernel_xz()
    x = _dev(300)
    k(x, nt.partition(_dev(300), 256), B=256)
    k(x, nt.partition(_dev(300), 256), B=256)
    calls = fake.slow_calls["n"]
    errors, handles, lock = [], [], threading.Lock()
    refs = []

    def run():
        try:
            for _ in range(150):
                z = _dev(300)
                with lock:
                    refs.append(weakref.ref(z))
                h = k(x, nt.partition(z, 256), B=256)
                with lock:
                    handles.append(h)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    ts = [threading.Thread(target=run) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and fake.slow_calls["n"] == calls
    with reg._lock:
        q = list(reg._streams.get(0, ()))
        assert reg._unflushed == sum(e.event is None and not e.finished for e in q)
        ids = [id(e) for e in q]
        assert len(set(ids)) == len(ids)
        assert {id(h) for h in handles} <= set(ids) | {id(h) for h in handles if h.finished}
    del handles, q                      # a handle holds what sync() returns
    gc.collect()
    assert all(r() is not None for r in refs)           # nothing completed: all held
    backend.lag = 0
    nt.synchronize()
    gc.collect()
    assert reg.pending() == 0 and reg._unflushed == 0
    assert all(r() is None for r in refs)
