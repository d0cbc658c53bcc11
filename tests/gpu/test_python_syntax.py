"""Syntax kernels are written in, from Triton and NumPy habits (``typing/syntax.py``, the tile
attributes of ``typing/shape.py``): augmented assignment on tiles and scalars (``acc += ...``),
NumPy's newaxis (``t[:, None]``, ``t[None, :]``, ``t[None]``), ``t.T``, ``t.shape``,
``t.ndim`` and ``t.dtype``; on both backends, against NumPy in float64 on fresh random inputs
with ragged edges."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.errors import TileTypingError


@nt.jit
def augmented(x, y: nt.Partition[("BM", "BN")], z: nt.Partition["BM"], BM: nt.Constant,
              BN: nt.Constant):
    i = nt.bid(0)
    acc = nt.zeros((BM, BN), nt.float32)
    s = 0.0
    for k in range(nt.num_tiles(x, 1, BN)):
        t = nt.load(x, (i, k), (BM, BN), padding=0)
        acc += t
        acc *= 0.5
        s += 1.0
    acc -= nt.sum(acc, 1)[:, None] / BN
    acc /= nt.max(abs(acc), 0)[None, :] + 1.0
    nt.store(y, acc)
    r = nt.sum(acc, 1)
    r **= 2
    r %= 3.0
    r += s
    nt.store(z, r)


def _augmented_ref(x, bm, bn):
    x = x.astype(np.float64)
    m, n = x.shape
    tiles_n = -(-n // bn)
    y = np.zeros((m, bn))
    z = np.zeros(m)
    for b in range(-(-m // bm)):
        rows = slice(b * bm, min(m, (b + 1) * bm))
        acc = np.zeros((bm, bn))
        for k in range(tiles_n):
            t = np.zeros((bm, bn))
            part = x[rows, k * bn:(k + 1) * bn]
            t[:part.shape[0], :part.shape[1]] = part
            acc = (acc + t) * 0.5
        acc = acc - acc.sum(1)[:, None] / bn
        acc = acc / (np.abs(acc).max(0)[None, :] + 1.0)
        r = np.mod(acc.sum(1) ** 2, 3.0) + tiles_n
        count = rows.stop - rows.start
        y[rows] = acc[:count]
        z[rows] = r[:count]
    return y, z


@pytest.mark.parametrize("shape, tile", [((37, 45), (8, 16)), ((16, 64), (16, 16)),
                                         ((5, 3), (4, 4))])
def test_augmented_assignment_and_newaxis(tile_backend, shape, tile):
    rng = np.random.default_rng()
    x = rng.standard_normal(shape).astype(np.float32)
    bm, bn = tile
    y = tile_backend.asarray(np.full((shape[0], bn), np.nan, np.float32))
    z = tile_backend.asarray(np.full(shape[0], np.nan, np.float32))
    tile_backend.run(augmented, tile_backend.asarray(x), nt.partition(y, (bm, bn)),
                     nt.partition(z, (bm,)), bm, bn)
    want_y, want_z = _augmented_ref(x, bm, bn)
    np.testing.assert_allclose(tile_backend.to_numpy(y), want_y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tile_backend.to_numpy(z), want_z, rtol=1e-4, atol=1e-4)


@nt.jit
def attributes(x, y: nt.Partition[("BN", "BM")], z: nt.Partition[("BM", "BN")],
               w: nt.Partition["BM"], BM: nt.Constant, BN: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (BM, BN), padding=0)
    nt.store(y, t.T)
    twice = nt.zeros(t.shape, t.dtype)
    twice += t * 2
    nt.store(z, twice)
    col = nt.full((t.shape[0],), t.ndim, nt.int32)
    col += nt.astype(nt.sum(nt.sum(t[None], 2), 0) > 0, nt.int32)
    nt.store(w, col)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_tile_attributes_and_transpose(tile_backend, dtype):
    rng = np.random.default_rng()
    m, n, bm, bn = 21, 13, 8, 16
    x = (rng.standard_normal((m, n)) * 10).astype(dtype)
    y = tile_backend.asarray(np.zeros((3 * bn, bm), dtype))
    z = tile_backend.asarray(np.zeros((3 * bm, bn), dtype))
    w = tile_backend.asarray(np.full(3 * bm, -7, np.int32))
    tile_backend.run(attributes, tile_backend.asarray(x),
                     nt.partition(y, (bn, bm)), nt.partition(z, (bm, bn)),
                     nt.partition(w, (bm,)), bm, bn)
    pad = np.zeros((3 * bm, bn), np.float64)
    pad[:m, :n] = x
    blocks_t = np.concatenate([pad[b * bm:(b + 1) * bm].T for b in range(3)])
    np.testing.assert_array_equal(tile_backend.to_numpy(y), blocks_t.astype(dtype))
    np.testing.assert_array_equal(tile_backend.to_numpy(z), (pad * 2).astype(dtype))
    np.testing.assert_array_equal(tile_backend.to_numpy(w), 2 + (pad.sum(1) > 0))


_MATH_REF = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda v: 1 / np.sqrt(v), "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "sin": np.sin, "cos": np.cos, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "rint": np.rint, "log1p": np.log1p, "expm1": np.expm1, "log10": np.log10, "cbrt": np.cbrt,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": lambda v: np.arccosh(v + 1),
    "atanh": np.arctanh,
}


def _scalar_math_kernel(name):
    fn = getattr(nt, name)
    shift = 1 if name == "acosh" else 0

    @nt.jit
    def kernel(x, y: nt.Partition):
        s = x[nt.bid(0)] + shift
        nt.store(y, nt.full((1,), fn(s), nt.float64))
    return kernel


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("name", sorted(_MATH_REF))
def test_math_functions_of_scalars(tile_backend, name, dtype):
    """``nt.exp(s)`` of a scalar is the function of a one-element tile of its dtype: a float
    keeps its type, an integer computes in float32."""
    rng = np.random.default_rng()
    if np.dtype(dtype).kind == "i":
        x = rng.integers(0, 3, 16).astype(dtype) if name not in ("asin", "acos", "atanh") \
            else np.zeros(16, dtype)
    else:
        x = rng.uniform(0.05, 0.95, 16).astype(dtype)
    y = tile_backend.asarray(np.full(16, np.nan))
    tile_backend.run(_scalar_math_kernel(name), tile_backend.asarray(x), nt.partition(y, (1,)))
    with np.errstate(divide="ignore"):
        want = _MATH_REF[name](x.astype(np.float64))
    single = np.dtype(dtype) != np.float64
    want = want.astype(np.float32).astype(np.float64) if single else want
    rtol = 4e-6 if single else 1e-14
    np.testing.assert_allclose(tile_backend.to_numpy(y), want, rtol=rtol,
                               atol=1e-7 if single else 0)


@nt.jit
def maybe_bias(x, bias, y: nt.Partition["B"], B: nt.Constant, HAS_BIAS: nt.Constant):
    t = nt.load_like(x, y)
    if HAS_BIAS:
        b = nt.load_like(bias, y)
    t *= 2
    if HAS_BIAS:
        t += b
    nt.store(y, t)


@nt.jit
def bias_read_anyway(x, bias, y: nt.Partition["B"], B: nt.Constant, HAS_BIAS: nt.Constant):
    t = nt.load_like(x, y)
    if HAS_BIAS:
        b = nt.load_like(bias, y)
    nt.store(y, t + b)  # MARK read


@pytest.mark.parametrize("has_bias", [False, True, 0, 1])
def test_a_variable_of_a_pruned_branch_needs_no_definition(tile_backend, has_bias):
    """Triton's constexpr habit: ``b`` assigned and read only under ``if HAS_BIAS``; with
    HAS_BIAS false both branches are gone, and so is ``b``."""
    rng = np.random.default_rng()
    x = rng.standard_normal(45).astype(np.float32)
    bias = rng.standard_normal(45).astype(np.float32)
    y = tile_backend.asarray(np.zeros(45, np.float32))
    tile_backend.run(maybe_bias, tile_backend.asarray(x), tile_backend.asarray(bias),
                     nt.partition(y, (16,)), 16, has_bias)
    want = 2 * x.astype(np.float64) + (bias if has_bias else 0)
    np.testing.assert_allclose(tile_backend.to_numpy(y), want, rtol=1e-6)


@pytest.mark.parametrize("path", ["interpreter", "ptx"])
def test_reading_a_variable_of_a_pruned_branch_is_refused(path):
    x = np.zeros(32, np.float32)
    args = (x, x, nt.partition(np.zeros(32, np.float32), (16,)), 16, False)
    with pytest.raises(TileTypingError) as info:
        if path == "interpreter":
            bias_read_anyway(*args, interpret=True)
        else:
            bias_read_anyway.ptx(*args)
    text = str(info.value)
    assert "variable 'b' is read here but assigned only under a branch that a Constant " \
        "removes" in text, text
    assert info.value.lineno is not None and "# MARK read" in open(__file__).read().splitlines()[
        info.value.lineno - 1], text


@nt.jit
def slices(x, a: nt.Partition[("G", "BN")], b: nt.Partition[("BM", "H")],
           c: nt.Partition[("G", "H")], d: nt.Partition[("G", "BN", 1)],
           BM: nt.Constant, BN: nt.Constant, G: nt.Constant, H: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (BM, BN))            # masked past x's edges
    nt.store(a, t[0:G])
    nt.store(b, t[:, BN - H:])
    nt.store(c, nt.subtile(t, (G, 2), (G, H)))
    nt.store(d, t[-G:, :, None])


@pytest.mark.parametrize("shape", [(16, 16), (13, 11), (3, 16)])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_static_slices_of_a_tile(tile_backend, shape, dtype):
    """``t[0:G]``, ``t[:, BN - H:]``, ``nt.subtile``, ``t[-G:, :, None]`` of one (16, 16) tile
    per block; where the array ends inside the tile, the slice's valid box moves with it (its
    invalid elements are not stored)."""
    rng = np.random.default_rng()
    bm, bn, g, h = 16, 16, 4, 8
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    outs = [np.full((g, bn), -1, dtype), np.full((bm, h), -1, dtype), np.full((g, h), -1, dtype),
            np.full((g, bn, 1), -1, dtype)]
    dev = [tile_backend.asarray(o) for o in outs]
    tile_backend.run(slices, tile_backend.asarray(x), nt.partition(dev[0], (g, bn)),
                     nt.partition(dev[1], (bm, h)), nt.partition(dev[2], (g, h)),
                     nt.partition(dev[3], (g, bn, 1)), bm, bn, g, h)
    tile = np.full((bm, bn), -1, dtype)         # -1: past x's edge, never stored
    tile[:shape[0], :shape[1]] = x[:bm, :bn]
    wants = [tile[0:g], tile[:, bn - h:], tile[g:2 * g, 2:2 + h], tile[-g:, :, None]]
    for got, want in zip(dev, wants):
        np.testing.assert_array_equal(tile_backend.to_numpy(got), want)


@nt.jit
def odd_slice(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    nt.store(z, nt.zeros((B,), nt.float32) + nt.sum(t[0:3], 0))  # MARK odd


@nt.jit
def outside_box(x, z: nt.Partition["B"], B: nt.Constant):
    t = nt.load_like(x, z)
    nt.store(z, nt.zeros((B,), nt.float32) + nt.sum(nt.subtile(t, (12,), (8,)), 0))  # MARK box


@pytest.mark.parametrize("path", ["interpreter", "ptx"])
@pytest.mark.parametrize("kernel, fragments", [
    (odd_slice, ("static slices of power-of-two lengths", "3 elements of axis 0")),
    (outside_box, ("a box inside the (16,) tile", "elements 12 to 20 of axis 0")),
], ids=["odd", "outside"])
def test_slices_that_are_not_tiles_are_refused(path, kernel, fragments):
    x = np.zeros(32, np.float32)
    args = (x, nt.partition(np.zeros(32, np.float32), (16,)), 16)
    with pytest.raises(TileTypingError) as info:
        if path == "interpreter":
            kernel(*args, interpret=True)
        else:
            kernel.ptx(*args)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


@nt.jit
def array_attributes(x, y: nt.Partition["B"], B: nt.Constant):
    m, n = x.shape
    t = nt.load(x, (0, 0), (1, B), padding=0)
    v = nt.sum(t, 0) * m + n + y.shape[0] * 1000 + x.ndim * 100000
    nt.store(y, nt.astype(v, y.dtype))


@pytest.mark.parametrize("shape", [(3, 5), (7, 16), (1, 1)])
@pytest.mark.parametrize("view", ["plain", "sliced"])
def test_array_shape_ndim_and_dtype(tile_backend, shape, view):
    """``x.shape`` is the array's extents at run time (of a view: the view's), ``x.ndim`` and
    ``x.dtype`` static; ``y.shape`` of a partition its whole array's."""
    rng = np.random.default_rng()
    base = rng.integers(-9, 9, (shape[0] + 2, shape[1] + 3)).astype(np.float64)
    x = base[:shape[0], :shape[1]] if view == "plain" else base[2:, 3:]
    y = tile_backend.asarray(np.zeros(40))
    tile_backend.run(array_attributes, tile_backend.asarray(np.ascontiguousarray(x)
                                                              if view == "plain" else x),
                     nt.partition(y, (16,)), 16)
    row = np.zeros(16)
    row[:min(16, x.shape[1])] = x[0, :16]
    want = row * x.shape[0] + x.shape[1] + 40 * 1000 + 2 * 100000
    got = tile_backend.to_numpy(y)
    for b in range(3):
        np.testing.assert_array_equal(got[16 * b:min(40, 16 * (b + 1))],
                                      want[:min(40, 16 * (b + 1)) - 16 * b])


