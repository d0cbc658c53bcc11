"""The matrix products compile to tensor-core instructions (no GPU: libNVVM, then ptxas
through nvJitLink where it is installed): ``mma.sync`` of the dtype's form, ``ldmatrix``
fragments from shared memory, 16-byte shared stores, no local memory and no spills at the
standard tile configurations, for sm_80 and sm_90 (on sm_90 with ``NUMBA_TILE_MMA=sync``: the
products that fit take ``wgmma`` there by default, tests/compile/test_wgmma_ptx.py); IEEE
float32 never uses a tensor core."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.runtime import linker

CCS = [(8, 0), (9, 0)]


@pytest.fixture(autouse=True)
def _mma_sync(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_MMA", "sync")


def _gemm(num_warps):
    @nt.jit(num_warps=num_warps)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant, ACC: nt.Constant, PREC: nt.Constant):
        acc = nt.zeros((BM, BN), ACC)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc, precision=PREC)
        nt.store(c, acc)
    return gemm


GEMM = {w: _gemm(w) for w in (4, 8)}

# (name, input dtype, acc dtype, precision, (BM, BN, BK), num_warps, instruction)
STANDARD = [
    ("f16-128x128x32", np.float16, np.float32, None, (128, 128, 32), 4,
     "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("f16-128x256x32-w8", np.float16, np.float32, None, (128, 256, 32), 8,
     "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("bf16-128x128x32", BFLOAT16_NP, np.float32, None, (128, 128, 32), 4,
     "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("f16acc-128x128x32", np.float16, np.float16, None, (128, 128, 32), 4,
     "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    ("s8-64x64x64", np.int8, np.int32, None, (64, 64, 64), 4,
     "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
    ("tf32-64x64x32", np.float32, np.float32, "tf32", (64, 64, 32), 4,
     "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
]


def compile_case(case, cc):
    _name, dt, acc, prec, (bm, bn, bk), w, _instr = case
    a = np.zeros((1000, 704), dt)          # rows of 16-byte multiples: vector loads
    b = np.zeros((704, 896), dt)
    c = np.zeros((1000, 896), acc)
    return GEMM[w].ptx(a, b, nt.partition(c, (bm, bn)), bm, bn, bk, np.dtype(acc).name, prec,
                       cc=cc)


@pytest.mark.parametrize("cc", CCS, ids=lambda c: f"sm{c[0]}{c[1]}")
@pytest.mark.parametrize("case", STANDARD, ids=[c[0] for c in STANDARD])
def test_tensor_core_forms(case, cc):
    ptx = compile_case(case, cc)
    _name, _dt, _acc, _prec, (bm, bn, bk), w, instr = case
    body = ptx[ptx.index(".entry"):]
    k_step = 32 // np.dtype(_dt).itemsize
    per_warp = (bm // 16) * (bn // 8) * (bk // k_step) // w    # each warp its own atoms
    assert body.count(instr) == per_warp, (body.count(instr), per_warp)
    assert re.search(r"ldmatrix\.sync\.aligned\.m8n8\.x4(\.trans)?\.shared\.b16", body)
    assert "st.shared.v4" in body
    assert ".local" not in ptx
    if _prec == "tf32":
        assert "cvt.rna.tf32.f32" in body


def test_ieee_float32_uses_no_tensor_core():
    case = ("f32", np.float32, np.float32, None, (32, 32, 16), 4, None)
    body = compile_case(case, (9, 0))
    assert "mma.sync" not in body and "tf32" not in body
    assert "fma.rn.f32" in body


@pytest.mark.parametrize("case", STANDARD, ids=[c[0] for c in STANDARD])
def test_no_spills_on_sm90(nvjitlink, case):
    out = linker.assemble(compile_case(case, (9, 0)), (9, 0))
    assert out is not None
    registers, spilled = linker.spill_report(out[1])
    assert spilled == 0, out[1]
    assert registers <= 255


@nt.jit(num_stages=3)
def rerun_pipeline(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for i in range(2):
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (i, k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
    nt.store(c, acc)


@pytest.mark.parametrize("cc", CCS, ids=lambda c: f"sm{c[0]}{c[1]}")
def test_pipelined_loads_use_cp_async_and_one_barrier_per_iteration(cc):
    a = np.zeros((1024, 512), np.float16)
    b = np.zeros((512, 1024), np.float16)
    c = np.zeros((1024, 1024), np.float32)
    body = GEMM_STAGED.ptx(a, b, nt.partition(c, (128, 128)), 128, 128, 32, "float32", None,
                           cc=cc)
    body = body[body.index(".entry"):]
    # 128x32 and 32x128 float16 tiles: 4 chunks of 16 bytes per thread each, copied for the
    # prologue (S - 2 = 1 tile) and for every iteration
    assert body.count("cp.async.cg.shared.global") == 2 * 4 * 2
    assert "cp.async.commit_group" in body and "cp.async.wait_group" in body
    assert ".local" not in body
    # the operands never pass through registers: no 16-byte shared stores before the products
    assert "st.shared.v4" not in body.split("mma.sync")[0]


GEMM_STAGED = nt.jit(num_stages=3)(GEMM[4].__wrapped__)


def test_a_rerun_pipeline_passes_a_barrier_before_refilling_its_slots():
    """A pipelined loop entered again (inside another loop) does not refill its slots while a
    slow warp could still read them after the previous run's last barrier: each run starts with
    wait_all and bar.sync before its first copies."""
    a = np.zeros((256, 512), np.float16)
    b = np.zeros((512, 256), np.float16)
    ptx = rerun_pipeline.ptx(a, b, nt.partition(np.zeros((64, 256), np.float32), (64, 64)), 64,
                             64, 32, cc=(9, 0))
    body = ptx[ptx.index(".entry"):]
    start = body.index("cp.async.wait_all")
    first_copy = body.index("cp.async.cg", start)
    assert "bar.sync" in body[start:first_copy]


def test_a_kernel_with_pipelined_loads_drains_its_copies_before_it_returns():
    """Copies issued past the loop's end (zero fills) land before the block exits."""
    a = np.zeros((1024, 512), np.float16)
    b = np.zeros((512, 1024), np.float16)
    body = GEMM_STAGED.ptx(a, b, nt.partition(np.zeros((1024, 1024), np.float32), (128, 128)),
                           128, 128, 32, "float32", None, cc=(9, 0))
    body = body[body.index(".entry"):]
    for ret in [m.start() for m in re.finditer(r"\bret;", body)]:
        before = body[:ret]
        assert before.rfind("cp.async.wait_all") > max(before.rfind("cp.async.cg"),
                                                       before.rfind("cp.async.commit_group"))


