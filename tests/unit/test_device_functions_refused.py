"""What a device function applied to tiles may not do: its typed
body is checked like kernel code, so it reaches no memory, reads no thread index, raises
nothing and does not recurse; refused before any launch, naming the function."""

import math

import numpy as np
import pytest
from numba import cuda

import numba_tile as nt
from numba_tile.errors import ClosedWorldError, TileTypingError, UnanalyzedCallError

GLOBAL_TABLE = np.arange(16, dtype=np.float32)


@cuda.jit(device=True)
def reads_thread_index(x):
    return x + cuda.threadIdx.x


@cuda.jit(device=True)
def uses_local_array(x):
    a = cuda.local.array(4, np.float32)
    a[0] = x
    return a[0]


@cuda.jit(device=True)
def uses_shared_memory(x):
    s = cuda.shared.array(32, np.float32)
    s[0] = x
    return s[0]


@cuda.jit(device=True)
def syncs(x):
    cuda.syncthreads()
    return x


@cuda.jit(device=True)
def reads_a_global_array(x):
    return x + GLOBAL_TABLE[3]


@cuda.jit(device=True)
def raises(x):
    if x < 0:
        raise ValueError("negative")
    return x


@cuda.jit(device=True)
def calls_one_that_raises(x):
    # (no assert statement: pytest rewrites those in test modules)
    return raises(x) + 1


@cuda.jit(device=True)
def returns_a_pair(x):
    return x, x


@cuda.jit(device=True)
def calls_a_bad_one(x):
    return reads_thread_index(x) * 2


@cuda.jit(device=True)
def fine(x):
    return math.sqrt(abs(x))


def _kernel_of(dev):
    @nt.jit
    def kern(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.astype(dev(nt.load_like(x, z)), nt.float32))
    return kern


def _launch(kern):
    x = np.random.default_rng().standard_normal(300).astype(np.float32)
    z = np.zeros(300, np.float32)
    kern(x, nt.partition(z, 128), B=128, interpret=True)
    return x, z


@pytest.mark.parametrize("dev, what", [
    (reads_thread_index, "SIMT"),
    (uses_local_array, "array|SIMT"),
    (uses_shared_memory, "SIMT"),
    (syncs, "SIMT"),
    (reads_a_global_array, "array"),
    (calls_a_bad_one, "SIMT"),
], ids=lambda v: getattr(getattr(v, "py_func", None), "__name__", str(v)))
def test_device_functions_that_reach_memory_or_threads_are_refused(dev, what):
    with pytest.raises(ClosedWorldError, match=what) as info:
        _launch(_kernel_of(dev))
    assert "device function" in str(info.value)


@pytest.mark.parametrize("dev", [raises, calls_one_that_raises], ids=["raise", "nested"])
def test_a_device_function_that_may_raise_is_refused(dev):
    with pytest.raises(ClosedWorldError, match="may raise an exception"):
        _launch(_kernel_of(dev))


def test_a_device_function_returning_a_tuple_is_refused():
    with pytest.raises(TileTypingError, match="must return a number or a bool"):
        _launch(_kernel_of(returns_a_pair))


def test_keyword_arguments_are_refused_at_the_call():
    @nt.jit
    def kern(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.astype(fine(x=nt.load_like(x, z)), nt.float32))
    with pytest.raises(TileTypingError, match="by position"):
        _launch(kern)


def test_a_tensor_argument_is_refused():
    @nt.jit
    def kern(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.astype(fine(x), nt.float32))
    with pytest.raises(UnanalyzedCallError, match="parameter.*'x' passed to device function"):
        _launch(kern)


def test_a_device_function_that_passes_runs():
    x, z = _launch(_kernel_of(fine))
    np.testing.assert_allclose(z, np.sqrt(np.abs(x.astype(np.float64))), rtol=1e-6)


def test_a_device_function_is_still_refused_in_a_kernel_without_tiles_for_it():
    # a scalar call goes through the same check
    @nt.jit
    def kern(x, z: nt.Partition["B"], s, B: nt.Constant):
        nt.store(z, nt.load_like(x, z) * reads_thread_index(s))
    with pytest.raises(ClosedWorldError, match="SIMT"):
        x = np.ones(128, np.float32)
        kern(x, nt.partition(np.zeros(128, np.float32), 128), 2.0, B=128, interpret=True)
