"""Tile dtypes and the promotion table, shared by typing, lowering and the interpreter.

Supported dtypes: ``float16``, ``bfloat16``, ``float32``, ``float64``; the signed integers
``int8``, ``int16``, ``int32``, ``int64``; the unsigned integers ``uint8``, ``uint16``,
``uint32``, ``uint64``; ``bool``; and the 8-bit floats ``float8_e4m3fn`` and
``float8_e5m2`` (storage and conversion only, see below). The public names
(``numba_tile.float32`` ...) are Numba types, so they can be used inside kernels
(``astype(t, nt.float16)``); NumPy dtypes and their scalar types (``ml_dtypes.bfloat16``,
``ml_dtypes.float8_e4m3fn`` ...) and the names as strings are accepted wherever a dtype is.

Promotion of the two operands of a binary op (``promote(a, b)``):

=====================  ===================================================================
operands               result
=====================  ===================================================================
same dtype             that dtype
bool, X                X
two signed integers    the wider (int8 < int16 < int32 < int64)
two unsigned integers  the wider (uint8 < uint16 < uint32 < uint64)
uintN, intM (M > N)    intM (it holds every uintN: uint8 + int16 -> int16)
uintN, intM (M <= N)   the signed integer of 2N bits (NumPy: uint8 + int8 -> int16,
                       uint16 + int32 -> int32, uint32 + int32 -> int64)
uint64, any signed     **refused**: no integer dtype holds both (NumPy gives float64, which
                       rounds values above 2**53); convert one operand with ``astype``
integer, float F       F (as Triton and PyTorch; NumPy would widen to float64)
float16, bfloat16      float32 (neither holds the other; as PyTorch)
float F, float G       the wider of F and G
float8, anything else  **refused**: FP8 tiles have no arithmetic (see below)
=====================  ===================================================================

A Python scalar next to a tile takes the tile's dtype when it is of the same kind and
its value fits (``int`` with an integer tile, ``float`` with a float tile, ``bool``
with anything). An integer literal that does not fit gives int64 next to a signed tile
and uint64 next to an unsigned one (refused if it does not fit that either); a
**negative** literal never wraps next to an unsigned tile: with uint8/16/32 the result is
int64 (``u8 + -1`` is exact; storing it back into the uint8 array is then refused until an
explicit ``astype``), with uint64 it is refused. A run-time
integer scalar (typed int32 when its value fits, else int64, as Triton does; or an
unsigned one, read from an unsigned tensor) promotes by its width: next to a tile of
the same signedness, the tile's dtype if the scalar is not wider, else int64 (uint64);
next to a tile of the other signedness, by the table above (a run-time int next to a
uint8 tile gives int32, next to a uint64 tile it is refused). An ``int`` with a bool
tile gives int64; a ``float`` with an integer or bool tile gives ``float32``. True
division ``/`` of integer or bool tiles gives ``float32``.

Nothing is ever narrowed implicitly: ``store`` accepts a tile (or scalar) only when
``promote(tile dtype, array dtype)`` is the array's dtype (so float32 into float16,
int64 into int32, int8 into uint8, float into int, or an int literal out of the array's
range are refused at compile time); narrowing needs ``astype``.

Integer semantics (GPU and interpreter agree bit for bit): arithmetic wraps modulo
``2**bits`` (NumPy); ``//`` and ``%`` on signed integers are Python's floor division and
modulo, on unsigned integers ``div.u``/``rem.u``; ``x // 0`` and ``x % 0`` give 0 (NumPy);
``>>`` is arithmetic on signed and logical on unsigned integers; a shift count outside
``[0, bits)`` gives 0 for ``<<`` and for ``>>`` of unsigned integers, the sign (0 or -1) for
``>>`` of signed ones (NumPy); comparisons, ``minimum``/``maximum``, ``max``/``min``,
``argmax``/``argmin`` compare unsigned integers as unsigned. ``abs`` of an unsigned tile is
the tile; unary ``-`` wraps (NumPy: ``-uint8(1) == 255``). ``sum``/``prod``/``cumsum`` keep
the tile's integer dtype (wrapping, as int8 tiles always did; NumPy would widen to the
platform integer): pass ``dtype=`` to accumulate wider (``sum(t, 0, dtype=nt.uint32)``).
Casts (``astype``) between integers truncate or extend (zero-extension from unsigned,
sign-extension from signed); integer to float rounds to nearest; float to integer
truncates toward zero, saturates outside the integer's range and gives 0 for NaN (PTX's
``cvt.rzi``), on both backends (NumPy's own cast is undefined there).

float16 and bfloat16 arithmetic is computed in float32 and rounded to the dtype
after each op (results equal the correctly rounded half-precision op for ``+ - * /``
since float32 has more than ``2p + 2`` significand bits).

**FP8** (``float8_e4m3fn``: 4 exponent bits, 3 mantissa bits, bias 7, no infinity, NaN
``S.1111.111``, largest finite 448; ``float8_e5m2``: 5/2 bits, bias 15, IEEE infinities and
NaNs, largest finite 57344). As in PyTorch, FP8 tiles have no arithmetic: they are loaded,
stored, selected (``where`` between two tiles of the same FP8 dtype), filled, reshaped,
and converted with ``astype``; every other op on them (``+``, comparisons, reductions,
math functions, atomics, mixing with another dtype) is refused with a message asking for
``astype(t, nt.float32)``. Conversion:

* FP8 -> any dtype: exact widening to float32 (``cvt.rn.f16x2.e4m3x2`` /
  ``cvt.rn.f16x2.e5m2x2`` then ``cvt.f32.f16``), then the float32 -> dtype cast.
* any dtype -> FP8: to float32 first (float64 and integers above 2**24 round there),
  then ``cvt.rn.satfinite.e4m3x2.f32`` / ``cvt.rn.satfinite.e5m2x2.f32``: round to
  nearest even; a value beyond the largest finite one, **infinity included** (for e5m2
  too: its infinities are only ever loaded from memory), saturates to +-448 (e4m3fn) /
  +-57344 (e5m2); NaN gives NaN. Constants (paddings, ``zeros``, ``full``) convert the same
  way, at compile time; a constant infinite padding of an FP8 load is refused. ``ml_dtypes`` (and PyTorch's
  ``.to()``) differ exactly there: they give NaN (e4m3fn) or infinity (e5m2) for
  out-of-range values; the interpreter follows the GPU (it clips to the largest finite
  value before ``ml_dtypes``' round-to-nearest-even cast). NaN's sign and payload are
  not specified.
* The ``cvt`` forms exist from sm_89 on (PTX ISA 7.8): converting to or from FP8 on an
  older target (sm_80) is refused at compile time, naming the target. Loads and stores
  of FP8 data (bytes) work on every target.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.cuda import types
from numba.cuda.extending import models, register_model

from .errors import TileTypingError

try:  # bfloat16 and FP8 for host (interpreter) arrays; optional at import for tooling
    import ml_dtypes as _ml_dtypes
    BFLOAT16_NP = np.dtype(_ml_dtypes.bfloat16)
    FLOAT8_E4M3FN_NP = np.dtype(_ml_dtypes.float8_e4m3fn)
    FLOAT8_E5M2_NP = np.dtype(_ml_dtypes.float8_e5m2)
except ImportError:  # pragma: no cover - ml_dtypes is a declared dependency
    BFLOAT16_NP = FLOAT8_E4M3FN_NP = FLOAT8_E5M2_NP = None


class Float8Type(types.Number):
    """An 8-bit float dtype (OCP FP8): a tile dtype only, never a scalar in a kernel.

    Args:
        name: ``'float8_e4m3fn'`` or ``'float8_e5m2'``.
        exponent_bits, mantissa_bits: the format's field widths.
        max_finite: the largest finite value (448.0, 57344.0).
        has_inf: the format has infinities (e5m2) or not (e4m3fn).
        ptx: the PTX type name of a pair (``'e4m3x2'``, ``'e5m2x2'``).
    """

    bitwidth = 8

    def __init__(self, name, exponent_bits, mantissa_bits, max_finite, has_inf, ptx):
        self.exponent_bits, self.mantissa_bits = exponent_bits, mantissa_bits
        self.max_finite, self.has_inf, self.ptx = max_finite, has_inf, ptx
        super().__init__(name=name)

    def unify(self, typingctx, other):
        return None          # no implicit conversion to or from anything


@register_model(Float8Type)
class _Float8Model(models.PrimitiveModel):
    """An FP8 value is its bit pattern, an ``i8``."""

    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.IntType(8))

float16 = types.float16
bfloat16 = types.bfloat16
float32 = types.float32
float64 = types.float64
int8 = types.int8
int16 = types.int16
int32 = types.int32
int64 = types.int64
uint8 = types.uint8
uint16 = types.uint16
uint32 = types.uint32
uint64 = types.uint64
bool_ = types.boolean
float8_e4m3fn = Float8Type("float8_e4m3fn", 4, 3, 448.0, False, "e4m3x2")
float8_e5m2 = Float8Type("float8_e5m2", 5, 2, 57344.0, True, "e5m2x2")

SUPPORTED = (float16, bfloat16, float32, float64, int8, int16, int32, int64,
             uint8, uint16, uint32, uint64, bool_, float8_e4m3fn, float8_e5m2)
#: the names a message lists
SUPPORTED_TEXT = ("float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, "
                  "uint16, uint32, uint64, bool, float8_e4m3fn, float8_e5m2")

_BY_NAME = {
    "float16": float16, "half": float16,
    "bfloat16": bfloat16,
    "float32": float32, "float": float32,
    "float64": float64, "double": float64,
    "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "bool": bool_, "bool_": bool_, "boolean": bool_,
    "float8_e4m3fn": float8_e4m3fn, "float8_e5m2": float8_e5m2,
}

_FLOAT_RANK = {float16: 16, bfloat16: 16, float32: 32, float64: 64}
_SIGNED_BITS = {int8: 8, int16: 16, int32: 32, int64: 64}
_UNSIGNED_BITS = {uint8: 8, uint16: 16, uint32: 32, uint64: 64}
_INT_BITS = {**_SIGNED_BITS, **_UNSIGNED_BITS}
_SIGNED_OF = {8: int8, 16: int16, 32: int32, 64: int64}
_UNSIGNED_OF = {8: uint8, 16: uint16, 32: uint32, 64: uint64}
FLOAT8 = (float8_e4m3fn, float8_e5m2)


class PromotionError(TileTypingError):
    """Two dtypes (or a dtype and a scalar) with no common dtype numba_tile accepts.

    Attributes:
        reason: why, and what to do (ends with the fix: an explicit ``astype``).
        operands: the two operands as text (``'uint64 and int32'``).
    """

    def __init__(self, reason: str, operands: str):
        self.reason, self.operands = reason, operands
        super().__init__(f"no common dtype of {operands}: {reason}")


def name(dt) -> str:
    """Canonical name of a supported dtype (``'float32'``, ``'bool'`` ...)."""
    if dt == bool_:
        return "bool"
    if dt == bfloat16:
        return "bfloat16"     # numba-cuda's own name for it is "__nv_bfloat16"
    return str(dt)


def is_float(dt) -> bool:
    """True for the float dtypes with arithmetic (not FP8: see :func:`is_float8`)."""
    return dt in _FLOAT_RANK


def is_float8(dt) -> bool:
    """True for ``float8_e4m3fn`` and ``float8_e5m2`` (storage and conversion only)."""
    return isinstance(dt, Float8Type)


def is_int(dt) -> bool:
    """True for the signed and unsigned integer dtypes."""
    return dt in _INT_BITS


def is_unsigned(dt) -> bool:
    return dt in _UNSIGNED_BITS


def is_signed_int(dt) -> bool:
    return dt in _SIGNED_BITS


def is_bool(dt) -> bool:
    return dt == bool_


def is_half(dt) -> bool:
    """True for the 16-bit float dtypes, computed in float32."""
    return dt in (float16, bfloat16)


def int_dtype(bits: int, signed: bool = True):
    """The integer dtype of ``bits`` bits (8, 16, 32 or 64) and signedness."""
    return (_SIGNED_OF if signed else _UNSIGNED_OF)[bits]


def itemsize(dt) -> int:
    if dt == bool_:
        return 1
    if dt in (float16, bfloat16):
        return 2
    return dt.bitwidth // 8


_NP_CACHE: dict = {}


def from_any(obj):
    """Map a dtype given as a Numba type, NumPy dtype or scalar type, or name.

    Returns:
        The Numba type, one of :data:`SUPPORTED`, or ``None`` when ``obj`` names no
        supported dtype.
    """
    if isinstance(obj, np.dtype):
        hit = _NP_CACHE.get(obj)
        if hit is None:
            hit = _NP_CACHE[obj] = _from_any(obj)
        return hit
    return _from_any(obj)


def _from_any(obj):
    if isinstance(obj, types.NumberClass):
        obj = obj.instance_type
    if isinstance(obj, types.DType):
        obj = obj.dtype
    if isinstance(obj, types.Type):
        return obj if obj in SUPPORTED else None
    if isinstance(obj, str):
        return _BY_NAME.get(obj)
    try:
        npdt = np.dtype(obj)
    except TypeError:
        return None
    if BFLOAT16_NP is not None:
        for known, dt in ((BFLOAT16_NP, bfloat16), (FLOAT8_E4M3FN_NP, float8_e4m3fn),
                          (FLOAT8_E5M2_NP, float8_e5m2)):
            if npdt == known:
                return dt
    if npdt.kind == "V":          # another ml_dtypes type (float8_e4m3fnuz ...)
        return None
    return _BY_NAME.get(npdt.name)


def to_numpy(dt) -> np.dtype:
    """NumPy dtype of a supported Numba dtype (bfloat16 and FP8 through ``ml_dtypes``)."""
    if dt == bfloat16 or is_float8(dt):
        if BFLOAT16_NP is None:  # pragma: no cover
            raise ImportError(f"{name(dt)} on the host needs the 'ml_dtypes' package")
        return {bfloat16: BFLOAT16_NP, float8_e4m3fn: FLOAT8_E4M3FN_NP,
                float8_e5m2: FLOAT8_E5M2_NP}[dt]
    return np.dtype(name(dt))


def _float8_reason(dt) -> str:
    return (f"{name(dt)} tiles have no arithmetic (load, store, where, filled and astype "
            f"only, as in PyTorch): convert with astype(t, nt.float32), compute, and convert "
            f"back with astype")


def promotion_refusal(a, b) -> str | None:
    """Why :func:`promote` refuses dtypes ``a`` and ``b``, or None when it does not."""
    if a == b:
        return None
    for dt in (a, b):
        if is_float8(dt):
            return _float8_reason(dt)
    for u, s in ((a, b), (b, a)):
        if u == uint64 and is_signed_int(s):
            return ("no integer dtype holds every uint64 and every negative value (NumPy "
                    "gives float64, which rounds values above 2**53): convert one operand "
                    "explicitly with astype() (e.g. to int64 when the uint64 values are "
                    "below 2**63)")
    return None


def promote(a, b):
    """Result dtype of a binary op on dtypes ``a`` and ``b`` (see the module table).

    Raises:
        PromotionError: a refused pair (uint64 with a signed integer, FP8 with anything
            else).
    """
    if a == b:
        return a
    why = promotion_refusal(a, b)
    if why is not None:
        raise PromotionError(why, f"{name(a)} and {name(b)}")
    if is_bool(a):
        return b
    if is_bool(b):
        return a
    if is_int(a) and is_int(b):
        if is_unsigned(a) == is_unsigned(b):
            return a if _INT_BITS[a] >= _INT_BITS[b] else b
        u, s = (a, b) if is_unsigned(a) else (b, a)
        if _INT_BITS[s] > _INT_BITS[u]:
            return s
        return _SIGNED_OF[2 * _INT_BITS[u]]          # u is not uint64 (refused above)
    if is_int(a):
        return b
    if is_int(b):
        return a
    if {a, b} == {float16, bfloat16}:
        return float32
    return a if _FLOAT_RANK[a] >= _FLOAT_RANK[b] else b


def scalar_kind(ty):
    """Kind of a Numba scalar type: ``'bool'``, ``'int'``, ``'float'`` or ``None``."""
    if isinstance(ty, types.Boolean):
        return "bool"
    if isinstance(ty, types.Integer):
        return "int"
    if isinstance(ty, types.Float):
        return "float"
    return None


INT_RANGE = {dt: ((-2 ** (b - 1), 2 ** (b - 1) - 1) if dt in _SIGNED_BITS else (0, 2 ** b - 1))
             for dt, b in _INT_BITS.items()}


def int_fits(value: int, dt) -> bool:
    lo, hi = INT_RANGE[dt]
    return lo <= value <= hi


def promote_scalar(tile_dt, kind: str, width: int = 32, value=None, signed: bool = True):
    """Result dtype of a tile of ``tile_dt`` with a Python scalar of ``kind``.

    Args:
        tile_dt: the tile's dtype.
        kind: ``'bool'``, ``'int'`` or ``'float'``.
        width: bits of the scalar's type (int scalars: 8 to 64).
        value: the scalar's value when it is a compile-time constant, else None.
        signed: the scalar's integer type is signed (run-time scalars; literals are
            judged by ``value``).

    Raises:
        PromotionError: FP8 tiles; a negative literal with an unsigned tile; a literal that
            fits no 64-bit integer of the tile's signedness; a run-time integer whose
            signedness the tile's dtype cannot take without wrapping (see the module
            table).
    """
    if is_float8(tile_dt):
        raise PromotionError(_float8_reason(tile_dt), f"{name(tile_dt)} and a {kind} scalar")
    if kind == "bool":
        return tile_dt
    if kind == "int":
        if value is not None:
            value = int(value)
            if is_int(tile_dt) and int_fits(value, tile_dt):
                return tile_dt
            if is_unsigned(tile_dt) and value < 0:
                # int64 holds both (as the run-time int64 Numba retries a failed literal with)
                if tile_dt != uint64 and int_fits(value, int64):
                    return int64
                raise PromotionError(
                    f"the negative integer would wrap in uint64 arithmetic and no integer dtype "
                    f"holds both: convert the tile with astype() to a signed dtype first",
                    f"{name(tile_dt)} and {value}")
            # a bool or float tile takes a literal of either 64-bit range (above int64's: uint64,
            # as Numba types it)
            wide = uint64 if is_unsigned(tile_dt) or (not is_int(tile_dt)
                                                      and value > INT_RANGE[int64][1]) \
                else int64
            if not int_fits(value, wide):
                raise PromotionError(f"{value} fits no 64-bit integer of the tile's signedness",
                                     f"{name(tile_dt)} and {value}")
            return wide if is_int(tile_dt) or is_bool(tile_dt) else tile_dt
        scalar_dt = int_dtype(width if width in (8, 16, 32, 64) else 64, signed)
        if is_bool(tile_dt):
            return int64 if signed else scalar_dt
        if is_int(tile_dt):
            if is_unsigned(tile_dt) != (not signed):
                return promote(tile_dt, scalar_dt)       # mixed signedness: the table
            if width <= _INT_BITS[tile_dt]:
                return tile_dt
            return int64 if signed else uint64
        return tile_dt
    if kind == "float":
        return tile_dt if is_float(tile_dt) else float32
    raise ValueError(kind)


def storable(src, dst) -> bool:
    """True when values of dtype ``src`` go into an array of ``dst`` without narrowing."""
    try:
        return promote(src, dst) == dst
    except PromotionError:
        return False


def true_divide_dtype(dt):
    """Result dtype of ``/`` on operands promoted to ``dt``."""
    return dt if is_float(dt) else float32


def compute_type(dt):
    """Numba type arithmetic on ``dt`` is computed in (float32 for 16-bit floats; FP8,
    which has no arithmetic, converts through float32)."""
    return float32 if is_half(dt) or is_float8(dt) else dt


def float8_from_float32(values, dt) -> np.ndarray:
    """float32 values -> FP8 ``dt`` as the GPU converts them (``cvt.rn.satfinite``): round
    to nearest even, saturate beyond the largest finite value (infinities included), NaN
    stays NaN. ``ml_dtypes`` alone would give NaN (e4m3fn) or infinity (e5m2) there.

    Returns:
        A NumPy array of ``to_numpy(dt)``, of ``values``' shape.
    """
    v = np.asarray(values, dtype=np.float32)
    m = np.float32(dt.max_finite)
    with np.errstate(invalid="ignore"):
        clipped = np.where(np.isnan(v), v, np.clip(v, -m, m)).astype(np.float32)
    return clipped.astype(to_numpy(dt))


def float8_bits(value: float, dt) -> int:
    """The FP8 bit pattern (0..255) of a Python number, converted as the GPU does
    (through float32, :func:`float8_from_float32`)."""
    return int(float8_from_float32(np.float32(value), dt).reshape(1).view(np.uint8)[0])
