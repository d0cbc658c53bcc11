"""NumPy broadcasting between tiles in elementwise ops, on the GPU and in the interpreter.

(R, 1) with (R, N), (1, N) with (R, N), (N,) with (R, N), (R, 1) with (1, N), in both operand
orders, through arithmetic, comparisons, ``minimum``/``maximum`` and ``where``; mixed dtypes;
masked operands (the result's valid box is the broadcast intersection: a store writes only
there); shapes that do not broadcast are a TileTypingError naming "broadcast".
"""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import TileTypingError

SENTINEL = -7.0


@nt.jit
def bcast_kernel(a, b, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                 CASE: nt.Constant):
    i = nt.bid(0)
    j = nt.bid(1)
    full = nt.load(b, (i, j), (BM, BN))
    if CASE == 0:                                     # (R, 1) with (R, N)
        col = nt.load(a, (i, 0), (BM, 1))
        r = col + full * (full - col)
    elif CASE == 1:                                   # (1, N) with (R, N)
        row = nt.load(a, (0, j), (1, BN))
        r = full / (nt.abs(row) + 1.0) - row
    elif CASE == 2:                                   # (N,) with (R, N)
        vec = nt.load(a, (j,), (BN,))
        r = nt.maximum(full, vec) - nt.minimum(vec, full) * 2.0
    elif CASE == 3:                                   # (R, 1) with (1, N): outer
        col = nt.load(a, (i, 0), (BM, 1))
        row = nt.load(b, (0, j), (1, BN))
        r = col * row + nt.where(col < row, 1.0, 0.0)
    elif CASE == 4:                                   # where(cond (R, N), (R, 1), (1, N))
        col = nt.load(a, (i, 0), (BM, 1))
        row = nt.load(b, (0, j), (1, BN))
        r = nt.where(col * row > 0.0, col, row)
    else:                                             # where(cond (R, 1), (R, N), scalar)
        col = nt.load(a, (i, 0), (BM, 1))
        r = nt.where(col > 0.0, full, -1.5)
    nt.store(z, r)


def bcast_reference(case, a, b, shape):
    if case == 0:
        return a + b * (b - a)
    if case == 1:
        return b / (np.abs(a) + 1) - a
    if case == 2:
        return np.maximum(b, a) - np.minimum(a, b) * 2
    if case == 3:
        return a * b + np.where(a < b, 1.0, 0.0)
    if case == 4:
        return np.where(a * b > 0, np.broadcast_to(a, shape), np.broadcast_to(b, shape))
    return np.where(a > 0, b, -1.5)


CASES = ["col-full", "row-full", "vec-full", "col-row", "where-col-row", "where-col-scalar"]
M, N = 37, 70         # z's shape; (16, 32) tiles: ragged in both axes


def operand_shapes(case):
    """(a's shape, b's shape) for ``case``; a has fewer rows / columns than z where it can,
    so its valid box is smaller than z's."""
    return {0: ((30, 1), (M, N)), 1: ((1, 61), (M, N)), 2: ((61,), (M, N)),
            3: ((30, 1), (1, 61)), 4: ((30, 1), (1, 61)), 5: ((30, 1), (M, N))}[case]


def written_box(case):
    """The part of z the masked result covers (the broadcast intersection of the boxes)."""
    return {0: (30, N), 1: (M, 61), 2: (M, 61), 3: (30, 61), 4: (30, 61), 5: (30, N)}[case]


