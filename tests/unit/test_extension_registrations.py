"""Lowerings registered for numba_tile's own ops by other code (issue 8, part 1).

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
    path = tmp_path / "case.py"
    path.write_text(script)
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, NUMBA_TILE_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.split("\n")
    assert "ptx refused" in lines and "interpreter refused" in lines, out.stdout
    assert "entries 0" in lines, out.stdout


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
    path = tmp_path / "case.py"
    path.write_text(script)
    env = dict(os.environ, NUMBA_TILE_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "refused" in out.stdout.split("\n"), out.stdout
