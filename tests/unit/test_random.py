"""Counter-based random numbers (rand, randn, randint, randint4x) in the interpreter, against an
independent pure-Python Philox4x32-10 written here from the Random123 description (Salmon et al.
2011) and its known-answer vectors, with Triton 3.6's counters and conversions
(``triton/language/random.py``): counter ``(offset, 0, 0, 0)`` for int32 offsets, ``(low 32
bits, high 32 bits, 0, 0)`` for int64 ones, 32-bit words for both.

The reference uses Python integers only (no NumPy wrap-around) and rounds integers to float32
exactly, so it shares no code with ``numba_tile/interpreter/random.py``. ``tests/gpu`` runs the
same kernels on the GPU against this reference."""

import math
import struct

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError

# ----------------------------------------------------------------------- the reference

#: Random123's Philox4x32 constants: round multipliers M0, M1 and Weyl key increments W0, W1
REF_M0, REF_M1 = 0xD2511F53, 0xCD9E8D57
REF_W0, REF_W1 = 0x9E3779B9, 0xBB67AE85

#: Random123 ``tests/kat_vectors``, the ``philox4x32 10`` lines: (counter, key, expected output)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]
KAT_ZERO = KAT[0][2]                     # counter (0, 0, 0, 0), key (0, 0): offset 0, seed 0


def ref_philox(counter, key, rounds=10):
    """Philox4x32-``rounds`` (Random123's ``philox4x32_R``: a round, then the key is bumped
    before each following round), on Python ints."""
    mask = (1 << 32) - 1
    x0, x1, x2, x3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + REF_W0) & mask, (k1 + REF_W1) & mask
        p0, p1 = REF_M0 * x0, REF_M1 * x2
        x0, x1, x2, x3 = (p1 >> 32) ^ x1 ^ k0, p1 & mask, (p0 >> 32) ^ x3 ^ k1, p0 & mask
    return x0, x1, x2, x3


def ref_counter(offset: int, bits: int):
    """Triton 3.6's ``randint4x`` counter for an offset of ``bits`` (32 or 64):
    ``(offset.to(uint32), hi, 0, 0)`` with ``hi = (offset >> 32).to(uint32)`` for int64
    offsets (Python's ``>>`` is the arithmetic shift) and 0 for int32 ones."""
    hi = (offset >> 32) % 2**32 if bits == 64 else 0
    return offset % 2**32, hi, 0, 0


def ref_words(seed, offset, bits):
    """Triton's ``randint4x(seed, offset)`` for offsets of ``bits``: Philox4x32-10 of
    ``ref_counter``, key the 64-bit seed split in halves ``(low, high)``."""
    s = seed % 2**64
    return ref_philox(ref_counter(offset, bits), (s % 2**32, s >> 32))


def to_float32_exact(m: int) -> float:
    """A non-negative integer rounded to float32 (nearest, ties to even) by integer arithmetic."""
    shift = max(m.bit_length() - 24, 0)
    q, r = divmod(m, 1 << shift)
    half = (1 << shift) >> 1
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    return float(q << shift)


