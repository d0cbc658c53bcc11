"""Fixtures of the compile tier."""

import pytest


@pytest.fixture(scope="module")
def nvjitlink():
    """cuda.bindings.nvjitlink (ptxas through nvJitLink), or a skip where it is missing or
    cannot create a handle."""
    nvj = pytest.importorskip("cuda.bindings.nvjitlink")
    try:
        nvj.destroy(nvj.create(1, ["-arch=sm_90"]))
    except (nvj.nvJitLinkError, RuntimeError, OSError) as e:
        pytest.skip(f"nvJitLink cannot create a handle: {type(e).__name__}: {e}")
    return nvj
