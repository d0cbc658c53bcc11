"""In-place patterns on a block's own partition tiles, on the GPU and in the interpreter.

A tile's register layout depends on its dtype: a float32 tile made by ``astype`` from a
float16 load keeps float16's 8-element chunks, a float32 load has 4, and ``where`` on a bool
mask keeps the mask's layout. So a store and a re-load of one tile (or two stores, or a load
and then a store) touch many of its elements from two threads of different warps. The
lowering orders them with block barriers (``tests/compile/test_partition_ordering.py`` checks
the PTX); here the results must be program order's: the interpreter's, and a float64 NumPy
reference. Tiles of 4096 elements over 4 and 8 warps, several launches with fresh inputs; on
the GPU over 4096 tiles per launch (on an H200 without the barriers every pattern here went
wrong in thousands to millions of 84 million elements over 5 launches; the interpreter runs a
smaller array).
"""

import numpy as np
import pytest

import numba_tile as nt

TILE = 4096
LAUNCHES = 3
WARPS = [4, 8]


def _size(backend, tiles_in_interpreter=5):
    """Elements per launch: ragged (the last tile's loads are masked, no padding=), 4096 tiles
    on the GPU (many warps of many blocks in flight), a few in the interpreter."""
    return (4096 if backend.name == "gpu" else tiles_in_interpreter) * TILE + 300


def _inputs(rng, n):
    x16 = rng.standard_normal(n).astype(np.float16)
    x32 = rng.standard_normal(n).astype(np.float32)
    return x16, x32


def _f32(a):
    return a.astype(np.float32).astype(np.float64)


def store_reload(x16, x32, z: nt.Partition["B"], B: nt.Constant):
    t = nt.astype(nt.load_like(x16, z), nt.float32)      # float16's layout
    nt.store(z, t)
    u = nt.load_like(z, z)                               # float32's layout: reads the store
    nt.store(z, u + nt.load_like(x32, z))


@pytest.mark.parametrize("num_warps", WARPS)
def test_store_then_reload_in_another_layout(tile_backend, num_warps):
    k = nt.jit(num_warps=num_warps)(store_reload)
    rng = np.random.default_rng()
    n = _size(tile_backend)
    for _ in range(LAUNCHES):
        x16, x32 = _inputs(rng, n)
        z = tile_backend.asarray(np.full(n, np.nan, np.float32))
        tile_backend.run(k, tile_backend.asarray(x16), tile_backend.asarray(x32),
                         nt.partition(z, TILE), TILE)
        ref = x16.astype(np.float64) + x32.astype(np.float64)
        np.testing.assert_allclose(tile_backend.to_numpy(z), ref, rtol=1e-6, atol=1e-6)


def where_reload(m, x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.where(nt.load_like(m, z), nt.load_like(x, z), -1.0))   # the bool layout
    u = nt.load_like(z, z)
    nt.store(z, u * 2.0 + 1.0)


@pytest.mark.parametrize("num_warps", WARPS)
def test_where_store_then_reload(tile_backend, num_warps):
    k = nt.jit(num_warps=num_warps)(where_reload)
    rng = np.random.default_rng()
    n = _size(tile_backend)
    for _ in range(LAUNCHES):
        mask = rng.random(n) < 0.5
        _, x = _inputs(rng, n)
        z = tile_backend.asarray(np.full(n, np.nan, np.float32))
        tile_backend.run(k, tile_backend.asarray(mask), tile_backend.asarray(x),
                         nt.partition(z, TILE), TILE)
        ref = np.where(mask, x.astype(np.float64), -1.0) * 2.0 + 1.0
        np.testing.assert_allclose(tile_backend.to_numpy(z), ref, rtol=1e-6, atol=1e-6)


def two_stores(x16, x32, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x16, z), nt.float32))   # float16's layout
    nt.store(z, nt.load_like(x32, z) * 2.0)                    # float32's: this one stays


@pytest.mark.parametrize("num_warps", WARPS)
def test_the_second_of_two_stores_stays(tile_backend, num_warps):
    k = nt.jit(num_warps=num_warps)(two_stores)
    rng = np.random.default_rng()
    n = _size(tile_backend)
    for _ in range(LAUNCHES):
        x16, x32 = _inputs(rng, n)
        z = tile_backend.asarray(np.full(n, np.nan, np.float32))
        tile_backend.run(k, tile_backend.asarray(x16), tile_backend.asarray(x32),
                         nt.partition(z, TILE), TILE)
        np.testing.assert_array_equal(tile_backend.to_numpy(z), x32.astype(np.float64) * 2.0)


