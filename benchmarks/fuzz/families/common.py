"""What the families share: the family record, input values, padded tiles for references,
tolerances and the dtype lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import numba_tile as nt

from ..arrays import EPS, TINY, is_float, np_dtype

FLOATS = ("float32", "float16", "bfloat16", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")
ALL = FLOATS + INTS
FP8 = ("float8_e4m3fn", "float8_e5m2")


@dataclass(frozen=True)
class Family:
    """A kernel family: ``sample(space) -> config`` draws a configuration (JSON values
    only), ``run(config, env)`` builds the case's arrays, launches through ``env.launch`` and
    checks the results through ``env.check`` / ``env.check_view``.

    ``hidden`` families (the fuzzer's own tests) are sampled only when named.
    """

    name: str
    sample: Callable
    run: Callable
    doc: str
    hidden: bool = False


def jit(fn, cfg: dict):
    """``fn`` compiled with the case's options: ``num_warps``, ``num_stages`` (1 to 5; loops
    of loads pipeline, other kernels must ignore it) and ``min_blocks_per_sm`` (None, or 1 to
    4: a register cap)."""
    return nt.jit(num_warps=cfg["num_warps"], num_stages=cfg.get("num_stages", 1),
                  min_blocks_per_sm=cfg.get("min_blocks"))(fn)


def values(rng: np.random.Generator, shape, dtype: str, dist: str = "ints",
           lo: int | None = None, hi: int | None = None) -> np.ndarray:
    """Fresh random values of ``dtype`` (a numba_tile dtype name).

    ``dist``: ``"ints"`` (small integers, exact in every dtype and in sums), ``"normal"``
    (standard normal, rounded to the dtype), ``"positive"`` (0.5 to 2, no zeros: divisors,
    logarithms), ``"near1"`` (0.9 to 1.1: products), ``"wide"`` (integers over the dtype's
    whole range: wraparound).
    """
    dt = np_dtype(dtype)
    shape = tuple(int(s) for s in shape)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if is_float(dt):
        if dist == "normal":
            v = rng.standard_normal(shape) * (2.0 if dtype.startswith("float8") else 1.0)
        elif dist == "positive":
            v = rng.uniform(0.5, 2.0, shape)
        elif dist == "near1":
            v = rng.uniform(0.9, 1.1, shape)
        else:
            v = rng.integers(-4 if lo is None else lo, 5 if hi is None else hi, shape)
        return np.asarray(v, np.float64).astype(np.float32).astype(dt)
    info = np.iinfo(dt)
    if dist == "wide":
        a, b = int(info.min), int(info.max)
    else:
        a = max(int(info.min), -8 if lo is None else lo)
        b = min(int(info.max), 8 if hi is None else hi)
    return rng.integers(a, b, shape, endpoint=True, dtype=np.int64).astype(dt)


def f64(a) -> np.ndarray:
    """``a`` as float64 (ml_dtypes' bfloat16 and FP8 included)."""
    return np.asarray(a).astype(np.float64)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def padded(host: np.ndarray, tile, pad=None):
    """``host`` (as float64, or int64 for integers) grown to whole tiles; returns ``(values,
    valid)``: the elements past the array hold ``pad`` (0 when None) and ``valid`` is False
    there."""
    shape = host.shape
    big = tuple(max(1, cdiv(n, t)) * t for n, t in zip(shape, tile))
    integer = not is_float(host.dtype) and host.dtype.kind != "b"
    out = np.full(big, 0 if pad is None else pad, np.int64 if integer else np.float64)
    valid = np.zeros(big, bool)
    key = tuple(slice(0, n) for n in shape)
    out[key] = host.astype(out.dtype)
    valid[key] = True
    return out, valid


def tiled(a: np.ndarray, tile) -> np.ndarray:
    """``a`` (whole tiles) reshaped to ``(n0, t0, n1, t1, ...)``."""
    shape = []
    for n, t in zip(a.shape, tile):
        shape += [n // t, t]
    return a.reshape(shape)


def untiled(a: np.ndarray) -> np.ndarray:
    """The inverse of :func:`tiled`."""
    nd = a.ndim // 2
    return a.reshape([a.shape[2 * d] * a.shape[2 * d + 1] for d in range(nd)])


def wrap(v: np.ndarray, dtype: str) -> np.ndarray:
    """Integers reduced modulo the dtype's range (two's complement wraparound), as int64."""
    dt = np_dtype(dtype)
    bits = 8 * dt.itemsize
    v = np.asarray(v).astype(object) if bits == 64 else np.asarray(v, np.int64)
    m = 1 << bits
    r = np.mod(v, m)
    if dt.kind == "i":
        r = np.where(r >= m // 2, r - m, r)
    return np.asarray(r, np.int64) if dt.kind == "i" or bits < 64 else np.asarray(r, np.uint64)


def rel(dtype: str) -> float:
    """Half an ulp of ``dtype`` (relative); 0 for integers."""
    return EPS.get(dtype, 0.0)


def tiny(dtype: str) -> float:
    return TINY.get(dtype, 0.0)


def compute_dtype(dtype: str) -> str:
    """The dtype a tile op computes in: float32 for 16-bit floats and FP8."""
    return "float32" if dtype in ("float16", "bfloat16") + FP8 else dtype


def is_int(dtype: str) -> bool:
    return not is_float(np_dtype(dtype)) and np_dtype(dtype).kind != "b"
