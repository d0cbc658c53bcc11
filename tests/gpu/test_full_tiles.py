"""Tiles wholly inside an array (unmasked fast path) against edge tiles (masked path), and
zero-stride (broadcast) views, on both backends, against NumPy (float64 references built by
index arithmetic, independently of the kernels).

Covers: every inside/edge/outside combination of 1-D to 4-D tiles (ragged extents, extents
smaller than the tile, empty arrays), contiguous (16-byte vector) and strided views, bool, int8,
float16, bfloat16, float32 and float64; reads of padding; masked tiles (no padding) stored back,
into outputs larger than the input; tiles smaller than the block (replicating threads);
hand-built tile indices (runtime ints near 2**61 .. 2**63 whose product with the tile wraps,
negatives) for loads and for an unchecked kernel's Mutable stores; persistent kernels
(``blocks=3``), ``strips``; zero strides on any axis (the last one too) with extents the tile
divides or not, smaller than the tile, or 0; one kernel called in sequence with broadcast views
of changing divisors and with real arrays of the same shape (the specialization key); and,
compile-only (no GPU needed), that a broadcast view's PTX has fewer global loads.
"""

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP

SENTINEL = -7
DTYPES = [np.bool_, np.int8, np.float16, BFLOAT16_NP, np.float32, np.float64]


def _pad(dt):
    return True if np.dtype(dt) == np.bool_ else -3


def _sample(rng, shape, dt):
    """Random values of ``dt``, none equal to the padding or the sentinel."""
    if np.dtype(dt) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dt) == np.int8:
        return rng.integers(0, 120, shape).astype(np.int8)
    return (rng.uniform(0.5, 50, shape) * rng.choice([-1, 1], shape)).astype(dt)


class _CaiView:
    """A view of a device array through the CUDA Array Interface (any shape and strides)."""

    def __init__(self, base, shape, strides):
        cai = base.__cuda_array_interface__
        self.base = base
        self.__cuda_array_interface__ = {"version": 3, "shape": tuple(shape),
                                         "strides": tuple(strides), "typestr": cai["typestr"],
                                         "data": (cai["data"][0], True), "stream": None}


def as_view(backend, dev, shape, strides):
    """The view (``shape``, byte ``strides``) of the C-contiguous backend array ``dev``."""
    if backend.interpret:
        return np.lib.stride_tricks.as_strided(dev, shape, strides, writeable=False)
    if type(dev).__module__.startswith("torch"):
        return dev.as_strided(shape, [s // dev.element_size() for s in strides])
    if type(dev).__module__.startswith("cupy"):
        import cupy
        return cupy.lib.stride_tricks.as_strided(dev, shape, strides)
    return _CaiView(dev, shape, strides)


def make_view(backend, rng, dt, base_shape, shape, step=1):
    """A broadcast view of ``shape`` over a random ``base_shape`` array (its axes of extent 1
    get stride 0), every ``step``-th element along the last axis (step > 1: no 16-byte
    accesses). Returns (device view, host view)."""
    big = list(base_shape)
    big[-1] = max(1, big[-1] * step)
    host = _sample(rng, tuple(big), dt)
    isz = host.itemsize
    strides = [0 if b == 1 and n != 1 else s for b, n, s in zip(base_shape, shape, host.strides)]
    if base_shape[-1] != 1:
        strides[-1] *= step
    strides = tuple(strides)
    hview = np.lib.stride_tricks.as_strided(host, shape, strides, writeable=False)
    assert all(s % isz == 0 for s in strides)
    return as_view(backend, backend.asarray(host), shape, strides), hview


def padded(view, out_shape, pad):
    """float64 ``out_shape`` array: ``view`` where it lies, ``pad`` elsewhere."""
    out = np.full(out_shape, pad, np.float64)
    out[tuple(slice(0, min(n, m)) for n, m in zip(view.shape, out_shape))] = \
        view[tuple(slice(0, min(n, m)) for n, m in zip(view.shape, out_shape))].astype(np.float64)
    return out


def got(backend, z):
    return backend.to_numpy(z).astype(np.float64)


@nt.jit
def copy_like(x, z: nt.Partition, P: nt.Constant):
    nt.store(z, nt.load_like(x, z, padding=P))


@nt.jit
def copy_masked(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z))                   # masked: invalid elements not written


@nt.jit
def copy_persistent(x, z: nt.Partition, P: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, padding=P, index=idx), idx)


