"""NumPy ufuncs on scalars inside a kernel (``np.exp(s)``, ``np.sqrt(s)``, ``np.abs(s)``,
``np.maximum(a, b)``...): which ones a kernel may call, and the refusal of the others.

Numba types every ufunc on scalars by NumPy's loop table, but numba-cuda's GPU table
(``numba.cuda.ufuncs``) holds only some of them (trigonometric, logarithms, comparisons,
``maximum``/``minimum``, bitwise...): the others (``exp``, ``sqrt``, ``absolute``, ``floor``,
``add``...) typed and then failed while lowering with a bare ``KeyError: <ufunc 'exp'>``.
numba_tile lowers the common ones itself (:data:`SUPPLEMENT`, ``lowering/scalar_ufuncs.py``):
the float math functions through libdevice, as numba-cuda does ``np.sin``, and integer and
float arithmetic as NumPy's C loops compute it. A call is then accepted when

* its loop (the one Numba chose for the argument types, as NumPy's table orders them) has a
  GPU implementation, numba-cuda's or numba_tile's; and
* NumPy itself, given scalars of those dtypes (what the interpreter runs), chooses the same
  loop: for a bool, int8 or uint8 argument NumPy computes ``np.exp`` in float16 where Numba
  skips float16 loops and computes in float32, so the two backends would differ; and for
  ``np.negative``, ``np.positive``, ``np.sign`` and ``np.subtract`` of booleans NumPy has no
  loop at all, where Numba casts them to int8.

Anything else is a :class:`~numba_tile.errors.TileTypingError` at the call's line, naming the
ufunc and what to use instead (``math.exp(s)`` for a scalar, ``nt.exp(t)`` for a tile, an
explicit conversion of the argument). Ufuncs on tiles are not these: numba_tile's own ops
(``nt.exp``, ``nt.maximum``...) take tiles.
"""

from __future__ import annotations

import math

import numpy as np
from numba.cuda import types

from ..errors import TileTypingError

__all__ = ["SUPPLEMENT", "LIBDEVICE", "check_scalar_ufunc", "is_scalar_ufunc_call"]

#: float functions lowered through libdevice (``__nv_<name>f`` / ``__nv_<name>``): ufunc ->
#: libdevice base name, on the float32 and float64 loops
LIBDEVICE = {
    np.exp: "exp", np.exp2: "exp2", np.expm1: "expm1", np.log1p: "log1p", np.sqrt: "sqrt",
    np.cbrt: "cbrt", np.fabs: "fabs", np.floor: "floor", np.ceil: "ceil", np.trunc: "trunc",
    np.rint: "rint", np.absolute: "fabs", np.copysign: "copysign", np.fmod: "fmod",
    np.power: "pow", np.float_power: "pow",
}


def _loops(ufunc, letters: str) -> frozenset:
    """``ufunc``'s loops (NumPy's letters, ``'ff->f'``) whose inputs are all float32, float64
    or one of ``letters``, and whose output is the input's letter or ``?``: only loops NumPy
    itself has."""
    letters += "fd"
    return frozenset(t for t in ufunc.types
                     if len(set(t.split("->")[0])) == 1 and t[0] in letters
                     and t.split("->")[1] in (t[0], "?"))


_INTS = "bBhHiIlLqQ"

#: ufunc -> the loops (NumPy's type letters) numba_tile lowers itself
#: (``lowering/scalar_ufuncs.py``): the libdevice functions on float32 and float64, integer
#: and float arithmetic with NumPy's semantics (wrapping; an integer division by zero is 0, the
#: least integer floor-divided by -1 itself; floats by NumPy's ``npy_divmod``). Loops left out
#: stay refused: integer ``power`` and ``fmod`` (NumPy raises for negative powers), bool
#: ``subtract`` (NumPy refuses it), and the less common ufuncs (``gcd``, ``ldexp``,
#: ``logaddexp``, ``nextafter``, ``spacing``, ``reciprocal``, ``divmod``...).
SUPPLEMENT = {
    **{u: _loops(u, "") for u in LIBDEVICE},
    np.absolute: _loops(np.absolute, "?" + _INTS),
    **{u: _loops(u, _INTS) for u in (np.negative, np.positive, np.square, np.sign)},
    **{u: _loops(u, "?" + _INTS) for u in (np.floor, np.ceil, np.trunc)},
    **{u: _loops(u, "?" + _INTS) for u in (np.add, np.multiply)},
    np.subtract: _loops(np.subtract, _INTS),
    **{u: _loops(u, _INTS) for u in (np.floor_divide, np.remainder)},
    **{u: _loops(u, "?" + _INTS) for u in (np.isinf, np.isfinite)},
    np.signbit: _loops(np.signbit, ""),
}

