"""Elementwise math functions of the tile language (re-exported by :mod:`numba_tile.language`):
unary functions lowered to libdevice, binary float functions, float predicates. Their typing,
lowering and interpreter rules are in the ``elementwise`` modules of ``typing/``,
``lowering/`` and ``interpreter/``."""

from __future__ import annotations

from ._registry import op


def _stub(name, unary: bool, doc: str):
    """The public stub of elementwise op ``name`` (one or two tile parameters) with ``doc``."""
    if unary:
        def fn(x):
            pass
    else:
        def fn(x, y):
            pass
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = __name__
    return op("elementwise")(fn)


def _math(name, doc):
    return _stub(name, True, (
        f"Elementwise {doc}.\n\n    Args:\n        x (Tile[S] of float): the tile; integer "
        f"tiles are computed in float32.\n\n    Returns:\n        Tile[S] of x's float dtype "
        f"(float16 and bfloat16 are computed in float32 and rounded).\n\n    Lowered to "
        f"libdevice (``__nv_*``), as CUDA C++'s math library.\n"))


#: Unary math functions: name -> (description, libdevice base name).
MATH_FUNCTIONS = {
    "exp": ("e**x", "exp"),
    "exp2": ("2**x", "exp2"),
    "log": ("natural logarithm", "log"),
    "log2": ("base-2 logarithm", "log2"),
    "sqrt": ("square root", "sqrt"),
    "rsqrt": ("1 / sqrt(x)", "rsqrt"),
    "tanh": ("hyperbolic tangent", "tanh"),
    "sigmoid": ("logistic sigmoid 1 / (1 + exp(-x)); in float32 (and float16/bfloat16, computed "
                "in float32) exp(-x) is 2**(-x * log2(e)) by ``ex2.approx.f32``, as Triton's "
                "``tl.sigmoid``: relative error about ``|x| * 2**-23`` (libdevice's ``expf`` "
                "keeps 2 ulp at three times the instructions), and the reciprocal is "
                "``div.full.f32`` (2 ulp; 0 once ``exp(-x)`` passes ``2**126``, where the "
                "sigmoid is below ``2**-126``); float64 uses libdevice's ``exp`` and an IEEE "
                "division",
                None),
    "sin": ("sine", "sin"),
    "cos": ("cosine", "cos"),
    "floor": ("floor", "floor"),
    "ceil": ("ceiling", "ceil"),
    "trunc": ("rounding toward zero", "trunc"),
    "rint": ("rounding to the nearest integer, ties to even (``numpy.rint``)", "rint"),
    "erf": ("error function", "erf"),
    "erfc": ("complementary error function 1 - erf(x)", "erfc"),
    "log1p": ("log(1 + x), accurate near 0", "log1p"),
    "expm1": ("exp(x) - 1, accurate near 0", "expm1"),
    "log10": ("base-10 logarithm", "log10"),
    "cbrt": ("cube root", "cbrt"),
    "tan": ("tangent", "tan"),
    "asin": ("arcsine", "asin"),
    "acos": ("arccosine", "acos"),
    "atan": ("arctangent", "atan"),
    "sinh": ("hyperbolic sine", "sinh"),
    "cosh": ("hyperbolic cosine", "cosh"),
    "asinh": ("inverse hyperbolic sine", "asinh"),
    "acosh": ("inverse hyperbolic cosine", "acosh"),
    "atanh": ("inverse hyperbolic tangent", "atanh"),
}

#: Binary float functions: name -> (description, libdevice base name); the operands promote
#: as arithmetic does (ints to float32).
MATH_FUNCTIONS2 = {
    "atan2": ("arctangent of y / x in the quadrant of (x, y) (``numpy.arctan2(y, x)``)",
              "atan2"),
    "hypot": ("sqrt(x**2 + y**2) without overflow", "hypot"),
    "copysign": ("the magnitude of x with the sign of y", "copysign"),
    "fdiv": ("x / y without IEEE rounding: in float32 (and float16/bfloat16, computed in "
             "float32) ``div.full.f32``, at most 2 ulp from the correctly rounded quotient for "
             "``|y|`` in ``[2**-126, 2**126]`` (PTX ISA), branch-free; float64 is the IEEE "
             "division. The float32 ``/`` is IEEE's ``div.rn.f32``, whose slow path ptxas "
             "makes a call, and any call in a kernel makes ptxas serialize its ``wgmma`` "
             "instructions (C7509): a kernel on Hopper's tensor cores that divides takes "
             "``fdiv`` (Triton's ``/`` of float32 is this division; the interpreter computes "
             "the correctly rounded quotient)", None),
}

