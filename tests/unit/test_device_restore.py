"""A launch on one device's arrays gives the thread's current context back after it (issue
13: "the current device of the calling thread is restored after a launch"), on the slow
path and on a plan's runner, and a thread with no context current keeps the launch's (so
its next launch finds it current). On the tests' recording driver, with two fake devices
whose contexts are told apart by an integer."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.runtime import driver
from tests.unit.test_launch_plans import _dev, fake  # noqa: F401 - fixture

CTX = {0: 1000, 1: 1001}


class _Ctx(int):
    pass


@pytest.fixture
def two_devices(fake, monkeypatch):
    state = {"current": None, "sets": []}
    binding = driver._mod

    def get_current():
        c = state["current"]
        return 0, (None if c is None else _Ctx(c))

    def set_current(ctx):
        state["current"] = int(ctx) or None
        state["sets"].append(int(ctx))
        return (0,)

    def ensure(device):
        state["current"] = CTX[device]

    monkeypatch.setattr(binding, "cuCtxGetCurrent", get_current, raising=False)
    monkeypatch.setattr(binding, "cuCtxSetCurrent", set_current, raising=False)
    monkeypatch.setattr(driver, "ensure_context", ensure)
    monkeypatch.setattr(driver, "_context_ints", dict(CTX))
    # arrays from the "device1" pool are on device 1
    ones = set()
    monkeypatch.setattr(driver, "pointer_device", lambda p: 1 if p in ones else 0)
    state["on_1"] = ones
    return state


@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


def _on_device_1(state, n):
    arrays = [_dev(n) for _ in range(3)]
    for a in arrays:
        state["on_1"].add(a.__cuda_array_interface__["data"][0])
    return arrays


def test_a_launch_on_another_device_gives_the_current_context_back(two_devices):
    state = two_devices
    state["current"] = CTX[0]                       # the thread's current device: 0
    for _ in range(3):                              # the slow path, then the plan's runner
        x, y, z = _on_device_1(state, 1000)
        add(x, y, nt.partition(z, 256), 256)
        assert state["current"] == CTX[0]
    assert add._last_plan is not None and add._last_plan.device == 1


def test_a_launch_on_the_current_device_switches_nothing(two_devices):
    state = two_devices
    state["current"] = CTX[0]
    for _ in range(3):
        add(_dev(700), _dev(700), nt.partition(_dev(700), 256), 256)
    assert state["current"] == CTX[0] and state["sets"] == []


def test_a_thread_without_a_context_keeps_the_launchs(two_devices):
    state = two_devices
    state["current"] = None
    x, y, z = _on_device_1(state, 500)
    add(x, y, nt.partition(z, 256), 256)
    assert state["current"] == CTX[1]
    before = list(state["sets"])
    x, y, z = _on_device_1(state, 500)
    add(x, y, nt.partition(z, 256), 256)              # the runner finds it current
    assert state["current"] == CTX[1] and state["sets"] == before


def test_values_are_right_after_a_switch(two_devices, fake):
    state = two_devices
    state["current"] = CTX[0]
    x, y, z = _on_device_1(state, 300)
    add(x, y, nt.partition(z, 128), 128)
    got, grid, _stream = fake.launches[-1]
    assert grid == (3, 1, 1)
    assert got[0] == x.__cuda_array_interface__["data"][0]
    np.testing.assert_equal(state["current"], CTX[0])
