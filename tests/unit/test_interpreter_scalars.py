"""The interpreter computes scalars as the compiled kernel does: every scalar operation follows
the type Numba's typing gave it (int64 widening, float64 promotion, wraparound, NumPy's error
model), checked against Numba's own CPU compilation of the same expressions on fresh random
values and the edge values of each dtype (``tests/scalar_cases.py``); in device functions and
inlined helpers too; and a variable a loop that ran zero times never assigned is Numba's zero
(``tests/gpu/test_scalar_typing.py`` checks the GPU against the same references)."""

import math

import numba
import numpy as np
import pytest
from numba import cuda

import numba_tile as nt
from numba_tile.errors import TileTypingError
from numba_tile.testing import Backend
from tests import scalar_cases as sc

INTERPRETER = Backend("interpreter")


def _name(d):
    return np.dtype(d).name


@pytest.mark.parametrize("da, db", sc.PAIRS, ids=lambda d: _name(d))
def test_arithmetic_and_comparisons_match_numbas_cpu_compilation(da, db):
    rng = np.random.default_rng()
    xs, ys = sc.operands(da, db, rng)
    got, want = sc.run_case(INTERPRETER, sc.arithmetic, sc.arithmetic_ref, (xs, ys))
    for name, g, w in zip(sc.ARITHMETIC, got, want):
        sc.assert_same(g, w, f"{name}({_name(da)}, {_name(db)})")


@pytest.mark.parametrize("da, db", sc.INT_PAIRS + [(np.bool_, np.bool_)], ids=lambda d: _name(d))
def test_bitwise_operators_and_shifts(da, db):
    rng = np.random.default_rng()
    xs, ys = sc.operands(da, db, rng)
    if np.dtype(db) != np.bool_:
        # counts inside [0, 64) and just outside it, besides the edges and random ones
        ys = np.concatenate([ys, rng.integers(-3, 67, 40).astype(db)])
        xs = np.concatenate([xs, sc.random_values(da, rng, 40)])
    got, want = sc.run_case(INTERPRETER, sc.bitwise, sc.bitwise_ref, (xs, ys))
    if np.dtype(db) != np.bool_:
        want[3] = sc.shift_rule(xs, ys, want[3], left=True)
        want[4] = sc.shift_rule(xs, ys, want[4], left=False)
    for name, g, w in zip(sc.BITWISE, got, want):
        sc.assert_same(g, w, f"{name}({_name(da)}, {_name(db)})")


@pytest.mark.parametrize("dt", sc.INTS + sc.FLOATS, ids=_name)
def test_unary_operators_and_casts(dt):
    rng = np.random.default_rng()
    xs = np.concatenate([sc.as_array(sc.edge_values(dt), dt), sc.random_values(dt, rng, 64)])
    got, want = sc.run_case(INTERPRETER, sc.unary, sc.unary_ref, (xs,))
    for name, g, w in zip(sc.UNARY, got, want):
        if np.dtype(dt).kind == "f" and name in sc.INT_CASTS:
            # outside the integer's range Numba's CPU code is poison; numba_tile saturates
            inside = sc.float_in_range(xs, sc.INT_CASTS[name])
            w = np.where(inside, w, sc.float_to_int_rule(xs, sc.INT_CASTS[name]))
        sc.assert_same(g, w, f"{name}({_name(dt)})")


@pytest.mark.parametrize("dt", sc.INTS + [np.bool_], ids=_name)
def test_invert(dt):
    rng = np.random.default_rng()
    xs = np.concatenate([sc.as_array(sc.edge_values(dt), dt), sc.random_values(dt, rng, 32)])
    got, want = sc.run_case(INTERPRETER, sc.invert, sc.invert_ref, (xs,))
    sc.assert_same(got[0], want[0], f"~{_name(dt)}")


_POWER_PAIRS = [(np.int64, np.int64), (np.int8, np.int32), (np.uint8, np.uint8),
                (np.uint64, np.int64), (np.float32, np.int64), (np.float64, np.int32),
                (np.float32, np.float32), (np.float64, np.float64), (np.int32, np.float64)]


@pytest.mark.parametrize("da, db", _POWER_PAIRS, ids=lambda d: _name(d))
def test_power(da, db):
    rng = np.random.default_rng()
    bases = [0, 1, -1, 2, -2, 3, 10] if np.dtype(da).kind == "i" else \
        [0, 1, 2, 3, 10, 255] if np.dtype(da).kind == "u" else \
        [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e10, math.inf, math.nan]
    exps = [0, 1, 2, 3, 5, 63, 64, 65] + ([-1, -2, -3] if np.dtype(db).kind != "u" else []) \
        if np.dtype(db).kind in "iu" else [0.0, 0.5, -1.0, 2.0, -0.5, 3.0, math.inf]
    xs = sc.as_array([b for b in bases for _ in exps], da)
    ys = sc.as_array([e for _ in bases for e in exps], db)
    xs = np.concatenate([xs, sc.random_values(da, rng, 32) % 50 if np.dtype(da).kind in "iu"
                         else sc.random_values(da, rng, 32)])
    ys = np.concatenate([ys, rng.integers(-3 if np.dtype(db).kind != "u" else 0, 70, 32)
                         .astype(db)])
    got, want = sc.run_case(INTERPRETER, sc.power, sc.power_ref, (xs, ys),
                            on_error=sc.power_overflow)
    if np.dtype(db).kind == "f":
        # pow() of floats: the interpreter's NumPy against the CPU's libm, to rounding
        np.testing.assert_allclose(got[0], want[0], rtol=4 * np.finfo(want[0].dtype).eps)
    else:
        sc.assert_same(got[0], want[0], f"{_name(da)} ** {_name(db)}")


