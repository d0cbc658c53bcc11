"""DLPack capsules are read without dereferencing their pointers (runtime/dlpack.py).

A capsule's struct, shape and strides pointers are whatever its producer wrote. On Linux they are
read through ``/proc/self/mem`` (or ``process_vm_readv``), which answer an error for an unmapped
address, so a malformed capsule is a ``TileArgumentError`` naming the argument at the user's launch
line, never a crash. The crashing cases run in a child process (``sys.executable``): a regression
there kills the child, which the tests report, not the test run.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import errors
from numba_tile.runtime import dlpack
from numba_tile.runtime.arrays import as_array_arg
from numba_tile.runtime.fakes import FakeDLPack

PAGE = mmap.PAGESIZE

# The child: each case builds a malformed (or, for the last ones, a legal) DLPack producer and
# launches a copy kernel on it in the interpreter; one JSON line per case says what came out.
CHILD = textwrap.dedent("""
    import ctypes, json, mmap, sys
    import numpy as np
    import numba_tile as nt
    from numba_tile import errors
    from numba_tile.runtime import dlpack
    from numba_tile.runtime.fakes import FakeDLPack

    @nt.jit
    def copy(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z))

    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    NAMES = {False: b"dltensor", True: b"dltensor_versioned"}

    def edge():
        # one past the last byte of a readable page that an unmapped page follows
        base = libc.mmap(None, 2 * PAGE, 3, 0x22, -1, 0)       # read/write, private anonymous
        assert base not in (None, 2**64 - 1)
        assert libc.munmap(base + PAGE, PAGE) == 0
        return base + PAGE

    class Raw:
        # a producer whose capsule holds any pointer (no destructor)
        def __init__(self, address, versioned, keepalive=None):
            self.address, self.versioned, self.keepalive = address, versioned, keepalive
        def __dlpack__(self, **kwargs):
            return new_capsule(self.address, NAMES[self.versioned], None)
        def __dlpack_device__(self):
            return (1, 0)

    x = np.arange(256, dtype=np.float32)

    def fake(versioned=False, shape=(256,), strides=None, ndim=None):
        return FakeDLPack(x.ctypes.data, shape, strides, ndim=ndim, keepalive=x,
                          versioned=versioned)

    def at(obj, field, address):
        setattr(obj._managed.dl_tensor, field, ctypes.cast(address, ctypes.POINTER(ctypes.c_int64)))
        return obj

    def moved(obj, end_offset):
        # the managed struct copied so that it ends end_offset bytes past a readable page's end
        size = ctypes.sizeof(obj._managed)
        dst = edge() - size + end_offset
        ctypes.memmove(dst, ctypes.addressof(obj._managed), size - max(end_offset, 0))
        return Raw(dst, obj.versioned, obj)

    def shape_at_page_end(ints, ndim, versioned=False):
        # a shape array of len(ints) int64s ending at a page's end, read with rank ndim
        end = edge()
        for i, v in enumerate(ints):
            ctypes.c_int64.from_address(end - 8 * len(ints) + 8 * i).value = v
        return at(fake(versioned, ndim=ndim), "shape", end - 8 * len(ints))

    CASES = {
        "shape pointer 0x10": lambda: at(fake(), "shape", 0x10),
        "strides pointer 0x10": lambda: at(fake(True, strides=(1,)), "strides", 0x10),
        "shape pointer in the kernel half": lambda: at(fake(), "shape", 0xffff800000000000),
        "strides pointer in an unmapped page": lambda: at(fake(True, strides=(1,)), "strides",
                                                          edge()),
        "struct pointer 0x10": lambda: Raw(0x10, False),
        "versioned struct pointer 0x10": lambda: Raw(0x10, True),
        "versioned struct in an unmapped page": lambda: Raw(edge(), True),
        "tensor struct running into an unmapped page": lambda: moved(fake(), 24),
        "shape array running into an unmapped page": lambda: shape_at_page_end([256], 2),
        "rank 32 over a one-int shape array": lambda: shape_at_page_end([256], 32, True),
        "legal: shape array ending at a page end": lambda: shape_at_page_end([256], 1),
        "legal: struct ending at a page end": lambda: moved(fake(True), 0),
    }

    for name, build in CASES.items():
        z = np.zeros(256, np.float32)
        bad = build()
        try:
            copy(bad, nt.partition(z, 128), 128, interpret=True)  # LAUNCH
            out = {"cls": None, "copied": bool((z == x).all())}
        except errors.TileError as e:
            out = {"cls": type(e).__name__, "message": e.message, "lineno": e.lineno,
                   "unchanged": bool((z == 0).all())}
        print(json.dumps({"case": name, **out}), flush=True)
