"""Python's builtins on scalars and tuple Constants compute the same on both backends
(``tests/builtin_cases.py``; the interpreter's half against Numba's CPU compilation is
``tests/unit/test_interpreter_builtins.py``): ``divmod`` in its signature's types, ``round(x,
n)`` for every ``n`` (the GPU against the interpreter bit for bit everywhere, including where
numba-cuda's algorithm parts from the CPU's: a scaled value past int64, ``n`` of int64's least
value, float32 arguments), ``range()`` of floats, and ``min``/``max``/``sum``/``len`` of tuple
Constants and ``sum(range(n))``."""

import numpy as np
import pytest

from numba_tile.testing import Backend
from tests import builtin_cases as bc
from tests import scalar_cases as sc

INTERPRETER = Backend("interpreter")


def _name(d):
    return np.dtype(d).name


def _against_interpreter(tile_backend, kernel, inputs, got, names):
    if tile_backend.interpret:
        return
    interp = sc.launch(INTERPRETER, kernel, inputs, [np.zeros_like(g) for g in got])
    for name, g, i in zip(names, got, interp):
        sc.assert_same(g, i, f"{name}: GPU against the interpreter")


@pytest.mark.parametrize("da, db", bc.DIVMOD_PAIRS, ids=_name)
def test_divmod(tile_backend, da, db):
    rng = np.random.default_rng()
    xs, ys = sc.operands(da, db, rng)
    got, want = sc.run_case(tile_backend, bc.division, bc.division_ref, (xs, ys))
    for name, g, w in zip(bc.DIVISION, got, want):
        sc.assert_same(g, w, f"divmod({_name(da)}, {_name(db)}) {name}")
    _against_interpreter(tile_backend, bc.division, (xs, ys), got, bc.DIVISION)


def test_min_and_max_of_booleans(tile_backend):
    xs, ys = sc.operands(np.bool_, np.bool_, np.random.default_rng())
    got, want = sc.run_case(tile_backend, bc.extremes, bc.extremes_ref, (xs, ys))
    for name, g, w in zip(bc.EXTREMES, got, want):
        sc.assert_same(g, w, f"{name}(bool, bool)")


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=_name)
def test_round_with_digits(tile_backend, dt):
    rng = np.random.default_rng()
    xs, ns = bc.round_operands(dt, rng)
    # Numba's CPU code raises for -n past int64 (n = -2**63): no reference there
    got, want = sc.run_case(tile_backend, bc.rounding, bc.rounding_ref, (xs, ns),
                            on_error=lambda x, n: (np.nan,))
    if dt == np.float64:
        keep = bc.round_agrees(xs, ns)
        sc.assert_same(got[0][keep], bc.round_zero_rule(want[0])[keep],
                       "round(float64, int64) against Numba's CPU compilation")
    _against_interpreter(tile_backend, bc.rounding, (xs, ns), got, ("round",))


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=_name)
def test_range_of_a_float(tile_backend, dt):
    rng = np.random.default_rng()
    xs, ys = bc.range_operands(dt, rng)
    got, want = sc.run_case(tile_backend, bc.counting, bc.counting_ref, (xs, ys))
    for name, g, w in zip(bc.COUNTING, got, want):
        sc.assert_same(g, w, f"{name} of range({_name(dt)})")


def test_builtins_of_tuple_constants(tile_backend):
    rng = np.random.default_rng()
    for C in bc.tuple_constants(rng):
        N = int(rng.integers(-3, 400))
        got, want = bc.run_tuple_builtins(tile_backend, C, N)
        for name, g, w in zip(bc.TUPLE_BUILTINS, got, want):
            sc.assert_same(np.asarray([g]), np.asarray([w]), f"{name}({C!r})")
