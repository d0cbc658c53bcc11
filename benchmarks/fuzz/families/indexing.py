"""NumPy's indexing of tiles: static slices ``t[S0:E0, S1:E1]`` (and ``nt.subtile``) of a 2-D
tile loaded with or without padding (the slice's valid box moves with it), newaxis outer
products ``a[:, None] * b[None, :]`` with augmented assignment, and ``gather`` at broadcast
coordinates ``(r[:, None], c[None, :])``, over tile extents 1 to 256, every dtype the ops take,
ragged and empty arrays and views."""

from __future__ import annotations

import numpy as np

import numba_tile as nt

from ..space import fit_budget
from .common import FP8, Family, f64, jit, values

DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int32", "int64", "uint8",
          "bool") + FP8
ARITH = ("float32", "float16", "float64", "int32", "int64")


def slice2(x, z: nt.Partition[("L0", "L1")], T0: nt.Constant, T1: nt.Constant,
           S0: nt.Constant, E0: nt.Constant, S1: nt.Constant, E1: nt.Constant,
           L0: nt.Constant, L1: nt.Constant, PAD: nt.Constant, SUBTILE: nt.Constant):
    t = nt.load(x, (nt.bid(0), nt.bid(1)), (T0, T1), padding=PAD)
    if SUBTILE:
        nt.store(z, nt.subtile(t, (S0, S1), (L0, L1)))
    else:
        nt.store(z, t[S0:E0, S1:E1])


def outer_newaxis(a, b, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    col = nt.load(a, (nt.bid(0),), (BM,), padding=0)
    acc = nt.zeros((BM, BN), z.dtype)
    acc += col[:, None]
    acc *= nt.load(b, (nt.bid(1),), (BN,), padding=0)[None, :]
    nt.store(z, acc)


def gather_box(x, rows, cols, z: nt.Partition[("BM", "BN")], BM: nt.Constant,
               BN: nt.Constant, PAD: nt.Constant):
    r = nt.load(rows, (nt.bid(0),), (BM,), padding=-1)
    c = nt.load(cols, (nt.bid(1),), (BN,), padding=-1)
    nt.store(z, nt.gather(x, (r[:, None], c[None, :]), mask=(r >= 0)[:, None], padding=PAD))


OPS = ("slice", "outer", "gather")


def sample(space) -> dict:
    op = space.choice(OPS)
    warps = space.warps()
    tile = fit_budget([space.pow2(1, 256), space.pow2(1, 256)], warps) \
        if space.chance(0.8) else [space.pow2(1, 256), space.pow2(1, 256)]
    lens = [space.pow2(1, t) for t in tile]
    starts = [space.integer(0, t - n) for t, n in zip(tile, lens)]
    dtype = space.choice(DTYPES if op != "outer" else ARITH)
    if op == "gather" and dtype == "bool":
        dtype = "int32"
    return {"op": op, "dtype": dtype, "tile": tile, "lens": lens, "starts": starts,
            "shape": [space.extent(t, 3) for t in tile], "num_warps": warps,
            "num_stages": space.stages(), "pad": space.choice((None, 0)),
            "flag": space.chance(0.3), "view": space.choice(("plain", "framed", "flip",
                                                             "strided", "transposed")),
            "seed": space.seed()}


def run(cfg, env):
    op, dt, tile, shape = cfg["op"], cfg["dtype"], cfg["tile"], cfg["shape"]
    rng = env.rng
    if op == "slice":
        (t0, t1), (l0, l1), (s0, s1) = tile, cfg["lens"], cfg["starts"]
        x = values(rng, shape, dt)
        xv = env.view(x, cfg["view"])
        g0, g1 = -(-shape[0] // t0), -(-shape[1] // t1)
        zv = env.output((g0 * l0, g1 * l1), dt)
        env.launch(jit(slice2, cfg), xv.dev, env.partition(zv.dev, (l0, l1)), t0, t1, s0,
                   s0 + l0, s1, s1 + l1, l0, l1, cfg["pad"], cfg["flag"])
        want = np.zeros((g0 * l0, g1 * l1), xv.host.dtype)
        written = np.zeros(want.shape, bool)
        for b0 in range(g0):
            for b1 in range(g1):
                rows = np.arange(b0 * t0 + s0, b0 * t0 + s0 + l0)
                cols = np.arange(b1 * t1 + s1, b1 * t1 + s1 + l1)
                inside = (rows < shape[0])[:, None] & (cols < shape[1])[None, :]
                box = np.zeros((l0, l1), xv.host.dtype)
                box[inside] = xv.host[np.clip(rows, 0, shape[0] - 1)][:, np.clip(
                    cols, 0, shape[1] - 1)][inside]
                at = (slice(b0 * l0, (b0 + 1) * l0), slice(b1 * l1, (b1 + 1) * l1))
                want[at] = box
                # masked (no padding): past the array's edge nothing is stored
                written[at] = inside if cfg["pad"] is None else True
        env.check_view("slice", zv, want, written=written)
    elif op == "outer":
        bm, bn = tile
        a = values(rng, (shape[0],), dt)
        b = values(rng, (shape[1],), dt)
        av, bv = env.view(a, cfg["view"]), env.view(b, "plain")
        zv = env.output(shape, dt)
        env.launch(jit(outer_newaxis, cfg), av.dev, bv.dev, env.partition(zv.dev, (bm, bn)),
                   bm, bn)
        want = np.outer(f64(av.host), f64(bv.host))
        if np.dtype(zv.host.dtype).kind in "iu":
            from .common import wrap
            want = wrap(np.outer(av.host.astype(np.int64), bv.host.astype(np.int64)), dt)
        env.check_view("outer", zv, want, rtol=2.0 ** -10 if dt == "float16" else 0)
    else:
        bm, bn = tile
        table = values(rng, (int(rng.integers(1, 40)), int(rng.integers(1, 40))), dt)
        tv = env.view(table, cfg["view"])
        rows = rng.integers(-2, tv.host.shape[0] + 2, shape[0]).astype(np.int32)
        cols = rng.integers(-2, tv.host.shape[1] + 2, shape[1]).astype(np.int64)
        rv, cv = env.view(rows, "plain"), env.view(cols, "plain")
        zv = env.output(shape, dt)
        pad = 0 if cfg["pad"] is None else 1
        env.launch(jit(gather_box, cfg), tv.dev, rv.dev, cv.dev,
                   env.partition(zv.dev, (bm, bn)), bm, bn, pad)
        inside = ((rows >= 0) & (rows < tv.host.shape[0]))[:, None] & \
            ((cols >= 0) & (cols < tv.host.shape[1]))[None, :]
        picked = tv.host[np.clip(rows, 0, tv.host.shape[0] - 1)][
            :, np.clip(cols, 0, tv.host.shape[1] - 1)]
        want = np.where(inside, picked, np.asarray(pad).astype(tv.host.dtype))
        env.check_view("gather", zv, want)


FAMILIES = [Family("indexing", sample, run,
                   "static slices, newaxis and broadcast gather coordinates of tiles")]
