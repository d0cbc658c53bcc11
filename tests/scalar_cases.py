"""Scalar cases shared by ``tests/unit/test_interpreter_scalars.py`` (the interpreter) and
``tests/gpu/test_scalar_typing.py`` (the GPU): kernels that compute scalar expressions from
elements of input tensors and store each result (or a branch on it) into a partition of its
own, one element per block; random inputs with the edge values of their dtypes; and the
reference: Numba's own CPU compilation (``numba.njit``, NumPy's error model, as numba_tile
compiles) of the same expressions, whose typing the CUDA target shares.

Where Numba's CPU code and numba_tile's defined results part (a shift count outside
``[0, bits)``, a float converted to an integer outside its range: LLVM poison, which
numba_tile's code defines: ``lowering/scalars.py``), the reference is that rule, computed
here with Python integers. Numba's CPU code also assumes signed arithmetic never overflows
(LLVM's ``nsw``) where numba_tile's wraps: the expressions here store each result, so no
comparison is folded on that assumption (a test of one compares with NumPy's wrapping
arithmetic instead).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.np.numpy_support import as_dtype

import numba_tile as nt

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]

#: operand pairs of the binary cases: every dtype with itself, and mixed pairs that widen,
#: change signedness, or mix integers and floats (booleans: the bitwise cases, and ``min``
#: and ``max`` of booleans, Numba's ``@overload``s, in ``tests/builtin_cases.py``)
PAIRS = ([(d, d) for d in INTS + FLOATS]
         + [(np.int8, np.uint8), (np.int32, np.int64), (np.int64, np.uint64),
            (np.uint32, np.int8), (np.uint64, np.uint8), (np.int32, np.float32),
            (np.int64, np.float32), (np.uint64, np.float64), (np.float32, np.float64)])
INT_PAIRS = [(a, b) for a, b in PAIRS if a in INTS and b in INTS]


def edge_values(dt) -> list:
    """The values where integer and IEEE arithmetic are most likely to go wrong."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return [False, True]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [0, 1, 2, 7, info.max, info.max - 1, info.min, info.min + 1]
        if dt.kind == "i":
            vals += [-1, -2, -7]
        return vals
    info = np.finfo(dt)
    return [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 2.0 ** 24, 2.0 ** 31, -2.0 ** 63, 1e30,
            float(info.max), float(info.tiny), math.nan, math.inf, -math.inf]


