"""Pipelined loads that are not matrix operands (num_stages > 1): the loop's loads travel by
cp.async through shared slots and are read back into registers, with the same padding and
valid extents as ordinary loads. Checked against NumPy float64 on the GPU and in the
interpreter (where num_stages changes nothing): ragged rows, NaN past the views, masked
and padded loads, several loads per iteration, a loop run again."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP


def _kernels(stages):
    @nt.jit(num_stages=stages)
    def row_stats(x, y, out: nt.Partition[("BM", 4)], BM: nt.Constant, BN: nt.Constant):
        """Per row: sum(x), max(x) (padding -inf), sum(x * y), count of valid x (masked)."""
        s = nt.zeros((BM, 1), nt.float32)
        m = nt.full((BM, 1), -float("inf"), nt.float32)
        d = nt.zeros((BM, 1), nt.float32)
        c = nt.zeros((BM, 1), nt.float32)
        for k in range(nt.num_tiles(x, 1, BN)):
            a = nt.astype(nt.load(x, (nt.bid(0), k), (BM, BN), padding=0), nt.float32)
            b = nt.astype(nt.load(x, (nt.bid(0), k), (BM, BN), padding=-float("inf")),
                          nt.float32)
            w = nt.astype(nt.load(y, (nt.bid(0), k), (BM, BN), padding=0), nt.float32)
            v = nt.load(x, (nt.bid(0), k), (BM, BN))                       # masked
            s = s + nt.sum(a, 1, keepdims=True)
            m = nt.maximum(m, nt.max(b, 1, keepdims=True))
            d = d + nt.sum(a * w, 1, keepdims=True)
            c = c + nt.sum(nt.filled(nt.where(v == v, 1.0, 0.0), 0.0), 1, keepdims=True)
        out_t = nt.where(nt.arange(4) == 0, s, nt.where(nt.arange(4) == 1, m, nt.where(
            nt.arange(4) == 2, d, c)))
        nt.store(out, out_t)
    return row_stats


KERNELS = {s: _kernels(s) for s in (1, 2, 3, 4)}


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("dt", [np.float32, np.float16, BFLOAT16_NP], ids=["f32", "f16", "bf16"])
def test_looped_row_statistics(tile_backend, stages, dt):
    rng = np.random.default_rng()
    bm, bn = 16, 64
    rows = int(rng.integers(bm + 1, 5 * bm))
    cols = 8 * int(rng.integers(bn // 8 + 1, 6 * bn // 8))        # rows of 16-byte multiples
    xh = np.full((rows, cols + 8), np.nan, np.float64)
    xh[:, :cols] = rng.integers(-8, 9, (rows, cols))
    xh = xh.astype(dt)
    yh = rng.integers(-3, 4, (rows, cols)).astype(dt)
    out = tile_backend.asarray(np.full((rows, 4), np.nan, np.float32))
    x_dev = tile_backend.asarray(xh)
    tile_backend.run(KERNELS[stages], x_dev[:, :cols], tile_backend.asarray(yh),
                     nt.partition(out, (bm, 4)), bm, bn)
    x64, y64 = xh[:, :cols].astype(np.float64), yh.astype(np.float64)
    ref = np.stack([x64.sum(1), x64.max(1), (x64 * y64).sum(1), np.full(rows, cols)], 1)
    np.testing.assert_array_equal(tile_backend.to_numpy(out).astype(np.float64), ref)


def test_staged_and_unstaged_give_the_same_ptx_semantics():
    """The PTX of the pipelined kernel copies with cp.async and reads the slots back; the
    one-stage kernel does neither."""
    x = np.zeros((256, 1024), np.float32)
    args = (x, x.copy(), nt.partition(np.zeros((256, 4), np.float32), (16, 4)), 16, 64)
    staged = KERNELS[3].ptx(*args)
    plain = KERNELS[1].ptx(*args)
    assert "cp.async.cg.shared.global" in staged and "cp.async.wait_group" in staged
    assert "cp.async" not in plain
    assert ".local" not in staged
