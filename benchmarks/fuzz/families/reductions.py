"""Reductions (``sum``, ``prod``, ``max``, ``min``, ``argmax``, ``argmin``) along each axis of
rank-2 and rank-3 tiles, with and without ``keepdims`` (then ``expand_dims`` puts the axis
back), ``dtype=`` widening, masked loads or a padding value, NaN in the data; and scans
(``cumsum``) along each axis of rank-1 and rank-2 tiles. Every block reduces or scans its own
tile of the input; the reference does the same on the input grown to whole tiles."""

from __future__ import annotations

import numpy as np

import numba_tile as nt

from ..arrays import np_dtype
from ..space import fit_budget
from .common import (Family, cdiv, f64, is_int, jit, padded, rel, tiled, tiny, untiled, values,
                     wrap)

OPS = ("sum", "prod", "max", "min", "argmax", "argmin")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint32", "bool")
WIDER = {"int8": "int32", "int16": "int64", "int32": "int64", "uint8": "uint32",
         "uint32": "uint64", "float16": "float32", "bfloat16": "float32",
         "float32": "float64", "bool": "int64"}


def reduce2(x, out: nt.Partition[("O0", "O1")], B0: nt.Constant, B1: nt.Constant,
            O0: nt.Constant, O1: nt.Constant, OP: nt.Constant, AXIS: nt.Constant,
            KEEP: nt.Constant, PAD: nt.Constant, DT: nt.Constant):
    t = nt.load(x, (nt.bid(0), nt.bid(1)), (B0, B1), padding=PAD)
    if OP == 0:
        r = nt.sum(t, AXIS, keepdims=KEEP, dtype=DT)
    elif OP == 1:
        r = nt.prod(t, AXIS, keepdims=KEEP, dtype=DT)
    elif OP == 2:
        r = nt.max(t, AXIS, keepdims=KEEP)
    elif OP == 3:
        r = nt.min(t, AXIS, keepdims=KEEP)
    elif OP == 4:
        r = nt.argmax(t, AXIS, keepdims=KEEP)
    else:
        r = nt.argmin(t, AXIS, keepdims=KEEP)
    if KEEP:
        nt.store(out, r)
    else:
        nt.store(out, nt.expand_dims(r, AXIS))


def reduce3(x, out: nt.Partition[("O0", "O1", "O2")], B0: nt.Constant, B1: nt.Constant,
            B2: nt.Constant, O0: nt.Constant, O1: nt.Constant, O2: nt.Constant,
            OP: nt.Constant, AXIS: nt.Constant, KEEP: nt.Constant, PAD: nt.Constant,
            DT: nt.Constant):
    t = nt.load(x, (nt.bid(0), nt.bid(1), nt.bid(2)), (B0, B1, B2), padding=PAD)
    if OP == 0:
        r = nt.sum(t, AXIS, keepdims=KEEP, dtype=DT)
    elif OP == 1:
        r = nt.prod(t, AXIS, keepdims=KEEP, dtype=DT)
    elif OP == 2:
        r = nt.max(t, AXIS, keepdims=KEEP)
    elif OP == 3:
        r = nt.min(t, AXIS, keepdims=KEEP)
    elif OP == 4:
        r = nt.argmax(t, AXIS, keepdims=KEEP)
    else:
        r = nt.argmin(t, AXIS, keepdims=KEEP)
    if KEEP:
        nt.store(out, r)
    else:
        nt.store(out, nt.expand_dims(r, AXIS))


def scan1(x, out: nt.Partition["B0"], B0: nt.Constant, PAD: nt.Constant, DT: nt.Constant):
    nt.store(out, nt.cumsum(nt.load(x, (nt.bid(0),), (B0,), padding=PAD), 0, dtype=DT))


def scan2(x, out: nt.Partition[("B0", "B1")], B0: nt.Constant, B1: nt.Constant,
          AXIS: nt.Constant, PAD: nt.Constant, DT: nt.Constant):
    t = nt.load(x, (nt.bid(0), nt.bid(1)), (B0, B1), padding=PAD)
    nt.store(out, nt.cumsum(t, AXIS, dtype=DT))


# -------------------------------------------------------------------------------- sampling

