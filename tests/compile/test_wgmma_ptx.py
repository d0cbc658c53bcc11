"""``NUMBA_TILE_MMA=wgmma`` on cc 9.0: 16-bit products whose shapes fit lower to Hopper's
``wgmma.mma_async`` (``lowering/wgmma.py``), the PTX targets sm_90a and ptxas (nvJitLink, no
GPU) assembles it without spills; unset, and on sm_80, the same kernels keep ``mma.sync``."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.runtime import linker


def _gemm(num_warps, num_stages=1):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, acc)
    return gemm


# (input dtype, (BM, BN, BK), num_warps): BM = 16 * num_warps, BK and BN multiples of 64
CASES = [
    (BFLOAT16_NP, (64, 64, 64), 4),
    (np.float16, (64, 128, 64), 4),
    (BFLOAT16_NP, (64, 256, 64), 4),
    (BFLOAT16_NP, (128, 128, 64), 8),
    (np.float16, (128, 256, 128), 8),
]
# several 64-row slabs per warpgroup: BM a multiple of 16 * num_warps
SLAB_CASES = [
    (np.float16, (128, 128, 64), 4),
    (BFLOAT16_NP, (128, 64, 64), 4),
    (np.float16, (256, 64, 64), 4),
    (BFLOAT16_NP, (256, 128, 64), 8),
    # 64-byte swizzle atoms: K = 32 (A's rows), N = 32 (B's rows)
    (np.float16, (128, 128, 32), 4),
    (BFLOAT16_NP, (64, 32, 64), 4),
    (np.float16, (64, 64, 32), 4),
]


def _ptx(case, cc, monkeypatch, mode, stages=1):
    dt, (bm, bn, bk), w = case
    if mode is None:
        monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    else:
        monkeypatch.setenv("NUMBA_TILE_MMA", mode)
    a = np.zeros((1000, 704), dt)
    b = np.zeros((704, 896), dt)
    c = np.zeros((1000, 896), np.float32)
    return _gemm(w, stages).ptx(a, b, nt.partition(c, (bm, bn)), bm, bn, bk, cc=cc)


@pytest.mark.parametrize("case", CASES + SLAB_CASES,
                         ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-w{c[2]}")
def test_forced_wgmma_forms(case, monkeypatch):
    ptx = _ptx(case, (9, 0), monkeypatch, "wgmma")
    dt, (bm, bn, bk), w = case
    t = "bf16" if dt is BFLOAT16_NP else "f16"
    body = ptx[ptx.index(".entry"):]
    assert ".target sm_90a" in ptx
    instr = f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{t}.{t}"
    # one per K step and slab, per warpgroup
    assert body.count(instr) == bk // 16 * (bm // (16 * w)), body.count(instr)
    for needed in ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                   "wgmma.wait_group.sync.aligned 0", "fence.proxy.async.shared::cta"):
        assert needed in body, needed
    assert "mma.sync" not in body and "ldmatrix" not in body
    assert ".local" not in ptx


@pytest.mark.parametrize("case", CASES + SLAB_CASES,
                         ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-w{c[2]}")
def test_forced_wgmma_assembles_for_sm90a_without_spills(nvjitlink, case, monkeypatch):
    out = linker.assemble(_ptx(case, (9, 0), monkeypatch, "wgmma"), (9, 0))
    assert out is not None
    registers, spilled = linker.spill_report(out[1])
    assert spilled == 0, out[1]
    assert registers <= 255
    # ptxas says when it serializes the wgmmas (C7510, C7511, C7515): a performance bug
    assert not re.search(r"wgmma.*serializ", out[1], re.IGNORECASE), out[1]


def test_sync_keeps_mma_sync(monkeypatch):
    ptx = _ptx(CASES[0], (9, 0), monkeypatch, "sync")
    assert "wgmma." not in ptx and "mma.sync.aligned.m16n8k16" in ptx
    assert re.search(r"^\.target sm_90$", ptx, re.MULTILINE)


def test_wgmma_is_the_default_on_sm90(monkeypatch):
    """Unset (or any value but "sync"): the products that fit take wgmma on cc 9.0."""
    ptx = _ptx(CASES[0], (9, 0), monkeypatch, None)
    assert "wgmma.mma_async" in ptx and ".target sm_90a" in ptx


def test_sm80_and_shapes_that_do_not_fit_keep_mma_sync(monkeypatch):
    assert "wgmma." not in _ptx(CASES[0], (8, 0), monkeypatch, "wgmma")
    # BK = 16: not a whole 64-byte atom of bf16
    assert "wgmma." not in _ptx((BFLOAT16_NP, (64, 64, 16), 4), (9, 0), monkeypatch, "wgmma")
    # BM = 32 over 4 warps: less than one 64-row slab per warpgroup
    assert "wgmma." not in _ptx((BFLOAT16_NP, (32, 64, 64), 4), (9, 0), monkeypatch, "wgmma")


# 64 x 256 over 4 warps is left out: its 128 accumulator registers and the copy plan's
# per-chunk addresses (20 16-byte chunks a thread per stage) spill at 255 registers
PIPELINED = [CASES[0], CASES[1], CASES[3]]


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("case", PIPELINED, ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-w{c[2]}")
def test_pipelined_operands_feed_wgmma_from_their_slots(case, stages, nvjitlink, monkeypatch):
    """num_stages > 1 with TMA off: the K loop's loads are cp.async copies into 128-byte-atom
    slots that wgmma reads through descriptors (no register staging, no ldmatrix), fenced to
    the async proxy after they land."""
    monkeypatch.setenv("NUMBA_TILE_TMA", "0")
    ptx = _ptx(case, (9, 0), monkeypatch, "wgmma", stages)
    _dt, (bm, bn, bk), _w = case
    body = ptx[ptx.index(".entry"):]
    assert body.count("wgmma.mma_async") == bk // 16
    assert "cp.async.cg.shared.global" in body and "fence.proxy.async.shared::cta" in body
    assert "ldmatrix" not in body and "mma.sync" not in body
    out = linker.assemble(ptx, (9, 0))
    assert out is not None
    registers, spilled = linker.spill_report(out[1])
    assert spilled == 0 and registers <= 255, out[1]
    assert not re.search(r"wgmma.*serializ", out[1], re.IGNORECASE), out[1]


def test_pipelined_mma_sync_path_unchanged_under_sync(monkeypatch):
    ptx = _ptx(CASES[3], (9, 0), monkeypatch, "sync", 3)
    body = ptx[ptx.index(".entry"):]
    assert "wgmma." not in body and "fence.proxy.async" not in body
    assert "cp.async.cg.shared.global" in body and "ldmatrix" in body


def test_a_kernel_of_mma_sync_products_keeps_its_slot_layout(nvjitlink, monkeypatch):
    """BK = 16 (not whole 64-byte atoms) is not a wgmma product: the kernel stays on mma.sync
    with the slot layout ldmatrix was measured with (no atom columns, no TMA)."""
    ptx = _ptx((BFLOAT16_NP, (128, 128, 16), 4), (9, 0), monkeypatch, None, 3)
    body = ptx[ptx.index(".entry"):]
    assert "wgmma." not in body and "ldmatrix" in body and "cp.async.cg.shared.global" in body
    assert "cp.async.bulk" not in body and ".target sm_90\n" in ptx + "\n"
    assert linker.assemble(ptx, (9, 0)) is not None


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("case", PIPELINED + [CASES[2], CASES[4]],
                         ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-w{c[2]}")
def test_pipelined_operands_travel_by_tma(case, stages, nvjitlink, monkeypatch):
    """The default where wgmma is forced: the pipelined loads are TMA boxes (one per 64
    columns of a tile, a tensor map per operand passed as a 128-byte parameter), completion
    counted by an mbarrier per slot; no cp.async, no proxy fence; assembles for sm_90a with no
    spills and no serialization. The single-role schedule (``NUMBA_TILE_WS=0``; the
    warp-specialized one: tests/compile/test_ws_ptx.py)."""
    monkeypatch.delenv("NUMBA_TILE_TMA", raising=False)
    monkeypatch.setenv("NUMBA_TILE_WS", "0")
    _dt, (bm, bn, bk), _w = case
    if stages * (bm * bk + bk * bn) * 2 > 220 * 1024:
        pytest.skip("the ring does not fit in shared memory (the compiler says so)")
    ptx = _ptx(case, (9, 0), monkeypatch, "wgmma", stages)
    body = ptx[ptx.index(".entry"):]
    params = body[:body.index(")")]
    assert params.count(".param .align 64 .b8") == 2 and "_tmap0[128]" in params
    assert "__NUMBA_TILE_TMAP_" not in ptx and "cvta.param.u64" in body
    assert body.count("wgmma.mma_async") == bk // 16
    # per tile: bk / 64 boxes of a, bn / 64 of b, issued in the prologue (S - 1 - P tiles,
    # P = 1 from 4 stages: a wgmma group left in flight) and the refill (1 tile)
    # (the compiler drops P to 0 where ptxas would serialize: compiler.compile_kernel)
    pending = 1 if "wgmma.wait_group.sync.aligned 1" in body else 0
    assert stages >= 4 or not pending
    boxes = body.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile")
    assert boxes == (bk // 64 + bn // 64) * (stages - pending), boxes
    for needed in ("mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
                   "mbarrier.arrive.expect_tx.shared::cta.b64",
                   "mbarrier.try_wait.parity.shared::cta.b64"):
        assert needed in body, needed
    assert "cp.async.cg" not in body and "fence.proxy.async" not in body
    out = linker.assemble(ptx, (9, 0))
    assert out is not None
    registers, spilled = linker.spill_report(out[1])
    assert spilled == 0 and registers <= 255, out[1]
    assert not re.search(r"wgmma.*serializ", out[1], re.IGNORECASE), out[1]


def test_tma_maps_are_the_last_parameters(monkeypatch):
    """The compiled kernel lists its tensor maps (tensor, box rows) and their 'map' kinds come
    last, one per operand, in the order the loads use them."""
    monkeypatch.setenv("NUMBA_TILE_MMA", "wgmma")
    monkeypatch.delenv("NUMBA_TILE_TMA", raising=False)
    dt, (bm, bn, bk), w = CASES[1]
    kern = _gemm(w, 3)
    a, b = np.zeros((1000, 704), dt), np.zeros((704, 896), dt)
    c = np.zeros((1000, 896), np.float32)
    ck = kern.compiled(a, b, nt.partition(c, (bm, bn)), bm, bn, bk, cc=(9, 0))
    assert ck.tensor_maps == (("a", bm), ("b", bk))
    assert ck.param_kinds[-2:] == ("map", "map")


def _gemm_min_blocks(num_warps, num_stages, min_blocks):
    @nt.jit(num_warps=num_warps, num_stages=num_stages, min_blocks_per_sm=min_blocks)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=0),
                         nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0), acc)
        nt.store(c, acc)
    return gemm


# (dtype, tile, num_warps, num_stages, min_blocks_per_sm, wgmma expected): the accumulator's
# n / 2 registers a thread and the instruction's own must fit the block's register cap
REGISTER_CAP_CASES = [
    (np.float16, (256, 256, 64), 16, 1, None, False),      # cap 128: 128 + the instruction's
    (np.float16, (128, 256, 64), 8, 1, 2, False),          # cap 128 with two blocks an SM
    ("float8_e4m3fn", (128, 256, 128), 8, 3, 2, False),
    (np.float16, (128, 256, 64), 8, 1, None, True),        # cap 255 (168 with a producer)
    (np.float16, (256, 128, 64), 16, 2, None, True),       # cap 96 with a producer: 64 + 32
    (np.float16, (256, 256, 64), 16, 2, None, False),
    (np.float16, (128, 256, 64), 4, 1, None, False),       # two slabs: 256 registers
    (np.float16, (128, 128, 64), 4, 3, None, True),        # two slabs: 128 + 32 <= 255
]


@pytest.mark.parametrize("case", REGISTER_CAP_CASES,
                         ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}-w{c[2]}-s{c[3]}-b{c[4]}")
def test_wgmma_only_where_its_registers_fit_the_cap(nvjitlink, case, monkeypatch):
    """A product whose shape suits wgmma but whose accumulator and instruction pass the
    launch bounds' register cap keeps mma.sync (ptxas refused the wgmma, C7602); either way
    the kernel assembles."""
    import ml_dtypes
    dt, (bm, bn, bk), w, stages, blocks, wgmma = case
    dt = np.dtype(getattr(ml_dtypes, dt)) if isinstance(dt, str) else np.dtype(dt)
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    a = np.zeros((512, 256), dt)
    b = np.zeros((256, 512), dt)
    c = np.zeros((512, 512), np.float32)
    ptx = _gemm_min_blocks(w, stages, blocks).ptx(a, b, nt.partition(c, (bm, bn)), bm, bn, bk,
                                                  cc=(9, 0))
    assert ("wgmma.mma_async" in ptx) == wgmma
    assert linker.assemble(ptx, (9, 0)) is not None


def _natural(form):
    from tests.gpu.test_wgmma_slabs import FORMS
    return nt.jit(num_warps=4, num_stages=3)(FORMS[form])


@pytest.mark.parametrize("form", ["iadd", "matmul", "radd"])
def test_natural_accumulation_compiles_as_mma(monkeypatch, form):
    """``acc += x @ y`` and its spellings compile to the kernel ``acc = nt.mma(x, y, acc)``
    does: wgmma over two slabs, TMA-fed and warp-specialized, the same PTX."""
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    a = np.zeros((512, 512), np.float16)
    args = (a, a, nt.partition(np.zeros((512, 512), np.float16), (128, 128)), 128, 128, 64)
    want = _natural("mma").ptx(*args, cc=(9, 0))
    got = _natural(form).ptx(*args, cc=(9, 0))
    assert "cp.async.bulk.tensor" in got and "wgmma.mma_async" in got
    strip = lambda p: re.sub(r"\.entry\s+\w+", "", re.sub(r"_Z\w+", "", p))  # noqa: E731
    assert strip(got) == strip(want)


def _closure_gemm(form):
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant, SCALE: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            if form == "mma":                  # a closure's constant
                acc = nt.mma(x, y, acc)
            else:
                acc += x @ y
            if SCALE:                          # a Constant
                acc = acc * 1.0
        nt.store(c, nt.astype(acc, nt.float16))
    return nt.jit(num_warps=4, num_stages=3)(gemm)


@pytest.mark.parametrize("form", ["mma", "iadd"])
def test_a_k_loop_with_pruned_branches_is_pipelined_as_a_plain_one(monkeypatch, form):
    """A branch on a closure's constant or a false Constant inside the K loop is pruned before
    typing and its taken side joined to the loop's block: the loads and the product meet in
    one block, and the loop gets TMA and warp specialization as the plain kernel does."""
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    a = np.zeros((512, 512), np.float16)
    args = (a, a, nt.partition(np.zeros((512, 512), np.float16), (128, 128)), 128, 128, 64,
            False)
    ex = _closure_gemm(form).explain(*args, cc=(9, 0))
    loads = [ln for ln in str(ex).splitlines() if "load:" in ln]
    assert len(loads) == 2 and all("TMA boxes, warp-specialized" in t for t in loads), loads
