"""Reads at computed positions: ``gather`` from read-only tensors (1-D lookups and 2-D
element coordinates, out-of-range coordinates reading the padding, int32 and int64
indices), ``load_at`` (tiles at any element offset of 1-D, 2-D and 3-D tensors: unaligned,
negative, past the end, overlapping windows), and scalar reads (``x[i]``, ``x[i, j]`` with
negative and out-of-range coordinates, a branch and a loop count on them, ``item`` of a
reduction deciding an early return)."""

from __future__ import annotations

import numpy as np

import numba_tile as nt

from ..arrays import np_dtype
from ..space import fit_budget
from .common import Family, cdiv, f64, jit, values

TABLE_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int32", "int64",
                "uint8")
VIEWS = ("plain", "framed", "flip", "strided", "transposed")


# ------------------------------------------------------------------------------------ gather

def lookup(table, ids, out: nt.Partition["B"], B: nt.Constant, PAD: nt.Constant):
    nt.store(out, nt.gather(table, nt.load_like(ids, out), padding=PAD))


def rows_gather(x, rows, out: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant,
                OFF: nt.Constant, PAD: nt.Constant):
    r = nt.load(rows, (nt.bid(0),), (R,), padding=-1)
    i = nt.broadcast_to(nt.expand_dims(r, 1), (R, C))
    j = nt.broadcast_to(nt.expand_dims(nt.arange(C), 0), (R, C)) + nt.bid(1) * C + OFF
    nt.store(out, nt.gather(x, (i, j), padding=PAD))


def sample_gather(space) -> dict:
    warps = space.warps()
    two = space.chance(0.5)
    tile = [space.pow2(1, 64), space.pow2(1, 256)] if two else [space.pow2(1, 256)]
    if space.chance(0.8):
        tile = fit_budget(tile, warps)
    dtype = space.choice(TABLE_DTYPES)
    return {"op": "rows" if two else "lookup", "dtype": dtype, "tile": tile,
            "out": [space.extent(t, 3) for t in tile],
            "table": [space.integer(1, 300)] + ([space.integer(1, 300)] if two else []),
            "index_dtype": space.choice(("int32", "int64")), "offset": space.integer(-5, 9),
            "pad": space.choice((0, 1, 7)), "num_warps": warps, "num_stages": space.stages(),
            "view": space.choice(VIEWS), "seed": space.seed()}


def run_gather(cfg, env):
    dt, tile = cfg["dtype"], cfg["tile"]
    table = values(env.rng, cfg["table"], dt, "normal")
    tv = env.view(table, cfg["view"])
    t = f64(tv.host)
    pad = float(cfg["pad"])
    idt = np_dtype(cfg["index_dtype"])
    kernel = jit(lookup if cfg["op"] == "lookup" else rows_gather, cfg)
    if cfg["op"] == "lookup":
        n = cfg["out"][0]
        size = cfg["table"][0]
        ids = env.rng.integers(-20, size + 20, n).astype(idt)
        if n >= 3:
            info = np.iinfo(idt)
            ids[:3] = [info.min, info.max, size - 1]
        ov = env.output((n,), dt)
        env.launch(kernel, tv.dev, env.view(ids).dev, env.partition(ov.dev, tile[0]), tile[0],
                   cfg["pad"])
        ok = (ids >= 0) & (ids < size)
        want = np.where(ok, t[np.clip(ids, 0, max(0, size - 1))] if size else pad, pad)
        env.check_view("lookup", ov, want)
        return
    (r, c), (m, n) = tile, cfg["out"]
    rows = env.rng.integers(-5, cfg["table"][0] + 5, m).astype(idt)
    ov = env.output((m, n), dt)
    env.launch(kernel, tv.dev, env.view(rows).dev, env.partition(ov.dev, (r, c)), r, c,
               cfg["offset"], cfg["pad"])
    want = np.full((m, n), pad)
    tr, tc = t.shape
    for a in range(m):
        if 0 <= rows[a] < tr:
            cols = np.arange(n) + cfg["offset"]
            inside = (cols >= 0) & (cols < tc)
            want[a, inside] = t[rows[a], cols[inside]]
    env.check_view("rows gather", ov, want)


# ----------------------------------------------------------------------------------- load_at

def window1(x, z: nt.Partition["B"], start, step, B: nt.Constant, PAD: nt.Constant):
    """Block b reads B elements from ``b * step + start``: overlapping, unaligned windows."""
    nt.store(z, nt.load_at(x, nt.bid(0) * step + start, (B,), padding=PAD))