# ----------------------------------------------------------------------------- the cases


@nt.jit
def int32_successor(z: nt.Partition, flag: nt.Partition, n):
    m = n + 1                       # int32 + literal: int64, no wrap
    nt.store(z, m)
    if m > n:
        nt.store(flag, 1)
    else:
        nt.store(flag, 0)


def test_an_int32_runtime_scalar_widens_to_int64():
    n = np.int32(2**31 - 1)
    z, flag = np.zeros(1, np.int64), np.zeros(1, np.int64)
    int32_successor(nt.partition(z, 1), nt.partition(flag, 1), n, interpret=True)
    ref = numba.njit(lambda n: (n + 1, 1 if n + 1 > n else 0))(n)
    assert (z[0], flag[0]) == ref == (2**31, 1)


@nt.jit
def sum_over_threshold(x, z: nt.Partition, B: nt.Constant):
    if x[0] + x[1] > 150:
        nt.store(z, nt.full((B,), 1.0, nt.float32))
    else:
        nt.store(z, nt.full((B,), -1.0, nt.float32))


def test_int8_elements_add_as_int64():
    x = np.array([100, 100], np.int8)
    z = np.zeros(4, np.float32)
    sum_over_threshold(x, nt.partition(z, 4), 4, interpret=True)
    ref = numba.njit(lambda a, b: a + b > 150)(x[0], x[1])
    assert ref and (z == 1.0).all()


@nt.jit
def float32_successor(x, z: nt.Partition, B: nt.Constant):
    if x[0] + 1 > 2**24:            # float32 + int: float64
        nt.store(z, nt.full((B,), 1.0, nt.float32))
    else:
        nt.store(z, nt.full((B,), -1.0, nt.float32))


def test_a_float32_element_plus_an_int_is_float64():
    x = np.array([2.0**24], np.float32)
    z = np.zeros(4, np.float32)
    float32_successor(x, nt.partition(z, 4), 4, interpret=True)
    ref = numba.njit(lambda a: a + 1 > 2**24)(x[0])
    assert ref and (z == 1.0).all()