def test_targets_below_sm80_are_refused():
    a = np.zeros((256, 256), np.float16)
    with pytest.raises(nt.errors.TileTypingError, match=r"compute capability 8\.0 or newer.*"
                                                        r"got 7\.5"):
        GEMM_STAGED.ptx(a, a, nt.partition(np.zeros((256, 256), np.float32), (64, 64)), 64, 64,
                        32, "float32", None, cc=(7, 5))


@nt.jit(num_stages=3)
def persistent_idx_in_loop(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                           BN: nt.Constant, BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (idx[0], k), (BM, BK)), nt.load(b, (k, idx[1]), (BK, BN)),
                         acc)
        nt.store(c, nt.astype(acc, nt.float16), idx)


def test_branded_index_coordinates_in_the_k_loop_are_pipelined():
    """idx[0] / idx[1] of the tiles() index, read inside the K loop, are
    loop-invariant there; the loads are staged (cp.async) as when read before the loop."""
    a = np.zeros((512, 256), np.float16)
    c = np.zeros((512, 512), np.float16)
    body = persistent_idx_in_loop.ptx(a, a.T.copy(), nt.partition(c, (128, 128), blocks=3,
                                                                order=nt.grouped(8)),
                                      128, 128, 32, cc=(9, 0))
    assert body.count("cp.async.cg.shared.global") > 0
    assert ".local" not in body
