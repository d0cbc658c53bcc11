"""The examples run as a user runs them (a subprocess, from the repository root) and say OK.

Without a GPU they run in the interpreter; with one, vecadd and saxpy run on it.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from numba_tile import errors

ROOT = Path(__file__).resolve().parents[2]


def example_env() -> dict:
    """The environment with the repository root first on PYTHONPATH (what was there is kept)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("NUMBA_TILE_INTERPRET", None)
    return env


def run_example(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], cwd=ROOT, env=example_env(),
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", ["vecadd.py", "saxpy.py", "persistent.py", "histogram.py",
                                  "scatter_add.py", "gemm.py", "gemm_persistent.py",
                                  "softmax_chunked.py", "swiglu.py", "cross_entropy.py",
                                  "dropout.py", "layernorm_backward.py", "rope.py",
                                  "grouped_gemm.py", "gemm_fp8.py", "peer_reduce.py"])
def test_numerical_example(name):
    proc = run_example(ROOT / "examples" / name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stem = name[:-3]
    assert f"{stem}: OK" in proc.stdout, proc.stdout
    assert "WRONG RESULT" not in proc.stdout + proc.stderr


def test_ownership_errors_example():
    proc = run_example(ROOT / "examples" / "ownership_errors.py")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "ownership_errors: OK" in out
    assert "NOT RAISED" not in out
    for cls in (errors.StoreToReadOnlyError, errors.AliasingError, errors.SelfOverlapError,
                errors.ReadOnlyProducerError, errors.UnexpectedPartitionError,
                errors.MissingPartitionError, errors.PartitionShapeError,
                errors.GridMismatchError):
        assert f"{cls.__name__}: " in out, f"{cls.__name__} not shown:\n{out}"
        assert f"rule: {cls.rule}" in out, f"rule of {cls.__name__} not shown"
    # every error shows the user's line: the example file and a line of its source
    example = str(ROOT / "examples" / "ownership_errors.py")
    assert out.count(f"at {example}:") >= 9, out
    assert "nt.store(x, t / 2.0)" in out             # A5 points at the offending store
    assert "add2d(x, x.T, nt.partition(x, (2, 2)), 2, 2, interpret=True)" in out


def test_ownership_errors_example_fails_when_an_error_is_missing(tmp_path):
    """The example's exit status is meaningful: a scenario that raises nothing makes it fail."""
    src = (ROOT / "examples" / "ownership_errors.py").read_text()
    broken = src.replace("    add2d(x, x.T, nt.partition(x, (2, 2)), 2, 2, interpret=True)",
                         "    add2d(x, x.T, nt.partition(x.copy(), (2, 2)), 2, 2, interpret=True)")
    assert broken != src
    path = tmp_path / "ownership_errors_broken.py"
    path.write_text(broken)
    proc = run_example(path)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "aliasing_transpose: AliasingError not raised" in proc.stdout
