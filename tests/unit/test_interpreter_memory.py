"""The interpreter runs on the memory the launch checks validated, and writes outputs only when
every block succeeded."""

from __future__ import annotations

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import errors

RNG = np.random.default_rng()


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@nt.jit
def double(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 2.0)


class ShiftyProducer:
    """A host DLPack producer that exports a different buffer on every call after the first:
    what a launch checks must be what the kernel writes."""

    def __init__(self, *buffers):
        self.buffers, self.calls = list(buffers), 0

    def __dlpack_device__(self):
        return self.buffers[0].__dlpack_device__()

    def __dlpack__(self, **kwargs):
        buf = self.buffers[min(self.calls, len(self.buffers) - 1)]
        self.calls += 1
        return buf.__dlpack__(**kwargs)


def test_a_dlpack_output_is_exported_once_and_that_memory_is_written():
    x, first, second = randn(40), np.zeros(40, np.float32), np.zeros(40, np.float32)
    out = ShiftyProducer(first, second)
    double(x, nt.partition(out, 16), 16, interpret=True)
    np.testing.assert_array_equal(first, x * 2)
    assert not second.any()
    assert out.calls == 1


def test_a_second_export_cannot_redirect_writes_into_an_input():
    """The second export of the output would be the input itself: the aliasing check saw the
    first export, so writing the second would write an input the checks said was disjoint."""
    x, first = randn(40), np.zeros(40, np.float32)
    x0 = x.copy()
    double(x, nt.partition(ShiftyProducer(first, x), 16), 16, interpret=True)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(first, x0 * 2)


def test_a_dlpack_input_is_read_from_the_checked_export():
    xa, xb, z = randn(40), randn(40), np.zeros(40, np.float32)
    double(ShiftyProducer(xa, xb), nt.partition(z, 16), 16, interpret=True)
    np.testing.assert_array_equal(z, xa * 2)


def test_read_only_parameters_get_read_only_views():
    from numba_tile.interpreter.runner import host_view
    from numba_tile.runtime.arrays import as_array_arg
    a = randn(3, 5)[:, ::2]
    view = host_view(as_array_arg(a, "a"), writable=False)
    assert not view.flags.writeable and view.shape == a.shape
    np.testing.assert_array_equal(view, a)
    assert np.shares_memory(view, a)


@nt.jit(unchecked=True)
def second_block_overwrites_tile_zero(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + 1.0, (0,))


def test_outputs_stay_unwritten_when_a_later_block_raises():
    """Block 0 writes tile 0, block 1 writes it again: the race detector stops block 1; the
    tile block 0 wrote must not stay half-written in the user's array."""
    x, z = randn(32), randn(32)
    z0 = z.copy()
    with pytest.raises(errors.DataRaceError):
        second_block_overwrites_tile_zero(x, nt.partition(z, 16), 16, interpret=True,
                                          unchecked=True)
    np.testing.assert_array_equal(z, z0)


@nt.jit(unchecked=True)
def scatter_then_race(idx, vals, out: nt.Mutable, z: nt.Partition["B"], B: nt.Constant):
    nt.atomic_add(out, nt.arange(B), nt.load_like(vals, z))
    nt.store(z, nt.load_like(vals, z), (0,))


def test_mutable_outputs_stay_unwritten_too():
    idx, vals, out, z = np.arange(32), randn(32), randn(16), randn(32)
    out0, z0 = out.copy(), z.copy()
    with pytest.raises(errors.DataRaceError):
        scatter_then_race(idx, vals, out, nt.partition(z, 16), 16, interpret=True,
                          unchecked=True)
    np.testing.assert_array_equal(out, out0)
    np.testing.assert_array_equal(z, z0)


def test_outputs_are_written_when_every_block_succeeds():
    x, base = randn(50), np.full(70, -1.0, np.float32)
    z = base[5:55]
    double(x, nt.partition(z, 16), 16, interpret=True)
    np.testing.assert_array_equal(z, x * 2)
    assert (base[:5] == -1).all() and (base[55:] == -1).all()


def test_a_grid_over_the_launch_limit_is_refused_in_the_interpreter_as_on_the_gpu():
    """More than 2**31 - 1 tiles: the GPU path refuses the launch, and so does the interpreter,
    before running a block or touching the arrays. (The output is a view of 2**31 + 2**16
    one-byte elements over a one-byte buffer: it is never read or written, since the launch
    is refused first.)"""
    @nt.jit
    def fill1(z: nt.Partition[(1, 1)], v):
        nt.store(z, v)

    shape = (2**16, 2**15 + 1)
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), shape, (2**15 + 1, 1))
    try:
        fill1(nt.partition(huge, (1, 1)), True, interpret=True)
    except errors.TileArgumentError as e:
        err = e
    else:
        err = None
    del huge                       # never let a report print the bogus view
    assert err is not None and "tiles exceed the 2147483647 blocks" in err.message
