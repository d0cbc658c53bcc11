"""NumPy ufuncs on scalars in a kernel (typing/scalar_ufuncs.py): ``np.exp(s)`` and the other
common ones run (they failed while lowering with ``KeyError: <ufunc 'exp'>``), and the ones
numba_tile cannot lower, or that NumPy (the interpreter) would compute in other dtypes than the
compiled kernel, are refused with a TileTypingError naming the ufunc, the argument dtypes and
what to write instead, at the call's line."""

import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError

_LINES = {}


def _line(tag):
    if not _LINES:
        with open(__file__) as f:
            for i, text in enumerate(f, 1):
                if "# <" in text:
                    _LINES[text.split("# <")[1].split(">")[0]] = i
    return _LINES[tag]


@nt.jit(interpret=True)
def scaled_by_exp(x, s, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * np.exp(s) + np.sqrt(np.abs(s)) + np.maximum(s, 0.0))


def test_np_exp_sqrt_abs_of_a_scalar_run():
    rng = np.random.default_rng()
    x = rng.standard_normal(100).astype(np.float32)
    s = float(rng.standard_normal())
    z = np.zeros(100, np.float32)
    scaled_by_exp(x, s, nt.partition(z, 64), 64)
    want = x.astype(np.float64) * math.exp(s) + math.sqrt(abs(s)) + max(s, 0.0)
    np.testing.assert_allclose(z, want, rtol=1e-6, atol=1e-6)


@nt.jit(interpret=True)
def exp_of_int8(x, codes, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * np.exp(codes[0]))  # <int8>


@nt.jit(interpret=True)
def gcd_of(x, a, b, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + np.gcd(a, b))  # <gcd>


def test_a_ufunc_numpy_computes_in_float16_is_refused_at_its_line():
    x = np.zeros(64, np.float32)
    with pytest.raises(TileTypingError) as info:
        exp_of_int8(x, np.ones(4, np.int8), nt.partition(np.zeros(64, np.float32), 64), 64)
    e = info.value
    for part in ("kernel 'exp_of_int8'", "np.exp() of int8", "float16", "float32",
                 "math.exp(x)", "nt.exp(tile)"):
        assert part in e.message, (part, e.message)
    assert (e.filename, e.lineno) == (__file__, _line("int8"))


def test_a_ufunc_without_a_gpu_implementation_is_refused_at_its_line():
    x = np.zeros(64, np.float32)
    with pytest.raises(TileTypingError) as info:
        gcd_of(x, 12, 18, nt.partition(np.zeros(64, np.float32), 64), 64)
    e = info.value
    for part in ("kernel 'gcd_of'", "np.gcd() of int32, int32", "no GPU implementation",
                 "math.gcd(x, y)"):
        assert part in e.message, (part, e.message)
    assert (e.filename, e.lineno) == (__file__, _line("gcd"))
