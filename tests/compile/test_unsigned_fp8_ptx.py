"""PTX of the unsigned integer, int16 and FP8 dtypes (libNVVM, no GPU): the unsigned forms
of division, shifts, compares and extensions; FP8 conversions through ``cvt.rn.satfinite``
and ``cvt.rn.f16x2`` on sm_90 and a compile-time refusal on sm_80; FP8 bytes moved by
vector accesses on both targets."""

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import dtypes
from numba_tile.errors import TileTypingError

CCS = [(8, 0), (9, 0)]
FP8 = [dtypes.FLOAT8_E4M3FN_NP, dtypes.FLOAT8_E5M2_NP]


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]


def ops(ptx: str) -> set:
    return set(re.findall(r"\b(?:div|rem|shr|max|min|setp\.\w+|cvt(?:\.\w+)+)\.\w+", body(ptx)))


@nt.jit
def div_shift(x, y, q: nt.Partition["B"], r: nt.Partition["B"], s: nt.Partition["B"],
              m: nt.Partition["B"], B: nt.Constant):
    a = nt.load_like(x, q)
    b = nt.load_like(y, q)
    nt.store(q, a // b)
    nt.store(r, a % b)
    nt.store(s, a >> b)
    nt.store(m, nt.maximum(a, b))


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("dt, bits", [(np.uint32, 32), (np.uint64, 64)], ids=["uint32", "uint64"])
def test_unsigned_division_shift_and_max(cc, dt, bits):
    x = np.zeros(4096, dt)
    parts = [nt.partition(x.copy(), 1024) for _ in range(4)]
    ptx = div_shift.ptx(x, x.copy(), *parts, 1024, cc=cc)
    found = ops(ptx)
    for want in (f"div.u{bits}", f"rem.u{bits}", f"shr.u{bits}", f"max.u{bits}"):
        assert want in found, (want, sorted(found))
    # (max.s64 and friends also clamp the 64-bit index arithmetic: only these are the data's)
    for signed in (f"div.s{bits}", f"rem.s{bits}", f"shr.s{bits}"):
        assert signed not in found, (signed, sorted(found))


def test_int16_keeps_signed_division_and_arithmetic_shift():
    x = np.zeros(4096, np.int16)
    parts = [nt.partition(x.copy(), 1024) for _ in range(4)]
    found = ops(div_shift.ptx(x, x.copy(), *parts, 1024, cc=(9, 0)))
    assert {"div.s16", "rem.s16", "shr.s16"} <= found, sorted(found)
    assert "max.s16" in found or "setp.gt.s16" in found, sorted(found)
    assert not {"div.u16", "rem.u16", "shr.u16", "setp.gt.u16"} & found, sorted(found)


@nt.jit
def compare(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) < nt.load_like(y, z))


@pytest.mark.parametrize("dt, bits", [(np.uint32, 32), (np.uint64, 64), (np.int16, 16)],
                         ids=["uint32", "uint64", "int16"])
def test_compares_by_signedness(dt, bits):
    x = np.zeros(4096, dt)
    found = ops(compare.ptx(x, x.copy(), nt.partition(np.zeros(4096, np.bool_), 1024), 1024))
    kind = "s" if dt == np.int16 else "u"
    assert any(f.startswith("setp.lt.") and f.endswith(f"{kind}{bits}") for f in found), sorted(found)
    assert not any(f.startswith("setp.lt.") and f.endswith(f"{'u' if kind == 's' else 's'}{bits}")
                   for f in found), sorted(found)


@nt.jit
def widen(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x, z), nt.int64))


def test_uint32_widens_by_zero_extension():
    x = np.zeros(4096, np.uint32)
    b = body(widen.ptx(x, nt.partition(np.zeros(4096, np.int64), 1024), 1024))
    assert "cvt.u64.u32" in b and "cvt.s64.s32" not in b, sorted(set(re.findall(r"cvt\.\w+\.\w+", b)))


@nt.jit
def to_float(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x, z), nt.float32))


def test_unsigned_to_float_is_uitofp():
    x = np.zeros(4096, np.uint32)
    b = body(to_float.ptx(x, nt.partition(np.zeros(4096, np.float32), 1024), 1024))
    assert re.search(r"cvt\.rn\.f32\.u32", b) and not re.search(r"cvt\.rn\.f32\.s32", b)


@nt.jit
def f32_to_fp8(x, z: nt.Partition["B"], B: nt.Constant, DT: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x, z), DT))


@nt.jit
def fp8_to_f32(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x, z), nt.float32))


@pytest.mark.parametrize("dt", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_conversions_use_the_paired_cvt_on_sm90(dt):
    fmt = dtypes.from_any(dt).ptx
    x = np.zeros(4096, np.float32)
    b = body(f32_to_fp8.ptx(x, nt.partition(np.zeros(4096, dt), 1024), 1024, np.dtype(dt).name,
                            cc=(9, 0)))
    narrow = re.findall(rf"cvt\.rn\.satfinite\.{fmt}\.f32", b)
    # 8 elements per thread, two per instruction
    assert len(narrow) == 4, b.count("cvt.rn.satfinite")
    b = body(fp8_to_f32.ptx(np.zeros(4096, dt), nt.partition(x.copy(), 1024), 1024, cc=(9, 0)))
    assert len(re.findall(rf"cvt\.rn\.f16x2\.{fmt}", b)) == 4
    assert "cvt.f32.f16" in b


@pytest.mark.parametrize("dt", FP8, ids=lambda d: np.dtype(d).name)
def test_fp8_conversion_on_sm80_is_refused_naming_the_target(dt):
    with pytest.raises(TileTypingError, match=r"astype\(\).*needs sm_89 or later.*sm_80"):
        f32_to_fp8.ptx(np.zeros(4096, np.float32), nt.partition(np.zeros(4096, dt), 1024),
                       1024, np.dtype(dt).name, cc=(8, 0))
    with pytest.raises(TileTypingError, match=r"sm_89 or later.*compiled for sm_80"):
        fp8_to_f32.ptx(np.zeros(4096, dt), nt.partition(np.zeros(4096, np.float32), 1024),
                       1024, cc=(8, 0))


@nt.jit
def copy(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("dt", FP8 + [np.uint8, np.uint16], ids=lambda d: np.dtype(d).name)
def test_byte_and_short_elements_move_as_words(cc, dt):
    """FP8 (and uint8/uint16) copies on every target: 32-bit word vector loads and stores,
    no per-byte access, no conversion."""
    x = np.zeros(1 << 14, dt)
    b = body(copy.ptx(x, nt.partition(x.copy(), 2048), 2048, cc=cc))
    loads = re.findall(r"ld\.global\.nc(\.v\d)?\.(\w+)", b)
    stores = re.findall(r"st\.global(\.v\d)?\.(\w+)", b)
    assert loads and stores
    assert all(v and t in ("u32", "b32") for v, t in loads), loads
    assert all(v and t in ("u32", "b32") for v, t in stores), stores
    assert "cvt.rn" not in b and ".local" not in b
