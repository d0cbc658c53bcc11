"""Project test configuration: load the numba_tile pytest plugin when the package is used
from a source checkout (an installed package registers it through its entry point), and keep the
test run's compiled kernels and tunings out of the user's own cache (``~/.cache/numba_tile``):
unless ``NUMBA_TILE_CACHE_DIR`` is set, the run gets a fresh directory of its own."""

import atexit
import os
import shutil
import tempfile

if "NUMBA_TILE_CACHE_DIR" not in os.environ:
    _run_cache = tempfile.mkdtemp(prefix="numba_tile_test_cache_")
    os.environ["NUMBA_TILE_CACHE_DIR"] = _run_cache
    atexit.register(shutil.rmtree, _run_cache, True)


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("numba_tile"):
        from numba_tile.testing import plugin

        config.pluginmanager.register(plugin, "numba_tile")
        plugin.pytest_configure(config)
