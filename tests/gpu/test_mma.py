"""Matrix products on tiles (mma, matmul, @) against NumPy float64, on the GPU and in the
interpreter: every dtype pair of the table, ragged M, N, K with masked edges (views with
NaN next to them), TF32 only when asked, elementwise work on the accumulator."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

F16, BF16 = np.dtype(np.float16), np.dtype(BFLOAT16_NP)


@nt.jit
def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
         BK: nt.Constant, ACC: nt.Constant, PREC: nt.Constant):
    i = nt.bid(0)
    j = nt.bid(1)
    acc = nt.zeros((BM, BN), ACC)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (i, k), (BM, BK))            # masked at the edges: zero along K
        y = nt.load(b, (k, j), (BK, BN))
        acc = nt.mma(x, y, acc, precision=PREC)
    nt.store(c, acc)


GEMM = {4: gemm, 2: nt.jit(num_warps=2)(gemm.__wrapped__), 8: nt.jit(num_warps=8)(gemm.__wrapped__)}


def nan_framed(rng, shape, dt, lo=-3, hi=4):
    """Integer-valued ``shape`` view of a larger array whose other elements are NaN (or the
    dtype's extreme for integers): a product that read past the view would show it."""
    rows, cols = shape
    kind = np.dtype(dt).kind
    big = np.full((rows + 5, cols + 7), np.nan if kind == "f" else 127, np.float64)
    big[:rows, :cols] = rng.integers(lo, hi, shape)
    return big.astype(dt)[:rows, :cols]


CASES = [
    # (input dtype, accumulator dtype, precision, (BM, BN, BK), num_warps)
    (F16, np.float32, None, (64, 64, 32), 4),
    (F16, np.float32, None, (128, 128, 32), 4),
    (F16, np.float32, None, (16, 16, 16), 4),
    (F16, np.float16, None, (64, 64, 32), 4),
    (BF16, np.float32, None, (64, 128, 64), 4),
    (BF16, np.float32, None, (128, 256, 32), 8),
    (np.int8, np.int32, None, (64, 64, 64), 4),
    (np.int8, np.int32, None, (32, 16, 32), 2),
    (np.float32, np.float32, None, (32, 32, 16), 4),
    (np.float32, np.float32, "tf32", (64, 64, 32), 4),
    (np.float64, np.float64, None, (32, 32, 16), 4),
]


def _id(case):
    dt, acc, prec, tile, w = case
    return f"{np.dtype(dt).name}-{np.dtype(acc).name}-{prec or 'ieee'}-{'x'.join(map(str, tile))}-w{w}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_gemm_ragged_edges_exact(tile_backend, case):
    dt, acc_dt, prec, (bm, bn, bk), warps = case
    rng = np.random.default_rng()
    m, n, k = int(rng.integers(bm + 1, 3 * bm)), int(rng.integers(bn + 1, 3 * bn)), \
        int(rng.integers(bk + 1, 3 * bk))
    if np.dtype(acc_dt) == np.float16:
        k = min(k, 40)                   # float16 sums of small integers stay exact
    ah, bh = nan_framed(rng, (m, k), dt), nan_framed(rng, (k, n), dt)
    c = tile_backend.asarray(np.full((m, n), -7, acc_dt))
    tile_backend.run(GEMM[warps], tile_backend.asarray(ah), tile_backend.asarray(bh),
                     nt.partition(c, (bm, bn)), bm, bn, bk, np.dtype(acc_dt).name, prec)
    ref = ah.astype(np.float64) @ bh.astype(np.float64)
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.float64), ref)


@nt.jit
def tile_product(a, b, c: nt.Partition[("M", "N")], M: nt.Constant, N: nt.Constant,
                 K: nt.Constant, PREC: nt.Constant):
    x = nt.load(a, (0, 0), (M, K), padding=0)
    y = nt.load(b, (0, 0), (K, N), padding=0)
    nt.store(c, nt.matmul(x, y, precision=PREC))


