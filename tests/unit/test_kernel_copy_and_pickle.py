"""Kernel objects copy and pickle as functions do (``numba_tile/references.py``).

``copy.copy`` and ``copy.deepcopy`` of a kernel (or an autotuned kernel) return it: its
function and options are fixed, so it is its own copy, and a structure holding kernels
deep-copies. ``pickle`` records a kernel by reference, its module and name, looked up again on
loading (nothing of its code or source is serialized); a kernel that is not the module-level
object of its name is refused with a TileArgumentError (a TypeError) saying what to do.
"""

import copy
import importlib
import pickle
import sys
import uuid

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError


@nt.jit(interpret=True)
def shifted(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + 1.5)


@nt.autotune(configs=[nt.Config({"B": 32}), nt.Config({"B": 64}, num_warps=2)], reps=1,
             warmup=0)
@nt.jit(interpret=True)
def tuned(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 3.0)


def _check_runs(kernel, op):
    x = np.random.default_rng().standard_normal(100)
    z = np.zeros(100)
    if isinstance(kernel, nt.Kernel):
        kernel(x, nt.partition(z, 64), 64)
    else:
        kernel(x, z)
    np.testing.assert_array_equal(z, op(x))


@pytest.mark.parametrize("kernel", [shifted, tuned, shifted.with_options(num_warps=8)])
def test_copies_of_a_kernel_are_the_kernel(kernel):
    assert copy.copy(kernel) is kernel and copy.deepcopy(kernel) is kernel
    holder = {"kernel": kernel, "data": [np.arange(3)]}
    deep = copy.deepcopy(holder)
    assert deep["kernel"] is kernel and deep["data"][0] is not holder["data"][0]


@pytest.mark.parametrize("kernel,op", [(shifted, lambda x: x + 1.5), (tuned, lambda x: x * 3.0)])
def test_a_module_level_kernel_pickles_by_reference(kernel, op):
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(kernel, protocol)
        assert pickle.loads(data) is kernel
        assert b"nt.load_like" not in data and b"store" not in data      # no code, no source
    _check_runs(pickle.loads(pickle.dumps(kernel)), op)


MODULE = '''
import numba_tile as nt


@nt.jit(interpret=True)
def offset(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) - 4.0)
'''


def test_loading_imports_the_kernels_module_and_gets_the_kernel_it_defines(tmp_path,
                                                                          monkeypatch):
    name = f"pickled_kernels_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    data = pickle.dumps(module.offset)
    del sys.modules[name]                          # as in another process
    loaded = pickle.loads(data)
    assert loaded is sys.modules[name].offset and loaded is not module.offset
    _check_runs(loaded, lambda x: x - 4.0)


def _local_kernel():
    @nt.jit(interpret=True)
    def local(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z))
    return local


@pytest.mark.parametrize("kernel,qualname,why", [
    (_local_kernel(), "_local_kernel.<locals>.local", "it is defined inside a function"),
    (shifted.with_options(num_warps=8), "shifted", f"{__name__}.shifted is another object"),
    (tuned.kernel, "tuned", f"{__name__}.tuned is another object"),
    (nt.jit(shifted.fn), "shifted", f"{__name__}.shifted is another object")])
def test_a_kernel_that_is_not_its_module_level_name_is_refused(kernel, qualname, why):
    with pytest.raises(TypeError) as info:
        pickle.dumps(kernel)  # PICKLED
    err = info.value
    assert type(err) is TileArgumentError
    assert err.message.startswith(f"kernel '{qualname}' cannot be pickled: a numba_tile kernel "
                                  f"is pickled by reference")
    assert why in err.message and "define it at the top level of an importable module" \
        in err.message
    with open(__file__) as f:
        line = next(i for i, s in enumerate(f, 1) if s.rstrip().endswith("# PICKLED"))
    assert (err.filename, err.lineno) == (__file__, line)


def test_loading_a_name_that_is_no_longer_a_kernel_is_refused(monkeypatch):
    data = pickle.dumps(shifted)
    monkeypatch.setattr(sys.modules[__name__], "shifted", lambda *a: None)
    with pytest.raises(TileArgumentError, match=r"that name is now function, not a Kernel"):
        pickle.loads(data)
