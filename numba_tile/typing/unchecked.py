"""Typing rules of the unchecked ops: gather, scatter and atomics at computed coordinates."""

from __future__ import annotations

from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from ..layout import BlockedLayout
from .common import fail, is_array_param, is_omitted, is_scalar, make_tile
from .elementwise import broadcast_shape
from .memory import _check_padding, check_scalar_fits
from .types import TileType

SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("gpu", "cta", "sys")
#: float max/min order floats by IEEE 754 totalOrder (-NaN < -inf < ... < -0.0 < +0.0 < ... <
#: +inf < +NaN): two integer atomics on the bits (signed max / unsigned min, by the operand's
#: sign), as Triton lowers them (``lowering/unchecked.py``); bfloat16 add needs sm_90
#: (``atom.add.noftz.bf16``, PTX ISA 7.8)
_ATOMIC_INTS = (dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64)
ATOMIC_DTYPES = {
    "atomic_add": _ATOMIC_INTS + (dtypes.float16, dtypes.bfloat16, dtypes.float32,
                                  dtypes.float64),
    "atomic_max": _ATOMIC_INTS + (dtypes.float32, dtypes.float64),
    "atomic_min": _ATOMIC_INTS + (dtypes.float32, dtypes.float64),
    "atomic_xchg": _ATOMIC_INTS + (dtypes.float32, dtypes.float64),
    "atomic_cas": _ATOMIC_INTS,
}


def _cc() -> tuple:
    from ..compiler_context import _CURRENT
    return tuple(getattr(_CURRENT.get(), "cc", None) or (9, 0))[:2]


def index_tiles(opname, x, indices, *others):
    """The index tiles of ``indices`` (one per axis of ``x``) and the shape the op runs over:
    the broadcast (NumPy's rules, as operators) of the index tiles and of the tile operands
    among ``others`` (the mask, the values)."""
    tiles = list(indices.types) if isinstance(indices, types.BaseTuple) else [indices]
    if len(tiles) != x.ndim or not all(isinstance(t, TileType) and dtypes.is_int(t.dtype)
                                       for t in tiles):
        raise fail(opname, "indices", f"{'an integer tile' if x.ndim == 1 else ''}"
                   f"{'' if x.ndim == 1 else f'a tuple of {x.ndim} integer tiles'} (element "
                   f"coordinates in '{x.param}')", indices)
    shape = broadcast_shape([t.shape for t in tiles], opname, "indices")
    extra = [t.shape for t in others if isinstance(t, TileType)]
    if extra:
        shape = broadcast_shape([shape] + extra, opname, "operands")
    return tiles, shape


def operand_shape(ity, *others) -> tuple:
    """The shape an op of index type ``ity`` and operand types ``others`` runs over, as
    :func:`index_tiles` computes it (for the lowering)."""
    tiles = list(ity.types) if isinstance(ity, types.BaseTuple) else [ity]
    shapes = [t.shape for t in tiles] + [t.shape for t in others if isinstance(t, TileType)]
    return broadcast_shape(shapes, "indices")


def in_operand_layout(dt, shape, operands) -> TileType:
    """The tile type of ``dt`` and ``shape`` for a per-element op (gather, scatter, atomics)
    over ``operands`` (its index, value and mask types): in the blocked layout of the widest
    tile operand of that shape, so that operand moves nowhere and only narrower ones
    convert through shared memory. The op itself reads and writes element by element, so
    its layout costs it nothing; a float32 gather at two int64 index tiles then converts
    nothing, where the float32 layout converted both (8 bytes an element each: 256 KB for a
    (128, 256) tile, over any target's shared memory). Without a blocked tile operand of
    the shape: the blocked layout of ``dt`` (:func:`make_tile`)."""
    base = make_tile(dt, shape)
    cands = [t for t in operands if isinstance(t, TileType) and t.shape == tuple(shape)
             and isinstance(t.layout, BlockedLayout)]
    if not cands:
        return base
    widest = max(cands, key=lambda t: max(dtypes.itemsize(t.dtype), 1))   # the first of them
    return TileType(dt, tuple(shape), widest.layout)