def f32(x: float) -> float:
    """``x`` rounded to float32 (one rounding: struct packs the nearest float32)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


#: Triton's 32-bit uint_to_uniform_float scale as a float32 value, written as its bits
REF_SCALE = struct.unpack("<f", bytes.fromhex("ffffff2f"))[0]      # 0x2fffffff


def ref_uniform(word: int) -> float:
    """Triton's ``uint_to_uniform_float`` of a 32-bit word: signed view, ``-x - 1`` if
    negative, float32 of that times the scale, rounded to float32 (the product of two float32
    is exact in float64)."""
    x = word - (1 << 32) if word >> 31 else word
    m = -x - 1 if x < 0 else x
    return f32(to_float32_exact(m) * REF_SCALE)


def ref_normal(w0: int, w1: int) -> float:
    """Triton's ``pair_uniform_to_normal``, first output, in float32 (log and cos correctly
    rounded to float32)."""
    u1 = max(f32(1.0e-7), ref_uniform(w0))
    th = f32(f32(6.283185307179586) * ref_uniform(w1))
    t = f32(-2.0 * f32(math.log(u1)))
    return f32(f32(math.sqrt(t)) * f32(math.cos(th)))


def reference(op, seed, offsets):
    """The reference result of ``op`` for an array of int32 or int64 offsets (its dtype picks
    the counter, ``ref_counter``): randint/randint4x as int32 (the uint32 bits), rand/randn
    as float32."""
    offsets = np.asarray(offsets)
    assert offsets.dtype in (np.int32, np.int64), offsets.dtype
    bits = offsets.dtype.itemsize * 8
    words = [ref_words(seed, int(o), bits) for o in offsets.ravel()]
    if op == "randint":
        return np.array([w[0] for w in words], np.uint32).view(np.int32)
    if op == "randint4x":
        return [np.array([w[i] for w in words], np.uint32).view(np.int32) for i in range(4)]
    if op == "rand":
        return np.array([ref_uniform(w[0]) for w in words], np.float32)
    if op == "randn":
        return np.array([ref_normal(w[0], w[1]) for w in words], np.float32)
    raise ValueError(op)


def ulp_distance(a, b) -> np.ndarray:
    """Distance in float32 units in the last place (both arrays finite float32)."""
    def ordered(v):
        i = np.asarray(v, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


# ---------------------------------------------------------------------------- kernels


@nt.jit
def from_offsets(o, r: nt.Partition["B"], u: nt.Partition["B"], g: nt.Partition["B"],
                 w1: nt.Partition["B"], w2: nt.Partition["B"], w3: nt.Partition["B"], seed,
                 B: nt.Constant):
    """Every op on offsets loaded from ``o`` (masked at the ragged end)."""
    offs = nt.load_like(o, r)
    nt.store(r, nt.randint(seed, offs))
    nt.store(u, nt.rand(seed, offs))
    nt.store(g, nt.randn(seed, offs))
    a, b, c, d = nt.randint4x(seed, offs)
    nt.store(w1, b)
    nt.store(w2, c)
    nt.store(w3, d ^ a)


@nt.jit
def from_arange(u: nt.Partition["B"], g: nt.Partition["B"], seed, base, B: nt.Constant):
    """rand and randn of int64 offsets ``base + bid * B + arange(B)`` (the dtype written out:
    see docs/random.md, "Offsets")."""
    offs = nt.astype(base + nt.bid(0) * B + nt.arange(B), nt.int64)
    nt.store(u, nt.rand(seed, offs))
    nt.store(g, nt.randn(seed, offs))


@nt.jit
def constant_seed(r: nt.Partition["B"], B: nt.Constant, S: nt.Constant):
    nt.store(r, nt.randint(S, nt.astype(nt.bid(0) * B + nt.arange(B), nt.int32)))


def run_from_offsets(offsets, seed, block=256, interpret=True):
    """randint, rand, randn and randint4x's words 1, 2 and 3 ^ 0 (int32 words for either
    offsets dtype)."""
    n = offsets.size
    outs = [np.zeros(n, np.int32), np.zeros(n, np.float32), np.zeros(n, np.float32),
            np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32)]
    from_offsets(offsets, *(nt.partition(a, block) for a in outs), seed, block,
                 interpret=interpret).sync()
    return outs


def random_seeds(rng):
    """Fresh seeds: int32 (negative included), between 2**32 and 2**63, negative int64."""
    return [int(rng.integers(0, 2**31)), -int(rng.integers(1, 2**31)),
            int(rng.integers(2**32, 2**63)), -int(rng.integers(2**32, 2**62)), 0, -1]


def ragged_offsets(rng, dt, n):
    """Offsets near the edges of ``dt`` and in between, ragged length ``n``."""
    info = np.iinfo(dt)
    parts = [np.arange(n // 4), 2**31 - 1 - np.arange(n // 4),          # below 2**31
             -2**31 + np.arange(n // 8),
             rng.integers(info.min, info.max, n - n // 4 - n // 4 - n // 8, endpoint=True)]
    if dt == np.int64:
        parts[-1][:8] = [2**31, 2**32, 2**32 + 1, 2**63 - 1, -2**63, -1, 2**40, 2**31 + 5]
    return np.concatenate(parts).astype(dt)


# ------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_reference_and_interpreter_philox_give_random123s_known_answers(counter, key, expected):
    from numba_tile.interpreter.random import philox
    assert ref_philox(counter, key) == expected
    got = philox(*(np.array([c], np.uint32) for c in counter), *key)
    assert tuple(int(w[0]) for w in got) == expected


def test_known_answer_through_the_ops():
    """Offset 0 with seed 0 is counter (0, 0, 0, 0) with key (0, 0), Random123's first
    Philox4x32-10 vector, for int32 and int64 offsets alike; the int64 offset 2**32 is
    counter (0, 1, 0, 0) (Triton 3.6: the offset's high word is the second counter word)."""
    for dt in (np.int32, np.int64):
        outs = run_from_offsets(np.zeros(3, dt), 0)
        assert all(o.dtype == np.int32 for i, o in enumerate(outs) if i not in (1, 2))
        got = (outs[0][0], outs[3][0], outs[4][0], outs[5][0] ^ outs[0][0])
        assert tuple(int(np.array(v).view(np.uint32)) for v in got) == KAT_ZERO
    outs = run_from_offsets(np.array([2**32, -2**32, 2**32 - 1], np.int64), 0)
    for i, counter in enumerate([(0, 1, 0, 0), (0, 0xFFFFFFFF, 0, 0), (0xFFFFFFFF, 0, 0, 0)]):
        got = (outs[0][i], outs[3][i], outs[4][i], outs[5][i] ^ outs[0][i])
        assert tuple(int(np.array(v).view(np.uint32)) for v in got) == ref_philox(counter, (0, 0))


@pytest.mark.parametrize("dt", [np.int32, np.int64], ids=["int32", "int64"])
def test_ops_match_the_reference_for_fresh_seeds_and_ragged_offsets(dt):
    rng = np.random.default_rng()
    for seed in random_seeds(rng)[:4]:
        n = 200 + int(rng.integers(1, 120))                        # ragged: the last tile masked
        offs = ragged_offsets(rng, dt, n)
        r, u, g, w1, w2, w3 = run_from_offsets(offs, seed, block=64)
        np.testing.assert_array_equal(r, reference("randint", seed, offs), err_msg=f"{seed}")
        np.testing.assert_array_equal(u, reference("rand", seed, offs), err_msg=f"{seed}")
        words = reference("randint4x", seed, offs)
        np.testing.assert_array_equal(words[0], r)
        np.testing.assert_array_equal(w1, words[1])
        np.testing.assert_array_equal(w2, words[2])
        np.testing.assert_array_equal(w3, words[3] ^ words[0])
        assert ulp_distance(g, reference("randn", seed, offs)).max() <= 1, seed


def test_int64_offsets_below_2_31_give_the_int32_numbers_and_the_high_word_counts():
    """Triton 3.6: an int64 offset in [0, 2**31) has high word 0, so it is the int32 offset's
    counter and gives the same numbers; offsets that differ only in their high 32 bits
    (o + k * 2**32) give different numbers; a negative int64 offset has high word 0xffffffff
    (the arithmetic shift), so it differs from the same negative int32 offset."""
    rng = np.random.default_rng(20261201)                # fixed: no chance of a chance collision
    low = np.concatenate([[0, 1, 2, 2**31 - 2, 2**31 - 1],
                          rng.integers(0, 2**31, 250)]).astype(np.int64)
    for seed in (0, -1, 12345, 2**40 + 17, -(2**50) - 3):
        a = run_from_offsets(low.astype(np.int32), seed, block=64)
        b = run_from_offsets(low, seed, block=64)
        for x, y in zip(a, b):                           # randn too: the same words, same math
            np.testing.assert_array_equal(x, y, err_msg=str(seed))
        for k in (1, 2, -1, 2**31 - 1, -2**31):          # high word 1, 2, ffffffff, 7fffffff, ...
            high = low + np.int64(k) * 2**32
            c = run_from_offsets(high, seed, block=64)
            assert (c[0] != b[0]).all() and (c[1] != b[1]).all(), (seed, k)   # randint, rand
            assert (c[3] != b[3]).all() and (c[5] != b[5]).all(), (seed, k)   # other words
            np.testing.assert_array_equal(c[0], reference("randint", seed, high))
        neg = -1 - low[:50]
        n32 = run_from_offsets(neg.astype(np.int32), seed, block=64)[0]
        n64 = run_from_offsets(neg, seed, block=64)[0]
        assert (n32 != n64).all(), seed


def test_int32_seeds_sign_extend_and_constant_seeds_agree():
    """An int32 seed is sign-extended to 64 bits (key high word 0xffffffff for -1), as Triton's
    ``seed.to(tl.uint64)``; a Constant seed gives the runtime seed's numbers."""
    offs = np.arange(100, dtype=np.int32)
    r = run_from_offsets(offs, -1)[0]
    expected = [ref_philox((o, 0, 0, 0), (0xFFFFFFFF, 0xFFFFFFFF))[0] for o in range(100)]
    np.testing.assert_array_equal(r.view(np.uint32), expected)
    for seed in (-1, 2**33 + 7, 12345):
        out = np.zeros(100, np.int32)
        constant_seed(nt.partition(out, 64), 64, seed, interpret=True).sync()
        np.testing.assert_array_equal(out, run_from_offsets(offs, seed)[0])


def test_rand_is_in_0_1_and_randn_is_standard_normal():
    rng = np.random.default_rng()
    seed, base = int(rng.integers(2**32, 2**62)), int(rng.integers(0, 2**40))
    n = 2**16
    u = np.zeros(n, np.float32)
    g = np.zeros(n, np.float32)
    from_arange(nt.partition(u, 1024), nt.partition(g, 1024), seed, base, 1024,
                interpret=True).sync()
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - math.sqrt(1 / 12)) < 0.01
    assert np.isfinite(g).all() and np.abs(g).max() < 6       # sqrt(-2 log 1e-7) = 5.68
    assert abs(g.mean()) < 0.02 and abs(g.std() - 1) < 0.02   # 5 standard errors
    assert abs(np.mean(g**3)) < 0.06 and abs(np.mean(g**4) - 3) < 0.15
    np.testing.assert_array_equal(u[:64], reference("rand", seed, base + np.arange(64)))


