"""The generated ``__call__`` of a kernel (``binding.py``): it binds Constant and defaulted
parameters as the generic binder does, for every call form, through partials, ``with_options``
copies and threads; it leaves the fast path for launch options; its errors point at the user's
line; parameters named ``self`` or like a launch option, and Kernel subclasses, keep working.

CPU only: a stand-in plan records what the call bound; the other kernels run in the interpreter.
"""

from __future__ import annotations

import functools
import itertools
import threading

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError
from numba_tile.kernel import Kernel

P = nt.Partition


class _FakePlan:
    """Stands in for a launch plan: records the values the call bound, in parameter order."""

    def __init__(self):
        self.got = []
        self.lock = threading.Lock()

    def run(self, values, handle, on_conflict):
        values = tuple(values)
        if not values:
            return None
        with self.lock:
            self.got.append(values)
        return ("launched", values)


@nt.jit
def k_mixed(x, B: nt.Constant, z: P["B"], s=1.0, C: nt.Constant = 4):
    nt.store(z, nt.load_like(x, z) * s + C)


@nt.jit
def k_posonly(x, z: P["B"], B: nt.Constant, /, s=2.0):
    nt.store(z, nt.load_like(x, z) * s)


@nt.jit
def k_mutable_default(x, z: P["B"], B: nt.Constant, s=2.0, tag=[1, 2]):   # noqa: B006
    nt.store(z, nt.load_like(x, z) * s)


@pytest.mark.parametrize("kern", [k_mixed, k_posonly, k_mutable_default])
def test_generated_call_binds_every_call_form_as_the_generic_binder(kern):
    """Every positional count and every ordered keyword sequence (duplicates, unknown names
    included): the values reaching the plan are the generic binder's, or the call is refused
    with TileArgumentError exactly where the generic binder refuses."""
    assert type(kern) is not Kernel           # the generated subclass
    plan = _FakePlan()
    kern._last_plan = plan
    try:
        names = [p.name for p in kern.params]
        for npos in range(len(names) + 2):
            pos = [object() for _ in range(npos)]
            rest = names[npos:] + names[:npos][:1] + ["nope"]
            for r in range(len(rest) + 1):
                for kws in itertools.permutations(rest, r):
                    kw = {q: object() for q in kws}
                    try:
                        expected = tuple(kern._bind_values(pos, kw))
                    except TileArgumentError:
                        expected = None
                    if expected is None:
                        with pytest.raises(TileArgumentError):
                            kern(*pos, **kw)
                    else:
                        assert kern(*pos, **kw) == ("launched", expected)
                        # the generic __call__ agrees
                        assert Kernel.__call__(kern, *pos, **kw) == ("launched", expected)
    finally:
        kern._last_plan = None


def test_generated_call_with_partial_with_options_and_threads():
    k2 = k_mixed.with_options(num_warps=8)
    assert type(k2) is type(k_mixed)
    plan = _FakePlan()
    k2._last_plan = plan
    p = functools.partial(k2, "x", 2, C=9)
    assert p("z") == ("launched", ("x", 2, "z", 1.0, 9))
    assert p("z", s=3.0) == ("launched", ("x", 2, "z", 3.0, 9))
    errors = []

    def worker(i):
        try:
            for j in range(200):
                r = k2(i, j, "z", C=i + j)
                assert r == ("launched", (i, j, "z", 1.0, i + j))
        except Exception as exc:          # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert k_mixed._last_plan is None      # the copy's plan is its own


@pytest.mark.parametrize("opts", [dict(interpret=True), dict(grid=3), dict(unchecked=None),
                                  dict(on_conflict="never"), dict(stream="s")])
def test_generated_call_leaves_the_fast_path_for_launch_options(opts):
    plan = _FakePlan()
    k_mixed._last_plan = plan
    try:
        x = np.ones(8, np.float32)
        z = np.zeros(8, np.float32)
        if opts.get("interpret"):
            k_mixed(x, 4, nt.partition(z, 4), s=2.0, C=1, **opts)
            np.testing.assert_array_equal(z, x * 2.0 + 1)
        else:
            with pytest.raises(TileArgumentError):
                k_mixed(x, 4, nt.partition(z, 4), s=2.0, C=1, **opts)
        assert not plan.got
    finally:
        k_mixed._last_plan = None


