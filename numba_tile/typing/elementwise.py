"""Typing rules of the elementwise ops: operators, where, astype, math functions."""

from __future__ import annotations

from numba.cuda import types

from .. import dtypes
from .._registry import OPS, typing_rule
from ..language import MATH_FUNCTIONS, MATH_FUNCTIONS2, PREDICATES
from ..layout import BlockedLayout, VectorLayout
from .common import check_float8_target, dtype_arg, fail, is_scalar, make_tile, refuse_float8
from .types import (PartitionType, TensorType, TileType, in_product_layout,
                    wider_than_default)

ARITHMETIC = ("add", "sub", "mul", "floordiv", "mod", "pow")
COMPARISON = ("lt", "le", "gt", "ge", "eq", "ne")
BITWISE = ("and_", "or_", "xor")
#: ``<<`` and ``>>`` on integer tiles, with NumPy's results for every shift count: a count
#: outside ``[0, bits)`` (negative, or the dtype's width or more) gives 0 for ``<<`` and the
#: sign (0 or -1) for ``>>`` (NumPy's ``npy_lshift`` / ``npy_rshift``); ``>>`` is arithmetic
#: on signed tiles and logical on unsigned ones (0 for a count of ``bits`` or more)
SHIFTS = ("lshift", "rshift")
SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
          "pow": "**", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
          "and_": "&", "or_": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
          "neg": "unary -", "pos": "unary +",
          "invert": "~", "builtin_abs": "abs"}


def broadcast_shape(shapes, opname, arg="operands"):
    """NumPy's broadcast of static tile shapes (axes aligned at the end; an extent 1
    stretches).

    Raises:
        TileTypingError: two extents differ and neither is 1.
    """
    n = max(len(s) for s in shapes)
    out = []
    for k in range(n):
        dims = {s[len(s) - n + k] for s in shapes if len(s) - n + k >= 0} - {1}
        if len(dims) > 1:
            raise fail(opname, arg, "tiles whose shapes broadcast (NumPy rules: trailing axes "
                       "equal or 1)", " and ".join(str(tuple(s)) for s in shapes))
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def result_tile(tiles, opname, arg="operands") -> TileType:
    """The tile type (dtype to be replaced) of an elementwise op over ``tiles``.

    Shape: the broadcast of the operands' shapes. Layout: that of the first operand of the
    full shape in an ``mma`` accumulator layout or a row slice of one (a product: ``acc + a @ b`` then stays in the
    product's layout, as ``mma(a, b, acc)`` does, and a loop carries it: ``TileType.unify``;
    ``typing/mma.fuse_accumulating_products`` makes it one ``mma``), else in a blocked layout wider than its dtype's default (:func:`wider_than_default`:
    data that kept the layout of a narrower load, a float32 tile of a 16-bit load), else of the first of the full shape
    in a blocked layout, else of the first of the full shape (a reduction's slice layout),
    else the blocked layout of the shape: an operand of the full shape never moves, and a
    slice-layout operand broadcasts onto its parent for free. Preferring the data's layout
    keeps a loop's state (``s = s + x``, the state made by ``zeros``) in it: the state, not
    each iteration's data, is what converts, once (``TileType.unify``). Masked (see
    :class:`TileType`) when any operand is.
    """
    shape = broadcast_shape([t.shape for t in tiles], opname, arg)
    full = [t for t in tiles if t.shape == shape]
    masked = any(t.masked for t in tiles)
    # a broadcast last axis is valid along all of it or none of it
    align = min((t.align if t.shape[-1:] == shape[-1:] else shape[-1]
                 for t in tiles if t.masked), default=1)
    blocked = [t for t in full if isinstance(t.layout, BlockedLayout)]
    products = [t for t in full if in_product_layout(t)]
    pick = products[0] if products else next(
        (t for t in blocked if wider_than_default(t)),
        blocked[0] if blocked else full[0] if full else None)
    if pick is None:
        # a row vector and a column vector of one accumulator (a causal mask's query and
        # key positions, ``q_pos >= k_pos``) meet in the accumulator's layout
        parents = {t.layout.parent for t in tiles if isinstance(t.layout, VectorLayout)}
        if len(parents) == 1 and all(isinstance(t.layout, VectorLayout) for t in tiles):
            (parent,) = parents
            if tuple(parent.shape) == shape:
                return TileType(tiles[0].dtype, shape, parent, masked, align)
        return make_tile(tiles[0].dtype, shape, masked=masked, align=align)
    return TileType(pick.dtype, shape, pick.layout, masked, align)


