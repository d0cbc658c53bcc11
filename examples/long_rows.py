"""Row-wise softmax, layer norm and RMS norm for long rows, as loops over column tiles.

The kernels of ``softmax.py``, ``layernorm.py`` and ``rmsnorm.py`` hold whole rows in
registers (one read of ``x``). For long rows these loop over ``(1, BC)`` column tiles
instead, each pass a ``for k in range(num_tiles(x, 1, BC))`` loop whose loads numba_tile
software-pipelines (``num_stages``: ``cp.async`` copies into shared memory, ``S - 2`` tiles
ahead), and write the output through a partition mapped onto one block per row
(``blocks=M``, ``order=nt.grouped(M)``: block ``r`` gets the tiles ``(r, 0), (r, 1), ...``
of row ``r``, in order). The statistics pass reads ``x`` from DRAM and the output pass
reads it again, from the L2 (as Triton's layer-norm tutorial does):

* softmax: one online pass (running maximum and rescaled running sum, ``-inf`` padding),
  then ``exp(x - max) / sum`` per tile;
* layer norm: a pass for the mean, one for the variance (two passes, as Triton's tutorial,
  rather than ``E[x^2] - mean^2``), then the output;
* RMS norm: one pass for the mean of squares, then the output.

``variant="looped"`` of the host functions in the three examples selects these; ``"auto"``
takes them where :data:`LOOPED_AT` says they are faster (measured, ``docs/performance.md``).
"""

from __future__ import annotations

import numba_tile as nt

#: log2(e), for exp(x) = exp2(x * log2(e))
LOG2E = 1.4426950408889634

#: (columns per tile, num_warps, num_stages) of the loops
CONFIG = {4: (4096, 8, 3), 2: (4096, 8, 3)}


def softmax_looped(x, y: nt.Partition[("BM", "BC")], BM: nt.Constant, BC: nt.Constant,
                   DT: nt.Constant):
    """y = softmax(x) along axis 1 for the row(s) of this block, BC columns at a time."""
    r = nt.bid(0)
    m = nt.full((BM, 1), -float("inf"), nt.float32)
    s = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (r, k), (BM, BC), padding=-float("inf")), nt.float32)
        m_new = nt.maximum(m, nt.max(t, 1, keepdims=True))
        s = s * nt.exp2((m - m_new) * LOG2E) + nt.sum(nt.exp2((t - m_new) * LOG2E), 1,
                                                      keepdims=True)
        m = m_new
    inv = 1.0 / s
    for idx in nt.tiles(y):
        t = nt.astype(nt.load(x, (idx[0], idx[1]), (BM, BC), padding=-float("inf")),
                      nt.float32)
        nt.store(y, nt.astype(nt.exp2((t - m) * LOG2E) * inv, DT), idx)


def layer_norm_looped(x, weight, bias, y: nt.Partition[("BM", "BC")], n_cols, eps,
                      BM: nt.Constant, BC: nt.Constant, DT: nt.Constant):
    """y = layer_norm(x) * weight + bias for the row(s) of this block, BC columns at a time."""
    r = nt.bid(0)
    acc = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        acc = acc + nt.sum(nt.astype(nt.load(x, (r, k), (BM, BC), padding=0), nt.float32), 1,
                           keepdims=True)
    mean = acc / n_cols
    acc2 = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (r, k), (BM, BC), padding=0), nt.float32)
        d = nt.where(nt.arange(BC) + k * BC < n_cols, t - mean, 0.0)
        acc2 = acc2 + nt.sum(d * d, 1, keepdims=True)
    inv = nt.rsqrt(acc2 / n_cols + eps)
    for idx in nt.tiles(y):
        t = nt.astype(nt.load(x, (idx[0], idx[1]), (BM, BC), padding=0), nt.float32)
        w = nt.astype(nt.load(weight, (idx[1],), (BC,), padding=0), nt.float32)
        b = nt.astype(nt.load(bias, (idx[1],), (BC,), padding=0), nt.float32)
        nt.store(y, nt.astype((t - mean) * inv * w + b, DT), idx)


def rms_norm_looped(x, weight, y: nt.Partition[("BM", "BC")], n_cols, eps,
                    BM: nt.Constant, BC: nt.Constant, DT: nt.Constant):
    """y = rms_norm(x) * weight for the row(s) of this block, BC columns at a time."""
    r = nt.bid(0)
    acc = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BC)):
        t = nt.astype(nt.load(x, (r, k), (BM, BC), padding=0), nt.float32)
        acc = acc + nt.sum(t * t, 1, keepdims=True)
    inv = nt.rsqrt(acc / n_cols + eps)
    for idx in nt.tiles(y):
        t = nt.astype(nt.load(x, (idx[0], idx[1]), (BM, BC), padding=0), nt.float32)
        w = nt.astype(nt.load(weight, (idx[1],), (BC,), padding=0), nt.float32)
        nt.store(y, nt.astype(t * inv * w, DT), idx)


_KERNELS: dict = {}


def kernel(fn, itemsize: int):
    """The ``nt.jit`` kernel of ``fn`` for ``itemsize``-byte inputs (kept for the process)."""
    bc, warps, stages = CONFIG[4 if itemsize >= 4 else 2]
    key = (fn, warps, stages)
    if key not in _KERNELS:
        _KERNELS[key] = nt.jit(num_warps=warps, num_stages=stages)(fn)
    return _KERNELS[key]


def row_partition(y, n_cols: int, itemsize: int):
    """``y`` partitioned into (1, BC) tiles, one block per row walking its own row."""
    bc = min(CONFIG[4 if itemsize >= 4 else 2][0], 1 << max(0, (n_cols - 1).bit_length()))
    rows = y.shape[0]
    return nt.partition(y, (1, bc), blocks=max(rows, 1), order=nt.grouped(max(rows, 1))), bc


#: padded row lengths at which ``variant="auto"`` loops, by op and input itemsize: the cells
#: where the looped kernel beat the one holding rows in registers on the H200
#: (benchmarks/norms.py --variant registers / looped, 4096 rows, 2026-12-01; e.g. RMS norm
#: bfloat16 at 32768 columns: 2478 against 1532 GB/s, layer norm float32 at 32768: 2303
#: against 1970). Rows longer than 32768 columns always loop (not measured: there the
#: in-register kernels need 64 or more elements per thread at 32 warps).
LOOPED_AT = {("softmax", 4): {16384}, ("softmax", 2): set(),
             ("layernorm", 4): {32768}, ("layernorm", 2): set(),
             ("rmsnorm", 4): {32768}, ("rmsnorm", 2): {16384, 32768}}


def use_looped(op: str, n_cols: int, itemsize: int, variant: str) -> bool:
    """Whether a host function with ``variant`` runs the looped kernel."""
    if variant not in ("auto", "registers", "looped"):
        raise ValueError(f"variant: expected 'auto', 'registers' or 'looped', got {variant!r}")
    if variant != "auto":
        return variant == "looped"
    bn = 1 << max(0, (n_cols - 1).bit_length())
    return bn > 32768 or bn in LOOPED_AT[(op, 4 if itemsize >= 4 else 2)]
