"""The failure cases of ``shared/cases/README.md`` (A1-A5, L1-L3, E1, E3, T1, I1) and the
launch-time ownership errors, on the GPU and in the interpreter.

Every test that launches a kernel takes the ``tile_backend`` fixture, so it runs twice: on the GPU
(skipped without one) and in the interpreter. Expected values are computed with NumPy from the
inputs, except where the case itself states them (L1's ``buf``, L2's ``base.sum() == 540``, L3's
reversed values, E1's guard values ``-1``).

Views of device arrays (transposes, shifted, strided, reversed and stride-0 views) are built the
same way for every device producer: the view is taken of a host stand-in of the base array to learn
its offset, shape and strides, and exported as a :class:`DeviceView` (a CUDA Array Interface over
the base array's device memory). In the interpreter the view is the NumPy view itself.

Error tests check the error class, that the message names the parameter(s), that the error points
at the user's launch line (for launch errors) and that the output is unchanged: every launch-time
check runs before any work.
"""

import gc

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import errors
from numba_tile.runtime.fakes import FakeDeviceArray

# ----------------------------------------------------------------------------- helpers


def marker_line(marker: str) -> int:
    """1-based line of this file that ends with the comment ``# <marker>``."""
    with open(__file__) as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, f"marker {marker!r} found on lines {hits}"
    return hits[0]


class DeviceView:
    """A view of a device array, exported through the CUDA Array Interface (v3).

    Args:
        base: the device array (CuPy, Numba, PyTorch: anything with ``__cuda_array_interface__``);
            kept alive by the view.
        offset: byte offset of the view's element ``[0, ..., 0]`` from the base's.
        shape: the view's extents.
        strides: the view's byte strides (may be negative or 0).
        readonly: the ``data[1]`` flag exported (the producer's read-only mark).
    """

    def __init__(self, base, offset: int, shape: tuple, strides: tuple, readonly: bool = False):
        cai = base.__cuda_array_interface__
        self.base = base
        self.shape = tuple(shape)
        self.__cuda_array_interface__ = {
            "version": 3,
            "shape": tuple(shape),
            "strides": tuple(strides),
            "typestr": cai["typestr"],
            "data": (cai["data"][0] + offset, bool(readonly)),
            "stream": None,
        }


def view(backend, base, fn, readonly=None):
    """The view ``fn(base)`` of an array made by ``backend.asarray``.

    Args:
        backend: the ``tile_backend``.
        base: a C-contiguous array of that backend.
        fn: ``fn(a) -> view of a`` written with NumPy (slicing, ``.T``, ``reshape``,
            ``np.broadcast_to``, ``as_strided``); it must return a view, never a copy.
        readonly: True marks the view read-only (non-writeable NumPy view, or ``data[1] = True``
            on the GPU); None keeps what ``fn`` gives in the interpreter (``np.broadcast_to`` is
            read-only) and exports a writeable view on the GPU, as device producers do.
    """
    if backend.interpret:
        v = fn(base)
        assert v.size == 0 or np.shares_memory(v, base), "fn must return a view"
        if readonly:
            v = v.view()
            v.flags.writeable = False
        return v
    dtype = np.dtype(base.__cuda_array_interface__["typestr"])
    host = np.empty(base.shape, dtype)
    hv = fn(host)
    assert hv.size == 0 or np.shares_memory(hv, host), "fn must return a view"
    offset = hv.__array_interface__["data"][0] - host.__array_interface__["data"][0]
    return DeviceView(base, offset, hv.shape, hv.strides, readonly=bool(readonly))


def assert_launch_error(info, cls, *fragments):
    """The raised error is ``cls``, names every fragment, and points at this file."""
    err = info.value
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    assert isinstance(err, errors.TileError)
    msg = str(err)
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in message:\n{msg}"
    if cls.rule:
        assert cls.rule in msg
    assert err.filename == __file__, (err.filename, __file__)
    assert err.lineno is not None


# ----------------------------------------------------------------------------- kernels


