"""Launch plans and the capture path (``runtime/launcher.py``, ``capture.py``), on the recording
stand-in for the CUDA driver of ``test_launch_plans.py``: hostile arguments (classes, pointers and
constants whose ``__class__``, ``__eq__`` or ``__hash__`` lie, interfaces that answer differently
to different readers or raise, fields the slow path refuses), threads racing between a launch's
conflict check and its registration, and capture handles used after their capture ended. Each test
asserts what the slow path does (its refusal, or the values it launches)."""

import sys
import threading

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (AliasingError, MissingPartitionError, StreamConflictError,
                               TileArgumentError)
from numba_tile.runtime import capture, driver, inflight
from numba_tile.runtime.fakes import FakeDeviceArray
from numba_tile.runtime.partition import Partition
from tests.unit.test_launch_plans import _dev, _ptr, add, axpb, fake  # noqa: F401 - fixture


@nt.jit
def scale(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.load_like(x, z) * C)


class _Host:
    """A "host array" for FakeDeviceArray whose ``__array_interface__`` is the dict given."""

    def __init__(self, iface):
        self.iface = iface

    @property
    def __array_interface__(self):
        return self.iface


def _iface(a, **changes):
    ai = dict(a.host.__array_interface__)
    ai.update(changes)
    return ai


def _forged(a, **changes):
    return FakeDeviceArray(_Host(_iface(a, **changes)), readonly=False)


def _plan(fake, n=1024):
    x, y, z = _dev(n), _dev(n), _dev(n)
    add(x, y, nt.partition(z, 1024), B=1024)
    add(x, y, nt.partition(z, 1024), B=1024)
    return x, y, z


# ----------------------------------------------------------------------------- lying types

def test_a_pointer_whose_class_lies_cannot_pass_the_plan_aliasing_check(fake):
    """A pointer object that says it is an int (``__class__``), whose arithmetic puts the output's
    byte range far from every other argument and whose ``__index__`` (what is packed) is the
    address of an input: the slow path refuses the aliasing; the plan must not launch it."""
    x, y, z = _plan(fake)
    n = len(fake.launches)
    target = _ptr(y)

    class Pointer:
        __class__ = property(lambda self: int)

        def __and__(self, other):
            return 0

        def __add__(self, other):
            return 1 << 40

        def __index__(self):
            return target

    out = _forged(z, data=(Pointer(), False))
    with pytest.raises(AliasingError, match="'z' overlaps read-only argument 'y'"):
        add(x, y, nt.partition(out, 1024), B=1024)
    assert len(fake.launches) == n


def test_an_object_whose_class_says_partition_is_no_partition_on_a_plan(fake):
    x, y, z = _plan(fake)
    n = len(fake.launches)

    class NotAPartition:
        __class__ = property(lambda self: Partition)
        array, tile_shape, blocks, order = z, (1024,), None, "row"

    with pytest.raises(MissingPartitionError, match="mutable parameter 'z'"):
        add(x, y, NotAPartition(), B=1024)
    assert len(fake.launches) == n


def test_partition_fields_whose_class_lies_are_refused_with_a_plan(fake):
    x, y, z = _plan(fake)
    n = len(fake.launches)

    class Shape(tuple):
        __class__ = property(lambda self: tuple)

        def __eq__(self, other):
            return True

        def __hash__(self):
            return hash((1024,))

    p = nt.partition(z, 512)
    object.__setattr__(p, "tile_shape", Shape((512,)))
    with pytest.raises(TileArgumentError, match="tile_shape was changed"):
        add(x, y, p, B=1024)

    class Group(int):
        __class__ = property(lambda self: int)

    q = nt.partition(z, 1024)
    object.__setattr__(q, "blocks", Group(1))       # the slow path wants an exact int
    with pytest.raises(TileArgumentError, match="blocks was changed"):
        add(x, y, q, B=1024)
    assert len(fake.launches) == n


