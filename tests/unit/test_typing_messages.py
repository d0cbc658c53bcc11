"""Errors Numba itself raises while typing a kernel come back short, as TileTypingError at
the user's line, with a hint for the usual mistakes (no wall of candidate signatures)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError


@nt.jit
def if_on_tile(x, z: nt.Partition):
    t = nt.load_like(x, z)
    if t > 0:  # MARK if
        nt.store(z, t)


@nt.jit
def index_tile(x, z: nt.Partition):
    t = nt.load_like(x, z)
    nt.store(z, t[0])  # MARK index


@nt.jit
def typo(x, z: nt.Partition):
    t = nt.load_like(x, z)
    nt.store(z, nt.exq(t))  # MARK typo


@nt.jit
def numpy_on_tile(x, z: nt.Partition):
    t = nt.load_like(x, z)
    nt.store(z, np.exp(t))  # MARK numpy


def mark_line(tag):
    with open(__file__) as f:
        for i, line in enumerate(f, start=1):
            if line.rstrip().endswith(f"# MARK {tag}"):
                return i
    raise AssertionError(tag)


@pytest.mark.parametrize("kernel,tag,fragment", [
    (if_on_tile, "if", "no truth value"),
    (index_tile, "index", "not indexed element by element"),
    (typo, "typo", "no attribute 'exq'"),
    (numpy_on_tile, "numpy", "numba_tile ops"),
])
def test_numba_errors_become_short_tile_typing_errors(kernel, tag, fragment):
    x = np.ones(8, np.float32)
    z = np.zeros(8, np.float32)
    with pytest.raises(TileTypingError) as info:
        kernel(x, nt.partition(z, 8), interpret=True)
    err = info.value
    assert fragment in str(err)
    assert err.filename == __file__ and err.lineno == mark_line(tag)
    assert len(str(err).splitlines()) <= 8
    assert err.__suppress_context__ or err.__cause__ is None
    assert not z.any()


@nt.jit
def huge_tile(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


def test_tiles_beyond_the_register_budget_are_refused():
    x = np.ones(8, np.float32)
    with pytest.raises(TileTypingError, match="elements in each thread, more than 1024"):
        huge_tile(x, nt.partition(np.zeros(8, np.float32), 2**20), 2**20, interpret=True)


def test_summary_of_a_colored_numba_report():
    """Numba colors its reports on some terminals and echoes source lines; the summary keeps
    the message (seen on the GPU machine)."""
    from types import SimpleNamespace

    from numba_tile.compiler import _summarize

    report = ('File "k.py", line 141:\x1b[0m\n\x1b[1m    def k(x, z):\n        ^\x1b[0m\n'
              "Untyped global name 'python_helper': Cannot determine Numba type of <class "
              "'function'>\n")
    err = _summarize(Exception(report), None, SimpleNamespace(kernel_name="k", pyfunc=None))
    assert "Untyped global name 'python_helper'" in err.message
    assert "\x1b" not in str(err)


@nt.jit(interpret=True)
def index_as_padding(x, z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, idx) * 2.0, idx)  # MARK padding


@nt.jit(interpret=True)
def index_by_keyword(x, z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx) * 2.0, idx)


def test_an_index_passed_as_load_likes_third_positional_is_named_as_padding():
    """load_like(x, z, idx): the third positional parameter is padding; the message says so
    and shows the keyword form, at the user's line (not 'index ... got nothing')."""
    rng = np.random.default_rng()
    x = rng.standard_normal(70).astype(np.float32)
    z = np.zeros(70, np.float32)
    with pytest.raises(TileTypingError, match=r"padding.*index=idx.*got an index") as info:
        index_as_padding(x, nt.partition(z, 16, blocks=2), 16)
    assert info.value.lineno == mark_line("padding")
    assert not z.any()
    index_by_keyword(x, nt.partition(z, 16, blocks=2), 16)
    np.testing.assert_allclose(z, 2.0 * x.astype(np.float64), rtol=1e-6)
