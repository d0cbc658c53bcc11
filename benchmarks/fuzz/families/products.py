"""Matrix products: ``C = A @ B`` by ``nt.mma`` over a K loop, on a grid (one block per tile
of C, row-major or grouped order), persistent (``blocks=``, ``tiles(c)``, more blocks than
tiles too) and over groups of ragged problems (tuples of arrays); every mma dtype (float16
with float32 or float16 accumulation, bfloat16, int8, float32 IEEE and TF32, float64, both
FP8 formats), transposed operands (A given as (K, M), B as (N, K)), masked or zero-padded
loads, views with offsets, negative strides and column-major layouts, ``num_stages`` 1 to 5,
and the lowering's switches (``NUMBA_TILE_MMA=sync``, ``NUMBA_TILE_TMA=0``,
``NUMBA_TILE_WS=0``, ``NUMBA_TILE_CLUSTER=1``); and the K loop written other ways
(``mma_forms``): ``load_at`` at element offsets, 3-D operands reshaped, bare ``x @ y``.

The loops are straight-line: a branch inside a K loop (even on a constant) keeps its loads
off the TMA path, and so does a ``precision=`` keyword (even ``None``), so each operand
layout has its own loop at the top of the kernel and only the TF32 loop names a precision."""

from __future__ import annotations

import numpy as np

import numba_tile as nt

from ..arrays import np_dtype
from ..space import fit_budget
from .common import FP8, Family, f64, jit, rel, tiny, values, wrap

#: (input dtype, accumulator dtype, precision)
MMA_DTYPES = (("float16", "float32", None), ("float16", "float16", None),
              ("bfloat16", "float32", None), ("int8", "int32", None),
              ("float32", "float32", None), ("float32", "float32", "tf32"),
              ("float64", "float64", None), ("float8_e4m3fn", "float32", None),
              ("float8_e5m2", "float32", None))
VIEW_KINDS = ("plain", "plain", "framed", "flip", "strided", "transposed", "broadcast")
OUT_VIEWS = ("plain", "plain", "framed", "flip", "transposed")


def mma_grid(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
             BK: nt.Constant, ACC: nt.Constant, OUT: nt.Constant, PAD: nt.Constant,
             TF32: nt.Constant, TA: nt.Constant, TB: nt.Constant):
    """One block per tile of C; A is (M, K) or, with TA, (K, M); B is (K, N) or, with TB,
    (N, K); TF32: float32 products on TF32 tensor cores (A and B as (M, K) and (K, N))."""
    acc = nt.zeros((BM, BN), ACC)
    if TF32:
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=PAD),
                         nt.load(b, (k, nt.bid(1)), (BK, BN), padding=PAD), acc,
                         precision="tf32")
    elif TA:
        if TB:
            for k in range(nt.num_tiles(a, 0, BK)):
                x = nt.transpose(nt.load(a, (k, nt.bid(0)), (BK, BM), padding=PAD))
                y = nt.transpose(nt.load(b, (nt.bid(1), k), (BN, BK), padding=PAD))
                acc = nt.mma(x, y, acc)
        else:
            for k in range(nt.num_tiles(a, 0, BK)):
                x = nt.transpose(nt.load(a, (k, nt.bid(0)), (BK, BM), padding=PAD))
                acc = nt.mma(x, nt.load(b, (k, nt.bid(1)), (BK, BN), padding=PAD), acc)
    elif TB:
        for k in range(nt.num_tiles(a, 1, BK)):
            y = nt.transpose(nt.load(b, (nt.bid(1), k), (BN, BK), padding=PAD))
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=PAD), y, acc)
    else:
        for k in range(nt.num_tiles(a, 1, BK)):
            acc = nt.mma(nt.load(a, (nt.bid(0), k), (BM, BK), padding=PAD),
                         nt.load(b, (k, nt.bid(1)), (BK, BN), padding=PAD), acc)
    nt.store(c, nt.astype(acc, OUT))