def test_uniform_conversion_at_the_extremes():
    """Triton's uint_to_uniform_float of 32-bit words (for int32 and int64 offsets alike): the
    largest words give 1 - 2**-24, never 1.0; 0 and the all-ones word give 0; the scale is
    Triton's literal as float32: 2**-31 - 2**-55."""
    from numba_tile.interpreter.random import uniform
    w32 = np.array([0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**31 - 64, 2**31 - 65], np.uint32)
    np.testing.assert_array_equal(uniform(w32), [ref_uniform(int(w)) for w in w32])
    assert uniform(w32)[2] == uniform(w32)[3] == np.float32(1 - 2**-24)
    assert uniform(w32)[0] == uniform(w32)[4] == 0
    assert REF_SCALE == np.float32(4.6566127342e-10) == 2**-31 - 2**-55


def test_normal_guards_log_of_zero():
    """u1 = 0 (words 0 and all-ones) is raised to 1e-7, as Triton's maximum(1.0e-7, u1): the
    result is finite, sqrt(-2 log 1e-7) * cos(2 pi u2) in float32."""
    from numba_tile.interpreter.random import normal
    w0 = np.array([0, 2**32 - 1, 0, 1, 2**31 - 1], np.uint32)
    w1 = np.array([0, 0, 2**30, 2**31, 2**29], np.uint32)
    got = normal(w0, w1)
    assert np.isfinite(got).all() and abs(got[0] - 5.6777) < 1e-3
    want = [ref_normal(int(a), int(b)) for a, b in zip(w0, w1)]
    assert ulp_distance(got, want).max() <= 1


