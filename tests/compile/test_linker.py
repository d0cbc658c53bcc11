"""PTX from libNVVM assembles into a cubin with nvJitLink (no GPU needed)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.runtime.linker import LinkError, ptx_to_cubin


@nt.jit
def neg(x, z: nt.Partition):
    nt.store(z, -nt.load_like(x, z))


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_cubin_for_each_arch(cc):
    x = np.zeros(1000, np.float32)
    cubin = ptx_to_cubin(neg.ptx(x, nt.partition(x.copy(), 256), cc=cc), cc)
    if cubin is None:
        pytest.skip("nvJitLink not installed")
    assert cubin[:4] == b"\x7fELF"


def test_bad_ptx_reports_the_log():
    pytest.importorskip("cuda.bindings.nvjitlink")
    with pytest.raises(LinkError, match="nvJitLink"):
        ptx_to_cubin(".version 8.0\n.target sm_90\n.address_size 64\nthis is not ptx\n", (9, 0))
