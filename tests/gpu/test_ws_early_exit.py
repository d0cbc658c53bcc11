"""Warp-specialized loops whose consumers leave mid-loop finish (``lowering/ws.py``): an
exception Numba raises inside the K loop (a ``range`` step of 0 read from memory) ends the
consumers' threads on the GPU; the producer must notice the stop job instead of waiting for
slots no one releases, and wait for its boxes before it returns. Each launch runs in a child
process with a time limit, so a hang fails the test instead of the run. The interpreter raises
the exception itself, at the kernel's line. (A Constant tuple indexed past its end, which
raised too, now reads 0 on both backends, ``lowering/scalars._tuple_getitem``: its kernel
runs to the end.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numba_tile as nt

CHILD = textwrap.dedent('''
    import sys
    import numpy as np
    import cupy as cp
    sys.path.insert(0, {root!r})
    from tests.compile.test_ws_early_exit_ptx import _kernels
    import numba_tile as nt

    which, stages = sys.argv[1], int(sys.argv[2])
    step_from_data, tuple_index, persistent = _kernels(stages)
    rng = np.random.default_rng()
    a = cp.asarray(rng.integers(-2, 3, (256, 1024)).astype(np.float16))
    b = cp.asarray(rng.integers(-2, 3, (1024, 256)).astype(np.float16))
    c = cp.full((256, 256), -7.0, np.float32)
    f = cp.asarray(np.array([1, 1, 0, 1], np.int64))
    if which == "step":
        step_from_data(a, b, f[2:3], nt.partition(c, (64, 64)), 64, 64, 64).sync()
    elif which == "tuple":
        tuple_index(a, b, nt.partition(c, (64, 64)), 64, 64, 64, (1.0, 2.0)).sync()
    else:
        persistent(a, b, f, nt.partition(c, (64, 64), blocks=3), 64, 64, 64).sync()
    # the context is healthy: a plain kernel launches and computes after it
    ok = cp.asarray(np.arange(64, dtype=np.float32))
    assert float(ok.sum()) == 64 * 63 / 2
    print("finished")
''')


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("which", ["step", "tuple", "persistent"])
def test_consumers_leaving_mid_loop_do_not_hang_the_block(which, stages, tmp_path):
    from numba_tile.runtime.driver import gpu_available
    if not gpu_available():
        pytest.skip("needs a GPU")
    pytest.importorskip("cupy")
    import pathlib
    root = str(pathlib.Path(__file__).resolve().parents[2])
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=root))
    try:
        out = subprocess.run([sys.executable, str(script), which, str(stages)],
                             capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{which}, {stages} stages: the launch did not finish in 60 s")
    assert out.returncode == 0 and "finished" in out.stdout, out.stdout + out.stderr


def test_the_interpreter_raises_what_the_kernel_raises_and_reads_past_a_tuple_as_zero():
    from tests.compile.test_ws_early_exit_ptx import _kernels
    step_from_data, tuple_index, _persistent = _kernels(3)
    rng = np.random.default_rng()
    a = rng.integers(-2, 3, (64, 256)).astype(np.float16)
    b = rng.integers(-2, 3, (256, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    with pytest.raises(ValueError):
        step_from_data(a, b, np.zeros(1, np.int64), nt.partition(c, (64, 64)), 64, 64, 64,
                       interpret=True)
    tuple_index(a, b, nt.partition(c, (64, 64)), 64, 64, 64, (1.0, 2.0), interpret=True)
    # k = 0..3: C[0] + C[1], then the tuple's zero twice
    want = a.astype(np.float64) @ b.astype(np.float64) + 3.0
    np.testing.assert_array_equal(c, want)
