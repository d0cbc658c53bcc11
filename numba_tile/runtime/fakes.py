"""Stand-ins for device arrays, for tests that run without a GPU.

:class:`FakeDeviceArray` exposes a ``__cuda_array_interface__`` (v3) built from a NumPy array's
``__array_interface__``: the addresses, shape and strides are real (host addresses), so overlap
checks give the same answers as for device memory, while nothing ever reads the data through the
interface. Without a CUDA driver, :func:`numba_tile.runtime.arrays.as_array_arg` places such an
array on device 0.
"""

from __future__ import annotations

import numpy

__all__ = ["FakeDeviceArray"]


class FakeDeviceArray:
    """A CUDA Array Interface over a NumPy array's memory (for tests).

    Args:
        host: the NumPy array whose address, shape, strides and dtype are exported (kept alive).
        readonly: the ``data[1]`` flag to export; defaults to ``not host.flags.writeable``.
        stream: the v3 ``stream`` field (None: absent/no synchronisation).
        mask: the ``mask`` field (anything not None is a masked array, which numba_tile refuses).
        typestr: override of the exported ``typestr``.

    Examples:
        >>> x = FakeDeviceArray(numpy.arange(16).reshape(4, 4))
        >>> x.T.host.strides
        (8, 32)
    """

    def __init__(self, host: numpy.ndarray, *, readonly: bool | None = None,
                 stream: int | None = None, mask: object = None, typestr: str | None = None):
        self.host = host
        self.readonly = (not host.flags.writeable) if readonly is None else readonly
        self.stream = stream
        self.mask = mask
        self.typestr = typestr

    @property
    def __cuda_array_interface__(self) -> dict:
        ai = self.host.__array_interface__
        return {
            "version": 3,
            "shape": ai["shape"],
            "strides": ai["strides"],
            "typestr": self.typestr or ai["typestr"],
            "data": (ai["data"][0], self.readonly),
            "stream": self.stream,
            "mask": self.mask,
        }

    def __getitem__(self, index) -> "FakeDeviceArray":
        return FakeDeviceArray(self.host[index], readonly=self.readonly)

    @property
    def T(self) -> "FakeDeviceArray":
        return FakeDeviceArray(self.host.T, readonly=self.readonly)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.host.shape

    def __repr__(self) -> str:
        return f"FakeDeviceArray(shape={self.host.shape}, dtype={self.host.dtype})"
