"""Helpers shared by the typing rules: static shapes, tile construction, messages."""

from __future__ import annotations

from numba.cuda import types

from .. import compiler_context, dtypes
from ..errors import TileTypingError
from ..layout import BlockedLayout, is_pow2, max_vec_for
from .types import PartitionType, TensorType, TileType


def fail(opname: str, arg: str, expected: str, got) -> TileTypingError:
    """The error for argument ``arg`` of ``opname()``: what was expected, what was given."""
    return TileTypingError(f'Invalid argument "{arg}" of {opname}(): expected {expected}, got {got}')


def is_omitted(ty) -> bool:
    return ty is None or isinstance(ty, (types.Omitted, types.NoneType))


def omitted_value(ty, default=None):
    if isinstance(ty, types.Omitted):
        return ty.value
    return default


def literal_int(ty):
    """The value of an integer literal type, else ``None``."""
    if isinstance(ty, types.IntegerLiteral):
        return ty.literal_value
    if isinstance(ty, types.BooleanLiteral):
        return None
    if isinstance(ty, types.Omitted) and isinstance(ty.value, int):
        return ty.value
    return None


def static_shape(ty, opname: str, arg: str = "shape") -> tuple:
    """A static tile shape from a literal int or a tuple of literal ints.

    Raises:
        TileTypingError: not static, or not powers of two.
    """
    if isinstance(ty, types.Omitted):
        value = ty.value
        vals = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, tuple) else None
    elif isinstance(ty, types.BaseTuple):
        vals = tuple(literal_int(t) for t in ty.types)
    else:
        vals = (literal_int(ty),)
    if vals is None or any(v is None for v in vals):
        raise fail(opname, arg, "a static shape (integer literals, Constant parameters, or "
                   "integer arithmetic on them; not a runtime value)", ty)
    if not vals or not all(is_pow2(v) for v in vals):
        raise fail(opname, arg, "a shape whose every dimension is a power of two", vals)
    return vals


#: Elements of one tile that one thread holds in registers without spilling in typical
#: kernels (255 32-bit registers per thread on sm_80/sm_90, shared with everything else the
#: thread keeps). A larger tile compiles, spilling to local memory, with a
#: :class:`~numba_tile.errors.TilePerformanceWarning` (``typing/spills.py``).
REGISTER_ELEMS_PER_THREAD = 256

#: Most elements one thread may hold of one tile. The lowering unrolls a tile's elements, so
#: the assembled code grows with them: ptxas takes about 10 s for a row softmax at 512
#: float32 elements per thread and about 50 s at 1024 (sm_90); past this a kernel is refused.
MAX_ELEMS_PER_THREAD = 1024


def warps_for(elems: int, per_thread: int = REGISTER_ELEMS_PER_THREAD) -> int | None:
    """The fewest warps (a power of two up to 32, a block's 1024 threads) that give a tile of
    ``elems`` elements at most ``per_thread`` elements in each thread; None when even 32 do
    not."""
    nw = 1
    while nw <= 32:
        if -(-elems // (32 * nw)) <= per_thread:
            return nw
        nw *= 2
    return None


def make_tile(dt, shape, opname: str = "tile", masked: bool = False, align: int = 1) -> TileType:
    """The tile type of ``dt`` and ``shape`` in the blocked layout of this kernel.

    Raises:
        TileTypingError: the tile needs more than :data:`MAX_ELEMS_PER_THREAD` elements per
            thread.
    """
    ctx = compiler_context.current()
    layout = BlockedLayout(tuple(shape), ctx.num_threads, max_vec_for(dtypes.itemsize(dt)))
    if layout.elems_per_thread > MAX_ELEMS_PER_THREAD:
        nw = warps_for(layout.numel, MAX_ELEMS_PER_THREAD)
        hint = (f"use num_warps={nw} or more (at most 32), or smaller tiles" if nw
                else "use smaller tiles (a loop over tiles of the row, as "
                     "examples/softmax_chunked.py does)")
        raise TileTypingError(
            f"a tile of shape {tuple(shape)} over {ctx.num_threads} threads puts "
            f"{layout.elems_per_thread} elements in each thread, more than "
            f"{MAX_ELEMS_PER_THREAD}: {hint}")
    return TileType(dt, tuple(shape), layout, masked, align)


def dtype_arg(ty, opname: str, arg: str = "dtype"):
    """A dtype given as a Numba type class, NumPy dtype or string literal."""
    if isinstance(ty, types.Omitted):
        dt = dtypes.from_any(ty.value)
    elif isinstance(ty, (types.NumberClass, types.DType)):
        dt = dtypes.from_any(ty)
    elif isinstance(ty, types.StringLiteral):
        dt = dtypes.from_any(ty.literal_value)
    else:
        dt = None
    if dt is None:
        raise fail(opname, arg, f"one of {dtypes.SUPPORTED_TEXT}", ty)
    return dt


def refuse_float8(opname: str, arg: str, dt):
    """Refuse an FP8 operand of ``opname``: FP8 tiles have no arithmetic (``dtypes``).

    Raises:
        TileTypingError: ``dt`` is ``float8_e4m3fn`` or ``float8_e5m2``.
    """
    if dtypes.is_float8(dt):
        raise fail(opname, arg, "a tile of a dtype with arithmetic (FP8 tiles are loaded, "
                   "stored, selected with where() and converted with astype() only, as in "
                   f"PyTorch: compute on astype(t, nt.float32))", f"a tile of {dtypes.name(dt)}")


#: the first compute capability with the FP8 conversions (``cvt.rn.satfinite.e4m3x2.f32``,
#: ``cvt.rn.f16x2.e4m3x2``: PTX ISA 7.8, sm_89)
FLOAT8_MIN_CC = (8, 9)


def target_cc() -> tuple:
    """The compute capability being compiled for ((9, 0) outside a compile)."""
    from ..compiler_context import _CURRENT
    return tuple(getattr(_CURRENT.get(), "cc", None) or (9, 0))[:2]


def check_float8_target(opname: str, dt):
    """An FP8 conversion needs sm_89 or later (``FLOAT8_MIN_CC``).

    Raises:
        TileTypingError: ``dt`` is an FP8 dtype and the target is older (sm_80).
    """
    cc = target_cc()
    if dtypes.is_float8(dt) and cc < FLOAT8_MIN_CC:
        raise TileTypingError(
            f"{opname}(): converting to or from {dtypes.name(dt)} needs sm_89 or later "
            f"(cvt.rn.satfinite.{dt.ptx}.f32 / cvt.rn.f16x2.{dt.ptx}, PTX ISA 7.8); the kernel "
            f"is compiled for sm_{cc[0]}{cc[1]}. FP8 loads and stores (bytes) work there; "
            f"convert on an sm_89+ GPU, or on the host")


def is_scalar(ty) -> bool:
    return isinstance(ty, (types.Boolean, types.Integer, types.Float))


def is_array_param(ty) -> bool:
    return isinstance(ty, (TensorType, PartitionType))
