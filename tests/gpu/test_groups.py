"""Tuples of arrays as kernel arguments (numba_tile/groups.py): values on both backends
against NumPy, each member checked like a single array (overlap across members and groups,
read-only members, partitions' grids), and the rewrite's refusals at the user's line."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import AliasingError, TileArgumentError


@nt.jit
def gadd(xs, ys, zs: nt.Partition["B"], s, B: nt.Constant):
    for g in nt.static_range(len(zs)):
        for idx in nt.tiles(zs[g]):
            x = nt.load_like(xs[g], zs[g], index=idx, padding=0)
            nt.store(zs[g], x * s + nt.load_like(ys[g], zs[g], index=idx, padding=0) + g, idx)


@nt.jit
def first_and_last(xs, z: nt.Partition["B"], B: nt.Constant):
    # literal indices, negative included, and len() as a value
    nt.store(z, nt.load_like(xs[0], z, padding=0) - nt.load_like(xs[-1], z, padding=0)
             + len(xs))


def _arrays(rng, ns, dt=np.float32):
    return tuple(rng.standard_normal(n).astype(dt) for n in ns)


@pytest.mark.parametrize("ns", [(1000,), (1000, 37, 4097), (256, 256, 5, 700, 1)])
def test_groups_of_ragged_members(tile_backend, ns):
    rng = np.random.default_rng()
    xs, ys = _arrays(rng, ns), _arrays(rng, ns)
    zs = tuple(tile_backend.asarray(np.full(n, np.nan, np.float32)) for n in ns)
    tile_backend.run(gadd, tuple(map(tile_backend.asarray, xs)),
                     tuple(map(tile_backend.asarray, ys)),
                     tuple(nt.partition(z, 256, blocks=5) for z in zs), 1.5, 256)
    for g, (x, y, z) in enumerate(zip(xs, ys, zs)):
        np.testing.assert_allclose(tile_backend.to_numpy(z), x * 1.5 + y + g, rtol=1e-6,
                                   atol=1e-6)


def test_literal_and_negative_indices_and_len(tile_backend):
    rng = np.random.default_rng()
    xs = _arrays(rng, (300, 300, 300))
    z = tile_backend.asarray(np.zeros(300, np.float32))
    tile_backend.run(first_and_last, tuple(map(tile_backend.asarray, xs)),
                     nt.partition(z, 128), 128)
    np.testing.assert_allclose(tile_backend.to_numpy(z), xs[0] - xs[2] + 3, rtol=1e-6)


def test_the_rewritten_kernel_is_made_once_per_lengths():
    rng = np.random.default_rng()
    made = []
    for _ in range(2):
        for n in (2, 6):
            xs = _arrays(rng, [100] * n)
            zs = tuple(nt.partition(np.zeros(100, np.float32), 64, blocks=2) for _ in range(n))
            gadd(xs, xs, zs, 1.0, 64, interpret=True)
            made.append(gadd._groups[(("xs", n), ("ys", n), ("zs", n))])
    assert made[0] is made[2] and made[1] is made[3] and made[0] is not made[1]


def test_a_member_overlapping_another_groups_member_is_refused():
    rng = np.random.default_rng()
    buf = np.zeros(3000, np.float32)
    xs = (buf[:1000], rng.standard_normal(37).astype(np.float32))
    ys = _arrays(rng, (1000, 37))
    zs = (nt.partition(buf[500:1500], 256, blocks=4),
          nt.partition(np.zeros(37, np.float32), 256, blocks=4))
    with pytest.raises(AliasingError, match=r"zs__0.*xs__0"):
        gadd(xs, ys, zs, 1.0, 256, interpret=True)
    # two members of one group of partitions
    zs = (nt.partition(buf[:1000], 256, blocks=4), nt.partition(buf[999:2000], 256, blocks=4))
    with pytest.raises(AliasingError, match=r"zs__1.*zs__0|zs__0.*zs__1"):
        gadd(_arrays(rng, (1000, 1001)), _arrays(rng, (1000, 1001)), zs, 1.0, 256,
             interpret=True)


def test_a_plain_array_for_a_group_of_partitions_is_refused():
    rng = np.random.default_rng()
    xs = _arrays(rng, (100, 100))
    with pytest.raises(Exception, match="zs__1"):
        gadd(xs, xs, (nt.partition(np.zeros(100, np.float32), 64, blocks=2),
                      np.zeros(100, np.float32)), 1.0, 64, interpret=True)


@nt.jit
def dynamic_index(xs, z: nt.Partition["B"], i, B: nt.Constant):
    nt.store(z, nt.load_like(xs[i], z, padding=0))


@nt.jit
def whole(xs, z: nt.Partition["B"], B: nt.Constant):
    for x in xs:
        nt.store(z, nt.load_like(x, z, padding=0))


@nt.jit
def runtime_bound(xs, z: nt.Partition["B"], n, B: nt.Constant):
    for g in nt.static_range(n):
        nt.store(z, nt.load_like(xs[g], z, padding=0))


@nt.jit
def breaks(xs, z: nt.Partition["B"], B: nt.Constant):
    for g in nt.static_range(len(xs)):
        nt.store(z, nt.load_like(xs[g], z, padding=0))
        break


@nt.jit
def out_of_range(xs, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(xs[2], z, padding=0))


@pytest.mark.parametrize("kernel, extra, what", [
    (dynamic_index, (1,), "known only at run time"),
    (whole, (), "used whole"),
    (runtime_bound, (2,), "integer literals"),
    (breaks, (), "break and continue"),
    (out_of_range, (), "out of range"),
])
def test_refusals_point_at_the_kernels_line(kernel, extra, what):
    xs = (np.zeros(64, np.float32), np.zeros(64, np.float32))
    z = nt.partition(np.zeros(64, np.float32), 64)
    with pytest.raises(TileArgumentError, match=what) as info:
        kernel(xs, z, *extra, 64, interpret=True) if not extra else \
            kernel(xs, z, extra[0], 64, interpret=True)
    assert info.value.filename == __file__ and info.value.lineno is not None


def test_a_closure_kernel_is_refused_with_a_group():
    scale = 2.0

    @nt.jit
    def k(xs, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(xs[0], z, padding=0) * scale)

    with pytest.raises(TileArgumentError, match="enclosing function"):
        k((np.zeros(64, np.float32),), nt.partition(np.zeros(64, np.float32), 64), 64,
          interpret=True)


def test_nested_tuples_are_refused():
    with pytest.raises(TileArgumentError, match="one level"):
        gadd(((np.zeros(8, np.float32),),), (np.zeros(8, np.float32),),
             (nt.partition(np.zeros(8, np.float32), 8),), 1.0, 8, interpret=True)


def test_ptx_of_a_grouped_kernel():
    xs = tuple(np.zeros(n, np.float32) for n in (300, 40))
    zs = tuple(nt.partition(np.zeros(n, np.float32), 128, blocks=4) for n in (300, 40))
    p = gadd.ptx(xs, xs, zs, 1.0, 128, cc=(9, 0))
    assert ".local" not in p and p.count("st.global") >= 2
