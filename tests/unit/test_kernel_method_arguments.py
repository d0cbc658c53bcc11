"""Arguments of a kernel's methods and runtime scalars are TileArgumentErrors at the user's line.

``Kernel.ptx`` / ``Kernel.compiled`` take ``cc``, a tuple of two ints that the CUDA toolkit
compiles for; ``Kernel.with_options`` takes ``num_warps``, ``num_stages`` and
``min_blocks_per_sm``; a runtime scalar argument is a bool, an int or a float. Anything else is
refused naming the kernel, the argument, what was expected and what was given, at the user's
line, before anything is compiled; legal neighbours still work.
"""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile import errors


def _known_targets():
    """The compute capabilities the CUDA toolkit compiles for (NVRTC's list), or None."""
    try:
        from numba.cuda.cudadrv import nvrtc
        return sorted(tuple(cc) for cc in nvrtc.get_supported_ccs())
    except Exception:  # noqa: BLE001 - no toolkit here
        return None


def refused(call, *fragments):
    """Runs ``call`` (a one-line lambda) and checks the TileArgumentError it raises: exact class,
    every fragment, at the lambda's own line."""
    with pytest.raises(TypeError) as info:
        call()
    err = info.value
    assert type(err) is errors.TileArgumentError, f"{type(err).__name__}: {err}"
    for fragment in fragments:
        assert fragment in err.message, f"{fragment!r} not in {err.message!r}"
    assert (err.filename, err.lineno) == (__file__, call.__code__.co_firstlineno), str(err)
    return err


@nt.jit
def scaled(x, z: nt.Partition["B"], s, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * s)


def _args(n=64):
    x = np.random.default_rng().standard_normal(n)
    return x, nt.partition(np.zeros(n), n), 2.0, n


@pytest.fixture
def no_compile(monkeypatch):
    """Fails the test if anything is compiled (a refusal comes first)."""
    def fail(*args, **kwargs):
        raise AssertionError("compiled before refusing")
    monkeypatch.setattr("numba_tile.kernel.compile_kernel", fail)


# ----------------------------------------------------------------------------- cc

@pytest.mark.parametrize("cc", [(9,), "9.0", 9.0, 90, [9, 0], (9, 0, 0), (9.0, 0), (9, "0"),
                                (True, 0), (np.int64(9), 0), (-1, 0), (9, -1), None])
def test_a_cc_that_is_not_a_tuple_of_two_ints_is_refused(cc, no_compile):
    for method in (scaled.ptx, scaled.compiled):
        refused(lambda: method(*_args(), cc=cc),
                "kernel 'scaled': cc: expected a compute capability (major, minor), a tuple of "
                "two ints such as (9, 0), got ", f"({type(cc).__name__})")


@pytest.mark.skipif(_known_targets() is None, reason="the CUDA toolkit lists no targets")
@pytest.mark.parametrize("cc", [(9, 7), (8, 5), (99, 0), (13, 9)])
def test_a_cc_the_toolkit_does_not_compile_for_is_refused(cc, no_compile):
    err = refused(lambda: scaled.ptx(*_args(), cc=cc),
                  f"kernel 'scaled': cc: {cc[0]}.{cc[1]} is not a compute capability this CUDA "
                  f"toolkit compiles for; numba_tile targets 8.0, ")
    assert "9.0" in err.message and "7.5" not in err.message


@pytest.mark.skipif(_known_targets() is None, reason="the CUDA toolkit lists no targets")
def test_every_listed_target_from_8_0_compiles_for_itself():
    for cc in _known_targets():
        if cc >= (8, 0):
            assert f".target sm_{cc[0]}{cc[1]}" in scaled.ptx(*_args(), cc=cc)


def test_a_target_below_8_0_is_still_a_typing_error():
    with pytest.raises(errors.TileTypingError, match=r"compute capability 8\.0 or newer.*got 7\.5"):
        scaled.ptx(*_args(), cc=(7, 5))


# ----------------------------------------------------------------------------- with_options

@pytest.mark.parametrize("option", ["bogus", "num_warp", "unchecked", "interpret", "fn",
                                    "grid"])
def test_with_options_refuses_an_option_it_does_not_take(option):
    err = refused(lambda: scaled.with_options(**{option: 1}),
                  f"kernel 'scaled': with_options() has no option '{option}': it takes "
                  f"num_warps, num_stages and min_blocks_per_sm")
    if option in ("unchecked", "interpret"):
        assert f"numba_tile.jit({option}=...)(kernel.fn)" in err.message


@pytest.mark.parametrize("options,fragment", [
    ({"num_warps": 3}, "num_warps: expected a power of two from 1 to 32 (an int), got 3 (int)"),
    ({"num_warps": 8.0}, "got 8.0 (float)"),
    ({"num_stages": 0}, "num_stages: expected an int from 1 to 8, got 0 (int)"),
    ({"num_stages": True}, "got True (bool)"),
    ({"min_blocks_per_sm": 0}, "min_blocks_per_sm: expected an int from 1 to 32 or None"),
    ({"num_warps": 8, "min_blocks_per_sm": "2"}, "got '2' (str)")])
def test_with_options_names_the_kernel_and_the_option_out_of_range(options, fragment):
    refused(lambda: scaled.with_options(**options), "kernel 'scaled': with_options(): ",
            fragment)


def test_with_options_makes_a_variant_and_leaves_the_kernel_unchanged():
    k = nt.jit(num_warps=4, num_stages=2, min_blocks_per_sm=2)(scaled.fn)
    v = k.with_options(num_warps=8)
    assert (v.num_warps, v.num_stages, v.min_blocks_per_sm) == (8, 2, 2)
    assert (k.num_warps, k.num_stages, k.min_blocks_per_sm) == (4, 2, 2)
    assert k.with_options(min_blocks_per_sm=None).min_blocks_per_sm is None
    assert k.with_options().num_warps == 4 and k.with_options() is not k
    x, z, s, n = _args()
    v(x, z, s, n, interpret=True)
    np.testing.assert_array_equal(z.array, x * 2.0)


# ----------------------------------------------------------------------------- scalars

@pytest.mark.parametrize("value", [np.complex64(1), np.complex128(1j), 2**64, -2**63 - 1])
def test_a_runtime_scalar_of_another_kind_names_the_kernel(value):
    x, z, _s, n = _args()
    err = refused(lambda: scaled(x, z, value, n, interpret=True),
                  "kernel 'scaled': argument 's': ")
    assert type(value).__name__ in err.message


@pytest.mark.parametrize("value", [np.float32(1.5), True, np.int8(-3), 2**40, np.uint32(7)])
def test_runtime_scalars_of_each_kind_still_launch(value):
    x, z, _s, n = _args()
    scaled(x, z, value, n, interpret=True)
    np.testing.assert_array_equal(z.array, x * np.float64(value))