#: what to write instead, by ufunc name (otherwise ``math.<name>`` where it exists)
_INSTEAD = {
    "absolute": "abs(x)", "negative": "-x", "positive": "+x", "add": "x + y",
    "subtract": "x - y", "multiply": "x * y", "divide": "x / y", "true_divide": "x / y",
    "floor_divide": "x // y", "remainder": "x % y", "mod": "x % y", "power": "x ** y",
    "square": "x * x", "reciprocal": "1 / x", "maximum": "max(x, y)", "minimum": "min(x, y)",
    "arctan2": "math.atan2(y, x)", "arcsin": "math.asin(x)", "arccos": "math.acos(x)",
    "arctan": "math.atan(x)", "arcsinh": "math.asinh(x)", "arccosh": "math.acosh(x)",
    "arctanh": "math.atanh(x)", "logaddexp": "math.log(math.exp(x) + math.exp(y))",
    "float_power": "x ** y on floats", "divmod": "x // y and x % y",
}


def _cuda_loops(ufunc) -> frozenset:
    from numba.cuda.ufuncs import ufunc_db
    return frozenset(ufunc_db().get(ufunc, ()))


def is_scalar_ufunc_call(fnty, sig) -> bool:
    """Whether a call typed ``fnty`` with signature ``sig`` is a NumPy ufunc on scalars."""
    key = getattr(fnty, "typing_key", None)
    return (isinstance(key, np.ufunc) and sig is not None
            and all(isinstance(types.unliteral(t), (types.Number, types.Boolean))
                    for t in sig.args))


def _kernel_math(name: str) -> bool:
    """Whether ``math.<name>`` exists and numba-cuda lowers it (a kernel may call it)."""
    from numba.cuda.descriptor import cuda_target
    fn = getattr(math, name, None)
    return fn is not None and cuda_target.target_context._defns.get(fn) is not None


def _alternative(ufunc) -> str:
    """What a kernel can write instead of ``np.<ufunc>(...)`` on scalars (and on tiles)."""
    from .. import language
    name = ufunc.__name__
    scalar = _INSTEAD.get(name)
    if scalar is None and _kernel_math(name):
        scalar = f"math.{name}({'x, y' if ufunc.nin == 2 else 'x'})"
    tile = f"nt.{name}(tile)" if hasattr(language, name) else None
    parts = [p for p in (f"{scalar} on a scalar" if scalar else None,
                         f"{tile} on a tile" if tile else None) if p]
    return " or ".join(parts) if parts else "a formula of Python arithmetic and math functions"


def _loop_text(dts) -> str:
    return ", ".join(str(d) for d in dts)


def check_scalar_ufunc(fnty, sig, where: dict) -> None:
    """Refuses a NumPy ufunc call on scalars that the GPU cannot lower, or that NumPy (the
    interpreter) would compute in other dtypes than the compiled kernel (module docstring).

    Args:
        fnty: the callee's Numba type (its ``typing_key`` is the ufunc).
        sig: the call's signature (scalar argument types, result type).
        where: ``filename``, ``lineno`` (and ``col``) of the call, for the error.

    Raises:
        TileTypingError: naming the ufunc, the argument dtypes and what to write instead.
    """
    from numba.cuda.np.numpy_support import as_dtype, ufunc_find_matching_loop
    ufunc = fnty.typing_key
    name = f"np.{ufunc.__name__}"
    args = tuple(types.unliteral(t) for t in sig.args)
    rets = list(sig.return_type) if ufunc.nout > 1 else [sig.return_type]
    loop = ufunc_find_matching_loop(ufunc, args + tuple(rets))
    arg_dts = tuple(as_dtype(t) for t in args)
    given = f"{name}() of {_loop_text(arg_dts)}"
    if loop is None or loop.ufunc_sig not in (_cuda_loops(ufunc) | SUPPLEMENT.get(ufunc, set())):
        how = f"loop {loop.ufunc_sig}" if loop is not None else "these dtypes"
        raise TileTypingError(
            f"{given}: numba_tile has no GPU implementation of this NumPy ufunc on scalars "
            f"({how}); use {_alternative(ufunc)}", **where)
    numba_dts = tuple(as_dtype(t) for t in loop.inputs + loop.outputs)
    try:
        numpy_dts = ufunc.resolve_dtypes(arg_dts + (None,) * ufunc.nout)
    except TypeError:
        # NumPy has no loop at all (np.negative, np.sign or np.subtract of booleans), where
        # Numba casts to one (int8): the interpreter could not compute it
        raise TileTypingError(
            f"{given}: NumPy (the interpreter) has no loop for these dtypes, and the compiled "
            f"kernel would compute it as ({_loop_text(numba_dts)}); convert the argument(s) "
            f"to the dtype wanted first (np.int8(x), int(x), float(x)), or use "
            f"{_alternative(ufunc)}", **where) from None
    except (ValueError, AttributeError):
        numpy_dts = None
    if numpy_dts is not None and tuple(numpy_dts) != numba_dts:
        raise TileTypingError(
            f"{given}: NumPy (the interpreter) computes it as ({_loop_text(numpy_dts)}) and the "
            f"compiled kernel as ({_loop_text(numba_dts)}), which would give other results; "
            f"convert the argument(s) to the dtype wanted first (np.float32(x), float(x)), or "
            f"use {_alternative(ufunc)}", **where)
