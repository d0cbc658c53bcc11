"""Typing and ownership errors of kernels, the promotion table, the blocked layout and the op
registry; interpreter mode only, no GPU.

A typing error must say what is wrong in the user's terms: its class, the op and argument, what was
expected, and the user's line (``err.filename``/``err.lineno``). Each kernel below marks the line
the error must point at with a ``# <marker>`` comment.
"""

import itertools
import re

import numpy as np
import pytest
from numba import cuda
from numba.cuda import types
from numba.cuda.extending import intrinsic

import numba_tile as nt
from numba_tile import dtypes, errors
from numba_tile._registry import OPS
from numba_tile.layout import BlockedLayout


def marker_line(marker: str) -> int:
    """1-based line of this file that ends with the comment ``# <marker>``."""
    with open(__file__) as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, f"marker {marker!r} found on lines {hits}"
    return hits[0]


def launch(kernel, *args):
    """Launch in the interpreter on fresh arrays; returns the raised error (or fails)."""
    with pytest.raises(errors.TileError) as info:
        kernel(*args, interpret=True)
    return info.value


def args_1d(n=16):
    x = np.arange(n, dtype=np.float32)
    z = np.zeros(n, np.float32)
    return x, z


# ----------------------------------------------------------------------------- kernels


@nt.jit
def store_to_input(x, z: nt.Partition):
    nt.store(x, nt.load_like(x, z))  # store-input


@nt.jit
def store_to_alias(x, z: nt.Partition):
    y = x
    nt.store(y, nt.load_like(x, z))  # store-alias


@nt.jit
def store_at_index(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z), (0,))  # store-index


@nt.jit
def load_runtime_shape(x, z: nt.Partition, n):
    nt.store(z, nt.load(x, (0,), (n,)))  # load-runtime-shape


@nt.jit
def load_non_pow2_shape(x, z: nt.Partition):
    nt.store(z, nt.load(x, (0,), (12,)))  # load-non-pow2


@nt.jit
def load_non_pow2_constant(x, z: nt.Partition, B: nt.Constant):
    nt.store(z, nt.load(x, (0,), (B,)))  # load-non-pow2-constant


@nt.jit
def load_wrong_index_rank(x, z: nt.Partition):
    nt.store(z, nt.load(x, (0, 0), (16,)))  # load-index-rank


@nt.jit
def load_wrong_shape_rank(x, z: nt.Partition):
    nt.store(z, nt.load(x, (0,), (16, 16)))  # load-shape-rank


@nt.jit
def load_partition_at_index(x, z: nt.Partition):
    nt.store(z, nt.load(z, (0,), (16,)))  # load-partition-index


@nt.jit
def add_different_shapes(x, z: nt.Partition):
    nt.store(z, nt.load(x, (0,), (16,)) + nt.load(x, (0,), (8,)))  # add-shapes


@nt.jit
def bitwise_on_floats(x, z: nt.Partition):
    t = nt.load_like(x, z)
    nt.store(z, t & t)  # bitwise-float


@nt.jit
def bid_out_of_range(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) + nt.bid(1))  # bid-axis


@intrinsic
def peek(typingctx, a):
    """A helper Numba can type but numba_tile cannot see into: returns 0."""
    def codegen(context, builder, sig, args):
        return context.get_constant(types.int64, 0)
    return types.int64(a), codegen


@nt.jit
def pass_to_intrinsic(x, z: nt.Partition):
    peek(z)  # call-intrinsic
    nt.store(z, nt.load_like(x, z))


@cuda.jit(device=True)
def device_helper(a):
    return 0


@nt.jit
def pass_to_device_function(x, z: nt.Partition):
    device_helper(x)  # call-device-function
    nt.store(z, nt.load_like(x, z))


def python_helper(a):
    return 0


@nt.jit
def pass_to_python_function(x, z: nt.Partition):
    python_helper(x)  # call-python-function
    nt.store(z, nt.load_like(x, z))


@nt.jit
def no_partition(x, y):
    nt.load(x, (0,), (16,))


# ----------------------------------------------------------------------------- errors