def operand_dtype(a, b, opname):
    """Promoted dtype and result tile of two operands, at least one of them a tile.

    Returns ``None`` when neither operand is a tile (not ours to type).

    Raises:
        TileTypingError: the operands have no common dtype (``dtypes.promote``: uint64 with a
            signed integer, FP8 with another dtype, a negative literal with an unsigned tile).
    """
    ta, tb = isinstance(a, TileType), isinstance(b, TileType)
    if not (ta or tb):
        return None
    try:
        if ta and tb:
            return dtypes.promote(a.dtype, b.dtype), result_tile([a, b], opname)
        tile, other = (a, b) if ta else (b, a)
        if not is_scalar(other):
            what = "a tile and a tile or scalar"
            if isinstance(other, (PartitionType, TensorType)):
                # z += t on a partition: arrays are written by nt.store, read by nt.load
                what += (" (an array parameter is not an operand: load its tile, "
                         "nt.load_like(z, z), and write the result with nt.store(z, ...))")
            raise fail(opname, "operands", what, other)
        return scalar_promotion(tile.dtype, other), tile
    except dtypes.PromotionError as e:
        raise fail(opname, "operands", f"operands with a common dtype ({e.reason})",
                   e.operands) from None


def scalar_promotion(tile_dt, scalar_ty):
    """:func:`dtypes.promote_scalar` for a Numba scalar type (literal values are checked).

    Raises:
        dtypes.PromotionError: see :func:`dtypes.promote_scalar`.
    """
    from .common import literal_int
    value = literal_int(scalar_ty) if isinstance(scalar_ty, types.Integer) else None
    width = getattr(scalar_ty, "bitwidth", 64)
    signed = getattr(scalar_ty, "signed", True)
    return dtypes.promote_scalar(tile_dt, dtypes.scalar_kind(scalar_ty), width, value, signed)


def _binary(name):
    opname = SYMBOL[name]

    @typing_rule(name)
    def rule(a, b):
        res = operand_dtype(a, b, opname)
        if res is None:
            return None
        dt, tile = res
        refuse_float8(opname, "operands", dt)
        if name in COMPARISON:
            return tile.with_dtype(dtypes.bool_)
        if name in BITWISE:
            if dtypes.is_float(dt):
                raise fail(opname, "operands", "integer or bool tiles", dtypes.name(dt))
            return tile.with_dtype(dt)
        if name in SHIFTS:
            if not dtypes.is_int(dt):
                raise fail(opname, "operands", "integer tiles (shift counts: integers)",
                           dtypes.name(dt))
            return tile.with_dtype(dt)
        if name == "truediv":
            return tile.with_dtype(dtypes.true_divide_dtype(dt))
        if dtypes.is_bool(dt):
            raise fail(opname, "operands", "numeric tiles (cast bool tiles with astype)", "bool")
        return tile.with_dtype(dt)

    return rule


for _n in ARITHMETIC + COMPARISON + BITWISE + SHIFTS + ("truediv",):
    _binary(_n)


def _unary(name):
    @typing_rule(name)
    def rule(a):
        if not isinstance(a, TileType):
            if name == "abs" and isinstance(types.unliteral(a), (types.Integer, types.Float)):
                return types.unliteral(a)       # nt.abs(s) of a scalar: Python's abs
            return None
        refuse_float8(SYMBOL.get(name, name), "x", a.dtype)
        if name == "invert" and dtypes.is_float(a.dtype):
            raise fail("~", "x", "an integer or bool tile", dtypes.name(a.dtype))
        if name in ("neg", "builtin_abs", "abs", "pos") and dtypes.is_bool(a.dtype):
            raise fail(SYMBOL.get(name, name), "x", "a numeric tile", "bool")
        return a

    return rule


for _n in ("neg", "pos", "invert", "builtin_abs", "abs"):
    _unary(_n)


@typing_rule("where")
def type_where(cond, x, y):
    if not (isinstance(cond, TileType) and dtypes.is_bool(cond.dtype)):
        raise fail("where", "cond", "a bool tile", cond)
    for arg, ty in (("x", x), ("y", y)):
        if not isinstance(ty, TileType) and not is_scalar(ty):
            raise fail("where", arg, "a tile or a scalar", ty)
    tiles = [t for t in (cond, x, y) if isinstance(t, TileType)]
    out = result_tile(tiles, "where")
    if isinstance(x, TileType) or isinstance(y, TileType):
        dt, _ = operand_dtype(x, y, "where")
    else:
        kinds = {dtypes.scalar_kind(x), dtypes.scalar_kind(y)}
        dt = (dtypes.float32 if "float" in kinds else dtypes.int32 if "int" in kinds
              else dtypes.bool_)
    return out.with_dtype(dt)


