"""Every array interface is validated before any GPU work.

Each class of malformed argument is launched the way a user would (interpreter mode and
``kernel.ptx``): the refusal is a ``TileArgumentError`` (or an ownership error where the verdict
is about overlap) naming the kernel, the argument, what was expected and what was given, pointing
at the launch line, with every output unchanged. A seeded fuzz test then throws random malformed CUDA Array
Interfaces, DLPack capsules, masquerading "torch" tensors and odd NumPy views at a launch. Legal
neighbours of each class (negative strides, stride-0 inputs, Fortran order, empty arrays, extent-1
axes, interleaved views) still run and give the right values.
"""

from __future__ import annotations

import copy
import pickle
import sys
import time
import types

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import numba_tile as nt
from numba_tile import errors
from numba_tile.runtime import arrays, overlap
from numba_tile.runtime.arrays import MAX_NDIM, ZERO_D_MESSAGE, as_array_arg
from numba_tile.runtime.fakes import FakeDeviceArray, FakeDLPack, RawInterface, cai_of
from numba_tile.runtime.launch_checks import ParamSpec, bind_arrays

RNG = np.random.default_rng()
F32 = np.dtype(np.float32)


@nt.jit
def scale(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * 2.0)


@nt.jit
def add_1d(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit(unchecked=True)
def u_scatter_add(idx, vals, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    nt.atomic_add(out, nt.load(idx, (i,), (B,), padding=-1), nt.load(vals, (i,), (B,)))


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def refused(launch, cls=errors.TileArgumentError, *fragments):
    """Runs ``launch`` (a one-line lambda around the launch) and checks its refusal.

    The error must be exactly ``cls``, hold every fragment, and point at the lambda's line (the
    user's launch line), which it shows.
    """
    with pytest.raises(errors.TileError) as info:
        launch()
    err = info.value
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    for fragment in fragments:
        assert fragment in err.message, f"{fragment!r} not in {err.message!r}"
    assert (err.filename, err.lineno) == (__file__, launch.__code__.co_firstlineno), str(err)
    return err


def host_pair(n=64):
    """An input and an output host buffer (fresh data), and copies to check they stay unchanged."""
    x, z = randn(n), randn(n)
    return x, z, x.copy(), z.copy()


def unchanged(*pairs):
    for after, before in pairs:
        np.testing.assert_array_equal(after, before)


# ----------------------------------------------------------------------------- extents


def test_negative_extent_of_an_output_over_its_own_input_is_refused_not_called_disjoint():
    """Before: the byte range inverted, the overlap test said "disjoint", the grid was 36 blocks."""
    x, z, x0, z0 = host_pair()
    bad_z = RawInterface(cai_of(x, shape=(-64,)), x)        # the output over its own input
    good_x = FakeDeviceArray(x)
    err = refused(lambda: scale.ptx(good_x, nt.partition(bad_z, 16)), errors.TileArgumentError,
                  "kernel 'scale'", "argument 'z'", "shape (-64,)",
                  "expected extents from 0 to 2**63 - 1", "got -64 on axis 0")
    assert "overlap" not in err.message
    refused(lambda: scale(x, nt.partition(bad_z, 16), interpret=True), errors.TileArgumentError,
            "kernel 'scale'", "argument 'z'", "got -64")
    unchanged((x, x0), (z, z0))


@pytest.mark.parametrize("extent,shown", [(64.0, "64.0 (float)"), (True, "True (bool)"),
                                          (np.float64(64), "np.float64(64.0)"),
                                          (np.bool_(True), "np.True_"), ("64", "'64' (str)"),
                                          (None, "None (NoneType)")])
def test_float_and_bool_extents_are_refused(extent, shown):
    x, z, x0, z0 = host_pair()
    bad = RawInterface(cai_of(x, shape=(extent,)), x)
    refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
            "kernel 'scale'", "argument 'x'", "shape", "expected ints", shown, "on axis 0")
    unchanged((x, x0), (z, z0))


def test_extents_that_do_not_fit_in_int64_are_refused():
    x, z, _, _ = host_pair()
    huge = RawInterface(cai_of(x, shape=(2**63,), strides=(0,)), x)
    refused(lambda: scale.ptx(huge, nt.partition(z, 16)), errors.TileArgumentError,
            "argument 'x'", "expected extents from 0 to 2**63 - 1", f"got {2**63} on axis 0")
    bcast = RawInterface(cai_of(x, shape=(2**62, 4), strides=(0, 0)), x)   # 2**64 bytes
    refused(lambda: scale.ptx(bcast, nt.partition(z.reshape(16, 4), (4, 4))),
            errors.TileArgumentError, "argument 'x'", f"{2**64} elements of 4 bytes",
            "expected at most 2**63 - 1 bytes")


def test_numpy_integer_extents_and_strides_are_accepted_as_ints():
    x, z, _, _ = host_pair()
    arg = as_array_arg(RawInterface(cai_of(x, shape=(np.int64(64),), strides=[np.int32(4)])),
                       "x")
    assert arg.shape == (64,) and arg.strides == (4,)
    assert type(arg.shape[0]) is int and type(arg.strides[0]) is int


# ----------------------------------------------------------------------------- strides


@pytest.mark.parametrize("stride,fragment", [
    (4.0, "got 4.0 (float)"), (True, "got True (bool)"), ("4", "got '4' (str)"),
    (6, "byte stride 6 on axis 0 is not a multiple of the item size 4 (float32)"),
    (2**70, "expected byte strides from -2**63 to 2**63 - 1"),
    (-(2**63) - 4, "expected byte strides from -2**63 to 2**63 - 1")])
def test_bad_strides_are_refused(stride, fragment):
    x, z, x0, z0 = host_pair()
    bad = RawInterface(cai_of(x, shape=(4,), strides=(stride,)), x)
    refused(lambda: scale.ptx(bad, nt.partition(z[:4], 4)), errors.TileArgumentError,
            "kernel 'scale'", "argument 'x'", fragment)
    unchanged((x, x0), (z, z0))


def test_strides_of_the_wrong_count_or_type_are_refused():
    x, _, _, _ = host_pair()
    for strides, fragment in [((4, 4), "expected one stride per axis (1 for shape (64,)), got 2"),
                              (4, "strides: expected a tuple of ints, got 4 (int)"),
                              ("4", "strides: expected a tuple of ints, got '4' (str)")]:
        with pytest.raises(errors.TileArgumentError, match="argument 'x'") as info:
            as_array_arg(RawInterface(cai_of(x, strides=strides)), "x")
        assert fragment in info.value.message


# ----------------------------------------------------------------------------- pointers


@pytest.mark.parametrize("make,fragment", [
    (lambda p: float(p), "data pointer: expected an int address, got"),
    (lambda p: True, "data pointer: expected an int address, got True (bool)"),
    (lambda p: str(p), "data pointer: expected an int address"),
    (lambda p: -p, "expected an address from 0 to 2**64 - 1"),
    (lambda p: 2**64 + p, "expected an address from 0 to 2**64 - 1"),
    (lambda p: 0, "data pointer is null for a non-empty array of shape (64,)"),
    (lambda p: p + 2, "is not aligned to the item size: expected a multiple of 4 bytes (float32), "
                      "got one 2 byte(s) past")])
def test_bad_pointers_are_refused(make, fragment):
    x, z, x0, z0 = host_pair()
    bad = RawInterface(cai_of(x, data=(make(x.ctypes.data), False)), x)
    refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
            "kernel 'scale'", "argument 'x'", fragment)
    refused(lambda: scale(x, nt.partition(bad, 16), interpret=True), errors.TileArgumentError,
            "kernel 'scale'", "argument 'z'", fragment)
    unchanged((x, x0), (z, z0))


