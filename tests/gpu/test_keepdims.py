"""Reductions with ``keepdims=True`` along the last axis, on the GPU and in the interpreter.

Their result stays in a slice of the operand's layout, so ``x - max(x, 1, keepdims=True)``
broadcasts it back over the rows with no data movement. Here: the numerics of such row-wise
expressions (softmax, centering, division by the row sum, min/max scaling) for rows 1..16
and columns 1..1024, masked (arrays whose shape is not a multiple of the tile), in float32,
float16 and bfloat16; and the slice-layout tile used anywhere else: stored directly into an
(R, 1) partition, reduced again, or held by a variable that is a blocked tile in the other
branch of an ``if`` (unify, then a layout conversion). References are float64 NumPy.
"""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

SENTINEL = -7.0
FLOATS = [np.float32, np.float16, BFLOAT16_NP]


def dt_id(d):
    return np.dtype(d).name


def tol(dt):
    """(rtol, atol) of a result computed in float32 and rounded once to ``dt``."""
    return {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float16): (2e-3, 1e-6),
            BFLOAT16_NP: (1.6e-2, 1e-6)}[np.dtype(dt)]


@nt.jit
def rowwise_kernel(x, y: nt.Partition[("BM", "BN")], n, BM: nt.Constant, BN: nt.Constant,
                   OP: nt.Constant, DT: nt.Constant):
    t = nt.astype(nt.load_like(x, y), nt.float32)
    if OP == 0:                                                   # softmax
        e = nt.exp(t - nt.max(t, 1, keepdims=True))
        r = e / nt.sum(e, 1, keepdims=True)
    elif OP == 1:                                                 # centered
        r = t - nt.sum(t, 1, keepdims=True) / n
    elif OP == 2:                                                 # x / sum |x|
        r = t / nt.sum(nt.abs(t), 1, keepdims=True)
    else:                                                         # min-max scaling
        lo = nt.min(t, 1, keepdims=True)
        r = (t - lo) / (nt.max(t, 1, keepdims=True) - lo + 1.0)
    nt.store(y, nt.astype(r, DT))


def rowwise_reference(op, x):
    if op == 0:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if op == 1:
        return x - x.mean(axis=1, keepdims=True)
    if op == 2:
        return x / np.abs(x).sum(axis=1, keepdims=True)
    lo = x.min(axis=1, keepdims=True)
    return (x - lo) / (x.max(axis=1, keepdims=True) - lo + 1)


# (rows, cols, BM, BN): cols not a multiple of BN (masked columns) and rows not a multiple of
# BM (masked rows in the last block), from one row of one column up to 1024 columns
SHAPES = [(1, 1, 1, 1), (3, 1, 2, 1), (2, 3, 1, 4), (5, 7, 4, 8), (16, 16, 16, 16),
          (9, 33, 16, 64), (16, 100, 8, 128), (7, 513, 2, 1024), (1, 1024, 1, 1024),
          (13, 1000, 4, 1024)]
OPS = ["softmax", "centered", "over-sum", "minmax"]


#: every expression in float32; softmax and centering (the norms' patterns) in 16 bits too
DT_OPS = [(dt, op) for dt in FLOATS for op in range(len(OPS)) if dt is np.float32 or op < 2]


@pytest.mark.parametrize("dt,op", DT_OPS, ids=[f"{dt_id(d)}-{OPS[o]}" for d, o in DT_OPS])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rowwise_expressions(tile_backend, shape, dt, op):
    rows, cols, bm, bn = shape
    rng = np.random.default_rng()
    xh = (rng.standard_normal((rows, cols)) * 3 + (op == 2) * 4).astype(dt)
    y = tile_backend.asarray(np.full((rows, cols), np.nan, dt))
    tile_backend.run(rowwise_kernel, tile_backend.asarray(xh), nt.partition(y, (bm, bn)), cols,
                     bm, bn, op, np.dtype(dt).name)
    ref = rowwise_reference(op, xh.astype(np.float64))
    rtol, atol = tol(dt)
    if op == 1:           # x - mean: absolute error follows |x| (cancellation)
        atol = max(atol, rtol * float(np.abs(xh.astype(np.float64)).max()))
    np.testing.assert_allclose(tile_backend.to_numpy(y).astype(np.float64), ref, rtol=rtol,
                               atol=atol)