def random_values(dt, rng, n: int) -> np.ndarray:
    """``n`` random values of ``dt``: half over its whole range, half small."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        wide = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        small = rng.integers(max(info.min, -100), 100, n).astype(dt)
        return np.where(rng.random(n) < 0.5, wide, small)
    scale = np.where(rng.random(n) < 0.5, 1.0, 1e6)
    return (rng.standard_normal(n) * scale).astype(dt)


def as_array(values, dt) -> np.ndarray:
    """``values`` (Python numbers) as an array of ``dt``, exactly (through Python objects:
    ``np.array`` of large integers would pass through float64)."""
    with np.errstate(all="ignore"):
        return np.array(values, dtype=object).astype(dt)


def operands(da, db, rng, n_random: int = 48):
    """Two arrays: every pair of edge values, then ``n_random`` random pairs."""
    ea, eb = edge_values(da), edge_values(db)
    a = [x for x in ea for _ in eb]
    b = [y for _ in ea for y in eb]
    xs = np.concatenate([as_array(a, da), random_values(da, rng, n_random)])
    ys = np.concatenate([as_array(b, db), random_values(db, rng, n_random)])
    return xs, ys


# ----------------------------------------------------------------------------- kernels


@nt.jit
def arithmetic(x, y, add: nt.Partition, sub: nt.Partition, mul: nt.Partition,
               div: nt.Partition, fdiv: nt.Partition, mod: nt.Partition, lt: nt.Partition,
               le: nt.Partition, gt: nt.Partition, ge: nt.Partition, eq: nt.Partition,
               ne: nt.Partition, lo: nt.Partition, hi: nt.Partition, branch: nt.Partition):
    i = nt.bid(0)
    a = x[i]
    b = y[i]
    nt.store(add, a + b)
    nt.store(sub, a - b)
    nt.store(mul, a * b)
    nt.store(div, a / b)
    nt.store(fdiv, a // b)
    nt.store(mod, a % b)
    nt.store(lt, a < b)
    nt.store(le, a <= b)
    nt.store(gt, a > b)
    nt.store(ge, a >= b)
    nt.store(eq, a == b)
    nt.store(ne, a != b)
    nt.store(lo, min(a, b))
    nt.store(hi, max(a, b))
    if a * b - a > b:                  # a data-dependent branch on a scalar expression
        nt.store(branch, 1)
    else:
        nt.store(branch, 0)


@numba.njit(error_model="numpy")
def arithmetic_ref(a, b):
    return (a + b, a - b, a * b, a / b, a // b, a % b, a < b, a <= b, a > b, a >= b, a == b,
            a != b, min(a, b), max(a, b), 1 if a * b - a > b else 0)


ARITHMETIC = ("add", "sub", "mul", "div", "fdiv", "mod", "lt", "le", "gt", "ge", "eq", "ne",
              "lo", "hi", "branch")


@nt.jit
def bitwise(x, y, and_: nt.Partition, or_: nt.Partition, xor: nt.Partition,
            shl: nt.Partition, shr: nt.Partition):
    i = nt.bid(0)
    a = x[i]
    b = y[i]
    nt.store(and_, a & b)
    nt.store(or_, a | b)
    nt.store(xor, a ^ b)
    nt.store(shl, a << b)
    nt.store(shr, a >> b)


@numba.njit(error_model="numpy")
def bitwise_ref(a, b):
    return a & b, a | b, a ^ b, a << b, a >> b


BITWISE = ("and_", "or_", "xor", "shl", "shr")


@nt.jit
def unary(x, neg: nt.Partition, pos: nt.Partition, absolute: nt.Partition,
          negation: nt.Partition, to_int: nt.Partition, to_float: nt.Partition,
          to_f32: nt.Partition, to_i8: nt.Partition, to_u8: nt.Partition,
          to_i32: nt.Partition, to_u64: nt.Partition, to_bool: nt.Partition):
    a = x[nt.bid(0)]
    nt.store(neg, -a)
    nt.store(pos, +a)
    nt.store(absolute, abs(a))
    nt.store(negation, not a)
    nt.store(to_int, int(a))
    nt.store(to_float, float(a))
    nt.store(to_f32, np.float32(a))
    nt.store(to_i8, np.int8(a))
    nt.store(to_u8, np.uint8(a))
    nt.store(to_i32, np.int32(a))
    nt.store(to_u64, np.uint64(a))
    nt.store(to_bool, bool(a))


@numba.njit(error_model="numpy")
def unary_ref(a):
    return (-a, +a, abs(a), not a, int(a), float(a), np.float32(a), np.int8(a), np.uint8(a),
            np.int32(a), np.uint64(a), bool(a))


UNARY = ("neg", "pos", "absolute", "negation", "to_int", "to_float", "to_f32", "to_i8",
         "to_u8", "to_i32", "to_u64", "to_bool")
#: the casts to an integer type, by output name
INT_CASTS = {"to_int": np.int64, "to_i8": np.int8, "to_u8": np.uint8, "to_i32": np.int32,
             "to_u64": np.uint64}


@nt.jit
def invert(x, z: nt.Partition):
    nt.store(z, ~x[nt.bid(0)])


@numba.njit(error_model="numpy")
def invert_ref(a):
    return (~a,)


@nt.jit
def power(x, y, z: nt.Partition):
    i = nt.bid(0)
    nt.store(z, x[i] ** y[i])


@numba.njit(error_model="numpy")
def power_ref(a, b):
    return (a ** b,)


def power_overflow(a, b):
    """The reference of ``a ** b`` (a float, ``b`` a negative integer) where Numba's CPU code
    raises ZeroDivisionError: ``a ** -b`` is 0 (or underflowed to 0), and numba_tile's code
    gives ``1.0 / 0`` its IEEE value, an infinity of that zero's sign
    (``lowering/scalars._power_impl``)."""
    negative = math.copysign(1.0, float(a)) < 0 and int(b) % 2 == 1
    return (-math.inf if negative else math.inf,)


# ----------------------------------------------------------------------------- running


def result_dtypes(ref, *args) -> list:
    """The NumPy dtypes of the results Numba's CPU compilation of ``ref`` types for ``args``."""
    ref(*args)
    argtys = tuple(numba.typeof(a) for a in args)
    for sig in ref.nopython_signatures:
        if tuple(sig.args) == argtys:
            return [as_dtype(t) for t in sig.return_type]
    raise AssertionError(f"no signature of {ref} for {argtys}")


