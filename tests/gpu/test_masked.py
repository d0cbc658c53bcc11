"""Masked tiles against NumPy, on the GPU and in the interpreter.

A load without ``padding=`` gives a masked tile: the elements outside the array are invalid,
elementwise ops keep the intersection of their operands' valid boxes, reductions skip invalid
elements and stores do not write them. A load with ``padding=v`` gives an unmasked tile whose
outside elements hold ``v`` and count; ``filled(t, v)`` turns a masked tile into that.

Every kernel puts an elementwise op between the load and the reduction whose value at an
invalid element (which holds zero in registers) would change the result if it were counted:
``t + 1`` before a sum, a max of negative or a min of positive values, ``2 t`` before a
product. Every store goes into an output larger than the input, filled with a sentinel, so a
write of an invalid element shows. References are float64 NumPy over the valid elements only.
"""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import TileTypingError

SENTINEL = -7.0
FLOATS = [np.float32, np.float16, BFLOAT16_NP]


def dt_id(d):
    return np.dtype(d).name


def tol(dt):
    """(rtol, atol) of a result rounded once to ``dt`` (computed in float32)."""
    return {np.dtype(np.float32): (2e-5, 1e-5), np.dtype(np.float16): (4e-3, 4e-3),
            BFLOAT16_NP: (2e-2, 2e-2), np.dtype(np.float64): (1e-12, 1e-12)}[np.dtype(dt)]


def sample(rng, op, shape, dt):
    """Inputs for reduction ``op`` such that counting an invalid element changes the result
    of the kernel's ``f(t)`` (t + 1 for sum/max/min, 2 t for prod; invalid t = 0)."""
    if op == "max":          # f(valid) < 0 < f(invalid) = 1
        x = -rng.uniform(1.5, 10, shape)
    elif op == "min":        # f(valid) > 1 = f(invalid)
        x = rng.uniform(0.5, 10, shape)
    elif op == "prod":       # f(invalid) = 0
        x = rng.uniform(0.45, 0.55, shape)
    else:                    # f(invalid) = 1 is added once per invalid element
        x = rng.standard_normal(shape) * 3
    return x.astype(dt)


