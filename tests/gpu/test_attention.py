"""examples/attention.py and attention_backward.py on both backends against NumPy in float64:
fixed-length and packed variable-length batches, causal or not, grouped- and multi-query heads,
ragged lengths (queries and keys of different lengths, empty sequences), float16 and bfloat16,
head dimensions 16 to 128; tile configurations across the space on the GPU; the backward's
determinism; refusals of malformed arguments before any work."""

import numpy as np
import pytest

from examples import attention as fwd
from examples import attention_backward as bwd
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.testing import Backend

DTYPES = {"float16": np.float16, "bfloat16": BFLOAT16_NP}
#: (rtol, atol) of an output against float64, by input dtype (inputs of unit variance)
TOL = {"float16": (2e-2, 4e-3), "bfloat16": (5e-2, 3e-2)}


def _rand(rng, shape, dt):
    return rng.standard_normal(shape).astype(DTYPES[dt])


def _cfg(backend, **kw):
    """Small tiles in the interpreter (its time grows with the tile), else the default
    configuration unless ``kw`` names one."""
    if backend.interpret:
        return dict(BM=16, BN=16, num_warps=4, num_stages=1)
    return kw or None


def _close(got, want, dt, name, scale=1.0):
    rtol, atol = TOL[dt]
    got = np.asarray(got, np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=name)


def _forward(backend, q, k, v, causal, cfg, scale=None):
    o = backend.asarray(np.full(q.shape, np.nan, q.dtype))
    lse = backend.asarray(np.full(q.shape[:3], np.nan, np.float32))
    fwd.attention(backend.asarray(q), backend.asarray(k), backend.asarray(v), o, lse,
                  causal=causal, scale=scale, interpret=backend.interpret, cfg=cfg).sync()
    return backend.to_numpy(o), backend.to_numpy(lse)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads, kv_heads, d", [(2, 2, 64), (4, 2, 32), (3, 1, 16),
                                                (2, 1, 128)])
def test_forward_against_numpy(tile_backend, dt, causal, heads, kv_heads, d):
    rng = np.random.default_rng()
    big = not tile_backend.interpret
    sq = int(rng.integers(1, 700 if big else 60))
    sk = sq if causal and rng.random() < 0.5 else int(rng.integers(1, 700 if big else 60))
    q = _rand(rng, (2, heads, sq, d), dt)
    k = _rand(rng, (2, kv_heads, sk, d), dt)
    v = _rand(rng, (2, kv_heads, sk, d), dt)
    scale = float(rng.uniform(0.05, 0.3))
    o, lse = _forward(tile_backend, q, k, v, causal, _cfg(tile_backend), scale)
    want_o, want_lse = fwd.reference(q, k, v, causal, scale)
    _close(o, want_o, dt, f"o, seq_q {sq}, seq_k {sk}")
    np.testing.assert_allclose(lse, want_lse, rtol=1e-4, atol=1e-4)


def _packed(rng, lengths_q, lengths_k, heads, kv_heads, d, dt):
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    return (_rand(rng, (cu_q[-1], heads, d), dt), _rand(rng, (cu_k[-1], kv_heads, d), dt),
            _rand(rng, (cu_k[-1], kv_heads, d), dt), cu_q, cu_k)


def _lengths(rng, n, top, with_empty=True):
    lengths = rng.integers(0 if with_empty else 1, top, n)
    if with_empty and n > 2:
        lengths[rng.integers(n)] = 0
    return lengths


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads, kv_heads", [(2, 2), (4, 1)])
def test_packed_forward_against_numpy(tile_backend, causal, heads, kv_heads):
    rng = np.random.default_rng()
    top = 400 if not tile_backend.interpret else 50
    n = int(rng.integers(1, 9))
    lq = _lengths(rng, n, top)
    lk = np.maximum(lq + rng.integers(-10, 30, n), 0)   # fewer or more keys than queries
    q, k, v, cu_q, cu_k = _packed(rng, lq, lk, heads, kv_heads, 64, "float16")
    b = tile_backend
    o = b.asarray(np.full(q.shape, np.nan, q.dtype))
    lse = b.asarray(np.full(q.shape[:2], np.nan, np.float32))
    fwd.attention_varlen(b.asarray(q), b.asarray(k), b.asarray(v), b.asarray(cu_q),
                         b.asarray(cu_k), o, lse, causal=causal, interpret=b.interpret,
                         cfg=_cfg(b)).sync()
    want_o, want_lse = fwd.reference_varlen(q, k, v, cu_q, cu_k, causal)
    _close(b.to_numpy(o), want_o, "float16", f"o, lengths {lq.tolist()} {lk.tolist()}")
    np.testing.assert_allclose(b.to_numpy(lse), want_lse, rtol=1e-4, atol=1e-4)