@pytest.mark.parametrize("ptr,shape,strides", [
    (2**64 - 8, (4,), (4,)),                  # past the top of the address space
    (2**64 - 4, (1,), (4,)),                  # the last element would end exactly at 2**64
    (4096, (3,), (-(2**62),)),                # negative strides below address 0
    (2**63, (2, 2), (2**62, 2**62))])         # both axes together wrap
def test_byte_ranges_that_wrap_the_address_space_are_refused(ptr, shape, strides):
    x, z, _, _ = host_pair()
    bad = RawInterface(cai_of(x, shape=shape, strides=strides, data=(ptr, False)), x)
    tile = (1,) * len(shape)
    out = nt.partition(z[:int(np.prod(shape))].reshape(shape), tile)
    refused(lambda: scale.ptx(bad, out), errors.TileArgumentError,
            "argument 'x'", "expected every byte inside the 64-bit address space")


def test_misaligned_numpy_arrays_are_refused_in_the_interpreter_as_on_the_gpu_path():
    """A packed structured dtype's field and a view at a byte offset: the interpreter refuses
    what the GPU path refuses, with the same message."""
    packed = np.zeros(16, dtype=[("v", "<f4"), ("tag", "u1")])     # itemsize 5, v at offset 0
    field = packed["v"]
    shifted_field = np.zeros(16, dtype=[("tag", "u1"), ("v", "<f4")])["v"]   # v at offset 1
    raw = np.zeros(4 * 17, np.uint8)
    shifted = np.frombuffer(raw, np.float32, count=16, offset=2)     # 2 bytes past alignment
    odd = as_strided(np.frombuffer(raw, np.float32, count=4), (4,), (6,))
    x, z, x0, z0 = host_pair(16)
    for bad, fragment in [(field, "byte stride 5 on axis 0 is not a multiple of the item size 4"),
                          (shifted_field, "is not aligned to the item size"),
                          (shifted, "is not aligned to the item size"),
                          (odd, "byte stride 6 on axis 0")]:
        before = raw.copy(), packed.copy()
        e1 = refused(lambda: scale(bad, nt.partition(z, 4), interpret=True),
                     errors.TileArgumentError, "kernel 'scale'", "argument 'x'", fragment)
        gpu_path = FakeDeviceArray(bad, readonly=False)
        e2 = refused(lambda: scale.ptx(gpu_path, nt.partition(FakeDeviceArray(z), 4)),
                     errors.TileArgumentError, "argument 'x'", fragment)
        assert e1.message == e2.message
        np.testing.assert_array_equal(raw, before[0])
        np.testing.assert_array_equal(packed, before[1])
    writable_shifted = np.frombuffer(bytearray(4 * 17), np.float32, count=16, offset=2)
    before = writable_shifted.copy()
    refused(lambda: scale(x, nt.partition(writable_shifted, 4), interpret=True),
            errors.TileArgumentError, "argument 'z'", "not aligned to the item size")
    np.testing.assert_array_equal(writable_shifted, before)
    unchanged((x, x0), (z, z0))


# ----------------------------------------------------------------------------- CAI fields


@pytest.mark.parametrize("data,fragment", [
    ([0, False], "'data': expected a 2-tuple (pointer: int, read-only: bool)"),
    ((1, False, 3), "'data': expected a 2-tuple"),
    (7, "'data': expected a 2-tuple"),
    (("ptr", "no"), "data pointer: expected an int address"),
    ((None, False), "data pointer is null for a non-empty array")])
def test_cai_data_that_is_not_an_int_bool_pair_is_refused(data, fragment):
    x, z, _, _ = host_pair()
    if isinstance(data, list):
        data = [x.ctypes.data, False]
    bad = RawInterface(cai_of(x, data=data), x)
    refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
            "kernel 'scale'", "argument 'x'", fragment)


@pytest.mark.parametrize("flag", ["no", 1, None])
def test_cai_read_only_flag_must_be_a_bool(flag):
    x, z, _, _ = host_pair()
    bad = RawInterface(cai_of(x, data=(x.ctypes.data, flag)), x)
    refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
            "argument 'x'", "read-only flag: expected a bool")


