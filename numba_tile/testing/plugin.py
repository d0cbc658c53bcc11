"""The numba_tile pytest plugin (registered through the ``pytest11`` entry point).

* marker ``gpu``: skip the test unless a CUDA GPU is present;
* fixture ``tile_backend``: parametrized over ``gpu`` and ``interpreter``; the ``gpu``
  case is skipped without a GPU, so one test body checks both paths.
"""

from __future__ import annotations

import pytest

from .backend import Backend


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped cleanly where there is none")


def _gpu_available() -> bool:
    from ..runtime.driver import gpu_available
    return gpu_available()


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is not None and not _gpu_available():
        pytest.skip("needs a CUDA GPU (none found)")


@pytest.fixture(params=["gpu", "interpreter"])
def tile_backend(request) -> Backend:
    """A :class:`~numba_tile.testing.Backend`: the test runs once per backend."""
    if request.param == "gpu" and not _gpu_available():
        pytest.skip("needs a CUDA GPU (none found)")
    return Backend(request.param)
