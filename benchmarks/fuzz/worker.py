"""One case in a fresh Python process, for the runs under compute-sanitizer:
``python -m benchmarks.fuzz.worker CASE.json MODE RESULT.json`` runs the case written in
``CASE.json`` (``{"id", "family", "config"}``) in mode ``gpu`` or ``cpu`` and writes its
result to ``RESULT.json``."""

from __future__ import annotations

import json
import sys

from .case import execute
from .runner import write_result


def main(argv: list[str]) -> int:
    case_path, mode, result_path = argv
    with open(case_path) as f:
        case = json.load(f)
    write_result(execute(case, mode), result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
