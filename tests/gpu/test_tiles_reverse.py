"""``tiles(z, reverse=True)`` and ``tiles(z, strip, reverse=True)``: the block's tiles, last
first (a second pass over a row starts where the first ended, in L2). The order is seen
through a running value carried across the loop, on the GPU and in the interpreter against
NumPy; the set of tiles, and so the ownership checks, are those of the forward loop."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import ForeignTileStoreError, TileTypingError


@nt.jit
def suffix_sums(x, y: nt.Partition[1, "BN"], BN: nt.Constant):
    # each tile of a row gets the sum of itself and the row's tiles after it: only a walk
    # from the last tile gives that
    for row in nt.strips(y):
        acc = nt.zeros((1, BN), nt.float32)
        for idx in nt.tiles(y, row, reverse=True):
            acc = acc + nt.load(x, idx, (1, BN), padding=0.0)
            nt.store(y, acc, idx)


@pytest.mark.parametrize("m, n, bn, blocks", [
    (7, 1000, 128, 3),      # ragged last tile, more strips than blocks
    (3, 64, 64, 5),         # one tile per strip, more blocks than strips
    (5, 130, 16, 2),        # nine tiles per strip, the last of two elements
])
def test_strip_tiles_in_reverse(tile_backend, m, n, bn, blocks):
    rng = np.random.default_rng()
    xh = rng.integers(-8, 9, (m, n)).astype(np.float32)
    y = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(suffix_sums, tile_backend.asarray(xh),
                     nt.partition(y, (1, bn), blocks=blocks), bn)
    k = -(-n // bn)
    chunks = np.pad(xh, ((0, 0), (0, k * bn - n))).reshape(m, k, bn)
    ref = np.cumsum(chunks[:, ::-1], axis=1)[:, ::-1].reshape(m, k * bn)[:, :n]
    np.testing.assert_array_equal(tile_backend.to_numpy(y), ref)


@nt.jit
def visit_order(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    # each tile gets x + the number of tiles the block visited before it
    step = 0
    for idx in nt.tiles(y, reverse=True):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) + step, idx)
        step += 1


def _tile_order(grid, blocks):
    """{tile coordinates: place in its block's reversed walk} of a row-major tiles() walk."""
    total = grid[0] * grid[1]
    out = {}
    for b in range(blocks):
        mine = list(range(b, total, blocks))[::-1]
        for k, lin in enumerate(mine):
            out[divmod(lin, grid[1])] = k
    return out


@pytest.mark.parametrize("m, n, bm, bn, blocks", [
    (50, 70, 8, 16, 4),     # 35 tiles over 4 blocks: 9, 9, 9, 8
    (16, 32, 8, 16, 7),     # 4 tiles over 7 blocks: three blocks have none
    (9, 9, 4, 4, 1),        # one block walks all 9, ragged both ways
    (40, 40, 8, 8, 25),     # 25 tiles, one each
])
def test_block_tiles_in_reverse(tile_backend, m, n, bm, bn, blocks):
    rng = np.random.default_rng()
    xh = rng.standard_normal((m, n)).astype(np.float32)
    y = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(visit_order, tile_backend.asarray(xh),
                     nt.partition(y, (bm, bn), blocks=blocks), bm, bn)
    grid = (-(-m // bm), -(-n // bn))
    steps = np.zeros((grid[0] * bm, grid[1] * bn), np.float32)
    for (i, j), k in _tile_order(grid, blocks).items():
        steps[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] = k
    np.testing.assert_array_equal(tile_backend.to_numpy(y), xh + steps[:m, :n])


@nt.jit
def run_time_reverse(x, y: nt.Partition["BM", "BN"], flag, BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(y, reverse=flag):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


def test_reverse_must_be_static():
    x, y = np.ones((8, 8), np.float32), np.zeros((8, 8), np.float32)
    with pytest.raises(TileTypingError, match='"reverse" of tiles\\(\\).*static bool'):
        run_time_reverse(x, nt.partition(y, (4, 4), blocks=2), True, 4, 4, interpret=True)
    assert not y.any()


@nt.jit
def reversed_then_strips(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(y, reverse=True):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row, reverse=True):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) * 2, idx)


def test_reversed_loops_keep_one_scheme_per_partition():
    x, y = np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32)
    with pytest.raises(ForeignTileStoreError, match="both tiles\\(y\\) and strips\\(y\\)"):
        reversed_then_strips(x, nt.partition(y, (4, 4), blocks=3), 4, 4, interpret=True)
    assert not y.any()


@nt.jit
def reversed_foreign_store(x: nt.Partition["BM", "BN"], y: nt.Partition["BM", "BN"],
                           BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(x):
        for idx in nt.tiles(x, row, reverse=True):
            nt.store(y, nt.load(x, idx, padding=0.0), idx)


def test_a_reversed_index_stores_only_its_partition():
    x, y = np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32)
    with pytest.raises(ForeignTileStoreError):
        reversed_foreign_store(nt.partition(x, (4, 4), blocks=2),
                               nt.partition(y, (4, 4), blocks=2), 4, 4, interpret=True)
    assert not y.any()
