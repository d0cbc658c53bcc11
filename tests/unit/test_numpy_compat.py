"""NumPy 2.5 removed ``numpy.row_stack``, which numba-cuda 0.30.4 needs when its CUDA target
initializes: numba_tile restores the alias (``numba_tile/_compat.py``). Simulated here on any
NumPy by deleting the alias before numba_tile is imported, in a child process."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "NUMBA_TILE_CACHE_DIR": ""})


KERNEL = """
    import numpy as np
    import numba_tile as nt

    @nt.jit
    def f(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) + 1)

    x = np.arange(100, dtype=np.float32)
    z = np.zeros_like(x)
    f(x, nt.partition(z, 64), 64, interpret=True).sync()
    assert (z == x + 1).all()
    assert ".entry" in f.ptx(x, nt.partition(z, 64), 64)
    print("OK")
"""


def test_a_numpy_without_row_stack_still_compiles_and_runs():
    proc = run("import numpy\nif hasattr(numpy, 'row_stack'):\n    del numpy.row_stack\n"
               + textwrap.dedent(KERNEL))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK" in proc.stdout


def test_the_alias_is_vstack_and_only_set_where_missing():
    proc = run("""
        import numpy
        had = hasattr(numpy, "row_stack")
        mine = object() if not had else numpy.row_stack
        if not had:
            numpy.row_stack = mine
        import numba_tile
        assert numpy.row_stack is mine          # an existing row_stack is left alone
        del numpy.row_stack
        from numba_tile import _compat
        _compat.ensure()
        assert numpy.row_stack is numpy.vstack
        print("OK")
    """)
    assert proc.returncode == 0, proc.stdout + proc.stderr
