"""nt.torch_op on CUDA tensors: the op's kernels run on PyTorch's current stream (a side stream
under ``with torch.cuda.stream(s):``), inside torch.compile(fullgraph=True) graphs (inductor), and
are recorded by torch.cuda.graph and replayed on new input values.

The CPU twin (interpreter) is tests/unit/test_torch_library.py."""

import itertools

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.runtime import defaults

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="PyTorch sees no CUDA device (a CPU-only build?)")]

_ids = itertools.count()
A = 200          # dependent ops per element: the kernel outlasts its launch, so a missing
                 # stream dependency shows as wrong values


@nt.jit
def axpb_kernel(x, y, z: nt.Partition["B"], B: nt.Constant, A: nt.Constant):
    t = nt.load_like(x, z)
    for _ in range(A):
        t = t * 1.0001 + 0.5
    nt.store(z, t + nt.load_like(y, z))


@nt.jit
def add_into_kernel(x, z: nt.Partition["B"], alpha, B: nt.Constant):
    nt.store(z, nt.load(z) + alpha * nt.load_like(x, z))


def reference(xh, yh):
    t = xh.astype(np.float32)
    for _ in range(A):
        t = (t * np.float32(1.0001) + np.float32(0.5)).astype(np.float32)
    return t.astype(np.float64) + yh


HANDLES = []     # (stream the launch went to, the defaults' stream) of every launch of AXPB


@nt.torch_op(f"nt_gpu::axpb_{next(_ids)}", fake=lambda x, y: torch.empty_like(x))
def AXPB(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = torch.empty_like(x)
    h = axpb_kernel(x, y, nt.partition(z, 1024), B=1024, A=A)
    if not torch.cuda.is_current_stream_capturing():
        HANDLES.append((h.stream, defaults.current().stream))
    return z


@nt.torch_op(f"nt_gpu::add_into_{next(_ids)}", mutates_args=("z",))
def ADD_INTO(x: torch.Tensor, z: torch.Tensor, alpha: float) -> None:
    add_into_kernel(x, nt.partition(z, 1024), alpha, B=1024)


def rand(rng, n):
    return rng.standard_normal(n).astype(np.float32)


def test_op_runs_on_the_current_torch_stream():
    rng = np.random.default_rng()
    n = 1 << 22
    xh, yh = rand(rng, n), rand(rng, n)
    x, y = torch.from_numpy(xh).cuda(), torch.from_numpy(yh).cuda()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    HANDLES.clear()
    with torch.cuda.stream(s):
        z = AXPB(x, y)
        w = z * 2.0                      # torch work on s, ordered after the kernel by s alone
    assert HANDLES == [(s.cuda_stream, s.cuda_stream)]
    s.synchronize()                      # waits for s only: the kernel must have run on it
    want = reference(xh, yh)
    np.testing.assert_allclose(z.cpu().numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.cpu().numpy(), 2 * want, rtol=1e-5, atol=1e-5)
    # outside the stream context: the default stream of the device, and defaults restored
    AXPB(x, y)
    assert HANDLES[-1][0] == torch.cuda.current_stream().cuda_stream
    assert defaults.current().stream is None and defaults.current().interpret is None


def test_mutating_op_on_a_side_stream():
    rng = np.random.default_rng()
    n = 3000
    xh, zh = rand(rng, n), rand(rng, n)
    x, z = torch.from_numpy(xh).cuda(), torch.from_numpy(zh).cuda()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        ADD_INTO(x, z, -0.75)
        out = z.clone()
    s.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), zh.astype(np.float64) - 0.75 * xh,
                               rtol=1e-6, atol=1e-6)


def test_compile_fullgraph_inductor():
    rng = np.random.default_rng()
    n = 3000
    xh, yh, zh = rand(rng, n), rand(rng, n), rand(rng, n)
    x, y = torch.from_numpy(xh).cuda(), torch.from_numpy(yh).cuda()
    z = torch.from_numpy(zh).cuda()

    def f(a, b, out):
        c = AXPB(a, b) * 2.0 + 1.0
        ADD_INTO(a, out, 3.0)
        return c

    got = torch.compile(f, fullgraph=True)(x, y, z)
    torch.cuda.synchronize()
    np.testing.assert_allclose(got.cpu().numpy(), 2 * reference(xh, yh) + 1, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(z.cpu().numpy(), zh.astype(np.float64) + 3.0 * xh, rtol=1e-6,
                               atol=1e-6)


def test_cuda_graph_capture_and_replay():
    rng = np.random.default_rng()
    n = 1 << 20
    static_x = torch.from_numpy(rand(rng, n)).cuda()
    static_y = torch.from_numpy(rand(rng, n)).cuda()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):           # warm-up outside capture: compile and load the module
        for _ in range(2):
            AXPB(static_x, static_y)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = AXPB(static_x, static_y) * 2.0
    for _ in range(3):
        xh, yh = rand(rng, n), rand(rng, n)
        static_x.copy_(torch.from_numpy(xh))
        static_y.copy_(torch.from_numpy(yh))
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(static_out.cpu().numpy(), 2 * reference(xh, yh), rtol=1e-5,
                                   atol=1e-5)
