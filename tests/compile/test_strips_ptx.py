"""Strip kernels compile to PTX for sm_80 and sm_90 (no GPU needed), without local memory."""

import numpy as np
import pytest

import numba_tile as nt
from tests.gpu import test_strips as g


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_strip_kernels_compile(cc):
    x = np.zeros((37, 1000), np.float32)
    ptx = g.softmax_rows.ptx(x, nt.partition(x.copy(), (4, 128), blocks=5), 4, 128, cc=cc)
    assert ".local" not in ptx and "st.global" in ptx
    x3 = np.zeros((3, 5, 70), np.float32)
    ptx3 = g.strip_sums.ptx(x3, nt.partition(x3.copy(), (1, 1, 16), blocks=4), 16, cc=cc)
    assert ".local" not in ptx3 and "st.global" in ptx3
