"""A loop's state made by ``zeros``/``full`` and updated from loaded data keeps the data's
register layout (``TileType.unify``: a blocked layout other than the dtype's default wins over
the default; ``typing/mma.place_constant_tiles``: the constant is made in the winning layout),
so no layout conversion (shared memory and barriers) runs per iteration. A float32 tile of a
16-bit load keeps the load's layout (8 elements per 16-byte chunk, where float32's own default
has 4): before, such a loop converted its state twice per iteration (the cross entropy
example's per-lane online softmax: 66 barriers against 42, and 0.38-0.48x Triton on the H200).
Compiled with libNVVM (no GPU); values in the interpreter and, on a GPU, on the GPU."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.layout import BlockedLayout
from numba_tile.typing.types import TileType


@nt.jit(num_warps=4)
def row_sums(x, y: nt.Partition[(1, "BC")], BC: nt.Constant, DT: nt.Constant):
    """Per lane, the sum over the row's column tiles (a (1, BC) tile per row)."""
    s = nt.zeros((1, BC), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        s = s + nt.astype(nt.load(x, (nt.bid(0), k), (1, BC), padding=0), nt.float32)
    nt.store(y, nt.astype(s, DT))


@nt.jit(num_warps=4)
def running_max(x, y: nt.Partition[(1, "BC")], BC: nt.Constant, DT: nt.Constant):
    """Per lane, the running maximum, started by ``full`` at a finite floor."""
    m = nt.full((1, BC), -3.0e38, nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        m = nt.maximum(m, nt.astype(nt.load(x, (nt.bid(0), k), (1, BC), padding=-3.0e38),
                                    nt.float32))
    nt.store(y, nt.astype(m, DT))


def _args(dt, rows=6, cols=2500, bc=1024, seed=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(dt)
    y = np.zeros((rows, bc), dt)
    return x, y, bc


def _reference(kernel, x, bc):
    xf = x.astype(np.float64)
    pad = (-xf.shape[1]) % bc
    fill = 0.0 if kernel is row_sums else -3.0e38
    xp = np.concatenate([xf, np.full((xf.shape[0], pad), fill)], axis=1)
    tiles = xp.reshape(xf.shape[0], -1, bc)
    return tiles.sum(1) if kernel is row_sums else tiles.max(1)


@pytest.mark.parametrize("kernel", [row_sums, running_max])
@pytest.mark.parametrize("cc", [(9, 0), (8, 0)])
def test_a_16bit_loop_state_converts_no_layout(kernel, cc):
    x, y, bc = _args(BFLOAT16_NP)
    ptx = kernel.ptx(x, nt.partition(y, (1, bc)), bc, "bfloat16", cc=cc)
    body = ptx[ptx.index("{", ptx.index(".entry")):]
    assert "bar.sync" not in body and "st.shared" not in body


@pytest.mark.parametrize("kernel", [row_sums, running_max])
@pytest.mark.parametrize("dt, name", [(np.float32, "float32"), (BFLOAT16_NP, "bfloat16"),
                                      (np.float16, "float16")])
def test_values_in_the_interpreter(kernel, dt, name):
    x, y, bc = _args(dt)
    kernel(x, nt.partition(y, (1, bc)), bc, name, interpret=True).sync()
    ref = _reference(kernel, x, bc).astype(dt).astype(np.float64)
    tol = 1e-5 if name == "float32" else 2e-2
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol * 4)


def _tile(max_vec, masked=False):
    from numba_tile import dtypes
    return TileType(dtypes.float32, (1, 2048), BlockedLayout((1, 2048), 128, max_vec), masked)


def test_unify_prefers_the_data_layout_over_the_default():
    from numba_tile import compiler_context
    with compiler_context.compiling(compiler_context.CompileContext(num_warps=4)):
        default, data, other = _tile(4), _tile(8), _tile(2)
        assert default.unify(None, data).layout == data.layout
        assert data.unify(None, default).layout == data.layout
        # two layouts that are both not the default: the default (each converts)
        assert data.unify(None, other).layout == default.layout
        assert default.unify(None, default).layout == default.layout
