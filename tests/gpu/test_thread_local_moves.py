"""Moves and reductions that stay in each thread's registers (``lowering/layouts.local_slots``,
``local_lines``): a float32 tile of a 16-bit load reshaped along its repetitions, a reduction
along that leading axis (every aggregate, kept axis or not, masked edges), a running state
folded from it across a loop, a ``(1, 1)`` row statistic carried across a loop. Values on the
GPU and in the interpreter against NumPy in float64; the PTX side is in
``tests/compile/test_thread_local_moves.py``."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

FLOOR = -3.0e38


@nt.jit(num_warps=2)
def folded_state(x, m_out: nt.Partition[(1, "C")], d_out: nt.Partition[(1, "C")],
                 BC: nt.Constant, R: nt.Constant, C: nt.Constant):
    # an online max and sum of exp(x - max) per column of each tile's (R, C) view
    m = nt.full((1, C), FLOOR, nt.float32)
    d = nt.zeros((1, C), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (nt.bid(0), k), (1, BC), padding=-np.inf), nt.float32)
        f = nt.reshape(t, (R, C))
        mn = nt.maximum(m, nt.max(f, 0, keepdims=True))
        d = d * nt.exp(m - mn) + nt.sum(nt.exp(f - mn), 0, keepdims=True)
        m = mn
    nt.store(m_out, m)
    nt.store(d_out, d)


def _folded_reference(xh, bc, r):
    rows, n = xh.shape
    k = -(-n // bc)
    xp = np.full((rows, k * bc), -np.inf)
    xp[:, :n] = xh.astype(np.float64)
    v = xp.reshape(rows, k, r, bc // r)            # (row, tile, fold, column)
    m = np.maximum(v.max(axis=(1, 2)), FLOOR)
    d = np.exp(v - m[:, None, None, :]).sum(axis=(1, 2))
    return m, d


@pytest.mark.parametrize("dt", [BFLOAT16_NP, np.float16, np.float32],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n, bc, r", [(3000, 1024, 2), (700, 512, 4), (130, 512, 1)])
def test_a_folded_running_state(tile_backend, dt, n, bc, r):
    rng = np.random.default_rng()
    rows = 5
    xh = (3 * rng.standard_normal((rows, n))).astype(dt)
    c = bc // r
    m_out = tile_backend.asarray(np.zeros((rows, c), np.float32))
    d_out = tile_backend.asarray(np.zeros((rows, c), np.float32))
    tile_backend.run(folded_state, tile_backend.asarray(xh), nt.partition(m_out, (1, c)),
                     nt.partition(d_out, (1, c)), bc, r, c)
    m_ref, d_ref = _folded_reference(xh, bc, r)
    np.testing.assert_allclose(tile_backend.to_numpy(m_out), m_ref, rtol=1e-6)
    np.testing.assert_allclose(tile_backend.to_numpy(d_out), d_ref, rtol=2e-5, atol=1e-30)


@nt.jit(num_warps=1)
def leading_reduce(x, out: nt.Partition[(1, "BN")], out2: nt.Partition["BN"],
                   BM: nt.Constant, BN: nt.Constant, OP: nt.Constant, PAD: nt.Constant):
    # a (BM, BN) tile over one warp: each thread holds whole columns (BM rows of one chunk)
    if PAD:
        t = nt.load(x, (nt.bid(0), 0), (BM, BN), padding=1.0)
    else:
        t = nt.load(x, (nt.bid(0), 0), (BM, BN))          # masked at the edge
    t = nt.astype(t, nt.float32)
    if OP == 0:
        nt.store(out, nt.sum(t, 0, keepdims=True))
        nt.store(out2, nt.sum(t, 0))
    elif OP == 1:
        nt.store(out, nt.max(t, 0, keepdims=True))
        nt.store(out2, nt.max(t, 0))
    elif OP == 2:
        nt.store(out, nt.min(t, 0, keepdims=True))
        nt.store(out2, nt.min(t, 0))
    else:
        nt.store(out, nt.prod(t, 0, keepdims=True))
        nt.store(out2, nt.prod(t, 0))


REF = [np.sum, np.max, np.min, np.prod]


@pytest.mark.parametrize("op", range(4), ids=["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dt", [BFLOAT16_NP, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rows, pad", [(8, True), (5, False), (5, True)],
                         ids=["full", "masked", "padded"])
def test_a_leading_axis_reduction_in_registers(tile_backend, op, dt, rows, pad):
    rng = np.random.default_rng()
    bm, bn = 8, 256
    xh = (rng.uniform(0.8, 1.25, (rows, bn)) if op == 3
          else rng.standard_normal((rows, bn)) * 10).astype(dt)
    out = tile_backend.asarray(np.full((1, bn), np.nan, np.float32))
    out2 = tile_backend.asarray(np.full(bn, np.nan, np.float32))
    tile_backend.run(leading_reduce, tile_backend.asarray(xh), nt.partition(out, (1, bn)),
                     nt.partition(out2, bn), bm, bn, op, pad)
    xf = xh.astype(np.float64)
    if pad and rows < bm:
        xf = np.concatenate([xf, np.ones((bm - rows, bn))])
    ref = REF[op](xf, axis=0)
    tol = 1e-5 if op in (0, 3) else 0
    np.testing.assert_allclose(tile_backend.to_numpy(out)[0], ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(tile_backend.to_numpy(out2), ref, rtol=tol, atol=tol)


@nt.jit(num_warps=1)
def row_max_state(x, y: nt.Partition[(1, 1)], BC: nt.Constant):
    # a (1, 1) running maximum from a row reduction (its slice layout) per tile
    m = nt.full((1, 1), FLOOR, nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (nt.bid(0), k), (1, BC), padding=FLOOR), nt.float32)
        m = nt.maximum(m, nt.max(t, 1, keepdims=True))
    nt.store(y, m)


@pytest.mark.parametrize("dt", [BFLOAT16_NP, np.float32], ids=lambda d: np.dtype(d).name)
def test_a_row_statistic_carried_across_a_loop(tile_backend, dt):
    rng = np.random.default_rng()
    xh = (5 * rng.standard_normal((7, 1500))).astype(dt)
    y = tile_backend.asarray(np.zeros((7, 1), np.float32))
    tile_backend.run(row_max_state, tile_backend.asarray(xh), nt.partition(y, (1, 1)), 256)
    np.testing.assert_array_equal(tile_backend.to_numpy(y)[:, 0],
                                  xh.astype(np.float32).max(1))
