"""PTX of ``x[i]`` on a read-only tensor (libNVVM, no GPU): a coordinate of a signed type is
tested for a negative value (NumPy's rule: counted from the end), one of an unsigned type never
is (a uint64 with its top bit set is past the end, as in the interpreter); a Constant
coordinate outside the array reads nothing."""

import re

import numpy as np
import pytest

import numba_tile as nt

CCS = [(8, 0), (9, 0)]


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]


def sign_tested(ptx: str) -> bool:
    """Whether the kernel tests a 64-bit value's sign (``x < 0 ? x + n : x`` compiles to an
    arithmetic shift by 63, or to a signed compare with 0)."""
    b = body(ptx)
    return bool(re.search(r"shr\.s64\s+%rd\d+, %rd\d+, 63;", b)
                or re.search(r"setp\.(lt|ge)\.s64\s+%p\d+, %rd\d+, 0;", b))


@nt.jit
def element_at(x, idx, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[idx[0]])


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("it", [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int32,
                                np.int64], ids=lambda d: np.dtype(d).name)
def test_only_signed_coordinates_count_from_the_end(cc, it):
    x = np.zeros(100, np.float32)
    ptx = element_at.ptx(x, np.zeros(4, it), nt.partition(np.zeros(128, np.float32), 128), 128,
                         cc=cc)
    assert "ld.global.f32" in body(ptx)
    assert sign_tested(ptx) == np.issubdtype(it, np.signedinteger), body(ptx)


@nt.jit
def element_at_constant(x, z: nt.Partition["B"], B: nt.Constant, C: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[C])


@pytest.mark.parametrize("c", [2**64 - 1, np.uint64(2**64 - 1)], ids=["int", "np.uint64"])
def test_a_uint64_constant_of_all_ones_reads_no_element(c):
    # 2**64 - 1 is past the end of any array (not x[-1]): the guarded read folds away
    ptx = element_at_constant.ptx(np.zeros(100, np.float32),
                                  nt.partition(np.zeros(128, np.float32), 128), 128, c)
    assert "ld.global.f32" not in body(ptx)
    ptx = element_at_constant.ptx(np.zeros(100, np.float32),
                                  nt.partition(np.zeros(128, np.float32), 128), 128, -1)
    assert "ld.global.f32" in body(ptx)