def window2(x, z: nt.Partition[("BM", "BN")], r, c, BM: nt.Constant, BN: nt.Constant,
            PAD: nt.Constant):
    """Block (i, j) reads the (BM, BN) window at (r + i * BM, c + j * BN)."""
    nt.store(z, nt.load_at(x, (r + nt.bid(0) * BM, c + nt.bid(1) * BN), (BM, BN), padding=PAD))


def window3(x, z: nt.Partition[("A", "BM", "BN")], o0, o1, o2, A: nt.Constant,
            BM: nt.Constant, BN: nt.Constant, PAD: nt.Constant):
    nt.store(z, nt.load_at(x, (o0 + nt.bid(0) * A, o1 + nt.bid(1) * BM, o2 + nt.bid(2) * BN),
                           (A, BM, BN), padding=PAD))


def sample_load_at(space) -> dict:
    warps = space.warps()
    rank = space.choice((1, 2, 2, 3))
    tile = [space.pow2(1, 256 if rank < 3 else 32) for _ in range(rank)]
    if space.chance(0.8):
        tile = fit_budget(tile, warps)
    shape = [space.integer(0, 300 if rank < 3 else 40) for _ in range(rank)]
    out = [space.extent(t, 3 if rank < 3 else 2) for t in tile]
    offset = [space.choice((0, space.integer(-40, n + 40), -t, n, n - 1))
              for n, t in zip(shape, tile)]
    dtype = space.choice(TABLE_DTYPES)
    return {"dtype": dtype, "tile": tile, "shape": shape, "out": out, "offset": offset,
            "step": space.integer(-3, 300), "pad": space.choice((0, 2, -3)),
            "num_warps": warps, "num_stages": space.stages(), "view": space.choice(VIEWS),
            "seed": space.seed()}


def _window(x: np.ndarray, origin, shape, pad) -> np.ndarray:
    """x[origin : origin + shape] with ``pad`` outside x."""
    out = np.full(shape, float(pad))
    src = [np.arange(o, o + s) for o, s in zip(origin, shape)]
    inside = [(s >= 0) & (s < n) for s, n in zip(src, x.shape)]
    dst = np.ix_(*[np.nonzero(m)[0] for m in inside])
    got = np.ix_(*[s[m] for s, m in zip(src, inside)])
    if all(m.any() for m in inside):
        out[dst] = x[got]
    return out


def run_load_at(cfg, env):
    dt, tile, out = cfg["dtype"], cfg["tile"], cfg["out"]
    rank = len(tile)
    x = values(env.rng, cfg["shape"], dt, "normal")
    xv = env.view(x, cfg["view"])
    xs = f64(xv.host)
    zv = env.output(out, dt)
    z = env.partition(zv.dev, tuple(tile))
    off = cfg["offset"]
    grid = [cdiv(n, t) for n, t in zip(out, tile)]
    want = np.zeros([g * t for g, t in zip(grid, tile)])
    if rank == 1:
        env.launch(jit(window1, cfg), xv.dev, z, off[0], cfg["step"],
                   tile[0], cfg["pad"])
        for b in range(grid[0]):
            want[b * tile[0]:(b + 1) * tile[0]] = _window(xs, (b * cfg["step"] + off[0],), tile,
                                                          cfg["pad"])
    else:
        kernel = jit(window2 if rank == 2 else window3, cfg)
        env.launch(kernel, xv.dev, z, *off, *tile, cfg["pad"])
        want = _window(xs, off, want.shape, cfg["pad"])
    env.check_view("load_at", zv, want[tuple(slice(0, n) for n in out)])


# ----------------------------------------------------------------------------------- scalars

def branch_on_flag(x, flags, z: nt.Partition["B"], B: nt.Constant):
    f = flags[nt.bid(0)]
    if f > 0:
        nt.store(z, nt.astype(nt.load_like(x, z), nt.float32) * f)
    else:
        nt.store(z, nt.astype(nt.load_like(x, z), nt.float32) - 1.0)


def loop_count(x, lens, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant):
    acc = nt.zeros((R, C), nt.float32)
    for _ in range(lens[nt.bid(0)]):
        acc = acc + nt.astype(nt.load_like(x, z, padding=0), nt.float32)
    nt.store(z, acc)


def pick(x, i, j, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[i, j])


