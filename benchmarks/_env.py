"""What a benchmark's header says about the software it ran (shared by the benchmarks)."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dist_version(name: str) -> str:
    """The installed version of distribution ``name``, "?" when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def git_commit() -> str:
    """The repository's short HEAD commit, with "+modified" when tracked files differ from it
    (a working tree copied over another checkout, as on the GPU machine, is not that commit)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10)
        return (out.stdout.strip() or "?") + ("+modified" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "?"
