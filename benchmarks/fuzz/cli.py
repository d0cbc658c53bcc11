"""The fuzzer's command line: ``python -m benchmarks.fuzz`` (``--help`` lists the options).

GPU mode (the default) launches each case on the GPU in a process of its own and checks it
against NumPy in float64; CPU mode runs it in numba_tile's interpreter on NumPy arrays
(after the same compile, at compute capability 9.0) and, for a quarter of the cases, also
compiles it for 8.0. ``--sanitize memcheck|racecheck`` runs each case under
compute-sanitizer. The exit status is 1 when any case is wrong, faults, crashes or is refused
without naming the kernel or the argument.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from pathlib import Path

from .space import Space, case_random

DEFAULT_TIMEOUT = {"gpu": 120.0, "cpu": 300.0}
SANITIZER_SLOWDOWN = 5
PTX80_SHARE = 0.25
MIN_BLOCKS_SHARE = 0.1


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.fuzz",
        description="numba_tile's configuration fuzzer: samples kernels and their "
                    "configurations, runs each in a process of its own, checks it against "
                    "NumPy, and classifies it as ok / refused / unclear / wrong / fault / "
                    "crash.")
    p.add_argument("--mode", choices=("gpu", "cpu"), default="gpu",
                   help="gpu: launch on the GPU; cpu: the interpreter plus PTX compiles "
                        "(default gpu)")
    p.add_argument("-n", type=_positive, default=200, metavar="N",
                   help="configurations to run (default 200)")
    p.add_argument("--seed", type=int, default=None,
                   help="the run's seed (default: a random one, printed)")
    p.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1, metavar="J",
                   help="processes at a time (default: the CPU count)")
    p.add_argument("--families", type=_names, default=None, metavar="A,B",
                   help="only these families (--list names them)")
    p.add_argument("--sanitize", choices=("memcheck", "racecheck"), default=None,
                   help="run each case under compute-sanitizer --tool TOOL (GPU mode)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="write DIR/cases.jsonl (every case) and DIR/summary.md")
    p.add_argument("--case", default=None, metavar="ID",
                   help="run one case by its id (family/seed/index) and print it")
    p.add_argument("--replay", default=None, metavar="FILE:LINE",
                   help="run the case logged at LINE of a cases.jsonl, exactly")
    p.add_argument("--pinned", action="store_true",
                   help="run the pinned cases (the failure classes found so far, "
                        "benchmarks/fuzz/pinned.py) before the sample")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="start no case after this many seconds; report what ran")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="per case, after which its process is killed (a fault); default "
                        "120 on the GPU, 300 in CPU mode, 5x that under the sanitizer")
    p.add_argument("--inline", action="store_true",
                   help="run the cases in this process (no isolation: for a debugger)")
    p.add_argument("--list", action="store_true", help="list the families and exit")
    p.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    args = p.parse_args(argv)
    if args.sanitize and args.mode != "gpu":
        p.error("--sanitize: expected --mode gpu (the sanitizer watches GPU work)")
    if args.case and args.replay:
        p.error("--case and --replay: expected one of them")
    return args


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {text!r}")
    return v


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def make_case(seed: int, index: int, families: list[str]) -> dict:
    """Case ``index`` of the run of ``seed`` over ``families`` (each block of
    ``len(families)`` consecutive cases has every family once, in a shuffled order)."""
    import random
    block = random.Random(f"fuzz:{seed}:order:{index // len(families)}")
    order = block.sample(sorted(families), len(families))
    return draw(order[index % len(families)], seed, index)


def draw(family: str, seed: int, index: int) -> dict:
    """The case of id ``family/seed/index``."""
    from .families import FAMILIES
    rng = case_random(seed, index, family)
    try:
        cfg = FAMILIES[family].sample(Space(rng))
    except Exception as e:   # noqa: BLE001 - a sampler's bug is that case's crash, not the run's
        cfg = {"sample_error": f"{type(e).__name__}: {e}"}
    cfg["ptx80"] = rng.random() < PTX80_SHARE
    if rng.random() < MIN_BLOCKS_SHARE:      # the register cap of min_blocks_per_sm
        cfg["min_blocks"] = rng.choice((1, 2, 4))
    return {"id": f"{family}/{seed}/{index}", "family": family, "config": cfg}


def parse_id(text: str) -> dict:
    """The case of an id ``family/seed/index`` (or ``pinned/NAME``)."""
    from .families import FAMILIES
    if text.startswith("pinned/"):
        from . import pinned
        name = text[len("pinned/"):]
        if name not in pinned.PINNED:
            raise SystemExit(f"--case: no pinned case {name!r} ({', '.join(pinned.PINNED)})")
        return pinned.case(name)
    try:
        family, seed, index = text.rsplit("/", 2)
        seed, index = int(seed), int(index)
    except ValueError:
        raise SystemExit(f"--case: expected family/seed/index, got {text!r}") from None
    if family not in FAMILIES:
        raise SystemExit(f"--case: unknown family {family!r} (--list names them)")
    return draw(family, seed, index)


def main(argv=None) -> int:
    args = parse_args(argv)
    # every case compiles: no disk cache (it would skip the lowering of a kernel seen before);
    # the processes of the cases inherit this (the forkserver starts with it)
    saved = os.environ.get("NUMBA_TILE_CACHE_DIR")
    os.environ["NUMBA_TILE_CACHE_DIR"] = ""
    try:
        return _main(args, argv)
    finally:
        if saved is None:
            os.environ.pop("NUMBA_TILE_CACHE_DIR", None)
        else:
            os.environ["NUMBA_TILE_CACHE_DIR"] = saved


def _main(args, argv) -> int:
    from .families import FAMILIES, public
    if args.list:
        for name in public():
            print(f"{name:16s} {FAMILIES[name].doc}")
        return 0
    families = args.families or public()
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        print(f"--families: unknown {', '.join(unknown)} (--list names them)", file=sys.stderr)
        return 2
    device = None
    if args.mode == "gpu":
        import numba_tile as nt
        if not nt.gpu_available():
            print("the GPU mode needs a CUDA GPU (none found); use --mode cpu", file=sys.stderr)
            return 2
        device = _device_name()
    seed = args.seed if args.seed is not None else secrets.randbelow(2 ** 31)
    if args.replay:
        from .report import read_case
        path, _, line = args.replay.rpartition(":")
        cases = [read_case(path, int(line))]
    elif args.case:
        cases = [parse_id(args.case)]
    else:
        cases = (make_case(seed, i, families) for i in range(args.n))
        if args.pinned:
            import itertools

            from . import pinned
            cases = itertools.chain(pinned.all_cases(), cases)
    single = bool(args.replay or args.case)
    timeout = args.timeout or DEFAULT_TIMEOUT[args.mode] * (SANITIZER_SLOWDOWN if args.sanitize
                                                             else 1)
    header = {"mode": args.mode, "seed": None if single else seed, "n": args.n,
              "families": families, "sanitize": args.sanitize, "jobs": args.jobs,
              "device": device,
              "argv": sys.argv[1:] if argv is None else list(argv)}
    if not single:
        print(f"fuzz: {args.mode} mode, seed {seed} (again: --seed {seed}), {args.n} cases, "
              f"{args.jobs} jobs" + (f", sanitizer {args.sanitize}" if args.sanitize else ""),
              flush=True)
    return run(cases, args, header, timeout, single)


def _device_name() -> str | None:
    """The name of GPU 0 (for the summary: a run names its machine), None if unknown."""
    try:
        from cuda.bindings import driver
        err, name = driver.cuDeviceGetName(128, 0)
        return name.split(b"\0")[0].decode() if not err else None
    except Exception:   # noqa: BLE001 - a courtesy
        return None


def run(cases, args, header: dict, timeout: float, single: bool) -> int:
    from .report import Log, failed, summary
    from .runner import Runner
    log = Log(args.out, header)
    t0 = time.monotonic()
    done = [0]

    def on_result(case, result):
        rec = log.add(case, result)
        done[0] += 1
        if single:
            print(f"case {case['id']}\nconfig {case['config']}\noutcome {result.outcome} "
                  f"({result.seconds:.1f} s)\n{result.message}\n{result.detail}", flush=True)
        elif result.outcome in ("unclear", "wrong", "fault", "crash"):
            where = f" ({log.path}:{rec['line']})" if log.path else ""
            msg = result.message.strip().splitlines()[0][:300] if result.message.strip() else ""
            print(f"FAIL {result.outcome} {case['id']}{where}: {msg}", flush=True)
        elif not args.quiet and done[0] % 50 == 0:
            print(f"  {done[0]} cases, {time.monotonic() - t0:.0f} s", flush=True)

    stopped = False
    if args.inline:
        from .case import execute
        for case in cases:
            if args.time_budget is not None and time.monotonic() - t0 > args.time_budget:
                stopped = True
                break
            on_result(case, execute(case, args.mode))
    else:
        runner = Runner(args.mode, 1 if single else args.jobs, timeout, args.sanitize)
        try:
            stopped = not runner.run(cases, on_result, args.time_budget)
        finally:
            runner.close()
    log.close()
    header["seconds"] = round(time.monotonic() - t0, 1)
    text = summary(log.records, header, stopped, log.path)
    if not single:
        print(text)
        print(f"{len(log.records)} cases in {header['seconds']} s")
    if args.out is not None:
        (args.out / "summary.md").write_text(text)
    return 1 if failed(log.records) else 0
