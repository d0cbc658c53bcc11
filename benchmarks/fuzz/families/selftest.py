"""The fuzzer's own test families (hidden: sampled only when named with ``--families``): a
case of each outcome, to check the classification and the process isolation."""

from __future__ import annotations

import os
import time

import numba_tile as nt
from numba_tile.errors import TileTypingError

from .common import Family, f64, values


def scale_rows(x, z: nt.Partition["B"], s, B: nt.Constant):
    nt.store(z, nt.load_like(x, z) * s)


def _scaled(cfg, env, off=0.0):
    n = cfg["n"]
    x = values(env.rng, (n,), "float32")
    xv = env.view(x)
    zv = env.output((n,), "float32")
    env.launch(nt.jit(scale_rows), xv.dev, env.partition(zv.dev, cfg["tile"]), 3.0, cfg["tile"])
    env.check_view("z", zv, f64(x) * 3.0 + off)


def run_ok(cfg, env):
    _scaled(cfg, env)


def run_wrong(cfg, env):
    _scaled(cfg, env, off=1.0)          # a reference that is off by one


def run_refused(cfg, env):
    x = values(env.rng, (cfg["n"],), "float32")
    zv = env.output((cfg["n"],), "float32")
    # a tile extent that is no power of two: refused at launch, naming the kernel
    env.launch(nt.jit(scale_rows), env.view(x).dev, env.partition(zv.dev, 4), 3.0, 3)
    env.check_view("z", zv, f64(x) * 3.0)


def run_unclear(cfg, env):
    from ..case import Refusal
    raise Refusal(TileTypingError("something is wrong"), False, "launch")


def run_crash(cfg, env):
    raise KeyError("an internal error")


def run_abort(cfg, env):
    os.abort()


def run_hang(cfg, env):
    time.sleep(3600)


def _sample(space):
    return {"n": space.integer(1, 300), "tile": space.pow2(1, 64), "seed": space.seed()}


FAMILIES = [Family(f"_{name}", _sample, fn, f"a case that is {name}", hidden=True)
            for name, fn in (("ok", run_ok), ("wrong", run_wrong), ("refused", run_refused),
                             ("unclear", run_unclear), ("crash", run_crash),
                             ("abort", run_abort), ("hang", run_hang))]
