"""Red team of session 8's changes (load_at, the launch runner's fast path, the new math ops,
the unsigned / int16 / FP8 dtypes), CPU-checkable halves: the interpreter must compute what
the lowering computes (the PTX is inspected where the GPU's answer follows from it)."""

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
    # finding: the interpreter used NumPy's cast (undefined out of range: -1.0 -> uint8 gave
    # 255, 1e10 -> int32 gave -2**31), the GPU PTX's cvt.rzi (saturating, NaN -> 0), and for
    # 8-bit dtypes NVVM's 16-bit cvt and a truncation (300.0 -> uint8 gave 44)
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


@nt.jit
def _load_at_u64(x, z: nt.Partition["B"], r, B: nt.Constant):
    nt.store(z, nt.load_at(x, (np.uint64(r),), (B,), padding=-1.0))


@nt.jit
def _load_at_from_u64_tensor(x, offs, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_at(x, (offs[0],), (B,), padding=-1.0))


def _window(x, o, n, pad):
    return np.array([x[o + i] if 0 <= o + i < len(x) else pad for i in range(n)], x.dtype)


@pytest.mark.parametrize("r", [-3, -1, -(2 ** 63), 5])
def test_load_at_uint64_offset_is_the_int64_the_lowering_casts_it_to(r):
    # finding: the lowering casts a uint64 offset to int64 (same bits: 2**64 - 3 is -3 there,
    # and the window starts 3 before the array), the interpreter read it as the Python int
    # 2**64 - 3 (all padding)
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(8, np.float32)
    _load_at_u64(x, nt.partition(out, 8), r, 8, interpret=True)
    np.testing.assert_array_equal(out, _window(x, r, 8, -1.0))
    out = np.zeros(8, np.float32)
    offs = np.array([r % (1 << 64)], np.uint64)
    _load_at_from_u64_tensor(x, offs, nt.partition(out, 8), 8, interpret=True)
    np.testing.assert_array_equal(out, _window(x, r, 8, -1.0))
