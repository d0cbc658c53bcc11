"""The interpreter's race detector: every writable array (partition, ``nt.Mutable``
parameter) remembers which blocks of the launch wrote, read and atomically updated each
element. Two blocks conflict when one writes an element the other writes or reads, or when
one accesses plainly an element the other updates atomically; a scatter writing one element
twice conflicts with itself. Each conflict is a ``DataRaceError`` naming the array, both
blocks, the element and what each did, at the kernel line of the second access."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import dtypes
from numba_tile.errors import DataRaceError
from numba_tile.interpreter.memory import interp_load, interp_store
from numba_tile.interpreter.unchecked import interp_gather, interp_scatter
from numba_tile.interpreter.values import (AccessRecord, BlockContext, InterpPartition,
                                           InterpTensor, InterpTile, running_block)

RNG = np.random.default_rng()


def line_of(tag: str) -> int:
    """1-based line of this file that ends with ``# race: <tag>``."""
    lines = Path(__file__).read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# race: {tag}")]
    assert len(hits) == 1, f"tag {tag!r} on lines {hits}"
    return hits[0]


def race(launch, tag, *fragments) -> DataRaceError:
    """Run ``launch``; it must raise DataRaceError containing ``fragments``, pointing at the
    kernel line tagged ``tag`` and showing it."""
    with pytest.raises(DataRaceError) as info:
        launch()
    err = info.value
    for frag in fragments:
        assert frag in err.message, f"{frag!r} not in {err.message!r}"
    assert (err.filename, err.lineno) == (__file__, line_of(tag)), (err.filename, err.lineno)
    assert Path(__file__).read_text().splitlines()[err.lineno - 1].strip() in str(err)
    return err


def distinct(n, m):
    """``n`` distinct random indices in [0, m)."""
    return RNG.permutation(m)[:n].astype(np.int64)


# ------------------------------------------------------------------------------ kernels


@nt.jit(unchecked=True)
def scatter_rows(idx, vals, out: nt.Mutable, B: nt.Constant):
    """Block i scatters vals[i*B:(i+1)*B] to out[idx[i*B:(i+1)*B]]."""
    i = nt.bid(0)
    nt.scatter(out, nt.load(idx, (i,), (B,)), nt.load(vals, (i,), (B,)))  # race: scatter


@nt.jit(unchecked=True)
def scatter_then_gather(idx, vals, out: nt.Mutable, got: nt.Partition["B"], B: nt.Constant,
                        WRITER: nt.Constant):
    """Block WRITER scatters to out[idx-tile]; every other block gathers out[idx-tile]."""
    i = nt.bid(0)
    ix = nt.load_like(idx, got)
    if i == WRITER:
        nt.scatter(out, ix, nt.load_like(vals, got))  # race: rw-scatter
        nt.store(got, nt.load_like(vals, got))
    else:
        nt.store(got, nt.gather(out, ix))  # race: rw-gather


@nt.jit(unchecked=True)
def store_tiles_at(x, z: nt.Partition["B"], mul, add, t, B: nt.Constant):
    """Block i stores its tile of x at tile (i * mul + add) % t of z (a hand-built index)."""
    i = nt.bid(0)
    nt.store(z, nt.load_like(x, z), ((i * mul + add) % t,))  # race: partition-store


@nt.jit(unchecked=True)
def store_mutable_at(x, m: nt.Mutable, mul, add, t, B: nt.Constant):
    """Block i stores tile i of x at tile (i * mul + add) % t of m."""
    i = nt.bid(0)
    nt.store(m, nt.load(x, (i,), (B,)), ((i * mul + add) % t,))  # race: mutable-store


@nt.jit(unchecked=True)
def load_mutable_tile(m: nt.Mutable, got: nt.Partition["B"], mul, add, t, B: nt.Constant):
    """Block i copies tile (i * mul + add) % t of m into its own tile of got, then adds 1 to
    tile i of m."""
    i = nt.bid(0)
    nt.store(got, nt.load(m, ((i * mul + add) % t,), (B,)))  # race: mutable-load
    nt.store(m, nt.load(m, (i,), (B,)) + 1.0, (i,))  # race: mutable-own-store


