"""Unchecked kernels: gather, scatter and atomics against NumPy, on the GPU and in the
interpreter; the acknowledgement and the refusals that keep safe kernels safe."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (DataRaceError, StoreToReadOnlyError, TileArgumentError,
                               UncheckedLaunchError, UncheckedOpError)


@nt.jit(unchecked=True)
def gather_kernel(x, idx, out: nt.Partition["B"], B: nt.Constant):
    i = nt.load_like(idx, out, padding=-1)
    nt.store(out, nt.gather(x, i, padding=-7.0))


def test_gather_with_out_of_bounds_indices(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(300).astype(np.float32)
    ih = rng.integers(-20, 320, 1000).astype(np.int32)          # some out of bounds
    out = tile_backend.asarray(np.zeros(1000, np.float32))
    tile_backend.run(gather_kernel, tile_backend.asarray(xh), tile_backend.asarray(ih),
                     nt.partition(out, 256), 256, unchecked=True)
    inside = (ih >= 0) & (ih < 300)
    ref = np.where(inside, xh[np.clip(ih, 0, 299)], -7.0)
    np.testing.assert_array_equal(tile_backend.to_numpy(out), ref)


@nt.jit(unchecked=True)
def scatter_kernel(idx, vals, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    nt.scatter(out, nt.load(idx, (i,), (B,), padding=-1), nt.load(vals, (i,), (B,)))


def test_scatter_of_a_permutation(tile_backend):
    rng = np.random.default_rng()
    n = 3000
    perm = rng.permutation(n).astype(np.int64)
    vals = rng.standard_normal(n)
    out = tile_backend.asarray(np.full(n, np.nan))
    tile_backend.run(scatter_kernel, tile_backend.asarray(perm), tile_backend.asarray(vals), out,
                     512, grid=-(-n // 512), unchecked=True)
    ref = np.empty(n)
    ref[perm] = vals
    np.testing.assert_array_equal(tile_backend.to_numpy(out), ref)


@nt.jit(unchecked=True)
def atomic_kernel(idx, vals, out: nt.Mutable, old: nt.Partition["B"], B: nt.Constant,
                  OP: nt.Constant):
    i = nt.load_like(idx, old, padding=-1)
    v = nt.load_like(vals, old)
    if OP == 0:
        r = nt.atomic_add(out, i, v)
    elif OP == 1:
        r = nt.atomic_max(out, i, v, sem="acq_rel")
    elif OP == 2:
        r = nt.atomic_min(out, i, v, scope="sys")
    elif OP == 3:
        r = nt.atomic_xchg(out, i, v, sem="release", scope="gpu")
    else:       # scope="cta" from many blocks is a race: compiled only (compile tier)
        r = nt.atomic_xchg(out, i, v, sem="release", scope="cta")
    nt.store(old, r)


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["add", "max", "min", "xchg"])
def test_atomics(tile_backend, dt, op):
    if op in ("max", "min") and np.dtype(dt).kind == "f":
        pytest.skip("atomic max/min are integer-only")
    rng = np.random.default_rng()
    n, m = 4000, 37
    ih = rng.integers(0, m, n).astype(np.int32)
    vh = rng.integers(-1000, 1000, n).astype(dt)            # exact in every dtype
    base = rng.integers(-1000, 1000, m).astype(dt)
    out = tile_backend.asarray(base.copy())
    old = tile_backend.asarray(np.zeros(n, dt))
    code = ["add", "max", "min", "xchg"].index(op)
    tile_backend.run(atomic_kernel, tile_backend.asarray(ih), tile_backend.asarray(vh), out,
                     nt.partition(old, 256), 256, code, unchecked=True)
    got, olds = tile_backend.to_numpy(out), tile_backend.to_numpy(old)
    if op == "add":
        ref = base.astype(np.float64).copy()
        np.add.at(ref, ih, vh.astype(np.float64))
        np.testing.assert_array_equal(got, ref.astype(dt))
        # whatever the order, the first add saw the base and the last one made the final value
        for k in range(m):
            sel = ih == k
            if sel.any():
                assert (olds[sel] == base[k]).any()
                assert ((olds[sel] + vh[sel]) == got[k]).any()
    elif op in ("max", "min"):
        ref = base.copy()
        (np.maximum if op == "max" else np.minimum).at(ref, ih, vh)
        np.testing.assert_array_equal(got, ref)
    else:
        # each slot ends with one of the values exchanged into it; every other value and the
        # base come back as old values exactly once
        for k in range(m):
            mine = vh[ih == k]
            if len(mine) == 0:
                assert got[k] == base[k]
                continue
            assert got[k] in mine
            returned = np.sort(np.append(olds[ih == k], got[k]))
            np.testing.assert_array_equal(returned, np.sort(np.append(mine, base[k])))


@nt.jit(unchecked=True)
def cas_kernel(slot, claims: nt.Mutable, won: nt.Partition["B"], B: nt.Constant):
    tid = nt.arange(B) + nt.full((B,), nt.bid(0) * B, nt.int32)
    s = nt.load_like(slot, won, padding=-1)
    prev = nt.atomic_cas(claims, s, -1, tid)          # first claimant wins the slot
    nt.store(won, prev == -1)


def test_compare_and_swap_has_one_winner_per_slot(tile_backend):
    rng = np.random.default_rng()
    n, m = 2048, 50
    sh = rng.integers(0, m, n).astype(np.int32)
    claims = tile_backend.asarray(np.full(m, -1, np.int32))
    won = tile_backend.asarray(np.zeros(n, np.bool_))
    tile_backend.run(cas_kernel, tile_backend.asarray(sh), claims, nt.partition(won, 256), 256,
                     unchecked=True)
    c, w = tile_backend.to_numpy(claims), tile_backend.to_numpy(won)
    for k in range(m):
        contenders = np.nonzero(sh == k)[0]
        if len(contenders) == 0:
            assert c[k] == -1
        else:
            assert w[contenders].sum() == 1 and c[k] in contenders and w[c[k]]


@nt.jit(unchecked=True)
def scatter_2d(ri, ci, vals, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    nt.scatter(out, (nt.load(ri, (i,), (B,)), nt.load(ci, (i,), (B,))), nt.load(vals, (i,), (B,)),
               mask=nt.load(vals, (i,), (B,), padding=-1.0) >= 0.0)


def test_scatter_with_2d_coordinates_and_mask(tile_backend):
    rng = np.random.default_rng()
    rows, cols = 20, 30
    flat = rng.permutation(rows * cols)[:400]
    ri, ci = (flat // cols).astype(np.int32), (flat % cols).astype(np.int32)
    vals = rng.standard_normal(400).astype(np.float32)
    out = tile_backend.asarray(np.full((rows, cols), 5.0, np.float32))
    tile_backend.run(scatter_2d, tile_backend.asarray(ri), tile_backend.asarray(ci),
                     tile_backend.asarray(vals), out, 128, grid=4, unchecked=True)
    ref = np.full((rows, cols), 5.0, np.float32)
    keep = vals >= 0
    ref[ri[keep], ci[keep]] = vals[keep]
    np.testing.assert_array_equal(tile_backend.to_numpy(out), ref)


# ------------------------------------------------------------------- refusals

@nt.jit
def safe_with_atomic(x, z: nt.Partition):
    nt.atomic_add(z, nt.arange(16), nt.load_like(x, z))


@nt.jit
def safe_with_gather(x, z: nt.Partition):
    # from the partition: unchecked (from the read-only x it is safe, test_safe_gather.py)
    nt.store(z, nt.gather(z, nt.arange(16)) + nt.load_like(x, z))


@nt.jit(unchecked=True)
def unchecked_store_to_input(x, out: nt.Mutable):
    nt.scatter(x, nt.arange(16), 1.0)


def test_safe_kernels_cannot_use_unchecked_ops():
    x, z = np.ones(16, np.float32), np.zeros(16, np.float32)
    for kernel, name in [(safe_with_atomic, "atomic_add"), (safe_with_gather, "gather")]:
        with pytest.raises(UncheckedOpError, match=f"{name}\\(\\) is an unchecked operation"):
            kernel(x, nt.partition(z, 16), interpret=True)
    assert not z.any()


def test_unchecked_launch_needs_acknowledgement():
    x, out = np.ones(16, np.int64), np.zeros(16, np.float64)
    with pytest.raises(UncheckedLaunchError, match="unchecked=True"):
        scatter_kernel(x, x, out, 16, grid=1, interpret=True)
    assert not out.any()


def test_unchecked_kernels_still_cannot_write_read_only_parameters():
    with pytest.raises(StoreToReadOnlyError, match="'x'"):
        unchecked_store_to_input(np.ones(16, np.float32), np.zeros(16, np.float32), grid=1,
                                 interpret=True, unchecked=True)


def test_mutable_parameters_need_an_unchecked_kernel():
    with pytest.raises(TileArgumentError, match="Mutable"):
        @nt.jit
        def k(x, out: nt.Mutable):
            pass


def test_unchecked_launch_checks_still_apply():
    buf = np.zeros(32, np.float64)
    with pytest.raises(nt.errors.AliasingError):
        scatter_kernel(np.zeros(16, np.int64), buf[:16], buf[8:24], 16, grid=1, interpret=True,
                       unchecked=True)


def test_racy_unchecked_kernel_trips_the_race_detector():
    idx = np.tile(np.arange(16), 4).astype(np.int64)      # every block scatters to 0..15
    with pytest.raises(DataRaceError, match="block"):
        scatter_kernel(idx, np.ones(64), np.zeros(16), 16, grid=4, interpret=True,
                       unchecked=True)


@nt.jit(unchecked=True)
def gather_scatter_own(idx, shared, out: nt.Mutable, B: nt.Constant):
    """Every block reads out[shared[0]] (no block writes it) and, at its own distinct
    elements, reads out, then overwrites it: legal neighbours of the race detector's
    read-write conflicts."""
    i = nt.bid(0)
    ix = nt.load(idx, (i,), (B,))
    common = nt.gather(out, nt.load(shared, (0,), (B,)))
    nt.scatter(out, ix, nt.gather(out, ix) * 2.0 + common)


def test_reading_shared_and_rewriting_own_elements(tile_backend):
    rng = np.random.default_rng()
    B, blocks, n = 128, 6, 1000
    idx = (1 + rng.permutation(n - 1)[:B * blocks]).astype(np.int64)   # never element 0
    shared = np.zeros(B, np.int64)
    base = rng.standard_normal(n)
    out = tile_backend.asarray(base.copy())
    tile_backend.run(gather_scatter_own, tile_backend.asarray(idx), tile_backend.asarray(shared),
                     out, B, grid=blocks, unchecked=True)
    ref = base.copy()
    ref[idx] = base[idx] * 2.0 + base[0]
    np.testing.assert_array_equal(tile_backend.to_numpy(out), ref)


def test_read_write_and_atomic_conflicts_are_reported_in_the_interpreter():
    """The GPU twin of these launches has undefined results; the interpreter reports them."""
    rng = np.random.default_rng()
    B, n = 16, 200
    perm = rng.permutation(n)[:B].astype(np.int64)
    idx = np.tile(perm, 3)                        # every block gathers and scatters the same
    with pytest.raises(DataRaceError, match=rf"element \({perm[0]},\): (read|written) by "
                                            r"block \(0,\).* by block \(1,\)"):
        gather_scatter_own(idx, np.full(B, perm[0]), np.zeros(n), B, grid=3, interpret=True,
                           unchecked=True)
    vals = rng.standard_normal(3 * B)
    out = np.zeros(n)
    with pytest.raises(DataRaceError, match="written twice by one scatter"):
        scatter_kernel(np.repeat(perm[:8], 2), vals[:B], out, B, grid=1, interpret=True,
                       unchecked=True)
    assert not out.any()


@nt.jit(unchecked=True)
def reverse_tiles(x, z: nt.Partition["B"], B: nt.Constant):
    i = nt.bid(0)
    n = nt.num_blocks(0)
    nt.store(z, nt.load_like(x, z), (n - 1 - i,))      # a hand-built index: unchecked only


def test_unchecked_store_at_a_hand_built_tile_index(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(8 * 64).astype(np.float32)
    z = tile_backend.asarray(np.zeros(8 * 64, np.float32))
    tile_backend.run(reverse_tiles, tile_backend.asarray(xh), nt.partition(z, 64), 64,
                     unchecked=True)
    ref = xh.reshape(8, 64)[::-1].reshape(-1)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), ref)


@nt.jit(unchecked=True)
def shifted_tiles(x, z: nt.Partition["B"], B: nt.Constant, SHIFT: nt.Constant):
    i = nt.bid(0)
    nt.store(z, nt.load_like(x, z), (i - SHIFT,))     # blocks below SHIFT: a negative index


def test_a_store_at_a_negative_tile_index_writes_nothing(tile_backend):
    """Regression (the interpreter sliced from the array's end): the bounds masks drop every
    element of a tile outside the array, and the race detector records none."""
    rng = np.random.default_rng()
    B, tiles, shift = 32, 6, 2
    xh = rng.standard_normal(tiles * B).astype(np.float32)
    z0 = rng.standard_normal(tiles * B).astype(np.float32)
    z = tile_backend.asarray(z0)
    tile_backend.run(shifted_tiles, tile_backend.asarray(xh), nt.partition(z, B), B, shift,
                     unchecked=True)
    ref = z0.copy()
    ref[:(tiles - shift) * B] = xh[shift * B:]
    np.testing.assert_array_equal(tile_backend.to_numpy(z), ref)


@nt.jit(unchecked=True)
def atomic_then_transpose(h: nt.Mutable, z: nt.Partition[(2, 4)]):
    old = nt.atomic_add(h, nt.reshape(nt.arange(8), (4, 2)), 1)
    nt.store(z, nt.transpose(old))


def test_atomic_results_survive_a_layout_change(tile_backend):
    """Threads replicating a small tile get the owners' real old values of an atomic through a
    layout change (not 0, written to shared memory next to the owners' values)."""
    rng = np.random.default_rng()
    h0 = rng.integers(-100, 100, 8).astype(np.int32)
    h = tile_backend.asarray(h0.copy())
    z = tile_backend.asarray(np.zeros((2, 4), np.int32))
    tile_backend.run(atomic_then_transpose, h, nt.partition(z, (2, 4)), unchecked=True)
    np.testing.assert_array_equal(tile_backend.to_numpy(z), h0.reshape(4, 2).T)
    np.testing.assert_array_equal(tile_backend.to_numpy(h), h0 + 1)


@nt.jit(unchecked=True)
def tiles_to_mutable(x, m: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    nt.store(m, nt.load(x, (i,), (B,)) * 2.0, (nt.num_blocks(0) - 1 - i,))


def test_store_of_tiles_into_a_mutable_array(tile_backend):
    rng = np.random.default_rng()
    xh = rng.standard_normal(6 * 32).astype(np.float32)
    m = tile_backend.asarray(np.zeros(6 * 32, np.float32))
    tile_backend.run(tiles_to_mutable, tile_backend.asarray(xh), m, 32, grid=6, unchecked=True)
    np.testing.assert_allclose(tile_backend.to_numpy(m), (2 * xh).reshape(6, 32)[::-1].reshape(-1),
                               rtol=1e-6)


def test_store_into_a_mutable_array_needs_an_index_and_no_narrowing():
    @nt.jit(unchecked=True)
    def no_index(x, m: nt.Mutable, B: nt.Constant):
        nt.store(m, nt.load(x, (0,), (B,)))

    @nt.jit(unchecked=True)
    def narrowing(x, m: nt.Mutable, B: nt.Constant):
        nt.store(m, nt.load(x, (0,), (B,)) * 1.5, (0,))

    x = np.ones(16, np.float32)
    with pytest.raises(nt.errors.TileTypingError, match="tile indices"):
        no_index(x, np.zeros(16, np.float32), 16, grid=1, interpret=True, unchecked=True)
    m = np.zeros(16, np.int32)
    with pytest.raises(nt.errors.TileTypingError, match="narrowing"):
        narrowing(x, m, 16, grid=1, interpret=True, unchecked=True)
    assert not m.any()


# ------------------------------------- Mutable re-loads and tile indices that would wrap


@nt.jit(unchecked=True, num_warps=8)
def mutable_reload(x, m: nt.Mutable, z: nt.Partition["B"], B: nt.Constant):
    before = nt.load(m, (nt.bid(0),), (B,))
    nt.store(m, nt.load_like(x, z), (nt.bid(0),))       # one layout: each thread re-reads
    after = nt.load(m, (nt.bid(0),), (B,))              # what it stored itself
    nt.store(z, after - before)


def test_a_mutable_array_reloaded_after_a_store_gives_the_stored_values(tile_backend):
    """Loads of a Mutable array are coherent (no ``ld.global.nc``, no ``!invariant.load``), so
    the re-load returns the stored value, not the value from before the store."""
    rng = np.random.default_rng()
    B, blocks = 4096, 6
    for _ in range(3):
        xh = rng.standard_normal(B * blocks).astype(np.float32)
        m0 = rng.standard_normal(B * blocks).astype(np.float32)
        m = tile_backend.asarray(m0)
        z = tile_backend.asarray(np.full(B * blocks, np.nan, np.float32))
        tile_backend.run(mutable_reload, tile_backend.asarray(xh), m, nt.partition(z, B), B,
                         unchecked=True)
        np.testing.assert_array_equal(tile_backend.to_numpy(m), xh)
        np.testing.assert_allclose(tile_backend.to_numpy(z),
                                   xh.astype(np.float64) - m0.astype(np.float64), rtol=1e-6,
                                   atol=1e-6)


@nt.jit(unchecked=True)
def far_tile(x, z: nt.Partition["B"], m: nt.Mutable, w: nt.Partition["B"], far,
             B: nt.Constant):
    t = nt.load_like(x, z)
    if nt.bid(0) == 1:
        nt.store(z, t + 100.0, (far,))              # a hand-built index past the grid
    else:
        nt.store(z, t)
    nt.store(m, t + 200.0, (far,))                  # a Mutable array at that index
    nt.store(w, nt.load(x, (far,), (B,), padding=-1.0))    # and a load there: padding


@pytest.mark.parametrize("far", [2**61, 2**61 + 1, -2**61, 2**62 + 1, 2**63 - 1],
                         ids=["2^61", "2^61+1", "-2^61", "2^62+1", "2^63-1"])
def test_a_tile_index_that_would_wrap_touches_nothing(tile_backend, far):
    """``index * tile`` must not wrap modulo 2**64 (2**61 * 8 == 0: the store would land in
    tile 0 or 1, racing with that tile's own block): the GPU and the interpreter both drop the
    store, and read padding there."""
    rng = np.random.default_rng()
    B, tiles = 8, 4
    xh = rng.standard_normal(B * tiles).astype(np.float32)
    m0 = rng.standard_normal(B * tiles).astype(np.float32)
    z = tile_backend.asarray(np.zeros(B * tiles, np.float32))
    m = tile_backend.asarray(m0)
    w = tile_backend.asarray(np.zeros(B * tiles, np.float32))
    tile_backend.run(far_tile, tile_backend.asarray(xh), nt.partition(z, B), m,
                     nt.partition(w, B), far, B, unchecked=True)
    ref = xh.copy()
    ref[B:2 * B] = 0.0                              # block 1 stored only at the far index
    np.testing.assert_array_equal(tile_backend.to_numpy(z), ref)
    np.testing.assert_array_equal(tile_backend.to_numpy(m), m0)
    np.testing.assert_array_equal(tile_backend.to_numpy(w), np.full(B * tiles, -1.0, np.float32))


@nt.jit(unchecked=True)
def far_elements(x, idx, m: nt.Mutable, got: nt.Partition["B"], B: nt.Constant):
    i = nt.load_like(idx, got)
    nt.store(got, nt.gather(x, i, padding=-1.0))
    nt.scatter(m, i, nt.load_like(x, got))
    nt.atomic_add(m, i, 1.0)


def test_element_coordinates_near_2_63_touch_nothing(tile_backend):
    """Element coordinates are compared with the extents before they are multiplied by the
    strides (2**62 * 4 bytes wraps to 0): gathers read padding, scatters and atomics write
    nothing, on both paths."""
    rng = np.random.default_rng()
    B = 256
    base = np.array([2**62, 2**63 - 1, -2**62, 2**62 + 1, 2**61 * 3, -1], np.int64)
    ih = np.resize(base, B)
    xh = rng.standard_normal(B).astype(np.float32)
    m0 = rng.standard_normal(B).astype(np.float32)
    m = tile_backend.asarray(m0)
    got = tile_backend.asarray(np.zeros(B, np.float32))
    tile_backend.run(far_elements, tile_backend.asarray(xh), tile_backend.asarray(ih), m,
                     nt.partition(got, B), B, unchecked=True)
    np.testing.assert_array_equal(tile_backend.to_numpy(got), np.full(B, -1.0, np.float32))
    np.testing.assert_array_equal(tile_backend.to_numpy(m), m0)
