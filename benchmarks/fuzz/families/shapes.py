"""Shape ops: ``transpose`` of a tile stored at the mirrored tile index, ``permute`` of 3-D
tiles by any permutation, ``reshape`` between 1-D and 2-D tiles (both ways), and
``expand_dims`` / ``broadcast_to`` (an outer product, a row broadcast over a tile), over
every dtype the ops take (FP8 too: a refusal must be clear)."""

from __future__ import annotations

import itertools

import numpy as np

import numba_tile as nt

from ..space import fit_budget
from .common import FP8, Family, f64, jit, values

DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int32", "int64", "uint8",
          "bool") + FP8
PERMS = [list(p) for p in itertools.permutations(range(3))]


def transpose2(x, z: nt.Partition[("B1", "B0")], B0: nt.Constant, B1: nt.Constant,
               PERMUTE: nt.Constant):
    t = nt.load(x, (nt.bid(1), nt.bid(0)), (B0, B1))
    if PERMUTE:
        nt.store(z, nt.permute(t, (1, 0)))
    else:
        nt.store(z, nt.transpose(t))


def permute3(x, z: nt.Partition[("Z0", "Z1", "Z2")], X0: nt.Constant, X1: nt.Constant,
             X2: nt.Constant, Z0: nt.Constant, Z1: nt.Constant, Z2: nt.Constant,
             D0: nt.Constant, D1: nt.Constant, D2: nt.Constant, I0: nt.Constant,
             I1: nt.Constant, I2: nt.Constant):
    """z's tile (b0, b1, b2) is the permuted tile of x at (b[I0], b[I1], b[I2])."""
    t = nt.load(x, (nt.bid(I0), nt.bid(I1), nt.bid(I2)), (X0, X1, X2))
    nt.store(z, nt.permute(t, (D0, D1, D2)))


def rows_of_flat(x, z: nt.Partition[("R", "C")], R: nt.Constant, C: nt.Constant,
                 PAD: nt.Constant):
    flat = nt.load(x, (nt.bid(0),), (R * C,), padding=PAD)
    nt.store(z, nt.reshape(flat, (R, C)))


def flat_of_rows(x, z: nt.Partition["N"], N: nt.Constant, R: nt.Constant, C: nt.Constant,
                 PAD: nt.Constant):
    t = nt.load(x, (nt.bid(0), 0), (R, C), padding=PAD)
    nt.store(z, nt.reshape(t, (N,)))


def outer(a, b, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant,
          BCAST: nt.Constant):
    col = nt.expand_dims(nt.load(a, (nt.bid(0),), (BM,)), 1)       # (BM, 1)
    row = nt.expand_dims(nt.load(b, (nt.bid(1),), (BN,)), 0)       # (1, BN)
    if BCAST:
        nt.store(z, nt.broadcast_to(col, (BM, BN)) * nt.broadcast_to(row, (BM, BN)))
    else:
        nt.store(z, col * row)


def row_broadcast(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    row = nt.load(x, (nt.bid(1),), (BN,))
    nt.store(z, nt.broadcast_to(nt.expand_dims(row, 0), (BM, BN)))


OPS = ("transpose", "permute3", "rows_of_flat", "flat_of_rows", "outer", "row_broadcast")


def sample(space) -> dict:
    op = space.choice(OPS)
    warps = space.warps()
    dtype = space.choice(DTYPES)
    rank = 3 if op == "permute3" else 2
    tile = [space.pow2(1, 64 if rank == 3 else 256) for _ in range(rank)]
    if space.chance(0.8):
        tile = fit_budget(tile, warps)
    if op == "outer" and dtype in FP8 + ("bool",):
        dtype = "float32"
    shape = [space.extent(t, 3 if rank == 2 else 2) for t in tile]
    return {"op": op, "dtype": dtype, "tile": tile, "shape": shape, "num_warps": warps,
            "num_stages": space.stages(), "perm": space.choice(PERMS), "flag": space.chance(0.5),
            "pad": space.choice((None, 0)), "view": space.choice(("plain", "framed", "flip",
                                                                   "strided", "transposed")),
            "seed": space.seed()}


def _kernel(fn, cfg):
    return jit(fn, cfg)


def run(cfg, env):
    op, dt, tile, shape = cfg["op"], cfg["dtype"], cfg["tile"], cfg["shape"]
    rng = env.rng
    if op == "transpose":
        b0, b1 = tile
        x = values(rng, shape, dt)
        xv = env.view(x, cfg["view"])
        zv = env.output(shape[::-1], dt)
        env.launch(_kernel(transpose2, cfg), xv.dev, env.partition(zv.dev, (b1, b0)), b0, b1,
                   cfg["flag"])
        env.check_view("transpose", zv, xv.host.T)
    elif op == "permute3":
        perm = cfg["perm"]
        inv = [perm.index(j) for j in range(3)]
        x = values(rng, shape, dt)
        xv = env.view(x, cfg["view"])
        zshape = [shape[d] for d in perm]
        ztile = [tile[d] for d in perm]
        zv = env.output(zshape, dt)
        env.launch(_kernel(permute3, cfg), xv.dev, env.partition(zv.dev, tuple(ztile)), *tile,
                   *ztile, *perm, *inv)
        env.check_view("permute", zv, np.transpose(xv.host, perm))
    elif op == "rows_of_flat":
        r, c = tile
        rows = shape[0]
        x = values(rng, (rows * c + int(rng.integers(0, 3)),), dt)
        xv = env.view(x, cfg["view"])
        zv = env.output((rows, c), dt)
        env.launch(_kernel(rows_of_flat, cfg), xv.dev, env.partition(zv.dev, (r, c)), r, c,
                   cfg["pad"])
        env.check_view("reshape", zv, xv.host[:rows * c].reshape(rows, c))
    elif op == "flat_of_rows":
        r, c = tile
        rows = shape[0]
        x = values(rng, (rows, c), dt)
        xv = env.view(x, cfg["view"])
        zv = env.output((rows * c,), dt)
        env.launch(_kernel(flat_of_rows, cfg), xv.dev, env.partition(zv.dev, r * c), r * c, r,
                   c, cfg["pad"])
        env.check_view("reshape", zv, xv.host.reshape(-1))
    elif op == "outer":
        bm, bn = tile
        a = values(rng, (shape[0],), dt)
        b = values(rng, (shape[1],), dt)
        av, bv = env.view(a, cfg["view"]), env.view(b, "plain")
        zv = env.output(shape, dt)
        env.launch(_kernel(outer, cfg), av.dev, bv.dev, env.partition(zv.dev, (bm, bn)), bm, bn,
                   cfg["flag"])
        want = np.outer(f64(av.host), f64(bv.host))
        if np.dtype(zv.host.dtype).kind in "iu":
            from .common import wrap
            want = wrap(np.outer(av.host.astype(np.int64), bv.host.astype(np.int64)), dt)
        env.check_view("outer", zv, want, rtol=2.0 ** -10 if dt in ("float16", "bfloat16") else 0)
    else:
        bm, bn = tile
        x = values(rng, (shape[1],), dt)
        xv = env.view(x, cfg["view"])
        zv = env.output(shape, dt)
        env.launch(_kernel(row_broadcast, cfg), xv.dev, env.partition(zv.dev, (bm, bn)), bm, bn)
        env.check_view("broadcast", zv, np.broadcast_to(xv.host, shape))


FAMILIES = [Family("shape_ops", sample, run,
                   "transpose, permute, reshape, expand_dims and broadcast_to of tiles")]
