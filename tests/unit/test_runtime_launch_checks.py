"""Launch-time ownership checks (runtime/launch_checks.py): A1-A4, L3, I1, E3, partitions."""

import itertools

import numpy as np
import pytest

from numba_tile.errors import (
    AliasingError,
    GridMismatchError,
    HostArrayError,
    MissingPartitionError,
    OwnershipError,
    PartitionShapeError,
    ReadOnlyProducerError,
    SelfOverlapError,
    TileArgumentError,
    UnexpectedPartitionError,
)
from numba_tile.runtime import arrays
from numba_tile.runtime.fakes import FakeDeviceArray as Dev
from numba_tile.runtime.launch_checks import (
    BoundArray,
    ParamSpec,
    bind_arrays,
    launch_grid,
    user_call_site,
)
from numba_tile.runtime.partition import partition

ADD = [ParamSpec("x", "tensor"), ParamSpec("y", "tensor"), ParamSpec("z", "partition")]
SITE = (__file__, 1)


def bind(specs, values, allow_host=False, call_site=SITE):
    return bind_arrays("add", specs, values, allow_host=allow_host, call_site=call_site)


def _brute_overlap(p: np.ndarray, q: np.ndarray) -> bool:
    def addrs(v):
        return {v.ctypes.data + sum(i * s for i, s in zip(idx, v.strides)) + k
                for idx in np.ndindex(*v.shape) for k in range(v.itemsize)}
    return bool(addrs(p) & addrs(q))


def _assert_names(exc, *names):
    text = str(exc.value)
    for n in names:
        assert f"'{n}'" in text, text
    assert exc.value.rule and exc.value.rule in text
    assert exc.value.filename == SITE[0] and exc.value.lineno == SITE[1]


# -- A1: transpose aliasing ------------------------------------------------------------------------

def test_a1_output_aliasing_transposed_input_raises_naming_both():
    x = np.arange(16, dtype=np.int64).reshape(4, 4)
    assert _brute_overlap(x, x.T)
    with pytest.raises(AliasingError) as info:
        bind(ADD, [Dev(x), Dev(x.T), partition(Dev(x), (4, 4))])
    _assert_names(info, "z", "x")
    with pytest.raises(AliasingError) as info:
        bind(ADD, [Dev(np.zeros((4, 4), np.int64)), Dev(x.T), partition(Dev(x), (4, 4))])
    _assert_names(info, "z", "y")


def test_a1_two_read_only_views_are_legal():
    x = np.arange(16, dtype=np.int64).reshape(4, 4)
    out = np.zeros((4, 4), np.int64)
    bound = bind(ADD, [Dev(x), Dev(x.T), partition(Dev(out), (2, 2))])
    assert [b.spec.name for b in bound] == ["x", "y", "z"]
    assert all(isinstance(b, BoundArray) for b in bound)
    assert bound[1].array.strides == x.T.strides
    assert bound[2].tile_shape == (2, 2)
    assert launch_grid(bound) == (2, 2)


# -- A2: shifted and interleaved views -------------------------------------------------------------

def test_a2_shifted_views_raise():
    buf = np.zeros(16, np.float32)
    specs = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    assert _brute_overlap(buf[1:], buf[:-1])
    with pytest.raises(AliasingError) as info:
        bind(specs, [Dev(buf[:-1]), partition(Dev(buf[1:]), 4)])
    _assert_names(info, "z", "x")


def test_a2_interleaved_views_accepted():
    buf = np.zeros(16, np.float32)
    specs = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    assert not _brute_overlap(buf[0::2], buf[1::2])
    bound = bind(specs, [Dev(buf[1::2]), partition(Dev(buf[0::2]), 4)])
    assert launch_grid(bound) == (2,)


