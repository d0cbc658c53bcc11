"""numba_tile.autotune in the interpreter: configurations tried on scratch copies (an in-place
kernel is applied to the caller's data exactly once per call), pruning of configurations that
do not compile, one tuning per key (in memory and on disk), and clear errors."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError

@pytest.fixture(autouse=True)
def _own_disk_cache(tmp_path, monkeypatch):
    """Each test starts with an empty disk cache (tunings would be read back otherwise)."""
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", str(tmp_path / "cache"))


CONFIGS = [nt.Config({"B": 64}), nt.Config({"B": 256}, num_warps=8),
           nt.Config({"B": 128}, num_warps=4, num_stages=3)]


@nt.autotune(configs=CONFIGS, reps=2, warmup=1)
@nt.jit(interpret=True)
def accumulate(x, z: nt.Partition["B"], B: nt.Constant):
    """z += 2 x, in place."""
    nt.store(z, nt.load_like(z, z) + 2.0 * nt.load_like(x, z))


def test_in_place_kernel_applied_once_per_call_whatever_the_tuning():
    rng = np.random.default_rng()
    x = rng.integers(-50, 50, 1000).astype(np.float32)       # exact sums: once is once
    z0 = rng.integers(-50, 50, 1000).astype(np.float32)
    z = z0.copy()
    accumulate(x, z).sync()          # tunes: 3 configurations x 3 launches, on copies
    np.testing.assert_array_equal(z, z0 + 2 * x)
    key = accumulate.tuning_key((x, z), {})
    assert [t.ms is not None for t in accumulate.trials[key]] == [True, True, True]
    accumulate(x, z).sync()          # no tuning: the remembered configuration
    np.testing.assert_array_equal(z, z0 + 4 * x)
    assert len(accumulate.trials) == 1


def test_a_new_key_tunes_again_and_the_best_is_one_of_the_configs():
    rng = np.random.default_rng()
    x = rng.integers(-50, 50, 300).astype(np.float32)
    z = np.zeros(300, np.float32)
    before = len(accumulate.trials)
    accumulate(x, z).sync()
    assert len(accumulate.trials) == before + 1
    assert accumulate.best_config(x, z) in CONFIGS
    np.testing.assert_array_equal(z, 2 * x)


@nt.autotune(configs=[nt.Config({"B": 1 << 20}), nt.Config({"B": 128})], reps=1, warmup=0)
@nt.jit(interpret=True)
def scale(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, 3.0 * nt.load_like(x, z))


def test_configurations_that_do_not_compile_are_pruned_with_the_reason():
    x = np.arange(500, dtype=np.float32)
    z = np.zeros_like(x)
    scale(x, z).sync()
    np.testing.assert_array_equal(z, 3 * x)
    (trial_big, trial_ok), = scale.trials.values()
    assert trial_big.ms is None and "elements in each thread's registers" in trial_big.error
    assert trial_ok.ms is not None and scale.best_config(x, z).constants == {"B": 128}


def test_no_configuration_compiles_is_a_clear_error():
    tuned = nt.autotune(configs=[nt.Config({"B": 1 << 20})], reps=1)(scale.kernel)
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(TileArgumentError, match=r"no configuration of the autotuner compiles.*"
                                                r"B=1048576"):
        tuned(x, np.zeros_like(x))


def test_tuning_is_kept_on_disk(tmp_path):
    x = np.arange(700, dtype=np.float32)
    first = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    first(x, np.zeros_like(x)).sync()
    assert list((tmp_path / "cache").glob("autotune-*.json"))
    second = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    z = np.zeros_like(x)
    second(x, z).sync()
    assert second.trials == {}                   # read from disk: nothing tried
    assert second.best_config(x, z) == first.best_config(x, z)
    np.testing.assert_allclose(z, 2 * x)


@nt.autotune(configs=[nt.Config({"BM": 16, "BN": 64}, partitions={"c": {"order": nt.grouped(2)}}),
                      nt.Config({"BM": 32, "BN": 32})], reps=1, warmup=0)
@nt.jit(interpret=True)
def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, 16)):
        acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, 16)), nt.load(b, (k, nt.bid(1)), (16, BN)),
                     acc)
    nt.store(c, acc)


def test_partitions_take_each_configurations_tile_shape():
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (70, 40)).astype(np.float16)
    b = rng.integers(-3, 4, (40, 90)).astype(np.float16)
    c = np.full((70, 90), np.nan, np.float32)
    gemm(a, b, c).sync()
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))


def test_bad_uses_are_refused():
    x = np.zeros(8, np.float32)
    with pytest.raises(TileArgumentError, match="set by the autotuner"):
        accumulate(x, x.copy(), 64)
    with pytest.raises(TileArgumentError, match="names no parameter"):
        nt.autotune(configs=[nt.Config({"Q": 1})])(accumulate.kernel)
    with pytest.raises(TileArgumentError, match="non-empty list"):
        nt.autotune(configs=[])(accumulate.kernel)
    with pytest.raises(TileArgumentError, match="expected a @numba_tile.jit kernel"):
        nt.autotune(configs=CONFIGS)(lambda x: x)
    with pytest.raises(TileArgumentError, match="key names no parameter"):
        nt.autotune(configs=CONFIGS, key=["M"])(accumulate.kernel)


class _CopyIsAView(np.ndarray):
    """A hostile array whose copy() returns a view of itself."""

    def copy(self, *a, **k):
        return self.view(np.ndarray)


def test_a_copy_that_shares_memory_is_refused_before_any_trial():
    x = np.arange(64, dtype=np.float32)
    z = np.zeros(64, np.float32).view(_CopyIsAView)
    tuned = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    with pytest.raises(TileArgumentError, match="shares memory with the original"):
        tuned(x, z)
    np.testing.assert_array_equal(np.asarray(z), 0)     # nothing was written


# --------------------------------------------------- red-team round (autotune_redteam.md)

@nt.jit(unchecked=True, interpret=True)
def histogram(x, hist: nt.Mutable, B: nt.Constant):
    t = nt.load(x, (nt.bid(0),), (B,), padding=0)
    nt.atomic_add(hist, nt.astype(t, nt.int32), nt.full((B,), 1, nt.int32),
                  mask=nt.arange(B) + nt.bid(0) * B < nt.num_tiles(x, 0, B) * B)


def test_mutable_arguments_of_unchecked_kernels_get_scratch_copies_too():
    x = np.zeros(256, np.float32)                       # every element counts into bin 0
    hist = np.zeros(4, np.int32)
    tuned = nt.autotune(configs=[nt.Config({"B": 64}), nt.Config({"B": 128})], reps=2,
                        warmup=1)(histogram)
    tuned(x, hist, unchecked=True, grid=(4,)).sync()
    assert hist[0] == 256 and hist[1:].sum() == 0       # the real launch only


def test_configurations_set_only_constants_and_valid_options():
    with pytest.raises(TileArgumentError, match=r"sets \['z'\].*not Constant parameters"):
        nt.autotune(configs=[nt.Config({"z": 1, "B": 64})])(accumulate.kernel)
    with pytest.raises(TileArgumentError, match=r"partitions names \['x'\]"):
        nt.autotune(configs=[nt.Config({"B": 64}, partitions={"x": {}})])(accumulate.kernel)
    with pytest.raises(TileArgumentError, match=r"expected a dict of 'blocks' and/or 'order'"):
        nt.autotune(configs=[nt.Config({"B": 64}, partitions={"z": {"bogus": 1}})])(
            accumulate.kernel)
    with pytest.raises(TileArgumentError, match=r"num_warps"):
        nt.autotune(configs=[nt.Config({"B": 64}, num_warps=3)])(accumulate.kernel)
    with pytest.raises(TileArgumentError, match=r"num_stages"):
        nt.autotune(configs=[nt.Config({"B": 64}, num_stages=0)])(accumulate.kernel)


def test_extra_positional_arguments_are_refused():
    x = np.zeros(8, np.float32)
    with pytest.raises(TileArgumentError, match="4 positional arguments for 3 parameters"):
        accumulate(x, x.copy(), 2.0, 99.0)


def test_a_refused_call_is_refused_before_any_trial():
    z = np.zeros(256, np.float32)
    tuned = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    with pytest.raises(nt.errors.AliasingError):
        tuned(z, z)                                     # z read and written
    assert tuned.trials == {}


def test_the_disk_entry_belongs_to_the_kernel_body(tmp_path):
    x = np.arange(64, dtype=np.float32)

    def make(factor):
        @nt.jit(interpret=True)
        def k(x, z: nt.Partition["B"], B: nt.Constant):
            nt.store(z, factor * nt.load_like(x, z))
        return nt.autotune(configs=CONFIGS, reps=1, warmup=0)(k)

    first, second = make(2.0), make(3.0)
    first(x, np.zeros_like(x)).sync()
    z = np.zeros_like(x)
    second(x, z).sync()
    np.testing.assert_array_equal(z, 3.0 * x)     # the entry names a configuration, never code
