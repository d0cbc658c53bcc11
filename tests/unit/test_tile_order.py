"""Declared tile orders of a partition (``partition(..., order=grouped(G))``) and ``idx[d]``.

* The interpreter: block ``b`` owns tile number ``b`` of the order, ``bid`` gives its
  coordinates, a mapped partition's ``tiles()`` hands block ``b`` tile numbers ``b, b + B,
  ...`` of the order; every tile is written exactly once, with the right values, for several
  orders and ragged grids.
* The GPU lowering computes the same mapping: ``lowering/partition.tile_coords`` is built into
  a CPU function with llvmlite and compared with ``runtime/partition.tile_coords`` (the
  interpreter's) on every tile of many grids.
* ``idx[d]`` gives plain int64 coordinates: a store refuses an index rebuilt from them.
* Each order is its own specialization and its own disk-cache entry.
"""

from __future__ import annotations

import ctypes
import math
from types import SimpleNamespace

import numpy as np
import pytest
from llvmlite import binding as llvm
from llvmlite import ir

import numba_tile as nt
from numba_tile import cache, errors
from numba_tile.lowering.tile_order import tile_coords as lowered_tile_coords
from numba_tile.runtime.partition import tile_coords

RNG = np.random.default_rng()
ORDERS = ["row", nt.grouped(1), nt.grouped(3), nt.grouped(8), ("grouped", 2)]


def triton_grouped(pid, m, n, group):
    """Triton's grouped order, as its matmul tutorial writes it."""
    num_pid_in_group = group * n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * group
    group_size_m = min(m - first_pid_m, group)
    return (first_pid_m + ((pid % num_pid_in_group) % group_size_m),
            (pid % num_pid_in_group) // group_size_m)


def expected_coords(pid, grid, order):
    """The Python statement of the order (independent of numba_tile's own helper)."""
    if order == "row" or len(grid) < 2:
        return tuple(int(i) for i in np.unravel_index(pid, grid))
    lead, rest = divmod(pid, grid[-2] * grid[-1])
    outer = tuple(int(i) for i in np.unravel_index(lead, grid[:-2])) if len(grid) > 2 else ()
    return outer + triton_grouped(rest, grid[-2], grid[-1], order[1])


# ----------------------------------------------------------------------------- kernels


@nt.jit
def record_bids(z: nt.Partition[("BM", "BN")], r: nt.Partition[("BM", "BN")], BM: nt.Constant,
                BN: nt.Constant):
    """Each block writes its bid() into its own tile of z (the grid partition, in z's order)
    and of r (a second partition of the same grid, row-major)."""
    t = nt.full((BM, BN), 0, nt.int64) + nt.bid(0) * 1000 + nt.bid(1)
    nt.store(z, t)
    nt.store(r, t)


@nt.jit
def record_bids_3d(z: nt.Partition[(2, 4, 4)], r: nt.Partition[(2, 4, 4)]):
    t = nt.full((2, 4, 4), 0, nt.int64) + nt.bid(0) * 1000000 + nt.bid(1) * 1000 + nt.bid(2)
    nt.store(z, t)
    nt.store(r, t)


@nt.jit
def increment(z: nt.Partition):
    nt.store(z, nt.load(z) + 1)


@nt.jit
def increment_mapped(z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(z, idx) + 1, idx)


@nt.jit
def record_owner(z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """A mapped partition: each tile records the block that wrote it and idx[0], idx[-1]."""
    for idx in nt.tiles(z):
        t = nt.full((BM, BN), 0, nt.int64) + nt.bid(0) * 1000000 + idx[0] * 1000 + idx[-1]
        nt.store(z, t, idx)


@nt.jit
def outer_sums(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant):
    """GEMM-shaped: tile (i, j) of c sums, over the K tiles, the row sums of A's tile (i, k)
    times the column sums of B's tile (k, j); the input tiles come from idx[0], idx[1]."""
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            ta = nt.load(a, (idx[0], k), (BM, BK), padding=0.0)
            tb = nt.load(b, (k, idx[1]), (BK, BN), padding=0.0)
            acc = acc + nt.sum(ta, 1, keepdims=True) * nt.sum(tb, 0, keepdims=True)
        nt.store(c, acc, idx)


@nt.jit
def outer_sums_own(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant):
    """The same with one block per tile: the input tiles come from bid(0), bid(1)."""
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        ta = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0.0)
        tb = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0.0)
        acc = acc + nt.sum(ta, 1, keepdims=True) * nt.sum(tb, 0, keepdims=True)
    nt.store(c, acc)


def outer_sums_reference(a, b, bk):
    a, b = a.astype(np.float64), b.astype(np.float64)
    out = np.zeros((a.shape[0], b.shape[1]))
    for k in range(0, a.shape[1], bk):
        out += a[:, k:k + bk].sum(1, keepdims=True) * b[k:k + bk, :].sum(0, keepdims=True)
    return out


