"""``load_at`` with a uint64 offset (a scalar argument or read from a tensor): the offset is the
int64 of the same bits, as the lowering casts it (2**64 - 3 is -3: the window starts 3 before the
array), in the interpreter as on the GPU. The GPU twin is
tests/gpu/test_load_at_uint64_offsets.py."""

import numpy as np
import pytest

import numba_tile as nt


@nt.jit
def _load_at_u64(x, z: nt.Partition["B"], r, B: nt.Constant):
    nt.store(z, nt.load_at(x, (np.uint64(r),), (B,), padding=-1.0))


@nt.jit
def _load_at_from_u64_tensor(x, offs, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_at(x, (offs[0],), (B,), padding=-1.0))


def _window(x, o, n, pad):
    return np.array([x[o + i] if 0 <= o + i < len(x) else pad for i in range(n)], x.dtype)


@pytest.mark.parametrize("r", [-3, -1, -(2 ** 63), 5])
def test_load_at_uint64_offset_is_the_int64_the_lowering_casts_it_to(r):
    """Not the Python int 2**64 - 3 (a window of padding only)."""
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(8, np.float32)
    _load_at_u64(x, nt.partition(out, 8), r, 8, interpret=True)
    np.testing.assert_array_equal(out, _window(x, r, 8, -1.0))
    out = np.zeros(8, np.float32)
    offs = np.array([r % (1 << 64)], np.uint64)
    _load_at_from_u64_tensor(x, offs, nt.partition(out, 8), 8, interpret=True)
    np.testing.assert_array_equal(out, _window(x, r, 8, -1.0))
