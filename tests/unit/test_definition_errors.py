"""Bad kernel definitions and launch keywords are TileArgumentErrors at the user's line.

Every refusal here is a ``TileArgumentError`` (a ``TypeError`` subclass, so ``except TypeError``
still catches it) naming the kernel or the argument, what was expected and what was given, and
pointing at the user's line: the line that applies ``numba_tile.jit`` or evaluates
``Partition[...]`` for definitions, the launch line for launches. Legal neighbours of each class
still work. (No ``from __future__ import annotations`` here: ``Partition[...]`` in a signature
is evaluated where the ``def`` is, as in most user code; the string case has its own test.)
"""

import functools
import textwrap

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import errors
from numba_tile.runtime.fakes import FakeDeviceArray


def marker_line(marker: str) -> int:
    """1-based line of this file that ends with ``# <marker>``."""
    with open(__file__) as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def refused(call, *fragments, line=None, filename=__file__):
    """Runs ``call`` (a one-line lambda) and checks the TileArgumentError it raises: exact class,
    every fragment, at ``line`` (default: the lambda's own line), shown in the message."""
    with pytest.raises(TypeError) as info:
        call()
    err = info.value
    assert type(err) is errors.TileArgumentError, f"{type(err).__name__}: {err}"
    for fragment in fragments:
        assert fragment in err.message, f"{fragment!r} not in {err.message!r}"
    expected = call.__code__.co_firstlineno if line is None else line
    assert (err.filename, err.lineno) == (filename, expected), str(err)
    return err


# ----------------------------------------------------------------------------- Partition[...]

@pytest.mark.parametrize("subscript,shown", [
    (3, "got 3, which is not a positive power of two on axis 0"),
    (-4, "got -4, which is not a positive power of two on axis 0"),
    (0, "got 0, which is not a positive power of two on axis 0"),
    (1.0, "got 1.0 (float) on axis 0"),
    (None, "got None (NoneType) on axis 0"),
    (True, "got True (bool) on axis 0"),
    (np.True_, "(bool) on axis 0"),
    ((4, 6), "got 6, which is not a positive power of two on axis 1"),
    (("B", 2.5), "got 2.5 (float) on axis 1"),
    ([4, 8], "got [4, 8] (list) on axis 0")])
def test_a_malformed_partition_subscript_is_refused_where_it_is_written(subscript, shown):
    err = refused(lambda: nt.Partition[subscript],
                  "each declared tile extent must be a positive power of two (an int) or the name "
                  "of a Constant parameter (a str)", shown, "e.g. Partition[128]")
    assert isinstance(err, TypeError)


def test_an_empty_partition_subscript_is_refused():
    refused(lambda: nt.Partition[()], "Partition[()] declares no tile extent",
            "or write plain Partition to accept any tile shape")


def test_a_partition_subscript_in_a_signature_points_at_the_annotation():
    with pytest.raises(errors.TileArgumentError) as info:
        def k(x, z: nt.Partition[3]):  # P3-ANNOTATION
            pass
    assert info.value.lineno == marker_line("P3-ANNOTATION") and info.value.filename == __file__


def test_legal_partition_subscripts_are_kept():
    assert nt.Partition[128].tile_shape == (128,)
    assert nt.Partition["B"].tile_shape == ("B",)
    assert nt.Partition[("BM", 4)].tile_shape == ("BM", 4)
    declared = nt.Partition[(np.int64(8), 1)].tile_shape
    assert declared == (8, 1) and all(type(e) is int for e in declared)


def test_a_malformed_string_annotation_names_the_kernel_and_parameter(tmp_path):
    """Under ``from __future__ import annotations`` the subscript is read by the kernel's
    definition: the refusal names the kernel and the parameter and points at its def line."""
    source = tmp_path / "future_kernels.py"
    source.write_text(textwrap.dedent("""\
        from __future__ import annotations
        import numba_tile as nt


        @nt.jit
        def bad(x, z: nt.Partition[(4, 6)]):
            nt.store(z, nt.load_like(x, z))
        """))
    code = compile(source.read_text(), str(source), "exec")
    with pytest.raises(errors.TileArgumentError) as info:
        exec(code, {"__name__": "future_kernels"})
    err = info.value
    assert "kernel 'bad': parameter 'z': Partition[(4, 6)]" in err.message
    assert "got 6, which is not a positive power of two on axis 1" in err.message
    assert (err.filename, err.lineno) == (str(source), 5)


# ----------------------------------------------------------------------------- nt.jit(fn)

def plain(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z))


class Holder:
    def method(self, x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z))

    def __call__(self, x, z):
        pass