@pytest.mark.parametrize("liar", ["class", "metaclass"])
def test_a_constant_whose_type_lies_finds_no_plan(fake, liar):
    """Equal to the plan's constant by a lying ``__eq__`` and ``__hash__``, of a type that claims
    to be float (``__class__``) or whose metaclass claims equality with float: never the plan's
    specialization without the slow path's checks."""
    x, z = _dev(1024), _dev(1024)
    scale(x, nt.partition(z, 1024), 1024, 2.0)
    scale(x, nt.partition(z, 1024), 1024, 2.0)
    n, calls = len(fake.launches), fake.slow_calls["n"]
    if liar == "class":
        class C:
            __class__ = property(lambda self: float)
    else:
        class Meta(type):
            def __eq__(cls, other):
                return True

            def __hash__(cls):
                return hash(float)

        class C(metaclass=Meta):
            pass
    C.__eq__ = lambda self, other: True
    C.__hash__ = lambda self: hash(2.0)
    try:
        scale(x, nt.partition(z, 1024), 1024, C())
    except Exception:  # noqa: BLE001 - whatever the slow path says of it
        pass
    assert fake.slow_calls["n"] == calls + 1          # the slow path saw it
    assert len(fake.launches) in (n, n + 1)


# ----------------------------------------------------------------------------- two readings

class _TwoFaced:
    """An interface that shows ``checked`` to the slow path's adapters (``as_array_arg``) and
    ``keyed`` to everyone else (the plan key's reader)."""

    def __init__(self, checked, keyed):
        self.checked, self.keyed = checked, keyed

    @property
    def __array_interface__(self):
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_name == "as_array_arg":
                return self.checked.__array_interface__
            f = f.f_back
        return self.keyed.__array_interface__


def test_an_interface_read_two_ways_files_no_plan_under_the_other_layout(fake):
    """The first launch's checks pass for 4096 elements while the key reads 1024: a later genuine
    1024-element output must not launch the 4096-element plan (3072 elements past its end)."""
    big = np.zeros(4096, np.float32)
    x, y = _dev(4096), _dev(4096)
    two = FakeDeviceArray(_TwoFaced(big, big[:1024]), readonly=False)
    add(x, y, nt.partition(two, 1024), B=1024)
    assert fake.launches[-1][1] == (4, 1, 1)
    small = FakeDeviceArray(np.zeros(1024, np.float32))
    add(x, y, nt.partition(small, 1024), B=1024)
    values, grid, _ = fake.launches[-1]
    assert grid == (1, 1, 1)                      # what the slow path launches
    assert values[values.index(_ptr(small)) + 1] == 1024


# ----------------------------------------------------------------------------- what the slow path refuses

def test_an_interface_that_raises_is_refused_by_name_with_or_without_a_plan(fake):
    x, y, z = _plan(fake)

    class Broken:
        @property
        def __array_interface__(self):
            raise ValueError("boom")

    with pytest.raises(TileArgumentError, match="argument 'x': could not read"):
        add(FakeDeviceArray(Broken(), readonly=False), y, nt.partition(z, 1024), B=1024)
    nameless = type("Nameless", (), {"__module__": None})
    with pytest.raises(TileArgumentError, match="argument 'x'"):
        add(nameless(), y, nt.partition(z, 1024), B=1024)


@pytest.mark.parametrize("change, message", [
    ({"stream": 0}, "'stream' is 0"),
    ({"stream": "s"}, "'stream': expected None or a positive int"),
    ({"stream": -5}, "'stream': expected None or a positive int"),
    ({"shape": (1024.0,)}, "expected ints, got 1024.0"),
    ({"strides": (True,)}, "expected ints, got True"),
    ({"ro": 0}, "read-only flag: expected a bool"),
])
def test_interface_fields_the_slow_path_refuses_are_refused_with_a_plan(fake, change, message):
    x, y, z = _plan(fake)
    n = len(fake.launches)
    change = dict(change)
    stream, ro = change.pop("stream", None), change.pop("ro", False)
    arg = FakeDeviceArray(_Host(_iface(x, **change)), readonly=ro, stream=stream)
    with pytest.raises(TileArgumentError, match=message):
        add(arg, y, nt.partition(z, 1024), B=1024)
    assert len(fake.launches) == n


