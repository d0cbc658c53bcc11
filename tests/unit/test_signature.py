"""Parameter roles read from annotations, including string annotations (``from __future__
import annotations``) that name a module alias only the decorating scope knows."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import errors
from numba_tile.signature import parse_params

RNG = np.random.default_rng()


def load_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


FACTORY = """
    from __future__ import annotations

    def make():
        import numba_tile as tl

        @tl.jit
        def k(x, z: tl.Partition["B"], B: tl.Constant):
            tl.store(z, tl.load_like(x, z) * 2.0)
        return k

    def make_with_options():
        import numba_tile as tl

        @tl.jit(num_warps=2)
        def k(x, z: tl.Partition[("B",)], B: tl.Constant):
            tl.store(z, tl.load_like(x, z) + 1.0)
        return k

    def make_without_decorator_scope():
        import numba_tile as tl

        def k(x, z: tl.Partition["B"], B: tl.Constant):
            tl.store(z, tl.load_like(x, z) - 1.0)
        return k
"""


@pytest.mark.parametrize("factory,op", [("make", lambda x: x * 2), ("make_with_options",
                                                                   lambda x: x + 1)])
def test_a_partition_under_postponed_annotations_with_a_local_alias(tmp_path, factory, op):
    mod = load_module(tmp_path, f"sig_{factory}", FACTORY)
    k = getattr(mod, factory)()
    assert [p.role for p in k.params] == ["array", "partition", "constant"]
    x, z = RNG.standard_normal(40).astype(np.float32), np.full(40, np.nan, np.float32)
    k(x, nt.partition(z, 16), 16, interpret=True)
    np.testing.assert_allclose(z, op(x.astype(np.float64)), rtol=1e-6)


def test_an_alias_nobody_can_resolve_is_read_from_its_syntax(tmp_path):
    mod = load_module(tmp_path, "sig_syntax", FACTORY)
    fn = mod.make_without_decorator_scope()
    params = parse_params(fn)           # no decorating scope: 'tl' cannot be evaluated
    assert [(p.role, p.declared) for p in params] == [
        ("array", None), ("partition", ("B",)), ("constant", None)]
    k = nt.Kernel(fn)
    x, z = RNG.standard_normal(40).astype(np.float32), np.full(40, np.nan, np.float32)
    k(x, nt.partition(z, 16), 16, interpret=True)
    np.testing.assert_allclose(z, x.astype(np.float64) - 1, rtol=1e-6)


def test_an_annotation_naming_a_role_that_cannot_be_read_is_an_error():
    def k(x, z: "tl.Partition[SIZE]"):  # noqa: F821 - SIZE is not literal, tl unknown
        pass

    with pytest.raises(errors.TileArgumentError) as e:
        nt.jit(k)
    msg = e.value.message
    assert "kernel 'test_an_annotation_naming_a_role_that_cannot_be_read_is_an_error" in msg
    assert "parameter 'z'" in msg and "'tl.Partition[SIZE]'" in msg and "NameError" in msg


def test_other_string_annotations_are_read_only_arrays():
    def k(x: "np.ndarray", z: "SomethingElse", B: "nt.Constant"):  # noqa: F821
        pass

    assert [p.role for p in parse_params(k)] == ["array", "array", "constant"]


def test_a_closure_variable_may_name_the_module():
    import numba_tile as alias

    def make():
        def k(x, z: "alias.Partition"):
            alias.store(z, alias.load_like(x, z))
        return k

    assert [p.role for p in parse_params(make())] == ["array", "partition"]
