"""The configuration fuzzer's CPU mode on a small random sample, every run: three
configurations of each kernel family (``python -m benchmarks.fuzz --mode cpu``), each in a
process of its own, run in numba_tile's interpreter against NumPy in float64 after the compile for
compute capability 9.0 (a quarter also compiled for 8.0). Any wrong value, crash, or
refusal that names neither the kernel nor the argument fails the test; the seed is random
and printed, so a failure is replayed with ``--seed``."""

import json
import os
import secrets
import subprocess
import sys
from collections import Counter
from pathlib import Path

from benchmarks.fuzz.families import public

ROOT = Path(__file__).resolve().parents[2]
N = 3 * len(public())


def _fuzz(args, tmp_path, timeout=600):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    return subprocess.run([sys.executable, "-m", "benchmarks.fuzz", *args, "--out",
                           str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_a_random_sample_of_every_family_in_the_interpreter(tmp_path):
    seed = secrets.randbelow(2 ** 31)
    out = _fuzz(["--mode", "cpu", "-n", str(N), "--jobs", "2", "--seed", str(seed), "--quiet"],
                tmp_path)
    assert out.returncode == 0, (f"fuzzer seed {seed} (replay: python -m benchmarks.fuzz "
                                 f"--mode cpu -n {N} --seed {seed}):\n{out.stdout}\n{out.stderr}")
    records = [json.loads(line) for line in (tmp_path / "cases.jsonl").read_text().splitlines()]
    cases = records[1:]
    assert len(cases) == N
    counts = Counter(r["family"] for r in cases)
    assert counts == {f: 3 for f in public()}               # each family takes its turns
    assert sum(r["outcome"] == "ok" for r in cases) >= N // 2, out.stdout
    assert f"| **all** | {N} |" in (tmp_path / "summary.md").read_text()
