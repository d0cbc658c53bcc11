"""On-disk cache of compiled kernels (PTX), one file per specialization.

A kernel's compiled PTX is stored under ``$NUMBA_TILE_CACHE_DIR`` (default
``~/.cache/numba_tile``), named by :func:`entry_key`: a SHA-256 of

* the kernel's :class:`~numba_tile.frozen.Snapshot` digest: its bytecode and constants, the
  globals and closure cells it reads (by value; for a user module, the attributes read),
  and the same for every user function it reaches (``@intrinsic`` definitions, numba-cuda
  device functions, overloads), recursively;
* the specialization key (dtypes, ranks, tile shapes, alignment, constant values);
* every compile option (``num_warps``, ``min_blocks_per_sm``, ``unchecked``, the parameters'
  roles and declared tile shapes) and the target compute capability;
* the versions of numba_tile (and the state of its source files), numba-cuda, Numba,
  llvmlite, NumPy, ml_dtypes, Python and libNVVM, and the ``NUMBA_*`` environment variables
  (Numba's configuration).

A kernel whose inputs the snapshot cannot cover (``Snapshot.digest`` is None: an object of
unknown type, a device pointer, no source file) gets no disk entry. The cache holds PTX only:
the ownership verdict is never read from it (``Kernel.compile`` types the snapshot and runs
the ownership pass before using a cached entry). Set ``NUMBA_TILE_CACHE_DIR=""`` to disable
the disk cache.
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


def _nvvm_version() -> str:
    try:
        from numba.cuda.cudadrv import nvvm
        lib = nvvm.NVVM()
        return f"{lib.get_version()}/{lib.get_ir_version()}"
    except Exception:  # noqa: BLE001 - no libNVVM: compiling fails with its own message
        return "unavailable"


def _versions() -> str:
    """Versions of everything below the kernel's own code: numba_tile (including the state of
    its own source files, so an edited or upgraded checkout never reads PTX its older lowering
    wrote), numba-cuda, Numba, llvmlite, NumPy, ml_dtypes, Python and libNVVM."""
    global _VERSIONS
    if _VERSIONS is None:
        import sys

        import llvmlite
        import ml_dtypes
        import numba
        import numba_cuda
        import numpy

        from . import __version__
        pkg = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256()
        for root, _dirs, files in sorted(os.walk(pkg)):
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(root, name))
                    h.update(f"{root}/{name}:{st.st_mtime_ns}:{st.st_size};".encode())
        _VERSIONS = ";".join([
            f"numba_tile={__version__}:{h.hexdigest()}",
            f"numba_cuda={getattr(numba_cuda, '__version__', '?')}",
            f"numba={numba.__version__}", f"llvmlite={llvmlite.__version__}",
            f"numpy={numpy.__version__}", f"ml_dtypes={getattr(ml_dtypes, '__version__', '?')}",
            f"python={sys.version}", f"nvvm={_nvvm_version()}"])
    return _VERSIONS


def _numba_environment() -> str:
    """Numba's configuration from the environment (optimization level, debug info, bounds
    checks...), which changes the PTX it generates."""
    return repr(sorted((k, v) for k, v in os.environ.items()
                       if k.startswith("NUMBA_") and not k.startswith("NUMBA_TILE_")))


def entry_key(snap, spec_key, options: dict, cc) -> str | None:
    """Hex digest naming one specialization's PTX on disk, or None when it gets no entry.

    Args:
        snap: the :class:`~numba_tile.frozen.Snapshot` that is compiled.
        spec_key: the specialization key (dtypes, ranks, tile shapes, alignment, constants).
        options: every compile option (names to values of the kinds a snapshot digests).
        cc: the compute capability compiled for.

    Returns:
        The key, or None when ``snap`` cannot be covered (``snap.uncovered`` says why) or
        a value in ``spec_key`` or ``options`` is of a type the digest does not know (a
        constant of a user class).
    """
    if snap.digest is None:
        return None
    from .frozen import digest_value
    inputs, _why = digest_value((spec_key, sorted(options.items()), tuple(cc)))
    if inputs is None:
        return None
    text = repr((snap.digest, inputs, _versions(), _numba_environment()))
    return hashlib.sha256(text.encode()).hexdigest()


def load(digest: str):
    """The cached ``CompiledKernel`` for ``digest``, or None."""
    d = cache_dir()
    if d is None:
        return None
    try:
        with open(os.path.join(d, digest + ".json")) as f:
            data = json.load(f)
        from .compiler import CompiledKernel
        return CompiledKernel(ptx=data["ptx"], entry=data["entry"],
                              param_kinds=tuple(data["param_kinds"]),
                              num_threads=int(data["num_threads"]), cc=tuple(data["cc"]),
                              shared_bytes=int(data["shared_bytes"]),
                              tensor_maps=tuple((str(n), int(r))
                                                for n, r in data["tensor_maps"]),
                              cluster=int(data.get("cluster", 1)))
    except (OSError, ValueError, KeyError, TypeError):
        return None     # unreadable, or written by a version without a field: recompile


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
                       "num_threads": ck.num_threads, "cc": list(ck.cc),
                       "shared_bytes": ck.shared_bytes,
                       "tensor_maps": [list(m) for m in ck.tensor_maps],
                       "cluster": ck.cluster}, f)
        os.replace(tmp, os.path.join(d, digest + ".json"))
    except OSError:
        pass
