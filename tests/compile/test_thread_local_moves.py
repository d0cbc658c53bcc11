"""Register-only moves (``lowering/layouts.local_slots``, ``local_lines``): where every thread
already holds the elements a layout change, reshape, broadcast or leading-axis reduction
gives it, the PTX has no shared memory and no barrier; where it does not, the move still goes
through shared memory (the checks can fail). Compiled with libNVVM (no GPU); the values are
checked in ``tests/gpu/test_thread_local_moves.py``."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.layout import BlockedLayout, SliceLayout
from numba_tile.layout import local_lines, local_slots
from tests.gpu.test_thread_local_moves import folded_state, leading_reduce, row_max_state


def _body(ptx):
    return ptx[ptx.index("{", ptx.index(".entry")):]


@pytest.mark.parametrize("dt, r", [(BFLOAT16_NP, 2), (np.float16, 2), (np.float32, 4),
                                   (np.float32, 2)], ids=["bf16", "f16", "f32", "f32-r2"])
def test_a_folded_running_state_stays_in_registers(dt, r):
    x = np.zeros((4, 3000), dt)
    c = 1024 // r
    m, d = np.zeros((4, c), np.float32), np.zeros((4, c), np.float32)
    body = _body(folded_state.ptx(x, nt.partition(m, (1, c)), nt.partition(d, (1, c)), 1024,
                                  r, c))
    assert "bar.sync" not in body and "st.shared" not in body and "ld.shared" not in body


def test_a_fold_across_threads_still_goes_through_shared_memory():
    # (8, 128) of a (1, 1024) bfloat16 tile over 64 threads: a thread's two chunks lie in two
    # rows of the view, so a column's 8 elements are in 4 threads
    x = np.zeros((4, 3000), BFLOAT16_NP)
    m, d = np.zeros((4, 128), np.float32), np.zeros((4, 128), np.float32)
    body = _body(folded_state.ptx(x, nt.partition(m, (1, 128)), nt.partition(d, (1, 128)),
                                  1024, 8, 128))
    assert "bar.sync" in body and "st.shared" in body


@pytest.mark.parametrize("op", range(4))
@pytest.mark.parametrize("pad", [True, False])
def test_a_leading_axis_reduction_over_whole_columns_uses_no_shared_memory(op, pad):
    x = np.zeros((5, 256), BFLOAT16_NP)
    out, out2 = np.zeros((1, 256), np.float32), np.zeros(256, np.float32)
    body = _body(leading_reduce.ptx(x, nt.partition(out, (1, 256)), nt.partition(out2, 256),
                                    8, 256, op, pad))
    assert "bar.sync" not in body and "st.shared" not in body


def test_a_row_statistic_state_needs_no_barrier_in_one_warp():
    x = np.zeros((3, 1000), BFLOAT16_NP)
    y = np.zeros((3, 1), np.float32)
    body = _body(row_max_state.ptx(x, nt.partition(y, (1, 1)), 256))
    assert "bar.sync" not in body and "st.shared" not in body


def test_local_slots_rules():
    wide = BlockedLayout((1, 4096), 256, 8)
    # a row statistic: every thread holds it in every slot
    assert local_slots(SliceLayout(wide, 1), BlockedLayout((1, 1), 256, 4)) == (0,)
    # float32 chunks of 4 against a 16-bit load's 8: threads hold other elements
    assert local_slots(wide, BlockedLayout((1, 4096), 256, 4)) is None
    # a reshape along the repetitions keeps each thread's elements, slot for slot
    assert local_slots(wide, BlockedLayout((2, 2048), 256, 8)) == tuple(range(16))
    # a source with replicating threads (a (1, 1) blocked tile: one owner) is not used: a
    # replica's copy may differ from its owner's (an atomic's result)
    assert local_slots(BlockedLayout((1, 1), 256, 4), BlockedLayout((1, 4096), 256, 8),
                       broadcast=True) is None
    # a broadcast of a compact state over the view's rows
    assert local_slots(BlockedLayout((1, 2048), 256, 8), BlockedLayout((2, 2048), 256, 8),
                       broadcast=True) == tuple(range(8)) * 2


def test_local_lines_rules():
    view = BlockedLayout((4, 2048), 256, 8)             # 4 chunks a thread, one per row
    lines = local_lines(view, BlockedLayout((1, 2048), 256, 8), 0, True)
    assert lines == tuple(tuple(8 * k + v for k in range(4)) for v in range(8))
    assert local_lines(view, BlockedLayout((2048,), 256, 8), 0, False) == lines
    # the default float32 layout of the result spreads a thread's columns differently
    assert local_lines(view, BlockedLayout((1, 2048), 256, 4), 0, True) is None
    # along the last axis (a row across threads): not this path
    assert local_lines(view, BlockedLayout((4, 1), 256, 8), 1, True) is None
