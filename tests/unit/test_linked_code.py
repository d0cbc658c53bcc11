"""numba-cuda's linked CUDA C++ shims: their symbols read as the C++ functions behind them in
numba_tile's refusals (``lowering/linked.cxx_name``)."""

import pytest

from numba_tile.lowering.linked import cxx_name


@pytest.mark.parametrize("symbol, name", [
    ("_ZL4hexp6__half", "hexp"),
    ("_ZL5hsqrt6__half", "hsqrt"),
    ("_ZplRK6__halfS1_", "operator+"),
    ("_ZneRK6__halfS1_", "operator!="),
    ("_ZN13__nv_bfloat16C1Ef", "__nv_bfloat16 constructor"),
    ("not_mangled", "not_mangled"),
])
def test_shim_symbols_name_their_cxx_function(symbol, name):
    assert cxx_name(symbol) == name