@pytest.mark.parametrize("shift", [-(1 << 64), 1 << 64])
def test_an_empty_arrays_pointer_outside_the_address_space_is_refused_with_a_plan(fake, shift):
    x, y, z = np.zeros(0, np.float32), _dev(1024), _dev(1024)
    empty = FakeDeviceArray(x)
    add(empty, y, nt.partition(z, 1024), B=1024)
    add(empty, y, nt.partition(z, 1024), B=1024)
    n = len(fake.launches)
    ptr = x.__array_interface__["data"][0]
    bad = FakeDeviceArray(_Host(dict(x.__array_interface__, data=(ptr + shift, False))),
                          readonly=False)
    with pytest.raises(TileArgumentError, match="argument 'x': data pointer: expected an address"):
        add(bad, y, nt.partition(z, 1024), B=1024)
    assert len(fake.launches) == n


# ----------------------------------------------------------------------------- threads

def _block_launches_on(fake, monkeypatch, stream, timeout=0.5):
    """Makes the fake driver's launches on ``stream`` wait (up to ``timeout``) for ``release``."""
    started, release = threading.Event(), threading.Event()
    real = fake._launch

    def launch(func, grid, block, shared, s, ptr):
        real(func, grid, block, shared, s, ptr)
        if s == stream:
            started.set()
            release.wait(timeout)
    monkeypatch.setattr(fake, "_launch", launch)
    return started, release


def _pending_events(monkeypatch):
    reg = inflight.default_registry()
    monkeypatch.setattr(reg.backend, "query", lambda e: False)


@pytest.mark.parametrize("second", ["plan", "slow", "graph"])
def test_a_launch_on_another_thread_cannot_pass_between_a_conflict_check_and_its_entry(
        fake, monkeypatch, second):
    """Thread A writes z on stream 5 (through a plan); while A's launch is being queued, thread B
    reads z on stream 9 with on_conflict='raise': B must see A's launch (wait for it, or here
    refuse), never miss it because A had not registered yet."""
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024, stream=5)          # the plan
    nt.synchronize()
    graph = None
    if second == "graph":
        graph = _captured_graph(fake, monkeypatch, lambda: add(z, y, nt.partition(_dev(1024),
                                                                                  1024), B=1024))
    _pending_events(monkeypatch)
    started, release = _block_launches_on(fake, monkeypatch, 5)
    result = []

    def b():
        started.wait(5)
        try:
            if second == "plan":
                add(z, y, nt.partition(_dev(1024), 1024), B=1024, stream=9, on_conflict="raise")
            elif second == "slow":
                axpb(z, nt.partition(_dev(1024), 256), 2.0, 1.0, 256, stream=9,
                     on_conflict="raise")
            else:
                graph.replay(9, on_conflict="raise")
            result.append("launched")
        except StreamConflictError:
            result.append("refused")
        release.set()
    t = threading.Thread(target=b)
    t.start()
    add(x, y, nt.partition(z, 1024), B=1024, stream=5)
    t.join()
    assert result == ["refused"]


# ----------------------------------------------------------------------------- capture

@pytest.fixture
def fresh_capture(monkeypatch):
    monkeypatch.setattr(capture, "_held", [])
    monkeypatch.setattr(capture, "_by_capture", {})
    monkeypatch.setattr(capture, "_ours", {})


def _graph_driver(fake, monkeypatch):
    destroyed = []

    def begin(s, mode):
        fake.capturing_stream, fake.capture_status = s, driver.CAPTURE_ACTIVE

    def end(s):
        fake.capture_status = 0
        return "graph"
    for name, fn in {"stream_create_nonblocking": lambda: 0x51,
                     "stream_begin_capture": begin, "stream_end_capture": end,
                     "graph_instantiate": lambda g: "exec", "stream_destroy": destroyed.append,
                     "graph_launch": lambda e, s: None, "graph_destroy": lambda g: None,
                     "graph_exec_destroy": lambda e: None}.items():
        monkeypatch.setattr(driver, name, fn)
    return destroyed