def early_return(x, z: nt.Partition["B"], thr, B: nt.Constant):
    t = nt.astype(nt.load_like(x, z, padding=0), nt.float32)
    if nt.item(nt.max(t, 0)) < thr:
        return
    nt.store(z, t * 2.0)


SCALAR_OPS = ("branch", "loop", "pick", "early_return")
FLAG_DTYPES = ("float32", "float16", "bfloat16", "int32", "int8", "uint8", "int64", "bool")


def sample_scalars(space) -> dict:
    op = space.choice(SCALAR_OPS)
    warps = space.warps()
    rank = 2 if op == "loop" else 1
    tile = [space.pow2(1, 64 if rank == 2 else 256) for _ in range(rank)]
    if space.chance(0.8):
        tile = fit_budget(tile, warps)
    return {"op": op, "tile": tile, "shape": [space.extent(t, 6 if rank == 1 else 3)
                                              for t in tile],
            "dtype": space.choice(("float32", "float16", "bfloat16", "float64")),
            "flag_dtype": space.choice(FLAG_DTYPES), "num_warps": warps,
            "num_stages": space.stages(),
            "coords": [space.integer(-9, 9), space.integer(-7, 7)],
            "threshold": space.choice((-1.0, 0.5, 1.5, 3.0)), "view": space.choice(VIEWS),
            "seed": space.seed()}


def run_scalars(cfg, env):
    op, tile, shape, dt = cfg["op"], cfg["tile"], cfg["shape"], cfg["dtype"]
    rng = env.rng
    x = values(rng, shape, dt, "ints")
    xv = env.view(x, cfg["view"])
    xs = f64(xv.host).astype(np.float32).astype(np.float64)
    kernel = jit(
        {"branch": branch_on_flag, "loop": loop_count, "pick": pick,
         "early_return": early_return}[op], cfg)
    if op == "branch":
        nb = cdiv(shape[0], tile[0])
        flags = values(rng, (nb,), cfg["flag_dtype"], "ints", lo=-2, hi=3)
        zv = env.output(shape, "float32")
        env.launch(kernel, xv.dev, env.view(flags).dev, env.partition(zv.dev, tile[0]), tile[0])
        f = np.repeat(f64(flags), tile[0])[:shape[0]]
        env.check_view("branch", zv, np.where(f > 0, xs * f, xs - 1.0))
    elif op == "loop":
        nb = cdiv(shape[0], tile[0])
        fdt = cfg["flag_dtype"] if cfg["flag_dtype"] in ("int32", "int8", "uint8", "int64") \
            else "int32"
        lens = values(rng, (nb,), fdt, "ints", lo=0, hi=4)
        zv = env.output(shape, "float32")
        env.launch(kernel, xv.dev, env.view(lens).dev, env.partition(zv.dev, tuple(tile)),
                   *tile)
        k = np.repeat(f64(lens), tile[0])[:shape[0]]
        env.check_view("loop count", zv, xs * k[:, None])
    elif op == "pick":
        table = values(rng, (7, 5), cfg["flag_dtype"], "ints")
        i, j = cfg["coords"]
        zv = env.output(shape, "float32")
        env.launch(kernel, env.view(table, cfg["view"]).dev, i, j,
                   env.partition(zv.dev, tile[0]), tile[0])
        inside = -7 <= i < 7 and -5 <= j < 5
        v = float(f64(table)[i, j]) if inside else 0.0
        env.check_view("x[i, j]", zv, np.full(shape, v))
    else:
        zv = env.output(shape, "float32")
        thr = cfg["threshold"]
        env.launch(kernel, xv.dev, env.partition(zv.dev, tile[0]), thr, tile[0])
        n, b = shape[0], tile[0]
        keep = np.zeros(n, bool)
        for s in range(0, n, b):
            chunk = np.zeros(b)
            chunk[:min(b, n - s)] = xs[s:s + b]
            keep[s:s + b] = not chunk.max() < thr
        env.check_view("early return", zv, xs * 2.0, written=keep)


FAMILIES = [
    Family("gather", sample_gather, run_gather,
           "gather from read-only tensors: 1-D lookups, 2-D coordinates, out of range"),
    Family("load_at", sample_load_at, run_load_at,
           "load_at: tiles at any element offset of 1-3-D tensors"),
    Family("scalars", sample_scalars, run_scalars,
           "x[i] scalar reads: branches, loop counts, coordinates, item() early return"),
]