""")

LAUNCH_LINE = next(i for i, line in enumerate(CHILD.splitlines(), 1) if line.endswith("# LAUNCH"))

REFUSED = {
    "shape pointer 0x10": "the tensor has rank 1 but its shape pointer 0x10 does not point at 8 "
                          "readable bytes",
    "strides pointer 0x10": "its strides pointer 0x10 does not point at 8 readable bytes",
    "shape pointer in the kernel half": "its shape pointer 0xffff800000000000 does not point",
    "strides pointer in an unmapped page": "its strides pointer 0x",
    "struct pointer 0x10": "its DLManagedTensor pointer 0x10 does not point at 48 readable bytes",
    "versioned struct pointer 0x10": "its DLManagedTensorVersioned pointer 0x10 does not point at "
                                     "80 readable bytes",
    "versioned struct in an unmapped page": "its DLManagedTensorVersioned pointer 0x",
    "tensor struct running into an unmapped page": "its DLManagedTensor pointer 0x",
    "shape array running into an unmapped page": "rank 2 but its shape pointer 0x",
    "rank 32 over a one-int shape array": "does not point at 256 readable bytes",
}
LEGAL = ["legal: shape array ending at a page end", "legal: struct ending at a page end"]


@pytest.fixture(scope="module")
def child_results():
    """Runs every case in one child process; a case the child never reported (it crashed first)
    is missing from the results."""
    if not dlpack.safe_reads():
        pytest.skip("neither /proc/self/mem nor process_vm_readv works here: DLPack capsules are "
                    "read with ctypes in place (see runtime/dlpack.py)")
    run = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=300)
    results = {}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            results[entry.pop("case")] = entry
    return run, results


def _result(child_results, case):
    run, results = child_results
    assert case in results, (f"the child process ended (exit code {run.returncode}; -11 is "
                             f"SIGSEGV) before case {case!r}: {run.stderr[-2000:]}")
    return results[case]


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_malformed_capsule_is_an_argument_error_not_a_crash(child_results, case):
    got = _result(child_results, case)
    assert got["cls"] == "TileArgumentError", got
    for fragment in ("kernel 'copy'", "argument 'x'", "unusable DLPack capsule", REFUSED[case]):
        assert fragment in got["message"], (fragment, got["message"])
    assert got["lineno"] == LAUNCH_LINE and got["unchanged"], got


@pytest.mark.parametrize("case", LEGAL)
def test_capsules_that_end_exactly_at_a_page_end_are_read(child_results, case):
    got = _result(child_results, case)
    assert got == {"cls": None, "copied": True}, got
    assert child_results[0].returncode == 0, child_results[0].stderr[-2000:]


# ----------------------------------------------------------------------------- the reader


def _unmapped_page() -> int:
    """The address of a page that was mapped and is not any more."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    base = libc.mmap(None, PAGE, 3, 0x22, -1, 0)
    assert libc.munmap(base, PAGE) == 0
    return base


@pytest.fixture
def fresh_reader():
    """The reader is chosen again before and after the test (a test may hide /proc/self/mem)."""
    dlpack._state["pid"] = None
    yield
    dlpack._state["pid"] = None


def _check_reader():
    buf = ctypes.create_string_buffer(b"0123456789abcdef", 16)
    assert dlpack.read_memory(ctypes.addressof(buf), 16) == buf.raw
    assert dlpack.read_memory(ctypes.addressof(buf) + 4, 8) == b"456789ab"
    for address in (0, 0x10, PAGE - 8, _unmapped_page(), 0xffff800000000000, 2**63, 2**64 - 8,
                    -8, 2**70):
        assert dlpack.read_memory(address, 8) is None, hex(address)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the safe reads are Linux's")
