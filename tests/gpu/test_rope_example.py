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


@pytest.mark.parametrize("hq, hk", [(32, 8), (5, 3), (4, 4), (1, 7), (40, 7)])
@pytest.mark.parametrize("blocks", [None, 5])
def test_rope_qk_rotates_both_tensors_in_one_launch(tile_backend, hq, hk, blocks):
    rng = np.random.default_rng()
    bsz, seq, d = 2, 13, 64
    q = rng.standard_normal((bsz, seq, hq, d)).astype(np.float32)
    k = rng.standard_normal((bsz, seq, hk, d)).astype(np.float32)
    c64, s64 = rope.tables(seq, d)
    c, s = c64.astype(np.float32), s64.astype(np.float32)
    qo = tile_backend.asarray(np.full(q.shape, np.nan, np.float32))
    ko = tile_backend.asarray(np.full(k.shape, np.nan, np.float32))
    rope.rope_qk(tile_backend.asarray(q), tile_backend.asarray(k), tile_backend.asarray(c),
                 tile_backend.asarray(s), qo, ko, blocks=blocks,
                 interpret=tile_backend.interpret).sync()
    cd, sd = c.astype(np.float64), s.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(qo), rope.reference(q, cd, sd),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tile_backend.to_numpy(ko), rope.reference(k, cd, sd),
                               rtol=1e-5, atol=1e-6)


def test_rope_qk_falls_back_to_two_launches_where_heads_do_not_fit_a_tile(tile_backend,
                                                                         monkeypatch):
    monkeypatch.setattr(rope, "MAX_HALF_ROW", 64)      # 2 heads of D = 64 per tile
    rng = np.random.default_rng()
    q = rng.standard_normal((1, 6, 5, 64)).astype(np.float32)
    k = rng.standard_normal((1, 6, 2, 64)).astype(np.float32)
    c64, s64 = rope.tables(6, 64)
    c, s = c64.astype(np.float32), s64.astype(np.float32)
    qo = tile_backend.asarray(np.full(q.shape, np.nan, np.float32))
    ko = tile_backend.asarray(np.full(k.shape, np.nan, np.float32))
    rope.rope_qk(tile_backend.asarray(q), tile_backend.asarray(k), tile_backend.asarray(c),
                 tile_backend.asarray(s), qo, ko, interpret=tile_backend.interpret).sync()
    cd, sd = c.astype(np.float64), s.astype(np.float64)
    np.testing.assert_allclose(tile_backend.to_numpy(qo), rope.reference(q, cd, sd),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tile_backend.to_numpy(ko), rope.reference(k, cd, sd),
                               rtol=1e-5, atol=1e-6)


def test_rope_qk_refuses_mismatched_tensors_before_any_work():
    q = np.zeros((2, 5, 4, 64), np.float32)
    k = np.zeros((2, 6, 2, 64), np.float32)
    c = np.zeros((5, 64), np.float32)
    with pytest.raises(ValueError, match="rope_qk: k: expected \\(2, 5, kv_heads, 64\\)"):
        rope.rope_qk(q, k, c, c, q.copy(), k.copy(), interpret=True)
    k = np.zeros((2, 5, 2, 64), np.float32)
    with pytest.raises(ValueError, match="rope_qk: out: expected"):
        rope.rope_qk(q, k, c, c, q.copy(), np.zeros((2, 5, 3, 64), np.float32),
                     interpret=True)
