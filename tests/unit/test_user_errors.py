"""Errors for the usual first mistakes say what to write instead, with numba_tile's error class,
at the user's line, before any work: an array passed twice for an in-place update (the
overlap refusal shows the idiom, and the idiom runs), ``x.shape`` and other attributes of
tensors, partitions and tiles in a kernel (``t.T`` names ``nt.transpose``), a Python list
given for an array (while lists stay groups where the kernel indexes them), and
``kernel[grid](...)`` (numba-cuda's launch syntax). CPU only: the interpreter and PTX."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import (AliasingError, TileArgumentError, TileError, TileTypingError)


def mark_line(tag):
    with open(__file__) as f:
        for i, line in enumerate(f, start=1):
            if line.rstrip().endswith(f"# MARK {tag}"):
                return i
    raise AssertionError(tag)


def _at(err, tag):
    assert isinstance(err, TileError)
    assert err.filename == __file__ and err.lineno == mark_line(tag), (err.filename, err.lineno)


RNG = np.random.default_rng()


def _x(n=64):
    return RNG.standard_normal(n).astype(np.float32)


# ------------------------------------------------------------------- an in-place update


@nt.jit
def scale_add(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * 2.0 + 1.0)


@nt.jit
def scale_in_place(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load(z) * 2.0 + 1.0)


@nt.jit
def scale_in_place_mapped(z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(z, idx) * 2.0 + 1.0, idx)


@nt.jit(unchecked=True)
def bump(x, m: nt.Mutable, B: nt.Constant):
    i = nt.arange(B)
    nt.scatter(m, i, nt.load(x, (0,), (B,), padding=0.0))


def test_the_overlap_refusal_shows_the_in_place_idiom():
    a = _x()
    before = a.copy()
    with pytest.raises(AliasingError) as info:
        scale_add(a, nt.partition(a, 16), 16, interpret=True)  # MARK alias
    text = str(info.value)
    assert "'z' overlaps read-only argument 'x'" in text
    assert "to update an array in place, pass it once, as the partition 'z'" in text
    assert "nt.store(z, f(nt.load(z)))" in text and "nt.tiles(z)" in text
    _at(info.value, "alias")
    np.testing.assert_array_equal(a, before)


def test_the_in_place_idiom_of_the_message_runs():
    """The message's code, as written, against NumPy in float64: the block's own tile, and an
    index from tiles() on a partition mapped onto fewer blocks than tiles."""
    for kern, part in ((scale_in_place, lambda a: nt.partition(a, 16)),
                       (scale_in_place_mapped, lambda a: nt.partition(a, 16, blocks=3))):
        a = _x(200)
        want = (a.astype(np.float64) * 2.0 + 1.0).astype(np.float32)
        kern(part(a), 16, interpret=True)
        np.testing.assert_allclose(a, want, rtol=1e-6, atol=1e-6)


def test_the_overlap_refusal_of_a_mutable_array_names_it():
    a = _x(16)
    with pytest.raises(AliasingError) as info:
        bump(a, a, 16, interpret=True, unchecked=True)  # MARK alias-mutable
    assert "pass it once, as the Mutable argument 'm'" in str(info.value)
    _at(info.value, "alias-mutable")


# ------------------------------------------------------------------------- attributes


@nt.jit
def uses_strides(x, z: nt.Partition["B"], B: nt.Constant):
    n = x.strides[0]  # MARK strides
    nt.store(z, nt.load_like(x, z) + n)


@nt.jit
def uses_size(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + z.size)  # MARK size


@nt.jit
def uses_tile_size(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    nt.store(z, t * t.size)  # MARK tile-size


@pytest.mark.parametrize("path", ["interpreter", "ptx"])
@pytest.mark.parametrize("kern, args, tag, fragments", [
    (uses_strides, lambda: (_x(), nt.partition(np.zeros(64, np.float32), 16), 16), "strides",
     ("a tensor has no attribute 'strides' in a kernel", "x.shape, x.ndim and x.dtype",
      "nt.num_tiles(x, axis, TILE)")),
    (uses_size, lambda: (_x(), nt.partition(np.zeros(64, np.float32), 16), 16), "size",
     ("a partition has no attribute 'size' in a kernel", "nt.num_tiles")),
    (uses_tile_size, lambda: (_x(), nt.partition(np.zeros(64, np.float32), 16), 16),
     "tile-size", ("a tile has no attribute 'size'", ".shape (static), .ndim, .dtype and .T")),
], ids=["tensor.strides", "partition.size", "tile.size"])
def test_an_attribute_says_what_to_write(kern, args, tag, fragments, path):
    argv = args()
    with pytest.raises(TileTypingError) as info:
        if path == "interpreter":
            kern(*argv, interpret=True)
        else:
            kern.ptx(*argv)
    text = str(info.value)
    assert text.startswith(f"kernel '{kern.__name__}': "), text
    for fragment in fragments:
        assert fragment in text, text
    assert "Unknown attribute" not in text            # Numba's words, with the layout
    _at(info.value, tag)


# ------------------------------------------------------------------ a list for an array


@nt.jit
def add(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def affine(x, s, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * s[0] + s[1])


@nt.jit
def total(xs, z: nt.Partition["B"], B: nt.Constant):
    acc = nt.load_like(xs[0], z)
    for k in nt.static_range(1, len(xs)):
        acc = acc + nt.load_like(xs[k], z)
    nt.store(z, acc)


def test_a_list_of_numbers_for_an_input_says_to_pass_an_array():
    x = _x(16)
    z = np.zeros(16, np.float32)
    with pytest.raises(TileArgumentError) as info:
        add(x.tolist(), x, nt.partition(z, 16), 16, interpret=True)  # MARK list-input
    text = str(info.value)
    assert isinstance(info.value, TypeError)
    assert "argument 'x': got a Python list of 16 items of type float" in text
    assert "numpy.asarray(x)" in text and "cupy.asarray(x)" in text
    _at(info.value, "list-input")
    assert not z.any()


def test_a_list_for_a_partition_says_to_partition_an_array():
    x = _x(16)
    with pytest.raises(TileArgumentError) as info:
        add(x, x, [0.0] * 16, 16, interpret=True)  # MARK list-partition
    assert "nt.partition(numpy.asarray(z), tile_shape)" in str(info.value)
    _at(info.value, "list-partition")


def test_a_nested_list_says_to_pass_an_array():
    x = _x(16)
    z = nt.partition(np.zeros(16, np.float32), 16)
    with pytest.raises(TileArgumentError) as info:
        add(x.reshape(4, 4).tolist(), x, z, 16, interpret=True)  # MARK nested
    text = str(info.value)
    assert "got a list holding a list" in text and "numpy.asarray(x)" in text
    _at(info.value, "nested")


def test_lists_stay_groups_where_the_kernel_indexes_them():
    """A list of numbers indexed by the kernel, and a list of arrays, are groups: they run,
    against NumPy in float64."""
    x = _x(64)
    s = [float(RNG.standard_normal()), float(RNG.standard_normal())]
    z = np.zeros(64, np.float32)
    affine(x, s, nt.partition(z, 16), 16, interpret=True)
    np.testing.assert_allclose(z, x.astype(np.float64) * s[0] + s[1], rtol=1e-5, atol=1e-5)
    xs = [_x(64) for _ in range(3)]
    z = np.zeros(64, np.float32)
    total(xs, nt.partition(z, 16), 16, interpret=True)
    np.testing.assert_allclose(z, np.sum([a.astype(np.float64) for a in xs], axis=0),
                               rtol=1e-5, atol=1e-5)


def test_a_list_of_arrays_used_whole_says_a_list_is_a_group():
    x = _x(16)
    with pytest.raises(TileArgumentError) as info:
        add([x], x, nt.partition(np.zeros(16, np.float32), 16), 16, interpret=True)
    assert "pass the array, not a tuple or list holding it" in str(info.value)


# ------------------------------------------------------------------------ kernel[grid]


@nt.jit
def no_partition(x, y):
    pass


def test_numba_launch_syntax_says_how_to_launch():
    with pytest.raises(TileArgumentError) as info:
        add[4, 128]  # MARK getitem
    text = str(info.value)
    assert isinstance(info.value, TypeError)
    assert "kernel 'add' is launched by calling it" in text
    assert "one block per tile of its partitions" in text and "num_warps" in text
    _at(info.value, "getitem")


def test_numba_launch_syntax_without_partitions_names_grid():
    with pytest.raises(TileArgumentError) as info:
        no_partition[8]  # MARK getitem-grid
    assert "no_partition(..., grid=N)" in str(info.value)
    _at(info.value, "getitem-grid")


def test_an_autotuned_kernel_refuses_numba_launch_syntax_too():
    tuned = nt.autotune(configs=[nt.Config({"B": 16})])(add)
    with pytest.raises(TileArgumentError) as info:
        tuned[2]  # MARK getitem-tuned
    assert "autotune 'add' is launched by calling it" in str(info.value)
    _at(info.value, "getitem-tuned")


def test_a_kernel_is_not_iterable():
    with pytest.raises(TypeError):
        iter(add)
    with pytest.raises(TypeError):
        list(nt.autotune(configs=[nt.Config({"B": 16})])(add))
