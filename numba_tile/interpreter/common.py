"""Helpers of the interpreter rules: operand dtypes and compute arrays."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .values import InterpTile


def scalar_kind(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    raise TypeError(f"expected a tile or a scalar, got {type(v).__name__}")


def operand_dtype(a, b):
    """Promoted dtype of two operands, at least one an :class:`InterpTile`."""
    ta, tb = isinstance(a, InterpTile), isinstance(b, InterpTile)
    if ta and tb:
        return dtypes.promote(a.dtype, b.dtype)
    tile, other = (a, b) if ta else (b, a)
    kind = scalar_kind(other)
    if kind == "int" and isinstance(other, np.integer):
        # a typed scalar (bid(), num_tiles(), idx[d] and arithmetic on them: int64 in the
        # compiled kernel): promotion by its width and signedness, as typing promotes a
        # non-literal int
        return dtypes.promote_scalar(tile.dtype, kind, other.dtype.itemsize * 8, None,
                                     other.dtype.kind == "i")
    value = int(other) if kind == "int" else None
    return dtypes.promote_scalar(tile.dtype, kind, 64, value)


def scalar_to(value, dt):
    """A scalar as an element of tile dtype ``dt``, converted as the compiled kernel converts
    it (``lowering/common.scalar_to``): Numba's cast to the dtype's compute type
    (``interpreter/scalars.cast``: integers wrap, floats round, a float saturates into an
    integer), then rounded to ``dt`` (16-bit floats, FP8).

    Returns:
        np.ndarray: a 0-d array of ``dt``.
    """
    from . import scalars
    ct = dtypes.compute_type(dt)
    v = np.asarray(scalars.cast(value, ct))
    return v if ct == dt else to_dtype(v, dt)


def compute_array(v, dt) -> np.ndarray:
    """Operand ``v`` cast to ``dt`` (rounding, as the GPU does; a scalar as
    :func:`scalar_to` converts it), then widened to the compute dtype (float32 for 16-bit
    floats)."""
    np_dt = dtypes.to_numpy(dt)
    ct = dtypes.to_numpy(dtypes.compute_type(dt))
    if isinstance(v, InterpTile):
        return v.data.astype(np_dt).astype(ct)
    return np.asarray(scalar_to(v, dt), dtype=ct)


def to_dtype(values, dt) -> np.ndarray:
    """``values`` (an array or scalar) converted to dtype ``dt`` as the compiled kernel
    converts them: FP8 through float32 with ``cvt.rn.satfinite``'s saturation
    (:func:`dtypes.float8_from_float32`), 16-bit floats and FP8 widened to float32 first;
    anything else by NumPy's cast."""
    src = np.asarray(values)
    if src.dtype in (dtypes.BFLOAT16_NP, dtypes.FLOAT8_E4M3FN_NP, dtypes.FLOAT8_E5M2_NP) \
            or src.dtype == np.float16:
        if src.dtype != dtypes.to_numpy(dt):
            src = src.astype(np.float32)
    with np.errstate(all="ignore"):
        if dtypes.is_float8(dt):
            if src.dtype == dtypes.to_numpy(dt):
                return src.copy()
            return dtypes.float8_from_float32(src.astype(np.float32), dt)
        return src.astype(dtypes.to_numpy(dt))


def float_to_int(values, dt) -> np.ndarray:
    """Float ``values`` -> integer dtype ``dt`` as the compiled kernel converts them
    (``lowering/common._float_to_int_sat``): toward zero, saturated to ``dt``'s range, NaN
    to 0. NumPy's cast is undefined out of range (it wrapped -1.0 to 255 in uint8)."""
    lo, hi = dtypes.INT_RANGE[dt]
    v = np.trunc(np.asarray(values, dtype=np.float64))     # exact for every float dtype
    with np.errstate(invalid="ignore"):
        inside = (v >= float(lo)) & (v < float(hi + 1))     # False for NaN
        out = np.where(inside, v, 0.0).astype(dtypes.to_numpy(dt))
    out = np.where(v < float(lo), np.asarray(lo, out.dtype), out)
    return np.where(v >= float(hi + 1), np.asarray(hi, out.dtype), out)


def result(values: np.ndarray, dt, extents=None) -> InterpTile:
    return InterpTile(np.asarray(values).astype(dtypes.to_numpy(dt)), dt, extents)


def broadcast_extents(tile: InterpTile, shape: tuple) -> tuple:
    """A tile's valid extents broadcast to ``shape`` (as the compiled kernel: an axis of
    extent 1 stretches and is valid along all of it when its one element is)."""
    ext = tile.extents if tile.extents is not None else tile.shape
    lead = len(shape) - len(ext)
    out = list(shape[:lead])
    for d, (s, e) in enumerate(zip(tile.shape, ext)):
        n = shape[lead + d]
        out.append(e * n if s == 1 and n != 1 else e)
    return tuple(out)


def result_extents(operands, shape):
    """Valid extents of an elementwise result of ``shape``: the intersection of its masked
    operands' (None when none is masked)."""
    out = None
    for v in operands:
        if isinstance(v, InterpTile) and v.extents is not None:
            e = broadcast_extents(v, tuple(shape))
            out = e if out is None else tuple(min(a, b) for a, b in zip(out, e))
    return out