#: Float predicates: name -> description; bool tiles (integer tiles: never NaN or infinite).
PREDICATES = {"isnan": "x is NaN", "isinf": "x is +inf or -inf",
              "isfinite": "x is neither NaN nor infinite"}

exp = _math("exp", MATH_FUNCTIONS["exp"][0])
exp2 = _math("exp2", MATH_FUNCTIONS["exp2"][0])
log = _math("log", MATH_FUNCTIONS["log"][0])
log2 = _math("log2", MATH_FUNCTIONS["log2"][0])
sqrt = _math("sqrt", MATH_FUNCTIONS["sqrt"][0])
rsqrt = _math("rsqrt", MATH_FUNCTIONS["rsqrt"][0])
tanh = _math("tanh", MATH_FUNCTIONS["tanh"][0])
sigmoid = _math("sigmoid", MATH_FUNCTIONS["sigmoid"][0])
sin = _math("sin", MATH_FUNCTIONS["sin"][0])
cos = _math("cos", MATH_FUNCTIONS["cos"][0])
floor = _math("floor", MATH_FUNCTIONS["floor"][0])
ceil = _math("ceil", MATH_FUNCTIONS["ceil"][0])
trunc = _math("trunc", MATH_FUNCTIONS["trunc"][0])
rint = _math("rint", MATH_FUNCTIONS["rint"][0])
erf = _math("erf", MATH_FUNCTIONS["erf"][0])
erfc = _math("erfc", MATH_FUNCTIONS["erfc"][0])
log1p = _math("log1p", MATH_FUNCTIONS["log1p"][0])
expm1 = _math("expm1", MATH_FUNCTIONS["expm1"][0])
log10 = _math("log10", MATH_FUNCTIONS["log10"][0])
cbrt = _math("cbrt", MATH_FUNCTIONS["cbrt"][0])
tan = _math("tan", MATH_FUNCTIONS["tan"][0])
asin = _math("asin", MATH_FUNCTIONS["asin"][0])
acos = _math("acos", MATH_FUNCTIONS["acos"][0])
atan = _math("atan", MATH_FUNCTIONS["atan"][0])
sinh = _math("sinh", MATH_FUNCTIONS["sinh"][0])
cosh = _math("cosh", MATH_FUNCTIONS["cosh"][0])
asinh = _math("asinh", MATH_FUNCTIONS["asinh"][0])
acosh = _math("acosh", MATH_FUNCTIONS["acosh"][0])
atanh = _math("atanh", MATH_FUNCTIONS["atanh"][0])


def _math2(name, doc):
    return _stub(name, False, (
        f"Elementwise {doc}.\n\n    Args:\n        x, y (Tile or scalar, one a tile; broadcast "
        f"as arithmetic): float, or integer computed in float32.\n\n    Returns:\n        Tile "
        f"of the operands' promoted float dtype. Lowered to libdevice (``__nv_*``) unless said "
        f"otherwise.\n"))


atan2 = _math2("atan2", MATH_FUNCTIONS2["atan2"][0])
hypot = _math2("hypot", MATH_FUNCTIONS2["hypot"][0])
copysign = _math2("copysign", MATH_FUNCTIONS2["copysign"][0])
fdiv = _math2("fdiv", MATH_FUNCTIONS2["fdiv"][0])


def _predicate(name, doc):
    return _stub(name, True, (f"Elementwise: {doc}.\n\n    Args:\n        x (Tile): any "
                              f"dtype.\n\n    Returns:\n        Tile[S] of bool.\n"))


isnan = _predicate("isnan", PREDICATES["isnan"])
isinf = _predicate("isinf", PREDICATES["isinf"])
isfinite = _predicate("isfinite", PREDICATES["isfinite"])