def mma_persistent(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                   BK: nt.Constant, ACC: nt.Constant, OUT: nt.Constant, PAD: nt.Constant,
                   TF32: nt.Constant, TB: nt.Constant, INLINE: nt.Constant):
    """The block's tiles of C from ``tiles(c)``; B is (K, N) or, with TB, (N, K); with
    INLINE the loads index with ``idx[d]`` inside the K loop rather than before it."""
    for idx in nt.tiles(c):
        i = idx[0]
        j = idx[1]
        acc = nt.zeros((BM, BN), ACC)
        if TF32:
            for k in range(nt.num_tiles(a, 1, BK)):
                acc = nt.mma(nt.load(a, (i, k), (BM, BK), padding=PAD),
                             nt.load(b, (k, j), (BK, BN), padding=PAD), acc, precision="tf32")
        elif TB:
            for k in range(nt.num_tiles(a, 1, BK)):
                y = nt.transpose(nt.load(b, (j, k), (BN, BK), padding=PAD))
                acc = nt.mma(nt.load(a, (i, k), (BM, BK), padding=PAD), y, acc)
        elif INLINE:
            for k in range(nt.num_tiles(a, 1, BK)):
                acc = nt.mma(nt.load(a, (idx[0], k), (BM, BK), padding=PAD),
                             nt.load(b, (k, idx[1]), (BK, BN), padding=PAD), acc)
        else:
            for k in range(nt.num_tiles(a, 1, BK)):
                acc = nt.mma(nt.load(a, (i, k), (BM, BK), padding=PAD),
                             nt.load(b, (k, j), (BK, BN), padding=PAD), acc)
        nt.store(c, nt.astype(acc, OUT), idx)


def mma_groups(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
               BK: nt.Constant, ACC: nt.Constant, OUT: nt.Constant, PAD: nt.Constant,
               TF32: nt.Constant):
    """A grouped GEMM: ``c[g] = a[g] @ b[g]`` for each member of the tuples."""
    for g in nt.static_range(len(c)):
        for idx in nt.tiles(c[g]):
            i = idx[0]
            j = idx[1]
            acc = nt.zeros((BM, BN), ACC)
            if TF32:
                for k in range(nt.num_tiles(a[g], 1, BK)):
                    acc = nt.mma(nt.load(a[g], (i, k), (BM, BK), padding=PAD),
                                 nt.load(b[g], (k, j), (BK, BN), padding=PAD), acc,
                                 precision="tf32")
            else:
                for k in range(nt.num_tiles(a[g], 1, BK)):
                    acc = nt.mma(nt.load(a[g], (i, k), (BM, BK), padding=PAD),
                                 nt.load(b[g], (k, j), (BK, BN), padding=PAD), acc)
            nt.store(c[g], nt.astype(acc, OUT), idx)