@nt.jit
def add_1d(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def add_2d(x, y, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def twice_1d(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 2.0)


@nt.jit
def copy_1d(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@nt.jit
def fill_2d(value, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, value)


@nt.jit
def twice_2d(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 2.0)


@nt.jit
def plus_one_2d(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load_like(x, z) + 1.0)


@nt.jit
def two_outputs(x, z1: nt.Partition, z2: nt.Partition):
    t = nt.load_like(x, z1)
    nt.store(z1, t + 1.0)
    nt.store(z2, nt.load_like(x, z2) * 3.0)


@nt.jit
def store_into_input(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    nt.store(x, t)  # A5-store
    nt.store(z, t)


# ----------------------------------------------------------------------------- A1


def test_a1_output_aliases_input_through_transpose(tile_backend):
    """Output x (partitioned) with inputs x and x.T: AliasingError naming the output and both
    inputs it overlaps, before any work; x unchanged."""
    xh = np.arange(16, dtype=np.int64).reshape(4, 4)
    x = tile_backend.asarray(xh)
    xt = view(tile_backend, x, lambda a: a.T)
    with pytest.raises(errors.AliasingError) as info:
        tile_backend.run(add_2d, x, xt, nt.partition(x, (2, 2)), 2, 2)
    assert_launch_error(info, errors.AliasingError, "'add_2d'", "mutable argument 'z'",
                        "read-only argument 'x'", "read-only argument 'y'")
    np.testing.assert_array_equal(tile_backend.to_numpy(x), xh)


def test_a1_output_aliases_only_the_transposed_input(tile_backend):
    """Only the input that overlaps the output is named."""
    xh = np.arange(16, dtype=np.int64).reshape(4, 4)
    x = tile_backend.asarray(xh)
    w = tile_backend.asarray(np.ones((4, 4), np.int64))
    with pytest.raises(errors.AliasingError) as info:
        tile_backend.run(add_2d, w, view(tile_backend, x, lambda a: a.T), nt.partition(x, (2, 2)),
                         2, 2)
    assert_launch_error(info, errors.AliasingError, "mutable argument 'z'",
                        "read-only argument 'y'")
    assert "argument 'x'" not in str(info.value)
    np.testing.assert_array_equal(tile_backend.to_numpy(x), xh)


def test_a1_transpose_as_two_inputs_is_legal(tile_backend):
    xh = np.arange(16, dtype=np.int64).reshape(4, 4)
    x = tile_backend.asarray(xh)
    z = tile_backend.asarray(np.full((4, 4), -1, np.int64))
    tile_backend.run(add_2d, x, view(tile_backend, x, lambda a: a.T), nt.partition(z, (2, 2)), 2, 2)
    got = tile_backend.to_numpy(z)
    np.testing.assert_array_equal(got, xh + xh.T)
    assert got.sum() == 240
    np.testing.assert_array_equal(tile_backend.to_numpy(x), xh)


# ----------------------------------------------------------------------------- A2


def test_a2_shifted_views_overlap(tile_backend):
    """Output x[1:] and input x[:-1] of one buffer overlap: AliasingError, buffer unchanged."""
    bh = np.arange(10, dtype=np.float32)
    buf = tile_backend.asarray(bh)
    other = tile_backend.asarray(np.zeros(9, np.float32))
    with pytest.raises(errors.AliasingError) as info:
        tile_backend.run(add_1d, view(tile_backend, buf, lambda a: a[:-1]), other,
                         nt.partition(view(tile_backend, buf, lambda a: a[1:]), 4), 4)
    assert_launch_error(info, errors.AliasingError, "mutable argument 'z'",
                        "read-only argument 'x'")
    assert "argument 'y'" not in str(info.value)
    np.testing.assert_array_equal(tile_backend.to_numpy(buf), bh)


def test_a2_interleaved_views_are_accepted(tile_backend):
    """Output buf[0::2], input buf[1::2]: no shared element, accepted, right values."""
    rng = np.random.default_rng()
    bh = rng.standard_normal(22).astype(np.float32)
    yh = rng.standard_normal(11).astype(np.float32)
    buf = tile_backend.asarray(bh)
    tile_backend.run(add_1d, view(tile_backend, buf, lambda a: a[1::2]), tile_backend.asarray(yh),
                     nt.partition(view(tile_backend, buf, lambda a: a[0::2]), 4), 4)
    expected = bh.copy()
    expected[0::2] = bh[1::2] + yh
    np.testing.assert_array_equal(tile_backend.to_numpy(buf), expected)


# ----------------------------------------------------------------------------- A3

# broadcast_to(ones(1, float32), (4,)) as a mutable output. In the interpreter np.broadcast_to
# gives a read-only view (writeable False); on the GPU a device producer exports it writeable.
# Either way the launch checks test self-overlap before the read-only flag
# (launch_checks._check_partition), so both backends raise SelfOverlapError; the readonly
# parameter covers both flags on both backends (as_strided gives a writeable host view).


@pytest.mark.parametrize("readonly", [True, False], ids=["readonly", "writeable"])
def test_a3_stride0_output_overlaps_itself(tile_backend, readonly):
    one = tile_backend.asarray(np.ones(1, np.float32))
    if readonly:
        out = view(tile_backend, one, lambda a: np.broadcast_to(a, (4,)), readonly=True)
    else:
        out = view(tile_backend, one,
                   lambda a: np.lib.stride_tricks.as_strided(a, (4,), (0,), writeable=True))
    if tile_backend.interpret:
        assert out.strides == (0,) and out.flags.writeable is (not readonly)
    x = tile_backend.asarray(np.arange(4, dtype=np.float32))
    y = tile_backend.asarray(np.arange(4, dtype=np.float32))
    with pytest.raises(errors.OwnershipError) as info:
        tile_backend.run(add_1d, x, y, nt.partition(out, 4), 4)
    assert_launch_error(info, errors.SelfOverlapError, "mutable argument 'z' overlaps itself",
                        "(0,)")
    np.testing.assert_array_equal(tile_backend.to_numpy(one), np.ones(1, np.float32))


def test_a3_stride0_input_is_legal(tile_backend):
    rng = np.random.default_rng()
    vh = rng.standard_normal(1).astype(np.float32)
    yh = rng.standard_normal(7).astype(np.float32)
    v = tile_backend.asarray(vh)
    z = tile_backend.asarray(np.zeros(7, np.float32))
    tile_backend.run(add_1d, view(tile_backend, v, lambda a: np.broadcast_to(a, (7,))),
                     tile_backend.asarray(yh), nt.partition(z, 4), 4)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), vh[0] + yh)
    np.testing.assert_array_equal(tile_backend.to_numpy(v), vh)


# ----------------------------------------------------------------------------- A4

# A producer's read-only mark: CUDA Array Interface data = (ptr, True) on the GPU; a non-writeable
# NumPy array is the host equivalent in the interpreter.


def test_a4_readonly_output_is_refused(tile_backend):
    zh = np.arange(10, dtype=np.float32)
    z = tile_backend.asarray(zh)
    x = tile_backend.asarray(np.ones(10, np.float32))
    out = view(tile_backend, z, lambda a: a[:], readonly=True)
    with pytest.raises(errors.ReadOnlyProducerError) as info:
        tile_backend.run(add_1d, x, x, nt.partition(out, 4), 4)
    assert_launch_error(info, errors.ReadOnlyProducerError, "mutable argument 'z'",
                        "read-only by its producer")
    np.testing.assert_array_equal(tile_backend.to_numpy(z), zh)


def test_a4_readonly_input_is_accepted(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(10).astype(np.float32)
    yh = rng.standard_normal(10).astype(np.float32)
    x = tile_backend.asarray(xh)
    z = tile_backend.asarray(np.zeros(10, np.float32))
    tile_backend.run(add_1d, view(tile_backend, x, lambda a: a[:], readonly=True),
                     tile_backend.asarray(yh), nt.partition(z, 4), 4)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), xh + yh)
    np.testing.assert_array_equal(tile_backend.to_numpy(x), xh)


def test_a4_readonly_cuda_array_interface_output_is_refused_before_the_gpu():
    """A producer's ``data = (ptr, True)`` (FakeDeviceArray) as an output, on the GPU path: the
    launch checks refuse it before any GPU work, so this runs without a GPU too."""
    zh = np.arange(8, dtype=np.float32)
    xh = np.ones(8, np.float32)
    z = FakeDeviceArray(zh, readonly=True)
    assert z.__cuda_array_interface__["data"][1] is True
    with pytest.raises(errors.ReadOnlyProducerError) as info:
        add_1d(FakeDeviceArray(xh), FakeDeviceArray(xh), nt.partition(z, 4), 4, interpret=False)
    assert_launch_error(info, errors.ReadOnlyProducerError, "mutable argument 'z'",
                        "FakeDeviceArray")
    np.testing.assert_array_equal(zh, np.arange(8, dtype=np.float32))


# ----------------------------------------------------------------------------- A5


def test_a5_store_to_input_is_a_compile_time_error(tile_backend):
    xh = np.arange(8, dtype=np.float32)
    x = tile_backend.asarray(xh)
    z = tile_backend.asarray(np.zeros(8, np.float32))
    with pytest.raises(errors.StoreToReadOnlyError) as info:
        tile_backend.run(store_into_input, x, nt.partition(z, 8), 8)
    err = info.value
    assert "parameter 'x'" in err.message and "mutable" in err.message
    assert err.filename == __file__
    assert err.lineno == marker_line("A5-store")
    assert "nt.store(x, t)" in str(err)          # the report shows the user's line
    assert errors.StoreToReadOnlyError.rule in str(err)
    np.testing.assert_array_equal(tile_backend.to_numpy(x), xh)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.zeros(8, np.float32))