@nt.jit
def masked_rand(o, z: nt.Partition["B"], seed, B: nt.Constant):
    """Offsets loaded without padding are masked past the end of ``o``: so is the result."""
    nt.store(z, nt.filled(nt.rand(seed, nt.load_like(o, z)), -1.0))


def test_the_result_is_masked_where_the_offsets_are():
    offs = (np.arange(100) + 2**31 - 200).astype(np.int32)
    z = np.zeros(128, np.float32)
    masked_rand(offs, nt.partition(z, 64), 3, 64, interpret=True).sync()
    np.testing.assert_array_equal(z[:100], reference("rand", 3, offs))
    assert (z[100:] == -1).all()


def test_results_do_not_depend_on_the_tile_shape():
    """Counter-based: the number at an offset is the same whatever block computed it."""
    offs = np.arange(-300, 700, dtype=np.int64) * 7919
    a = run_from_offsets(offs, 99, block=64)
    b = run_from_offsets(offs, 99, block=512)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@nt.jit
def rand_2d(z: nt.Partition["M", "N"], seed, M: nt.Constant, N: nt.Constant):
    rows = nt.expand_dims(nt.bid(0) * M + nt.arange(M), 1)
    cols = nt.expand_dims(nt.arange(N), 0)
    nt.store(z, nt.rand(seed, nt.astype(rows * 1000 + cols, nt.int64)))