def test_cai_stream_zero_is_refused():
    x, z, x0, z0 = host_pair()
    bad = RawInterface(cai_of(x, stream=0), x)
    refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
            "kernel 'scale'", "argument 'x'", "'stream' is 0",
            "CUDA Array Interface v3 forbids", "expected None, 1 (legacy default stream), 2")
    refused(lambda: scale(z, nt.partition(bad, 16), interpret=True), errors.TileArgumentError,
            "argument 'z'", "'stream' is 0")
    unchanged((x, x0), (z, z0))


@pytest.mark.parametrize("stream", [-1, 1.0, "1", True, 2**64])
def test_cai_stream_that_is_not_a_handle_is_refused(stream):
    x, z, _, _ = host_pair()
    bad = RawInterface(cai_of(x, stream=stream), x)
    refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
            "argument 'x'", "'stream': expected None or a positive int stream handle",
            repr(stream))


def test_cai_streams_one_two_and_handles_are_accepted():
    x, _, _, _ = host_pair()
    for stream in (None, 1, 2, 0x7F12_3456_7800):
        assert as_array_arg(RawInterface(cai_of(x, stream=stream)), "x").stream == stream


def test_an_interface_that_raises_or_is_not_a_dict_is_refused():
    class Raising:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("driver gone")

    x, z, _, _ = host_pair()
    bad, notdict = Raising(), RawInterface([1, 2])
    refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
            "argument 'x'", "could not read the array interface", "driver gone")
    refused(lambda: scale.ptx(notdict, nt.partition(z, 16)), errors.TileArgumentError,
            "argument 'x'", "__cuda_array_interface__: expected a dict, got [1, 2] (list)")


# ----------------------------------------------------------------------------- DLPack


def test_dlpack_capsules_with_negative_shapes_or_wrapping_strides_are_refused():
    x, z, x0, z0 = host_pair()
    p = x.ctypes.data
    cases = [(FakeDLPack(p, (-64,), keepalive=x), "shape (-64,)", "got -64 on axis 0"),
             (FakeDLPack(p, (4,), (-(2**61),), keepalive=x), "expected every byte inside"),
             (FakeDLPack(p, (4,), (2**62,), keepalive=x), "expected byte strides from -2**63"),
             (FakeDLPack(p, (4, 4), ndim=1 << 30, keepalive=x), "rank 1073741824",
              "expected 0 to 32 axes"),
             (FakeDLPack(p, (), ndim=2, keepalive=x), "null shape pointer"),
             (FakeDLPack(p + 1, (16,), keepalive=x, versioned=True), "not aligned")]
    for bad, *fragments in cases:
        refused(lambda: scale(bad, nt.partition(z, 16), interpret=True),
                errors.TileArgumentError, "kernel 'scale'", "argument 'x'", *fragments)
    unchanged((x, x0), (z, z0))


# ----------------------------------------------------------------------------- masquerades


