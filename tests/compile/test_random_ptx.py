"""PTX of the random ops (rand, randn, randint, randint4x): Philox4x32-10 runs in registers, per
element, with ``mul.hi.u32`` for the high halves of the round products for int32 and int64
offsets alike (an int64 offset is split into two 32-bit counter words, as Triton 3.6; no
``mul.hi.u64``); the kernel reads no memory and stores only its own results. Compiled with
libNVVM for cc 8.0 and 9.0, no GPU."""

import re

import numpy as np
import pytest

import numba_tile as nt

CCS = [(8, 0), (9, 0)]
OPS = ["randint", "rand", "randn"]


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]


def _kernel(op):
    fn = getattr(nt, op)

    @nt.jit
    def k(z: nt.Partition["B"], seed, B: nt.Constant, W: nt.Constant):
        offs = nt.astype(nt.bid(0) * B + nt.arange(B), W)
        nt.store(z, fn(seed, offs))

    return k


KERNELS = {op: _kernel(op) for op in OPS}


@nt.jit
def baseline(z: nt.Partition["B"], seed, B: nt.Constant, W: nt.Constant):
    """The same offsets and store without random numbers (same dtype as the op's result)."""
    nt.store(z, nt.astype(nt.bid(0) * B + nt.arange(B) + seed, W))


def _out_dtype(op, w):
    """float32 for rand/randn, int32 words for randint whatever the offsets' dtype ``w``."""
    return np.float32 if op in ("rand", "randn") else np.int32


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("w", [np.int32, np.int64], ids=["int32", "int64"])
@pytest.mark.parametrize("op", OPS)
def test_philox_is_register_arithmetic_with_unsigned_high_products(op, w, cc):
    block = 512
    z = np.zeros(4096, _out_dtype(op, w))
    b = body(KERNELS[op].ptx(nt.partition(z, block), 2**40 + 3, block, w, cc=cc))
    per_thread = block // 128                                 # 4 warps
    hi = re.findall(r"mul\.hi\.(\w+)", b)
    # unrolled, per element: up to 10 rounds x 2 high halves (the first round's product of the
    # zero counter word 2 folds away, and so do the last rounds' products no output needs)
    assert 10 * per_thread <= hi.count("u32") <= 19 * per_thread, hi
    assert set(hi) == {"u32"}, hi            # 32-bit words for int64 offsets too, never signed
    assert "ld.global" not in b                               # reads no memory
    stores = re.findall(r"st\.global[.\w]*", b)
    ref = body(baseline.ptx(nt.partition(z, block), 3, block, _out_dtype(op, w), cc=cc))
    assert stores == re.findall(r"st\.global[.\w]*", ref)     # only the kernel's own store
    if op != "randn":
        assert ".local" not in b                              # no spills
    else:
        # libdevice's cosf keeps its Payne-Hanek reduction buffer (large arguments; never taken
        # for 2 pi u2 < 6.3) in local memory, as every __nv_cosf call does
        assert "call.uni" not in b and "__nv_logf" not in b   # libdevice inlined


@nt.jit
def four_words(z: nt.Partition["B"], seed, B: nt.Constant, W: nt.Constant):
    a, b, c, d = nt.randint4x(seed, nt.astype(nt.arange(B), W))
    nt.store(z, (a ^ b) + (c ^ d))


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("w", [np.int32, np.int64], ids=["int32", "int64"])
def test_randint4x_compiles_to_one_philox_per_element(w, cc):
    z = np.zeros(1024, np.int32)                # int32 words for either offsets dtype
    b = body(four_words.ptx(nt.partition(z, 256), 7, 256, w, cc=cc))
    assert b.count("mul.hi.u32") == 19 * 2      # all four words: every product but the zero one
    assert "mul.hi.u64" not in b
    assert ".local" not in b and "ld.global" not in b


@nt.jit
def offsets_from_a_reduction(x, z: nt.Partition["M"], seed, M: nt.Constant, N: nt.Constant):
    """The offsets are a row sum: a tile in a reduction's slice layout (converted to the
    blocked layout for the op)."""
    rows = nt.load(x, (nt.bid(0), 0), (M, N), padding=0)
    nt.store(z, nt.rand(seed, nt.sum(rows, 1)))


@pytest.mark.parametrize("cc", CCS)
def test_offsets_in_another_layout_compile(cc):
    x = np.zeros((256, 32), np.int32)
    b = body(offsets_from_a_reduction.ptx(x, nt.partition(np.zeros(256, np.float32), 64), 1,
                                          64, 32, cc=cc))
    assert "mul.hi.u32" in b and ".local" not in b
