"""The attention examples' kernels make no call, so ptxas keeps their ``wgmma`` instructions
asynchronous: no "(C7509) ... serialized due to the presence of Extern calls" in ptxas' report
(a float32 ``/`` of tiles or a 64-bit integer division by a runtime value would bring one).
Needs nvJitLink (ptxas), not a GPU."""

import numpy as np
import pytest

import numba_tile as nt
from examples import attention as fwd
from examples import attention_backward as bwd
from numba_tile.runtime import linker


class _Device:
    """A device-array stand-in (``__cuda_array_interface__``) at its own address."""

    def __init__(self, shape, dtype, at):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        strides, step = [], self.dtype.itemsize
        for s in reversed(self.shape):
            strides.append(step)
            step *= s
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str,
                                         "data": (at, False), "version": 3,
                                         "strides": tuple(reversed(strides))}


def _notes(kernel, *args):
    out = linker.assemble(kernel.ptx(*args, cc=(9, 0)), (9, 0))
    if out is None:
        pytest.skip("nvJitLink is not installed: no ptxas report")
    return linker.performance_warnings(out[1])


@pytest.mark.parametrize("d", [64, 128])
def test_the_attention_kernels_are_not_serialized_by_ptxas(d):
    b, h, hk, s = 2, 4, 2, 4096
    at = iter(range(1 << 30, 1 << 45, 1 << 30))
    q = _Device((b, h, s, d), np.float16, next(at))
    k = _Device((b, hk, s, d), np.float16, next(at))
    o = _Device((b, h, s, d), np.float16, next(at))
    lse = _Device((b, h, s, 1), np.float32, next(at))
    c = fwd.config(d, True)
    kern = fwd._kernel(fwd.attention_rows, c["num_warps"], c["num_stages"])
    assert _notes(kern, q, k, k, nt.partition(o, (1, 1, c["BM"], d), blocks=64),
                  nt.partition(lse, (1, 1, c["BM"], 1), blocks=64), 0.1, c["BM"], c["BN"], d,
                  True, 2) == ()
    cb = bwd.config(d, True)
    bm, bn = cb["BM"], cb["BN"]
    dk = _Device((b, hk, s, d), np.float16, next(at))
    dv = _Device((b, hk, s, d), np.float16, next(at))
    rows = _Device((b, h, 1, s), np.float32, next(at))
    rows2 = _Device((b, h, 1, s), np.float32, next(at))
    kern = bwd._kernel(bwd.key_grads, cb["num_warps"], cb["num_stages"])
    assert _notes(kern, q, k, k, q, rows, rows2, nt.partition(dk, (1, 1, bn, d), blocks=64),
                  nt.partition(dv, (1, 1, bn, d), blocks=64), 0.1, bm, bn, d, True, 2) == ()
