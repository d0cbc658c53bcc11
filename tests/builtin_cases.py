"""Python builtins on scalars and tuple Constants, shared by
``tests/unit/test_interpreter_builtins.py`` (the interpreter) and
``tests/gpu/test_scalar_builtins.py`` (the GPU): ``divmod``, ``round(x, n)``, ``range()`` of
floats, and ``min``/``max``/``sum``/``len`` of tuples, ``sum(range(n))``. Each kernel stores
its results one element per block (``tests/scalar_cases.launch``); the reference is Numba's
own CPU compilation of the same expressions (``numba.njit``, NumPy's error model), whose
typing the CUDA target shares.

Where numba-cuda's lowering is not Numba's CPU one, the reference says so:
``round(x, n)`` on the GPU is ``cudaimpl.round_to_impl``, whose ``round(y)`` is libdevice's
``__nv_llrint`` (saturated to int64) where the CPU rounds with ``llvm.rint`` in the
argument's type, so the two agree for float64 arguments whose scaled value ``x * 10**n``
stays inside int64 (but a result that rounds to zero is +0.0 on the GPU:
:func:`round_zero_rule`), and where the scaled value overflows (``n >= 331``: ``x``, but 0.0 on the
GPU for a zero ``x``, whose scaled value is NaN) or the scale does (``n <= -309``: NaN)
(:func:`round_agrees`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

import numba_tile as nt

# ----------------------------------------------------------------------------- divmod


@nt.jit
def division(x, y, q: nt.Partition, r: nt.Partition):
    i = nt.bid(0)
    d = divmod(x[i], y[i])
    nt.store(q, d[0])
    nt.store(r, d[1])


@numba.njit(error_model="numpy")
def division_ref(a, b):
    return divmod(a, b)


DIVISION = ("quotient", "remainder")

#: operand pairs of divmod: those whose signature is not the operands' own types (int8 and
#: int8 is typed (int64, int64); float32 and uint16 (float64, float64); float32 and int16
#: (float32, float32)), besides same-type ones
DIVMOD_PAIRS = [(np.int8, np.int8), (np.int16, np.uint16), (np.int64, np.int64),
                (np.uint64, np.uint64), (np.int64, np.uint64), (np.uint8, np.int32),
                (np.float32, np.uint16), (np.float32, np.int16), (np.float32, np.float32),
                (np.float64, np.float64), (np.int32, np.float32), (np.float64, np.int8)]


@nt.jit
def extremes(x, y, lo: nt.Partition, hi: nt.Partition):
    i = nt.bid(0)
    nt.store(lo, min(x[i], y[i]))
    nt.store(hi, max(x[i], y[i]))


@numba.njit(error_model="numpy")
def extremes_ref(a, b):
    return min(a, b), max(a, b)


EXTREMES = ("min", "max")


# ----------------------------------------------------------------------------- round


@nt.jit
def rounding(x, n, z: nt.Partition):
    i = nt.bid(0)
    nt.store(z, round(x[i], n[i]))


@numba.njit(error_model="numpy")
def rounding_ref(a, n):
    return (round(a, n),)


def ndigits(rng, count: int) -> np.ndarray:
    """Digit counts: every edge of numba-cuda's algorithm (22, 308/309 and 330/331, where the
    products overflow; int64's least value, whose negation wraps), then random ones."""
    edges = [0, 1, -1, 2, -2, 5, 15, 16, 17, 22, 23, 100, 300, 308, 309, 310, 322, 323, 330,
             331, 332, 400, 10 ** 6, 2 ** 62, 2 ** 63 - 1, -5, -15, -22, -23, -300, -308,
             -309, -310, -400, -10 ** 6, -2 ** 62, -2 ** 63]
    return np.concatenate([np.array(edges, np.int64), rng.integers(-340, 340, count)])


def round_operands(dt, rng, count: int = 48):
    """``(xs, ns)``: every pair of edge values and digit counts, then random pairs."""
    xs = [0.0, -0.0, 0.5, 2.5, -2.5, 2.675, 1.0 / 3.0, 123456.789, -987.654321, 1e-300,
          5e-324, 1e15, 9.2e18, 1e300, -1e300, math.inf, -math.inf, math.nan]
    ns = ndigits(rng, 0)
    with np.errstate(over="ignore"):            # 1e300 as a float32 is inf
        a = np.array([x for x in xs for _ in ns], dt)
    b = np.array([n for _ in xs for n in ns], np.int64)
    scale = np.where(rng.random(count) < 0.5, 1.0, 10.0 ** rng.integers(-30, 30, count))
    ra = (rng.standard_normal(count) * scale).astype(dt)
    rb = rng.integers(-25, 25, count)
    return np.concatenate([a, ra]), np.concatenate([b, rb])


