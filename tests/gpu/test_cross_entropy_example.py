"""examples/cross_entropy.py on both backends against its float64 reference: rows of every
length against the tile (one partial tile, a tile and one element, several), masked logits
(-inf, as a vocabulary mask leaves them) in any lane but the target's, and the 16-bit dtypes.
The online softmax starts its running max at a finite floor: a first tile of masked
logits must not give NaN (-inf - -inf)."""

import numpy as np
import pytest

from examples import cross_entropy as ce
from numba_tile.dtypes import BFLOAT16_NP


def _case(rng, m, v, dt, masked):
    x = (3 * rng.standard_normal((m, v))).astype(np.float32)
    t = rng.integers(0, v, m).astype(np.int64)
    t[rng.random(m) < 0.2] = -100
    t[0] = v - 1
    if masked:
        mask = rng.random((m, v)) < masked
        mask[np.arange(m), np.clip(t, 0, None)] = False       # the target keeps its logit
        x[mask] = -np.inf
    return x.astype(dt), t


@pytest.mark.parametrize("v", [100, 4096, 4097, 9000, 20000])
@pytest.mark.parametrize("masked", [0.0, 0.3, 0.97])
def test_loss_and_gradient_float32(tile_backend, v, masked):
    rng = np.random.default_rng()
    x_h, t_h = _case(rng, 7, v, np.float32, masked)
    n_valid = max(1, int((t_h != -100).sum()))
    x = tile_backend.asarray(x_h.copy())
    loss = tile_backend.asarray(np.full((7, 1), np.nan, np.float32))
    ce.cross_entropy(x, tile_backend.asarray(t_h), loss, n_valid,
                     interpret=tile_backend.interpret).sync()
    ref_loss, ref_grad = ce.reference(x_h, t_h)
    np.testing.assert_allclose(tile_backend.to_numpy(loss)[:, 0], ref_loss, rtol=1e-5, atol=1e-7)
    # the target's gradient is (p - 1) / n_valid: with few valid logits p is near 1, and the
    # float32 difference is exact only to about eps32 / n_valid in absolute terms
    np.testing.assert_allclose(tile_backend.to_numpy(x), ref_grad, rtol=1e-5,
                               atol=4 * np.finfo(np.float32).eps / n_valid)


@pytest.mark.parametrize("first", [4096, 8200])
def test_a_masked_first_tile_gives_no_nan(tile_backend, first):
    # every logit of the first tile (or two) masked, the target past them
    rng = np.random.default_rng()
    x_h, t_h = _case(rng, 4, 12000, np.float32, 0.0)
    x_h[:, :first] = -np.inf
    t_h[:] = rng.integers(first, 12000, 4)
    n_valid = 4
    x = tile_backend.asarray(x_h.copy())
    loss = tile_backend.asarray(np.full((4, 1), np.nan, np.float32))
    ce.cross_entropy(x, tile_backend.asarray(t_h), loss, n_valid,
                     interpret=tile_backend.interpret).sync()
    ref_loss, ref_grad = ce.reference(x_h, t_h)
    np.testing.assert_allclose(tile_backend.to_numpy(loss)[:, 0], ref_loss, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(tile_backend.to_numpy(x), ref_grad, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("dt", [np.float16, BFLOAT16_NP], ids=["float16", "bfloat16"])
def test_loss_and_gradient_16_bit(tile_backend, dt):
    rng = np.random.default_rng()
    x_h, t_h = _case(rng, 5, 5000, dt, 0.1)
    n_valid = max(1, int((t_h != -100).sum()))
    x = tile_backend.asarray(x_h.copy())
    loss = tile_backend.asarray(np.full((5, 1), np.nan, np.float32))
    ce.cross_entropy(x, tile_backend.asarray(t_h), loss, n_valid,
                     interpret=tile_backend.interpret).sync()
    ref_loss, ref_grad = ce.reference(x_h.astype(np.float32), t_h)
    np.testing.assert_allclose(tile_backend.to_numpy(loss)[:, 0], ref_loss, rtol=1e-4, atol=1e-6)
    got = tile_backend.to_numpy(x).astype(np.float64)
    np.testing.assert_allclose(got, ref_grad, rtol=1e-2, atol=1e-5)
