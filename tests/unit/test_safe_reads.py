"""Safe gather from read-only tensors and ``x[i]`` scalar reads: partitions are never read
element-wise or gathered, a partition overlapping the read-only tensor is refused at launch, bad
indices, ``x[i, j]`` on views (NumPy's values, guarded PTX), and element reads of Mutable
parameters in unchecked kernels. CPU only: typing, the interpreter, and PTX text."""

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (AliasingError, DataRaceError, TileError, TileTypingError,
                               UncheckedOpError)

P = nt.Partition["B"]
B = 128


def _z():
    return np.full(B, np.nan, np.float32)


# --- partitions must not be read element-wise or gathered, through any route -------------------

def _read_elem(a):
    return a[0]


def _gather_all(a, n):
    return nt.gather(a, nt.arange(n))


@nt.jit
def elem_alias(x, z: P, B: nt.Constant):
    y = z
    nt.store(z, nt.full((B,), 0.0, nt.float32) + y[0])


@nt.jit
def elem_helper(x, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + _read_elem(z))


@nt.jit
def elem_tuple(x, z: P, B: nt.Constant):
    t = (x, z)
    nt.store(z, nt.full((B,), 0.0, nt.float32) + t[1][0])


@nt.jit
def gather_tuple(x, z: P, B: nt.Constant):
    t = (x, z)
    nt.store(z, nt.gather(t[1], nt.arange(B)) + 1.0)


@nt.jit
def gather_helper(x, z: P, B: nt.Constant):
    nt.store(z, _gather_all(z, B))


@nt.jit
def gather_helper_ro(x, z: P, B: nt.Constant):
    nt.store(z, _gather_all(x, B) + x[-1])


@pytest.mark.parametrize("k", [elem_alias, elem_helper, elem_tuple])
def test_partition_element_refused_any_route(k):
    x = np.arange(B, dtype=np.float32)
    with pytest.raises(TileTypingError, match="read-only tensor.*partition 'z'"):
        k(x, nt.partition(_z(), B), B, interpret=True)
    with pytest.raises(TileTypingError):
        k.ptx(x, nt.partition(_z(), B), B)


@pytest.mark.parametrize("k", [gather_tuple, gather_helper])
def test_partition_gather_refused_any_route(k):
    x = np.arange(B, dtype=np.float32)
    with pytest.raises(UncheckedOpError, match="'z' is a partition"):
        k(x, nt.partition(_z(), B), B, interpret=True)
    with pytest.raises(UncheckedOpError):
        k.ptx(x, nt.partition(_z(), B), B)


def test_read_only_gather_and_element_through_a_helper():
    x = np.arange(B, dtype=np.float32)
    z = _z()
    gather_helper_ro(x, nt.partition(z, B), B, interpret=True)
    np.testing.assert_array_equal(z, x + x[-1])


def test_helper_error_points_at_the_users_helper_line():
    x = np.arange(B, dtype=np.float32)
    with pytest.raises(TileTypingError) as e:
        elem_helper(x, nt.partition(_z(), B), B, interpret=True)
    assert e.value.lineno is not None and "return a[0]" in str(e.value)


# --- the launch refuses a partition that overlaps the read-only tensor --------------------------

@nt.jit
def read_both(x, z: P, B: nt.Constant):
    nt.store(z, nt.gather(x, nt.arange(B)) + x[0])


@pytest.mark.parametrize("views", ["same", "shifted"])
def test_overlap_between_tensor_and_partition_refused(views):
    a = np.arange(2 * B, dtype=np.float32)
    x, zz = (a, a[:B]) if views == "same" else (a[B - 1:], a[:B])
    with pytest.raises(AliasingError, match="'z' overlaps read-only argument 'x'"):
        read_both(x, nt.partition(zz, B), B, interpret=True)


def test_interleaved_disjoint_views_accepted():
    a = np.arange(2 * B, dtype=np.float32)
    read_both(a[::2], nt.partition(a[1::2], B), B, interpret=True)


# --- bad indices ---------------------------------------------------------------------------------

@nt.jit
def by_param(x, i, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[i])


@nt.jit
def by_slice(x, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[1:3])


@nt.jit
def by_none(x, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[None])


@nt.jit
def by_ellipsis(x, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[...])


@nt.jit
def by_empty_tuple(x, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[()])


@nt.jit
def by_tile(x, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[nt.arange(B)])


@nt.jit
def by_tile_index(x, z: P, B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.full((B,), 0.0, nt.float32) + x[idx], idx)


@nt.jit
def chained(x, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[1][2])


@pytest.mark.parametrize("k,args", [
    (by_param, (True,)), (by_param, (1.5,)), (by_slice, ()), (by_none, ()), (by_ellipsis, ()),
    (by_empty_tuple, ()), (by_tile, ()), (by_tile_index, ())],
    ids=["bool", "float", "slice", "none", "ellipsis", "empty-tuple", "tile", "tile-index"])