# (kernel, extra launch args, error class, message fragments)
CASES = {
    "store-input": (store_to_input, (), errors.StoreToReadOnlyError,
                    ["store() writes parameter 'x'", "does not declare mutable",
                     "numba_tile.Partition"]),
    "store-alias": (store_to_alias, (), errors.StoreToReadOnlyError,
                    ["store() writes parameter 'x'", "does not declare mutable"]),
    "store-index": (store_at_index, (), errors.ForeignTileStoreError,
                    ["partition 'z'", "built by hand", "tiles(z)"]),
    "load-runtime-shape": (load_runtime_shape, (16,), errors.TileTypingError,
                           ['"shape" of load()', "static shape"]),
    "load-non-pow2": (load_non_pow2_shape, (), errors.TileTypingError, ['"shape" of load()']),
    "load-non-pow2-constant": (load_non_pow2_constant, (12,), errors.TileTypingError,
                               ['"shape" of load()']),
    "load-index-rank": (load_wrong_index_rank, (), errors.TileTypingError,
                        ['"index" of load()', "a tuple of 1 integers"]),
    "load-shape-rank": (load_wrong_shape_rank, (), errors.TileTypingError, ['"shape" of load()']),
    "load-partition-index": (load_partition_at_index, (), errors.TileTypingError,
                             ['"index" of load()', "an index from tiles(z)", "race"]),
    "add-shapes": (add_different_shapes, (), errors.TileTypingError,
                   ['"operands" of +()', "shapes broadcast", "(16,) and (8,)"]),
    "bitwise-float": (bitwise_on_floats, (), errors.TileTypingError,
                      ['"operands" of &()', "integer or bool tiles", "float32"]),
    "bid-axis": (bid_out_of_range, (), errors.TileTypingError,
                 ['"axis" of bid()', "a static integer in [0, 1)"]),
    "call-intrinsic": (pass_to_intrinsic, (), errors.UnanalyzedCallError,
                       ["parameter(s) 'z'", "peek()", "only be given to numba_tile ops"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_error_class_and_message(case):
    kernel, extra, cls, fragments = CASES[case]
    x, z = args_1d()
    err = launch(kernel, x, nt.partition(z, 16), *extra)
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    for frag in fragments:
        assert frag in err.message, f"{frag!r} not in {err.message!r}"
    if cls.rule:
        assert cls.rule in str(err)
    np.testing.assert_array_equal(x, np.arange(16, dtype=np.float32))
    np.testing.assert_array_equal(z, np.zeros(16, np.float32))   # nothing ran


# Every error, from a typing rule or from the ownership pass, carries the user's line.


@pytest.mark.parametrize("case", list(CASES))
def test_error_points_at_the_users_line(case):
    kernel, extra, _cls, _ = CASES[case]
    x, z = args_1d()
    err = launch(kernel, x, nt.partition(z, 16), *extra)
    assert err.filename == __file__
    assert err.lineno == marker_line(case)
    src = open(__file__).read().splitlines()[err.lineno - 1].strip()
    assert src in str(err)                        # the report shows the line


# Numba types an op with literal arguments first: the error reports the static value.
@pytest.mark.parametrize("case,pattern", [
    ("load-non-pow2", r"power of two.*got \(12,\)"),
    ("load-non-pow2-constant", r"power of two.*got \(12,\)"),
    ("load-shape-rank", r"1 dimensions \(the rank of 'x'\), got \(16, 16\)"),
    ("bid-axis", r"got (1|Literal\[int\]\(1\))$"),
])
def test_error_describes_the_static_value(case, pattern):
    kernel, extra, _cls, _ = CASES[case]
    x, z = args_1d()
    err = launch(kernel, x, nt.partition(z, 16), *extra)
    assert re.search(pattern, err.message), err.message


def test_store_to_alias_names_the_parameter_not_the_alias():
    x, z = args_1d()
    err = launch(store_to_alias, x, nt.partition(z, 16))
    assert "'x'" in err.message and "'y'" not in err.message


def test_helper_cuda_device_function_is_unanalyzed():
    # a device function takes tiles and scalars (typing/device.py), with or without a GPU
    x, z = args_1d()
    err = launch(pass_to_device_function, x, nt.partition(z, 16))
    assert type(err) is errors.UnanalyzedCallError
    assert "'x'" in err.message and "device_helper" in err.message
    assert err.lineno == marker_line("call-device-function")


def test_a_plain_python_helper_is_inlined_and_checked():
    """A plain Python function the kernel calls is inlined before typing (typing/helpers.py):
    handing it a tensor it only ignores is harmless kernel code, and the launch runs (the
    helper that stores to a read-only tensor is corpus case C13)."""
    x, z = args_1d()
    pass_to_python_function(x, nt.partition(z, 16), interpret=True)
    np.testing.assert_array_equal(z, x[:16] if len(x) >= 16 else x)


def test_kernel_without_partition_parameter():
    x, y = args_1d()
    with pytest.raises(errors.TileArgumentError) as info:
        no_partition(x, y, interpret=True)
    assert "'no_partition'" in info.value.message
    assert "no Partition parameter" in info.value.message


def test_typing_errors_are_not_cached_as_success():
    """A failed check is raised again on the next launch, never skipped."""
    for _ in range(2):
        x, z = args_1d()
        err = launch(store_to_input, x, nt.partition(z, 16))
        assert type(err) is errors.StoreToReadOnlyError


# ----------------------------------------------------------------------------- promotion table

# Written from the table in numba_tile/dtypes.py's docstring, row and column order below.
_ORDER = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
_TABLE = """
bool      bool     int32    int64    float16  bfloat16 float32  float64
int32     int32    int32    int64    float16  bfloat16 float32  float64
int64     int64    int64    int64    float16  bfloat16 float32  float64
float16   float16  float16  float16  float16  float32  float32  float64
bfloat16  bfloat16 bfloat16 bfloat16 float32  bfloat16 float32  float64
float32   float32  float32  float32  float32  float32  float32  float64
float64   float64  float64  float64  float64  float64  float64  float64
"""
PROMOTE = {}
for _row in _TABLE.strip().splitlines():
    _a, *_results = _row.split()
    for _b, _r in zip(_ORDER, _results):
        PROMOTE[(_a, _b)] = _r


def _dt(name):
    return {"bool": nt.bool_, "int32": nt.int32, "int64": nt.int64, "float16": nt.float16,
            "bfloat16": nt.bfloat16, "float32": nt.float32, "float64": nt.float64}[name]


def test_promotion_table_is_symmetric():
    for a, b in itertools.product(_ORDER, repeat=2):
        assert PROMOTE[(a, b)] == PROMOTE[(b, a)]


@pytest.mark.parametrize("a,b", list(itertools.product(_ORDER, repeat=2)))
def test_promote(a, b):
    assert dtypes.promote(_dt(a), _dt(b)) == _dt(PROMOTE[(a, b)])


# Python scalars next to a tile: the tile's dtype when of the same kind (int with an integer tile,
# float with a float tile, bool with anything); a float with an integer or bool tile: float32;
# an int with a float tile: the tile's dtype (an int never widens a float, as int-with-float).
SCALAR = {}
for _t in _ORDER:
    SCALAR[(_t, "bool")] = _t
    SCALAR[(_t, "float")] = _t if _t.startswith(("float", "bfloat")) else "float32"
    if _t != "bool":
        SCALAR[(_t, "int")] = _t


@pytest.mark.parametrize("tile,kind", list(SCALAR))
def test_promote_scalar(tile, kind):
    assert dtypes.promote_scalar(_dt(tile), kind) == _dt(SCALAR[(tile, kind)])


@pytest.mark.parametrize("dt", _ORDER)
def test_true_divide_dtype(dt):
    expected = dt if dt.startswith(("float", "bfloat")) else "float32"
    assert dtypes.true_divide_dtype(_dt(dt)) == _dt(expected)


@nt.jit
def add_to_float64(x, y, out: nt.Partition):
    nt.store(out, nt.load_like(x, out) + nt.load_like(y, out))


@pytest.mark.parametrize("a,xv,b,yv,expected", [
    ("int32", 2049, "float16", 0.0, 2048.0),                 # int32 + float16 -> float16 (rounds)
    ("float16", 1 + 2 ** -10, "bfloat16", 0.0, 1 + 2 ** -10),  # -> float32 (bfloat16 would round)
    ("bool", True, "bfloat16", 257.0, 256.0),                # bool + bfloat16 -> bfloat16
    ("int32", 3, "float64", 2 ** 40 + 0.5, 2 ** 40 + 3.5),   # int + float64 -> float64
])
def test_promotion_is_visible_in_interpreter_values(a, xv, b, yv, expected):
    """The dtype the table gives shows in the rounding of the result (out is float64)."""
    xh = np.full(4, xv, dtypes.to_numpy(_dt(a)))
    yh = np.full(4, yv, dtypes.to_numpy(_dt(b)))
    out = np.zeros(4, np.float64)
    add_to_float64(xh, yh, nt.partition(out, 4), interpret=True)
    np.testing.assert_array_equal(out, np.full(4, expected))


# ----------------------------------------------------------------------------- blocked layout

SHAPES = [(1,), (2,), (8,), (32,), (128,), (1024,), (4096,), (1, 1), (1, 64), (64, 1), (2, 2),
          (4, 8), (16, 16), (8, 128), (64, 64), (128, 32), (2, 4, 8), (4, 4, 4), (1, 2, 256)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_blocked_layout_owns_every_element_once(shape):
    for num_threads, max_vec in itertools.product([32, 64, 128, 256, 1024], [1, 2, 4, 8, 16]):
        lay = BlockedLayout(shape, num_threads, max_vec)
        numel = int(np.prod(shape))
        owned = [lay.linear_index(t, s) for t in range(lay.threads_used)
                 for s in range(lay.elems_per_thread)]
        assert sorted(owned) == list(range(numel)), (shape, num_threads, max_vec)
        assert lay.threads_used <= num_threads
        assert lay.elems_per_thread * lay.threads_used == numel
        # a chunk is vec consecutive elements of one row
        assert 1 <= lay.vec <= max_vec and shape[-1] % lay.vec == 0
        for t in range(lay.threads_used):
            for rep in range(lay.reps):
                base = lay.linear_index(t, rep * lay.vec)
                assert [lay.linear_index(t, rep * lay.vec + v) for v in range(lay.vec)] == \
                    list(range(base, base + lay.vec))
                assert base // shape[-1] == (base + lay.vec - 1) // shape[-1]
        # threads above threads_used replicate a lower thread's elements
        step = max(1, (num_threads - lay.threads_used) // 7)
        for t in range(lay.threads_used, num_threads, step):
            assert [lay.linear_index(t, s) for s in range(lay.elems_per_thread)] == \
                [lay.linear_index(t % lay.threads_used, s) for s in range(lay.elems_per_thread)]
        # coords are the row-major multi-index
        for i in range(0, numel, max(1, numel // 17)):
            assert lay.coords(i) == tuple(int(c) for c in np.unravel_index(i, shape))


def test_blocked_layout_consecutive_threads_hold_consecutive_chunks():
    lay = BlockedLayout((64, 64), 128, 4)
    firsts = [lay.linear_index(t, 0) for t in range(lay.threads_used)]
    assert firsts == [t * lay.vec for t in range(lay.threads_used)]


def test_blocked_layout_rejects_non_powers_of_two():
    with pytest.raises(ValueError):
        BlockedLayout((12,), 128)
    with pytest.raises(ValueError):
        BlockedLayout((16,), 96)


# ----------------------------------------------------------------------------- op registry


def test_every_op_has_its_three_rules():
    assert OPS
    for name, d in OPS.items():
        for rule in ("typer", "lower", "interp"):
            assert callable(getattr(d, rule)), f"op {name!r} has no {rule} rule"


def test_public_ops_are_registered():
    registered = {d.stub for d in OPS.values() if d.stub is not None}
    for name in ("load", "load_like", "store", "where", "astype", "minimum", "maximum", "exp",
                 "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "sin", "cos",
                 "floor", "ceil", "full", "zeros", "arange", "bid", "num_blocks"):
        assert getattr(nt, name) in registered, name
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "le", "gt", "ge",
                 "eq", "ne", "and_", "or_", "xor", "neg", "pos", "invert", "builtin_abs"):
        assert name in OPS, name


def test_store_declares_its_write_effect():
    """The ownership pass reads only effects: store writes operand 0 and has a store index."""
    eff = OPS["store"].effects
    assert eff.writes == (0,) and eff.store_index == 2
    for name in ("load", "load_like"):
        assert OPS[name].effects.writes == () and OPS[name].effects.reads == (0,)
