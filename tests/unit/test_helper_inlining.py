"""Plain Python helpers called from kernels, inlined by typing/helpers.py: the globals they read
are frozen with the kernel (interpreter and disk key), the forms a helper may take (``*args``,
``functools.wraps``, lambdas; static methods, namespace attributes and recursion refused),
ownership through helpers (brands, read-only tensors, global arrays), errors at the helper's
line, and a helper inside a pipelined K loop. CPU only."""

import functools
import importlib
import sys
import types as pytypes

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (ForeignTileStoreError, StoreToReadOnlyError, TileTypingError)

# ------------------------------------------------------------------ 1. live helper globals

MODE = 0


def put_mode(y, z, v):
    if MODE == 0:
        for idx in nt.tiles(z):
            nt.store(z, v, idx)
    else:
        for idx in nt.tiles(y):
            nt.store(z, v, idx)       # foreign brand: refused when checked


@nt.jit
def mode_kernel(y: nt.Partition["B"], z: nt.Partition["B"], B: nt.Constant):
    put_mode(y, z, nt.full((B,), 7.0, nt.float32))


def test_interpreter_runs_the_helper_branch_that_was_checked(monkeypatch):
    global MODE
    y, z = np.zeros(512, np.float32), np.zeros(512, np.float32)
    mode_kernel(nt.partition(y, 128, blocks=2), nt.partition(z, 128, blocks=2), 128,
                interpret=True)
    monkeypatch.setattr(sys.modules[__name__], "MODE", 1)
    # a fresh kernel with MODE=1 is refused ...
    with pytest.raises(ForeignTileStoreError):
        nt.jit(mode_kernel.fn)(nt.partition(y, 128, blocks=2), nt.partition(z, 128, blocks=2),
                               128, interpret=True)
    # ... and the already-checked one keeps running what was checked: its snapshot froze the
    # helper with MODE = 0 (frozen.py), as it freezes the kernel's own globals
    z[:] = 0
    mode_kernel(nt.partition(y, 128, blocks=2), nt.partition(z, 128, blocks=2), 128,
                interpret=True)
    np.testing.assert_array_equal(z, np.full(512, 7.0, np.float32))


SCALE = 3.0


def scaled(v):
    return v * SCALE


@nt.jit
def scale_kernel(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, scaled(nt.load_like(x, z)))


def test_interpreter_sees_the_helper_globals_that_were_compiled():
    x = np.ones(256, np.float32)
    z = np.zeros(256, np.float32)
    scale_kernel(x, nt.partition(z, 128), 128, interpret=True)
    assert (z == 3.0).all()
    mod = sys.modules[__name__]
    mod.SCALE = 5.0         # a kernel's own global would be frozen; a helper's is not
    try:
        scale_kernel(x, nt.partition(z, 128), 128, interpret=True)
        ptx = scale_kernel.ptx(x, nt.partition(z, 128), 128)
    finally:
        mod.SCALE = 3.0
    assert (z == 3.0).all(), "interpreter used the live helper global"
    assert "0f40400000" in ptx, "compile of an existing snapshot used the live helper global"


def test_disk_key_of_a_snapshot_covers_what_was_compiled(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "rt_hmod.py").write_text("S = 3.0\ndef helper(v):\n    return v * S\n")
    (tmp_path / "rt_kmod.py").write_text(
        "import numba_tile as nt\nfrom rt_hmod import helper\n@nt.jit\n"
        "def k(x, z: nt.Partition['B'], B: nt.Constant):\n"
        "    nt.store(z, helper(nt.load_like(x, z)))\n")

    def fresh():
        for n in ("rt_kmod", "rt_hmod"):
            sys.modules.pop(n, None)
        return importlib.import_module("rt_kmod")

    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    m = fresh()
    m.k(x, nt.partition(z, 128), 128, interpret=True)      # snapshot taken with S = 3
    sys.modules["rt_hmod"].S = 5.25
    # (interpret compiles for cc 9.0; another target compiles the same snapshot again)
    m.k.ptx(x, nt.partition(z, 128), 128, cc=(8, 0))       # compiled with S = 5.25 -> disk
    m = fresh()                                            # a new "process": S = 3 again
    ptx = m.k.ptx(x, nt.partition(z, 128), 128, cc=(8, 0))
    for n in ("rt_kmod", "rt_hmod"):
        sys.modules.pop(n, None)
    assert "0f40400000" in ptx and "0f40A80000" not in ptx, "stale PTX from the disk cache"


# ------------------------------------------------------------------ 2. shapes of helpers

