"""The refusals of the group rewrite (numba_tile/groups.py) that no one statement causes: a
kernel with closure variables, one whose parameter defaults the rewrite cannot keep, one using a
member's generated name; each names the kernel and the group and points at the kernel's source
(its definition, or the line using the name)."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileArgumentError

_LINES = {}


def _line(tag):
    """The line of this file holding ``# <tag>``."""
    if not _LINES:
        with open(__file__) as f:
            for i, text in enumerate(f, 1):
                if "# <" in text:
                    _LINES[text.split("# <")[1].split(">")[0]] = i
    return _LINES[tag]


@nt.jit(interpret=True)  # <defaults>
def with_default(xs, z: nt.Partition["B"], B: nt.Constant, s=1.0):
    nt.store(z, nt.load_like(xs[0], z, padding=0) * s)


@nt.jit(interpret=True)
def uses_member_name(xs, z: nt.Partition["B"], B: nt.Constant):
    xs__1 = 2.0  # <member name>
    nt.store(z, nt.load_like(xs[0], z, padding=0) * xs__1)


def _args():
    rng = np.random.default_rng()
    n = int(rng.integers(2, 5))
    return tuple(np.zeros(64, np.float32) for _ in range(n)), nt.partition(
        np.zeros(64, np.float32), 64)


def test_parameter_defaults_point_at_the_definition():
    xs, z = _args()
    with pytest.raises(TileArgumentError, match=r"kernel 'with_default'.*'xs'.*defaults") as info:
        with_default(xs, z, 64)
    assert (info.value.filename, info.value.lineno) == (__file__, _line("defaults") + 1)


def test_a_used_member_name_points_at_its_use():
    xs, z = _args()
    with pytest.raises(TileArgumentError, match=r"kernel 'uses_member_name'.*'xs__1'.*rename") \
            as info:
        uses_member_name(xs, z, 64)
    assert (info.value.filename, info.value.lineno) == (__file__, _line("member name"))


def test_closure_variables_point_at_the_definition():
    scale = 2.0

    @nt.jit(interpret=True)  # <closure>
    def scaled(xs, z: nt.Partition["B"], B: nt.Constant):
        nt.store(z, nt.load_like(xs[0], z, padding=0) * scale)

    xs, z = _args()
    with pytest.raises(TileArgumentError, match=r"kernel '.*scaled'.*'xs'.*enclosing function "
                                                r"\(scale\).*module level") as info:
        scaled(xs, z, 64)
    assert (info.value.filename, info.value.lineno) == (__file__, _line("closure"))
