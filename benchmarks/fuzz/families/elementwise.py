"""Elementwise kernels over views: inputs with offsets, negative strides, steps, transposes and
stride 0 (broadcast rows), outputs at offsets, reversed or column-major; 1-D to 3-D tiles of
1 to 256 per axis; masked loads (an input shorter than the output: the store writes only its
valid elements) or a padding value; arithmetic that wraps in every integer dtype, float16 and
bfloat16 rounded after each op, and operands of two dtypes promoted by numba_tile's table."""

from __future__ import annotations

import numpy as np

import numba_tile as nt

from ..arrays import np_dtype
from ..space import fit_budget
from .common import (FLOATS, INTS, Family, compute_dtype, f64, is_int, jit, rel, tiny, values,
                     wrap)

IN_VIEWS = ("plain", "framed", "flip", "strided", "transposed", "broadcast")
OUT_VIEWS = ("plain", "framed", "flip", "transposed")
#: (x dtype, y dtype, promoted dtype): numba_tile's promotion table (numba_tile/dtypes.py)
MIXED = (("float16", "float32", "float32"), ("bfloat16", "float16", "float32"),
         ("int8", "int32", "int32"), ("uint8", "int8", "int16"), ("int32", "float32", "float32"),
         ("uint16", "int32", "int32"), ("float32", "float64", "float64"),
         ("uint8", "uint32", "uint32"), ("int16", "float16", "float16"))
OPS = ("axpy", "select", "maxmul", "divide", "mixed")


def _combine(a, b, s, OP):
    """The elementwise op ``OP`` of the family (a helper: inlined into each kernel)."""
    if OP == 0:
        return a * s + b
    if OP == 1:
        return nt.where(a > b, a, b - a)
    if OP == 2:
        return nt.maximum(a, b) * s
    if OP == 3:
        return a / b
    return a + b


def ew1(x, y, z: nt.Partition["B0"], s, B0: nt.Constant, OP: nt.Constant, PAD: nt.Constant,
        DT: nt.Constant):
    a = nt.load_like(x, z, padding=PAD)
    b = nt.load_like(y, z)
    nt.store(z, nt.astype(_combine(a, b, s, OP), DT))


def ew2(x, y, z: nt.Partition[("B0", "B1")], s, B0: nt.Constant, B1: nt.Constant,
        OP: nt.Constant, PAD: nt.Constant, DT: nt.Constant):
    a = nt.load_like(x, z, padding=PAD)
    b = nt.load_like(y, z)
    nt.store(z, nt.astype(_combine(a, b, s, OP), DT))


def ew3(x, y, z: nt.Partition[("B0", "B1", "B2")], s, B0: nt.Constant, B1: nt.Constant,
        B2: nt.Constant, OP: nt.Constant, PAD: nt.Constant, DT: nt.Constant):
    a = nt.load_like(x, z, padding=PAD)
    b = nt.load_like(y, z)
    nt.store(z, nt.astype(_combine(a, b, s, OP), DT))


KERNELS = {1: ew1, 2: ew2, 3: ew3}


def sample(space) -> dict:
    op = space.choice(OPS)
    if op == "mixed":
        xdt, ydt, out = space.choice(MIXED)
    else:
        xdt = ydt = out = space.choice(FLOATS if op == "divide" else FLOATS + INTS)
    rank = space.choice((1, 2, 2, 3))
    warps = space.warps()
    tile = [space.pow2(1, 256 if rank < 3 else 64) for _ in range(rank)]
    if space.chance(0.8):
        tile = fit_budget(tile, warps)
    max_tiles = {1: 8, 2: 3, 3: 2}[rank]
    shape = [space.extent(t, max_tiles) for t in tile]
    short = [max(0, n - space.integer(1, 5)) if space.chance(0.3) else n for n in shape] \
        if space.chance(0.3) else list(shape)
    pad = None
    if space.chance(0.4):
        pad = space.choice((0, 1, -2)) if is_int(xdt) else space.choice((0.0, 1.5, -2.0))
        if np_dtype(xdt).kind == "u":
            pad = abs(pad)
    return {"op": op, "x_dtype": xdt, "y_dtype": ydt, "out": out, "tile": tile,
            "shape": shape, "x_shape": short, "pad": pad, "num_warps": warps,
            "num_stages": space.stages(),
            "views": [space.choice(IN_VIEWS), space.choice(IN_VIEWS)],
            "out_view": space.choice(OUT_VIEWS), "seed": space.seed()}


def _scalar(cfg):
    if is_int(cfg["x_dtype"]):
        return 3
    return 1.5


def run(cfg, env):
    op, tile, shape = cfg["op"], cfg["tile"], cfg["shape"]
    xdt, ydt, out = cfg["x_dtype"], cfg["y_dtype"], cfg["out"]
    integer = is_int(out)
    x = values(env.rng, cfg["x_shape"], xdt, "wide" if integer and op != "mixed" else "ints")
    y = values(env.rng, shape, ydt, "positive" if op == "divide" else
               ("wide" if integer and op != "mixed" else "ints"))
    xv = env.view(x, cfg["views"][0])
    yv = env.view(y, cfg["views"][1])
    zv = env.output(shape, out, cfg["out_view"])
    s = _scalar(cfg)
    kernel = jit(KERNELS[len(tile)], cfg)
    env.launch(kernel, xv.dev, yv.dev, env.partition(zv.dev, tuple(tile)), s, *tile,
               OPS.index(op), cfg["pad"], out)
    # x grown to the output's shape: its padding, or invalid (not written) without one
    xs = xv.host.astype(np.int64) if is_int(xdt) else f64(xv.host)
    grown = np.full(shape, 0 if cfg["pad"] is None else cfg["pad"], xs.dtype)
    written = np.zeros(shape, bool)
    key = tuple(slice(0, min(a, b)) for a, b in zip(xs.shape, shape))
    grown[key] = xs[key]
    written[key] = True
    if cfg["pad"] is not None:
        written[:] = True
    a = grown
    b = yv.host.astype(np.int64) if integer else f64(yv.host)
    with np.errstate(all="ignore"):
        if op == "axpy":
            want, scale = a * s + b, np.abs(a * s) + np.abs(b)
        elif op == "select":
            want, scale = np.where(a > b, a, b - a), np.abs(a) + np.abs(b)
        elif op == "maxmul":
            want, scale = np.maximum(a, b) * s, np.abs(np.maximum(a, b) * s)
        elif op == "divide":
            want, scale = a / b, np.abs(a / b)
        else:
            want, scale = a + b, np.abs(a) + np.abs(b)
    if integer:
        env.check_view(op, zv, wrap(want, out), written=written)
        return
    # 16-bit floats compute in float32 and round after each op: two roundings per element;
    # float32 division may be the GPU's 2-ulp one
    env.check_view(op, zv, want, written=written, scale=scale,
                   srtol=2 * rel(out) + 8 * rel(compute_dtype(out)), rtol=2 * rel(out),
                   atol=2 * tiny(out))


FAMILIES = [Family("elementwise", sample, run,
                   "elementwise ops over offset, reversed, strided, transposed and broadcast "
                   "views; masked and padded loads; wrapping integers; mixed dtypes")]