@nt.jit
def rowwise_in_dtype(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """Softmax without casting to float32 first: every op rounds to the tile's dtype."""
    t = nt.load_like(x, y)
    e = nt.exp(t - nt.max(t, 1, keepdims=True))
    nt.store(y, e / nt.sum(e, 1, keepdims=True))


@pytest.mark.parametrize("dt", FLOATS, ids=dt_id)
def test_softmax_in_the_tile_dtype(tile_backend, dt):
    """The reference rounds where the kernel does: every op's result to the tile's dtype (the
    sum accumulates in float32 and is rounded once)."""
    rng = np.random.default_rng()
    xh = (rng.standard_normal((11, 300)) * 2).astype(dt)
    y = tile_backend.asarray(np.full((11, 300), np.nan, dt))
    tile_backend.run(rowwise_in_dtype, tile_backend.asarray(xh), nt.partition(y, (4, 512)), 4, 512)

    def rnd(v):
        return v.astype(dt).astype(np.float64)

    x = xh.astype(np.float64)
    e = rnd(np.exp(rnd(x - x.max(axis=1, keepdims=True))))
    ref = rnd(e / rnd(e.sum(axis=1, keepdims=True)))
    rtol = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3}.get(np.dtype(dt), 1.6e-2)
    np.testing.assert_allclose(tile_backend.to_numpy(y).astype(np.float64), ref, rtol=rtol,
                               atol=1e-6)


# ------------------------------------------------------------------ the slice tile elsewhere


@nt.jit
def stats_kernel(x, y: nt.Partition[("BM", "BN")], rmax: nt.Partition[("BM", 1)],
                 rsum: nt.Partition[("BM", 1)], total: nt.Partition[(1, 1)], BM: nt.Constant,
                 BN: nt.Constant):
    t = nt.load_like(x, y)
    m = nt.max(t, 1, keepdims=True)                  # (BM, 1) in a slice layout
    nt.store(rmax, m)                                # stored directly
    s = nt.sum(t - m, 1, keepdims=True)
    nt.store(rsum, s * 2.0)                          # an elementwise op of it, stored
    nt.store(total, nt.sum(m, 0, keepdims=True))     # reduced again, along the rows
    nt.store(y, (t - m) * nt.max(m, 1, keepdims=True))   # reduced along its unit axis


@pytest.mark.parametrize("dt", [np.float32, BFLOAT16_NP], ids=dt_id)
@pytest.mark.parametrize("shape", [(13, 100, 4, 128), (5, 7, 8, 8), (16, 1000, 16, 1024),
                                   (3, 1, 2, 1)], ids=lambda s: "x".join(map(str, s)))
