"""Warp specialization of TMA-fed wgmma loops (``lowering/ws.py``) in PTX and ptxas output, no
GPU: the producer warpgroup's launch bounds and registers, the consumers' named barrier, the
slot release, the persistent tiles loop's 32-bit tile arithmetic; ``NUMBA_TILE_WS=0`` and
the cases it does not take keep the single-role schedule."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP, FLOAT8_E4M3FN_NP
from numba_tile.lowering.ws import consumer_registers
from numba_tile.runtime import linker


def _gemm(num_warps, num_stages, **options):
    @nt.jit(num_warps=num_warps, num_stages=num_stages, **options)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    return gemm


def _persistent(num_warps, num_stages, brk=False):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def persistent(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant, STOP: nt.Constant):
        for idx in nt.tiles(c):
            i = idx[0]
            j = idx[1]
            if STOP and i == 3:
                break
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (i, k), (BM, BK), padding=0)
                y = nt.load(b, (k, j), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            nt.store(c, acc, idx)
    return persistent


def _arrays(dt=BFLOAT16_NP):
    return np.zeros((1000, 704), dt), np.zeros((704, 896), dt), np.zeros((1000, 896), np.float32)


@pytest.fixture(autouse=True)
def _defaults(monkeypatch):
    for key in ("NUMBA_TILE_MMA", "NUMBA_TILE_TMA", "NUMBA_TILE_WS", "NUMBA_TILE_WGMMA_PENDING",
                "NUMBA_TILE_CLUSTER"):
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize("warps, tile", [(8, (128, 256, 64)), (4, (64, 128, 64)),
                                         (16, (256, 128, 64))])
def test_producer_warpgroup_and_registers(warps, tile, nvjitlink):
    bm, bn, bk = tile
    a, b, c = _arrays()
    ck = _gemm(warps, 4).compiled(a, b, nt.partition(c, (bm, bn)), bm, bn, bk, cc=(9, 0))
    ptx = ck.ptx
    n = 32 * warps
    assert ck.num_threads == n + 128                      # the launch's block
    assert re.search(rf"\.maxntid {n + 128}, 1, 1", ptx) and ".minnctapersm 1" in ptx
    regs = consumer_registers(n)
    if regs:
        assert f"setmaxnreg.dec.sync.aligned.u32 40;" in ptx
        assert f"setmaxnreg.inc.sync.aligned.u32 {regs};" in ptx
        # the pool at launch covers what the roles take
        cap = 65536 // (n + 128) // 8 * 8
        assert 40 * 128 + regs * n <= cap * (n + 128)
    else:
        assert "setmaxnreg" not in ptx
    body = ptx[ptx.index(".entry"):]
    # one block-wide barrier (the job barrier's initialization), every other one the
    # consumers' named barrier
    assert body.count("bar.sync \t0;") == 1
    assert f"barrier.sync \t1, {n};" in body
    # slots released by lane 0 of each consumer warp; the producer waits on them
    assert re.search(rf"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], {warps};", body) or \
        f"], {warps};" in body
    assert body.count("mbarrier.try_wait.parity") >= 3     # job, full, empty
    out = linker.assemble(ptx, (9, 0))
    registers, spilled = linker.spill_report(out[1])
    assert spilled == 0, out[1]
    assert not re.search(r"wgmma.*serializ|C7509|C7510|C7511|C7515", out[1]), out[1]


def test_ws_off_keeps_the_single_role_schedule(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_WS", "0")
    a, b, c = _arrays()
    ck = _gemm(8, 4).compiled(a, b, nt.partition(c, (128, 256)), 128, 256, 64, cc=(9, 0))
    assert ck.num_threads == 256
    assert "setmaxnreg" not in ck.ptx and "barrier.sync \t1" not in ck.ptx
    assert "cp.async.bulk.tensor" in ck.ptx


def test_cp_async_and_sm80_are_not_specialized(monkeypatch):
    a, b, c = _arrays()
    monkeypatch.setenv("NUMBA_TILE_TMA", "0")
    ck = _gemm(8, 4).compiled(a, b, nt.partition(c, (128, 256)), 128, 256, 64, cc=(9, 0))
    assert ck.num_threads == 256 and "setmaxnreg" not in ck.ptx
    monkeypatch.delenv("NUMBA_TILE_TMA")
    ck = _gemm(8, 3).compiled(a, b, nt.partition(c, (128, 128)), 128, 128, 64, cc=(8, 0))
    assert ck.num_threads == 256 and "setmaxnreg" not in ck.ptx


def test_persistent_tiles_loop_has_no_64_bit_division(nvjitlink):
    """The producer walks tiles(c) itself: 32-bit tile-number divisions on both roles (a
    64-bit division is a call, and a call serializes the wgmmas, C7509)."""
    a, b, c = _arrays()
    part = nt.partition(c, (128, 256), blocks=132, order=nt.grouped(8))
    ptx = _persistent(8, 4).ptx(a, b, part, 128, 256, 64, False, cc=(9, 0))
    assert "div.u64" not in ptx and "rem.u64" not in ptx
    assert ptx.count("%nctaid.x") >= 2                    # the consumers' and the producer's
    out = linker.assemble(ptx, (9, 0))
    assert not re.search(r"C7509|serializ", out[1]), out[1]
    assert linker.spill_report(out[1])[1] == 0


def test_tiles_loop_with_a_break_is_not_walked_by_the_producer():
    """A break leaves tiles the consumers never read: the producer must not run ahead into
    them (it would wait forever for their slots). The loop is still warp-specialized, one
    job per run of the K loop (the producer reads no tile sequence: no %nctaid.x of its
    own)."""
    a, b, c = _arrays()
    part = nt.partition(c, (128, 256), blocks=132, order=nt.grouped(8))
    plain = _persistent(8, 4).ptx(a, b, part, 128, 256, 64, False, cc=(9, 0))
    broken = _persistent(8, 4).ptx(a, b, part, 128, 256, 64, True, cc=(9, 0))
    assert "setmaxnreg" in broken
    assert broken.count("%nctaid.x") == plain.count("%nctaid.x") - 1


def test_fp8_loop_is_specialized_too(nvjitlink):
    a = np.zeros((1000, 768), FLOAT8_E4M3FN_NP)
    bt = np.zeros((896, 768), FLOAT8_E4M3FN_NP)
    c = np.zeros((1000, 896), np.float32)

    @nt.jit(num_warps=8, num_stages=4)
    def gemm_bt(a, bt, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(bt, (nt.bid(1), k), (BN, BK), padding=0)
            acc = nt.mma(x, nt.transpose(y), acc)
        nt.store(c, acc)

    ck = gemm_bt.compiled(a, bt, nt.partition(c, (128, 256)), 128, 256, 128, cc=(9, 0))
    assert ck.num_threads == 384 and "setmaxnreg.inc.sync.aligned.u32 232" in ck.ptx
    assert "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3" in ck.ptx
    # the maps: an 8-bit one per operand, rows of 128 bytes
    assert ck.tensor_maps == (("a", 128), ("bt", 256))
    out = linker.assemble(ck.ptx, (9, 0))
    assert linker.spill_report(out[1])[1] == 0
    assert not re.search(r"C7509|C7510|C7511|C7515|serializ", out[1]), out[1]


def test_too_many_warps_for_a_producer_keep_one_role():
    """32 warps leave no room for a producer warpgroup in a block of 1024 threads."""
    from numba_tile.typing.pipeline import ws_fits
    from numba_tile import compiler_context
    ctx = compiler_context.CompileContext(num_warps=32)
    with compiler_context.compiling(ctx):
        assert not ws_fits()
    ctx = compiler_context.CompileContext(num_warps=16)
    with compiler_context.compiling(ctx):
        assert ws_fits()


def test_min_blocks_per_sm_keeps_one_role(nvjitlink):
    """min_blocks_per_sm=2 caps registers for the kernel's own threads: with a producer's 128
    more the kernel would not assemble (C7602), so it keeps the single-role schedule."""
    a, b, c = _arrays()
    g = _gemm(8, 4, min_blocks_per_sm=2)
    ck = g.compiled(a, b, nt.partition(c, (128, 128)), 128, 128, 64, cc=(9, 0))
    assert ck.num_threads == 256 and "setmaxnreg" not in ck.ptx
    assert linker.assemble(ck.ptx, (9, 0)) is not None


def test_persistent_walk_with_an_epilogue_load_after_the_k_loop():
    """The FP8 example's persistent kernel (scales loaded after the K loop: Numba's tiles
    loop then has a header block of phis before the iternext's block) is walked by the
    producer."""
    import ml_dtypes
    from examples import gemm_fp8
    from examples.gemm import GemmConfig
    a = np.zeros((1000, 768), FLOAT8_E4M3FN_NP)
    bt = np.zeros((896, 768), FLOAT8_E4M3FN_NP)
    sa, sb = np.zeros((1000, 1), np.float32), np.zeros((1, 896), np.float32)
    c = np.zeros((1000, 896), ml_dtypes.bfloat16)
    cfg = GemmConfig(128, 256, 128, 8, 4)
    kern = gemm_fp8.kernel_for(cfg, gemm_fp8.gemm_fp8_persistent_tiles)
    part = nt.partition(c, (128, 256), blocks=132, order=nt.grouped(8))
    ptx = kern.ptx(a, bt, sa, sb, part, 128, 256, 128, True, True, cc=(9, 0))
    grid_kern = gemm_fp8.kernel_for(cfg)
    grid_ptx = grid_kern.ptx(a, bt, sa, sb, nt.partition(c, (128, 256), order=nt.grouped(8)),
                             128, 256, 128, True, True, cc=(9, 0))
    assert "%nctaid.x" not in grid_ptx
    assert ptx.count("%nctaid.x") >= 2          # the consumers' tiles loop and the producer's
    assert "div.u64" not in ptx


def test_no_group_left_in_flight_over_a_register_operand():
    """An FP8 b loaded as (K, N) is written K-major from registers into the product's scratch
    each iteration: no wgmma group may stay in flight across iterations over it."""
    a = np.zeros((1000, 768), FLOAT8_E4M3FN_NP)
    b = np.zeros((768, 896), FLOAT8_E4M3FN_NP)
    c = np.zeros((1000, 896), np.float32)
    ptx = _gemm(8, 4).ptx(a, b, nt.partition(c, (128, 256)), 128, 256, 128, cc=(9, 0))
    assert "wgmma.mma_async" in ptx
    assert "wgmma.wait_group.sync.aligned 1" not in ptx


def test_unchecked_kernels_keep_one_role():
    """An unchecked kernel may branch per thread: no producer warpgroup (a thread 0 that
    returned early would stop it while other threads still wait for its tiles)."""
    a, b, c = _arrays()
    g = _gemm(8, 4, unchecked=True)
    ck = g.compiled(a, b, nt.partition(c, (128, 256)), 128, 256, 64, cc=(9, 0))
    assert ck.num_threads == 256 and "setmaxnreg" not in ck.ptx
    from numba_tile import compiler_context
    from numba_tile.typing.pipeline import ws_fits
    ctx = compiler_context.CompileContext(num_warps=8, unchecked=True)
    with compiler_context.compiling(ctx):
        assert not ws_fits()


def test_a_kernels_own_ws_post_does_nothing():
    """``_ws_post`` is the compiler's: a kernel calling it (a hostile trip count between the
    loads) must not change the job the producer gets (it would issue tiles no consumer
    reads, and the block would never finish)."""
    from numba_tile import language

    a, b, c = _arrays()

    @nt.jit(num_warps=8, num_stages=4)
    def g(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
          BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            language._ws_post(123457)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)

    ptx = g.ptx(a, b, nt.partition(c, (128, 256)), 128, 256, 64, cc=(9, 0))
    assert "setmaxnreg" in ptx
    assert "123457" not in ptx
    clean = _gemm(8, 4).ptx(a, b, nt.partition(c, (128, 256)), 128, 256, 64, cc=(9, 0))
    body = ptx[ptx.index("{"):]
    assert len(body.splitlines()) == len(clean[clean.index("{"):].splitlines())


@pytest.mark.parametrize("dt, tile, maps", [
    (BFLOAT16_NP, (128, 256, 64), {("a", 128), ("b", 64), ("a", 64)}),
    (FLOAT8_E4M3FN_NP, (128, 256, 128), {("a", 128), ("bt", 256), ("a", 64), ("bt", 128)})],
    ids=["bf16", "fp8"])
def test_persistent_loop_pairs_blocks_in_clusters(dt, tile, maps, nvjitlink, monkeypatch):
    """A persistent warp-specialized loop pairs blocks (``lowering/ws.py``, *Clusters*):
    the ring's barriers set up before a cluster barrier at the entry, multicast boxes
    (``b`` of 16-bit by boxes; single-box tiles by half rows, through maps of half the
    rows), releases to the partner's ``empty`` barrier, a cluster barrier before every exit;
    ptxas: no spill, no serialized wgmma."""
    monkeypatch.setenv("NUMBA_TILE_CLUSTER", "1")
    bm, bn, bk = tile
    m, k, n = 1000, 768, 896
    part = nt.partition(np.zeros((m, n), np.float32), (bm, bn), blocks=132,
                        order=nt.grouped(8))
    a = np.zeros((m, k), dt)
    if dt == BFLOAT16_NP:
        ck = _persistent(8, 4).compiled(a, np.zeros((k, n), dt), part, bm, bn, bk, False,
                                        cc=(9, 0))
    else:
        from examples import gemm_fp8
        from examples.gemm import GemmConfig
        kern = gemm_fp8.kernel_for(GemmConfig(bm, bn, bk, 8, 4),
                                   gemm_fp8.gemm_fp8_persistent_tiles)
        part = nt.partition(np.zeros((m, n), BFLOAT16_NP), (bm, bn), blocks=132,
                            order=nt.grouped(8))
        ck = kern.compiled(a, np.zeros((n, k), dt), np.zeros((m, 1), np.float32),
                           np.zeros((1, n), np.float32), part, bm, bn, bk, True, True,
                           cc=(9, 0))
    assert ck.cluster == 2 and set(ck.tensor_maps) == maps
    body = ck.ptx[ck.ptx.index(".entry"):]
    assert "barrier.cluster.arrive.aligned" in body
    assert "multicast::cluster" in body and "mapa.shared::cluster" in body
    # the partner's empty barrier before the block's own (ws.release)
    remote = body.index("mbarrier.arrive.shared::cluster.b64")
    assert "mbarrier.arrive.shared::cta.b64" in body[remote:remote + 400]
    assert "%cluster_nctarank" in body and "%cluster_ctarank" in body
    out = linker.assemble(ck.ptx, (9, 0))
    assert linker.spill_report(out[1])[1] == 0, out[1]
    assert not re.search(r"wgmma.*serializ|C7509|C7510|C7511|C7515", out[1]), out[1]


def test_grid_launch_is_not_clustered(monkeypatch):
    """One block per tile (no persistent walk): no cluster."""
    monkeypatch.setenv("NUMBA_TILE_CLUSTER", "1")
    a, b, c = _arrays()
    ck = _gemm(8, 4).compiled(a, b, nt.partition(c, (128, 256)), 128, 256, 64, cc=(9, 0))
    assert ck.cluster == 1 and "barrier.cluster" not in ck.ptx and "setmaxnreg" in ck.ptx


def test_cluster_switch_and_cases_left_alone(monkeypatch):
    """Clusters are opt-in (unset or ``NUMBA_TILE_CLUSTER=0``: none); asked for, a trip count
    that differs between blocks and a tiles loop some blocks skip keep one block per
    cluster (no ``barrier.cluster``)."""
    a = np.zeros((1000, 704), BFLOAT16_NP)
    b = np.zeros((704, 896), BFLOAT16_NP)
    part = nt.partition(np.zeros((1000, 896), np.float32), (128, 128), blocks=132)
    for value in (None, "0"):
        if value is not None:
            monkeypatch.setenv("NUMBA_TILE_CLUSTER", value)
        ck = _persistent(8, 4).compiled(a, b, part, 128, 128, 64, False, cc=(9, 0))
        assert ck.cluster == 1 and "barrier.cluster" not in ck.ptx and "setmaxnreg" in ck.ptx
    monkeypatch.setenv("NUMBA_TILE_CLUSTER", "1")

    @nt.jit(num_warps=8, num_stages=4)
    def per_block_trips(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                        BN: nt.Constant, BK: nt.Constant):
        n = nt.num_tiles(a, 1, BK) - nt.bid(0) % 2
        for idx in nt.tiles(c):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(n):
                x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            nt.store(c, acc, idx)

    @nt.jit(num_warps=8, num_stages=4)
    def some_blocks_skip(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                         BN: nt.Constant, BK: nt.Constant):
        if nt.bid(0) % 3 == 1:
            return
        for idx in nt.tiles(c):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            nt.store(c, acc, idx)

    for kern in (per_block_trips, some_blocks_skip):
        ck = kern.compiled(a, b, part, 128, 128, 64, cc=(9, 0))
        assert "setmaxnreg" in ck.ptx, kern.__name__
        assert ck.cluster == 1 and "barrier.cluster" not in ck.ptx, kern.__name__

    # a trip count read from memory: another stream may write it during
    # the launch, so two blocks of a pair could read two values
    @nt.jit(num_warps=8, num_stages=4)
    def trips_from_memory(a, b, c: nt.Partition[("BM", "BN")], kv, BM: nt.Constant,
                          BN: nt.Constant, BK: nt.Constant):
        n = kv[nt.num_blocks(0) - 132]
        for idx in nt.tiles(c):
            acc = nt.zeros((BM, BN), nt.float32)
            for k in range(n):
                x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
            nt.store(c, acc, idx)

    ck = trips_from_memory.compiled(a, b, part, np.full(4, 11, np.int64), 128, 128, 64,
                                    cc=(9, 0))
    assert "setmaxnreg" in ck.ptx
    assert ck.cluster == 1 and "barrier.cluster" not in ck.ptx