def reference(op, x, axis, keepdims):
    """float64 reduction of the kernel's f(x), each element of which the kernel rounds to
    x's dtype (the elementwise op's result dtype) before reducing it in float32."""
    x64 = x.astype(np.float64)
    f = (x64 * 2 if op == "prod" else x64 + 1).astype(x.dtype).astype(np.float64)
    return {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[op](
        f, axis=axis, keepdims=keepdims)


OPS = ["sum", "max", "min", "prod"]


# ------------------------------------------------------------------ reductions along axis 1


@nt.jit
def rows_kernel(x, out: nt.Partition, BM: nt.Constant, BN: nt.Constant, OP: nt.Constant,
                KEEP: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (BM, BN))               # masked: no padding=
    if OP == 0:
        r = nt.sum(t + 1.0, 1, keepdims=KEEP)
    elif OP == 1:
        r = nt.max(t + 1.0, 1, keepdims=KEEP)
    elif OP == 2:
        r = nt.min(t + 1.0, 1, keepdims=KEEP)
    else:
        r = nt.prod(t * 2.0, 1, keepdims=KEEP)
    nt.store(out, r)


@pytest.mark.parametrize("keep", [True, False], ids=["keepdims", "dropdims"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", FLOATS, ids=dt_id)
def test_masked_row_reductions(tile_backend, dt, op, keep):
    """x (13, 37) in (8, 64) tiles: the last 27 columns of every tile and the last 3 rows of
    the second block are invalid; the output has 24 rows, so the third block's tile is wholly
    outside x (nothing valid: nothing written)."""
    rng = np.random.default_rng()
    rows, cols, bm, bn, out_rows = 13, 37, 8, 64, 24
    xh = sample(rng, op, (rows, cols), dt)
    out_shape, tile = ((out_rows, 1), (bm, 1)) if keep else ((out_rows,), (bm,))
    out = tile_backend.asarray(np.full(out_shape, SENTINEL, dt))
    tile_backend.run(rows_kernel, tile_backend.asarray(xh), nt.partition(out, tile), bm, bn,
                     OPS.index(op), keep)
    got = tile_backend.to_numpy(out).astype(np.float64)
    ref = reference(op, xh, 1, keep)
    rtol, atol = tol(dt)
    np.testing.assert_allclose(got[:rows], ref, rtol=rtol, atol=atol)
    np.testing.assert_array_equal(got[rows:], SENTINEL)


# ------------------------------------------------------------------ reductions along axis 0


@nt.jit
def cols_keep_kernel(x, out: nt.Partition, BM: nt.Constant, BN: nt.Constant, OP: nt.Constant):
    t = nt.load(x, (0, nt.bid(1)), (BM, BN))               # out: (1, BN) tiles
    if OP == 0:
        r = nt.sum(t + 1.0, 0, keepdims=True)
    elif OP == 1:
        r = nt.max(t + 1.0, 0, keepdims=True)
    elif OP == 2:
        r = nt.min(t + 1.0, 0, keepdims=True)
    else:
        r = nt.prod(t * 2.0, 0, keepdims=True)
    nt.store(out, r)


@nt.jit
def cols_drop_kernel(x, out: nt.Partition, BM: nt.Constant, BN: nt.Constant, OP: nt.Constant):
    t = nt.load(x, (0, nt.bid(0)), (BM, BN))               # out: (BN,) tiles
    if OP == 0:
        r = nt.sum(t + 1.0, 0)
    elif OP == 1:
        r = nt.max(t + 1.0, 0)
    elif OP == 2:
        r = nt.min(t + 1.0, 0)
    else:
        r = nt.prod(t * 2.0, 0)
    nt.store(out, r)


@pytest.mark.parametrize("keep", [True, False], ids=["keepdims", "dropdims"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", FLOATS, ids=dt_id)
def test_masked_column_reductions(tile_backend, dt, op, keep):
    """x (11, 45) in (16, 32) tiles, reduced along axis 0 (the staged path): 5 invalid rows in
    every tile, 19 invalid columns in the second; the output has 80 columns (a third tile
    wholly outside x)."""
    rng = np.random.default_rng()
    rows, cols, bm, bn, out_cols = 11, 45, 16, 32, 80
    xh = sample(rng, op, (rows, cols), dt)
    out_shape, tile = ((1, out_cols), (1, bn)) if keep else ((out_cols,), (bn,))
    out = tile_backend.asarray(np.full(out_shape, SENTINEL, dt))
    tile_backend.run(cols_keep_kernel if keep else cols_drop_kernel, tile_backend.asarray(xh),
                     nt.partition(out, tile), bm, bn, OPS.index(op))
    got = tile_backend.to_numpy(out).astype(np.float64)
    ref = reference(op, xh, 0, keep)
    rtol, atol = tol(dt)
    np.testing.assert_allclose(got[..., :cols], ref, rtol=rtol, atol=atol)
    np.testing.assert_array_equal(got[..., cols:], SENTINEL)


@nt.jit
def middle_axis_kernel(x, out: nt.Partition[(4, 8)], OP: nt.Constant):
    t = nt.load(x, (0, 0, 0), (4, 16, 8))
    if OP == 0:
        r = nt.sum(t + 1.0, 1)
    else:
        r = nt.max(t + 1.0, 1)
    nt.store(out, r)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_masked_middle_axis_of_a_3d_tile(tile_backend, op):
    rng = np.random.default_rng()
    xh = sample(rng, op, (3, 10, 5), np.float32)
    out = tile_backend.asarray(np.full((4, 8), SENTINEL, np.float32))
    tile_backend.run(middle_axis_kernel, tile_backend.asarray(xh), nt.partition(out, (4, 8)),
                     OPS.index(op))
    got = tile_backend.to_numpy(out)
    np.testing.assert_allclose(got[:3, :5], reference(op, xh, 1, False),
                               rtol=1e-5, atol=1e-5)
    got[:3, :5] = SENTINEL
    np.testing.assert_array_equal(got, SENTINEL)


# ------------------------------------------------------------------ argmax, argmin, cumsum


@nt.jit
def arg_kernel(x, out: nt.Partition, BM: nt.Constant, BN: nt.Constant, OP: nt.Constant,
               AX: nt.Constant):
    if AX == 1:
        t = nt.load(x, (nt.bid(0), 0), (BM, BN))
    else:
        t = nt.load(x, (0, nt.bid(0)), (BM, BN))
    if OP == 0:
        r = nt.argmax(t, AX)
    else:
        r = nt.argmin(t, AX)
    nt.store(out, r)


@pytest.mark.parametrize("axis", [1, 0])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32], ids=dt_id)
def test_masked_argmax_argmin(tile_backend, dt, op, axis):
    """All values negative (argmax) or positive (argmin): an invalid element (0) would win."""
    rng = np.random.default_rng()
    rows, cols = 21, 27
    mag = rng.integers(1, 6, (rows, cols))                  # ties: the first one wins
    xh = (-mag if op == "argmax" else mag).astype(dt)
    if axis == 1:       # rows of x in (16, 32) tiles, reduced along axis 1
        bm, bn, n_out = 16, 32, 40
    else:               # columns of x in (32, 16) tiles, reduced along axis 0
        bm, bn, n_out = 32, 16, 40
    out = tile_backend.asarray(np.full(n_out, -1, np.int32))
    tile_backend.run(arg_kernel, tile_backend.asarray(xh),
                     nt.partition(out, bm if axis == 1 else bn), bm, bn,
                     0 if op == "argmax" else 1, axis)
    got = tile_backend.to_numpy(out)
    ref = (np.argmax if op == "argmax" else np.argmin)(xh, axis=axis)
    n = rows if axis == 1 else cols
    np.testing.assert_array_equal(got[:n], ref)
    np.testing.assert_array_equal(got[n:], -1)


@nt.jit
def cumsum_kernel(x, out: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                  AX: nt.Constant):
    t = nt.load_like(x, out)
    nt.store(out, nt.cumsum(t + 1.0, AX))


@pytest.mark.parametrize("axis", [0, 1])
def test_masked_cumsum(tile_backend, axis):
    """x (13, 21) under a (32, 32) output in (16, 16) tiles: only x's elements are written."""
    rng = np.random.default_rng()
    xh = rng.standard_normal((13, 21)).astype(np.float32)
    out = tile_backend.asarray(np.full((32, 32), SENTINEL, np.float32))
    tile_backend.run(cumsum_kernel, tile_backend.asarray(xh), nt.partition(out, (16, 16)), 16, 16,
                     axis)
    got = tile_backend.to_numpy(out)
    # tiles restart the sum: cumulate within each 16-wide block along the axis
    x1 = xh.astype(np.float64) + 1
    ref = np.zeros_like(x1)
    for b in range(0, x1.shape[axis], 16):
        sl = [slice(None)] * 2
        sl[axis] = slice(b, b + 16)
        ref[tuple(sl)] = np.cumsum(x1[tuple(sl)], axis=axis)
    np.testing.assert_allclose(got[:13, :21], ref, rtol=1e-5, atol=1e-5)
    got[:13, :21] = SENTINEL
    np.testing.assert_array_equal(got, SENTINEL)


@nt.jit
def sum_of_cumsum_kernel(x, out: nt.Partition[("BM",)], BM: nt.Constant, BN: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (BM, BN))
    nt.store(out, nt.sum(nt.cumsum(t, 1) + 1.0, 1))


def test_masked_cumsum_then_sum(tile_backend):
    """The cumsum of a masked tile is masked: a following sum skips its invalid elements."""
    rng = np.random.default_rng()
    xh = rng.standard_normal((9, 20)).astype(np.float32)
    out = tile_backend.asarray(np.full(16, SENTINEL, np.float32))
    tile_backend.run(sum_of_cumsum_kernel, tile_backend.asarray(xh), nt.partition(out, 8), 8, 32)
    got = tile_backend.to_numpy(out)
    ref = (np.cumsum(xh.astype(np.float64), axis=1) + 1).sum(axis=1)
    np.testing.assert_allclose(got[:9], ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got[9:], SENTINEL)


# ------------------------------------------------------------------ elementwise ops and stores


@nt.jit
def two_input_kernel(x, y, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                     OP: nt.Constant):
    a = nt.load_like(x, z)
    b = nt.load_like(y, z)
    if OP == 0:
        r = a * 2.0 + b
    elif OP == 1:
        r = nt.where(a > b, a, b - 1.0)
    elif OP == 2:
        r = nt.minimum(a, b) + nt.maximum(a, b) * 3.0
    elif OP == 3:
        r = nt.astype(nt.astype(a, nt.float16), nt.float32) - nt.exp(b)
    elif OP == 4:
        r = -nt.abs(a) / (nt.sqrt(nt.abs(b)) + 1.0)
    else:
        r = nt.where(b > 0.0, 1.0, 2.0) + a
    nt.store(z, r)


def two_input_reference(op, a, b):
    if op == 0:
        return a * 2 + b
    if op == 1:
        return np.where(a > b, a, b - 1)
    if op == 2:
        return np.minimum(a, b) + np.maximum(a, b) * 3
    if op == 3:
        return a.astype(np.float16).astype(np.float64) - np.exp(b)
    if op == 4:
        return -np.abs(a) / (np.sqrt(np.abs(b)) + 1)
    return np.where(b > 0, 1.0, 2.0) + a


@pytest.mark.parametrize("op", range(6), ids=["arith", "where", "min-max", "astype-exp",
                                              "unary-math", "where-scalars"])
def test_elementwise_ops_keep_the_intersection_of_valid_boxes(tile_backend, op):
    """x (19, 40) and y (25, 23) under z (32, 48) in (16, 16) tiles: z is written only where
    both x and y have elements, i.e. z[:19, :23]."""
    rng = np.random.default_rng()
    xh = rng.standard_normal((19, 40)).astype(np.float32)
    yh = rng.standard_normal((25, 23)).astype(np.float32)
    z = tile_backend.asarray(np.full((32, 48), SENTINEL, np.float32))
    tile_backend.run(two_input_kernel, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(z, (16, 16)), 16, 16, op)
    got = tile_backend.to_numpy(z)
    ref = two_input_reference(op, xh[:19, :23].astype(np.float64), yh[:19, :23].astype(np.float64))
    np.testing.assert_allclose(got[:19, :23], ref, rtol=1e-5, atol=1e-5)
    got[:19, :23] = SENTINEL
    np.testing.assert_array_equal(got, SENTINEL)


@nt.jit
def reduce_after_op_kernel(x, y, out: nt.Partition[("BM",)], BM: nt.Constant, BN: nt.Constant,
                           OP: nt.Constant):
    a = nt.load(x, (nt.bid(0), 0), (BM, BN))
    b = nt.load(y, (nt.bid(0), 0), (BM, BN))
    if OP == 0:
        r = nt.sum(nt.exp(a) + b, 1)                  # exp(invalid) = 1
    elif OP == 1:
        r = nt.sum(nt.sqrt(a - 1.0), 1)               # sqrt(invalid - 1) = NaN
    elif OP == 2:
        r = nt.max(nt.log(a), 1)                      # log(invalid) = -inf, NaN would win
    elif OP == 3:
        r = nt.sum(1.0 / a, 1)                        # 1 / invalid = inf
    else:
        r = nt.sum(nt.where(a > b, a, b) + 1.0, 1)
    nt.store(out, r)


def reduce_after_op_reference(op, a, b):
    if op == 0:
        return (np.exp(a) + b).sum(axis=1)
    if op == 1:
        return np.sqrt(a - 1).sum(axis=1)
    if op == 2:
        return np.log(a).max(axis=1)
    if op == 3:
        return (1 / a).sum(axis=1)
    return (np.where(a > b, a, b) + 1).sum(axis=1)


@pytest.mark.parametrize("op", range(5), ids=["exp", "sqrt-nan", "log-inf", "reciprocal-inf",
                                              "where"])
def test_reductions_skip_invalid_elements_whatever_they_hold(tile_backend, op):
    """An invalid element holds 0; after exp, sqrt(. - 1), log or 1/. it holds 1, NaN, -inf
    or inf: a reduction that multiplied by a mask instead of skipping would return NaN.
    x has 30 columns, y 26: where both are used the valid box is their intersection (26
    columns), where only x is, x's 30."""
    rng = np.random.default_rng()
    xh = rng.uniform(1.5, 4.0, (10, 30)).astype(np.float32)
    yh = rng.uniform(1.0, 5.0, (10, 26)).astype(np.float32)
    out = tile_backend.asarray(np.full(16, SENTINEL, np.float32))
    tile_backend.run(reduce_after_op_kernel, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(out, 8), 8, 32, op)
    got = tile_backend.to_numpy(out)
    n = 26 if op in (0, 4) else 30
    ref = reduce_after_op_reference(op, xh[:, :n].astype(np.float64),
                                    yh.astype(np.float64) if n == 26 else None)
    assert np.isfinite(got[:10]).all(), got
    np.testing.assert_allclose(got[:10], ref, rtol=2e-5, atol=1e-5)
    np.testing.assert_array_equal(got[10:], SENTINEL)


@nt.jit
def store_kind_kernel(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                      KIND: nt.Constant):
    if KIND == 0:
        t = nt.load_like(x, z)                        # masked
    elif KIND == 1:
        t = nt.load_like(x, z, padding=5.0)           # unmasked, outside elements hold 5
    else:
        t = nt.filled(nt.load_like(x, z), 5.0)        # unmasked, invalid elements become 5
    nt.store(z, t * 2.0 + 1.0)


@pytest.mark.parametrize("kind", range(3), ids=["masked", "padding", "filled"])
def test_store_writes_valid_elements_only(tile_backend, kind):
    """x (10, 13) under z (16, 32) in (8, 16) tiles: a masked result leaves the rest of z
    alone; a padded or filled one writes 2 * 5 + 1 = 11 there (z's own bounds still clip)."""
    rng = np.random.default_rng()
    xh = rng.standard_normal((10, 13)).astype(np.float32)
    z = tile_backend.asarray(np.full((16, 32), SENTINEL, np.float32))
    tile_backend.run(store_kind_kernel, tile_backend.asarray(xh), nt.partition(z, (8, 16)), 8, 16,
                     kind)
    got = tile_backend.to_numpy(z)
    expected = np.full((16, 32), SENTINEL if kind == 0 else 11.0)
    expected[:10, :13] = xh.astype(np.float64) * 2 + 1
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@nt.jit
def count_kernel(x, out: nt.Partition[1], N: nt.Constant, KIND: nt.Constant):
    if KIND == 0:
        t = nt.load(x, (0,), (N,))
    elif KIND == 1:
        t = nt.load(x, (0,), (N,), padding=2.5)
    else:
        t = nt.filled(nt.load(x, (0,), (N,)), 2.5)
    nt.store(out, nt.sum(t + 1.0, 0))


@pytest.mark.parametrize("kind", range(3), ids=["masked", "padding", "filled"])
@pytest.mark.parametrize("n", [1, 5, 100, 1000])
def test_padding_and_filled_elements_count(tile_backend, kind, n):
    """sum(t + 1) over n valid elements of a 1024 tile: the padding (or filled) value 2.5
    counts 1024 - n times, an invalid element never."""
    rng = np.random.default_rng()
    xh = rng.standard_normal(n).astype(np.float32)
    out = tile_backend.asarray(np.full(1, SENTINEL, np.float32))
    tile_backend.run(count_kernel, tile_backend.asarray(xh), nt.partition(out, 1), 1024, kind)
    ref = (xh.astype(np.float64) + 1).sum() + (0 if kind == 0 else 3.5 * (1024 - n))
    np.testing.assert_allclose(tile_backend.to_numpy(out)[0], ref, rtol=1e-5, atol=1e-4)


@nt.jit
def padded_and_masked_kernel(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z, padding=3.0) + nt.load_like(y, z))


def test_padded_plus_masked_is_masked(tile_backend):
    """x (70 elements, padded) + y (50, masked) under z (128): written z[:50] only."""
    rng = np.random.default_rng()
    xh = rng.standard_normal(70).astype(np.float32)
    yh = rng.standard_normal(50).astype(np.float32)
    z = tile_backend.asarray(np.full(128, SENTINEL, np.float32))
    tile_backend.run(padded_and_masked_kernel, tile_backend.asarray(xh), tile_backend.asarray(yh),
                     nt.partition(z, 64), 64)
    got = tile_backend.to_numpy(z)
    np.testing.assert_allclose(got[:50], xh[:50] + yh, rtol=1e-6)
    np.testing.assert_array_equal(got[50:], SENTINEL)


# ------------------------------------------------------------------ shape ops of masked tiles


@nt.jit
def masked_shape_kernel(x, z: nt.Partition, BM: nt.Constant, BN: nt.Constant, OP: nt.Constant):
    t = nt.load(x, (0, 0), (BM, BN))
    if OP == 0:
        nt.store(z, nt.transpose(t) + 1.0)                    # (BN, BM), box transposed
    elif OP == 1:
        nt.store(z, nt.reshape(nt.expand_dims(t, 0), (1, BM, BN)) + 1.0)
    else:
        col = nt.reshape(nt.sum(t, 1, keepdims=True), (BM,))  # drop the unit axis
        nt.store(z, nt.expand_dims(col, 1) + 1.0)             # (BM, 1)


@pytest.mark.parametrize("op", range(3), ids=["transpose", "unit-axes", "reshape-keepdims"])
def test_shape_ops_keep_the_valid_box(tile_backend, op):
    rng = np.random.default_rng()
    xh = rng.standard_normal((5, 3)).astype(np.float32)
    x64 = xh.astype(np.float64)
    if op == 0:
        shape, tile, ref = (4, 8), (4, 8), x64.T + 1
    elif op == 1:
        shape, tile, ref = (1, 8, 4), (1, 8, 4), x64[None] + 1
    else:
        shape, tile, ref = (8, 1), (8, 1), x64.sum(axis=1, keepdims=True) + 1
    z = tile_backend.asarray(np.full(shape, SENTINEL, np.float32))
    tile_backend.run(masked_shape_kernel, tile_backend.asarray(xh), nt.partition(z, tile), 8, 4, op)
    got = tile_backend.to_numpy(z)
    box = tuple(slice(0, s) for s in ref.shape)
    np.testing.assert_allclose(got[box], ref, rtol=1e-5, atol=1e-6)
    got[box] = SENTINEL
    np.testing.assert_array_equal(got, SENTINEL)


# ------------------------------------------------------------------ accumulators (typing errors)


@nt.jit
def masked_accumulator(x, out: nt.Partition[1], BK: nt.Constant):
    acc = nt.zeros((BK,), nt.float32)
    for k in range(nt.num_tiles(x, 0, BK)):
        acc = acc + nt.load(x, (k,), (BK,))  # masked-acc
    nt.store(out, nt.sum(acc, 0))


@nt.jit
def masked_in_one_branch(x, out: nt.Partition[("B",)], B: nt.Constant, flag):
    if flag > 0:
        t = nt.load_like(x, out)
    else:
        t = nt.zeros((B,), nt.float32)
    nt.store(out, t)


@nt.jit
def padded_accumulator(x, out: nt.Partition[1], BK: nt.Constant, FILLED: nt.Constant):
    acc = nt.zeros((BK,), nt.float32)
    for k in range(nt.num_tiles(x, 0, BK)):
        if FILLED:
            acc = acc + nt.filled(nt.load(x, (k,), (BK,)), 0.0)
        else:
            acc = acc + nt.load(x, (k,), (BK,), padding=0.0)
    nt.store(out, nt.sum(acc * acc + 1.0, 0))


def assert_accumulator_hint(err):
    msg = str(err)
    assert "masked" in msg, msg
    assert "padding=" in msg and "filled" in msg, msg


def test_masked_accumulator_is_a_typing_error_with_a_hint(tile_backend):
    x = tile_backend.asarray(np.ones(100, np.float32))
    out = tile_backend.asarray(np.zeros(1, np.float32))
    with pytest.raises(TileTypingError) as info:
        tile_backend.run(masked_accumulator, x, nt.partition(out, 1), 32)
    assert_accumulator_hint(info.value)
    assert info.value.filename == __file__


def test_masked_and_unmasked_in_two_branches_is_a_typing_error(tile_backend):
    x = tile_backend.asarray(np.ones(100, np.float32))
    out = tile_backend.asarray(np.zeros(100, np.float32))
    with pytest.raises(TileTypingError) as info:
        tile_backend.run(masked_in_one_branch, x, nt.partition(out, 32), 32, 1)
    assert_accumulator_hint(info.value)


@pytest.mark.parametrize("filled", [False, True], ids=["padding", "filled"])
def test_padded_or_filled_accumulator(tile_backend, filled):
    """The fixes the hint names: acc = acc + load(..., padding=0) or + filled(load(...), 0).
    x (300) in chunks of 64: acc[i] = sum of x[i::64]; sum(acc * acc + 1) counts all 64."""
    rng = np.random.default_rng()
    xh = rng.standard_normal(300).astype(np.float32)
    out = tile_backend.asarray(np.full(1, SENTINEL, np.float32))
    tile_backend.run(padded_accumulator, tile_backend.asarray(xh), nt.partition(out, 1), 64, filled)
    acc = np.zeros(64)
    for k in range(0, 300, 64):
        chunk = xh[k:k + 64].astype(np.float64)
        acc[:len(chunk)] += chunk
    np.testing.assert_allclose(tile_backend.to_numpy(out)[0], (acc * acc + 1).sum(), rtol=1e-5)


@nt.jit
def masked_reshape(x, z: nt.Partition[(64,)]):
    nt.store(z, nt.reshape(nt.load(x, (0, 0), (8, 8)), (64,)))  # masked-reshape


@nt.jit
def filled_reshape(x, z: nt.Partition[(64,)]):
    nt.store(z, nt.reshape(nt.filled(nt.load(x, (0, 0), (8, 8)), 0.5), (64,)))


def test_reshape_of_a_masked_tile_is_a_typing_error(tile_backend):
    x = tile_backend.asarray(np.ones((5, 6), np.float32))
    z = tile_backend.asarray(np.zeros(64, np.float32))
    with pytest.raises(TileTypingError) as info:
        tile_backend.run(masked_reshape, x, nt.partition(z, 64))
    msg = str(info.value)
    assert "reshape" in msg and "masked" in msg, msg
    assert info.value.filename == __file__


def test_reshape_of_a_filled_tile(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal((5, 6)).astype(np.float32)
    z = tile_backend.asarray(np.full(64, SENTINEL, np.float32))
    tile_backend.run(filled_reshape, tile_backend.asarray(xh), nt.partition(z, 64))
    expected = np.full((8, 8), 0.5, np.float32)
    expected[:5, :6] = xh
    np.testing.assert_array_equal(tile_backend.to_numpy(z), expected.reshape(64))


# ------------------------------------------------------------------ masked loop-carried tiles


@nt.jit
def masked_chunk_accumulator(x, out: nt.Partition[1], BK: nt.Constant):
    acc = nt.load(x, (0,), (BK,))                  # masked, as every load in the loop
    for k in range(1, nt.num_tiles(x, 0, BK)):
        acc = acc + nt.load(x, (k,), (BK,))
    nt.store(out, nt.sum(acc, 0))


def test_masked_accumulator_started_from_a_masked_load(tile_backend):
    """The chunked row sum written with masked loads only: the accumulator's valid box would
    shrink to the last, partial chunk's (100 ones in chunks of 32 would sum to 16), so it is
    a compile-time error naming the variable, with the fixes in the message."""
    x = tile_backend.asarray(np.ones(100, np.float32))
    out = tile_backend.asarray(np.full(1, SENTINEL, np.float32))
    with pytest.raises(TileTypingError) as info:
        tile_backend.run(masked_chunk_accumulator, x, nt.partition(out, 1), 32)
    msg = str(info.value)
    assert "'acc'" in msg and "masked" in msg and "loop" in msg, msg
    assert "padding=" in msg and "filled" in msg, msg
    assert info.value.filename == __file__
    np.testing.assert_array_equal(tile_backend.to_numpy(out), SENTINEL)
