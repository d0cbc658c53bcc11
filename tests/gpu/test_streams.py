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


@nt.jit
def copy_kernel(src, dst: nt.Partition["B"], B: nt.Constant):
    nt.store(dst, nt.load_like(src, dst))


def _two_streams():
    cupy = pytest.importorskip("cupy")
    return cupy, cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)


LONG = 20000      # iterations of the first kernel: milliseconds, far longer than a launch


def test_read_after_write_on_another_stream_is_ordered():
    cupy, s1, s2 = _two_streams()
    rng = np.random.default_rng()
    n = 1 << 20
    xh = rng.standard_normal(n).astype(np.float32)
    x = cupy.asarray(xh)
    z = cupy.zeros(n, cupy.float32)
    out = cupy.full(n, np.nan, cupy.float32)
    cupy.cuda.Device().synchronize()
    first = axpb(x, nt.partition(z, 1024), 1024, LONG, stream=s1)
    copy_kernel(z, nt.partition(out, 1024), 1024, stream=s2).sync()
    assert first.done()                      # s2 waited for s1's launch
    np.testing.assert_array_equal(cupy.asnumpy(out), cupy.asnumpy(z))
    np.testing.assert_allclose(cupy.asnumpy(out), reference(xh, LONG), rtol=1e-4)


def test_write_after_read_on_another_stream_is_ordered():
    cupy, s1, s2 = _two_streams()
    rng = np.random.default_rng()
    n = 1 << 20
    xh = rng.standard_normal(n).astype(np.float32)
    x = cupy.asarray(xh)
    z = cupy.zeros(n, cupy.float32)
    junk = cupy.full(n, 1e6, cupy.float32)
    cupy.cuda.Device().synchronize()
    axpb(x, nt.partition(z, 1024), 1024, LONG, stream=s1)         # reads x for milliseconds
    copy_kernel(junk, nt.partition(x, 1024), 1024, stream=s2)     # overwrites x
    nt.synchronize()
    np.testing.assert_allclose(cupy.asnumpy(z), reference(xh, LONG), rtol=1e-4)
    assert float(x[0]) == 1e6


def test_strict_mode_refuses_an_unordered_launch():
    cupy, s1, s2 = _two_streams()
    n = 1 << 20
    x = cupy.ones(n, cupy.float32)
    z = cupy.zeros(n, cupy.float32)
    out = cupy.full(n, 7.0, cupy.float32)
    cupy.cuda.Device().synchronize()
    first = axpb(x, nt.partition(z, 1024), 1024, LONG, stream=s1)
    with pytest.raises(nt.errors.StreamConflictError, match="'src'"):
        copy_kernel(z, nt.partition(out, 1024), 1024, stream=s2, on_conflict="raise")
    first.sync()
    assert float(out.min()) == 7.0 and float(out.max()) == 7.0     # nothing was queued
    copy_kernel(z, nt.partition(out, 1024), 1024, stream=s2, on_conflict="raise").sync()
    np.testing.assert_array_equal(cupy.asnumpy(out), cupy.asnumpy(z))