@nt.jit
def copy_strips(x, z: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
    for row in nt.strips(z):
        for idx in nt.tiles(z, row):
            nt.store(z, nt.load(x, idx, (BM, BN), padding=-3.0) * 2.0, idx)


def _fill(dt, masked):
    """The output's initial value: for bool, the opposite of what a wrong write would give
    (padding True; an invalid element, read as False)."""
    return masked if np.dtype(dt) == np.bool_ else SENTINEL


def run_copy(backend, x, out_shape, tile, dt, masked=False, blocks=None):
    zh = np.full(out_shape, _fill(dt, masked), dt)
    z = backend.asarray(zh)
    part = nt.partition(z, tile, blocks=blocks)
    if blocks is not None:
        backend.run(copy_persistent, x, part, _pad(dt))
    elif masked:
        backend.run(copy_masked, x, part)
    else:
        backend.run(copy_like, x, part, _pad(dt))
    return got(backend, z)


def grown(shape, tile):
    """An output shape with inside, edge and wholly outside tiles of ``x`` (of ``shape``)."""
    return tuple(max(n + t // 2 + 1, t) for n, t in zip(shape, tile))


# ------------------------------------------------------------------ real arrays, every dtype

REAL = [((1000,), (256,)), ((37, 300), (8, 64)), ((64, 256), (16, 64)), ((3, 5), (8, 32)),
        ((7, 1500), (4, 1024)), ((5, 19, 70), (2, 8, 32)), ((3, 4, 6, 40), (2, 2, 4, 16)),
        ((1000,), (64,)), ((33, 20), (4, 16)), ((0, 64), (8, 64))]


@pytest.mark.parametrize("step", [1, 2], ids=["contiguous", "strided"])
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, tile", REAL, ids=lambda v: "x".join(map(str, v)))
def test_copy_inside_edge_and_outside_tiles(tile_backend, shape, tile, dt, step):
    """The output is larger than ``x``: tiles of x inside, at its edges and past it (padding);
    the output's own tiles inside and at its edges. ``(1000,)`` in tiles of 64 and (33, 20) in
    (4, 16) replicate threads (a tile smaller than the block's chunks)."""
    rng = np.random.default_rng()
    x, xh = make_view(tile_backend, rng, dt, shape, shape, step)
    out = grown(shape, tile)
    np.testing.assert_array_equal(run_copy(tile_backend, x, out, tile, dt),
                                  padded(xh, out, _pad(dt)))


def test_reversed_views(tile_backend):
    """Negative strides (no 16-byte accesses): inside and edge tiles of a reversed view."""
    rng = np.random.default_rng()
    host = _sample(rng, (37, 600), np.float32)
    x = tile_backend.asarray(host)[::-1, ::-2]
    out = (45, 333)
    np.testing.assert_array_equal(run_copy(tile_backend, x, out, (8, 64), np.float32),
                                  padded(host[::-1, ::-2], out, -3))


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int8, np.bool_],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, tile", REAL[:7], ids=lambda v: "x".join(map(str, v)))
def test_masked_tiles_stored_back(tile_backend, shape, tile, dt):
    """No padding: only x's elements are written (the rest keeps the sentinel), into an output
    of x's shape (extents equal the tile inside) and into a larger one (a tile wholly inside the
    output but at x's edge has smaller extents: the masked store)."""
    rng = np.random.default_rng()
    x, xh = make_view(tile_backend, rng, dt, shape, shape)
    for out in (shape, grown(shape, tile)):
        np.testing.assert_array_equal(run_copy(tile_backend, x, out, tile, dt, masked=True),
                                      padded(xh, out, _fill(dt, True)))


# ------------------------------------------------------------------ zero strides (broadcasts)

BCAST = [  # (base shape: 1 = broadcast axis, view shape, tile)
    ((1, 256), (64, 256), (16, 64)),             # tile divides the zero axis
    ((1, 300), (37, 300), (16, 64)),             # it does not
    ((1, 100), (5, 100), (16, 32)),              # zero axis shorter than the tile
    ((1, 1500), (7, 1500), (4, 1024)),           # chunks apart along both axes
    ((1, 256), (48, 256), (64, 64)),             # divisor 16 < tile 64
    ((50, 1), (50, 100), (8, 64)),               # last axis, ragged
    ((48, 1), (48, 128), (16, 32)),              # last axis, divisible
    ((1, 1), (33, 70), (16, 32)),                # every axis
    ((1,), (1000,), (256,)),                     # 1-D
    ((3, 1, 100), (3, 10, 100), (2, 4, 64)),     # middle axis, ragged
    ((3, 1, 128), (3, 16, 128), (2, 8, 64)),     # middle axis, divisible
    ((2, 1, 1, 40), (2, 5, 3, 40), (1, 4, 2, 32)),   # two zero axes, ragged
    ((2, 1, 1, 64), (2, 8, 4, 64), (1, 4, 2, 32)),   # two zero axes, divisible
    ((1, 64), (0, 64), (16, 64)),                # empty zero axis
    ((1, 1), (20, 0), (16, 32)),                 # empty last axis, zero first
    ((1, 256), (1 << 17, 256), (64, 64)),        # divisor beyond the cap (2**16)
]


@pytest.mark.parametrize("step", [1, 2], ids=["contiguous", "strided"])
@pytest.mark.parametrize("base, shape, tile", BCAST, ids=lambda v: "x".join(map(str, v)))
def test_broadcast_views(tile_backend, base, shape, tile, step):
    rng = np.random.default_rng()
    x, xh = make_view(tile_backend, rng, np.float32, base, shape, step)
    out = grown(shape, tile) if shape[0] < 4096 else (4096 + 37,) + shape[1:]
    np.testing.assert_array_equal(run_copy(tile_backend, x, out, tile, np.float32),
                                  padded(xh, out, -3))
    np.testing.assert_array_equal(run_copy(tile_backend, x, out, tile, np.float32, masked=True),
                                  padded(xh, out, SENTINEL))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("base, shape, tile", [BCAST[i] for i in (0, 1, 5, 9, 11)],
                         ids=lambda v: "x".join(map(str, v)))
def test_broadcast_views_every_dtype(tile_backend, base, shape, tile, dt):
    rng = np.random.default_rng()
    x, xh = make_view(tile_backend, rng, dt, base, shape)
    out = grown(shape, tile)
    np.testing.assert_array_equal(run_copy(tile_backend, x, out, tile, dt),
                                  padded(xh, out, _pad(dt)))
    np.testing.assert_array_equal(run_copy(tile_backend, x, out, tile, dt, blocks=3),
                                  padded(xh, out, _pad(dt)))


@pytest.mark.parametrize("base, shape, tile", [BCAST[i] for i in (1, 3, 7, 11)],
                         ids=lambda v: "x".join(map(str, v)))
def test_broadcast_views_in_persistent_kernels(tile_backend, base, shape, tile):
    rng = np.random.default_rng()
    x, xh = make_view(tile_backend, rng, np.float64, base, shape)
    out = grown(shape, tile)
    np.testing.assert_array_equal(run_copy(tile_backend, x, out, tile, np.float64, blocks=3),
                                  padded(xh, out, -3))


@pytest.mark.parametrize("base, shape", [((1, 300), (37, 300)), ((37, 1), (37, 300)),
                                         ((37, 300), (37, 300))])
def test_strips(tile_backend, base, shape):
    rng = np.random.default_rng()
    x, xh = make_view(tile_backend, rng, np.float32, base, shape)
    out = (45, 333)
    z = tile_backend.asarray(np.full(out, SENTINEL, np.float32))
    tile_backend.run(copy_strips, x, nt.partition(z, (8, 64), blocks=2), 8, 64)
    np.testing.assert_array_equal(got(tile_backend, z), padded(xh, out, -3) * 2.0)


def test_one_kernel_over_views_and_arrays_in_sequence(tile_backend):
    """One kernel object: broadcast views whose zero axis the tile divides or not (divisors
    64, 16, 8, 2**16 capped), a real array of the same shape in between, the same key again
    with new data, then the zero axis moved; every result against NumPy."""
    @nt.jit
    def seq_copy(x, z: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant):
        nt.store(z, nt.load(x, (nt.bid(0), nt.bid(1)), (BM, BN), padding=-3.0) + 1.0)

    rng = np.random.default_rng()
    plan = [((1, 256), (64, 256)), ((64, 256), (64, 256)), ((1, 256), (48, 256)),
            ((1, 256), (40, 256)), ((1, 256), (64, 256)), ((64, 256), (64, 256)),
            ((64, 1), (64, 256)), ((1, 256), (40, 256)), ((40, 256), (40, 256)),
            ((1, 256), (1 << 16, 256)), ((1, 256), (3 << 16, 256))]
    for base, shape in plan:
        x, xh = make_view(tile_backend, rng, np.float32, base, shape)
        out = (min(shape[0], 4096) + 9, 270)
        z = tile_backend.asarray(np.full(out, SENTINEL, np.float32))
        tile_backend.run(seq_copy, x, nt.partition(z, (16, 64)), 16, 64)
        np.testing.assert_array_equal(got(tile_backend, z), (padded(xh, out, -3) + 1.0).astype(np.float32),
                                      err_msg=f"{base} -> {shape}")


# ------------------------------------------------------------------ hand-built tile indices

@nt.jit
def at_index(x, z: nt.Partition["BM", "BN"], i, j, BM: nt.Constant, BN: nt.Constant,
             MASKED: nt.Constant):
    if MASKED:
        nt.store(z, nt.load(x, (i, j), (BM, BN)))
    else:
        nt.store(z, nt.load(x, (i, j), (BM, BN), padding=-3.0))


@nt.jit
def at_index_1d(x, z: nt.Partition["B"], i, B: nt.Constant):
    nt.store(z, nt.load(x, i, (B,), padding=-3.0))


@nt.jit
def at_literal_index(x, z: nt.Partition[(8, 64)], w: nt.Partition[(8, 64)]):
    nt.store(z, nt.load(x, (-1, 1), (8, 64), padding=-3.0) + nt.load(x, (1, 1), (8, 64)))
    nt.store(w, nt.load(x, (2**58, 0), (8, 64)))       # 2**61 + row: no grid check, no wrap


def tile_at(xh, index, tile, fill):
    """float64 tile at tile ``index`` of ``xh`` (Python ints: no wrapping), ``fill`` outside."""
    out = np.full(tile, fill, np.float64)
    for pos in np.ndindex(*tile):
        src = [i * t + p for i, t, p in zip(index, tile, pos)]
        if all(0 <= s < n for s, n in zip(src, xh.shape)):
            out[pos] = xh[tuple(src)]
    return out


# (2**61 + 1) * 8 wraps to 8 (row 8: inside x); 2**58 * 64 wraps to 0; -2**61 * 8 to 0
INDICES = [(0, 0), (1, 2), (4, 4), (4, 0), (0, 4), (5, 0), (0, 5), (-1, 0), (0, -1),
           (2**61, 0), (2**61 + 1, 2), (0, 2**58), (-2**61, 1), (2**62, 2**62), (2**63 - 1, 1),
           (1, 2**63 - 1), (-2**63, 0), (-1, -1), (2**62 - 1, 0)]


@pytest.mark.parametrize("base", [(37, 300), (1, 300), (37, 1)], ids=["real", "rows0", "cols0"])
def test_hand_built_indices(tile_backend, base):
    rng = np.random.default_rng()
    x, xh = make_view(tile_backend, rng, np.float32, base, (37, 300))
    for masked in (False, True):
        for i, j in INDICES:
            z = tile_backend.asarray(np.full((8, 64), SENTINEL, np.float32))
            tile_backend.run(at_index, x, nt.partition(z, (8, 64)), i, j, 8, 64, masked)
            want = tile_at(xh, (i, j), (8, 64), SENTINEL if masked else -3)
            np.testing.assert_array_equal(got(tile_backend, z), want,
                                          err_msg=f"index {(i, j)}, masked {masked}")


def test_hand_built_indices_1d_and_literals(tile_backend):
    rng = np.random.default_rng()
    for base in ((1000,), (1,)):
        x, xh = make_view(tile_backend, rng, np.float32, base, (1000,))
        for i in (0, 3, 15, 16, -1, 2**58, 2**58 + 1, -2**58, 2**63 - 1, -2**63):
            z = tile_backend.asarray(np.full(64, SENTINEL, np.float32))
            tile_backend.run(at_index_1d, x, nt.partition(z, 64), i, 64)
            np.testing.assert_array_equal(got(tile_backend, z), tile_at(xh, (i,), (64,), -3),
                                          err_msg=f"index {i}")
    x, xh = make_view(tile_backend, rng, np.float32, (20, 100), (20, 100))
    z, w = (tile_backend.asarray(np.full((8, 64), SENTINEL, np.float32)) for _ in range(2))
    tile_backend.run(at_literal_index, x, nt.partition(z, (8, 64)), nt.partition(w, (8, 64)))
    # padding (-3) plus the masked tile (1, 1) of x: valid where that tile is (rows 8..15,
    # columns 64..99), and only there written
    want = np.full((8, 64), float(SENTINEL))
    want[:, :36] = (tile_at(xh, (1, 1), (8, 64), np.nan)[:, :36] - 3).astype(np.float32)
    np.testing.assert_array_equal(got(tile_backend, z), want)
    np.testing.assert_array_equal(got(tile_backend, w), np.full((8, 64), SENTINEL))


@nt.jit(unchecked=True)
def put_at(x, m: nt.Mutable, i, j, MASKED: nt.Constant):
    if MASKED:
        nt.store(m, nt.load(x, (0, 0), (8, 64)), (i, j))     # extents of x, below the tile
    else:
        nt.store(m, nt.load(x, (0, 0), (8, 64), padding=-3.0), (i, j))


@pytest.mark.parametrize("masked", [False, True])
def test_unchecked_stores_at_hand_built_indices(tile_backend, masked):
    rng = np.random.default_rng()
    xh = _sample(rng, (5, 40) if masked else (8, 64), np.float32)
    tile = np.full((8, 64), np.nan)
    tile[:xh.shape[0], :xh.shape[1]] = xh
    for i, j in INDICES:
        m = tile_backend.asarray(np.full((37, 300), SENTINEL, np.float32))
        tile_backend.run(put_at, tile_backend.asarray(xh), m, i, j, masked, grid=1,
                         unchecked=True)
        want = np.full((37, 300), SENTINEL, np.float64)
        if 0 <= i < 5 and 0 <= j < 5:
            r, c = want[i * 8:(i + 1) * 8, j * 64:(j + 1) * 64].shape
            view = want[i * 8:i * 8 + r, j * 64:j * 64 + c]
            view[...] = np.where(np.isnan(tile[:r, :c]), view, tile[:r, :c])
        np.testing.assert_array_equal(got(tile_backend, m), want, err_msg=f"index {(i, j)}")


# ------------------------------------------------------------------ compile only (no GPU)

def _loads(ptx):
    return len(re.findall(r"\bld\.global\.", ptx))


@pytest.mark.parametrize("step", [1, 2], ids=["contiguous", "strided"])
def test_broadcast_rows_need_fewer_global_loads(step):
    """Compile only: the chunks of a tile that differ only along a zero-stride axis share one
    read, so the broadcast view's kernel has fewer global loads than the real array's."""
    z = nt.partition(np.zeros((64, 256), np.float32), (16, 64))
    big = np.zeros((64, 256 * step), np.float32)[:, ::step]
    bcast = np.lib.stride_tricks.as_strided(big, (64, 256), (0, big.strides[1]))
    real, view = copy_like.ptx(big, z, -3), copy_like.ptx(bcast, z, -3)
    assert 0 < _loads(view) < _loads(real), (_loads(view), _loads(real))


def test_views_and_arrays_of_one_shape_compile_apart():
    """Compile only: a real array, a broadcast view of the same shape, and broadcast views
    whose extent the tile divides or not are different specializations."""
    z = nt.partition(np.zeros((48, 256), np.float32), (16, 64))
    real = np.zeros((48, 256), np.float32)
    rows = np.broadcast_to(np.zeros((1, 256), np.float32), (48, 256))
    ragged = np.broadcast_to(np.zeros((1, 256), np.float32), (40, 256))
    # the kernel's name spells its types: compare the bodies under one name
    ptx = [re.sub(r"_ZN\w+", "K", copy_like.ptx(a, z, -3)) for a in (real, rows, ragged)]
    assert len(set(ptx)) == 3
    assert _loads(ptx[1]) < _loads(ptx[0])
