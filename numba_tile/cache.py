"""On-disk cache of compiled kernels (PTX), one file per specialization.

A kernel's compiled PTX is stored under ``$NUMBA_TILE_CACHE_DIR`` (default
``~/.cache/numba_tile``), named by :func:`entry_key`: a SHA-256 of

* the kernel's :class:`~numba_tile.frozen.Snapshot` digest: its bytecode and constants, the
  globals and closure cells it reads (by value; for a user module, the attributes read),
  and the same for every user function it reaches (``@intrinsic`` definitions, numba-cuda
  device functions, overloads), recursively;
* the specialization key (dtypes, ranks, tile shapes, alignment, constants by identity:
  their exact types and a float's bits, inside tuples too, ``constant_identity.py``);
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

Each entry stores, beside its fields (PTX, entry symbol, parameter kinds, threads per block,
compute capability, shared memory, tensor maps, cluster width), a SHA-256 over its key and
every one of those fields. :func:`load` recomputes it and checks every field's type and range;
an entry that does not verify (edited, truncated, garbled, copied under another key) is
treated as missing: the kernel compiles and the entry is overwritten. The digest is not a
signature: whoever can write the cache directory can also write a matching digest
(``docs/safety.md``, "What the disk cache trusts").
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
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


#: the fields of an entry besides its digest (those of ``compiler.CompiledKernel``)
_FIELDS = frozenset({"ptx", "entry", "param_kinds", "num_threads", "cc", "shared_bytes",
                     "tensor_maps", "cluster"})


def _fields(ck) -> dict:
    """Every field of a ``CompiledKernel`` as the entry stores it (JSON values)."""
    return {"ptx": ck.ptx, "entry": ck.entry, "param_kinds": list(ck.param_kinds),
            "num_threads": ck.num_threads, "cc": list(ck.cc), "shared_bytes": ck.shared_bytes,
            "tensor_maps": [list(m) for m in ck.tensor_maps], "cluster": ck.cluster}


def _check_digest(key: str, fields: dict) -> str:
    """SHA-256 hex over an entry's key and every field it holds, in one canonical encoding
    (sorted keys, no whitespace): stored with the entry and recomputed when it is read."""
    text = json.dumps([key, fields], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _from_fields(data: dict, key: str):
    """The ``CompiledKernel`` an entry describes, or None when any field is missing, of the
    wrong type or out of range, or the entry's digest does not match its key and fields."""
    from .compiler import CompiledKernel
    from .runtime.params import PARAM_KINDS
    if type(data) is not dict or set(data) != _FIELDS | {"digest"}:
        return None
    fields = {k: data[k] for k in _FIELDS}
    if data["digest"] != _check_digest(key, fields):
        return None
    ptx, entry, kinds = fields["ptx"], fields["entry"], fields["param_kinds"]
    threads, cc, shared = fields["num_threads"], fields["cc"], fields["shared_bytes"]
    maps, cluster = fields["tensor_maps"], fields["cluster"]
    ok = (type(ptx) is str and type(entry) is str
          and type(kinds) is list and all(type(k) is str and k in PARAM_KINDS for k in kinds)
          and type(threads) is int and threads >= 1
          and type(cc) is list and len(cc) == 2 and all(type(c) is int for c in cc)
          and type(shared) is int and 0 <= shared < 1 << 32
          and type(maps) is list and all(type(m) is list and len(m) == 2 and type(m[0]) is str
                                         and type(m[1]) is int for m in maps)
          and cluster in (1, 2) and type(cluster) is int)
    if not ok:
        return None
    return CompiledKernel(ptx=ptx, entry=entry, param_kinds=tuple(kinds), num_threads=threads,
                          cc=tuple(cc), shared_bytes=shared,
                          tensor_maps=tuple((n, r) for n, r in maps), cluster=cluster)


def read_regular(path: str) -> bytes:
    """The bytes of the regular file at ``path``. Opened without blocking (``O_NONBLOCK``) and
    checked with ``fstat`` before reading: a FIFO, a device (a link to ``/dev/zero``), a socket
    or a directory put in place of a cache file is refused, never waited on or read forever.

    Raises:
        OSError: no such file, unreadable, or not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        with os.fdopen(fd, "rb") as f:
            fd = None
            return f.read()
    finally:
        if fd is not None:
            os.close(fd)


def load(digest: str):
    """The cached ``CompiledKernel`` for ``digest``, or None: no entry, or one that does not
    verify (not a regular file, unreadable, truncated, not JSON, a field missing, mistyped or
    out of range, or a stored digest that does not match the entry's key and fields). The
    caller then compiles and overwrites the entry; a bad entry is never an error."""
    d = cache_dir()
    if d is None:
        return None
    try:
        data = json.loads(read_regular(os.path.join(d, digest + ".json")).decode("utf-8"))
        return _from_fields(data, digest)
    except (OSError, ValueError, RecursionError, MemoryError):
        return None     # unreadable, or not JSON: recompile


def store(digest: str, ck) -> None:
    """Write ``ck`` with the digest of its key and fields, atomically (write to a temporary
    file, then rename); errors are ignored: the cache is an optimization."""
    d = cache_dir()
    if d is None:
        return
    fields = _fields(ck)
    data = dict(fields, digest=_check_digest(digest, fields))
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, os.path.join(d, digest + ".json"))
    except OSError:
        pass
