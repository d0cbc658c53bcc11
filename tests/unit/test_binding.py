"""The generated ``__call__`` of kernels with constants or defaulted parameters
(``numba_tile/binding.py``): the values it hands the last plan agree with the generic binding
on every call shape, anything else takes the generic path with the same arguments (and its
errors), and kernels it cannot serve keep the generic ``__call__``."""

import inspect
import itertools

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import binding
from numba_tile.errors import TileArgumentError
from numba_tile.kernel import Kernel
from tests.unit.test_launch_plans import _dev, fake  # noqa: F401 - fixture


@nt.jit
def kdef(x, z: nt.Partition["B"], B: nt.Constant = 256, a=1.0, kw=2.0):
    nt.store(z, nt.load_like(x, z) * a + kw)


@nt.jit
def kreq(x, y, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z) * C)


class RecordingPlan:
    """A last plan that records what it is handed and launches when the values have the
    kernel's length (a generic path's failed binding hands it ``()``)."""

    def __init__(self, n):
        self.n, self.seen = n, []

    def run(self, values, handle, on_conflict):
        self.seen.append(tuple(values))
        return "launched" if len(values) == self.n else None


def _generic(k, args, kwargs):
    try:
        return tuple(k._bind_values(args, kwargs))
    except TileArgumentError as exc:
        return exc


@pytest.mark.parametrize("kern", [kdef, kreq], ids=["defaults", "required constants"])
def test_the_generated_call_binds_as_the_generic_binding_on_every_call_shape(kern, monkeypatch):
    assert type(kern) is not Kernel and isinstance(kern, Kernel)
    names = [p.name for p in kern.params] + ["nope"]
    vals = {n: object() for n in names}
    n = len(kern.params)
    slots = [p.name for p in kern.params if p.role == "constant" or p.default is not
             inspect.Parameter.empty]
    checked = 0
    for npos in range(0, n + 2):
        args = tuple(object() for _ in range(npos))
        for r in range(0, 4):
            for combo in itertools.permutations(names, r):
                kwargs = {m: vals[m] for m in combo}
                # the generic call sees the keywords the slots took after the others (in
                # parameter order): of two wrong keywords, it names the first of those
                order = [m for m in combo if m not in slots] + [m for m in slots if m in combo]
                want = _generic(kern, args, {m: kwargs[m] for m in order})
                plan = RecordingPlan(n)
                kern._last_plan = plan
                if isinstance(want, TileArgumentError):
                    with pytest.raises(TileArgumentError) as got:
                        kern(*args, **kwargs)
                    assert got.value.message == want.message, (npos, combo)
                    assert all(len(v) != n for v in plan.seen)
                else:
                    assert kern(*args, **kwargs) == "launched"
                    assert plan.seen[-1] == want, (npos, combo)
                checked += 1
    kern._last_plan = None
    assert checked > 100


def test_positional_arrays_and_keyword_constants_skip_the_generic_binder(monkeypatch):
    """The calls the generated ``__call__`` exists for never reach ``_fast_values``."""
    def boom(*a):
        raise AssertionError("the generic binder ran")
    monkeypatch.setattr(kreq, "_fast_values", boom)
    x, y, z = object(), object(), object()
    plan = kreq._last_plan = RecordingPlan(5)
    try:
        assert kreq(x, y, z, B=4, C=5) == "launched"
        assert kreq(x, y, z, C=5, B=4) == "launched"
        assert kreq(x, y, z, 4, C=5) == "launched"
        assert kreq(x, y, z, 4, 5) == "launched"
        assert plan.seen == [(x, y, z, 4, 5)] * 4
        plan = kdef._last_plan = RecordingPlan(5)
        monkeypatch.setattr(kdef, "_fast_values", boom)
        assert kdef(x, z) == "launched"
        assert kdef(x, z, a=3.0) == "launched"
        assert plan.seen == [(x, z, 256, 1.0, 2.0), (x, z, 256, 3.0, 2.0)]
    finally:
        kreq._last_plan = kdef._last_plan = None


def test_a_constant_given_by_position_and_by_keyword_is_refused_by_name():
    x, y, z = object(), object(), object()
    kreq._last_plan = RecordingPlan(5)
    try:
        with pytest.raises(TileArgumentError, match="argument 'B' given twice"):
            kreq(x, y, z, 4, B=4, C=5)
        with pytest.raises(TileArgumentError, match="missing argument 'C'"):
            kreq(x, y, z, B=4)
    finally:
        kreq._last_plan = None


