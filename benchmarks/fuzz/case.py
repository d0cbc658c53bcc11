"""One case, run in the current process: its arrays, its launches, its checks against NumPy,
and its outcome.

Outcomes:

* ``ok``: every check passed;
* ``refused``: a numba_tile error (``numba_tile.errors``) raised before any GPU work, whose
  message names the kernel or the argument; ``unclear`` when it names neither;
* ``wrong``: a value differs from the NumPy float64 reference beyond the dtype's tolerance,
  or a write landed outside the output view (the message gives the check, the largest error
  and the first differing index);
* ``fault``: a CUDA error (an illegal address, a launch failure), or (seen by the runner) the
  process died, timed out, or the sanitizer reported an error;
* ``crash``: any other exception (an internal error: a ``KeyError`` from typing, an
  ``nvvmError``, a numba_tile error raised after the launch was queued);
* ``skipped``: the case needs a library that is missing here (PyTorch for bfloat16 on the GPU).
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from .arrays import Arrays, Skip, View, guard_intact, is_float

OUTCOMES = ("ok", "refused", "unclear", "wrong", "fault", "crash", "skipped")
FAILURES = ("unclear", "wrong", "fault", "crash")
#: PTX instructions whose presence the CPU mode records per case (the summary's coverage)
FEATURES = {"wgmma": "wgmma.mma_async", "tma": "cp.async.bulk.tensor",
            "cp.async": "cp.async.c", "mma.sync": "mma.sync", "ldmatrix": "ldmatrix"}
CUDA_ERROR_MARKS = ("CUDA_ERROR", "cudaError", "CUDA error", "CUDARuntimeError",
                    "CUDADriverError", "illegal memory access", "an illegal instruction")


@dataclass
class Result:
    """What a case gave: its outcome, a one-paragraph message, details, and the seconds it
    took (the whole case: arrays, compiles, launches, checks)."""

    outcome: str
    message: str = ""
    seconds: float = 0.0
    detail: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"outcome": self.outcome, "message": self.message,
                "seconds": round(self.seconds, 3), "detail": self.detail}


class Refusal(Exception):
    """Raised by :meth:`Env.launch` for a numba_tile error before any GPU work."""

    def __init__(self, exc: BaseException, clear: bool, where: str):
        super().__init__(str(exc))
        self.exc = exc
        self.clear = clear
        self.where = where


class Fault(Exception):
    """A CUDA error seen by the case (raised by :meth:`Env.launch`)."""


class Crash(Exception):
    """An unexpected exception inside a launch, kept with its phase."""

    def __init__(self, exc: BaseException, where: str):
        super().__init__(f"{type(exc).__name__} {where}: {exc}")
        self.exc = exc


class Env:
    """What a family's ``run`` gets: the data generator, the arrays, and the launch.

    Args:
        cfg: the case's configuration (``cfg["seed"]`` seeds ``rng``).
        mode: ``"gpu"`` or ``"cpu"``.
        ptx80: in CPU mode, also compile each launch's kernel for compute capability 8.0.
    """

    def __init__(self, cfg: dict, mode: str, ptx80: bool = False):
        self.cfg = cfg
        self.mode = mode
        self.gpu = mode == "gpu"
        self.rng = np.random.default_rng(cfg.get("seed", 0))
        self.arrays = Arrays(self.gpu)
        self.ptx80 = ptx80 and not self.gpu
        self.checks: list[str] = []
        self.failures: list[dict] = []
        self.notes: list[str] = []
        self.launches = 0
        self.features: list[str] = []

    # -- arrays -----------------------------------------------------------------------------

    def view(self, values: np.ndarray, kind: str = "plain", writable: bool = False,
             align: int = 1) -> View:
        """A view of kind ``kind`` holding ``values`` (:meth:`Arrays.view`)."""
        return self.arrays.view(values, kind, self.rng, writable, align)

    def output(self, shape, dtype: str, kind: str = "plain", align: int = 1) -> View:
        """An output view of ``shape`` filled with the guard value (NaN, or the dtype's
        largest integer): an element the kernel should write and does not shows."""
        from .arrays import guard_value, np_dtype
        dt = np_dtype(dtype)
        return self.view(np.full(shape, guard_value(dt), dt), kind, writable=True, align=align)

    # -- launches ---------------------------------------------------------------------------

    def partition(self, array, shape, **kwargs):
        """``nt.partition``; a numba_tile error is a refusal (it names the argument)."""
        import numba_tile as nt
        from numba_tile.errors import TileError
        try:
            return nt.partition(array, shape, **kwargs)
        except TileError as e:
            text = str(e)
            raise Refusal(e, "argument '" in text or "tile_shape" in text, "partition") from e

    def launch(self, kernel, *args, **kwargs):
        """Launches ``kernel`` and waits for it (GPU), or runs it in the interpreter (CPU,
        then compiles it for compute capability 8.0 when asked). A numba_tile error from the
        call is a :class:`Refusal`; a CUDA error a :class:`Fault`; anything else from the
        call or the wait a :class:`Crash`."""
        from numba_tile.errors import TileError
        names = [p.name for p in kernel.params]
        self.launches += 1
        try:
            handle = kernel(*args, interpret=not self.gpu, **kwargs)
        except TileError as e:
            raise Refusal(e, names_kernel(e, kernel.__name__, names), "launch") from e
        except Exception as e:   # noqa: BLE001 - classified
            if is_cuda_error(e):
                raise Fault(f"{type(e).__name__} at launch: {e}") from e
            raise Crash(e, "at launch") from e
        try:
            handle.sync()
        except Exception as e:   # noqa: BLE001 - classified
            if is_cuda_error(e):
                raise Fault(f"{type(e).__name__} at sync: {e}") from e
            raise Crash(e, "at sync") from e
        if not self.gpu:
            self._features(kernel, args, kwargs)
        if self.ptx80:
            try:
                kernel.ptx(*args, cc=(8, 0), **kwargs)
            except TileError as e:
                if not names_kernel(e, kernel.__name__, names):
                    raise Refusal(e, False, "ptx cc 8.0") from e
                self.notes.append(f"cc 8.0 refused: {first_line(str(e))}")
            except Exception as e:   # noqa: BLE001 - classified
                raise Crash(e, "compiling for cc 8.0") from e
        return handle

    def _features(self, kernel, args, kwargs) -> None:
        """The PTX instructions the kernel reached (its compile for 9.0, cached by the
        interpreter's launch), for the summary's coverage table; then that PTX assembled
        for sm_90 by nvJitLink where it is installed (no GPU needed): what ptxas refuses
        (too few registers for an instruction, C7602) is a crash here as on the GPU."""
        try:
            ptx = kernel.ptx(*args, **kwargs)
        except Exception:   # noqa: BLE001 - coverage only; the launch passed
            return
        for name, mark in FEATURES.items():
            if mark in ptx and name not in self.features:
                self.features.append(name)
        from numba_tile.runtime import linker
        try:
            linker.assemble(ptx, (9, 0))
        except Exception as e:   # noqa: BLE001 - classified
            raise Crash(e, "assembling for sm_90") from e

    # -- checks -----------------------------------------------------------------------------

    def check(self, name: str, got: np.ndarray, want: np.ndarray, *, rtol: float = 0.0,
              atol: float = 0.0, scale: np.ndarray | None = None, srtol: float = 0.0) -> bool:
        """Compares ``got`` (the kernel's values) with ``want`` (float64, or exact integers).

        Passes where ``|got - want| <= atol + rtol * |want| + srtol * scale``, NaN matching
        NaN and infinities matching exactly; integers and bools compare exactly. Float
        references are rounded to ``got``'s dtype first (an overflow to inf is expected).

        Returns:
            True when it passed (a failure is recorded, and the case is ``wrong``).
        """
        self.checks.append(name)
        got = np.asarray(got)
        want = np.asarray(want)
        if got.shape != want.shape:
            self.failures.append({"check": name, "error": f"shape {got.shape} != {want.shape}"})
            return False
        if got.size == 0:
            return True
        if not is_float(got.dtype):
            g = got.astype(np.int64) if got.dtype.kind != "u" else got.astype(np.uint64)
            w = np.asarray(want)
            bad = g != w.astype(g.dtype)
            if bad.any():
                i = tuple(int(v) for v in np.argwhere(bad)[0])
                self.failures.append({"check": name, "index": i, "got": _num(got[i]),
                                      "want": _num(want[i]), "count": int(bad.sum()),
                                      "max_error": _num(np.abs(g.astype(np.float64)
                                                               - w.astype(np.float64)).max())})
                return False
            return True
        g = got.astype(np.float64)
        with np.errstate(all="ignore"):
            w = np.asarray(want, np.float64)
            if got.dtype.itemsize == 1:       # FP8 conversions saturate (cvt.rn.satfinite)
                top = float(ml_dtypes.finfo(got.dtype).max)    # np.finfo knows no FP8
                w = np.where(np.isnan(w), w, np.clip(w, -top, top))
            w = w.astype(got.dtype).astype(np.float64)
            err = np.abs(g - w)
            bound = atol + rtol * np.abs(w)
            if scale is not None:
                bound = bound + srtol * np.asarray(scale, np.float64)
            same = (g == w) | (np.isnan(g) & np.isnan(w)) | (err <= bound)
        bad = ~same
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            finite = np.where(bad & np.isfinite(err), err, 0)
            self.failures.append({"check": name, "index": i, "got": _num(g[i]),
                                  "want": _num(w[i]), "count": int(bad.sum()),
                                  "max_error": _num(finite.max() if finite.size else 0.0),
                                  "bound": _num(np.broadcast_to(bound, g.shape)[i])})
            return False
        return True

    def check_view(self, name: str, view: View, want: np.ndarray, written=None, **tol) -> bool:
        """Reads ``view`` back; checks it against ``want`` where ``written`` (a bool mask, or
        everywhere), that the rest of it still holds what it held, and that nothing outside
        it in its base changed."""
        got, base = self.arrays.read(view)
        ok, message = guard_intact(view, base)
        if not ok:
            self.checks.append(f"{name}: guard")
            self.failures.append({"check": f"{name}: guard", "error": message})
        want = np.asarray(want, np.float64 if is_float(got.dtype) else None)
        if written is not None:
            written = np.broadcast_to(np.asarray(written, bool), got.shape)
            before = view.host
            keep = np.where(written, want, before.astype(want.dtype) if is_float(got.dtype)
                            else before)
            want = keep
        return self.check(name, got, want, **tol) and ok


def names_kernel(exc: BaseException, kernel: str, params) -> bool:
    """Whether a refusal's message names the kernel or one of its parameters."""
    text = str(exc)
    if f"'{kernel}'" in text or f"{kernel}(" in text or f"kernel {kernel}" in text:
        return True
    return any(f"'{p}'" in text or f'"{p}"' in text for p in params)


def is_cuda_error(exc: BaseException) -> bool:
    """A CUDA error from the driver, CuPy or PyTorch (by class or message)."""
    from numba_tile.runtime.driver import CudaDriverError
    if isinstance(exc, CudaDriverError):
        return True
    text = f"{type(exc).__name__}: {exc}"
    return any(m in text for m in CUDA_ERROR_MARKS)


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _num(v):
    v = np.asarray(v).item()
    if isinstance(v, float) and not np.isfinite(v):
        return repr(v)
    return v


def execute(case: dict, mode: str) -> Result:
    """Runs one case here (no process of its own): sets the case's environment switches,
    runs its family, and classifies what happened.

    Args:
        case: ``{"id", "family", "config"}`` (the config as the family drew it).
        mode: ``"gpu"`` or ``"cpu"``.
    """
    cfg = case["config"]
    saved = {k: os.environ.get(k) for k in cfg.get("env", {})}
    os.environ.update({k: str(v) for k, v in cfg.get("env", {}).items()})
    try:
        return _execute(case, mode)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _execute(case: dict, mode: str) -> Result:
    from .families import FAMILIES
    t0 = time.perf_counter()
    cfg = case["config"]
    if "sample_error" in cfg:
        return Result("crash", f"the family's sampler failed: {cfg['sample_error']}")
    env = Env(cfg, mode, ptx80=bool(cfg.get("ptx80")))
    family = FAMILIES[case["family"]]
    try:
        family.run(cfg, env)
    except Refusal as r:
        if env.failures:          # an earlier launch of the case gave wrong values
            return _wrong(env, time.perf_counter() - t0)
        text = str(r.exc)
        outcome = "refused" if r.clear else "unclear"
        return Result(outcome, f"{type(r.exc).__name__} ({r.where}): {text}",
                      time.perf_counter() - t0, {"error": type(r.exc).__name__})
    except Fault as f:
        return Result("fault", str(f), time.perf_counter() - t0)
    except Skip as s:
        return Result("skipped", str(s), time.perf_counter() - t0)
    except Crash as c:
        return Result("crash", f"{c}\n{_trace(c.exc)}", time.perf_counter() - t0,
                      {"error": type(c.exc).__name__})
    except Exception as e:   # noqa: BLE001 - the family's own code or a host-side op
        if is_cuda_error(e):
            return Result("fault", f"{type(e).__name__}: {e}", time.perf_counter() - t0)
        return Result("crash", f"{type(e).__name__} in the case: {e}\n{_trace(e)}",
                      time.perf_counter() - t0, {"error": type(e).__name__})
    seconds = time.perf_counter() - t0
    if env.failures:
        return _wrong(env, seconds)
    detail = {"checks": len(env.checks), "launches": env.launches}
    if env.features:
        detail["ptx"] = env.features
    if env.notes:
        detail["notes"] = env.notes
    if not env.checks:
        return Result("crash", "the case checked nothing (a family bug)", seconds, detail)
    return Result("ok", "; ".join(env.notes), seconds, detail)


def _wrong(env: Env, seconds: float) -> Result:
    f = env.failures[0]
    detail = {"checks": len(env.checks), "launches": env.launches,
              "failures": env.failures[:8]}
    text = ", ".join(f"{k}={v}" for k, v in f.items() if k != "check")
    return Result("wrong", f"{f['check']}: {text}", seconds, detail)


def _trace(exc: BaseException, limit: int = 6) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(lines)
    tail = text.strip().splitlines()[-2 * limit:]
    return "\n".join(tail)
