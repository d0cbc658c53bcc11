"""The configuration fuzzer's CPU mode on a small random sample, every run: 24 configurations
across every kernel family (``python -m benchmarks.fuzz --mode cpu``), each in a process of
its own, run in numba_tile's interpreter against NumPy in float64 after the compile for
compute capability 9.0 (a quarter also compiled for 8.0). Any wrong value, crash, or
refusal that names neither the kernel nor the argument fails the test; the seed is random
and printed, so a failure is replayed with ``--seed``."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _fuzz(args, tmp_path, timeout=600):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    return subprocess.run([sys.executable, "-m", "benchmarks.fuzz", *args, "--out",
                           str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_a_random_sample_of_every_family_in_the_interpreter(tmp_path):
    seed = secrets.randbelow(2 ** 31)
    out = _fuzz(["--mode", "cpu", "-n", "24", "--jobs", "2", "--seed", str(seed), "--quiet"],
                tmp_path)
    assert out.returncode == 0, (f"fuzzer seed {seed} (replay: python -m benchmarks.fuzz "
                                 f"--mode cpu -n 24 --seed {seed}):\n{out.stdout}\n{out.stderr}")
    records = [json.loads(line) for line in (tmp_path / "cases.jsonl").read_text().splitlines()]
    cases = [r for r in records[1:]]
    assert len(cases) == 24
    from benchmarks.fuzz.families import public
    assert {r["family"] for r in cases} == set(public())     # every family in 24 cases
    assert sum(r["outcome"] == "ok" for r in cases) >= 12, out.stdout
    assert "| **all** | 24 |" in (tmp_path / "summary.md").read_text()
