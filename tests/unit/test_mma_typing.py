"""mma / matmul / @ refuse bad operands at compile time, naming the op, the argument, what
was expected and what was given, at the user's line (interpreter launches type and check
the kernel exactly as a GPU launch does)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.errors import TileTypingError


@nt.jit
def product(a, b, c: nt.Partition[("M", "N")], M: nt.Constant, N: nt.Constant, K: nt.Constant,
            K2: nt.Constant, ACC: nt.Constant, PREC: nt.Constant, OP: nt.Constant):
    x = nt.load(a, (0, 0), (M, K), padding=0)
    y = nt.load(b, (0, 0), (K2, N), padding=0)
    if OP == 0:
        r = nt.mma(x, y, nt.zeros((M, N), ACC), precision=PREC)  # MARK product
    elif OP == 1:
        r = nt.matmul(x, y, out_dtype=ACC, precision=PREC)  # MARK product
    else:
        r = x @ y  # MARK product
    nt.store(c, r)


def run(adt, bdt, m, n, k, k2=None, acc="float32", prec=None, op=0, cdt=np.float64):
    rng = np.random.default_rng()
    a = rng.integers(-3, 3, (m, k)).astype(adt)
    b = rng.integers(-3, 3, (k2 or k, n)).astype(bdt)
    c = np.zeros((m, n), cdt)
    product(a, b, nt.partition(c, (m, n)), m, n, k, k2 or k, acc, prec, op, interpret=True).sync()
    return c


MARK = next(i for i, s in enumerate(open(__file__), 1) if "# MARK product" in s)


@pytest.mark.parametrize("args, pattern", [
    (dict(adt=np.float16, bdt=np.float32, m=16, n=16, k=16),
     r'"b" of mma\(\): expected a tile of a\'s dtype float16 .*got float32'),
    (dict(adt=np.float16, bdt=np.float16, m=16, n=16, k=16, k2=32),
     r'"b" of mma\(\): expected a \(16, N\) tile for a of shape \(16, 16\), got a tile of shape \(32, 16\)'),
    (dict(adt=np.float16, bdt=np.float16, m=8, n=16, k=16),
     r'"a" of mma\(\): expected M of at least 16, got M = 8'),
    (dict(adt=np.int8, bdt=np.int8, m=16, n=16, k=16, acc="int32"),
     r'expected K of at least 32, got K = 16'),
    (dict(adt=np.float16, bdt=np.float16, m=16, n=16, k=16, acc="int32"),
     r'"acc" of mma\(\): expected an accumulator of float16 or float32 for float16 inputs, got int32'),
    (dict(adt=BFLOAT16_NP, bdt=BFLOAT16_NP, m=16, n=16, k=16, prec="tf32"),
     r'"precision" of mma\(\): expected "tf32" only with float32 inputs, got "tf32" with bfloat16'),
    (dict(adt=np.float32, bdt=np.float32, m=16, n=16, k=16, prec="fast"),
     r'"precision" of mma\(\): expected None, "ieee" or "tf32".*got \'fast\''),
    (dict(adt=np.int32, bdt=np.int32, m=16, n=16, k=16, acc="int32"),
     r'"a" of mma\(\): expected float16, bfloat16, float8_e4m3fn, float8_e5m2, int8, float32 or float64 operands, got int32'),
    (dict(adt=np.int8, bdt=np.int8, m=16, n=16, k=32, acc="float32", op=1),
     r'"acc" of matmul\(\): expected an accumulator of int32 for int8 inputs, got float32'),
    (dict(adt=np.float16, bdt=np.float16, m=16, n=8, k=16, op=2),
     r'"b" of @\(\): expected N of at least 16, got N = 8'),
])
def test_refused_with_a_message_at_the_line(args, pattern):
    with pytest.raises(TileTypingError, match=pattern) as info:
        run(**args)
    assert info.value.lineno is not None and info.value.lineno >= MARK


def test_three_d_tiles_are_refused():
    @nt.jit
    def batched(a, c: nt.Partition[(2, 16, 16)]):
        x = nt.load(a, (0, 0, 0), (2, 16, 16), padding=0)
        nt.store(c, nt.astype(nt.matmul(x, x), nt.float16))

    a = np.zeros((2, 16, 16), np.float16)
    with pytest.raises(TileTypingError, match=r'a 2-D tile \(batched products: loop over the '
                                              r'batch\), got a tile of shape \(2, 16, 16\)'):
        batched(a, nt.partition(a.copy(), (2, 16, 16)), interpret=True)


def test_accumulator_register_budget():
    with pytest.raises(TileTypingError, match=r"over 128 threads puts 512 elements in each thread's registers"):
        run(np.float16, np.float16, 256, 256, 16)


def test_accepted_pairs_compute_in_their_accumulator_dtype():
    got = run(np.float16, np.float16, 16, 16, 16, acc="float16", op=1, cdt=np.float16)
    assert got.dtype == np.float16
    got = run(np.int8, np.int8, 16, 16, 32, acc="int32", op=1, cdt=np.int32)
    assert got.dtype == np.int32
