"""Pipelined loads in loops that do not start at 0 and ``load_at`` offsets ``o + k * C``.

A ``for k in range(a, n)`` loop (``a`` any integer the same for the whole loop: negative,
past the tile grid, different in every block, as a causal attention backward's query loop
``range(first, n)``) stages its loads as ``range(n)`` does: the pipeline counts iterations
from ``a`` and tile ``k``'s copies read tile ``k``, the ordinary load's bounds and zero fill
(a negative tile index reads padding). A ``load_at`` offset ``o + k * C`` with ``o``
loop-invariant is staged too, windows of any sign reaching across either edge, as are
``(BN, 1, D)`` tiles of a packed (S, H, D) tensor (the plane of its first and last axes). On the GPU and
in the interpreter, against NumPy in float64; the explain checks need no GPU."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP


@nt.jit(num_warps=4)
def gemm_range(a, b, c: nt.Partition[("BM", "BN")], k0, k1, BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant):
    """C's tile = sum over k in range(k0, k1) of A's (i, k) tile @ B's (k, j) tile."""
    i = nt.bid(0)
    j = nt.bid(1)
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(k0, k1):
        x = nt.load(a, (i, k), (BM, BK), padding=0)
        y = nt.load(b, (k, j), (BK, BN), padding=0)
        acc = nt.mma(x, y, acc)
    nt.store(c, nt.astype(acc, c.dtype))


