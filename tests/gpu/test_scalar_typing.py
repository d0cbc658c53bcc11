"""The GPU computes scalars as the interpreter does: the cases of
``tests/unit/test_interpreter_scalars.py`` (``tests/scalar_cases.py``: arithmetic, comparisons,
bitwise operators and shifts, unary operators, casts and powers on every dtype pair, from
tensor elements, one element per block) on the GPU, against Numba's CPU compilation of the
same expressions and against the interpreter's results. The interpreter half of the fixture
is the unit test's (it is skipped here). Float results may differ from the CPU's where the GPU
fuses a multiply and an add (the branch ``a * b - a > b``) or computes ``pow``: there they
are compared with the interpreter to rounding."""

import math

import numpy as np
import pytest
from numba import cuda

import numba_tile as nt
from numba_tile.testing import Backend
from tests import scalar_cases as sc

INTERPRETER = Backend("interpreter")


def _name(d):
    return np.dtype(d).name


def _gpu_only(tile_backend):
    if tile_backend.interpret:
        pytest.skip("the interpreter's half: tests/unit/test_interpreter_scalars.py")


def _check(tile_backend, kernel, ref, inputs, names, *, fused=(), fix=None, on_error=None):
    """The kernel on the GPU against the reference (``fix(want)`` adjusts it where numba_tile's
    defined results replace LLVM poison) and against the interpreter; outputs named in
    ``fused`` (the GPU may contract a multiply and an add, or computes ``pow`` with libdevice)
    against the interpreter to rounding, or not at all for a branch taken on such a value."""
    got, want = sc.run_case(tile_backend, kernel, ref, inputs, on_error=on_error)
    if fix is not None:
        want = fix(want)
    interp = sc.launch(INTERPRETER, kernel, inputs, [np.zeros_like(w) for w in want])
    for name, g, w, i in zip(names, got, want, interp):
        if name in fused:
            if g.dtype.kind == "f":     # a branch on a fused value may go either way: unchecked
                np.testing.assert_allclose(g, i, rtol=1e-6,
                                           err_msg=f"{name}: GPU against interpreter")
            continue
        sc.assert_same(g, w, f"{name}: GPU against Numba's CPU compilation")
        sc.assert_same(g, i, f"{name}: GPU against the interpreter")


@pytest.mark.parametrize("da, db", sc.PAIRS, ids=lambda d: _name(d))
def test_arithmetic_and_comparisons(tile_backend, da, db):
    _gpu_only(tile_backend)
    rng = np.random.default_rng()
    xs, ys = sc.operands(da, db, rng)
    floats = np.dtype(da).kind == "f" or np.dtype(db).kind == "f"
    _check(tile_backend, sc.arithmetic, sc.arithmetic_ref, (xs, ys), sc.ARITHMETIC,
           fused=("branch",) if floats else ())


@pytest.mark.parametrize("da, db", sc.INT_PAIRS + [(np.bool_, np.bool_)], ids=lambda d: _name(d))
def test_bitwise_operators_and_shifts(tile_backend, da, db):
    _gpu_only(tile_backend)
    rng = np.random.default_rng()
    xs, ys = sc.operands(da, db, rng)
    if np.dtype(db) != np.bool_:
        ys = np.concatenate([ys, rng.integers(-3, 67, 40).astype(db)])
        xs = np.concatenate([xs, sc.random_values(da, rng, 40)])

    def fix(want):
        if np.dtype(db) != np.bool_:
            want[3] = sc.shift_rule(xs, ys, want[3], left=True)
            want[4] = sc.shift_rule(xs, ys, want[4], left=False)
        return want

    _check(tile_backend, sc.bitwise, sc.bitwise_ref, (xs, ys), sc.BITWISE, fix=fix)


@pytest.mark.parametrize("dt", sc.INTS + sc.FLOATS, ids=_name)
def test_unary_operators_and_casts(tile_backend, dt):
    _gpu_only(tile_backend)
    rng = np.random.default_rng()
    xs = np.concatenate([sc.as_array(sc.edge_values(dt), dt), sc.random_values(dt, rng, 64)])

    def fix(want):
        if np.dtype(dt).kind == "f":
            for k, name in enumerate(sc.UNARY):
                if name in sc.INT_CASTS:
                    inside = sc.float_in_range(xs, sc.INT_CASTS[name])
                    want[k] = np.where(inside, want[k],
                                       sc.float_to_int_rule(xs, sc.INT_CASTS[name]))
        return want

    _check(tile_backend, sc.unary, sc.unary_ref, (xs,), sc.UNARY, fix=fix)


@pytest.mark.parametrize("da, db", [(np.int64, np.int64), (np.int8, np.int32),
                                    (np.uint64, np.int64), (np.float32, np.int64),
                                    (np.float64, np.int32), (np.float32, np.float32),
                                    (np.float64, np.float64)], ids=lambda d: _name(d))
