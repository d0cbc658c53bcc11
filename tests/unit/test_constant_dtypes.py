"""Constants of the NumPy scalar dtypes a kernel computes with, and only those: a float16
Constant (or a tuple Constant's float16 item) is folded as its bits and computed as a float16
on both paths (numba-cuda wrote IR libNVVM refused: a bare ``nvvmError ERROR_INVALID_IR`` at
the launch and in ``ptx()``); a NumPy scalar of a dtype no kernel computes with (``np.longdouble``,
``np.clongdouble``, ml_dtypes' ``bfloat16`` and float8 types) is refused at the launch line
(and by ``ptx()``), naming the kernel, the Constant, where in it, what was given and what is
accepted (the messages were Numba's, naming a ``tuple`` or an internal selector).
``tests/gpu/test_constant_specializations.py`` checks the float16 values on the GPU."""

import sys

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError


@nt.jit
def half_constants(x, z: nt.Partition["B"], w: nt.Partition["B"], B: nt.Constant,
                   C: nt.Constant, T: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 0.0 + C * 3.0 + T[1])
    nt.store(w, nt.astype(nt.load_like(x, w) * 0.0, nt.float16) + (C + T[0]))


def half_reference(C, T):
    """float16 ``C * 3.0 + T[1]`` in float64, and ``C + T[0]`` in float16 (Numba types a float16
    sum float16: computed exactly in float32, rounded once)."""
    z = np.float64(C) * 3.0 + np.float64(T[1])
    w = np.float16(np.float32(C) + np.float32(T[0]))
    return z, w


def test_float16_constants_are_folded_and_computed_as_float16():
    rng = np.random.default_rng()
    for _ in range(4):
        C = np.float16(rng.standard_normal() * 10)
        T = (np.float16(rng.standard_normal()), np.float16(-rng.uniform(0.0, 1.0)))
        x = rng.standard_normal(8)
        z, w = np.zeros(8), np.zeros(8, np.float16)
        half_constants(x, nt.partition(z, (4,)), nt.partition(w, (4,)), 4, C, T,
                       interpret=True)
        wz, ww = half_reference(C, T)
        np.testing.assert_array_equal(z, wz)
        np.testing.assert_array_equal(w.view(np.uint16), np.full(8, ww).view(np.uint16))
        assert half_constants.ptx(x, nt.partition(np.zeros(8), (4,)),
                                  nt.partition(np.zeros(8, np.float16), (4,)), 4, C, T)


@nt.jit
def add_first(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.load_like(x, z) + C[0])


@nt.jit
def add_constant(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.load_like(x, z) + C)


def _unsupported():
    ml = pytest.importorskip("ml_dtypes")
    return [np.longdouble(1.5), np.clongdouble(1.5), ml.bfloat16(1.5), ml.float8_e4m3fn(1.5)]


@pytest.mark.parametrize("path", ["launch", "ptx"])
@pytest.mark.parametrize("nested", [False, True], ids=["top", "in a tuple"])
def test_a_constant_of_a_dtype_no_kernel_computes_with_is_refused_at_the_launch(path, nested):
    x = np.zeros(8)
    for value in _unsupported():
        kernel = add_first if nested else add_constant
        C = (1.0, (2, value)) if nested else value
        z = np.zeros(8)
        with pytest.raises(TileArgumentError) as info:
            line = sys._getframe().f_lineno + (2 if path == "launch" else 4)
            if path == "launch":
                kernel(x, nt.partition(z, (4,)), 4, C, interpret=True)
            else:
                kernel.ptx(x, nt.partition(z, (4,)), 4, C)
        e = info.value
        for part in (f"kernel '{kernel.__qualname__}'", "Constant 'C'", type(value).__name__,
                     str(value.dtype), "float16", "float64", "tuples of them"):
            assert part in e.message, (part, e.message)
        assert ("at [1][1]" in e.message) == nested, e.message
        assert (e.filename, e.lineno) == (__file__, line)
        np.testing.assert_array_equal(z, 0)
