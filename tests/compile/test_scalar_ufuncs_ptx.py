"""Every NumPy ufunc on scalars in a kernel (libNVVM, no GPU): it compiles to PTX, or it is
refused with a TileTypingError naming it
at the call's line; never another exception (numba-cuda's ``KeyError: <ufunc 'exp'>``)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.uint64, np.float32, np.float64]
UFUNCS = sorted({u for u in vars(np).values()
                 if isinstance(u, np.ufunc) and u.nin in (1, 2) and u.nout == 1},
                key=lambda u: u.__name__)


def _kernel(ufunc):
    if ufunc.nin == 1:
        @nt.jit
        def unary(x, y, z: nt.Partition["B"], B: nt.Constant):
            nt.store(z, nt.full((B,), ufunc(x[nt.bid(0)]), nt.float64))  # <call>
        return unary

    @nt.jit
    def binary(x, y, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.full((B,), ufunc(x[nt.bid(0)], y[0]), nt.float64))  # <call>
    return binary


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_every_ufunc_on_scalars_compiles_or_is_refused_by_name(ufunc):
    kernel = _kernel(ufunc)
    compiled = refused = 0
    for dt in DTYPES:
        x = np.zeros(8, dt)
        try:
            ptx = kernel.ptx(x, x, nt.partition(np.zeros(256, np.float64), 128), 128)
        except TileTypingError as e:
            # refused by numba_tile's ufunc check, or not typed by NumPy's table at all
            assert f"np.{ufunc.__name__}()" in e.message or "does not type" in e.message, \
                e.message
            assert e.filename == __file__ and "# <call>" in open(__file__).read().splitlines()[
                e.lineno - 1], (e.filename, e.lineno)
            refused += 1
            continue
        assert "st.global" in ptx, (ufunc, dt)
        compiled += 1
    assert compiled + refused == len(DTYPES)


@pytest.mark.parametrize("ufunc", [np.exp, np.sqrt, np.absolute, np.floor, np.add,
                                   np.floor_divide, np.remainder, np.sign, np.power],
                         ids=lambda u: u.__name__)
def test_the_common_ones_compile_for_float_scalars(ufunc):
    for dt in (np.float32, np.float64):
        x = np.zeros(8, dt)
        _kernel(ufunc).ptx(x, x, nt.partition(np.zeros(256, np.float64), 128), 128)
