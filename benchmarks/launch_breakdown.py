"""Where the microseconds of a repeated numba_tile launch go, on the GPU machine (CuPy arrays).

For ``benchmarks/launch.py``'s one-block kernels of 1, 3 and 8 arrays (a partition reused),
it times, in windows of ``--launches`` back-to-back calls and one device synchronization
(the median, fastest and slowest of ``--windows`` windows, interleaved):

* the call ``kernel(*arrays, partition, B=N)``;
* the plan's generated runner (``runtime/guards.py``) called directly;
* the runner with CuPy's ``launchKernel`` replaced by a no-op (the host's work alone);
* the runner's guard alone (its checks up to the launch);
* CuPy's ``launchKernel`` of the same function and parameter buffer alone;
* CuPy ``RawKernel`` of the same kernel (``benchmarks/launch.py``'s source);

then empty kernels of 3, 9 and 24 parameters through ``launchKernel`` (whether the driver's
cost grows with the parameter count). The runner's variants are compiled from its own text
(``run.source``) in its own namespace, with only the named part removed.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.append(str(ROOT / "benchmarks"))


def _variant(run, text, **env):
    ns = dict(run.__globals__, **env)
    exec(compile(text, "<launch_breakdown variant>", "exec"), ns)
    return ns["run"]


def _timer(cupy, launches):
    def window(f):
        cupy.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(launches):
            f()
        cupy.cuda.runtime.deviceSynchronize()
        return (time.perf_counter() - t0) / launches * 1e6
    return window


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launches", type=int, default=2000)
    p.add_argument("--windows", type=int, default=9)
    args = p.parse_args(argv)
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no CuPy or no GPU: nothing to measure
        print(f"launch_breakdown: needs a GPU with CuPy ({exc})", file=sys.stderr)
        return 1
    import numpy as np

    import launch as bench
    import numba_tile as nt
    from numba_tile.runtime import launcher
    from numba_tile.runtime.params import ParamBuffer

    n = bench.N
    rng = np.random.default_rng(0)
    raw = bench.raw_kernels(cupy)
    window = _timer(cupy, args.launches)
    cells = []
    for k in (1, 3, 8):
        ins = [cupy.asarray(rng.standard_normal(n).astype(np.float32)) for _ in range(k - 1)]
        z = cupy.asarray(rng.standard_normal(n).astype(np.float32))
        kern = bench.NT_KERNELS[k]
        part = nt.partition(z, n)
        for _ in range(50):
            kern(*ins, part, B=n)
        run = kern._last_plan.run
        env = run.__globals__
        values = (*ins, part, n)
        head = run.source.split("    except Exception:")[0]
        guard = _variant(run, head + "    except Exception:\n        return None\n"
                         "    return objs\n")
        no_launch = _variant(run, run.source, CUPY_LAUNCH=lambda *a: None)
        assert guard(values, 0, "wait") is not None, "the guard refused the call"
        launch_args = (env["FUNCADDR"], env["NB"], 1, 1, env["NT"], 1, 1, env["SH"], 0,
                       env["ADDR"], 0)
        cupy_launch = env["CUPY_LAUNCH"]
        n32 = np.int32(n)
        rk = raw[k]
        cells += [
            (k, "kernel(*arrays, partition, B=N)", lambda kern=kern, ins=ins, part=part:
                kern(*ins, part, B=n)),
            (k, "the plan's runner", lambda run=run, v=values: run(v, 0, "wait")),
            (k, "the runner, launch a no-op", lambda r=no_launch, v=values: r(v, 0, "wait")),
            (k, "the runner's guard alone", lambda g=guard, v=values: g(v, 0, "wait")),
            (k, "CuPy launchKernel alone", lambda f=cupy_launch, a=launch_args: f(*a)),
            (k, "CuPy RawKernel", lambda rk=rk, ins=ins, z=z, n32=n32:
                rk((1,), (n,), (*ins, z, n32))),
        ]
    source = "".join(
        f'extern "C" __global__ void p{len(kinds)}('
        + ", ".join(f"{'float*' if kd == 'ptr' else 'long long'} a{i}"
                    for i, kd in enumerate(kinds)) + ") {}\n"
        for kinds in (["ptr", "i64", "i64"], ["ptr"] * 9, ["ptr", "i64", "i64"] * 8))
    module = cupy.RawModule(code=source)
    fast = launcher._fast_launch or launcher._find_fast_launch()
    for count in (3, 9, 24):
        fn = module.get_function(f"p{count}")
        kinds = {3: ["ptr", "i64", "i64"], 9: ["ptr"] * 9, 24: ["ptr", "i64", "i64"] * 8}[count]
        buf = ParamBuffer(kinds)
        a = (fn.kernel.ptr if hasattr(fn, "kernel") else fn.ptr, 1, 1, 1, 32, 1, 1, 0, 0,
             buf.address, 0)
        cells.append(("-", f"empty kernel of {count} parameters, launchKernel",
                      lambda a=a, buf=buf: fast(*a)))
    times = collections.defaultdict(list)
    for w in range(args.windows):
        shift = w % len(cells)
        for k, name, f in cells[shift:] + cells[:shift]:
            times[(k, name)].append(window(f))
    nt.synchronize()
    print("| arrays | what | us/launch (median) | windows min-max |")
    print("|---|---|---|---|")
    for (k, name), ts in times.items():
        print(f"| {k} | {name} | {statistics.median(ts):.2f} | {min(ts):.2f}-{max(ts):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
