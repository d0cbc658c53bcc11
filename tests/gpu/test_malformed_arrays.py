"""A misaligned array is refused before anything reaches the GPU, and the process's CUDA context
survives.

On the GPU, a kernel reading a float32 at an address that is not a multiple of 4 fails with
CUDA_ERROR_MISALIGNED_ADDRESS, which destroys the CUDA context: every later call in the process
fails. The launch checks refuse such an array first. The GPU half runs in a child process
(``sys.executable``), so that a regression cannot poison the test process; it needs CuPy and a GPU
and skips cleanly without them. The interpreter half runs everywhere: a misaligned NumPy array is
refused there the same way (same class, same message as the GPU path's).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import errors
from numba_tile.runtime.fakes import FakeDeviceArray

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent('''
    import cupy
    import numpy as np

    import numba_tile as nt
    from numba_tile import errors


    @nt.jit
    def scale(x, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(x, z) * 2.0)


    class Shifted:
        """A CUDA Array Interface over a CuPy allocation, ``offset`` bytes past its start."""

        def __init__(self, base, offset, n):
            cai = base.__cuda_array_interface__
            self.base = base
            self.__cuda_array_interface__ = {
                "version": 3, "shape": (n,), "strides": None, "typestr": cai["typestr"],
                "data": (cai["data"][0] + offset, False), "stream": None}


    def refused(launch, line, where):
        try:
            launch()
        except errors.TileArgumentError as err:
            assert type(err) is errors.TileArgumentError, err
            assert "kernel 'scale'" in err.message and where in err.message, err.message
            assert "not aligned to the item size" in err.message, err.message
            assert "expected a multiple of 4 bytes (float32), got one 2 byte(s) past" in \\
                err.message, err.message
            assert (err.filename, err.lineno) == (__file__, line), (err.filename, err.lineno)
        else:
            raise AssertionError("a misaligned array was accepted")


    rng = np.random.default_rng()
    n = 1000
    x_host = rng.standard_normal(n + 1).astype(np.float32)
    x = cupy.asarray(x_host)
    z = cupy.full(n + 1, -1.0, dtype=cupy.float32)
    refused(lambda: scale(Shifted(x, 2, n), nt.partition(z, 256), 256), LINE_X, "argument 'x'")
    refused(lambda: scale(x, nt.partition(Shifted(z, 2, n), 256), 256), LINE_Z, "argument 'z'")
    cupy.cuda.runtime.deviceSynchronize()          # the context is intact: no error is pending
    assert bool((z == -1.0).all()), "a refused launch wrote its output"
    scale(x, nt.partition(z, 256), 256).sync()     # a correct launch in the same process
    np.testing.assert_allclose(cupy.asnumpy(z), 2.0 * x_host.astype(np.float64), rtol=1e-6)
    print("CONTEXT SURVIVED")
''')


def _child_script(tmp_path) -> str:
    """The child's source, with the launch lines it must see in the errors filled in."""
    lines = CHILD.splitlines()
    line_x = next(i for i, s in enumerate(lines, 1) if "Shifted(x, 2, n)" in s)
    line_z = next(i for i, s in enumerate(lines, 1) if "Shifted(z, 2, n)" in s)
    text = CHILD.replace("LINE_X", str(line_x)).replace("LINE_Z", str(line_z))
    path = tmp_path / "misaligned_child.py"
    path.write_text(text)
    return str(path)


@pytest.mark.gpu
def test_misaligned_cupy_array_is_refused_and_the_context_survives(tmp_path):
    pytest.importorskip("cupy")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, _child_script(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "CONTEXT SURVIVED" in done.stdout


@nt.jit
def scale(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 2.0)


def test_misaligned_numpy_array_is_refused_in_the_interpreter_as_on_the_gpu_path():
    raw = np.random.default_rng().integers(1, 255, 4 * 65, dtype=np.uint8)
    shifted = np.frombuffer(raw, np.float32, count=64, offset=2)
    z = np.full(64, -1.0, np.float32)
    before = raw.copy()
    line = sys._getframe().f_lineno + 2
    with pytest.raises(errors.TileArgumentError) as interp:
        scale(shifted, nt.partition(z, 16), 16, interpret=True)
    with pytest.raises(errors.TileArgumentError) as gpu_path:
        scale.ptx(FakeDeviceArray(shifted, readonly=False), nt.partition(FakeDeviceArray(z), 16),
                  16)
    for err in (interp.value, gpu_path.value):
        assert type(err) is errors.TileArgumentError
        assert "kernel 'scale': argument 'x'" in err.message
        assert "expected a multiple of 4 bytes (float32), got one 2 byte(s) past" in err.message
    assert interp.value.message == gpu_path.value.message
    assert (interp.value.filename, interp.value.lineno) == (__file__, line)
    np.testing.assert_array_equal(raw, before)
    assert (z == -1.0).all()
