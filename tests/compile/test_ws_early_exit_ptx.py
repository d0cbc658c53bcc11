"""A warp-specialized loop whose consumers leave mid-loop (a ``return``, or an exception Numba
raises in the body itself: a ``range`` step of 0, a tuple index past its end) releases no more
slots: the producer's wait for an empty slot watches for the consumers' stop job, and before
it returns it waits for every box it issued (``lowering/ws.py``). In PTX, no GPU: every
producer slot wait is a ``try_wait`` loop that also reads the job's loop number (volatile) and
leaves on the stop value; the stop path waits on the ``full`` barriers of the last stages."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numba_tile as nt

STOP_TEST = re.compile(r"ld\.volatile\.shared\.u32\s+(%r\d+), \[%r\d+\];\s*"
                       r"(?://.*\s*)*setp\.(?:ne|eq)\.s32\s+%p\d+, \1, -1;")


def _kernels(stages):
    @nt.jit(num_warps=4, num_stages=stages)
    def step_from_data(a, b, f, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                       BN: nt.Constant, BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        s = 0.0
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=0),
                         nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0), acc)
            for j in range(0, 2, f[0]):          # f[0] == 0: Numba raises ValueError
                s = s + 1.0
        nt.store(c, acc + s)

    @nt.jit(num_warps=4, num_stages=stages)
    def tuple_index(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                    BK: nt.Constant, C: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        s = 0.0
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=0),
                         nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0), acc)
            s = s + C[k]                         # k past the tuple's end: 0
        nt.store(c, acc + s)

    @nt.jit(num_warps=4, num_stages=stages)
    def persistent(a, b, f, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant):
        for idx in nt.tiles(c):
            acc = nt.zeros((BM, BN), nt.float32)
            s = 0.0
            for k in range(nt.num_tiles(a, 1, BK)):
                acc = nt.mma(nt.load(a, (idx[0], k), (BM, BK), padding=0),
                             nt.load(b, (k, idx[1]), (BK, BN), padding=0), acc)
                for j in range(0, 2, f[idx[0]]):
                    s = s + 1.0
            nt.store(c, acc + s, idx)
    return step_from_data, tuple_index, persistent


def _ptx(which, stages):
    step_from_data, tuple_index, persistent = _kernels(stages)
    a = np.ones((256, 1024), np.float16)
    b = np.ones((1024, 256), np.float16)
    f = np.ones(4, np.int64)
    c = np.zeros((256, 256), np.float32)
    if which == "step":
        return step_from_data.ptx(a, b, f, nt.partition(c, (64, 64)), 64, 64, 64, cc=(9, 0))
    if which == "tuple":
        return tuple_index.ptx(a, b, nt.partition(c, (64, 64)), 64, 64, 64, (1.0, 2.0),
                               cc=(9, 0))
    return persistent.ptx(a, b, f, nt.partition(c, (64, 64), blocks=3), 64, 64, 64, cc=(9, 0))


@pytest.mark.parametrize("stages", [2, 3, 5])
@pytest.mark.parametrize("which", ["step", "tuple", "persistent"])
def test_producer_slot_waits_watch_for_the_stop_job(which, stages):
    ptx = _ptx(which, stages)
    assert re.search(r"\.maxntid\s+256", ptx), "expected the warp-specialized schedule"
    # the producer's slot waits: a try_wait whose answer is a register, not a spin label
    polls = re.findall(r"mbarrier\.try_wait\.parity\.shared::cta\.b64 P1, \[%r\d+\], %r\d+;"
                       r"\s*selp\.u32", ptx)
    stops = STOP_TEST.findall(ptx)
    assert polls and len(stops) == len(polls)
    # the stop path: the full barriers of the last `stages` positions, each a spin wait
    assert ptx.count("NT_WS_WAIT:") >= stages + 1