def test_2d_offsets_keep_their_shape():
    z = np.zeros((40, 16), np.float32)
    rand_2d(nt.partition(z, (16, 16)), 5, 16, 16, interpret=True).sync()
    offs = np.arange(40)[:, None] * 1000 + np.arange(16)[None, :]
    np.testing.assert_array_equal(z.ravel(), reference("rand", 5, offs.astype(np.int64)))


# --------------------------------------------------- the lowering's IR, run on the CPU


def _cpu_philox(bits):
    """The lowering's IR (``lowering/random.py``: round keys, counter, rounds, conversions) in
    a module of its own, JIT-compiled for this CPU by llvmlite: ``f(seed, offset, words*,
    floats*)`` for an offset of ``bits`` (32 or 64) writes the four 32-bit words, rand and
    randn. libdevice's functions are stood in for by their definitions (``__nv_umulhi``: the
    high half of the widened product) or by libm's (``__nv_logf`` -> ``logf`` ...)."""
    import ctypes
    import llvmlite.binding as llvm
    from llvmlite import ir
    from numba.cuda import types
    from numba_tile.lowering import random as lowering

    class Context:                      # the seed arrives as an int64 here: nothing to cast
        def cast(self, builder, value, fromty, toty):
            assert fromty == toty == types.int64
            return value

    mod = ir.Module(name=f"philox_offset{bits}_cpu")
    i32, i64 = ir.IntType(32), ir.IntType(64)
    f = ir.Function(mod, ir.FunctionType(i32, [i32, i32]), "__nv_umulhi")
    b = ir.IRBuilder(f.append_basic_block())
    p = b.mul(b.zext(f.args[0], i64), b.zext(f.args[1], i64))
    b.ret(b.trunc(b.lshr(p, ir.Constant(i64, 32)), i32))
    f32 = ir.FloatType()
    for base in ("log", "cos", "sqrt"):
        libm = ir.Function(mod, ir.FunctionType(f32, [f32]), base + "f")
        f = ir.Function(mod, ir.FunctionType(f32, [f32]), f"__nv_{base}f")
        b = ir.IRBuilder(f.append_basic_block())
        b.ret(b.call(libm, [f.args[0]]))
    ot = ir.IntType(bits)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [i64, ot, i32.as_pointer(),
                                                          f32.as_pointer()]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    keys = lowering.round_keys(Context(), b, types.int64, fn.args[0])
    words = lowering.philox(b, *lowering.counter(b, fn.args[1]), keys)
    for i, w in enumerate(words):
        b.store(w, b.gep(fn.args[2], [ir.Constant(i32, i)]))
    b.store(lowering.uniform(b, words[0]), b.gep(fn.args[3], [ir.Constant(i32, 0)]))
    b.store(lowering.normal(b, words[0], words[1]), b.gep(fn.args[3], [ir.Constant(i32, 1)]))
    b.ret_void()
    normal = ir.Function(mod, ir.FunctionType(f32, [i32, i32]), "normal")   # randn of 2 words
    b = ir.IRBuilder(normal.append_basic_block())
    b.ret(lowering.normal(b, *normal.args))
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(str(mod))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple()
                                        .create_target_machine())
    engine.finalize_object()
    W, O = ctypes.c_uint32, (ctypes.c_uint32 if bits == 32 else ctypes.c_uint64)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_int64, O, ctypes.POINTER(W),
                             ctypes.POINTER(ctypes.c_float))
    fn = proto(engine.get_function_address("f"))
    normal = ctypes.CFUNCTYPE(ctypes.c_float, W, W)(engine.get_function_address("normal"))

    def call(seed, offset):
        ws, fs = (W * 4)(), (ctypes.c_float * 2)()
        fn(seed, offset % 2**bits, ws, fs)
        return tuple(ws), fs[0], fs[1]

    call.normal = normal
    call.keep = engine                  # the machine code lives as long as the engine
    return call


