"""Every kernel of the GPU tier compiles to PTX for every dtype it runs with (no GPU needed),
so a lowering error is caught on the CPU tier before a GPU ever sees it."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from tests.gpu import test_elementwise as g

FLOATS = [np.float16, BFLOAT16_NP, np.float32, np.float64]


def no_local(ptx):
    assert ".local" not in ptx


@pytest.mark.parametrize("op", range(len(g.MATH_REF)))
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_math_kernels(op, dt):
    x = np.zeros(1500, dt)
    no_local(g.math_kernel.ptx(x, nt.partition(x.copy(), 256), op))


@pytest.mark.parametrize("dt", FLOATS + [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_add_and_saxpy(dt):
    x = np.zeros(4099, dt)
    no_local(g.add_kernel.ptx(x, x, nt.partition(x.copy(), 512), 512))
    y = np.zeros((70, 133), dt)
    if np.dtype(dt).kind == "f" or dt is BFLOAT16_NP:
        no_local(g.saxpy_kernel.ptx(1.5, y, y, nt.partition(y.copy(), (16, 32))))


def test_other_kernels():
    a = np.zeros(777, np.int32)
    b = np.zeros(777, np.int64)
    no_local(g.mixed_kernel.ptx(a, b, nt.partition(np.zeros(777, np.float32), 128)))
    x = np.zeros((45, 70), np.float32)
    no_local(g.index_kernel.ptx(x, nt.partition(np.zeros((45, 70)), (16, 32)), 16, 32))
    for block in (16, 128, 1024, 4096):
        no_local(g.arange_kernel.ptx(nt.partition(np.zeros(100, np.int32), block), block))
    for pad in (0.0, float("nan"), -float("inf")):
        no_local(g.padding_kernel.ptx(np.zeros(10, np.float32),
                                      nt.partition(np.zeros(16, np.float32), 16), 16, pad))
    no_local(g.bool_kernel.ptx(np.zeros(300, np.float32), nt.partition(np.zeros(300, np.bool_), 64)))


def test_scalar_kernels():
    from tests.gpu import test_scalars_and_narrowing as s
    x = np.zeros(300, np.int32)
    for v in (7, 2**32 + 1):
        no_local(s.compare_kernel.ptx(x, nt.partition(np.zeros(300, np.bool_), 64), v))
        no_local(s.max_kernel.ptx(x, nt.partition(np.zeros(300, np.int64), 64), v))
    no_local(s.add_literal_kernel.ptx(x, nt.partition(np.zeros(300, np.int64), 32)))
    no_local(s.full_kernel.ptx(nt.partition(np.zeros(40, np.int64), 16), 16, 2**40))
    for src, dst in [(np.int32, np.int64), (np.float16, np.float32), (np.bool_, np.int32)]:
        no_local(s.store_tile_kernel.ptx(np.zeros(64, src), nt.partition(np.zeros(64, dst), 32)))


def test_integer_power_kernel():
    a = np.zeros(500, np.int64)
    no_local(g.int_pow_kernel.ptx(a, a, nt.partition(a.copy(), 128)))


def test_computed_shape_kernel():
    x = np.zeros(1000, np.float32)
    no_local(g.computed_shape_kernel.ptx(x, nt.partition(np.zeros(200, np.float32), 32), 32))


def test_persistent_kernels():
    from tests.gpu import test_persistent as p
    x = np.zeros(5000, np.float32)
    no_local(p.persistent_saxpy.ptx(1.5, x, x, nt.partition(x.copy(), 256, blocks=7), 256))
    no_local(p.persistent_saxpy.ptx(1.5, x, x, nt.partition(x.copy(), 256), 256))
    y = np.zeros((100, 130), np.float32)
    no_local(p.persistent_2d.ptx(y, nt.partition(y.copy(), (16, 32), blocks=5), 16, 32))
    no_local(p.strip_sum.ptx(np.zeros((50, 100), np.float32),
                             nt.partition(np.zeros((50, 64), np.float32), (16, 64)), 16, 64))


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_unchecked_kernels(dt):
    import re
    from tests.gpu import test_unchecked as u
    idx = np.zeros(4000, np.int32)
    vals = np.zeros(4000, dt)
    out = np.zeros(37, dt)
    expected = {0: r"atom\.relaxed\.gpu\.add\.", 1: r"atom\.acq_rel\.gpu\.max\.s",
                2: r"atom\.relaxed\.sys\.min\.s", 3: r"atom\.release\.gpu\.exch\.b",
                4: r"atom\.release\.cta\.exch\.b"}
    for op, pattern in expected.items():
        if op in (1, 2) and np.dtype(dt).kind == "f":
            continue
        ptx = u.atomic_kernel.ptx(idx, vals, out, nt.partition(np.zeros(4000, dt), 256), 256, op)
        no_local(ptx)
        assert re.search(pattern, ptx), pattern
    no_local(u.gather_kernel.ptx(np.zeros(300, np.float32), idx,
                                 nt.partition(np.zeros(4000, np.float32), 256), 256))


def test_cas_and_scatter_kernels():
    from tests.gpu import test_unchecked as u
    ptx = u.cas_kernel.ptx(np.zeros(100, np.int32), np.zeros(50, np.int32),
                           nt.partition(np.zeros(100, np.bool_), 256), 256)
    assert "atom.relaxed.gpu.cas.b32" in ptx
    no_local(u.scatter_2d.ptx(np.zeros(400, np.int32), np.zeros(400, np.int32),
                              np.zeros(400, np.float32), np.zeros((20, 30), np.float32), 128))


def test_shape_kernels():
    from tests.gpu import test_shape_ops as s
    no_local(s.e1_kernel.ptx(np.zeros(6, np.float32), nt.partition(np.zeros((10, 6), np.float32),
                                                                   (4, 4)), 4, 4))
    for b in (8, 32):
        for dt in (np.float32, np.float16, np.int64):
            ptx = s.transpose_kernel.ptx(np.zeros((70, 50), dt),
                                         nt.partition(np.zeros((50, 70), dt), (b, b)), b)
            no_local(ptx)
            assert "bar.sync" in ptx
    for r, c in ((4, 64), (16, 16), (1, 256), (64, 4)):
        no_local(s.reshape_kernel.ptx(np.zeros(100, np.float32),
                                      nt.partition(np.zeros((28, c), np.float32), (r, c)), r, c))
    no_local(s.permute_kernel.ptx(np.zeros((4, 8, 2), np.float32),
                                  nt.partition(np.zeros((2, 4, 8), np.float32), (2, 4, 8)), 2, 4, 8))
    no_local(s.outer_kernel.ptx(np.zeros(45, np.float32), np.zeros(70, np.float32),
                                nt.partition(np.zeros((45, 70), np.float32), (16, 32)), 16, 32))


def test_reshape_between_equal_distributions_moves_no_data():
    @nt.jit
    def flat_to_rows(x, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
        nt.store(z, nt.reshape(nt.load(x, (nt.bid(0),), (R * C,), padding=0), (R, C)))

    ptx = flat_to_rows.ptx(np.zeros(4096, np.float32),
                           nt.partition(np.zeros((64, 64), np.float32), (16, 64)), 16, 64)
    assert "bar.sync" not in ptx and ".shared" not in ptx


def test_unchecked_and_persistent_edge_kernels_have_no_local_memory():
    from tests.gpu import test_persistent as p
    from tests.gpu import test_unchecked as u
    no_local(u.atomic_then_transpose.ptx(np.zeros(8, np.int32),
                                         nt.partition(np.zeros((2, 4), np.int32), (2, 4))))
    no_local(u.tiles_to_mutable.ptx(np.zeros(192, np.float32), np.zeros(192, np.float32), 32))
    no_local(p.index_after_the_loop.ptx(nt.partition(np.zeros(40, np.float32), 8, blocks=7), 8))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BFLOAT16_NP, np.int32],
                         ids=lambda d: np.dtype(d).name)
def test_reduction_kernels(dt):
    from tests.gpu import test_reductions as r
    for op in range(4):
        ptx = r.row_reduce.ptx(np.zeros((37, 64), dt), nt.partition(np.zeros((37, 1), dt), (16, 1)),
                               16, 64, op)
        no_local(ptx)
        assert "bar.sync" in ptx


def test_other_reduction_kernels():
    from tests.gpu import test_reductions as r
    no_local(r.sum_of_ones.ptx(np.ones(4096, np.float16), nt.partition(np.zeros(1, np.float16), 1),
                               4096))
    no_local(r.column_max.ptx(np.zeros((32, 100), np.float32),
                              nt.partition(np.zeros(100, np.float32), 32), 32, 32))
    for ax, shape in ((1, (4, 16, 8)), (2, (4, 8, 16))):
        no_local(r.reduce_3d.ptx(np.zeros(shape, np.float32), nt.partition(np.zeros((4, 8)), (4, 8)),
                                 ax))


def test_arg_and_scan_kernels():
    from tests.gpu import test_reductions as r
    for dt in (np.float32, np.float16, np.int32):
        for op in (0, 1):
            no_local(r.arg_kernel.ptx(np.zeros((40, 32), dt), nt.partition(np.zeros(40, np.int32), 16),
                                      16, 32, op))
        for ax in (0, 1):
            no_local(r.cumsum_kernel.ptx(np.zeros((16, 32), dt),
                                         nt.partition(np.zeros((16, 32), np.float32), (16, 32)),
                                         16, 32, ax))


def test_row_reductions_use_warp_shuffles():
    from tests.gpu import test_reductions as r
    ptx = r.row_reduce.ptx(np.zeros((37, 64), np.float32),
                           nt.partition(np.zeros((37, 1), np.float32), (16, 1)), 16, 64, 0)
    assert "shfl.sync.bfly.b32" in ptx
    ptx = r.sum_of_ones.ptx(np.ones(4096, np.float16), nt.partition(np.zeros(1, np.float16), 1),
                            4096)
    assert "shfl.sync.bfly.b32" in ptx and ".local" not in ptx