def test_generated_call_errors_point_at_the_users_line():
    rng = np.random.default_rng()
    x = rng.standard_normal(8).astype(np.float32)
    z = np.zeros(8, np.float32)
    import inspect
    here = inspect.currentframe()
    cases = [
        lambda: k_mixed(x, 5, nt.partition(z, 4), C=1, interpret=True),
        lambda: k_mixed(x, 4, nt.partition(z, 4), Q=1, interpret=True),
        lambda: k_mixed(x, 4, nt.partition(z, 4), s=1.0, stream="bad", interpret=True),
        lambda: functools.partial(k_mixed, x, B=4)(nt.partition(z, 4), interpret=True),
    ]
    first = here.f_lineno - 5
    for i, call in enumerate(cases):
        with pytest.raises(TileArgumentError) as info:
            call()
        assert info.value.filename == __file__
        assert info.value.lineno == first + i, (i, info.value.lineno)
    assert not z.any()
    k_mixed(x, 4, nt.partition(z, 4), s=2.0, C=1, interpret=True)
    np.testing.assert_array_equal(z, x * 2.0 + 1)


def test_generated_call_interpreted_values_match_numpy():
    rng = np.random.default_rng()
    for _ in range(3):
        x = rng.standard_normal(40).astype(np.float32)
        s, c = float(rng.standard_normal()), int(rng.integers(-5, 5))
        for call in (lambda z: k_mixed(x, 8, nt.partition(z, 8), s, c, interpret=True),
                     lambda z: k_mixed(x, 8, nt.partition(z, 8), C=c, s=s, interpret=True),
                     lambda z: k_mixed(x, B=8, z=nt.partition(z, 8), C=c, s=s,
                                       interpret=True),
                     lambda z: k_mixed(x, 8, z=nt.partition(z, 8), s=s, C=c, interpret=True)):
            z = np.zeros(40, np.float32)
            call(z)
            np.testing.assert_allclose(z, (x.astype(np.float64) * s + c).astype(np.float32),
                                       rtol=1e-5, atol=1e-5)


@nt.jit
def k_param_self(x, z: P["B"], self: nt.Constant, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + self)


def test_a_parameter_named_self_binds_by_keyword():
    x = np.random.default_rng().standard_normal(8).astype(np.float32)
    z = np.zeros(8, np.float32)
    try:
        k_param_self(x, nt.partition(z, 4), self=3, B=4, interpret=True)
    except TileArgumentError:
        return                                   # refused with numba_tile's error: fine
    np.testing.assert_array_equal(z, x + 3)


def test_a_parameter_named_like_a_launch_option_is_refused_or_bound():
    def body(x, z: P["B"], B: nt.Constant, unchecked: nt.Constant = False):
        nt.store(z, nt.load_like(x, z) + (1.0 if unchecked else 0.0))
    try:
        kern = nt.jit(body)
    except TileArgumentError:
        return                                   # refused at the definition: fine
    x = np.random.default_rng().standard_normal(8).astype(np.float32)
    z = np.zeros(8, np.float32)
    kern(x, nt.partition(z, 4), 4, unchecked=True, interpret=True)
    np.testing.assert_array_equal(z, x + 1.0)


def test_a_kernel_subclass_keeps_its_class():
    class Audited(Kernel):
        calls = 0

        def __call__(self, *args, **kwargs):
            type(self).calls += 1
            return super().__call__(*args, **kwargs)

    def body(x, z: P["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z))

    k = Audited(body)
    assert isinstance(k, Audited)
    x = np.ones(8, np.float32)
    z = np.zeros(8, np.float32)
    k(x, nt.partition(z, 4), B=4, interpret=True)
    assert Audited.calls == 1
