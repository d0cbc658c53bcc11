"""The on-disk PTX cache: its key covers everything the PTX depends on, and a disk entry never
supplies the ownership verdict.

The cross-process cases run two fresh Python processes on one cache directory (process A, then
process B) over kernels in module files written to a temporary directory; between the two, a
global read at compile time changes (through the environment, so no file changes), and two
helper files change: an ``@intrinsic``'s codegen, and a plain function its codegen reaches
through a closure cell.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import cuda

import numba_tile as nt
from numba_tile import cache, errors, frozen
from numba_tile.compiler import CompiledKernel
from numba_tile.runtime.fakes import FakeDeviceArray

F3, F5 = "0f40400000", "0f40A00000"       # 3.0 and 5.0 as PTX float constants

KMOD = '''
import os
import numba_tile as nt
from helpers_codegen import codegen_factor
from helpers_closure import closure_factor

FLAG = int(os.environ["KFLAG"])


def make(s):
    @nt.jit
    def scale(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z) * s)
    return scale


def make_writer(into_input):
    @nt.jit
    def copy(x, z: nt.Partition):
        t = nt.load_like(x, z)
        if into_input:
            nt.store(x, t)  # STORE-INTO-INPUT
        nt.store(z, t)
    return copy


@nt.jit
def flagged(x, z: nt.Partition):
    t = nt.load_like(x, z)
    if FLAG == 1:
        t = t * 3.0
    nt.store(z, t)


@nt.jit(unchecked=True)
def via_codegen(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * codegen_factor())


@nt.jit(unchecked=True)
def via_closure(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * closure_factor())
'''

HELPERS_CODEGEN = '''
from numba.cuda import types
from numba.cuda.extending import intrinsic


@intrinsic
def codegen_factor(typingctx):
    def codegen(context, builder, sig, args):
        return context.get_constant(types.float32, {value})
    return types.float32(), codegen
'''

HELPERS_CLOSURE = '''
from numba.cuda import types
from numba.cuda.extending import intrinsic


def constant():
    return {value}


def make_factor():
    value = constant

    @intrinsic
    def closure_factor(typingctx):
        def codegen(context, builder, sig, args):
            return context.get_constant(types.float32, value())
        return types.float32(), codegen
    return closure_factor


closure_factor = make_factor()
'''

PRELUDE = '''
import json
import re
import sys

import numpy as np

import numba_tile as nt
from numba_tile import kernel as _kernel

CALLS = {"compile": 0, "check": 0}


def _counting(name, real):
    def wrapper(*args, **kwargs):
        CALLS[name] += 1
        return real(*args, **kwargs)
    return wrapper


_kernel.compile_kernel = _counting("compile", _kernel.compile_kernel)
_kernel.check_kernel = _counting("check", _kernel.check_kernel)
X = np.arange(64, dtype=np.float32)
RESULTS = {}


def case(name, kernel, interpret=False):
    before = dict(CALLS)
    out = {}
    try:
        ptx = kernel.ptx(X, nt.partition(np.zeros(64, np.float32), 16))
        out["floats"] = sorted(set(re.findall(r"0f[0-9A-F]{8}", ptx)))
        if interpret:
            z = np.zeros(64, np.float32)
            kernel(X, nt.partition(z, 16), interpret=True)
            out["values"] = z.tolist()
    except nt.errors.TileError as e:
        out["error"] = [type(e).__name__, e.filename, e.lineno]
    out.update({k: CALLS[k] - before[k] for k in CALLS})
    RESULTS[name] = out


import kmod
'''


def _write(directory, name, text):
    (directory / name).write_text(textwrap.dedent(text))


def run_process(directory, cache_dir, body, **env):
    """Run PRELUDE + ``body`` in a fresh interpreter on ``cache_dir``; its RESULTS."""
    script = PRELUDE + textwrap.dedent(body) + "\nprint(json.dumps(RESULTS))\n"
    full = dict(os.environ, NUMBA_TILE_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1",
                PYTHONPATH=os.pathsep.join([str(directory)] + [p for p in sys.path if p]),
                **env)
    done = subprocess.run([sys.executable, "-c", script], cwd=directory, env=full,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """Process A, then process B on the same cache directory: B's global FLAG and both helper
    files differ from A's; the kernel module file is the same."""
    directory = tmp_path_factory.mktemp("kernels")
    cache_dir = directory / "cache"
    _write(directory, "kmod.py", KMOD)
    runs = {}
    for name, value, flag, body in [
        ("A", "3.0", "0", '''
            case("make3", kmod.make(3.0), interpret=True)
            case("writer_ok", kmod.make_writer(False))
            case("flagged", kmod.flagged)
            case("codegen", kmod.via_codegen)
            case("closure", kmod.via_closure)
        '''),
        ("B", "5.0", "1", '''
            case("make5", kmod.make(5.0), interpret=True)
            case("make3", kmod.make(3.0))
            case("writer_bad", kmod.make_writer(True))
            case("flagged", kmod.flagged)
            case("codegen", kmod.via_codegen)
            case("closure", kmod.via_closure)
        ''')]:
        _write(directory, "helpers_codegen.py", HELPERS_CODEGEN.format(value=value))
        _write(directory, "helpers_closure.py", HELPERS_CLOSURE.format(value=value))
        runs[name] = run_process(directory, cache_dir, body, KFLAG=flag)
    runs["kmod"] = str(directory / "kmod.py")
    return runs


