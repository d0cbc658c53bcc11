"""PTX-structure tests: compile kernels with libNVVM (no GPU) and inspect the PTX.

Assertions are on structure (vector widths, the read-only path, predication, absence
of local memory), never on register numbers.
"""

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

ALL_DTYPES = [np.float16, BFLOAT16_NP, np.float32, np.float64, np.int32, np.int64, np.bool_]
CCS = [(8, 0), (9, 0)]


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]


def no_local_memory(ptx: str):
    assert ".local" not in ptx and "ld.local" not in ptx and "st.local" not in ptx


@nt.jit
def copy_kernel(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@nt.jit
def add_kernel(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_compiles_with_vector_access(dt, cc):
    x = np.zeros(4096, dt)
    ptx = copy_kernel.ptx(x, nt.partition(x.copy(), 1024), 1024, cc=cc)
    no_local_memory(ptx)
    itemsize = np.dtype(dt).itemsize
    lanes = min(8, 16 // itemsize)          # 8 elements per thread chunk, 16 bytes at most
    b = body(ptx)
    loads = re.findall(r"ld\.global\.nc(\.v\d)?\.\w+", b)
    stores = re.findall(r"st\.global(\.v\d)?\.\w+", b)
    assert loads and stores
    if lanes > 1:
        assert all(v for v in loads), loads   # every load is a vector load
        assert all(v for v in stores), stores


def test_fp32_add_uses_16_byte_accesses_and_read_only_path():
    x = np.zeros(1 << 20, np.float32)
    b = body(add_kernel.ptx(x, x.copy(), nt.partition(x.copy(), 1024), 1024))
    # 2 inputs x 2 chunks of 4 (the block's own tile: one masked path, memory._two_paths)
    assert len(re.findall(r"ld\.global\.nc\.v4\.f32", b)) == 4
    assert len(re.findall(r"st\.global\.v4\.f32", b)) == 2
    assert "ld.global.f32" not in b and "st.global.f32" not in b


def test_strided_view_falls_back_to_scalar_masked_access():
    base = np.zeros(8192, np.float32)
    x = base[::2]                               # stride 8 bytes: no vector access is legal
    b = body(add_kernel.ptx(x, x, nt.partition(np.zeros(4096, np.float32), 1024), 1024))
    assert re.search(r"ld\.global\.nc\.f32", b)
    assert not re.search(r"ld\.global\.nc\.v\d\.f32", b)
    no_local_memory(b)


def test_misaligned_view_is_not_vectorized():
    x = np.zeros(4097, np.float32)[1:]          # 4-byte offset: 16-byte accesses are illegal
    b = body(add_kernel.ptx(x, x, nt.partition(np.zeros(4096, np.float32), 1024), 1024))
    assert not re.search(r"ld\.global\.nc\.v\d\.f32", b)


def test_offsets_are_64_bit():
    x = np.zeros(1 << 12, np.float32)
    b = body(add_kernel.ptx(x, x, nt.partition(x.copy(), 1024), 1024))
    # addresses come from 64-bit index arithmetic (mul.wide / 64-bit adds), never 32-bit wraps
    assert re.search(r"mul\.wide\.u32|mul\.lo\.s64|shl\.b64", b)


@nt.jit
def half_math_kernel(x, out: nt.Partition):
    t = nt.load_like(x, out)
    nt.store(out, nt.exp(t) * 2.0 + nt.sigmoid(t))


@pytest.mark.parametrize("dt,cvt", [(BFLOAT16_NP, "cvt.rn.bf16.f32"), (np.float16, "cvt.rn.f16.f32")])
def test_half_precision_is_computed_in_float32(dt, cvt):
    x = np.zeros(2048, dt)
    ptx = half_math_kernel.ptx(x, nt.partition(x.copy(), 512))
    b = body(ptx)
    assert cvt in b
    assert "ex2.approx" in b or "__nv_expf" in b or "ex2" in b
    no_local_memory(ptx)


@nt.jit
def tile2d_kernel(x, out: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    i = nt.bid(0)
    j = nt.bid(1)
    t = nt.load(x, (i, j), (BM, BN), padding=float("-inf"))
    nt.store(out, nt.maximum(t, 0.0) + t)


def test_2d_tiles_vectorize_along_the_contiguous_axis():
    x = np.zeros((256, 256), np.float32)
    b = body(tile2d_kernel.ptx(x, nt.partition(x.copy(), (32, 64)), 32, 64))
    assert re.search(r"ld\.global\.nc\.v4\.f32", b)
    assert re.search(r"st\.global\.v4\.f32", b)
    # the block's tile index is unravelled from ctaid.x (64-bit div/rem by the tile grid)
    assert re.search(r"(div|rem)\.u64", b)


def test_transposed_view_is_not_vectorized():
    x = np.zeros((256, 256), np.float32).T
    b = body(tile2d_kernel.ptx(x, nt.partition(np.zeros((256, 256), np.float32), (32, 64)), 32, 64))
    assert not re.search(r"ld\.global\.nc\.v\d\.f32", b)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_launch_bounds_match_num_warps(num_warps):
    @nt.jit(num_warps=num_warps)
    def k(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z) * 2.0)

    x = np.zeros(4096, np.float32)
    ptx = k.ptx(x, nt.partition(x.copy(), 1024))
    assert re.search(rf"\.maxntid {32 * num_warps}, 1, 1", ptx)


@nt.jit
def mixed_layout_kernel(a, b, out: nt.Partition):
    # a float16 tile (8 elements per chunk) + a float32 tile (4 per chunk): the right operand
    # is converted to the left one's layout through shared memory
    nt.store(out, nt.load_like(a, out) + nt.load_like(b, out))


def test_mixed_layouts_convert_through_shared_memory():
    a = np.zeros(4096, np.float16)
    b = np.zeros(4096, np.float32)
    ptx = mixed_layout_kernel.ptx(a, b, nt.partition(np.zeros(4096, np.float32), 1024))
    bd = body(ptx)
    assert ".shared" in ptx and "bar.sync" in bd
    assert re.search(r"st\.shared", bd) and re.search(r"ld\.shared", bd)
    no_local_memory(ptx)


def test_same_layout_needs_no_shared_memory():
    x = np.zeros(4096, np.float32)
    ptx = add_kernel.ptx(x, x, nt.partition(x.copy(), 1024), 1024)
    assert ".shared" not in ptx and "bar.sync" not in ptx


@nt.jit
def round_trip_layout_kernel(a, c, out: nt.Partition):
    ta = nt.load_like(a, out)
    tc = nt.load_like(c, out)
    nt.store(out, ta + (tc - ta))     # float16 layout -> float64 layout -> float16 layout


@pytest.mark.parametrize("block", [256, 1024, 2048])
def test_layout_round_trip_compiles(block):
    # regression: an over-aligned shared buffer made libNVVM's vectorizer emit an
    # "unsupported operation" for this kernel at tile sizes >= 1024
    ptx = round_trip_layout_kernel.ptx(np.zeros(5000, np.float16), np.zeros(5000),
                                       nt.partition(np.zeros(5000), block))
    if block >= 1024:          # at 256 both layouts hold 2 elements per thread: nothing moves
        assert "bar.sync" in ptx
    no_local_memory(ptx)


def test_store_at_a_hand_built_index_uses_that_index():
    """Regression (seen on the H200): an unchecked kernel's store at a tuple index was lowered
    as a store to the block's own tile. The index must reach the store's address."""
    import re

    from tests.gpu.test_unchecked import reverse_tiles

    @nt.jit(unchecked=True)
    def own_tiles(x, z: nt.Partition["B"], B: nt.Constant):
        i = nt.bid(0)
        n = nt.num_blocks(0)
        nt.store(z, nt.load_like(x, z), (i + 0 * n,))

    x = np.zeros(512, np.float32)

    def code(kernel):
        return re.sub(r"_ZN\w+", "K", body(kernel.ptx(x, nt.partition(x.copy(), 64), 64)))

    assert code(reverse_tiles) != code(own_tiles)     # the store address depends on n - 1 - i


def test_conversion_sites_share_one_scratch_buffer():
    """Four transposes of a 16 KB tile need 16 KB of shared memory, not 64 KB: every
    conversion site uses the one scratch region (lowering/shared.py)."""
    @nt.jit
    def four_transposes(x, z: nt.Partition[("B", "B")], B: nt.Constant):
        t = nt.load(x, (0, 0), (B, B))
        a = nt.transpose(t)
        b = nt.transpose(a)
        c = nt.transpose(b)
        nt.store(z, nt.transpose(c))

    x = np.random.default_rng().standard_normal((64, 64)).astype(np.float32)
    ptx = four_transposes.ptx(x, nt.partition(x.copy(), (64, 64)), 64)
    assert ptx.count("bar.sync") >= 8
    ck = _compiled(four_transposes, x, nt.partition(x.copy(), (64, 64)), 64)
    assert ck.shared_bytes == 64 * 64 * 4
    assert re.search(r"\.extern \.shared \.align \d+ \.b8 __numba_tile_smem\[\]", ptx)
    no_local_memory(ptx)


def _compiled(kernel, *args, cc=(9, 0)):
    values = kernel._bind(args, {})
    from numba_tile.runtime.launch_checks import bind_arrays
    bound = bind_arrays(kernel.__qualname__, kernel._specs(values), values, allow_host=None,
                        call_site=None)
    spec = kernel._signature(bound)
    return kernel.compile(spec.key, spec.argtypes, spec.grid_param, cc)


@nt.jit(num_warps=16)
def big_transpose(x, z: nt.Partition[("BN", "BM")], BM: nt.Constant, BN: nt.Constant):
    t = nt.load(x, (0, 0), (BM, BN))
    nt.store(z, nt.transpose(t))


@nt.jit(num_warps=16)
def big_product(a, z: nt.Partition[(256, 256)]):
    t = nt.load(a, (0, 0), (256, 256))
    nt.store(z, nt.matmul(t, t))  # MARK big


def test_shared_memory_over_the_targets_limit_is_refused_at_its_line():
    a = np.zeros((256, 256), np.float16)      # 256 KB of mma operands in shared memory
    z = nt.partition(np.zeros((256, 256), np.float32), (256, 256))
    with pytest.raises(nt.errors.TileTypingError, match="shared memory per block") as info:
        big_product.ptx(a, z)
    assert "big_product" in str(info.value) and "232448" in str(info.value)
    line = next(i for i, s in enumerate(open(__file__), 1) if s.rstrip().endswith("# MARK big"))
    assert info.value.lineno == line
    with pytest.raises(nt.errors.TileTypingError, match="101376 bytes a block can have on "
                       "compute capability 8.6"):
        big_product.ptx(a, z, cc=(8, 6))


def test_a_large_conversion_moves_in_passes_within_the_targets_limit():
    """A 128 KB transpose stages it all at once on sm_90 and sm_80, in two passes of 64 KB
    (a barrier pair each) on sm_86, whose 99 KB refused it in one piece; a 256 KB one (over
    every target's limit) compiles in two passes of 128 KB on sm_90."""
    x = np.zeros((128, 256), np.float32)
    z = nt.partition(np.zeros((256, 128), np.float32), (256, 128))
    for cc, nbytes in (((9, 0), 128 * 1024), ((8, 0), 128 * 1024), ((8, 6), 64 * 1024)):
        ck = _compiled(big_transpose, x, z, 128, 256, cc=cc)
        assert ck.shared_bytes == nbytes
        assert body(ck.ptx).count("bar.sync") == 2 * (128 * 1024 // nbytes)
        no_local_memory(ck.ptx)
    x = np.zeros((256, 256), np.float32)
    ck = _compiled(big_transpose, x, nt.partition(x.copy(), (256, 256)), 256, 256)
    assert ck.shared_bytes == 128 * 1024 and body(ck.ptx).count("bar.sync") == 4


def test_numpy_integers_for_grid_and_blocks():
    x = np.zeros(64, np.float32)
    p = nt.partition(x, 16, blocks=np.int64(3))
    assert p.blocks == 3 and type(p.blocks) is int