def test_float32_is_ieee_unless_tf32_is_asked(tile_backend):
    """(1 + 2**-12) * I @ I: exact in float32; TF32 (10 significand bits) rounds it to 1."""
    n = 32
    a = (np.eye(n) * (1 + 2.0 ** -12)).astype(np.float32)
    b = np.eye(n, dtype=np.float32)
    for prec, expect in ((None, np.float32(1 + 2.0 ** -12)), ("ieee", np.float32(1 + 2.0 ** -12)),
                         ("tf32", np.float32(1.0))):
        c = tile_backend.asarray(np.zeros((n, n), np.float32))
        tile_backend.run(tile_product, tile_backend.asarray(a), tile_backend.asarray(b),
                         nt.partition(c, (n, n)), n, n, n, prec)
        got = tile_backend.to_numpy(c)
        np.testing.assert_array_equal(np.diag(got), np.full(n, expect, np.float32))
        assert np.count_nonzero(got - np.diag(np.diag(got))) == 0


def test_float32_random_matches_float64_reference(tile_backend):
    rng = np.random.default_rng()
    m, n, k = 64, 32, 64
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for prec, tol in ((None, 1e-5), ("tf32", 2e-2)):
        c = tile_backend.asarray(np.zeros((m, n), np.float32))
        tile_backend.run(tile_product, tile_backend.asarray(a), tile_backend.asarray(b),
                         nt.partition(c, (m, n)), m, n, k, prec)
        err = np.abs(tile_backend.to_numpy(c) - ref).max() / np.abs(ref).max()
        assert err < tol, (prec, err)
    if prec == "tf32":
        assert err > 1e-6          # TF32 really was used: its error is visible


@nt.jit
def epilogue(a, b, bias, c: nt.Partition[("M", "N")], M: nt.Constant, N: nt.Constant,
             K: nt.Constant):
    x = nt.load(a, (0, 0), (M, K), padding=0)
    y = nt.load(b, (0, 0), (K, N), padding=0)
    acc = x @ y                                     # float32 accumulator for float16 inputs
    acc = acc * 0.5 + nt.load(bias, (0, 0), (M, N), padding=0)
    acc = nt.maximum(acc, 0.0)
    nt.store(c, nt.astype(acc, nt.float16))


def test_operator_and_elementwise_epilogue(tile_backend):
    rng = np.random.default_rng()
    m, n, k = 64, 64, 32
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    bias = rng.integers(-20, 20, (m, n)).astype(np.float32)
    c = tile_backend.asarray(np.zeros((m, n), np.float16))
    tile_backend.run(epilogue, tile_backend.asarray(a), tile_backend.asarray(b),
                     tile_backend.asarray(bias), nt.partition(c, (m, n)), m, n, k)
    ref = np.maximum((a.astype(np.float64) @ b.astype(np.float64)) * 0.5 + bias, 0)
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.float64), ref)


@nt.jit
def chained(a, b, d, c: nt.Partition[("M", "N")], M: nt.Constant, N: nt.Constant,
            K: nt.Constant):
    """(A @ B) @ D: the first product's accumulator is the next one's operand (attention's
    P @ V shape)."""
    x = nt.load(a, (0, 0), (M, K), padding=0)
    y = nt.load(b, (0, 0), (K, K), padding=0)
    p = nt.astype(nt.matmul(x, y), nt.float16)
    nt.store(c, nt.matmul(p, nt.load(d, (0, 0), (K, N), padding=0)))


def test_accumulator_as_the_next_operand(tile_backend):
    rng = np.random.default_rng()
    m, n, k = 32, 64, 32
    a = rng.integers(-2, 3, (m, k)).astype(np.float16)
    b = rng.integers(-2, 3, (k, k)).astype(np.float16)
    d = rng.integers(-2, 3, (k, n)).astype(np.float16)
    c = tile_backend.asarray(np.zeros((m, n), np.float32))
    tile_backend.run(chained, tile_backend.asarray(a), tile_backend.asarray(b),
                     tile_backend.asarray(d), nt.partition(c, (m, n)), m, n, k)
    ref = (a.astype(np.float64) @ b.astype(np.float64)) @ d.astype(np.float64)
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.float64), ref)


