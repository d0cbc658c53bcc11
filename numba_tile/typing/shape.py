"""Typing rules of the shape ops: reshape, expand_dims, broadcast_to, permute, transpose, item."""

from __future__ import annotations

import math

from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from .common import fail, literal_int, make_tile, static_shape
from .types import TileType


def _tile(opname, x):
    if not isinstance(x, TileType):
        raise fail(opname, "x", "a tile", x)


def _static_ints(opname, arg, ty):
    if isinstance(ty, types.Omitted):
        v = ty.value
        vals = (v,) if isinstance(v, int) else tuple(v) if isinstance(v, tuple) else None
    elif isinstance(ty, types.BaseTuple):
        vals = tuple(literal_int(t) for t in ty.types)
    else:
        vals = (literal_int(ty),)
    if vals is None or any(not isinstance(v, int) for v in vals):
        raise fail(opname, arg, "static integers", ty)
    return vals


def vector_reshaped(x, shape):
    """``x`` (a vector of an accumulator's rows or columns, ``layout.VectorLayout``) with axes
    of extent 1 added or dropped to ``shape``, in the matching vector layout (no data moves:
    ``m[:, None]`` of a row maximum); None for any other tile or shape."""
    from ..layout import VectorLayout
    lay = x.layout
    if not isinstance(lay, VectorLayout):
        return None
    n = lay.parent.shape[lay.axis]
    shape = tuple(shape)
    if shape == (n,):
        nd = 1
    elif shape == ((n, 1) if lay.axis == 0 else (1, n)):
        nd = 2
    else:
        return None
    return TileType(x.dtype, shape, VectorLayout(lay.parent, lay.axis, nd), x.masked, x.align)


@typing_rule("reshape")
def type_reshape(x, shape):
    _tile("reshape", x)
    sh = static_shape(shape, "reshape")
    if math.prod(sh) != math.prod(x.shape):
        raise fail("reshape", "shape", f"a shape of {math.prod(x.shape)} elements (as {x.shape})",
                   sh)
    if x.masked and [s for s in sh if s != 1] != [s for s in x.shape if s != 1]:
        raise fail("reshape", "x", "an unmasked tile, or a reshape that only adds or drops axes "
                   "of extent 1 (the valid elements of a masked tile, one loaded without "
                   "padding=, are a box that a general reshape does not keep; use "
                   "filled(x, value) first)", f"a masked {x.shape} tile")
    vec = vector_reshaped(x, sh)
    if vec is not None:
        return vec
    out = make_tile(x.dtype, sh, masked=x.masked)
    from ..layout import BlockedLayout
    from ..layout import same_distribution
    if isinstance(x.layout, BlockedLayout) and x.layout.max_vec != out.layout.max_vec:
        # a tile that kept a narrower load's chunks (a float32 tile of a bfloat16 load) keeps
        # them where the new shape cuts the same chunks in the same threads: the reshape then
        # moves nothing, where the dtype's own chunks would go through shared memory
        keep = BlockedLayout(sh, x.layout.num_threads, x.layout.max_vec)
        if same_distribution(keep, x.layout):
            return TileType(x.dtype, sh, keep, x.masked, out.align)
    return out


@typing_rule("expand_dims")
def type_expand_dims(x, axis):
    _tile("expand_dims", x)
    (a,) = _static_ints("expand_dims", "axis", axis)
    n = x.ndim + 1
    if not -n <= a < n:
        raise fail("expand_dims", "axis", f"a static integer in [{-n}, {n})", a)
    a %= n
    sh = x.shape[:a] + (1,) + x.shape[a:]
    return vector_reshaped(x, sh) or make_tile(x.dtype, sh, masked=x.masked)


@typing_rule("broadcast_to")
def type_broadcast_to(x, shape):
    _tile("broadcast_to", x)
    sh = static_shape(shape, "broadcast_to")
    if len(sh) < x.ndim or any(s not in (1, t) for s, t in zip(x.shape[::-1], sh[::-1])):
        raise fail("broadcast_to", "shape", f"a shape {x.shape} broadcasts to (trailing axes "
                   f"equal or 1 in the tile)", sh)
    return make_tile(x.dtype, sh, masked=x.masked)


