"""Cross entropy over a large vocabulary, loss and gradient in one kernel, the gradient written
in place of the logits (Liger-Kernel's and TileGym's fused cross entropy), with
``ignore_index``.

For each row ``r`` of the logits ``X`` (``(tokens, vocabulary)``) with target ``t = target[r]``:
``loss[r] = (logsumexp(X[r]) - X[r, t]) / n_valid`` and
``X[r] := (softmax(X[r]) - onehot(t)) / n_valid`` (the gradient of the mean loss), where
``n_valid`` counts the rows whose target is not ``ignore_index``; a row whose target is
``ignore_index`` gets loss 0 and gradient 0. The vocabulary does not fit a tile: each block owns
whole rows (``nt.strips``), makes one online pass over the row's ``(1, BC)`` tiles (a running
maximum and rescaled sum per column of the tile's ``(FOLD, BC // FOLD)`` view, which each
thread folds in its own registers, combined across the block once at the row's end, and, in
the one tile that holds it, the target's logit picked out by its column), then a second pass,
from the row's last tile back (``nt.tiles(X, row, reverse=True)``: those tiles are still in
L2), that overwrites each tile with its gradient. The target is a scalar read from a read-only
tensor (``target[r]``), and ``if t == ignore_index`` is a branch the whole block takes
together. ``loss`` is an ``(M, 1)`` array reached by the same row (``nt.tiles(loss, row)``). A
safe kernel: a block reads and writes only its own rows of ``X`` and ``loss``.

Runs on the GPU when there is one, otherwise in the interpreter (and says so), and checks the
loss and the gradient against NumPy in float64 on ragged shapes.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, pick_backend
except ImportError:
    from examples._common import check_result, dtype_name, pick_backend

#: log2(e), for exp(x) = exp2(x * log2(e))
LOG2E = 1.4426950408889634
#: the running max's start: finite, below every float32 logit that matters
FLOOR = -3.0e38


def config(n_cols: int, itemsize: int) -> tuple:
    """``(columns per tile, num_warps, num_stages, min_blocks_per_sm, fold)``, the fastest of
    a sweep on the H200 (2026-12-02, ``docs/performance.md``: tiles of
    2048-16384 columns over 2-16 warps at 1-10 blocks a multiprocessor, at 4096 x 32000 and
    1024 x 128256; ``.visit``-style probe, then ``benchmarks/sweeps.py cross_entropy``).

    * 16-bit, rows over 65,536 columns: 2048 columns over 2 warps at 8 blocks (0.97x Triton
      at 128,256); shorter rows: 4096 over 4 warps at 5 (1.18x at 32,000; 0.93x at 128,256).
    * float32, rows over 65,536 columns: 16384 over 16 warps at 1 (1.07x); shorter: 8192
      over 8 warps at 2 (1.00x at 32,000).

    ``fold``: the rows of the tile's ``(fold, columns / fold)`` view, one per chunk a thread
    holds (columns / (32 * warps) elements a thread, 16 bytes a chunk), so that the running
    state is reduced along the fold in each thread's own registers (any fold is correct:
    another one moves data through shared memory). The bound caps the registers so that the
    blocks fit."""
    long = n_cols > 65536
    if itemsize == 4:
        bc, warps, min_blocks = (16384, 16, 1) if long else (8192, 8, 2)
    else:
        bc, warps, min_blocks = (2048, 2, 8) if long else (4096, 4, 5)
    return bc, warps, 1, min_blocks, fold_of(bc, warps, itemsize)


def fold_of(bc: int, warps: int, itemsize: int) -> int:
    """Chunks a thread holds of a ``(1, bc)`` tile of a load of ``itemsize``-byte elements
    over ``warps`` warps (``layout.BlockedLayout``: 16-byte chunks, at least one)."""
    per_thread = max(1, bc // (32 * warps))
    return max(1, per_thread // max(1, 16 // itemsize))


def cross_entropy_rows(X: nt.Partition[(1, "BC")], target, loss: nt.Partition[(1, 1)],
                       n_valid, ignore_index, BC: nt.Constant, DT: nt.Constant,
                       FOLD: nt.Constant):
    """Loss and in-place gradient of every row of X this block owns."""
    for row in nt.strips(X):
        t = target[row[0]]
        if t == ignore_index:
            for idx in nt.tiles(X, row):
                nt.store(X, nt.astype(nt.zeros((1, BC), nt.float32), DT), idx)
            for idx in nt.tiles(loss, row):
                nt.store(loss, nt.zeros((1, 1), nt.float32), idx)
        else:
            # an online softmax over the row's tiles, its state (running max m and sum d of
            # exp(x - m)) one pair per column of the tile's (FOLD, BC // FOLD) view: each
            # tile is folded onto it along the view's rows, which a thread holds in its own
            # registers (FOLD = the chunks a thread holds), so the pass over the row needs
            # no exchange between threads; the state is combined across the block once,
            # after it. The max starts at FLOOR, not -inf: a column of masked (-inf) logits
            # then keeps d = 0 and never forms -inf - -inf (NaN; Liger-Kernel's kernel has
            # that NaN for a first tile of them).
            m = nt.full((1, BC // FOLD), FLOOR, nt.float32)
            d = nt.zeros((1, BC // FOLD), nt.float32)
            xt = nt.zeros((1, 1), nt.float32)
            t_tile = t // BC                   # the tile holding the target's logit
            for idx in nt.tiles(X, row):
                x = nt.astype(nt.load(X, idx, padding=-float("inf")), nt.float32)
                if idx[1] == t_tile:
                    # the target's column in the tile, an int32 arange against a scalar
                    # offset: no int64 tile of columns (72 registers, not 80, in bfloat16 at
                    # 2048 columns x 4 warps; ptxas 13.5)
                    col = nt.reshape(nt.arange(BC), (1, BC))
                    xt = nt.sum(nt.where(col == t - idx[1] * BC, x, 0.0), 1, keepdims=True)
                xf = nt.reshape(x, (FOLD, BC // FOLD))
                mn = nt.maximum(m, nt.max(xf, 0, keepdims=True))
                d = d * nt.exp2((m - mn) * LOG2E) + nt.sum(nt.exp2((xf - mn) * LOG2E), 0,
                                                            keepdims=True)
                m = mn
            mx = nt.max(m, 1, keepdims=True)
            d = nt.sum(d * nt.exp2((m - mx) * LOG2E), 1, keepdims=True)
            lse = mx + nt.log(d)
            scale = 1.0 / n_valid
            for idx in nt.tiles(loss, row):
                nt.store(loss, (lse - xt) * scale, idx)
            # the gradient pass walks the row from its last tile: those the first pass read
            # last are the likeliest still in L2 (nt.tiles' reverse; at 1024 x 128,256
            # bfloat16 the rows in flight outgrow L2: 0.85x Triton forward, 0.89x reversed, with
            # 8192 columns over 8 warps)
            for idx in nt.tiles(X, row, reverse=True):
                x = nt.astype(nt.load(X, idx, padding=-float("inf")), nt.float32)
                g = nt.exp2((x - lse) * LOG2E) * scale
                if idx[1] == t_tile:
                    col = nt.reshape(nt.arange(BC), (1, BC))
                    g = g - nt.where(col == t - idx[1] * BC, scale, 0.0)
                nt.store(X, nt.astype(g, DT), idx)


_KERNELS: dict = {}


def _kernel(warps: int, stages: int, min_blocks: int | None = None):
    key = (warps, stages, min_blocks)
    if key not in _KERNELS:
        _KERNELS[key] = nt.jit(num_warps=warps, num_stages=stages,
                               min_blocks_per_sm=min_blocks)(cross_entropy_rows)
    return _KERNELS[key]


def cross_entropy(logits, target, loss, n_valid: int, *, ignore_index: int = -100,
                  stream=None, interpret=False):
    """Launch the fused loss and gradient: ``loss`` (``(M, 1)`` float32) gets each row's
    share of the mean loss, ``logits`` (``(M, V)``, float32, float16 or bfloat16) is
    overwritten with the gradient.

    Args:
        logits: (M, V) device array (host NumPy array in interpreter mode), written.
        target: (M,) int64 (or int32) array of class indices or ``ignore_index``.
        loss: (M, 1) float32 array, written.
        n_valid: the number of rows whose target is not ``ignore_index`` (at least 1).
        ignore_index: the target value of rows left out of the loss.
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.

    Raises:
        ValueError: shapes or dtypes that do not match (before any GPU work).
    """
    dt = dtype_name(logits)
    if dt not in ("float16", "bfloat16", "float32") or len(logits.shape) != 2:
        raise ValueError(f"cross_entropy: logits: expected a 2-D float16, bfloat16 or float32 "
                         f"array, got {len(logits.shape)}-D {dt}")
    m, v = logits.shape
    if tuple(target.shape) != (m,) or dtype_name(target) not in ("int64", "int32"):
        raise ValueError(f"cross_entropy: target: expected ({m},) int64 or int32, got "
                         f"{tuple(target.shape)} {dtype_name(target)}")
    if tuple(loss.shape) != (m, 1) or dtype_name(loss) != "float32":
        raise ValueError(f"cross_entropy: loss: expected ({m}, 1) float32, got "
                         f"{tuple(loss.shape)} {dtype_name(loss)}")
    if n_valid < 1:
        raise ValueError(f"cross_entropy: n_valid: expected at least 1, got {n_valid}")
    itemsize = 4 if dt == "float32" else 2
    bc, warps, stages, min_blocks, _fold = config(v, itemsize)
    bc = min(bc, 1 << max(0, (v - 1).bit_length()))
    blocks = max(1, m)
    return _kernel(warps, stages, min_blocks)(
        nt.partition(logits, (1, bc), blocks=blocks), target,
        nt.partition(loss, (1, 1), blocks=blocks), float(n_valid), int(ignore_index), bc, dt,
        fold_of(bc, warps, itemsize), stream=stream, interpret=interpret)


def reference(logits, target, ignore_index=-100):
    """(loss per row, gradient) in float64."""
    x = logits.astype(np.float64)
    valid = target != ignore_index
    n_valid = max(1, int(valid.sum()))
    mx = x.max(1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(x - mx).sum(1))
    rows = np.arange(x.shape[0])
    safe_t = np.where(valid, target, 0)
    loss = np.where(valid, lse - x[rows, safe_t], 0.0) / n_valid
    grad = np.exp(x - lse[:, None])
    grad[rows[valid], target[valid]] -= 1.0
    grad = np.where(valid[:, None], grad / n_valid, 0.0)
    return loss, grad


def main(shape=(45, 20_000), ignore_index=-100) -> None:
    interpret, to_device, to_host = pick_backend()
    rng = np.random.default_rng()
    m, v = shape
    x_h = (3 * rng.standard_normal(shape)).astype(np.float32)
    t_h = rng.integers(0, v, m).astype(np.int64)
    t_h[rng.random(m) < 0.2] = ignore_index              # some rows ignored
    t_h[0], t_h[1] = v - 1, ignore_index                 # the last column; an ignored row
    n_valid = int((t_h != ignore_index).sum())
    x, loss = to_device(x_h.copy()), to_device(np.full((m, 1), np.nan, np.float32))
    cross_entropy(x, to_device(t_h), loss, n_valid, ignore_index=ignore_index,
                  interpret=interpret).sync()
    ref_loss, ref_grad = reference(x_h, t_h, ignore_index)
    check_result("cross_entropy", to_host(loss)[:, 0], ref_loss, rtol=1e-5, atol=1e-7,
                 detail=f"loss, shape={shape}, {m - n_valid} rows ignored, ")
    check_result("cross_entropy", to_host(x), ref_grad, rtol=1e-5, atol=1e-9,
                 detail="gradient, ")


if __name__ == "__main__":
    main()