# ----------------------------------------------------------------------------- L1-L3


def test_l1_strided_output(tile_backend):
    a = np.arange(10.)
    b = 10 * np.arange(10.)
    buf = tile_backend.asarray(np.zeros(20))
    tile_backend.run(add_1d, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(view(tile_backend, buf, lambda v: v[::2]), 4), 4)
    expected = np.zeros(20)
    expected[::2] = a + b
    got = tile_backend.to_numpy(buf)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(
        got, [0, 0, 11, 0, 22, 0, 33, 0, 44, 0, 55, 0, 66, 0, 77, 0, 88, 0, 99, 0])


def test_l2_fill_offset_2d_view(tile_backend):
    bh = np.arange(48, dtype=np.float32).reshape(6, 8)
    base = tile_backend.asarray(bh)
    v = view(tile_backend, base, lambda a: a[2:, 1:7])
    tile_backend.run(fill_2d, 7.0, nt.partition(v, (4, 4)), 4, 4)
    got = tile_backend.to_numpy(base)
    expected = bh.copy()
    expected[2:, 1:7] = 7
    np.testing.assert_array_equal(got, expected)
    assert got.sum() == 540
    outside = np.ones((6, 8), bool)
    outside[2:, 1:7] = False
    assert outside.sum() == 24
    np.testing.assert_array_equal(got[outside], bh[outside])


