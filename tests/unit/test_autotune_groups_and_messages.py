"""numba_tile.autotune's refusals name the file and line of the user's code (the line applying
the decorator for configuration errors, the call for the call's), malformed ``configs`` and
``key`` are refused by type, and an autotuned kernel takes groups (tuples of arrays or
partitions) as a plain launch does: members partitioned with each configuration's tile shape,
trials on scratch copies of each member, the tuning keyed by every member's dtype and shape."""

import sys

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError


@pytest.fixture(autouse=True)
def _own_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", str(tmp_path / "cache"))


@nt.jit(interpret=True)
def accumulate(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(z, z) + 2.0 * nt.load_like(x, z))


@nt.jit(interpret=True)
def accumulate_groups(xs, zs: nt.Partition["B"], s, B: nt.Constant):
    # zs[g] += s * xs[g] + g, in place, over every tile of each member
    for g in nt.static_range(len(zs)):
        for idx in nt.tiles(zs[g]):
            z = nt.load_like(zs[g], zs[g], index=idx, padding=0)
            nt.store(zs[g], z + s * nt.load_like(xs[g], zs[g], index=idx, padding=0) + g, idx)


GROUP_CONFIGS = [nt.Config({"B": 64}, partitions={"zs": {"blocks": 2}}),
                 nt.Config({"B": 128}, num_warps=8, partitions={"zs": {"blocks": 3}})]


@pytest.mark.parametrize("bad, what", [
    (dict(configs=[nt.Config({"Q": 1})]), "names no parameter"),
    (dict(configs=[nt.Config({"x": 1, "B": 64})]), "not Constant parameters"),
    (dict(configs=[nt.Config({"B": 64}, num_warps=3)]), "num_warps"),
    (dict(configs=[nt.Config({"B": 64}, partitions={"z": {"bogus": 1}})]), "'blocks' and/or"),
    (dict(configs=[nt.Config("B")]), r"constants: expected a dict"),
    (dict(configs=[nt.Config({"B": 64}, partitions=["z"])]), r"partitions: expected a dict"),
    (dict(configs=[]), "non-empty list"),
    (dict(configs=5), "non-empty list"),
    (dict(configs=[nt.Config({"B": 64})], key="x"), r"key: expected a list"),
    (dict(configs=[nt.Config({"B": 64})], key=["M"]), "key names no parameter"),
    (dict(configs=[nt.Config({"B": 64})], reps=0), "reps"),
    (dict(configs=[nt.Config({"B": 64})], compile_workers=0), "compile_workers"),
])
def test_configuration_errors_point_at_the_decorators_line(bad, what):
    with pytest.raises(TileArgumentError, match=what) as info:
        line = sys._getframe().f_lineno + 1
        nt.autotune(**bad)(accumulate)
    assert (info.value.filename, info.value.lineno) == (__file__, line)
    assert f"{__file__}:{line}" in str(info.value)


def test_the_calls_errors_point_at_the_call():
    tuned = nt.autotune(configs=[nt.Config({"B": 64})], reps=1, warmup=0)(accumulate)
    x = np.zeros(64, np.float32)
    for call, what in [(lambda: tuned(x, x.copy(), 64), "set by the autotuner"),
                       (lambda: tuned(x), "missing argument 'z'"),
                       (lambda: tuned(x, x.copy(), y=1), r"unexpected arguments \['y'\]")]:
        with pytest.raises(TileArgumentError, match=what) as info:
            call()
        assert info.value.filename == __file__
        assert info.value.lineno == call.__code__.co_firstlineno


def test_an_autotuned_kernel_takes_groups():
    rng = np.random.default_rng()
    ns = [int(n) for n in rng.integers(1, 400, int(rng.integers(2, 5)))]
    xs = tuple(rng.standard_normal(n).astype(np.float32) for n in ns)
    z0 = tuple(rng.standard_normal(n).astype(np.float32) for n in ns)
    zs = tuple(z.copy() for z in z0)
    tuned = nt.autotune(configs=GROUP_CONFIGS, reps=2, warmup=1)(accumulate_groups)
    tuned(xs, zs, 1.5).sync()
    for g, (x, z, z_start) in enumerate(zip(xs, zs, z0)):
        # applied exactly once (the trials ran on scratch copies of each member)
        np.testing.assert_allclose(z, z_start.astype(np.float64) + 1.5 * x + g, rtol=1e-6,
                                   atol=1e-6)
    (key,) = tuned.trials
    assert all(t.ms is not None for t in tuned.trials[key])
    # a group of other shapes is another tuning key; partitions given as members work too
    zs2 = tuple(nt.partition(np.zeros(n + 1, np.float32), 64, blocks=2) for n in ns)
    tuned(tuple(np.ones(n + 1, np.float32) for n in ns), zs2, 2.0)
    assert len(tuned.trials) == 2
    for g, p in enumerate(zs2):
        np.testing.assert_array_equal(p.array, 2.0 + g)


def test_a_group_member_the_configuration_cannot_partition_prunes_it():
    xs = (np.zeros((4, 4), np.float32),)
    zs = (np.zeros((4, 4), np.float32),)       # 2-d: the 1-d tile shape (B,) does not fit
    tuned = nt.autotune(configs=GROUP_CONFIGS, reps=1, warmup=0)(accumulate_groups)
    with pytest.raises(TileArgumentError, match=r"no configuration.*B=64.*rank-1 tile shape.*"
                                                r"B=128.*rank-1 tile shape") as info:
        line = sys._getframe().f_lineno + 1
        tuned(xs, zs, 1.0)
    assert (info.value.filename, info.value.lineno) == (__file__, line)
