"""Device functions applied to tiles compile to PTX (no GPU needed): the function's body is
linked into the kernel (inlined by NVVM or called), with no local memory and no global access
but the kernel's own load and store."""

import re

import numpy as np
import pytest

from numba import cuda

import numba_tile as nt
from numba_tile.errors import ClosedWorldError
from tests.gpu import test_device_functions as g


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_the_device_functions_of_the_gpu_tier_compile(cc, monkeypatch):
    x = np.zeros(1000, np.float32)
    ptxs = [
        g.apply_leaky.ptx(x, nt.partition(x.copy(), 256), 256, cc=cc),
        g.apply_gelu.ptx(x, nt.partition(x.copy(), 128), 128, cc=cc),
        g.apply_nested.ptx(x, nt.partition(x.copy(), 256), 1.5, 256, cc=cc),
        g.apply_collatz.ptx(np.zeros(300, np.int64), nt.partition(np.zeros(300, np.int64), 128),
                            128, cc=cc),
        g.apply_half.ptx(np.zeros(333, np.float16), nt.partition(np.zeros(333, np.float16), 128),
                         128, cc=cc),
    ]
    for ptx in ptxs:
        assert ".local" not in ptx
        # one load and one store of the kernel's own arrays, nothing else global
        stores = re.findall(r"\bst\.global", ptx)
        assert stores, "the kernel's store is missing"
    # the nested device function's exp (libdevice's expf: ex2.approx) is in the kernel, inlined
    assert "ex2.approx" in ptxs[2] and "ex2.approx" not in ptxs[0]
    assert "call" not in ptxs[2]


@cuda.jit(device=True)
def lane(x):
    return x + cuda.threadIdx.x


@nt.jit(unchecked=True)
def unchecked_lane(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(lane(nt.load_like(x, z)), nt.float32))


@nt.jit
def safe_lane(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(lane(nt.load_like(x, z)), nt.float32))


def test_an_unchecked_kernels_device_function_is_its_authors_business():
    x = np.zeros(256, np.float32)
    ptx = unchecked_lane.ptx(x, nt.partition(x.copy(), 256), 256)
    assert "%tid.x" in ptx
    with pytest.raises(ClosedWorldError, match="SIMT"):
        safe_lane.ptx(x, nt.partition(x.copy(), 256), 256)
