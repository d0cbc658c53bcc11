"""The facts about accumulator layouts that the register-only lowering relies on, checked
thread by thread against the PTX ISA's fragment layouts as ``MmaLayout.slot_coords`` states
them:

* a row reduction (``lowering/reduction._mma_row_tree``) combines, in each thread, the slots
  of one row, then lanes ``l ^ 1`` and ``l ^ 2``: those lanes must hold exactly the same rows,
  and together every column of them;
* ``VectorLayout`` slot ``2 im + h`` (rows) / ``2 jn + i`` (columns) names the row / column
  of its parent slot, and broadcasting it onto the parent or onto an accumulator of the same
  rows is a choice of registers (``local_slots``);
* ``wgmma``'s register form of operand ``a`` (``lowering/wgmma._a_fragment``) takes, for the
  K step ``ks`` of slab ``s``, the accumulator slots whose elements the PTX ISA's A fragment
  of ``m64nNk16`` puts in those registers.
"""

import itertools

import pytest

from numba_tile.layout import ATOM_N, MmaLayout, VectorLayout, local_slots

SHAPES = [((64, 64), 128, True), ((128, 64), 256, True), ((128, 128), 128, True),
          ((256, 32), 512, True), ((64, 16), 128, False), ((32, 32), 64, False),
          ((64, 8), 128, False)]


def _layouts():
    for shape, threads, wgmma in SHAPES:
        lay = MmaLayout(shape, threads, wgmma=wgmma)
        if lay.whole_rows:
            yield lay


@pytest.mark.parametrize("lay", list(_layouts()), ids=lambda l: l.describe())
def test_the_row_tree_combines_whole_rows(lay):
    am, an = lay.atoms
    for t in range(lay.num_threads):
        for im, half in itertools.product(range(am), range(2)):
            slots = [4 * (im * an + jn) + i for jn in range(an) for i in (2 * half, 2 * half + 1)]
            rows = {lay.slot_coords(t, j)[0] for j in slots}
            assert len(rows) == 1
            (row,) = rows
            cols = set()
            for lane_xor in (0, 1, 2, 3):
                u = (t & ~31) | ((t & 31) ^ lane_xor)
                assert {lay.slot_coords(u, j)[0] for j in slots} == {row}
                cols |= {lay.slot_coords(u, j)[1] for j in slots}
            assert cols == set(range(lay.shape[1])), (t, im, half)
            vec = VectorLayout(lay, 0, 2)
            assert vec.linear_index(t, 2 * im + half) == row


@pytest.mark.parametrize("lay", list(_layouts()), ids=lambda l: l.describe())
@pytest.mark.parametrize("axis, ndim", [(0, 2), (1, 2), (1, 1)])   # (M,) broadcasts as (1, M)
def test_a_vector_of_an_accumulator_broadcasts_onto_it_in_registers(lay, axis, ndim):
    vec = VectorLayout(lay, axis, ndim)
    slots = local_slots(vec, lay, broadcast=True)
    assert slots is not None
    for t in range(lay.num_threads):
        for i, j in enumerate(slots):
            assert vec.linear_index(t, j) == lay.slot_coords(t, i)[axis]


@pytest.mark.parametrize("m, n, d, threads", [(64, 64, 128, 128), (128, 64, 64, 256),
                                              (128, 128, 128, 256), (256, 64, 64, 128)])
def test_rows_of_one_accumulator_move_onto_another_of_the_same_rows_in_registers(m, n, d,
                                                                                 threads):
    scores, acc = MmaLayout((m, n), threads, wgmma=True), MmaLayout((m, d), threads, wgmma=True)
    assert local_slots(VectorLayout(scores, 0, 2), acc, broadcast=True) is not None
    assert local_slots(VectorLayout(scores, 0, 2), VectorLayout(acc, 0, 2)) is not None


@pytest.mark.parametrize("m, k, threads", [(64, 64, 128), (128, 64, 256), (128, 128, 128),
                                           (256, 32, 256)])
def test_the_register_a_fragment_is_the_accumulators_slots(m, k, threads):
    """PTX ISA, "Register fragments for matrix A" of wgmma .m64nNk16: warp ``w % 4`` of the
    warpgroup holds rows ``16 (w % 4) ..`` of the 64-row slab; in a 16-column K step,
    a0 a1: (row l // 4, columns 2 (l % 4) + 0, 1), a2 a3: row + 8, a4 a5: columns + 8,
    a6 a7: both; words hold pairs (a0 a1), (a2 a3), (a4 a5), (a6 a7)."""
    lay = MmaLayout((m, k), threads, wgmma=True)
    am, an = lay.atoms
    for t in range(threads):
        g, w, lane = t // 128, (t // 32) % 4, t % 32
        for s in range(am):
            slab_row0 = 64 * g + s * lay.atom_row_step
            for ks in range(k // 16):
                words = []
                for jn in (2 * ks, 2 * ks + 1):          # lowering/wgmma._a_fragment
                    base = 4 * (s * an + jn)
                    words += [(base, base + 1), (base + 2, base + 3)]
                want = [((lane // 4, 2 * (lane % 4)), (lane // 4, 2 * (lane % 4) + 1)),
                        ((lane // 4 + 8, 2 * (lane % 4)), (lane // 4 + 8, 2 * (lane % 4) + 1)),
                        ((lane // 4, 2 * (lane % 4) + 8), (lane // 4, 2 * (lane % 4) + 9)),
                        ((lane // 4 + 8, 2 * (lane % 4) + 8),
                         (lane // 4 + 8, 2 * (lane % 4) + 9))]
                for (lo, hi), (wlo, whi) in zip(words, want):
                    for slot, (r, c) in ((lo, wlo), (hi, whi)):
                        assert lay.slot_coords(t, slot) == (slab_row0 + 16 * w + r,
                                                            16 * ks + c), (t, s, ks, slot)
    assert ATOM_N == 8
