"""Constants that compare equal but are other values (0.0 and -0.0; 2 and 2.0, 1 and True, NaNs
of other bits, inside tuples too) are other specializations: each is typed, checked and compiled
with its own value, in memory, in launch plans, on disk and in the autotuner's keys
(``numba_tile/constant_identity.py``, ``typing/types.ConstantArgType``).

The PTX a kernel compiles for a constant after an equal one must be the PTX a fresh kernel
compiles for that constant alone (symbol names aside).
``tests/gpu/test_constant_specializations.py`` checks the values on both backends.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.constant_identity import identity
from numba_tile.errors import TileTypingError
from numba_tile.runtime import driver, launcher
from numba_tile.typing.types import ConstantArgType
from tests.unit.test_launch_plans import _dev, fake  # noqa: F401 - fixture

autotune_mod = sys.modules["numba_tile.autotune"]      # nt.autotune is the function

NAN = float("nan")
#: (a, b): equal to Python (or both NaN), other constants to the kernel
TOP_PAIRS = [(0.0, -0.0), (NAN, -NAN), (-0.0, 0.0)]
TUPLE_PAIRS = [((3037000499, 1.0), (3037000499.0, 1.0)), ((3037000499, 0.0), (3037000499, -0.0)),
               ((7, NAN), (7, -NAN)), ((3037000499.0, -0.0), (3037000499, 0.0))]


def _div():
    @nt.jit
    def div(x, z: nt.Partition, C: nt.Constant):
        nt.store(z, nt.load_like(x, z) / C)
    return div


def _tuple_kernel():
    @nt.jit
    def square_and_div(x, z: nt.Partition, C: nt.Constant):
        # an int64 product is exact; a float64 one rounds (2**63 - 6e9 needs 63 bits)
        nt.store(z, nt.load_like(x, z) / C[1] + (C[0] * C[0] - 9223372030926249000))
    return square_and_div


def _code(ptx: str) -> str:
    """The PTX without its symbol names (which number each compilation)."""
    return re.sub(r"_ZN\w+", "SYM", ptx)


def _ptx(kernel, c):
    x = np.ones(64, np.float64)
    return kernel.ptx(x, nt.partition(np.zeros(64), 64), c)


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", "")


@pytest.mark.parametrize("make, pair", [(_div, p) for p in TOP_PAIRS]
                         + [(_tuple_kernel, p) for p in TUPLE_PAIRS])
def test_a_constant_compiles_its_own_code_after_an_equal_one(no_disk_cache, make, pair):
    a, b = pair
    k = make()
    first, second = _code(_ptx(k, a)), _code(_ptx(k, b))
    alone = _code(_ptx(make(), b))
    assert second == alone, f"{b!r} compiled after {a!r} is not {b!r}'s code"
    assert second != first
    assert len(k._compiled) == 2


def test_the_bits_of_each_constant_are_in_its_ptx(no_disk_cache):
    k = _div()
    assert "0d8000000000000000" not in _ptx(k, 0.0)
    assert "0d8000000000000000" in _ptx(k, -0.0)         # -0.0, after 0.0


def test_a_tuple_constant_is_typed_again_for_an_equal_tuple_of_other_types(no_disk_cache):
    """(2,) types ``C[0] << 1``; (2.0,) does not, even after (2,) compiled and ran."""
    @nt.jit
    def shifted(x, z: nt.Partition, C: nt.Constant):
        nt.store(z, nt.load_like(x, z) + (C[0] << 1))
    rng = np.random.default_rng()
    x = rng.standard_normal(64)
    z = np.zeros(64)
    shifted(x, nt.partition(z, 64), (2,), interpret=True)
    np.testing.assert_array_equal(z, x + 4)
    with pytest.raises(TileTypingError):
        shifted(x, nt.partition(np.zeros(64), 64), (2.0,), interpret=True)
    with pytest.raises(TileTypingError):
        _ptx(shifted, (2.0,))


@pytest.mark.parametrize("a, b", TOP_PAIRS + TUPLE_PAIRS + [((1,), (True,)), (((2,),), ((2.0,),)),
                                                           (frozenset({0.0}), frozenset({-0.0}))])
def test_the_numba_type_of_a_constant_is_its_own(a, b):
    ta, tb = ConstantArgType(a), ConstantArgType(b)
    assert ta is not tb and ta != tb
    assert identity(ta.value) == identity(a) and identity(tb.value) == identity(b)
    assert ConstantArgType(a) is ta                       # interned by identity


def test_the_interpreter_runs_each_constant_by_its_value(no_disk_cache):
    k = _tuple_kernel()
    rng = np.random.default_rng()
    x = rng.standard_normal(64) + 2.0
    for c in [(3037000499, 1.0), (3037000499.0, 1.0), (3037000499, 0.0), (3037000499, -0.0)]:
        z = np.zeros(64)
        with np.errstate(divide="ignore"):
            k(x, nt.partition(z, 64), c, interpret=True)
            sq = np.asarray(c[0]) * np.asarray(c[0]) - np.asarray(9223372030926249000)
            np.testing.assert_array_equal(z, x / np.float64(c[1]) + sq)


# ----------------------------------------------------------------------------- subclasses


class _Float(float):
    """Numba types it float64 and folds its value: (F(0.0),) is not (F(-0.0),)."""


class _TruthlessFloat(float):
    def __float__(self):           # what float(c) says, never what the kernel folds
        return 0.0

    def __bool__(self):
        return False


class _Int(int):
    pass


class _Complex(complex):
    pass


class _F64(np.float64):
    pass


#: (a, b): leaves of subclasses of Python's or NumPy's numbers, equal to Python, other
#: constants to the kernel (they shared one specialization inside a tuple)
SUBCLASS_PAIRS = [((3037000499, _Float(0.0)), (3037000499, _Float(-0.0))),
                  ((3037000499, _F64(0.0)), (3037000499, _F64(-0.0))),
                  ((_Int(3037000499), _Float(-0.0)), (_Int(3037000499), _Float(0.0))),
                  ((((_Float(NAN),),), 1.0), (((_Float(-NAN),),), 1.0))]


@pytest.mark.parametrize("a, b", SUBCLASS_PAIRS[:3])
def test_a_tuple_of_subclass_leaves_compiles_its_own_code_after_an_equal_one(no_disk_cache, a, b):
    k = _tuple_kernel()
    first, second = _code(_ptx(k, a)), _code(_ptx(k, b))
    assert second == _code(_ptx(_tuple_kernel(), b)) != first
    assert len(k._compiled) == 2


@pytest.mark.parametrize("a, b", SUBCLASS_PAIRS + [
    ((_Complex(0j),), (_Complex(complex(0.0, -0.0)),)), (frozenset({_Float(0.0)}),
                                                          frozenset({_Float(-0.0)}))])
def test_subclass_leaves_are_keyed_by_their_bits(a, b):
    import copy
    assert identity(a) != identity(b)
    assert identity(copy.deepcopy(a)) == identity(a)    # another object of the same bits
    ta, tb = ConstantArgType(a), ConstantArgType(b)
    assert ta is not tb and ConstantArgType(a) is ta


@pytest.mark.parametrize("order", [(0.0, -0.0), (-0.0, 0.0)])
def test_the_interpreter_divides_by_each_subclass_zero(no_disk_cache, order):
    @nt.jit
    def reciprocal(x, z: nt.Partition, C: nt.Constant):
        nt.store(z, nt.load_like(x, z) * 0.0 + 1.0 / C[0][0])
    x = np.ones(64)
    for v in order:
        z = np.zeros(64)
        with np.errstate(divide="ignore"):
            reciprocal(x, nt.partition(z, 64), ((_Float(v),),), interpret=True)
            np.testing.assert_array_equal(z, np.float64(1.0) / np.float64(v))


def test_a_subclass_leaf_is_folded_and_run_by_its_value():
    """The kernel folds the float a subclass holds; its own ``__float__`` or ``__bool__`` must
    not decide a branch in the interpreter."""
    @nt.jit
    def truth(x, z: nt.Partition, C: nt.Constant):
        if C[0]:
            nt.store(z, nt.load_like(x, z) * 0.0 + C[0])
        else:
            nt.store(z, nt.load_like(x, z) * 0.0 - 1.0)
    value = float(np.random.default_rng().uniform(1.0, 2.0))
    z = np.zeros(64)
    truth(np.ones(64), nt.partition(z, 64), (_TruthlessFloat(value),), interpret=True)
    np.testing.assert_array_equal(z, value)


# ----------------------------------------------------------------------------- launch plans

@nt.jit
def div_by_real(x, z: nt.Partition["B"], C: nt.Constant, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) / C.real)


def test_launch_plans_and_their_guards_tell_equal_constants_apart(fake, monkeypatch):
    """On the GPU path (a fake driver): 0j and complex(-0.0, 0.0) are equal, but the second
    launch must not take the first one's plan (its guard, then its key) and its code."""
    images, launched = [], []
    monkeypatch.setattr(driver, "load_module", lambda img, d: images.append(img) or len(images))
    monkeypatch.setattr(driver, "get_function", lambda module, name: module)
    real = fake._launch

    def launch(func, *rest):
        launched.append(func)
        return real(func, *rest)
    monkeypatch.setattr(fake, "_launch", launch)
    monkeypatch.setattr(driver, "launch", launch)
    x, z = _dev(256, np.float64), _dev(256, np.float64)
    for c in (0j, complex(-0.0, 0.0), 0j, complex(-0.0, 0.0)):
        div_by_real(x, nt.partition(z, 256), c, 256)
    assert fake.slow_calls["n"] == 2 and len(div_by_real._compiled) == 2
    assert launched == [1, 2, 1, 2]
    assert "0d8000000000000000" not in images[0] and "0d8000000000000000" in images[1]