def mma_forms(a, b, c: nt.Partition[("BM", "BN")], k0, k1, o, BM: nt.Constant,
              BN: nt.Constant, BK: nt.Constant, ACC: nt.Constant, OUT: nt.Constant,
              PAD: nt.Constant, FORM: nt.Constant, AL: nt.Constant):
    """The K loop written other ways, each pipelined its own way: FORM 0, ``load_at`` at
    element offsets ``(i * BM, k * BK)`` and ``acc += x @ y``; 1, 3-D operands (batch 1 of
    two) loaded as ``(1, BM, BK)`` tiles and reshaped; 2, ``acc = acc - x @ y`` (a bare
    product: the result is ``-A @ B``); 3, the last K step's ``x @ y`` alone; 4, a loop
    ``range(k0, nk + k1)`` (starting anywhere: before the grid, inside it, past it); 5,
    ``load_at`` at ``o * AL + k * BK`` (a base of whole 16-byte chunks, any sign) over
    ``range(k0, nk + k1)``; 6, each tile read by two products (``acc += x @ y`` and
    ``acc -= (x @ y) * 0.5``: the result is ``A @ B / 2``); 7, ``a`` of shape (M, 2, K) read as
    ``(BM, 1, BK)`` tiles of its second row (a middle axis of extent 1) and reshaped."""
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), ACC)
        if FORM == 0:
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load_at(a, (idx[0] * BM, k * BK), (BM, BK), padding=0)
                y = nt.load_at(b, (k * BK, idx[1] * BN), (BK, BN), padding=0)
                acc += x @ y
        elif FORM == 1:
            for k in range(nt.num_tiles(a, 2, BK)):
                x = nt.load(a, (1, idx[0], k), (1, BM, BK), padding=PAD)
                y = nt.load(b, (1, k, idx[1]), (1, BK, BN), padding=PAD)
                acc = nt.mma(nt.reshape(x, (BM, BK)), nt.reshape(y, (BK, BN)), acc)
        elif FORM == 2:
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc = acc - x @ y
        elif FORM == 3:
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc = x @ y
        elif FORM == 4:
            for k in range(k0, nt.num_tiles(a, 1, BK) + k1):
                x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc = nt.mma(x, y, acc)
        elif FORM == 5:
            for k in range(k0, nt.num_tiles(a, 1, BK) + k1):
                x = nt.load_at(a, (idx[0] * BM, o * AL + k * BK), (BM, BK), padding=0)
                y = nt.load_at(b, (k * BK + o * AL, idx[1] * BN), (BK, BN), padding=0)
                acc += x @ y
        elif FORM == 6:
            for k in range(nt.num_tiles(a, 1, BK)):
                x = nt.load(a, (idx[0], k), (BM, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc += x @ y
                acc -= (x @ y) * 0.5
        else:
            for k in range(nt.num_tiles(a, 2, BK)):
                x = nt.load(a, (idx[0], 1, k), (BM, 1, BK), padding=0)
                y = nt.load(b, (k, idx[1]), (BK, BN), padding=0)
                acc = nt.mma(nt.reshape(x, (BM, BK)), y, acc)
        nt.store(c, nt.astype(acc, OUT), idx)


# -------------------------------------------------------------------------------- sampling

HOPPER_DTYPES = (("float16", "float32", None), ("float16", "float16", None),
                 ("bfloat16", "float32", None), ("float8_e4m3fn", "float32", None),
                 ("float8_e5m2", "float32", None))


def _tiles(space, warps: int) -> tuple[int, int, int]:
    """(BM, BN, BK) from 16 to 256 (80%) or 1 to 256 (refusals below 16 expected); 70% cut
    to the register budget (the accumulator's and each operand's elements per thread)."""
    lo = 16 if space.chance(0.8) else 1
    bm, bn, bk = space.pow2(lo, 256), space.pow2(lo, 256), space.pow2(lo, 256)
    if space.chance(0.7):
        bm, bn = fit_budget([bm, bn], warps)
        bm, bk = fit_budget([bm, bk], warps)
        bk, bn = fit_budget([bk, bn], warps)
    return bm, bn, bk


def _extent(space, tile: int, align: int, max_tiles: int, empty: float = 0.04) -> int:
    n = space.extent(tile, max_tiles, empty)
    if align > 1 and n > 0:
        n = -(-n // align) * align
    return n


def _common(space, persistent: bool) -> dict:
    """The dtype, tiles, warps, stages, loads and switches of a product. 35% are shaped for
    Hopper's ``wgmma`` and TMA (16-bit or FP8 inputs, ``BM = 16 * num_warps``, BN a multiple
    of 64, BK of 64 (128 for FP8), 16-byte rows, two stages or more); the rest anywhere."""
    hopper = space.chance(0.35)
    if hopper:
        dt, acc, prec = space.choice(HOPPER_DTYPES)
        warps = space.choice((4, 4, 8, 8, 16, 1, 2))
        bm = min(256, 16 * warps)
        bn = space.choice((64, 128, 256))
        bk = space.choice((128,) if dt in FP8 else (64, 128))
        stages = space.choice((2, 3, 4, 5, 1))
        while stages > 1 and (bm + bn) * bk * np_dtype(dt).itemsize * stages > 160 * 1024:
            stages -= 1             # the stages fit Hopper's 227 KB of shared memory
    else:
        dt, acc, prec = space.choice(MMA_DTYPES)
        warps = space.warps()
        bm, bn, bk = _tiles(space, warps)
        stages = space.stages()
    itemsize = np_dtype(dt).itemsize
    align = 16 // itemsize if hopper or space.chance(0.6) else 1      # 16-byte rows
    env = {}
    if space.chance(0.15):
        env["NUMBA_TILE_MMA"] = "sync"
    if space.chance(0.15):
        env["NUMBA_TILE_TMA"] = "0"
    if space.chance(0.15):
        env["NUMBA_TILE_WS"] = "0"
    if persistent and space.chance(0.2):
        env["NUMBA_TILE_CLUSTER"] = "1"
    return {"dtype": dt, "acc": acc, "precision": prec, "out": space.choice((acc, dt)),
            "num_warps": warps, "num_stages": stages, "tile": [bm, bn, bk],
            "align": align, "pad": space.choice((None, 0)), "env": env, "hopper": hopper,
            "dist": "normal" if space.chance(0.3) else "ints", "seed": space.seed()}


def _views(space, hopper: bool) -> list:
    kinds = ("plain", "plain", "framed") if hopper else VIEW_KINDS
    return [space.choice(kinds), space.choice(kinds)]


def sample_grid(space) -> dict:
    cfg = _common(space, persistent=False)
    bm, bn, bk = cfg["tile"]
    al = cfg["align"]
    cfg["shape"] = [_extent(space, bm, al, 3), _extent(space, bn, al, 3),
                    _extent(space, bk, al, 4)]
    tf32 = cfg["precision"] == "tf32"          # the TF32 loop takes A and B as they are
    cfg["ta"] = space.chance(0.2) and not tf32
    cfg["tb"] = space.chance(0.6 if cfg["dtype"] in FP8 else 0.25) and not tf32  # K-major B
    cfg["views"] = _views(space, cfg["hopper"])
    cfg["out_view"] = space.choice(OUT_VIEWS)
    cfg["group"] = space.choice((None, None, 1, 2, 3, 8))
    return cfg


def sample_persistent(space) -> dict:
    cfg = _common(space, persistent=True)
    bm, bn, bk = cfg["tile"]
    al = cfg["align"]
    cfg["shape"] = [_extent(space, bm, al, 4), _extent(space, bn, al, 4),
                    _extent(space, bk, al, 3)]
    tiles = max(1, -(-cfg["shape"][0] // bm) * -(-cfg["shape"][1] // bn))
    cfg["blocks"] = space.integer(1, 2 * tiles + 3)
    cfg["tb"] = space.chance(0.6 if cfg["dtype"] in FP8 else 0.25) and \
        cfg["precision"] != "tf32"
    cfg["inline"] = space.chance(0.25)
    cfg["views"] = _views(space, cfg["hopper"])
    cfg["out_view"] = space.choice(OUT_VIEWS)
    cfg["group"] = space.choice((None, None, 1, 2, 8))
    return cfg


def sample_forms(space) -> dict:
    cfg = _common(space, persistent=True)
    cfg["precision"] = None          # the kernel names no precision: float32 is IEEE
    bm, bn, bk = cfg["tile"]
    al = cfg["align"]
    cfg["shape"] = [_extent(space, bm, al, 3), _extent(space, bn, al, 3),
                    _extent(space, bk, al, 4)]
    cfg["form"] = space.choice((0, 1, 2, 3, 4, 5, 6, 7))
    cfg["k0"], cfg["k1"], cfg["o"] = (space.integer(-3, 3), space.integer(-2, 2),
                                      space.integer(-4, 4))
    if cfg["form"] != 1 and cfg["acc"] == "float16":
        cfg["acc"] = "float32"       # ``x @ y`` of float16 accumulates in float32
    cfg["blocks"] = space.choice((None, None, space.integer(1, 6)))
    return cfg


def sample_groups(space) -> dict:
    cfg = _common(space, persistent=False)
    bm, bn, bk = cfg["tile"]
    al = cfg["align"]
    # an empty member's partition has no tiles to map (refused: GridMismatchError), so rarely
    cfg["shapes"] = [[_extent(space, bm, al, 2, 0.004), _extent(space, bn, al, 2, 0.004),
                      _extent(space, bk, al, 3)] for _ in range(space.integer(1, 4))]
    cfg["views"] = _views(space, cfg["hopper"])
    cfg["blocks"] = space.integer(1, 12)
    return cfg


# -------------------------------------------------------------------------------- running

def _operands(cfg, env, m, n, k, ta=False, tb=False):
    """Host operands as the kernel sees them (A as (M, K), B as (K, N)) and their views (A
    given as (K, M) with ``ta``, B as (N, K) with ``tb``)."""
    dt, dist = cfg["dtype"], cfg["dist"]
    al = cfg["align"]
    a = values(env.rng, (k, m) if ta else (m, k), dt, dist)
    b = values(env.rng, (n, k) if tb else (k, n), dt, dist)
    views = cfg.get("views", ["plain", "plain"])
    av = env.view(a, views[0], align=al)
    bv = env.view(b, views[1], align=al)
    return (av.host.T if ta else av.host), (bv.host.T if tb else bv.host), av, bv


def _tolerance(cfg, k: int) -> dict:
    """Bounds of the product's error against float64, relative to ``|A| @ |B|`` (``srtol``):
    the products are exact (16-bit, FP8) or rounded once (TF32: ``2**-10``), each of the K
    additions may lose an ulp of the accumulator (float32 ``2**-23``, float16 ``2**-10`` per
    group of 16, the tensor cores' FP8 accumulator about 14 bits); then the output's own
    rounding (``rtol``). Small-integer inputs give exact results on every path."""
    dt, acc, prec, out = cfg["dtype"], cfg["acc"], cfg["precision"], cfg["out"]
    if np_dtype(out).kind in "iu":
        return {}
    if acc == "float16":
        srtol = (k / 16 + 2) * 2.0 ** -10
    elif dt in FP8:
        srtol = (k + 2) * 2.0 ** -13
    elif prec == "tf32":
        srtol = 2.0 ** -9 + (k + 2) * 2.0 ** -23
    elif acc == "float64":
        srtol = (k + 2) * 2.0 ** -52
    else:
        srtol = (k + 2) * 2.0 ** -23
    return {"rtol": 2 * rel(out), "atol": 2 * tiny(out), "srtol": srtol}


def _want(cfg, a, b):
    r = f64(a) @ f64(b)
    if np_dtype(cfg["out"]).kind in "iu":
        return wrap(np.asarray(a, np.int64) @ np.asarray(b, np.int64), cfg["out"])
    return r


def _kernel(fn, cfg):
    return jit(fn, cfg)


def _constants(cfg):
    bm, bn, bk = cfg["tile"]
    return (bm, bn, bk, cfg["acc"], cfg["out"], cfg["pad"], cfg["precision"] == "tf32")


def _order(cfg):
    return None if cfg.get("group") is None else nt.grouped(cfg["group"])


def run_grid(cfg, env):
    m, n, k = cfg["shape"]
    bm, bn, _ = cfg["tile"]
    a, b, av, bv = _operands(cfg, env, m, n, k, cfg["ta"], cfg["tb"])
    cv = env.output((m, n), cfg["out"], cfg["out_view"], align=cfg["align"])
    c = env.partition(cv.dev, (bm, bn), order=_order(cfg))
    env.launch(_kernel(mma_grid, cfg), av.dev, bv.dev, c, *_constants(cfg), cfg["ta"],
               cfg["tb"])
    env.check_view("C", cv, _want(cfg, a, b), scale=np.abs(f64(a)) @ np.abs(f64(b)),
                   **_tolerance(cfg, k))


def run_persistent(cfg, env):
    m, n, k = cfg["shape"]
    bm, bn, _ = cfg["tile"]
    a, b, av, bv = _operands(cfg, env, m, n, k, False, cfg["tb"])
    cv = env.output((m, n), cfg["out"], cfg["out_view"], align=cfg["align"])
    c = env.partition(cv.dev, (bm, bn), blocks=cfg["blocks"], order=_order(cfg))
    env.launch(_kernel(mma_persistent, cfg), av.dev, bv.dev, c, *_constants(cfg), cfg["tb"],
               cfg["inline"])
    env.check_view("C", cv, _want(cfg, a, b), scale=np.abs(f64(a)) @ np.abs(f64(b)),
                   **_tolerance(cfg, k))


def run_forms(cfg, env):
    m, n, k = cfg["shape"]
    bm, bn, bk = cfg["tile"]
    form = cfg["form"]
    dt, al = cfg["dtype"], cfg["align"]
    a = values(env.rng, (m, k), dt, cfg["dist"])
    b = values(env.rng, (k, n), dt, cfg["dist"])
    if form == 1:             # batch 1 of two: a wrong leading coordinate reads batch 0
        a_in = np.stack([values(env.rng, (m, k), dt, cfg["dist"]), a])
        b_in = np.stack([values(env.rng, (k, n), dt, cfg["dist"]), b])
    elif form == 7:           # a's second row of two: a wrong middle coordinate reads the first
        a_in = np.stack([values(env.rng, (m, k), dt, cfg["dist"]), a], axis=1)
        b_in = b
    else:
        a_in, b_in = a, b
    av, bv = env.view(a_in, "plain", align=al), env.view(b_in, "plain", align=al)
    a, b = (av.host[1], bv.host[1]) if form == 1 else (av.host, bv.host)
    if form == 7:
        a = av.host[:, 1]
    cv = env.output((m, n), cfg["out"], "plain", align=al)
    c = env.partition(cv.dev, (bm, bn), blocks=cfg["blocks"])
    k0, k1, o = cfg.get("k0", 0), cfg.get("k1", 0), cfg.get("o", 0)
    env.launch(_kernel(mma_forms, cfg), av.dev, bv.dev, c, k0, k1, o, bm, bn, bk, cfg["acc"],
               cfg["out"], cfg["pad"], form, al)
    if form == 3:             # the last K step alone (none: zeros)
        last = (k - 1) // bk * bk if k else 0
        a, b = a[:, last:last + bk], b[last:last + bk]
    elif form in (4, 5):      # the columns of K the loop's tiles cover, clipped to K
        nk = -(-k // bk)
        base = o * al if form == 5 else 0
        lo = max(base + k0 * bk, 0)
        hi = max(min(base + (nk + k1) * bk, k), lo)
        a, b = a[:, lo:hi], b[lo:hi]
    want = _want(cfg, a, b)
    if form == 2:
        want = -want if np_dtype(cfg["out"]).kind not in "iu" else \
            wrap(-np.asarray(a, np.int64) @ np.asarray(b, np.int64), cfg["out"])
    if form == 6:
        want = want * 0.5
    env.check_view("C", cv, want, scale=np.abs(f64(a)) @ np.abs(f64(b)),
                   **_tolerance(cfg, k))


def run_groups(cfg, env):
    bm, bn, _ = cfg["tile"]
    host, views, outs = [], [], []
    for m, n, k in cfg["shapes"]:
        a, b, av, bv = _operands(cfg, env, m, n, k)
        host.append((a, b))
        views.append((av, bv))
        outs.append(env.output((m, n), cfg["out"], "plain"))
    parts = tuple(env.partition(cv.dev, (bm, bn), blocks=cfg["blocks"]) for cv in outs)
    env.launch(_kernel(mma_groups, cfg), tuple(v[0].dev for v in views),
               tuple(v[1].dev for v in views), parts, *_constants(cfg))
    for g, ((a, b), cv, (m, n, k)) in enumerate(zip(host, outs, cfg["shapes"])):
        env.check_view(f"C[{g}]", cv, _want(cfg, a, b), scale=np.abs(f64(a)) @ np.abs(f64(b)),
                       **_tolerance(cfg, k))


FAMILIES = [
    Family("mma_grid", sample_grid, run_grid,
           "products on a grid of C's tiles (row-major or grouped), transposed operands"),
    Family("mma_persistent", sample_persistent, run_persistent,
           "persistent products over tiles(c), blocks= up to more blocks than tiles"),
    Family("mma_groups", sample_groups, run_groups,
           "grouped products over tuples of ragged problems"),
    Family("mma_forms", sample_forms, run_forms,
           "K loops written with load_at offsets, 3-D operands, bare x @ y products"),
]
