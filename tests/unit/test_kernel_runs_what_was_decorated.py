"""A kernel object runs what was decorated: a group rewrite starts from the source read when the
kernel was decorated (``groups.capture_source``), never from the file as it is at the launch;
and a kernel's function, parameters and options, and an autotuned kernel's configuration, are
fixed once it is made (``numba_tile/options.py``)."""

from __future__ import annotations

import importlib.util
import sys
import uuid

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import FixedAttributeError, TileArgumentError, UncheckedLaunchError

MODULE = '''
import numba_tile as nt


@nt.jit
def shifted_sum(xs, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(xs[0], z, padding=0)
    for g in nt.static_range(1, len(xs)):
        t = t + nt.load_like(xs[g], z, padding=0)
    nt.store(z, t + 1.5)


def plain(xs, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(xs[0], z, padding=0) + 1.5)
'''


def _import(tmp_path, text):
    name = f"kmod_{uuid.uuid4().hex}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path


def _run(kernel, xs):
    z = np.zeros(xs[0].shape, np.float64)
    kernel(tuple(xs), nt.partition(z, 64), 64, interpret=True)
    return z


def test_a_group_rewrite_after_the_file_changed_runs_the_decorated_source(tmp_path):
    module, path = _import(tmp_path, MODULE)
    rng = np.random.default_rng()
    xs = [rng.standard_normal(100) for _ in range(3)]
    np.testing.assert_array_equal(_run(module.shifted_sum, xs[:1]), xs[0] + 1.5)
    path.write_text(MODULE.replace("t + 1.5", "t * 1000.0 - 7"))      # after the import
    z = _run(module.shifted_sum, xs)                                    # a new group length
    np.testing.assert_allclose(z, xs[0] + xs[1] + xs[2] + 1.5, rtol=1e-12)


def test_source_edited_before_the_decoration_is_refused_for_a_group(tmp_path):
    """The text read at the decoration is not the program of the function decorated: it is
    never rewritten and run in its place."""
    module, path = _import(tmp_path, MODULE)
    path.write_text(MODULE.replace("nt.load_like(xs[0], z, padding=0) + 1.5",
                                   "nt.load_like(xs[0], z, padding=0) - 99.0"))
    kernel = nt.jit(module.plain)
    xs = [np.ones(100)]
    with pytest.raises(TileArgumentError, match="does not compile to the function that was "
                                                "decorated"):
        _run(kernel, xs)


def test_replacing_the_functions_code_after_the_decoration_changes_nothing_it_runs():
    def scaled(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) * 3.0)
    k = nt.jit(scaled)
    rng = np.random.default_rng()
    x = rng.standard_normal(100)
    z = np.zeros(100)
    k(x, nt.partition(z, 64), 64, interpret=True)
    scaled.__code__ = _other_function.__code__           # the user's function, not the kernel's
    for tile in (64, 128):                                # the same and a new specialization
        z = np.zeros(100)
        k(x, nt.partition(z, tile), tile, interpret=True)
        np.testing.assert_array_equal(z, x * 3.0)
        assert "0d4008000000000000" in k.ptx(x, nt.partition(np.zeros(100), tile), tile)  # 3.0


def test_kernel_fn_is_what_the_kernel_runs_after_the_function_changed():
    """``numba_tile.jit(...)(kernel.fn)``, the refusal's recipe for another ``unchecked`` or
    ``interpret``, decorates what the kernel runs, not the function as changed since; and
    changing ``kernel.fn`` changes nothing the kernel runs."""
    def scaled(x, z: nt.Partition["B"], B: nt.Constant, factor=3.0):
        nt.store(z, nt.load_like(x, z) * factor)
    k = nt.jit(scaled)
    scaled.__code__ = _plus_seven.__code__
    scaled.__defaults__ = (100.0,)
    fn = k.fn
    assert fn is not scaled and fn.__code__ is not scaled.__code__
    assert fn.__defaults__ == (3.0,)
    fn.__code__ = _plus_seven.__code__               # a copy: the kernel keeps its own
    fn.__defaults__ = (5.0,)
    rng = np.random.default_rng()
    x = rng.standard_normal(100)
    for kernel in (k, nt.jit(interpret=True)(k.fn), nt.jit(unchecked=True)(k.fn),
                   k.with_options(num_warps=8)):
        z = np.zeros(100)
        kernel(x, nt.partition(z, 64), 64, interpret=True, unchecked=kernel.unchecked)
        np.testing.assert_array_equal(z, x * 3.0)


