"""The several-GPU launch rules (docs/safety.md R16) reached through every entry point: autotuned
kernels (trials on the launch device's context, scratch copies there, tunings keyed by the launch
device's kind), groups, torch ops, inspection (``Kernel.ptx``), the interpreter, ``.then`` chains
and graph captures (a peer read refused under capture before any driver call, ``Graph.capture``
giving the thread's context back); messages name the arguments. The ``xfail`` test is a gap left
open.

On the tests' recording driver with two fake devices (``peers``: pointers in ``state["on_1"]``
are device 1's).
"""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import CaptureError, TileArgumentError
from numba_tile.runtime import capture, driver
from numba_tile.runtime.fakes import FakeDeviceArray
from tests.unit.test_device_restore import CTX, two_devices  # noqa: F401 - fixture
from tests.unit.test_launch_plans import _dev, _ptr, fake  # noqa: F401 - fixture
from tests.unit.test_launch_plans_hostile_arguments import _graph_driver
from tests.unit.test_peer_devices import _on, axpy, peers  # noqa: F401 - fixture

_DEVICE_OF_CTX = {v: k for k, v in CTX.items()}


# -- kernels of this file (their plans start empty) --------------------------------------------

@nt.jit
def reduce_group(xs, out: nt.Partition["B"], B: nt.Constant):
    acc = nt.load_like(xs[0], out, padding=0)
    for k in nt.static_range(1, len(xs)):
        acc = acc + nt.load_like(xs[k], out, padding=0)
    nt.store(out, acc)


@nt.jit
def fan_out(x, outs: nt.Partition["B"], B: nt.Constant):
    for k in nt.static_range(len(outs)):
        nt.store(outs[k], nt.load_like(x, outs[k]))


@nt.jit
def mul(w, x, out: nt.Partition["B"], B: nt.Constant):
    nt.store(out, nt.load_like(w, out) * nt.load_like(x, out))


def _tuner(**kw):
    @nt.autotune(configs=[nt.Config({"B": 256}), nt.Config({"B": 512})], warmup=0, reps=1, **kw)
    @nt.jit
    def scale(w, x, out: nt.Partition["B"], B: nt.Constant):
        nt.store(out, nt.load_like(w, out) * nt.load_like(x, out))
    return scale


class CupyLike(FakeDeviceArray):
    """``copy()`` allocates on the thread's current device, as ``cupy.ndarray.copy`` and
    ``cupy.copy`` do ("creates a copy of a given array on the current device")."""

    state = None
    copies: list = []
    keep: list = []        # scratch copies kept alive: a freed address reused by a later
                           # array would still be filed under device 1 in state["on_1"]

    def copy(self):
        device = _DEVICE_OF_CTX.get(self.state["current"], 0)
        twin = CupyLike(self.host.copy())
        if device == 1:
            self.state["on_1"].add(_ptr(twin))
        CupyLike.copies.append(device)
        CupyLike.keep.append(twin)
        return twin


def _cupy_on(state, device, n):
    a = CupyLike(np.random.default_rng(15).standard_normal(n).astype(np.float32))
    CupyLike.state = state
    if device == 1:
        state["on_1"].add(_ptr(a))
    return a


@pytest.fixture(autouse=True)
def _keep_alive(monkeypatch):
    # no tuning read back from disk: every tuner here has the same body and digest
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", "")
    yield
    CupyLike.keep.clear()


@pytest.fixture
def no_graphs(monkeypatch):
    monkeypatch.setattr(capture, "_held", [])
    monkeypatch.setattr(capture, "_by_capture", {})
    monkeypatch.setattr(capture, "_ours", {})


# ===================================================== contexts, tunings, captures, messages

def test_an_autotuned_call_gives_the_threads_context_back(peers, fake):
    """A kernel launch on device 1's arrays gives the thread's context (device 0) back after it
    (docs/safety.md R16); so does an autotuned call (``_specialize`` and ``_install`` load the
    module inside ``driver.device_context``), so the caller's next CuPy/PyTorch allocation does
    not land on device 1."""
    state = peers
    state["current"] = CTX[0]
    tuned = _tuner()
    tuned(_on(state, 1, 1024), _on(state, 1, 1024), _cupy_on(state, 1, 1024))
    assert fake.launches, "the call launched"
    assert state["current"] == CTX[0], (
        f"the thread's current context is device {_DEVICE_OF_CTX.get(state['current'])}'s "
        f"after an autotuned call on device 1's arrays")