@nt.jit(num_warps=4)
def gemm_from_diagonal(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """C's tile (i, j) = sum over k >= i of A's (i, k) tile @ B's (k, j) tile (BK = BM): the
    loop starts at the block's own row of tiles."""
    i = nt.bid(0)
    j = nt.bid(1)
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(i, nt.num_tiles(a, 1, BM)):
        acc += nt.load(a, (i, k), (BM, BM), padding=0) @ nt.load(b, (k, j), (BM, BN),
                                                                  padding=0)
    nt.store(c, nt.astype(acc, c.dtype))


@nt.jit(num_warps=4)
def gemm_at_base(a, b, c: nt.Partition[("BM", "BN")], o, n, BM: nt.Constant, BN: nt.Constant,
                 BK: nt.Constant):
    """C's tile = sum over k < n of A[rows, o + k BK : ...] @ B[o + k BK : ..., cols] (o a
    multiple of 8 elements: 16 bytes of float16)."""
    i = nt.bid(0)
    j = nt.bid(1)
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(n):
        x = nt.load_at(a, (i * BM, o + k * BK), (BM, BK), padding=0)
        y = nt.load_at(b, (k * BK + o, j * BN), (BK, BN), padding=0)
        acc += x @ y
    nt.store(c, nt.astype(acc, c.dtype))


@nt.jit(num_warps=4)
def window_sums(x, out: nt.Partition[(1, "BN")], k0, k1, o, C: nt.Constant, R: nt.Constant,
                BN: nt.Constant, PAD: nt.Constant):
    """out[j] = sum over k in range(k0, k1) of the (R, BN) window at rows o + k C."""
    for idx in nt.tiles(out):
        s = nt.zeros((1, BN), nt.float32)
        for k in range(k0, k1):
            t = nt.load_at(x, (o + k * C, idx[1] * BN), (R, BN), padding=PAD)
            s = s + nt.sum(nt.astype(t, nt.float32), axis=0, keepdims=True)
        nt.store(out, s, idx)


@nt.jit(num_warps=4)
def head_window_sums(x, out: nt.Partition[(1, "D")], k0, k1, o, C: nt.Constant,
                     R: nt.Constant, D: nt.Constant):
    """out[h] = sum over k in range(k0, k1) of x[h, o + k C : o + k C + R, :] (a 3-D tensor,
    the head coordinate fixed in the loop)."""
    h = nt.bid(0)
    s = nt.zeros((1, D), nt.float32)
    for k in range(k0, k1):
        t = nt.load_at(x, (h, o + k * C, 0), (1, R, D), padding=0)
        s = s + nt.reshape(nt.sum(nt.astype(t, nt.float32), axis=1), (1, D))
    nt.store(out, s)


@nt.jit(num_warps=4)
def packed_products(a, v, kt, out: nt.Partition[("BM", "D")], s_out: nt.Partition[("BM", "BN")],
                    h, o, k0, k1, BM: nt.Constant, BN: nt.Constant, D: nt.Constant):
    """Tiles of a packed (S, H, D) tensor, (BN, 1, D) at rows o + k BN of head h, as a
    product's operand b (out = sum over k of A's (i, k) tile @ V's rows) and transposed
    (s_out = sum over k of Q's tile i @ K's rows^T, Q = A's first D columns)."""
    i = nt.bid(0)
    acc = nt.zeros((BM, D), nt.float32)
    s = nt.zeros((BM, BN), nt.float32)
    q = nt.load(a, (i, 0), (BM, D), padding=0)
    for k in range(k0, k1):
        x = nt.load(a, (i, k), (BM, BN), padding=0)
        y = nt.load_at(v, (o + k * BN, h, 0), (BN, 1, D), padding=0)
        acc += x @ nt.reshape(y, (BN, D))
        z = nt.load_at(kt, (o + k * BN, h, 0), (BN, 1, D), padding=0)
        s += q @ nt.transpose(nt.reshape(z, (BN, D)))
    nt.store(out, nt.astype(acc, out.dtype))
    nt.store(s_out, s)


@nt.jit(num_warps=4)
def two_products_of_one_tile(kt, vt, q, do, dk: nt.Partition[("BN", "D")],
                             dv: nt.Partition[("BN", "D")], first, BM: nt.Constant,
                             BN: nt.Constant, D: nt.Constant):
    """An attention backward's key-block loop without the softmax: each query tile and each
    output-gradient tile feeds two products (``k q^T`` and ``s^T q``; ``s^T do`` and
    ``v do^T``), all reading the tiles' slots."""
    n = nt.bid(0)
    kb = nt.load(kt, (n, 0), (BN, D), padding=0)
    vb = nt.load(vt, (n, 0), (BN, D), padding=0)
    dk_acc = nt.zeros((BN, D), nt.float32)
    dv_acc = nt.zeros((BN, D), nt.float32)
    for m in range(first, nt.num_tiles(q, 0, BM)):
        qt = nt.load(q, (m, 0), (BM, D), padding=0)
        dot = nt.reshape(nt.load(do, (0, m, 0), (1, BM, D), padding=0), (BM, D))
        st = kb @ qt.T
        dv_acc += nt.astype(st, nt.float16) @ dot
        dst = st * (vb @ dot.T)
        dk_acc += nt.astype(dst, nt.float16) @ qt
    nt.store(dk, nt.astype(dk_acc, dk.dtype))
    nt.store(dv, nt.astype(dv_acc, dv.dtype))


def _rand(rng, shape, dt):
    return rng.uniform(-1, 1, shape).astype(dt)


def _tile_sum(a, b, ks, BK):
    """sum over k in ks of a[:, k BK:(k+1) BK] @ b[k BK:(k+1) BK, :], tiles outside: zeros."""
    want = np.zeros((a.shape[0], b.shape[1]))
    for k in ks:
        lo, hi = max(k * BK, 0), min((k + 1) * BK, a.shape[1])
        if k >= 0 and lo < hi:
            want += a[:, lo:hi].astype(np.float64) @ b[lo:hi].astype(np.float64)
    return want


# (dtype, M, K, N, BM, BN, BK, stages, k0, k1)
RANGE_CASES = [
    (np.float16, 100, 200, 96, 64, 32, 32, 3, 2, 7),      # starts inside, ends past the grid
    (BFLOAT16_NP, 130, 136, 72, 64, 64, 64, 4, -2, 2),    # starts before the grid
    (np.float16, 64, 96, 80, 64, 16, 16, 2, 5, 5),        # an empty range
    (np.float16, 72, 160, 64, 64, 64, 32, 5, 1, 3),       # fewer iterations than stages
    (BFLOAT16_NP, 40, 64, 40, 64, 32, 64, 3, 3, 6),       # every tile past the grid
]


@pytest.mark.parametrize("impl", ["wgmma", "sync"])
@pytest.mark.parametrize("case", RANGE_CASES, ids=lambda c: "-".join(map(str, c[1:])))
def test_gemm_over_a_range_that_starts_anywhere(tile_backend, monkeypatch, case, impl):
    dt, m, kk, n, BM, BN, BK, stages, k0, k1 = case
    if impl == "sync":
        monkeypatch.setenv("NUMBA_TILE_MMA", "sync")
    rng = np.random.default_rng()
    a, b = _rand(rng, (m, kk), dt), _rand(rng, (kk, n), dt)
    c = tile_backend.asarray(np.full((m, n), 9, dt))
    tile_backend.run(gemm_range.with_options(num_stages=stages), tile_backend.asarray(a),
                     tile_backend.asarray(b), nt.partition(c, (BM, BN)), k0, k1, BM, BN, BK)
    want = _tile_sum(a, b, range(k0, k1), BK)
    np.testing.assert_allclose(tile_backend.to_numpy(c).astype(np.float64), want,
                               rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("shape", [(200, 96), (64, 64), (129, 40)])
def test_a_loop_starting_at_the_blocks_own_row_of_tiles(tile_backend, stages, shape):
    m, n = shape
    BM, BN = 64, 32
    rng = np.random.default_rng()
    a, b = _rand(rng, (m, m), np.float16), _rand(rng, (m, n), np.float16)
    c = tile_backend.asarray(np.full((m, n), 9, np.float16))
    tile_backend.run(gemm_from_diagonal.with_options(num_stages=stages), tile_backend.asarray(a),
                     tile_backend.asarray(b), nt.partition(c, (BM, BN)), BM, BN)
    want = np.zeros((m, n))
    nk = -(-m // BM)
    for i in range(nk):
        rows = slice(i * BM, (i + 1) * BM)
        want[rows] = _tile_sum(a[rows], b, range(i, nk), BM)
    np.testing.assert_allclose(tile_backend.to_numpy(c).astype(np.float64), want,
                               rtol=2e-2, atol=2e-2)


# (M, K, N, BM, BN, BK, stages, o, n)
BASE_CASES = [
    (100, 200, 96, 64, 32, 32, 3, 40, 5),      # starts inside, runs past the end
    (64, 72, 64, 64, 64, 64, 4, -24, 3),       # starts before the array
    (80, 64, 48, 64, 16, 16, 2, 8, 4),
]


@pytest.mark.parametrize("case", BASE_CASES, ids=lambda c: "-".join(map(str, c)))
def test_gemm_of_offsets_with_a_base(tile_backend, case):
    m, kk, n, BM, BN, BK, stages, o, steps = case
    rng = np.random.default_rng()
    a, b = _rand(rng, (m, kk), np.float16), _rand(rng, (kk, n), np.float16)
    c = tile_backend.asarray(np.full((m, n), 9, np.float16))
    tile_backend.run(gemm_at_base.with_options(num_stages=stages), tile_backend.asarray(a),
                     tile_backend.asarray(b), nt.partition(c, (BM, BN)), o, steps, BM, BN, BK)
    cols = np.arange(o, o + steps * BK)
    inside = (cols >= 0) & (cols < kk)
    a_win = np.where(inside[None, :], a[:, np.clip(cols, 0, kk - 1)], 0).astype(np.float64)
    b_win = np.where(inside[:, None], b[np.clip(cols, 0, kk - 1)], 0).astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(c).astype(np.float64), a_win @ b_win,
                               rtol=2e-2, atol=2e-2)


def _window_reference(x, ks, o, C, R, pad):
    rows = x.shape[0]
    want = np.zeros(x.shape[1:])
    for k in ks:
        r = np.arange(o + k * C, o + k * C + R)
        ok = (r >= 0) & (r < rows)
        win = np.where(ok.reshape((-1,) + (1,) * (x.ndim - 1)), x[np.clip(r, 0, rows - 1)],
                       pad).astype(np.float64)
        want += win.sum(axis=0)
    return want


# (dtype, rows, cols, k0, k1, o, C, R, BN, pad, stages)
WINDOW_CASES = [
    (np.float32, 100, 96, -3, 4, 5, 16, 32, 32, 0, 3),     # overlapping windows from before 0
    (np.float32, 70, 64, 2, 9, -40, 24, 16, 64, 5.0, 4),   # gaps, padding 5
    (np.int32, 50, 40, -1, 3, 7, 40, 64, 8, -7, 2),        # windows wider than the array
    (np.float16, 33, 128, 0, 5, -13, 12, 16, 64, 0, 3),    # range(0, n) with a base
    (np.float32, 64, 32, 4, 4, 0, 16, 16, 32, 0, 3),       # an empty range
]


@pytest.mark.parametrize("case", WINDOW_CASES, ids=lambda c: "-".join(map(str, c)))
def test_windows_at_a_base_plus_k_times_c(tile_backend, case):
    dt, rows, cols, k0, k1, o, C, R, BN, pad, stages = case
    rng = np.random.default_rng()
    x = (rng.integers(-1000, 1000, (rows, cols)) if dt == np.int32
         else rng.standard_normal((rows, cols))).astype(dt)
    out = tile_backend.asarray(np.zeros((1, cols), np.float32))
    tile_backend.run(window_sums.with_options(num_stages=stages), tile_backend.asarray(x),
                     nt.partition(out, (1, BN)), k0, k1, o, C, R, BN, pad)
    want = _window_reference(x, range(k0, k1), o, C, R, pad)
    np.testing.assert_allclose(tile_backend.to_numpy(out)[0].astype(np.float64), want,
                               rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("k0,k1,o", [(-2, 3, 0), (1, 6, -30), (0, 4, 17)])
def test_windows_of_a_3d_tensor_at_a_base(tile_backend, k0, k1, o):
    rng = np.random.default_rng()
    heads, seq, D, C, R = 3, 70, 64, 16, 32
    x = _rand(rng, (heads, seq, D), np.float16)
    out = tile_backend.asarray(np.zeros((heads, D), np.float32))
    tile_backend.run(head_window_sums.with_options(num_stages=3), tile_backend.asarray(x),
                     nt.partition(out, (1, D)), k0, k1, o, C, R, D)
    want = np.stack([_window_reference(x[h], range(k0, k1), o, C, R, 0) for h in range(heads)])
    np.testing.assert_allclose(tile_backend.to_numpy(out).astype(np.float64), want,
                               rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("o,k0,k1", [(0, 0, 3), (-40, 1, 4), (24, -1, 2)])
def test_tiles_of_a_packed_tensor_feed_products(tile_backend, stages, o, k0, k1):
    rng = np.random.default_rng()
    m, S, H, D, BM, BN, h = 96, 150, 3, 64, 64, 32, 1
    ncols = 256
    a = _rand(rng, (m, ncols), np.float16)
    v, kt = _rand(rng, (S, H, D), np.float16), _rand(rng, (S, H, D), np.float16)
    out = tile_backend.asarray(np.full((m, D), 9, np.float16))
    s_out = tile_backend.asarray(np.full((m, BN), 9, np.float32))
    tile_backend.run(packed_products.with_options(num_stages=stages), tile_backend.asarray(a),
                     tile_backend.asarray(v), tile_backend.asarray(kt),
                     nt.partition(out, (BM, D)), nt.partition(s_out, (BM, BN)), h, o, k0, k1,
                     BM, BN, D)
    want = np.zeros((m, D))
    want_s = np.zeros((m, BN))
    a64 = a.astype(np.float64)
    for k in range(k0, k1):
        r = np.arange(o + k * BN, o + (k + 1) * BN)
        ok = ((r >= 0) & (r < S))[:, None]
        vk = np.where(ok, v[np.clip(r, 0, S - 1), h], 0).astype(np.float64)
        kk = np.where(ok, kt[np.clip(r, 0, S - 1), h], 0).astype(np.float64)
        cols = np.arange(k * BN, (k + 1) * BN)
        x = np.where(((cols >= 0) & (cols < ncols))[None, :], a64[:, np.clip(cols, 0, ncols - 1)],
                     0)
        want += x @ vk
        want_s += a64[:, :D] @ kk.T
    np.testing.assert_allclose(tile_backend.to_numpy(out).astype(np.float64), want,
                               rtol=2e-2, atol=5e-2)
    np.testing.assert_allclose(tile_backend.to_numpy(s_out).astype(np.float64), want_s,
                               rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("impl", ["wgmma", "sync"])
@pytest.mark.parametrize("stages,first", [(2, 0), (3, 1), (4, -1)])
def test_a_tile_feeding_several_products_is_read_from_its_slot(tile_backend, monkeypatch,
                                                               impl, stages, first):
    if impl == "sync":
        monkeypatch.setenv("NUMBA_TILE_MMA", "sync")
    rng = np.random.default_rng()
    S, SK, D, BM, BN = 200, 130, 64, 64, 64
    f16 = np.float16
    k, v = (rng.uniform(-0.5, 0.5, (SK, D)).astype(f16) for _ in range(2))
    q, do = (rng.uniform(-0.5, 0.5, (S, D)).astype(f16) for _ in range(2))
    dk = tile_backend.asarray(np.full((SK, D), 9, np.float32))
    dv = tile_backend.asarray(np.full((SK, D), 9, np.float32))
    tile_backend.run(two_products_of_one_tile.with_options(num_stages=stages),
                     tile_backend.asarray(k), tile_backend.asarray(v), tile_backend.asarray(q),
                     tile_backend.asarray(do[None]), nt.partition(dk, (BN, D)),
                     nt.partition(dv, (BN, D)), first, BM, BN, D)
    want_dk, want_dv = np.zeros((SK, D)), np.zeros((SK, D))
    k64, v64, q64, do64 = (x.astype(np.float64) for x in (k, v, q, do))
    for n in range(-(-SK // BN)):
        rows = slice(n * BN, (n + 1) * BN)
        for m in range(max(first, 0), -(-S // BM)):
            cols = slice(m * BM, (m + 1) * BM)
            st = k64[rows] @ q64[cols].T
            st16 = st.astype(f16).astype(np.float64)
            want_dv[rows] += st16 @ do64[cols]
            dst = (st * (v64[rows] @ do64[cols].T)).astype(f16).astype(np.float64)
            want_dk[rows] += dst @ q64[cols]
    np.testing.assert_allclose(tile_backend.to_numpy(dv), want_dv, rtol=2e-2, atol=5e-2)
    np.testing.assert_allclose(tile_backend.to_numpy(dk), want_dk, rtol=2e-2, atol=5e-2)
    if tile_backend.name != "interpreter":
        return
    args = (k, v, q, do[None], nt.partition(np.zeros((SK, D), np.float32), (BN, D)),
            nt.partition(np.zeros((SK, D), np.float32), (BN, D)), first, BM, BN, D)
    text = str(two_products_of_one_tile.with_options(num_stages=stages).explain(*args,
                                                                                cc=(9, 0)))
    assert text.count(f"pipelined: {stages} stages of cp.async copies, read by the product") \
        == 2, text


def test_explain_says_these_loads_are_pipelined_and_why_not_by_tma():
    a, b = np.zeros((100, 72), np.float16), np.zeros((72, 96), np.float16)
    args = (a, b, nt.partition(np.zeros((100, 96), np.float16), (64, 32)), -1, 3, 64, 32, 32)
    text = str(gemm_range.with_options(num_stages=3).explain(*args, cc=(9, 0)))
    assert text.count("pipelined: 3 stages of cp.async copies, read by the product") == 2, text
    assert "a loop that does not start at 0" in text, text
    x = np.zeros((100, 96), np.float32)
    args = (x, nt.partition(np.zeros((1, 96), np.float32), (1, 32)), -2, 5, 3, 16, 32, 32, 0)
    text = str(window_sums.with_options(num_stages=3).explain(*args, cc=(9, 0)))
    assert "pipelined: 3 stages of cp.async copies, read back into registers" in text, text

    @nt.jit
    def unaligned(x, out: nt.Partition[(1, 32)], s):
        for idx in nt.tiles(out):
            acc = nt.zeros((1, 32), nt.float32)
            for k in range(1, 4):
                acc = acc + nt.load_at(x, (0, s + k * 8), (1, 32), padding=0)
            nt.store(out, acc, idx)
    text = str(unaligned.with_options(num_stages=3).explain(
        x, nt.partition(np.zeros((1, 96), np.float32), (1, 32)), 1, cc=(9, 0)))
    assert "starts at a value that is not a visible multiple of 4 elements" in text, text
    a = np.zeros((96, 256), np.float16)
    v = np.zeros((150, 3, 64), np.float16)
    args = (a, v, v, nt.partition(np.zeros((96, 64), np.float16), (64, 64)),
            nt.partition(np.zeros((96, 32), np.float32), (64, 32)), 1, 0, 0, 3, 64, 32, 64)
    text = str(packed_products.with_options(num_stages=3).explain(*args, cc=(9, 0)))
    assert text.count("pipelined: 3 stages of cp.async copies, read by the product") == 3, text


@nt.jit(num_warps=4)
def tile_and_its_transpose(X, Z, c: nt.Partition[(64, 64)], d: nt.Partition[(64, 64)], k0, k1):
    """x feeds x @ x.T (as a and, through the transpose, as b) and z @ x.T."""
    acc = nt.zeros((64, 64), nt.float32)
    acc2 = nt.zeros((64, 64), nt.float32)
    for k in range(k0, k1):
        x = nt.load(X, (k, 0), (64, 64), padding=0)
        xt = x.T
        acc = acc + x @ xt
        z = nt.load(Z, (k, 0), (64, 64), padding=0)
        acc2 = acc2 + z @ xt
    nt.store(c, acc)
    nt.store(d, acc2)


@nt.jit(num_warps=4)
def tile_as_its_own_accumulator(X, Y, c: nt.Partition[(64, 64)], k0, k1):
    """x is operand a of mma(x, y, x) and its accumulator: the accumulator reads x's
    registers, so x is read back into them."""
    s = nt.zeros((64, 64), nt.float32)
    for k in range(k0, k1):
        x = nt.load(X, (k, 0), (64, 64), padding=0)
        y = nt.load(Y, (k, 0), (64, 64), padding=0)
        s = s + nt.astype(nt.mma(x, y, x), nt.float32)
    nt.store(c, s)


@nt.jit(num_warps=4)
def far_tiles(x, out: nt.Partition[(1, 64)], k0, k1):
    s = nt.zeros((1, 64), nt.float32)
    for k in range(k0, k1):
        s = s + nt.sum(nt.load(x, (k, 0), (32, 64), padding=0), axis=0, keepdims=True)
    nt.store(out, s)


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_a_tile_read_twice_by_one_product_waits_for_its_tile(tile_backend, stages):
    rng = np.random.default_rng()
    X = rng.uniform(-1, 1, (200, 64)).astype(np.float16)
    Z = rng.uniform(-1, 1, (200, 64)).astype(np.float16)
    c = tile_backend.asarray(np.full((64, 64), 9, np.float32))
    d = tile_backend.asarray(np.full((64, 64), 9, np.float32))
    tile_backend.run(tile_and_its_transpose.with_options(num_stages=stages),
                     tile_backend.asarray(X), tile_backend.asarray(Z), nt.partition(c, (64, 64)),
                     nt.partition(d, (64, 64)), 0, 4)
    Xp = np.zeros((256, 64))
    Xp[:200] = X
    Zp = np.zeros((256, 64))
    Zp[:200] = Z
    want_c = sum(Xp[k * 64:(k + 1) * 64] @ Xp[k * 64:(k + 1) * 64].T for k in range(4))
    want_d = sum(Zp[k * 64:(k + 1) * 64] @ Xp[k * 64:(k + 1) * 64].T for k in range(4))
    np.testing.assert_allclose(tile_backend.to_numpy(c), want_c, rtol=1e-2, atol=5e-2)
    np.testing.assert_allclose(tile_backend.to_numpy(d), want_d, rtol=1e-2, atol=5e-2)


def test_each_product_of_a_shared_tile_waits_by_its_own_position():
    """x @ x.T comes first in its iteration (one staged load before it), z @ x.T after both
    loads: with 3 stages they wait for 2 and 2 pending groups (``wait_depth``), the first not
    by the second's position."""
    import re
    X = np.zeros((200, 64), np.float16)
    args = (X, X, nt.partition(np.zeros((64, 64), np.float32), (64, 64)),
            nt.partition(np.zeros((64, 64), np.float32), (64, 64)), 0, 4)
    for cc in ((8, 0), (9, 0)):
        ptx = tile_and_its_transpose.with_options(num_stages=3).ptx(*args, cc=cc)
        waits = [int(w) for w in re.findall(r"cp\.async\.wait_group (\d+);", ptx)]
        assert waits and max(waits) <= 2, (cc, waits)


def test_a_tile_that_is_also_an_accumulator_is_read_into_registers(tile_backend):
    rng = np.random.default_rng()
    X = rng.uniform(-1, 1, (130, 64)).astype(np.float16)
    Y = rng.uniform(-1, 1, (130, 64)).astype(np.float16)
    c = tile_backend.asarray(np.full((64, 64), 9, np.float32))
    tile_backend.run(tile_as_its_own_accumulator.with_options(num_stages=3),
                     tile_backend.asarray(X), tile_backend.asarray(Y),
                     nt.partition(c, (64, 64)), 0, 3)
    Xp, Yp = np.zeros((192, 64)), np.zeros((192, 64))
    Xp[:130], Yp[:130] = X, Y
    want = np.zeros((64, 64))
    for k in range(3):
        x, y = Xp[k * 64:(k + 1) * 64], Yp[k * 64:(k + 1) * 64]
        want += (x @ y + x).astype(np.float16)
    np.testing.assert_allclose(tile_backend.to_numpy(c), want, rtol=1e-2, atol=5e-2)
    if tile_backend.name == "interpreter":
        text = str(tile_as_its_own_accumulator.with_options(num_stages=3).explain(
            X, Y, nt.partition(np.zeros((64, 64), np.float32), (64, 64)), 0, 3, cc=(9, 0)))
        assert "read back into registers" in text, text


@pytest.mark.parametrize("k0", [2**59, 2**58 + 1, -(2**60)])
def test_tile_indices_whose_offsets_wrap_read_padding(tile_backend, k0):
    rng = np.random.default_rng()
    x = rng.uniform(1, 2, (200, 64)).astype(np.float32)
    out = tile_backend.asarray(np.full((1, 64), 9, np.float32))
    tile_backend.run(far_tiles.with_options(num_stages=3), tile_backend.asarray(x),
                     nt.partition(out, (1, 64)), k0, k0 + 2)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), np.zeros((1, 64), np.float32))
