"""Helper functions called from kernels (``typing/helpers.py``): inlined before typing, so they
are typed and checked as kernel code; on the GPU and in the interpreter, against NumPy."""

import types as pytypes

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import ForeignTileStoreError, StoreToReadOnlyError, TileTypingError


def leaky_relu(x, slope=0.01):
    return nt.where(x > 0, x, x * slope)


def affine(x, scale, shift=0.0):
    return x * scale + shift


def activation(x, kind: int):
    # a helper calling helpers, with keyword arguments and a default
    y = affine(x, scale=2.0)
    return leaky_relu(y, slope=0.25) if kind == 1 else leaky_relu(y)


@nt.jit
def act_kernel(x, z: nt.Partition["B"], B: nt.Constant, KIND: nt.Constant):
    nt.store(z, activation(nt.load_like(x, z), KIND))


@pytest.mark.parametrize("kind", [0, 1])
def test_helpers_inline_with_keywords_defaults_and_nesting(tile_backend, kind):
    rng = np.random.default_rng()
    n = 1000 + int(rng.integers(1, 100))
    xh = rng.standard_normal(n).astype(np.float32)
    z = tile_backend.asarray(np.full(n, np.nan, np.float32))
    tile_backend.run(act_kernel, tile_backend.asarray(xh), nt.partition(z, 256), 256, kind)
    y = 2.0 * xh.astype(np.float64)
    want = np.where(y > 0, y, y * (0.25 if kind == 1 else 0.01))
    np.testing.assert_allclose(tile_backend.to_numpy(z), want, rtol=1e-6, atol=1e-7)


def row_softmax_tile(x):
    m = nt.max(x, axis=1, keepdims=True)
    e = nt.exp(x - m)
    return e / nt.sum(e, axis=1, keepdims=True)


def store_normalized(z, x):
    nt.store(z, row_softmax_tile(x))          # the helper stores to the kernel's own tile


