"""The element computations of ``lowering/scalar_ufuncs.py`` (NumPy ufuncs on scalars) run on
the CPU: each loop's LLVM IR, the very code the GPU lowering emits, is compiled by llvmlite's
JIT with the C math library standing in for libdevice (``__nv_fmodf`` -> ``fmodf``), and
compared with NumPy computing the same loop on NumPy scalars, on fresh random inputs with the
edge cases (division by zero, the least integer by -1, signed zeros, infinities, NaN). It
checks the integer and float semantics (wrapping, floor division and remainder by NumPy's
rules, ``sign``), not libdevice's accuracy (tests/gpu/test_scalar_ufuncs.py does, on a GPU)."""

import ctypes
import ctypes.util

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from numba_tile.lowering.scalar_ufuncs import _compute
from numba_tile.typing.scalar_ufuncs import LIBDEVICE, SUPPLEMENT

_C = {"?": ctypes.c_bool, "b": ctypes.c_int8, "B": ctypes.c_uint8, "h": ctypes.c_int16,
      "H": ctypes.c_uint16, "i": ctypes.c_int32, "I": ctypes.c_uint32, "l": ctypes.c_int64,
      "L": ctypes.c_uint64, "q": ctypes.c_int64, "Q": ctypes.c_uint64, "f": ctypes.c_float,
      "d": ctypes.c_double}
_APPROXIMATE = {np.exp, np.exp2, np.expm1, np.log1p, np.cbrt, np.power, np.float_power}


def _ir_type(letter):
    if letter == "f":
        return ir.FloatType()
    if letter == "d":
        return ir.DoubleType()
    return ir.IntType(8 if letter == "?" else np.dtype(letter).itemsize * 8)


@pytest.fixture(scope="module")
def engine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for base in set(LIBDEVICE.values()) | {"fmod", "copysign", "floor"}:
        for suffix in ("", "f"):
            llvm.add_symbol(f"__nv_{base}{suffix}",
                            ctypes.cast(getattr(libm, base + suffix), ctypes.c_void_p).value)
    target = llvm.Target.from_default_triple().create_target_machine()
    eng = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target)
    yield eng


def _jit(engine, ufunc, loop):
    """A C function computing one element of ``loop`` of ``ufunc`` with ``_compute``."""
    ins, out = loop.split("->")
    mod = ir.Module(name=f"{ufunc.__name__}_{loop}")
    fnty = ir.FunctionType(_ir_type(out), [_ir_type(c) for c in ins])
    fn = ir.Function(mod, fnty, name="element")
    builder = ir.IRBuilder(fn.append_basic_block())
    args = list(fn.args)
    if ins[0] == "?":      # a bool is i1 in registers (Numba's value type), i8 in the C ABI
        args = [builder.trunc(a, ir.IntType(1)) for a in args]
    res = _compute(ufunc, np.dtype(ins[0]).kind, builder, args)
    if out == "?":
        res = builder.zext(res, ir.IntType(8))
    builder.ret(res)
    m = llvm.parse_assembly(str(mod))
    m.verify()
    engine.add_module(m)
    engine.finalize_object()
    addr = engine.get_function_address("element")
    return ctypes.CFUNCTYPE(_C[out], *(_C[c] for c in ins))(addr), m


def _values(rng, letter, n):
    dt = np.dtype(letter)
    if dt.kind == "f":
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 0.1, 1.5, -2.5, 0.5, 3.0,
                            -3.0, 1e-30], dt)
        out = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 30.0, 1e4], n)).astype(dt)
        return np.concatenate([special, out])
    if dt.kind == "b":
        return np.array([False, True])
    info = np.iinfo(dt)
    edge = np.array([0, 1, info.max, info.min] + ([-1, -2, -7] if dt.kind == "i" else [2, 7]),
                    dt)
    return np.concatenate([edge, rng.integers(info.min, info.max, n, dtype=dt, endpoint=True),
                           rng.integers(-9 if dt.kind == "i" else 0, 10, n).astype(dt)])


def _cpu_dependent(ufunc, args) -> bool:
    """NumPy's float ``power`` of -inf to a non-integer power: nan where NumPy computes it with
    its SIMD library (AVX-512 SVML), inf by C99's ``pow`` (and libdevice's) elsewhere."""
    return (ufunc in (np.power, np.float_power) and np.isneginf(args[0])
            and not float(args[1]).is_integer())


def _cases():
    return [pytest.param(u, loop, id=f"{u.__name__}-{loop}")
            for u, loops in SUPPLEMENT.items() for loop in sorted(loops)]


@pytest.mark.parametrize("ufunc, loop", _cases())
def test_each_loop_computes_as_numpy(engine, ufunc, loop):
    rng = np.random.default_rng()
    fn, _keep = _jit(engine, ufunc, loop)
    ins, out = loop.split("->")
    xs = _values(rng, ins[0], 24)
    ys = _values(rng, ins[-1], 24) if ufunc.nin == 2 else [None]
    pairs = [(x, y) for x in xs for y in ys] if ufunc.nin == 2 else [(x,) for x in xs]
    for args in pairs:
        if _cpu_dependent(ufunc, args):
            continue
        with np.errstate(all="ignore"):
            want = ufunc(*args)
        got = fn(*(a.item() for a in args))
        if np.dtype(out).kind == "f":
            got, want = np.dtype(out).type(got), np.dtype(out).type(want)
            if ufunc in _APPROXIMATE:
                ok = (np.isnan(got) and np.isnan(want)) or got == want or \
                    abs(got - want) <= 4 * np.finfo(want.dtype).eps * abs(want)
            else:       # exact, signed zeros included
                ok = (np.isnan(got) and np.isnan(want)) or (
                    got == want and np.signbit(got) == np.signbit(want))
        else:
            ok = np.dtype(out).type(got) == want
        assert ok, f"np.{ufunc.__name__}{tuple(a.item() for a in args)}: {got!r}, NumPy {want!r}"
