"""Random numbers on both backends: rand, randint and randint4x bit for bit against the
reference Philox of ``tests/unit/test_random.py`` and against each other, randn within a few
ulp (libdevice's logf/cosf against correctly rounded ones); and, where Triton, PyTorch and a
GPU are present, against Triton's ``tl.rand`` / ``tl.randn`` / ``tl.randint`` for the same
seeds and offsets (Philox4x32-10 and int32 words for int32 and int64 offsets, as Triton 3.6)."""

import numpy as np
import pytest

import numba_tile as nt
from tests.unit.test_random import (from_offsets, ragged_offsets, random_seeds, reference,
                                    ulp_distance)

BLOCK = 256


def run(backend, offsets, seed, block=BLOCK):
    """randint, rand, randn, randint4x's words 1, 2 and 3 ^ 0: int32 words for either offsets
    dtype."""
    n, i32 = offsets.size, np.int32
    outs = [backend.asarray(np.zeros(n, d)) for d in (i32, np.float32, np.float32, i32, i32, i32)]
    backend.run(from_offsets, backend.asarray(offsets), *(nt.partition(a, block) for a in outs),
                seed, block)
    return [backend.to_numpy(a) for a in outs]


@pytest.mark.parametrize("dt", [np.int32, np.int64], ids=["int32", "int64"])
def test_ops_match_the_reference(tile_backend, dt):
    rng = np.random.default_rng()
    for seed in random_seeds(rng):
        n = 900 + int(rng.integers(1, 200))
        offs = ragged_offsets(rng, dt, n)
        r, u, g, w1, w2, w3 = run(tile_backend, offs, seed)
        assert r.dtype == w1.dtype == np.int32
        np.testing.assert_array_equal(r, reference("randint", seed, offs), err_msg=str(seed))
        np.testing.assert_array_equal(u, reference("rand", seed, offs), err_msg=str(seed))
        words = reference("randint4x", seed, offs)
        np.testing.assert_array_equal(w1, words[1])
        np.testing.assert_array_equal(w2, words[2])
        np.testing.assert_array_equal(w3, words[3] ^ words[0])
        # libdevice's __nv_logf / __nv_cosf are within 1 and 2 ulp of the correctly rounded
        # values; sqrt and the products round once each
        assert ulp_distance(g, reference("randn", seed, offs)).max() <= 4, seed


@pytest.mark.gpu
@pytest.mark.parametrize("dt", [np.int32, np.int64], ids=["int32", "int64"])
def test_gpu_and_interpreter_agree(dt):
    from numba_tile.testing import Backend
    rng = np.random.default_rng()
    n = 50_000 + int(rng.integers(1, 1000))
    offs = ragged_offsets(rng, dt, n)
    seed = int(rng.integers(2**32, 2**62))
    gpu = run(Backend("gpu"), offs, seed, block=1024)
    cpu = run(Backend("interpreter"), offs, seed, block=1024)
    for i in (0, 1, 3, 4, 5):                                  # randint, rand, randint4x words
        np.testing.assert_array_equal(gpu[i], cpu[i])
    assert ulp_distance(gpu[2], cpu[2]).max() <= 4


# ------------------------------------------------------------------------------ Triton


def _triton():
    triton = pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("Triton's kernels need a CUDA GPU (none visible to PyTorch)")
    import triton.language as tl
    return triton, tl, torch


def _triton_outputs(offsets, seed):
    triton, tl, torch = _triton()

    @triton.jit
    def kernel(O, R, U, G, N, seed, BLOCK: tl.constexpr):
        idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = idx < N
        offs = tl.load(O + idx, mask=m)
        # uint32 words for int32 and int64 offsets (Triton 3.6): their bits as int32
        tl.store(R + idx, tl.randint(seed, offs).to(tl.int32, bitcast=True), mask=m)
        tl.store(U + idx, tl.rand(seed, offs), mask=m)
        tl.store(G + idx, tl.randn(seed, offs), mask=m)

    o = torch.from_numpy(offsets).cuda()
    r = torch.empty(o.shape, dtype=torch.int32, device="cuda")
    u = torch.empty(o.shape, dtype=torch.float32, device="cuda")
    g = torch.empty_like(u)
    n = o.numel()
    kernel[(triton.cdiv(n, 1024),)](o, r, u, g, n, seed, BLOCK=1024)
    return r.cpu().numpy(), u.cpu().numpy(), g.cpu().numpy()


@pytest.mark.gpu
@pytest.mark.parametrize("dt", [np.int32, np.int64], ids=["int32", "int64"])
def test_equal_to_tritons_rand_randn_randint(dt):
    _triton()
    from numba_tile.testing import Backend
    rng = np.random.default_rng()
    n = 20_000 + int(rng.integers(1, 1000))
    offs = ragged_offsets(rng, dt, n)
    for seed in random_seeds(rng):
        r_tri, u_tri, g_tri = _triton_outputs(offs, seed)
        r, u, g, *_ = run(Backend("gpu"), offs, seed, block=1024)
        np.testing.assert_array_equal(r, r_tri, err_msg=f"randint, seed {seed}")
        np.testing.assert_array_equal(u, u_tri, err_msg=f"rand, seed {seed}")
        # Triton's tl.sqrt/tl.log/tl.cos may lower to other libdevice or approximate
        # instructions than numba_tile's: close, not bit for bit
        np.testing.assert_allclose(g, g_tri, rtol=1e-5, atol=1e-5, err_msg=f"randn, seed {seed}")
