"""examples/rope.py on both backends against its float64 reference: head counts that fill a
power-of-two head block, leave part of it masked, and need several blocks per position."""

import numpy as np
import pytest

from examples import rope


@pytest.mark.parametrize("heads", [1, 5, 12, 40])
@pytest.mark.parametrize("d", [64, 128])
def test_rope_shapes(tile_backend, heads, d):
    rng = np.random.default_rng()
    shape = (2, 19, heads, d)
    q = rng.standard_normal(shape).astype(np.float32)
    c64, s64 = rope.tables(shape[1], d)
    c, s = c64.astype(np.float32), s64.astype(np.float32)
    out = tile_backend.asarray(np.full(shape, np.nan, np.float32))
    rope.rope(tile_backend.asarray(q), tile_backend.asarray(c), tile_backend.asarray(s), out,
              blocks=7, interpret=tile_backend.interpret).sync()
    want = rope.reference(q, c.astype(np.float64), s.astype(np.float64))
    np.testing.assert_allclose(tile_backend.to_numpy(out), want, rtol=1e-5, atol=1e-6)
