"""Tile dtypes and the promotion table, shared by typing, lowering and the interpreter.

Supported dtypes: ``float16``, ``bfloat16``, ``float32``, ``float64``, ``int8``,
``int32``, ``int64``, ``bool``. The public names (``numba_tile.float32`` ...) are Numba types, so
they can be used inside kernels (``astype(t, nt.float16)``); NumPy dtypes and their
scalar types are accepted wherever a dtype is.

Promotion of the two operands of a binary op (``promote(a, b)``):

================  ==========================================================
operands          result
================  ==========================================================
same dtype        that dtype
bool, X           X
int8, int32, int64  the wider
int, float F      F (as Triton and PyTorch; NumPy would widen fp16 to fp64)
float16, bfloat16 float32 (neither holds the other; as PyTorch)
float F, float G  the wider of F and G
================  ==========================================================

A Python scalar next to a tile takes the tile's dtype when it is of the same kind and
its value fits (``int`` with an integer tile, ``float`` with a float tile, ``bool``
with anything); an ``int`` that does not fit an int32 tile gives int64 (runtime
``int`` arguments are typed int32 when their value fits, else int64, as Triton does);
an ``int`` with a bool tile gives int64; a ``float`` with an integer or bool tile gives
``float32``. True division ``/`` of integer or bool tiles gives ``float32``.

Nothing is ever narrowed implicitly: ``store`` accepts a tile (or scalar) only when
``promote(tile dtype, array dtype)`` is the array's dtype (so float32 into float16,
int64 into int32, float into int, or an int literal out of the array's range are
refused at compile time); narrowing needs ``astype``.

float16 and bfloat16 arithmetic is computed in float32 and rounded to the dtype
after each op (results equal the correctly rounded half-precision op for ``+ - * /``
since float32 has more than ``2p + 2`` significand bits).
"""

from __future__ import annotations

import numpy as np
from numba.cuda import types

try:  # bfloat16 for host (interpreter) arrays; optional at import for tooling
    import ml_dtypes as _ml_dtypes
    BFLOAT16_NP = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is a declared dependency
    BFLOAT16_NP = None

float16 = types.float16
bfloat16 = types.bfloat16
float32 = types.float32
float64 = types.float64
int8 = types.int8
int32 = types.int32
int64 = types.int64
bool_ = types.boolean

SUPPORTED = (float16, bfloat16, float32, float64, int8, int32, int64, bool_)

_BY_NAME = {
    "float16": float16, "half": float16,
    "bfloat16": bfloat16,
    "float32": float32, "float": float32,
    "float64": float64, "double": float64,
    "int8": int8, "int32": int32, "int64": int64,
    "bool": bool_, "bool_": bool_, "boolean": bool_,
}

_FLOAT_RANK = {float16: 16, bfloat16: 16, float32: 32, float64: 64}
_INT_RANK = {int8: 8, int32: 32, int64: 64}


def name(dt) -> str:
    """Canonical name of a supported dtype (``'float32'``, ``'bool'`` ...)."""
    if dt == bool_:
        return "bool"
    if dt == bfloat16:
        return "bfloat16"     # numba-cuda's own name for it is "__nv_bfloat16"
    return str(dt)


def is_float(dt) -> bool:
    return dt in _FLOAT_RANK


def is_int(dt) -> bool:
    return dt in _INT_RANK


def is_bool(dt) -> bool:
    return dt == bool_


def is_half(dt) -> bool:
    """True for the 16-bit float dtypes, computed in float32."""
    return dt in (float16, bfloat16)


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
    if BFLOAT16_NP is not None and npdt == BFLOAT16_NP:
        return bfloat16
    return _BY_NAME.get(npdt.name)


def to_numpy(dt) -> np.dtype:
    """NumPy dtype of a supported Numba dtype (bfloat16 through ``ml_dtypes``)."""
    if dt == bfloat16:
        if BFLOAT16_NP is None:  # pragma: no cover
            raise ImportError("bfloat16 on the host needs the 'ml_dtypes' package")
        return BFLOAT16_NP
    return np.dtype(name(dt))


def promote(a, b):
    """Result dtype of a binary op on dtypes ``a`` and ``b`` (see the module table)."""
    if a == b:
        return a
    if is_bool(a):
        return b
    if is_bool(b):
        return a
    if is_int(a) and is_int(b):
        return a if _INT_RANK[a] >= _INT_RANK[b] else b
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


INT_RANGE = {int8: (-2**7, 2**7 - 1), int32: (-2**31, 2**31 - 1), int64: (-2**63, 2**63 - 1)}


def int_fits(value: int, dt) -> bool:
    lo, hi = INT_RANGE[dt]
    return lo <= value <= hi


def promote_scalar(tile_dt, kind: str, width: int = 32, value=None):
    """Result dtype of a tile of ``tile_dt`` with a Python scalar of ``kind``.

    Args:
        tile_dt: the tile's dtype.
        kind: ``'bool'``, ``'int'`` or ``'float'``.
        width: bits of the scalar's type (int scalars: 32 or 64).
        value: the scalar's value when it is a compile-time constant, else None.
    """
    if kind == "bool":
        return tile_dt
    if kind == "int":
        if is_bool(tile_dt):
            return int64
        if is_int(tile_dt):
            if value is not None:
                return tile_dt if int_fits(value, tile_dt) else int64
            return tile_dt if width <= tile_dt.bitwidth else int64
        return tile_dt
    if kind == "float":
        return tile_dt if is_float(tile_dt) else float32
    raise ValueError(kind)


def storable(src, dst) -> bool:
    """True when values of dtype ``src`` go into an array of ``dst`` without narrowing."""
    return promote(src, dst) == dst


def true_divide_dtype(dt):
    """Result dtype of ``/`` on operands promoted to ``dt``."""
    return dt if is_float(dt) else float32


def compute_type(dt):
    """Numba type arithmetic on ``dt`` is computed in (float32 for 16-bit floats)."""
    return float32 if is_half(dt) else dt
