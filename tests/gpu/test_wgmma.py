"""``NUMBA_TILE_MMA=wgmma`` on the H200: the products ``lowering/wgmma.py`` takes give NumPy's
float64 result, for bf16 and f16, ragged M, N and K (masked edges: the staged operands hold
zeros there), one and two warpgroups, operands from registers and from pipelined loads
(``num_stages=3``: cp.async slots read by wgmma), and the kernel really runs wgmma (its PTX
says so)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP



def _gemm(num_warps, num_stages=1):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK))       # masked at the edges
            y = nt.load(b, (k, nt.bid(1)), (BK, BN))
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    return gemm


# (dtype, (M, K, N), (BM, BN, BK), num_warps)
CASES = [
    (BFLOAT16_NP, (64, 64, 64), (64, 64, 64), 4),
    (BFLOAT16_NP, (300, 190, 200), (64, 128, 64), 4),
    (np.float16, (257, 333, 515), (64, 256, 64), 4),
    (BFLOAT16_NP, (300, 200, 260), (128, 128, 64), 8),
    (np.float16, (129, 511, 300), (128, 256, 128), 8),
]


@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-{c[2]}-w{c[3]}")
def test_wgmma_products_against_float64(tile_backend, case, stages, monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    dt, (m, k, n), (bm, bn, bk), w = case
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (m, k)).astype(np.float64).astype(dt)    # exact in 16 bits
    b = rng.standard_normal((k, n)).astype(dt)
    if stages > 1 and (bm, bn, w) == (64, 256, 4):
        pytest.skip("64 x 256 over 4 warps spills with pipelined loads (tests/compile)")
    kernel = _gemm(w, stages)
    assert "wgmma.mma_async" in kernel.ptx(a, b, nt.partition(np.zeros((m, n), np.float32),
                                                               (bm, bn)), bm, bn, bk)
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (bm, bn)), bm, bn, bk)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = tile_backend.to_numpy(c)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1.0
    assert np.isfinite(got).all()
    assert (np.abs(got - want) <= 1e-4 * scale).all(), np.abs(got - want).max()


def _rerun(num_stages):
    @nt.jit(num_warps=8, num_stages=num_stages)
    def rerun(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
              BK: nt.Constant, R: nt.Constant, DT: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for r in range(R):
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (nt.bid(0) + r * 0, k), (BM, BK), padding=0)
                y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
        nt.store(c, nt.astype(acc, DT))
    return rerun


@pytest.mark.parametrize("copies", ["tma", "tma-ws", "cp.async"])
@pytest.mark.parametrize("pending", ["0", "1"])
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("k", [64, 104, 200, 1000])       # rows of 16-byte multiples
def test_deferred_schedule_short_and_rerun_loops(tile_backend, stages, k, pending, copies,
                                                 monkeypatch):
    """The deferred schedule (the product issues the copies): K loops shorter than the
    pipeline (1 or 2 tiles against S - 1 in the prologue), ragged K, the loop run again
    (R = 2: its prologue after the last run's refills past the end; warp-specialized: the
    second job of the producer), C in float16 with an odd N (the last column pair half
    outside)."""
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    monkeypatch.setenv("NUMBA_TILE_WGMMA_PENDING", pending)   # 1: the in-loop drain's path
    monkeypatch.setenv("NUMBA_TILE_TMA", "0" if copies == "cp.async" else "1")
    monkeypatch.setenv("NUMBA_TILE_WS", "1" if copies == "tma-ws" else "0")
    rng = np.random.default_rng()
    m, n = 200, 2 * 129 + 1
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    kernel = _rerun(stages)
    cpu_c = np.zeros((m, n), np.float16)
    ptx = kernel.ptx(a, b, nt.partition(cpu_c, (128, 128)), 128, 128, 64, 2, "float16")
    assert "wgmma.mma_async" in ptx
    if copies.startswith("tma"):
        assert "cp.async.bulk.tensor.2d" in ptx and "cp.async.cg" not in ptx
        assert ("setmaxnreg.dec.sync.aligned.u32 40" in ptx) == (copies == "tma-ws")
    else:
        assert "cp.async.cg" in ptx and "cp.async.bulk" not in ptx
    # b (N = 259: rows of 518 bytes, no 16-byte accesses) is not staged: it is written from
    # registers into the product's scratch every iteration, so no group stays in flight
    assert "wgmma.wait_group.sync.aligned 1" not in ptx
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float16))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (128, 128)), 128, 128, 64, 2, "float16")
    want = (2 * (a.astype(np.float64) @ b.astype(np.float64))).astype(np.float16)
    np.testing.assert_array_equal(tile_backend.to_numpy(c), want)


def test_accumulator_stored_into_a_strided_view(tile_backend, monkeypatch):
    """An accumulator stored from its fragments into a view that allows no vector access
    (odd row stride, every other column): element by element, nothing outside the view."""
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    rng = np.random.default_rng()
    m, k, n = 130, 128, 70
    a = rng.integers(-3, 4, (m, k)).astype(BFLOAT16_NP)
    b = rng.integers(-3, 4, (k, n)).astype(BFLOAT16_NP)
    big = tile_backend.asarray(np.full((m + 3, 2 * n + 3), -5.0, np.float32))
    view = big[1:m + 1, 1:2 * n + 1:2]
    kernel = _gemm(8, 3)
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(view, (128, 64)), 128, 64, 64)
    got = tile_backend.to_numpy(big)
    want = np.full((m + 3, 2 * n + 3), -5.0)
    want[1:m + 1, 1:2 * n + 1:2] = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(got, want)


def test_a_product_wgmma_does_not_take_reads_pipelined_slots_with_ldmatrix(tile_backend,
                                                                           monkeypatch):
    """Where wgmma is forced, a product whose accumulator passes the register cap (128 x 256
    over 4 warps: 256 registers a thread) stays on mma.sync and reads its pipelined slots with
    ldmatrix; the values are NumPy's."""
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    rng = np.random.default_rng()
    m, k, n = 300, 200, 520
    a = rng.integers(-3, 4, (m, k)).astype(np.float64).astype(BFLOAT16_NP)
    b = rng.standard_normal((k, n)).astype(BFLOAT16_NP)
    kernel = _gemm(4, 3)
    ptx = kernel.ptx(a, b, nt.partition(np.zeros((m, n), np.float32), (128, 256)), 128, 256, 64)
    assert "mma.sync" in ptx and "wgmma.mma_async" not in ptx
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float32))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (128, 256)), 128, 256, 64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1.0
    assert (np.abs(tile_backend.to_numpy(c) - want) <= 1e-4 * scale).all()