def tiles_of(z, tile):
    """The first element of each tile of ``z``: one value per tile."""
    return z[tuple(slice(None, None, t) for t in tile)]


# ----------------------------------------------------------------------------- interpreter


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize("shape", [(40, 56), (37, 53), (8, 8), (3, 61), (61, 3), (100, 9)])
def test_bid_is_the_own_tile_in_the_declared_order(order, shape):
    """5 x 7 (exact and ragged), 1 x 1, 1 x 8, 8 x 1 and 13 x 2 tile grids of (8, 8) tiles."""
    grid = tuple(-(-s // 8) for s in shape)
    z, r = np.full(shape, -1, np.int64), np.full(shape, -1, np.int64)
    record_bids(nt.partition(z, (8, 8), order=order), nt.partition(r, (8, 8)), 8, 8,
                interpret=True)
    zt, rt = tiles_of(z, (8, 8)), tiles_of(r, (8, 8))
    i, j = np.indices(grid)
    np.testing.assert_array_equal(zt, i * 1000 + j)       # bid() is the tile z's block stores
    assert (z == np.kron(zt, np.ones((8, 8), np.int64))[:shape[0], :shape[1]]).all()
    for pid in range(math.prod(grid)):                    # block pid: row-major tile of r
        ri, rj = np.unravel_index(pid, grid)
        assert divmod(int(rt[ri, rj]), 1000) == expected_coords(pid, grid, order)


@pytest.mark.parametrize("order", [nt.grouped(1), nt.grouped(2), nt.grouped(8)], ids=str)
def test_leading_axes_are_row_major_outermost(order):
    shape = (5, 11, 26)                                   # a 3 x 3 x 7 tile grid, ragged
    grid = (3, 3, 7)
    z, r = np.full(shape, -1, np.int64), np.full(shape, -1, np.int64)
    record_bids_3d(nt.partition(z, (2, 4, 4), order=order), nt.partition(r, (2, 4, 4)),
                   interpret=True)
    rt = tiles_of(r, (2, 4, 4))
    for pid in range(math.prod(grid)):
        v = int(rt[np.unravel_index(pid, grid)])
        got = (v // 1000000, v // 1000 % 1000, v % 1000)
        assert got == expected_coords(pid, grid, order)
    zt = tiles_of(z, (2, 4, 4))
    i, j, k = np.indices(grid)
    np.testing.assert_array_equal(zt, i * 1000000 + j * 1000 + k)


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize("blocks", [None, 1, 4, 35, 100])
def test_every_tile_is_written_exactly_once(order, blocks):
    z = np.zeros((37, 53), np.int32)                      # 5 x 7 tiles of (8, 8)
    kernel = increment if blocks is None else increment_mapped
    kernel(nt.partition(z, (8, 8), blocks=blocks, order=order), interpret=True)
    assert (z == 1).all()


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize("blocks", [1, 3, 8, 35, 50])
def test_a_mapped_partition_hands_block_b_tiles_b_b_plus_blocks_of_the_order(order, blocks):
    shape, grid = (37, 53), (5, 7)
    z = np.full(shape, -1, np.int64)
    record_owner(nt.partition(z, (8, 8), blocks=blocks, order=order), 8, 8, interpret=True)
    zt = tiles_of(z, (8, 8))
    for k in range(35):
        i, j = expected_coords(k, grid, order)
        assert int(zt[i, j]) == (k % blocks) * 1000000 + i * 1000 + j, (k, i, j)


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize("blocks", [None, 3, 132])
def test_gemm_shaped_kernel_loads_inputs_at_its_tiles_coordinates(order, blocks):
    m, n, kk = 37, 53, 45                                 # 5 x 7 tiles of (8, 8); K ragged
    a = RNG.standard_normal((m, kk)).astype(np.float32)
    b = RNG.standard_normal((kk, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel = outer_sums_own if blocks is None else outer_sums
    kernel(a, b, nt.partition(c, (8, 8), blocks=blocks, order=order), 8, 8, 16, interpret=True)
    np.testing.assert_allclose(c, outer_sums_reference(a, b, 16), rtol=1e-4, atol=1e-3)


def test_a_race_report_names_blocks_by_their_tiles_in_the_order():
    from numba_tile.interpreter.values import BlockContext, _block_name
    blk = BlockContext(4, (5, 7), ("grouped", 3))
    assert _block_name(4, blk) == "block (1, 1) (linear 4)"
    assert BlockContext(4, (5, 7)).index == (0, 4)


# ----------------------------------------------------------------------------- idx[d]


@nt.jit
def store_at_rebuilt_index(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), (idx[0], idx[1]))  # REBUILT


@nt.jit
def store_at_shifted_index(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), (idx[0] + 0, idx[-1]))  # SHIFTED


@nt.jit
def item_at_runtime_axis(x, z: nt.Partition, d):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(x, (idx[d], 0), (8, 8)), idx)  # RUNTIME-AXIS


@nt.jit
def item_out_of_range(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(x, (idx[-3], 0), (8, 8)), idx)  # OUT-OF-RANGE


def _line(marker):
    with open(__file__) as f:
        return next(i for i, s in enumerate(f, 1) if s.rstrip().endswith(f"# {marker}"))


@pytest.mark.parametrize("kernel,marker", [(store_at_rebuilt_index, "REBUILT"),
                                           (store_at_shifted_index, "SHIFTED")])
@pytest.mark.parametrize("how", ["interpreter", "ptx"])
def test_a_store_refuses_an_index_rebuilt_from_coordinates(kernel, marker, how):
    x, z = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    p = nt.partition(z, (8, 8), blocks=2, order=nt.grouped(2))
    with pytest.raises(errors.ForeignTileStoreError) as info:
        kernel(x, p, interpret=True) if how == "interpreter" else kernel.ptx(x, p)
    assert "at an index built by hand (UniTuple(int64 x 2))" in info.value.message
    assert (info.value.filename, info.value.lineno) == (__file__, _line(marker))
    assert (z == 0).all()


@pytest.mark.parametrize("kernel,marker,got", [
    (item_at_runtime_axis, "RUNTIME-AXIS", "got int32"),
    (item_out_of_range, "OUT-OF-RANGE", "got Literal[int](-3)")])
def test_an_item_of_an_index_needs_a_static_axis_in_range(kernel, marker, got):
    x, z = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    args = (x, nt.partition(z, (8, 8), blocks=2)) + ((0,) if kernel is item_at_runtime_axis
                                                     else ())
    with pytest.raises(errors.TileTypingError) as info:
        kernel(*args, interpret=True)
    assert ('Invalid argument "d" of getitem(): expected a static integer axis in [-2, 2) of '
            'the 2-d tile index PartitionIndex[z, 2d]') in info.value.message
    assert got in info.value.message
    assert (info.value.filename, info.value.lineno) == (__file__, _line(marker))


# ----------------------------------------------------------------------------- specializations


def test_each_order_is_its_own_specialization_and_cache_entry(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))

    @nt.jit
    def own_tile_copy(x, z: nt.Partition[(16, 16)]):
        nt.store(z, nt.load_like(x, z))

    x = np.zeros((64, 64), np.float32)
    ptx = {}
    for order in ["row", nt.grouped(3), nt.grouped(8)]:
        ptx[str(order)] = own_tile_copy.ptx(x, nt.partition(x.copy(), (16, 16), order=order))
    assert len(set(ptx.values())) == 3
    assert len(list(tmp_path.glob("*.json"))) == 3
    names = sorted(str(s.argtypes[1]) for s in own_tile_copy._signatures.values())
    assert names == ["Partition[float32, tile=(16, 16), vec16, grouped(3), param=z]",
                     "Partition[float32, tile=(16, 16), vec16, grouped(8), param=z]",
                     "Partition[float32, tile=(16, 16), vec16, param=z]"]
    own_tile_copy._compiled.clear()           # from the disk: each order finds its own entry
    for order in ["row", nt.grouped(3), nt.grouped(8)]:
        assert own_tile_copy.ptx(x, nt.partition(x.copy(), (16, 16), order=order)) == \
            ptx[str(order)]


def test_an_order_changed_behind_the_guard_is_refused_at_launch():
    z = np.zeros((16, 16), np.float32)
    p = nt.partition(z, (8, 8), order=nt.grouped(2))
    object.__setattr__(p, "order", ("grouped", 0))
    with pytest.raises(errors.TileArgumentError) as info:
        increment(p, interpret=True)  # CHANGED-ORDER
    assert "argument 'z': the partition's order was changed" in info.value.message
    assert (info.value.filename, info.value.lineno) == (__file__, _line("CHANGED-ORDER"))


# ----------------------------------------------------------------------------- GPU lowering


_JIT = {}


def _lowered(ndim, tile_shape, order):
    """``lowering/partition.tile_coords`` built into a CPU function
    ``f(extent_0, ..., extent_{ndim-1}, linear, out*)`` with llvmlite."""
    key = (ndim, tile_shape, order)
    if key in _JIT:
        return _JIT[key][0]
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    i64 = ir.IntType(64)
    module = ir.Module(name="tile_order")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64] * (ndim + 1) + [i64.as_pointer()]),
                     "coords")
    builder = ir.IRBuilder(fn.append_basic_block())
    view = SimpleNamespace(shape=list(fn.args[:ndim]))
    for d, v in enumerate(lowered_tile_coords(builder, view, tile_shape, order, fn.args[ndim])):
        builder.store(v, builder.gep(fn.args[ndim + 1], [ir.Constant(i64, d)]))
    builder.ret_void()
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple()
                                        .create_target_machine())
    engine.finalize_object()
    cfn = ctypes.CFUNCTYPE(None, *([ctypes.c_int64] * (ndim + 1)),
                           ctypes.POINTER(ctypes.c_int64))(engine.get_function_address("coords"))
    _JIT[key] = (cfn, engine)
    return cfn


