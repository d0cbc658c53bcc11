"""pytest support for numba_tile kernels: the ``gpu`` marker and the ``tile_backend`` fixture.

Installed as a pytest plugin (entry point ``numba_tile``), so users' own test suites get:

* ``@pytest.mark.gpu``: the test needs a CUDA GPU and is skipped cleanly without one;
* ``tile_backend``: a fixture that runs the test twice, once on the GPU and once in the
  interpreter (the GPU run is skipped without a GPU). See :class:`Backend`.
"""

from .backend import Backend, available_backends

__all__ = ["Backend", "available_backends"]