def _persistent(num_stages, num_warps=8):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def persistent(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant):
        for idx in nt.tiles(c):
            i = idx[0]
            j = idx[1]
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (i, k), (BM, BK), padding=0)
                y = nt.load(b, (k, j), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            nt.store(c, nt.astype(acc, nt.float16), idx)
    return persistent


@pytest.mark.parametrize("ws", ["1", "0"])
@pytest.mark.parametrize("stages", [3, 4])
@pytest.mark.parametrize("blocks", [1, 5, 132, 400])
@pytest.mark.parametrize("shape", [(300, 104, 259), (129, 1000, 515), (64, 64, 64)])
def test_persistent_tiles_loop(tile_backend, shape, blocks, stages, ws, monkeypatch):
    """A ``tiles(c)`` loop around a TMA-fed wgmma K loop: warp-specialized, the producer walks
    the block's tiles itself and runs ahead into the next tile (``lowering/ws.py``); one ring
    for the whole loop, counted across the tiles. Blocks from 1 (every tile in one block) to
    more than there are tiles (blocks with none), ragged M, N, K, K of one tile."""
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    monkeypatch.setenv("NUMBA_TILE_WS", ws)
    monkeypatch.delenv("NUMBA_TILE_TMA", raising=False)
    m, k, n = shape
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    kernel = _persistent(stages)
    cpu_c = np.zeros((m, n), np.float16)
    ptx = kernel.ptx(a, b, nt.partition(cpu_c, (128, 128), blocks=blocks, order=nt.grouped(8)),
                     128, 128, 64)
    assert "cp.async.bulk.tensor.2d" in ptx
    assert ("setmaxnreg.dec.sync.aligned.u32 40" in ptx) == (ws == "1")
    c = tile_backend.asarray(np.full((m, n), np.nan, np.float16))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (128, 128), blocks=blocks, order=nt.grouped(8)),
                     128, 128, 64)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(tile_backend.to_numpy(c), want)


