"""``astype`` from float to every integer dtype, out of range: the interpreter computes what the
GPU computes (PTX's ``cvt.rzi``: toward zero, saturated to the dtype's range, NaN to 0), and the
lowering bounds 8-bit results itself (the PTX is inspected where the GPU's answer follows from
it). The GPU twin is tests/gpu/test_astype_float_to_int.py."""

import numpy as np
import pytest

import numba_tile as nt

INT_DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]
SPECIAL = np.array([-1.0, 300.0, np.nan, 1e10, -1e10, 3.7, -3.7, 70000.0, np.inf, -np.inf,
                    -0.5, 255.9, 2.0 ** 31, -(2.0 ** 31), 2.0 ** 63, 65535.0], np.float32)


def saturating(values, dt):
    """Float -> integer as PTX's cvt.rzi: toward zero, saturated to dt's range, NaN to 0."""
    info = np.iinfo(dt)
    out = []
    for v in np.asarray(values, np.float64).tolist():
        if v != v:
            out.append(0)
        elif abs(v) == float("inf"):
            out.append(int(info.max) if v > 0 else int(info.min))
        else:                                   # exact integers: int() truncates
            out.append(min(max(int(v), int(info.min)), int(info.max)))
    return np.array(out, dtype=dt)


def _astype_kernel(dt):
    @nt.jit
    def k(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.astype(nt.load(x, (0,), (B,), padding=0.0), dt))
    return k


_ASTYPE = {np.dtype(d): _astype_kernel(getattr(nt, np.dtype(d).name)) for d in INT_DTYPES}


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_astype_float_to_int_out_of_range_saturates_in_the_interpreter(dt):
    """Not NumPy's cast (undefined out of range: -1.0 -> uint8 gives 255, 1e10 -> int32 gives
    -2**31) but PTX's cvt.rzi, and for 8-bit dtypes no 16-bit cvt and truncation (300.0 -> uint8
    would give 44)."""
    out = np.zeros(16, dt)
    _ASTYPE[np.dtype(dt)](SPECIAL, nt.partition(out, 16), 16, interpret=True)
    np.testing.assert_array_equal(out, saturating(SPECIAL, dt))


@pytest.mark.parametrize("dt", [np.uint8, np.int8], ids=lambda d: np.dtype(d).name)
def test_astype_float_to_8bit_int_is_bounded_in_the_lowering(dt):
    """The lowering tests the bounds itself (LLVM's fptoui/fptosi are poison out of range):
    the PTX compares with 2**bits (unsigned) / 2**(bits-1) (signed) and selects."""
    out = nt.partition(np.zeros(128, dt), 128)
    p = _ASTYPE[np.dtype(dt)].ptx(np.zeros(128, np.float32), out, 128, cc=(9, 0))
    bound = "0f43800000" if dt == np.uint8 else "0f43000000"      # 256.0 / 128.0
    assert bound in p and "selp" in p
