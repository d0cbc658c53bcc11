"""Row kernels: softmax-style rows (softmax, layer norm, RMS norm over each (BM, BN) tile of a
row, keepdims reductions broadcast back), looped and pipelined loads (row statistics over
the column tiles of a ``for k in range(num_tiles(...))`` loop, ``num_stages`` 1 to 5, masked,
zero- and -inf-padded loads of one input, several loads per iteration; windows of column
tiles over ``range(k0, nk + k1)`` read by ``load`` or by ``load_at`` at ``o + k * BN``), and
long rows as
block-owned strips (``strips``, a chunked softmax whose passes loop over the row, running
sums walked forwards or backwards with ``tiles(y, row, reverse=...)``, and the visit order of
a persistent ``tiles(y, reverse=...)`` walk)."""

from __future__ import annotations

import numpy as np

import numba_tile as nt

from ..arrays import np_dtype
from ..space import fit_budget
from .common import Family, cdiv, f64, jit, padded, rel, tiled, untiled, values, wrap

ROW_DTYPES = ("float32", "float16", "bfloat16", "float64")
NORM_OPS = ("softmax", "layernorm", "rmsnorm")


def norm_rows(x, w, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
              OP: nt.Constant, PAD: nt.Constant, OUT: nt.Constant):
    """Each (BM, BN) tile of y: its rows normalized over the tile's valid columns."""
    t = nt.astype(nt.load_like(x, y, padding=PAD), nt.float32)
    if OP == 0:
        e = nt.exp(t - nt.max(t, 1, keepdims=True))
        r = e / nt.sum(e, 1, keepdims=True)
    else:
        n = nt.sum(nt.filled(nt.where(t == t, 1.0, 0.0), 0.0), 1, keepdims=True)
        g = nt.expand_dims(nt.astype(nt.load(w, (nt.bid(1),), (BN,), padding=0), nt.float32),
                           0)
        if OP == 1:
            d = t - nt.sum(t, 1, keepdims=True) / n
            r = d * nt.rsqrt(nt.sum(d * d, 1, keepdims=True) / n + 1e-5) * g
        else:
            r = t * nt.rsqrt(nt.sum(t * t, 1, keepdims=True) / n + 1e-5) * g
    nt.store(y, nt.astype(r, OUT))


def row_stats(x, y, out: nt.Partition[("BM", 4)], BM: nt.Constant, BN: nt.Constant):
    """Per row, over its column tiles: sum(x), max(x) (-inf padding), sum(x * y), the count
    of valid x (a masked load)."""
    s = nt.zeros((BM, 1), nt.float32)
    m = nt.full((BM, 1), -float("inf"), nt.float32)
    d = nt.zeros((BM, 1), nt.float32)
    c = nt.zeros((BM, 1), nt.float32)
    for k in range(nt.num_tiles(x, 1, BN)):
        a = nt.astype(nt.load(x, (nt.bid(0), k), (BM, BN), padding=0), nt.float32)
        b = nt.astype(nt.load(x, (nt.bid(0), k), (BM, BN), padding=-float("inf")), nt.float32)
        v = nt.load(x, (nt.bid(0), k), (BM, BN))
        q = nt.astype(nt.load(y, (nt.bid(0), k), (BM, BN), padding=0), nt.float32)
        s = s + nt.sum(a, 1, keepdims=True)
        m = nt.maximum(m, nt.max(b, 1, keepdims=True))
        d = d + nt.sum(a * q, 1, keepdims=True)
        c = c + nt.sum(nt.filled(nt.where(v == v, 1.0, 0.0), 0.0), 1, keepdims=True)
    nt.store(out, nt.where(nt.arange(4) == 0, s, nt.where(nt.arange(4) == 1, m, nt.where(
        nt.arange(4) == 2, d, c))))


def window_row_sums(x, out: nt.Partition[("BM", 1)], k0, k1, o, BM: nt.Constant,
                    BN: nt.Constant, AL: nt.Constant, AT: nt.Constant):
    """Per row, the sum over the column tiles of ``range(k0, nk + k1)`` (a loop starting
    anywhere), read by ``load`` at tile ``k`` or (AT) by ``load_at`` at columns
    ``o * AL + k * BN`` (a base of whole 16-byte chunks, any sign)."""
    s = nt.zeros((BM, 1), nt.float32)
    for k in range(k0, nt.num_tiles(x, 1, BN) + k1):
        if AT:
            t = nt.load_at(x, (nt.bid(0) * BM, o * AL + k * BN), (BM, BN), padding=0)
        else:
            t = nt.load(x, (nt.bid(0), k), (BM, BN), padding=0)
        s = s + nt.sum(nt.astype(t, nt.float32), 1, keepdims=True)
    nt.store(out, s)


