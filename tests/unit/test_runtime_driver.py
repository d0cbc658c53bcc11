"""driver.py imports and answers without a GPU; its error type carries the CUresult name."""

import pytest

from numba_tile.runtime import driver


def test_gpu_available_never_raises_and_is_cached():
    first = driver.gpu_available()
    assert isinstance(first, bool)
    assert driver.gpu_available() is first


def test_cuda_driver_error_carries_result_name():
    err = driver.CudaDriverError("cuLaunchKernel", 1, "CUDA_ERROR_INVALID_VALUE",
                                 "invalid argument")
    assert isinstance(err, RuntimeError)
    assert err.result == 1 and err.name == "CUDA_ERROR_INVALID_VALUE"
    assert "cuLaunchKernel" in str(err) and "CUDA_ERROR_INVALID_VALUE" in str(err)


def test_check_raises_on_error_results():
    from cuda.bindings import driver as cu

    with pytest.raises(driver.CudaDriverError, match="CUDA_ERROR_INVALID_VALUE"):
        driver._check("cuFoo", (cu.CUresult.CUDA_ERROR_INVALID_VALUE,))
    assert driver._check("cuFoo", (cu.CUresult.CUDA_SUCCESS, 5)) == 5
    assert driver._check("cuFoo", (cu.CUresult.CUDA_SUCCESS,)) is None
