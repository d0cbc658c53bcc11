"""Launch plans on the GPU: the fast readers of CuPy, PyTorch and Numba arrays read exactly what the
checked adapters read, and repeated launches through a plan compute the right values and keep every
refusal."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import AliasingError, SelfOverlapError
from numba_tile.runtime import launcher
from numba_tile.runtime.arrays import as_array_arg

pytestmark = pytest.mark.gpu


@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


def _layouts(xp_asarray, xp_empty, negative=True):
    rng = np.random.default_rng()
    base = xp_asarray(rng.standard_normal((64, 96)).astype(np.float32))
    yield base
    yield base.T
    yield base[3:40:2, 5:]
    yield base[:, 1]
    if negative:                               # PyTorch has no negative steps
        yield base[::-1]
    yield xp_empty((0, 5))


def _check_reader(obj, stream=None):
    got = launcher.plan_key(("array",), [obj])
    ref = as_array_arg(obj, "x")
    assert got is not None
    _key, ptrs, _scalars, arrays, streams, _objs = got
    if ref.size:
        assert ptrs[0] == ref.ptr
    assert streams[0] == ref.stream
    fields = _key[0][3]
    assert tuple(fields[0]) == ref.shape
    assert fields[3] == ref.device


def test_cupy_reader_matches_the_array_interface():
    cp = pytest.importorskip("cupy")
    for a in _layouts(cp.asarray, lambda s: cp.empty(s, cp.float32)):
        _check_reader(a)
    s = cp.cuda.Stream(non_blocking=True)
    with s:                                    # the CAI v3 stream is CuPy's current stream
        _check_reader(cp.arange(10, dtype=cp.float32))


def test_torch_reader_matches_the_tensor_adapter():
    torch = pytest.importorskip("torch")
    for a in _layouts(lambda h: torch.from_numpy(h).cuda(),
                      lambda s: torch.empty(s, device="cuda"), negative=False):
        _check_reader(a)
    _check_reader(torch.nn.Parameter(torch.ones(8, device="cuda")))


def test_numba_reader_matches_the_array_interface():
    from numba import cuda
    for a in _layouts(cuda.to_device, lambda s: cuda.device_array(s, np.float32)):
        _check_reader(a)


def test_repeated_launches_through_a_plan_compute_the_right_values():
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    n = 5001
    for _ in range(20):                        # new arrays, new pointers, one plan
        xh, yh = rng.standard_normal((2, n)).astype(np.float32)
        x, y, z = cp.asarray(xh), cp.asarray(yh), cp.empty(n, cp.float32)
        add(x, y, nt.partition(z, 1024), B=1024).sync()
        np.testing.assert_array_equal(cp.asnumpy(z), xh + yh)
    assert len(add._plans) >= 1


def test_a_plan_never_lets_an_overlapping_output_through():
    cp = pytest.importorskip("cupy")
    buf = cp.asarray(np.random.default_rng().standard_normal(8192).astype(np.float32))
    x, y, z = buf[:2048], buf[2048:4096], buf[4096:6144]
    add(x, y, nt.partition(z, 1024), B=1024).sync()
    with pytest.raises(AliasingError):
        add(x, y, nt.partition(buf[1024:3072], 1024), B=1024)
    with pytest.raises(SelfOverlapError):
        from cupy.lib.stride_tricks import as_strided
        add(x, y, nt.partition(as_strided(buf, (2048,), (0,)), 1024), B=1024)
    add(x, y, nt.partition(z, 1024), B=1024).sync()
    np.testing.assert_array_equal(cp.asnumpy(z), cp.asnumpy(x) + cp.asnumpy(y))


def test_torch_tensors_through_a_plan():
    torch = pytest.importorskip("torch")
    for n in (4096, 333):
        for _ in range(3):
            x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            z = torch.empty(n, device="cuda")
            add(x, y, nt.partition(z, 256), B=256).sync()
            torch.testing.assert_close(z, x + y)


@nt.jit
def add2(x, y, z: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


def test_a_contiguous_torch_plan_is_not_taken_by_strided_tensors_of_its_shape():
    """A plan made for C-contiguous tensors checks is_contiguous() in place of the strides:
    a transposed or strided tensor of the same shape must miss it (and be read by its own
    strides), an extent-1 axis of any stride may hit it."""
    torch = pytest.importorskip("torch")
    n = 96
    x, y = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    z = torch.empty(n, n, device="cuda")
    add2(x, y, nt.partition(z, (32, 32)), 32, 32).sync()
    plan = add2._last_plan
    torch.testing.assert_close(z, x + y)
    big = torch.randn(n, 2 * n, device="cuda")
    for xv in (x.t(), big[:, ::2], big[:, :n]):
        z2 = torch.empty(n, n, device="cuda")
        add2(xv, y, nt.partition(z2, (32, 32)), 32, 32).sync()
        torch.testing.assert_close(z2, xv + y)
    assert add2._last_plan is not plan
    # extent-1 leading axis with an odd stride: contiguous for PyTorch, the plan's values right
    r = torch.randn(1, n, device="cuda")
    odd = torch.randn(3, n, device="cuda").as_strided((1, n), (7, 1))
    z3 = torch.empty(1, n, device="cuda")
    add2(r, r, nt.partition(z3, (1, 32)), 1, 32).sync()
    add2(odd, r, nt.partition(z3, (1, 32)), 1, 32).sync()
    torch.testing.assert_close(z3, odd + r)


@nt.jit
def scale_add(x, z: nt.Partition["B"], a: float, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * a + nt.load(z))


def test_legacy_launches_share_one_event_and_other_streams_still_wait_for_them():
    """Launches on the legacy stream file no event of their own (runtime/inflight.py); a
    launch on a non-blocking stream that reads what they wrote must still wait for them:
    many large writes on the legacy stream, then a reader on another stream, checked against
    NumPy. And a batch is released once the GPU is done (the registry holds nothing after
    sync)."""
    cp = pytest.importorskip("cupy")
    from numba_tile.runtime import inflight
    rng = np.random.default_rng()
    n = (1 << 24) + 3
    x = cp.asarray(rng.standard_normal(n).astype(np.float32))
    z = cp.asarray(rng.standard_normal(n).astype(np.float32))
    ref = cp.asnumpy(z).astype(np.float64)
    reg = inflight.default_registry()
    nt.synchronize()
    rounds = 5
    for _ in range(rounds):             # fewer than collect_every: no event recorded yet
        scale_add(x, nt.partition(z, 1024), 0.5, 1024)
        ref += 0.5 * cp.asnumpy(x).astype(np.float64)
    assert reg._unflushed == rounds
    s = cp.cuda.Stream(non_blocking=True)
    w = cp.zeros(n, cp.float32)
    with s:
        h = add(z, x, nt.partition(w, 1024), 1024, stream=s)   # reads z: waits for the batch
    h.sync()
    want = ref + cp.asnumpy(x).astype(np.float64)
    np.testing.assert_allclose(cp.asnumpy(w), want, rtol=1e-5, atol=1e-5)
    nt.synchronize()
    assert reg.pending() == 0 and reg._unflushed == 0


def test_numba_arrays_through_a_plan(monkeypatch):
    """Numba device arrays read inline by the plan's guard (``runtime/guards.py``): every layout
    launches twice (the second call through the plan, no binding), values against NumPy; an
    overlapping output and a self-overlapping one are refused on a plan hit as on the slow
    path; an array of another stream is ordered (the result read after that stream's sync)."""
    from numba import cuda
    import numba_tile.kernel as K
    calls = {"n": 0}
    real = K.bind_arrays

    def counting(*a, **kw):
        calls["n"] += 1
        return real(*a, **kw)
    monkeypatch.setattr(K, "bind_arrays", counting)
    rng = np.random.default_rng()
    host = rng.standard_normal((64, 96)).astype(np.float32)
    base = cuda.to_device(host)
    views = [(base, host), (base.T, host.T), (base[3:40:2, 5:], host[3:40:2, 5:]),
             (base[::-1], host[::-1])]
    for dx, hx in views:
        for i in range(2):
            before = calls["n"]
            yh = rng.standard_normal(hx.shape).astype(np.float32)
            y = cuda.to_device(yh)
            z = cuda.device_array(hx.shape, np.float32)
            add2(dx, y, nt.partition(z, (8, 32)), 8, 32).sync()
            np.testing.assert_array_equal(z.copy_to_host(), hx + yh)
            if i:
                assert calls["n"] == before, "the second launch took the slow path"
    buf = cuda.to_device(rng.standard_normal(8192).astype(np.float32))
    x, y, z = buf[:2048], buf[2048:4096], buf[4096:6144]
    add(x, y, nt.partition(z, 1024), B=1024).sync()
    add(x, y, nt.partition(z, 1024), B=1024).sync()
    with pytest.raises(AliasingError):
        add(x, y, nt.partition(buf[1024:3072], 1024), B=1024)
    s = cuda.stream()
    xs = cuda.to_device(rng.standard_normal(2048).astype(np.float32), stream=s)
    ys = cuda.device_array(2048, np.float32, stream=s)
    ys.copy_to_device(rng.standard_normal(2048).astype(np.float32), stream=s)
    for _ in range(2):
        h = add(xs, ys, nt.partition(z, 1024), B=1024)
    h.sync()
    np.testing.assert_array_equal(z.copy_to_host(), xs.copy_to_host() + ys.copy_to_host())
