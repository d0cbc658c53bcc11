"""Two products with a softmax between them, as attention computes it: ``o = softmax(q k^T *
scale) v`` over key tiles with an online softmax (running row maximum and sum carried by the
loop), causal or not (positions from ``arange``), the row statistics kept with keepdims or as
1-D tiles broadcast back with ``[:, None]`` (Triton's habit), ``exp`` or ``exp2``; and a
row-normalized product ``((x @ y) - rowstat(x @ y)) @ z`` (max, min or sum). Tile shapes 16
to 256, head dimensions 16 to 256, 1 to 16 warps, 1 to 5 stages, float16 and bfloat16,
ragged lengths; about half shaped for Hopper's ``wgmma`` (rows a multiple of 16 per warp)."""

from __future__ import annotations

import numpy as np

import numba_tile as nt

from .common import Family, f64, jit, values

LOG2E = 1.4426950408889634


def online_softmax(q, k, v, o: nt.Partition[("BM", "D")], scale, BM: nt.Constant,
                   BN: nt.Constant, D: nt.Constant, CAUSAL: nt.Constant, FORM: nt.Constant):
    """FORM 0: keepdims statistics and ``exp2``; 1: 1-D statistics broadcast with
    ``[:, None]`` and ``exp``."""
    n_keys = k.shape[0]
    for idx in nt.tiles(o):
        qt = nt.load(q, (idx[0], 0), (BM, D), padding=0)
        acc = nt.zeros((BM, D), nt.float32)
        q_pos = idx[0] * BM + nt.arange(BM)[:, None]
        if FORM == 0:
            m_i = nt.full((BM, 1), -np.inf, nt.float32)
            l_i = nt.zeros((BM, 1), nt.float32)
        else:
            m_i = nt.full((BM,), -np.inf, nt.float32)
            l_i = nt.zeros((BM,), nt.float32)
        for j in range(nt.num_tiles(k, 0, BN)):
            kt = nt.load(k, (j, 0), (BN, D), padding=0)
            vt = nt.load(v, (j, 0), (BN, D), padding=0)
            s = (qt @ kt.T) * scale
            k_pos = j * BN + nt.arange(BN)[None, :]
            keep = k_pos < n_keys
            if CAUSAL:
                keep = keep & (k_pos <= q_pos)
            s = nt.where(keep, s, -np.inf)
            if FORM == 0:
                m_new = nt.maximum(m_i, nt.max(s, axis=1, keepdims=True))
                m_off = nt.where(m_new == -np.inf, 0.0, m_new)
                p = nt.exp2((s - m_off) * LOG2E)
                alpha = nt.exp2((m_i - m_off) * LOG2E)
                l_i = l_i * alpha + nt.sum(p, axis=1, keepdims=True)
                acc = acc * alpha + nt.astype(p, q.dtype) @ vt
            else:
                m_new = nt.maximum(m_i, nt.max(s, 1))
                m_off = nt.where(m_new == -np.inf, 0.0, m_new)
                p = nt.exp(s - m_off[:, None])
                alpha = nt.exp(m_i - m_off)
                l_i = l_i * alpha + nt.sum(p, 1)
                acc = acc * alpha[:, None] + nt.astype(p, q.dtype) @ vt
            m_i = m_new
        if FORM == 0:
            out = nt.where(l_i > 0, acc / l_i, 0.0)
        else:
            out = nt.where(l_i[:, None] > 0, acc / l_i[:, None], 0.0)
        nt.store(o, nt.astype(out, o.dtype), idx)


def normalized_product(x, y, z, o: nt.Partition[("BM", "D")], BM: nt.Constant,
                       BN: nt.Constant, K: nt.Constant, D: nt.Constant, OP: nt.Constant):
    """``o = ((x @ y) - r) @ z * r``, ``r`` the row maximum (OP 0), minimum (1) or sum (2)."""
    for idx in nt.tiles(o):
        s = nt.load(x, (idx[0], 0), (BM, K), padding=0) @ nt.load(y, (0, 0), (K, BN),
                                                                    padding=0)
        if OP == 0:
            r = nt.max(s, axis=1, keepdims=True)
        elif OP == 1:
            r = nt.min(s, axis=1, keepdims=True)
        else:
            r = nt.sum(s, axis=1, keepdims=True)
        p = nt.astype(s - r, x.dtype)
        nt.store(o, (p @ nt.load(z, (0, 0), (BN, D), padding=0)) * r, idx)


DTYPES = ("float16", "bfloat16")


