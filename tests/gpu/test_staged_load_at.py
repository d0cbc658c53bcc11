"""``load_at`` with an offset ``k * C`` in a ``for k in range(n)`` loop (C a constant) is
software-pipelined as ``load`` is (``cp.async`` stages): Triton-style GEMMs written with element
offsets, windows that step by less or more than the tile (C not its extent, not a power of
two), leading axes of a 3-D tensor, offsets reaching outside the array on either side (the
padding, zero or not). Offsets along the last axis that are not visibly whole 16-byte chunks
are not staged, and ``explain`` says why. On the GPU and in the interpreter, against NumPy in
float64; the explain checks need no GPU."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP


@nt.jit(num_warps=4)
def gemm_at(a, b, c: nt.Partition[("BM", "BN")], shift, BM: nt.Constant, BN: nt.Constant,
            BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load_at(a, (idx[0] * BM + shift, k * BK), (BM, BK), padding=0)
            y = nt.load_at(b, (k * BK, idx[1] * BN), (BK, BN), padding=0)
            acc += x @ y
        nt.store(c, nt.astype(acc, c.dtype), idx)


@nt.jit(num_warps=4)
def window_max(x, out: nt.Partition[(1, "BN")], n, cshift, C: nt.Constant, R: nt.Constant,
               BN: nt.Constant, PAD: nt.Constant):
    """out[j] = max over k < n of the (R, BN) window at rows k * C, columns j * BN + 8 cshift."""
    for idx in nt.tiles(out):
        m = nt.full((1, BN), -np.inf, nt.float32)
        for k in range(n):
            t = nt.load_at(x, (k * C, idx[1] * BN + 8 * cshift), (R, BN), padding=PAD)
            m = nt.maximum(m, nt.astype(nt.max(t, axis=0, keepdims=True), nt.float32))
        nt.store(out, m, idx)


@nt.jit(num_warps=4)
def batched_row_sums(x, out: nt.Partition[(1, "BM")], C: nt.Constant, BM: nt.Constant,
                     BK: nt.Constant):
    """out[b, i] = sum over k of x[b, i, k * C : k * C + BK] (windows past the end: zeros)."""
    for idx in nt.tiles(out):
        s = nt.zeros((1, BM), nt.float32)
        for k in range(nt.num_tiles(x, 2, C)):
            t = nt.load_at(x, (idx[0], idx[1] * BM, k * C), (1, BM, BK), padding=0)
            s = s + nt.sum(nt.astype(t, nt.float32), axis=2)
        nt.store(out, s, idx)


def _rand(rng, shape, dt):
    return rng.uniform(-1, 1, shape).astype(dt)


# (dtype, M, K, N, BM, BN, BK, stages, shift)
GEMM_CASES = [
    (np.float16, 100, 72, 96, 64, 32, 32, 3, 0),
    (BFLOAT16_NP, 130, 136, 72, 64, 64, 64, 4, -5),
    (np.float16, 64, 40, 200, 128, 64, 16, 2, 37),
]


@pytest.mark.parametrize("impl", ["wgmma", "sync"])
@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: "-".join(map(str, c[1:])))
def test_gemm_of_element_offsets_is_pipelined(tile_backend, monkeypatch, case, impl):
    dt, m, kk, n, BM, BN, BK, stages, shift = case
    if impl == "sync":
        monkeypatch.setenv("NUMBA_TILE_MMA", "sync")
    rng = np.random.default_rng()
    a, b = _rand(rng, (m, kk), dt), _rand(rng, (kk, n), dt)
    c = tile_backend.asarray(np.full((m, n), 9, dt))
    tile_backend.run(gemm_at.with_options(num_stages=stages), tile_backend.asarray(a),
                     tile_backend.asarray(b), nt.partition(c, (BM, BN)), shift, BM, BN, BK)
    rows = np.arange(m) + shift
    a_shift = np.where(((rows >= 0) & (rows < m))[:, None], a[np.clip(rows, 0, m - 1)], 0)
    want = a_shift.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(c).astype(np.float64), want,
                               rtol=2e-2, atol=2e-2)


def _window_max_reference(x, n, cshift, C, R, pad):
    rows, cols = x.shape
    padded = np.full((rows + n * C + R, cols + 16 * abs(cshift) + 64), float(pad))
    c0 = 8 * abs(cshift) + 32
    padded[:rows, c0:c0 + cols] = x
    want = np.full(cols, -np.inf)
    for k in range(n):
        win = padded[k * C:k * C + R, c0 + 8 * cshift:c0 + 8 * cshift + cols]
        want = np.maximum(want, win.max(axis=0))
    return want


# (dtype, rows, cols, n, cshift, C, R, BN, pad)
WINDOW_CASES = [
    (np.float32, 100, 96, 7, 0, 16, 32, 32, -np.inf),     # overlapping windows
    (np.float32, 70, 64, 4, -1, 24, 16, 64, 5.0),        # gaps, a step of 24, padding 5
    (np.int32, 50, 40, 3, 2, 40, 8, 8, -7),             # past the end on the last steps
    (np.float16, 33, 128, 5, -3, 12, 16, 64, -np.inf),   # columns before the array's start
]


@pytest.mark.parametrize("case", WINDOW_CASES, ids=lambda c: "-".join(map(str, c)))
def test_windows_stepping_by_a_constant_read_back_into_registers(tile_backend, case):
    dt, rows, cols, n, cshift, C, R, BN, pad = case
    rng = np.random.default_rng()
    x = (rng.integers(-1000, 1000, (rows, cols)) if dt == np.int32
         else rng.standard_normal((rows, cols))).astype(dt)
    out = tile_backend.asarray(np.zeros((1, cols), np.float32))
    tile_backend.run(window_max.with_options(num_stages=3), tile_backend.asarray(x),
                     nt.partition(out, (1, BN)), n, cshift, C, R, BN, pad)
    want = _window_max_reference(x, n, cshift, C, R, pad)
    np.testing.assert_allclose(tile_backend.to_numpy(out)[0].astype(np.float64), want,
                               rtol=1e-6)


@pytest.mark.parametrize("C,BK", [(64, 64), (32, 64), (8, 16)])
def test_3d_load_at_stepping_along_the_last_axis(tile_backend, C, BK):
    rng = np.random.default_rng()
    nb, m, kk, BM = 3, 40, 200, 16
    x = _rand(rng, (nb, m, kk), np.float16)
    out = tile_backend.asarray(np.zeros((nb, m), np.float32))
    tile_backend.run(batched_row_sums.with_options(num_stages=3), tile_backend.asarray(x),
                     nt.partition(out, (1, BM)), C, BM, BK)
    want = np.zeros((nb, m))
    for k in range(-(-kk // C)):
        want += x[:, :, k * C:k * C + BK].astype(np.float64).sum(axis=2)
    np.testing.assert_allclose(tile_backend.to_numpy(out).astype(np.float64), want,
                               rtol=1e-3, atol=1e-3)


def test_explain_says_which_load_at_calls_are_pipelined():
    a, b = np.zeros((100, 72), np.float16), np.zeros((72, 96), np.float16)
    args = (a, b, nt.partition(np.zeros((100, 96), np.float16), (64, 32)), 0, 64, 32, 32)
    text = str(gemm_at.with_options(num_stages=3).explain(*args, cc=(9, 0)))
    assert text.count("pipelined: 3 stages of cp.async copies, read by the product") == 2, text
    x = np.zeros((100, 96), np.float32)
    args = (x, nt.partition(np.zeros((1, 96), np.float32), (1, 32)), 3, 1, 16, 32, 32, -np.inf)
    text = str(window_max.with_options(num_stages=3).explain(*args, cc=(9, 0)))
    assert "pipelined: 3 stages of cp.async copies, read back into registers" in text, text

    @nt.jit
    def unaligned(x, out: nt.Partition[(1, 32)], s):
        for idx in nt.tiles(out):
            acc = nt.zeros((1, 32), nt.float32)
            for k in range(4):
                acc = acc + nt.load_at(x, (k * 1, idx[1] * 32 + s), (1, 32), padding=0)
                acc = acc + nt.load_at(x, (0, k * 2), (1, 32), padding=0)
            nt.store(out, acc, idx)
    text = str(unaligned.with_options(num_stages=3).explain(
        x, nt.partition(np.zeros((1, 96), np.float32), (1, 32)), 1, cc=(9, 0)))
    assert "not a visible multiple of 4 elements" in text, text
    assert "steps by 2 elements, not a multiple of 16 bytes" in text, text
