"""The GEMM examples' kernels in every configuration ``benchmarks/gemm.py`` sweeps, compiled
for sm_90 with libNVVM and assembled with nvJitLink as a launch assembles them (no GPU):
tensor-core products, no local memory, no spilled register, and the K loop's loads
pipelined with ``cp.async`` (``num_stages`` above 1; the examples are written so their
loads qualify)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from examples import gemm, gemm_persistent
from numba_tile.runtime import linker

ROOT = Path(__file__).resolve().parents[2]


def sweep():
    spec = importlib.util.spec_from_file_location("gemm_benchmark", ROOT / "benchmarks" / "gemm.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    configs = {c for m in (4096, 128, 16) for c in bench.sweep_configs(m)}
    return sorted(configs, key=lambda c: (c.bm, c.bn, c.bk, c.num_warps))


CONFIGS = sweep()
KERNELS = {"gemm": gemm.gemm_tiles, "gemm_persistent": gemm_persistent.gemm_persistent_tiles}


def ptx_of(name, cfg, dtype="float16"):
    x = np.zeros((512, 512), np.float16 if dtype == "float16" else np.uint16)
    if dtype == "bfloat16":
        from numba_tile.dtypes import BFLOAT16_NP
        x = x.view(BFLOAT16_NP)
    blocks = 132 if name == "gemm_persistent" else None
    part = gemm.c_partition(x.copy(), cfg, blocks=blocks)
    return gemm.kernel_for(cfg, KERNELS[name]).ptx(x, x, part, cfg.bm, cfg.bn, cfg.bk, dtype,
                                                   cc=(9, 0))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_sweep_configuration_compiles_without_spills(nvjitlink, cfg, name, dtype):
    ptx = ptx_of(name, cfg, dtype)
    assert "mma.sync" in ptx or "wgmma.mma_async" in ptx
    assert ".local" not in ptx
    assert cfg.num_stages > 1
    assert "cp.async" in ptx, f"{cfg}: the K loop's loads were not pipelined"
    out = linker.assemble(ptx, (9, 0))
    assert out is not None
    registers, spilled = linker.spill_report(out[1])
    assert spilled == 0, out[1]


def test_the_hopper_gemm_configuration_keeps_one_wgmma_group_in_flight(nvjitlink):
    """examples/gemm.py at 128 x 256 x 64 over 8 warps with 4 stages (the benchmark's best on
    the H200): TMA boxes, one wgmma group left in flight across iterations
    (``wait_group 1``), and ptxas neither serializes the wgmmas nor spills."""
    import re
    cfg = gemm.GemmConfig(128, 256, 64, 8, 4)
    ptx = ptx_of("gemm", cfg)
    assert "cp.async.bulk.tensor.2d" in ptx and "wgmma.wait_group.sync.aligned 1" in ptx
    out = linker.assemble(ptx, (9, 0))
    registers, spilled = linker.spill_report(out[1])
    assert spilled == 0 and not re.search(r"serializ", out[1]), out[1]
