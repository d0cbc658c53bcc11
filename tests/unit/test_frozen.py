"""What the interpreter runs is what was checked: a specialization's snapshot (numba_tile.frozen).

A kernel is typed and ownership-checked once per specialization; the interpreter then runs the
snapshot of the function taken for that check (its globals, closure cells and module attributes
frozen), not the live function. A global flag flipped after the check cannot bring back a branch
Numba pruned for the check; a new specialization, or a new kernel, sees the new value and is
checked for it.
"""

import enum
import sys
import types
import textwrap

import numpy as np
import pytest
from numba import cuda
from numba.cuda.extending import overload, type_callable

import numba_tile as nt
from numba_tile import cache, errors, frozen
from numba_tile.runtime.fakes import FakeDeviceArray

THIS = sys.modules[__name__]

FLAG = False                 # flipped by the tests (through monkeypatch)
CFG = types.ModuleType("tile_test_cfg")     # a user module read through an attribute
CFG.SCALE = 2.0
CFG.UNREAD = 0
TABLE = [1.0, [2.0, 3.0]]
ARRAY = np.arange(6, dtype=np.float32).reshape(2, 3)


class Mode(enum.IntEnum):
    A = 1
    B = 2


def line_of(marker: str) -> int:
    """1-based line of this file ending with ``# <marker>``."""
    with open(__file__) as f:
        hits = [i for i, ln in enumerate(f, 1) if ln.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, hits
    return hits[0]


def launch(kernel, x):
    z = np.zeros_like(x)
    kernel(x, nt.partition(z, 16), interpret=True)
    return z


def make_global_flag_kernel():
    @nt.jit
    def k(x, z: nt.Partition):
        t = nt.load_like(x, z)
        if FLAG:
            nt.store(x, t * 0.0)  # FLAG-STORE
        nt.store(z, t * 2.0)
    return k


def test_a_global_flag_flipped_after_the_check_runs_the_checked_code(monkeypatch):
    monkeypatch.setattr(THIS, "FLAG", False)
    k = make_global_flag_kernel()
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(launch(k, x), 2 * np.arange(64))
    monkeypatch.setattr(THIS, "FLAG", True)
    z = launch(k, x)                                # the specialization checked with FLAG=False
    np.testing.assert_array_equal(x, np.arange(64))  # the pruned store did not come back
    np.testing.assert_array_equal(z, 2 * np.arange(64))
    # a new specialization is checked with the new value, and refused
    with pytest.raises(errors.StoreToReadOnlyError) as info:
        launch(k, np.arange(64, dtype=np.float64))
    assert (info.value.filename, info.value.lineno) == (__file__, line_of("FLAG-STORE"))
    assert "nt.store(x, t * 0.0)" in str(info.value)
    # and so is a new kernel
    with pytest.raises(errors.StoreToReadOnlyError):
        launch(make_global_flag_kernel(), x)
    np.testing.assert_array_equal(x, np.arange(64))


def make_closure_flag_kernel():
    flag = False

    @nt.jit
    def k(x, z: nt.Partition):
        t = nt.load_like(x, z)
        if flag:
            nt.store(x, t * 0.0)  # CELL-STORE
        nt.store(z, t * 2.0)

    def flip():
        nonlocal flag
        flag = True
    return k, flip


def test_a_closure_cell_changed_after_the_check_runs_the_checked_code():
    k, flip = make_closure_flag_kernel()
    x = np.arange(64, dtype=np.float32)
    launch(k, x)
    flip()
    z = launch(k, x)
    np.testing.assert_array_equal(x, np.arange(64))
    np.testing.assert_array_equal(z, 2 * np.arange(64))
    with pytest.raises(errors.StoreToReadOnlyError) as info:
        launch(k, np.arange(64, dtype=np.float64))
    assert info.value.lineno == line_of("CELL-STORE")
    np.testing.assert_array_equal(x, np.arange(64))


def test_a_user_module_attribute_changed_after_the_check_runs_the_checked_code(monkeypatch,
                                                                            tmp_path):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(CFG, "SCALE", 3.0)

    @nt.jit
    def k(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z) * CFG.SCALE)

    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(launch(k, x), 3 * x)
    monkeypatch.setattr(CFG, "SCALE", 5.0)
    np.testing.assert_array_equal(launch(k, x), 3 * x)          # as checked
    ptx = k.ptx(x, nt.partition(np.zeros_like(x), 16))          # compiles the same snapshot
    assert "0f40400000" in ptx and "0f40A00000" not in ptx      # 3.0, not 5.0
    x64 = np.arange(64, dtype=np.float64)
    np.testing.assert_array_equal(launch(k, x64), 5 * x64)      # a new specialization: new value