@typing_rule("filled")
def type_filled(x, value):
    if not isinstance(x, TileType):
        raise fail("filled", "x", "a tile", x)
    if not is_scalar(value) and not isinstance(value, types.Omitted):
        raise fail("filled", "value", "a scalar", value)
    if is_scalar(value):
        from .memory import check_scalar_fits
        check_scalar_fits(value, x.dtype, "filled", "value", "the tile's dtype")
        if x.masked:        # the value is converted to the tile's dtype where it is used
            check_float8_target("filled", x.dtype)
    return TileType(x.dtype, x.shape, x.layout, masked=False)


@typing_rule("astype")
def type_astype(x, dtype):
    if not isinstance(x, TileType):
        raise fail("astype", "x", "a tile", x)
    dt = dtype_arg(dtype, "astype")
    if dt != x.dtype:
        check_float8_target("astype", x.dtype)
        check_float8_target("astype", dt)
    return x.with_dtype(dt)


def _binary(name, x, y):
    """The promoted dtype and result tile of a binary elementwise op of ``x`` and ``y`` (at
    least one a tile; FP8 refused)."""
    res = operand_dtype(x, y, name)
    if res is None:
        raise fail(name, "x", "a tile", x)
    dt, tile = res
    refuse_float8(name, "operands", dt)
    return dt, tile


def minmax_scalar_dtype(x, y):
    """The result type of ``nt.minimum``/``nt.maximum`` of two scalars: NumPy's promotion of
    their types (``int64`` and ``float32`` give ``float64``, as Numba's ``max`` does), or None
    where one is not a number."""
    import numpy as np
    x, y = types.unliteral(x), types.unliteral(y)
    if not all(isinstance(t, (types.Integer, types.Float, types.Boolean)) for t in (x, y)):
        return None
    return dtypes.from_any(np.result_type(dtypes.to_numpy(x), dtypes.to_numpy(y)))


def _minmax(name):
    @typing_rule(name)
    def rule(x, y):
        if not isinstance(x, TileType) and not isinstance(y, TileType):
            dt = minmax_scalar_dtype(x, y)
            if dt is None:
                raise fail(name, "x", "a tile or a scalar number", x)
            return dt
        dt, tile = _binary(name, x, y)
        return tile.with_dtype(dt)

    return rule


_minmax("minimum")
_minmax("maximum")


def _mulhi(name):
    @typing_rule(name)
    def rule(x, y):
        for arg, ty in (("x", x), ("y", y)):
            kind = dtypes.scalar_kind(ty) if is_scalar(ty) else (
                "int" if isinstance(ty, TileType) and dtypes.is_int(ty.dtype) else None)
            if kind != "int":
                raise fail(name, arg, "an integer tile or scalar", ty)
        res = operand_dtype(x, y, name)
        if res is None:
            raise fail(name, "x", "an integer tile", x)
        dt, tile = res
        if dt not in (dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64):
            raise fail(name, "operands", "operands promoting to int32, int64, uint32 or "
                       "uint64", dtypes.name(dt))
        return tile.with_dtype(dt)

    return rule


_mulhi("mulhi")
_mulhi("umulhi")


def math_scalar_dtype(x):
    """The result dtype of a math function (``nt.exp``...) of the scalar type ``x``, as of a
    tile of its dtype: a float keeps its type, an integer or bool gives float32; None for a
    type that is not a number."""
    x = types.unliteral(x)
    if isinstance(x, types.Float):
        return x
    if isinstance(x, (types.Integer, types.Boolean)):
        return dtypes.float32
    return None


def _math(name):
    @typing_rule(name)
    def rule(x):
        if not isinstance(x, TileType):
            dt = math_scalar_dtype(x)
            if dt is None:
                raise fail(name, "x", "a tile or a scalar", x)
            return dt
        refuse_float8(name, "x", x.dtype)
        return x if dtypes.is_float(x.dtype) else x.with_dtype(dtypes.float32)

    return rule


for _n in MATH_FUNCTIONS:
    _math(_n)

assert all(OPS[n].typer is not None for n in MATH_FUNCTIONS)


def _math2(name):
    @typing_rule(name)
    def rule(x, y):
        dt, tile = _binary(name, x, y)
        return tile.with_dtype(dt if dtypes.is_float(dt) else dtypes.float32)

    return rule


for _n in MATH_FUNCTIONS2:
    _math2(_n)


def _predicate(name):
    @typing_rule(name)
    def rule(x):
        if not isinstance(x, TileType):
            raise fail(name, "x", "a tile", x)
        refuse_float8(name, "x", x.dtype)
        return x.with_dtype(dtypes.bool_)

    return rule


for _n in PREDICATES:
    _predicate(_n)