def _run1(kernel):
    x = np.arange(256, dtype=np.float32)
    z = np.zeros(256, np.float32)
    kernel(x, nt.partition(z, 128), 128, interpret=True)
    return x, z


def star_helper(*vs, **kw):
    return vs[0] * kw.get("s", 2.0)


def test_star_args_helper():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, star_helper(nt.load_like(x, z), s=2.0))
    try:
        x, z = _run1(k)
    except TileTypingError:
        return                                  # refused cleanly is fine
    np.testing.assert_array_equal(z, 2 * x)


def _plain(v):
    return v + 1.0


@functools.wraps(_plain)
def wrapped(*a, **kw):
    return _plain(*a, **kw)


def test_functools_wraps_helper():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, wrapped(nt.load_like(x, z)))
    try:
        x, z = _run1(k)
    except TileTypingError:
        return
    np.testing.assert_array_equal(z, x + 1)


lam = lambda v: v * 4.0  # noqa: E731


def test_lambda_helper():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, lam(nt.load_like(x, z)))
    x, z = _run1(k)
    np.testing.assert_array_equal(z, 4 * x)


class Holder:
    @staticmethod
    def f(v):
        return v * 3.0


def test_staticmethod_helper_is_refused_with_a_typing_error():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, Holder.f(nt.load_like(x, z)))
    with pytest.raises(TileTypingError):
        _run1(k)


NS = pytypes.SimpleNamespace(f=lambda v: v * 3.0)


def test_namespace_attribute_helper_is_refused_with_a_typing_error():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, NS.f(nt.load_like(x, z)))
    with pytest.raises(TileTypingError):
        _run1(k)


def ping(v, n: int):
    return pong(v, n)


def pong(v, n: int):
    return ping(v, n - 1) if n > 0 else v


def test_mutual_recursion_is_refused():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, ping(nt.load_like(x, z), 2))
    with pytest.raises(TileTypingError, match="calls itself"):
        _run1(k)


def pick(a, b, c):
    return a if c > 0 else b


def test_a_helper_cannot_launder_a_read_only_tensor_into_a_store():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant, c: int):
        nt.store(pick(z, x, c), nt.load_like(x, z))
    with pytest.raises((StoreToReadOnlyError, TileTypingError)):
        x = np.zeros(256, np.float32)
        k(x, nt.partition(np.zeros(256, np.float32), 128), 128, 0, interpret=True)


def swap_store(z, y, v):
    # parameter names swapped with the kernel's: the brand must follow the values
    for idx in nt.tiles(y):
        nt.store(z, v, idx)


def test_swapped_parameter_names_do_not_confuse_brands():
    @nt.jit
    def k(y: nt.Partition["B"], z: nt.Partition["B"], B: nt.Constant):
        swap_store(y, z, nt.full((B,), 1.0, nt.float32))     # store to y, index of z
    y, z = np.zeros(512, np.float32), np.zeros(512, np.float32)
    with pytest.raises(ForeignTileStoreError):
        k(nt.partition(y, 128, blocks=2), nt.partition(z, 128, blocks=2), 128, interpret=True)


def tiles_of(p):
    return nt.tiles(p)


def test_a_helper_returning_a_tiles_iterator_keeps_its_brand():
    @nt.jit
    def k(y: nt.Partition["B"], z: nt.Partition["B"], B: nt.Constant):
        for idx in tiles_of(y):
            nt.store(z, nt.full((B,), 1.0, nt.float32), idx)
    y, z = np.zeros(512, np.float32), np.zeros(512, np.float32)
    with pytest.raises((ForeignTileStoreError, TileTypingError)):
        k(nt.partition(y, 128, blocks=2), nt.partition(z, 128, blocks=2), 128, interpret=True)


G = np.zeros(4, np.float32)


def poke(v):
    G[0] = 1.0
    return v


def test_a_helper_writing_a_global_array_is_refused():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, poke(nt.load_like(x, z)))
    with pytest.raises(Exception):
        _run1(k)
    assert G[0] == 0.0


def bump(v):
    global MODE
    MODE = MODE + 0
    return v


def test_a_helper_writing_a_global_is_refused():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, bump(nt.load_like(x, z)))
    with pytest.raises(Exception):     # refused (a raw Numba error, as for a kernel)
        _run1(k)


def bad_types(v):
    return v + "oops"


def test_a_typing_error_in_a_helper_names_the_helper_line():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, bad_types(nt.load_like(x, z)))
    with pytest.raises(TileTypingError) as info:
        _run1(k)
    assert info.value.lineno == bad_types.__code__.co_firstlineno + 1, str(info.value)


