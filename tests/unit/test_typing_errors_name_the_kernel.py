"""Errors found while typing a kernel (the ownership pass, the typing rules) name the kernel
in their message, as the launch-time errors do, and keep pointing at the user's line."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import ForeignTileStoreError, StoreToReadOnlyError, TileTypingError


@nt.jit
def writes_its_input(x, y: nt.Partition[4]):
    nt.store(x, nt.load_like(x, y))


@nt.jit
def two_schemes(x, y: nt.Partition[2, 4]):
    for row in nt.strips(y):
        for i in nt.tiles(y, row):
            nt.store(y, nt.load(x, i, (2, 4), padding=0.0), i)
    for i in nt.tiles(y):
        nt.store(y, nt.load(x, i, (2, 4), padding=0.0), i)


@nt.jit
def bad_reduction_axis(x, y: nt.Partition[4]):
    nt.store(y, nt.sum(nt.load_like(x, y), 3))


@pytest.mark.parametrize("kern, cls", [(writes_its_input, StoreToReadOnlyError),
                                       (two_schemes, ForeignTileStoreError),
                                       (bad_reduction_axis, TileTypingError)])
@pytest.mark.parametrize("path", ["interpreter", "compile"])
def test_a_typing_error_names_the_kernel(kern, cls, path):
    two_d = kern is two_schemes
    x = np.ones((4, 8) if two_d else 8, np.float32)
    y = np.zeros_like(x)
    part = nt.partition(y, (2, 4), blocks=3) if two_d else nt.partition(y, 4)
    with pytest.raises(cls) as got:
        if path == "interpreter":
            kern(x, part, interpret=True)
        else:
            kern.ptx(x, part)
    assert got.value.message.startswith(f"kernel '{kern.__qualname__}': ")
    assert got.value.message.count("kernel '") == 1
    assert got.value.filename == __file__ and got.value.lineno is not None
    assert not y.any()