def test_a_tuning_is_remembered_per_launch_device(peers, fake, monkeypatch):
    """The remembered choice (and its disk entry) is keyed by the launch device's kind: a choice
    tuned on device 1 (cc 8.0 here) is not reused on device 0 (cc 9.0), where the
    configurations are compiled, pruned (shared memory per device) and timed again."""
    state = peers
    monkeypatch.setattr(driver, "compute_capability", lambda d: (9, 0) if d == 0 else (8, 0))
    tuned = _tuner()
    tuned(_on(state, 1, 1024), _on(state, 1, 1024), _cupy_on(state, 1, 1024))
    n = len(fake.launches)                       # two trials and the launch
    assert n == 3
    tuned(_on(state, 0, 1024), _on(state, 0, 1024), _cupy_on(state, 0, 1024))
    assert len(fake.launches) - n > 1, (
        "the configuration tuned on device 1 (cc 8.0) was launched on device 0 (cc 9.0) "
        "without tuning there")


def test_a_peer_read_under_capture_is_refused_before_peer_access_is_touched(peers, fake):
    """A launch that reads a peer inside a stream capture is refused (CaptureError) before any
    driver call: peer access is not enabled (``cuCtxEnablePeerAccess``) and ``range_access``
    not asked for a launch the capture refuses (as the stream-owner query is skipped for a
    capturing stream)."""
    state = peers
    fake.capture_status = 1
    fake.capturing_stream = 0x51
    fake.stream_devices[0x51] = 1
    w = _on(state, 0, 1000)
    with pytest.raises(CaptureError):
        mul(w, _on(state, 1, 1000), nt.partition(_on(state, 1, 1000), 256), 256, stream=0x51)
    assert fake.launches == []
    assert state["enabled"] == [] and state["asked"] == [], (
        f"peer access enabled {state['enabled']} and access flags asked {state['asked']} for "
        f"a launch refused for its capture")


def test_the_peer_capture_error_names_the_peer_argument(peers, fake):
    """The CaptureError names the kernel, the devices and the argument that lives on the peer,
    as the other device messages of R16 name every argument involved."""
    state = peers
    fake.capture_status = 1
    fake.capturing_stream = 0x52
    fake.stream_devices[0x52] = 1
    with pytest.raises(CaptureError) as info:
        mul(_on(state, 0, 1000), _on(state, 1, 1000), nt.partition(_on(state, 1, 1000), 256),
            256, stream=0x52)
    text = str(info.value)
    assert "mul" in text and "CUDA device 0" in text and "CUDA device 1" in text
    assert "'w'" in text, text


@pytest.mark.xfail(strict=True, reason="group members are named by their rewritten parameter "
                   "(groups.member_name: outs__1), in every message")
def test_a_group_member_is_named_as_the_user_wrote_it(peers, fake):
    """Device refusals name group members by the rewrite's parameter (``outs__1``), a name
    the user never wrote; ``outs[1]`` is what the call passed."""
    state = peers
    x = _on(state, 0, 512)
    with pytest.raises(TileArgumentError) as info:
        fan_out(x, (nt.partition(_on(state, 0, 512), 256), nt.partition(_on(state, 1, 512), 256)),
                256)
    text = str(info.value)
    assert "different devices" in text
    assert "outs[1]" in text and "outs__1" not in text, text
    assert fake.launches == [] and state["enabled"] == []


def test_the_stream_device_error_names_the_argument_that_chose_the_device(peers, fake):
    """``_check_stream_device``'s 'the launch runs on CUDA device 1, the device of its arrays'
    names the argument that made device 1 the launch's (its first non-empty mutable array),
    which is what the user has to move or match."""
    state = peers
    fake.stream_devices[0x74] = 0
    with pytest.raises(TileArgumentError) as info:
        mul(_on(state, 1, 640), _on(state, 1, 640), nt.partition(_on(state, 1, 640), 256), 256,
            stream=0x74)
    text = str(info.value)
    assert "0x74 belongs to CUDA device 0" in text
    assert "'out'" in text, text


