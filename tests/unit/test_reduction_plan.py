"""The row reduction's grouping of threads (lowering/reduction.py), checked against the
blocked layout's own element ownership: every element of every row is combined exactly once
into exactly that row's partials, for many shapes and block sizes."""

import itertools

import pytest

from numba_tile.layout import BlockedLayout
from numba_tile.lowering.reduction import last_axis_plan, row_of_partial


def simulate(layout, C):
    group, rpr, lanes, warps_per_row = last_axis_plan(layout, C)
    TU, V = layout.threads_used, layout.vec
    # registers: partial j of thread t holds the elements of its repetitions j*rpr .. (j+1)*rpr
    held = {}
    for t in range(TU):
        for j in range(layout.reps // rpr):
            elems = set()
            for r in range(j * rpr, (j + 1) * rpr):
                for v in range(V):
                    elems.add(layout.linear_index(t, r * V + v))
            held[t, j] = elems
    # butterfly shuffles among `lanes` aligned consecutive lanes: each lane ends with the union
    after = {}
    for (t, j), elems in held.items():
        base = t - t % lanes
        union = set()
        for u in range(base, base + lanes):
            if u < TU:
                union |= held[u, j]
        after[t, j] = union
    # writers: the first lane of each shuffle group; slot = (row, warp of the row)
    slots = {}
    for (t, j), elems in after.items():
        if t % lanes:
            continue
        row = row_of_partial(layout, C, t, j)
        warp_slot = (t % group) // 32 if warps_per_row > 1 else 0
        assert (row, warp_slot) not in slots, "two writers for one slot"
        slots[row, warp_slot] = elems
    return slots, warps_per_row


SHAPES = [(1, 8), (4, 8), (16, 64), (4, 4096), (1, 4096), (8, 1024), (32, 32), (64, 16),
          (2, 2), (128, 8), (1, 1), (16, 1), (4, 16, 32)]


@pytest.mark.parametrize("shape,threads,max_vec", list(itertools.product(
    SHAPES, [32, 64, 128, 256], [2, 4, 8, 16])))
def test_every_row_element_is_combined_exactly_once(shape, threads, max_vec):
    layout = BlockedLayout(shape, threads, max_vec)
    C = shape[-1]
    slots, per_row = simulate(layout, C)
    rows = layout.numel // C
    for row in range(rows):
        parts = [slots.get((row, w)) for w in range(per_row)]
        assert all(p is not None for p in parts), (row, per_row)
        union = set().union(*parts)
        assert sum(len(p) for p in parts) == len(union)              # no element twice
        assert union == set(range(row * C, (row + 1) * C))            # the whole row
