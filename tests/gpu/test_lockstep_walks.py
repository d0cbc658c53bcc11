"""Two partitions' tiles of one strip walked in lockstep, ``zip(nt.tiles(dx, row),
nt.tiles(loss, row))`` (Liger's JSD: a loss row and its gradient row written chunk by chunk in
one pass); each index keeps its partition's brand, so a store with the other's is refused, and
zip of anything but tile walks stays refused. Both backends, against NumPy, ragged rows."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import ForeignTileStoreError, UnanalyzedCallError


@nt.jit
def jsd_like(p, q, dx: nt.Partition[(1, "B")], loss: nt.Partition[(1, "B")], B: nt.Constant):
    for row in nt.strips(dx):
        for idx, jdx in zip(nt.tiles(dx, row), nt.tiles(loss, row)):
            a = nt.load(p, idx, (1, B), padding=1.0)
            b = nt.load(q, idx, (1, B), padding=1.0)
            m = 0.5 * (a + b)
            nt.store(loss, 0.5 * (a * nt.log(a / m) + b * nt.log(b / m)), jdx)
            nt.store(dx, 0.5 * nt.log(a / m), idx)


@pytest.mark.parametrize("shape, tile, blocks", [((6, 40), 16, 4), ((3, 16), 16, 3),
                                                 ((9, 100), 32, 2)])
def test_two_outputs_per_chunk_of_a_strip(tile_backend, shape, tile, blocks):
    rng = np.random.default_rng()
    p = rng.uniform(0.1, 1.0, shape).astype(np.float32)
    q = rng.uniform(0.1, 1.0, shape).astype(np.float32)
    dx = tile_backend.asarray(np.full(shape, np.nan, np.float32))
    loss = tile_backend.asarray(np.full(shape, np.nan, np.float32))
    tile_backend.run(jsd_like, tile_backend.asarray(p), tile_backend.asarray(q),
                     nt.partition(dx, (1, tile), blocks=blocks),
                     nt.partition(loss, (1, tile), blocks=blocks), tile)
    a, b = p.astype(np.float64), q.astype(np.float64)
    m = 0.5 * (a + b)
    np.testing.assert_allclose(tile_backend.to_numpy(loss),
                               0.5 * (a * np.log(a / m) + b * np.log(b / m)), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(tile_backend.to_numpy(dx), 0.5 * np.log(a / m), rtol=1e-4,
                               atol=1e-6)


@nt.jit
def crossed(p, dx: nt.Partition[(1, "B")], loss: nt.Partition[(1, "B")], B: nt.Constant):
    for row in nt.strips(dx):
        for idx, jdx in zip(nt.tiles(dx, row), nt.tiles(loss, row)):
            nt.store(loss, nt.load(p, idx, (1, B), padding=0.0), idx)


@nt.jit
def with_a_range(p, dx: nt.Partition[(1, "B")], B: nt.Constant):
    for row in nt.strips(dx):
        for k, idx in zip(range(100), nt.tiles(dx, row)):
            nt.store(dx, nt.load(p, idx, (1, B), padding=0.0) * k, idx)


@pytest.mark.parametrize("path", ["interpreter", "ptx"])
def test_lockstep_indices_keep_their_brands(path):
    p = np.zeros((4, 32), np.float32)
    parts = (nt.partition(np.zeros((4, 32), np.float32), (1, 16), blocks=2),
             nt.partition(np.zeros((4, 32), np.float32), (1, 16), blocks=2))
    cases = ((crossed, (p, *parts, 16), ForeignTileStoreError, "with an index of partition 'dx'"),
             (with_a_range, (p, parts[0], 16), UnanalyzedCallError, "passed to zip()"))
    for kernel, args, cls, fragment in cases:
        with pytest.raises(cls) as info:
            if path == "interpreter":
                kernel(*args, interpret=True)
            else:
                kernel.ptx(*args)
        assert fragment in str(info.value), str(info.value)