def row_sums_int(x, out: nt.Partition[("BM", 2)], BM: nt.Constant, BN: nt.Constant,
                 LO: nt.Constant):
    """Integer rows: the int64 sum and the max over the column tiles."""
    s = nt.zeros((BM, 1), nt.int64)
    m = nt.full((BM, 1), LO, nt.int64)
    for k in range(nt.num_tiles(x, 1, BN)):
        t = nt.load(x, (nt.bid(0), k), (BM, BN), padding=0)
        s = s + nt.sum(t, 1, keepdims=True, dtype=nt.int64)
        m = nt.maximum(m, nt.astype(nt.max(t, 1, keepdims=True), nt.int64))
    nt.store(out, nt.where(nt.arange(2) == 0, s, m))


def strip_softmax(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    """A softmax over whole rows longer than a tile: max pass, sum pass, store pass."""
    for row in nt.strips(y):
        m = nt.full((BM,), -np.inf, nt.float32)
        for k in range(nt.num_tiles(x, 1, BN)):
            t = nt.astype(nt.load(x, (row[0], k), (BM, BN), padding=-np.inf), nt.float32)
            m = nt.maximum(m, nt.max(t, 1))
        s = nt.zeros((BM,), nt.float32)
        for k in range(nt.num_tiles(x, 1, BN)):
            t = nt.astype(nt.load(x, (row[0], k), (BM, BN), padding=-np.inf), nt.float32)
            s = s + nt.sum(nt.exp(t - nt.expand_dims(m, 1)), 1)
        for idx in nt.tiles(y, row):
            t = nt.astype(nt.load(x, idx, (BM, BN), padding=-np.inf), nt.float32)
            nt.store(y, nt.exp(t - nt.expand_dims(m, 1)) / nt.expand_dims(s, 1), idx)


def strip_running(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                  REV: nt.Constant):
    """Each tile of a strip gets the running sum of the strip's tiles up to it, in the walk's
    order (from the last tile with REV)."""
    for row in nt.strips(y):
        acc = nt.zeros((BM, BN), nt.float32)
        for idx in nt.tiles(y, row, reverse=REV):
            acc = acc + nt.astype(nt.load(x, idx, (BM, BN), padding=0), nt.float32)
            nt.store(y, acc, idx)


def visit_order(x, y: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
                REV: nt.Constant):
    """Each tile gets x plus the number of tiles its block visited before it."""
    step = 0
    for idx in nt.tiles(y, reverse=REV):
        nt.store(y, nt.astype(nt.load(x, idx, (BM, BN), padding=0), nt.float32) + step, idx)
        step += 1


# -------------------------------------------------------------------------------- sampling

def _rows_tile(space, warps, bm_hi=64):
    bm, bn = space.pow2(1, bm_hi), space.pow2(1, 256)
    if space.chance(0.8):
        bm, bn = fit_budget([bm, bn], warps)
    return bm, bn


def sample_norm(space) -> dict:
    warps = space.warps()
    bm, bn = _rows_tile(space, warps)
    op = space.choice(NORM_OPS)
    cols = space.extent(bn, 1) if space.chance(0.6) else space.extent(bn, 3)
    dtype = space.choice(ROW_DTYPES)
    return {"op": op, "dtype": dtype, "out": space.choice((dtype, "float32")),
            "tile": [bm, bn], "shape": [space.extent(bm, 4), cols], "num_warps": warps,
            "num_stages": space.stages(),
            "pad": space.choice((None, 0.0, float("-inf")) if op == "softmax" else (None, 0.0)),
            "view": space.choice(("plain", "framed", "flip", "strided", "transposed")),
            "seed": space.seed()}


def sample_looped(space) -> dict:
    warps = space.warps()
    bm, bn = _rows_tile(space, warps)
    if space.chance(0.25):       # the pipelined loads' small tiles: fewer chunks than threads
        bm, bn = space.choice((1, 2, 4, 8, 16)), space.choice((8, 16, 32))
    dtype = space.choice(ROW_DTYPES + ("int8", "int32", "int64", "uint8"))
    itemsize = np_dtype(dtype).itemsize
    align = 16 // itemsize if space.chance(0.6) else 1
    cols = space.extent(bn, 5)
    if align > 1 and cols:
        cols = -(-cols // align) * align
    return {"dtype": dtype, "tile": [bm, bn], "shape": [space.extent(bm, 4), cols],
            "num_warps": warps, "num_stages": space.stages(), "align": align,
            "views": [space.choice(("plain", "plain", "framed", "framed", "flip", "strided")),
                      space.choice(("plain", "framed", "broadcast"))], "seed": space.seed(),
            "window": (space.integer(-3, 3), space.integer(-2, 2), space.integer(-4, 4),
                       space.chance(0.5)) if space.chance(0.35) else None}


def sample_strips(space) -> dict:
    warps = space.warps()
    bm, bn = _rows_tile(space, warps, bm_hi=32)
    op = space.choice(("softmax", "running", "visit"))
    shape = [space.extent(bm, 4), space.extent(bn, 5)]
    strips = max(1, cdiv(shape[0], bm))
    tiles = strips * max(1, cdiv(shape[1], bn))
    blocks = space.integer(1, 2 * (tiles if op == "visit" else strips) + 2)
    dtype = space.choice(("float32", "float16", "bfloat16"))
    return {"op": op, "dtype": dtype, "tile": [bm, bn], "shape": shape, "blocks": blocks,
            "reverse": space.chance(0.5), "num_warps": warps, "num_stages": space.stages(),
            "align": 16 // np_dtype(dtype).itemsize if space.chance(0.5) else 1,
            "view": space.choice(("plain", "framed", "flip")), "seed": space.seed()}


# -------------------------------------------------------------------------------- running

def _kernel(fn, cfg):
    return jit(fn, cfg)


def run_norm(cfg, env):
    (bm, bn), (r, c) = cfg["tile"], cfg["shape"]
    dist = "normal"
    x = values(env.rng, (r, c), cfg["dtype"], dist)
    g = values(env.rng, (c,), cfg["dtype"], "positive")
    xv = env.view(x, cfg["view"])
    gv = env.view(g, "plain")
    yv = env.output((r, c), cfg["out"])
    env.launch(_kernel(norm_rows, cfg), xv.dev, gv.dev, env.partition(yv.dev, (bm, bn)), bm, bn,
               NORM_OPS.index(cfg["op"]), cfg["pad"], cfg["out"])
    # per tile: the rows of its valid columns (or of all BN columns, padded)
    vals, valid = padded(xv.host, (bm, bn), cfg["pad"])
    t = tiled(vals.astype(np.float32).astype(np.float64), (bm, bn))
    v = tiled(valid, (bm, bn)) if cfg["pad"] is None else np.ones_like(t, bool)
    gp, _ = padded(g, (bn,), 0.0)
    gt = gp.astype(np.float32).astype(np.float64).reshape(1, 1, -1, bn)
    with np.errstate(all="ignore"):
        if cfg["op"] == "softmax":
            m = np.max(np.where(v, t, -np.inf), 3, keepdims=True)
            e = np.where(v, np.exp(t - m), 0.0)
            want = e / e.sum(3, keepdims=True)
            atol, rtol = 4e-6, 4e-5 + 2 * bn * 2.0 ** -24     # the sum of BN exponentials
        else:
            n = v.sum(3, keepdims=True)
            tv = np.where(v, t, 0.0)
            if cfg["op"] == "layernorm":
                d = np.where(v, tv - tv.sum(3, keepdims=True) / n, 0.0)
                want = d / np.sqrt((d * d).sum(3, keepdims=True) / n + 1e-5) * gt
            else:
                want = tv / np.sqrt((tv * tv).sum(3, keepdims=True) / n + 1e-5) * gt
            atol, rtol = 2e-4 * np.sqrt(bn), 1e-4
    want = untiled(want)[:r, :c]
    out_rel = rel(cfg["out"])
    env.check_view(cfg["op"], yv, want, rtol=rtol + 2 * out_rel, atol=atol + 2 * out_rel)


def run_looped(cfg, env):
    (bm, bn), (r, c) = cfg["tile"], cfg["shape"]
    dtype = cfg["dtype"]
    integer = np_dtype(dtype).kind in "iu"
    x = values(env.rng, (r, c), dtype, "wide" if integer and dtype != "int64" else "ints")
    xv = env.view(x, cfg["views"][0], align=cfg["align"])
    xs = f64(xv.host)
    if cfg.get("window") and not integer:
        k0, k1, o, at = cfg["window"]
        al = cfg["align"]
        ov = env.output((r, 1), "float32")
        env.launch(_kernel(window_row_sums, cfg), xv.dev, env.partition(ov.dev, (bm, 1)), k0,
                   k1, o, bm, bn, al, at)
        nk = cdiv(c, bn)
        base = o * al if at else 0
        lo = max(base + k0 * bn, 0)
        hi = max(min(base + (nk + k1) * bn, c), lo)
        x32 = xs.astype(np.float32).astype(np.float64)[:, lo:hi]
        env.check_view("window sums", ov, x32.sum(1, keepdims=True),
                       scale=np.abs(x32).sum(1, keepdims=True), srtol=(c + 2) * 2.0 ** -24)
        return
    if integer:
        ov = env.output((r, 2), "int64")
        lo = int(np.iinfo(np.int64).min)
        env.launch(_kernel(row_sums_int, cfg), xv.dev, env.partition(ov.dev, (bm, 2)), bm, bn,
                   lo)
        xi = xv.host.astype(np.int64)
        s = wrap(xi.sum(1), "int64")
        # a padded (zero) element joins the max of a ragged last tile
        ragged = c % bn != 0
        m = xi.max(1, initial=lo)
        if ragged:
            m = np.maximum(m, 0)
        env.check_view("row sums", ov, np.stack([s, m], 1))
        return
    y = values(env.rng, (r, c), dtype, "ints")
    yv = env.view(y, cfg["views"][1], align=cfg["align"])
    ov = env.output((r, 4), "float32")
    env.launch(_kernel(row_stats, cfg), xv.dev, yv.dev, env.partition(ov.dev, (bm, 4)), bm, bn)
    x32 = xs.astype(np.float32).astype(np.float64)
    y32 = f64(yv.host).astype(np.float32).astype(np.float64)
    want = np.stack([x32.sum(1), x32.max(1, initial=-np.inf), (x32 * y32).sum(1),
                     np.full(r, float(c))], 1)
    scale = np.stack([np.abs(x32).sum(1), np.zeros(r), np.abs(x32 * y32).sum(1),
                      np.zeros(r)], 1)
    env.check_view("row stats", ov, want, scale=scale, srtol=(c + 2) * 2.0 ** -24)


def run_strips(cfg, env):
    (bm, bn), (r, c) = cfg["tile"], cfg["shape"]
    x = values(env.rng, (r, c), cfg["dtype"], "normal" if cfg["op"] == "softmax" else "ints")
    xv = env.view(x, cfg["view"], align=cfg["align"])
    x32 = f64(xv.host).astype(np.float32).astype(np.float64)
    yv = env.output((r, c), "float32")
    y = env.partition(yv.dev, (bm, bn), blocks=cfg["blocks"])
    if cfg["op"] == "softmax":
        env.launch(_kernel(strip_softmax, cfg), xv.dev, y, bm, bn)
        with np.errstate(all="ignore"):
            e = np.exp(x32 - x32.max(1, keepdims=True, initial=-np.inf))
            want = e / e.sum(1, keepdims=True)
        env.check_view("softmax", yv, want, rtol=4e-5 + 2 * c * 2.0 ** -24, atol=4e-6)
        return
    k = max(1, cdiv(c, bn))
    vals, _ = padded(x32, (bm, bn), 0.0)
    if cfg["op"] == "running":
        env.launch(_kernel(strip_running, cfg), xv.dev, y, bm, bn, cfg["reverse"])
        chunks = vals[:, :k * bn].reshape(vals.shape[0], k, bn)
        if cfg["reverse"]:
            want = np.cumsum(chunks[:, ::-1], 1)[:, ::-1]
        else:
            want = np.cumsum(chunks, 1)
        want = want.reshape(vals.shape[0], k * bn)[:r, :c]
        env.check_view("running sums", yv, want)
        return
    env.launch(_kernel(visit_order, cfg), xv.dev, y, bm, bn, cfg["reverse"])
    grid = (cdiv(r, bm), cdiv(c, bn))
    total = grid[0] * grid[1]
    step = np.zeros(grid)
    for b in range(cfg["blocks"]):
        mine = list(range(b, total, cfg["blocks"]))
        if cfg["reverse"]:
            mine = mine[::-1]
        for s, lin in enumerate(mine):
            step[divmod(lin, grid[1])] = s
    want = x32 + np.repeat(np.repeat(step, bm, 0), bn, 1)[:r, :c]
    env.check_view("visit order", yv, want)


FAMILIES = [
    Family("norm_rows", sample_norm, run_norm,
           "softmax / layer norm / RMS norm over the rows of each tile"),
    Family("looped_rows", sample_looped, run_looped,
           "row statistics over a K loop of (pipelined) loads, num_stages 1-5"),
    Family("strips", sample_strips, run_strips,
           "block-owned strips: chunked softmax, running sums forwards or reversed, visit order"),
]
