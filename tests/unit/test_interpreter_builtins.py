"""The interpreter computes Python's builtins as the compiled kernel does, against Numba's CPU
compilation of the same expressions (``tests/builtin_cases.py``; the GPU's twin is
``tests/gpu/test_scalar_builtins.py``): ``divmod`` in the types of the signature Numba chose
(not the operands'), ``round(x, n)`` for every ``n`` as numba-cuda lowers it, ``range()`` of
a float converted as Numba converts it, and Numba's own ``@overload`` implementations
(``min``, ``sum`` of a tuple Constant, ``sum(range(n))``) run from their typed IR, typed
without a GPU; the builtins Numba cannot compile for the GPU are refused at the user's line
on both paths; a library function reassigned after the kernel was compiled changes nothing
it computes."""

import math

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import ClosedWorldError, TileTypingError
from numba_tile.testing import Backend
from tests import builtin_cases as bc
from tests import scalar_cases as sc

INTERPRETER = Backend("interpreter")


def _name(d):
    return np.dtype(d).name


@pytest.mark.parametrize("da, db", bc.DIVMOD_PAIRS, ids=_name)
def test_divmod_computes_in_its_signatures_types(da, db):
    rng = np.random.default_rng()
    xs, ys = sc.operands(da, db, rng)
    got, want = sc.run_case(INTERPRETER, bc.division, bc.division_ref, (xs, ys))
    for name, g, w in zip(bc.DIVISION, got, want):
        sc.assert_same(g, w, f"divmod({_name(da)}, {_name(db)}) {name}")


def test_min_and_max_of_booleans_run_numbas_overloads():
    xs, ys = sc.operands(np.bool_, np.bool_, np.random.default_rng())
    got, want = sc.run_case(INTERPRETER, bc.extremes, bc.extremes_ref, (xs, ys))
    for name, g, w in zip(bc.EXTREMES, got, want):
        sc.assert_same(g, w, f"{name}(bool, bool)")


def test_round_with_digits_agrees_with_numba_for_every_ndigits():
    rng = np.random.default_rng()
    xs, ns = bc.round_operands(np.float64, rng)
    keep = bc.round_agrees(xs, ns)
    xs, ns = xs[keep], ns[keep]
    assert (ns >= 331).any() and (ns <= -309).any()
    got, want = sc.run_case(INTERPRETER, bc.rounding, bc.rounding_ref, (xs, ns))
    sc.assert_same(got[0], bc.round_zero_rule(want[0]), "round(float64, int64)")


def test_round_with_digits_outside_numbas_cpu_region_is_numba_cudas_algorithm():
    """Where Numba's CPU code and numba-cuda's part (``round(y)`` saturates to int64 on the
    GPU: ``round(1e300, 5)``), the interpreter computes numba-cuda's steps, which the GPU test
    checks against the GPU; here: a scaled value past 2**63 rounds to the saturated int64."""
    xs = np.array([1e300, -1e300, 2.5, 0.0], np.float64)
    ns = np.array([5, 5, -2 ** 63, -2 ** 63], np.int64)
    z = np.zeros(4)
    bc.rounding(xs, ns, nt.partition(z, 1), interpret=True)
    cap = float(2 ** 63 - 1)
    assert z[0] == (cap / 1.0) / 1e5 and z[1] == (-float(2 ** 63) / 1.0) / 1e5
    # -n wraps to int64's least value: 10.0 ** that is 0.0, y = x / 0.0 saturates (inf), and
    # 0.0 * that is 0.0; 0.0 / 0.0 is NaN, which rounds to 0
    assert z[2] == 0.0 and z[3] == 0.0


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_range_of_a_float_converts_as_numba_does(dt):
    rng = np.random.default_rng()
    xs, ys = bc.range_operands(dt, rng)
    got, want = sc.run_case(INTERPRETER, bc.counting, bc.counting_ref, (xs, ys))
    for name, g, w in zip(bc.COUNTING, got, want):
        sc.assert_same(g, w, f"{name} of range({_name(dt)})")


def test_builtins_of_tuple_constants_type_without_a_gpu_and_run_numbas_implementations():
    rng = np.random.default_rng()
    for C in bc.tuple_constants(rng):
        N = int(rng.integers(-3, 400))
        got, want = bc.run_tuple_builtins(INTERPRETER, C, N)
        for name, g, w in zip(bc.TUPLE_BUILTINS, got, want):
            sc.assert_same(np.asarray([g]), np.asarray([w]), f"{name}({C!r})")


# ----------------------------------------------------------------------------- refusals


@nt.jit
def _max_int_bool(a, out: nt.Partition["B"], B: nt.Constant):
    nt.store(out, max(a[0], a[0] > 3))      # the line each refusal names


@nt.jit
def _tuple_index(out: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(out, C.index(2))


@nt.jit
def _tuple_hash(out: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(out, hash(C))


def _line(kernel, text):
    import inspect
    src, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, ln in enumerate(src) if text in ln)


@pytest.mark.parametrize("path", ["interpreter", "ptx"])
@pytest.mark.parametrize("kernel, args, error, names", [
    (_max_int_bool, lambda: (np.array([5]),), TileTypingError, "max"),
    (_tuple_index, lambda: ((1, 2),), ClosedWorldError, ".index"),
    (_tuple_hash, lambda: ((1, 2),), TileTypingError, "hash"),
], ids=["max(int, bool)", "C.index", "hash(C)"])
def test_builtins_numba_cannot_compile_for_the_gpu_are_refused_at_their_line(
        path, kernel, args, error, names):
    """Numba's own implementations of these do not compile for the GPU (``max(int, bool)``,
    ``hash``) or may raise (``tuple.index``): refused while typing, with no GPU present, naming
    the builtin and the line (it was a message about device functions needing a GPU)."""
    out = np.zeros(1, np.int64)
    kw = {} if path == "ptx" else {"interpret": True}
    run = kernel.ptx if path == "ptx" else kernel
    with pytest.raises(error) as info:
        if kernel is _max_int_bool:
            run(*args(), nt.partition(out, (1,)), 1, **kw)
        else:
            run(nt.partition(out, (1,)), 1, *args(), **kw)
    message = str(info.value)
    assert names in message and "GPU" not in message, message
    assert info.value.lineno == _line(kernel, "nt.store(out"), message


# ----------------------------------------------------------------------------- what was typed


@nt.jit
def _library_calls(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    nt.store(z, nt.exp(t) + math.exp(x[0]) + np.exp(x[0]) + math.pi)


def test_a_library_function_reassigned_after_compiling_changes_nothing(monkeypatch):
    """The compiled kernel calls the functions Numba typed (and holds the constants it read):
    the interpreter runs the same ones, not what the module holds at the launch."""
    rng = np.random.default_rng()
    x = rng.standard_normal(8)
    want = np.exp(x) + 2.0 * math.exp(x[0]) + math.pi
    z0, z1 = np.zeros(8), np.zeros(8)
    _library_calls(x, nt.partition(z0, (4,)), 4, interpret=True)
    monkeypatch.setattr(nt, "exp", nt.log)
    monkeypatch.setattr(math, "exp", math.log)
    monkeypatch.setattr(np, "exp", np.log)
    monkeypatch.setattr(math, "pi", 3.0)
    _library_calls(x, nt.partition(z1, (4,)), 4, interpret=True)
    np.testing.assert_allclose(z0, want, rtol=1e-13)
    np.testing.assert_array_equal(z1, z0)