def _backward(backend, q, k, v, do, causal, cfg):
    b = backend
    dev = [b.asarray(x) for x in (q, k, v, do)]
    o = b.asarray(np.zeros(q.shape, q.dtype))
    lse = b.asarray(np.zeros(q.shape[:3], np.float32))
    grads = [b.asarray(np.full(x.shape, np.nan, x.dtype)) for x in (q, k, v)]
    fwd.attention(*dev[:3], o, lse, causal=causal, interpret=b.interpret, cfg=cfg)
    bwd.attention_backward(*dev[:3], o, lse, dev[3], *grads, causal=causal,
                           interpret=b.interpret, cfg=cfg).sync()
    return [b.to_numpy(g) for g in grads]


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads, kv_heads, d", [(2, 2, 64), (4, 2, 32), (2, 1, 128)])
def test_backward_against_numpy(tile_backend, dt, causal, heads, kv_heads, d):
    rng = np.random.default_rng()
    big = not tile_backend.interpret
    sq = int(rng.integers(1, 500 if big else 50))
    sk = sq if causal else int(rng.integers(1, 500 if big else 50))
    q, do = _rand(rng, (2, heads, sq, d), dt), _rand(rng, (2, heads, sq, d), dt)
    k, v = _rand(rng, (2, kv_heads, sk, d), dt), _rand(rng, (2, kv_heads, sk, d), dt)
    got = _backward(tile_backend, q, k, v, do, causal, _cfg(tile_backend))
    for name, g, want in zip(("dq", "dk", "dv"), got, bwd.reference(q, k, v, do, causal)):
        # the gradients sum over the sequence: their error grows with its square root
        _close(g, want, dt, f"{name}, seq_q {sq}, seq_k {sk}", scale=np.sqrt(max(sq, sk)) / 4)


@pytest.mark.parametrize("causal", [False, True])
def test_packed_backward_against_numpy(tile_backend, causal):
    rng = np.random.default_rng()
    b = tile_backend
    top = 300 if not b.interpret else 40
    n = int(rng.integers(1, 7))
    lq = _lengths(rng, n, top)
    lk = np.maximum(lq + rng.integers(-10, 30, n), 0)
    q, k, v, cu_q, cu_k = _packed(rng, lq, lk, 4, 2, 64, "float16")
    do = _rand(rng, q.shape, "float16")
    dev = [b.asarray(x) for x in (q, k, v, cu_q, cu_k, do)]
    o = b.asarray(np.zeros(q.shape, q.dtype))
    lse = b.asarray(np.zeros(q.shape[:2], np.float32))
    grads = [b.asarray(np.full(x.shape, np.nan, x.dtype)) for x in (q, k, v)]
    fwd.attention_varlen(*dev[:5], o, lse, causal=causal, interpret=b.interpret, cfg=_cfg(b))
    bwd.attention_varlen_backward(*dev[:5], o, lse, dev[5], *grads, causal=causal,
                                  interpret=b.interpret, cfg=_cfg(b)).sync()
    want = bwd.reference_varlen(q, k, v, do, cu_q, cu_k, causal)
    for name, g, w in zip(("dq", "dk", "dv"), grads, want):
        _close(b.to_numpy(g), w, "float16", f"{name}, lengths {lq.tolist()} {lk.tolist()}",
               scale=np.sqrt(max(top, 1)) / 4)