def _captured_graph(fake, monkeypatch, body):
    monkeypatch.setattr(capture, "_held", [])
    monkeypatch.setattr(capture, "_by_capture", {})
    monkeypatch.setattr(capture, "_ours", {})
    _graph_driver(fake, monkeypatch)
    g = nt.Graph()
    with g.capture():
        body()
    return g


def test_then_on_a_launch_of_a_graph_whose_capture_ended_is_refused(fake, monkeypatch,
                                                                    fresh_capture):
    """The Graph's capture stream is destroyed when the block ends: a chained launch there would
    go to a destroyed stream handle (or to whatever stream reuses it)."""
    destroyed = _graph_driver(fake, monkeypatch)
    x, y, z, w = _dev(1024), _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024)
    g = nt.Graph()
    with g.capture():
        h = add(x, y, nt.partition(z, 1024), B=1024)
        inner = h.then(add, x, z, nt.partition(w, 1024), B=1024)      # still capturing: fine
    assert isinstance(inner, capture.CapturedLaunch) and destroyed == [0x51]
    n = len(fake.launches)
    with pytest.raises(capture.CaptureError, match="capture has ended"):
        h.then(add, x, z, nt.partition(w, 1024), B=1024)
    assert len(fake.launches) == n
    fake.post_all()


def test_a_hold_whose_graph_refused_it_lives_until_its_destructor_has_run(fake, monkeypatch,
                                                                          fresh_capture):
    """cuGraphRetainUserObject fails: the user object is released, and CUDA may run its
    destructor (sem_post on the hold's semaphore) later on its own thread: the semaphore must
    still exist then."""
    def refuse(graph, obj):
        raise driver.CudaDriverError("cuGraphRetainUserObject", 1, "CUDA_ERROR_INVALID_VALUE")
    monkeypatch.setattr(driver, "graph_retain_user_object_move", refuse)
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    fake.capturing_stream, fake.capture_status = 0x99, driver.CAPTURE_ACTIVE
    n = len(fake.launches)
    with pytest.raises(driver.CudaDriverError):
        add(x, y, nt.partition(z, 1024), B=1024, stream=0x99)
    assert len(fake.launches) == n
    assert capture.held() == 1 and len(fake.user_objects) == 1   # destructor still to run
    fake.post_all()                                               # CUDA's thread runs it
    assert capture.poll() == 1 and capture.held() == 0


# ----------------------------------------------------------------------------- lazy entries

@pytest.mark.parametrize("second", ["slow read", "plan read", "slow write", "graph"])
def test_launches_on_other_streams_see_a_plan_launchs_lazy_entry(fake, monkeypatch, second):
    x, y, z = _dev(1024), _dev(1024), _dev(1024)
    add(x, y, nt.partition(z, 1024), B=1024, stream=5)
    add(x, y, nt.partition(_dev(1024), 1024), B=1024, stream=7)    # a plan on another stream
    graph = None
    if second == "graph":
        graph = _captured_graph(fake, monkeypatch,
                                lambda: add(z, y, nt.partition(_dev(1024), 1024), B=1024))
    nt.synchronize()
    _pending_events(monkeypatch)
    add(x, y, nt.partition(z, 1024), B=1024, stream=5)             # plan: a lazy entry
    entry = inflight.default_registry()._streams[5][-1]
    assert entry.lazy is not None
    with pytest.raises(StreamConflictError, match="stream 0x5" if second != "graph" else "0x5"):
        if second == "slow read":                                  # reads what it writes
            axpb(z, nt.partition(_dev(1024), 256), 2.0, 1.0, 256, stream=9, on_conflict="raise")
        elif second == "plan read":
            add(z, y, nt.partition(_dev(1024), 1024), B=1024, stream=9, on_conflict="raise")
        elif second == "slow write":                               # writes what it reads
            axpb(y, nt.partition(x, 256), 2.0, 1.0, 256, stream=9, on_conflict="raise")
        else:
            graph.replay(9, on_conflict="raise")
