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


# ----------------------------------------------------------------------------- booleans


def _bool_kernel(tmp_path, ufunc):
    """A kernel applying ``ufunc`` to booleans (``a[0] > 0``...), and Numba's CPU compilation of
    the same expression; written to a file, so errors name its line."""
    import importlib.util

    import numba
    args = ", ".join(f"a{k}[0] > 0" for k in range(ufunc.nin))
    params = ", ".join(f"a{k}" for k in range(ufunc.nin))
    src = (f"import numba\nimport numpy as np\nimport numba_tile as nt\n\n\n"
           f"@nt.jit\n"
           f"def kernel({params}, z: nt.Partition['B'], B: nt.Constant):\n"
           f"    nt.store(z, np.{ufunc.__name__}({args}) * 1.0)\n\n\n"
           f"def ref({params}):\n"
           f"    return np.{ufunc.__name__}({args}) * 1.0\n")
    path = tmp_path / f"bool_{ufunc.__name__}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"bool_{ufunc.__name__}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kernel, numba.njit(error_model="numpy")(mod.ref), str(path), 8


def _accepted_ufuncs():
    from numba.cuda.ufuncs import ufunc_db

    from numba_tile.typing.scalar_ufuncs import SUPPLEMENT
    return sorted((u for u in set(SUPPLEMENT) | set(ufunc_db())
                   if u.nout == 1 and u.nin <= 2), key=lambda u: u.__name__)


@pytest.mark.parametrize("ufunc", _accepted_ufuncs(), ids=lambda u: u.__name__)
def test_every_ufunc_on_booleans_runs_as_numba_computes_it_or_is_refused_on_both_paths(
        tmp_path, ufunc):
    """NumPy has no boolean loop of np.negative, np.positive, np.sign, np.subtract, where Numba
    casts to int8: such calls compiled for the GPU and then failed in the interpreter with
    NumPy's UFuncTypeError. Every ufunc given booleans either computes Numba's value in the
    interpreter or is refused while typing, naming it and its line, on both paths."""
    kernel, ref, path, line = _bool_kernel(tmp_path, ufunc)
    rng = np.random.default_rng()
    args = [rng.standard_normal(1) for _ in range(ufunc.nin)]
    z = np.zeros(1)
    try:
        kernel(*args, nt.partition(z, (1,)), 1, interpret=True)
    except TileTypingError as exc:
        assert f"np.{ufunc.__name__}() of bool" in exc.message, exc.message
        assert (exc.filename, exc.lineno) == (path, line)
        with pytest.raises(TileTypingError) as info:
            kernel.ptx(*args, nt.partition(np.zeros(1), (1,)), 1)
        assert (info.value.message, info.value.lineno) == (exc.message, exc.lineno)
        return
    want = ref(*args)
    np.testing.assert_allclose(z[0], want, rtol=1e-6, equal_nan=True,
                               err_msg=f"np.{ufunc.__name__} of bool")


@pytest.mark.parametrize("ufunc", [np.negative, np.positive, np.sign, np.subtract],
                         ids=lambda u: u.__name__)
def test_a_ufunc_numpy_has_no_boolean_loop_for_is_refused(tmp_path, ufunc):
    kernel, _ref, path, line = _bool_kernel(tmp_path, ufunc)
    args = [np.ones(1) for _ in range(ufunc.nin)]
    with pytest.raises(TileTypingError) as info:
        kernel(*args, nt.partition(np.zeros(1), (1,)), 1, interpret=True)
    e = info.value
    for part in (f"np.{ufunc.__name__}() of bool", "NumPy (the interpreter) has no loop",
                 "int8"):
        assert part in e.message, (part, e.message)
    assert (e.filename, e.lineno) == (path, line)
