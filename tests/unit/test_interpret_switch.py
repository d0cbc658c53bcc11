"""Interpreter mode is chosen by interpret= on the decorator or the call, or by the
NUMBA_TILE_INTERPRET environment variable when a kernel is defined."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.kernel import INTERPRET_ENV


def make_kernel(**options):
    @nt.jit(**options)
    def double(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z) * 2.0)

    return double


def run_host(kernel, **call_options):
    rng = np.random.default_rng()
    x = rng.standard_normal(100).astype(np.float32)
    z = np.zeros(100, np.float32)
    kernel(x, nt.partition(z, 32), **call_options).sync()
    np.testing.assert_allclose(z, x * 2.0, rtol=1e-6)


def test_environment_switch_at_definition(monkeypatch):
    monkeypatch.setenv(INTERPRET_ENV, "1")
    kernel = make_kernel()
    monkeypatch.delenv(INTERPRET_ENV)
    assert kernel.interpret
    run_host(kernel)                      # NumPy arrays accepted: interpreter mode


@pytest.mark.parametrize("value", ["", "0"])
def test_environment_switch_off(monkeypatch, value):
    monkeypatch.setenv(INTERPRET_ENV, value)
    assert not make_kernel().interpret


def test_decorator_and_call_options(monkeypatch):
    monkeypatch.delenv(INTERPRET_ENV, raising=False)
    run_host(make_kernel(interpret=True))
    run_host(make_kernel(), interpret=True)
    with pytest.raises(nt.errors.HostArrayError, match="'x'"):
        run_host(make_kernel())           # GPU path: host arrays refused before any work


def test_on_conflict_option_is_checked():
    kernel = make_kernel(interpret=True)
    x = np.ones(8, np.float32)
    z = np.zeros(8, np.float32)
    with pytest.raises(nt.errors.TileArgumentError, match="on_conflict"):
        kernel(x, nt.partition(z, 8), on_conflict="ignore")
    assert not z.any()