def test_l2_read_offset_2d_view(tile_backend):
    bh = np.arange(48, dtype=np.float32).reshape(6, 8)
    base = tile_backend.asarray(bh)
    out = tile_backend.asarray(np.zeros((4, 6), np.float32))
    tile_backend.run(twice_2d, view(tile_backend, base, lambda a: a[2:, 1:7]),
                     nt.partition(out, (4, 4)), 4, 4)
    got = tile_backend.to_numpy(out)
    np.testing.assert_array_equal(got, bh[2:, 1:7] * 2)
    np.testing.assert_array_equal(got[0], [34, 36, 38, 40, 42, 44])
    np.testing.assert_array_equal(tile_backend.to_numpy(base), bh)


def test_l3_negative_stride_input(tile_backend):
    xh = np.arange(8, dtype=np.float32)
    x = tile_backend.asarray(xh)
    z = tile_backend.asarray(np.zeros(8, np.float32))
    tile_backend.run(twice_1d, view(tile_backend, x, lambda a: a[::-1]), nt.partition(z, 4), 4)
    got = tile_backend.to_numpy(z)
    np.testing.assert_array_equal(got, xh[::-1] * 2)
    np.testing.assert_array_equal(got, [14, 12, 10, 8, 6, 4, 2, 0])


def test_l3_negative_stride_output(tile_backend):
    buf = tile_backend.asarray(np.zeros(8, np.float32))
    src = np.arange(8, dtype=np.float32)
    tile_backend.run(copy_1d, tile_backend.asarray(src),
                     nt.partition(view(tile_backend, buf, lambda a: a[::-1]), 4), 4)
    got = tile_backend.to_numpy(buf)
    np.testing.assert_array_equal(got, src[::-1])
    np.testing.assert_array_equal(got, [7, 6, 5, 4, 3, 2, 1, 0])


def test_l3_overlap_checks_see_negative_strides(tile_backend):
    """buf[::-1] as output with buf as input overlaps; buf[3::-1] (elements 3..0) as output with
    buf[4:] as input does not."""
    bh = np.arange(8, dtype=np.float32)
    buf = tile_backend.asarray(bh)
    with pytest.raises(errors.AliasingError) as info:
        tile_backend.run(copy_1d, buf, nt.partition(view(tile_backend, buf, lambda a: a[::-1]), 4),
                         4)
    assert_launch_error(info, errors.AliasingError, "mutable argument 'z'",
                        "read-only argument 'x'")
    np.testing.assert_array_equal(tile_backend.to_numpy(buf), bh)

    tile_backend.run(copy_1d, view(tile_backend, buf, lambda a: a[4:]),
                     nt.partition(view(tile_backend, buf, lambda a: a[3::-1]), 4), 4)
    expected = bh.copy()
    expected[3::-1] = bh[4:]
    np.testing.assert_array_equal(tile_backend.to_numpy(buf), expected)