def _pad(space, dtype: str, op: str):
    if space.chance(0.5):
        return None
    if dtype == "bool":
        return space.choice((False, True))
    if is_int(dtype):
        info = np.iinfo(np_dtype(dtype))
        return space.choice((0, 1, 3, int(info.min) if op in ("max", "argmax") else 2))
    return space.choice((0.0, 1.0, -2.5, float("-inf") if op != "prod" else 0.5,
                         float("inf") if op in ("min", "argmin") else 1.5))


def _tile(space, rank: int, warps: int) -> list:
    tile = [space.pow2(1, 256) for _ in range(rank)]
    return fit_budget(tile, warps) if space.chance(0.8) else tile


def sample_reduce(space) -> dict:
    op = space.choice(OPS)
    dtype = space.choice(DTYPES if op == "sum" else DTYPES[:-1])
    rank = 3 if space.chance(0.25) else 2
    warps = space.warps()
    tile = _tile(space, rank, warps)
    max_tiles = 3 if rank == 2 else 2
    shape = [space.extent(t, max_tiles) for t in tile]
    while int(np.prod(shape)) > 1 << 20:          # a few MB at most
        d = shape.index(max(shape))
        shape[d] = (shape[d] + 1) // 2
    axis = space.integer(-rank, rank - 1)
    dt = None
    if op in ("sum", "prod") and space.chance(0.3):
        dt = WIDER.get(dtype)
    dist = {"sum": "normal", "prod": "near1"}.get(op, "ints")
    return {"op": op, "dtype": dtype, "tile": tile, "shape": shape, "axis": axis,
            "keepdims": space.chance(0.5), "pad": _pad(space, dtype, op), "acc_dtype": dt,
            "num_warps": warps, "num_stages": space.stages(),
            "view": space.choice(("plain", "framed", "flip", "transposed")),
            "nan": space.chance(0.15) and not is_int(dtype) and dtype != "bool",
            "dist": dist if space.chance(0.7) else "ints", "seed": space.seed()}


def sample_scan(space) -> dict:
    dtype = space.choice(DTYPES)
    rank = 1 if space.chance(0.3) else 2
    warps = space.warps()
    tile = _tile(space, rank, warps)
    shape = [space.extent(t, 3 if rank == 2 else 6) for t in tile]
    dt = WIDER.get(dtype) if space.chance(0.3) else None
    return {"op": "cumsum", "dtype": dtype, "tile": tile, "shape": shape,
            "axis": space.integer(-rank, rank - 1), "pad": _pad(space, dtype, "sum"),
            "acc_dtype": dt, "num_warps": warps, "num_stages": space.stages(),
            "view": space.choice(("plain", "framed", "flip", "strided")),
            "dist": space.choice(("normal", "ints")), "seed": space.seed()}


# -------------------------------------------------------------------------------- running

def _result_dtype(cfg) -> str:
    if cfg["op"] in ("argmax", "argmin"):
        return "int32"
    if cfg["op"] in ("max", "min"):
        return cfg["dtype"]
    if cfg["acc_dtype"]:
        return cfg["acc_dtype"]
    return "int32" if cfg["dtype"] == "bool" else cfg["dtype"]