def test_graph_capture_gives_the_threads_context_back(peers, fake, monkeypatch, no_graphs):
    """``Graph.capture(device=1)`` makes device 1's context current for the block and gives
    the thread's context back after it, as a launch and ``Graph.replay`` do."""
    state = peers
    _graph_driver(fake, monkeypatch)
    state["current"] = CTX[0]
    g = nt.Graph()
    try:
        with g.capture(device=1):
            mul(_on(state, 1, 1000), _on(state, 1, 1000), nt.partition(_on(state, 1, 1000), 256),
                256)
        assert state["current"] == CTX[0], "the thread was left on device 1 after the capture"
    finally:
        g.close()
        fake.post_all()


# =========================================================================== defences

def test_autotune_trials_run_the_peer_checks_and_scratch_lands_on_the_outputs_device(
        peers, fake):
    """Every trial and the real launch take the slow path with the peer checks; the scratch
    copy of a device-1 output whose producer copies to the *current* device (CuPy) lands on
    device 1, because the scratch copies are made inside the launch device's scope
    (``autotune._device_scope``): made on device 0, the trials would launch on device 0 and read
    x and w as peers."""
    state = peers
    CupyLike.copies = []
    state["current"] = CTX[0]
    tuned = _tuner()
    w, x = _on(state, 0, 1024), _on(state, 1, 1024)
    out = _cupy_on(state, 1, 1024)
    slow = fake.slow_calls["n"]
    tuned(w, x, out)
    launches = len(fake.launches)
    assert launches == 3                                   # two trials, one launch
    assert CupyLike.copies == [1, 1]
    assert fake.slow_calls["n"] - slow == launches         # each one bound the full way
    # _specialize (one per configuration) and each launch asked w's access from device 1
    assert state["enabled"] == [(1, 0)] * (2 + launches)
    assert {d for _p, d in state["asked"]} == {1}


def test_autotune_refuses_mutable_arrays_on_two_devices_before_any_trial(peers, fake,
                                                                         monkeypatch):
    state = peers
    loads = []
    monkeypatch.setattr(driver, "load_module", lambda img, d: loads.append(d) or object())

    @nt.autotune(configs=[nt.Config({"B": 256})], warmup=0, reps=1)
    @nt.jit
    def two(x, a: nt.Partition["B"], b: nt.Partition["B"], B: nt.Constant):
        t = nt.load_like(x, a)
        nt.store(a, t)
        nt.store(b, t + 1.0)

    a, b = _cupy_on(state, 0, 512), _cupy_on(state, 1, 512)
    CupyLike.copies = []
    with pytest.raises(TileArgumentError, match="'a' .*'b' .*different devices"):
        two(_on(state, 0, 512), a, b)
    assert fake.launches == [] and loads == [] and CupyLike.copies == []
    assert two.trials == {}


def test_autotune_refuses_an_unreadable_peer_before_any_trial(peers, fake):
    state = peers
    state["possible"] = False
    tuned = _tuner()
    out = _cupy_on(state, 1, 1024)
    CupyLike.copies = []
    with pytest.raises(TileArgumentError, match="cannot read device 0's memory"):
        tuned(_on(state, 0, 1024), _on(state, 1, 1024), out)
    assert fake.launches == [] and CupyLike.copies == [] and state["enabled"] == []


def test_a_torch_op_refuses_arguments_on_two_cuda_devices_before_its_body():
    torch = pytest.importorskip("torch")
    ran = []

    @nt.torch_op("nt_peer_entry_points::two_devices", fake=lambda x, a, b: torch.empty_like(x))
    def op(x: torch.Tensor, a: torch.device, b: torch.device) -> torch.Tensor:
        ran.append(1)
        return x.clone()

    with pytest.raises(TileArgumentError) as info:
        op(torch.zeros(4), torch.device("cuda", 0), torch.device("cuda", 1))
    text = str(info.value)
    assert "nt_peer_entry_points::two_devices" in text and "'b'" in text and "cuda:1" in text, text
    assert ran == []


