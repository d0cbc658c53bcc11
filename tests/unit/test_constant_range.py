"""Constants of every 64-bit integer, and none beyond: a Constant from -2**63 to 2**64 - 1 (int64,
or uint64 from 2**63) compiles and runs alike on both backends' typing; one outside is refused
at the launch, naming the kernel, the Constant and the value, at the user's line (not a Numba
"Int value is too large" pointing at the decorator)."""

import sys

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError


@nt.jit(interpret=True)
def add_constant(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.load_like(x, z) + C)


@nt.jit(interpret=True)
def add_first(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.load_like(x, z) + C[0])


def _random_outside(rng):
    """An integer outside [-2**63, 2**64): just past either end, or far beyond."""
    k = int(rng.integers(0, 2**62))
    return [2**64 + k, -2**63 - 1 - k, 2**64 * (k + 1), -(2**100) - k][int(rng.integers(0, 4))]


@pytest.mark.parametrize("trial", range(4))
def test_a_constant_outside_64_bits_is_refused_at_the_launch(trial):
    rng = np.random.default_rng()
    c = _random_outside(rng)
    x = np.zeros(64, np.float32)
    z = np.zeros(64, np.float32)
    with pytest.raises(TileArgumentError) as info:
        line = sys._getframe().f_lineno + 1
        add_constant(x, nt.partition(z, 64), 64, c)
    e = info.value
    assert "kernel 'add_constant'" in e.message and "Constant 'C'" in e.message
    assert str(c) in e.message and "2**64 - 1" in e.message
    assert (e.filename, e.lineno) == (__file__, line)
    np.testing.assert_array_equal(z, 0)


def test_a_tuple_constant_holding_one_is_refused_with_its_position():
    x = np.zeros(64, np.float32)
    with pytest.raises(TileArgumentError,
                       match=r"Constant 'C' holds 18446744073709551616 at \[1\]") as info:
        line = sys._getframe().f_lineno + 1
        add_first(x, nt.partition(np.zeros(64, np.float32), 64), 64, (1, 2**64))
    assert (info.value.filename, info.value.lineno) == (__file__, line)


@nt.jit(interpret=True)
def add_widened(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x, z) + C, nt.float64))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.uint32, np.uint64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_uint64_constants_with_float_unsigned_and_bool_tiles(dt):
    # a Constant from 2**63 to 2**64 - 1 is a uint64: with a float tile it is converted to the
    # tile's dtype, with an unsigned or bool tile the sum is uint64 (wrapping), as the kernel's
    # typing says, in the interpreter too
    rng = np.random.default_rng()
    xh = rng.integers(0, 100, 64).astype(dt)
    for c in (2**63 + int(rng.integers(0, 2**63)), 2**64 - 1, 2**63):
        z = np.zeros(64, np.float64)
        add_widened(xh, nt.partition(z, 64), 64, c)
        if np.dtype(dt).kind == "f":
            want = (xh + dt(c)).astype(np.float64)
        else:
            with np.errstate(over="ignore"):
                want = (xh.astype(np.uint64) + np.uint64(c)).astype(np.float64)
        np.testing.assert_array_equal(z, want)
