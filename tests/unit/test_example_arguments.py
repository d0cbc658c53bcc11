"""The row-wise examples check their arguments before launching (ValueError naming the
argument, what was expected and what was given), and typing errors about masked tiles read
as the user wrote the kernel (variable names, no register layouts)."""

import numpy as np
import pytest

import numba_tile as nt
from examples import layernorm, rmsnorm, softmax
from numba_tile.errors import TileTypingError

F32 = np.float32


def rand(*shape, dtype=F32):
    return np.random.default_rng().standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("call, fragment", [
    (lambda: softmax.softmax(rand(4, 10, dtype=np.float64), rand(4, 10), interpret=True),
     "softmax: x: expected float16, bfloat16 or float32, got float64"),
    (lambda: softmax.softmax(rand(10), rand(10), interpret=True),
     "softmax: x: expected a 2-D array (rows, columns), got shape (10,)"),
    (lambda: softmax.softmax(rand(4, 12), rand(4, 10), interpret=True),
     "softmax: y: expected (4, 12) float32 (x's shape and dtype), got (4, 10) float32"),
    (lambda: layernorm.layer_norm(rand(4, 10), rand(5), rand(10), rand(4, 10), interpret=True),
     "layer_norm: weight: expected (10,) float32 (one per column of x), got (5,) float32"),
    (lambda: layernorm.layer_norm(rand(4, 10), rand(10), rand(10, dtype=np.float64),
                                  rand(4, 10), interpret=True),
     "layer_norm: bias: expected (10,) float32 (one per column of x), got (10,) float64"),
    (lambda: rmsnorm.rms_norm(rand(4, 10), rand(10), rand(4, 10).astype(np.float16),
                              interpret=True),
     "rms_norm: y: expected (4, 10) float32 (x's shape and dtype), got (4, 10) float16"),
])
def test_bad_arguments_are_refused_before_launch(call, fragment):
    with pytest.raises(ValueError) as err:
        call()
    assert fragment in str(err.value)


@nt.jit
def masked_in_one_branch(x, out: nt.Partition["B"], flag, B: nt.Constant):
    if flag > 0:
        t = nt.load(x, (0,), (B,))
    else:
        t = nt.load(x, (0,), (B,), padding=0)
    nt.store(out, t)


def test_masked_and_unmasked_variable_message():
    with pytest.raises(TileTypingError) as err:
        masked_in_one_branch(rand(5), nt.partition(np.zeros(8, F32), 8), 1, 8, interpret=True)
    msg = str(err.value)
    assert "variable 't' holds a masked float32 (8,) tile and an unmasked float32 (8,) tile" \
        in msg or "variable 't' holds an unmasked float32 (8,) tile and a masked float32 (8,) " \
        "tile" in msg, msg
    assert "blocked(" not in msg.splitlines()[0]
    assert "filled(tile, 0)" in msg


@nt.jit
def runtime_keepdims(x, out: nt.Partition[("R", "C")], kd, R: nt.Constant, C: nt.Constant):
    nt.store(out, nt.sum(nt.load_like(x, out), 1, keepdims=kd))


def test_runtime_keepdims_message():
    with pytest.raises(TileTypingError, match="Constant parameter"):
        runtime_keepdims(rand(4, 8), nt.partition(np.zeros((4, 8), F32), (4, 8)), True, 4, 8,
                         interpret=True)