def load_then_store(x16, z: nt.Partition["B"], w: nt.Partition["B"], B: nt.Constant):
    u = nt.load_like(z, z)                                     # float32's layout
    nt.store(z, nt.astype(nt.load_like(x16, z), nt.float32))   # float16's: after the read
    nt.store(w, u)


@pytest.mark.parametrize("num_warps", WARPS)
def test_a_load_sees_the_values_before_a_later_store(tile_backend, num_warps):
    k = nt.jit(num_warps=num_warps)(load_then_store)
    rng = np.random.default_rng()
    n = _size(tile_backend)
    for _ in range(LAUNCHES):
        x16, z0 = _inputs(rng, n)
        z = tile_backend.asarray(z0)
        w = tile_backend.asarray(np.full(n, np.nan, np.float32))
        tile_backend.run(k, tile_backend.asarray(x16), nt.partition(z, TILE),
                         nt.partition(w, TILE), TILE)
        np.testing.assert_array_equal(tile_backend.to_numpy(w), z0)
        np.testing.assert_array_equal(tile_backend.to_numpy(z), _f32(x16))


def loop_accumulate(x16, z: nt.Partition["B"], R, B: nt.Constant):
    for _ in range(R):       # a step's store (float16's layout), the next step's load (float32's)
        u = nt.load_like(z, z)
        nt.store(z, nt.astype(nt.load_like(x16, z), nt.float32) + u)


@pytest.mark.parametrize("num_warps", WARPS)
def test_a_loop_reads_what_its_previous_step_stored(tile_backend, num_warps):
    k = nt.jit(num_warps=num_warps)(loop_accumulate)
    rng = np.random.default_rng()
    n = _size(tile_backend)
    steps = 6
    for _ in range(LAUNCHES):
        x16, z0 = _inputs(rng, n)
        z = tile_backend.asarray(z0)
        tile_backend.run(k, tile_backend.asarray(x16), nt.partition(z, TILE), steps, TILE)
        ref = z0.astype(np.float64) + steps * x16.astype(np.float64)
        np.testing.assert_allclose(tile_backend.to_numpy(z), ref, rtol=1e-5, atol=1e-5)


def persistent_store_reload(x16, x32, z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.astype(nt.load_like(x16, z, index=idx), nt.float32), idx)
        u = nt.load(z, idx)
        nt.store(z, u - nt.load_like(x32, z, index=idx), idx)


@pytest.mark.parametrize("num_warps", WARPS)
def test_persistent_kernel_store_then_reload(tile_backend, num_warps):
    k = nt.jit(num_warps=num_warps)(persistent_store_reload)
    rng = np.random.default_rng()
    n = _size(tile_backend, 13) - 223
    blocks = 264 if tile_backend.name == "gpu" else 4
    for _ in range(LAUNCHES):
        x16, x32 = _inputs(rng, n)
        z = tile_backend.asarray(np.full(n, np.nan, np.float32))
        tile_backend.run(k, tile_backend.asarray(x16), tile_backend.asarray(x32),
                         nt.partition(z, TILE, blocks=blocks), TILE)
        ref = x16.astype(np.float64) - x32.astype(np.float64)
        np.testing.assert_allclose(tile_backend.to_numpy(z), ref, rtol=1e-6, atol=1e-6)


def rows_store_reload(x16, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x16, z), nt.float32) * 3.0)
    u = nt.load_like(z, z)
    nt.store(z, u - nt.sum(u, axis=1, keepdims=True))


def test_2d_masked_tiles_store_then_reload(tile_backend):
    """(8, 512) tiles over a (37, 1000) array (on the GPU (16389, 1000)): ragged along both
    axes, masked loads."""
    k = nt.jit(num_warps=8)(rows_store_reload)
    rng = np.random.default_rng()
    shape = (16389 if tile_backend.name == "gpu" else 37, 1000)
    for _ in range(LAUNCHES):
        x16 = rng.standard_normal(shape).astype(np.float16)
        z = tile_backend.asarray(np.full(shape, np.nan, np.float32))
        tile_backend.run(k, tile_backend.asarray(x16), nt.partition(z, (8, 512)), 8, 512)
        t = _f32(x16.astype(np.float64) * 3.0)
        # each row's sum runs over the (8, 512) tile the element sits in, valid columns only
        ref = np.empty(shape)
        for c0 in range(0, shape[1], 512):
            blk = t[:, c0:c0 + 512]
            ref[:, c0:c0 + 512] = blk - blk.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(tile_backend.to_numpy(z), ref, rtol=1e-4, atol=1e-3)
