"""The row-wise example kernels (softmax, layer norm, RMS norm) keep their rows in registers:
compiled to PTX (libNVVM, no GPU) for the row lengths and dtypes the examples serve, and
assembled for sm_90 by nvJitLink (ptxas) as a launch assembles them, no kernel uses local
memory or spills a register.

A spill would turn the one read of each row into extra local-memory traffic per element:
``examples/softmax.py``'s tables (``row_config``: elements per thread; ``min_blocks``:
``min_blocks_per_sm``, which lowers ptxas' register budget) are meant to keep the row in
registers; this checks that the kernels the host functions launch keep to it. Skipped
cleanly where nvJitLink is not installed or cannot create a handle.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from examples import layernorm, rmsnorm, softmax
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.runtime import linker

NS = [128, 256, 1000, 2048, 4096, 8192, 16384]
DTYPES = {"float32": np.float32, "bfloat16": BFLOAT16_NP}
KERNELS = ["softmax", "layer_norm", "rms_norm"]
CASES = [(k, dt, n) for k in KERNELS for dt in DTYPES for n in NS]
OPTIONS = ["-arch=sm_90", "-O3", "-verbose"]


def nvjitlink_module():
    """cuda.bindings.nvjitlink, or a pytest skip where it is missing or unusable."""
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink")
    try:
        nvjitlink.destroy(nvjitlink.create(len(OPTIONS), OPTIONS))
    except (nvjitlink.nvJitLinkError, RuntimeError, OSError) as e:   # no libnvJitLink.so
        pytest.skip(f"nvJitLink cannot create a handle: {type(e).__name__}: {e}")
    return nvjitlink


def kernel_ptx(kernel: str, dtname: str, n: int) -> str:
    """PTX of the kernel the example's host function launches for rows of ``n`` elements of
    ``dtname``: the host function runs with its ``kernel_for`` wrapped so that the launch is
    recorded instead of made, so the configuration (``row_config``, ``num_warps``,
    ``min_blocks_per_sm``, ...) is exactly the example's, whatever its tables say."""
    dt = DTYPES[dtname]
    module, host = {"softmax": (softmax, softmax.softmax),
                    "layer_norm": (layernorm, layernorm.layer_norm),
                    "rms_norm": (rmsnorm, rmsnorm.rms_norm)}[kernel]
    x = np.zeros((4, n), dt)
    w = np.zeros(n, dt)
    arrays = {"softmax": (x, x.copy()), "layer_norm": (x, w, w.copy(), x.copy()),
              "rms_norm": (x, w, x.copy())}[kernel]
    launches = []
    real_kernel_for = softmax.kernel_for

    def recording_kernel_for(fn, *args, **kwargs):
        k = real_kernel_for(fn, *args, **kwargs)
        return lambda *a, stream=None, interpret=False: launches.append((k, a))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "kernel_for", recording_kernel_for)
        mp.setattr(softmax, "kernel_for", recording_kernel_for)   # softmax.looped_kernel's
        host(*arrays)
    assert len(launches) == 1, launches
    k, args = launches[0]
    return k.ptx(*args)


def assemble(nvjitlink, ptx: str) -> str:
    """ptxas' verbose report of ``ptx`` for sm_90 (NUL bytes removed)."""
    h = nvjitlink.create(len(OPTIONS), OPTIONS)
    try:
        data = ptx.encode()
        nvjitlink.add_data(h, nvjitlink.InputType.PTX, data, len(data), "k.ptx")
        try:
            nvjitlink.complete(h)
        except nvjitlink.nvJitLinkError:
            size = nvjitlink.get_error_log_size(h)
            log = bytearray(size)
            nvjitlink.get_error_log(h, log)
            raise AssertionError("nvJitLink failed:\n" + bytes(log).decode(errors="replace"))
        size = nvjitlink.get_info_log_size(h)
        log = bytearray(size)
        nvjitlink.get_info_log(h, log)
    finally:
        nvjitlink.destroy(h)
    return bytes(log).decode(errors="replace").replace("\x00", "")


def launch_report(ptx: str) -> str:
    """ptxas' report of the cubin a launch would load: numba_tile's own assembly
    (``runtime.linker.assemble``), which drops a ``min_blocks_per_sm`` bound that would
    make ptxas spill."""
    out = linker.assemble(ptx, (9, 0))
    assert out is not None, "nvJitLink became unusable"
    return out[1]


@pytest.fixture(scope="module")
def reports():
    """{case: (ptx, ptxas report)} of every case: compiled once (numba_tile caches the PTX in
    memory and on disk), assembled in parallel (ptxas runs outside the GIL)."""
    nvjitlink_module()
    ptxs = {case: kernel_ptx(*case) for case in CASES}
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        logs = dict(zip(ptxs, pool.map(launch_report, ptxs.values())))
    return {case: (ptxs[case], logs[case]) for case in CASES}


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("dtname", list(DTYPES))
@pytest.mark.parametrize("kernel", KERNELS)
def test_no_spills(reports, kernel, dtname, n):
    ptx, log = reports[(kernel, dtname, n)]
    assert ".local" not in ptx
    report = linker.spill_report(log)
    assert report is not None, f"no function report in:\n{log}"
    registers, spilled = report
    assert spilled == 0, log
    assert registers <= 255, log


def test_spills_would_be_seen(reports):
    """The check can fail: the softmax kernel for rows of 16384 float32 (32 values per thread
    and about 96 registers) limited to 40 registers (``.maxnreg 40``) spills, and ptxas'
    report says so."""
    nvjitlink = nvjitlink_module()
    ptx, _ = reports[("softmax", "float32", 16384)]
    limited, count = re.subn(r"(\.maxntid[^\n]*)", r"\1\n.maxnreg 40", ptx, count=1)
    assert count == 1
    log = assemble(nvjitlink, limited)
    assert linker.spill_report(log)[1] > 0, log


def test_min_blocks_bound_that_would_spill_is_dropped():
    """A ``.minnctapersm`` bound that ptxas can meet only by spilling (4 blocks of 256
    threads: 64 registers for 64 float32 values per thread) is dropped by numba_tile's assembly: the cubin it returns spills
    nothing, though the same PTX assembled with the bound does."""
    nvjitlink = nvjitlink_module()
    ptx = kernel_ptx("softmax", "float32", 16384)
    ptx = re.sub(r"^\s*\.minnctapersm\s+\d+\s*$", "", ptx, flags=re.M)
    bounded, count = re.subn(r"(\.maxntid[^\n]*)", r"\1\n.minnctapersm 4", ptx, count=1)
    assert count == 1
    assert linker.spill_report(assemble(nvjitlink, bounded))[1] > 0
    assert linker.spill_report(launch_report(bounded))[1] == 0
