"""The compiled kernel and the interpreter agree on IEEE float scalar arithmetic: a division by
a zero scalar or constant gives inf or nan on both (tests/unit/test_interpreter_scalar_ieee.py
checks the interpreter against NumPy)."""

import numpy as np
import pytest

import numba_tile as nt

pytestmark = pytest.mark.gpu


def _kernel(interpret):
    @nt.jit(interpret=interpret)
    def scale_by_inverse(x, z: nt.Partition["B"], c: float, C: nt.Constant, B: nt.Constant):
        t = nt.load_like(x, z)
        nt.store(z, t * (1.0 / c) + t * (C / c) + (0.0 / C) * t)
    return scale_by_inverse


GPU, CPU = _kernel(False), _kernel(True)


@pytest.mark.parametrize("c, C", [(0.0, 2.0), (-0.0, 2.0), (0.0, 0.0), (0.5, 0.0), (4.0, 2.0)])
def test_gpu_and_interpreter_agree_on_division_by_zero_scalars(c, C):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    x = (rng.random(37) + 0.5).astype(np.float32)
    z_cpu = np.zeros(37, np.float32)
    CPU(x, nt.partition(z_cpu, 64), c, C, 64)
    z_gpu = cp.zeros(37, cp.float32)
    GPU(cp.asarray(x), nt.partition(z_gpu, 64), c, C, 64).sync()
    np.testing.assert_array_equal(cp.asnumpy(z_gpu), z_cpu)