@pytest.mark.parametrize("bits", [32, 64], ids=["int32", "int64"])
def test_the_lowerings_ir_gives_the_reference_on_the_cpu(bits):
    """What the GPU runs, minus libNVVM: the IR the lowering emits for int32 or int64 offsets,
    run on this CPU, gives the known answer, the reference's words and rand bit for bit, and
    randn within 2 ulp (libm's logf/cosf standing in for libdevice's)."""
    call = _cpu_philox(bits)
    assert call(0, 0)[0] == KAT_ZERO
    rng = np.random.default_rng()
    dt = np.int32 if bits == 32 else np.int64
    for seed in random_seeds(rng):
        offs = ragged_offsets(rng, dt, 40)
        for o in offs:
            words, u, g = call(seed, int(o))
            assert words == ref_words(seed, int(o), bits), (seed, o)
            assert u == ref_uniform(words[0]), (seed, o)
            assert ulp_distance(g, ref_normal(words[0], words[1])) <= 2, (seed, o)
    top = 2**32 - 1
    for w0, w1 in ((0, 0), (top, 2**30), (1, top), (2**31 - 1, 5)):
        g = call.normal(w0, w1)                  # u1 = 0 for w0 = 0 and all ones: the guard
        assert math.isfinite(g) and ulp_distance(g, ref_normal(w0, w1)) <= 2, (w0, w1)


def test_the_lowerings_int64_counter_is_the_offsets_two_halves():
    """The lowering's IR for an int64 offset: below 2**31 the int32 offset's words; the high
    32 bits are the second counter word (2**32 is counter (0, 1, 0, 0))."""
    c32, c64 = _cpu_philox(32), _cpu_philox(64)
    for seed in (0, -1, 2**45 + 9):
        for o in (0, 1, 77, 2**31 - 1):
            assert c64(seed, o) == c32(seed, o), (seed, o)
        s = seed % 2**64
        key = (s % 2**32, s >> 32)
        assert c64(seed, 2**32)[0] == ref_philox((0, 1, 0, 0), key)
        assert c64(seed, -1)[0] == ref_philox((2**32 - 1, 2**32 - 1, 0, 0), key)
        assert c64(seed, 2**63 - 1)[0] == ref_philox((2**32 - 1, 2**31 - 1, 0, 0), key)
        assert c64(seed, -2**63)[0] == ref_philox((0, 2**31, 0, 0), key)


# ------------------------------------------------------------------------- refusals