def _ws_edges(num_stages, nested):
    @nt.jit(num_warps=8, num_stages=num_stages)
    def edges(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
              BK: nt.Constant, MODE: nt.Constant):
        # MODE 0: a break in the tiles loop (the producer must not walk the sequence);
        # 1: two warp-specialized K loops per tile (two jobs, two rings); 2: the tiles loop
        # run twice inside another loop; 3: blocks that return before the tiles loop
        if MODE == 3 and nt.bid(0) % 3 == 1:
            return
        for idx in nt.tiles(c):
            i = idx[0]
            j = idx[1]
            if MODE == 0 and i == 1:
                break
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (i, k), (BM, BK), padding=0)
                y = nt.load(b, (k, j), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            if MODE == 1:
                acc2 = nt.zeros((BM, BN), nt.float32)
                for k2 in range(nt.num_tiles(a, 1, BK)):
                    x2 = nt.load(a, (i, k2), (BM, BK), padding=0)
                    y2 = nt.load(b, (k2, j), (BK, BN), padding=0)
                    acc2 = nt.mma(x2, y2, acc2)
                acc = acc + acc2
            nt.store(c, nt.astype(acc, nt.float16), idx)

    @nt.jit(num_warps=8, num_stages=num_stages)
    def edges_nested(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                     BK: nt.Constant, MODE: nt.Constant):
        for r in range(2):
            for idx in nt.tiles(c):
                i = idx[0]
                j = idx[1]
                acc = nt.zeros((BM, BN), nt.float32)
                for k in range(nt.num_tiles(a, 1, BK)):
                    x = nt.load(a, (i, k), (BM, BK), padding=0)
                    y = nt.load(b, (k, j), (BK, BN), padding=0)
                    acc = nt.mma(x, y, acc)
                nt.store(c, nt.astype(acc, nt.float16), idx)
    return edges_nested if nested else edges


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_warp_specialized_edges(tile_backend, mode, monkeypatch):
    """Kernels the persistent walk must not take or takes twice: no hang, exact values."""
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    for key in ("NUMBA_TILE_WS", "NUMBA_TILE_TMA"):
        monkeypatch.delenv(key, raising=False)
    m, k, n = 300, 200, 520
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    blocks = 4
    kernel = _ws_edges(3, mode == 2)
    c0 = np.zeros((m, n), np.float16)
    ptx = kernel.ptx(a, b, nt.partition(c0, (128, 128), blocks=blocks), 128, 128, 64, mode)
    assert "setmaxnreg" in ptx
    fill = np.float16(-7)
    c = tile_backend.asarray(np.full((m, n), fill, np.float16))
    tile_backend.run(kernel, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(c, (128, 128), blocks=blocks), 128, 128, 64, mode)
    full = a.astype(np.float64) @ b.astype(np.float64)
    want = np.full((m, n), fill, np.float64)
    tiles_m, tiles_n = -(-m // 128), -(-n // 128)
    for t in range(tiles_m * tiles_n):
        ti, tj = t // tiles_n, t % tiles_n           # row-major tile order
        owner = t % blocks
        rows, cols = slice(128 * ti, 128 * ti + 128), slice(128 * tj, 128 * tj + 128)
        if mode == 3 and owner % 3 == 1:
            continue
        if mode == 0:
            # block `owner` stops at its first tile with i == 1
            mine = [u for u in range(owner, tiles_m * tiles_n, blocks)]
            stop = next((u for u in mine if u // tiles_n == 1), None)
            if stop is not None and t >= stop:
                continue
        want[rows, cols] = full[rows, cols] * (2 if mode == 1 else 1)
    np.testing.assert_array_equal(tile_backend.to_numpy(c).astype(np.float64),
                                  want.astype(np.float16).astype(np.float64))
