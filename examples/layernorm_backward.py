"""Layer norm backward, two phases as in Triton's layer-norm tutorial: ``dx`` per row, and the
weight and bias gradients ``dw``, ``db`` as sums over all rows, without atomics or locks.

Phase 1 runs ``B`` blocks; block ``b`` owns the rows ``b, b + B, ...`` of ``dx``
(``nt.strips(dx)``, one ``(1, BN)`` tile per row: the row fits a tile). For each row it loads
``x``, ``dy`` and the row's ``mean`` and ``rstd`` (scalars read from read-only tensors) and
stores ``dx = (w * dy - (xhat * c1 + c2)) * rstd`` with ``xhat = (x - mean) * rstd``,
``c1 = sum(xhat * w * dy) / N``, ``c2 = sum(w * dy) / N``, while it accumulates its rows'
``dy * xhat`` and ``dy`` in registers. At the end it stores those partial sums as row ``b`` of
two ``(B, N)`` float32 arrays: their only strip this block owns (``nt.strips(dw_part)``), the
bias row reached by the same strip. Triton's tutorial instead accumulates into
``GROUP_SIZE_M`` buffers under spin locks; here each block's partial row is its own, so the
kernel is safe and needs no lock. Phase 2 sums the ``B`` partial rows per column tile.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks
``dx``, ``dw`` and ``db`` against NumPy in float64 on ragged shapes.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, pick_backend
except ImportError:
    from examples._common import check_result, dtype_name, pick_backend


@nt.jit(num_warps=8)
def ln_backward_dx(x, dy, w, mean, rstd, dx: nt.Partition[(1, "BN")],
                   dw_part: nt.Partition[(1, "BN")], db_part: nt.Partition[(1, "BN")],
                   n_cols, BN: nt.Constant, DT: nt.Constant):
    """dx for this block's rows; the block's partial dw and db as its row of the partials."""
    wt = nt.reshape(nt.astype(nt.load(w, (0,), (BN,), padding=0.0), nt.float32), (1, BN))
    acc_dw = nt.zeros((1, BN), nt.float32)
    acc_db = nt.zeros((1, BN), nt.float32)
    for row in nt.strips(dx):
        r = row[0]
        xt = nt.astype(nt.load(x, (r, 0), (1, BN), padding=0.0), nt.float32)
        g = nt.astype(nt.load(dy, (r, 0), (1, BN), padding=0.0), nt.float32)
        rs = rstd[r]
        xhat = (xt - mean[r]) * rs
        wdy = wt * g                  # 0 past the row's end (dy padded with 0)
        c1 = nt.sum(xhat * wdy, 1, keepdims=True) / n_cols
        c2 = nt.sum(wdy, 1, keepdims=True) / n_cols
        for idx in nt.tiles(dx, row):
            nt.store(dx, nt.astype((wdy - (xhat * c1 + c2)) * rs, DT), idx)
        acc_dw = acc_dw + g * xhat
        acc_db = acc_db + g
    for prow in nt.strips(dw_part):
        for idx in nt.tiles(dw_part, prow):
            nt.store(dw_part, acc_dw, idx)
        for idx in nt.tiles(db_part, prow):
            nt.store(db_part, acc_db, idx)


@nt.jit
def ln_backward_dwdb(dw_part, db_part, dw: nt.Partition["BC"], db: nt.Partition["BC"],
                     BM: nt.Constant, BC: nt.Constant, DT: nt.Constant):
    """dw, db for this block's columns: the sums of the partial rows."""
    c = nt.bid(0)
    sw = nt.zeros((BC,), nt.float32)
    sb = nt.zeros((BC,), nt.float32)
    for k in range(nt.num_tiles(dw_part, 0, BM)):
        sw = sw + nt.sum(nt.load(dw_part, (k, c), (BM, BC), padding=0.0), 0)
        sb = sb + nt.sum(nt.load(db_part, (k, c), (BM, BC), padding=0.0), 0)
    nt.store(dw, nt.astype(sw, DT))
    nt.store(db, nt.astype(sb, DT))


#: phase-1 blocks for rows of up to 4096 columns: at most this many partial rows (Triton's
#: tutorial uses 32 to 256 groups)
MAX_BLOCKS = 256


def _multiprocessors() -> int:
    """The current GPU's multiprocessor count (132 on an H200; 132 without a GPU)."""
    try:
        from numba import cuda
        if cuda.is_available():
            return cuda.get_current_device().MULTIPROCESSOR_COUNT
    except Exception:  # noqa: BLE001 - no CUDA target: the interpreter's count
        pass
    return 132


def config(n_cols: int, itemsize: int) -> tuple:
    """``(phase-1 blocks at most, num_warps)`` for rows of ``n_cols`` columns: the fastest of a
    sweep on the H200 (``docs/performance.md``, 2026-12-02: 132-1056 blocks x 4, 8, 16 warps at
    1024, 4096 and 8192 columns, float32 and bfloat16). Up to 4096 columns 256 blocks (4 warps;
    8 for 16-bit rows of at most 1024 columns); wider rows hold more registers per thread, and
    one block per multiprocessor (8 warps) avoids a second, partial wave."""
    bn = 1 << max(0, (n_cols - 1).bit_length())
    if bn <= 1024:
        return MAX_BLOCKS, (8 if itemsize == 2 else 4)
    if bn <= 4096:
        return MAX_BLOCKS, 4
    return _multiprocessors(), (8 if bn <= 8192 else 16)


