"""Reductions along one axis (sum, prod, max, min) against NumPy, on the GPU and in the
interpreter: accumulation dtypes (case N1), NaN and infinity, keepdims, every axis."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP


@nt.jit
def row_reduce(x, out: nt.Partition[("BM", 1)], BM: nt.Constant, BN: nt.Constant,
               OP: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (BM, BN))
    if OP == 0:
        r = nt.sum(t, 1, keepdims=True)
    elif OP == 1:
        r = nt.max(t, 1, keepdims=True)
    elif OP == 2:
        r = nt.min(t, -1, keepdims=True)
    else:
        r = nt.prod(t, 1, keepdims=True)
    nt.store(out, r)


REF = [np.sum, np.max, np.min, np.prod]


@pytest.mark.parametrize("op", range(4), ids=["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BFLOAT16_NP, np.int32],
                         ids=lambda d: np.dtype(d).name)
def test_row_reductions(tile_backend, op, dt):
    rng = np.random.default_rng()
    rows, bm, bn = 37, 16, 64
    if op == 3:
        xh = rng.uniform(0.9, 1.1, (rows, bn))
    else:
        xh = rng.standard_normal((rows, bn)) * 10
    xh = xh.astype(dt)
    out = tile_backend.asarray(np.zeros((rows, 1), dt))
    tile_backend.run(row_reduce, tile_backend.asarray(xh), nt.partition(out, (bm, 1)), bm, bn, op)
    ref = REF[op](xh.astype(np.float64), axis=1, keepdims=True)
    got = tile_backend.to_numpy(out).astype(np.float64)
    if np.dtype(dt).kind == "i":
        np.testing.assert_array_equal(got, REF[op](xh, axis=1, keepdims=True).astype(dt))
    else:
        tol = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}.get(np.dtype(dt), 1e-2)
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 10)


@nt.jit
def sum_of_ones(x, out: nt.Partition[1], N: nt.Constant):
    nt.store(out, nt.sum(nt.load(x, (0,), (N,)), 0))


def test_case_n1_half_precision_sum_accumulates_in_float32(tile_backend):
    x = tile_backend.asarray(np.ones(4096, np.float16))
    out = tile_backend.asarray(np.zeros(1, np.float16))
    tile_backend.run(sum_of_ones, x, nt.partition(out, 1), 4096)
    assert float(tile_backend.to_numpy(out)[0]) == 4096.0


@nt.jit
def column_max(x, out: nt.Partition[("BN",)], BM: nt.Constant, BN: nt.Constant):
    t = nt.load(x, (0, nt.bid(0)), (BM, BN), padding=float("-inf"))
    nt.store(out, nt.max(t, 0))


def test_column_max_with_nan_and_inf(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal((32, 100)).astype(np.float32)
    xh[3, 5] = np.nan
    xh[7, 9] = np.inf
    xh[:, 11] = -np.inf
    out = tile_backend.asarray(np.zeros(100, np.float32))
    tile_backend.run(column_max, tile_backend.asarray(xh), nt.partition(out, 32), 32, 32)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), np.max(xh, axis=0))


@nt.jit
def reduce_3d(x, out: nt.Partition[(4, 8)], AX: nt.Constant):
    t = nt.load(x, (0, 0, 0), (4, 16, 8)) if AX == 1 else nt.load(x, (0, 0, 0), (4, 8, 16))
    nt.store(out, nt.sum(t, AX, dtype=nt.float64))


def test_middle_and_last_axes_of_a_3d_tile(tile_backend):
    rng = np.random.default_rng()
    for ax, shape in ((1, (4, 16, 8)), (2, (4, 8, 16))):
        xh = rng.standard_normal(shape).astype(np.float32)
        out = tile_backend.asarray(np.zeros((4, 8)))
        tile_backend.run(reduce_3d, tile_backend.asarray(xh), nt.partition(out, (4, 8)), ax)
        np.testing.assert_allclose(tile_backend.to_numpy(out), xh.astype(np.float64).sum(axis=ax),
                                   rtol=1e-6)


def test_reduction_argument_errors():
    @nt.jit
    def bad_axis(x, out: nt.Partition[1]):
        nt.store(out, nt.sum(nt.load(x, (0,), (16,)), 1))

    @nt.jit
    def narrowing(x, out: nt.Partition[1]):
        nt.store(out, nt.sum(nt.load(x, (0,), (16,)), 0, dtype=nt.float16))

    x = np.ones(16, np.float32)
    with pytest.raises(nt.errors.TileTypingError, match="axis"):
        bad_axis(x, nt.partition(np.zeros(1, np.float32), 1), interpret=True)
    with pytest.raises(nt.errors.TileTypingError, match="narrowing"):
        narrowing(x, nt.partition(np.zeros(1, np.float32), 1), interpret=True)


@nt.jit
def arg_kernel(x, out: nt.Partition[("BM",)], BM: nt.Constant, BN: nt.Constant, OP: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (BM, BN))
    if OP == 0:
        r = nt.argmax(t, 1)
    else:
        r = nt.argmin(t, 1)
    nt.store(out, r)


@pytest.mark.parametrize("op", [0, 1], ids=["argmax", "argmin"])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32], ids=lambda d: np.dtype(d).name)
def test_argmax_argmin_with_ties_and_nan(tile_backend, op, dt):
    rng = np.random.default_rng()
    xh = rng.integers(-5, 5, (40, 32)).astype(dt)          # many ties
    if np.dtype(dt).kind == "f":
        xh[3, 7] = np.nan
        xh[3, 20] = np.nan                                  # first NaN wins
        xh[9, 0] = np.inf
    out = tile_backend.asarray(np.zeros(40, np.int32))
    tile_backend.run(arg_kernel, tile_backend.asarray(xh), nt.partition(out, 16), 16, 32, op)
    ref = (np.argmax if op == 0 else np.argmin)(xh, axis=1)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), ref)


@nt.jit
def cumsum_kernel(x, out: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                  AX: nt.Constant):
    nt.store(out, nt.cumsum(nt.load_like(x, out), AX, dtype=nt.float32))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32], ids=lambda d: np.dtype(d).name)
def test_cumsum_along_each_axis_of_a_tile(tile_backend, axis, dt):
    rng = np.random.default_rng()
    bm, bn = 16, 32
    xh = (rng.standard_normal((bm, bn)) * 4).astype(dt)
    out = tile_backend.asarray(np.zeros((bm, bn), np.float32))
    tile_backend.run(cumsum_kernel, tile_backend.asarray(xh), nt.partition(out, (bm, bn)), bm, bn,
                     axis)
    np.testing.assert_allclose(tile_backend.to_numpy(out),
                               np.cumsum(xh.astype(np.float64), axis=axis), rtol=1e-5, atol=1e-4)
