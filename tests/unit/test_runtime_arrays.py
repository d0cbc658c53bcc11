"""Argument adapters (runtime/arrays.py, dlpack.py): NumPy, fake CAI, fake torch, DLPack."""

import gc
import sys
import types
import weakref

import ml_dtypes
import numpy as np
import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime import arrays
from numba_tile.runtime.arrays import ArrayArg, as_array_arg
from numba_tile.runtime.fakes import FakeDeviceArray

SUPPORTED = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32, np.int64, np.bool_]


def _addr(a: np.ndarray) -> int:
    return a.ctypes.data


def _check_matches(arg: ArrayArg, host: np.ndarray):
    assert arg.ptr == _addr(host)
    assert arg.shape == host.shape
    assert arg.strides == host.strides
    assert arg.dtype == host.dtype
    assert arg.ndim == host.ndim
    assert arg.size == host.size
    assert arg.itemsize == host.itemsize


@pytest.mark.parametrize("dtype", SUPPORTED)
def test_numpy_host_arrays(dtype):
    base = np.zeros((5, 6), dtype=dtype)
    for view in (base, base.T, base[1:, ::-2], base[::2, 3]):
        arg = as_array_arg(view, "x")
        _check_matches(arg, view)
        assert arg.is_host and arg.device is None and arg.stream is None
        assert arg.obj is view and arg.owner is view
        assert not arg.readonly
        assert arg.element_strides == tuple(s // view.itemsize for s in view.strides)


def test_numpy_readonly_flag():
    a = np.arange(4.0)
    a.flags.writeable = False
    assert as_array_arg(a, "x").readonly
    assert as_array_arg(np.broadcast_to(np.ones(1), (3,)), "x").readonly


def test_bfloat16_dtype_is_ml_dtypes():
    arg = as_array_arg(np.zeros(3, dtype=ml_dtypes.bfloat16), "x")
    assert arg.dtype == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("dtype", [np.complex64, np.float128, np.complex128,
                                   "datetime64[s]"])
def test_unsupported_dtype_names_argument_and_dtype(dtype):
    with pytest.raises(TileArgumentError) as info:
        as_array_arg(np.zeros(3, dtype=dtype), "weights")
    assert "'weights'" in str(info.value)
    assert str(np.dtype(dtype)) in str(info.value)


@pytest.mark.parametrize("value", [[1.0, 2.0], 3.0, "abc", None, object()])
def test_non_arrays_are_refused_naming_argument(value):
    with pytest.raises(TileArgumentError) as info:
        as_array_arg(value, "y")
    assert "argument 'y'" in str(info.value)
    assert type(value).__qualname__ in str(info.value)


@pytest.mark.parametrize("dtype", SUPPORTED[:1] + SUPPORTED[2:])
def test_cai_views(dtype):
    base = np.zeros((4, 8), dtype=dtype)
    for view in (base, base.T, base[1:3, ::3], base[::-1, 2:], np.broadcast_to(base[:1], (3, 8))):
        arg = as_array_arg(FakeDeviceArray(view, readonly=False), "x")
        _check_matches(arg, view)
        assert not arg.is_host and arg.device == 0
        assert not arg.readonly


def test_cai_strides_none_means_c_contiguous():
    host = np.zeros((3, 4, 5), dtype=np.float32)
    fake = FakeDeviceArray(host)
    assert fake.__cuda_array_interface__["strides"] is None  # NumPy omits strides when contiguous
    assert as_array_arg(fake, "x").strides == host.strides


def test_cai_readonly_and_stream_fields():
    host = np.zeros(4, dtype=np.float32)
    arg = as_array_arg(FakeDeviceArray(host, readonly=True, stream=12345), "x")
    assert arg.readonly and arg.stream == 12345
    arg = as_array_arg(FakeDeviceArray(host), "x")
    assert not arg.readonly and arg.stream is None


def test_cai_v2_without_stream_key():
    host = np.zeros((2, 3), dtype=np.int64)

    class V2:
        __cuda_array_interface__ = {"version": 2, "shape": (2, 3), "strides": None,
                                    "typestr": "<i8", "data": (host.ctypes.data, False)}

    arg = as_array_arg(V2(), "x")
    _check_matches(arg, host)
    assert arg.stream is None


def test_cai_mask_refused():
    with pytest.raises(TileArgumentError, match="argument 'm'.*mask"):
        as_array_arg(FakeDeviceArray(np.zeros(3), mask=object()), "m")


def test_cai_untyped_or_foreign_typestr_refused():
    with pytest.raises(TileArgumentError, match="argument 'v'"):
        as_array_arg(FakeDeviceArray(np.zeros(3, dtype=ml_dtypes.bfloat16)), "v")  # '<V2'
    with pytest.raises(TileArgumentError, match="argument 'v'.*>f4"):
        as_array_arg(FakeDeviceArray(np.zeros(3, dtype=">f4")), "v")
    with pytest.raises(TileArgumentError, match="argument 'v'"):
        as_array_arg(FakeDeviceArray(np.zeros(3), typestr="not a type"), "v")


def test_element_strides_rejects_unaligned_strides():
    raw = np.zeros(40, dtype=np.uint8)
    view = np.lib.stride_tricks.as_strided(raw.view(np.float32)[:1], (4,), (6,))
    with pytest.raises(TileArgumentError, match="argument 'x'.*byte stride 6 on axis 0.*multiple"):
        as_array_arg(FakeDeviceArray(view), "x")      # refused where it is read
    arg = ArrayArg(view, view, view.ctypes.data, (4,), (6,), view.dtype, False, 0)
    with pytest.raises(TileArgumentError, match="not a multiple"):
        arg.element_strides                            # and by the property, for a direct build
    empty = ArrayArg(view, view, 0, (0, 3), (6, 10), view.dtype, False, 0)
    assert empty.element_strides == (1, 2)             # an empty array addresses nothing
    single = ArrayArg(view, view, view.ctypes.data, (1, 3), (6, 4), view.dtype, False, 0)
    assert single.element_strides == (1, 1)            # an axis of extent 1 never steps


def test_byte_bounds_against_brute_force():
    base = np.zeros((5, 7), dtype=np.float32)
    for view in (base, base.T, base[::-2, 1::3], base[2:2], np.broadcast_to(base[0], (4, 7))):
        arg = as_array_arg(view, "x")
        if view.size == 0:
            assert arg.byte_bounds[0] == arg.byte_bounds[1]
            continue
        addrs = [arg.ptr + sum(i * s for i, s in zip(idx, view.strides))
                 for idx in np.ndindex(*view.shape)]
        assert arg.byte_bounds == (min(addrs), max(addrs) + view.itemsize)


# -- PyTorch (faked: torch is not installed here) ------------------------------------------------

class _FakeTorchDevice:
    def __init__(self, type_, index):
        self.type, self.index = type_, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class _FakeTorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


def _fake_torch(monkeypatch):
    torch = types.ModuleType("torch")
    for name in ("float16", "bfloat16", "float32", "float64", "int32", "int64", "bool", "uint8",
                 "complex64"):
        setattr(torch, name, _FakeTorchDtype(name))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(arrays, "_TORCH_DTYPES", {})

    class Tensor:
        def __init__(self, host, dtype, device):
            self.host, self.dtype, self.device = host, dtype, device
            self.shape = host.shape

        def data_ptr(self):
            return self.host.ctypes.data

        def stride(self):
            return tuple(s // self.host.itemsize for s in self.host.strides)

        def element_size(self):
            return self.host.itemsize

    Tensor.__module__ = "torch"
    return torch, Tensor


def test_torch_tensors(monkeypatch):
    torch, Tensor = _fake_torch(monkeypatch)
    host = np.zeros((4, 6), dtype=ml_dtypes.bfloat16)[::-1, 1::2]
    arg = as_array_arg(Tensor(host, torch.bfloat16, _FakeTorchDevice("cuda", 3)), "t")
    _check_matches(arg, host)
    assert arg.device == 3 and not arg.readonly
    cpu_tensor = Tensor(np.zeros(3, np.int64), torch.int64, _FakeTorchDevice("cpu", None))
    cpu = as_array_arg(cpu_tensor, "t")
    assert cpu.is_host and cpu.dtype == np.int64


def test_torch_unsupported_dtype_and_device(monkeypatch):
    torch, Tensor = _fake_torch(monkeypatch)
    with pytest.raises(TileArgumentError, match="argument 't'.*torch.complex64"):
        as_array_arg(Tensor(np.zeros(3, np.complex64), torch.complex64,
                            _FakeTorchDevice("cuda", 0)), "t")
    with pytest.raises(TileArgumentError, match="argument 't'.*mps"):
        as_array_arg(Tensor(np.zeros(3, np.float32), torch.float32, _FakeTorchDevice("mps", 0)),
                     "t")


# -- DLPack ----------------------------------------------------------------------------------------

class _DLPackOnly:
    """Exposes only the DLPack protocol of a NumPy array (as a foreign producer would)."""

    def __init__(self, host, legacy=False):
        self.host, self.legacy = host, legacy

    def __dlpack__(self, stream=None, max_version=None, copy=None):
        if self.legacy:
            if max_version is not None or copy is not None:
                raise TypeError("max_version not supported")
            return self.host.__dlpack__()
        return self.host.__dlpack__(max_version=max_version, copy=copy)

    def __dlpack_device__(self):
        return self.host.__dlpack_device__()


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("dtype",
                         [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_dlpack_host(legacy, dtype):
    base = np.zeros((5, 6), dtype=dtype)
    for view in (base, base.T, base[1:4, ::2], base[::-1]):
        arg = as_array_arg(_DLPackOnly(view, legacy), "d")
        _check_matches(arg, view)
        assert arg.is_host and not arg.readonly
        assert type(arg.owner).__name__ == "PyCapsule"


def test_dlpack_readonly_flag_from_versioned_capsule():
    host = np.arange(6.0)
    host.flags.writeable = False
    assert as_array_arg(_DLPackOnly(host), "d").readonly


def test_dlpack_owner_keeps_memory_alive():
    host = np.arange(1000.0)
    ref = weakref.ref(host)
    arg = as_array_arg(_DLPackOnly(host), "d")
    ptr = host.ctypes.data
    object.__setattr__(arg, "obj", None)  # keep only the capsule
    del host
    gc.collect()
    assert ref() is not None  # the capsule holds the producer's array
    assert arg.ptr == ptr
    del arg
    gc.collect()
    assert ref() is None  # and releases it with the capsule


def test_dlpack_copies_are_refused():
    class Copying(_DLPackOnly):
        def __dlpack__(self, stream=None, max_version=None, copy=None):
            return self.host.__dlpack__(max_version=max_version, copy=True)  # ignores copy=False

    with pytest.raises(TileArgumentError, match="argument 'd'.*copy"):
        as_array_arg(Copying(np.zeros(4)), "d")


def test_dlpack_unsupported_device_and_dtype():
    class Weird(_DLPackOnly):
        def __dlpack_device__(self):
            return (8, 0)  # kDLMetal

    with pytest.raises(TileArgumentError, match="argument 'd'.*device type 8"):
        as_array_arg(Weird(np.zeros(2)), "d")
    with pytest.raises(TileArgumentError, match="argument 'd'.*complex"):
        as_array_arg(_DLPackOnly(np.zeros(2, np.complex64)), "d")
