"""Numba types of numba_tile: Tensor, Partition and Tile, with their data models.

* :class:`TensorType` is a read-only kernel parameter bound to a device array. It
  carries the parameter's name (its *brand*), so an alias ``y = x`` still names
  ``x`` in an ownership error and the ownership pass needs no alias analysis.
* :class:`PartitionType` is a mutable kernel parameter: the block's own tile of an
  array partitioned on the host. It carries the tile shape.
* :class:`TileType` is a tile value: dtype, static shape, and the register layout
  (:mod:`numba_tile.layout`) saying which elements each thread holds.

Data models: a Tensor or Partition is ``{data*, shape[ndim] (int64), strides[ndim]
(int64, in elements)}``; Numba flattens it into ``1 + 2*ndim`` kernel parameters. A
Tile is an LLVM array of the thread's ``elems_per_thread`` elements, in registers.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import types
from numba.cuda.datamodel import models as datamodel_models
from numba.cuda.extending import models, register_model

from .. import dtypes
from ..constant_identity import identity


def storage_type(dt):
    """Numba type an element of ``dt`` is stored as in device memory."""
    if dt == dtypes.bfloat16:
        return types.uint16
    if dt == dtypes.bool_ or dtypes.is_float8(dt):
        return types.uint8
    return dt


class _ArrayParam(types.Type):
    """Common base of Tensor and Partition parameter types."""

    mutable = False

    @property
    def storage(self):
        return storage_type(self.dtype)


def _zero_axes_name(axes: tuple) -> str:
    """The zero-stride axes and their divisors in a type's name (Numba interns types by name:
    each is its own specialization)."""
    return f", stride0={axes}" if axes else ""


class TensorType(_ArrayParam):
    """Read-only kernel parameter ``param`` bound to an array.

    Args:
        dtype: element dtype (a Numba type from :mod:`numba_tile.dtypes`).
        ndim: rank.
        vec16: the specialization knows 16-byte vector accesses are legal (data
            pointer 16-byte aligned, last axis contiguous, every other stride and the
            last extent multiples of 16 bytes).
        param: the kernel parameter's name (its brand).
        writable: a ``Mutable`` parameter of an unchecked kernel (unchecked ops and stores
            at any index may write it).
        zero_axes: ``(axis, divisor)`` for each axis whose stride is 0 in this
            specialization (a broadcast view, such as a table row repeated for every head),
            with the extent's largest power-of-two divisor (``argtypes.zero_axes``): the
            lowering uses the constant 0 for the stride, so the chunks that differ only along
            those axes are one access.
    """

    def __init__(self, dtype, ndim: int, vec16: bool, param: str, writable: bool = False,
                 zero_axes: tuple = ()):
        self.dtype, self.ndim, self.vec16, self.param = dtype, ndim, vec16, param
        self.writable = writable
        self.zero_axes = tuple((int(d), int(div)) for d, div in zero_axes)
        super().__init__(
            name=f"Tensor[{dtypes.name(dtype)}, {ndim}d{', vec16' if vec16 else ''}"
                 f"{_zero_axes_name(self.zero_axes)}"
                 f"{', mutable' if writable else ''}, param={param}]")


class PartitionType(_ArrayParam):
    """Mutable kernel parameter ``param``: the block's own tile of a partitioned array.

    Args:
        dtype, ndim, vec16, param, zero_axes: as :class:`TensorType`.
        tile_shape: static tile shape (powers of two), one entry per axis.
        mapped: the partition is mapped onto a fixed number of blocks (persistent kernels):
            a block owns the tiles ``tiles(z)`` hands it, not one tile.
        order: the static traversal order of the tiles (``runtime/partition.normalize_order``):
            ``"row"`` (row-major) or ``("grouped", GROUP)``; which tile block ``b`` owns, or
            which tile is the ``k``-th ``tiles(z)`` hands out (``lowering/tile_order.tile_coords``).
            Part of the type's name, so each order is its own specialization.
    """

    mutable = True

    def __init__(self, dtype, ndim: int, tile_shape: tuple, vec16: bool, param: str,
                 mapped: bool = False, order="row", zero_axes: tuple = ()):
        self.dtype, self.ndim, self.vec16, self.param = dtype, ndim, vec16, param
        self.zero_axes = tuple((int(d), int(div)) for d, div in zero_axes)
        self.tile_shape = tuple(tile_shape)
        self.mapped = mapped
        self.order = order if order == "row" else (str(order[0]), int(order[1]))
        shown_order = "" if self.order == "row" else f", {self.order[0]}({self.order[1]})"
        super().__init__(
            name=f"Partition[{dtypes.name(dtype)}, tile={self.tile_shape}"
                 f"{', vec16' if vec16 else ''}{_zero_axes_name(self.zero_axes)}"
                 f"{', mapped' if mapped else ''}{shown_order}, "
                 f"param={param}]")


class PartitionIndexType(types.Type):
    """A tile index minted by ``tiles(z)``: it carries the *brand* of partition ``z`` (its
    parameter name), and only a store to ``z`` accepts it. Its value is the tile's
    coordinates (int64, tile units), usable as the index of any load; ``idx[d]`` (a static
    axis) gives one of them as a plain int64, which no store accepts as an index."""

    def __init__(self, brand: str, ndim: int):
        self.brand, self.ndim = brand, ndim
        super().__init__(name=f"PartitionIndex[{brand}, {ndim}d]")


class StripIndexType(PartitionIndexType):
    """A strip of partition ``z`` minted by ``strips(z)``: the tiles that share their leading
    coordinates (all column tiles of a row of tiles, for a 2-D partition). Its value is those
    ``ndim`` leading coordinates (the partition's rank minus one); ``strip[d]`` gives one as a
    plain int64. Only ``tiles(z, strip)`` turns it into tile indices of ``z``."""

    def __init__(self, brand: str, ndim: int):
        self.brand, self.ndim = brand, ndim
        types.Type.__init__(self, name=f"StripIndex[{brand}, {ndim}d]")


class StripTileIndexType(PartitionIndexType):
    """A tile index minted by ``tiles(z, strip)``: one tile of a strip this block owns. It
    carries ``z``'s brand like ``tiles(z)``'s indices; a kernel uses one scheme per partition
    (``typing/ownership.check_index_schemes``)."""

    def __init__(self, brand: str, ndim: int):
        self.brand, self.ndim = brand, ndim
        types.Type.__init__(self, name=f"PartitionIndex[{brand}, {ndim}d, strip]")


class StripsIterable(types.SimpleIterableType):
    """``strips(z)``: the strips of partition ``z`` this block owns (b, b + B, ...)."""

    def __init__(self, ptype: PartitionType):
        self.ptype = ptype
        super().__init__(f"Strips[{ptype.name}]", StripsIterator(ptype))


class StripsIterator(types.SimpleIteratorType):
    def __init__(self, ptype: PartitionType):
        self.ptype = ptype
        super().__init__(f"StripsIterator[{ptype.name}]",
                         StripIndexType(ptype.param, ptype.ndim - 1))


def _rev(reverse: bool) -> str:
    return ", reverse" if reverse else ""


class StripTilesIterable(types.SimpleIterableType):
    """``tiles(z, strip)``: the tiles of one strip of ``z``, in order along the last axis
    (``reverse``: from the last)."""

    def __init__(self, ptype: PartitionType, reverse: bool = False):
        self.ptype, self.reverse = ptype, bool(reverse)
        super().__init__(f"StripTiles[{ptype.name}{_rev(reverse)}]",
                         StripTilesIterator(ptype, reverse))


class StripTilesIterator(types.SimpleIteratorType):
    def __init__(self, ptype: PartitionType, reverse: bool = False):
        self.ptype, self.reverse = ptype, bool(reverse)
        super().__init__(f"StripTilesIterator[{ptype.name}{_rev(reverse)}]",
                         StripTileIndexType(ptype.param, ptype.ndim))


class TilesIterable(types.SimpleIterableType):
    """``tiles(z)``: the tiles of partition ``z`` this block owns (``reverse``: the same
    tiles, from the last)."""

    def __init__(self, ptype: PartitionType, reverse: bool = False):
        self.ptype, self.reverse = ptype, bool(reverse)
        super().__init__(f"Tiles[{ptype.name}{_rev(reverse)}]", TilesIterator(ptype, reverse))


class TilesIterator(types.SimpleIteratorType):
    def __init__(self, ptype: PartitionType, reverse: bool = False):
        self.ptype, self.reverse = ptype, bool(reverse)
        super().__init__(f"TilesIterator[{ptype.name}{_rev(reverse)}]",
                         PartitionIndexType(ptype.param, ptype.ndim))


def in_product_layout(t) -> bool:
    """Tile ``t`` lies in an ``mma`` accumulator's layout or in the rows of one (a
    reduction of such a tile along its rows, ``keepdims``: a ``VectorLayout``)."""
    from ..layout import MmaLayout, VectorLayout
    return isinstance(t.layout, (MmaLayout, VectorLayout))


def default_layout(dt, shape):
    """The blocked layout a tile of ``dt`` and ``shape`` gets in the kernel being compiled
    (``typing/common.make_tile``'s, without its size check): 16-byte chunks of the dtype."""
    from .. import compiler_context
    from ..layout import BlockedLayout, max_vec_for
    return BlockedLayout(tuple(shape), compiler_context.current().num_threads,
                         max_vec_for(dtypes.itemsize(dt)))


def wider_than_default(t) -> bool:
    """Whether tile type ``t`` is in a blocked layout of more elements per chunk than its
    dtype's default (the layout of a narrower dtype's load, kept through a cast)."""
    from ..layout import BlockedLayout, max_vec_for
    return (isinstance(t.layout, BlockedLayout)
            and t.layout.max_vec > max_vec_for(dtypes.itemsize(t.dtype)))


class TileType(types.Type):
    """A tile value: ``dtype``, static ``shape``, register ``layout`` and ``masked``.

    A *masked* tile knows which of its elements are valid: a load without ``padding=``
    marks the elements outside the array invalid, elementwise ops keep the intersection of
    their operands' valid elements, reductions skip invalid elements and stores do not
    write them. The valid elements of a masked tile are a box ``[0, extent[d])`` along each
    axis (a tile loaded at an array's edge), carried at run time next to the elements.
    """

    def __init__(self, dtype, shape: tuple, layout, masked: bool = False, align: int = 1):
        self.dtype, self.shape, self.layout = dtype, tuple(shape), layout
        self.masked = bool(masked)
        #: a masked tile's valid extent along the last axis is a multiple of ``align``
        #: elements (a load from a 16-byte aligned array: 16 // itemsize), so a store can
        #: write whole 16-byte chunks
        self.align = int(align) if masked else 1
        mask = (f", masked(align={self.align})" if self.align > 1 else ", masked") if masked else ""
        super().__init__(name=f"Tile[{dtypes.name(dtype)}, {self.shape}, {layout.describe()}"
                              f"{mask}]")

    @property
    def ndim(self):
        return len(self.shape)

    def with_dtype(self, dt) -> "TileType":
        return TileType(dt, self.shape, self.layout, self.masked, self.align)

    def unify(self, typingctx, other):
        """Two tiles of one dtype, shape and maskedness in different layouts (a variable
        assigned in two branches, or a loop's variable: its value before the loop and its
        value from the loop's body) unify to the blocked layout of their dtype (the others
        convert), except that

        * an ``mma`` accumulator layout (or a row slice of one) wins: a K loop's accumulator,
          initialized by ``zeros`` and updated by ``mma``, then converts once before the loop
          rather than twice per iteration (``place_constant_tiles``: not at all), and so does
          attention's running row maximum and sum next to the scores;
        * where one of the two is in that default blocked layout and the other in a wider
          blocked layout (a float32 tile of a 16-bit load keeps the load's layout), the wider
          wins: a loop's state made by ``full``/``zeros`` and updated from loaded data then
          converts once before the loop (or not at all: ``place_constant_tiles`` makes the
          constant in the winning layout) rather than twice per iteration.
        """
        if (isinstance(other, TileType) and other.dtype == self.dtype
                and other.shape == self.shape and other.masked == self.masked):
            align = min(self.align, other.align)
            for t in (self, other):
                if in_product_layout(t):
                    return TileType(self.dtype, self.shape, t.layout, self.masked, align)
            default = TileType(self.dtype, self.shape, default_layout(self.dtype, self.shape),
                               self.masked, align)
            wide = [t for t in (self, other) if wider_than_default(t)]
            if len(wide) == 1 and default.layout in (self.layout, other.layout):
                return TileType(self.dtype, self.shape, wide[0].layout, self.masked, align)
            return default
        return None

    def can_convert_to(self, typingctx, other):
        from numba.cuda.typeconv import Conversion
        if (isinstance(other, TileType) and other.dtype == self.dtype
                and other.shape == self.shape and other.masked == self.masked
                and self.align % other.align == 0):
            return Conversion.safe
        return None


class ConstantArgType(types.Omitted):
    """A ``Constant`` parameter's type: Numba's ``Omitted`` (no kernel parameter, the value
    folded into the code by ``typing/constants.py``), interned by the value's identity
    (:func:`numba_tile.constant_identity.identity`: exact type and bits, inside tuples too).
    Numba interns ``Omitted`` by equality, so ``Omitted(-0.0)`` would be ``Omitted(0.0)`` and
    ``Omitted((2.0,))`` would be ``Omitted((2,))``, and one specialization would be compiled
    with the other's value.

    Args:
        value: the constant.
    """

    def __init__(self, value):
        from ..frozen import exact_constant
        self._identity = identity(value)
        # folded with its leaves of exact types (``class F(float)`` as float): Numba types
        # them so, and the interpreter then runs no subclass's operators
        super().__init__(exact_constant(value))
        # as messages show it (the repr tells 2 from 2.0 and -0.0 from 0.0; the key decides)
        self.name = f"constant({value!r})"

    @property
    def key(self):
        return self._identity


# Omitted's own model: no LLVM argument (numba.cuda.datamodel.models is the module Numba's
# registry uses; importing datamodel.cuda_models directly would register its defaults again)
register_model(ConstantArgType)(datamodel_models.OmittedArgDataModel)


@register_model(TensorType)
@register_model(PartitionType)
class ArrayParamModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [
            ("data", types.CPointer(fe_type.storage)),
            ("shape", types.UniTuple(types.int64, fe_type.ndim)),
            ("strides", types.UniTuple(types.int64, fe_type.ndim)),
        ]
        super().__init__(dmm, fe_type, members)


@register_model(PartitionIndexType)
class PartitionIndexModel(models.StructModel):
    """``coords``: the tile's coordinates; ``valid``: 1 when minted by ``tiles()``. A variable
    Numba zero-initializes (an index used after a loop that never ran) is not valid, and a
    load or store at it does nothing."""

    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("coords", types.UniTuple(types.int64, fe_type.ndim)),
                                        ("valid", types.boolean)])


