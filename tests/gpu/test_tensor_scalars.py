"""Scalars read from read-only tensors (``x[i]``, ``x[i, j]``): the value drives branches and
loop counts (uniform across the block: every thread reads the same element); NumPy's negative
coordinates (signed types only: an unsigned coordinate is never negative); 0 outside the array;
on the GPU and in the interpreter against NumPy."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import TileTypingError


@nt.jit
def scaled_if_positive(x, flags, z: nt.Partition["B"], B: nt.Constant):
    f = flags[nt.bid(0)]                     # one flag per block
    if f > 0:
        nt.store(z, nt.load_like(x, z) * f)
    else:
        nt.store(z, nt.load_like(x, z) - 1.0)


def test_a_scalar_per_block_drives_a_branch(tile_backend):
    rng = np.random.default_rng()
    n = 1000 + int(rng.integers(1, 20))
    xh = rng.standard_normal(n).astype(np.float32)
    nblocks = -(-n // 128)
    flags = rng.choice([-2.0, 0.0, 0.5, 3.0], nblocks).astype(np.float32)
    z = tile_backend.asarray(np.zeros(n, np.float32))
    tile_backend.run(scaled_if_positive, tile_backend.asarray(xh), tile_backend.asarray(flags),
                     nt.partition(z, 128), 128)
    f = np.repeat(flags, 128)[:n].astype(np.float64)
    want = np.where(f > 0, xh * f, xh.astype(np.float64) - 1.0)
    np.testing.assert_allclose(tile_backend.to_numpy(z), want, rtol=1e-6, atol=1e-6)


@nt.jit
def segment_sums(x, lens, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    """Row block b adds lens[b] shifted copies of x's tile: a loop count read from memory."""
    acc = nt.zeros((R, C), nt.float32)
    for _ in range(lens[nt.bid(0)]):
        acc = acc + nt.load_like(x, z, padding=0.0)
    nt.store(z, acc)


def test_a_loop_count_read_from_a_tensor(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal((70, 32)).astype(np.float32)
    lens = rng.integers(0, 5, 5).astype(np.int32)
    z = tile_backend.asarray(np.full((70, 32), np.nan, np.float32))
    tile_backend.run(segment_sums, tile_backend.asarray(xh), tile_backend.asarray(lens),
                     nt.partition(z, (16, 32)), 16, 32)
    want = xh.astype(np.float64) * np.repeat(lens, 16)[:70, None]
    np.testing.assert_allclose(tile_backend.to_numpy(z), want, rtol=1e-5, atol=1e-5)


@nt.jit
def pick(x, i, j, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[i, j])


@pytest.mark.parametrize("dt", [np.float32, np.float16, BFLOAT16_NP, np.int32, np.int8, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_2d_elements_negative_and_out_of_range_coordinates(tile_backend, dt):
    rng = np.random.default_rng()
    xh = rng.integers(-9, 10, (7, 5)).astype(np.float64).astype(dt)
    for i, j in [(0, 0), (6, 4), (-1, -1), (-7, 2), (3, -5), (7, 0), (0, 5), (-8, 0),
                 (0, -6), (2**40, 1), (-(2**40), 1)]:
        z = tile_backend.asarray(np.full(128, np.nan, np.float32))
        tile_backend.run(pick, tile_backend.asarray(xh), i, j, nt.partition(z, 128), 128)
        inside = -7 <= i < 7 and -5 <= j < 5
        want = float(xh[i, j].astype(np.float64)) if inside else 0.0
        np.testing.assert_array_equal(tile_backend.to_numpy(z), np.full(128, want, np.float32),
                                      err_msg=f"x[{i}, {j}]")


@nt.jit
def gather_by_block(x, idx, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[idx[nt.bid(0)]])


@pytest.mark.parametrize("it", [np.uint8, np.uint16, np.uint32, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_unsigned_coordinates_never_count_from_the_end(tile_backend, it):
    # an unsigned coordinate with its top bit set is a large positive one (outside the array:
    # 0), never NumPy's negative index: a uint64 of 2**64 - 1 is not x[-1]
    rng = np.random.default_rng()
    n = int(rng.integers(20, 40))
    xh = rng.integers(1, 100, n).astype(np.float32)
    top = 2 ** (np.dtype(it).itemsize * 8)
    nblocks = 24
    coords = [int(c) for c in rng.integers(0, n, nblocks // 2)] + \
        [top - int(k) for k in rng.integers(1, n + 1, nblocks // 2 - 1)] + [top // 2]
    idx = np.array(coords, dtype=it)
    z = tile_backend.asarray(np.full(nblocks * 128, np.nan, np.float32))
    tile_backend.run(gather_by_block, tile_backend.asarray(xh), tile_backend.asarray(idx),
                     nt.partition(z, 128), 128)
    want = np.array([xh[c] if c < n else 0.0 for c in coords], np.float32)
    np.testing.assert_array_equal(tile_backend.to_numpy(z).reshape(nblocks, 128),
                                  np.repeat(want[:, None], 128, 1))


@nt.jit
def element_at_constant(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[C])


def test_constant_coordinates_of_2_to_the_63_or_more_are_past_the_end(tile_backend):
    # a Constant from 2**63 to 2**64 - 1 is typed uint64: outside the array, not from its end
    rng = np.random.default_rng()
    n = int(rng.integers(5, 30))
    xh = rng.integers(1, 100, n).astype(np.float32)
    for c in (2**64 - int(rng.integers(1, n + 1)), 2**63, np.uint64(2**64 - 1),
              int(rng.integers(0, n))):
        z = tile_backend.asarray(np.full(128, np.nan, np.float32))
        tile_backend.run(element_at_constant, tile_backend.asarray(xh), nt.partition(z, 128),
                         128, c)
        want = xh[int(c)] if int(c) < n else 0.0
        np.testing.assert_array_equal(tile_backend.to_numpy(z), np.full(128, want, np.float32),
                                      err_msg=f"x[{c!r}]")


@nt.jit
def read_partition(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + z[0])


@nt.jit
def wrong_arity(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + x[0, 1])


def test_a_partition_element_and_a_wrong_arity_are_refused():
    x, z = np.zeros(256, np.float32), np.zeros(256, np.float32)
    with pytest.raises(TileTypingError, match="read-only tensor.*partition 'z'"):
        read_partition(x, nt.partition(z, 128), 128, interpret=True)
    with pytest.raises(TileTypingError, match="1 integer coordinate"):
        wrong_arity(x, nt.partition(z, 128), 128, interpret=True)


def test_the_element_read_compiles_to_a_guarded_load():
    x = np.zeros((7, 5), np.float32)
    ptx = pick.ptx(x, 1, 2, nt.partition(np.zeros(128, np.float32), 128), 128)
    assert "ld.global" in ptx and "setp" in ptx
