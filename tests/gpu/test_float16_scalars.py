"""float16 scalar arithmetic, comparisons, negation, abs and truth compute NumPy's float16
results bit for bit on the GPU and in the interpreter (numba-cuda's own call CUDA C++ that
numba_tile does not link: ``lowering/scalars.py``); numba-cuda's float16 math functions
(``math.exp(h)``) are refused on both paths at the user's line (``typing/linked.py``)."""

import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError

W = 16
_OPS = ("add", "sub", "mul", "div", "iadd", "neg", "abs", "lt", "le", "eq", "ne", "ge",
        "gt", "truth", "max", "pos")


def _put(out, col, k, v):
    return nt.where(col == k, nt.float32(v), out)


@nt.jit
def half_ops(a, b, z: nt.Partition[(1, "W")], W: nt.Constant):
    x = nt.float16(a[nt.bid(0)])            # a float16 array's element reads as float32
    y = nt.float16(b[nt.bid(0)])
    s = x
    s += y
    col = nt.expand_dims(nt.arange(W), 0)
    out = nt.zeros((1, W), nt.float32)
    out = _put(out, col, 0, x + y)
    out = _put(out, col, 1, x - y)
    out = _put(out, col, 2, x * y)
    out = _put(out, col, 3, x / y)
    out = _put(out, col, 4, s)
    out = _put(out, col, 5, -x)
    out = _put(out, col, 6, abs(x))
    out = _put(out, col, 7, x < y)
    out = _put(out, col, 8, x <= y)
    out = _put(out, col, 9, x == y)
    out = _put(out, col, 10, x != y)
    out = _put(out, col, 11, x >= y)
    out = _put(out, col, 12, x > y)
    out = _put(out, col, 13, 1 if x else 0)
    out = _put(out, col, 14, max(x, y))
    out = _put(out, col, 15, +x)
    nt.store(z, out)


def _expected(a, b):
    with np.errstate(all="ignore"):
        cols = [a + b, a - b, a * b, a / b, a + b, -a, np.abs(a), a < b, a <= b, a == b,
                a != b, a >= b, a > b, a != 0, np.where(b > a, b, a), a]
    return np.stack([np.asarray(c).astype(np.float32) for c in cols], axis=1)


def _specials(rng, n):
    bits = rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)
    v = bits.view(np.float16).copy()
    v[: 8] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 6e-8, -6e-8], np.float16)
    return v


def test_float16_scalar_ops_match_numpy_bit_for_bit(tile_backend):
    rng = np.random.default_rng()
    n = 300 + int(rng.integers(0, 40))
    a = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 300.0], n)).astype(np.float16)
    b = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 300.0], n)).astype(np.float16)
    a[-40:], b[-40:] = _specials(rng, 40), _specials(rng, 40)[::-1]
    b[rng.integers(0, n, 5)] = a[rng.integers(0, n, 5)]          # some equal pairs
    z = tile_backend.asarray(np.zeros((n, W), np.float32))
    tile_backend.run(half_ops, tile_backend.asarray(a), tile_backend.asarray(b),
                     nt.partition(z, (1, W)), W)
    got = tile_backend.to_numpy(z)[:, : len(_OPS)]
    want = _expected(a, b)
    for k, name in enumerate(_OPS):
        g, w = got[:, k], want[:, k]
        same = (g.view(np.uint32) == w.view(np.uint32)) | (np.isnan(g) & np.isnan(w))
        bad = np.flatnonzero(~same)
        assert bad.size == 0, (name, a[bad[:4]], b[bad[:4]], g[bad[:4]], w[bad[:4]])


@pytest.mark.parametrize("fn", [math.exp, math.sqrt, math.fabs, math.floor])
def test_float16_math_functions_are_refused_on_both_paths(tile_backend, fn):
    @nt.jit
    def half_math(a, z: nt.Partition["B"], B: nt.Constant):
        h = nt.float16(a[0])
        nt.store(z, nt.full((B,), 1.0, nt.float32) * nt.float32(fn(h)))

    a = tile_backend.asarray(np.ones(4, np.float16))
    z = tile_backend.asarray(np.zeros(64, np.float32))
    with pytest.raises(TileTypingError) as info:
        tile_backend.run(half_math, a, nt.partition(z, 64), 64)
    msg = str(info.value)
    assert "half_math" in msg and "links only the PTX it compiles" in msg
    assert info.value.filename == __file__ and info.value.lineno is not None


@nt.jit
def bfloat16_product(a, z: nt.Partition["B"], B: nt.Constant):
    x = nt.bfloat16(a[0])
    nt.store(z, nt.full((B,), 1.0, nt.float32) * nt.float32(x * x))


def test_bfloat16_scalars_are_refused_on_both_paths(tile_backend):
    """numba-cuda builds a bfloat16 scalar with cuda_bf16.h's constructor (linked C++): refused
    at the kernel's line on both paths; bfloat16 tiles are numba_tile's own."""
    a = tile_backend.asarray(np.ones(4, np.float32))
    z = tile_backend.asarray(np.zeros(64, np.float32))
    with pytest.raises(TileTypingError, match="__nv_bfloat16 constructor") as info:
        tile_backend.run(bfloat16_product, a, nt.partition(z, 64), 64)
    assert "bfloat16_product" in str(info.value) and info.value.lineno is not None
