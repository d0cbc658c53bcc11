"""numba-cuda caches the internal subroutines it compiles (``round(x, n)``, integer powers)
by their code and signature, and numba_tile's code lowers some of them differently from plain
numba-cuda code (``lowering/scalars.py``): the cache is keyed by mode too, so neither side's
lowering depends on which compiled the subroutine first in the process (nor does what
numba_tile writes to its disk cache). Each order runs in a fresh process, without the disk
cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent('''
    import re, sys
    import numpy as np
    from numba import cuda
    from numba.cuda import types
    import numba_tile as nt
    from tests import builtin_cases as bc

    def plain(x, n):
        return round(x, n)

    def tile_ptx():
        p = bc.rounding.ptx(np.zeros(8, np.float64), np.zeros(8, np.int64),
                            nt.partition(np.zeros(8), 1), cc=(9, 0))
        return p[p.index(".entry"):]

    def plain_ptx():
        return cuda.compile_ptx(plain, (types.float64, types.int64), device=True, cc=(9, 0))[0]

    if sys.argv[1] == "tile_first":
        t, q = tile_ptx(), plain_ptx()
    else:
        q, t = plain_ptx(), tile_ptx()
    strip = lambda p: re.sub(r"_ZN\\S+", "", p)
    print("TILE", hash(strip(t)), "PLAIN", hash(strip(q)))
''')


def _run(order):
    env = dict(os.environ, NUMBA_TILE_CACHE_DIR="", PYTHONHASHSEED="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", CHILD, order], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("TILE")][-1]
    return line.split()[1], line.split()[3]


def test_subroutine_lowering_does_not_depend_on_compile_order():
    tile_a, plain_a = _run("tile_first")
    tile_b, plain_b = _run("plain_first")
    assert tile_a == tile_b, "numba_tile's kernel took plain numba-cuda's subroutine"
    assert plain_a == plain_b, "a plain numba-cuda function took numba_tile's subroutine"