def reference(ref, *columns, on_error=None) -> list:
    """``ref`` on each element (NumPy scalars of the columns' dtypes), one array per result;
    where it raises, ``on_error(*values)`` gives the row."""
    rows = []
    for vals in zip(*columns):
        try:
            rows.append(ref(*vals))
        except ArithmeticError:
            if on_error is None:
                raise
            rows.append(on_error(*vals))
    dts = result_dtypes(ref, *(c[0] for c in columns))
    with np.errstate(all="ignore"):
        return [np.array([r[k] for r in rows], dtype=object).astype(dt)
                for k, dt in enumerate(dts)]


def launch(backend, kernel, inputs, outputs: list) -> list:
    """Run ``kernel`` on ``backend`` with one block per element: the inputs as tensors, the
    outputs (arrays of the reference's dtypes, filled with a marker) as partitions of
    tiles of one element. Returns the outputs' host copies."""
    devs = [backend.asarray(o) for o in outputs]
    backend.run(kernel, *[backend.asarray(a) for a in inputs],
                *[nt.partition(d, 1) for d in devs])
    return [backend.to_numpy(d) for d in devs]


def _marker(want: np.ndarray) -> np.ndarray:
    if want.dtype == np.bool_:
        return np.zeros_like(want)
    return np.full_like(want, 7 if want.dtype.kind in "iu" else np.nan)


def run_case(backend, kernel, ref, inputs, on_error=None) -> tuple:
    """``(got, want)``: the kernel's results on ``backend`` and the reference's, arrays in
    the reference's order."""
    want = reference(ref, *inputs, on_error=on_error)
    got = launch(backend, kernel, inputs, [_marker(w) for w in want])
    return got, want


def assert_same(got, want, what: str) -> None:
    """Equal values, bit for bit (the sign of a zero included); NaN where the other has NaN
    (its payload is the hardware's)."""
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
        bits = f"u{want.dtype.itemsize}"
        np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits),
                                      err_msg=f"{what}: values")
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


# ----------------------------------------------------------------------------- defined rules


def shift_rule(a: np.ndarray, b: np.ndarray, want: np.ndarray, left: bool) -> np.ndarray:
    """The reference of ``a << b`` / ``a >> b`` (result dtype ``want.dtype``): Numba's where
    the count is in ``[0, bits)``, else 0 (``<<``, unsigned ``>>``) or the sign (signed
    ``>>``)."""
    bits = want.dtype.itemsize * 8
    out = want.copy()
    for k, (x, n) in enumerate(zip(a.tolist(), b.tolist())):
        if not 0 <= int(n) < bits:
            out[k] = -1 if (not left and want.dtype.kind == "i" and int(x) < 0) else 0
    return out


def float_to_int_rule(a: np.ndarray, dt) -> np.ndarray:
    """A float converted to integer dtype ``dt`` as numba_tile's code converts it: toward zero,
    saturated at the dtype's range, NaN to 0."""
    info = np.iinfo(dt)
    out = []
    for x in a.tolist():
        if math.isnan(x):
            out.append(0)
        elif math.isinf(x):
            out.append(info.max if x > 0 else info.min)
        else:
            out.append(min(max(int(x), info.min), info.max))
    return np.array(out, dtype=object).astype(dt)


def float_in_range(a: np.ndarray, dt) -> np.ndarray:
    """Where a float converts to integer dtype ``dt`` without leaving its range (Numba's CPU
    code and the rule agree there)."""
    info = np.iinfo(dt)
    with np.errstate(invalid="ignore"):
        t = np.trunc(a.astype(np.float64))
        return (t >= float(info.min)) & (t < float(info.max) + 1.0)