@pytest.mark.gpu
@pytest.mark.parametrize("bm, bn, warps, stages", [
    (16, 16, 1, 1), (16, 64, 4, 3), (32, 32, 2, 2), (64, 32, 4, 4), (64, 128, 4, 2),
    (128, 64, 8, 2), (128, 128, 8, 3), (64, 64, 8, 5), (128, 32, 16, 2), (256, 64, 16, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_and_backward_across_tile_configurations(bm, bn, warps, stages, causal):
    """The kernels at tile shapes, warp counts and stage counts nobody tuned: every one
    computes the same attention and gradients."""
    gpu_backend = Backend("gpu")
    rng = np.random.default_rng()
    cfg = dict(BM=bm, BN=bn, num_warps=warps, num_stages=stages)
    sq = int(rng.integers(1, 400))
    q, do = _rand(rng, (1, 2, sq, 64), "float16"), _rand(rng, (1, 2, sq, 64), "float16")
    k, v = _rand(rng, (1, 1, sq, 64), "float16"), _rand(rng, (1, 1, sq, 64), "float16")
    o, lse = _forward(gpu_backend, q, k, v, causal, cfg)
    want_o, want_lse = fwd.reference(q, k, v, causal)
    _close(o, want_o, "float16", f"o, seq {sq}")
    np.testing.assert_allclose(lse, want_lse, rtol=1e-4, atol=1e-4)
    got = _backward(gpu_backend, q, k, v, do, causal, cfg)
    for name, g, want in zip(("dq", "dk", "dv"), got, bwd.reference(q, k, v, do, causal)):
        _close(g, want, "float16", f"{name}, seq {sq}", scale=np.sqrt(sq) / 4)


@pytest.mark.gpu
def test_backward_is_deterministic():
    """No atomics: two runs give the same bits."""
    gpu_backend = Backend("gpu")
    rng = np.random.default_rng()
    q, do = _rand(rng, (2, 8, 777, 128), "bfloat16"), _rand(rng, (2, 8, 777, 128), "bfloat16")
    k, v = _rand(rng, (2, 2, 777, 128), "bfloat16"), _rand(rng, (2, 2, 777, 128), "bfloat16")
    first = _backward(gpu_backend, q, k, v, do, True, None)
    second = _backward(gpu_backend, q, k, v, do, True, None)
    for a, b in zip(first, second):
        assert np.array_equal(a.view(np.uint16), b.view(np.uint16))


def test_malformed_arguments_are_refused_before_any_work():
    q = np.zeros((1, 4, 8, 64), np.float16)
    k = np.zeros((1, 3, 8, 64), np.float16)
    o = np.full(q.shape, 7, np.float16)
    lse = np.zeros((1, 4, 8), np.float32)
    with pytest.raises(ValueError, match="attention: k: expected a number of heads that "
                                         "divides q's 4, got 3"):
        fwd.attention(q, k, k, o, lse, interpret=True)
    with pytest.raises(ValueError, match=r"attention: q: expected a head dimension D in "):
        fwd.attention(q[..., :48], q[..., :48], q[..., :48], o[..., :48], lse,
                      interpret=True)
    with pytest.raises(ValueError, match=r"attention: lse: expected \(1, 4, 8\) float32, got "
                                         r"\(1, 4, 8\) float16"):
        fwd.attention(q, q, q, o, lse.astype(np.float16))     # NumPy: the interpreter
    with pytest.raises(ValueError, match=r"attention: q: expected a 4-D float16 or bfloat16"):
        fwd.attention(q.astype(np.float32), q, q, o, lse, interpret=True)
    with pytest.raises(ValueError, match=r"attention: v: expected an array \(NumPy, CuPy, "
                                         r"Numba or PyTorch\) .* got list"):
        fwd.attention(q, q, q.tolist(), o, lse, interpret=True)
    assert (o == 7).all()
    cu = np.array([0, 8], np.int32)
    packed = (q[0, 0][:, None], q[0, 0][:, None], q[0, 0][:, None])
    out = (o[0, 0][:, None], lse[0, 0][:, None])
    with pytest.raises(ValueError, match=r"attention_varlen: cu_seqlens_k: expected a 1-D "
                                         r"int32 array .* got shape \(2,\) int64"):
        fwd.attention_varlen(*packed, cu, cu.astype(np.int64), *out, interpret=True)
    with pytest.raises(ValueError, match=r"attention_varlen: cu_seqlens_k: expected 2 "
                                         r"boundaries \(as cu_seqlens_q\), got 3"):
        fwd.attention_varlen(*packed, cu, np.array([0, 4, 8], np.int32), *out)
    with pytest.raises(ValueError, match=r"attention_varlen: cu_seqlens_q: expected boundaries "
                                         r"non-decreasing from 0 to 8 .* got \[0, 9\]"):
        fwd.attention_varlen(*packed, np.array([0, 9], np.int32), cu, *out)
    with pytest.raises(ValueError, match=r"attention_varlen_backward: cu_seqlens_q: expected a "
                                         r"1-D int32 array"):
        bwd.attention_varlen_backward(*packed, cu.astype(np.float32), cu, *out, packed[0],
                                      packed[0].copy(), packed[0].copy(), packed[0].copy())
    with pytest.raises(ValueError, match=r"attention_backward: dk: expected \(1, 4, 8, 64\) "
                                         r"float16"):
        bwd.attention_backward(q, q, q, o, lse, q, q.copy(), q[:, :2].copy(), q.copy(),
                               interpret=True)