@pytest.mark.parametrize("make,fragment", [
    (lambda: functools.partial(plain, 1), "got a functools.partial of <function plain"),
    (lambda: int, "got the class int: a kernel is a function, not a class"),
    (lambda: 42, "got 42 (int), which is not callable"),
    (lambda: print, "got the built-in <built-in function print>, which has no Python code"),
    (lambda: Holder().method, "got the bound method"),
    (lambda: Holder(), "test_definition_errors.Holder object: a kernel is a function"),
    (lambda: staticmethod(plain), "got a staticmethod object"),
    (lambda: "plain", "got 'plain' (str), which is not callable")])
def test_jit_of_something_that_is_not_a_function_is_refused(make, fragment):
    what = make()
    refused(lambda: nt.jit(what), "numba_tile.jit: expected a Python function (a def or a "
            "lambda) to compile as a kernel", fragment)
    refused(lambda: nt.jit(num_warps=8)(what), fragment)


def test_jit_of_a_kernel_is_refused():
    kernel = nt.jit(plain)
    refused(lambda: nt.jit(kernel), "'plain' is already a numba_tile kernel")


def gen_kernel(x, z: nt.Partition):  # GEN
    yield nt.load_like(x, z)


async def async_kernel(x, z: nt.Partition):  # ASYNC
    nt.store(z, nt.load_like(x, z))


async def async_gen_kernel(x, z: nt.Partition):  # ASYNCGEN
    yield 1


def star_args(x, *rest):  # STARARGS
    pass


def star_kwargs(x, z: nt.Partition, **options):  # STARKW
    pass


def keyword_only(x, *, z: nt.Partition):  # KWONLY
    pass


@pytest.mark.parametrize("fn,marker,fragments", [
    (gen_kernel, "GEN", ["kernel 'gen_kernel': is a generator function (it contains yield)"]),
    (async_kernel, "ASYNC", ["kernel 'async_kernel': is an async function"]),
    (async_gen_kernel, "ASYNCGEN", ["is a generator function"]),
    (star_args, "STARARGS", ["kernel 'star_args': parameter '*rest' is variadic (*args)",
                             "a kernel takes plain positional parameters"]),
    (star_kwargs, "STARKW", ["parameter '**options' is variadic (**kwargs)"]),
    (keyword_only, "KWONLY", ["parameter 'z' is keyword-only (it follows * or *args)"])])
def test_functions_that_cannot_be_kernels_are_refused_at_their_definition(fn, marker, fragments):
    refused(lambda: nt.jit(fn), *fragments, line=marker_line(marker))


def test_a_lambda_with_star_args_is_refused_at_its_line():
    refused(lambda: nt.jit(lambda *a: None), "parameter '*a' is variadic (*args)")


# ----------------------------------------------------------------------------- jit options

@pytest.mark.parametrize("options,fragment", [
    ({"num_warps": True}, "num_warps: expected a power of two from 1 to 32 (an int), got True "
                          "(bool)"),
    ({"num_warps": 4.0}, "got 4.0 (float)"),
    ({"num_warps": 3}, "got 3 (int)"),
    ({"num_warps": 64}, "got 64 (int)"),
    ({"num_warps": "4"}, "got '4' (str)"),
    ({"min_blocks_per_sm": True}, "min_blocks_per_sm: expected an int from 1 to 32 or None, got "
                                  "True (bool)"),
    ({"min_blocks_per_sm": 0}, "got 0 (int)"),
    ({"min_blocks_per_sm": 2.0}, "got 2.0 (float)"),
    ({"interpret": "yes"}, "interpret: expected True or False, got 'yes' (str)"),
    ({"interpret": 1}, "got 1 (int)"),
    ({"interpret": None}, "got None (NoneType)"),
    ({"unchecked": "yes"}, "unchecked: expected True or False, got 'yes' (str)"),
    ({"unchecked": 1}, "got 1 (int)"),
    ({"unchecked": np.True_}, "(bool)")])
def test_jit_options_of_the_wrong_type_are_refused(options, fragment):
    refused(lambda: nt.jit(**options), "numba_tile.jit: ", fragment)
    refused(lambda: nt.jit(plain, **options), fragment)
    refused(lambda: nt.Kernel(plain, **options), fragment)


def test_legal_jit_options_are_kept():
    k = nt.jit(num_warps=8, min_blocks_per_sm=2, interpret=True)(plain)
    assert (k.num_warps, k.min_blocks_per_sm, k.interpret, k.unchecked) == (8, 2, True, False)
    u = nt.jit(unchecked=True, min_blocks_per_sm=None)(plain)
    assert u.unchecked is True and u.min_blocks_per_sm is None


# ----------------------------------------------------------------------------- launch keywords

