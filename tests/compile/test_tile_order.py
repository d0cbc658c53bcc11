"""Declared tile orders compile (libNVVM, no GPU): the grouped order's arithmetic is in the PTX
of the block's own tile, of ``bid`` and of a mapped partition's ``tiles()``, and ``idx[d]``
reads a branded index's coordinate.

Assertions are on structure (the grouped order's unsigned ``min.u64`` and ``div.u64``, no
local memory), never on register numbers.
"""

import re

import numpy as np
import pytest

import numba_tile as nt

CCS = [(8, 0), (9, 0)]


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]


def no_local_memory(ptx: str):
    assert ".local" not in ptx and "ld.local" not in ptx and "st.local" not in ptx


@nt.jit
def own_tile_bids(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    t = nt.load_like(x, z) + nt.astype(nt.full((BM, BN), 0, nt.int64) + nt.bid(0) * 1000
                                       + nt.bid(1), nt.float32)
    nt.store(z, t)


@nt.jit
def gemm_shaped(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            ta = nt.load(a, (idx[0], k), (BM, BK), padding=0.0)
            tb = nt.load(b, (k, idx[-1]), (BK, BN), padding=0.0)
            acc = acc + nt.sum(ta, 1, keepdims=True) * nt.sum(tb, 0, keepdims=True)
        nt.store(c, acc, idx)


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("order", [nt.grouped(1), nt.grouped(3), nt.grouped(8)], ids=str)
def test_grouped_own_tile_and_bid_compile(cc, order):
    x = np.zeros((1000, 700), np.float32)
    grouped = body(own_tile_bids.ptx(x, nt.partition(x.copy(), (64, 64), order=order), 64, 64,
                                     cc=cc))
    row = body(own_tile_bids.ptx(x, nt.partition(x.copy(), (64, 64)), 64, 64, cc=cc))
    no_local_memory(grouped)
    assert re.findall(r"st\.global\.v4\.f32", grouped)       # the store is unchanged
    if order[1] == 1:
        return          # grouped(1) is row-major (libNVVM may fold it to the same code)
    # the group clamped to num_pid_m, and the band's height: unsigned 64-bit minimums and
    # divisions the row-major order has not
    assert grouped.count("min.u64") > row.count("min.u64")
    assert len(re.findall(r"(div|rem)\.u64", grouped)) > len(re.findall(r"(div|rem)\.u64", row))


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("blocks", [None, 132])
def test_gemm_shaped_kernel_with_a_grouped_order_compiles(cc, blocks):
    a = np.zeros((4096, 512), np.float16)
    b = np.zeros((512, 4096), np.float16)
    c = np.zeros((4096, 4096), np.float32)
    ptx = gemm_shaped.ptx(a, b, nt.partition(c, (64, 64), blocks=blocks, order=nt.grouped(8)),
                          64, 64, 32, cc=cc)
    no_local_memory(ptx)
    assert "min.u64" in body(ptx)
    assert re.findall(r"ld\.global\.nc(\.v\d)?\.\w+", body(ptx))   # inputs: read-only path


def test_a_three_axis_grouped_partition_compiles():
    x = np.zeros((3, 100, 200), np.float32)

    @nt.jit
    def copy3(x, z: nt.Partition[(1, 32, 32)]):
        nt.store(z, nt.load_like(x, z))

    ptx = body(copy3.ptx(x, nt.partition(x.copy(), (1, 32, 32), order=nt.grouped(4))))
    no_local_memory(ptx)
    assert "min.u64" in ptx