@typing_rule("permute")
def type_permute(x, dims):
    _tile("permute", x)
    d = _static_ints("permute", "dims", dims)
    if sorted(d) != list(range(x.ndim)):
        raise fail("permute", "dims", f"a permutation of {tuple(range(x.ndim))}", d)
    return make_tile(x.dtype, tuple(x.shape[k] for k in d), masked=x.masked)


@typing_rule("transpose")
def type_transpose(x):
    _tile("transpose", x)
    return make_tile(x.dtype, x.shape[::-1], masked=x.masked)


def subtile_box(opname, x, start, shape):
    """``(start, shape)`` of a static box of the tile ``x``, checked: one coordinate per
    axis, inside the tile, the shape powers of two."""
    start = _static_ints(opname, "start", start)
    sh = static_shape(shape, opname)
    if len(start) != x.ndim or len(sh) != x.ndim:
        raise fail(opname, "shape", f"{x.ndim} coordinates and extents (one per axis of the "
                   f"{x.shape} tile)", f"start {start}, shape {sh}")
    for d, (s0, n) in enumerate(zip(start, sh)):
        if s0 < 0 or s0 + n > x.shape[d]:
            raise fail(opname, "start", f"a box inside the {x.shape} tile (axis {d}: from 0 "
                       f"to {x.shape[d]})", f"elements {s0} to {s0 + n} of axis {d}")
    return start, sh


@typing_rule("subtile")
def type_subtile(x, start, shape):
    _tile("subtile", x)
    _start, sh = subtile_box("subtile", x, start, shape)
    return make_tile(x.dtype, sh, masked=x.masked)


#: a slice's stop left out (``t[4:]``), in the stops ``typing/syntax.py`` passes to
#: ``_getitem_slices``
OPEN_STOP = 2 ** 62


def slice_bounds(shape, starts, stops) -> list:
    """``(lo, hi)`` per axis of ``shape`` for the slices ``starts[d]:stops[d]`` (Python's
    rules for negative and out-of-range bounds, :data:`OPEN_STOP` for a stop left out; axes
    past the slices whole). Shared by the typing and the interpreter."""
    out = []
    for d, n in enumerate(shape):
        lo, hi = (starts[d], stops[d]) if d < len(starts) else (0, OPEN_STOP)
        lo, hi, _ = slice(lo, None if hi == OPEN_STOP else hi).indices(n)
        out.append((lo, hi))
    return out


def slices_box(x, starts, stops):
    """``(start, shape)`` of ``x[starts[0]:stops[0], ...]`` (Python's rules for negative and
    left-out bounds; axes past the index are whole)."""
    starts = _static_ints("getitem", "index", starts)
    stops = _static_ints("getitem", "index", stops)
    if len(starts) > x.ndim:
        raise fail("getitem", "index", f"at most {x.ndim} slices for a {x.shape} tile",
                   f"{len(starts)}")
    box_start, box_shape = [], []
    for d, (n, (lo, hi)) in enumerate(zip(x.shape, slice_bounds(x.shape, starts, stops))):
        if hi - lo < 1 or (hi - lo) & (hi - lo - 1):
            raise fail("getitem", "index", "static slices of power-of-two lengths (a tile's "
                       "extents are powers of two)", f"{hi - lo} elements of axis {d} "
                       f"({lo}:{hi} of a {x.shape} tile)")
        box_start.append(lo)
        box_shape.append(hi - lo)
    return tuple(box_start), tuple(box_shape)


