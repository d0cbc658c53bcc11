"""Declared tile orders on the GPU and in the interpreter (``tile_backend``): block ``b`` owns
tile number ``b`` of the partition's order, ``bid`` gives its coordinates, a mapped
partition's ``tiles()`` hands block ``b`` tile numbers ``b, b + B, ...`` of the order, and
``idx[d]`` loads the inputs of a GEMM-shaped kernel. Values are checked against the Python
statement of Triton's grouped order and a float64 NumPy reference, on fresh random inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numba_tile as nt

ORDERS = ["row", nt.grouped(1), nt.grouped(3), nt.grouped(8)]


def triton_grouped(pid, m, n, group):
    num_pid_in_group = group * n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * group
    group_size_m = min(m - first_pid_m, group)
    return (first_pid_m + ((pid % num_pid_in_group) % group_size_m),
            (pid % num_pid_in_group) // group_size_m)


def expected_coords(pid, grid, order):
    if order == "row":
        return tuple(int(i) for i in np.unravel_index(pid, grid))
    return triton_grouped(pid, grid[0], grid[1], order[1])


@nt.jit
def record_bids(z: nt.Partition[("BM", "BN")], r: nt.Partition[("BM", "BN")], BM: nt.Constant,
                BN: nt.Constant):
    t = nt.full((BM, BN), 0, nt.int64) + nt.bid(0) * 1000 + nt.bid(1)
    nt.store(z, t)          # z's own tile, in z's order: holds its own coordinates
    nt.store(r, t)          # r's own tile, row-major: holds z's tile of this block


@nt.jit
def record_owner(z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(z):
        t = nt.full((BM, BN), 0, nt.int64) + nt.bid(0) * 1000000 + idx[0] * 1000 + idx[-1]
        nt.store(z, t, idx)


@nt.jit
def outer_sums(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            ta = nt.load(a, (idx[0], k), (BM, BK), padding=0.0)
            tb = nt.load(b, (k, idx[1]), (BK, BN), padding=0.0)
            acc = acc + nt.sum(ta, 1, keepdims=True) * nt.sum(tb, 0, keepdims=True)
        nt.store(c, acc, idx)


@nt.jit
def outer_sums_own(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        ta = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0.0)
        tb = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0.0)
        acc = acc + nt.sum(ta, 1, keepdims=True) * nt.sum(tb, 0, keepdims=True)
    nt.store(c, acc)


def outer_sums_reference(a, b, bk):
    a, b = a.astype(np.float64), b.astype(np.float64)
    out = np.zeros((a.shape[0], b.shape[1]))
    for k in range(0, a.shape[1], bk):
        out += a[:, k:k + bk].sum(1, keepdims=True) * b[k:k + bk, :].sum(0, keepdims=True)
    return out


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize("shape,tile", [((37, 53), (8, 8)), ((300, 200), (16, 32)),
                                        ((1000, 70), (32, 16))])
def test_bid_follows_the_declared_order(tile_backend, order, shape, tile):
    grid = tuple(-(-s // t) for s, t in zip(shape, tile))
    z = tile_backend.asarray(np.full(shape, -1, np.int64))
    r = tile_backend.asarray(np.full(shape, -1, np.int64))
    tile_backend.run(record_bids, nt.partition(z, tile, order=order), nt.partition(r, tile),
                     *tile)
    zt = tile_backend.to_numpy(z)[::tile[0], ::tile[1]]
    rt = tile_backend.to_numpy(r)[::tile[0], ::tile[1]]
    i, j = np.indices(grid)
    np.testing.assert_array_equal(zt, i * 1000 + j)
    coords = [expected_coords(pid, grid, order) for pid in range(math.prod(grid))]
    want = np.array([ci * 1000 + cj for ci, cj in coords]).reshape(grid)   # block pid's tile
    np.testing.assert_array_equal(rt, want)


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize("blocks", [1, 4, 35, 132])
def test_tiles_of_a_mapped_partition_follow_the_declared_order(tile_backend, order, blocks):
    shape, tile, grid = (37, 53), (8, 8), (5, 7)
    z = tile_backend.asarray(np.full(shape, -1, np.int64))
    tile_backend.run(record_owner, nt.partition(z, tile, blocks=blocks, order=order), *tile)
    zt = tile_backend.to_numpy(z)[::8, ::8]
    for k in range(math.prod(grid)):
        i, j = expected_coords(k, grid, order)
        assert int(zt[i, j]) == (k % blocks) * 1000000 + i * 1000 + j, (k, i, j)


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize("blocks", [None, 3, 132])
def test_gemm_shaped_kernel(tile_backend, order, blocks):
    rng = np.random.default_rng()
    m, n, k = 300, 190, 77
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    kernel = outer_sums_own if blocks is None else outer_sums
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (32, 32), blocks=blocks, order=order), 32, 32, 16)
    np.testing.assert_allclose(tile_backend.to_numpy(c), outer_sums_reference(a, b, 16),
                               rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("order", [nt.grouped(3), nt.grouped(8)], ids=str)
@pytest.mark.parametrize("blocks", [None, 7])
def test_the_gpu_assigns_tiles_to_blocks_as_the_interpreter(order, blocks):
    """Bit for bit: which block wrote which tile, on the GPU and in the interpreter."""
    from numba_tile.testing.backend import Backend
    results = []
    for name in ("gpu", "interpreter"):
        backend = Backend(name)
        z = backend.asarray(np.full((37, 53), -1, np.int64))
        if blocks is None:
            r = backend.asarray(np.full((37, 53), -1, np.int64))
            backend.run(record_bids, nt.partition(z, (8, 8), order=order),
                        nt.partition(r, (8, 8)), 8, 8)
            results.append((backend.to_numpy(z), backend.to_numpy(r)))
        else:
            backend.run(record_owner, nt.partition(z, (8, 8), blocks=blocks, order=order), 8, 8)
            results.append((backend.to_numpy(z),))
    for gpu, interp in zip(*results):
        np.testing.assert_array_equal(gpu, interp)
