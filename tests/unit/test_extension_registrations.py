"""Lowerings registered for numba_tile's own ops by other code.

A lowering registered with Numba for an op's key (a more specific signature than numba_tile's
``VarArg(Any)``) would replace numba_tile's lowering behind the op's declared effects, and
its PTX would then be stored in the disk cache. Each case runs in a child process: such a
registration lasts for the life of the process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def run_child(tmp_path, script: str, cache) -> list:
    """Run ``script`` in a fresh Python process with the disk cache at ``cache``; its stdout
    lines (the process must exit 0)."""
    path = tmp_path / "case.py"
    path.write_text(script)
    env = dict(os.environ, NUMBA_TILE_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split("\n")


PRELUDE = """
import operator, os
import numpy as np
import numba_tile as nt
from numba.cuda import types
from numba.cuda.cudaimpl import registry as lowering
from numba_tile import errors
from numba_tile.typing.types import PartitionType, TensorType, TileType

@nt.jit
def copy_kernel(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(x, z))

x, z = np.ones(64, np.float32), np.zeros(64, np.float32)
"""

CASES = {
    "stub op, a more specific signature": """
@lowering.lower(nt.load_like, TensorType, PartitionType)
def evil(context, builder, sig, args):
    raise AssertionError("never lowered")
""",
    "operator on tiles": """
@lowering.lower(operator.add, TileType, TileType)
def evil(context, builder, sig, args):
    raise AssertionError("never lowered")
""",
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_foreign_lowering_of_an_op_is_refused_and_caches_nothing(tmp_path, case):
    script = PRELUDE + CASES[case] + textwrap.dedent("""
        for how in ("ptx", "interpreter"):
            try:
                if how == "ptx":
                    copy_kernel.ptx(x, nt.partition(z, 16), 16)
                else:
                    copy_kernel(x, nt.partition(z, 16), 16, interpret=True)
            except errors.UnanalyzedCallError as e:
                assert "lowering registered outside numba_tile" in e.message, e.message
                assert "evil in" in e.message and e.lineno is not None, e.message
                print(how, "refused")
            else:
                print(how, "ACCEPTED")
        print("entries", len(os.listdir(os.environ["NUMBA_TILE_CACHE_DIR"])))
    """)
    cache = tmp_path / "cache"
    cache.mkdir()
    lines = run_child(tmp_path, script, cache)
    assert "ptx refused" in lines and "interpreter refused" in lines, lines
    assert "entries 0" in lines, lines


def test_a_library_function_with_a_foreign_lowering_is_refused(tmp_path):
    """``math.sqrt`` with a lowering registered by user code (it would run behind the call)."""
    script = textwrap.dedent("""
        import math
        import numpy as np
        import numba_tile as nt
        from numba.cuda import types
        from numba.cuda.cudaimpl import registry as lowering
        from numba_tile import errors

        @lowering.lower(math.sqrt, types.float64)
        def evil(context, builder, sig, args):
            raise AssertionError("never lowered")

        @nt.jit
        def k(x, z: nt.Partition["B"], B: nt.Constant, s):
            nt.store(z, nt.load_like(x, z) * math.sqrt(s))

        x, z = np.ones(64, np.float32), np.zeros(64, np.float32)
        try:
            k.ptx(x, nt.partition(z, 16), 16, 2.0)
        except errors.ClosedWorldError as e:
            assert "calls math.sqrt()" in e.message and "case.py" in e.message, e.message
            print("refused")
    """)
    lines = run_child(tmp_path, script, tmp_path / "cache")
    assert "refused" in lines, lines


# Extension code reached through calls, methods, attributes and operators on numbers: each
# would forge an address from an integer; each is refused where the kernel reaches it.
ADDRESS_PRELUDE = """
import operator, types as pytypes
import numba.cuda.dispatcher as _disp
# numba-cuda asks the driver for the compute capability while it types an @overload's
# implementation: answer as an H200 does (no GPU here)
_disp.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(9, 0))
import numpy as np
import numba_tile as nt
from llvmlite import ir as llir
from numba.cuda import types
from numba.cuda.extending import (infer_getattr, intrinsic, lower_builtin, lower_cast,
                                  overload, overload_method, type_callable)
from numba.cuda.typing.templates import AttributeTemplate, bound_function
from numba_tile import errors
from numba_tile.typing.types import TensorType