# ----------------------------------------------------------------------------- E1


def test_e1_partial_tiles_leave_guard_memory_alone(tile_backend):
    """z (10, 6) at the start of an allocation whose 64 other float32 are -1; x = arange(6)
    broadcast on the host to a stride-0 (10, 6) input (tile-to-tile broadcasting is not in this
    release); z = x + 1 with (4, 4) tiles: partial tiles on both axes."""
    alloc = tile_backend.asarray(np.full(60 + 64, -1, np.float32))
    z = view(tile_backend, alloc, lambda a: a[:60].reshape(10, 6))
    xh = np.arange(6, dtype=np.float32)
    x = tile_backend.asarray(xh)
    xb = view(tile_backend, x, lambda a: np.broadcast_to(a[None, :], (10, 6)))
    if tile_backend.interpret:
        assert xb.strides == (0, 4)
    tile_backend.run(plus_one_2d, xb, nt.partition(z, (4, 4)), 4, 4)
    got = tile_backend.to_numpy(alloc)
    np.testing.assert_array_equal(got[:60].reshape(10, 6), xh[None, :] + np.ones((10, 6)))
    i, j = np.indices((10, 6))
    np.testing.assert_array_equal(got[:60].reshape(10, 6)[i, j], j + 1)
    np.testing.assert_array_equal(got[60:], np.full(64, -1, np.float32))


# ----------------------------------------------------------------------------- E3


@pytest.mark.parametrize("shape,tile", [((0,), (4,)), ((0, 5), (4, 4)), ((5, 0), (4, 4)),
                                        ((0, 0), (2, 2))])
def test_e3_zero_size_arrays(tile_backend, shape, tile):
    """Zero elements: no work, nothing raised, sync() works, the memory around the (empty) output
    view stays as it was."""
    guard = tile_backend.asarray(np.full(16, -1.0, np.float32))
    z = view(tile_backend, guard, lambda a: a[4:4].reshape(shape))
    x = tile_backend.asarray(np.ones(shape, np.float32))
    kernel = add_1d if len(shape) == 1 else add_2d
    handle = kernel(x, x, nt.partition(z, tile), *tile, interpret=tile_backend.interpret)
    assert handle.done()
    arrays = handle.sync()
    assert arrays[2] is z
    np.testing.assert_array_equal(tile_backend.to_numpy(guard), np.full(16, -1, np.float32))


# ----------------------------------------------------------------------------- I1


def test_i1_host_arrays_on_the_gpu_path():
    """NumPy arrays launched on the GPU path raise HostArrayError naming the argument, before any
    GPU work (so this runs without a GPU); the same call in the interpreter works."""
    rng = np.random.default_rng()
    xh = rng.standard_normal(10).astype(np.float32)
    yh = rng.standard_normal(10).astype(np.float32)
    z = np.zeros(10, np.float32)
    with pytest.raises(errors.HostArrayError) as info:
        add_1d(xh, yh, nt.partition(z, 4), 4, interpret=False)
    assert isinstance(info.value, errors.TileArgumentError) and isinstance(info.value, TypeError)
    assert_launch_error(info, errors.HostArrayError, "argument 'x'", "interpret=True")
    np.testing.assert_array_equal(z, np.zeros(10, np.float32))      # no silent copy, no work

    # the argument named is the host one, wherever it is
    with pytest.raises(errors.HostArrayError) as info:
        add_1d(FakeDeviceArray(xh), yh, nt.partition(FakeDeviceArray(z), 4), 4, interpret=False)
    assert_launch_error(info, errors.HostArrayError, "argument 'y'")
    with pytest.raises(errors.HostArrayError) as info:
        add_1d(FakeDeviceArray(xh), FakeDeviceArray(yh), nt.partition(z, 4), 4, interpret=False)
    assert_launch_error(info, errors.HostArrayError, "argument 'z'")
    np.testing.assert_array_equal(z, np.zeros(10, np.float32))

    add_1d(xh, yh, nt.partition(z, 4), 4, interpret=True).sync()
    np.testing.assert_array_equal(z, xh + yh)


# ----------------------------------------------------------------------------- launch errors


