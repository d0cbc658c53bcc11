"""The generated keyword binders of a kernel (kernel.py, ``_fast_values``): they agree with the
slow binding on every call shape, their cache key is not fooled by keyword order or count,
parameters named like the generated code bind, bad keyword calls are refused by name, and a
parameter named like a launch option is refused at the definition."""

import itertools

import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError
from tests.unit.test_launch_plans import _dev, fake  # noqa: F401 - fixture


@nt.jit
def kdef(x, z: nt.Partition["B"], B: nt.Constant = 256, a=1.0, kw=2.0):
    nt.store(z, nt.load_like(x, z) * a + kw)


def _bind_or_none(k, args, kwargs):
    try:
        return tuple(k._bind_values(args, kwargs))
    except TileArgumentError:
        return None


def test_generated_binders_agree_with_the_slow_binding_on_every_call_shape():
    names = [p.name for p in kdef.params] + ["nope", "stream2"]
    vals = {n: object() for n in names}
    kdef._kw_orders.clear()
    seen = 0
    for npos in range(0, 7):
        args = tuple(object() for _ in range(npos))
        for r in range(0, 4):
            for combo in itertools.permutations(names, r):
                kwargs = {n: vals[n] for n in combo}
                want = _bind_or_none(kdef, args, kwargs)
                got = kdef._fast_values(args, kwargs)
                assert (None if got is None else tuple(got)) == want, (npos, combo)
                seen += 1
    assert seen > 64 and len(kdef._kw_orders) <= 64      # past the cache: still right


def test_binder_key_is_not_fooled_by_keyword_order_or_count():
    x, z = object(), object()
    a1 = kdef._fast_values((x,), {"z": z, "a": 3.0})
    a2 = kdef._fast_values((x,), {"a": 3.0, "z": z})
    assert a1 == a2 == (x, z, 256, 3.0, 2.0)
    assert kdef._fast_values((x, z), {"a": 3.0}) == (x, z, 256, 3.0, 2.0)
    assert kdef._fast_values((x, z), {"z": z}) is None      # given twice
    assert kdef._fast_values((), {"z": z}) is None          # x missing
    assert kdef._fast_values((x, z, 1, 2, 3, 4), {}) is None


@pytest.mark.parametrize("name", ["a", "kw", "K0", "D0", "bind", "values", "stream_"])
def test_binders_for_parameters_named_like_the_generated_code(name):
    import inspect
    ns = {"nt": nt}
    src = (f"def k(x, z, {name}=5):\n    pass\n")
    exec(src, ns)
    kern = nt.jit(ns["k"])
    x, z = object(), object()
    assert kern._fast_values((x,), {"z": z, name: 7}) == (x, z, 7)
    assert kern._fast_values((x, z), {}) == (x, z, 5)
    assert kern._fast_values((x,), {name: 7}) is None
    assert inspect.signature(ns["k"])


def test_bad_keyword_calls_are_still_refused_by_name(fake):
    x, z = _dev(512), _dev(512)
    kdef(x, nt.partition(z, 256))
    kdef(x, z=nt.partition(z, 256), a=2.0)
    with pytest.raises(TileArgumentError, match="has no parameter 'q'"):
        kdef(x, nt.partition(z, 256), q=1)
    with pytest.raises(TileArgumentError, match="given twice"):
        kdef(x, nt.partition(z, 256), z=nt.partition(z, 256))
    with pytest.raises(TileArgumentError, match="missing argument 'z'"):
        kdef(x, a=1.0)
    with pytest.raises(TileArgumentError, match="takes 5 arguments"):
        kdef(x, nt.partition(z, 256), 256, 1.0, 2.0, 9)


def test_a_parameter_named_like_a_launch_option_is_refused_at_definition(fake):
    """A kernel parameter called ``stream`` (or like any launch option) is refused at the
    definition, naming the parameter: accepted, ``k(..., stream=v)`` would set the launch
    option, and a defaulted one (``unchecked=False``) would run with its default."""
    for name in ("stream", "interpret", "on_conflict", "grid", "unchecked"):
        ns = {"nt": nt}
        exec(f"def ks(x, z: nt.Partition['B'], {name}=1.0, B: nt.Constant = 256):\n"
             f"    nt.store(z, nt.load_like(x, z))\n", ns)
        with pytest.raises(TileArgumentError, match=f"parameter '{name}' is named like a "
                                                    f"launch option"):
            nt.jit(ns["ks"])
