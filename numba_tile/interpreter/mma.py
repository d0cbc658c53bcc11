"""Interpreter rules of the matrix products, in the dtypes the GPU computes in.

16-bit float and FP8 inputs: their products are exact in float32 (11-bit significands at
most), summed in float32 (float16 accumulation: each group of 16 products summed in float32, then added to
the float16 accumulator and rounded, as one ``mma.m16n8k16`` step); int8: exact, int32
wrapping; TF32: inputs rounded to TF32 (nearest, ties away from zero) and summed in
float32; float32/float64: IEEE products and sums in the input dtype. Invalid elements of a
masked operand count as zero.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._registry import interp_rule
from ..typing.mma import default_acc_dtype, plan
from .values import InterpTile


def _operand(x: InterpTile, what: str, opname: str) -> np.ndarray:
    if not isinstance(x, InterpTile) or x.data.ndim != 2:
        raise TypeError(f"{opname}(): {what} must be a 2-D tile, got {x!r}")
    data = x.data
    if x.extents is not None:
        data = np.where(x.valid(), data, np.zeros((), data.dtype))
    return data


def tf32_round(x: np.ndarray) -> np.ndarray:
    """float32 -> the nearest TF32 value (10 significand bits; ties away from zero), as
    ``cvt.rna.tf32.f32``; inf and NaN unchanged."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), rounded, x).astype(np.float32)


def product(a: np.ndarray, b: np.ndarray, kind: str, k_step: int, acc: np.ndarray):
    """``acc + a @ b`` computed as ``kind`` (:class:`~numba_tile.typing.mma.MmaPlan`)."""
    with np.errstate(all="ignore"):
        if kind in ("f16", "bf16", "e4m3", "e5m2"):
            return acc.astype(np.float32) + a.astype(np.float32) @ b.astype(np.float32)
        if kind == "f16acc":
            out = acc.astype(np.float16)
            a32, b32 = a.astype(np.float32), b.astype(np.float32)
            for k0 in range(0, a.shape[1], k_step):
                part = a32[:, k0:k0 + k_step] @ b32[k0:k0 + k_step, :]
                out = (out.astype(np.float32) + part).astype(np.float16)
            return out
        if kind == "s8":
            wide = acc.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
            return wide.astype(np.uint64).astype(np.uint32).view(np.int32)
        if kind == "tf32":
            return acc.astype(np.float32) + tf32_round(a) @ tf32_round(b)
        return acc + a @ b


def _run(opname, a, b, acc_dt, precision, acc=None):
    pa, pb = _operand(a, "a", opname), _operand(b, "b", opname)
    p = plan(opname, a.dtype, acc_dt, precision or "ieee")
    np_acc = dtypes.to_numpy(acc_dt)
    if acc is None:
        base, extents = np.zeros((pa.shape[0], pb.shape[1]), np_acc), None
    else:
        base, extents = acc.data, acc.extents
    out = product(pa, pb, p.kind, p.k_step, base.astype(np_acc))
    return InterpTile(np.asarray(out).astype(np_acc), acc_dt, extents)


@interp_rule("mma")
def interp_mma(a, b, acc, precision=None):
    return _run("mma", a, b, acc.dtype, precision, acc)


@interp_rule("_wgmma_wait")
def interp_wgmma_wait(acc):
    return acc


@interp_rule("_ws_post")
def interp_ws_post(n, z=None):
    return None


@interp_rule("_wgmma_drain")
def interp_wgmma_drain(acc, k, n):
    return acc


@interp_rule("matmul")
def interp_matmul(a, b, out_dtype=None, precision=None):
    dt = default_acc_dtype(a.dtype) if out_dtype is None else dtypes.from_any(out_dtype)
    return _run("matmul", a, b, dt, precision)


@interp_rule("matmul_operator")
def interp_matmul_operator(a, b):
    return _run("@", a, b, default_acc_dtype(a.dtype), None)