@nt.jit(unchecked=True)
def plain_or_atomic(idx, vals, out: nt.Mutable, B: nt.Constant, ATOMIC_BLOCK: nt.Constant,
                    PLAIN: nt.Constant):
    """Block ATOMIC_BLOCK adds vals to out[idx] atomically; the others access out[idx] plainly
    (PLAIN 0: scatter, 1: gather, 2: load of tile 0)."""
    i = nt.bid(0)
    ix = nt.load(idx, (i,), (B,))
    v = nt.load(vals, (i,), (B,))
    if i == ATOMIC_BLOCK:
        nt.atomic_add(out, ix, v)  # race: atomic
    elif PLAIN == 0:
        nt.scatter(out, ix, v)  # race: plain-scatter
    elif PLAIN == 1:
        nt.scatter(out, ix + B * 64, nt.gather(out, ix))  # race: plain-gather
    else:
        nt.scatter(out, ix + B * 64, nt.load(out, (0,), (B,)))  # race: plain-load


@nt.jit(unchecked=True)
def atomic_into_partition(z: nt.Partition["B"], B: nt.Constant, WHO: nt.Constant):
    """Block WHO adds 1 to tile 1 of z atomically; then every block stores its own tile."""
    i = nt.bid(0)
    if i == WHO:
        nt.atomic_add(z, nt.arange(B) + B, 1.0)  # race: atomic-partition
    nt.store(z, nt.load(z) + 2.0)  # race: store-after-atomic


@nt.jit(unchecked=True)
def atomic_count(idx, out: nt.Mutable, B: nt.Constant):
    nt.atomic_add(out, nt.load(idx, (nt.bid(0),), (B,)), 1)


