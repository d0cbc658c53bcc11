"""Where a case's arrays live, and the views it hands to kernels.

On the GPU: CuPy arrays, PyTorch tensors for bfloat16 and FP8 (CuPy and the CUDA Array
Interface have neither); in the interpreter: NumPy arrays. Every array a kernel sees is a
view of a larger *base* filled around it with a guard value (NaN, or an integer extreme), so
a read past the view shows in the result and a write past it shows in the base:

* ``plain``: the base is the array itself (no guard);
* ``framed``: a block in the middle of the base (an offset and a row stride longer than the
  row);
* ``flip``: the same, walked backwards along every axis (negative strides; CuPy and NumPy
  only, a PyTorch dtype gets ``framed``);
* ``strided``: every second or third element along the last axis;
* ``transposed``: the transpose of a contiguous array of the reversed shape;
* ``broadcast``: stride 0 along the first axis (read-only inputs only): every row the same.

The same index expression is applied to the host base and the device base, so the host
copy of a view is the view of the host copy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numba_tile.dtypes import BFLOAT16_NP, FLOAT8_E4M3FN_NP, FLOAT8_E5M2_NP

#: relative rounding error of one rounding to each float dtype (half an ulp)
EPS = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "float16": 2.0 ** -11,
       "bfloat16": 2.0 ** -8, "float8_e4m3fn": 2.0 ** -4, "float8_e5m2": 2.0 ** -3}
#: smallest normal of each float dtype (absolute error allowed near zero)
TINY = {"float64": 2.0 ** -1022, "float32": 2.0 ** -126, "float16": 2.0 ** -14,
        "bfloat16": 2.0 ** -126, "float8_e4m3fn": 2.0 ** -6, "float8_e5m2": 2.0 ** -14}
VIEWS = ("plain", "framed", "flip", "strided", "transposed", "broadcast")
TORCH_DTYPES = (np.dtype(BFLOAT16_NP), np.dtype(FLOAT8_E4M3FN_NP), np.dtype(FLOAT8_E5M2_NP))
NP_DTYPES = {"float8_e4m3fn": FLOAT8_E4M3FN_NP, "float8_e5m2": FLOAT8_E5M2_NP,
             "bfloat16": BFLOAT16_NP}


class Skip(Exception):
    """The case cannot run here (a library it needs is missing): outcome ``skipped``."""


def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a numba_tile dtype name."""
    return np.dtype(NP_DTYPES.get(name, name))


def needs_torch(dtype) -> bool:
    """True for the dtypes whose device arrays PyTorch makes (bfloat16, FP8)."""
    return np.dtype(dtype) in TORCH_DTYPES


