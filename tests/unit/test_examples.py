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


#: the examples that compute something and check it, printing "<name>: OK"
NUMERICAL = ["vecadd.py", "saxpy.py", "persistent.py", "histogram.py", "scatter_add.py",
             "gemm.py", "gemm_persistent.py", "softmax.py", "softmax_chunked.py", "layernorm.py",
             "rmsnorm.py", "swiglu.py", "cross_entropy.py", "dropout.py",
             "layernorm_backward.py", "rope.py", "grouped_gemm.py", "gemm_fp8.py",
             "peer_reduce.py", "attention.py", "attention_backward.py"]
#: examples with tests of their own: ownership_errors.py below, data_parallel.py in
#: test_data_parallel_example.py (where PyTorch is installed) and below (where it is not),
#: attention_torch.py below (where PyTorch is installed)
OWN_TESTS = ["ownership_errors.py", "data_parallel.py", "attention_torch.py"]
#: examples that need PyTorch (on every machine, or on a GPU machine)
NEED_TORCH = {"data_parallel.py": True, "peer_reduce.py": False, "attention_torch.py": True}


def test_every_file_in_examples_is_an_example_a_test_runs():
    """Every module directly in examples/ is an example run by a test here (helpers shared by
    the examples start with an underscore and are not examples)."""
    files = sorted(p.name for p in (ROOT / "examples").glob("*.py")
                   if not p.name.startswith("_"))
    assert files == sorted(NUMERICAL + OWN_TESTS), set(files) ^ set(NUMERICAL + OWN_TESTS)


def run_without_torch(path) -> subprocess.CompletedProcess:
    """Run ``path`` as ``python examples/X.py`` runs it, with ``import torch`` failing as it
    does where PyTorch is not installed."""
    code = ("import runpy, sys\n"
            "sys.modules['torch'] = None\n"
            f"sys.path.insert(0, {str(path.parent)!r})\n"
            f"sys.argv = [{str(path)!r}]\n"
            f"runpy.run_path({str(path)!r}, run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=example_env(),
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", sorted(NEED_TORCH))
def test_an_example_needing_pytorch_names_the_extra_when_it_is_missing(name):
    """Without PyTorch an example that needs it exits with status 1 and a message naming the
    ``torch`` extra, not a traceback; peer_reduce.py needs it only on a GPU machine."""
    import numba_tile as nt
    if not NEED_TORCH[name] and not nt.gpu_available():
        proc = run_without_torch(ROOT / "examples" / name)
        assert proc.returncode == 0, proc.stdout + proc.stderr       # the interpreter
        assert f"{name[:-3]}: OK" in proc.stdout
        return
    proc = run_without_torch(ROOT / "examples" / name)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'pip install -e ".[torch]"' in proc.stderr, proc.stderr
    assert f"{name[:-3]}: needs PyTorch" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_the_torch_extra_is_declared():
    try:
        import tomllib
    except ImportError:                               # Python 3.10
        tomllib = pytest.importorskip("tomli")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert any(req.startswith("torch") for req in extras["torch"]), extras


@pytest.mark.parametrize("name", NUMERICAL)
def test_numerical_example(name):
    proc = run_example(ROOT / "examples" / name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stem = name[:-3]
    assert f"{stem}: OK" in proc.stdout, proc.stdout
    assert "WRONG RESULT" not in proc.stdout + proc.stderr


def test_attention_torch_example():
    """The attention op's forward and gradients through PyTorch's autograd (CPU tensors: the
    interpreter) against PyTorch's attention in float64."""
    pytest.importorskip("torch")
    proc = run_example(ROOT / "examples" / "attention_torch.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("attention_torch: OK") >= 8, proc.stdout
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