def static_index_type(x, starts, stops, newaxes):
    """``(tile type after the slices, final tile type)`` of ``x[...]`` on a tile
    (``_getitem_static``)."""
    _start, sh = slices_box(x, starts, stops)
    sliced = make_tile(x.dtype, sh, masked=x.masked)
    out = sliced if tuple(sh) != tuple(x.shape) else x      # no slice: the tile as it is
    for pos in _static_ints("getitem", "index", newaxes) if not _empty(newaxes) else ():
        out = type_expand_dims(out, types.literal(pos))
    if out is x:
        out = sliced
    return sliced, out


def _empty(ty) -> bool:
    return isinstance(ty, types.BaseTuple) and len(ty) == 0


def tuple_slice(x, starts, stops, newaxes):
    """``(lo, hi)`` of ``x[lo:hi]`` on a tuple (one slice, no ``None``)."""
    starts = _static_ints("getitem", "index", starts)
    stops = _static_ints("getitem", "index", stops)
    if len(starts) != 1 or not _empty(newaxes):
        raise fail("getitem", "index", "one slice of a tuple", f"an index of {len(starts)} "
                   f"slices{' and None' if not _empty(newaxes) else ''}")
    stop = None if stops[0] == OPEN_STOP else stops[0]
    lo, hi, _ = slice(starts[0], stop).indices(len(x))
    return lo, max(lo, hi)


@typing_rule("_getitem_static")
def type_getitem_static(x, starts, stops, newaxes):
    from .types import PartitionType, TensorType
    if isinstance(x, TileType):
        return static_index_type(x, starts, stops, newaxes)[1]
    if isinstance(x, types.BaseTuple):
        lo, hi = tuple_slice(x, starts, stops, newaxes)
        return types.BaseTuple.from_types(tuple(x.types[lo:hi]))
    if isinstance(x, (TensorType, PartitionType)):
        from .memory import type_tensor_element
        return type_tensor_element(x, types.slice2_type)   # refused: elements by coordinates
    raise fail("getitem", "x", "a tile or a tuple (static slices and None index tiles)", x)


@typing_rule("_attr_T")
def type_attr_t(x):
    if isinstance(x, TileType):
        return type_transpose(x)
    if isinstance(x, types.BaseNamedTuple) and "T" in x.fields:
        return x.types[x.fields.index("T")]
    raise fail("T", "x", "a tile (t.T is nt.transpose(t)) or a named tuple with a field T", x)


@typing_rule("item")
def type_item(x):
    _tile("item", x)
    if math.prod(x.shape) != 1:
        raise fail("item", "x", "a tile of one element", f"a {x.shape} tile")
    if x.masked:
        raise fail("item", "x", "an unmasked tile (a masked tile's element may be invalid: use "
                   "filled(x, value) first)", f"a masked {x.shape} tile")
    if dtypes.is_float8(x.dtype):
        raise fail("item", "x", "a tile of a dtype scalars hold (astype FP8 to float32 first)",
                   f"a tile of {dtypes.name(x.dtype)}")
    return dtypes.float32 if dtypes.is_half(x.dtype) else x.dtype


# ------------------------------------------------------------------- attributes of a tile


def tile_shape_type(t: TileType):
    """The type of ``t.shape``: a tuple of literal ints, static like the tile's shape (so
    ``nt.zeros((t.shape[0], 8), ...)`` types)."""
    return types.Tuple(tuple(types.literal(n) for n in t.shape))


def _register_tile_attributes():
    from numba.cuda.cudadecl import registry
    from numba.cuda.typing.templates import AttributeTemplate

    @registry.register_attr
    class TileAttributes(AttributeTemplate):
        """``t.shape`` (static: literal ints), ``t.ndim`` and ``t.dtype`` (a dtype, as
        ``nt.astype`` and ``nt.zeros`` take it) of a tile; ``t.T`` is ``nt.transpose(t)``
        (``typing/syntax.py``)."""

        key = TileType

        def resolve_shape(self, t):
            return tile_shape_type(t)

        def resolve_ndim(self, t):
            return types.literal(t.ndim)

        def resolve_dtype(self, t):
            return types.NumberClass(t.dtype)


_register_tile_attributes()
