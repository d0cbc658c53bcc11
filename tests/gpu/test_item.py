"""nt.item: the scalar of a 1-element tile (data-dependent control flow uniform across the
block), on both backends against NumPy: early return on a reduction, a while loop counted by
one, dtypes of the result; refusals."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import TileTypingError


@nt.jit
def skip_small_rows(x, y: nt.Partition[(1, "B")], thresh, B: nt.Constant):
    t = nt.load_like(x, y, padding=0)
    if nt.item(nt.max(nt.abs(t), 1)) < thresh:         # the row's largest magnitude
        return
    nt.store(y, t / nt.item(nt.sum(t * t, 1)))


def test_early_return_on_a_reduction(tile_backend):
    rng = np.random.default_rng()
    m, n = 23, 100
    xh = rng.standard_normal((m, n)).astype(np.float32)
    xh[::3] *= 1e-3                                     # rows to skip
    y = tile_backend.asarray(np.full((m, n), -7.0, np.float32))
    tile_backend.run(skip_small_rows, tile_backend.asarray(xh), nt.partition(y, (1, 128)),
                     0.1, 128)
    x64 = xh.astype(np.float64)
    want = np.where(np.abs(x64).max(1, keepdims=True) < 0.1, -7.0,
                    x64 / (x64 * x64).sum(1, keepdims=True))
    np.testing.assert_allclose(tile_backend.to_numpy(y), want, rtol=2e-5, atol=1e-6)


@nt.jit
def doubled_until(x, counts, y: nt.Partition["B"], B: nt.Constant):
    # a while loop whose trip count comes from a tile's element
    n = nt.item(nt.load(counts, (nt.bid(0),), (1,), padding=0))
    t = nt.load_like(x, y, padding=0)
    i = 0
    while i < n:
        t = t * 2.0
        i += 1
    nt.store(y, t)


def test_a_loop_counted_by_an_element(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(5 * 64).astype(np.float32)
    counts = np.array([0, 1, 3, 2, 5], np.int32)
    y = tile_backend.asarray(np.zeros(5 * 64, np.float32))
    tile_backend.run(doubled_until, tile_backend.asarray(xh), tile_backend.asarray(counts),
                     nt.partition(y, 64), 64)
    want = xh.reshape(5, 64) * (2.0 ** counts)[:, None]
    np.testing.assert_array_equal(tile_backend.to_numpy(y), want.reshape(-1))


@nt.jit
def item_of(x, y: nt.Partition["B"], B: nt.Constant):
    v = nt.item(nt.load(x, (0,), (1,), padding=0))
    nt.store(y, nt.astype(nt.full((B,), v), nt.float32))


@pytest.mark.parametrize("dt", [np.float32, np.float16, BFLOAT16_NP, np.int32, np.uint8,
                                np.int64], ids=lambda d: np.dtype(d).name)
def test_every_thread_gets_the_element(tile_backend, dt):
    rng = np.random.default_rng()
    xh = (rng.standard_normal(256) * 50).astype(dt) if np.dtype(dt).kind == "f" else \
        rng.integers(1, 100, 256).astype(dt)
    y = tile_backend.asarray(np.zeros(256, np.float32))
    tile_backend.run(item_of, tile_backend.asarray(xh), nt.partition(y, 256), 256)
    np.testing.assert_array_equal(tile_backend.to_numpy(y),
                                  np.full(256, xh[0].astype(np.float32)))


@nt.jit
def item_of_many(x, y: nt.Partition["B"], B: nt.Constant):
    nt.store(y, nt.full((B,), nt.item(nt.load_like(x, y, padding=0))))


@nt.jit
def item_of_masked(x, y: nt.Partition["B"], B: nt.Constant):
    nt.store(y, nt.full((B,), nt.item(nt.load(x, (0,), (1,)))))


@pytest.mark.parametrize("kernel, what", [(item_of_many, "one element"),
                                          (item_of_masked, "unmasked")])
def test_refusals(kernel, what):
    x = np.zeros(64, np.float32)
    with pytest.raises(TileTypingError, match=what):
        kernel(x, nt.partition(np.zeros(64, np.float32), 64), 64, interpret=True)


def test_the_element_goes_through_shared_memory():
    x = np.zeros(256, np.float32)
    p = item_of.ptx(x, nt.partition(x.copy(), 256), 256, cc=(9, 0))
    assert "bar.sync" in p and "st.shared" in p and "ld.shared" in p