def _shape(space):
    """(BM, BN, D, warps): half shaped for wgmma (BM = 16 * warps * slabs), half anywhere."""
    warps = space.choice((1, 2, 4, 4, 8, 8, 16))
    if space.chance(0.5):
        bm = min(256, 16 * warps * space.choice((1, 1, 2)))
    else:
        bm = space.pow2(16, 256)
    bn = space.pow2(16, 256)
    d = space.choice((16, 32, 64, 64, 128, 128, 256))
    while bm * max(bn, d) // (32 * warps) > 128 and bn > 16:
        bn //= 2                     # the scores and the accumulator within the registers
    while bm * d // (32 * warps) > 128 and d > 16:
        d //= 2
    return bm, bn, d, warps


def sample_online(space) -> dict:
    bm, bn, d, warps = _shape(space)
    n_q = space.extent(bm, 3)
    return {"dtype": space.choice(DTYPES), "tile": [bm, bn, d], "num_warps": warps,
            "num_stages": space.stages(), "n_q": n_q,
            "n_k": n_q if space.chance(0.5) else space.extent(bn, 3),
            "causal": space.chance(0.5), "form": space.choice((0, 1)),
            "scale": float(space.choice((1.0, 0.125, 0.088))), "seed": space.seed()}


def sample_normalized(space) -> dict:
    bm, bn, d, warps = _shape(space)
    return {"dtype": space.choice(DTYPES), "tile": [bm, bn, d],
            "k": space.choice((16, 32, 64)), "num_warps": warps, "num_stages": 1,
            "m": space.extent(bm, 3), "op": space.choice((0, 1, 2)), "seed": space.seed()}


def _reference(q, k, v, scale, causal):
    s = f64(q) @ f64(k).T * scale
    if causal:
        s = np.where(np.arange(s.shape[1])[None, :] <= np.arange(s.shape[0])[:, None], s,
                     -np.inf)
    mx = s.max(1, keepdims=True, initial=-np.inf)
    e = np.exp(s - np.where(np.isfinite(mx), mx, 0.0))
    ls = e.sum(1, keepdims=True)
    p = np.where(ls > 0, e / np.where(ls > 0, ls, 1.0), 0.0)
    return p @ f64(v)


def run_online(cfg, env):
    bm, bn, d = cfg["tile"]
    dt = cfg["dtype"]
    q = values(env.rng, (cfg["n_q"], d), dt, "normal")
    k = values(env.rng, (cfg["n_k"], d), dt, "normal")
    v = values(env.rng, (cfg["n_k"], d), dt, "normal")
    qv, kv, vv = (env.view(a) for a in (q, k, v))
    ov = env.output((cfg["n_q"], d), "float32")
    env.launch(jit(online_softmax, cfg), qv.dev, kv.dev, vv.dev,
               env.partition(ov.dev, (bm, d)), cfg["scale"], bm, bn, d, cfg["causal"],
               cfg["form"])
    want = _reference(q, k, v, cfg["scale"], cfg["causal"])
    # p is rounded to 16 bits before the second product: about 2**-8 (bfloat16) of each
    # weight, over values of unit size
    tol = 2.0 ** -6 if dt == "bfloat16" else 2.0 ** -9
    env.check_view("o", ov, want, atol=4 * tol, rtol=4 * tol)


def run_normalized(cfg, env):
    bm, bn, d = cfg["tile"]
    dt, kd, m = cfg["dtype"], cfg["k"], cfg["m"]
    x = values(env.rng, (m, kd), dt)
    y = values(env.rng, (kd, bn), dt)
    z = values(env.rng, (bn, d), dt)
    ov = env.output((m, d), "float32")
    env.launch(jit(normalized_product, cfg), env.view(x).dev, env.view(y).dev,
               env.view(z).dev, env.partition(ov.dev, (bm, d)), bm, bn, kd, d, cfg["op"])
    s = f64(x) @ f64(y)
    r = {0: s.max(1, keepdims=True), 1: s.min(1, keepdims=True),
         2: s.sum(1, keepdims=True)}[cfg["op"]]
    p = (s - r).astype(x.dtype).astype(np.float64)    # integers: exact in 16 bits up to 256
    want = (p @ f64(z)) * r
    env.check_view("o", ov, want, rtol=2.0 ** -20, atol=0.0,
                   scale=np.abs(p) @ np.abs(f64(z)) * np.abs(r), srtol=2.0 ** -8)


FAMILIES = [
    Family("attention", sample_online, run_online,
           "an online softmax between two products (causal masks from arange, keepdims or "
           "1-D statistics)"),
    Family("row_products", sample_normalized, run_normalized,
           "a product's row statistic broadcast back and fed to a second product"),
]
