"""FP8 products (``float8_e4m3fn``, ``float8_e5m2``) in typing and the interpreter: the
dtype table's rows and refusals (at the user's line, naming the op and the argument), the
interpreter's values against NumPy's float64 product on both formats' edge values, and the
host-side facts FP8 tensor maps are built from."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import FLOAT8_E4M3FN_NP, FLOAT8_E5M2_NP
from numba_tile.errors import TileTypingError
from numba_tile.runtime import tensormap

FP8 = [FLOAT8_E4M3FN_NP, FLOAT8_E5M2_NP]


@nt.jit
def product(a, b, c: nt.Partition[("M", "N")], M: nt.Constant, N: nt.Constant, K: nt.Constant,
            ACC: nt.Constant, OP: nt.Constant):
    x = nt.load(a, (0, 0), (M, K), padding=0)
    y = nt.load(b, (0, 0), (K, N), padding=0)
    if OP == 0:
        r = nt.mma(x, y, nt.zeros((M, N), ACC))  # MARK fp8
    elif OP == 1:
        r = nt.matmul(x, y)  # MARK fp8
    else:
        r = x @ y  # MARK fp8
    nt.store(c, r)


MARK = next(i for i, s in enumerate(open(__file__), 1) if "# MARK fp8" in s)


def _values(rng, dt, shape):
    """Finite values of the format: small integers, halves, and the format's extremes
    (largest normal, smallest normal and subnormal) with both signs."""
    import ml_dtypes
    info = ml_dtypes.finfo(dt)
    pool = np.array([0.0, 1.0, -1.0, 0.5, -2.0, 3.0, float(info.max), -float(info.max),
                     float(info.tiny), -float(info.tiny), float(info.smallest_subnormal)])
    return rng.choice(pool, shape).astype(dt)


@pytest.mark.parametrize("op", [0, 1, 2])
@pytest.mark.parametrize("dt", FP8, ids=lambda d: d.name)
def test_interpreter_values_against_float64(dt, op):
    rng = np.random.default_rng()
    m, n, k = 32, 64, 64
    a = _values(rng, dt, (m, k))
    b = _values(rng, dt, (k, n))
    c = np.zeros((m, n), np.float32)
    product(a, b, nt.partition(c, (m, n)), m, n, k, "float32", op, interpret=True).sync()
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    # products of FP8 values are exact in float32; the float32 sum may round
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert (np.abs(c - want) <= 2.0 ** -20 * scale + 1e-30).all()


@pytest.mark.parametrize("args, pattern", [
    (dict(adt=FLOAT8_E4M3FN_NP, bdt=FLOAT8_E5M2_NP),
     r'"b" of mma\(\): expected a tile of a\'s dtype float8_e4m3fn .*got float8_e5m2'),
    (dict(adt=FLOAT8_E4M3FN_NP, bdt=FLOAT8_E4M3FN_NP, acc="float16"),
     r'"acc" of mma\(\): expected an accumulator of float32 for float8_e4m3fn inputs, got '
     r'float16'),
    (dict(adt=FLOAT8_E5M2_NP, bdt=FLOAT8_E5M2_NP, k=16),
     r'"a" of mma\(\): expected K of at least 32, got K = 16'),
    (dict(adt=FLOAT8_E4M3FN_NP, bdt=np.int8, acc="int32"),
     r'"b" of mma\(\): expected a tile of a\'s dtype float8_e4m3fn'),
])
def test_refused_with_a_message_at_the_line(args, pattern):
    rng = np.random.default_rng()
    m, n, k = 16, 16, args.get("k", 32)
    a = _values(rng, args["adt"], (m, k))
    b = rng.integers(-2, 3, (k, n)).astype(np.float32).astype(args["bdt"])
    c = np.zeros((m, n), np.float32)
    with pytest.raises(TileTypingError, match=pattern) as info:
        product(a, b, nt.partition(c, (m, n)), m, n, k, args.get("acc", "float32"), 0,
                interpret=True).sync()
    assert info.value.lineno is not None and info.value.lineno >= MARK


@pytest.mark.parametrize("dt", FP8, ids=lambda d: d.name)
def test_sm80_refuses_fp8_products_before_any_gpu_work(dt):
    """FP8 mma needs sm_89 (mma.sync .e4m3/.e5m2) or sm_90a (wgmma): a kernel compiled for
    sm_80 is refused at compile time, naming the conversion the target lacks."""
    rng = np.random.default_rng()
    a = _values(rng, dt, (64, 64))
    c = np.zeros((64, 64), np.float32)
    with pytest.raises(TileTypingError, match=r"needs sm_89 or later"):
        product.ptx(a, a, nt.partition(c, (64, 64)), 64, 64, 64, "float32", 0, cc=(8, 0))


@pytest.mark.parametrize("cc", [(8, 0), (8, 6)])
def test_sm80_message_names_the_product(cc):
    @nt.jit
    def unpadded(a, c: nt.Partition[("M", "N")], M: nt.Constant, N: nt.Constant):
        x = nt.load(a, (0, 0), (M, N))
        nt.store(c, nt.mma(x, x, nt.zeros((M, N), nt.float32)))
    a = np.zeros((64, 64), FLOAT8_E4M3FN_NP)
    c = np.zeros((64, 64), np.float32)
    with pytest.raises(TileTypingError, match=r"mma\(\): a product of float8_e4m3fn tiles "
                       r"needs sm_89 or later"):
        unpadded.ptx(a, nt.partition(c, (64, 64)), 64, 64, cc=cc)


@pytest.mark.parametrize("dt", FP8, ids=lambda d: d.name)
def test_sm89_products_are_mma_sync(dt):
    rng = np.random.default_rng()
    a = _values(rng, dt, (64, 64))
    c = np.zeros((64, 64), np.float32)
    ptx = product.ptx(a, a, nt.partition(c, (64, 64)), 64, 64, 64, "float32", 0, cc=(8, 9))
    t = "e4m3" if dt == FLOAT8_E4M3FN_NP else "e5m2"
    assert f"mma.sync.aligned.m16n8k32.row.col.f32.{t}.{t}.f32" in ptx and "wgmma" not in ptx


def test_fp8_tensor_maps_take_128_byte_boxes():
    assert tensormap.ITEMSIZE["float8_e4m3fn"] == tensormap.ITEMSIZE["float8_e5m2"] == 1
    assert tensormap.box_cols("float8_e4m3fn") == 128 and tensormap.box_cols("bfloat16") == 64
    with pytest.raises(nt.errors.TileArgumentError, match=r"argument 'bt'.*16-byte"):
        # a row of 40 FP8 elements is 40 bytes: not a multiple of 16
        tensormap.check_encodable("k", "bt", (8, 40), (40, 1), 1, 0x10000)
    tensormap.check_encodable("k", "bt", (8, 48), (48, 1), 1, 0x10000)