def test_inspection_skips_the_device_rules_but_never_launches_or_vouches(peers, fake):
    """``Kernel.ptx`` binds with ``allow_host=None``: mutable arrays on two devices and an
    unreadable peer compile, nothing reaches the driver, and the same arguments launched
    afterwards are refused (the verdict cache is keyed on ``allow_host``; ``_check_devices``
    runs on every launch)."""
    state = peers
    state["possible"] = False
    w, x, out = _on(state, 0, 512), _on(state, 1, 512), _on(state, 1, 512)
    assert ".entry" in mul.ptx(w, x, nt.partition(out, 256), 256)
    assert fake.launches == [] and state["enabled"] == [] and state["asked"] == []
    with pytest.raises(TileArgumentError, match="cannot read device 0's memory"):
        mul(w, x, nt.partition(out, 256), 256)
    assert fake.launches == []


@pytest.mark.parametrize("how", ["keyword", "defaults"])
def test_the_interpreter_refuses_a_device_array_of_either_device(peers, fake, how):
    state = peers
    w, x, out = _on(state, 0, 512), _on(state, 1, 512), _on(state, 1, 512)
    with pytest.raises(TileArgumentError, match="interpreter mode runs on NumPy"):
        if how == "keyword":
            mul(w, x, nt.partition(out, 256), 256, interpret=True)
        else:
            with nt.launch_defaults(interpret=True):
                mul(w, x, nt.partition(out, 256), 256)
    assert fake.launches == [] and state["enabled"] == []


def test_a_groups_plan_does_not_admit_a_member_moved_to_an_unreadable_peer(peers, fake):
    """The group's rewritten kernel keeps plans of its own; a plan made with every member on
    device 0 sends a call with a member on device 1 to the slow path, which refuses it."""
    state = peers
    out = _on(state, 0, 1024)
    for _ in range(3):
        reduce_group((_on(state, 0, 1024), _on(state, 0, 1024)), nt.partition(out, 256), 256)
    n = len(fake.launches)
    state["possible"] = False
    with pytest.raises(TileArgumentError, match="cannot read device 1's memory"):
        reduce_group((_on(state, 0, 1024), _on(state, 1, 1024)), nt.partition(out, 256), 256)
    with pytest.raises(TileArgumentError, match="different devices"):
        fan_out(_on(state, 0, 1024), (nt.partition(_on(state, 0, 1024), 256),
                                      nt.partition(_on(state, 1, 1024), 256)), 256)
    assert len(fake.launches) == n


def test_a_group_of_peer_shards_is_checked_member_by_member(peers, fake):
    """examples/peer_reduce.py's launch: device 0 writes, shards on 0 and 1: the peer member is
    asked (and only it), on every call."""
    state = peers
    xs = (_on(state, 0, 1024), _on(state, 1, 1024), _on(state, 0, 1024))
    out = _on(state, 0, 1024)
    for _ in range(2):
        reduce_group(xs, nt.partition(out, 256), 256)
    lo = _ptr(xs[1])
    assert state["enabled"] == [(0, 1)] * 2
    assert state["asked"] == [(lo, 0), (lo + 4 * 1024 - 1, 0)] * 2


def test_then_on_another_devices_stream_is_refused(peers, fake):
    """``h.then(k, ...)`` launches on h's stream: a chain from a device-1 launch on a stream of
    device 1 to a kernel on device 0's arrays is refused on the slow path."""
    state = peers
    fake.stream_devices[0x75] = 1
    h = mul(_on(state, 1, 768), _on(state, 1, 768), nt.partition(_on(state, 1, 768), 256), 256,
            stream=0x75)
    n = len(fake.launches)
    with pytest.raises(TileArgumentError, match="0x75 belongs to CUDA device 1"):
        h.then(axpy, _on(state, 0, 768), _on(state, 0, 768),
               nt.partition(_on(state, 0, 768), 256), 256)
    assert len(fake.launches) == n