def partial_rows(n_rows: int, n_cols: int = 1024, itemsize: int = 4) -> int:
    """The number of phase-1 blocks, and of partial rows, for ``n_rows`` rows of ``n_cols``
    columns of ``itemsize``-byte elements."""
    return max(1, min(n_rows, config(n_cols, itemsize)[0]))


_DX_KERNELS: dict = {}


def _dx_kernel(warps: int):
    """``ln_backward_dx`` with ``warps`` warps per block (one variant per count, made once)."""
    if warps not in _DX_KERNELS:
        _DX_KERNELS[warps] = ln_backward_dx.with_options(num_warps=warps)
    return _DX_KERNELS[warps]


def layer_norm_backward(x, dy, w, mean, rstd, dx, dw, db, dw_part, db_part, *, stream=None,
                        interpret=False):
    """Launch both phases.

    Args:
        x, dy: (M, N) arrays of float32, float16 or bfloat16 (N up to 16384).
        w: (N,) weight, of x's dtype.
        mean, rstd: (M,) float32, the forward pass's row statistics.
        dx: (M, N) of x's dtype, written; dw, db: (N,) of x's dtype, written.
        dw_part, db_part: (partial_rows(M, N, itemsize), N) float32 scratch arrays,
            written.

    Raises:
        ValueError: shapes or dtypes that do not match (before any GPU work).
    """
    dt = dtype_name(x)
    m, n = x.shape
    itemsize = 4 if dt == "float32" else 2
    rows = partial_rows(m, n, itemsize)
    expect = {"dy": ((m, n), dt), "w": ((n,), dt), "mean": ((m,), "float32"),
              "rstd": ((m,), "float32"), "dx": ((m, n), dt), "dw": ((n,), dt),
              "db": ((n,), dt), "dw_part": ((rows, n), "float32"),
              "db_part": ((rows, n), "float32")}
    given = {"dy": dy, "w": w, "mean": mean, "rstd": rstd, "dx": dx, "dw": dw, "db": db,
             "dw_part": dw_part, "db_part": db_part}
    if dt not in ("float32", "float16", "bfloat16"):
        raise ValueError(f"layer_norm_backward: x: expected float32, float16 or bfloat16, "
                         f"got {dt}")
    for name, (shape, want) in expect.items():
        v = given[name]
        if tuple(v.shape) != shape or dtype_name(v) != want:
            raise ValueError(f"layer_norm_backward: {name}: expected {shape} {want}, got "
                             f"{tuple(v.shape)} {dtype_name(v)}")
    bn = 1 << max(0, (n - 1).bit_length())
    if bn > 16384:
        raise ValueError(f"layer_norm_backward: x: rows of at most 16384 columns, got {n}")
    b = rows
    _dx_kernel(config(n, itemsize)[1])(x, dy, w, mean, rstd, nt.partition(dx, (1, bn), blocks=b),
                   nt.partition(dw_part, (1, bn), blocks=b),
                   nt.partition(db_part, (1, bn), blocks=b), float(n), bn, dt,
                   stream=stream, interpret=interpret)
    bc = min(bn, 256)
    return ln_backward_dwdb(dw_part, db_part, nt.partition(dw, (bc,)), nt.partition(db, (bc,)),
                            32, bc, dt, stream=stream, interpret=interpret)


def reference(x, dy, w, eps=1e-5):
    """(dx, dw, db, mean, rstd) in float64."""
    x, dy, w = (a.astype(np.float64) for a in (x, dy, w))
    mean = x.mean(1)
    rstd = 1 / np.sqrt(((x - mean[:, None]) ** 2).mean(1) + eps)
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).mean(1, keepdims=True)
    c2 = wdy.mean(1, keepdims=True)
    dx = (wdy - (xhat * c1 + c2)) * rstd[:, None]
    return dx, (dy * xhat).sum(0), dy.sum(0), mean, rstd


def main(shape=(300, 1000)) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    m, n = shape
    x_h = rng.standard_normal(shape).astype(np.float32)
    dy_h = rng.standard_normal(shape).astype(np.float32)
    w_h = rng.standard_normal(n).astype(np.float32)
    ref_dx, ref_dw, ref_db, mean_h, rstd_h = reference(x_h, dy_h, w_h)
    dx = to_device(np.full(shape, np.nan, np.float32))
    dw, db = to_device(np.full(n, np.nan, np.float32)), to_device(np.full(n, np.nan, np.float32))
    parts = [to_device(np.full((partial_rows(m, n, 4), n), np.nan, np.float32)) for _ in range(2)]
    layer_norm_backward(to_device(x_h), to_device(dy_h), to_device(w_h),
                        to_device(mean_h.astype(np.float32)), to_device(rstd_h.astype(np.float32)),
                        dx, dw, db, *parts, interpret=interpret).sync()
    check_result("layernorm_backward", to_host(dx), ref_dx, rtol=1e-4, atol=1e-5,
                 detail=f"dx, shape={shape}, ")
    check_result("layernorm_backward", to_host(dw), ref_dw, rtol=1e-4, atol=1e-3,
                 detail="dw, ")
    check_result("layernorm_backward", to_host(db), ref_db, rtol=1e-4, atol=1e-3,
                 detail="db, ")


if __name__ == "__main__":
    main()