@pytest.mark.parametrize("order", ["row", ("grouped", 1), ("grouped", 2), ("grouped", 3),
                                   ("grouped", 8), ("grouped", 2**31 - 1)], ids=str)
@pytest.mark.parametrize("shape,tile", [
    ((80, 112), (16, 16)), ((73, 97), (16, 16)), ((5, 7), (1, 1)), ((7, 5), (1, 1)),
    ((1, 1), (4, 4)), ((1, 300), (1, 32)), ((300, 1), (32, 1)), ((13, 64, 3), (4, 8, 1)),
    ((3, 5, 26, 29), (1, 2, 8, 4))])
def test_the_gpu_lowering_maps_tile_numbers_as_the_interpreter(order, shape, tile):
    if order != "row" and len(shape) < 2:
        pytest.skip("grouped orders need rank 2")
    grid = tuple(-(-s // t) for s, t in zip(shape, tile))
    f = _lowered(len(shape), tile, order)
    out = (ctypes.c_int64 * len(shape))()
    seen = set()
    for pid in range(math.prod(grid)):
        f(*shape, pid, out)
        got = tuple(out)
        assert got == tile_coords(pid, grid, order) == expected_coords(pid, grid, order), pid
        seen.add(got)
    assert len(seen) == math.prod(grid)                  # a bijection of the tile grid


# ----------------------------------------------------------------------------- foreign lowerings


_FOREIGN_PRELUDE = """
import operator, os
import numpy as np
import numba_tile as nt
from numba.cuda import types
from numba.cuda.cudaimpl import registry as lowering
from numba_tile import errors
from numba_tile.typing.types import PartitionIndexType

@nt.jit
def coords_kernel(x, z: nt.Partition[(8, 8)]):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(x, (idx[0], idx[1]), (8, 8)), idx)

x, z = np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32)
"""

_FOREIGN_CASES = {
    "operator.getitem on a PartitionIndex": ("""
@lowering.lower(operator.getitem, PartitionIndexType, types.Integer)
def evil(context, builder, sig, args):
    raise AssertionError("never lowered")
""", ["index_getitem() has a lowering registered outside numba_tile", "evil in"]),
    "static_getitem on a PartitionIndex": ("""
@lowering.lower("static_getitem", PartitionIndexType, types.IntegerLiteral)
def evil(context, builder, sig, args):
    raise AssertionError("never lowered")
""", ["has a 'static_getitem' lowering registered outside numba_tile", "evil in"]),
    "operator.getitem on any type, at a literal index": ("""
@lowering.lower(operator.getitem, types.Type, types.IntegerLiteral)
def evil(context, builder, sig, args):
    raise AssertionError("never lowered")
""", ["index_getitem() on PartitionIndex[z, 2d] has no single lowering"]),
}


@pytest.mark.parametrize("case", list(_FOREIGN_CASES))
def test_a_foreign_lowering_of_idx_items_is_refused_and_caches_nothing(tmp_path, case):
    """A lowering registered by other code for ``idx[d]`` would run behind numba_tile's op;
    each runs in a child process (a registration lasts for the life of the process)."""
    import textwrap

    from tests.unit.test_extension_registrations import run_child
    code, fragments = _FOREIGN_CASES[case]
    script = _FOREIGN_PRELUDE + code + textwrap.dedent(f"""
        for how in ("ptx", "interpreter"):
            p = nt.partition(z, (8, 8), blocks=2, order=nt.grouped(2))
            try:
                if how == "ptx":
                    coords_kernel.ptx(x, p)
                else:
                    coords_kernel(x, p, interpret=True)
            except errors.UnanalyzedCallError as e:
                assert all(f in e.message for f in {fragments!r}), e.message
                assert e.lineno is not None, e.message
                print(how, "refused")
            else:
                print(how, "ACCEPTED")
        print("entries", len(os.listdir(os.environ["NUMBA_TILE_CACHE_DIR"])))
    """)
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    lines = run_child(tmp_path, script, cache_dir)
    assert lines[:3] == ["ptx refused", "interpreter refused", "entries 0"], lines
