"""Matrix product on tensor cores: ``C = A @ B`` for float16 or bfloat16 ``A`` (M, K) and
``B`` (K, N), accumulated in float32 and rounded once into ``C`` (M, N).

One block per (BM, BN) tile of C. The block walks K in steps of BK: it loads the (BM, BK)
tile of A and the (BK, BN) tile of B at its tile coordinates and adds their product to a
float32 accumulator with ``nt.mma`` (tensor cores: ``wgmma`` on Hopper, ``mma.sync``
elsewhere). The loads carry ``padding=0``, so a ragged M, N or K needs no special case: past
an edge the operands hold zeros, which add nothing, and the store writes only the part of an
edge tile inside C.

Tile order: blocks take C's tiles in Triton's *grouped* order (``order=nt.grouped(8)``:
bands of 8 tile rows, walked down the band first, so blocks running at the same time share
rows of A and columns of B in L2); ``nt.bid(0)`` and ``nt.bid(1)`` give the block's tile in
that order. A configuration's ``num_stages`` goes to ``nt.jit``: above 1, the K loop's
loads are software-pipelined (``cp.async`` copies into a ring of shared-memory slots, that
many tiles in flight). The loads are written the way pipelining asks
(``numba_tile/typing/pipeline.py``): ``k`` on one axis, tile coordinates read before the
loop on the other, zero padding, each tile used once, by the ``mma``.

Runs on the GPU when there is one, otherwise in the interpreter (and says so): a ragged
float16 product (M=200, N=136, K=100 in the interpreter; 1000 x 1000 x 700 on the GPU) of
integer-valued inputs, so every product and partial sum is exact in float32 and the only
rounding is the store's; the result must equal NumPy's float64 product rounded once to
float16, element for element.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, dtype_name, pick_backend
except ImportError:
    from examples._common import check_result, dtype_name, pick_backend

#: tile rows per band of the grouped order (Triton's GROUP_SIZE_M in its matmul tutorial)
GROUP_M = 8
#: input dtypes (the accumulator is float32; C has the inputs' dtype)
GEMM_DTYPES = ("float16", "bfloat16")


def gemm_tiles(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant, DT: nt.Constant):
    """C's (BM, BN) tile of this block: ``sum over k of A[i, k] @ B[k, j]`` in float32."""
    i = nt.bid(0)
    j = nt.bid(1)
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        x = nt.load(a, (i, k), (BM, BK), padding=0)
        y = nt.load(b, (k, j), (BK, BN), padding=0)
        acc = nt.mma(x, y, acc)
    nt.store(c, nt.astype(acc, DT))


@dataclass(frozen=True)
class GemmConfig:
    """Tile shape and launch options of a GEMM kernel.

    Attributes:
        bm, bn, bk: the tile of C (bm, bn) and the step along K; powers of two, at least 16.
        num_warps: warps per block.
        num_stages: pipeline stages of the K loop's loads (``nt.jit(num_stages=...)``; 1: not
            pipelined).
    """

    bm: int
    bn: int
    bk: int
    num_warps: int
    num_stages: int = 1

    def __str__(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk} w{self.num_warps} s{self.num_stages}"

    def jit_options(self) -> dict:
        """The ``nt.jit`` keyword arguments of this configuration."""
        return {"num_warps": self.num_warps, "num_stages": self.num_stages}


def default_config(m: int, n: int, k: int, cc: tuple | None = None) -> GemmConfig:
    """A configuration for an (m, k) @ (k, n) product on a device of compute capability ``cc``
    (None: unknown). Hopper (9.0), where the products take wgmma with TMA loads: 128 x 256 x 64
    over 8 warps with 4 stages from 256 rows of C, 64 x 128 x 64 over 4 warps from 65 to 255
    rows (the benchmark's best on the H200). Elsewhere (mma.sync): 128 x 128 x 32 tiles from
    256 rows, 64 x 128 x 32 from 65 to 255. Up to 64 rows, everywhere: a tile as tall as the
    rows' next power of two (at least 16), so a few rows do not fill a block with zeros. (The
    sweep found nothing yet that depends on n and k; they are there for when it does.)"""
    hopper = cc is not None and tuple(cc[:2]) == (9, 0)
    if m >= 256:
        return GemmConfig(128, 256, 64, 8, 4) if hopper else GemmConfig(128, 128, 32, 4, 3)
    if m > 64:
        return GemmConfig(64, 128, 64, 4, 4) if hopper else GemmConfig(64, 128, 32, 4, 4)
    bm = max(16, 1 << max(0, (m - 1).bit_length()))
    return GemmConfig(bm, 64, 64, 4, 3)


_KERNELS: dict = {}


def kernel_for(config: GemmConfig, fn=gemm_tiles):
    """One ``nt.jit`` kernel of ``fn`` per set of options (kept for the process)."""
    options = config.jit_options()
    key = (fn, tuple(sorted(options.items())))
    if key not in _KERNELS:
        _KERNELS[key] = nt.jit(**options)(fn)
    return _KERNELS[key]