def round_agrees(xs: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """Where numba-cuda's ``round(x, n)`` and Numba's CPU one compute the same (module
    docstring): float64 ``x``, and ``n`` from 331 (``x`` not zero) or to -309, or a scaled
    value inside int64 (with a margin); ``n`` not int64's least value (its negation
    wraps)."""
    out = []
    for x, n in zip(xs.tolist(), ns.tolist()):
        if n == -2 ** 63 or (x == 0.0 and n >= 331):
            # -n wraps; 0 * 10.0 ** 309 is NaN, which llvm.rint keeps and __nv_llrint makes 0
            out.append(False)
        elif not math.isfinite(x) or n >= 331 or n <= -309:
            out.append(True)
        else:
            scaled = abs(x) * 10.0 ** n if -330 < n < 309 else math.inf
            out.append(scaled < 2.0 ** 62)
    return np.array(out, bool)


def round_zero_rule(want: np.ndarray) -> np.ndarray:
    """The reference of ``round(x, n)`` made numba-cuda's where it rounds to zero: its
    ``round(y)`` is an int64 (``__nv_llrint``), so a zero result is +0.0 where the CPU's
    ``llvm.rint`` keeps a negative zero (``round(-0.4, 0)``)."""
    return np.where(want == 0, np.zeros_like(want), want)


# ----------------------------------------------------------------------------- range


@nt.jit
def counting(x, y, n: nt.Partition, s: nt.Partition, t: nt.Partition):
    i = nt.bid(0)
    c = 0
    for _k in range(x[i]):
        c += 1
    total = 0
    for k in range(y[i], x[i]):
        total += k
    static = 0
    for _k in nt.static_range(x[i]):
        static += 1
    nt.store(n, c)
    nt.store(s, total)
    nt.store(t, static)


@numba.njit(error_model="numpy")
def counting_ref(a, b):
    c = 0
    for _k in range(a):
        c += 1
    total = 0
    for k in range(b, a):
        total += k
    return c, total, c


COUNTING = ("count", "sum", "static_range")


def range_operands(dt, rng, count: int = 32):
    """Floats ``xs`` (small: the loops run) and int64 starts ``ys``."""
    xs = [0.0, -0.0, 0.5, 0.999, 1.0, 2.7, 5.5, -0.5, -3.7, 17.25]
    ys = [-5, -1, 0, 1, 3]
    a = np.array([x for x in xs for _ in ys], dt)
    b = np.array([y for _ in xs for y in ys], np.int64)
    ra = rng.uniform(-8.0, 40.0, count).astype(dt)
    rb = rng.integers(-6, 6, count)
    return np.concatenate([a, ra]), np.concatenate([b, rb])


# ----------------------------------------------------------------------------- tuples


@nt.jit
def tuple_builtins(lo: nt.Partition, hi: nt.Partition, total: nt.Partition,
                   count: nt.Partition, ranged: nt.Partition, C: nt.Constant, N: nt.Constant):
    nt.store(lo, min(C))
    nt.store(hi, max(C))
    nt.store(total, sum(C))
    nt.store(count, len(C))
    nt.store(ranged, sum(range(N)))


@numba.njit(error_model="numpy")
def tuple_builtins_ref(C, N):
    return min(C), max(C), sum(C), len(C), sum(range(N))


TUPLE_BUILTINS = ("min", "max", "sum", "len", "sum_range")


def tuple_constants(rng) -> list:
    """Tuple Constants: uniform ints (sums that wrap at 2**63), uniform floats (with a NaN and
    signed zeros), heterogeneous tuples of ints and floats (summed in float64 from the first
    item on: ``(2**53, 1, 1, 0.0)`` is 2**53 there, not Python's 2**53 + 2)."""
    big = int(rng.integers(2 ** 61, 2 ** 62))
    floats = tuple(float(v) for v in rng.standard_normal(4) * 1e3)
    return [
        tuple(int(v) for v in rng.integers(-10 ** 6, 10 ** 6, 5)),
        (big, big, big, -int(rng.integers(0, 100))),
        floats,
        (0.0, -0.0, float(rng.standard_normal())),
        (float(rng.standard_normal()), math.nan, 1.5),
        (2 ** 53, 1, 1, 0.0),
        (int(rng.integers(-100, 100)), float(rng.standard_normal()), int(rng.integers(0, 9))),
        (2 ** 53 + 1, float(2 ** 53), 3),
    ]


def run_tuple_builtins(backend, C, N: int) -> tuple:
    """``(got, want)`` of :func:`tuple_builtins` for Constants ``C`` and ``N`` on ``backend``,
    one block, the outputs of the reference's dtypes."""
    want = tuple_builtins_ref(C, N)
    dts = [np.asarray(w).dtype for w in want]
    devs = [backend.asarray(np.zeros(1, dt)) for dt in dts]
    backend.run(tuple_builtins, *[nt.partition(d, 1) for d in devs], C, N)
    got = [backend.to_numpy(d)[0] for d in devs]
    return got, [np.asarray(w, dt)[()] for w, dt in zip(want, dts)]