def test_two_kernels_of_one_factory_keep_their_own_constants(two_processes):
    a, b = two_processes["A"]["make3"], two_processes["B"]["make5"]
    assert F3 in a["floats"] and F5 not in a["floats"]
    assert F5 in b["floats"] and F3 not in b["floats"], "make(5.0) got the PTX of make(3.0)"
    assert b["compile"] == 1
    assert a["values"] == (3 * np.arange(64)).tolist()
    assert b["values"] == (5 * np.arange(64)).tolist()


def test_identical_kernels_in_two_processes_share_an_entry_and_are_checked(two_processes):
    hit = two_processes["B"]["make3"]
    assert F3 in hit["floats"]
    assert hit["compile"] == 0, "process B compiled again instead of loading the entry"
    assert hit["check"] == 1, "a disk hit must still type the kernel and run the ownership pass"


def test_a_factory_kernel_storing_into_an_input_is_refused_despite_a_cached_sibling(two_processes):
    assert "error" not in two_processes["A"]["writer_ok"]
    err = two_processes["B"]["writer_bad"].get("error")
    line = KMOD.splitlines().index("            nt.store(x, t)  # STORE-INTO-INPUT") + 1
    assert err == ["StoreToReadOnlyError", two_processes["kmod"], line]


def test_a_global_changed_between_processes_changes_the_ptx(two_processes):
    a, b = two_processes["A"]["flagged"], two_processes["B"]["flagged"]
    assert F3 not in a["floats"]
    assert F3 in b["floats"], "FLAG=1 in process B, but it loaded the PTX compiled with FLAG=0"
    assert b["compile"] == 1


@pytest.mark.parametrize("case", ["codegen", "closure"])
def test_a_changed_intrinsic_or_closure_helper_changes_the_key(two_processes, case):
    """``codegen``: the intrinsic's codegen changed; ``closure``: only a plain function its
    codegen reaches through a closure cell changed (in a file the kernel's is not)."""
    a, b = two_processes["A"][case], two_processes["B"][case]
    assert F3 in a["floats"] and F5 in b["floats"] and F3 not in b["floats"]
    assert b["compile"] == 1


# ----------------------------------------------------------------------------- in process

@nt.jit
def scale(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 3.0)


@nt.jit
def into_input(x, z: nt.Partition):
    nt.store(x, nt.load_like(x, z))  # INTO-INPUT


def make_copy():
    """A fresh legal kernel (its own in-memory cache)."""
    @nt.jit
    def copy(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z))
    return copy


def _no_compile(*args, **kwargs):
    raise AssertionError("compiled again despite a cache entry")


def test_ptx_round_trips_through_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    x = np.zeros(4096, np.float32)
    first = scale.ptx(x, nt.partition(x.copy(), 1024), 1024)
    assert len(list(tmp_path.glob("*.json"))) == 1
    scale._compiled.clear()
    scale._checked.clear()
    checks = []
    real_check = nt.kernel.check_kernel
    monkeypatch.setattr("numba_tile.kernel.compile_kernel", _no_compile)
    monkeypatch.setattr("numba_tile.kernel.check_kernel",
                        lambda *a, **k: checks.append(a[0]) or real_check(*a, **k))
    assert scale.ptx(x, nt.partition(x.copy(), 1024), 1024) == first
    assert len(checks) == 1 and checks[0] is scale.snapshot(next(iter(scale._snapshots))).fn


