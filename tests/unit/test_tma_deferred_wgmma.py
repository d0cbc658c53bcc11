"""The TMA / deferred-wgmma path: ``x @ y`` products in pipelined loops (compiled and
interpreted), where no drain (and so no TMA) is inserted, names of internal ops kept out of
errors, the tensor maps (what a map describes, negative and reversed strides refused by name, the
fast path's map order) and the ``NUMBA_TILE_TMA`` switch. CPU only: PTX compiles, the fake
driver of test_launch_plans, a stand-in for cuTensorMapEncodeTiled where the driver would be
called."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import numba_tile as nt
from numba_tile.errors import TileArgumentError, TileError
from numba_tile.runtime import driver, tensormap
from numba_tile.runtime.fakes import FakeDeviceArray
from tests.unit.test_launch_plans import fake  # noqa: F401  (the fixture)

BM = BN = BK = 64


@pytest.fixture
def wgmma(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    monkeypatch.delenv("NUMBA_TILE_TMA", raising=False)
    monkeypatch.delenv("NUMBA_TILE_WGMMA_PENDING", raising=False)


@pytest.fixture
def fdev(fake, monkeypatch):   # noqa: F811
    """The fake driver, with the shared-memory queries a 3-stage ring needs."""
    monkeypatch.setattr(driver, "max_shared_per_block_optin", lambda d: 232448)
    monkeypatch.setattr(driver, "set_dynamic_shared", lambda f, n: None)
    return fake


@pytest.fixture
def fake_encode(monkeypatch):
    """encode() without the driver: the map's bytes are (ptr, shape, strides), recorded."""
    calls = []

    def enc(ptr, shape, strides, dtype_name, box_rows):
        calls.append((ptr, tuple(shape), tuple(strides), dtype_name, box_rows))
        return struct.pack("<Qqqqq", ptr, *shape, *strides) + bytes(88)
    monkeypatch.setattr(tensormap, "encode", enc)
    return calls


def _gemm_mma(stages=3):
    @nt.jit(num_warps=4, num_stages=stages)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    return gemm


def _gemm_matmul_op(stages=3):
    @nt.jit(num_warps=4, num_stages=stages)
    def gemm_op(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = acc + x @ y
        nt.store(c, acc)
    return gemm_op


def _host(shape, dt=np.float16, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def _dev(shape, dt=np.float16):
    return FakeDeviceArray(np.zeros(shape, dt))


def _ptr(x):
    return x.__cuda_array_interface__["data"][0]


def _maps(fd):
    return [v for v in fd.launches[-1][0] if isinstance(v, bytes) and len(v) == 128]


# ------------------------------------------------------------------ (c) IR insertion


@pytest.mark.parametrize("stages", [3, 4])
def test_matmul_operator_product_compiles(wgmma, stages):
    """``acc = acc + x @ y`` in a pipelined loop compiles with the deferred wgmma drain
    (_drain_in_last_iteration takes the product of a binop Expr, which has no ``.args``)."""
    a, b = np.zeros((256, 256), np.float16), np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), np.float32)
    ptx = _gemm_matmul_op(stages).ptx(a, b, nt.partition(c, (BM, BN)), BM, BN, BK, cc=(9, 0))
    assert "wgmma.mma_async" in ptx


def test_matmul_operator_product_runs_in_the_interpreter(monkeypatch):
    """The interpreter compiles for cc 9.0 too (INTERPRETER_CC): with wgmma forced, a CPU-only
    run of the same kernel matches NumPy."""
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    a, b = _host((128, 128), seed=1), _host((128, 128), seed=2)
    c = np.zeros((128, 128), np.float32)
    _gemm_matmul_op()(a, b, nt.partition(c, (BM, BN)), BM, BN, BK, interpret=True)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2,
                               atol=2e-2)