def test_partition_to_read_only_parameter(tile_backend):
    xh = np.arange(10, dtype=np.float32)
    x = tile_backend.asarray(xh)
    z = tile_backend.asarray(np.zeros(10, np.float32))
    with pytest.raises(errors.UnexpectedPartitionError) as info:
        tile_backend.run(add_1d, nt.partition(x, 4), x, nt.partition(z, 4), 4)
    assert_launch_error(info, errors.UnexpectedPartitionError, "read-only parameter 'x'",
                        "received a partition")
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.zeros(10, np.float32))
    np.testing.assert_array_equal(tile_backend.to_numpy(x), xh)


def test_plain_array_to_partition_parameter(tile_backend):
    xh = np.arange(10, dtype=np.float32)
    x = tile_backend.asarray(xh)
    z = tile_backend.asarray(np.zeros(10, np.float32))
    with pytest.raises(errors.MissingPartitionError) as info:
        tile_backend.run(add_1d, x, x, z, 4)
    assert_launch_error(info, errors.MissingPartitionError, "mutable parameter 'z'",
                        "partition(array, tile_shape)")
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.zeros(10, np.float32))


@pytest.mark.parametrize("tile,fragment", [((256,), "has tile shape (256,); the kernel declares "
                                                     "(512,)"),
                                           ((16, 32), "rank-2 tile shape (16, 32)")])
def test_partition_tile_shape_mismatch(tile_backend, tile, fragment):
    xh = np.arange(1000, dtype=np.float32)
    x = tile_backend.asarray(xh)
    z = tile_backend.asarray(np.zeros(1000, np.float32))
    with pytest.raises(errors.PartitionShapeError) as info:
        tile_backend.run(add_1d, x, x, nt.partition(z, tile), 512)
    assert_launch_error(info, errors.PartitionShapeError, "partition 'z'", fragment)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.zeros(1000, np.float32))


def test_partitions_with_different_grids(tile_backend):
    xh = np.arange(100, dtype=np.float32)
    x = tile_backend.asarray(xh)
    z1 = tile_backend.asarray(np.zeros(100, np.float32))
    z2 = tile_backend.asarray(np.zeros(100, np.float32))
    with pytest.raises(errors.GridMismatchError) as info:
        tile_backend.run(two_outputs, x, nt.partition(z1, 32), nt.partition(z2, 64))
    assert_launch_error(info, errors.GridMismatchError, "partitions 'z1'", "'z2'", "grid (4,)",
                        "grid (2,)")
    np.testing.assert_array_equal(tile_backend.to_numpy(z1), np.zeros(100, np.float32))
    np.testing.assert_array_equal(tile_backend.to_numpy(z2), np.zeros(100, np.float32))


def test_partitions_with_one_grid(tile_backend):
    """Positive control of the grid rule: two partitions of different shapes and tiles but one
    grid ((1000/64) = (500/32) = 16 tiles) are both written by the same blocks."""
    rng = np.random.default_rng()
    xh = rng.standard_normal(1000).astype(np.float32)
    z1 = tile_backend.asarray(np.zeros(1000, np.float32))
    z2 = tile_backend.asarray(np.zeros(500, np.float32))
    tile_backend.run(two_outputs, tile_backend.asarray(xh), nt.partition(z1, 64),
                     nt.partition(z2, 32))
    np.testing.assert_array_equal(tile_backend.to_numpy(z1), xh + np.float32(1))
    # block b writes z2's tile b (32 elements) from x's elements at z2's tile b
    np.testing.assert_array_equal(tile_backend.to_numpy(z2), xh[:500] * np.float32(3))


# ----------------------------------------------------------------------------- T1

T1_MODULUS = 2147483647          # 2**31 - 1 (Park-Miller); t * 48271 < 2**47 stays exact in int64
T1_ROUNDS = 2048


@nt.jit
def lcg_kernel(x, y, out: nt.Partition["B"], B: nt.Constant, ROUNDS: nt.Constant):
    """out = f^ROUNDS(x) + y with f(t) = t * 48271 mod (2**31 - 1): long, exact integer work."""
    t = nt.load_like(x, out)
    for _ in range(ROUNDS):
        t = (t * 48271) % 2147483647
    nt.store(out, t + nt.load_like(y, out))