def forge(builder, value):
    ptr = builder.inttoptr(value, llir.PointerType(llir.FloatType()))
    builder.store(llir.Constant(llir.FloatType(), 42.0), ptr)

x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
ADDR = int(x.ctypes.data)
"""

ADDRESS_CASES = {
    "a method on an integer": """
@infer_getattr
class IntAttrs(AttributeTemplate):
    key = types.Integer
    @bound_function("int.evil")
    def resolve_evil(self, ty, args, kws):
        return types.int64(*args)

@lower_builtin("int.evil", types.Integer, types.Float)
def lower_evil(context, builder, sig, args):
    forge(builder, args[0])
    return args[0]

@nt.jit
def k(x, z: nt.Partition["B"], B: nt.Constant):
    a = ADDR
    a.evil(42.0)
    nt.store(z, nt.load_like(x, z))
""",
    "an @overload_method on an integer": """
@intrinsic
def poke(typingctx, addr):
    def codegen(context, builder, sig, args):
        forge(builder, args[0])
        return args[0]
    return types.int64(addr), codegen

@overload_method(types.Integer, "evil", target="cuda")
def evil(a):
    return lambda a: poke(a)

@nt.jit
def k(x, z: nt.Partition["B"], B: nt.Constant):
    a = ADDR + 0
    _ = a.evil()
    nt.store(z, nt.load_like(x, z))
""",
    "an @overload of an operator on numbers": """
@intrinsic
def poke(typingctx, addr):
    def codegen(context, builder, sig, args):
        forge(builder, args[0])
        return args[0]
    return types.int64(addr), codegen

@overload(operator.sub, target="cuda")
def sub(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.NoneType):
        return lambda a, b: poke(a)

@nt.jit
def k(x, z: nt.Partition["B"], B: nt.Constant):
    a = ADDR
    _ = a - None
    nt.store(z, nt.load_like(x, z))
""",
    "an explicit operator call lowered by user code": """
@type_callable(operator.sub)
def t(context):
    def typer(a, b):
        if isinstance(a, types.Integer) and isinstance(b, types.NoneType):
            return types.int64
    return typer

@lower_builtin(operator.sub, types.Integer, types.NoneType)
def l(context, builder, sig, args):
    forge(builder, args[0])
    return args[0]

@nt.jit
def k(x, z: nt.Partition["B"], B: nt.Constant):
    a = ADDR
    _ = operator.sub(a, None)
    nt.store(z, nt.load_like(x, z))
""",
    "a number-class call lowered by user code": """
@lower_builtin(types.NumberClass, types.Integer)
def l(context, builder, sig, args):
    forge(builder, args[0])
    return args[0]

@nt.jit
def k(x, z: nt.Partition["B"], B: nt.Constant):
    a = np.int64(ADDR)
    nt.store(z, nt.load_like(x, z))
""",
    "a tensor cast to a number by a user signature": """
from numba.cuda.cudadecl import registry as typing_registry
from numba.cuda.typing.templates import AbstractTemplate, signature

@typing_registry.register_global(operator.sub)
class SubTensor(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 2 and isinstance(args[0], TensorType) and \
                isinstance(args[1], types.Integer):
            return signature(types.int64, types.int64, types.int64)

@lower_cast(TensorType, types.int64)
def cast(context, builder, fromty, toty, val):
    return context.get_constant(types.int64, 0)

@nt.jit
def k(x, z: nt.Partition["B"], B: nt.Constant):
    _ = operator.sub(x, 1)
    nt.store(z, nt.load_like(x, z))
""",
}


@pytest.mark.parametrize("case", list(ADDRESS_CASES))
def test_extension_code_on_numbers_is_refused_where_a_safe_kernel_reaches_it(tmp_path, case):
    script = ADDRESS_PRELUDE + ADDRESS_CASES[case] + textwrap.dedent("""
        try:
            k.ptx(x, nt.partition(z, 128), 128)
        except (errors.ClosedWorldError, errors.UnanalyzedCallError) as e:
            assert e.lineno is not None, e
            print("refused", type(e).__name__)
        else:
            print("ACCEPTED")
    """)
    lines = run_child(tmp_path, script, tmp_path / "cache")
    assert any(line.startswith("refused") for line in lines), lines