def test_half_accumulation_rounds_in_float16(tile_backend):
    """float16 accumulation is really float16: after 32768 (float16 spacing 32 there) each
    16-deep step adds 8, less than half a spacing, which a float16 accumulator loses and a
    float32 accumulator keeps (whatever the instruction's internal precision: its result
    is rounded to float16 after every step)."""
    m, n, k = 16, 16, 64
    a = np.full((m, k), 0.5, np.float16)
    a[:, 0] = 32768
    b = np.ones((k, n), np.float16)
    res = {}
    for acc in ("float16", "float32"):
        c = tile_backend.asarray(np.zeros((m, n), acc))
        tile_backend.run(gemm, tile_backend.asarray(a), tile_backend.asarray(b),
                         nt.partition(c, (m, n)), m, n, 16, acc, None)
        res[acc] = tile_backend.to_numpy(c).astype(np.float64)
    assert np.all(res["float32"] == 32768 + 63 * 0.5)
    assert np.all(res["float16"] == 32768)


def _pipelined(stages, warps=4):
    @nt.jit(num_warps=warps, num_stages=stages)
    def gemm_staged(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                    BK: nt.Constant):
        i = nt.bid(0)
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (i, k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN))
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    return gemm_staged


STAGED = {s: _pipelined(s) for s in (2, 3, 4)}


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("dt", [F16, BF16], ids=["float16", "bfloat16"])
def test_pipelined_gemm_ragged(tile_backend, stages, dt):
    """num_stages > 1: the loads feeding mma travel by cp.async through a ring of shared
    slots; ragged M, a K that is not a multiple of BK (zero-filled), NaN past the views."""
    rng = np.random.default_rng()
    bm, bn, bk = 64, 64, 32
    m = int(rng.integers(bm + 1, 4 * bm))
    k = 8 * int(rng.integers(5 * bk // 8, 9 * bk // 8))    # rows of 16-byte multiples
    n = 8 * int(rng.integers(bn // 8 + 1, 3 * bn // 8))
    ah = np.full((m, k + 8), np.nan).astype(dt)
    bh = np.full((k, n + 8), np.nan).astype(dt)
    ah[:, :k] = rng.integers(-3, 4, (m, k))
    bh[:, :n] = rng.integers(-3, 4, (k, n))
    a_dev, b_dev = tile_backend.asarray(ah), tile_backend.asarray(bh)
    c = tile_backend.asarray(np.full((m, n), -7, np.float32))
    tile_backend.run(STAGED[stages], a_dev[:, :k], b_dev[:, :n], nt.partition(c, (bm, bn)),
                     bm, bn, bk)
    ref = ah[:, :k].astype(np.float64) @ bh[:, :n].astype(np.float64)
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.float64), ref)


@nt.jit(num_stages=3)
def persistent_gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                    BK: nt.Constant):
    """The pipelined K loop runs again for every tile a block owns: each run starts with
    the copies the previous run left in flight past its end."""
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
            y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc, idx)


def test_pipelined_persistent_gemm(tile_backend):
    rng = np.random.default_rng()
    m, n, k = 300, 200, 136
    ah = rng.integers(-3, 4, (m, k)).astype(np.float16)
    bh = rng.integers(-3, 4, (k, n)).astype(np.float16)
    c = tile_backend.asarray(np.zeros((m, n), np.float32))
    try:
        tile_backend.run(persistent_gemm, tile_backend.asarray(ah), tile_backend.asarray(bh),
                         nt.partition(c, (64, 64), blocks=5), 64, 64, 32)
    except nt.errors.TileTypingError as e:
        if "idx" in str(e) or "getitem" in str(e).lower():
            pytest.skip(f"branded index coordinates not available yet: {e}")
        raise
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.float64),
                                  ah.astype(np.float64) @ bh.astype(np.float64))


@nt.jit(num_stages=3)
def rerun_pipeline(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant, R: nt.Constant):
    """The pipelined K loop inside another loop: every run refills the slots the previous
    run's last product read (a barrier must come first)."""
    acc = nt.zeros((BM, BN), nt.float32)
    for r in range(R):
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0) + r * 0, k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
    nt.store(c, acc)


def test_pipelined_loop_run_again(tile_backend):
    rng = np.random.default_rng()
    m, n, k = 256, 192, 264
    ah = rng.integers(-3, 4, (m, k)).astype(np.float16)
    bh = rng.integers(-3, 4, (k, n)).astype(np.float16)
    c = tile_backend.asarray(np.zeros((m, n), np.float32))
    tile_backend.run(rerun_pipeline, tile_backend.asarray(ah), tile_backend.asarray(bh),
                     nt.partition(c, (64, 64)), 64, 64, 32, 3)
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.float64),
                                  3 * (ah.astype(np.float64) @ bh.astype(np.float64)))