def test_power(tile_backend, da, db):
    _gpu_only(tile_backend)
    rng = np.random.default_rng()
    bases = [0, 1, -1, 2, -2, 3] if np.dtype(da).kind in "iu" else \
        [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e10, math.inf, math.nan]
    if np.dtype(da).kind == "u":
        bases = [0, 1, 2, 3, 255]
    exps = [0, 1, 2, 3, 63, 64, 65, -1, -2, -3] if np.dtype(db).kind in "iu" else \
        [0.0, 0.5, -1.0, 2.0, -0.5, 3.0, math.inf]
    xs = sc.as_array([b for b in bases for _ in exps], da)
    ys = sc.as_array([e for _ in bases for e in exps], db)
    xs = np.concatenate([xs, sc.random_values(da, rng, 32)])
    ys = np.concatenate([ys, rng.integers(-3, 70, 32).astype(db)])
    floats = np.dtype(db).kind == "f"
    _check(tile_backend, sc.power, sc.power_ref, (xs, ys), ("pow",),
           fused=("pow",) if floats else (), on_error=sc.power_overflow)


# ----------------------------------------------------------------------------- the issue's cases


@nt.jit
def widening(x8, f32, z: nt.Partition, n, C: nt.Constant, D: nt.Constant, E: nt.Constant):
    k = nt.bid(0)
    if k == 0:
        nt.store(z, n + 1)                           # int32 + 1: int64
    elif k == 1:
        nt.store(z, 1 if x8[0] + x8[1] > 150 else 0)     # int8 + int8: int64
    elif k == 2:
        nt.store(z, 1 if f32[0] + 1 > 2**24 else 0)      # float32 + int: float64
    elif k == 3:
        nt.store(z, C * C)                           # int64 arithmetic: wraps
    elif k == 4:
        nt.store(z, 7 // D)                          # by zero: 0
    else:
        nt.store(z, 1 if 1.0 / E[0] > 1e308 else 0)  # by zero: inf


def test_the_issues_cases(tile_backend):
    x8 = tile_backend.asarray(np.array([100, 100], np.int8))
    f32 = tile_backend.asarray(np.array([2.0**24], np.float32))
    z = tile_backend.asarray(np.zeros(6, np.int64))
    tile_backend.run(widening, x8, f32, nt.partition(z, 1), np.int32(2**31 - 1), 2**32, 0,
                     (0.0,))
    np.testing.assert_array_equal(tile_backend.to_numpy(z), [2**31, 1, 1, 0, 0, 1])


@cuda.jit(device=True)
def square_is_positive(v):
    return v * v > 0


@cuda.jit(device=True)
def cancellation(a, b):
    return (a + b) - a


@nt.jit
def device_ops(x, a, b, sq: nt.Partition["B"], cancel: nt.Partition["B"], B: nt.Constant):
    nt.store(sq, square_is_positive(nt.load_like(x, sq)))
    nt.store(cancel, cancellation(nt.load_like(a, cancel), nt.load_like(b, cancel)))


def test_device_functions_wrap_and_round_per_operation(tile_backend):
    rng = np.random.default_rng()
    x = np.concatenate([[3037000500, -3037000500, 2**32 + 1, 0],
                        rng.integers(-2**40, 2**40, 60)]).astype(np.int64)
    a = np.concatenate([[1e8, 2.0**24], rng.standard_normal(62) * 1e7]).astype(np.float32)
    b = np.concatenate([[1.0, 1.0], rng.standard_normal(62)]).astype(np.float32)
    sq = tile_backend.asarray(np.zeros(64, np.bool_))
    cancel = tile_backend.asarray(np.zeros(64, np.float32))
    tile_backend.run(device_ops, *[tile_backend.asarray(v) for v in (x, a, b)],
                     nt.partition(sq, 64), nt.partition(cancel, 64), 64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(tile_backend.to_numpy(sq), x * x > 0)   # wrapped
    want = (a + b) - a                                                         # float32
    sc.assert_same(tile_backend.to_numpy(cancel), want, "(a + b) - a in float32")


@nt.jit
def after_empty_loops(x, z: nt.Partition, last: nt.Partition, count: nt.Partition,
                      t_out: nt.Partition, n):
    for idx in nt.tiles(z):
        pass
    nt.store(z, 5.0, idx)
    nt.store(last, idx[0])
    for k in range(n):
        v = k + 1
        t = nt.load_like(x, last)
    nt.store(count, v)
    nt.store(t_out, t)


def test_variables_no_assignment_reached(tile_backend):
    x = tile_backend.asarray(np.ones(8, np.float32))
    z = tile_backend.asarray(np.full(24, 3.0, np.float32))
    last = tile_backend.asarray(np.full(5, 9, np.int64))
    count = tile_backend.asarray(np.full(5, 9, np.int64))
    t_out = tile_backend.asarray(np.full(5, 9.0, np.float32))
    tile_backend.run(after_empty_loops, x, nt.partition(z, 8, blocks=5), nt.partition(last, 1),
                     nt.partition(count, 1), nt.partition(t_out, 1), 0)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.full(24, 5.0, np.float32))
    np.testing.assert_array_equal(tile_backend.to_numpy(last), [0, 1, 2, -1, -1])
    np.testing.assert_array_equal(tile_backend.to_numpy(count), np.zeros(5, np.int64))
    np.testing.assert_array_equal(tile_backend.to_numpy(t_out), np.full(5, 9.0, np.float32))
