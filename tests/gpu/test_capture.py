"""CUDA graphs: numba_tile launches captured by numba_tile's Graph, PyTorch's torch.cuda.graph and
CuPy's stream capture; replays checked against NumPy; arguments held for the life of the graph;
launches that would invalidate a capture refused before they do."""

import gc
import weakref

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import CaptureError, StreamConflictError
from numba_tile.runtime import capture

pytestmark = pytest.mark.gpu


@nt.jit
def axpb(x, z: nt.Partition["B"], a, b, B: nt.Constant):
    nt.store(z, a * nt.load_like(x, z) + b)


@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def spin(x, z: nt.Partition["B"], B: nt.Constant, A: nt.Constant):
    t = nt.load_like(x, z)
    for _ in range(A):
        t = t * 1.0001 + 0.5
    nt.store(z, t)


def _rand(n, rng=np.random.default_rng()):
    return rng.standard_normal(n).astype(np.float32)


def test_graph_capture_and_replay_with_new_inputs():
    cp = pytest.importorskip("cupy")
    n = 3000
    x = cp.asarray(_rand(n))
    y, z = cp.empty(n, cp.float32), cp.empty(n, cp.float32)
    g = nt.Graph()
    with g.capture():
        h = axpb(x, nt.partition(y, 1024), 2.0, 1.0, 1024)
        add(x, y, nt.partition(z, 512), 512)
    assert isinstance(h, capture.CapturedLaunch) and g.launches == 2
    with pytest.raises(CaptureError):
        h.sync()
    for _ in range(3):
        xh = _rand(n)
        x.set(xh)
        g.replay().sync()
        x64 = xh.astype(np.float64)
        np.testing.assert_allclose(cp.asnumpy(z), x64 + (2 * x64 + 1), rtol=1e-6, atol=1e-6)


def test_a_kernel_compiled_and_loaded_for_the_first_time_inside_a_capture():
    cp = pytest.importorskip("cupy")

    @nt.jit
    def neg(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, -nt.load_like(x, z))
    xh = _rand(777)
    x, z = cp.asarray(xh), cp.empty(777, cp.float32)
    g = nt.Graph()
    with g.capture():
        neg(x, nt.partition(z, 256), 256)
    g.replay().sync()
    np.testing.assert_array_equal(cp.asnumpy(z), -xh)


def test_graph_holds_its_arguments_until_it_is_destroyed():
    cp = pytest.importorskip("cupy")
    x = cp.asarray(_rand(1024))
    z = cp.empty(1024, cp.float32)
    ref = weakref.ref(z)
    g = nt.Graph()
    with g.capture():
        axpb(x, nt.partition(z, 1024), 1.0, 0.0, 1024)
    held = capture.held()
    del z
    gc.collect()
    assert ref() is not None
    g.replay().sync()
    g.close()
    del g
    cp.cuda.runtime.deviceSynchronize()
    for _ in range(100):              # CUDA calls the destructor on its own thread
        nt.synchronize()
        gc.collect()
        if ref() is None:
            break
        import time
        time.sleep(0.01)
    assert ref() is None and capture.held() < held


def test_replay_is_ordered_against_launches_on_other_streams():
    cp = pytest.importorskip("cupy")
    n = 1 << 22
    x = cp.asarray(_rand(n))
    y, z = cp.zeros(n, cp.float32), cp.empty(n, cp.float32)
    g = nt.Graph()
    with g.capture():
        add(y, y, nt.partition(z, 1024), 1024)
    spin(x, nt.partition(y, 1024), 1024, 1, stream=cp.cuda.Stream(non_blocking=True)).sync()
    s = cp.cuda.Stream(non_blocking=True)
    spin(x, nt.partition(y, 1024), 1024, 50000, stream=s)   # writes y for a millisecond or more
    with pytest.raises(StreamConflictError):
        g.replay(stream=cp.cuda.Stream(non_blocking=True), on_conflict="raise")
    g.replay(stream=cp.cuda.Stream(non_blocking=True)).sync()   # waits for the writer
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(z), 2 * cp.asnumpy(y))


def test_torch_cuda_graph_captures_numba_tile_launches():
    torch = pytest.importorskip("torch")
    n = 5000
    x = torch.randn(n, device="cuda")
    y = torch.empty(n, device="cuda")
    z = torch.empty(n, device="cuda")
    # warm-up on a side stream, as torch.cuda.graph asks
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        axpb(x, nt.partition(y, 1024), 3.0, -1.0, 1024, stream=s)
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cur = torch.cuda.current_stream()
        axpb(x, nt.partition(y, 1024), 3.0, -1.0, 1024, stream=cur)
        add(x, y, nt.partition(z, 1024), 1024, stream=cur)
        w = z * 2                                   # a torch op in the same graph
    for _ in range(3):
        xh = _rand(n)
        x.copy_(torch.from_numpy(xh))
        g.replay()
        torch.cuda.synchronize()
        x64 = xh.astype(np.float64)
        np.testing.assert_allclose(w.cpu().numpy(), 2 * (x64 + 3 * x64 - 1), rtol=1e-5,
                                   atol=1e-5)


def test_torch_capture_with_launch_defaults_and_a_first_compile():
    torch = pytest.importorskip("torch")

    @nt.jit
    def sq(x, z: nt.Partition["B"], B: nt.Constant):
        t = nt.load_like(x, z)
        nt.store(z, t * t)
    x = torch.randn(1000, device="cuda")
    z = torch.empty(1000, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        with nt.launch_defaults(stream=torch.cuda.current_stream()):
            sq(x, nt.partition(z, 256), 256)
    xh = _rand(1000)
    x.copy_(torch.from_numpy(xh))
    g.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(z.cpu().numpy(), xh.astype(np.float64) ** 2, rtol=1e-6)


def test_legacy_stream_launch_during_a_blocking_capture_is_refused_and_the_capture_survives():
    cp = pytest.importorskip("cupy")
    x = cp.asarray(_rand(1024))
    z = cp.empty(1024, cp.float32)
    axpb(x, nt.partition(z, 1024), 1.0, 1.0, 1024).sync()     # a plan exists
    s = cp.cuda.Stream(non_blocking=False)                      # blocking: syncs with legacy
    with s:
        s.begin_capture()
        try:
            with pytest.raises(CaptureError, match="legacy default stream"):
                axpb(x, nt.partition(z, 1024), 1.0, 1.0, 1024)
            axpb(x, nt.partition(z, 1024), 2.0, 0.0, 1024, stream=s)
        finally:
            graph = s.end_capture()                             # still a valid capture
    graph.launch(s)
    s.synchronize()
    np.testing.assert_allclose(cp.asnumpy(z), 2 * cp.asnumpy(x), rtol=1e-6)


def test_cupy_stream_capture():
    cp = pytest.importorskip("cupy")
    xh = _rand(4096)
    x = cp.asarray(xh)
    z = cp.empty(4096, cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        for _ in range(10):
            axpb(x, nt.partition(z, 1024), 1.0, 1.0, 1024, stream=s)
            axpb(z, nt.partition(x, 1024), 1.0, 0.0, 1024, stream=s)
        graph = s.end_capture()
    graph.launch(s)
    s.synchronize()
    np.testing.assert_allclose(cp.asnumpy(x), xh + 10, rtol=1e-5)