def _fake_torch(monkeypatch):
    torch = types.ModuleType("torch")
    for name in ("float16", "bfloat16", "float32", "float64", "int32", "int64", "bool"):
        setattr(torch, name, f"torch.{name}")
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(arrays, "_TORCH_DTYPES", {})

    class Device:
        def __init__(self, type_, index):
            self.type, self.index = type_, index

    class Tensor:
        """Looks like a torch tensor to the adapter (type(obj).__module__ is 'torch')."""

        def __init__(self, host, shape=None, stride=None, ptr=None, device=("cpu", None)):
            self.host, self.dtype = host, torch.float32
            self.shape = host.shape if shape is None else shape
            self._stride = (tuple(s // 4 for s in host.strides) if stride is None else stride)
            self._ptr = host.ctypes.data if ptr is None else ptr
            self.device = Device(*device)

        def data_ptr(self):
            return self._ptr

        def stride(self):
            if isinstance(self._stride, Exception):
                raise self._stride
            return self._stride

        def element_size(self):
            return 1          # lies: the dtype's item size is used, not this

    Tensor.__module__ = "torch"
    return Tensor


def test_fake_torch_tensors_are_validated_like_any_producer(monkeypatch):
    Tensor = _fake_torch(monkeypatch)
    x, z, x0, z0 = host_pair()
    good = as_array_arg(Tensor(x), "t")
    assert good.strides == (4,) and good.is_host
    cases = [(Tensor(x, shape=(-64,)), "shape (-64,)"),
             (Tensor(x, shape=(64.0,)), "expected ints, got 64.0 (float)"),
             (Tensor(x, stride=(True,)), "tensor strides (True,): expected ints"),
             (Tensor(x, stride=(1.0,)), "expected ints, got 1.0 (float)"),
             (Tensor(x, ptr=x.ctypes.data + 1), "not aligned"),
             (Tensor(x, ptr=float(x.ctypes.data)), "expected an int address"),
             (Tensor(x, stride=ValueError("boom")), "could not read the array interface",
              "boom"),
             (Tensor(x, device=("cuda", 1.5)), "device: expected a CUDA device ordinal"),
             (Tensor(x, device=("cuda", -1)), "device: expected a CUDA device ordinal")]
    for bad, *fragments in cases:
        refused(lambda: scale(bad, nt.partition(z, 16), interpret=True),
                errors.TileArgumentError, "kernel 'scale'", "argument 'x'", *fragments)
    unchanged((x, x0), (z, z0))


def test_fake_cupy_arrays_are_validated_like_any_producer():
    class Mem:
        device_id = "zero"

    class CupyLike:
        def __init__(self, cai, device_id=0):
            self.__cuda_array_interface__ = cai
            self.data = Mem()
            self.data.device_id = device_id
            self.device = None

    CupyLike.__module__ = "cupy._core.core"
    x, z, _, _ = host_pair()
    assert as_array_arg(CupyLike(cai_of(x)), "c").device == 0
    for bad, fragment in [(CupyLike(cai_of(x, shape=(-1,))), "got -1 on axis 0"),
                          (CupyLike(cai_of(x), device_id="zero"),
                           "device: expected a CUDA device ordinal (an int >= 0), got 'zero'"),
                          (CupyLike(cai_of(x, stream=0)), "'stream' is 0")]:
        refused(lambda: scale.ptx(bad, nt.partition(z, 16)), errors.TileArgumentError,
                "kernel 'scale'", "argument 'x'", fragment)


# ----------------------------------------------------------------------------- partitions


def test_assigning_to_a_partition_raises_at_that_line():
    z = randn(16)
    p = nt.partition(z, 4)
    line = sys._getframe().f_lineno
    with pytest.raises(errors.TileArgumentError) as info:
        p.tile_shape = (3,)
    assert "Partition is immutable: cannot set 'tile_shape'" in info.value.message
    assert (info.value.filename, info.value.lineno) == (__file__, line + 2)
    with pytest.raises(errors.TileArgumentError, match="cannot delete 'blocks'"):
        del p.blocks
    assert p.tile_shape == (4,) and p.blocks is None
    for q in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert q.tile_shape == (4,) and q.blocks is None


@pytest.mark.parametrize("attr,value,fragment", [
    ("tile_shape", (3,), "tile_shape was changed after numba_tile.partition() checked it"),
    ("tile_shape", (4.0,), "got (4.0,)"),
    ("tile_shape", (True,), "got (True,)"),
    ("tile_shape", [4], "got [4]"),
    ("tile_shape", (), "expected a non-empty tuple of positive powers of two"),
    ("blocks", -1, "blocks was changed after numba_tile.partition() checked it"),
    ("blocks", True, "got True"),
    ("blocks", 2**31, "expected None or an int from 1 to 2**31 - 1"),
    ("blocks", 2.0, "got 2.0")])
def test_a_partition_changed_through_object_setattr_is_refused_at_launch(attr, value, fragment):
    x, z, x0, z0 = host_pair(16)
    p = nt.partition(z, 4)
    object.__setattr__(p, attr, value)
    refused(lambda: scale(x, p, interpret=True), errors.TileArgumentError,
            "kernel 'scale'", "argument 'z'", fragment)
    refused(lambda: scale.ptx(x, p), errors.TileArgumentError, "argument 'z'", fragment)
    unchanged((x, x0), (z, z0))


def test_a_partition_with_a_deleted_field_is_refused_at_launch():
    x, z, _, _ = host_pair(16)
    p = nt.partition(z, 4)
    object.__delattr__(p, "tile_shape")
    assert "tile_shape=" in repr(p)                     # still printable in a message
    refused(lambda: scale(x, p, interpret=True), errors.TileArgumentError,
            "argument 'z'", "the partition has lost a field")


# ----------------------------------------------------------------------------- 0-d and rank


def test_0d_arrays_are_refused_plainly_for_every_array_parameter():
    x, z, x0, z0 = host_pair(16)
    a0 = np.array(3.0, np.float32)
    assert isinstance(a0, np.ndarray) and a0.ndim == 0
    idx, vals = np.arange(16, dtype=np.int64) % 8, randn(16)
    tensor = refused(lambda: scale(a0, nt.partition(z, 16), interpret=True),
                     errors.TileArgumentError, "kernel 'scale'", "argument 'x'", ZERO_D_MESSAGE)
    part = refused(lambda: scale(x, nt.partition(a0, 16), interpret=True),
                   errors.TileArgumentError, "kernel 'scale'", "argument 'z'", ZERO_D_MESSAGE)
    mut = refused(lambda: u_scatter_add(idx, vals, a0, 16, grid=1, interpret=True, unchecked=True),
                  errors.TileArgumentError, "kernel 'u_scatter_add'", "argument 'out'",
                  ZERO_D_MESSAGE)
    dev = refused(lambda: scale.ptx(FakeDeviceArray(a0), nt.partition(FakeDeviceArray(z), 16)),
                  errors.TileArgumentError, "argument 'x'", ZERO_D_MESSAGE)
    for err in (tensor, part, mut, dev):
        assert "power of two" not in err.message and "rank" not in err.message
    empty = refused(lambda: nt.partition(a0, ()), errors.TileArgumentError,
                    "argument 'array'", ZERO_D_MESSAGE)
    assert "power of two" not in empty.message
    refused(lambda: nt.partition(FakeDeviceArray(a0), ()), errors.TileArgumentError,
            ZERO_D_MESSAGE)
    refused(lambda: nt.partition(z, ()), errors.TileArgumentError,
            "expected a tuple of positive powers of two, got ()")   # not 0-d: as before
    unchanged((x, x0), (z, z0))


def test_rank_is_bounded():
    x = np.zeros((1,) * (MAX_NDIM + 1), np.float32)
    z = randn(4)
    refused(lambda: scale(x, nt.partition(z, 4), interpret=True), errors.TileArgumentError,
            "kernel 'scale'", "argument 'x'", f"expected at most {MAX_NDIM} axes",
            f"got {MAX_NDIM + 1}")
    ok = np.zeros((1,) * MAX_NDIM, np.float32)
    assert as_array_arg(ok, "x").ndim == MAX_NDIM
    assert MAX_NDIM == 32                                # NumPy 1's NPY_MAXDIMS (NumPy 2: 64)


# ----------------------------------------------------------------------------- byte span

SPAN = "expected at most 2**61 bytes from the lowest byte to one past the highest"


@nt.jit
def first_only(x, z: nt.Partition["B"], B: nt.Constant):
    first = nt.load(x, (0,), (1,))                 # reads x[0] alone
    nt.store(z, nt.broadcast_to(first, (B,)) * 0.0 + 7.0)


def test_an_input_whose_far_elements_pass_2_63_bytes_is_refused_not_called_disjoint():
    """x's elements lie 0, 2**62 and 2**63 bytes past x[0] = buf[1] (every byte below 2**64),
    the output buf[0:2] holds x[0]. NumPy's overlap solver, whose int64 offsets overflow there,
    would call the two disjoint and let the safe kernel write its read-only input; the span
    bound refuses x first, on both paths and for every producer."""
    buf = np.ones(4, np.float32)
    x = as_strided(buf[1:], shape=(3,), strides=(2**62,), writeable=False)
    z = buf[0:2]
    refused(lambda: first_only(x, nt.partition(z, 2), 2, interpret=True), errors.TileArgumentError,
            "kernel 'first_only'", "argument 'x'", f"spans {2**63 + 4} bytes", SPAN)
    assert (buf == 1.0).all()                            # nothing ran
    xd, zd = FakeDeviceArray(x), FakeDeviceArray(z)
    refused(lambda: first_only.ptx(xd, nt.partition(zd, 2), 2), errors.TileArgumentError,
            "argument 'x'", SPAN)
    xdl = FakeDLPack(buf.ctypes.data + 4, (3,), (2**60,), keepalive=buf, versioned=True)
    refused(lambda: first_only(xdl, nt.partition(z, 2), 2, interpret=True),
            errors.TileArgumentError, "argument 'x'", SPAN)
    # the 2-D variant: an outer stride of 2**62 bytes
    x2 = RawInterface(cai_of(buf[:1], shape=(3, 2), strides=(2**62, 4),
                             data=(buf.ctypes.data + 4, True)), buf)
    z2 = FakeDeviceArray(buf[0:2].reshape(1, 2))
    refused(lambda: scale.ptx(x2, nt.partition(z2, (1, 2))), errors.TileArgumentError,
            "argument 'x'", SPAN)
    assert (buf == 1.0).all()


@pytest.mark.parametrize("shape,strides,ok", [
    ((2,), (arrays.MAX_SPAN - 4,), True),                     # exactly MAX_SPAN bytes
    ((2,), (arrays.MAX_SPAN,), False),                        # one item past
    ((3,), (-(arrays.MAX_SPAN // 2 - 4),), True),             # negative strides, 4 bytes below
    ((3,), (-(arrays.MAX_SPAN // 2),), False),                # ...and 4 bytes past it
    ((2,) * 31, (2**56,) * 31, True),                         # many axes, each far below it
    ((2,) * 32, (2**56,) * 32, False),                        # ...which together pass it
    ((1, 4), (2**63 - 1, 4), True)])                          # an extent-1 axis never steps
def test_the_byte_span_is_bounded_by_2_61(shape, strides, ok):
    lo = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    ptr = (1 << 62) - lo                                      # every byte inside [0, 2**64)
    host = np.zeros(1, np.float32)
    x = RawInterface(cai_of(host, shape=shape, strides=strides, data=(ptr, True)), host)
    z = FakeDeviceArray(np.zeros(shape, np.float32))
    launch = lambda: scale.ptx(x, nt.partition(z, (1,) * len(shape)))   # noqa: E731
    if ok:
        arg = as_array_arg(x, "x")
        lo, hi = arg.byte_bounds
        assert hi - lo <= arrays.MAX_SPAN and "entry" in launch()
    else:
        refused(launch, errors.TileArgumentError, "argument 'x'", SPAN)


# ----------------------------------------------------------------------------- bounded overlap

RANK = 20


def _hard_strides(seed: int = 7) -> tuple[int, ...]:
    """Rank-20 byte strides that defeat the sufficient test and make NumPy's exact solver work
    exponentially (random strides near 2**42, extents 2: the old exact recursion took ~165 s)."""
    rng = np.random.default_rng(seed)
    return tuple(4 * int(s) for s in rng.integers(10**12, 2 * 10**12, RANK))


def _bind(specs, values, allow_host=False):
    return bind_arrays("k", specs, values, allow_host=allow_host, call_site=(__file__, 1))


def test_rank20_self_overlap_worst_case_is_refused_fast():
    strides = _hard_strides()
    base = 1 << 44
    out = RawInterface({"shape": (2,) * RANK, "strides": strides, "typestr": "<f4",
                        "data": (base, False), "version": 3})
    x = RawInterface({"shape": (2,) * RANK, "strides": None, "typestr": "<f4",
                      "data": (1 << 40, False), "version": 3})
    spec = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    for _ in range(2):                                   # the second verdict comes from the cache
        start = time.perf_counter()
        with pytest.raises(errors.SelfOverlapError) as info:
            _bind(spec, [x, nt.partition(out, (1,) * RANK)])
        assert time.perf_counter() - start < 0.5
        message = info.value.message
        assert "mutable argument 'z' could not be proven free of self-overlap within the bound" \
            in message
        assert f"max_work={overlap.MAX_WORK}" in message and "contiguous" in message
    arg = as_array_arg(out, "z")
    assert overlap.internal_overlap_verdict(arg) is None
    assert overlap.has_internal_overlap(arg)             # undecided is never "free"


def test_rank20_layouts_that_are_decided_are_decided_fast_and_right():
    spec = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    contiguous = np.zeros((2,) * RANK, np.float32)
    permuted = contiguous.transpose(list(range(RANK))[::-1])[::-1]
    x = np.zeros((2,) * RANK, np.float32)
    start = time.perf_counter()
    _bind(spec, [x, nt.partition(permuted, (1,) * RANK)], allow_host=True)   # no overlap
    # A hard layout that does overlap itself: the pigeonhole test proves it at once.
    dense = as_strided(contiguous, (2,) * RANK, (4,) * RANK)
    with pytest.raises(errors.SelfOverlapError, match="overlaps itself"):
        _bind(spec, [x, nt.partition(dense, (1,) * RANK)], allow_host=True)
    # The same hard strides but one axis of stride 0: refused exactly.
    zero = RawInterface({"shape": (2,) * RANK, "strides": _hard_strides()[:-1] + (0,),
                         "typestr": "<f4", "data": (1 << 44, False), "version": 3})
    with pytest.raises(errors.SelfOverlapError, match="overlaps itself"):
        _bind(spec, [FakeDeviceArray(x), nt.partition(zero, (1,) * RANK)])
    assert time.perf_counter() - start < 0.5


def _superincreasing_strides(seed: int = 1) -> tuple[int, ...]:
    """Rank-20 byte strides that pass the sufficient test (each above the span of the smaller
    ones, so the layout is provably free of self-overlap) at magnitudes near _hard_strides'."""
    rng = np.random.default_rng(seed)
    out, span = [], 4
    for _ in range(RANK):
        s = span + 4 * int(rng.integers(10**9, 2 * 10**9))
        out.append(s)
        span += s
    return tuple(out)


def test_rank20_pairwise_worst_case_is_refused_fast():
    """An output provably free of self-overlap against an input whose overlap with it NumPy's
    exact solver cannot settle (the unbounded test ran past 300 s): refused, in milliseconds."""
    base = 1 << 44
    zi = {"shape": (2,) * RANK, "strides": _superincreasing_strides(), "typestr": "<f4",
          "data": (base, False), "version": 3}
    xi = dict(zi, strides=_hard_strides(0), data=(base + 8, False))
    z, x = RawInterface(zi), RawInterface(xi)
    za, xa = as_array_arg(z, "z"), as_array_arg(x, "x")
    assert overlap.internal_overlap_verdict(za) is False
    out = nt.partition(z, (1,) * RANK)
    start = time.perf_counter()
    err = refused(lambda: scale.ptx(x, out), errors.AliasingError, "kernel 'scale'",
                  "mutable argument 'z' could not be proven disjoint from read-only argument "
                  "'x' within the bound", f"max_work={overlap.MAX_WORK}", "contiguous")
    assert time.perf_counter() - start < 0.5, err
    assert overlap.overlap_verdict(za, xa) is None
    assert overlap.shares_memory(za, xa)                 # undecided counts as sharing
    # Disjoint byte ranges are decided at once; the same layout at the same address overlaps.
    far = as_array_arg(RawInterface(dict(xi, data=(base + (1 << 56), False))), "x")
    assert overlap.overlap_verdict(za, far) is False
    assert overlap.overlap_verdict(za, as_array_arg(RawInterface(zi), "x")) is True
    start = time.perf_counter()
    refused(lambda: scale.ptx(z, out), errors.AliasingError,
            "mutable argument 'z' overlaps read-only argument 'x'")
    assert time.perf_counter() - start < 0.5


def test_undecided_verdicts_are_cached_as_undecided_not_as_missing():
    from numba_tile.runtime import launch_checks
    out = RawInterface({"shape": (2,) * RANK, "strides": _hard_strides(5), "typestr": "<f4",
                        "data": (1 << 44, False), "version": 3})
    arg = as_array_arg(out, "z")
    assert launch_checks._self_overlap_verdict(arg) is None
    key = (arg.shape, arg.strides, arg.itemsize)
    assert key in launch_checks._SELF_OVERLAP and launch_checks._SELF_OVERLAP[key] is None


def test_verdict_cache_keys_cannot_be_reached_with_floats_or_bools():
    """A passing launch is cached by its layout numbers; a float or bool that equals (and hashes
    like) one of them must not hit that entry."""
    x, z, _, _ = host_pair()
    good_x, good_z = FakeDeviceArray(x), FakeDeviceArray(z)
    spec = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    _bind(spec, [good_x, nt.partition(good_z, 16)])                      # cached
    float_x = RawInterface(cai_of(x, shape=(64.0,), strides=(4.0,)), x)
    with pytest.raises(errors.TileArgumentError, match="expected ints"):
        _bind(spec, [float_x, nt.partition(good_z, 16)])
    p = nt.partition(good_z, 16, blocks=1)
    _bind(spec, [good_x, p])
    object.__setattr__(p, "blocks", True)
    with pytest.raises(errors.TileArgumentError, match="blocks was changed"):
        _bind(spec, [good_x, p])


# ----------------------------------------------------------------------------- legal neighbours


def test_legal_neighbours_still_run_with_the_right_values():
    a = randn(8, 8)
    buf = randn(40)
    xs = buf.copy()
    b0 = buf.copy()
    # negative strides
    z = np.full(40, np.nan, np.float32)
    scale(xs[::-1], nt.partition(z, 16), interpret=True)
    np.testing.assert_allclose(z, 2 * xs[::-1])
    # stride-0 broadcast input
    z = np.full(40, np.nan, np.float32)
    scale(np.broadcast_to(buf[3:4], (40,)), nt.partition(z, 16), interpret=True)
    np.testing.assert_allclose(z, np.full(40, 2 * buf[3]))
    # Fortran order output
    zt = np.full((8, 8), np.nan, np.float32)
    scale(a, nt.partition(zt.T, (4, 4)), interpret=True)
    np.testing.assert_allclose(zt.T, 2 * a)
    # interleaved views of one buffer
    scale(buf[1::2], nt.partition(buf[0::2], 4), interpret=True)
    want = b0.copy()
    want[0::2] = 2 * b0[1::2]
    np.testing.assert_allclose(buf, want)
    # an axis of extent 1 with a stride that is no whole number of items
    odd1 = as_strided(a, (1, 8), (6, 4))
    z = np.full((1, 8), np.nan, np.float32)
    scale(odd1, nt.partition(z, (1, 8)), interpret=True)
    np.testing.assert_allclose(z, 2 * a[:1])


@pytest.mark.parametrize("shape,strides,ptr", [
    ((0,), (6,), 0), ((0, 4), (2**62, -(2**62)), 3), ((4, 0), (1, 5), 2**64 - 1),
    ((0,), (2**63 - 1,), None)])
def test_empty_arrays_with_any_strides_and_pointer_are_accepted(shape, strides, ptr):
    z = RawInterface({"shape": shape, "strides": strides, "typestr": "<f4",
                      "data": (ptr, False), "version": 3})
    x = FakeDeviceArray(np.zeros(shape, np.float32))
    arg = as_array_arg(z, "z")
    assert arg.shape == shape and arg.size == 0 and arg.ptr == (ptr or 0)
    _bind([ParamSpec("x", "tensor"), ParamSpec("z", "partition")],
          [x, nt.partition(z, (1,) * len(shape))])
    assert "entry" in scale.ptx(x, nt.partition(z, (1,) * len(shape)))


# ----------------------------------------------------------------------------- fuzz

_BAD_INTS = [lambda r: -int(r.integers(1, 2**62)), lambda r: float(r.integers(1, 99)),
             lambda r: bool(r.integers(0, 2)), lambda r: "7", lambda r: None,
             lambda r: np.float32(4), lambda r: 2**63 + int(r.integers(0, 2**40)), lambda r: 1j]


def _set_item(r, d, key, value):
    """Replaces a random item of ``d[key]``; no-op on a rank-0 layout (already refused)."""
    items = list(d[key])
    if items:
        items[int(r.integers(0, len(items)))] = value
        d[key] = tuple(items)


def _bad_extent(r, d, host):
    _set_item(r, d, "shape", _BAD_INTS[int(r.integers(0, len(_BAD_INTS)))](r))


def _bad_stride(r, d, host):
    choices = [lambda r: float(r.integers(1, 99) * 4), lambda r: bool(r.integers(0, 2)),
               lambda r: "4", lambda r: None, lambda r: 2**63 + int(r.integers(0, 99)),
               lambda r: -(2**63) - 1 - int(r.integers(0, 99)),
               lambda r: 4 * int(r.integers(-9, 9)) + int(r.integers(1, 4))]   # not whole items
    _set_item(r, d, "strides", choices[int(r.integers(0, len(choices)))](r))


def _bad_pointer(r, d, host):
    p = host.ctypes.data
    choices = [p + int(r.integers(1, 4)), 0, float(p), -p, 2**64 + p, str(p), True,
               2**64 - 4 * int(r.integers(1, 3))]
    d["data"] = (choices[int(r.integers(0, len(choices)))], False)


def _wrap_low(r, d, host):
    d["strides"] = tuple(-(2**62) for _ in d["strides"])
    d["data"] = (int(r.integers(1, 2**40)) * 4, False)


def _bad_data(r, d, host):
    choices = [[host.ctypes.data, False], (host.ctypes.data,), (host.ctypes.data, False, 0),
               host.ctypes.data, None, (host.ctypes.data, "yes"), (host.ctypes.data, 1)]
    d["data"] = choices[int(r.integers(0, len(choices)))]


def _bad_stream(r, d, host):
    d["stream"] = [0, -1, 1.5, "1", True, 2**64, 0.0][int(r.integers(0, 7))]


def _bad_rank(r, d, host):
    if r.integers(0, 2):
        d["shape"], d["strides"] = (), ()
    else:
        k = int(r.integers(MAX_NDIM + 1, 70))
        d["shape"], d["strides"] = (1,) * k, (4,) * k


def _bad_structure(r, d, host):
    which = int(r.integers(0, 7))
    if which == 0:
        d["strides"] = d["strides"] + (4,)
    elif which == 1:
        d["shape"] = ["a", "b"][: len(d["shape"])]
    elif which == 2:
        del d["typestr"]
    elif which == 3:
        d["typestr"] = ["<c8", "|V4", ">f4", 5, "nonsense"][int(r.integers(0, 5))]
    elif which == 4:
        d["mask"] = object()
    elif which == 5:
        d["shape"] = 64
    else:
        d["strides"] = "4"


DEFECTS = [_bad_extent, _bad_stride, _bad_pointer, _wrap_low, _bad_data, _bad_stream, _bad_rank,
           _bad_structure]


def _cai_case(r, host):
    """A CAI of ``host`` with one to three defects; a structural one (which may leave no shape or
    strides tuple to damage further) comes last."""
    d = cai_of(host)
    for _ in range(int(r.integers(1, 4))):
        defect = DEFECTS[int(r.integers(0, len(DEFECTS)))]
        defect(r, d, host)
        if defect is _bad_structure:
            break
    return RawInterface(d, host)


def _dlpack_case(r, host):
    shape, strides, ptr, ndim = list(host.shape), [s // 4 for s in host.strides], \
        host.ctypes.data, None
    which = int(r.integers(0, 5))
    if which == 0:
        shape[0] = -int(r.integers(1, 2**62))
    elif which == 1:
        strides[0] = -(2**61)
    elif which == 2:
        strides[0] = 2**62 - int(r.integers(0, 99))
    elif which == 3:
        ptr += int(r.integers(1, 4))
    else:
        ndim = int(r.integers(MAX_NDIM + 1, 2**31 - 1))
    return FakeDLPack(ptr, tuple(shape), tuple(strides), ndim=ndim, keepalive=host,
                      versioned=bool(r.integers(0, 2)))


def test_fuzz_malformed_interfaces_only_give_argument_errors_and_write_nothing():
    r = np.random.default_rng(20241201)
    outcomes = {}
    for case in range(600):
        rank = int(r.integers(1, 3))
        shape = (64,) if rank == 1 else (8, 8)
        tile = (16,) if rank == 1 else (4, 4)
        xh, zh = randn(*shape), randn(*shape)
        x0, z0 = xh.copy(), zh.copy()
        host = xh if r.integers(0, 2) else zh
        bad = _cai_case(r, host) if r.integers(0, 4) else _dlpack_case(r, host)
        as_output = bool(r.integers(0, 2))
        x, z = (xh, bad) if as_output else (bad, zh)
        name = "z" if as_output else "x"
        for launch in (lambda: scale(x, nt.partition(z, tile), interpret=True),
                       lambda: scale.ptx(x, nt.partition(z, tile))):
            try:
                launch()
            except (errors.TileArgumentError, errors.OwnershipError) as err:
                # An output that overlaps itself is reported as such, whatever its strides.
                allowed = (errors.TileArgumentError, errors.SelfOverlapError) if as_output \
                    else (errors.TileArgumentError,)
                assert type(err) in allowed, (case, err)
                assert "kernel 'scale'" in err.message and f"argument '{name}'" in err.message, \
                    (case, err.message)
                outcomes[err.message.split(":")[2].strip()[:25]] = True
            except BaseException as err:        # noqa: BLE001 - the point of the test
                raise AssertionError(f"case {case}: {type(err).__name__}: {err}") from err
            else:
                raise AssertionError(f"case {case}: accepted {bad!r}")
        unchanged((xh, x0), (zh, z0))
    assert len(outcomes) >= 15                           # the defects reach many rules


def test_fuzz_torch_masquerades(monkeypatch):
    Tensor = _fake_torch(monkeypatch)
    r = np.random.default_rng(7)
    for case in range(200):
        xh, zh = randn(64), randn(64)
        x0, z0 = xh.copy(), zh.copy()
        kind = int(r.integers(0, 6))
        if kind == 0:
            bad = Tensor(xh, shape=(_BAD_INTS[int(r.integers(0, len(_BAD_INTS)))](r),))
        elif kind == 1:
            bad = Tensor(xh, stride=([1.0, True, "1", None, 2**62][int(r.integers(0, 5))],))
        elif kind == 2:
            bad = Tensor(xh, ptr=[xh.ctypes.data + 2, 0, -4, 2.5, 2**64][int(r.integers(0, 5))])
        elif kind == 3:
            bad = Tensor(xh, stride=[TypeError("x"), OverflowError("y"), IndexError("z"),
                                     ZeroDivisionError("w")][int(r.integers(0, 4))])
        elif kind == 4:
            bad = Tensor(xh, device=("cuda", [1.5, -2, "0", True][int(r.integers(0, 4))]))
        else:
            bad = Tensor(xh, shape=())
        for launch in (lambda: scale(bad, nt.partition(zh, 16), interpret=True),
                       lambda: scale.ptx(bad, nt.partition(zh, 16))):
            with pytest.raises(errors.TileArgumentError) as info:
                launch()
            assert type(info.value) is errors.TileArgumentError, (case, info.value)
            assert "argument 'x'" in info.value.message
        unchanged((xh, x0), (zh, z0))


def _bytes(offset, shape, strides):
    out = []
    for index in np.ndindex(*shape):
        start = offset + sum(i * s for i, s in zip(index, strides))
        out.extend(range(start, start + 4))
    return out


def test_fuzz_numpy_views_in_the_interpreter():
    """Random float32 views of a byte buffer (any offset, any byte strides, inside the buffer):
    misaligned or odd-strided ones are refused before anything runs, the others run right."""
    r = np.random.default_rng(99)
    seen = {"refused": 0, "ran": 0, "overlap": 0}
    for case in range(300):
        rank = int(r.integers(1, 3))
        shape = tuple(int(n) for n in r.integers(1, 5, rank))
        strides = tuple(int(s) for s in r.integers(-12, 13, rank))
        lo = sum(min(0, s) * (n - 1) for n, s in zip(shape, strides))
        offset = -lo + int(r.integers(0, 8))
        raw = np.zeros(512, np.uint8)
        raw[:] = r.integers(1, 255, 512)
        base = np.frombuffer(raw, np.float32, count=1, offset=offset)   # any alignment
        view = as_strided(base, shape, strides, writeable=True)
        as_output = bool(r.integers(0, 2))
        other = randn(*shape)
        x, z = (other, view) if as_output else (view, np.full(shape, np.nan, np.float32))
        before = raw.copy()
        ptr = view.__array_interface__["data"][0]
        multi = [s for n, s in zip(shape, strides) if n > 1]
        invalid = ptr % 4 != 0 or any(s % 4 for s in multi)
        addresses = _bytes(offset, shape, strides)
        self_overlap = as_output and len(addresses) != len(set(addresses))
        tile = tuple(1 for _ in shape)
        try:
            scale(x, nt.partition(z, tile), interpret=True)
        except (errors.TileArgumentError, errors.SelfOverlapError) as err:
            assert invalid or self_overlap, (case, err)
            if invalid and not (as_output and self_overlap):
                assert type(err) is errors.TileArgumentError, (case, err)
            np.testing.assert_array_equal(raw, before)
            seen["overlap" if type(err) is errors.SelfOverlapError else "refused"] += 1
        else:
            assert not invalid and not self_overlap, case
            np.testing.assert_allclose(z, 2 * x.astype(np.float64), rtol=1e-6)
            seen["ran"] += 1
    assert all(v >= 10 for v in seen.values()), seen


def test_an_ndarray_subclass_cannot_lie_about_its_flags_or_layout():
    """A subclass's ``flags`` (or shape, strides, ``__array_interface__``) are read through a
    plain ndarray view: read-only memory stays read-only whatever the subclass says."""
    class Flags:
        writeable = True

    class Lie(np.ndarray):
        @property
        def flags(self):
            return Flags()

    ro = np.frombuffer(bytes(256 * 4), np.float32)
    lie = ro.view(Lie)
    assert lie.flags.writeable and not ro.flags.writeable

    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) + 42.0)

    with pytest.raises(errors.ReadOnlyProducerError, match="argument 'z'"):
        k(np.ones(256, np.float32), nt.partition(lie, 128), 128, interpret=True)
    assert not ro.any()