def raiser(v, n: int):
    if n > 0:
        raise ValueError("helper says no")
    return v


def test_a_helper_that_raises():
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant, n: int):
        nt.store(z, raiser(nt.load_like(x, z), n))
    x = np.arange(256, dtype=np.float32)
    z = np.zeros(256, np.float32)
    k(x, nt.partition(z, 128), 128, 0, interpret=True)
    np.testing.assert_array_equal(z, x)


# ------------------------------------------------------------------ 3. pipelined K loop

def k_step(a, b, i, k, acc, BM, BN, BK):
    x = nt.load(a, (i, k), (BM, BK), padding=0)
    y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
    return nt.mma(x, y, acc)


@nt.jit(num_stages=3)
def staged_inline(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                  BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0)
        y = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0)
        acc = nt.mma(x, y, acc)
    nt.store(c, acc)


@nt.jit(num_stages=3)
def staged_helper(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                  BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        acc = k_step(a, b, nt.bid(0), k, acc, BM, BN, BK)
    nt.store(c, acc)


def test_a_helper_in_a_pipelined_k_loop_is_pipelined_and_correct():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 256)).astype(np.float16)
    b = rng.standard_normal((256, 128)).astype(np.float16)
    args = lambda c: (a, b, nt.partition(c, (64, 64)), 64, 64, 32)  # noqa: E731
    p1 = staged_inline.ptx(*args(np.zeros((128, 128), np.float32)), cc=(8, 0))
    p2 = staged_helper.ptx(*args(np.zeros((128, 128), np.float32)), cc=(8, 0))
    assert ("cp.async" in p1) == ("cp.async" in p2)
    assert p1.count("bar.sync") == p2.count("bar.sync")
    c = np.zeros((128, 128), np.float32)
    staged_helper(*args(c), interpret=True)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                               atol=1e-2)


def _shifted(t, v):
    return t + v


@pytest.mark.parametrize("c", [-1.5, 2.0])
def test_a_helper_called_with_a_conditional_expression_argument(c):
    """``h(t, a if c else b)``: Numba carries the callee across the argument's branch in a
    variable both branches assign; the call is inlined all the same, and no copy of the
    helper is left for Numba to type."""
    @nt.jit
    def k(x, z: nt.Partition["B"], c: float, B: nt.Constant):
        t = _shifted(nt.load_like(x, z), 3.0 if c > 0 else -5.0)
        nt.store(z, _shifted(t, c if c < 0 else 0.25))

    rng = np.random.default_rng()
    n = 50 + int(rng.integers(1, 30))
    x = rng.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    k(x, nt.partition(z, 64), c, 64, interpret=True)
    want = x.astype(np.float64) + (3.0 if c > 0 else -5.0) + (c if c < 0 else 0.25)
    np.testing.assert_allclose(z, want, rtol=1e-6)


def _scaled(t, v):
    return t * v


@nt.jit
def _helper_by_expression(x, z: nt.Partition["B"], c: float, B: nt.Constant):
    f = _scaled if c > 0 else _shifted
    nt.store(z, f(nt.load_like(x, z), 2.0))


@nt.jit
def _helper_by_branch(x, z: nt.Partition["B"], c: float, B: nt.Constant):
    if c > 0:
        f = _scaled
    else:
        f = _shifted
    nt.store(z, f(nt.load_like(x, z), 2.0))


@pytest.mark.parametrize("kernel", [_helper_by_expression, _helper_by_branch])
@pytest.mark.parametrize("path", ["interpreter", "ptx"])
def test_a_call_of_a_helper_chosen_by_a_branch_is_refused_naming_both(kernel, path):
    """``f = h1 if c else h2; f(t)``: no single helper to inline, so the call is refused at
    its line naming both helpers and the kernel, on both paths (not Numba's 'untyped global
    name')."""
    x, z = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(TileTypingError) as info:
        if path == "ptx":
            kernel.ptx(x, nt.partition(z, 8), 1.0, 8, cc=(9, 0))
        else:
            kernel(x, nt.partition(z, 8), 1.0, 8, interpret=True)
    msg = str(info.value)
    assert kernel.__name__ in msg and "'_scaled'" in msg and "'_shifted'" in msg, msg
    assert "chosen by a branch" in msg
    assert info.value.filename == __file__
    src = open(__file__).read().splitlines()[info.value.lineno - 1]
    assert "f(nt.load_like(x, z), 2.0)" in src