def test_reads_through_proc_self_mem_answer_none_for_unmapped_memory(fresh_reader):
    assert dlpack.safe_reads() and dlpack._state["fd"] >= 0
    _check_reader()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the safe reads are Linux's")
def test_process_vm_readv_is_used_where_proc_self_mem_cannot_be_opened(fresh_reader,
                                                                       monkeypatch):
    monkeypatch.setattr(dlpack, "_PROC_MEM", "/nonexistent/numba_tile/mem")
    if dlpack._process_vm_reader() is None or not dlpack._works(dlpack._process_vm_reader()):
        pytest.skip("process_vm_readv is not permitted here")
    assert dlpack.safe_reads() and dlpack._state["fd"] == -1
    _check_reader()
    x = np.arange(16, dtype=np.float32)
    bad = FakeDLPack(x.ctypes.data, (16,), keepalive=x)
    bad._managed.dl_tensor.shape = ctypes.cast(0x10, ctypes.POINTER(ctypes.c_int64))
    with pytest.raises(errors.TileArgumentError, match="shape pointer 0x10 does not point"):
        as_array_arg(bad, "x")


def test_without_safe_reads_capsules_are_read_in_place(fresh_reader, monkeypatch):
    """The fallback (no /proc/self/mem, no process_vm_readv): legal capsules read the same."""
    monkeypatch.setattr(dlpack, "_PROC_MEM", "/nonexistent/numba_tile/mem")
    monkeypatch.setattr(dlpack, "_process_vm_reader", lambda: None)
    assert not dlpack.safe_reads()
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    producer = FakeDLPack(x.ctypes.data, (8, 4), (8, -2), keepalive=x, versioned=True, flags=1)
    info = dlpack.read_capsule(producer.__dlpack__())
    assert (info.shape, info.strides, info.readonly, info.ptr) == ((8, 4), (8, -2), True,
                                                                  x.ctypes.data)


def test_capsule_fields_round_trip():
    x = np.arange(64, dtype=np.float32)
    rank32 = tuple([1] * 31 + [64])
    cases = [
        (FakeDLPack(x.ctypes.data, rank32, keepalive=x), rank32, None, False, False),
        (FakeDLPack(x.ctypes.data + 8, (4, 3), (-16, 2), keepalive=x, versioned=True, flags=3),
         (4, 3), (-16, 2), True, True),
        (FakeDLPack(x.ctypes.data, (-5,), (2**62,), dtype=(4, 16, 1), keepalive=x), (-5,),
         (2**62,), False, False),
        (FakeDLPack(x.ctypes.data, (), keepalive=x), (), None, False, False),
    ]
    for producer, shape, strides, readonly, copied in cases:
        info = dlpack.read_capsule(producer.__dlpack__())
        assert (info.shape, info.strides, info.readonly, info.copied) == \
            (shape, strides, readonly, copied)
        assert info.ptr == producer._managed.dl_tensor.data and info.device_type == 1
    bf16 = dlpack.read_capsule(cases[2][0].__dlpack__())
    assert bf16.type_desc == "bfloat(bits=16, lanes=1)" and bf16.dtype.itemsize == 2
    view = np.arange(120, dtype=np.float64).reshape(4, 5, 6)[::2, :, 1::2]
    info = dlpack.read_capsule(view.__dlpack__(max_version=(1, 0)))
    assert info.shape == view.shape and info.ptr == view.ctypes.data
    assert tuple(s * 8 for s in info.strides) == view.strides and info.dtype == view.dtype


@pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux"),
                    reason="fork and /proc/self/mem are Linux's")
def test_a_forked_child_reads_its_own_memory():
    """/proc/self/mem opened by the parent reads the parent's memory: a child must open its own."""
    x = np.arange(16, dtype=np.float32)
    producer = FakeDLPack(x.ctypes.data, (16,), keepalive=x)
    assert dlpack.read_capsule(producer.__dlpack__()).shape == (16,)   # the parent's reader
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                        # the child: change the shape, read it
        try:
            producer._shape[0] = 8
            shape = dlpack.read_capsule(producer.__dlpack__()).shape
            os.write(write_end, repr(shape).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        seen = pipe.read()
    os.waitpid(pid, 0)
    assert seen == "(8,)"
    assert dlpack.read_capsule(producer.__dlpack__()).shape == (16,)
