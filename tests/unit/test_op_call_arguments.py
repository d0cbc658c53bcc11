"""A numba_tile op called with arguments that do not bind to its signature says so.

Every public op (each op of the registry whose stub is a public attribute of ``numba_tile``)
called without its required arguments is refused with a TileTypingError naming the kernel, the
op and each missing argument (``sum() missing required argument 'axis'``), at the user's line;
an unknown keyword and too many positional arguments likewise. Before, the op's template
returned "no match" and the report read "No implementation of function ..." with a hint that
the function does not take tiles.
"""

import importlib.util
import inspect
import sys
import uuid

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import _registry
from numba_tile.errors import TileTypingError


def _public_ops():
    out = []
    for name, d in sorted(_registry.OPS.items()):
        if d.stub is not None and not name.startswith("_") and getattr(nt, name, None) is d.stub:
            required = [p.name for p in d.pysig.parameters.values()
                        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL,
                                                                   p.VAR_KEYWORD)]
            out.append((name, required))
    return out


PUBLIC_OPS = _public_ops()
WITH_REQUIRED = [(n, r) for n, r in PUBLIC_OPS if r]


def test_every_op_in_all_is_covered():
    covered = {n for n, _ in PUBLIC_OPS}
    in_all = {n for n in nt.__all__ if n in _registry.OPS}
    assert in_all <= covered
    assert {"sum", "max", "min", "load", "mma", "where", "atomic_add"} <= covered


def _module(tmp_path_factory, source):
    directory = tmp_path_factory.mktemp("op_calls")
    name = f"op_calls_{uuid.uuid4().hex}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, str(path)


@pytest.fixture(scope="module")
def no_argument_kernels(tmp_path_factory):
    """One kernel per op with required arguments, calling it with none, on a known line."""
    lines = ["import numba_tile as nt", ""]
    where = {}
    for name, _required in WITH_REQUIRED:
        lines += ["", f"def k_{name}(x, z: nt.Partition['B'], B: nt.Constant):"]
        lines.append(f"    nt.{name}()")
        where[name] = len(lines)
        lines.append("    nt.store(z, nt.load_like(x, z))")
    module, path = _module(tmp_path_factory, "\n".join(lines) + "\n")
    return module, path, where


def _launch(fn, unchecked=False):
    n = 64
    x = np.random.default_rng().standard_normal(n)
    kernel = nt.jit(unchecked=unchecked)(fn)
    kernel(x, nt.partition(np.zeros(n), n), n, interpret=True, unchecked=unchecked)


@pytest.mark.parametrize("name,required", WITH_REQUIRED, ids=[n for n, _ in WITH_REQUIRED])
def test_an_op_called_without_its_required_arguments_names_them(no_argument_kernels, name,
                                                                 required):
    module, path, where = no_argument_kernels
    with pytest.raises(TileTypingError) as info:
        _launch(getattr(module, f"k_{name}"), unchecked=_registry.OPS[name].unchecked)
    err = info.value
    s = "s" if len(required) > 1 else ""
    names = ", ".join(repr(r) for r in required)
    assert err.message.startswith(f"kernel 'k_{name}': {name}() missing required argument{s} "
                                  f"{names}: it takes ("), err.message
    assert "No implementation" not in err.message and "hint" not in err.message
    assert (err.filename, err.lineno) == (path, where[name])


REDUCTIONS = ["sum", "prod", "max", "min", "argmax", "argmin", "cumsum"]


@pytest.fixture(scope="module")
def reduction_kernels(tmp_path_factory):
    lines = ["import numba_tile as nt", ""]
    where = {}
    for name in REDUCTIONS:
        lines += ["", f"def k_{name}(x, z: nt.Partition['B'], B: nt.Constant):"]
        lines.append(f"    t = nt.{name}(nt.load_like(x, z))")
        where[name] = len(lines)
        lines.append("    nt.store(z, nt.load_like(x, z))")
    module, path = _module(tmp_path_factory, "\n".join(lines) + "\n")
    return module, path, where


@pytest.mark.parametrize("name", REDUCTIONS)
def test_a_reduction_without_its_axis_says_the_axis_is_missing(reduction_kernels, name):
    module, path, where = reduction_kernels
    with pytest.raises(TileTypingError) as info:
        _launch(getattr(module, f"k_{name}"))
    err = info.value
    params = ", ".join(str(p) for p in inspect.signature(getattr(nt, name)).parameters.values())
    assert err.message == (f"kernel 'k_{name}': {name}() missing required argument 'axis': it "
                           f"takes ({params})")
    assert (err.filename, err.lineno) == (path, where[name])


def k_unknown_keyword(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.exp(nt.load_like(x, z), out=1))  # UNKNOWN


def k_too_many(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.where(x, x, x, x))  # TOO_MANY


def k_twice(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.sum(nt.load_like(x, z), 0, axis=0))  # TWICE


def _line(marker):
    with open(__file__) as f:
        return next(i for i, s in enumerate(f, 1) if s.rstrip().endswith(f"# {marker}"))


@pytest.mark.parametrize("fn,marker,message", [
    (k_unknown_keyword, "UNKNOWN", "kernel 'k_unknown_keyword': exp() has no argument 'out'"),
    (k_too_many, "TOO_MANY", "kernel 'k_too_many': where() takes at most 3 positional "
                             "arguments (cond, x, y), got 4"),
    (k_twice, "TWICE", "kernel 'k_twice': sum() got argument 'axis' twice (by position and by "
                       "keyword)")])
def test_other_calls_that_do_not_bind_say_why(fn, marker, message):
    with pytest.raises(TileTypingError) as info:
        _launch(fn)
    assert info.value.message == message
    assert (info.value.filename, info.value.lineno) == (__file__, _line(marker))


def test_a_call_that_binds_still_types_and_runs():
    @nt.jit(interpret=True)
    def row_sums(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) + nt.sum(nt.load_like(x, z), axis=0))
    x = np.random.default_rng().standard_normal(64)
    z = np.zeros(64)
    row_sums(x, nt.partition(z, 64), 64)
    np.testing.assert_allclose(z, x + x.sum(), rtol=1e-12)