def _t1_module():
    """(name, to_device, to_host, full, new_stream) of CuPy, else PyTorch."""
    try:
        import cupy
        return ("cupy", cupy.asarray, cupy.asnumpy,
                lambda n, v: cupy.full(n, v, dtype=cupy.int64),
                lambda: cupy.cuda.Stream(non_blocking=True))
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        pytest.skip("T1 needs CuPy or PyTorch device arrays")
    return ("torch", lambda h: torch.from_numpy(h).cuda(), lambda a: a.cpu().numpy(),
            lambda n, v: torch.full((n,), v, dtype=torch.int64, device="cuda"),
            lambda: torch.cuda.Stream())


@pytest.mark.gpu
def test_t1_arrays_dropped_while_the_kernel_runs():
    """Launch a long kernel on a non-blocking stream, drop every reference to the inputs and the
    handle, collect, allocate and fill new arrays of the same size on the default stream (the
    allocator would hand back the dropped inputs' memory, and the fill is not ordered after the
    kernel), then nt.synchronize(): the output is exactly right."""
    name, to_device, to_host, full, new_stream = _t1_module()
    n = 2 ** 26
    rng = np.random.default_rng()
    xh = rng.integers(1, 65536, n, dtype=np.int64)        # reference by table lookup over x
    yh = rng.integers(-2 ** 40, 2 ** 40, n, dtype=np.int64)
    table = np.arange(65536, dtype=np.int64)
    for _ in range(T1_ROUNDS):
        table = table * 48271 % T1_MODULUS
    expected = table[xh] + yh

    block = 1024
    warm = to_device(np.ones(block, np.int64))            # compile outside the timed window
    lcg_kernel(warm, warm, nt.partition(to_device(np.zeros(block, np.int64)), block), block,
               T1_ROUNDS).sync()

    stream = new_stream()
    x, y = to_device(xh), to_device(yh)
    out = full(n, -7)
    nt.synchronize()
    if name == "cupy":
        import cupy
        cupy.cuda.Device().synchronize()
    else:
        import torch
        torch.cuda.synchronize()

    handle = lcg_kernel(x, y, nt.partition(out, block), block, T1_ROUNDS, stream=stream)
    still_running = not handle.done()
    del x, y, handle
    gc.collect()
    fresh = [full(n, v) for v in (123456789, -987654321, 42)]
    nt.synchronize()
    got = to_host(out)
    assert still_running, "the kernel finished before the references were dropped: make it longer"
    np.testing.assert_array_equal(got, expected)
    for arr, v in zip(fresh, (123456789, -987654321, 42)):
        np.testing.assert_array_equal(to_host(arr), np.full(n, v, np.int64))


# ----------------------------------------------------------------------------- E2

# One row [1, 2, 3, 4, 5] (float32) in a tile of width 8, loaded without padding=: the three
# lanes past the row are invalid, so the natural layer-norm code counts only the five real
# elements: var == 2.0, not 7.4 (three padded lanes of (0 - 3) ** 2). The same through
# elementwise ops between the load and the reductions, and for a 2-D tile at a corner.

E2_ROW = np.array([1, 2, 3, 4, 5], np.float32)


@nt.jit
def e2_variance(x, out: nt.Partition[1], N: nt.Constant, n, OP: nt.Constant):
    t = nt.load(x, (0,), (N,))
    if OP == 1:
        t = t * 2.0
    elif OP == 2:
        t = nt.exp(t)
    elif OP == 3:
        t = nt.where(t > 2.0, t, -t)
    elif OP == 4:
        t = nt.astype(t, nt.float16)
    elif OP == 5:
        t = nt.maximum(t - 1.0, 0.5) + nt.sqrt(t)
    mean = nt.sum(t, 0) / n
    var = nt.sum((t - mean) ** 2, 0) / n
    nt.store(out, var)


E2_OPS = {0: lambda v: v, 1: lambda v: v * 2, 2: np.exp, 3: lambda v: np.where(v > 2, v, -v),
          4: lambda v: v, 5: lambda v: np.maximum(v - 1, 0.5) + np.sqrt(v)}


def test_e2_padding_does_not_leak_into_the_variance(tile_backend):
    out = tile_backend.asarray(np.full(1, -1.0, np.float32))
    tile_backend.run(e2_variance, tile_backend.asarray(E2_ROW), nt.partition(out, 1), 8, 5, 0)
    var = float(tile_backend.to_numpy(out)[0])
    assert var != pytest.approx(7.4)
    assert var == 2.0


@pytest.mark.parametrize("op", list(E2_OPS), ids=["plain", "mul", "exp", "where", "astype",
                                                 "max-sqrt"])
