"""Typing rules of the memory ops: load, load_at, load_like, store."""

from __future__ import annotations

from numba.cuda import types

from .. import dtypes
from .._registry import typing_rule
from .common import check_float8_target, fail, is_omitted, is_scalar, make_tile, static_shape
from .types import PartitionIndexType, PartitionType, TensorType, TileType


def _mapped_needs_index(opname, p):
    return fail(opname, "index", f"an index from tiles({p.param}): '{p.param}' is mapped onto a "
                "fixed number of blocks, so a block has no single own tile "
                f"(iterate `for idx in tiles({p.param})`)", "nothing")


def _own_index(opname, p, index):
    """Check an index given for partition ``p``: it must be minted by ``tiles(p)`` (or
    ``tiles(p, strip)``), of ``p``'s rank; a strip is not a tile index."""
    from .types import StripIndexType
    if isinstance(index, StripIndexType):
        raise fail(opname, "index", f"a tile index of '{p.param}' (a strip is not one: iterate "
                   f"`for idx in tiles({p.param}, strip)`)", f"a strip of '{index.brand}'")
    if isinstance(index, PartitionIndexType) and index.brand == p.param \
            and index.ndim == p.ndim:
        return
    got = f"an index of partition '{index.brand}'" if isinstance(index, PartitionIndexType) \
        else str(index)
    raise fail(opname, "index", f"an index from tiles({p.param}) (a block reads only its own "
               "tiles of an array being written; other tiles would race)", got)


def _index_ok(ty, ndim: int) -> bool:
    if isinstance(ty, PartitionIndexType):
        return ty.ndim == ndim
    if ndim == 1 and isinstance(ty, types.Integer):
        return True
    return (isinstance(ty, types.BaseTuple) and len(ty.types) == ndim
            and all(isinstance(t, types.Integer) for t in ty.types))


