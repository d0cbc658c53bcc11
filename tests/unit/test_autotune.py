"""numba_tile.autotune in the interpreter: configurations tried on scratch copies (an in-place
kernel is applied to the caller's data exactly once per call), pruning of configurations that
do not compile, one tuning per key (in memory and on disk), and clear errors; the GPU's
PTX-to-cubin step run by worker threads (real nvJitLink, on the CPU) gives the trials of one
worker, and tunings in several threads at once agree."""

import json
import os
import sys
import threading

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError
from numba_tile.runtime.linker import LinkError, ptx_to_cubin

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
    assert trial_big.ms is None and "elements in each thread, more than 1024" in trial_big.error
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


@pytest.mark.parametrize("stored", [1.5, 1.0, True, False, "0", "1", -1, 3, 2**64, None, [1],
                                    {"i": 1}])
def test_a_stored_choice_that_is_not_an_index_in_range_tunes_again(tmp_path, stored):
    """Only an exact int from 0 to len(configs) - 1 names a configuration (not a bool, a float
    or a string that int() would take); anything else is tuned again and overwritten."""
    x = np.random.default_rng().integers(-50, 50, 700).astype(np.float32)
    first = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    first(x, np.zeros_like(x)).sync()
    (path,) = (tmp_path / "cache").glob("autotune-*.json")
    path.write_text(json.dumps({"config": stored}))
    second = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    z = np.zeros_like(x)
    second(x, z).sync()
    np.testing.assert_array_equal(z, 2 * x)
    (trials,) = second.trials.values()
    assert len(trials) == len(CONFIGS)                   # tuned again
    best = json.loads(path.read_text())["config"]
    assert type(best) is int and CONFIGS[best] == second.best_config(x, z)


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_a_stored_index_in_range_is_used_without_trials(tmp_path, index):
    x = np.random.default_rng().integers(-50, 50, 700).astype(np.float32)
    first = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    first(x, np.zeros_like(x)).sync()
    (path,) = (tmp_path / "cache").glob("autotune-*.json")
    path.write_text(json.dumps({"config": index}))
    second = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    z = np.zeros_like(x)
    second(x, z).sync()
    assert second.trials == {} and second.best_config(x, z) is CONFIGS[index]
    np.testing.assert_array_equal(z, 2 * x)


def test_a_fifo_in_place_of_the_stored_choice_tunes_again(tmp_path):
    """A FIFO (or any file that is not regular) is never opened for a blocking read."""
    x = np.random.default_rng().integers(-50, 50, 700).astype(np.float32)
    first = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    first(x, np.zeros_like(x)).sync()
    (path,) = (tmp_path / "cache").glob("autotune-*.json")
    path.unlink()
    os.mkfifo(path)
    second = nt.autotune(configs=CONFIGS, reps=1, warmup=0)(accumulate.kernel)
    z = np.zeros_like(x)
    done = threading.Thread(target=lambda: second(x, z).sync(), daemon=True)
    done.start()
    done.join(60)
    if done.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))   # let the blocked reader go
        done.join(60)
        pytest.fail("reading the stored choice blocked on a FIFO")
    np.testing.assert_array_equal(z, 2 * x)
    assert len(second.trials) == 1 and path.is_file()


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


# ------------------------------------- unchecked kernels, scratch copies and hostile arguments

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


# ------------------------------------------- compiling the configurations in parallel

_autotune = sys.modules["numba_tile.autotune"]      # nt.autotune is the function


@nt.jit(interpret=True)
def triple(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, 3.0 * nt.load_like(x, z))


#: one configuration does not type (a tile over the register budget), one is refused by
#: ptxas where the tests inject a LinkError (B=64); over 4096 elements B=1024 launches 4
#: blocks, the others 32 or more, so the interpreter's per-block cost makes it the fastest
PARALLEL_CONFIGS = [nt.Config({"B": 16}), nt.Config({"B": 1 << 20}), nt.Config({"B": 1024}),
                    nt.Config({"B": 64}, num_warps=8), nt.Config({"B": 128}, num_stages=2)]


def _assemble_in_interpreter(monkeypatch, calls, refuse=None):
    """Give interpreter-mode tunings the GPU's PTX-to-cubin step (the pool of workers runs
    only there): the real ``ptx_to_cubin`` (nvJitLink, on this CPU), recording the calling
    thread's name and refusing as ptxas would the PTX that contains ``refuse``."""
    def assemble(ptx, cc):
        calls.append(threading.current_thread().name)
        if refuse is not None and refuse in ptx:
            raise LinkError("nvJitLink (-arch=sm_90) failed: ptxas error: too many resources")
        return ptx_to_cubin(ptx, cc)

    monkeypatch.setattr(_autotune.Autotuned, "_assembler", lambda self, interpret: assemble)


#: in the entry's mangled name of the B=64 configuration
_B64 = "constant_2864_29"


def _tune(workers, x, log=False):
    # a warm-up launch each: a configuration's first launch also builds its interpreter
    # program, a one-time cost that could flip the choice between the two fastest
    tuned = nt.autotune(configs=PARALLEL_CONFIGS, reps=3, warmup=1, log=log,
                        compile_workers=workers)(triple)
    z = np.zeros_like(x)
    tuned(x, z).sync()
    np.testing.assert_array_equal(z, 3 * x)
    (trials,) = tuned.trials.values()
    return tuned.best_config(x, z), trials