@nt.jit
def copy(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@nt.jit
def copy_2d(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@nt.jit
def scaled(x, z: nt.Partition["B"], B: nt.Constant, S: nt.Constant):
    nt.store(z, nt.load_like(x, z) * S)


@nt.jit(unchecked=True)
def unchecked_copy(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


def pair(n=256):
    x = np.arange(n, dtype=np.float32)
    return x, np.zeros(n, np.float32)


@pytest.mark.parametrize("value,shown", [("yes", "'yes' (str)"), (1, "1 (int)"),
                                         (0, "0 (int)"), (np.True_, "(bool)")])
def test_interpret_at_launch_must_be_a_bool_or_none(value, shown):
    x, z = pair()
    refused(lambda: copy(x, nt.partition(z, 128), 128, interpret=value),
            "kernel 'copy': interpret: expected True, False or None (the kernel's default)", shown)
    assert not z.any()


@pytest.mark.parametrize("value,shown", [("yes", "'yes' (str)"), (1, "1 (int)"),
                                         (None, "None (NoneType)"), (np.True_, "(bool)")])
def test_unchecked_at_launch_must_be_exactly_true_or_false(value, shown):
    x, z = pair()
    refused(lambda: copy(x, nt.partition(z, 128), 128, interpret=True, unchecked=value),
            "kernel 'copy': unchecked: expected True or False", shown)
    refused(lambda: unchecked_copy(x, nt.partition(z, 128), 128, interpret=True, unchecked=value),
            "kernel 'unchecked_copy': unchecked: expected True or False", shown)
    assert not z.any()


class RaisingStream:
    @property
    def handle(self):
        raise RuntimeError("a stream object whose handle raises")


@pytest.mark.parametrize("stream,shown", [("x", "builtins.str ('x')"), (1.5, "builtins.float"),
                                          (True, "builtins.bool (True)"), (-1, "(-1)"),
                                          (2**64, f"({2**64})"),
                                          (RaisingStream(), "RaisingStream")])
def test_a_bad_stream_is_refused_in_the_interpreter_and_on_the_gpu_path(stream, shown):
    x, z = pair()
    expected = ["kernel 'copy': argument 'stream': expected None, an int handle from 0 to "
                "2**64 - 1, or a CuPy, Numba, PyTorch or cuda.core stream", shown]
    refused(lambda: copy(x, nt.partition(z, 128), 128, interpret=True, stream=stream), *expected)
    xd, zd = FakeDeviceArray(x), FakeDeviceArray(z)
    refused(lambda: copy(xd, nt.partition(zd, 128), 128, stream=stream), *expected)
    assert not z.any()


def test_legal_launch_keywords_still_run():
    x, z = pair()
    interpreted = nt.jit(interpret=True)(copy.fn)   # the kernel's default, for interpret=None
    for interpret in (True, None):
        z[:] = 0
        interpreted(x, nt.partition(z, 128), 128, interpret=interpret, stream=None,
                    unchecked=False).sync()
        np.testing.assert_array_equal(z, x)
    z[:] = 0
    unchecked_copy(x, nt.partition(z, 128), 128, interpret=True, unchecked=True,
                   stream=np.int64(0)).sync()
    np.testing.assert_array_equal(z, x)


# ----------------------------------------------------------------------------- tile Constants

@pytest.mark.parametrize("value,shown", [
    ([128], "got [128] (list)"), (float("nan"), "got nan (float)"), (object(), "(object)"),
    (128.0, "got 128.0 (float)"), (True, "got True (bool)"), (3, "got 3 (int)"),
    (-4, "got -4 (int)"), (0, "got 0 (int)"), ("128", "got '128' (str)")])
def test_a_constant_that_sizes_a_partition_tile_must_be_a_power_of_two_int(value, shown):
    x, z = pair()
    copy(x, nt.partition(z, 128), 128, interpret=True)      # the cache holds B=128's specs now
    z[:] = 0
    refused(lambda: copy(x, nt.partition(z, 128), value, interpret=True),
            "kernel 'copy': the Constant 'B' sizes a tile of partition 'z' (Partition['B']), so "
            "it must be a positive power-of-two int", shown)
    xd, zd = FakeDeviceArray(x), FakeDeviceArray(z)
    refused(lambda: copy.ptx(xd, nt.partition(zd, 128), value), "the Constant 'B'", shown)
    assert not z.any()


def test_the_second_extent_of_a_2d_declaration_is_checked_too():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    z = np.zeros_like(x)
    refused(lambda: copy_2d(x, nt.partition(z, (4, 4)), 4, 4.0, interpret=True),
            "the Constant 'BN' sizes a tile of partition 'z' (Partition[('BM', 'BN')])",
            "got 4.0 (float)")
    assert not z.any()


def test_tile_constants_of_numpy_integer_type_and_other_constants_still_run():
    x, z = pair()
    copy(x, nt.partition(z, 128), np.int64(128), interpret=True).sync()
    np.testing.assert_array_equal(z, x)
    z[:] = 0
    scaled(x, nt.partition(z, 64), 64, 2.5, interpret=True).sync()   # S sizes nothing: a float
    np.testing.assert_allclose(z, 2.5 * x)
