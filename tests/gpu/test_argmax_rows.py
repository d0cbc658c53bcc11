"""``argmax``/``argmin`` along a row reduce in registers and shuffles as ``max`` does (no staging
of the tile: a (1, 32768) row needs 128 bytes of shared memory, not 128 KB), with NumPy's
answer: the first of equal values, the first NaN; masked rows ignore their invalid columns.
On the GPU and in the interpreter, against NumPy, over dtypes, row lengths and warps."""

import numpy as np
import pytest

import numba_tile as nt


def _row_arg(warps):
    @nt.jit(num_warps=warps)
    def row_arg(x, out: nt.Partition[("R",)], R: nt.Constant, C: nt.Constant,
                MAX: nt.Constant):
        t = nt.load(x, (nt.bid(0), 0), (R, C))           # masked past the array's edges
        if MAX:
            nt.store(out, nt.argmax(t, 1))
        else:
            nt.store(out, nt.argmin(t, 1))
    return row_arg


KERNELS = {w: _row_arg(w) for w in (1, 4, 8)}


def _data(rng, dt, shape):
    if dt == np.bool_:
        return rng.random(shape) < 0.1
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -50), min(info.max, 50), shape).astype(dt)
    x = rng.integers(-20, 20, shape).astype(dt)          # many ties
    if rng.random() < 0.7:
        nan = rng.random(shape) < 0.01
        x[nan] = np.nan
    x[rng.random(shape) < 0.01] = -np.inf if rng.random() < 0.5 else np.inf
    return x


# (dtype, rows of the array, columns of the array, R, C, warps)
CASES = [
    (np.float32, 5, 32768, 1, 32768, 4),
    (np.float32, 37, 1000, 4, 1024, 4),
    (np.float16, 9, 4096, 2, 4096, 8),
    (np.float64, 20, 300, 8, 512, 4),
    (np.int32, 13, 2000, 1, 2048, 1),
    (np.uint8, 40, 64, 16, 64, 4),
    (np.int64, 7, 129, 4, 256, 8),
    (np.bool_, 11, 700, 2, 1024, 4),
    (np.float32, 50, 3, 32, 4, 1),
    (np.float32, 3, 1, 4, 1, 4),
]


@pytest.mark.parametrize("is_max", [True, False], ids=["argmax", "argmin"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{np.dtype(c[0]).name}-{c[1]}x{c[2]}"
                         f"-R{c[3]}-C{c[4]}-w{c[5]}")
def test_row_argmax_argmin_against_numpy(tile_backend, case, is_max):
    dt, n, m, R, C, w = case
    rng = np.random.default_rng()
    x = _data(rng, dt, (n, m))
    out = tile_backend.asarray(np.full(n, -7, np.int32))
    tile_backend.run(KERNELS[w], tile_backend.asarray(x), nt.partition(out, (R,)), R, C, is_max)
    with np.errstate(invalid="ignore"):
        want = np.argmax(x, axis=1) if is_max else np.argmin(x, axis=1)
    got = tile_backend.to_numpy(out)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (bad[:4], got[bad[:4]], want[bad[:4]])


def test_a_long_row_needs_no_staging():
    x = np.zeros((8, 32768), np.float32)
    ex = KERNELS[4].explain(x, nt.partition(np.zeros(8, np.int32), (1,)), 1, 32768, True,
                            cc=(9, 0))
    assert ex.shared_bytes <= 1024
