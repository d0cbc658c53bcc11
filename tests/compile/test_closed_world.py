"""The closed world on the compile path: what unchecked kernels keep, and what the PTX of a
refused kernel would have contained (so the refusals are not about nothing)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_tile as nt
from numba_tile import errors
from numba_tile.runtime.fakes import FakeDeviceArray

RNG = np.random.default_rng()


@nt.jit(unchecked=True)
def simt_in_unchecked(x, out: nt.Mutable):
    i = cuda.threadIdx.x
    cuda.syncthreads()
    nt.atomic_add(out, nt.arange(16), nt.load(x, (0,), (16,)) + i)


def test_an_unchecked_kernel_keeps_the_simt_api(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", str(tmp_path))
    x, out = RNG.standard_normal(16).astype(np.float32), np.zeros(16, np.float32)
    ptx = simt_in_unchecked.ptx(x, out)
    assert "%tid.x" in ptx and "bar.sync" in ptx


def _factory(buf):
    @nt.jit(unchecked=True)
    def writes_captured(x, out: nt.Mutable):
        buf[0] = 1.0
        nt.atomic_add(out, nt.arange(16), nt.load(x, (0,), (16,)))
    return writes_captured


def test_an_unchecked_kernel_may_write_a_captured_array_explicitly(tmp_path, monkeypatch):
    """The address of a captured device array is baked into the PTX: exactly what a safe
    kernel is refused (corpus C61)."""
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", str(tmp_path))
    host = np.zeros(8, np.float32)
    x, out = RNG.standard_normal(16).astype(np.float32), np.zeros(16, np.float32)
    ptx = _factory(FakeDeviceArray(host)).ptx(x, out)
    assert f"{host.ctypes.data}" in ptx or f"{host.ctypes.data:#x}"[2:] in ptx.lower()


def test_unchecked_kernels_still_give_tensors_only_to_ops():
    from tests.unit.test_corpus import poke_packed

    @nt.jit(unchecked=True)
    def k(x, out: nt.Mutable):
        poke_packed((x, 1))
        nt.atomic_add(out, nt.arange(16), nt.load(x, (0,), (16,)))

    x, out = np.zeros(16, np.float32), np.zeros(16, np.float32)
    with pytest.raises(errors.UnanalyzedCallError, match="parameter\\(s\\) 'x'"):
        k.ptx(x, out)


@nt.jit
def raises_on_bad_scalar(x, z: nt.Partition, n):
    if n < 0:
        raise ValueError("n must not be negative")
    nt.store(z, nt.load_like(x, z))


def test_a_safe_kernel_may_raise_an_exception_built_from_constants(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", str(tmp_path))
    x, z = RNG.standard_normal(32).astype(np.float32), np.zeros(32, np.float32)
    assert ".entry" in raises_on_bad_scalar.ptx(x, nt.partition(z, 16), 3)
    raises_on_bad_scalar(x, nt.partition(z, 16), 3, interpret=True)
    np.testing.assert_array_equal(z, x)
    with pytest.raises(ValueError, match="must not be negative"):
        raises_on_bad_scalar(x, nt.partition(np.zeros(32, np.float32), 16), -1, interpret=True)
