"""``Kernel.explain``: the path each product and load of a specialization took and why, from
the compile itself (no GPU needed); registers and spills from ptxas (nvJitLink); occupancy and
the roofline estimate from the device's figures."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.explain import DEVICES


def _gemm(num_warps, num_stages):
    @nt.jit(num_warps=num_warps, num_stages=num_stages)
    def gemm(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
            y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
            acc = nt.mma(x, y, acc)
        nt.store(c, nt.astype(acc, nt.float16))
    return gemm


def _args(n=1024):
    a = np.zeros((n, n), np.float16)
    return a, a, nt.partition(np.zeros((n, n), np.float16), (128, 128)), 128, 128, 64


def _paths(ex, kind):
    return [d.text for d in ex.decisions if d.kind == kind]


def test_a_tuned_gemm_takes_wgmma_and_pipelined_tma_loads(monkeypatch, nvjitlink):
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    ex = _gemm(8, 3).explain(*_args(), cc=(9, 0), device="H100", flops=2 * 1024 ** 3)
    assert _paths(ex, "mma") == ["wgmma m64n128k16"]
    loads = _paths(ex, "load")
    assert len(loads) == 2 and all(t.startswith("pipelined: 3 stages of TMA boxes")
                                   for t in loads), loads
    assert ex.registers is not None and ex.spilled_bytes == 0
    assert ex.shared_bytes > 0 and ex.blocks_per_sm >= 1
    assert ex.bytes_moved == 3 * 1024 * 1024 * 2
    assert ex.bound_us == pytest.approx(max(ex.bytes_moved / 3.35e6, 2 * 1024 ** 3 / 989.4e6))
    text = str(ex)
    assert "acc = nt.mma(x, y, acc)" in text and "wgmma m64n128k16" in text
    assert "H100 SXM" in text


@pytest.mark.parametrize("warps, cc, why", [
    (16, (9, 0), "M = 128 is not a multiple of 16 * num_warps = 256"),
    (8, (8, 0), "wgmma needs compute capability 9.0, compiling for 8.0"),
])
def test_a_product_off_wgmma_says_which_rule(monkeypatch, warps, cc, why):
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    ex = _gemm(warps, 2).explain(*_args(), cc=cc)
    (path,) = _paths(ex, "mma")
    assert path.startswith("mma.sync: ") and why in path, path


def test_sync_mode_is_named(monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_MMA", "sync")
    (path,) = _paths(_gemm(8, 2).explain(*_args()), "mma")
    assert path == "mma.sync: NUMBA_TILE_MMA=sync"


def test_unpipelined_loads_say_why():
    assert set(_paths(_gemm(8, 1).explain(*_args()), "load")) == {
        "not pipelined: num_stages=1"}

    @nt.jit(num_stages=3)
    def outside(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load(x, nt.bid(0), (B,)) * 2)

    x = np.zeros(4096, np.float32)
    ex = outside.explain(x, nt.partition(np.zeros_like(x), 1024), 1024)
    assert _paths(ex, "load") == ["not pipelined: not in a `for k in range(n)` loop"]
    assert "products: none" in str(ex)

    @nt.jit(num_stages=3)
    def rows(x, z: nt.Partition["BM"], BM: nt.Constant, BN: nt.Constant):
        acc = nt.zeros((BM,), nt.float32)
        for k in range(nt.num_tiles(x, 1, BN)):
            acc = acc + nt.sum(nt.load(x, (k, nt.bid(0)), (BM, BN), padding=0), 1)
        nt.store(z, acc)

    x = np.zeros((256, 256), np.float32)
    (path,) = _paths(rows.explain(x, nt.partition(np.zeros(256, np.float32), 16), 16, 64),
                     "load")
    assert path.startswith("pipelined: 3 stages of cp.async copies, read back into registers"), \
        path


def test_occupancy_and_the_device_figures():
    ex = _gemm(8, 2).explain(*_args(), device="A100", cc=(8, 0))
    assert ex.device is DEVICES["A100"]
    assert ex.limited_by in ("registers", "shared memory", "threads", "blocks")
    assert "A100 SXM 80GB" in str(ex)


def test_two_loads_of_one_line_are_two_entries_and_flops_are_checked():
    @nt.jit(num_stages=2)
    def pair(a, b, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load(a, nt.bid(0), (B,)) + nt.load(b, nt.bid(0), (B,)))

    x = np.zeros(4096, np.float32)
    args = (x, x, nt.partition(np.zeros_like(x), 1024), 1024)
    assert len(_paths(pair.explain(*args), "load")) == 2
    from numba_tile.errors import TileArgumentError
    for bad in (-5, "many", True):
        with pytest.raises(TileArgumentError, match="explain\\(flops=...\\) takes the FLOPs"):
            pair.explain(*args, flops=bad)


def test_explain_says_why_loads_miss_tma(monkeypatch):
    """``acc += x @ y`` is the product TMA feeds (one ``mma``); an accumulator the loop also
    changes otherwise keeps its loads on ``cp.async``, and explain says why."""
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)

    @nt.jit(num_warps=8, num_stages=3)
    def added(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
              BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc += nt.load(a, (nt.bid(0), k), (BM, BK), padding=0) @ \
                nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
        nt.store(c, nt.astype(acc, nt.float16))

    @nt.jit(num_warps=8, num_stages=3)
    def clamped(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=0),
                         nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0), acc)
            acc = nt.minimum(acc, 1e30)
        nt.store(c, nt.astype(acc, nt.float16))

    loads = _paths(added.explain(*_args()), "load")
    assert len(loads) == 2 and all("TMA boxes" in t for t in loads), loads
    loads = _paths(clamped.explain(*_args()), "load")
    assert len(loads) == 2
    for text in loads:
        assert text.startswith("pipelined: 3 stages of cp.async copies") and \
            "TMA: the loop's product is not acc = nt.mma(a, b, acc)" in text, text


def test_autotuned_kernels_explain_each_configuration(monkeypatch):
    monkeypatch.delenv("NUMBA_TILE_MMA", raising=False)
    tuned = nt.autotune(configs=[nt.Config({"BM": 128, "BN": 128}, num_warps=8, num_stages=3),
                                 nt.Config({"BM": 64, "BN": 64}, num_warps=4, num_stages=2)],
                        key=["a"])(_gemm(4, 1))
    a = np.zeros((512, 512), np.float16)
    c = np.zeros((512, 512), np.float16)
    out = tuned.explain(a, a, c, BK=64)
    assert [cfg.num_warps for cfg, _ex in out] == [8, 4]
    # the kernel's warps, and a producer warpgroup's where the loop is warp-specialized
    assert all(ex.threads in (32 * cfg.num_warps, 32 * cfg.num_warps + 128) for cfg, ex in out)
    one = tuned.explain(a, a, c, BK=64, config=1)
    assert one.threads == out[1][1].threads and ".entry" in tuned.ptx(a, a, c, BK=64, config=1)
    from numba_tile.errors import TileArgumentError
    with pytest.raises(TileArgumentError, match="config: expected one of its 2"):
        tuned.explain(a, a, c, BK=64, config=2)


def test_the_examples_launches_are_explained():
    """``benchmarks/explain_examples.py`` reports each launch of an example's main()."""
    from benchmarks.explain_examples import explain_example
    records, output = explain_example("vecadd", (9, 0), "H100")
    assert len(records) == 1 and records[0].startswith("kernel 'vecadd' for sm_90"), records
    assert "products: none" in records[0] and output


def test_explain_reports_wgmma_serialized_by_a_call():
    """ptxas serializes every ``wgmma`` of a kernel that makes a call (C7509): an IEEE float32
    division of a tile is one (its slow path), ``nt.fdiv`` is not."""
    from numba_tile.runtime import linker
    from tests.gpu.test_math_functions import normalized, normalized_args
    args = normalized_args()
    slow = normalized.explain(*args, False, cc=(9, 0))
    if slow.registers is None:
        pytest.skip("nvJitLink is not installed: no ptxas report")
    assert [w[:5] for w in slow.ptxas_warnings] == ["C7509"], slow.ptxas_warnings
    assert "ptxas: C7509" in str(slow) and "nt.fdiv" in str(slow)
    assert normalized.explain(*args, True, cc=(9, 0)).ptxas_warnings == ()
    assert linker.performance_warnings("nothing to see") == ()