@nt.jit
def softmax_kernel(x, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    store_normalized(z, nt.load_like(x, z, padding=-np.inf))


def test_a_helper_that_stores_to_the_kernels_own_tile(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal((70, 64)).astype(np.float32)
    z = tile_backend.asarray(np.zeros((70, 64), np.float32))
    tile_backend.run(softmax_kernel, tile_backend.asarray(xh), nt.partition(z, (16, 64)), 16, 64)
    x64 = xh.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(tile_backend.to_numpy(z), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-7)


_MOD = pytypes.ModuleType("nt_test_helper_module")
exec("import numba_tile as nt\n"
     "def clamp(x, lo, hi):\n"
     "    return nt.minimum(nt.maximum(x, lo), hi)\n", _MOD.__dict__)


@nt.jit
def clamp_kernel(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, _MOD.clamp(nt.load_like(x, z), -0.5, 0.5))     # a module's attribute


def test_a_helper_reached_as_a_module_attribute(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(777).astype(np.float32)
    z = tile_backend.asarray(np.zeros(777, np.float32))
    tile_backend.run(clamp_kernel, tile_backend.asarray(xh), nt.partition(z, 128), 128)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), np.clip(xh, -0.5, 0.5))


def test_a_helper_held_in_a_closure(tile_backend):
    def square(v):
        return v * v

    @nt.jit
    def sq(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, square(nt.load_like(x, z)))

    xh = np.random.default_rng().standard_normal(300).astype(np.float32)
    z = tile_backend.asarray(np.zeros(300, np.float32))
    tile_backend.run(sq, tile_backend.asarray(xh), nt.partition(z, 128), 128)
    np.testing.assert_allclose(tile_backend.to_numpy(z), xh.astype(np.float64) ** 2, rtol=1e-6)


# --------------------------------------------------------------- checks see through helpers

def write_to(t, v):
    nt.store(t, v)


@nt.jit
def writes_read_only(x, z: nt.Partition["B"], B: nt.Constant):
    write_to(x, nt.load_like(x, z))


def put(z, v, idx):
    nt.store(z, v, idx)


@nt.jit
def writes_foreign(y: nt.Partition["B"], z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(y):
        put(z, nt.zeros((B,), nt.float32), idx)     # an index branded by y, stored to z


def test_a_helpers_store_to_a_read_only_tensor_is_refused_at_its_line():
    x = np.zeros(256, np.float32)
    with pytest.raises(StoreToReadOnlyError) as info:
        writes_read_only(x, nt.partition(np.zeros(256, np.float32), 128), 128, interpret=True)
    assert info.value.lineno == write_to.__code__.co_firstlineno + 1


def test_a_helpers_store_at_another_partitions_index_is_refused():
    y, z = np.zeros(512, np.float32), np.zeros(512, np.float32)
    with pytest.raises(ForeignTileStoreError):
        writes_foreign(nt.partition(y, 128, blocks=2), nt.partition(z, 128, blocks=2), 128,
                       interpret=True)


def recurse(x, n: int):
    return recurse(x, n - 1) if n > 0 else x


@nt.jit
def recursive_kernel(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, recurse(nt.load_like(x, z), 3))


def test_a_recursive_helper_is_refused():
    x = np.zeros(256, np.float32)
    with pytest.raises(TileTypingError, match="'recurse' calls itself"):
        recursive_kernel(x, nt.partition(np.zeros(256, np.float32), 128), 128, interpret=True)


def test_library_functions_are_not_inlined():
    from numba_tile.typing.helpers import is_helper
    import math
    assert not is_helper(math.sqrt) and not is_helper(np.where) and not is_helper(nt.where)
    assert not is_helper(nt.grouped)            # numba_tile's own Python functions
    assert is_helper(leaky_relu) and is_helper(_MOD.clamp)


def test_helper_ptx_compiles():
    x = np.zeros(1024, np.float32)
    ptx = act_kernel.ptx(x, nt.partition(np.zeros(1024, np.float32), 256), 256, 1)
    assert ".entry" in ptx


def test_a_helper_using_the_simt_api_is_refused_at_its_line():
    from numba_tile.errors import ClosedWorldError
    mod = pytypes.ModuleType("nt_test_simt_helper")
    exec("from numba import cuda\n"
         "import numba_tile as nt\n"
         "def lane(x):\n"
         "    return x + cuda.threadIdx.x\n", mod.__dict__)

    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, mod.lane(nt.load_like(x, z)))

    with pytest.raises((ClosedWorldError, TileTypingError)):
        k(np.zeros(256, np.float32), nt.partition(np.zeros(256, np.float32), 128), 128,
          interpret=True)


def test_the_disk_cache_tells_helpers_apart(tmp_path, monkeypatch):
    """The same kernel file, importing a helper whose body changes between two imports: the
    second compile must not reuse the first one's PTX from the disk cache (the snapshot
    digests the helper's code and what it reads)."""
    import importlib
    import sys
    monkeypatch.setenv("NUMBA_TILE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "nt_kmod.py").write_text(
        "import numba_tile as nt\n"
        "from nt_hmod import helper\n"
        "@nt.jit\n"
        "def k(x, z: nt.Partition['B'], B: nt.Constant):\n"
        "    nt.store(z, helper(nt.load_like(x, z)))\n")
    outs, ptxs = [], []
    for factor in (3.0, 5.25):
        (tmp_path / "nt_hmod.py").write_text(f"def helper(v):\n    return v * {factor}\n")
        for name in ("nt_kmod", "nt_hmod"):
            sys.modules.pop(name, None)
        mod = importlib.import_module("nt_kmod")
        x = np.arange(256, dtype=np.float32)
        z = np.zeros(256, np.float32)
        ptxs.append(mod.k.ptx(x, nt.partition(z, 128), 128))     # compiled, stored on disk
        mod.k(x, nt.partition(z, 128), 128, interpret=True)
        outs.append(z.copy())
    for name in ("nt_kmod", "nt_hmod"):
        sys.modules.pop(name, None)
    # the helper's constant in each compile's PTX (3.0, 5.25 as float32 bits)
    assert "0f40400000" in ptxs[0] and "0f40A80000" not in ptxs[0]
    assert "0f40A80000" in ptxs[1] and "0f40400000" not in ptxs[1]
    assert len(list((tmp_path / "cache").glob("**/*.json"))) == 2
    np.testing.assert_array_equal(outs[0], 3.0 * np.arange(256))
    np.testing.assert_array_equal(outs[1], 5.25 * np.arange(256))
