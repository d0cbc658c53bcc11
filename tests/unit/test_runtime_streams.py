"""Stream handles (runtime/streams.py) from every supported stream object, with fakes."""

import ctypes

import pytest

from numba_tile.errors import TileArgumentError
from numba_tile.runtime.streams import producer_streams, same_stream, stream_handle


class CudaStreamProtocol:
    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


class TorchStream:
    def __init__(self, handle):
        self.cuda_stream = handle


class CupyStream:
    def __init__(self, handle):
        self.ptr = handle


CupyStream.__module__ = "cupy.cuda.stream"


class NumbaStream:
    def __init__(self, handle):
        self.handle = handle


class IntLike:
    """Stands for a cuda.bindings CUstream: converts with int()."""

    def __init__(self, value):
        self.value_ = value

    def __int__(self):
        return self.value_


HANDLE = 0x7F00DEAD0000


def test_none_is_the_legacy_default_stream():
    assert stream_handle(None) == 0


@pytest.mark.parametrize("make", [
    lambda h: h,
    CudaStreamProtocol,
    TorchStream,
    CupyStream,
    lambda h: NumbaStream(ctypes.c_void_p(h)),
    lambda h: NumbaStream(IntLike(h)),
    lambda h: CudaStreamProtocol(IntLike(h)),
])
@pytest.mark.parametrize("handle", [0, 1, 2, HANDLE])
def test_stream_objects(make, handle):
    assert stream_handle(make(handle)) == handle


def test_numba_default_stream_handle_none_value():
    assert stream_handle(NumbaStream(ctypes.c_void_p(None))) == 0


@pytest.mark.parametrize("bad", [True, -1, 1.5, "stream", object(), CudaStreamProtocol(-5),
                                 CudaStreamProtocol("x")])
def test_bad_streams_name_the_argument(bad):
    with pytest.raises(TileArgumentError, match="argument 'stream'"):
        stream_handle(bad)


def test_same_stream_and_producer_streams():
    assert same_stream(0, 1) and same_stream(1, 0) and not same_stream(0, 2)
    assert producer_streams([None, 1, 0, 7, 7, 2, None], 0) == [7, 2]
    assert producer_streams([None, 7], 7) == []