def is_float(dtype) -> bool:
    """True for the float dtypes, bfloat16 and FP8 included (ml_dtypes' kind is not 'f')."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt in TORCH_DTYPES


def guard_value(dtype) -> float | int:
    """What surrounds a view in its base: NaN for floats (NaN for FP8 too), the largest
    value for integers, True for bool."""
    dt = np.dtype(dtype)
    if is_float(dt):
        return float("nan")
    if dt.kind == "b":
        return True
    return int(np.iinfo(dt).max)


def effective_view(kind: str, dtype, writable: bool = False) -> str:
    """``kind`` as it can be made for ``dtype``: negative strides need CuPy (PyTorch has
    none), so a PyTorch dtype's ``flip`` is ``framed``; an output is never ``broadcast``. The
    same in both modes, so a case is the same case on the GPU and in the interpreter."""
    if kind == "flip" and needs_torch(dtype):
        return "framed"
    if kind == "broadcast" and writable:
        return "framed"
    return kind


@dataclass
class View:
    """A view handed to a kernel: ``dev`` (device or interpreter array), ``base_dev`` (its
    base), ``key`` (the index expression from the base), ``host`` (host values of the view),
    ``base_host`` (host values of the base as it was made)."""

    dev: object
    base_dev: object
    key: tuple
    host: np.ndarray
    base_host: np.ndarray
    kind: str
    transposed: bool = False


class Arrays:
    """Makes device arrays and reads them back.

    Args:
        gpu: True for device arrays (CuPy, PyTorch), False for NumPy (interpreter).
    """

    def __init__(self, gpu: bool):
        self.gpu = gpu

    # -- plain copies ---------------------------------------------------------------------

    def put(self, host: np.ndarray):
        """A copy of ``host`` where kernels read it."""
        host = np.ascontiguousarray(host)
        if not self.gpu:
            return host.copy()
        if needs_torch(host.dtype):
            torch = _torch()
            bits = torch.from_numpy(host.view(np.uint8 if host.itemsize == 1 else np.int16).copy())
            return bits.view(_torch_dtype(host.dtype)).to("cuda")
        cupy = _cupy()
        return cupy.asarray(host)

    def get(self, arr) -> np.ndarray:
        """A host copy of a device array (any view of one)."""
        if isinstance(arr, np.ndarray):
            return arr.copy()
        if hasattr(arr, "get"):
            return arr.get()
        torch = _torch()
        t = arr.detach().cpu().contiguous()
        for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            if t.dtype == getattr(torch, name):
                bits = t.view(torch.int16 if name == "bfloat16" else torch.uint8).numpy()
                return bits.view(np_dtype(name)).copy()
        return t.numpy().copy()

    def synchronize(self) -> None:
        """Waits for the GPU (after a launch's own sync, the copies back are ordered anyway)."""

    # -- views ----------------------------------------------------------------------------

    def view(self, values: np.ndarray, kind: str, rng: np.random.Generator,
             writable: bool = False, align: int = 1) -> View:
        """A view of kind ``kind`` (:data:`VIEWS`) whose elements are ``values``.

        ``broadcast`` keeps only ``values[0]`` along the first axis (the view repeats it);
        the view's ``host`` holds what the kernel sees. ``align``: a ``framed`` or ``flip``
        view's offset along the last axis and its base's last extent are multiples of it (in
        elements), so rows that are 16-byte multiples stay 16-byte aligned.
        """
        kind = effective_view(kind, values.dtype, writable)
        dt = values.dtype
        shape = values.shape
        nd = len(shape)
        fill = guard_value(dt)
        if kind == "plain" or nd == 0:
            base = values.copy()
            return self._made(base, (), "plain")
        if kind == "broadcast":
            row = np.ascontiguousarray(values[:1])
            dev_row = self.put(row)
            dev = self._broadcast(dev_row, shape)
            host = np.broadcast_to(row, shape)
            return View(dev, dev_row, (), np.array(host), row, kind)
        if kind == "transposed":
            base = np.ascontiguousarray(np.swapaxes(values, 0, -1) if nd > 1 else values)
            dev_base = self.put(base)
            dev = self._transpose(dev_base) if nd > 1 else dev_base
            return View(dev, dev_base, (), values.copy(), base, kind, transposed=nd > 1)
        lo = [int(rng.integers(0, 4)) for _ in range(nd)]
        hi = [int(rng.integers(0, 4)) for _ in range(nd)]
        step = [1] * nd
        if kind == "strided":
            step[-1] = int(rng.integers(2, 4))
        lo[-1] *= align
        big = [lo[d] + shape[d] * step[d] + hi[d] for d in range(nd)]
        big[-1] = -(-big[-1] // align) * align
        base = np.full(big, fill, dt)
        if kind == "flip":
            key = tuple(slice(lo[d] + shape[d] - 1, (lo[d] - 1) if lo[d] > 0 else None, -1)
                        if shape[d] else slice(lo[d], lo[d]) for d in range(nd))
        else:
            key = tuple(slice(lo[d], lo[d] + shape[d] * step[d], step[d]) for d in range(nd))
        base[key] = values
        return self._made(base, key, kind)

    def _made(self, base: np.ndarray, key: tuple, kind: str) -> View:
        dev_base = self.put(base)
        dev = dev_base[key] if key else dev_base
        return View(dev, dev_base, key, base[key].copy() if key else base.copy(), base, kind)

    def read(self, view: View) -> tuple[np.ndarray, np.ndarray]:
        """``(view's values, base's values)`` on the host after a launch."""
        base = self.get(view.base_dev)
        if view.kind == "broadcast":
            return np.broadcast_to(base, view.host.shape).copy(), base
        if view.kind == "transposed":
            return np.swapaxes(base, 0, -1).copy(), base
        return (base[view.key].copy() if view.key else base.copy()), base

    def _broadcast(self, dev_row, shape):
        if not self.gpu:
            return np.broadcast_to(dev_row, shape)
        if hasattr(dev_row, "get"):
            return _cupy().broadcast_to(dev_row, shape)
        return dev_row.expand(*shape)

    def _transpose(self, dev):
        if not self.gpu or hasattr(dev, "get"):
            return dev.T if dev.ndim == 2 else dev.swapaxes(0, -1)
        return dev.transpose(0, dev.dim() - 1)


def guard_intact(view: View, base_after: np.ndarray) -> tuple[bool, str]:
    """Whether the base outside the view is as it was made (nothing written past the view).

    Returns:
        ``(ok, message)``; the message names the first changed element of the base.
    """
    if view.kind in ("plain", "transposed", "broadcast"):
        return True, ""
    outside = np.ones(view.base_host.shape, bool)
    outside[view.key] = False
    before = view.base_host[outside]
    after = base_after[outside]
    same = _bits(before) == _bits(after)
    if same.all():
        return True, ""
    where = np.argwhere(outside)[np.argmin(same)]
    return False, (f"element {tuple(int(i) for i in where)} of the base, outside the view, "
                   f"changed from {before[np.argmin(same)]!r} to {after[np.argmin(same)]!r}")


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "b":
        return a.view(np.uint8)
    return a.view(f"u{a.itemsize}")


def _cupy():
    try:
        import cupy
    except ImportError as e:      # noqa: F841
        raise Skip("the GPU mode needs CuPy") from None
    return cupy


def _torch():
    try:
        import torch
    except ImportError:
        raise Skip("bfloat16 and FP8 device arrays need PyTorch") from None
    return torch


def _torch_dtype(dt):
    torch = _torch()
    return {np.dtype(BFLOAT16_NP): torch.bfloat16, np.dtype(FLOAT8_E4M3FN_NP): torch.float8_e4m3fn,
            np.dtype(FLOAT8_E5M2_NP): torch.float8_e5m2}[np.dtype(dt)]
