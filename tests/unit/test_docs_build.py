"""The documentation site: ``sphinx-build -W`` builds it without a warning, its API reference
documents every public name of numba_tile, and the README says how to build it.

The build runs once per module (about 15 s on two cores): MyST pages, autodoc with napoleon,
nothing executed.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import zlib

import pytest

import numba_tile

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BUILD_COMMAND = "python -m sphinx -b html docs docs/_build/html"


@pytest.fixture(scope="module")
def built_docs(tmp_path_factory):
    """``(completed process, output directory)`` of one warnings-as-errors HTML build."""
    out = tmp_path_factory.mktemp("html")
    doctrees = tmp_path_factory.mktemp("doctrees")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(doctrees), str(DOCS), str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    return proc, out


def _inventory(path: pathlib.Path) -> dict:
    """``{object name: (role, page uri)}`` from a Sphinx ``objects.inv`` (version 2)."""
    data = path.read_bytes()
    lines = data.split(b"\n", 4)
    assert lines[0].startswith(b"# Sphinx inventory version 2"), lines[0]
    entries = {}
    for line in zlib.decompress(lines[4]).decode().splitlines():
        name, role, _prio, rest = line.split(" ", 3)
        uri = rest.split(" ", 1)[0]
        entries.setdefault(name, []).append((role, uri))
    return entries


def _public_names() -> list[str]:
    """``__all__`` and the names left out of it only so as not to shadow builtins."""
    extra = [n for n in ("abs", "max", "min", "sum")
             if getattr(numba_tile, n) in numba_tile._PUBLIC_NOT_STARRED]
    return sorted(set(numba_tile.__all__) | set(extra))


def test_docs_build_with_warnings_as_errors(built_docs):
    proc, out = built_docs
    assert proc.returncode == 0, (
        f"sphinx-build -W failed (rc {proc.returncode}):\n{proc.stderr[-8000:]}")
    for page in ("index.html", "guide/index.html", "api/index.html", "safety.html",
                 "performance.html", "random.html", "changelog.html", "tutorials/index.html",
                 "coming_from_triton.html", "coming_from_cutile.html"):
        assert (out / page).is_file(), f"{page} was not built"


def test_api_reference_documents_every_public_name(built_docs):
    proc, out = built_docs
    assert proc.returncode == 0, proc.stderr[-4000:]
    inventory = _inventory(out / "objects.inv")
    missing, elsewhere = [], []
    for name in _public_names():
        found = inventory.get(f"numba_tile.{name}")
        if not found:
            missing.append(name)
        elif not any(uri.startswith("api/") for _role, uri in found):
            elsewhere.append(name)
    assert not missing, f"public names with no entry in the API reference: {missing}"
    assert not elsewhere, f"public names documented outside docs/api/: {elsewhere}"


def test_api_reference_documents_every_error_class(built_docs):
    proc, out = built_docs
    assert proc.returncode == 0, proc.stderr[-4000:]
    inventory = _inventory(out / "objects.inv")
    missing = [n for n in numba_tile.errors.__all__
               if f"numba_tile.errors.{n}" not in inventory]
    assert not missing, f"error classes missing from the API reference: {missing}"


def test_readme_says_how_to_build_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert BUILD_COMMAND in readme
    # the two commands CI and a new user run, as the README gives them
    assert ('pip install -e ".[test]" && python examples/vecadd.py') in readme
    assert "python -m pytest -q -p no:cacheprovider tests" in readme


def test_test_extra_installs_the_docs_build():
    """CI installs ``.[test]`` and runs the tests, this build among them."""
    tomllib = pytest.importorskip("tomllib")      # Python 3.11+
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in extras["test"]}
    for dep in extras["docs"]:
        assert dep.split(">")[0].split("=")[0].split("<")[0].strip() in names, dep