def test_launch_options_still_reach_the_generic_path(monkeypatch):
    """interpret=True, grid=, unchecked= and a bad on_conflict are the generic call's to judge."""
    x, z = _dev(512), _dev(512)
    with pytest.raises(TileArgumentError, match="on_conflict"):
        kdef(x, nt.partition(z, 256), on_conflict="sometimes")
    host = np.arange(512, dtype=np.float32)
    out = np.zeros(512, np.float32)
    kdef(host, nt.partition(out, 256), a=2.0, interpret=True)
    np.testing.assert_array_equal(out, host * 2.0 + 2.0)


def test_a_real_launch_through_the_generated_call(fake):
    x, z = _dev(512), _dev(512)
    kdef(x, nt.partition(z, 256), a=2.0)            # first launch: the slow path, a plan
    plan = kdef._last_plan
    assert plan is not None
    kdef(x, nt.partition(z, 256), a=2.0)
    kdef(x, nt.partition(z, 256), B=256, a=2.0)
    assert kdef._last_plan is plan


@pytest.mark.parametrize("name", ["_nt_self", "_nt_kw", "_nt_M"])
def test_kernels_with_parameters_named_like_the_generated_code_keep_the_generic_call(name):
    ns = {"nt": nt}
    exec(f"def k(x, z, {name}=5):\n    pass\n", ns)
    kern = nt.jit(ns["k"])
    assert type(kern) is Kernel
    x, z = object(), object()
    kern._last_plan = RecordingPlan(3)
    assert kern(x, z, **{name: 7}) == "launched" and kern._last_plan.seen[-1] == (x, z, 7)


@pytest.mark.parametrize("name", ["stream", "grid", "unchecked", "interpret", "on_conflict"])
def test_parameters_named_like_launch_options_are_refused_at_definition(name):
    ns = {"nt": nt}
    exec(f"def k(x, z, {name}=5):\n    pass\n", ns)
    with pytest.raises(TileArgumentError, match=f"parameter '{name}' is named like a launch "
                                                f"option") as got:
        nt.jit(ns["k"])
    assert got.value.lineno == 1


def test_a_parameter_named_self_binds_by_keyword():
    x, z = object(), object()
    ns = {"nt": nt}
    exec("def k(x, z, self: nt.Constant = 5):\n    pass\n", ns)
    kern = nt.jit(ns["k"])
    kern._last_plan = RecordingPlan(3)
    assert kern(x, z, self=7) == "launched" and kern._last_plan.seen[-1] == (x, z, 7)
    generic = Kernel.__call__
    kern._last_plan = RecordingPlan(3)
    assert generic(kern, x, z, self=8) == "launched" and kern._last_plan.seen[-1] == (x, z, 8)


def test_a_subclass_of_kernel_keeps_its_class():
    class Audited(Kernel):
        pass

    def body(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z))
    assert type(Audited(body)) is Audited


@pytest.mark.parametrize("name", ["M", "self", "args", "kwargs", "plan", "D", "k", "v"])
def test_parameters_named_like_plain_identifiers_bind(name):
    ns = {"nt": nt}
    exec(f"def k(x, z, {name}: nt.Constant = 5):\n    pass\n", ns)
    kern = nt.jit(ns["k"])
    assert type(kern) is not Kernel
    x, z = object(), object()
    kern._last_plan = RecordingPlan(3)
    assert kern(x, z, **{name: 7}) == "launched"
    assert kern(x, z) == "launched"
    assert kern._last_plan.seen == [(x, z, 7), (x, z, 5)]


def test_the_kernel_still_looks_like_its_function():
    assert str(inspect.signature(kreq)) == str(inspect.signature(kreq.fn))
    assert type(kreq).__name__ == "Kernel" and type(kreq).__module__ == "numba_tile.kernel"
    assert type(kreq).__call__.__doc__ == Kernel.__call__.__doc__
    variant = kreq.with_options(num_warps=8)
    assert type(variant) is type(kreq) and variant.num_warps == 8


def test_a_kernel_without_constants_keeps_the_generic_call():
    @nt.jit
    def plain(x, z: nt.Partition[256]):
        nt.store(z, nt.load_like(x, z))
    assert type(plain) is Kernel
    assert binding.call_class(Kernel, plain.params, "plain", None) is None


def test_an_error_through_the_generated_call_points_at_the_callers_line():
    x, y, z = object(), object(), object()
    with pytest.raises(TileArgumentError) as got:
        kreq(x, y, z, 4, B=4, C=5)                   # this line
    assert got.value.filename == __file__
    import traceback
    line = [f for f in traceback.extract_tb(got.tb) if f.filename == __file__][0]
    assert got.value.lineno == line.lineno
