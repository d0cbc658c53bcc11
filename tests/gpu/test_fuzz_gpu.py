"""The configuration fuzzer on the GPU (``python -m benchmarks.fuzz``): its pinned cases (the
pipelined loads of tiles with fewer 16-byte chunks than threads, which wrote shared memory out
of bounds and killed the CUDA context), a random sample of every family, and a sample under
compute-sanitizer memcheck; each case in a process of its own, against NumPy in float64."""

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.fuzz import pinned
from benchmarks.fuzz.runner import Runner

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


def _fuzz(args, tmp_path, timeout=900):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    return subprocess.run([sys.executable, "-m", "benchmarks.fuzz", *args, "--out",
                           str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("name", sorted(pinned.PINNED))
def test_pinned_cases_run_on_the_gpu(name):
    case = pinned.case(name)
    got = []
    runner = Runner("gpu", 1, 300.0)
    try:
        runner.run([case], lambda c, r: got.append(r))
    finally:
        runner.close()
    assert got[0].outcome == "ok", f"{name}: {got[0].outcome}: {got[0].message}"


def test_a_random_gpu_sample_of_every_family(tmp_path):
    seed = secrets.randbelow(2 ** 31)
    out = _fuzz(["-n", "39", "--jobs", str(min(8, os.cpu_count() or 1)), "--seed", str(seed),
                 "--quiet"], tmp_path)
    assert out.returncode == 0, (f"fuzzer seed {seed} (replay: python -m benchmarks.fuzz -n 39 "
                                 f"--seed {seed}):\n{out.stdout}\n{out.stderr}")
    lines = (tmp_path / "cases.jsonl").read_text().splitlines()[1:]
    assert sum(json.loads(line)["outcome"] == "ok" for line in lines) >= 20, out.stdout


@pytest.mark.skipif(shutil.which("compute-sanitizer") is None,
                    reason="compute-sanitizer is not on PATH")
def test_a_sample_under_memcheck(tmp_path):
    seed = secrets.randbelow(2 ** 31)
    out = _fuzz(["-n", "13", "--jobs", str(min(8, os.cpu_count() or 1)), "--seed", str(seed),
                 "--sanitize", "memcheck", "--pinned", "--quiet"], tmp_path, timeout=1800)
    assert out.returncode == 0, (f"fuzzer seed {seed} under memcheck:\n{out.stdout}\n"
                                 f"{out.stderr}")
