"""Plan runners with CuPy's bindings read inline (runtime/guards.py): a legacy-stream launch is
refused while a capture forbids the legacy stream, and a launch orders itself once after CuPy's
current stream when it is another stream."""

import sys
import types

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import CaptureError
from numba_tile.runtime import inflight, launcher
from tests.unit.test_launch_plans import fake  # noqa: F401 - fixture


@pytest.fixture
def fake_cupy_bindings(monkeypatch):
    """A stand-in cupy with the bindings the runners call inline: driver.ctxGetCurrent,
    runtime.streamIsCapturing (raising for the legacy stream while capture forbids it) and
    get_current_stream."""
    from numba_tile.runtime import arrays
    mod = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    state = types.SimpleNamespace(current=types.SimpleNamespace(ptr=0), legacy_forbidden=False,
                                  capturing=set(), ctx_calls=0)
    cuda.get_current_stream = lambda: state.current

    def ctx():
        state.ctx_calls += 1
        return 12345
    drv = types.ModuleType("cupy.cuda.driver")
    drv.ctxGetCurrent = ctx
    rt = types.ModuleType("cupy.cuda.runtime")

    def is_capturing(s):
        if s == 1 and state.legacy_forbidden:
            raise RuntimeError("cudaErrorStreamCaptureImplicit")
        return s in state.capturing
    rt.streamIsCapturing = is_capturing
    cuda.driver, cuda.runtime = drv, rt
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
                    "stream": state.current.ptr or 1}
    ndarray.__module__ = "cupy"
    mod.ndarray = ndarray
    for name, m in (("cupy", mod), ("cupy.cuda", cuda), ("cupy.cuda.driver", drv),
                    ("cupy.cuda.runtime", rt)):
        monkeypatch.setitem(sys.modules, name, m)
    monkeypatch.setattr(launcher, "_cupy_version", None)
    monkeypatch.setattr(launcher, "_fast_launch", None)
    monkeypatch.setattr(launcher, "_READERS", {})
    monkeypatch.setattr(arrays, "_ADAPTERS", {})
    mod.state = state
    return mod


@nt.jit
def cadd(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


def test_runner_with_cupy_bindings_refuses_legacy_launches_under_capture(fake,
                                                                        fake_cupy_bindings):
    cp = fake_cupy_bindings
    x, y = cp.ndarray(np.zeros(1024, np.float32)), cp.ndarray(np.zeros(1024, np.float32))
    z = cp.ndarray(np.zeros(1024, np.float32))
    cadd(x, y, nt.partition(z, 1024), B=1024)
    cadd(x, y, nt.partition(z, 1024), B=1024)
    run = cadd._last_plan.run
    assert "CAPTURING" in run.source and "CTX_CURRENT" in run.source
    assert run.source.count("cs0 = GCS()") == 1 and "cs1" not in run.source
    n = len(fake.launches)
    cp.state.legacy_forbidden = True
    fake.capture_status = -906                 # the driver's answer for the legacy stream
    with pytest.raises(CaptureError, match="legacy default stream"):
        cadd(x, y, nt.partition(z, 1024), B=1024)
    assert len(fake.launches) == n
    cp.state.legacy_forbidden = False
    fake.capture_status = 0
    h = cadd(x, y, nt.partition(z, 1024), B=1024)
    assert len(fake.launches) == n + 1 and h.stream == 0


def test_runner_with_cupy_on_another_stream_orders_after_it_once(fake, fake_cupy_bindings,
                                                                 monkeypatch):
    cp = fake_cupy_bindings
    x, y = cp.ndarray(np.zeros(1024, np.float32)), cp.ndarray(np.zeros(1024, np.float32))
    z = cp.ndarray(np.zeros(1024, np.float32))
    cadd(x, y, nt.partition(z, 1024), B=1024)
    waits = []
    monkeypatch.setattr(inflight.default_registry(), "wait_for_streams",
                        lambda s, producers, device=None: waits.append((s, tuple(producers))))
    cp.state.current = types.SimpleNamespace(ptr=0x77)
    cadd(x, y, nt.partition(z, 1024), B=1024)        # launch on 0, producers on 0x77
    assert waits == [(0, (0x77,))]
    cadd(x, y, nt.partition(z, 1024), B=1024, stream=0x77)   # same stream: no wait
    assert waits == [(0, (0x77,))]
