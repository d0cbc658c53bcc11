"""Block-owned strips: ``strips(z)`` gives a block whole rows of tiles
of a mapped partition, ``tiles(z, strip)`` their tiles as branded indices; rows longer than a
tile (a chunked softmax), ragged edges, 3-D grids, more strips than blocks and more blocks than
strips, on the GPU and in the interpreter against NumPy in float64; the refusals."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import ForeignTileStoreError, TileTypingError


@nt.jit
def softmax_rows(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        m = nt.full((BM,), -np.inf, nt.float32)
        for k in range(nt.num_tiles(x, 1, BN)):
            t = nt.load(x, (row[0], k), (BM, BN), padding=-np.inf)
            m = nt.maximum(m, nt.max(t, 1))
        s = nt.zeros((BM,), nt.float32)
        for k in range(nt.num_tiles(x, 1, BN)):
            t = nt.load(x, (row[0], k), (BM, BN), padding=-np.inf)
            s = s + nt.sum(nt.exp(t - nt.expand_dims(m, 1)), 1)
        for idx in nt.tiles(y, row):
            t = nt.load(x, idx, (BM, BN), padding=-np.inf)
            nt.store(y, nt.exp(t - nt.expand_dims(m, 1)) / nt.expand_dims(s, 1), idx)


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("m, n, bm, bn, blocks", [
    (37, 1000, 4, 128, 5),       # 10 strips over 5 blocks, ragged both ways
    (6, 3000, 2, 256, 8),        # more blocks than strips (3): five have none
    (1, 130, 1, 64, 1),          # one row, one block
    (64, 512, 16, 512, 4),       # one tile per strip
])
def test_a_chunked_softmax_over_strips(tile_backend, m, n, bm, bn, blocks):
    rng = np.random.default_rng()
    xh = (3 * rng.standard_normal((m, n))).astype(np.float32)
    y = tile_backend.asarray(np.full((m, n), 5.0, np.float32))
    tile_backend.run(softmax_rows, tile_backend.asarray(xh),
                     nt.partition(y, (bm, bn), blocks=blocks), bm, bn)
    np.testing.assert_allclose(tile_backend.to_numpy(y), _softmax(xh.astype(np.float64)),
                               rtol=2e-5, atol=1e-7)


@nt.jit
def strip_sums(x, y: nt.Partition[1, 1, "BK"], BK: nt.Constant):
    # a 3-D grid: a strip is a (i, j) pair of leading coordinates; each of its tiles gets the
    # strip's running total
    for st in nt.strips(y):
        acc = nt.zeros((1, 1, BK), nt.float32)
        for idx in nt.tiles(y, st):
            acc = acc + nt.load(x, idx, (1, 1, BK), padding=0.0)
            nt.store(y, acc + (st[0] * 1000 + st[1]), idx)


def test_three_dimensional_strips(tile_backend):
    rng = np.random.default_rng()
    a, b, c = 3, 5, 70
    xh = rng.integers(-4, 5, (a, b, c)).astype(np.float32)
    y = tile_backend.asarray(np.zeros((a, b, c), np.float32))
    tile_backend.run(strip_sums, tile_backend.asarray(xh), nt.partition(y, (1, 1, 16), blocks=4),
                     16)
    chunks = np.pad(xh, ((0, 0), (0, 0), (0, 80 - c))).reshape(a, b, 5, 16)
    ref = np.cumsum(chunks, axis=2).reshape(a, b, 80)[:, :, :c]
    ref = ref + (np.arange(a)[:, None, None] * 1000 + np.arange(b)[None, :, None])
    np.testing.assert_array_equal(tile_backend.to_numpy(y), ref)


@nt.jit
def mixed_schemes(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for idx in nt.tiles(y):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0) * 2, idx)


@nt.jit
def unmapped(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def foreign_strip(x, w: nt.Partition["BM", "BN"], y: nt.Partition["BM", "BN"],
                  BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def store_at_strip(x, y: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(y):
        nt.store(y, nt.load(x, (row[0], 0), (BM, BN), padding=0.0), row)


@nt.jit
def one_d(x, y: nt.Partition["B"], B: nt.Constant):
    for row in nt.strips(y):
        pass


def _args(m=20, n=100):
    return np.ones((m, n), np.float32), np.zeros((m, n), np.float32)


def test_one_scheme_per_partition():
    x, y = _args()
    with pytest.raises(ForeignTileStoreError, match="both tiles\\(y\\) and strips\\(y\\)"):
        mixed_schemes(x, nt.partition(y, (4, 32), blocks=3), 4, 32, interpret=True)
    assert not y.any()                       # refused before anything ran


def test_strips_need_a_mapped_partition():
    x, y = _args()
    with pytest.raises(TileTypingError, match="mapped onto blocks"):
        unmapped(x, nt.partition(y, (4, 32)), 4, 32, interpret=True)


@nt.jit
def row_stats(x, y: nt.Partition[1, "BN"], s: nt.Partition[1, 2], BN: nt.Constant):
    # two outputs per row: y's row (a softmax) and s's row (its max and log-sum-exp), both
    # at the row of y's strip
    for row in nt.strips(y):
        t = nt.load(x, (row[0], 0), (1, BN), padding=-np.inf)
        m = nt.max(t, 1, keepdims=True)
        e = nt.exp(t - m)
        z = nt.sum(e, 1, keepdims=True)
        for idx in nt.tiles(y, row):
            nt.store(y, e / z, idx)
        for idx in nt.tiles(s, row):
            two = nt.arange(2)
            pair = nt.where(nt.reshape(two, (1, 2)) == 0, nt.broadcast_to(m, (1, 2)),
                            nt.broadcast_to(m + nt.log(z), (1, 2)))
            nt.store(s, pair, idx)


def test_a_rows_strip_indexes_another_2d_partitions_row(tile_backend):
    rng = np.random.default_rng()
    m, n = 45, 200
    xh = rng.standard_normal((m, n)).astype(np.float32)
    y = tile_backend.asarray(np.zeros((m, n), np.float32))
    s = tile_backend.asarray(np.zeros((m, 2), np.float32))
    tile_backend.run(row_stats, tile_backend.asarray(xh), nt.partition(y, (1, 256), blocks=7),
                     nt.partition(s, (1, 2), blocks=7), 256)
    x = xh.astype(np.float64)
    mx = x.max(1)
    lse = mx + np.log(np.exp(x - mx[:, None]).sum(1))
    np.testing.assert_allclose(tile_backend.to_numpy(y), _softmax(x), rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(tile_backend.to_numpy(s), np.stack([mx, lse], 1), rtol=2e-6)


@nt.jit
def strip_then_tiles(x, w: nt.Partition["BM", "BN"], y: nt.Partition["BM", "BN"],
                     BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)
    for idx in nt.tiles(y):
        nt.store(y, nt.load(x, idx, (BM, BN), padding=0.0), idx)


@nt.jit
def foreign_strip_3d(x, w: nt.Partition[1, "BM", "BN"], y: nt.Partition[1, "BM", "BN"],
                     BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)


def test_a_strip_of_another_partition_is_refused_where_rows_are_not_strips():
    x, y = _args()
    w = np.zeros_like(y)
    # 2-D: another partition's rows by that strip, but then only by strips
    with pytest.raises(ForeignTileStoreError, match="both tiles\\(y\\) and strips\\(y\\) "
                       "\\(here through tiles\\(y, strip\\) with a strip of another "
                       "partition\\)") as got:
        strip_then_tiles(x, nt.partition(w, (4, 32), blocks=3),
                         nt.partition(y, (4, 32), blocks=3), 4, 32, interpret=True)
    assert "tiles(z, strip) with a strip the block owns" in got.value.rule
    assert not y.any()


@pytest.mark.parametrize("y_heads", [20, 12, 28, 3])
def test_a_3d_strip_of_another_partition_names_the_tiles_at_its_coordinates(tile_backend,
                                                                             y_heads):
    """w's strips (2 x 5 of them) reach y's tiles at the same leading coordinates, whatever
    y's own grid: y with fewer heads has the strips past its grid store nothing (masked), y
    with more keeps the heads no strip of w names."""
    rng = np.random.default_rng()
    xh = rng.standard_normal((2, y_heads, 100)).astype(np.float32)
    w = tile_backend.asarray(np.zeros((2, 20, 100), np.float32))
    y = tile_backend.asarray(np.full((2, y_heads, 100), 7.0, np.float32))
    tile_backend.run(foreign_strip_3d, tile_backend.asarray(xh),
                     nt.partition(w, (1, 4, 32), blocks=3),
                     nt.partition(y, (1, 4, 32), blocks=3), 4, 32)
    ref = np.full_like(xh, 7.0)
    ref[:, :min(20, y_heads)] = xh[:, :min(20, y_heads)]
    np.testing.assert_array_equal(tile_backend.to_numpy(y), ref)
    assert not tile_backend.to_numpy(w).any()


@nt.jit
def two_strip_sources_3d(x, w: nt.Partition[1, "BM", "BN"], y: nt.Partition[1, "BM", "BN"],
                         BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
    for row in nt.strips(y):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0) * 2, idx)


@nt.jit
def two_foreign_sources_3d(x, v: nt.Partition[1, "BM", "BN"], w: nt.Partition[1, "BM", "BN"],
                           y: nt.Partition[1, "BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(v):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0), idx)
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, BM, BN), padding=0.0) * 2, idx)


def test_a_3d_partitions_strips_come_from_one_partition():
    """Strips over two leading axes are numbered over their own partition's grid: block b's
    strip (r, g) of w and block b's strip (r, g) of y are different strips when the grids
    differ, so y reached through both could be stored by two blocks at one tile."""
    x3 = np.ones((2, 20, 100), np.float32)
    y3 = np.zeros((2, 12, 100), np.float32)
    parts = lambda *arrays: [nt.partition(a, (1, 4, 32), blocks=3) for a in arrays]
    with pytest.raises(ForeignTileStoreError, match="strips of 'w' and of 'y'"):
        two_strip_sources_3d(x3, *parts(np.zeros_like(x3), y3), 4, 32, interpret=True)
    with pytest.raises(ForeignTileStoreError, match="strips of 'v' and of 'w'"):
        two_foreign_sources_3d(x3, *parts(np.zeros_like(x3), np.zeros_like(x3), y3), 4, 32,
                               interpret=True)
    assert not y3.any()


def test_a_strip_is_not_a_tile_index():
    x, y = _args()
    with pytest.raises(TileTypingError, match="index"):
        store_at_strip(x, nt.partition(y, (4, 32), blocks=3), 4, 32, interpret=True)


def test_a_one_dimensional_partition_has_no_strips():
    x = np.ones(100, np.float32)
    with pytest.raises(TileTypingError, match="rank 2 or more"):
        one_d(x, nt.partition(np.zeros(100, np.float32), 32, blocks=2), 32, interpret=True)
