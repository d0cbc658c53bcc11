"""Python scalars next to tiles keep their value (no silent wrap), and nothing narrows
implicitly: stores, scalars and paddings that do not fit are refused before any work."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError, TileTypingError


@nt.jit
def compare_kernel(x, out: nt.Partition, V):
    nt.store(out, nt.load_like(x, out) < V)


@nt.jit
def max_kernel(x, out: nt.Partition, V):
    nt.store(out, nt.maximum(nt.load_like(x, out), V))


@nt.jit
def add_literal_kernel(x, out: nt.Partition):
    nt.store(out, nt.load_like(x, out) + 1099511627776)     # 2**40 in the source


@nt.jit
def full_kernel(out: nt.Partition["B"], B: nt.Constant, V: nt.Constant):
    nt.store(out, nt.full((B,), V))


@pytest.mark.parametrize("v", [2**32 + 1, -2**31 - 5, 7, 2**31 - 1])
def test_runtime_int_scalars_keep_their_value(tile_backend, v):
    rng = np.random.default_rng()
    xh = rng.integers(-2**31, 2**31 - 1, 300, dtype=np.int64).astype(np.int32)
    out = tile_backend.asarray(np.zeros(300, np.bool_))
    tile_backend.run(compare_kernel, tile_backend.asarray(xh), nt.partition(out, 64), v)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), xh.astype(np.int64) < v)
    out64 = tile_backend.asarray(np.zeros(300, np.int64))
    tile_backend.run(max_kernel, tile_backend.asarray(xh), nt.partition(out64, 64), v)
    np.testing.assert_array_equal(tile_backend.to_numpy(out64), np.maximum(xh.astype(np.int64), v))


def test_int_literal_out_of_int32_range_widens(tile_backend):
    rng = np.random.default_rng()
    xh = rng.integers(-1000, 1000, 100).astype(np.int32)
    out = tile_backend.asarray(np.zeros(100, np.int64))
    tile_backend.run(add_literal_kernel, tile_backend.asarray(xh), nt.partition(out, 32))
    np.testing.assert_array_equal(tile_backend.to_numpy(out), xh.astype(np.int64) + 2**40)


def test_full_with_a_large_int_constant_is_int64(tile_backend):
    out = tile_backend.asarray(np.zeros(40, np.int64))
    v = int(np.random.default_rng().integers(2**33, 2**50))
    tile_backend.run(full_kernel, nt.partition(out, 16), 16, v)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), np.full(40, v))


@nt.jit
def store_tile_kernel(x, out: nt.Partition):
    nt.store(out, nt.load_like(x, out))


@nt.jit
def store_scalar_kernel(out: nt.Partition, V):
    nt.store(out, V)


@nt.jit
def pad_kernel(x, out: nt.Partition["B"], B: nt.Constant, P: nt.Constant):
    nt.store(out, nt.load(x, (nt.bid(0),), (B,), padding=P))


@pytest.mark.parametrize("src,dst", [(np.int64, np.int32), (np.float32, np.float16),
                                     (np.float64, np.float32), (np.float32, np.int32),
                                     (np.float16, nt.dtypes.BFLOAT16_NP), (np.int32, np.bool_)])
def test_narrowing_stores_are_refused(src, dst):
    x = np.ones(64, src)
    out = np.full(64, 3, dst)
    with pytest.raises(TileTypingError, match="narrowing") as info:
        store_tile_kernel(x, nt.partition(out, 32), interpret=True)
    assert "'out'" in info.value.message and info.value.lineno is not None
    np.testing.assert_array_equal(out, np.full(64, 3, dst))     # nothing written


@pytest.mark.parametrize("src,dst", [(np.int32, np.int64), (np.float16, np.float32),
                                     (np.int32, np.float32), (np.bool_, np.int32)])
def test_widening_stores_are_accepted(tile_backend, src, dst):
    xh = (np.random.default_rng().standard_normal(64) * 10).astype(src)
    out = tile_backend.asarray(np.zeros(64, dst))
    tile_backend.run(store_tile_kernel, tile_backend.asarray(xh), nt.partition(out, 32))
    np.testing.assert_array_equal(tile_backend.to_numpy(out), xh.astype(dst))


@pytest.mark.parametrize("value,dst", [(1.5, np.int32), (2**40, np.int32), (7, np.bool_),
                                       (2.0, np.bool_)])
def test_scalar_stores_that_do_not_fit_are_refused(value, dst):
    out = np.zeros(16, dst)
    with pytest.raises(TileTypingError, match="holds"):
        store_scalar_kernel(nt.partition(out, 16), value, interpret=True)
    assert not out.any()


@pytest.mark.parametrize("pad,dt", [(7.5, np.int32), (float("nan"), np.int64), (2**40, np.int32),
                                    (3, np.bool_)])
def test_paddings_that_do_not_fit_are_refused(pad, dt):
    x = np.ones(10, dt)
    out = np.zeros(16, dt)
    with pytest.raises(TileTypingError, match="padding"):
        pad_kernel(x, nt.partition(out, 16), 16, pad, interpret=True)


def test_scalar_argument_beyond_64_bits_is_refused():
    out = np.zeros(16, np.int64)
    with pytest.raises(TileArgumentError, match="'V'"):
        store_scalar_kernel(nt.partition(out, 16), 2**70, interpret=True)
