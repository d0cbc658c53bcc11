"""The tutorials (docs/tutorials/NN_name.py) run as a reader runs them, in a subprocess from
the repository root, in the interpreter (``NUMBA_TILE_INTERPRET=1``): each exits 0 and says it
checked its results against NumPy (the PyTorch one says it was skipped where PyTorch is
missing). Each script has its page, and the index lists the pages in order. A script whose
kernel is wrong exits nonzero. The GPU twin is tests/gpu/test_tutorials_gpu.py."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
SCRIPTS = sorted(TUTORIALS.glob("[0-9][0-9]_*.py"))


def tutorial_env(interpret: bool) -> dict:
    """The environment with the repository root first on PYTHONPATH; the interpreter switch
    set (or removed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    if interpret:
        env["NUMBA_TILE_INTERPRET"] = "1"
    else:
        env.pop("NUMBA_TILE_INTERPRET", None)
    return env


def run_tutorial(path: Path, interpret: bool) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], cwd=ROOT, env=tutorial_env(interpret),
                          capture_output=True, text=True, timeout=600)


def needs_torch(path: Path) -> bool:
    return "import torch" in path.read_text()


def torch_importable() -> bool:
    proc = subprocess.run([sys.executable, "-c", "import torch"], env=tutorial_env(True),
                          capture_output=True)
    return proc.returncode == 0


def test_the_tutorials_are_there():
    assert len(SCRIPTS) == 15, [p.name for p in SCRIPTS]
    assert [p.name[:2] for p in SCRIPTS] == [f"{i:02d}" for i in range(1, 16)]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_tutorial_runs_in_the_interpreter_and_checks_its_results(path):
    proc = run_tutorial(path, interpret=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "WRONG RESULT" not in out
    if needs_torch(path) and not torch_importable():
        assert "skipped: needs PyTorch" in proc.stdout, out
        return
    assert "checked" in proc.stdout, out
    assert "running on the GPU" not in proc.stdout, out


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_tutorial_has_its_page(path):
    page = path.with_suffix(".md")
    assert page.exists(), f"{page.name} missing"
    text = page.read_text()
    assert text.startswith(f"# {int(path.name[:2])}. "), text[:80]
    # every literalinclude names this script, and every :pyobject: exists in it
    includes = re.findall(r"```\{literalinclude\} (\S+)", text)
    assert includes and set(includes) == {path.name}, includes
    source = path.read_text()
    for name in re.findall(r":pyobject: (\w+)", text):
        assert re.search(rf"^def {name}\(", source, re.M), f"{page.name}: no function {name}"
    for marker in re.findall(r':(?:start-after|end-before): "([^"]+)"', text):
        assert marker in source, f"{page.name}: marker {marker!r} not in {path.name}"


def test_the_index_lists_every_page_in_order():
    index = (TUTORIALS / "index.md").read_text()
    toctree = re.search(r"```\{toctree\}\n(.*?)```", index, re.S).group(1)
    entries = [line.strip() for line in toctree.splitlines()
               if line.strip() and not line.startswith(":")]
    assert entries and entries == [p.stem for p in SCRIPTS]
    links = re.findall(r"\]\((\d\d_\w+)\.md\)", index)
    assert links == [p.stem for p in SCRIPTS]


def test_a_wrong_kernel_makes_the_tutorial_fail(tmp_path):
    """The exit status is meaningful: the vector add with a subtraction is caught."""
    src = (TUTORIALS / "01_vector_add.py").read_text()
    broken = src.replace("nt.store(z, a + b)", "nt.store(z, a - b)")
    assert broken != src
    path = tmp_path / "01_vector_add_broken.py"
    path.write_text(broken)
    proc = run_tutorial(path, interpret=True)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "WRONG RESULT" in proc.stderr and "checked" not in proc.stdout
