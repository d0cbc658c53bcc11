"""NumPy ufuncs on scalars inside a kernel (``np.exp(s)``, ``np.sqrt(s)``, ``np.abs(s)``,
``np.add(a, b)``...; typing/ and lowering/scalar_ufuncs.py): every loop numba_tile lowers,
on both backends, against NumPy computing the same loop on NumPy scalars of the loop's dtypes,
on fresh random inputs with IEEE special values and integer edge cases (exact where IEEE rounds
once, to a few ulp for the transcendental functions, as libdevice is against NumPy's own).
tests/unit/test_scalar_ufunc_lowering.py runs the same element code on the CPU."""

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.typing.scalar_ufuncs import SUPPLEMENT

#: loops computed to a few ulp (libdevice against NumPy's math library); all others exactly
APPROXIMATE = {np.exp, np.exp2, np.expm1, np.log1p, np.cbrt, np.power, np.float_power}
NBLOCKS = 48


def _kernel(ufunc):
    if ufunc.nin == 1:
        @nt.jit
        def unary(x, y, z: nt.Partition["B"], B: nt.Constant):
            v = ufunc(x[nt.bid(0)])
            nt.store(z, nt.full((B,), v, nt.float64))
        return unary

    @nt.jit
    def binary(x, y, z: nt.Partition["B"], B: nt.Constant):
        v = ufunc(x[nt.bid(0)], y[nt.bid(0)])
        nt.store(z, nt.full((B,), v, nt.float64))
    return binary


_KERNELS = {}


def _values(rng, dt, n):
    dt = np.dtype(dt)
    if dt.kind == "f":
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 0.5, 1e-30],
                           dt)
        scale = rng.choice([1e-3, 1.0, 30.0, 1e4], n)
        out = (rng.standard_normal(n) * scale).astype(dt)
        out[:len(special)] = special
        return rng.permutation(out)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(dt)
    info = np.iinfo(dt)
    out = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    small = rng.integers(max(info.min, -5), 6, n // 2).astype(dt)   # zeros and -1 among them
    out[: n // 2] = small
    return rng.permutation(out)


def _cases() -> list:
    out = []
    for ufunc, loops in SUPPLEMENT.items():
        for loop in sorted(loops):
            out.append(pytest.param(ufunc, loop, id=f"{ufunc.__name__}-{loop}"))
    return out


@pytest.mark.parametrize("ufunc, loop", _cases())
def test_scalar_ufunc_loops_agree_with_numpy(tile_backend, ufunc, loop):
    rng = np.random.default_rng()
    ins, out = loop.split("->")
    xs = _values(rng, ins[0], NBLOCKS)
    ys = _values(rng, ins[-1], NBLOCKS)
    if np.dtype(ins[0]).kind == "i":
        # the least integer and -1 (floor_divide gives the least integer, as NumPy), 0 divisors
        xs[:2], ys[:3] = np.iinfo(xs.dtype).min, (-1, 0, -1)
    if ufunc in (np.power, np.float_power):
        # NumPy's power of -inf to a non-integer power depends on the CPU (nan with AVX-512's
        # SVML, inf by C99's pow, as libdevice): not compared
        xs[np.isneginf(xs)] = -3.0
    kernel = _KERNELS.setdefault(ufunc, _kernel(ufunc))
    z = tile_backend.asarray(np.full(NBLOCKS * 8, -7.0))
    tile_backend.run(kernel, tile_backend.asarray(xs), tile_backend.asarray(ys),
                     nt.partition(z, 8), 8)
    got = tile_backend.to_numpy(z).reshape(NBLOCKS, 8)
    with np.errstate(all="ignore"):
        want = np.array([np.float64(ufunc(*((x, y)[:ufunc.nin]))) for x, y in zip(xs, ys)])
    assert (got == got[:, :1]).all() or np.isnan(got[:, 0]).any()
    if ufunc in APPROXIMATE and np.dtype(out).kind == "f":
        ulp = np.finfo(np.dtype(out)).eps
        np.testing.assert_allclose(got[:, 0], want, rtol=4 * ulp,
                                   atol=np.finfo(np.dtype(out)).tiny,
                                   err_msg=f"{ufunc.__name__} {loop} of {xs} {ys}")
    else:
        np.testing.assert_array_equal(got[:, 0], want,
                                      err_msg=f"{ufunc.__name__} {loop} of {xs} {ys}")
