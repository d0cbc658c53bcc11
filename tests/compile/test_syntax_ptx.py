"""The kernels of tests/gpu/test_python_syntax.py (augmented assignment, newaxis, ``t.T``, tile
attributes, math functions of scalars) compile to PTX for sm_90 and sm_80 and assemble (no
GPU needed); ``acc += a @ b`` keeps the product on ``wgmma`` with pipelined operands."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.runtime import linker
from tests.gpu import test_python_syntax as syn


@pytest.mark.parametrize("cc", [(9, 0), (8, 0)])
def test_syntax_kernels_compile(cc, nvjitlink):
    x = np.zeros((37, 45), np.float32)
    ptx = syn.augmented.ptx(x, nt.partition(np.zeros((37, 16), np.float32), (8, 16)),
                            nt.partition(np.zeros(37, np.float32), (8,)), 8, 16, cc=cc)
    assert linker.assemble(ptx, cc) is not None
    for dt in (np.float32, np.float16, np.int32):
        ptx = syn.attributes.ptx(np.zeros((21, 13), dt),
                                 nt.partition(np.zeros((48, 8), dt), (16, 8)),
                                 nt.partition(np.zeros((24, 16), dt), (8, 16)),
                                 nt.partition(np.zeros(24, np.int32), (8,)), 8, 16, cc=cc)
        assert linker.assemble(ptx, cc) is not None


@pytest.mark.parametrize("name", sorted(syn._MATH_REF))
def test_math_functions_of_scalars_compile(name, nvjitlink):
    kernel = syn._scalar_math_kernel(name)
    for dt in (np.float32, np.float64, np.int32, np.float16):
        ptx = kernel.ptx(np.zeros(16, dt), nt.partition(np.zeros(16), (1,)))
        assert linker.assemble(ptx, (9, 0)) is not None


@nt.jit(num_warps=8, num_stages=3)
def gemm_augmented(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        acc += nt.load(a, (nt.bid(0), k), (BM, BK), padding=0) @ \
            nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
    nt.store(c, nt.astype(acc, nt.float16))


def test_augmented_product_keeps_wgmma_and_pipelined_operands(monkeypatch):
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    a = np.zeros((512, 512), np.float16)
    ptx = gemm_augmented.ptx(a, a, nt.partition(np.zeros((512, 512), np.float16), (128, 128)),
                             128, 128, 64)
    assert "wgmma.mma_async" in ptx and "cp.async" in ptx


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.float16])
def test_static_slices_compile(dtype, nvjitlink):
    x = np.zeros((13, 11), dtype)
    ptx = syn.slices.ptx(x, nt.partition(np.zeros((4, 16), dtype), (4, 16)),
                         nt.partition(np.zeros((16, 8), dtype), (16, 8)),
                         nt.partition(np.zeros((4, 8), dtype), (4, 8)),
                         nt.partition(np.zeros((4, 16, 1), dtype), (4, 16, 1)), 16, 16, 4, 8)
    assert linker.assemble(ptx, (9, 0)) is not None


def test_array_attributes_compile(nvjitlink):
    ptx = syn.array_attributes.ptx(np.zeros((7, 16)), nt.partition(np.zeros(40), (16,)), 16)
    assert linker.assemble(ptx, (9, 0)) is not None


def test_broadcast_coordinates_compile(nvjitlink):
    from tests.gpu import test_gather_broadcasting as gb
    i32, i64 = np.zeros(48, np.int32), np.zeros(48, np.int64)
    x = np.zeros((50, 40), np.float32)
    for ptx in (gb.gather_box.ptx(x, i32, i64, nt.partition(np.zeros((48, 16), np.float32),
                                                               (16, 16)), 16, 16),
                gb.scatter_rows.ptx(np.zeros((40, 16)), i64, np.zeros((32, 16)), 16, 16),
                gb.add_columns.ptx(np.zeros((32, 24)), i32, np.zeros(32), 16, 16)):
        assert linker.assemble(ptx, (9, 0)) is not None


def test_dtype_comparisons_compile(nvjitlink):
    for dt in (np.float16, np.float32):
        ptx = syn.dtype_branches.ptx(np.zeros(20, dt), nt.partition(np.zeros(20, np.float32), 16),
                                     16)
        assert linker.assemble(ptx, (9, 0)) is not None


def test_abs_of_scalars_compiles(nvjitlink):
    for fdt, idt in ((np.float32, np.int32), (np.float64, np.int8)):
        ptx = syn.scalar_abs.ptx(np.zeros(16, fdt), np.zeros(16, idt),
                                 nt.partition(np.zeros(16, fdt), (1,)),
                                 nt.partition(np.zeros(16, idt), (1,)))
        assert linker.assemble(ptx, (9, 0)) is not None


def test_explicit_grid_axes_read_cuda_block_indices():
    from tests.gpu import test_explicit_grids as eg
    ptx = eg.coordinates.ptx(np.zeros((2, 2, 2), np.int64), np.zeros(1, np.int64), 32)
    for reg in ("%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z"):
        assert reg in ptx, reg


def test_lockstep_walks_compile(nvjitlink):
    from tests.gpu import test_lockstep_walks as lw
    x = np.ones((6, 40), np.float32)
    ptx = lw.jsd_like.ptx(x, x, nt.partition(np.zeros((6, 40), np.float32), (1, 16), blocks=4),
                          nt.partition(np.zeros((6, 40), np.float32), (1, 16), blocks=4), 16)
    assert linker.assemble(ptx, (9, 0)) is not None
