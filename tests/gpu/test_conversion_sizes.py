"""Kernels with large layout conversions, at sizes Triton handles, against NumPy (float64
references, fresh random inputs, ragged shapes), on the GPU and in the interpreter: a 2-D gather at
int64 index tiles (no conversion: it works in the indices' layout), a scatter at int64 rows, a
causal attention forward pass (``q @ k.T``, the causal ``where``, online softmax, ``p @ v``) and
(R, 1024) float32 rearrangements (moved in passes of at most 64 KB of shared memory). One kernel
runs many conversion sites of different sizes in a loop on exact integer values: one site's data
leaking into another's reads through the shared scratch region would show as a wrong value.
``tests/compile/test_conversion_sizes.py`` compiles the same kernels for sm_90 and sm_80."""

import numpy as np
import pytest

import numba_tile as nt


def _gather2d(x, rows, cols, out: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    """out[a, b] = x[rows[a, b], cols[a, b]], 0 where the coordinates fall outside x."""
    i = nt.load_like(rows, out, padding=-1)
    j = nt.load_like(cols, out, padding=-1)
    nt.store(out, nt.gather(x, (i, j), padding=0.0))


#: by warps: 64 elements a thread at (64, 128) on 4 warps or (128, 256) on 16 (on 4 warps,
#: (128, 256) compiles too, but its 256 elements a thread of two int64 indices spill)
gather2d = {w: nt.jit(num_warps=w)(_gather2d) for w in (4, 16)}


@nt.jit(unchecked=True)
def scatter_rows(x, rows, out: nt.Mutable, R: nt.Constant, C: nt.Constant):
    """out[rows[a, b], b] = x[a, b] for the block's R rows (rows a permutation per column)."""
    i = nt.bid(0)
    r = nt.load(rows, (i, 0), (R, C), padding=-1)
    j = nt.broadcast_to(nt.expand_dims(nt.arange(C), 0), (R, C))
    nt.scatter(out, (r, j), nt.load(x, (i, 0), (R, C), padding=0))


def _attention(q, k, v, o: nt.Partition[("BM", "D")], BM: nt.Constant, BN: nt.Constant,
               D: nt.Constant, SCALE: nt.Constant):
    """Causal attention forward: o = softmax(q @ k.T * SCALE, masked to key <= query) @ v,
    one (BM, D) block of queries per block, online softmax over (BN, D) key blocks."""
    i = nt.bid(0)
    qt = nt.load(q, (i, 0), (BM, D), padding=0)
    m = nt.full((BM, 1), -np.inf, nt.float32)
    l = nt.zeros((BM, 1), nt.float32)
    acc = nt.zeros((BM, D), nt.float32)
    rows = nt.expand_dims(nt.arange(BM), 1) + i * BM
    for j in range(nt.num_tiles(k, 0, BN)):
        kt = nt.load(k, (j, 0), (BN, D), padding=0)
        s = nt.matmul(qt, nt.transpose(kt)) * SCALE
        cols = nt.expand_dims(nt.arange(BN), 0) + j * BN
        s = nt.where(rows >= cols, s, -np.inf)
        m_new = nt.maximum(m, nt.max(s, 1, keepdims=True))
        p = nt.exp(s - m_new)
        alpha = nt.exp(m - m_new)
        l = l * alpha + nt.sum(p, 1, keepdims=True)
        vt = nt.load(v, (j, 0), (BN, D), padding=0)
        acc = acc * alpha + nt.matmul(nt.astype(p, nt.float16), vt)
        m = m_new
    nt.store(o, nt.astype(acc / l, nt.float16))


attention = {w: nt.jit(num_warps=w)(_attention) for w in (4, 8)}


def _rearrange(x, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant, A: nt.Constant):
    """Each row of C elements viewed as (A, C // A), transposed, flattened back."""
    t = nt.load_like(x, z, padding=0)
    nt.store(z, nt.reshape(nt.permute(nt.reshape(t, (R, A, C // A)), (0, 2, 1)), (R, C)))


def _transpose_rows(x, z: nt.Partition[("C", "R")], R: nt.Constant, C: nt.Constant):
    """z = x.T, x of R rows cut into (R, C) column blocks."""
    nt.store(z, nt.transpose(nt.load(x, (0, nt.bid(0)), (R, C), padding=0)))


rearrange = {w: nt.jit(num_warps=w)(_rearrange) for w in (4, 8)}
transpose_rows = {w: nt.jit(num_warps=w)(_transpose_rows) for w in (4, 8)}


@nt.jit(num_warps=8)
def many_sites(x, y, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    """Per step k: a permute of a (R, C) float32 tile (passes), a column sum (one staging of
    the whole tile), a float16 -> float32 layout conversion, each a different size of the
    one scratch region, in a loop: z = sum over k of all three."""
    acc = nt.zeros((R, C), nt.float32)
    for k in range(nt.num_tiles(x, 0, R)):
        a = nt.load(x, (k, 0), (R, C), padding=0)
        u = nt.reshape(nt.permute(nt.reshape(a, (R, 16, C // 16)), (0, 2, 1)), (R, C))
        h = nt.astype(nt.load(y, (k, 0), (R, C), padding=0), nt.float32)
        acc = acc + u + nt.sum(a, 0, keepdims=True) + h * 2.0
    nt.store(z, acc)


def _rng():
    return np.random.default_rng()


@pytest.mark.parametrize("R,C,w", [(64, 128, 4), (128, 256, 16), (128, 256, 4)])
def test_gather_at_int64_index_tiles(tile_backend, R, C, w):
    rng = _rng()
    x = rng.standard_normal((301, 517)).astype(np.float32)
    n, m = 2 * R + 5, C + 7                       # ragged: the edge tiles are masked
    rows = rng.integers(-10, 311, (n, m)).astype(np.int64)
    cols = rng.integers(-10, 527, (n, m)).astype(np.int64)
    rows[0, :3] = [-(2**62), 2**62, 300]
    out = tile_backend.asarray(np.full((n, m), np.nan, np.float32))
    tile_backend.run(gather2d[w], tile_backend.asarray(x), tile_backend.asarray(rows),
                     tile_backend.asarray(cols), nt.partition(out, (R, C)), R, C)
    ok = (rows >= 0) & (rows < 301) & (cols >= 0) & (cols < 517)
    want = np.where(ok, x[np.clip(rows, 0, 300), np.clip(cols, 0, 516)], np.float32(0))
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)


def test_gather_at_mixed_index_widths(tile_backend):
    rng = _rng()
    x = rng.standard_normal((301, 517)).astype(np.float32)
    n, m = 260, 300
    rows = rng.integers(-10, 311, (n, m)).astype(np.int32)
    cols = rng.integers(-10, 527, (n, m)).astype(np.int64)
    out = tile_backend.asarray(np.full((n, m), np.nan, np.float32))
    tile_backend.run(gather2d[16], tile_backend.asarray(x), tile_backend.asarray(rows),
                     tile_backend.asarray(cols), nt.partition(out, (128, 256)), 128, 256)
    ok = (rows >= 0) & (rows < 301) & (cols >= 0) & (cols < 517)
    want = np.where(ok, x[np.clip(rows, 0, 300), np.clip(cols, 0, 516)], np.float32(0))
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)


def test_scatter_at_int64_rows(tile_backend):
    rng = _rng()
    n, C, R = 300, 128, 64
    x = rng.standard_normal((n, C)).astype(np.float32)
    rows = np.stack([rng.permutation(n) for _ in range(C)], axis=1).astype(np.int64)
    out = tile_backend.asarray(np.full((n, C), np.nan, np.float32))
    tile_backend.run(scatter_rows, tile_backend.asarray(x), tile_backend.asarray(rows), out,
                     R, C, grid=-(-n // R), unchecked=True)
    want = np.empty((n, C), np.float32)
    want[rows, np.arange(C)[None, :]] = x
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)


def attention_reference(q, k, v, scale):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.T * scale
    n = s.shape[0]
    s = np.where(np.arange(n)[:, None] >= np.arange(n)[None, :], s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("BM,BN,D,w", [(64, 64, 64, 4), (128, 128, 64, 8), (128, 64, 128, 8),
                                       (128, 128, 128, 8)], ids=str)
def test_causal_attention(tile_backend, BM, BN, D, w):
    rng = _rng()
    n = 3 * BM + 37                                # ragged: a partial last block of queries
    q, k, v = (rng.standard_normal((n, D)).astype(np.float16) for _ in range(3))
    scale = float(1 / np.sqrt(D))
    o = tile_backend.asarray(np.full((n, D), np.nan, np.float16))
    tile_backend.run(attention[w], *(tile_backend.asarray(a) for a in (q, k, v)),
                     nt.partition(o, (BM, D)), BM, BN, D, scale)
    got = tile_backend.to_numpy(o).astype(np.float64)
    # p is rounded to float16 before p @ v (as Triton's kernel does): about 1e-3 relative
    np.testing.assert_allclose(got, attention_reference(q, k, v, scale), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("R,w", [(16, 4), (32, 8), (64, 8)])
def test_rearrangements_of_rows_of_1024(tile_backend, R, w):
    rng = _rng()
    n = 3 * R + 5
    x = rng.standard_normal((n, 1024)).astype(np.float32)
    z = tile_backend.asarray(np.full((n, 1024), np.nan, np.float32))
    tile_backend.run(rearrange[w], tile_backend.asarray(x), nt.partition(z, (R, 1024)), R,
                     1024, 32)
    want = x.reshape(n, 32, 32).transpose(0, 2, 1).reshape(n, 1024)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), want)
    m = 3 * 1024 + 100
    xt = rng.standard_normal((R, m)).astype(np.float32)
    zt = tile_backend.asarray(np.full((m, R), np.nan, np.float32))
    tile_backend.run(transpose_rows[w], tile_backend.asarray(xt), nt.partition(zt, (1024, R)),
                     R, 1024)
    np.testing.assert_array_equal(tile_backend.to_numpy(zt), xt.T)


def test_conversion_sites_sharing_scratch_do_not_leak(tile_backend):
    rng = _rng()
    R, C, steps = 64, 512, 3
    n = steps * R - 9                              # the last step's tile is ragged
    x = rng.integers(-3, 4, (n, C)).astype(np.float32)
    y = rng.integers(-3, 4, (n, C)).astype(np.float16)
    z = tile_backend.asarray(np.full((R, C), np.nan, np.float32))
    tile_backend.run(many_sites, tile_backend.asarray(x), tile_backend.asarray(y),
                     nt.partition(z, (R, C)), R, C)
    want = np.zeros((R, C))
    for k in range(steps):
        a = np.zeros((R, C))
        h = np.zeros((R, C))
        rows = x[k * R:(k + 1) * R]
        a[:len(rows)] = rows
        h[:len(rows)] = y[k * R:(k + 1) * R]
        u = a.reshape(R, 16, C // 16).transpose(0, 2, 1).reshape(R, C)
        want += u + a.sum(axis=0, keepdims=True) + 2 * h
    np.testing.assert_array_equal(tile_backend.to_numpy(z), want.astype(np.float32))