def _operands(indices, *others):
    return [*(indices.types if isinstance(indices, types.BaseTuple) else [indices]), *others]


def _check_mask(opname, mask, shape):
    if is_omitted(mask):
        return
    if not (isinstance(mask, TileType) and dtypes.is_bool(mask.dtype)):
        raise fail(opname, "mask", f"a bool tile (broadcast to {shape})", mask)


def _check_values(opname, arg, values, x, shape):
    if isinstance(values, TileType):
        if not dtypes.storable(values.dtype, x.dtype):
            raise fail(opname, arg, f"values {dtypes.name(x.dtype)} holds without narrowing "
                       f"(the dtype of '{x.param}'; use astype())", dtypes.name(values.dtype))
    elif is_scalar(values) or isinstance(values, types.Omitted):
        check_scalar_fits(values, x.dtype, opname, arg, f"the dtype of '{x.param}'")
    else:
        raise fail(opname, arg, "a tile or a scalar", values)


def _static_str(opname, arg, ty, allowed):
    v = ty.value if isinstance(ty, types.Omitted) else getattr(ty, "literal_value", None)
    if v not in allowed:
        raise fail(opname, arg, f"one of {', '.join(repr(a) for a in allowed)} (static)", ty)


def _array(opname, x):
    if not is_array_param(x):
        raise fail(opname, "x", "an array parameter", x)


@typing_rule("gather")
def type_gather(x, indices, mask, padding):
    _array("gather", x)
    _, shape = index_tiles("gather", x, indices, mask)
    _check_mask("gather", mask, shape)
    _check_padding(padding, x.dtype, "gather")
    return in_operand_layout(x.dtype, shape, _operands(indices, mask))


@typing_rule("scatter")
def type_scatter(x, indices, values, mask):
    _array("scatter", x)
    _, shape = index_tiles("scatter", x, indices, values, mask)
    _check_mask("scatter", mask, shape)
    _check_values("scatter", "values", values, x, shape)
    return types.none


def _atomic(name):
    @typing_rule(name)
    def rule(x, indices, values, mask, sem, scope):
        _array(name, x)
        if x.dtype not in ATOMIC_DTYPES[name]:
            raise fail(name, "x", "an array of " + ", ".join(dtypes.name(d) for d in
                                                            ATOMIC_DTYPES[name]),
                       dtypes.name(x.dtype))
        if x.dtype == dtypes.bfloat16 and _cc() < (9, 0):
            raise fail(name, "x", "an array of a dtype this target can add atomically (bfloat16 "
                       "needs compute capability 9.0: atom.add.noftz.bf16)",
                       f"bfloat16 on {_cc()[0]}.{_cc()[1]}")
        _, shape = index_tiles(name, x, indices, values, mask)
        _check_mask(name, mask, shape)
        _check_values(name, "values", values, x, shape)
        _static_str(name, "sem", sem, SEMS)
        _static_str(name, "scope", scope, SCOPES)
        return in_operand_layout(x.dtype, shape, _operands(indices, values, mask))

    return rule


for _n in ("atomic_add", "atomic_max", "atomic_min", "atomic_xchg"):
    _atomic(_n)


@typing_rule("atomic_cas")
def type_atomic_cas(x, indices, expected, desired, mask, sem, scope):
    _array("atomic_cas", x)
    if x.dtype not in ATOMIC_DTYPES["atomic_cas"]:
        raise fail("atomic_cas", "x", "an array of int32 or int64", dtypes.name(x.dtype))
    _, shape = index_tiles("atomic_cas", x, indices, expected, desired, mask)
    _check_mask("atomic_cas", mask, shape)
    _check_values("atomic_cas", "expected", expected, x, shape)
    _check_values("atomic_cas", "desired", desired, x, shape)
    _static_str("atomic_cas", "sem", sem, SEMS)
    _static_str("atomic_cas", "scope", scope, SCOPES)
    return in_operand_layout(x.dtype, shape, _operands(indices, expected, desired, mask))