def c_partition(c, config: GemmConfig, blocks: int | None = None):
    """C split into (bm, bn) tiles in the grouped order, optionally mapped onto ``blocks``."""
    return nt.partition(c, (config.bm, config.bn), blocks=blocks, order=nt.grouped(GROUP_M))


def check_operands(op: str, a, b, c) -> str:
    """Check the operands of ``c = a @ b`` before launching: 2-D, ``a`` (M, K), ``b`` (K, N),
    ``c`` (M, N), one dtype among :data:`GEMM_DTYPES`. Returns the dtype's name.

    Raises:
        ValueError: naming the argument, what was expected and what was given.
    """
    dt = dtype_name(a)
    if dt not in GEMM_DTYPES:
        raise ValueError(f"{op}: a: expected float16 or bfloat16, got {dt}")
    for name, x in (("a", a), ("b", b), ("c", c)):
        if len(x.shape) != 2:
            raise ValueError(f"{op}: {name}: expected a 2-D array, got shape {tuple(x.shape)}")
    (m, k), (kb, n) = a.shape, b.shape
    if kb != k or dtype_name(b) != dt:
        raise ValueError(f"{op}: b: expected ({k}, N) {dt} (a's columns and dtype), got "
                         f"{tuple(b.shape)} {dtype_name(b)}")
    if tuple(c.shape) != (m, n) or dtype_name(c) != dt:
        raise ValueError(f"{op}: c: expected ({m}, {n}) {dt} (a's rows, b's columns, their "
                         f"dtype), got {tuple(c.shape)} {dtype_name(c)}")
    return dt


def device_cc(interpret: bool = False):
    """Compute capability of the current GPU (device 0 where none is current), or None in
    interpreter mode or without a GPU."""
    if interpret or not nt.gpu_available():
        return None
    from numba_tile.runtime import driver
    return driver.compute_capability(driver.current_device() or 0)


def as_config(config, m: int, n: int, k: int, cc=None) -> GemmConfig:
    """``config`` as a :class:`GemmConfig`: None picks :func:`default_config` for ``cc``; a
    tuple is ``(bm, bn, bk, num_warps[, num_stages])``."""
    if config is None:
        return default_config(m, n, k, cc)
    if isinstance(config, GemmConfig):
        return config
    return GemmConfig(*config)


def matmul(a, b, c, *, config=None, stream=None, interpret=False):
    """Launch ``c = a @ b`` (float32 accumulation, rounded once into c's dtype).

    Args:
        a: (M, K) device array (host NumPy array in interpreter mode) of float16 or bfloat16.
        b: (K, N) array of a's dtype.
        c: (M, N) array of a's dtype, written.
        config: a :class:`GemmConfig`, a tuple ``(bm, bn, bk, num_warps[, num_stages])``, or
            None for :func:`default_config`.
        stream: the stream to launch on (CuPy, Numba or PyTorch stream, or None).
        interpret: run in the numba_tile interpreter.

    Returns:
        The launch handle (``.sync()`` waits).

    Raises:
        ValueError: another dtype, or shapes or dtypes that do not match (before any GPU work).
    """
    dt = check_operands("matmul", a, b, c)
    m, k = a.shape
    cfg = as_config(config, m, b.shape[1], k, None if config is not None else
                    device_cc(interpret))
    return kernel_for(cfg)(a, b, c_partition(c, cfg), cfg.bm, cfg.bn, cfg.bk, dt,
                           stream=stream, interpret=interpret)


def integer_operands(rng, m: int, n: int, k: int, dtype=np.float16, lo: int = -4, hi: int = 5):
    """Integer-valued a (m, k) and b (k, n) in ``[lo, hi)``: float32 sums of their products
    are exact while ``|sum| < 2**24``."""
    a = rng.integers(lo, hi, (m, k)).astype(dtype)
    b = rng.integers(lo, hi, (k, n)).astype(dtype)
    return a, b


def rounded_product(a, b, dtype) -> np.ndarray:
    """``a @ b`` in float64 (exact for integer-valued operands), rounded once to ``dtype``
    and returned as float64: what a kernel with exact float32 sums must store."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype).astype(np.float64)


def main(shape=None) -> None:
    interpret, to_device, to_host = pick_backend()
    m, n, k = shape or ((200, 136, 100) if interpret else (1000, 1000, 700))
    rng = np.random.default_rng()
    a_h, b_h = integer_operands(rng, m, n, k)
    c = to_device(np.full((m, n), np.nan, np.float16))
    cfg = default_config(m, n, k, device_cc(interpret))
    matmul(to_device(a_h), to_device(b_h), c, config=cfg, interpret=interpret).sync()
    check_result("gemm", to_host(c).astype(np.float64), rounded_product(a_h, b_h, np.float16),
                 rtol=0, atol=0, detail=f"M={m} N={n} K={k}, tiles {cfg}, grouped({GROUP_M}) "
                 f"order, against "
                 f"NumPy's float64 product rounded once to float16: ")


if __name__ == "__main__":
    main()