def reads_globals():
    return TABLE, ARRAY, CFG.SCALE


def test_snapshot_copies_are_independent_of_later_mutation(monkeypatch):
    monkeypatch.setattr(THIS, "TABLE", [1.0, [2.0, 3.0]])
    monkeypatch.setattr(THIS, "ARRAY", np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2])
    snap = frozen.snapshot(reads_globals)
    before = snap.digest
    TABLE[1].append(4.0)
    ARRAY[0, 0] = 99.0
    monkeypatch.setattr(CFG, "SCALE", 7.0)
    table, array, scale = snap.fn()
    assert table == [1.0, [2.0, 3.0]] and scale == 2.0
    np.testing.assert_array_equal(array, [[0.0, 2.0], [3.0, 5.0]])
    assert array.strides == ARRAY.strides and not array.flags.c_contiguous   # layout kept
    frozen_cfg = snap.fn.__globals__["CFG"]
    assert frozen_cfg is not CFG and not hasattr(frozen_cfg, "UNREAD")
    assert snap.fn.__globals__["np"] is np                     # library modules stay live
    assert frozen.snapshot(reads_globals).digest != before     # the new values, a new digest
    assert frozen.snapshot(snap.fn).digest == before           # the snapshot digests as taken


def test_a_snapshot_keeps_the_function_s_identity_for_numba_and_messages():
    k = make_global_flag_kernel()
    snap = frozen.snapshot(k.fn)
    for attr in ("__code__", "__name__", "__qualname__", "__module__", "__defaults__",
                 "__annotations__", "__doc__"):
        assert getattr(snap.fn, attr) == getattr(k.fn, attr), attr
    assert snap.fn is not k.fn and snap.fn.__globals__ is not k.fn.__globals__


def test_the_digest_covers_what_the_code_reads_and_only_that(monkeypatch):
    def kernel_like():
        return CFG.SCALE, Mode.B, np.float32(1.5), (1, "a", None)

    base = frozen.snapshot(kernel_like)
    assert base.digest and base.uncovered is None
    assert frozen.snapshot(kernel_like).digest == base.digest
    monkeypatch.setattr(CFG, "UNREAD", 1)                      # not read: same digest
    assert frozen.snapshot(kernel_like).digest == base.digest
    monkeypatch.setattr(CFG, "SCALE", 2.5)
    assert frozen.snapshot(kernel_like).digest != base.digest


@pytest.mark.parametrize("value, fragment", [
    (FakeDeviceArray(np.zeros(4, np.float32)), "holds a device pointer"),
    (object(), "an object of type builtins.object"),
    (types.SimpleNamespace(a=1), "an object of type types.SimpleNamespace"),
])
def test_values_the_digest_cannot_cover_give_no_digest(value, fragment):
    def f():
        return value

    snap = frozen.snapshot(f)
    assert snap.digest is None
    assert fragment in snap.uncovered and "closure variable 'value'" in snap.uncovered
    assert snap.fn() is value                                  # still runnable


def test_a_user_module_used_whole_gives_no_digest():
    def f():
        return CFG

    snap = frozen.snapshot(f)
    assert snap.digest is None and "other than through attribute reads" in snap.uncovered
    copy = snap.fn()             # a frozen copy of the whole module, not the live one
    assert copy is not CFG and isinstance(copy, types.ModuleType)
    assert {k: v for k, v in vars(copy).items() if not k.startswith("__")} == \
        {k: v for k, v in vars(CFG).items() if not k.startswith("__")}


def test_recursive_functions_and_self_referencing_containers_terminate():
    loop = [1.0]
    loop.append(loop)

    def helper(n):
        return helper(n - 1) if n else loop

    def f():
        return helper(2)

    snap = frozen.snapshot(f)
    assert snap.digest is not None
    # a helper function is frozen too (typing/helpers.py inlines it): a copy over the same
    # code whose own closure holds the copy, so the recursion ends where it did
    copy = snap.fn.__closure__[0].cell_contents
    assert copy is not helper and copy.__code__ is helper.__code__
    assert copy.__closure__[0].cell_contents is copy