def test_bad_indices_refused(k, args):
    x = np.arange(B, dtype=np.float32)
    with pytest.raises(TileTypingError, match="integer coordinate"):
        k(x, *args, nt.partition(_z(), B), B, interpret=True)


def test_chained_index_on_2d_refused():
    with pytest.raises(TileTypingError, match="2 integer coordinate"):
        chained(np.zeros((3, 4), np.float32), nt.partition(_z(), B), B, interpret=True)


def test_huge_and_unsigned_scalar_args_refused_at_launch():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(TileError, match="64 bits"):
        by_param(x, np.uint64(2**64 - 1), nt.partition(_z(), B), B, interpret=True)


# --- x[i, j] on views matches NumPy (interpreter) and the PTX is guarded --------------------------

@nt.jit
def pick2(x, i, j, z: P, B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[i, j])


_BASE = np.arange(1, 7 * 9 + 1, dtype=np.float32).reshape(7, 9)     # no zero element
_VIEWS = {"c": _BASE, "neg": _BASE[::-1, ::-2], "strided": _BASE[1::3, ::4], "T": _BASE.T,
          "empty": _BASE[:0, :]}
_COORDS = [(0, 0), (-1, -1), (2, -3), (-7, 0), (7, 0), (0, 9), (-8, 0), (0, -10),
           (2**31 - 1, 0), (-(2**31), 0), (2**40, 1), (2**63 - 1, 0), (-(2**63), -1)]


@pytest.mark.parametrize("view", list(_VIEWS))
def test_element_reads_on_views_match_numpy(view):
    v = _VIEWS[view]
    for i, j in _COORDS:
        z = _z()
        pick2(v, i, j, nt.partition(z, B), B, interpret=True)
        inside = -v.shape[0] <= i < v.shape[0] and -v.shape[1] <= j < v.shape[1]
        want = v[i, j] if inside else 0.0
        np.testing.assert_array_equal(z, np.full(B, want, np.float32), err_msg=f"{view} {i},{j}")


@pytest.mark.parametrize("i", [1, 2**40], ids=["int32", "int64"])
def test_ptx_bounds_checks_each_axis_before_the_load(i):
    ptx = pick2.ptx(_BASE[::-1, ::-2], i, 2, nt.partition(_z(), B), B)
    assert len(re.findall(r"setp\.lt\.u64", ptx)) >= 2
    body = ptx[ptx.index("setp.lt.u64"):]
    assert re.search(r"@%p\d+ bra", body.split("ld.global")[0])     # the load is branched over


# --- Mutable parameters of unchecked kernels -----------------------------------------------------

@nt.jit(unchecked=True)
def scatter_then_elem(idx, vals, out: nt.Mutable, got: nt.Partition["B"], B: nt.Constant):
    if nt.bid(0) == 0:
        nt.scatter(out, nt.load_like(idx, got), nt.load_like(vals, got))
        nt.store(got, nt.load_like(vals, got))
    else:
        nt.store(got, nt.full((B,), 0.0, nt.float32) + out[0])


def test_element_reads_of_a_mutable_are_refused():
    """x[i] on a Mutable is refused (the message says to read it with gather(), which the race
    detector checks: gather of the same element raises DataRaceError)."""
    b = 16
    idx = np.zeros(4 * b, np.int32)
    idx[:b] = np.arange(b)
    vals = np.ones(4 * b, np.float32)
    with pytest.raises(TileTypingError, match="'out' is Mutable.*gather"):
        scatter_then_elem(idx, vals, np.zeros(64, np.float32),
                          nt.partition(np.zeros(4 * b, np.float32), b), b, interpret=True,
                          unchecked=True)


@nt.jit(unchecked=True)
def branch_on_mutable(x, m: nt.Mutable, got: nt.Partition[("R", "C")], R: nt.Constant,
                      C: nt.Constant):
    nt.scatter(m, nt.arange(R), nt.full((R,), 1.0, nt.float32))
    if m[3] > 0.0:                         # thread-dependent: no barrier orders the scatter
        nt.store(got, nt.transpose(nt.load(x, (0, 0), (C, R))))    # bar.sync inside
    else:
        nt.store(got, nt.zeros((R, C), nt.float32))


def test_element_of_a_mutable_is_not_claimed_uniform():
    """x[i] on a Mutable is not typed as a block-uniform scalar: the block's own scatter (or
    another block's) makes threads read different values, and a branch on it around a bar.sync
    (here transpose's layout conversion) would diverge (a hang / UB on the GPU). Refused."""
    with pytest.raises(TileTypingError):
        branch_on_mutable.ptx(np.zeros((64, 64), np.float32), np.zeros(64, np.float32),
                              nt.partition(np.zeros((64, 64), np.float32), (32, 32)), 32, 32)