def test_parallel_compile_gives_the_trials_and_choice_of_one_worker(monkeypatch, capsys):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", "")          # no tuning read back from disk
    calls = []
    _assemble_in_interpreter(monkeypatch, calls, refuse=_B64)
    x = np.arange(4096, dtype=np.float32)
    best1, trials1 = _tune(1, x, log=True)
    log1 = capsys.readouterr().out
    assert set(calls) == {threading.current_thread().name}  # one worker: the calling thread
    calls.clear()
    best4, trials4 = _tune(4, x, log=True)
    log4 = capsys.readouterr().out
    assert len(calls) == 4 and all(n.startswith("numba_tile-autotune") for n in calls)
    assert best1 == best4 == PARALLEL_CONFIGS[2]
    assert [t.config for t in trials4] == [t.config for t in trials1] == PARALLEL_CONFIGS
    assert [t.error for t in trials4] == [t.error for t in trials1]
    assert [t.ms is not None for t in trials4] == [True, False, True, False, True]
    assert "elements in each thread, more than 1024" in trials4[1].error
    assert trials4[3].error.startswith("LinkError: nvJitLink (-arch=sm_90) failed: ptxas error")

    def configs_logged(out):
        return [line.split(": ")[1] for line in out.splitlines()]
    assert configs_logged(log4) == configs_logged(log1) == [c.describe()
                                                            for c in PARALLEL_CONFIGS]


def test_the_interpreter_assembles_nothing(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", "")
    calls, pools = [], []
    monkeypatch.setattr(_autotune, "ptx_to_cubin", lambda ptx, cc: calls.append(cc))
    monkeypatch.setattr(_autotune, "ThreadPoolExecutor", lambda *a, **k: pools.append(a))
    _tune(4, np.arange(256, dtype=np.float32))
    assert calls == [] and pools == []       # a launch in interpreter mode runs no cubin


def test_default_compile_workers_and_bad_values():
    tuned = nt.autotune(configs=PARALLEL_CONFIGS)(triple)
    assert tuned.compile_workers == min(len(PARALLEL_CONFIGS), os.cpu_count() or 1)
    assert nt.autotune(configs=PARALLEL_CONFIGS[:1])(triple).compile_workers == 1
    for bad in (0, -1, True, 2.0, "4"):
        with pytest.raises(TileArgumentError, match="compile_workers: expected an int >= 1"):
            nt.autotune(configs=PARALLEL_CONFIGS, compile_workers=bad)(triple)


def test_an_error_of_a_worker_that_is_no_configuration_error_is_the_calls(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", "")

    def broken(ptx, cc):
        raise MemoryError("out of host memory")

    monkeypatch.setattr(_autotune.Autotuned, "_assembler", lambda self, interpret: broken)
    tuned = nt.autotune(configs=PARALLEL_CONFIGS, reps=1, warmup=0, compile_workers=3)(triple)
    x = np.arange(64, dtype=np.float32)
    z = np.zeros_like(x)
    with pytest.raises(MemoryError, match="out of host memory"):
        tuned(x, z)
    assert tuned.trials == {}                                 # raised before any trial
    np.testing.assert_array_equal(z, 0)


def test_concurrent_calls_tune_each_key_once_and_agree(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", "")
    _assemble_in_interpreter(monkeypatch, [])
    tuned = nt.autotune(configs=CONFIGS, reps=1, warmup=0, compile_workers=3)(accumulate.kernel)
    sizes = (100, 300, 700)
    errors, barrier = [], threading.Barrier(6)

    def worker(i):
        try:
            barrier.wait()
            for rep in range(3):
                n = sizes[(i + rep) % len(sizes)]
                x = np.arange(n, dtype=np.float32)
                z = np.ones(n, np.float32)
                tuned(x, z).sync()
                np.testing.assert_array_equal(z, 1 + 2 * x)   # applied once, whatever tuned
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(tuned.trials) == len(sizes)                    # each key tuned once
    for trials in tuned.trials.values():
        assert [t.config for t in trials] == CONFIGS and all(t.ms is not None for t in trials)
    assert len(tuned._variants) == 3                          # one per (num_warps, num_stages)
    assert len({id(k) for k in tuned._variants.values()}) == 3


def test_tuners_of_one_kernel_tuning_at_once_in_threads_agree(monkeypatch):
    """Separate tuners share the kernel's function, nothing else: their compiles (serialized
    by Numba's lock), worker pools and trials may run at the same time."""
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", "")
    _assemble_in_interpreter(monkeypatch, [], refuse=_B64)
    x = np.arange(2048, dtype=np.float32)
    results, errors = [None] * 4, []

    def worker(i):
        try:
            results[i] = _tune(2, x)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for best, trials in results:
        assert [(t.config, t.ms is None, t.error) for t in trials] == [
            (t.config, t.ms is None, t.error) for t in results[0][1]]
        assert best in [t.config for t in trials if t.ms is not None]   # timed at once


@nt.autotune(configs=[nt.Config({"B": 100}), nt.Config({"B": 128})], reps=1, warmup=0)
@nt.jit
def scaled(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, 3.0 * nt.load_like(x, z))


def test_launch_defaults_interpret_reaches_the_tuner_and_a_bad_tile_prunes_its_config():
    # a kernel without interpret=True, tuned under launch_defaults(interpret=True) (as a
    # torch_op body on CPU tensors is); B=100 is no power of two: that configuration is pruned
    x = np.random.default_rng().standard_normal(1000).astype(np.float32)
    z = np.zeros(1000, np.float32)
    with nt.launch_defaults(interpret=True):
        scaled(x, z).sync()
        assert scaled.best_config(x, z) == nt.Config({"B": 128})
    np.testing.assert_allclose(z, 3.0 * x, rtol=1e-6)
    trials = scaled.trials[scaled.tuning_key((x, z), {})]
    assert trials[0].ms is None and "configuration B=100" in trials[0].error
    assert "power of two" in trials[0].error and trials[1].ms is not None
