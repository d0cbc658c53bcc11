"""On-disk cache of compiled kernels (PTX), one file per specialization.

A kernel's compiled PTX is stored under ``$NUMBA_TILE_CACHE_DIR`` (default
``~/.cache/numba_tile``), keyed by a SHA-256 of: the kernel's source file path and its
modification time and size, the kernel's qualified name, the specialization key
(dtypes, ranks, tile shapes, alignment, constants), ``num_warps``, the compute
capability, the version of numba-cuda, and numba_tile's version and source files. As
with Numba's own ``cache=True``, a change to the kernel's file invalidates its
entries; a change in another module the kernel calls into does not. Kernels without a
source file (defined in an interactive session) are not cached on disk.
Set ``NUMBA_TILE_CACHE_DIR=""`` to disable the disk cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

CACHE_ENV = "NUMBA_TILE_CACHE_DIR"


def cache_dir() -> str | None:
    path = os.environ.get(CACHE_ENV)
    if path is None:
        path = os.path.join(os.path.expanduser("~"), ".cache", "numba_tile")
    return path or None


_VERSIONS: str | None = None


def _versions() -> str:
    """Versions of numba_tile (including the state of its own source files, so an edited
    or upgraded checkout never reads PTX its older lowering wrote) and numba-cuda."""
    global _VERSIONS
    if _VERSIONS is None:
        import numba_cuda

        from . import __version__
        pkg = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256()
        for root, _dirs, files in sorted(os.walk(pkg)):
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(root, name))
                    h.update(f"{root}/{name}:{st.st_mtime_ns}:{st.st_size};".encode())
        _VERSIONS = (f"numba_tile={__version__}:{h.hexdigest()};"
                     f"numba_cuda={getattr(numba_cuda, '__version__', '?')}")
    return _VERSIONS


def entry_key(fn, key, num_warps: int, cc) -> str | None:
    """Hex digest naming one specialization of ``fn``, or None when ``fn`` has no file."""
    code = getattr(fn, "__code__", None)
    path = getattr(code, "co_filename", None)
    if not path or not os.path.isfile(path):
        return None
    st = os.stat(path)
    text = repr((path, st.st_mtime_ns, st.st_size, fn.__qualname__, key, num_warps, tuple(cc),
                 _versions()))
    return hashlib.sha256(text.encode()).hexdigest()


def load(digest: str):
    """The cached ``CompiledKernel`` for ``digest``, or None."""
    d = cache_dir()
    if d is None:
        return None
    try:
        with open(os.path.join(d, digest + ".json")) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    from .compiler import CompiledKernel
    return CompiledKernel(ptx=data["ptx"], entry=data["entry"],
                          param_kinds=tuple(data["param_kinds"]),
                          num_threads=data["num_threads"], cc=tuple(data["cc"]))


def store(digest: str, ck) -> None:
    """Write ``ck`` atomically (write to a temporary file, then rename); errors are ignored:
    the cache is an optimization."""
    d = cache_dir()
    if d is None:
        return
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"ptx": ck.ptx, "entry": ck.entry, "param_kinds": list(ck.param_kinds),
                       "num_threads": ck.num_threads, "cc": list(ck.cc)}, f)
        os.replace(tmp, os.path.join(d, digest + ".json"))
    except OSError:
        pass