def test_plan_keys_hold_constants_by_identity():
    roles = ("constant",)
    keys = {launcher.plan_key(roles, (v,))[0] for v in (0.0, -0.0, 0j, complex(-0.0, 0.0),
                                                        complex(0.0, -0.0))}
    assert len(keys) == 5


# ----------------------------------------------------------------------------- autotuner

def test_tuning_keys_hold_values_by_identity():
    parts = {autotune_mod._key_part(v) for v in (0.0, -0.0, 2, 2.0, True, 1, (2,), (2.0,),
                                                  (0.0,), (-0.0,))}
    assert len(parts) == 10


# ----------------------------------------------------------------------------- disk cache

KMOD = '''
import numba_tile as nt


@nt.jit
def div(x, z: nt.Partition, C: nt.Constant):
    nt.store(z, nt.load_like(x, z) / C)
'''

PROCESS = '''
import json, sys
import numpy as np
import numba_tile as nt
import kmod
out = {}
for c in json.loads(sys.argv[1]):
    out[repr(c)] = kmod.div.ptx(np.ones(64), nt.partition(np.zeros(64), 64), c)
print(json.dumps(out))
'''


def _process(directory, cache_dir, constants):
    env = dict(os.environ, NUMBA_TILE_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(directory)] + [p for p in sys.path if p]))
    done = subprocess.run([sys.executable, "-c", PROCESS, json.dumps(constants)],
                          cwd=directory, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_process_asking_for_negative_zero_gets_its_code_from_the_disk(tmp_path):
    """Process A compiles 0.0 then -0.0 (each written to the disk cache); process B asks only
    for -0.0 and reads A's entry; process C, on an empty cache, compiles -0.0 alone."""
    (tmp_path / "kmod.py").write_text(textwrap.dedent(KMOD))
    shared = tmp_path / "shared"
    a = _process(tmp_path, shared, [0.0, -0.0])
    b = _process(tmp_path, shared, [-0.0])
    c = _process(tmp_path, tmp_path / "empty", [-0.0])
    assert _code(b["-0.0"]) == _code(c["-0.0"]) == _code(a["-0.0"])
    assert _code(a["0.0"]) != _code(a["-0.0"])
    assert "0d8000000000000000" in b["-0.0"]