def test_an_exec_defined_function_gives_no_digest():
    ns = {}
    exec("def f(x):\n    return x\n", ns)
    snap = frozen.snapshot(ns["f"])
    assert snap.digest is None and "no source file" in snap.uncovered


def test_numba_compiles_a_snapshot_exactly_like_the_original(monkeypatch):
    """The same PTX, but for the unique id Numba gives each compiled function's symbols."""
    import re

    from numba_tile.compiler import compile_kernel
    from numba_tile.runtime.launch_checks import bind_arrays

    monkeypatch.setattr(CFG, "SCALE", 3.0)
    s = 1.5

    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        t = nt.load_like(x, z) * CFG.SCALE + s
        if FLAG:
            t = t * 7.0
        nt.store(z, t)

    x = np.zeros(64, np.float32)
    values = k._bind([x, nt.partition(x.copy(), 16), 16], {})
    spec = k._signature(bind_arrays("k", k._specs(values), values, allow_host=None,
                                    call_site=None))

    def ptx(fn):
        ck = compile_kernel(fn, spec.argtypes, num_warps=4, grid_param=spec.grid_param)
        return re.sub(r"B\d+v\d+B", "B_v_B", ck.ptx)

    assert ptx(frozen.snapshot(k.fn).fn) == ptx(k.fn)


def test_a_user_module_shadowing_a_standard_library_name_is_walked(tmp_path):
    shadow = types.ModuleType("test")          # a local package named like the stdlib's `test`
    shadow.__file__ = str(tmp_path / "test" / "__init__.py")
    shadow.SCALE = 1.0

    def f():
        return shadow.SCALE

    first = frozen.snapshot(f)
    shadow.SCALE = 2.0
    assert frozen.snapshot(f).digest != first.digest
    assert first.fn() == 1.0


DEVICE_SCALE = 2.0
OVERLOAD_SCALE = 2.0


@cuda.jit(device=True)
def device_helper(a):
    return a * DEVICE_SCALE


def overloaded(a):
    return a


@overload(overloaded)
def _overloaded_impl(a):
    k = OVERLOAD_SCALE
    return lambda a: a * k


def typed_elsewhere(a):
    return a


@type_callable(typed_elsewhere)
def _typed_elsewhere_typer(context):
    return lambda a: a


@pytest.mark.parametrize("name, helper", [("DEVICE_SCALE", device_helper),
                                          ("OVERLOAD_SCALE", overloaded)])
def test_a_global_of_a_reached_device_function_or_overload_changes_the_digest(monkeypatch, name,
                                                                              helper):
    def f():
        return helper

    first = frozen.snapshot(f).digest
    assert first is not None
    monkeypatch.setattr(THIS, name, 3.0)
    assert frozen.snapshot(f).digest != first


def test_a_function_typed_by_a_template_the_digest_cannot_see_gives_no_digest():
    def f():
        return typed_elsewhere

    snap = frozen.snapshot(f)
    assert snap.digest is None and "registered template" in snap.uncovered


def test_a_refused_specialization_is_checked_again_with_the_values_of_the_retry(monkeypatch,
                                                                              tmp_path):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(THIS, "FLAG", True)
    k = make_global_flag_kernel()
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(errors.StoreToReadOnlyError):
        launch(k, x)
    monkeypatch.setattr(THIS, "FLAG", False)          # the user fixes the global and retries
    np.testing.assert_array_equal(launch(k, x), 2 * x)
    monkeypatch.setattr(THIS, "FLAG", True)
    # the compiler lowers the snapshot the interpreter checked (FLAG=False): accepted
    assert ".entry" in k.ptx(x, nt.partition(np.zeros_like(x), 16), cc=(8, 0))
    fresh = make_global_flag_kernel()
    with pytest.raises(errors.StoreToReadOnlyError):
        fresh.ptx(x, nt.partition(np.zeros_like(x), 16), cc=(8, 0))
    monkeypatch.setattr(THIS, "FLAG", False)
    assert ".entry" in fresh.ptx(x, nt.partition(np.zeros_like(x), 16), cc=(8, 0))