register_model(StripIndexType)(PartitionIndexModel)
register_model(StripTileIndexType)(PartitionIndexModel)


@register_model(StripsIterable)
class StripsIterableModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("part", fe_type.ptype)])


@register_model(StripsIterator)
class StripsIteratorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [("part", fe_type.ptype), ("next", types.EphemeralPointer(types.int64)),
                   ("stop", types.int64), ("step", types.int64)]
        super().__init__(dmm, fe_type, members)


@register_model(StripTilesIterable)
class StripTilesIterableModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        strip = StripIndexType(fe_type.ptype.param, fe_type.ptype.ndim - 1)
        super().__init__(dmm, fe_type, [("part", fe_type.ptype), ("strip", strip)])


@register_model(StripTilesIterator)
class StripTilesIteratorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        strip = StripIndexType(fe_type.ptype.param, fe_type.ptype.ndim - 1)
        members = [("part", fe_type.ptype), ("strip", strip),
                   ("next", types.EphemeralPointer(types.int64)), ("stop", types.int64)]
        super().__init__(dmm, fe_type, members)


@register_model(TilesIterable)
class TilesIterableModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("part", fe_type.ptype)])


@register_model(TilesIterator)
class TilesIteratorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [("part", fe_type.ptype), ("next", types.EphemeralPointer(types.int64)),
                   ("stop", types.int64), ("step", types.int64)]
        super().__init__(dmm, fe_type, members)


def element_llvm_type(dt) -> ir.Type:
    """LLVM type of one tile element in registers."""
    if dt == dtypes.bool_:
        return ir.IntType(1)
    if dt == dtypes.bfloat16:
        return ir.IntType(16)
    if dt == dtypes.float16:
        return ir.HalfType()
    if dt == dtypes.float32:
        return ir.FloatType()
    if dt == dtypes.float64:
        return ir.DoubleType()
    return ir.IntType(dt.bitwidth)


@register_model(TileType)
class TileModel(models.PrimitiveModel):
    """A thread's fragment: ``[elems_per_thread x element]`` in registers; a masked tile
    adds its valid extents, ``{[E x element], [ndim x i64]}``."""

    def __init__(self, dmm, fe_type):
        be_type = ir.ArrayType(element_llvm_type(fe_type.dtype), fe_type.layout.elems_per_thread)
        if fe_type.masked:
            be_type = ir.LiteralStructType([be_type, ir.ArrayType(ir.IntType(64), fe_type.ndim)])
        super().__init__(dmm, fe_type, be_type)
