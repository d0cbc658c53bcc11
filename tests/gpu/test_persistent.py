"""Persistent (mapped) partitions: a fixed number of blocks iterate their tiles through
branded indices minted by tiles(z); loops over a read-only tensor's tile count."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import ForeignTileStoreError, TileTypingError


@nt.jit
def persistent_saxpy(alpha, x, y, z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        t = alpha * nt.load_like(x, z, index=idx) + nt.load(y, idx, (B,))
        nt.store(z, t, idx)


@pytest.mark.parametrize("blocks", [1, 3, 7, 132, 1000])
@pytest.mark.parametrize("n", [1, 5000, 1 << 16])
def test_persistent_saxpy(tile_backend, blocks, n):
    rng = np.random.default_rng()
    xh = rng.standard_normal(n).astype(np.float32)
    yh = rng.standard_normal(n).astype(np.float32)
    z = tile_backend.asarray(np.full(n, np.nan, np.float32))
    tile_backend.run(persistent_saxpy, 1.5, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(z, 256, blocks=blocks), 256)
    np.testing.assert_allclose(tile_backend.to_numpy(z), 1.5 * xh.astype(np.float64) + yh,
                               rtol=1e-6, atol=1e-6)


@nt.jit
def persistent_2d(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(z):
        own = nt.load(z, idx)                       # the partition's own tile at idx
        nt.store(z, own + nt.load_like(x, z, index=idx) * 2.0, idx)


def test_persistent_2d_reads_its_own_tiles(tile_backend):
    rng = np.random.default_rng()
    shape = (100, 130)
    xh = rng.standard_normal(shape).astype(np.float32)
    zh = rng.standard_normal(shape).astype(np.float32)
    z = tile_backend.asarray(zh)
    tile_backend.run(persistent_2d, tile_backend.asarray(xh),
                     nt.partition(z, (16, 32), blocks=5), 16, 32)
    np.testing.assert_allclose(tile_backend.to_numpy(z), zh + 2.0 * xh, rtol=1e-6, atol=1e-6)


@nt.jit
def strip_sum(x, out: nt.Partition[("BM", "BK")], BM: nt.Constant, BK: nt.Constant):
    i = nt.bid(0)
    acc = nt.zeros((BM, BK), nt.float32)
    for k in range(nt.num_tiles(x, 1, BK)):         # every column tile of x's row strip
        acc = acc + nt.load(x, (i, k), (BM, BK), padding=0)    # the last one padded with zeros
    nt.store(out, acc)


@pytest.mark.parametrize("cols", [1, 64, 100, 1000])
def test_loop_over_tile_count_of_a_tensor(tile_backend, cols):
    rng = np.random.default_rng()
    rows, bm, bk = 50, 16, 64
    xh = rng.standard_normal((rows, cols)).astype(np.float32)
    out = tile_backend.asarray(np.zeros((rows, bk), np.float32))
    tile_backend.run(strip_sum, tile_backend.asarray(xh), nt.partition(out, (bm, bk)), bm, bk)
    padded = np.zeros((rows, -(-cols // bk) * bk))
    padded[:, :cols] = xh
    ref = padded.reshape(rows, -1, bk).sum(axis=1)
    np.testing.assert_allclose(tile_backend.to_numpy(out), ref, rtol=1e-5, atol=1e-5)


# -------------------------------------------------------------- branded indices refused

@nt.jit
def store_with_other_brand(x, z: nt.Partition, w: nt.Partition):
    for idx in nt.tiles(w):
        nt.store(z, nt.load_like(x, z), idx)


@nt.jit
def store_with_hand_built_index(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z), (nt.bid(0),))


@nt.jit
def store_with_laundered_index(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), idx + 1)


@nt.jit
def mapped_without_index(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z))


@nt.jit
def read_other_partition_tile(x, z: nt.Partition, w: nt.Partition):
    for idx in nt.tiles(w):
        nt.store(w, nt.load(z, idx), idx)


def args(mapped_blocks=None):
    x = np.ones(1000, np.float32)
    z = np.zeros(1000, np.float32)
    return x, z, nt.partition(z, 256, blocks=mapped_blocks)


def test_index_of_another_partition_is_refused():
    x, z, zp = args()
    w = np.zeros(1000, np.float32)
    with pytest.raises(ForeignTileStoreError, match="index of partition 'w'.*tiles\\(z\\)"):
        store_with_other_brand(x, zp, nt.partition(w, 256), interpret=True)
    assert not z.any()


def test_hand_built_index_is_refused():
    x, z, zp = args()
    with pytest.raises(ForeignTileStoreError, match="built by hand"):
        store_with_hand_built_index(x, zp, interpret=True)


def test_laundered_index_is_refused():
    x, z, zp = args()
    with pytest.raises(TileTypingError):
        store_with_laundered_index(x, zp, interpret=True)


def test_mapped_partition_needs_an_index():
    x, z, zp = args(mapped_blocks=4)
    with pytest.raises(TileTypingError, match="mapped"):
        mapped_without_index(x, zp, interpret=True)


def test_reading_another_partitions_tiles_is_refused():
    x, z, zp = args()
    w = np.zeros(1000, np.float32)
    with pytest.raises(TileTypingError, match="index from tiles\\(z\\)"):
        read_other_partition_tile(x, zp, nt.partition(w, 256), interpret=True)


def test_mapped_partitions_must_agree_on_blocks():
    @nt.jit
    def two(x, a: nt.Partition, b: nt.Partition):
        for idx in nt.tiles(a):
            nt.store(a, nt.load_like(x, a, index=idx), idx)
        for idx in nt.tiles(b):
            nt.store(b, nt.load_like(x, b, index=idx), idx)

    x = np.ones(1000, np.float32)
    a, b = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    with pytest.raises(nt.errors.GridMismatchError):
        two(x, nt.partition(a, 256, blocks=4), nt.partition(b, 256, blocks=5), interpret=True)
    two(x, nt.partition(a, 256, blocks=4), nt.partition(b, 128, blocks=4), interpret=True)
    assert (a == 1).all() and (b == 1).all()


@nt.jit
def index_after_the_loop(z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        last = idx
    nt.store(z, 1.0, last)      # blocks that got no tile have no valid index: nothing happens


def test_an_index_from_a_loop_that_never_ran_writes_nothing(tile_backend):
    """With more blocks than tiles, a block whose loop never ran holds an invalid index, not a
    zero-initialized one (which would store into tile 0, racing with block 0): the store does
    nothing. The interpreter gives it the same invalid index (no UnboundLocalError)."""
    z = tile_backend.asarray(np.full(40, 7.0, np.float32))
    tile_backend.run(index_after_the_loop, nt.partition(z, 8, blocks=7), 8)  # 5 tiles, 7 blocks
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.ones(40, np.float32))