def test_an_import_in_the_body_and_a_linking_device_function_give_no_digest(tmp_path):
    def imports():
        import tile_test_user_module  # noqa: F401 - never run: only its bytecode is read

    snap = frozen.snapshot(imports)
    assert snap.digest is None and "imports module 'tile_test_user_module'" in snap.uncovered

    linking = cuda.jit(device=True, link=[str(tmp_path / "helper.cu")])(lambda a: a)

    def calls():
        return linking

    snap = frozen.snapshot(calls)
    assert snap.digest is None and "linking" in snap.uncovered


# ---------------------------------------------------------- values whose truth can change

class ShiftyFlag(int):
    """An int whose truth value is a class switch: Numba folds it by its value."""
    armed = False

    def __bool__(self):
        return ShiftyFlag.armed


SHIFTY = ShiftyFlag(0)


@nt.jit
def shifty_global(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    if SHIFTY:
        nt.store(z, t * 0.0 + 666.0, (1,))     # another block's tile: refused where checked
    else:
        nt.store(z, t)


@nt.jit
def shifty_constant(x, z: nt.Partition["B"], C: nt.Constant, B: nt.Constant):
    t = nt.load_like(x, z)
    if C:
        nt.store(z, t * 0.0 + 666.0, (1,))
    else:
        nt.store(z, t)


def test_an_int_subclass_global_runs_by_its_value_in_the_interpreter(monkeypatch):
    monkeypatch.setattr(ShiftyFlag, "armed", False)
    x, z = np.random.default_rng().standard_normal(256).astype(np.float32), np.zeros(256,
                                                                                    np.float32)
    shifty_global(x, nt.partition(z, 128), 128, interpret=True)
    np.testing.assert_array_equal(z, x)
    monkeypatch.setattr(ShiftyFlag, "armed", True)       # its __bool__ now says True
    z[:] = 0
    shifty_global(x, nt.partition(z, 128), 128, interpret=True)
    np.testing.assert_array_equal(z, x)                    # the value 0 decided, as when checked


def test_an_int_subclass_constant_is_checked_and_run_by_its_value(monkeypatch):
    """Flag(1) whose __bool__ says False: Numba sees the value 1, so the branch is checked
    (and refused), never pruned by the subclass's truth and run later."""
    monkeypatch.setattr(ShiftyFlag, "armed", False)
    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    with pytest.raises(errors.ForeignTileStoreError):
        shifty_constant(x, nt.partition(z, 128), ShiftyFlag(1), 128, interpret=True)
    assert not z.any()


def test_a_user_module_used_as_a_value_is_frozen_whole(tmp_path, monkeypatch):
    mod = types.ModuleType("frozen_cfg_as_value")
    mod.SCALE = 2.0
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    glb = {"nt": nt, "cfg": mod}
    exec(textwrap.dedent("""
        def k(x, z: nt.Partition["B"], B: nt.Constant):
            m = cfg
            nt.store(z, nt.load_like(x, z) * m.SCALE)
    """), glb)
    k = nt.jit(glb["k"])
    x, z = np.ones(64, np.float32), np.zeros(64, np.float32)
    k(x, nt.partition(z, 16), 16, interpret=True)
    mod.SCALE = 5.0
    k(x, nt.partition(z, 16), 16, interpret=True)
    np.testing.assert_array_equal(z, 2.0)                # the checked value, not the live one


class HookedEnum(enum.IntEnum):
    """An IntEnum whose own __add__ would run, in the interpreter, instead of the integer
    add Numba compiled."""
    A = 2

    def __add__(self, other):
        HOOK_CALLS.append("add")
        return 100


class HookedFloat32(np.float32):
    def __mul__(self, other):
        HOOK_CALLS.append("mul")
        return np.float32(7)


HOOK_CALLS: list = []
HOOKED_E = HookedEnum.A
HOOKED_F = HookedFloat32(2.0)


@nt.jit
def hooked_scalars(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * HOOKED_F + (HOOKED_E + 1))


def test_scalars_with_their_own_operators_run_as_their_values_in_the_interpreter():
    HOOK_CALLS.clear()
    rng = np.random.default_rng()
    x, z = rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32)
    hooked_scalars(x, nt.partition(z, 16), 16, interpret=True)
    assert HOOK_CALLS == []
    np.testing.assert_allclose(z, x.astype(np.float64) * 2.0 + 3, rtol=1e-6)
    assert frozen.exact_scalar(HookedEnum.A) == 2 and type(frozen.exact_scalar(HookedEnum.A)) is int
    assert type(frozen.exact_scalar(HOOKED_F)) is np.float32
