"""The kernel parameter space: a launch whose parameters need more than the 32,764 bytes CUDA
gives a kernel (a group of 1,365 or more 1-d arrays) is refused before compiling, naming the
kernel, the group, its length, the bytes and the limit and what to do, at the launch line;
one byte under compiles (libNVVM's own limit is the same)."""

import sys

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError

#: CUDA 12.1+ on Volta and later (CUDA C++ Programming Guide, "Function Parameters")
PARAM_SPACE = 32764


@nt.jit(interpret=True)
def first_of(xs, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(xs[0], z, padding=0) + len(xs))


def _members(n, ndim=1):
    return tuple(np.zeros((8,) * ndim, np.float32) for _ in range(n))


@nt.jit(interpret=True)
def mixed(xs, ys, z: nt.Partition["B"], n, s, B: nt.Constant):
    nt.store(z, nt.load_like(xs[-1], z, padding=0) + ys[0][0, n] + s)


def test_the_bytes_are_the_compiled_kernels_parameters():
    # 1-d and 2-d members, an int32 scalar before a float64 one (padding): the count made before
    # compiling is the parameter buffer the launch packs
    from numba_tile.compiler import parameter_bytes
    from numba_tile.runtime.params import ParamBuffer
    rng = np.random.default_rng()
    n, m = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    z = nt.partition(np.zeros(64, np.float32), 64)
    ck = mixed.compiled(_members(n), _members(m, 2), z, 1, 2.5, 64)
    grouped = mixed._groups[(("xs", n), ("ys", m))]
    (spec,) = grouped._signatures.values()
    assert sum(parameter_bytes(spec.argtypes)) == ParamBuffer(ck.param_kinds).nbytes


@pytest.mark.parametrize("ndim", [1, 2])
def test_a_group_over_the_parameter_space_is_refused_at_the_launch(ndim):
    per = 8 * (1 + 2 * ndim)                 # pointer, extents, strides
    n = (PARAM_SPACE - 3 * 8) // per + 1     # the first length over, with z's 24 bytes
    n += int(np.random.default_rng().integers(0, 40))
    z = np.zeros(64, np.float32)
    with pytest.raises(TileArgumentError) as info:
        line = sys._getframe().f_lineno + 1
        first_of(_members(n, ndim), nt.partition(z, 64), 64)
    e = info.value
    for part in ("kernel 'first_of'", "group argument 'xs'", f"{n} members",
                 f"{n * per + 24} bytes", f"{PARAM_SPACE} bytes", "split the group", "stack"):
        assert part in e.message, (part, e.message)
    assert (e.filename, e.lineno) == (__file__, line)
    np.testing.assert_array_equal(z, 0)


def test_one_member_fewer_compiles():
    n = (PARAM_SPACE - 3 * 8) // 24          # 1364 1-d members and z: 32,760 bytes
    z = nt.partition(np.zeros(64, np.float32), 64)
    ck = first_of.compiled(_members(n), z, 64, cc=(8, 0))
    assert len(ck.param_kinds) == 3 * (n + 1)
