"""Tutorial 14: testing your kernels with numba_tile's pytest plugin.

This file is a test module. Run as a script (``python 14_testing_pytest_plugin.py``) it runs
pytest on itself; ``pytest 14_testing_pytest_plugin.py`` does the same. A test taking the
``tile_backend`` fixture runs twice, on the GPU and in the interpreter (the GPU run is
skipped without a GPU); ``@pytest.mark.gpu`` skips a test without a GPU; refusals and PTX are
checked on any machine. Every value is checked against NumPy in float64 on fresh random
inputs. Exits nonzero when a test fails.
"""

import importlib.metadata
import os
import sys

import numpy as np
import pytest

import numba_tile as nt


@nt.jit
def clip_scale(x, z: nt.Partition["B"], lo, hi, s, B: nt.Constant):
    """z = clip(x, lo, hi) * s."""
    nt.store(z, nt.minimum(nt.maximum(nt.load_like(x, z), lo), hi) * s)


def reference(x, lo, hi, s):
    return np.clip(x.astype(np.float64), lo, hi) * s


@pytest.mark.parametrize("n", [1, 1023, 1024, 5000])       # edges: one element, ragged
def test_clip_scale_matches_numpy(tile_backend, n):
    rng = np.random.default_rng()
    x_h = (3 * rng.standard_normal(n)).astype(np.float32)
    x = tile_backend.asarray(x_h)                           # CuPy/Numba on the GPU, NumPy else
    z = tile_backend.asarray(np.full(n, np.nan, np.float32))
    tile_backend.run(clip_scale, x, nt.partition(z, 1024), -1.0, 2.0, 0.5, 1024)
    np.testing.assert_allclose(tile_backend.to_numpy(z), reference(x_h, -1.0, 2.0, 0.5),
                               rtol=1e-6, atol=0)


def test_an_output_that_overlaps_the_input_is_refused():
    x = np.zeros(2048, np.float32)                          # the interpreter, on any machine
    with pytest.raises(nt.errors.AliasingError, match="'z'"):
        clip_scale(x, nt.partition(x, 1024), 0.0, 1.0, 1.0, 1024, interpret=True)


def test_the_ptx_loads_16_bytes_per_thread():
    x = np.zeros(4096, np.float32)                          # compiles, launches nothing
    ptx = clip_scale.ptx(x, nt.partition(x.copy(), 1024), 0.0, 1.0, 1.0, 1024, cc=(9, 0))
    assert "ld.global.nc.v4.f32" in ptx and ".local" not in ptx


@pytest.mark.gpu
def test_on_a_stream():
    from numba import cuda
    stream = cuda.stream()
    x_h = np.random.default_rng().standard_normal(3000).astype(np.float32)
    x, z = cuda.to_device(x_h), cuda.device_array(3000, np.float32)
    clip_scale(x, nt.partition(z, 1024), -0.5, 0.5, 4.0, 1024, stream=stream).sync()
    np.testing.assert_allclose(z.copy_to_host(), reference(x_h, -0.5, 0.5, 4.0), rtol=1e-6)


def main():
    args = [__file__, "-q", "-rs", "-p", "no:cacheprovider",
            "-W", "ignore::pytest.PytestAssertRewriteWarning"]     # numba_tile is imported
    plugins = {e.name for e in importlib.metadata.entry_points(group="pytest11")}
    if "numba_tile" not in plugins:             # numba_tile used from a source checkout
        args += ["-p", "numba_tile.testing.plugin"]
    if os.environ.get("NUMBA_TILE_INTERPRET", "0") not in ("", "0"):
        args += ["-k", "not gpu"]               # every kernel interprets: no GPU runs
    code = pytest.main(args)
    if code != 0:
        sys.exit(f"14_testing_pytest_plugin: tests failed (pytest exit code {int(code)})")
    print("14_testing_pytest_plugin: checked (the tests above passed)")


if __name__ == "__main__":
    main()
