"""Coordinates of ``gather``, ``scatter`` and the atomics broadcast as operators do (NumPy's
rules), with the mask and the values: ``nt.gather(x, (r[:, None], c[None, :]))`` reads the
(BM, BN) box of rows ``r`` and columns ``c``, as Triton's ``ptr + r[:, None] * s + c[None, :]``.
Both backends, against NumPy on fresh random coordinates (some out of bounds)."""

import numpy as np
import pytest

import numba_tile as nt


@nt.jit
def gather_box(x, rows, cols, y: nt.Partition[("BM", "BN")], BM: nt.Constant,
               BN: nt.Constant):
    r = nt.load(rows, nt.bid(0), (BM,), padding=0)
    c = nt.load(cols, 0, (BN,), padding=0)
    nt.store(y, nt.gather(x, (r[:, None], c[None, :]), mask=(r >= 0)[:, None], padding=-1))


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.float64])
def test_gather_of_broadcast_coordinates(tile_backend, dtype):
    rng = np.random.default_rng()
    x = (rng.standard_normal((50, 40)) * 100).astype(dtype)
    rows = rng.integers(-3, 55, 48).astype(np.int32)
    cols = rng.integers(-2, 45, 16).astype(np.int64)
    y = tile_backend.asarray(np.zeros((48, 16), dtype))
    tile_backend.run(gather_box, tile_backend.asarray(x), tile_backend.asarray(rows),
                     tile_backend.asarray(cols), nt.partition(y, (16, 16)), 16, 16)
    inside = ((rows >= 0) & (rows < 50))[:, None] & ((cols >= 0) & (cols < 40))[None, :]
    want = np.where(inside, x[np.clip(rows, 0, 49)][:, np.clip(cols, 0, 39)], -1).astype(dtype)
    np.testing.assert_array_equal(tile_backend.to_numpy(y), want)


@nt.jit(unchecked=True)
def scatter_rows(out: nt.Mutable, rows, vals, BM: nt.Constant, BN: nt.Constant):
    r = nt.load(rows, nt.bid(0), (BM,), padding=-1)
    c = nt.arange(BN)
    v = nt.load(vals, (nt.bid(0), 0), (BM, BN), padding=0)
    nt.scatter(out, (r[:, None], c[None, :]), v, mask=(c < 12)[None, :])


@nt.jit(unchecked=True)
def add_columns(out: nt.Mutable, cols, vals, BM: nt.Constant, BN: nt.Constant):
    c = nt.load(cols, 0, (BN,), padding=-1)
    rows = nt.arange(BM) + nt.bid(0) * BM
    nt.atomic_add(out, (rows[:, None], c[None, :]), nt.load(vals, nt.bid(0), (BM,),
                                                              padding=0)[:, None])


def test_scatter_and_atomics_of_broadcast_coordinates(tile_backend):
    rng = np.random.default_rng()
    rows = rng.permutation(40).astype(np.int64)[:32]             # distinct rows
    vals = rng.standard_normal((32, 16))
    out = tile_backend.asarray(np.full((40, 16), np.nan))
    tile_backend.run(scatter_rows, out, tile_backend.asarray(rows), tile_backend.asarray(vals),
                     16, 16, grid=2, unchecked=True)
    want = np.full((40, 16), np.nan)
    want[rows, :12] = vals[:, :12]
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)

    cols = rng.permutation(24).astype(np.int32)[:16]
    v = rng.integers(-50, 50, 32).astype(np.float64)
    acc = tile_backend.asarray(np.ones((32, 24)))
    tile_backend.run(add_columns, acc, tile_backend.asarray(cols), tile_backend.asarray(v),
                     16, 16, grid=2, unchecked=True)
    want = np.ones((32, 24))
    want[:, cols] += v[:, None]
    np.testing.assert_array_equal(tile_backend.to_numpy(acc), want)


@nt.jit
def mismatched(x, rows, cols, y: nt.Partition[("BM", "BN")], BM: nt.Constant,
               BN: nt.Constant):
    r = nt.load(rows, nt.bid(0), (BM,), padding=0)
    c = nt.load(cols, 0, (BN,), padding=0)
    nt.store(y, nt.gather(x, (r[:, None], c[:, None])))


def test_coordinates_that_do_not_broadcast_are_refused():
    from numba_tile.errors import TileTypingError
    x = np.zeros((50, 40), np.float32)
    args = (x, np.zeros(16, np.int32), np.zeros(32, np.int32),
            nt.partition(np.zeros((16, 32), np.float32), (16, 32)), 16, 32)
    for launch in (lambda: mismatched(*args, interpret=True), lambda: mismatched.ptx(*args)):
        with pytest.raises(TileTypingError) as info:
            launch()
        assert "whose shapes broadcast" in str(info.value) and "(16, 1) and (32, 1)" in \
            str(info.value), str(info.value)
