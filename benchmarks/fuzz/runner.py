"""Runs cases, each in a process of its own, so that a fault (an illegal address that poisons
the CUDA context, an abort, a hung kernel) ends only that process.

Processes are forked from a ``multiprocessing`` forkserver that has imported NumPy, Numba and
numba_tile (and the families' kernels) once, without initializing CUDA: a case then starts in
milliseconds and its compiles dominate. Under ``--sanitize`` each case is instead a fresh
``python -m benchmarks.fuzz.worker`` under ``compute-sanitizer --tool TOOL --error-exitcode
99``. Each child writes its :class:`~benchmarks.fuzz.case.Result` to a JSON file and its
output to a log; a child that exits without a result, is killed at its timeout, or exits 99
under the sanitizer is a ``fault`` (with the log's tail as its message).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .case import Result

ROOT = Path(__file__).resolve().parents[2]
PRELOAD = ["numpy", "numba", "numba.cuda", "numba_tile", "benchmarks.fuzz.case",
           "benchmarks.fuzz.families"]
SANITIZER_EXIT = 99
POLL_S = 0.02


def child_main(case: dict, mode: str, result_path: str, log_path: str) -> None:
    """A forked child: its output to ``log_path``, its result to ``result_path``."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    from .case import execute
    result = execute(case, mode)
    write_result(result, result_path)
    sys.stdout.flush()
    sys.stderr.flush()


def write_result(result: Result, path: str) -> None:
    """Writes ``result`` as JSON, atomically (a reader never sees half a file)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(result.as_dict(), f, default=str)
    os.replace(tmp, path)


@dataclass
class Job:
    """A running case."""

    case: dict
    proc: object
    started: float
    deadline: float
    result_path: str
    log_path: str
    sanitized: bool

    def exitcode(self):
        if self.sanitized:
            return self.proc.poll()
        return self.proc.exitcode

    def kill(self) -> None:
        try:
            if self.sanitized:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        except (ProcessLookupError, OSError):
            pass

    def reap(self):
        """Waits for the process; returns its exit code (negative: the signal)."""
        if self.sanitized:
            return self.proc.wait()
        self.proc.join()
        code = self.proc.exitcode
        self.proc.close()
        return code


class Runner:
    """Runs cases in processes of their own, ``jobs`` at a time.

    Args:
        mode: ``"gpu"`` or ``"cpu"``.
        jobs: processes at a time.
        timeout: seconds a case may run before it is killed (a ``fault``).
        sanitize: None, or a compute-sanitizer tool (``"memcheck"``, ``"racecheck"``).
        workdir: where results and logs go (a temporary folder by default).
    """

    def __init__(self, mode: str, jobs: int, timeout: float, sanitize: str | None = None,
                 workdir: str | None = None):
        self.mode = mode
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.sanitize = sanitize
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="numba_tile_fuzz_")
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._ctx = None
        self._count = 0

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _context(self):
        if self._ctx is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)
            self._ctx = ctx
        return self._ctx

    def _start(self, case: dict) -> Job:
        self._count += 1
        stem = self.workdir / f"case{self._count}"
        result_path, log_path = f"{stem}.json", f"{stem}.log"
        now = time.monotonic()
        if self.sanitize:
            case_path = f"{stem}.case.json"
            with open(case_path, "w") as f:
                json.dump(case, f)
            # --report-api-errors no: the CUDA bindings probe driver entry points that this
            # driver lacks (cuGetProcAddress answers CUDA_ERROR_INVALID_VALUE, which the
            # bindings expect); what counts is what the kernels do to memory
            cmd = ["compute-sanitizer", "--tool", self.sanitize, "--report-api-errors", "no",
                   "--error-exitcode", str(SANITIZER_EXIT), sys.executable, "-m", "benchmarks.fuzz.worker",
                   case_path, self.mode, result_path]
            log = open(log_path, "w")
            try:
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                        env=_child_environment(), start_new_session=True)
            finally:
                log.close()
            return Job(case, proc, now, now + self.timeout, result_path, log_path, True)
        proc = self._context().Process(target=child_main,
                                       args=(case, self.mode, result_path, log_path),
                                       daemon=True)
        proc.start()
        return Job(case, proc, now, now + self.timeout, result_path, log_path, False)

    def _finish(self, job: Job, code, timed_out: bool) -> Result:
        seconds = time.monotonic() - job.started
        result = None
        if os.path.exists(job.result_path):
            with open(job.result_path) as f:
                d = json.load(f)
            result = Result(d["outcome"], d["message"], d["seconds"], d.get("detail", {}))
        tail = _tail(job.log_path)
        if timed_out:
            result = Result("fault", f"timeout: killed after {self.timeout:.0f} s\n{tail}",
                            seconds, {"timeout": True})
        elif job.sanitized and code == SANITIZER_EXIT:
            report = _sanitizer_report(job.log_path)
            before = f" (the case itself: {result.outcome})" if result else ""
            result = Result("fault", f"compute-sanitizer {self.sanitize} reported errors"
                                     f"{before}:\n{report}", seconds,
                            {"sanitizer": self.sanitize})
        elif result is None:
            how = (f"killed by signal {-code}" if code is not None and code < 0
                   else f"exit code {code}")
            result = Result("fault", f"the case's process died ({how}) without a result\n{tail}",
                            seconds, {"exitcode": code})
        elif code not in (0, None):
            result = Result("fault", f"the case's process exited with code {code} after its "
                                     f"result ({result.outcome}: {result.message})\n{tail}",
                            seconds, {"exitcode": code})
        for p in (job.result_path, job.log_path, f"{job.result_path[:-5]}.case.json"):
            try:
                os.unlink(p)
            except OSError:
                pass
        return result

    def run(self, cases, on_result, time_budget: float | None = None) -> bool:
        """Runs ``cases`` (an iterable of case dicts), calling ``on_result(case, result)`` as
        each finishes (in the order they finish).

        Args:
            time_budget: seconds after which no new case starts (the running ones finish).

        Returns:
            True when every case ran, False when the time budget stopped the sampling.
        """
        started = time.monotonic()
        pending = iter(cases)
        running: list[Job] = []
        exhausted = False
        stopped = False
        while True:
            while not exhausted and not stopped and len(running) < self.jobs:
                if time_budget is not None and time.monotonic() - started > time_budget:
                    stopped = True
                    break
                case = next(pending, None)
                if case is None:
                    exhausted = True
                    break
                running.append(self._start(case))
            if not running:
                break
            time.sleep(POLL_S)
            now = time.monotonic()
            for job in list(running):
                code = job.exitcode()
                timed_out = code is None and now > job.deadline
                if code is None and not timed_out:
                    continue
                if timed_out:
                    job.kill()
                code = job.reap()
                running.remove(job)
                on_result(job.case, self._finish(job, code, timed_out))
        return not stopped


def _child_environment() -> dict:
    env = dict(os.environ)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    return env


def _tail(path: str, lines: int = 30) -> str:
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _sanitizer_report(path: str, lines: int = 40) -> str:
    """The sanitizer's own lines (``========= ...``) of a log, the first errors first."""
    try:
        with open(path, errors="replace") as f:
            text = f.read().splitlines()
    except OSError:
        return ""
    mine = [line for line in text if line.startswith("=========")]
    return "\n".join(mine[:lines]) or _tail(path)
