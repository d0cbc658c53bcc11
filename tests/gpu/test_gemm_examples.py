"""The GEMM examples (``examples/gemm.py``, ``examples/gemm_persistent.py``) on the GPU at
real sizes: ragged M, N and K (1000 x 1000 x 700 and a 16-row product), float16 and
bfloat16, every configuration ``benchmarks/gemm.py`` sweeps, and persistent launches over
fewer blocks than tiles, one block, and one block per multiprocessor.

Inputs are integer-valued, so every product and partial sum is exact in float32 and the
result must equal NumPy's float64 product rounded once to C's dtype, element for element:
a tile loaded at the wrong coordinates, a K step skipped or counted twice, or an edge
element written from padding would show as a mismatch. C starts as NaN, so an element no
block wrote shows too. (Interpreter twins at small sizes: ``tests/unit/test_examples.py``
and ``tests/unit/test_gemm_benchmark.py``.)
"""

import numpy as np
import pytest

from examples import gemm, gemm_persistent
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.testing import Backend

pytestmark = pytest.mark.gpu

DTYPES = [np.float16, BFLOAT16_NP]
#: the examples' defaults (None), every configuration of benchmarks/gemm.py's sweep tables,
#: and one without pipelining (num_stages=1)
CONFIGS = [None, (128, 128, 32, 4, 3), (128, 256, 32, 8, 3), (128, 128, 64, 8, 3),
           (64, 128, 32, 4, 4), (64, 64, 64, 4, 3), (16, 64, 64, 4, 3), (16, 128, 64, 4, 3),
           (128, 128, 32, 4, 1)]
SHAPES = [(1000, 1000, 700), (16, 1000, 700)]


def dt_id(d):
    return np.dtype(d).name


def cfg_id(c):
    return "default" if c is None else "x".join(map(str, c))


@pytest.fixture
def gpu():
    return Backend("gpu")


def operands(gpu, shape, dt):
    m, n, k = shape
    a, b = gemm.integer_operands(np.random.default_rng(), m, n, k, dt)
    c = gpu.asarray(np.full((m, n), np.nan, dt))
    return a, b, c


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", CONFIGS, ids=cfg_id)
@pytest.mark.parametrize("dt", DTYPES, ids=dt_id)
def test_matmul_exact(gpu, dt, config, shape):
    a, b, c = operands(gpu, shape, dt)
    gemm.matmul(gpu.asarray(a), gpu.asarray(b), c, config=config).sync()
    got = gpu.to_numpy(c).astype(np.float64)
    np.testing.assert_array_equal(got, gemm.rounded_product(a, b, dt))


@pytest.mark.parametrize("blocks", [1, 7, None], ids=["1", "7", "sms"])
@pytest.mark.parametrize("config", [(64, 64, 32, 4, 3), (128, 128, 32, 4, 3)], ids=cfg_id)
@pytest.mark.parametrize("dt", DTYPES, ids=dt_id)
def test_matmul_persistent_exact(gpu, dt, config, blocks):
    if blocks is None:
        from numba import cuda
        blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT
    a, b, c = operands(gpu, (1000, 1000, 700), dt)
    gemm_persistent.matmul_persistent(gpu.asarray(a), gpu.asarray(b), c, blocks,
                                      config=config).sync()
    got = gpu.to_numpy(c).astype(np.float64)
    np.testing.assert_array_equal(got, gemm.rounded_product(a, b, dt))


def test_matmul_on_torch_tensors_and_stream():
    """As benchmarks/gemm.py launches it: PyTorch tensors, PyTorch's current stream."""
    torch = pytest.importorskip("torch")
    a, b = gemm.integer_operands(np.random.default_rng(), 300, 200, 150)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = torch.full((300, 200), float("nan"), dtype=torch.float16, device="cuda")
    gemm.matmul(ta, tb, tc, stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    np.testing.assert_array_equal(tc.cpu().numpy().astype(np.float64),
                                  gemm.rounded_product(a, b, np.float16))


@pytest.mark.parametrize("module", [gemm, gemm_persistent], ids=lambda m: m.__name__)
def test_main(module, capsys):
    module.main()
    out = capsys.readouterr().out
    stem = module.__name__.rsplit(".", 1)[-1]
    assert "running on the GPU" in out, out
    assert f"{stem}: OK" in out, out
    assert "WRONG RESULT" not in out