@pytest.mark.parametrize("width", [8, 64, 1024])
def test_e2_elementwise_ops_between_load_and_reduction(tile_backend, op, width):
    out = tile_backend.asarray(np.full(1, -1.0, np.float32))
    tile_backend.run(e2_variance, tile_backend.asarray(E2_ROW), nt.partition(out, 1), width, 5,
                     op)
    v = E2_OPS[op](E2_ROW.astype(np.float64))
    ref = ((v - v.mean()) ** 2).mean()
    got = float(tile_backend.to_numpy(out)[0])
    padded = np.concatenate([v, np.full(width - 5, E2_OPS[op](np.zeros(1))[0])])
    leaked = ((padded - padded.sum() / 5) ** 2).sum() / 5        # the padded lanes counted
    assert abs(leaked - ref) > 0.1
    if op in (0, 1, 4):
        assert got == ref                      # 2.0, 8.0, 2.0: exact in float32 and float16
    else:
        assert got == pytest.approx(ref, rel=1e-5)


@nt.jit
def e2_rows_2d(x, out: nt.Partition[("BM", 1)], BM: nt.Constant, BN: nt.Constant):
    """Variance of each row of the block's (BM, BN) tile of x over its valid columns."""
    t = nt.load(x, (nt.bid(0), nt.bid(1)), (BM, BN)) * 2.0 + 1.0
    n = nt.sum(t * 0.0 + 1.0, 1, keepdims=True)           # the valid columns of each row
    mean = nt.sum(t, 1, keepdims=True) / n
    nt.store(out, nt.sum((t - mean) ** 2, 1, keepdims=True) / n)


@nt.jit
def e2_cols_2d(x, out: nt.Partition[(1, "BN")], BM: nt.Constant, BN: nt.Constant):
    """Variance of each column of the block's (BM, BN) tile of x over its valid rows."""
    t = nt.load(x, (nt.bid(0), nt.bid(1)), (BM, BN)) * 2.0 + 1.0
    n = nt.sum(t * 0.0 + 1.0, 0, keepdims=True)
    mean = nt.sum(t, 0, keepdims=True) / n
    nt.store(out, nt.sum((t - mean) ** 2, 0, keepdims=True) / n)


@pytest.mark.parametrize("axis", [1, 0])
def test_e2_2d_tile_at_a_corner(tile_backend, axis):
    """x (13, 21) in (8, 16) tiles: the corner tile (1, 1) has 5 valid rows and 5 valid
    columns. Each block stores the variance of (2 x + 1) along ``axis`` of its tile."""
    rng = np.random.default_rng()
    xh = (rng.standard_normal((13, 21)) * 3 + 2).astype(np.float32)
    u = xh.astype(np.float64) * 2 + 1
    bm, bn = 8, 16
    if axis == 1:
        out = tile_backend.asarray(np.full((13, 2), -1.0, np.float32))
        tile_backend.run(e2_rows_2d, tile_backend.asarray(xh), nt.partition(out, (bm, 1)), bm, bn)
        ref = np.stack([u[:, :bn].var(axis=1), u[:, bn:].var(axis=1)], axis=1)
    else:
        out = tile_backend.asarray(np.full((2, 21), -1.0, np.float32))
        tile_backend.run(e2_cols_2d, tile_backend.asarray(xh), nt.partition(out, (1, bn)), bm, bn)
        ref = np.stack([u[:bm].var(axis=0), u[bm:].var(axis=0)], axis=0)
    np.testing.assert_allclose(tile_backend.to_numpy(out), ref, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- N1, masked


@nt.jit
def half_sum_masked(x, out: nt.Partition[1], N: nt.Constant):
    nt.store(out, nt.sum(nt.load(x, (0,), (N,)) + 1.0, 0))


@pytest.mark.parametrize("n", [3000, 4096])
def test_n1_half_precision_sum_of_a_masked_tile(tile_backend, n):
    """N1 with masking: the sum of (x + 1) over n float16 ones in a 4096 tile is 2 n (6000 or
    8192, exact in float16): float32 accumulation (float16 stalls at 2048 + ...), and the
    4096 - n invalid lanes (1 after the + 1) are skipped."""
    out = tile_backend.asarray(np.zeros(1, np.float16))
    tile_backend.run(half_sum_masked, tile_backend.asarray(np.ones(n, np.float16)),
                     nt.partition(out, 1), 4096)
    assert float(tile_backend.to_numpy(out)[0]) == 2 * n
