"""The kernels of examples/cross_entropy.py, softmax_chunked.py, swiglu.py,
layernorm_backward.py, rope.py and grouped_gemm.py compile to PTX for sm_80 and sm_90 in every
dtype they take (no GPU needed), without local memory: a lowering error shows on the CPU tier."""

import numpy as np
import pytest

import numba_tile as nt
from examples import cross_entropy as ce
from examples import layernorm_backward as lnb
from examples import softmax_chunked as sc
from examples import swiglu as sw
from numba_tile.dtypes import BFLOAT16_NP

DTS = [np.float32, np.float16, BFLOAT16_NP]
CCS = [(8, 0), (9, 0)]


def _name(dt):
    return np.dtype(dt).name


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("dt", DTS, ids=_name)
def test_cross_entropy_and_softmax_chunked(dt, cc):
    x = np.zeros((45, 20000), dt)
    for v in (20000, 130000):      # both branches of config: rows under and over 65,536
        bc, w, s, mb, fold = ce.config(v, np.dtype(dt).itemsize)
        xv = np.zeros((45, v), dt)
        p = ce._kernel(w, s, mb).ptx(
            nt.partition(xv, (1, bc), blocks=45), np.zeros(45, np.int64),
            nt.partition(np.zeros((45, 1), np.float32), (1, 1), blocks=45), 1.0, -100, bc,
            _name(dt), fold, cc=cc)
        assert ".local" not in p
        # the fold is the chunks a thread holds: the pass over the row moves nothing
        # through shared memory (the barriers left are the row's end's, the target tile's
        # and the ignored rows'); twice that fold spans threads, and its reshape and
        # reductions go through shared memory with barriers of their own
        q = ce._kernel(w, s, mb).ptx(
            nt.partition(xv, (1, bc), blocks=45), np.zeros(45, np.int64),
            nt.partition(np.zeros((45, 1), np.float32), (1, 1), blocks=45), 1.0, -100, bc,
            _name(dt), 2 * fold, cc=cc)
        assert p.count("bar.sync") < q.count("bar.sync")
    bc, w, s = sc.config(20000, np.dtype(dt).itemsize)
    p = sc._kernel(w, s).ptx(x, nt.partition(x.copy(), (1, bc), blocks=45), bc, _name(dt), cc=cc)
    assert ".local" not in p


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("dt", DTS, ids=_name)
def test_swiglu_and_layernorm_backward(dt, cc):
    a = np.zeros((37, 3000), dt)
    assert ".local" not in sw.swiglu_forward.ptx(a, a, nt.partition(a.copy(), sw.TILE),
                                                 *sw.TILE, _name(dt), cc=cc)
    assert ".local" not in sw.swiglu_backward.ptx(a, a, a, nt.partition(a.copy(), sw.TILE),
                                                  nt.partition(a.copy(), sw.TILE), *sw.TILE,
                                                  _name(dt), cc=cc)
    m, n = 300, 1000
    x, w, v = np.zeros((m, n), dt), np.zeros(n, dt), np.zeros(m, np.float32)
    part = np.zeros((lnb.partial_rows(m), n), np.float32)
    b = lnb.partial_rows(m)
    p = lnb.ln_backward_dx.ptx(x, x, w, v, v, nt.partition(x.copy(), (1, 1024), blocks=b),
                               nt.partition(part.copy(), (1, 1024), blocks=b),
                               nt.partition(part.copy(), (1, 1024), blocks=b), float(n), 1024,
                               _name(dt), cc=cc)
    assert ".local" not in p
    q = lnb.ln_backward_dwdb.ptx(part, part, nt.partition(w.copy(), (256,)),
                                 nt.partition(w.copy(), (256,)), 32, 256, _name(dt), cc=cc)
    assert ".local" not in q


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("dt", DTS, ids=_name)
def test_rope(dt, cc):
    from examples import rope
    for heads, hb in ((5, 8), (32, 32)):
        q = np.zeros((2 * 37, heads, 128), dt)
        t = np.broadcast_to(np.zeros((37, 1, 128), dt), (37, heads, 128))
        p = rope.rope_rows.ptx(q, t, t, nt.partition(q.copy(), (1, hb, 64), blocks=23), 37, hb,
                               64, _name(dt), cc=cc)
        # every operand a tile of one layout: no conversion through shared memory
        assert ".local" not in p and "bar.sync" not in p


@pytest.mark.parametrize("cc", CCS)
def test_grouped_gemm(cc):
    from examples import grouped_gemm as gg
    a = (np.zeros((300, 128), np.float16), np.zeros((64, 200), np.float16))
    b = (np.zeros((128, 96), np.float16), np.zeros((200, 64), np.float16))
    c = tuple(nt.partition(np.zeros((x.shape[0], y.shape[1]), np.float16), (64, 64), blocks=132)
              for x, y in zip(a, b))
    p = gg.grouped_gemm_tiles.ptx(a, b, c, 64, 64, 32, "float16", cc=cc)
    assert ".local" not in p
    assert ("wgmma.mma_async" in p) == (cc == (9, 0)) or "mma.sync" in p
