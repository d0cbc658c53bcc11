"""Tiles of more than 256 elements a thread compile (spilling to local memory) with a
TilePerformanceWarning at the line that makes them, up to 1024 a thread; past that the
kernel is refused with the num_warps that would fit. A row softmax over 65536 columns and an
argmax/argmin over 131072 at 4 warps (Liger-Kernel's and a vocabulary's row lengths, at the
originals' num_warps), on the GPU and in the interpreter, against NumPy in float64."""

import warnings

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TilePerformanceWarning, TileTypingError


@nt.jit(num_warps=4)
def row_softmax(x, y: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    t = nt.astype(nt.load_like(x, y), nt.float32)
    e = nt.exp(t - nt.max(t, axis=1, keepdims=True))
    nt.store(y, nt.astype(e / nt.sum(e, axis=1, keepdims=True), y.dtype))


@nt.jit(num_warps=4)
def row_arg(x, out: nt.Partition[("R",)], R: nt.Constant, C: nt.Constant, MAX: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (R, C))
    if MAX:
        nt.store(out, nt.argmax(t, 1))
    else:
        nt.store(out, nt.argmin(t, 1))


def _softmax64(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dt,cols,C", [(np.float32, 50001, 65536), (np.float16, 65536, 65536),
                                       (np.float32, 40000, 131072)],
                         ids=["f32-50001-of-65536", "f16-65536", "f32-40000-of-131072"])
def test_row_softmax_past_the_register_limit(tile_backend, dt, cols, C):
    rng = np.random.default_rng()
    x = (rng.standard_normal((3, cols)) * 4).astype(dt)
    y = tile_backend.asarray(np.full((3, cols), 7, dt))
    with pytest.warns(TilePerformanceWarning) as got:
        tile_backend.run(row_softmax, tile_backend.asarray(x), nt.partition(y, (1, C)), 1, C)
    text = str(got[0].message)
    per = C // 128
    assert f"(1, {C})" in text and f"{per} elements" in text and "num_warps=32" in text, text
    assert got[0].filename == __file__
    want = _softmax64(x)
    tol = 1e-3 if dt == np.float16 else 1e-5
    np.testing.assert_allclose(tile_backend.to_numpy(y).astype(np.float64), want,
                               rtol=tol, atol=tol * 1e-2)


@pytest.mark.parametrize("is_max", [True, False], ids=["argmax", "argmin"])
def test_argmax_over_a_vocabulary_row_at_four_warps(tile_backend, is_max):
    rng = np.random.default_rng()
    n, m = 3, 151936 - 20000           # a ragged row of a (1, 131072) tile
    x = rng.integers(-1000, 1000, (n, m)).astype(np.float32)   # ties: the first one wins
    out = tile_backend.asarray(np.full(n, -7, np.int32))
    with pytest.warns(TilePerformanceWarning, match=r"\(1, 131072\) puts 1024 elements"):
        tile_backend.run(row_arg, tile_backend.asarray(x), nt.partition(out, (1,)), 1, 131072,
                         is_max)
    want = np.argmax(x, axis=1) if is_max else np.argmin(x, axis=1)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), want)


def test_a_tile_within_registers_does_not_warn(tile_backend):
    x = np.random.default_rng().standard_normal((2, 32768)).astype(np.float32)
    y = tile_backend.asarray(np.zeros_like(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TilePerformanceWarning)
        tile_backend.run(row_softmax, tile_backend.asarray(x), nt.partition(y, (1, 32768)), 1,
                         32768)
    np.testing.assert_allclose(tile_backend.to_numpy(y), _softmax64(x), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("C,warps", [(262144, 8), (1 << 20, None)])
def test_past_1024_elements_a_thread_is_refused(tile_backend, C, warps):
    x = np.zeros((1, 8), np.float32)
    y = tile_backend.asarray(np.zeros((1, 8), np.float32))
    with pytest.raises(TileTypingError) as err:
        tile_backend.run(row_softmax, tile_backend.asarray(x), nt.partition(y, (1, C)), 1, C)
    text = str(err.value)
    assert "row_softmax" in text and f"(1, {C})" in text and "more than 1024" in text, text
    if warps:
        assert f"num_warps={warps} or more" in text, text
    else:
        assert "smaller tiles" in text, text
    assert np.all(tile_backend.to_numpy(y) == 0)
