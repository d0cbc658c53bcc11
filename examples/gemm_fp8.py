"""Scaled FP8 matrix product, as ``torch._scaled_mm``: ``C = (A @ B) * scale_a * scale_b``
for ``float8_e4m3fn`` or ``float8_e5m2`` ``A`` (M, K) and ``B`` (K, N), products accumulated
in float32, the scales applied to the accumulator, rounded once into bfloat16 ``C`` (M, N).

``B`` comes as ``bt``, the (N, K) row-major array whose transpose it is (``B = bt.T``: a
column-major B, the layout ``torch._scaled_mm`` asks for, and an ``nn.Linear`` weight's): the
kernel loads (BN, BK) tiles of ``bt`` and multiplies by their ``nt.transpose``. FP8 tensor
cores read both operands K-major, and a pipelined load that reaches ``mma``'s ``b`` through
``transpose`` is staged that way (``numba_tile/typing/pipeline.py``): on the H200, TMA boxes
of 128 bytes of K into swizzled shared memory, ``wgmma.mma_async.m64nNk32.f32.e4m3.e4m3``.

Scales (float32): ``scale_a`` of shape (M, 1) (one per row of A) or (1, 1) (one for the
tensor), ``scale_b`` of shape (1, N) or (1, 1); the kernel multiplies the (BM, BN) float32
accumulator by its (BM, 1) and (1, BN) tiles of them, broadcast, before the one rounding.

One block per (BM, BN) tile of C in the grouped order (``examples/gemm.py``). The tensor
cores sum FP8 products in their own accumulator (no periodic promotion to a separate float32
sum, as ``torch._scaled_mm(use_fast_accum=True)``); the interpreter sums in float32.

Runs on the GPU when there is one (compute capability 8.9 or later: FP8 ``mma`` needs it),
otherwise in the interpreter (and says so): a ragged product of small integer-valued
operands (every product and partial sum exact in float32) with powers-of-two scales, checked
against NumPy's float64 product rounded once to bfloat16.
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, pick_backend
    from gemm import GROUP_M, GemmConfig, device_cc
    from gemm import kernel_for as gemm_kernel_for
except ImportError:
    from examples._common import check_result, dtype_name, pick_backend
    from examples.gemm import GROUP_M, GemmConfig, device_cc
    from examples.gemm import kernel_for as gemm_kernel_for

#: input dtypes (the accumulator is float32; C is bfloat16)
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")


def gemm_fp8_tiles(a, bt, scale_a, scale_b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                   BN: nt.Constant, BK: nt.Constant, ROW_A: nt.Constant, COL_B: nt.Constant):
    """C's (BM, BN) tile: ``sum over k of A[i, k] @ bt[j, k].T``, scaled, in bfloat16.
    ``ROW_A``/``COL_B``: the scale of A is per row (else one value), of B per column."""
    i = nt.bid(0)
    j = nt.bid(1)
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (i, k), (BM, BK), padding=0)
        y = nt.load(bt, (j, k), (BN, BK), padding=0)
        acc = nt.mma(x, nt.transpose(y), acc)
    if ROW_A:
        sa = nt.load(scale_a, (i, 0), (BM, 1), padding=0)
    else:
        sa = nt.load(scale_a, (0, 0), (1, 1))
    if COL_B:
        sb = nt.load(scale_b, (0, j), (1, BN), padding=0)
    else:
        sb = nt.load(scale_b, (0, 0), (1, 1))
    nt.store(c, nt.astype(acc * sa * sb, nt.bfloat16))


def gemm_fp8_persistent_tiles(a, bt, scale_a, scale_b, c: nt.Partition[("BM", "BN")],
                              BM: nt.Constant, BN: nt.Constant, BK: nt.Constant,
                              ROW_A: nt.Constant, COL_B: nt.Constant):
    """:func:`gemm_fp8_tiles` on a fixed number of blocks: each walks the tiles ``tiles(c)``
    hands it (``examples/gemm_persistent.py``)."""
    for idx in nt.tiles(c):
        i = idx[0]
        j = idx[1]
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            x = nt.load(a, (i, k), (BM, BK), padding=0)
            y = nt.load(bt, (j, k), (BN, BK), padding=0)
            acc = nt.mma(x, nt.transpose(y), acc)
        if ROW_A:
            sa = nt.load(scale_a, (i, 0), (BM, 1), padding=0)
        else:
            sa = nt.load(scale_a, (0, 0), (1, 1))
        if COL_B:
            sb = nt.load(scale_b, (0, j), (1, BN), padding=0)
        else:
            sb = nt.load(scale_b, (0, 0), (1, 1))
        nt.store(c, nt.astype(acc * sa * sb, nt.bfloat16), idx)


def default_config(m: int, n: int, k: int, cc: tuple | None = None) -> GemmConfig:
    """Hopper (9.0): 128 x 256 x 128 over 8 warps with 4 stages (48 KB per stage) from 256
    rows of C, 64 x 128 x 128 over 4 warps below; elsewhere (``mma.sync``, sm_89): 128 x 128
    x 64 over 4 warps, 3 stages. BK = 128: one 128-byte swizzle atom of FP8."""
    hopper = cc is not None and tuple(cc[:2]) == (9, 0)
    if hopper:
        return GemmConfig(128, 256, 128, 8, 4) if m >= 256 else GemmConfig(64, 128, 128, 4, 4)
    return GemmConfig(128, 128, 64, 4, 3) if m >= 256 else GemmConfig(64, 64, 64, 4, 3)


def kernel_for(config: GemmConfig, fn=gemm_fp8_tiles):
    """``examples/gemm.kernel_for`` (one kernel per function and options), FP8's kernel by
    default."""
    return gemm_kernel_for(config, fn)


def check_operands(op: str, a, bt, scale_a, scale_b, c) -> tuple:
    """Check ``c = (a @ bt.T) * scale_a * scale_b`` before launching; returns whether the
    scales are per row (A) and per column (B).

    Raises:
        ValueError: naming the argument, what was expected and what was given.
    """
    dt = dtype_name(a)
    if dt not in FP8_DTYPES:
        raise ValueError(f"{op}: a: expected float8_e4m3fn or float8_e5m2, got {dt}")
    for name, x in (("a", a), ("bt", bt), ("scale_a", scale_a), ("scale_b", scale_b), ("c", c)):
        if len(x.shape) != 2:
            raise ValueError(f"{op}: {name}: expected a 2-D array, got shape {tuple(x.shape)}")
    (m, k), (n, kb) = a.shape, bt.shape
    if kb != k or dtype_name(bt) != dt:
        raise ValueError(f"{op}: bt: expected (N, {k}) {dt} (B transposed: a's columns and "
                         f"dtype), got {tuple(bt.shape)} {dtype_name(bt)}")
    if tuple(c.shape) != (m, n) or dtype_name(c) != "bfloat16":
        raise ValueError(f"{op}: c: expected ({m}, {n}) bfloat16, got {tuple(c.shape)} "
                         f"{dtype_name(c)}")
    for name, x, per in (("scale_a", scale_a, (m, 1)), ("scale_b", scale_b, (1, n))):
        if tuple(x.shape) not in (per, (1, 1)) or dtype_name(x) != "float32":
            raise ValueError(f"{op}: {name}: expected float32 of shape {per} or (1, 1), got "
                             f"{tuple(x.shape)} {dtype_name(x)}")
    return tuple(scale_a.shape) == (m, 1) and m > 1, tuple(scale_b.shape) == (1, n) and n > 1


def scaled_mm(a, bt, scale_a, scale_b, c, *, config=None, blocks=None, stream=None,
              interpret=False):
    """Launch ``c = (a @ bt.T) * scale_a * scale_b`` (float32 accumulation and scaling,
    rounded once into bfloat16 c).

    Args:
        a: (M, K) FP8 device array (host array in interpreter mode).
        bt: (N, K) array of a's dtype: B transposed.
        scale_a: float32, (M, 1) or (1, 1). scale_b: float32, (1, N) or (1, 1).
        c: (M, N) bfloat16 array, written.
        config: a :class:`~examples.gemm.GemmConfig`, a tuple ``(bm, bn, bk, num_warps[,
            num_stages])``, or None for :func:`default_config`.
        blocks: None (one block per tile of C), or the number of blocks of the persistent
            kernel (:func:`gemm_fp8_persistent_tiles`; e.g. the GPU's multiprocessors).
    """
    row_a, col_b = check_operands("scaled_mm", a, bt, scale_a, scale_b, c)
    m, k = a.shape
    n = bt.shape[0]
    if config is None:
        cfg = default_config(m, n, k, device_cc(interpret))
    else:
        cfg = config if isinstance(config, GemmConfig) else GemmConfig(*config)
    part = nt.partition(c, (cfg.bm, cfg.bn), blocks=blocks, order=nt.grouped(GROUP_M))
    fn = gemm_fp8_tiles if blocks is None else gemm_fp8_persistent_tiles
    return kernel_for(cfg, fn)(a, bt, scale_a, scale_b, part, cfg.bm, cfg.bn, cfg.bk, row_a,
                               col_b, stream=stream, interpret=interpret)


def reference(a, bt, scale_a, scale_b) -> np.ndarray:
    """float64 ``(a @ bt.T) * scale_a * scale_b``."""
    prod = a.astype(np.float64) @ bt.astype(np.float64).T
    return prod * scale_a.astype(np.float64) * scale_b.astype(np.float64)


def _backend():
    """(interpret, to_device, to_host): FP8 and bfloat16 device arrays travel as PyTorch
    tensors (CuPy has neither dtype); the interpreter where there is no GPU of compute
    capability 8.9 or later, or no PyTorch (saying so)."""
    interpret, _to_device, _to_host = pick_backend()
    if interpret:
        return True, np.array, np.array
    cc = device_cc(False)
    why = None
    if tuple(cc[:2]) < (8, 9):
        why = f"FP8 mma needs compute capability 8.9 or later (this GPU: {cc[0]}.{cc[1]})"
    else:
        try:
            import torch  # noqa: F401
        except ImportError:
            why = "FP8 device arrays need PyTorch (CuPy has no FP8)"
    if why:
        print(f"gemm_fp8: {why}: running in the numba_tile interpreter instead")
        return True, np.array, np.array
    from numba_tile.testing.backend import Backend
    gpu = Backend("gpu")
    print("gemm_fp8: FP8 and bfloat16 arrays as PyTorch tensors")
    return False, gpu.asarray, gpu.to_numpy


def main(shape=None, dtype: str = "float8_e4m3fn") -> None:
    import ml_dtypes
    interpret, to_device, to_host = _backend()
    m, n, k = shape or ((200, 136, 320) if interpret else (1000, 1000, 768))
    rng = np.random.default_rng()
    dt = getattr(ml_dtypes, dtype)
    a = rng.integers(-4, 5, (m, k)).astype(np.float32).astype(dt)
    bt = rng.integers(-4, 5, (n, k)).astype(np.float32).astype(dt)
    sa = (2.0 ** rng.integers(-3, 3, (m, 1))).astype(np.float32)
    sb = (2.0 ** rng.integers(-3, 3, (1, n))).astype(np.float32)
    c = to_device(np.full((m, n), np.nan, ml_dtypes.bfloat16))
    scaled_mm(to_device(a), to_device(bt), to_device(sa), to_device(sb), c,
              interpret=interpret).sync()
    want = reference(a, bt, sa, sb).astype(ml_dtypes.bfloat16).astype(np.float64)
    check_result("gemm_fp8", to_host(c).astype(np.float64), want, rtol=0, atol=0,
                 detail=f"M={m} N={n} K={k}, {dtype}, per-row and per-column power-of-two "
                 f"scales, against NumPy's float64 product rounded once to bfloat16: ")


if __name__ == "__main__":
    main()