def test_a_disk_hit_never_supplies_the_ownership_verdict(tmp_path, monkeypatch):
    """Even an entry found under the kernel's key (here: any digest finds one) is used only
    after typing and the ownership pass accept the kernel."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    planted = CompiledKernel(ptx="// planted", entry="k", param_kinds=(), num_threads=128,
                             cc=(9, 0))
    monkeypatch.setattr(cache, "load", lambda digest: planted)
    monkeypatch.setattr("numba_tile.kernel.compile_kernel", _no_compile)
    x = np.zeros(64, np.float32)
    with pytest.raises(errors.StoreToReadOnlyError) as info:
        into_input.ptx(x, nt.partition(x.copy(), 16))
    with open(__file__) as f:
        line = next(i for i, ln in enumerate(f, 1) if ln.rstrip().endswith("# INTO-INPUT"))
    assert (info.value.filename, info.value.lineno) == (__file__, line)
    assert make_copy().ptx(x, nt.partition(x.copy(), 16)) == "// planted"   # a legal one: used


class Opaque:
    """A type the digest does not know."""

    scale = 2.0


def _closure_kernels():
    dev = FakeDeviceArray(np.zeros(64, np.float32))
    box = Opaque()

    @nt.jit(unchecked=True)
    def device_pointer(x, z: nt.Partition):
        cuda.atomic.add(dev, 0, 1.0)          # numba-cuda bakes dev's address into the PTX
        nt.store(z, nt.load_like(x, z))

    @nt.jit
    def unknown_unused(x, z: nt.Partition):
        if False:
            b = box  # noqa: F841
        nt.store(z, nt.load_like(x, z))

    @nt.jit
    def unknown_used(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z) * box.scale)

    return device_pointer, unknown_unused, unknown_used


def test_no_disk_entry_for_a_device_pointer_or_an_object_of_unknown_type(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    device_pointer, unknown_unused, unknown_used = _closure_kernels()
    x = np.zeros(64, np.float32)
    assert ".entry" in device_pointer.ptx(x, nt.partition(x.copy(), 16))
    assert ".entry" in unknown_unused.ptx(x, nt.partition(x.copy(), 16))
    with pytest.raises(errors.TileTypingError, match="Untyped global name 'box'"):
        unknown_used.ptx(x, nt.partition(x.copy(), 16))
    assert list(tmp_path.iterdir()) == []
    (snap,) = device_pointer._snapshots.values()
    assert snap.digest is None and "holds a device pointer" in snap.uncovered
    (snap,) = unknown_unused._snapshots.values()
    assert snap.digest is None and "test_cache.Opaque" in snap.uncovered
    assert ".entry" in make_copy().ptx(x, nt.partition(x.copy(), 16))   # the cache still works
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_keys_differ_per_specialization_option_and_target():
    snap = frozen.snapshot(scale.fn)
    opts = {"num_warps": 4, "unchecked": False, "min_blocks_per_sm": None, "params": ()}
    k1 = cache.entry_key(snap, ("a",), opts, (9, 0))
    assert k1 == cache.entry_key(frozen.snapshot(scale.fn), ("a",), dict(opts), (9, 0))
    assert k1 != cache.entry_key(snap, ("b",), opts, (9, 0))
    assert k1 != cache.entry_key(snap, ("a",), opts, (8, 0))
    for name, value in [("num_warps", 8), ("unchecked", True), ("min_blocks_per_sm", 2),
                        ("params", (("x", "array", None),))]:
        assert k1 != cache.entry_key(snap, ("a",), dict(opts, **{name: value}), (9, 0)), name
    assert cache.entry_key(snap, ((Opaque, Opaque()),), opts, (9, 0)) is None   # a user constant


def test_numba_configuration_in_the_environment_changes_the_key(monkeypatch):
    snap = frozen.snapshot(scale.fn)
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    k1 = cache.entry_key(snap, ("a",), {}, (9, 0))
    monkeypatch.setenv("NUMBA_OPT", "0")
    assert cache.entry_key(snap, ("a",), {}, (9, 0)) != k1


def test_no_key_for_a_function_without_source():
    ns = {}
    exec("def f(x):\n    return x\n", ns)
    assert cache.entry_key(frozen.snapshot(ns["f"]), ("a",), {}, (9, 0)) is None


def test_empty_cache_dir_disables_the_cache(monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, "")
    assert cache.cache_dir() is None
    assert cache.load("0" * 64) is None


# ----------------------------------------------------------------------------- entry digests

def _make_scale():
    """A fresh kernel (its own in-memory cache) with a float constant in its PTX."""
    @nt.jit
    def scale3(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) * 3.0)
    return scale3


def _counting_compiles(monkeypatch):
    calls = []
    real = nt.kernel.compile_kernel
    monkeypatch.setattr("numba_tile.kernel.compile_kernel",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _entry(tmp_path):
    (path,) = tmp_path.glob("*.json")
    return path


def _compiled(kernel):
    x = np.zeros(4096, np.float32)
    return kernel.compiled(x, nt.partition(x.copy(), 1024), 1024)


def _same_code(ck):
    """A CompiledKernel without its symbol names (which number each compilation)."""
    return dataclasses.replace(ck, ptx=re.sub(r"_ZN\w+", "SYM", ck.ptx), entry="SYM")


def _edit_ptx(data):
    data["ptx"] = data["ptx"].replace(F3, F5)


def _edit_threads(data):
    data["num_threads"] = 32


def _edit_shared(data):
    data["shared_bytes"] = 1 << 20


def _edit_and_redigest_other_key(data):
    """A well-formed entry, digest and all, of another key copied under this one."""
    fields = {k: v for k, v in data.items() if k != "digest"}
    _edit_ptx(fields)
    data.clear()
    data.update(fields, digest=cache._check_digest("f" * 64, fields))


@pytest.mark.parametrize("edit", [_edit_ptx, _edit_threads, _edit_shared,
                                  _edit_and_redigest_other_key])
def test_an_edited_entry_is_compiled_again_and_overwritten(tmp_path, monkeypatch, edit):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    first = _compiled(_make_scale())
    path = _entry(tmp_path)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    calls = _counting_compiles(monkeypatch)
    again = _compiled(_make_scale())
    assert calls == [1], "the edited entry was used"
    assert _same_code(again) == _same_code(first) and F5 not in again.ptx
    assert cache.load(path.stem) == again                 # overwritten with a verified entry


@pytest.mark.parametrize("content", [
    b"", b"{", b"\xff\xfe garbage", b"[1, 2, 3]", b"null", b'"ptx"', b"[" * 100000,
    b'{"ptx": 1}', "TRUNCATE", "NO_DIGEST", "WRONG_TYPES"])
def test_an_unreadable_or_malformed_entry_is_compiled_again(tmp_path, monkeypatch, content):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    first = _compiled(_make_scale())
    path = _entry(tmp_path)
    text = path.read_bytes()
    data = json.loads(text)
    if content == "TRUNCATE":
        content = text[: len(text) // 2]
    elif content == "NO_DIGEST":                          # an entry of an older numba_tile
        content = json.dumps({k: v for k, v in data.items() if k != "digest"}).encode()
    elif content == "WRONG_TYPES":                        # digest matches, fields do not fit
        fields = {k: v for k, v in data.items() if k != "digest"}
        fields.update(num_threads="128", param_kinds=[["u64"]], cluster=True)
        content = json.dumps(dict(fields, digest=cache._check_digest(path.stem, fields))).encode()
    path.write_bytes(content)
    assert cache.load(path.stem) is None
    calls = _counting_compiles(monkeypatch)
    again = _compiled(_make_scale())
    assert calls == [1] and _same_code(again) == _same_code(first)
    assert cache.load(path.stem) == again


def test_a_verified_entry_is_used_without_compiling(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    first = _compiled(_make_scale())
    monkeypatch.setattr("numba_tile.kernel.compile_kernel", _no_compile)
    assert _compiled(_make_scale()) == first


def _release_fifo(path):
    """Let a reader blocked in open() on the FIFO at ``path`` go (it reads end of file)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling_link"])
def test_an_entry_that_is_not_a_regular_file_is_missing(tmp_path, monkeypatch, kind):
    """A FIFO or a directory in place of an entry is never read (opening a FIFO blocks until a
    writer comes): the kernel compiles and the entry is written again. (A link to a device,
    ``/dev/zero``, is refused by the same test of the file's type; it is not run here, where a
    regression would read without end.)"""
    import threading
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    first = _compiled(_make_scale())
    path = _entry(tmp_path)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        os.symlink(tmp_path / "nowhere.json", path)
    got = []
    reader = threading.Thread(target=lambda: got.append(cache.load(path.stem)), daemon=True)
    reader.start()
    reader.join(30)
    if reader.is_alive():
        _release_fifo(path)
        reader.join(30)
        pytest.fail(f"reading an entry that is a {kind} did not return")
    assert got == [None]
    if kind == "directory":
        path.rmdir()             # the store's rename cannot replace a directory
    calls = _counting_compiles(monkeypatch)
    again = _compiled(_make_scale())
    assert calls == [1] and _same_code(again) == _same_code(first)
    assert cache.load(path.stem) == again and path.is_file() and not path.is_symlink()