def _align(x, tile_shape) -> int:
    """What the valid extent of a tile of ``x`` along the last axis is a multiple of: a
    16-byte aligned array's last extent is a multiple of ``16 // itemsize`` elements, and so
    is ``extent - index * tile`` for a tile of at least that many (at most the tile)."""
    if not x.vec16:
        return 1
    return min(max(1, 16 // dtypes.itemsize(x.dtype)), tile_shape[-1])


def _check_padding(ty, dt, opname):
    """Check a padding argument; True when there is none (the tile is masked)."""
    if isinstance(ty, (types.Omitted, types.NoneType)) and getattr(ty, "value", None) is None:
        return True
    if isinstance(ty, types.Omitted):
        v = ty.value
        if not isinstance(v, (bool, int, float)):
            raise fail(opname, "padding", "a scalar", v)
        if v != v or v in (float("inf"), float("-inf")):
            # FP8: NaN converts to NaN, but an infinity to the largest finite value
            # (cvt.rn.satfinite, for e5m2 too): refused rather than changed
            fp8_ok = dtypes.is_float8(dt) and v != v
            if not (dtypes.is_float(dt) or fp8_ok):
                raise fail(opname, "padding", f"a value {dtypes.name(dt)} holds", v)
            return False
    elif not is_scalar(ty):
        raise fail(opname, "padding", "a scalar", ty)
    else:       # a run-time value: converted to the dtype in the kernel
        check_float8_target(opname, dt)
    check_scalar_fits(ty, dt, opname, "padding", "the dtype of the loaded array")
    return False


@typing_rule("load")
def type_load(x, index, shape, padding):
    if isinstance(x, PartitionType):
        if is_omitted(index):
            if x.mapped:
                raise _mapped_needs_index("load", x)
        else:
            _own_index("load", x, index)
        if not is_omitted(shape):
            raise fail("load", "shape", f"no shape for partition '{x.param}' (its tile shape "
                       f"{x.tile_shape} is used)", shape)
        masked = _check_padding(padding, x.dtype, "load")
        return make_tile(x.dtype, x.tile_shape, masked=masked, align=_align(x, x.tile_shape))
    if not isinstance(x, TensorType):
        raise fail("load", "x", "a tensor or partition parameter", x)
    if is_omitted(index):
        raise fail("load", "index", f"a tuple of {x.ndim} tile indices", "nothing")
    if not _index_ok(index, x.ndim):
        raise fail("load", "index", f"a tuple of {x.ndim} integers (tile units)", index)
    if is_omitted(shape):
        raise fail("load", "shape", f"a static shape of {x.ndim} dimensions", "nothing")
    sh = static_shape(shape, "load")
    if len(sh) != x.ndim:
        raise fail("load", "shape", f"{x.ndim} dimensions (the rank of '{x.param}')", sh)
    masked = _check_padding(padding, x.dtype, "load")
    return make_tile(x.dtype, sh, masked=masked, align=_align(x, sh))


@typing_rule("load_at")
def type_load_at(x, offset, shape, padding):
    if isinstance(x, PartitionType):
        raise fail("load_at", "x", f"a read-only tensor parameter ('{x.param}' is a partition: "
                   "other blocks write its tiles, so a read at any position would race)",
                   f"partition '{x.param}'")
    if not isinstance(x, TensorType):
        raise fail("load_at", "x", "a tensor parameter", x)
    if is_omitted(offset) or isinstance(offset, PartitionIndexType) or not _index_ok(offset,
                                                                                      x.ndim):
        raise fail("load_at", "offset", f"a tuple of {x.ndim} integers (element coordinates)",
                   offset)
    if is_omitted(shape):
        raise fail("load_at", "shape", f"a static shape of {x.ndim} dimensions", "nothing")
    sh = static_shape(shape, "load_at")
    if len(sh) != x.ndim:
        raise fail("load_at", "shape", f"{x.ndim} dimensions (the rank of '{x.param}')", sh)
    if is_omitted(padding) or isinstance(padding, types.NoneType):
        raise fail("load_at", "padding", "a scalar: the value of the elements outside the "
                   "array (padding=0, or the neutral element of what follows)", "nothing")
    _check_padding(padding, x.dtype, "load_at")
    return make_tile(x.dtype, sh, masked=False, align=1)


@typing_rule("load_like")
def type_load_like(x, like, padding, index):
    if not isinstance(like, PartitionType):
        raise fail("load_like", "like", "a partition parameter", like)
    if isinstance(padding, PartitionIndexType):
        # load_like(x, z, idx): the third positional parameter is padding, not the index
        raise fail("load_like", "padding", "a scalar or None (the value of elements outside "
                   "x); an index from tiles() goes by keyword: load_like(x, z, index=idx)",
                   "an index from tiles()")
    if is_omitted(index):
        if like.mapped:
            raise _mapped_needs_index("load_like", like)
    else:
        _own_index("load_like", like, index)
    if not isinstance(x, (TensorType, PartitionType)):
        raise fail("load_like", "x", "a tensor or partition parameter", x)
    if x.ndim != like.ndim:
        raise fail("load_like", "x", f"rank {like.ndim} (the rank of '{like.param}')",
                   f"rank {x.ndim}")
    if isinstance(x, PartitionType) and x.param != like.param:
        raise fail("load_like", "x", "a read-only tensor, or the partition 'like' itself "
                   "(reading another partition's tile of an array being written races)",
                   x.param)
    masked = _check_padding(padding, x.dtype, "load_like")
    return make_tile(x.dtype, like.tile_shape, masked=masked, align=_align(x, like.tile_shape))


def _narrowing(z) -> str:
    """What a store of a wider tile into ``z`` expects, with the conversion to write."""
    name = dtypes.name(z.dtype)
    attr = "bool_" if name == "bool" else name
    return (f"a tile {name} holds without narrowing (the dtype of '{z.param}'); narrowing is "
            f"never implicit: write nt.store({z.param}, nt.astype(t, nt.{attr}))")


@typing_rule("store")
def type_store(z, tile, index):
    # Ownership (is z mutable? is index allowed?) is checked by the ownership pass,
    # from this op's effects; here only shapes and dtypes.
    if not isinstance(z, (PartitionType, TensorType)):
        raise fail("store", "z", "a partition parameter", z)
    if isinstance(z, TensorType):
        if not z.writable:
            return types.none        # refused by the ownership pass (StoreToReadOnlyError)
        # an unchecked kernel's Mutable array: a tile at a tile index of the tile's own shape
        if is_omitted(index) or not _index_ok(index, z.ndim) \
                or isinstance(index, PartitionIndexType):
            raise fail("store", "index", f"a tuple of {z.ndim} tile indices (a Mutable array has "
                       f"no own tile: say where the tile goes, in units of its shape)", index)
        if not (isinstance(tile, TileType) and tile.ndim == z.ndim):
            raise fail("store", "tile", f"a rank-{z.ndim} tile (its shape sets the tile units)",
                       tile)
        if not dtypes.storable(tile.dtype, z.dtype):
            raise fail("store", "tile", _narrowing(z), f"a tile of {dtypes.name(tile.dtype)}")
        return types.none
    if is_omitted(index) and z.mapped:
        raise _mapped_needs_index("store", z)
    if not is_omitted(index) and not _index_ok(index, z.ndim):
        raise fail("store", "index", f"an index from tiles({z.param})", index)
    if isinstance(tile, TileType):
        if tile.shape != z.tile_shape:
            raise fail("store", "tile", f"a tile of shape {z.tile_shape} (the tile shape of "
                       f"'{z.param}')", tile.shape)
        if not dtypes.storable(tile.dtype, z.dtype):
            raise fail("store", "tile", _narrowing(z), f"a tile of {dtypes.name(tile.dtype)}")
    elif is_scalar(tile):
        check_scalar_fits(tile, z.dtype, "store", "tile", f"the dtype of '{z.param}'")
        check_float8_target("store", z.dtype)
    else:
        raise fail("store", "tile", "a tile or a scalar", tile)
    return types.none


def check_scalar_fits(ty, dt, opname, arg, what):
    """A scalar of Numba type ``ty`` (or a constant, ``Omitted``) must be representable in
    ``dt``: no float into integers, no int out of range, only 0/1/bools into bool."""
    from .common import literal_int
    if isinstance(ty, types.Omitted):
        value = ty.value
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "float"
        width, shown = 64, repr(value)
    else:
        kind = dtypes.scalar_kind(ty)
        value = literal_int(ty) if kind == "int" else None
        width, shown = getattr(ty, "bitwidth", 64), str(ty)
    if dtypes.is_bool(dt):
        ok = kind == "bool" or (kind == "int" and value in (0, 1))
    elif dtypes.is_int(dt):
        if kind == "int" and value is None:       # a run-time integer: by type (no wrapping)
            sdt = dtypes.int_dtype(width if width in (8, 16, 32, 64) else 64,
                                   getattr(ty, "signed", True))
            ok = dtypes.storable(sdt, dt)
        else:
            ok = kind == "bool" or (kind == "int" and dtypes.int_fits(value, dt))
    else:
        ok = True
    if not ok:
        raise fail(opname, arg, f"a scalar that {dtypes.name(dt)} holds ({what})", shown)


def element_index_types(x, index):
    """The Numba integer types of ``x[i]`` / ``x[i, j, ...]``'s coordinates, one per axis of
    ``x``, or None when ``index`` is not that."""
    items = list(index.types) if isinstance(index, types.BaseTuple) else [index]
    if len(items) != x.ndim or not all(isinstance(t, types.Integer) for t in items):
        return None
    return items


def type_tensor_element(x, index):
    """``x[i]`` (``x[i, j, ...]``) on a tensor parameter: one element as a scalar, read by
    every thread of the block (so a branch on it is uniform). The element's dtype; float16 and
    bfloat16 (and FP8) read as float32 (exact). Coordinates are integers, NumPy's negative ones count
    from the end; outside the array the value is 0 (as ``gather``'s padding), never a read
    outside it (``lowering/memory.lower_tensor_element``).

    Raises:
        TileTypingError: ``x`` is a partition (the kernel writes it: a read of another
            block's element could race with its store; a partition's own tile is read with
            ``load``) or an unchecked kernel's ``Mutable`` array (its value could differ
            between threads), or the index is not one integer per axis.
    """
    if isinstance(x, PartitionType):
        raise fail("getitem", "x", f"a read-only tensor (a partition such as '{x.param}' is "
                   f"written by the kernel's blocks: read its own tile with load(), other "
                   f"tiles with gather() in an unchecked kernel)", f"partition '{x.param}'")
    if x.writable:
        # a Mutable array of an unchecked kernel: its elements may change under the read, so
        # the value would be neither race-checked nor uniform across the block
        raise fail("getitem", "x", f"a read-only tensor ('{x.param}' is Mutable: the kernel "
                   f"may write it, so threads could read different values; read it with "
                   f"gather())", f"Mutable '{x.param}'")
    if element_index_types(x, index) is None:
        raise fail("getitem", "index", f"{x.ndim} integer coordinate(s) of '{x.param}' "
                   f"({x.ndim}-d), as x[i]" + (", x[i, j]" if x.ndim > 1 else ""), index)
    if dtypes.is_float8(x.dtype):
        check_float8_target("getitem", x.dtype)
    return types.float32 if dtypes.is_half(x.dtype) or dtypes.is_float8(x.dtype) else x.dtype


# ------------------------------------------------------------- attributes of an array parameter


def _register_array_attributes():
    from numba.cuda.cudadecl import registry
    from numba.cuda.typing.templates import AttributeTemplate

    for cls in (TensorType, PartitionType):
        @registry.register_attr
        class ArrayAttributes(AttributeTemplate):
            """``x.shape`` (the array's extents, int64 values read at run time), ``x.ndim``
            and ``x.dtype`` (static) of a tensor or partition parameter."""

            key = cls

            def resolve_shape(self, x):
                return types.UniTuple(types.int64, x.ndim)

            def resolve_ndim(self, x):
                return types.literal(x.ndim)

            def resolve_dtype(self, x):
                return types.NumberClass(x.dtype)


_register_array_attributes()


# ----------------------------------------------------------------------- dtype comparisons


def same_dtype_class(a, b) -> bool | None:
    """Whether two dtype values (``x.dtype``, ``t.dtype``, ``nt.float16``, ``np.float16``:
    Numba's ``NumberClass`` or ``DType``) name one dtype; None where either is not one."""
    out = []
    for t in (a, b):
        if isinstance(t, types.NumberClass):
            out.append(t.instance_type)
        elif isinstance(t, types.DType):
            out.append(t.dtype)
        else:
            return None
    return out[0] == out[1]


def _register_dtype_comparisons():
    import operator

    from numba.cuda.cudadecl import registry
    from numba.cuda.typing.templates import AbstractTemplate, signature

    for op in (operator.eq, operator.ne):
        @registry.register_global(op)
        class DtypeComparison(AbstractTemplate):
            """``x.dtype == nt.float16`` (Triton's ``x.dtype == tl.float16``): static, a bool."""

            def generic(self, args, kws):
                if len(args) == 2 and not kws and same_dtype_class(*args) is not None:
                    return signature(types.boolean, *args)
                return None


_register_dtype_comparisons()



@typing_rule("_stage_origin")
def type_stage_origin(k, start):
    for name, v in (("k", k), ("start", start)):
        if not isinstance(v, types.Integer):
            raise fail("_stage_origin", name, "an integer", v)
    return types.none