@nt.jit
def constant_arithmetic(square: nt.Partition, quotient: nt.Partition, inverse: nt.Partition,
                        C: nt.Constant, D: nt.Constant, E: nt.Constant):
    nt.store(square, C * C)         # not folded (outside int64): int64 arithmetic, wraps
    nt.store(quotient, 7 // D)      # D == 0: 0, as the GPU
    nt.store(inverse, 1.0 / E[0])   # E == (0.0,): inf


@pytest.mark.parametrize("C, D, E", [(2**32, 0, (0.0,)), (2**31 + 3, 0, (-0.0,)),
                                     (3, 2, (0.25,))])
def test_constant_arithmetic_follows_int64_and_ieee(C, D, E):
    square, quotient, inverse = np.zeros(1, np.int64), np.zeros(1, np.int64), \
        np.zeros(1, np.float64)
    constant_arithmetic(nt.partition(square, 1), nt.partition(quotient, 1),
                        nt.partition(inverse, 1), C, D, E, interpret=True)
    ref = numba.njit(error_model="numpy")(lambda c, d, e: (c * c, 7 // d, 1.0 / e[0]))(C, D, E)
    assert (square[0], quotient[0]) == ref[:2]
    assert inverse[0] == ref[2] and math.copysign(1.0, inverse[0]) == math.copysign(1.0, ref[2])


@nt.jit
def uint64_offsets(x, z: nt.Partition, d):
    i = nt.bid(0)
    nt.store(z, x[i] + d)           # (uint64, int64) -> int64


def test_uint64_elements_with_a_signed_scalar():
    rng = np.random.default_rng()
    x = np.concatenate([np.array([0, 2**63, 2**64 - 1], np.uint64),
                        rng.integers(0, 2**64 - 1, 13, dtype=np.uint64, endpoint=True)])
    d = int(rng.integers(-2**40, 2**40))
    z = np.zeros(len(x), np.int64)
    uint64_offsets(x, nt.partition(z, 1), d, interpret=True)
    ref = numba.njit(lambda a, d: a + d)
    np.testing.assert_array_equal(z, [ref(v, d) for v in x])


# ----------------------------------------------------------------------------- device functions


@cuda.jit(device=True)
def square_is_positive(v):
    return v * v > 0                 # int64 product: wraps before the comparison


@cuda.jit(device=True)
def cancellation(a, b):
    return (a + b) - a               # float32 arithmetic: 1e8 + 1 rounds to 1e8


@cuda.jit(device=True)
def halved(a, b):
    return (a + b) // 2 > 100        # int8 elements: an int64 sum


@nt.jit
def apply_square(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, square_is_positive(nt.load_like(x, z)))


@nt.jit
def apply_cancellation(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, cancellation(nt.load_like(x, z), nt.load_like(y, z)))


@nt.jit
def apply_halved(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, halved(nt.load_like(x, z), nt.load_like(y, z)))


def test_device_functions_type_every_operation():
    rng = np.random.default_rng()
    big = np.concatenate([[3037000500, -3037000500, 2**32 + 1, 0, 1],
                          rng.integers(-2**40, 2**40, 59)]).astype(np.int64)
    z = np.zeros(64, np.bool_)
    apply_square(big, nt.partition(z, 64), 64, interpret=True)
    # Numba's CPU code marks the product nsw and folds `v * v > 0` into `v != 0`;
    # numba_tile's code wraps (lowering/scalars.py): NumPy's int64 arithmetic is the reference
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(z, big * big > 0)
    assert not z[0] and not z[1]

    a = np.concatenate([[1e8, 2.0**24], rng.standard_normal(62) * 1e7]).astype(np.float32)
    b = np.concatenate([[1.0, 1.0], rng.standard_normal(62)]).astype(np.float32)
    zf = np.zeros(64, np.float32)
    apply_cancellation(a, b, nt.partition(zf, 64), 64, interpret=True)
    ref = numba.njit(cancellation.py_func)
    sc.assert_same(zf, np.array([ref(p, q) for p, q in zip(a, b)], np.float32),
                   "(a + b) - a in float32")

    i8 = rng.integers(-128, 128, (2, 64)).astype(np.int8)
    i8[:, 0] = 127
    zb = np.zeros(64, np.bool_)
    apply_halved(i8[0], i8[1], nt.partition(zb, 64), 64, interpret=True)
    ref = numba.njit(halved.py_func)
    np.testing.assert_array_equal(zb, [ref(p, q) for p, q in zip(i8[0], i8[1])])


def _total(a, b):
    return a + b                     # a plain Python helper: inlined, typed as kernel code


@nt.jit
def helper_sum(x, z: nt.Partition, B: nt.Constant):
    if _total(x[0], x[1]) > 150:
        nt.store(z, nt.full((B,), 1, nt.int32))
    else:
        nt.store(z, nt.full((B,), 0, nt.int32))


def test_inlined_helpers_type_every_operation():
    x = np.array([100, 100], np.int8)
    z = np.full(4, 9, np.int32)
    helper_sum(x, nt.partition(z, 4), 4, interpret=True)
    assert (z == 1).all() and numba.njit(_total)(x[0], x[1]) == 200


# ----------------------------------------------------------------------------- unassigned variables


@nt.jit
def after_empty_loops(x, z: nt.Partition, last: nt.Partition, count: nt.Partition,
                      t_out: nt.Partition, n):
    for idx in nt.tiles(z):
        pass
    nt.store(z, 5.0, idx)                    # no valid index: writes nothing
    nt.store(last, idx[0])                   # -1
    for k in range(n):
        v = k + 1
        t = nt.load_like(x, last)
    nt.store(count, v)                       # 0: Numba's zero
    nt.store(t_out, t)                       # a masked tile of zeros: writes nothing


def test_variables_no_assignment_reached_are_numbas_zero():
    x = np.ones(8, np.float32)
    z = np.full(24, 3.0, np.float32)       # 3 tiles of 8 over 5 blocks: blocks 3 and 4 get none
    last, count, t_out = np.full(5, 9, np.int64), np.full(5, 9, np.int64), \
        np.full(5, 9.0, np.float32)
    after_empty_loops(x, nt.partition(z, 8, blocks=5), nt.partition(last, 1),
                      nt.partition(count, 1), nt.partition(t_out, 1), 0, interpret=True)
    np.testing.assert_array_equal(z, np.full(24, 5.0, np.float32))   # blocks 0-2 only
    np.testing.assert_array_equal(last, [0, 1, 2, -1, -1])
    np.testing.assert_array_equal(count, np.zeros(5, np.int64))
    np.testing.assert_array_equal(t_out, np.full(5, 9.0, np.float32))


@nt.jit
def tensor_alias_after_a_loop(x, z: nt.Partition["B"], n, B: nt.Constant):
    for _ in range(n):
        y = x
    nt.store(z, nt.load_like(y, z))


def test_an_unassigned_tensor_alias_is_refused_on_both_paths():
    x, z = np.ones(8, np.float32), np.zeros(8, np.float32)
    read_line = tensor_alias_after_a_loop.__wrapped__.__code__.co_firstlineno + 4
    for run in (lambda: tensor_alias_after_a_loop(x, nt.partition(z, 8), 1, 8, interpret=True),
                lambda: tensor_alias_after_a_loop.ptx(x, nt.partition(z, 8), 1, 8)):
        with pytest.raises(TileTypingError, match="variable 'y'") as info:
            run()
        assert info.value.lineno == read_line
    assert (z == 0).all()
