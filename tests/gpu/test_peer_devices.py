"""Several GPUs: read-only tensors on a peer GPU, mutable ones on the launch's,
streams of the launch's device, against NumPy. The tests marked ``two_gpus`` need two devices
with a peer-to-peer path and skip with fewer; the others run on one GPU and check the premises
the peer checks stand on (the driver's access flags for each kind of allocation, a stream of
another context refused) and the example on one device.

Allocations made here through ``cuda.bindings`` (a virtual-memory mapping, a memory pool) are
exported to numba_tile with a raw ``__cuda_array_interface__``
(:class:`numba_tile.runtime.fakes.RawInterface`)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import AliasingError, TileArgumentError
from numba_tile.runtime import driver
from numba_tile.runtime.fakes import RawInterface

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")


def _gpus():
    try:
        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001
        return 0


def _peer_path():
    return _gpus() >= 2 and driver.can_access_peer(0, 1) and driver.can_access_peer(1, 0)


two_gpus = pytest.mark.skipif(not _peer_path(), reason="needs two GPUs with a peer-to-peer path")


@nt.jit
def scale_add(w, x, out: nt.Partition["B"], B: nt.Constant):
    nt.store(out, nt.load_like(w, out) * 2.0 + nt.load_like(x, out))


@nt.jit
def two_outs(x, a: nt.Partition["B"], b: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, a)
    nt.store(a, t)
    nt.store(b, t + 1.0)


@nt.jit
def slow_copy(x, out: nt.Partition["B"], B: nt.Constant, A: nt.Constant):
    t = nt.load_like(x, out)
    for _ in range(A):                 # long enough that a later launch finds it in flight
        t = t * 1.0 + 0.0
    nt.store(out, t)


def _rand(n, device, rng=np.random.default_rng()):
    h = rng.standard_normal(n).astype(np.float32)
    return h, torch.from_numpy(h).to(device)


def _cu():
    from cuda.bindings import driver as cu
    return cu


def _ok(result):
    err = result[0]
    assert int(err) == 0, result
    return result[1] if len(result) == 2 else result[1:]


def _cai(ptr, n):
    return RawInterface({"version": 3, "shape": (n,), "strides": None, "typestr": "<f4",
                         "data": (int(ptr), False), "stream": None})


# -- one GPU: the premises -----------------------------------------------------------------

def _location(cu, device):
    loc = cu.CUmemLocation()
    loc.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    loc.id = device
    return loc


def _access_desc(cu, device):
    desc = cu.CUmemAccessDesc()
    desc.location = _location(cu, device)
    desc.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    return desc


class _Mapping:
    """A virtual-memory allocation on ``owner``, mapped, opened to the devices in ``opened``."""

    def __init__(self, owner, opened, nbytes=1 << 21):
        cu = self.cu = _cu()
        prop = cu.CUmemAllocationProp()
        prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location = _location(cu, owner)
        gran = _ok(cu.cuMemGetAllocationGranularity(
            prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
        self.size = -(-nbytes // gran) * gran
        self.handle = _ok(cu.cuMemCreate(self.size, prop, 0))
        self.ptr = _ok(cu.cuMemAddressReserve(self.size, 0, 0, 0))
        _ok(cu.cuMemMap(self.ptr, self.size, 0, self.handle, 0))
        if opened:
            _ok(cu.cuMemSetAccess(self.ptr, self.size, [_access_desc(cu, d) for d in opened],
                                  len(opened)))

    def close(self):
        cu = self.cu
        cu.cuMemUnmap(self.ptr, self.size)
        cu.cuMemRelease(self.handle)
        cu.cuMemAddressFree(self.ptr, self.size)


class _PoolAlloc:
    """``nbytes`` from a fresh memory pool of ``owner``, opened to the devices in ``opened``
    (the pool's own device always has access)."""

    def __init__(self, owner, opened, nbytes=1 << 20):
        cu = self.cu = _cu()
        driver.ensure_context(owner)
        props = cu.CUmemPoolProps()
        props.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        props.location = _location(cu, owner)
        self.pool = _ok(cu.cuMemPoolCreate(props))
        if opened:
            _ok(cu.cuMemPoolSetAccess(self.pool, [_access_desc(cu, d) for d in opened],
                                      len(opened)))
        self.ptr = _ok(cu.cuMemAllocFromPoolAsync(nbytes, self.pool, 0))
        _ok(cu.cuStreamSynchronize(0))

    def close(self):
        cu = self.cu
        cu.cuMemFreeAsync(self.ptr, 0)
        cu.cuStreamSynchronize(0)
        cu.cuMemPoolDestroy(self.pool)


def test_access_flags_of_each_kind_of_allocation_on_its_own_device():
    """The query the peer check asks answers read-write for the memory of PyTorch's caching
    allocator, a memory pool and an opened mapping, and no access for a mapping opened to no
    device: the answer the peer check refuses on."""
    t = torch.empty(1 << 16, device="cuda:0")
    assert driver.pointer_access(t.data_ptr(), 0) == 3
    assert driver.pointer_access(t.data_ptr() + 4 * (t.numel() - 1), 0) == 3
    pool = _PoolAlloc(0, [])
    opened, closed = _Mapping(0, [0]), _Mapping(0, [])
    try:
        assert driver.pointer_access(int(pool.ptr), 0) == 3
        assert driver.pointer_access(int(opened.ptr), 0) == 3
        assert driver.pointer_access(int(closed.ptr), 0) == 0
    finally:
        pool.close()
        opened.close()
        closed.close()
    assert driver.pointer_access(16, 0) is None        # no allocation


def test_range_access_walks_every_mapping_of_a_reservation():
    """Two physical chunks mapped side by side in one reservation, the second opened to no
    device: the walk reports each chunk's flags, so an array spanning both is seen closed in
    its middle; the device of each kind of allocation is its owner's."""
    cu = _cu()
    driver.ensure_context(0)
    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location = _location(cu, 0)
    gran = _ok(cu.cuMemGetAllocationGranularity(
        prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
    base = _ok(cu.cuMemAddressReserve(3 * gran, 0, 0, 0))
    handles = [_ok(cu.cuMemCreate(gran, prop, 0)) for _ in range(3)]
    try:
        for i, h in enumerate(handles):
            _ok(cu.cuMemMap(int(base) + i * gran, gran, 0, h, 0))
        _ok(cu.cuMemSetAccess(int(base), gran, [_access_desc(cu, 0)], 1))
        _ok(cu.cuMemSetAccess(int(base) + 2 * gran, gran, [_access_desc(cu, 0)], 1))
        lo = int(base)
        assert driver.range_access(lo, lo + 3 * gran, 0) == [3, 0, 3]
        assert driver.range_access(lo + 8, lo + gran, 0) == [3]
        assert driver.range_access(lo + gran - 4, lo + gran + 4, 0) == [3, 0]
        assert driver.pointer_device(lo) == 0 and driver.pointer_device(lo + gran) == 0
    finally:
        for i, h in enumerate(handles):
            cu.cuMemUnmap(int(base) + i * gran, gran)
            cu.cuMemRelease(h)
        cu.cuMemAddressFree(base, 3 * gran)
    t = torch.empty(1 << 20, device="cuda:0")
    assert driver.range_access(t.data_ptr(), t.data_ptr() + 4 * t.numel(), 0) == [3]
    pool = _PoolAlloc(0, [])
    try:
        assert driver.pointer_device(int(pool.ptr)) == 0
        assert driver.range_access(int(pool.ptr), int(pool.ptr) + 1024, 0) == [3]
    finally:
        pool.close()
    assert driver.range_access(16, 32, 0) == [None]


def test_a_stream_of_another_context_is_refused_and_the_context_stays_usable():
    cu = _cu()
    driver.ensure_context(0)
    other = _ok(cu.cuCtxCreate(None, 0, 0))                    # pushed current
    stream = _ok(cu.cuStreamCreate(1))
    _ok(cu.cuCtxPopCurrent())
    try:
        h, x = _rand(5000, "cuda:0")
        out = torch.full((5000,), float("nan"), device="cuda:0")
        with pytest.raises(TileArgumentError, match="other than its primary one"):
            scale_add(x, x, nt.partition(out, 1024), 1024, stream=int(stream))
        assert torch.isnan(out).all()
        scale_add(x, x, nt.partition(out, 1024), 1024).sync()
        np.testing.assert_allclose(out.cpu().numpy(), 3.0 * h.astype(np.float64), rtol=1e-6)
    finally:
        cu.cuStreamDestroy(stream)
        cu.cuCtxDestroy(other)


def test_a_plans_runner_given_another_contexts_stream_is_refused_by_the_driver():
    """The fast path does not ask a stream's owner: the driver refuses the launch (the
    function belongs to the primary context's module), and the context stays usable."""
    cu = _cu()
    h, x = _rand(6000, "cuda:0")
    out = torch.full((6000,), float("nan"), device="cuda:0")
    for _ in range(2):                                        # the slow path, then a plan
        scale_add(x, x, nt.partition(out, 1024), 1024).sync()
    assert scale_add._last_plan is not None
    driver.ensure_context(0)
    other = _ok(cu.cuCtxCreate(None, 0, 0))
    stream = _ok(cu.cuStreamCreate(1))
    _ok(cu.cuCtxPopCurrent())
    try:
        out.fill_(float("nan"))
        with pytest.raises((driver.CudaDriverError, TileArgumentError)):
            scale_add(x, x, nt.partition(out, 1024), 1024, stream=int(stream))
        torch.cuda.synchronize(0)
        scale_add(x, x, nt.partition(out, 1024), 1024).sync()
        np.testing.assert_allclose(out.cpu().numpy(), 3.0 * h.astype(np.float64), rtol=1e-6)
    finally:
        cu.cuStreamDestroy(stream)
        cu.cuCtxDestroy(other)


def test_a_torch_stream_of_the_device_is_accepted():
    h, x = _rand(3000, "cuda:0")
    out = torch.empty(3000, device="cuda:0")
    s = torch.cuda.Stream(device=0)
    scale_add(x, x, nt.partition(out, 512), 512, stream=s).sync()
    np.testing.assert_allclose(out.cpu().numpy(), 3.0 * h.astype(np.float64), rtol=1e-6)


def test_the_peer_reduce_example_on_the_devices_there_are():
    from examples import peer_reduce
    got = peer_reduce.main(n=70_001, shards=3)
    assert len(got) == _gpus() and all(np.isfinite(g).all() for g in got)


# -- two GPUs -------------------------------------------------------------------------------

@two_gpus
def test_a_launch_reads_a_peer_and_writes_its_own_device():
    hw, w = _rand(100_003, "cuda:0")
    hx, x = _rand(100_003, "cuda:1")
    out = torch.full((100_003,), float("nan"), device="cuda:1")
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    before = torch.cuda.current_device()
    scale_add(w, x, nt.partition(out, 1024), 1024).sync()
    assert torch.cuda.current_device() == before
    expected = 2.0 * hw.astype(np.float64) + hx
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)
    assert driver.can_access_peer(1, 0) and (1, 0) in driver._peer_enabled


@two_gpus
def test_the_example_matches_one_gpu():
    from examples import peer_reduce
    got = peer_reduce.main(n=200_003, shards=4)
    assert len(got) == _gpus()
    for g in got[1:]:
        np.testing.assert_array_equal(g, got[0])      # every device summed in the same order


@two_gpus
def test_mutable_arrays_on_two_devices_are_refused_and_nothing_is_written():
    _hx, x = _rand(4096, "cuda:0")
    a = torch.full((4096,), float("nan"), device="cuda:0")
    b = torch.full((4096,), float("nan"), device="cuda:1")
    with pytest.raises(TileArgumentError, match="'a' \\(CUDA device 0\\).*'b' \\(CUDA device 1\\)"):
        two_outs(x, nt.partition(a, 1024), nt.partition(b, 1024), 1024)
    assert torch.isnan(a).all() and torch.isnan(b).all()


@two_gpus
def test_an_output_read_by_itself_through_a_peer_group_is_aliasing():
    from examples.peer_reduce import reduce_shards
    _h0, x0 = _rand(8192, "cuda:0")
    out = torch.full((8192,), float("nan"), device="cuda:1")
    torch.cuda.synchronize(0)
    with pytest.raises(AliasingError, match="'out'"):
        reduce_shards((x0, out), nt.partition(out, 1024), 1024)
    assert torch.isnan(out).all()


@two_gpus
def test_a_stream_of_the_peer_device_is_refused():
    _hw, w = _rand(4096, "cuda:0")
    _hx, x = _rand(4096, "cuda:1")
    out = torch.full((4096,), float("nan"), device="cuda:1")
    s0 = torch.cuda.Stream(device=0)
    with pytest.raises(TileArgumentError, match="belongs to CUDA device 0.*runs on CUDA device 1"):
        scale_add(w, x, nt.partition(out, 1024), 1024, stream=s0)
    assert torch.isnan(out).all()


@two_gpus
def test_a_pool_not_opened_to_the_launch_device_is_refused_then_accepted_once_opened():
    n = 1 << 18
    pool = _PoolAlloc(0, [], nbytes=4 * n)
    try:
        peer = _cai(pool.ptr, n)
        hx, x = _rand(n, "cuda:1")
        out = torch.full((n,), float("nan"), device="cuda:1")
        with pytest.raises(TileArgumentError, match="'w'.*no read access"):
            scale_add(peer, x, nt.partition(out, 1024), 1024)
        assert torch.isnan(out).all()
        cu = _cu()
        _ok(cu.cuMemPoolSetAccess(pool.pool, [_access_desc(cu, 1)], 1))
        driver.ensure_context(0)
        _ok(cu.cuMemsetD32(pool.ptr, np.float32(1.5).view(np.uint32).item(), n))
        _ok(cu.cuCtxSynchronize())
        scale_add(peer, x, nt.partition(out, 1024), 1024).sync()
        np.testing.assert_allclose(out.cpu().numpy(), 3.0 + hx.astype(np.float64), rtol=1e-6)
    finally:
        pool.close()


@two_gpus
def test_a_write_on_the_peer_waits_for_the_launch_reading_it():
    """Device 1 reads x (device 0's) in a long kernel; a launch on device 0 that overwrites x
    waits for it through the in-flight registry (an event of device 1 waited on by device 0's
    stream): device 1's copy holds x's old values."""
    n = 1 << 22
    hx, x = _rand(n, "cuda:0")
    torch.cuda.synchronize(0)
    copy = torch.empty(n, device="cuda:1")
    slow_copy(x, nt.partition(copy, 1024), 1024, 2000)
    _hy, y = _rand(n, "cuda:0")
    torch.cuda.synchronize(0)
    scale_add(y, y, nt.partition(x, 1024), 1024)      # x is mutable here: it waits
    nt.synchronize()
    np.testing.assert_array_equal(copy.cpu().numpy(), hx)


@two_gpus
def test_a_peer_read_waits_for_a_write_on_the_peers_default_stream():
    """Device 1 writes y on its default stream in a long kernel, device 0 writes x on its own;
    a launch on device 0 reading x and (through peer access) y waits for both: the registry
    keeps the newest conflicting launch of each device of a default stream's queue."""
    n = 1 << 22
    hy, y_src = _rand(n, "cuda:1")
    hx, x_src = _rand(n, "cuda:0")
    y = torch.empty(n, device="cuda:1")
    x = torch.empty(n, device="cuda:0")
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    slow_copy(y_src, nt.partition(y, 1024), 1024, 2000)          # device 1, legacy stream
    slow_copy(x_src, nt.partition(x, 1024), 1024, 10)            # device 0, legacy stream
    out = torch.empty(n, device="cuda:0")
    scale_add(y, x, nt.partition(out, 1024), 1024).sync()       # reads y on the peer
    np.testing.assert_allclose(out.cpu().numpy(), 2.0 * hy.astype(np.float64) + hx, rtol=1e-6)