@pytest.mark.parametrize("dts", [(np.float32, np.float32), (np.float16, np.float32),
                                 (np.float32, BFLOAT16_NP), (np.int32, np.float32)],
                         ids=["f32", "f16-f32", "f32-bf16", "i32-f32"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=CASES)
def test_broadcasting_between_tiles(tile_backend, case, dts):
    rng = np.random.default_rng()
    sa, sb = operand_shapes(case)
    dta, dtb = dts
    ah = (rng.standard_normal(sa) * 4).astype(dta)
    bh = (rng.standard_normal(sb) * 4).astype(dtb)
    if case in (1, 3):
        ah[ah == 0] = 1                    # int32 case: no 0 / 0 in the row
    z = tile_backend.asarray(np.full((M, N), SENTINEL, np.float32))
    tile_backend.run(bcast_kernel, tile_backend.asarray(ah), tile_backend.asarray(bh),
                     nt.partition(z, (16, 32)), 16, 32, case)
    got = tile_backend.to_numpy(z).astype(np.float64)
    bm, bn = written_box(case)
    a64 = ah.astype(np.float64)
    b64 = bh.astype(np.float64)
    # restrict every operand to the written box, keeping its broadcast axes
    a64 = a64[..., :bn] if a64.ndim == 1 else a64[:bm if a64.shape[0] > 1 else 1,
                                                  :bn if a64.shape[1] > 1 else 1]
    b64 = b64[:bm if b64.shape[0] > 1 else 1, :bn if b64.shape[1] > 1 else 1]
    ref = bcast_reference(case, a64, b64, (bm, bn))
    half = np.float16 in dts or BFLOAT16_NP in dts
    rtol = 2e-2 if BFLOAT16_NP in dts else 2e-3 if half else 1e-5
    np.testing.assert_allclose(got[:bm, :bn], np.broadcast_to(ref, (bm, bn)), rtol=rtol,
                               atol=rtol)
    got[:bm, :bn] = SENTINEL
    np.testing.assert_array_equal(got, SENTINEL)


@nt.jit
def outer_padded(a, b, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    col = nt.load(a, (nt.bid(0), 0), (BM, 1), padding=2.0)
    row = nt.load(b, (0, nt.bid(1)), (1, BN), padding=3.0)
    nt.store(z, col * row)


def test_padded_operands_broadcast_their_padding(tile_backend):
    """Unmasked operands (padding=): z is written wherever z is, the padded rows and
    columns of the operands meeting there as 2 * b, a * 3 and 2 * 3."""
    rng = np.random.default_rng()
    ah = rng.standard_normal((30, 1)).astype(np.float32)
    bh = rng.standard_normal((1, 61)).astype(np.float32)
    z = tile_backend.asarray(np.full((M, N), SENTINEL, np.float32))
    tile_backend.run(outer_padded, tile_backend.asarray(ah), tile_backend.asarray(bh),
                     nt.partition(z, (16, 32)), 16, 32)
    a = np.full((M, 1), 2.0)
    a[:30] = ah
    b = np.full((1, N), 3.0)
    b[:, :61] = bh
    np.testing.assert_allclose(tile_backend.to_numpy(z), a * b, rtol=1e-6)


@nt.jit
def bad_shapes(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               CASE: nt.Constant):
    t = nt.load(x, (0, 0), (BM, BN))
    if CASE == 0:
        r = t + nt.load(x, (0, 0), (BN, BM))              # (BM, BN) with (BN, BM)
    elif CASE == 1:
        r = t * nt.reshape(nt.load(x, (0, 0), (1, BM)), (BM,))   # (BM, BN) with (BM,)
    elif CASE == 2:
        r = nt.where(t > 0.0, t, nt.load(x, (0, 0), (BM, 2 * BN)))
    else:
        r = nt.maximum(nt.load(x, (0, 0), (2 * BM, 1)), t)
    nt.store(z, r)


@nt.jit
def bad_add(x, y, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load(x, (0, 0), (BM, BN)) - nt.load(y, (0,), (BM,)))  # bad-broadcast


@pytest.mark.parametrize("case", range(4), ids=["transposed", "vec-rows", "where", "maximum"])
def test_shapes_that_do_not_broadcast(tile_backend, case):
    x = tile_backend.asarray(np.ones((64, 64), np.float32))
    z = tile_backend.asarray(np.zeros((8, 16), np.float32))
    with pytest.raises(TileTypingError, match="broadcast"):
        tile_backend.run(bad_shapes, x, nt.partition(z, (8, 16)), 8, 16, case)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), 0)


def test_broadcast_error_points_at_the_users_line(tile_backend):
    x = tile_backend.asarray(np.ones((8, 16), np.float32))
    y = tile_backend.asarray(np.ones(8, np.float32))
    z = tile_backend.asarray(np.zeros((8, 16), np.float32))
    with pytest.raises(TileTypingError) as info:
        tile_backend.run(bad_add, x, y, nt.partition(z, (8, 16)), 8, 16)
    err = info.value
    assert "broadcast" in str(err) and "(8, 16)" in str(err) and "(8,)" in str(err), str(err)
    assert err.filename == __file__
    with open(__file__) as f:
        line = next(i for i, s in enumerate(f, 1) if s.rstrip().endswith("# bad-broadcast"))
    assert err.lineno == line
