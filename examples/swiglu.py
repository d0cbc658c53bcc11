"""SwiGLU, the gated activation of LLaMA-style MLPs: ``c = silu(a) * b`` with
``silu(a) = a * sigmoid(a)``, forward and backward, as Liger-Kernel's and TileGym's SwiGLU
kernels compute them.

``a`` and ``b`` are the two halves of the up projection, ``(tokens, hidden)`` each; one
``(BM, BN)`` tile of the output per block. 16-bit inputs are computed in float32 and rounded
once, at the store. The backward pass writes both gradients from one read of ``a``, ``b`` and
``dc``: ``db = dc * silu(a)``, ``da = dc * b * sigmoid(a) * (1 + a * (1 - sigmoid(a)))``;
two partitions stored by each block, each at its own tile.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks the
results against NumPy in float64 on ragged shapes.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, pick_backend
except ImportError:
    from examples._common import check_result, dtype_name, pick_backend

#: (rows, columns) of a tile
TILE = (4, 1024)


@nt.jit
def swiglu_forward(a, b, c: nt.Partition["BM", "BN"], BM: nt.Constant, BN: nt.Constant,
                   DT: nt.Constant):
    """c = silu(a) * b for the block's own tile of c."""
    x = nt.astype(nt.load_like(a, c), nt.float32)
    y = nt.astype(nt.load_like(b, c), nt.float32)
    nt.store(c, nt.astype(x * nt.sigmoid(x) * y, DT))


@nt.jit
def swiglu_backward(dc, a, b, da: nt.Partition["BM", "BN"], db: nt.Partition["BM", "BN"],
                    BM: nt.Constant, BN: nt.Constant, DT: nt.Constant):
    """The gradients of c = silu(a) * b for the block's own tiles of da and db."""
    g = nt.astype(nt.load_like(dc, da), nt.float32)
    x = nt.astype(nt.load_like(a, da), nt.float32)
    y = nt.astype(nt.load_like(b, da), nt.float32)
    s = nt.sigmoid(x)
    silu = x * s
    nt.store(db, nt.astype(g * silu, DT))
    nt.store(da, nt.astype(g * y * s * (1.0 + x * (1.0 - s)), DT))


def _check(name, *arrays):
    shapes = {tuple(v.shape) for v in arrays}
    dts = {dtype_name(v) for v in arrays}
    if len(shapes) != 1 or len(dts) != 1:
        raise ValueError(f"{name}: expected arrays of one shape and dtype, got shapes "
                         f"{sorted(shapes)} and dtypes {sorted(dts)}")
    shape, dt = shapes.pop(), dts.pop()
    if len(shape) != 2 or dt not in ("float16", "bfloat16", "float32"):
        raise ValueError(f"{name}: expected 2-D float16, bfloat16 or float32 arrays, got "
                         f"{len(shape)}-D {dt}")
    return dt


def swiglu(a, b, c, *, stream=None, interpret=False):
    """Launch ``c = silu(a) * b`` (2-D arrays of one shape and dtype: float16, bfloat16 or
    float32).

    Raises:
        ValueError: shapes or dtypes that differ, or another dtype (before any GPU work).
    """
    dt = _check("swiglu", a, b, c)
    return swiglu_forward(a, b, nt.partition(c, TILE), *TILE, dt, stream=stream,
                          interpret=interpret)


def swiglu_grad(dc, a, b, da, db, *, stream=None, interpret=False):
    """Launch the backward pass: ``da``, ``db`` from ``dc``, ``a``, ``b``."""
    dt = _check("swiglu_grad", dc, a, b, da, db)
    return swiglu_backward(dc, a, b, nt.partition(da, TILE), nt.partition(db, TILE), *TILE, dt,
                           stream=stream, interpret=interpret)


def main(shape=(37, 3000)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    a_h, b_h, g_h = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    a, b, dc = to_device(a_h), to_device(b_h), to_device(g_h)
    c = to_device(np.full(shape, np.nan, np.float32))
    swiglu(a, b, c, interpret=interpret).sync()
    x, y, g = a_h.astype(np.float64), b_h.astype(np.float64), g_h.astype(np.float64)
    s = 1 / (1 + np.exp(-x))
    check_result("swiglu", to_host(c), x * s * y, rtol=1e-5, atol=1e-6,
                 detail=f"forward, shape={shape}, ")
    da = to_device(np.full(shape, np.nan, np.float32))
    db = to_device(np.full(shape, np.nan, np.float32))
    swiglu_grad(dc, a, b, da, db, interpret=interpret).sync()
    check_result("swiglu", to_host(db), g * x * s, rtol=1e-5, atol=1e-6,
                 detail="backward db, ")
    check_result("swiglu", to_host(da), g * y * s * (1 + x * (1 - s)), rtol=1e-5, atol=1e-6,
                 detail="backward da, ")


if __name__ == "__main__":
    main()