def _input(cfg, env):
    x = values(env.rng, cfg["shape"], cfg["dtype"], cfg["dist"])
    if cfg.get("nan") and x.size:
        flat = x.reshape(-1)
        flat[env.rng.integers(0, x.size, max(1, x.size // 50))] = np.nan
    return env.view(x, cfg["view"])


def _reduce_reference(cfg, x: np.ndarray):
    """(want, scale) of the per-tile reduction, shaped like the output array."""
    tile, axis, op = cfg["tile"], cfg["axis"] % len(cfg["tile"]), cfg["op"]
    vals, valid = padded(x, tile, cfg["pad"])
    if cfg["pad"] is not None:       # padded elements are ordinary elements
        valid[:] = True
    integer = vals.dtype.kind == "i"
    t = tiled(vals, tile)
    v = tiled(valid, tile)
    ax = 2 * axis + 1
    res = _result_dtype(cfg)
    if op in ("sum", "prod"):
        ident = 0 if op == "sum" else 1
        w = np.where(v, t, ident)
        if integer:
            red = np.sum(w, ax, keepdims=True) if op == "sum" else np.prod(w, ax, keepdims=True)
            return wrap(red, res), None
        with np.errstate(all="ignore"):
            red = np.sum(w, ax, keepdims=True) if op == "sum" else np.prod(w, ax,
                                                                              keepdims=True)
            scale = np.sum(np.abs(w), ax, keepdims=True) if op == "sum" else np.abs(red)
        return red, scale
    if op in ("max", "min"):
        fill = -np.inf if op == "max" else np.inf
        w = np.where(v, t, fill)
        with np.errstate(invalid="ignore"):
            red = np.max(w, ax, keepdims=True) if op == "max" else np.min(w, ax, keepdims=True)
        return red, None
    fill = -np.inf if op == "argmax" else np.inf
    w = np.where(v, t.astype(np.float64), fill)
    moved = np.moveaxis(w, ax, -1)
    nan = np.isnan(moved)
    idx = np.argmax(moved, -1) if op == "argmax" else np.argmin(moved, -1)
    idx = np.where(nan.any(-1), np.argmax(nan, -1), idx)
    return np.expand_dims(idx, ax), None


def _tolerance(cfg) -> dict:
    res = _result_dtype(cfg)
    if is_int(res):
        return {}
    n = int(np.prod(cfg["tile"]))
    comp = "float64" if res == "float64" else "float32"
    return {"rtol": 2 * rel(res) + (n + 2) * rel(comp) * (cfg["op"] == "prod"),
            "atol": 2 * tiny(res), "srtol": (n + 2) * rel(comp)}


def run_reduce(cfg, env):
    tile, axis = cfg["tile"], cfg["axis"] % len(cfg["tile"])
    rank = len(tile)
    xv = _input(cfg, env)
    x = xv.host
    want, scale = _reduce_reference(cfg, x)
    # the output: one element per tile along the axis, the input's extents elsewhere
    grid = [cdiv(n, t) for n, t in zip(cfg["shape"], tile)]
    out_shape = [grid[d] if d == axis else cfg["shape"][d] for d in range(rank)]
    otile = [1 if d == axis else tile[d] for d in range(rank)]
    ov = env.output(out_shape, _result_dtype(cfg))
    out = env.partition(ov.dev, tuple(otile))
    kernel = jit(reduce2 if rank == 2 else reduce3, cfg)
    env.launch(kernel, xv.dev, out, *tile, *otile, OPS.index(cfg["op"]), cfg["axis"],
               cfg["keepdims"], cfg["pad"], cfg["acc_dtype"])
    key = tuple(slice(0, n) for n in out_shape)
    want = untiled(want)[key]
    scale = None if scale is None else untiled(scale)[key]
    env.check_view(cfg["op"], ov, want, scale=scale, **_tolerance(cfg))


def run_scan(cfg, env):
    tile, axis = cfg["tile"], cfg["axis"] % len(cfg["tile"])
    xv = _input(cfg, env)
    vals, valid = padded(xv.host, tile, cfg["pad"])
    t = tiled(np.where(valid, vals, 0), tile)
    res = _result_dtype(cfg)
    with np.errstate(all="ignore"):
        want = np.cumsum(t, 2 * axis + 1)
        scale = np.cumsum(np.abs(f64(t)), 2 * axis + 1)
    if is_int(res):
        want = wrap(want, res)
    key = tuple(slice(0, n) for n in cfg["shape"])
    ov = env.output(cfg["shape"], res)
    out = env.partition(ov.dev, tuple(tile))
    kernel = jit(scan1 if len(tile) == 1 else scan2, cfg)
    args = (*tile,) if len(tile) == 1 else (*tile, cfg["axis"])
    env.launch(kernel, xv.dev, out, *args, cfg["pad"], cfg["acc_dtype"])
    env.check_view("cumsum", ov, untiled(want)[key], scale=untiled(scale)[key],
                   **_tolerance(cfg))


FAMILIES = [
    Family("reduce", sample_reduce, run_reduce,
           "sum / prod / max / min / argmax / argmin along each axis of 2-D and 3-D tiles"),
    Family("scan", sample_scan, run_scan, "cumsum along each axis of 1-D and 2-D tiles"),
]
