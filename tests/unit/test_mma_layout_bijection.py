"""Every ``MmaLayout`` (``mma.sync`` and the ``wgmma`` accumulator of one or several 64-row
slabs per warpgroup, ``layout.MmaLayout``) maps the fragment slots of its used threads one to
one onto the tile's elements, and the replicating warps repeat the used ones exactly."""

import itertools

import pytest

from numba_tile.layout import MmaLayout


def _coords(layout, threads):
    return [layout.slot_coords(t, s) for t in threads for s in range(layout.elems_per_thread)]


SHAPES = [(m, n) for m, n in itertools.product((16, 32, 64, 128, 256, 512), (8, 16, 32, 64, 128, 256))]


@pytest.mark.parametrize("num_warps,wgmma", [(w, False) for w in (1, 2, 4, 8, 16)]
                         + [(w, True) for w in (4, 8, 16)])
def test_slot_coords_are_a_bijection_over_the_tile(num_warps, wgmma):
    checked = 0
    for m, n in SHAPES:
        if wgmma and m % (16 * num_warps):
            continue                 # wgmma: M a multiple of 16 * num_warps, whole warpgroups
        layout = MmaLayout((m, n), 32 * num_warps, wgmma)
        if not wgmma and m * n < 32 * 4 * layout.warps_m * layout.warps_n:
            continue
        used = range(layout.threads_used)
        coords = _coords(layout, used)
        assert len(coords) == m * n, (m, n, num_warps, layout.describe())
        assert set(coords) == {(r, c) for r in range(m) for c in range(n)}, \
            (m, n, num_warps, layout.describe())
        assert sorted(layout.linear_index(t, s) for t in used
                      for s in range(layout.elems_per_thread)) == list(range(m * n))
        for t in range(layout.threads_used, 32 * num_warps):   # replicas repeat used warps
            for s in range(layout.elems_per_thread):
                assert layout.slot_coords(t, s) == layout.slot_coords(t % layout.threads_used, s)
        if wgmma:                    # a warpgroup's atom row covers 64 consecutive rows
            for g in range(num_warps // 4):
                for im in range(layout.atoms[0]):
                    rows = {layout.slot_coords(t, im * 4 * layout.atoms[1] + i)[0]
                            for t in range(128 * g, 128 * g + 128) for i in range(4)}
                    lo = min(rows)
                    assert rows == set(range(lo, lo + 64)) and lo % 64 == 0
        checked += 1
    assert checked
