"""uint32 / uint64 atomics (add wraps modulo 2**bits, max/min compare unsigned, xchg, cas) on
the GPU and in the interpreter, against Python-integer references; the PTX types."""

import numpy as np
import pytest

import numba_tile as nt


@nt.jit(unchecked=True)
def uatomic(idx, vals, out: nt.Mutable, old: nt.Partition["B"], B: nt.Constant,
            OP: nt.Constant):
    i = nt.load_like(idx, old, padding=-1)
    v = nt.load_like(vals, old)
    if OP == 0:
        r = nt.atomic_add(out, i, v)
    elif OP == 1:
        r = nt.atomic_max(out, i, v)
    else:
        r = nt.atomic_min(out, i, v)
    nt.store(old, r)


@pytest.mark.parametrize("dt", [np.uint32, np.uint64], ids=["uint32", "uint64"])
@pytest.mark.parametrize("op", [0, 1, 2], ids=["add", "max", "min"])
def test_unsigned_atomics(tile_backend, dt, op):
    rng = np.random.default_rng()
    bits = np.dtype(dt).itemsize * 8
    top = 2 ** bits
    n, bins = 1200, 17
    idx = rng.integers(-2, bins + 2, n).astype(np.int32)
    # values across the whole range: the top bit set half the time (a signed compare or an
    # unsigned add that did not wrap would differ)
    vals = [int(v) for v in rng.integers(0, 2 ** 62, n)]
    vals = [(v << 2 | int(rng.integers(0, 4))) % top for v in vals]
    start = [int(v) % top for v in rng.integers(0, 2 ** 62, bins)]
    out = tile_backend.asarray(np.array(start, dtype=dt))
    old = tile_backend.asarray(np.zeros(n, dt))
    tile_backend.run(uatomic, tile_backend.asarray(idx), tile_backend.asarray(np.array(vals, dt)),
                     out, nt.partition(old, 256), 256, op, unchecked=True)
    ref = list(start)
    for i, v in zip(idx, vals):
        if 0 <= i < bins:
            ref[i] = ((ref[i] + v) % top if op == 0 else max(ref[i], v) if op == 1
                      else min(ref[i], v))
    assert [int(v) for v in tile_backend.to_numpy(out)] == ref


@pytest.mark.parametrize("dt, ptx", [(np.uint32, "u32"), (np.uint64, "u64")])
def test_ptx_types(dt, ptx):
    idx, vals = np.zeros(256, np.int32), np.zeros(256, dt)
    for op, name in ((0, "add"), (1, "max"), (2, "min")):
        p = uatomic.ptx(idx, vals, np.zeros(8, dt), nt.partition(np.zeros(256, dt), 256), 256,
                        op, cc=(9, 0))
        assert f"atom.global.{name}.{ptx}" in p or f".{name}.{ptx}" in p, (name, ptx)
