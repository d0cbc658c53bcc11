"""Launches on explicit streams: CuPy, Numba and PyTorch stream objects and raw handles."""

import numpy as np
import pytest

import numba_tile as nt

pytestmark = pytest.mark.gpu


@nt.jit
def axpb(x, z: nt.Partition["B"], B: nt.Constant, A: nt.Constant):
    t = nt.load_like(x, z)
    for _ in range(A):           # a few hundred dependent ops: the kernel outlasts the launch
        t = t * 1.0001 + 0.5
    nt.store(z, t)


def reference(xh, a):
    t = xh.astype(np.float32)
    for _ in range(a):
        t = (t * np.float32(1.0001) + np.float32(0.5)).astype(np.float32)
    return t


def _streams():
    out = []
    try:
        import cupy
        s = cupy.cuda.Stream(non_blocking=True)
        out.append(("cupy", s, cupy.asarray, cupy.asnumpy, s.synchronize))
        s2 = cupy.cuda.Stream(non_blocking=True)
        out.append(("raw-handle", s2.ptr, cupy.asarray, cupy.asnumpy, s2.synchronize))
    except ImportError:
        pass
    try:
        from numba import cuda
        s = cuda.stream()
        out.append(("numba", s, cuda.to_device, lambda a: a.copy_to_host(), s.synchronize))
    except Exception:  # noqa: BLE001 - numba-cuda without a usable driver
        pass
    try:
        import torch
        s = torch.cuda.Stream()
        out.append(("torch", s, lambda h: torch.from_numpy(h).cuda(),
                    lambda t: t.cpu().numpy(), s.synchronize))
    except ImportError:
        pass
    return out


@pytest.fixture(params=["cupy", "raw-handle", "numba", "torch"])
def stream_kind(request):
    for entry in _streams():
        if entry[0] == request.param:
            return entry
    pytest.skip(f"{request.param} not installed")


def test_launch_on_stream(stream_kind):
    name, stream, to_device, to_host, _ = stream_kind
    rng = np.random.default_rng()
    n, a = 1 << 20, 300
    xh = rng.standard_normal(n).astype(np.float32)
    x = to_device(xh)
    z = to_device(np.zeros(n, np.float32))
    handle = axpb(x, nt.partition(z, 1024), 1024, a, stream=stream)
    arrays = handle.sync()
    assert handle.done()
    assert arrays[0] is x
    np.testing.assert_allclose(to_host(z), reference(xh, a), rtol=1e-5)


def test_bad_stream_is_refused_before_any_work():
    cupy = pytest.importorskip("cupy")
    x = cupy.ones(16, cupy.float32)
    z = cupy.zeros(16, cupy.float32)
    with pytest.raises(nt.errors.TileArgumentError, match="stream"):
        axpb(x, nt.partition(z, 16), 16, 1, stream="not a stream")
    assert float(z.sum()) == 0.0