def _plus_seven(x, z: nt.Partition["B"], B: nt.Constant, factor=0.0):
    nt.store(z, nt.load_like(x, z) + 7.0)


# ----------------------------------------------------------------------------- fixed options

@nt.jit
def copy(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@nt.jit(unchecked=True)
def unchecked_copy(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


def _other_function(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 2)


OTHER_VALUES = {"fn": _other_function, "params": (), "num_warps": 8, "num_stages": 3,
                "min_blocks_per_sm": 2, "unchecked": True, "interpret": True}


@pytest.mark.parametrize("name", sorted(OTHER_VALUES))
def test_a_kernels_function_parameters_and_options_cannot_be_assigned(name):
    k = nt.jit(copy.fn)
    before = getattr(k, name)
    with pytest.raises(AttributeError, match=f"kernel 'copy': '{name}' is fixed when the "
                                             f"kernel is made"):
        setattr(k, name, OTHER_VALUES[name])
    with pytest.raises(AttributeError, match="is fixed"):
        delattr(k, name)
    if name == "fn":       # a new copy of the function as decorated on each read
        assert k.fn.__code__ is before.__code__ and k.fn is not before
    else:
        assert getattr(k, name) is before
    x = np.random.default_rng().standard_normal(100)
    z = np.zeros(100)
    k(x, nt.partition(z, 64), 64, interpret=True)
    np.testing.assert_array_equal(z, x)


def test_the_refusal_names_the_way_to_another_option_at_the_users_line():
    with pytest.raises(FixedAttributeError, match=r"with_options\(num_warps=...\)") as info:
        copy.num_warps = 8  # ASSIGNED
    with open(__file__) as f:
        line = next(i for i, ln in enumerate(f, 1) if ln.rstrip().endswith("# ASSIGNED"))
    assert (info.value.filename, info.value.lineno) == (__file__, line)
    assert isinstance(info.value, AttributeError)
    with pytest.raises(AttributeError, match=r"numba_tile.jit\(unchecked=...\)\(kernel.fn\)"):
        copy.unchecked = True
    assert copy.with_options(num_warps=8).num_warps == 8 and copy.num_warps == 4


def test_an_unchecked_kernel_stays_unchecked_after_an_acknowledged_launch():
    x = np.random.default_rng().standard_normal(100)
    z = np.zeros(100)
    unchecked_copy(x, nt.partition(z, 64), 64, interpret=True, unchecked=True)
    with pytest.raises(AttributeError, match="'unchecked' is fixed"):
        unchecked_copy.unchecked = False
    with pytest.raises(UncheckedLaunchError):
        unchecked_copy(x, nt.partition(z, 64), 64, interpret=True)
    with pytest.raises(UncheckedLaunchError):
        unchecked_copy.with_options(num_warps=8)(x, nt.partition(z, 64), 64, interpret=True)


def test_with_options_gives_a_kernel_whose_options_are_fixed_too():
    k = copy.with_options(num_stages=2)
    with pytest.raises(AttributeError, match="'num_stages' is fixed"):
        k.num_stages = 1
    assert (k.num_stages, copy.num_stages) == (2, 1)


AUTOTUNED_VALUES = {"kernel": copy, "configs": (), "key": ("x",), "warmup": 0, "reps": 1,
                    "log": True, "compile_workers": 1}


@pytest.mark.parametrize("name", sorted(AUTOTUNED_VALUES))
def test_an_autotuned_kernels_definition_cannot_be_assigned(name):
    tuned = nt.autotune(configs=[nt.Config({"B": 64}), nt.Config({"B": 128})], key=["x"])(copy)
    before = getattr(tuned, name)
    with pytest.raises(AttributeError, match=f"autotune 'copy': '{name}' is fixed"):
        setattr(tuned, name, AUTOTUNED_VALUES[name])
    with pytest.raises(AttributeError, match="is fixed"):
        delattr(tuned, name)
    assert getattr(tuned, name) is before
    assert type(tuned.configs) is tuple
