"""FP8 products (``float8_e4m3fn``, ``float8_e5m2``, float32 accumulation) on the GPU against
NumPy's float64 product, on every path a kernel can take on the H200: ``wgmma`` with TMA
boxes (a transposed ``b`` staged K-major), ``wgmma`` with ``cp.async`` slots
(``NUMBA_TILE_TMA=0``), ``wgmma`` with the operands staged from registers (``num_stages=1``,
and a ``b`` that is not transposed: written K-major by the threads), and ``mma.sync``
(``NUMBA_TILE_MMA=sync``: ``m16n8k32 .e4m3``); and 16-bit products whose ``b`` is a staged,
transposed tile (K-major ``b``: ``imm-trans-b = 0``). Ragged M, N and K (zero padding at
the edges). Interpreter twins run everywhere."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP, FLOAT8_E4M3FN_NP, FLOAT8_E5M2_NP


def _gemm_bt(num_warps, num_stages):
    """``a (M, K) @ bt (N, K).T``."""
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def gemm_bt(a, bt, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
        i = nt.bid(0)
        j = nt.bid(1)
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (i, k), (BM, BK), padding=0)
            y = nt.load(bt, (j, k), (BN, BK), padding=0)
            acc = nt.mma(x, nt.transpose(y), acc)
        nt.store(c, acc)
    return gemm_bt


def _gemm_b(num_warps, num_stages):
    """``a (M, K) @ b (K, N)``: an FP8 ``b`` is not staged (N-major), the product writes it
    K-major from registers."""
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def gemm_b(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant):
        i = nt.bid(0)
        j = nt.bid(1)
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (i, k), (BM, BK), padding=0)
            y = nt.load(b, (k, j), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    return gemm_b


FP8 = [FLOAT8_E4M3FN_NP, FLOAT8_E5M2_NP]

# (path, (M, K, N), (BM, BN, BK), num_warps, num_stages, environment)
PATHS = [
    ("wgmma-tma", (300, 400, 200), (64, 128, 128), 4, 4, {}),
    ("wgmma-tma", (257, 640, 515), (128, 256, 128), 8, 4, {}),
    ("wgmma-tma-3", (129, 1024, 300), (128, 128, 128), 8, 3, {}),
    ("wgmma-cp.async", (300, 400, 200), (128, 128, 128), 8, 4, {"NUMBA_TILE_TMA": "0"}),
    ("wgmma-registers", (200, 272, 136), (64, 64, 128), 4, 1, {}),
    ("mma.sync", (300, 400, 200), (128, 128, 64), 4, 3, {"NUMBA_TILE_MMA": "sync"}),
    ("mma.sync-1", (90, 176, 70), (64, 64, 32), 4, 1, {"NUMBA_TILE_MMA": "sync"}),
]


def _operands(rng, dt, m, k, n, integers):
    if integers:     # every product and partial sum exact
        a = rng.integers(-3, 4, (m, k)).astype(np.float32).astype(dt)
        bt = rng.integers(-3, 4, (n, k)).astype(np.float32).astype(dt)
    else:
        a = rng.standard_normal((m, k)).astype(dt)
        bt = rng.standard_normal((n, k)).astype(dt)
    return a, bt


def _check(got, a, b, exact):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    assert np.isfinite(got).all()
    if exact:
        np.testing.assert_array_equal(got, want)
        return
    # the FP8 tensor cores' accumulator keeps fewer bits than float32 (DeepGEMM promotes
    # it for that reason): a bound relative to the sum of |products|
    scale = np.abs(a64) @ np.abs(b64) + 1e-3
    err = np.abs(got - want) / scale
    assert err.max() <= 2e-3, err.max()


@pytest.mark.parametrize("integers", [True, False], ids=["ints", "normal"])
@pytest.mark.parametrize("dt", FP8, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p[0]}-{p[1]}-{p[2]}")
def test_fp8_products_against_float64(tile_backend, path, dt, integers, monkeypatch):
    name, (m, k, n), (bm, bn, bk), w, s, env = path
    for key in ("NUMBA_TILE_TMA", "NUMBA_TILE_MMA"):
        monkeypatch.delenv(key, raising=False)
    for key, v in env.items():
        monkeypatch.setenv(key, v)
    rng = np.random.default_rng()
    a, bt = _operands(rng, dt, m, k, n, integers)
    registers = name == "wgmma-registers"
    kernel = _gemm_b(w, s) if registers else _gemm_bt(w, s)
    other = np.ascontiguousarray(bt.T) if registers else bt
    c0 = np.zeros((m, n), np.float32)
    ptx = kernel.ptx(a, other, nt.partition(c0, (bm, bn)), bm, bn, bk, cc=(9, 0))
    body = ptx[ptx.index(".entry"):]
    t = "e4m3" if dt == FLOAT8_E4M3FN_NP else "e5m2"
    if name.startswith("wgmma"):
        assert f"k32.f32.{t}.{t}" in body
        assert ("cp.async.bulk.tensor" in body) == name.startswith("wgmma-tma")
    else:
        assert f"m16n8k32.row.col.f32.{t}.{t}.f32" in body and "wgmma" not in body
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(other),
                     nt.partition(c, (bm, bn)), bm, bn, bk)
    _check(tile_backend.to_numpy(c), a, bt.T, integers)


# 16-bit products with a staged, transposed b (K-major: the linear layer's weight layout)
HALF_PATHS = [
    ("wgmma-tma", (300, 200, 260), (128, 256, 64), 8, 4, {}),
    ("wgmma-tma", (257, 192, 515), (64, 128, 64), 4, 3, {}),
    ("wgmma-cp.async", (300, 200, 260), (128, 128, 64), 8, 4, {"NUMBA_TILE_TMA": "0"}),
    ("mma.sync", (300, 200, 260), (128, 128, 32), 4, 3, {"NUMBA_TILE_MMA": "sync"}),
]


@pytest.mark.parametrize("dt", [np.float16, BFLOAT16_NP], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("path", HALF_PATHS, ids=lambda p: f"{p[0]}-{p[1]}-{p[2]}")
def test_transposed_b_16_bit(tile_backend, path, dt, monkeypatch):
    name, (m, k, n), (bm, bn, bk), w, s, env = path
    for key in ("NUMBA_TILE_TMA", "NUMBA_TILE_MMA"):
        monkeypatch.delenv(key, raising=False)
    for key, v in env.items():
        monkeypatch.setenv(key, v)
    rng = np.random.default_rng()
    a = rng.integers(-4, 5, (m, k)).astype(np.float32).astype(dt)
    bt = rng.standard_normal((n, k)).astype(dt)
    kernel = _gemm_bt(w, s)
    c0 = np.zeros((m, n), np.float32)
    body = kernel.ptx(a, bt, nt.partition(c0, (bm, bn)), bm, bn, bk, cc=(9, 0))
    body = body[body.index(".entry"):]
    if name.startswith("wgmma"):
        assert "wgmma.mma_async" in body
        # K-major b: imm-trans-b = 0 (the last operand)
        assert all(line.rstrip().endswith("1, 1, 1, 0, 0;")
                   for line in body.splitlines() if "wgmma.mma_async" in line)
    else:
        assert "mma.sync" in body and "wgmma" not in body
    # staged: b's tiles never pass through registers (no transpose through shared memory)
    assert ("cp.async.bulk.tensor" in body) == (name == "wgmma-tma")
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(bt),
                     nt.partition(c, (bm, bn)), bm, bn, bk)
    got = tile_backend.to_numpy(c)
    want = a.astype(np.float64) @ bt.astype(np.float64).T
    scale = np.abs(a.astype(np.float64)) @ np.abs(bt.astype(np.float64)).T + 1.0
    assert np.isfinite(got).all()
    assert (np.abs(got - want) <= 1e-4 * scale).all(), np.abs(got - want).max()
