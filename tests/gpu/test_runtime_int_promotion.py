"""A runtime integer scalar promotes by its type's width on both backends (the interpreter
gives it the compiled kernel's int32 / int64): an int8 tile plus a runtime int is int64 (no
int8 wrap), an int32 tile plus a runtime int32 stays int32, and bid()-based offsets are int64."""

import numpy as np

import numba_tile as nt


@nt.jit
def add_scalar(x, z: nt.Partition["B"], c, B: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x, z) + c, nt.int64))


@nt.jit
def wrap32(x, z: nt.Partition["B"], c, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * c)          # int32 tile, int32 scalar: int32, wraps


@nt.jit
def offsets(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.bid(0) * B + nt.arange(B) + 2**31 - 1)   # int64: no int32 wrap


def test_an_int8_tile_plus_a_runtime_int_is_int64(tile_backend):
    x = np.arange(-64, 64, dtype=np.int8)
    z = tile_backend.asarray(np.zeros(128, np.int64))
    tile_backend.run(add_scalar, tile_backend.asarray(x), nt.partition(z, 128), 100, 128)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), x.astype(np.int64) + 100)


def test_an_int32_product_wraps_as_int32(tile_backend):
    x = np.array([2**20, -2**20, 3, 2**30], np.int32).repeat(32)
    z = tile_backend.asarray(np.zeros(128, np.int32))
    tile_backend.run(wrap32, tile_backend.asarray(x), nt.partition(z, 128), 4096, 128)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(tile_backend.to_numpy(z), x * np.int32(4096))


def test_block_offsets_are_int64(tile_backend):
    z = tile_backend.asarray(np.zeros(300, np.int64))
    tile_backend.run(offsets, nt.partition(z, 128), 128)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.arange(300) + 2**31 - 1)