def test_slice_tile_stored_and_reduced(tile_backend, shape, dt):
    """x has one row fewer than the outputs: the outputs' last row is not written (and for
    (3, 1) in (2, 1) tiles the second block has no valid row at all: its total stays)."""
    rows, cols, bm, bn = shape
    rng = np.random.default_rng()
    xh = (rng.standard_normal((rows - 1, cols)) * 3).astype(dt)
    nb = -(-rows // bm)
    y = tile_backend.asarray(np.full((rows, cols), SENTINEL, dt))
    rmax = tile_backend.asarray(np.full((rows, 1), SENTINEL, dt))
    rsum = tile_backend.asarray(np.full((rows, 1), SENTINEL, np.float32))
    total = tile_backend.asarray(np.full((nb, 1), SENTINEL, np.float32))
    tile_backend.run(stats_kernel, tile_backend.asarray(xh), nt.partition(y, (bm, bn)),
                     nt.partition(rmax, (bm, 1)), nt.partition(rsum, (bm, 1)),
                     nt.partition(total, (1, 1)), bm, bn)
    x = xh.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    rtol = 1e-5 if dt is np.float32 else 1.6e-2
    got_max = tile_backend.to_numpy(rmax).astype(np.float64)
    np.testing.assert_array_equal(got_max, np.vstack([m, [[SENTINEL]]]))    # a max is exact
    got_sum = tile_backend.to_numpy(rsum)
    np.testing.assert_allclose(got_sum[:-1], 2 * (x - m).sum(axis=1, keepdims=True), rtol=rtol,
                               atol=rtol * 10)
    assert got_sum[-1, 0] == SENTINEL
    block_totals = [m[b * bm:(b + 1) * bm].sum() if b * bm < rows - 1 else SENTINEL
                    for b in range(nb)]
    np.testing.assert_allclose(tile_backend.to_numpy(total)[:, 0], block_totals, rtol=rtol,
                               atol=rtol)
    got_y = tile_backend.to_numpy(y).astype(np.float64)
    np.testing.assert_allclose(got_y[:-1], (x - m) * m, rtol=rtol, atol=rtol * 10)
    np.testing.assert_array_equal(got_y[-1], SENTINEL)


@nt.jit
def branch_kernel(x, c, y: nt.Partition[("BM", "BN")], flag, BM: nt.Constant, BN: nt.Constant,
                  MASKED: nt.Constant):
    if MASKED:
        t = nt.load_like(x, y)
        if flag > 0:
            m = nt.max(t, 1, keepdims=True)                          # slice layout
        else:
            m = nt.load(c, (nt.bid(0), 0), (BM, 1))                  # blocked (BM, 1)
    else:
        t = nt.load_like(x, y, padding=0.0)
        if flag > 0:
            m = nt.load(c, (nt.bid(0), 0), (BM, 1), padding=0.0)     # blocked first
        else:
            m = nt.sum(t, 1, keepdims=True)
    nt.store(y, t - m)


@pytest.mark.parametrize("masked", [True, False], ids=["masked", "padded"])
@pytest.mark.parametrize("flag", [1, 0], ids=["reduction", "load"])
@pytest.mark.parametrize("shape", [(13, 100, 4, 128), (6, 300, 8, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_slice_tile_unified_with_a_blocked_tile(tile_backend, shape, flag, masked):
    rows, cols, bm, bn = shape
    rng = np.random.default_rng()
    xh = rng.standard_normal((rows, cols)).astype(np.float32)
    ch = rng.standard_normal((rows, 1)).astype(np.float32)
    y = tile_backend.asarray(np.full((rows, cols), np.nan, np.float32))
    tile_backend.run(branch_kernel, tile_backend.asarray(xh), tile_backend.asarray(ch),
                     nt.partition(y, (bm, bn)), flag, bm, bn, masked)
    x = xh.astype(np.float64)
    if masked:
        m = x.max(axis=1, keepdims=True) if flag else ch
    else:                 # the padded zeros count in the sum (padding=0.0 adds nothing)
        m = ch if flag else x.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(tile_backend.to_numpy(y), x - m, rtol=1e-5, atol=1e-5)


@nt.jit
def padded_max_kernel(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    t = nt.load_like(x, y, padding=0.5)
    nt.store(y, t - nt.max(t, 1, keepdims=True))


def test_padding_counts_in_a_keepdims_reduction(tile_backend):
    """padding=0.5 with all values below it: the row max is the padding (0.5)."""
    rng = np.random.default_rng()
    xh = -rng.uniform(1, 5, (10, 50)).astype(np.float32)
    y = tile_backend.asarray(np.full((10, 50), np.nan, np.float32))
    tile_backend.run(padded_max_kernel, tile_backend.asarray(xh), nt.partition(y, (4, 64)), 4, 64)
    np.testing.assert_allclose(tile_backend.to_numpy(y), xh.astype(np.float64) - 0.5, rtol=1e-6)