def test_two_mutable_arguments_overlapping_raise():
    buf = np.zeros(16, np.float32)
    specs = [ParamSpec("a", "partition"), ParamSpec("b", "partition")]
    with pytest.raises(AliasingError) as info:
        bind(specs, [partition(Dev(buf[:8]), 4), partition(Dev(buf[7:15]), 4)])
    _assert_names(info, "a", "b")
    bind(specs, [partition(Dev(buf[:8]), 4), partition(Dev(buf[8:]), 4)])


# -- A3: self-overlap ------------------------------------------------------------------------------

def test_a3_broadcast_as_mutable_raises_and_as_input_is_fine():
    b = np.broadcast_to(np.ones(1, np.float32), (4,))
    out = np.zeros(4, np.float32)
    specs = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    with pytest.raises(SelfOverlapError) as info:
        bind(specs, [Dev(out), partition(Dev(b, readonly=False), 4)])
    _assert_names(info, "z")
    bind(specs, [Dev(b), partition(Dev(out), 4)])


def test_overlapping_strides_as_mutable_raise():
    buf = np.zeros(32, np.float32)
    win = np.lib.stride_tricks.as_strided(buf, (4, 4), (8, 4))  # rows overlap by 2 elements
    with pytest.raises(SelfOverlapError):
        bind([ParamSpec("z", "partition")], [partition(Dev(win), (2, 2))])


# -- A4: read-only producer ------------------------------------------------------------------------

def test_a4_readonly_cai_as_mutable_raises_as_input_accepted():
    host = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    specs = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    with pytest.raises(ReadOnlyProducerError) as info:
        bind(specs, [Dev(out), partition(Dev(host, readonly=True), 8)])
    _assert_names(info, "z")
    bound = bind(specs, [Dev(host, readonly=True), partition(Dev(out), 8)])
    assert bound[0].array.readonly


def test_readonly_numpy_as_mutable_in_interpreter_mode_raises():
    host = np.arange(8, dtype=np.float32)
    host.flags.writeable = False
    with pytest.raises(ReadOnlyProducerError):
        bind([ParamSpec("z", "partition")], [partition(host, 8)], allow_host=True)


# -- L3: negative strides --------------------------------------------------------------------------

def test_l3_negative_strides():
    buf = np.zeros(8, np.float32)
    x = np.arange(8, dtype=np.float32)
    specs = [ParamSpec("x", "tensor"), ParamSpec("z", "partition")]
    bound = bind(specs, [Dev(x[::-1]), partition(Dev(buf[::-1]), 4)])
    assert bound[1].array.strides == (-4,)
    assert bound[1].array.ptr == buf[::-1].ctypes.data
    # output reversed over its own input: same memory
    with pytest.raises(AliasingError):
        bind(specs, [Dev(buf), partition(Dev(buf[::-1]), 4)])
    # reversed halves: disjoint, legal; overlapping halves: error (checked against brute force)
    for lo, hi in itertools.product(range(0, 8, 3), range(3, 9, 2)):
        p, q = buf[::-1][:hi - lo], buf[lo:hi]
        if p.size == 0 or q.size == 0:
            continue
        if _brute_overlap(p, q):
            with pytest.raises(AliasingError):
                bind(specs, [Dev(q), partition(Dev(p), 4)])
        else:
            bind(specs, [Dev(q), partition(Dev(p), 4)])


# -- I1: host arrays on the GPU path ---------------------------------------------------------------

def test_i1_host_array_on_gpu_path_names_argument():
    x = np.zeros(4, np.float32)
    with pytest.raises(HostArrayError) as info:
        bind(ADD, [Dev(x), x, partition(Dev(np.zeros(4, np.float32)), 4)])
    assert "argument 'y'" in str(info.value)
    assert "interpret=True" in str(info.value)
    assert info.value.filename == SITE[0]
    bound = bind(ADD, [x, x, partition(np.zeros(4, np.float32), 4)], allow_host=True)
    assert all(b.array.is_host for b in bound)


def test_device_array_in_interpreter_mode_refused():
    with pytest.raises(TileArgumentError, match="argument 'x'.*interpreter"):
        bind(ADD, [Dev(np.zeros(4)), np.zeros(4), partition(np.zeros(4), 4)], allow_host=True)


