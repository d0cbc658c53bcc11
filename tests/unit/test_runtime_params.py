"""Kernel parameter packing (runtime/params.py): values read back through the void** array."""

import ctypes
import random

import numpy as np
import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime.driver import ParamBuffer

# kind -> (ctypes type used to read the value back, random value generator)
KINDS = {
    "u8": (ctypes.c_uint8, lambda r: r.randrange(256)),
    "i8": (ctypes.c_int8, lambda r: r.randrange(-128, 128)),
    "u16": (ctypes.c_uint16, lambda r: r.randrange(1 << 16)),
    "i16": (ctypes.c_int16, lambda r: r.randrange(-(1 << 15), 1 << 15)),
    "u32": (ctypes.c_uint32, lambda r: r.randrange(1 << 32)),
    "i32": (ctypes.c_int32, lambda r: r.randrange(-(1 << 31), 1 << 31)),
    "u64": (ctypes.c_uint64, lambda r: r.randrange(1 << 64)),
    "i64": (ctypes.c_int64, lambda r: r.randrange(-(1 << 63), 1 << 63)),
    "ptr": (ctypes.c_uint64, lambda r: r.randrange(1 << 48)),
    "f32": (ctypes.c_float, lambda r: float(np.float32(r.uniform(-1e6, 1e6)))),
    "f64": (ctypes.c_double, lambda r: r.uniform(-1e300, 1e300)),
    "bool": (ctypes.c_bool, lambda r: r.random() < 0.5),
}


def _read_back(buf: ParamBuffer, address: int):
    n = len(buf.kinds)
    slots = (ctypes.c_void_p * n).from_address(address)
    return [KINDS[k][0].from_address(slots[i]).value for i, k in enumerate(buf.kinds)]


def test_random_layouts_read_back_exactly():
    rng = random.Random(7)
    for _ in range(200):
        kinds = [rng.choice(list(KINDS)) for _ in range(rng.randint(1, 12))]
        buf = ParamBuffer(kinds)
        for _ in range(3):  # the same buffer is reused
            values = [KINDS[k][1](rng) for k in kinds]
            address = buf.pack(values)
            assert address == buf.address
            assert _read_back(buf, address) == values


def test_offsets_are_naturally_aligned_and_disjoint():
    buf = ParamBuffer(["u8", "f64", "i32", "u8", "u16", "i64"])
    sizes = [ctypes.sizeof(KINDS[k][0]) for k in buf.kinds]
    slots = (ctypes.c_void_p * len(buf.kinds)).from_address(buf.address)
    for i, size in enumerate(sizes):
        assert slots[i] % size == 0
    spans = sorted((slots[i], slots[i] + sizes[i]) for i in range(len(sizes)))
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert buf.nbytes >= sum(sizes)


def test_f16_and_numpy_scalars():
    buf = ParamBuffer(["f16", "i64", "f32"])
    address = buf.pack([np.float16(1.5), np.int64(-3), np.float32(0.25)])
    slots = (ctypes.c_void_p * 3).from_address(address)
    assert np.frombuffer(ctypes.string_at(slots[0], 2), np.float16)[0] == np.float16(1.5)
    assert ctypes.c_int64.from_address(slots[1]).value == -3
    assert ctypes.c_float.from_address(slots[2]).value == 0.25


def test_no_parameters():
    buf = ParamBuffer([])
    assert buf.pack([]) == 0


def test_errors():
    with pytest.raises(ValueError, match="unknown parameter kind"):
        ParamBuffer(["i128"])
    buf = ParamBuffer(["i32", "u8"], names=["n", "flag"])
    with pytest.raises(TileArgumentError, match="parameter 'flag'.*u8"):
        buf.pack([1, 300])
    with pytest.raises(TileArgumentError, match="takes 2 parameter values, got 1"):
        buf.pack([1])
