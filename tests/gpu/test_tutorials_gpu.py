"""The tutorials (docs/tutorials/NN_name.py) on the GPU: each runs as a reader runs it, in a
subprocess from the repository root without ``NUMBA_TILE_INTERPRET``, says it runs on the GPU
(the debugging tutorial runs on the CPU by design), exits 0 and says it checked its results
against NumPy (the PyTorch one needs PyTorch with CUDA, and says it was skipped without
PyTorch). The interpreter twin is tests/unit/test_tutorials.py."""

import subprocess
import sys

import pytest

from tests.unit.test_tutorials import (SCRIPTS, needs_torch, run_tutorial, torch_importable,
                                       tutorial_env)

pytestmark = pytest.mark.gpu


def torch_without_cuda() -> bool:
    """PyTorch is there but sees no CUDA device (a CPU-only build)."""
    proc = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                          env=tutorial_env(False), capture_output=True)
    return torch_importable() and proc.returncode != 0


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_tutorial_runs_on_the_gpu_and_checks_its_results(path):
    if needs_torch(path) and torch_without_cuda():
        pytest.skip("PyTorch sees no CUDA device (a CPU-only build?)")
    proc = run_tutorial(path, interpret=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "WRONG RESULT" not in out
    if needs_torch(path) and not torch_importable():
        assert "skipped: needs PyTorch" in proc.stdout, out
        return
    assert "checked" in proc.stdout, out
    if "def backend()" in path.read_text() or needs_torch(path):
        assert "running on the GPU" in proc.stdout, out
    assert "skipped (they need a CUDA GPU)" not in proc.stdout, out