def test_arrays_on_different_devices_refused(monkeypatch):
    """A read-only array on a device the launch's cannot read (here: no peer-to-peer path)
    is refused naming both; tests/unit/test_peer_devices.py has the rest of the rules."""
    from numba_tile.runtime import driver
    monkeypatch.setattr(driver, "can_access_peer", lambda d, p: False)
    dev1 = np.zeros(4, np.float32)
    dev0 = np.zeros(4, np.float32)
    monkeypatch.setattr(arrays, "_pointer_device",
                        lambda ptr: 1 if ptr == dev1.ctypes.data else 0)
    values = [Dev(dev0), partition(Dev(dev1), 4)]
    bind(ADD[:1] + ADD[2:], values, allow_host=None)  # inspection: devices not compared
    with pytest.raises(TileArgumentError, match="'x'.*'z'.*different devices"):
        bind(ADD[:1] + ADD[2:], values)  # not hidden by the verdict cache


def test_inspection_mode_accepts_host_and_device_arrays_but_checks_ownership():
    x = np.zeros(4, np.float32)
    bound = bind(ADD, [x, Dev(np.zeros(4, np.float32)), partition(np.zeros(4, np.float32), 4)],
                 allow_host=None)
    assert bound[0].array.is_host and not bound[1].array.is_host
    with pytest.raises(AliasingError):
        bind(ADD, [x, Dev(x), partition(x, 4)], allow_host=None)


# -- partitions ------------------------------------------------------------------------------------

def test_partition_to_read_only_parameter():
    with pytest.raises(UnexpectedPartitionError) as info:
        bind(ADD, [partition(Dev(np.zeros(4)), 4), Dev(np.zeros(4)),
                   partition(Dev(np.zeros(4)), 4)])
    _assert_names(info, "x")


def test_plain_array_to_partition_parameter():
    with pytest.raises(MissingPartitionError) as info:
        bind(ADD, [Dev(np.zeros(4)), Dev(np.zeros(4)), Dev(np.zeros(4))])
    _assert_names(info, "z")


def test_tile_shape_mismatch_and_rank():
    specs = [ParamSpec("z", "partition", tile_shape=(4, 8))]
    out = Dev(np.zeros((8, 8), np.float32))
    with pytest.raises(PartitionShapeError) as info:
        bind(specs, [partition(out, (8, 4))])
    _assert_names(info, "z")
    assert "(8, 4)" in str(info.value) and "(4, 8)" in str(info.value)
    with pytest.raises(PartitionShapeError, match="rank"):
        bind([ParamSpec("z", "partition")], [partition(out, 4)])
    bind(specs, [partition(out, (4, 8))])


