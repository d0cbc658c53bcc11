"""The on-disk PTX cache: a second compile of one specialization is read back, not rebuilt."""

import numpy as np

import numba_tile as nt
from numba_tile import cache


@nt.jit
def scale(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 3.0)


def test_ptx_round_trips_through_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    x = np.zeros(4096, np.float32)
    first = scale.ptx(x, nt.partition(x.copy(), 1024), 1024)
    assert len(list(tmp_path.glob("*.json"))) == 1
    scale._compiled.clear()

    def no_compile(*a, **k):
        raise AssertionError("compiled again despite a cache entry")

    monkeypatch.setattr("numba_tile.kernel.compile_kernel", no_compile)
    assert scale.ptx(x, nt.partition(x.copy(), 1024), 1024) == first


def test_keys_differ_per_specialization_and_skip_fileless_functions():
    k1 = cache.entry_key(scale.fn, ("a",), 4, (9, 0))
    assert k1 != cache.entry_key(scale.fn, ("a",), 8, (9, 0))
    assert k1 != cache.entry_key(scale.fn, ("b",), 4, (9, 0))
    assert k1 != cache.entry_key(scale.fn, ("a",), 4, (8, 0))
    ns = {}
    exec("def f(x):\n    return x\n", ns)
    assert cache.entry_key(ns["f"], ("a",), 4, (9, 0)) is None


def test_empty_cache_dir_disables_the_cache(monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, "")
    assert cache.cache_dir() is None
    assert cache.load("0" * 64) is None