@nt.jit
def pruned_in_loops(x, n, y: nt.Partition["B"], B: nt.Constant, F: nt.Constant):
    t = nt.load_like(x, y)
    for k in range(3):
        if F:
            b = t * k
        if F:
            t += b
    i = 0
    while i < n:
        if F:
            c = t + i
        i += 1
        if F:
            t = c
    nt.store(y, t)


@nt.jit
def pruned_read_after_loop(x, y: nt.Partition["B"], B: nt.Constant, F: nt.Constant):
    t = nt.load_like(x, y)
    for k in range(3):
        if F:
            b = t * k
    nt.store(y, t + b)  # MARK after-loop


@pytest.mark.parametrize("flag", [False, True])
def test_constant_branches_inside_loops(tile_backend, flag):
    rng = np.random.default_rng()
    x = rng.standard_normal(40).astype(np.float32)
    y = tile_backend.asarray(np.zeros(40, np.float32))
    tile_backend.run(pruned_in_loops, tile_backend.asarray(x), 3, nt.partition(y, (16,)), 16,
                     flag)
    want = x.astype(np.float64)
    if flag:
        for k in range(3):
            want = want + want * k
        for i in range(3):
            want = want + i
    # float32 sums: a result near zero keeps the absolute error of its larger terms
    np.testing.assert_allclose(tile_backend.to_numpy(y), want, rtol=1e-5,
                               atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("path", ["interpreter", "ptx"])
def test_a_read_after_a_loop_of_a_pruned_variable_is_refused_at_the_read(path):
    x = np.zeros(32, np.float32)
    args = (x, nt.partition(np.zeros(32, np.float32), (16,)), 16, False)
    with pytest.raises(TileTypingError) as info:
        if path == "interpreter":
            pruned_read_after_loop(*args, interpret=True)
        else:
            pruned_read_after_loop.ptx(*args)
    assert "variable 'b' is read here but assigned only under a branch" in str(info.value)
    line = open(__file__).read().splitlines()[info.value.lineno - 1]
    assert "# MARK after-loop" in line


State = __import__("collections").namedtuple("State", "T p")


@nt.jit(unchecked=True)
def named_field_t(x, temp, y: nt.Partition["B"], B: nt.Constant):
    s = State(temp, 2.0)
    sh = (B, B, 1)
    t = nt.load(x, nt.bid(0), sh[:1], padding=0)
    nt.store(y, t[:] * s.T)


def test_tuples_keep_their_slices_and_named_tuples_their_field_t(tile_backend):
    rng = np.random.default_rng()
    x = rng.standard_normal(40).astype(np.float32)
    y = tile_backend.asarray(np.zeros(40, np.float32))
    tile_backend.run(named_field_t, tile_backend.asarray(x), 3.0, nt.partition(y, (16,)), 16,
                     unchecked=True)
    np.testing.assert_allclose(tile_backend.to_numpy(y), x * 3.0, rtol=1e-6)


@nt.jit
def stepped(x, y: nt.Partition["B"], B: nt.Constant):
    nt.store(y, nt.load(x, nt.bid(0), (2 * B,))[::2])


@nt.jit
def tensor_operand(x, y: nt.Partition["B"], B: nt.Constant):
    x += 1
    nt.store(y, nt.load_like(x, y))


@pytest.mark.parametrize("path", ["interpreter", "ptx"])
@pytest.mark.parametrize("kernel, fragment", [
    (stepped, "a tile is indexed by static slices of step 1 and None only"),
    (tensor_operand, "an array parameter is not an operand"),
], ids=["step", "tensor-operand"])
def test_unsupported_spellings_say_what_works(path, kernel, fragment):
    x = np.zeros(64, np.float32)
    args = (x, nt.partition(np.zeros(32, np.float32), (16,)), 16)
    with pytest.raises(TileTypingError) as info:
        if path == "interpreter":
            kernel(*args, interpret=True)
        else:
            kernel.ptx(*args)
    assert fragment in str(info.value), str(info.value)
    assert np.all(x == 0)


@nt.jit
def dtype_branches(x, y: nt.Partition["B"], B: nt.Constant):
    t = nt.load(x, nt.bid(0), (B,), padding=0)
    half = 1 if x.dtype == np.float16 else 0
    other = 100 if t.dtype != nt.float32 else 0
    nt.store(y, nt.astype(t, nt.float32) * 0 + half + other)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_dtype_comparisons_are_static(tile_backend, dtype):
    """``x.dtype == nt.float16`` and ``t.dtype != nt.float32`` (Triton's dtype branches) are
    booleans known at compile time, the same on both backends."""
    x = np.zeros(20, dtype)
    y = tile_backend.asarray(np.full(20, -1.0, np.float32))
    tile_backend.run(dtype_branches, tile_backend.asarray(x), nt.partition(y, (16,)), 16)
    want = (1 if dtype == np.float16 else 0) + (100 if dtype != np.float32 else 0)
    np.testing.assert_array_equal(tile_backend.to_numpy(y), np.full(20, want, np.float32))


@nt.jit
def scalar_abs(x, i, y: nt.Partition, j: nt.Partition):
    nt.store(y, nt.abs(x[nt.bid(0)]))
    nt.store(j, nt.abs(i[nt.bid(0)]))


@pytest.mark.parametrize("fdt, idt", [(np.float32, np.int32), (np.float64, np.int64),
                                      (np.float32, np.int8)])
def test_abs_of_scalars(tile_backend, fdt, idt):
    """``nt.abs(s)`` of a scalar is Python's ``abs`` in the scalar's type (an int8 -128 stays
    -128, as NumPy's and Numba's)."""
    rng = np.random.default_rng()
    x = np.concatenate([[-0.0, -np.inf, np.nan], rng.standard_normal(13)]).astype(fdt)
    info = np.iinfo(idt)
    i = np.concatenate([[info.min, info.max, 0], rng.integers(info.min, info.max, 13)]) \
        .astype(idt)
    y = tile_backend.asarray(np.zeros(16, fdt))
    j = tile_backend.asarray(np.zeros(16, idt))
    tile_backend.run(scalar_abs, tile_backend.asarray(x), tile_backend.asarray(i),
                     nt.partition(y, (1,)), nt.partition(j, (1,)))
    np.testing.assert_array_equal(tile_backend.to_numpy(y), np.abs(x))
    np.testing.assert_array_equal(tile_backend.to_numpy(j), np.abs(i))
