"""Kernels take CuPy, Numba and PyTorch device arrays and any DLPack producer, mixed freely."""

import numpy as np
import pytest

import numba_tile as nt

pytestmark = pytest.mark.gpu


@nt.jit
def fma_kernel(x, y, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * 2.0 + nt.load_like(y, z))


class DLPackOnly:
    """Exposes a PyTorch tensor through the DLPack protocol alone."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kwargs):
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def producers():
    out = {}
    try:
        import cupy
        out["cupy"] = (cupy.asarray, cupy.asnumpy)
    except ImportError:
        pass
    try:
        from numba import cuda
        out["numba"] = (cuda.to_device, lambda a: a.copy_to_host())
    except Exception:  # noqa: BLE001
        pass
    try:
        import torch
        out["torch"] = (lambda h: torch.from_numpy(h).cuda(), lambda t: t.cpu().numpy())
        out["dlpack"] = (lambda h: DLPackOnly(torch.from_numpy(h).cuda()),
                         lambda d: d._t.cpu().numpy())
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("px", ["cupy", "numba", "torch", "dlpack"])
@pytest.mark.parametrize("pz", ["cupy", "numba", "torch", "dlpack"])
def test_producers_mix(px, pz):
    avail = producers()
    if px not in avail or pz not in avail:
        pytest.skip("producer not installed")
    rng = np.random.default_rng()
    xh = rng.standard_normal(3000).astype(np.float32)
    yh = rng.standard_normal(3000).astype(np.float32)
    to_x, _ = avail[px]
    to_z, from_z = avail[pz]
    z = to_z(np.zeros(3000, np.float32))
    fma_kernel(to_x(xh), to_x(yh), nt.partition(z, 512)).sync()
    np.testing.assert_allclose(from_z(z), 2.0 * xh + yh, rtol=1e-6)


def test_torch_bfloat16_through_dlpack():
    torch = pytest.importorskip("torch")
    x = torch.randn(1000, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(1000, device="cuda", dtype=torch.bfloat16)
    z = torch.zeros(1000, device="cuda", dtype=torch.bfloat16)
    fma_kernel(DLPackOnly(x), y, nt.partition(z, 256)).sync()
    ref = (2.0 * x.float() + y.float()).to(torch.bfloat16).float()
    assert torch.equal(z.float(), ref)