def test_grid_mismatch():
    specs = [ParamSpec("a", "partition"), ParamSpec("b", "partition")]
    a, b = Dev(np.zeros((8, 8))), Dev(np.zeros((8, 16)))
    with pytest.raises(GridMismatchError) as info:
        bind(specs, [partition(a, (4, 4)), partition(b, (4, 4))])
    _assert_names(info, "a", "b")
    bound = bind(specs, [partition(a, (4, 4)), partition(b, (4, 8))])
    grid = tuple(-(-n // t) for n, t in zip((8, 8), (4, 4)))
    assert launch_grid(bound) == grid == bound[1].grid


# -- E3: zero-size arrays --------------------------------------------------------------------------

def test_e3_zero_size_arrays_raise_nothing_and_give_an_empty_grid():
    buf = np.zeros(8, np.float32)
    specs = [ParamSpec("x", "tensor"), ParamSpec("z", "partition"), ParamSpec("w", "partition")]
    bound = bind(specs, [Dev(buf[2:2]), partition(Dev(buf[2:2]), 4), partition(Dev(buf[3:3]), 8)])
    assert 0 in launch_grid(bound)


# -- other kinds, counts, call site ----------------------------------------------------------------

def test_constants_and_scalars_pass_through():
    specs = [ParamSpec("n", "scalar"), ParamSpec("BLOCK", "constant"), ParamSpec("z", "partition")]
    sentinel = object()
    bound = bind(specs, [3.5, sentinel, partition(Dev(np.zeros(4)), 4)])
    assert bound[0] == 3.5 and bound[1] is sentinel
    with pytest.raises(TileArgumentError, match="'n'"):
        bind(specs, [partition(Dev(np.zeros(4)), 4), 1, partition(Dev(np.zeros(4)), 4)])


def test_argument_count():
    with pytest.raises(TileArgumentError, match="takes 3 arguments"):
        bind(ADD, [Dev(np.zeros(4))])


def test_conversion_errors_carry_call_site():
    with pytest.raises(TileArgumentError) as info:
        bind(ADD, [[1, 2], Dev(np.zeros(4)), partition(Dev(np.zeros(4)), 4)])
    assert "argument 'x'" in str(info.value)
    assert info.value.filename == SITE[0]


def test_call_site_found_on_the_stack_when_not_given():
    with pytest.raises(OwnershipError) as info:
        bind(ADD, [Dev(np.zeros(4)), Dev(np.zeros(4)), Dev(np.zeros(4))], call_site=None)
    assert info.value.filename == __file__
    assert info.value.lineno is not None
    here = user_call_site()
    assert here is not None and here[0] == __file__


# -- validation of array interfaces (arrays.as_array_arg) ---------------------------------------

def test_malformed_interfaces_are_refused_with_kernel_name_and_call_site():
    from numba_tile.runtime.fakes import RawInterface, cai_of
    host = np.zeros(16, np.float32)
    bad = RawInterface(cai_of(host, shape=(-16,)), host)
    with pytest.raises(TileArgumentError) as info:
        bind(ADD, [bad, Dev(np.zeros(16, np.float32)), partition(Dev(np.zeros(16, np.float32)), 4)])
    assert type(info.value) is TileArgumentError
    assert info.value.message.startswith("kernel 'add': argument 'x': shape (-16,)")
    assert (info.value.filename, info.value.lineno) == SITE


def test_strides_that_are_no_whole_items_give_way_to_self_overlap_for_outputs():
    """Odd strides are refused (TileArgumentError), but a mutable array that also overlaps
    itself is reported as the ownership error: the overlap verdict works on bytes."""
    raw = np.zeros(64, np.uint8)
    overlapping = np.lib.stride_tricks.as_strided(raw.view(np.float64)[:1], (4,), (4,))
    disjoint = np.lib.stride_tricks.as_strided(raw.view(np.float32)[:1], (4,), (6,))
    x = Dev(np.zeros(4, np.float32))
    with pytest.raises(SelfOverlapError, match="'z' overlaps itself"):
        bind(ADD[:1] + ADD[2:], [Dev(np.zeros(4)), partition(Dev(overlapping), 4)])
    with pytest.raises(TileArgumentError, match="byte stride 6 on axis 0") as info:
        bind(ADD[:1] + ADD[2:], [x, partition(Dev(disjoint), 4)])
    assert type(info.value) is TileArgumentError
    with pytest.raises(TileArgumentError, match="byte stride 4 on axis 0") as info:
        bind(ADD[:1] + ADD[2:], [Dev(overlapping), partition(Dev(np.zeros(4)), 4)])  # a tensor
    assert type(info.value) is TileArgumentError


def test_partition_fields_are_checked_again_at_launch():
    p = partition(Dev(np.zeros(16, np.float32)), 4)
    object.__setattr__(p, "tile_shape", (0,))             # would divide by zero in the grid
    with pytest.raises(TileArgumentError) as info:
        bind(ADD, [Dev(np.zeros(16, np.float32)), Dev(np.zeros(16, np.float32)), p])
    assert "kernel 'add': argument 'z': the partition's tile_shape was changed" in str(info.value)
    assert (info.value.filename, info.value.lineno) == SITE
