"""The fuzzer's records: a JSONL log of every case (one line each: id, family, config,
outcome, message, seconds, details) and a Markdown summary (per family: ok / refused /
unclear / wrong / fault / crash / skipped; the failures with the line that replays each; the
refusals grouped by message; the PTX features the compiled kernels reached)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from .case import FAILURES, OUTCOMES


class Log:
    """Collects results; with ``out``, appends each to ``out/cases.jsonl`` as it comes.

    Args:
        out: the output folder, or None (nothing written).
        header: what the run was (mode, seed, ...), the log's first line.
    """

    def __init__(self, out: Path | None, header: dict):
        self.records: list[dict] = []
        self.header = header
        self.path = None
        self._file = None
        self._line = 0
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            self.path = out / "cases.jsonl"
            self._file = open(self.path, "w")
            self._write({"run": header})

    def _write(self, obj: dict) -> int:
        self._line += 1
        if self._file is not None:
            self._file.write(json.dumps(obj, default=str) + "\n")
            self._file.flush()
        return self._line

    def add(self, case: dict, result) -> dict:
        rec = {"id": case["id"], "family": case["family"], "config": case["config"],
               **result.as_dict()}
        rec["line"] = self._write({k: v for k, v in rec.items() if k != "line"})
        self.records.append(rec)
        return rec

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_case(path: str, line: int) -> dict:
    """The case logged at 1-based ``line`` of a ``cases.jsonl``."""
    with open(path) as f:
        for i, text in enumerate(f, 1):
            if i == line:
                rec = json.loads(text)
                if "family" not in rec:
                    raise ValueError(f"{path}:{line} is the run's header, not a case")
                return {"id": rec["id"], "family": rec["family"], "config": rec["config"]}
    raise ValueError(f"{path} has no line {line}")


def failed(records) -> list[dict]:
    return [r for r in records if r["outcome"] in FAILURES]


def _refusal_class(message: str) -> str:
    """A refusal message without its numbers, names and source lines: its class."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    first = re.sub(r"kernel '[^']*'", "kernel 'K'", first)
    first = re.sub(r"\d+", "N", first)
    return first[:160]


def summary(records, header: dict, stopped: bool = False, log_path=None) -> str:
    """The Markdown summary of a run."""
    fams = sorted({r["family"] for r in records})
    counts = defaultdict(Counter)
    seconds = defaultdict(float)
    for r in records:
        counts[r["family"]][r["outcome"]] += 1
        seconds[r["family"]] += r["seconds"]
    cols = [o for o in OUTCOMES]
    out = [f"# numba_tile configuration fuzzer: {header.get('mode')} mode",
           "",
           f"seed {header.get('seed')}, {len(records)} cases"
           + (f", sanitizer {header['sanitize']}" if header.get("sanitize") else "")
           + (", stopped by the time budget" if stopped else "")
           + (f", {header.get('device')}" if header.get("device") else ""),
           "",
           "| family | cases | " + " | ".join(cols) + " | s/case |",
           "| --- | ---: | " + " | ".join("---:" for _ in cols) + " | ---: |"]
    total = Counter()
    for f in fams:
        c = counts[f]
        n = sum(c.values())
        total.update(c)
        out.append(f"| {f} | {n} | " + " | ".join(str(c[o]) for o in cols)
                   + f" | {seconds[f] / max(1, n):.1f} |")
    n = sum(total.values())
    out.append("| **all** | " + f"{n} | " + " | ".join(f"**{total[o]}**" if o in FAILURES and
                                                       total[o] else str(total[o]) for o in cols)
               + f" | {sum(seconds.values()) / max(1, n):.1f} |")
    bad = failed(records)
    out += ["", f"Failures (wrong, fault, crash, unclear): {len(bad)}"]
    if bad:
        out.append("")
        where = log_path or "cases.jsonl"
        for r in bad[:50]:
            msg = r["message"].strip().splitlines()[0][:200] if r["message"].strip() else ""
            out.append(f"- `{r['outcome']}` {r['id']} (replay: `--replay {where}:{r['line']}`):"
                       f" {msg}")
        if len(bad) > 50:
            out.append(f"- ... and {len(bad) - 50} more")
    refusals = Counter(_refusal_class(r["message"]) for r in records
                       if r["outcome"] == "refused")
    if refusals:
        out += ["", "Refusals by message:", ""]
        for text, k in refusals.most_common(25):
            out.append(f"- {k} x {text}")
    features = defaultdict(Counter)
    for r in records:
        for feat in r.get("detail", {}).get("ptx", []):
            features[r["family"]][feat] += 1
    if features:
        names = sorted({k for c in features.values() for k in c})
        out += ["", "PTX reached (cases whose kernels contain each instruction):", "",
                "| family | " + " | ".join(names) + " |",
                "| --- | " + " | ".join("---:" for _ in names) + " |"]
        for f in sorted(features):
            out.append(f"| {f} | " + " | ".join(str(features[f][k]) for k in names) + " |")
    return "\n".join(out) + "\n"
