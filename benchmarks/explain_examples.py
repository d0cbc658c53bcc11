"""What each example's kernels compile to: ``Kernel.explain`` of every launch an example makes.

Runs each example's ``main()`` (on the GPU when there is one, else in the interpreter) with
every kernel launch first explained for the launch's own arguments, and prints (or writes, with
``--out``) a Markdown page: per example, each distinct specialization's report. Nothing is
timed; the figures are ptxas's and the device's datasheet's.

Usage (from the repository root):
    python benchmarks/explain_examples.py [--out FILE] [--cc 9.0] [--device H100] [NAME ...]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: examples that need more than their main() can give here (PyTorch, several GPUs)
SKIP = {"_common", "ownership_errors", "data_parallel", "peer_reduce", "attention_torch"}
#: launch options, not kernel arguments
LAUNCH_KEYWORDS = ("stream", "interpret", "on_conflict", "grid", "unchecked")


def _explaining(records: list, cc, device):
    """Patch ``Kernel.__call__`` so that each launch appends its specialization's report
    (once per distinct report) to ``records`` before it runs."""
    from numba_tile.kernel import Kernel
    original = Kernel.__call__

    def call(self, *args, **kwargs):
        kw = {k: v for k, v in kwargs.items() if k not in LAUNCH_KEYWORDS}
        try:
            text = str(self.explain(*args, cc=cc, device=device, **kw))
        except Exception as exc:  # noqa: BLE001 - reported, the launch still runs
            text = f"kernel '{self.__qualname__}': not explained: {type(exc).__name__}: {exc}"
        if text not in records:
            records.append(text)
        return original(self, *args, **kwargs)

    return original, call


def explain_example(name: str, cc, device) -> tuple[list, str]:
    """``(reports, output)`` of running example ``name`` with its launches explained."""
    from numba_tile.kernel import Kernel
    sys.path.insert(0, str(ROOT / "examples"))
    records: list = []
    original, call = _explaining(records, cc, device)
    Kernel.__call__ = call
    out = io.StringIO()
    try:
        module = importlib.import_module(name)
        with contextlib.redirect_stdout(out):
            module.main()
    finally:
        Kernel.__call__ = original
    return records, out.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="examples (default: all)")
    parser.add_argument("--out", help="write the Markdown page here")
    parser.add_argument("--cc", default="9.0", help="compute capability (default 9.0)")
    parser.add_argument("--device", default=None, help="H100, H200, A100 or L40S")
    args = parser.parse_args(argv)
    cc = tuple(int(p) for p in args.cc.split("."))
    names = args.names or sorted(p.stem for p in (ROOT / "examples").glob("*.py")
                                 if p.stem not in SKIP)
    sys.path.insert(0, str(ROOT))
    import numba_tile as nt
    command = " ".join(["python benchmarks/explain_examples.py"] + list(argv or sys.argv[1:]))
    where = ("on the GPU, at the examples' GPU sizes" if nt.gpu_available() else
             "without a GPU: the examples ran in the interpreter on their small ragged inputs, "
             "so these are the specializations of those inputs (a ragged K of 100 float16 "
             "elements is not 16-byte aligned: its loads are not pipelined); on a GPU the "
             "script explains the examples' GPU launches")
    lines = ["# What the examples compile to", "",
             f"`Kernel.explain` of each launch the examples make, for sm_{cc[0]}{cc[1]}"
             f"{' with the ' + args.device + ' datasheet figures' if args.device else ''}: "
             f"`{command}`. Registers and spills are ptxas's (through nvJitLink). Made "
             f"{where}.", ""]
    for name in names:
        records, output = explain_example(name, cc, args.device)
        ran = output.strip().splitlines()[:1]
        lines += [f"## examples/{name}.py", "", f"({ran[0]})" if ran else "", "", "```text"]
        lines += records or ["(no launch)"]
        lines += ["```", ""]
    page = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(page)
    else:
        print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