@nt.jit
def float_seed(z: nt.Partition["B"], s, B: nt.Constant):
    nt.store(z, nt.rand(s, nt.arange(B)))  # MARK float_seed


@nt.jit
def tile_seed(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.rand(nt.arange(B), nt.arange(B)))  # MARK tile_seed


@nt.jit
def float_offsets(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.randn(3, nt.load_like(x, z)))  # MARK float_offsets


@nt.jit
def scalar_offsets(z: nt.Partition["B"], s, B: nt.Constant):
    nt.store(z, nt.randint(s, s))  # MARK scalar_offsets


@nt.jit
def int8_offsets(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.randint4x(1, nt.astype(nt.arange(B), nt.int8))[0])  # MARK int8_offsets


@nt.jit
def bool_seed(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.rand(True, nt.arange(B)))  # MARK bool_seed


def mark_line(tag):
    with open(__file__) as f:
        for i, line in enumerate(f, start=1):
            if line.rstrip().endswith(f"# MARK {tag}"):
                return i
    raise AssertionError(tag)


def _z(z):
    return nt.partition(z, 64)


@pytest.mark.parametrize("kernel,args,tag,message", [
    (float_seed, lambda z: (_z(z), 2.5, 64), "float_seed",
     'Invalid argument "seed" of rand(): expected an integer scalar (int32 or int64: a runtime '
     'kernel parameter, a Constant or integer arithmetic on them), got float64'),
    (tile_seed, lambda z: (_z(z), 64), "tile_seed",
     'Invalid argument "seed" of rand(): expected an integer scalar'),
    (float_offsets, lambda z: (np.ones(64, np.float32), _z(z), 64), "float_offsets",
     'Invalid argument "offsets" of randn(): expected a tile of int32 or int64 (counters, e.g. '
     'bid(0) * BLOCK + arange(BLOCK)), got a tile of float32'),
    (scalar_offsets, lambda z: (_z(z), 7, 64), "scalar_offsets",
     'Invalid argument "offsets" of randint(): expected a tile of int32 or int64'),
    (int8_offsets, lambda z: (_z(z), 64), "int8_offsets",
     'Invalid argument "offsets" of randint4x(): expected a tile of int32 or int64 (counters, '
     'e.g. bid(0) * BLOCK + arange(BLOCK)), got a tile of int8'),
    (bool_seed, lambda z: (_z(z), 64), "bool_seed",
     'Invalid argument "seed" of rand(): expected an integer scalar'),
], ids=lambda v: v if isinstance(v, str) and " " not in v else None)
def test_bad_arguments_are_refused_at_the_users_line(kernel, args, tag, message):
    z = np.zeros(64, np.float32)
    with pytest.raises(TileTypingError) as info:
        kernel(*args(z), interpret=True)
    err = info.value
    assert message in str(err), str(err)
    assert err.filename == __file__ and err.lineno == mark_line(tag)
    assert not z.any()


def test_random_ops_are_safe_ops_without_effects():
    """They read and write no memory: no effects, not unchecked, so safe kernels (every kernel
    above is one) may call them."""
    from numba_tile._registry import OPS
    for name in ("rand", "randn", "randint", "randint4x"):
        d = OPS[name]
        assert getattr(nt, name) is d.stub and d.family == "random"
        assert d.effects.reads == () and d.effects.writes == () and not d.unchecked
        assert name in nt.__all__ and f":func:`{name}`" in nt.__doc__


def test_dropout_example_says_ok_and_its_reference_is_the_tests():
    from examples import dropout
    from tests.unit.test_examples import run_example, ROOT
    rng = np.random.default_rng()
    seed = int(rng.integers(2**32, 2**40))
    offs = rng.integers(0, 2**31 - 1, 50).astype(np.int32)
    np.testing.assert_array_equal(dropout.reference_rand(seed, offs), reference("rand", seed, offs))
    proc = run_example(ROOT / "examples" / "dropout.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dropout: OK" in proc.stdout and "WRONG RESULT" not in proc.stdout + proc.stderr