def _variants():
    out = {}

    @nt.jit(num_warps=4, num_stages=3)
    def brk(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
            BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
            if k == 1:
                break
        nt.store(c, acc)
    out["break"] = brk

    @nt.jit(num_warps=4, num_stages=3)
    def ret(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
            BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
            if k == 1:
                nt.store(c, acc)
                return
        nt.store(c, acc)
    out["return"] = ret

    @nt.jit(num_warps=4, num_stages=3)
    def kw(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
           BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc=acc)
        nt.store(c, acc)
    out["keyword acc"] = kw

    @nt.jit(num_warps=4, num_stages=3)
    def used(a, b, c: nt.Partition[("BM", "BN")], d: nt.Partition[("BM", "BN")],
             BM: nt.Constant, BN: nt.Constant, BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
            if k == 0:
                nt.store(d, acc)
        nt.store(c, acc)
    out["acc read in loop"] = used

    @nt.jit(num_warps=4, num_stages=3)
    def start(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
              BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(1, nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    out["range(1, n)"] = start

    @nt.jit(num_warps=4, num_stages=3)
    def user(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        n = nt.num_tiles(a, 1, BK)
        for k in range(n):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
            acc = nt.language._wgmma_drain(acc, k, n)     # (d) the internal ops, by hand
        acc = nt.language._wgmma_wait(acc)
        nt.store(c, acc)
    out["user-called internal ops"] = user
    return out


VARIANTS = _variants()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_no_tma_where_the_drain_would_be_wrong(wgmma, name):
    """break / return in the loop, acc by keyword, acc read inside the loop, range(1, n), and
    user calls of _wgmma_drain/_wgmma_wait: no drain inserted, so no TMA boxes (cp.async)."""
    kern = VARIANTS[name]
    a, b = np.zeros((256, 256), np.float16), np.zeros((256, 256), np.float16)
    c, d = np.zeros((256, 256), np.float32), np.zeros((256, 256), np.float32)
    parts = [nt.partition(c, (BM, BN))]
    if name == "acc read in loop":
        parts.append(nt.partition(d, (BM, BN)))
    ck = kern.compiled(a, b, *parts, BM, BN, BK, cc=(9, 0))
    assert ck.tensor_maps == ()
    assert "cp.async.bulk.tensor" not in ck.ptx


@pytest.mark.parametrize("name", ["break", "keyword acc", "user-called internal ops"])
def test_variants_interpret_correctly(name, monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    a, b = _host((128, 256), seed=3), _host((256, 128), seed=4)
    c = np.zeros((128, 128), np.float32)
    VARIANTS[name](a, b, nt.partition(c, (BM, BN)), BM, BN, BK, interpret=True)
    kk = 2 * BK if name == "break" else 256
    ref = a[:, :kk].astype(np.float32) @ b[:kk].astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)


def test_range_of_a_bool_does_not_name_the_internal_op(wgmma):
    @nt.jit(num_warps=4, num_stages=3)
    def one(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
            BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(True):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    a, b = np.zeros((256, 256), np.float16), np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), np.float32)
    try:
        one.compiled(a, b, nt.partition(c, (BM, BN)), BM, BN, BK, cc=(9, 0))
    except TileError as exc:
        assert "_wgmma_drain" not in str(exc), str(exc)


# ------------------------------------------------------------------ (a) what a map describes


def test_negative_row_stride_is_refused_by_check_encodable():
    """a[::-1] is vec16 (strides % 16 holds for negative strides), but check_encodable refuses
    it naming the kernel and the argument (else encode() would raise OverflowError from
    cuuint64_t, naming neither)."""
    with pytest.raises(TileArgumentError, match="kernel 'k': argument 'a'"):
        tensormap.check_encodable("k", "a", (256, 256), (-256, 1), 2, 0x10000)


def test_reversed_view_launch_gives_a_named_error(wgmma, fdev):
    kern = _gemm_mma()
    rev = FakeDeviceArray(np.zeros((256, 256), np.float16)[::-1])
    b, c = _dev((256, 256)), _dev((256, 256), np.float32)
    with pytest.raises(TileArgumentError, match="argument 'a'"):
        kern(rev, b, nt.partition(c, (BM, BN)), BM, BN, BK)


def test_map_describes_the_view_not_its_base(wgmma, fdev, fake_encode):
    """A column slice of a wider array: the map takes the view's pointer, extents and row
    stride (so the TMA zero-fills past the view's last column, not the base's)."""
    base = np.zeros((256, 512), np.float16)
    view = FakeDeviceArray(base[:, 64:320])
    b, c = _dev((256, 256)), _dev((256, 256), np.float32)
    _gemm_mma()(view, b, nt.partition(c, (BM, BN)), BM, BN, BK)
    ptr, shape, strides, _dt, rows = fake_encode[0]
    assert (ptr, shape, strides, rows) == (_ptr(view), (256, 256), (512, 1), BM)


# ------------------------------------------------------------------ (b) plans and caches


def test_fast_path_map_follows_the_pointer_and_param_order(wgmma, fdev, fake_encode):
    @nt.jit(num_warps=4, num_stages=3)
    def swapped(c: nt.Partition[("BM", "BN")], b, a, BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    c = _dev((256, 256), np.float32)
    a1, b1 = _dev((256, 256)), _dev((256, 256))
    swapped(nt.partition(c, (BM, BN)), b1, a1, BM, BN, BK)
    slow = fdev.slow_calls["n"]
    a2, b2 = _dev((256, 256)), _dev((256, 256))
    swapped(nt.partition(c, (BM, BN)), b2, a2, BM, BN, BK)
    assert fdev.slow_calls["n"] == slow                 # the plan
    got = [struct.unpack_from("<Q", m)[0] for m in _maps(fdev)]
    assert got == [_ptr(a2), _ptr(b2)]                  # maps in ck.tensor_maps order: a, b
    # another row stride, same shape: not the plan's map
    a3 = FakeDeviceArray(np.zeros((256, 320), np.float16)[:, :256])
    swapped(nt.partition(c, (BM, BN)), b2, a3, BM, BN, BK)
    assert struct.unpack_from("<Qqqqq", _maps(fdev)[0]) == (_ptr(a3), 256, 256, 320, 1)


def test_tma_off_switch_applies_from_a_kernels_first_launch(wgmma, fdev, fake_encode,
                                                            monkeypatch):
    """A specialization keeps the module its first launch loaded (documented: the switches are
    read when it is compiled and loaded), so the refusal's advice names that moment: set
    NUMBA_TILE_TMA=0 before the kernel's first launch in the process, or pass a copy."""
    base = np.zeros(64, np.float16)
    base.flags.writeable = False
    tall = FakeDeviceArray(as_strided(base, shape=(2**31, 64), strides=(0, 2), writeable=False))
    b = _dev((64, 64))
    kern = _gemm_mma()
    kern(_dev((256, 64)), b, nt.partition(_dev((256, 64), np.float32), (BM, BN)), BM, BN, BK)
    with pytest.raises(TileArgumentError, match="argument 'a'.*before the kernel's first launch"):
        kern(tall, b, nt.partition(_dev((256, 64), np.float32), (BM, BN)), BM, BN, BK)


def test_tma_off_before_the_first_launch_takes_cp_async(wgmma, fdev, fake_encode, monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_TMA", "0")
    base = np.zeros(64, np.float16)
    base.flags.writeable = False
    tall = FakeDeviceArray(as_strided(base, shape=(2**31, 64), strides=(0, 2), writeable=False))
    _gemm_mma()(tall, _dev((64, 64)), nt.partition(_dev((256, 64), np.float32), (BM, BN)),
                BM, BN, BK)
    assert _maps(fdev) == [] and fake_encode == []
