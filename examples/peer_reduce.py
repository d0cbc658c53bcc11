"""An all-reduce by peer reads: each GPU writes only its own result and reads every shard.

One process drives every visible GPU. Shard ``k`` of ``P`` lives on device ``k % G``
(``G`` GPUs); device ``d`` runs ``reduce_shards`` with all ``P`` shards as a group of read-only
tensors and its own output as the only mutable argument, so every device ends with
``sum_k x_k``. The shards of other devices are read through CUDA peer access: numba_tile
launches on the device of the mutable output, checks that this device can read each peer shard
(``cuDeviceCanAccessPeer``, peer access enabled on first use, the access flags of the shard's
memory) and refuses the launch otherwise, before any GPU work. A device's output overlapping a
shard it reads, or an output on another device, is refused as on one GPU (docs/safety.md,
"Several GPUs").

    python examples/peer_reduce.py              # one shard per GPU (at least two shards)
    python examples/peer_reduce.py --shards 5   # five shards spread over the GPUs

The shards and the outputs are float32 arrays of ``n`` elements (PyTorch tensors on the GPUs:
PyTorch is needed on a GPU machine: ``pip install -e ".[torch]"``; without it the example says
so and exits with status 1). On a machine with one GPU every shard is on it (the same
kernel, no peer reads); without a GPU the interpreter runs it on NumPy arrays (and says so).
Each output is checked against NumPy's float64 sum; prints ``peer_reduce: OK``.
"""

from __future__ import annotations

import argparse

import numpy as np

import numba_tile as nt

try:
    from _common import require_torch
except ImportError:
    from examples._common import require_torch


@nt.jit
def reduce_shards(xs, out: nt.Partition["B"], B: nt.Constant):
    """out[tile] = sum over the group's members of member[tile] (float32 accumulation)."""
    acc = nt.load_like(xs[0], out, padding=0)
    for k in nt.static_range(1, len(xs)):
        acc = acc + nt.load_like(xs[k], out, padding=0)
    nt.store(out, acc)


def _devices():
    """``(torch or None, number of GPUs)``; (None, 0) runs the interpreter on NumPy arrays."""
    if not nt.gpu_available():
        return None, 0
    torch = require_torch("peer_reduce", "PyTorch on a GPU machine (tensors on several GPUs)")
    return torch, torch.cuda.device_count()


def main(n: int = 1_000_003, shards: int | None = None, block: int = 1024) -> list[np.ndarray]:
    torch, gpus = _devices()
    places = max(gpus, 1)
    shards = shards if shards is not None else max(places, 2)
    rng = np.random.default_rng()
    hosts = [rng.standard_normal(n).astype(np.float32) for _ in range(shards)]
    expected = np.sum(np.stack(hosts).astype(np.float64), axis=0)
    if torch is None:
        print("peer_reduce: no GPU, running in the interpreter")
        xs = tuple(hosts)
        outs = [np.full(n, np.nan, np.float32)]
        reduce_shards(xs, nt.partition(outs[0], block), block, interpret=True)
        got = outs
    else:
        xs = tuple(torch.from_numpy(h).to(f"cuda:{k % gpus}") for k, h in enumerate(hosts))
        outs = [torch.full((n,), float("nan"), device=f"cuda:{d}") for d in range(gpus)]
        for d in range(gpus):
            # the shards were written by PyTorch's copies on their own devices' streams:
            # numba_tile orders its own launches across devices, not other libraries' work
            torch.cuda.synchronize(d)
        handles = [reduce_shards(xs, nt.partition(out, block), block) for out in outs]
        for h in handles:
            h.sync()
        got = [out.cpu().numpy() for out in outs]
    peers = sum(1 for k in range(shards) if gpus > 1 and k % gpus != 0)
    worst = 0.0
    for d, g in enumerate(got):
        err = float(np.max(np.abs(g - expected)))
        worst = max(worst, err)
        if not np.allclose(g, expected, rtol=1e-5, atol=1e-5 * shards):
            raise SystemExit(f"peer_reduce: WRONG RESULT on device {d} (max |error| {err:.3g})")
    print(f"peer_reduce: n={n}, {shards} shards on {places} device(s), "
          f"{peers} peer shard(s) read by device 0, max |error| = {worst:.3g}")
    print("peer_reduce: OK")
    return got


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_003)
    ap.add_argument("--shards", type=int, default=None)
    main(ap.parse_args().n, ap.parse_args().shards)