@nt.jit(unchecked=True)
def scatter_2d_masked(ri, ci, keep, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    nt.scatter(out, (nt.load(ri, (i,), (B,)), nt.load(ci, (i,), (B,))), 1.0,  # race: 2d
               mask=nt.load(keep, (i,), (B,)))


@nt.jit(unchecked=True)
def own_gather_scatter(idx, out: nt.Mutable, B: nt.Constant):
    """Each block reads, then overwrites, the elements of its own slice of idx."""
    ix = nt.load(idx, (nt.bid(0),), (B,))
    nt.scatter(out, ix, nt.gather(out, ix) * 2.0 + 1.0)


@nt.jit(unchecked=True)
def shared_read_own_write(idx, out: nt.Mutable, B: nt.Constant):
    """Every block reads out[0] (no block writes it) and writes its own elements."""
    ix = nt.load(idx, (nt.bid(0),), (B,))
    first = nt.gather(out, nt.zeros((B,), nt.int64))
    nt.scatter(out, ix, first + 1.0)


@nt.jit(unchecked=True)
def atomic_and_plain_in_one_block(out: nt.Mutable, B: nt.Constant):
    """Block i updates out[i*B:(i+1)*B] atomically, then reads and rewrites it plainly."""
    ix = nt.arange(B) + nt.full((B,), nt.bid(0) * B, nt.int32)
    nt.atomic_add(out, ix, 1.0)
    nt.scatter(out, ix, nt.gather(out, ix) * 3.0)


@nt.jit
def inplace_update(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load(z) * 0.5 + nt.load_like(x, z))


@nt.jit
def persistent_inplace(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(z, idx) + nt.load_like(x, z, index=idx), idx)


# --------------------------------------------------------------------- write and write


def test_two_blocks_storing_one_element_are_reported():
    z = np.zeros((8, 8), np.float32)
    part = InterpPartition("z", z, dtypes.float32, (4, 4))
    tile = InterpTile(np.ones((4, 4), np.float32), dtypes.float32)
    with running_block(BlockContext(1, (2, 2))):             # block (0, 1): z[0:4, 4:8]
        interp_store(part, tile)
    with running_block(BlockContext(1, (2, 2))):             # the same block again: no race
        interp_store(part, tile)
    # a (buggy) block whose own-tile computation lands on block 1's tile
    part.own_index = lambda: (0, 1)
    with running_block(BlockContext(3, (2, 2))):
        with pytest.raises(DataRaceError) as info:
            interp_store(part, tile)
    msg = str(info.value)
    assert "'z'" in msg and "(0, 4)" in msg and "block (0, 1)" in msg and "block (1, 1)" in msg
    assert "written by block (0, 1) (linear 1) and written by block (1, 1) (linear 3)" in msg


def test_two_blocks_scattering_to_one_element():
    n, B = 64, 16
    idx = distinct(4 * B, n)
    hit = int(RNG.integers(0, B))
    idx[2 * B + 5] = idx[hit]                              # block 2 hits block 0's element
    out = np.zeros(n)
    err = race(lambda: scatter_rows(idx, RNG.standard_normal(4 * B), out, B, grid=4,
                                    interpret=True, unchecked=True),
               "scatter", "'out'", f"element ({idx[hit]},)", "written by block (0,) (linear 0)",
               "written by block (2,) (linear 2) with scatter()", "atomic_add")
    assert not out.any()                                   # nothing written back
    assert err.filename == __file__


def test_two_blocks_storing_a_partition_tile_at_a_hand_built_index():
    B = 32
    x, z = RNG.standard_normal(4 * B).astype(np.float32), np.zeros(4 * B, np.float32)
    # tiles i % 2: blocks 0 and 2 both store tile 0
    race(lambda: store_tiles_at(x, nt.partition(z, B), 1, 0, 2, B, interpret=True,
                                unchecked=True),
         "partition-store", "'z'", "element (0,)", "written by block (0,) (linear 0)",
         "written by block (2,) (linear 2) with store()")
    assert not z.any()
    # tiles (3 i + 1) % 4 = 1, 0, 3, 2: a permutation, legal
    store_tiles_at(x, nt.partition(z, B), 3, 1, 4, B, interpret=True, unchecked=True)
    np.testing.assert_array_equal(z.reshape(4, B)[[1, 0, 3, 2]], x.reshape(4, B))


def test_two_blocks_storing_one_tile_of_a_mutable_array():
    B = 16
    x, m = RNG.standard_normal(3 * B).astype(np.float32), np.zeros(3 * B, np.float32)
    # tiles (2 i + 2) % 3 = 2, 1, 0 would be legal; (i + 1) % 2 = 1, 0, 1 is not
    race(lambda: store_mutable_at(x, m, 1, 1, 2, B, grid=3, interpret=True, unchecked=True),
         "mutable-store", "'m'", f"element ({B},)", "written by block (0,) (linear 0)",
         "written by block (2,) (linear 2) with store()")
    store_mutable_at(x, m, 2, 2, 3, B, grid=3, interpret=True, unchecked=True)
    np.testing.assert_array_equal(m, x.reshape(3, B)[::-1].reshape(-1))


# ---------------------------------------------------------------------- read and write


@pytest.mark.parametrize("writer", [0, 3])
def test_a_block_gathering_what_another_scattered(writer):
    """WRITER 0: the write comes first (block 1 reads it); WRITER 3: blocks 0..2 read first and
    block 3's scatter is the second access."""
    B = 16
    tiles = distinct(B, 200)
    idx = np.tile(tiles, 4)                                # every block touches the same elements
    vals, out = RNG.standard_normal(4 * B), np.zeros(200)
    got = np.zeros(4 * B)

    def launch():
        scatter_then_gather(idx, vals, out, nt.partition(got, B), B, writer, interpret=True,
                            unchecked=True)
    if writer == 0:
        race(launch, "rw-gather", "'out'", f"element ({tiles[0]},)",
             "written by block (0,) (linear 0)", "read by block (1,) (linear 1) with gather()")
    else:
        race(launch, "rw-scatter", "'out'", f"element ({tiles[0]},)", "read by block (0,)",
             "written by block (3,) (linear 3) with scatter()")


def test_a_block_loading_a_tile_another_block_wrote():
    B = 16
    m = RNG.standard_normal(4 * B).astype(np.float32)
    got = np.zeros(4 * B, np.float32)
    # every block loads tile 0, which block 0 wrote
    race(lambda: load_mutable_tile(m, nt.partition(got, B), 0, 0, 4, B, interpret=True,
                                   unchecked=True),
         "mutable-load", "'m'", "element (0,)", "written by block (0,) (linear 0)",
         "read by block (1,) (linear 1) with load()")
    # block i loads tile i + 1: block 1 then writes tile 1, which block 0 read
    race(lambda: load_mutable_tile(m, nt.partition(got, B), 1, 1, 4, B, interpret=True,
                                   unchecked=True),
         "mutable-own-store", "'m'", f"element ({B},)", "read by block (0,) (linear 0)",
         "written by block (1,) (linear 1) with store()")
    # block i loads its own tile: legal
    m0 = m.copy()
    load_mutable_tile(m, nt.partition(got, B), 1, 0, 4, B, interpret=True, unchecked=True)
    np.testing.assert_array_equal(got, m0)
    np.testing.assert_array_equal(m, m0 + 1.0)


def test_a_write_after_many_readers_names_another_reader():
    """Two slots per element are enough: whichever of several readers writes, another is
    named."""
    arr = np.zeros(8)
    for writer in (0, 1, 2):
        t = InterpTensor("m", arr, dtypes.float64, writable=True)
        for b in (0, 1, 2):
            with running_block(BlockContext(b, (3,))):
                interp_gather(t, InterpTile(np.array([5, 5, 2]), dtypes.int64))
        with running_block(BlockContext(writer, (3,))):
            with pytest.raises(DataRaceError) as info:
                interp_scatter(t, InterpTile(np.array([5]), dtypes.int64), 1.0)
        msg = info.value.message
        others = [f"read by block ({b},)" for b in (0, 1, 2) if b != writer]
        assert any(o in msg for o in others), msg
        assert f"written by block ({writer},)" in msg and "element (5,)" in msg
    assert not arr.any()


def test_blocks_in_any_order():
    """The detector does not rely on the runner's row-major block order: blocks arriving in
    descending or shuffled order are judged the same (legal accesses pass, conflicts raise,
    naming the earlier block)."""
    n = 40
    for order in (list(range(4))[::-1], list(RNG.permutation(4))):
        t = InterpTensor("m", np.zeros(n), dtypes.float64, writable=True)
        own = distinct(4 * 8, n).reshape(4, 8)
        for b in order:                                    # each block: its own elements
            with running_block(BlockContext(int(b), (4,))):
                interp_gather(t, InterpTile(own[b], dtypes.int64))
                interp_scatter(t, InterpTile(own[b], dtypes.int64), float(b))
                interp_gather(t, InterpTile(np.array([own[b][0]] * 3), dtypes.int64))
        np.testing.assert_array_equal(t.array[own.reshape(-1)], np.repeat(np.arange(4.0), 8))
        first, second = int(order[2]), int(order[3])       # now touch first's elements
        with running_block(BlockContext(second, (4,))):
            with pytest.raises(DataRaceError, match=rf"written by block \({first},\).*"
                                                    rf"read by block \({second},\)"):
                interp_gather(t, InterpTile(own[first][::-1], dtypes.int64))
        with running_block(BlockContext(second, (4,))):
            with pytest.raises(DataRaceError, match=rf"element \({own[first][2]},\)"):
                interp_scatter(t, InterpTile(own[first][2:5], dtypes.int64), 1.0)


# ------------------------------------------------------------------- atomic and plain


@pytest.mark.parametrize("atomic_block,plain,tag,past,present", [
    (0, 0, "plain-scatter", "updated atomically by block (0,) (linear 0)", "written by block (1,) (linear 1) with scatter()"),
    (1, 0, "atomic", "written by block (0,) (linear 0)", "updated atomically by block (1,) (linear 1) with atomic_add()"),
    (0, 1, "plain-gather", "updated atomically by block (0,) (linear 0)", "read by block (1,) (linear 1) with gather()"),
    (1, 1, "atomic", "read by block (0,) (linear 0)", "updated atomically by block (1,) (linear 1) with atomic_add()"),
    (0, 2, "plain-load", "updated atomically by block (0,) (linear 0)", "read by block (1,) (linear 1) with load()"),
], ids=["atomic-then-scatter", "scatter-then-atomic", "atomic-then-gather",
        "gather-then-atomic", "atomic-then-load"])
def test_plain_access_to_an_element_another_block_updates_atomically(atomic_block, plain, tag,
                                                                     past, present):
    B = 16
    idx = np.tile(distinct(B, B), 3)                       # every block: a permutation of 0..B-1
    out = np.zeros(B * 64 + B, np.float32)
    element = (0,) if plain == 2 else (int(idx[0]),)     # a load: the first of tile 0
    race(lambda: plain_or_atomic(idx, RNG.standard_normal(3 * B).astype(np.float32), out, B,
                                 atomic_block, plain, grid=3, interpret=True, unchecked=True),
         tag, "'out'", f"element {element}", past, present)
    assert not out.any()


def test_a_partition_tile_and_another_blocks_atomics():
    B = 16
    z0 = RNG.standard_normal(3 * B).astype(np.float32)
    z = z0.copy()
    race(lambda: atomic_into_partition(nt.partition(z, B), B, 0, interpret=True,
                                       unchecked=True),
         "store-after-atomic", "'z'", f"element ({B},)",
         "updated atomically by block (0,) (linear 0)", "read by block (1,) (linear 1) with load()")
    race(lambda: atomic_into_partition(nt.partition(z, B), B, 2, interpret=True,
                                       unchecked=True),
         "atomic-partition", "'z'", f"element ({B},)", "written by block (1,) (linear 1)",
         "updated atomically by block (2,) (linear 2) with atomic_add()")
    np.testing.assert_array_equal(z, z0)
    atomic_into_partition(nt.partition(z, B), B, 1, interpret=True, unchecked=True)   # its own
    np.testing.assert_allclose(z, z0 + 2.0 + np.repeat([0.0, 1.0, 0.0], B), rtol=1e-6)


# ---------------------------------------------------------- duplicates in one scatter


def test_one_scatter_writing_an_element_twice():
    B = 32
    idx = distinct(B, 1000)
    p, q = sorted(RNG.choice(B, 2, replace=False))
    idx[q] = idx[p]
    out = np.zeros(1000)
    race(lambda: scatter_rows(idx, RNG.standard_normal(B), out, B, grid=1, interpret=True,
                              unchecked=True),
         "scatter", "'out'", f"element ({idx[p]},)", "written twice by one scatter()",
         "block (0,) (linear 0)", f"positions ({p},) and ({q},) of its index tiles")
    assert not out.any()


def test_one_2d_scatter_writing_an_element_twice_and_masked_repeats():
    rows, cols, B = 12, 20, 64
    flat = RNG.permutation(rows * cols)[:B]
    ri, ci = (flat // cols).astype(np.int32), (flat % cols).astype(np.int32)
    keep = np.ones(B, bool)
    p, q = sorted(RNG.choice(B, 2, replace=False))
    ri[q], ci[q] = ri[p], ci[p]
    out = np.zeros((rows, cols), np.float32)
    race(lambda: scatter_2d_masked(ri, ci, keep, out, B, grid=1, interpret=True,
                                   unchecked=True),
         "2d", f"element ({ri[p]}, {ci[p]})", f"positions ({p},) and ({q},)")
    keep[q] = False                                        # the repeat masked off: legal
    scatter_2d_masked(ri, ci, keep, out, B, grid=1, interpret=True, unchecked=True)
    want = np.zeros((rows, cols), np.float32)
    want[ri[keep], ci[keep]] = 1.0
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------------------------ legal neighbours


def test_atomics_from_every_block_to_one_element():
    B, blocks = 32, 6
    idx = np.zeros(B * blocks, np.int64)
    idx[RNG.choice(B * blocks, B, replace=False)] = RNG.integers(1, 4, B)
    out = np.zeros(4, np.int32)
    atomic_count(idx, out, B, grid=blocks, interpret=True, unchecked=True)
    np.testing.assert_array_equal(out, np.bincount(idx, minlength=4))


def test_a_block_reading_then_writing_its_own_elements():
    B, blocks = 16, 5
    idx = distinct(B * blocks, 300)
    out = RNG.standard_normal(300)
    want = out.copy()
    want[idx] = want[idx] * 2.0 + 1.0
    own_gather_scatter(idx, out, B, grid=blocks, interpret=True, unchecked=True)
    np.testing.assert_array_equal(out, want)


def test_blocks_gathering_one_element_no_block_writes():
    B, blocks = 16, 4
    idx = 1 + distinct(B * blocks, 199)                    # never element 0
    out = RNG.standard_normal(200)
    want = out.copy()
    want[idx] = out[0] + 1.0
    shared_read_own_write(idx, out, B, grid=blocks, interpret=True, unchecked=True)
    np.testing.assert_array_equal(out, want)


def test_a_scatter_of_distinct_indices_from_every_block():
    B, blocks = 64, 7
    idx = distinct(B * blocks, B * blocks)
    vals, out = RNG.standard_normal(B * blocks), np.zeros(B * blocks)
    scatter_rows(idx, vals, out, B, grid=blocks, interpret=True, unchecked=True)
    want = np.zeros(B * blocks)
    want[idx] = vals
    np.testing.assert_array_equal(out, want)


def test_atomic_and_plain_accesses_of_one_block():
    B = 16
    out = RNG.standard_normal(4 * B)
    want = (out + 1.0) * 3.0
    atomic_and_plain_in_one_block(out, B, grid=4, interpret=True, unchecked=True)
    np.testing.assert_allclose(out, want, rtol=1e-12)


def test_records_live_for_one_launch():
    """Relaunching on the same arrays starts from a clean record (each launch's blocks are
    the only ones that can race)."""
    B, blocks = 32, 4
    idx = distinct(B * blocks, 200)
    out = np.zeros(200)
    for _ in range(3):
        scatter_rows(idx, RNG.standard_normal(B * blocks), out, B, grid=blocks,
                     interpret=True, unchecked=True)


def test_reads_of_read_only_tensors_are_not_recorded():
    x = InterpTensor("x", RNG.standard_normal(64), dtypes.float64)
    with running_block(BlockContext(0, (1,))):
        interp_gather(x, InterpTile(np.arange(16), dtypes.int64))
        interp_load(x, (1,), (16,))
    assert x.accesses is None and not x.writable
    z = InterpPartition("z", np.zeros(64), dtypes.float64, (16,))
    with running_block(BlockContext(2, (4,))):
        interp_load(z)
    assert isinstance(z.accesses, AccessRecord)
    assert (z.accesses.readers[0] == 2).sum() == 16 and z.accesses.writer is None


@pytest.mark.parametrize("example", ["vecadd", "saxpy", "persistent"])
def test_safe_kernels_never_trip_it(example, monkeypatch):
    """Every block of the safe example kernels writes only its own tile (the detector runs on
    every interpreted store)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples"))
    mod = importlib.import_module(example)
    if example == "vecadd":
        x, y = RNG.standard_normal(5000).astype(np.float32), RNG.standard_normal(5000).astype(np.float32)
        z = np.zeros(5000, np.float32)
        mod.vecadd(x, y, nt.partition(z, 1024), 1024, interpret=True)
        np.testing.assert_allclose(z, x + y, rtol=1e-6)
    elif example == "saxpy":
        x = RNG.standard_normal((100, 70)).astype(np.float32)
        out = np.zeros((100, 70), np.float32)
        mod.saxpy(2.0, x, x, nt.partition(out, (32, 64)), 32, 64, interpret=True)
        np.testing.assert_allclose(out, 3.0 * x, rtol=1e-6)
    else:
        x, y = RNG.standard_normal((2, 90, 70)).astype(np.float32)
        z = np.zeros((90, 70), np.float32)
        mod.persistent_axpby(2.0, x, -1.0, y, nt.partition(z, (16, 32), blocks=5), 16, 32,
                             interpret=True)
        np.testing.assert_allclose(z, 2.0 * x - y, rtol=1e-5, atol=1e-6)
    sys.modules.pop(example, None)


@pytest.mark.parametrize("blocks", [None, 3])
def test_safe_kernels_reading_their_partitions_never_trip_it(blocks):
    """Loads of a partition's own tiles are recorded as reads: a block reads and writes only
    its own tiles, so nothing conflicts (plain grid and persistent kernel)."""
    x = RNG.standard_normal((70, 50)).astype(np.float32)
    z0 = RNG.standard_normal((70, 50)).astype(np.float32)
    z = z0.copy()
    if blocks is None:
        inplace_update(x, nt.partition(z, (16, 16)), 16, 16, interpret=True)
        np.testing.assert_allclose(z, z0 * 0.5 + x, rtol=1e-6)
    else:
        persistent_inplace(x, nt.partition(z, (16, 16), blocks=blocks), 16, 16,
                           interpret=True)
        np.testing.assert_allclose(z, z0 + x, rtol=1e-6)


@nt.jit(unchecked=True)
def cta_scoped_counter(out: nt.Mutable, SCOPE: nt.Constant):
    nt.atomic_add(out, nt.zeros((16,), nt.int32), nt.full((16,), 1, nt.int32), scope=SCOPE)  # race: cta


@pytest.mark.parametrize("grid,scope,races", [(3, "cta", True), (1, "cta", False),
                                              (3, "gpu", False), (3, "sys", False)])
def test_cta_scoped_atomics_from_two_blocks_race(grid, scope, races):
    """An atomic with scope='cta' is atomic only within its block: two blocks updating one
    element with it race (PTX memory model); within one block, or with scope='gpu', they
    do not."""
    out = np.zeros(1, np.int32)
    launch = lambda: cta_scoped_counter(out, scope, grid=grid, interpret=True,  # noqa: E731
                                        unchecked=True)
    if not races:
        launch()
        assert out[0] == 16 * grid
        return
    with pytest.raises(DataRaceError) as e:
        launch()
    msg = e.value.message
    assert "scope='cta'" in msg and "block (0,)" in msg and "block (1,)" in msg
    assert "element (0,)" in msg and "scope='gpu'" in msg
    assert out[0] == 0                                   # nothing written back
