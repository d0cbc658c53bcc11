"""The GPU-tier kernels of masked tiles, tile broadcasting, keepdims reductions and case E2
compile to PTX (libNVVM, no GPU) without local memory, so a lowering error in those paths
is caught on the CPU tier. A representative subset of each GPU test's specializations (every
kernel and every branch of it; dtypes and shapes sampled) keeps this tier fast."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from tests.gpu import test_broadcasting as b
from tests.gpu import test_cases as cases
from tests.gpu import test_keepdims as k
from tests.gpu import test_masked as m

P = nt.partition
F32 = np.float32


def z(shape, dt=F32):
    return np.zeros(shape, dt)


def no_local(ptx):
    assert ".local" not in ptx
    return ptx


@pytest.mark.parametrize("dt", [F32, BFLOAT16_NP], ids=lambda d: np.dtype(d).name)
def test_masked_reductions(dt):
    """Every reduction op along both axes in float32; sum and max in bfloat16."""
    for op in range(4) if dt is F32 else (0, 1):
        no_local(m.rows_kernel.ptx(z((13, 37), dt), P(z((24, 1), dt), (8, 1)), 8, 64, op, True))
        no_local(m.cols_drop_kernel.ptx(z((11, 45), dt), P(z(80, dt), 32), 16, 32, op))
    no_local(m.rows_kernel.ptx(z((13, 37), dt), P(z(24, dt), 8), 8, 64, 0, False))
    no_local(m.cols_keep_kernel.ptx(z((11, 45), dt), P(z((1, 80), dt), (1, 32)), 16, 32, 1))


def test_masked_row_reduction_uses_shuffles():
    ptx = no_local(m.rows_kernel.ptx(z((13, 37)), P(z((24, 1)), (8, 1)), 8, 64, 0, True))
    assert "shfl.sync.bfly.b32" in ptx


def test_masked_other_reductions_and_elementwise():
    no_local(m.middle_axis_kernel.ptx(z((3, 10, 5)), P(z((4, 8)), (4, 8)), 0))
    for op in range(2):
        no_local(m.arg_kernel.ptx(z((21, 27), np.float16), P(z(40, np.int32), 16), 16, 32, op, 1))
        no_local(m.arg_kernel.ptx(z((21, 27)), P(z(40, np.int32), 16), 32, 16, op, 0))
        no_local(m.cumsum_kernel.ptx(z((13, 21)), P(z((32, 32)), (16, 16)), 16, 16, op))
    no_local(m.sum_of_cumsum_kernel.ptx(z((9, 20)), P(z(16), 8), 8, 32))
    for op in range(6):
        no_local(m.two_input_kernel.ptx(z((19, 40)), z((25, 23)), P(z((32, 48)), (16, 16)), 16,
                                        16, op))
    for op in range(5):
        no_local(m.reduce_after_op_kernel.ptx(z((10, 30)), z((10, 26)), P(z(16), 8), 8, 32, op))


def test_masked_stores_padding_filled_and_shapes():
    for kind in range(3):
        no_local(m.store_kind_kernel.ptx(z((10, 13)), P(z((16, 32)), (8, 16)), 8, 16, kind))
        no_local(m.count_kernel.ptx(z(5), P(z(1), 1), 1024, kind))
    no_local(m.padded_and_masked_kernel.ptx(z(70), z(50), P(z(128), 64), 64))
    for op, shape in enumerate([(4, 8), (1, 8, 4), (8, 1)]):
        no_local(m.masked_shape_kernel.ptx(z((5, 3)), P(z(shape), shape), 8, 4, op))
    for filled in (False, True):
        no_local(m.padded_accumulator.ptx(z(300), P(z(1), 1), 64, filled))
    no_local(m.filled_reshape.ptx(z((5, 6)), P(z(64), 64)))


def test_masked_typing_errors_on_the_compile_path():
    """The typing errors the GPU tier checks are raised by .ptx() too (no interpreter)."""
    with pytest.raises(nt.errors.TileTypingError, match="filled"):
        m.masked_accumulator.ptx(z(100), P(z(1), 1), 32)
    with pytest.raises(nt.errors.TileTypingError, match="masked"):
        m.masked_reshape.ptx(z((5, 6)), P(z(64), 64))
    with pytest.raises(nt.errors.TileTypingError, match="loop"):
        m.masked_chunk_accumulator.ptx(z(100), P(z(1), 1), 32)
    with pytest.raises(nt.errors.TileTypingError, match="broadcast"):
        b.bad_add.ptx(z((8, 16)), z(8), P(z((8, 16)), (8, 16)), 8, 16)


def test_broadcasting_kernels():
    for case in range(len(b.CASES)):
        sa, sb = b.operand_shapes(case)
        no_local(b.bcast_kernel.ptx(z(sa), z(sb), P(z((b.M, b.N)), (16, 32)), 16, 32, case))
    sa, sb = b.operand_shapes(0)
    no_local(b.bcast_kernel.ptx(z(sa, np.float16), z(sb), P(z((b.M, b.N)), (16, 32)), 16, 32, 0))
    sa, sb = b.operand_shapes(2)
    no_local(b.bcast_kernel.ptx(z(sa, np.int32), z(sb, BFLOAT16_NP), P(z((b.M, b.N)), (16, 32)),
                                16, 32, 2))
    no_local(b.outer_padded.ptx(z((30, 1)), z((1, 61)), P(z((b.M, b.N)), (16, 32)), 16, 32))


@pytest.mark.parametrize("shape", k.SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rowwise_kernels(shape):
    """Softmax at every shape of the GPU test; the other expressions and bfloat16 at two."""
    rows, cols, bm, bn = shape
    variants = [(F32, 0)]
    if shape in ((5, 7, 4, 8), (13, 1000, 4, 1024)):
        variants += [(F32, 1), (F32, 2), (F32, 3), (BFLOAT16_NP, 0)]
    for dt, op in variants:
        no_local(k.rowwise_kernel.ptx(z((rows, cols), dt), P(z((rows, cols), dt), (bm, bn)),
                                      cols, bm, bn, op, np.dtype(dt).name))


def test_keepdims_result_broadcasts_without_moving_data():
    """Rows of 128 float32 lie in one warp: softmax (two keepdims reductions, each broadcast
    back over its row) needs no shared memory and no barrier."""
    ptx = no_local(k.rowwise_kernel.ptx(z((16, 100)), P(z((16, 100)), (8, 128)), 100, 8, 128, 0,
                                        "float32"))
    assert ".shared" not in ptx and "bar.sync" not in ptx


def test_slice_tile_kernels():
    no_local(k.rowwise_in_dtype.ptx(z((11, 300), np.float16), P(z((11, 300), np.float16),
                                                                (4, 512)), 4, 512))
    for rows, cols, bm, bn, dt in [(13, 100, 4, 128, BFLOAT16_NP), (16, 1000, 16, 1024, F32),
                                   (3, 1, 2, 1, F32)]:
        nb = -(-rows // bm)
        no_local(k.stats_kernel.ptx(z((rows - 1, cols), dt), P(z((rows, cols), dt), (bm, bn)),
                                    P(z((rows, 1), dt), (bm, 1)), P(z((rows, 1)), (bm, 1)),
                                    P(z((nb, 1)), (1, 1)), bm, bn))
    for masked in (True, False):
        no_local(k.branch_kernel.ptx(z((13, 100)), z((13, 1)), P(z((13, 100)), (4, 128)), 1, 4,
                                     128, masked))
    no_local(k.padded_max_kernel.ptx(z((10, 50)), P(z((10, 50)), (4, 64)), 4, 64))


def test_e2_kernels():
    for op in cases.E2_OPS:
        no_local(cases.e2_variance.ptx(z(5), P(z(1), 1), 8, 5, op))
    no_local(cases.e2_variance.ptx(z(5), P(z(1), 1), 1024, 5, 0))
    no_local(cases.e2_rows_2d.ptx(z((13, 21)), P(z((13, 2)), (8, 1)), 8, 16))
    no_local(cases.e2_cols_2d.ptx(z((13, 21)), P(z((2, 21)), (1, 16)), 8, 16))
    no_local(cases.half_sum_masked.ptx(z(3000, np.float16), P(z(1, np.float16), 1), 4096))
