"""Kernels with large layout conversions, at sizes Triton handles: a 2-D gather at int64 index
tiles, a causal attention inner loop and (16, 1024) float32 rearrangements. They compile for sm_90
and sm_80 (libNVVM, no GPU) within the target's shared memory, reusing one scratch region across
conversion sites (the kernel's total is the largest site, not their sum), with a barrier between
one use's reads and the next use's writes; ptxas assembles them without spills where nvJitLink is
present.

The kernels live in ``tests/gpu/test_conversion_sizes.py``, whose tests check their values
on the GPU and in the interpreter.
"""

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.runtime import linker
from tests.gpu.test_conversion_sizes import attention, gather2d, rearrange, scatter_rows, \
    transpose_rows

CCS = [(9, 0), (8, 0)]


def _compiled(kernel, *args, cc=(9, 0)):
    values = kernel._bind(args, {})
    from numba_tile.runtime.launch_checks import bind_arrays
    bound = bind_arrays(kernel.__qualname__, kernel._specs(values), values, allow_host=None,
                        call_site=None)
    spec = kernel._signature(bound)
    return kernel.compile(spec.key, spec.argtypes, spec.grid_param, cc)


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]


_ACCESS = re.compile(r"\b(bar\.sync|st\.shared|ld\.shared|ldmatrix|wgmma\.mma_async)\b")


def unsynchronized_reuse(ptx: str) -> list:
    """Shared-memory writes that follow a shared-memory read with no ``bar.sync`` between them,
    in program order (a write-after-read race between two uses of the scratch region when
    threads differ). A conversion's own reads after its second barrier and the next use's
    writes after its first barrier: none. Returns the offending lines' numbers."""
    bad, read_since_barrier = [], False
    for n, line in enumerate(body(ptx).splitlines()):
        m = _ACCESS.search(line)
        if m is None:
            continue
        op = m.group(1)
        if op == "bar.sync":
            read_since_barrier = False
        elif op == "st.shared":
            if read_since_barrier:
                bad.append(n)
        else:
            read_since_barrier = True
    return bad


def assembled(ptx: str, cc) -> tuple | None:
    """ptxas' ``(registers, spilled bytes)`` for ``ptx``, or None without nvJitLink."""
    try:
        out = linker.assemble(ptx, cc)
    except Exception as e:              # noqa: BLE001 - a missing or broken nvJitLink
        pytest.skip(f"nvJitLink unusable: {type(e).__name__}: {e}")
    if out is None:
        return None
    return linker.spill_report(out[1])


def check_structure(ck, cc, spills=False):
    """No local memory in the PTX, no unsynchronized reuse of shared memory, only the dynamic
    pool; ptxas assembles it, without spills unless ``spills``."""
    ptx = ck.ptx
    assert ".local" not in ptx
    assert unsynchronized_reuse(ptx) == []
    if ck.shared_bytes:
        assert re.search(r"\.extern \.shared \.align \d+ \.b8 __numba_tile_smem\[\]", ptx)
    assert not re.search(r"^\s*\.shared\s", body(ptx), re.M)      # no static shared arrays
    report = assembled(ptx, cc)
    if report is not None and not spills:
        assert report[1] == 0, report


# ------------------------------------------------------------------------------ gather

@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("R,C,w", [(64, 128, 4), (128, 256, 4), (128, 256, 16)])
def test_a_gather_at_int64_indices_converts_nothing(R, C, w, cc):
    """The result takes the int64 indices' layout: no shared memory at all, where the
    float32 layout converted both index tiles (64 KB at (64, 128); 256 KB, refused, at
    (128, 256)). A (128, 256) gather's two int64 index tiles and result are 640 KB of
    registers, more than a multiprocessor's 256 KB on any number of warps: ptxas assembles
    it, with spills."""
    x = np.zeros((300, 500), np.float32)
    idx = np.zeros((2 * R, 2 * C), np.int64)
    out = nt.partition(np.zeros((2 * R, 2 * C), np.float32), (R, C))
    ck = _compiled(gather2d[w], x, idx, idx, out, R, C, cc=cc)
    assert ck.shared_bytes == 0
    assert "bar.sync" not in ck.ptx
    assert re.search(r"ld\.global\.nc\.v2\.(u64|b64|s64)", ck.ptx)     # 16-byte index loads
    check_structure(ck, cc, spills=R * C > 64 * 128)


@pytest.mark.parametrize("cc", CCS)
def test_a_gather_at_mixed_index_widths_converts_the_narrower(cc):
    """int32 rows and int64 columns: the int32 tile moves into the int64 layout (4 bytes an
    element, 128 KB at (128, 256)), never the int64 one (256 KB)."""
    x = np.zeros((300, 500), np.float32)
    rows = np.zeros((256, 512), np.int32)
    cols = np.zeros((256, 512), np.int64)
    out = nt.partition(np.zeros((256, 512), np.float32), (128, 256))
    ck = _compiled(gather2d[16], x, rows, cols, out, 128, 256, cc=cc)
    assert ck.shared_bytes == 128 * 256 * 4
    assert body(ck.ptx).count("bar.sync") == 2
    check_structure(ck, cc, spills=True)


@pytest.mark.parametrize("cc", CCS)
def test_a_scatter_at_int64_indices_moves_only_the_values(cc):
    x = np.zeros((300, 500), np.float32)
    rows = np.zeros((128, 128), np.int64)
    ck = _compiled(scatter_rows, x, rows, x.copy(), 64, 128, cc=cc)
    assert ck.shared_bytes == 64 * 128 * 4          # the float32 values' conversion only
    check_structure(ck, cc)


# ---------------------------------------------------------------------------- attention

ATTENTION = [(64, 64, 64, 4), (128, 64, 64, 4), (128, 128, 64, 8), (128, 64, 128, 8),
             (128, 128, 128, 8)]


@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("BM,BN,D,w", ATTENTION, ids=lambda v: str(v))
def test_causal_attention_compiles_and_reuses_one_scratch_region(BM, BN, D, w, cc):
    """Triton's tutorial configurations of the forward pass. With ``mma.sync`` (sm_80) each
    iteration converts the scores (BM, BN) float32 out of the accumulator layout, transposes
    the (BN, D) key tile and stages both products' operands; one scratch region holds each
    in turn, so the kernel needs about the largest of them, far below their sum. With
    ``wgmma`` (sm_90) the scores, their row statistics and the causal mask's positions stay
    in the accumulator's layout and the queries and probabilities are register operands:
    the loop moves no float32 through shared memory at all. Past (64, 64) tiles ptxas
    spills a little; assembling is what is checked there."""
    q = np.zeros((1000, D), np.float16)
    o = nt.partition(np.zeros((1000, D), np.float16), (BM, D))
    ck = _compiled(attention[w], q, q, q, o, BM, BN, D, 0.125, cc=cc)
    scores = BM * BN * 4
    key_transpose = BN * D * 2
    qk_operands = BM * D * 2 + D * BN * 2
    pv_operands = BM * BN * 2 + BN * D * 2
    # the accumulator out of its layout, once, where the output's arithmetic does not keep
    # the product's layout (typing/elementwise.result_tile keeps it: a wgmma accumulator is
    # stored from its fragments, lowering/memory.py)
    epilogue = BM * D * 4
    sites = [scores, key_transpose, qk_operands, pv_operands]
    assert ck.shared_bytes <= max(sites + [epilogue]) + 2048   # wgmma: 1024-B aligned
    assert ck.shared_bytes < sum(sites) + epilogue
    if cc == (8, 0):
        assert max(sites) <= ck.shared_bytes
    if cc == (8, 0):
        assert "mma.sync" in ck.ptx and "wgmma" not in ck.ptx
        assert body(ck.ptx).count("bar.sync") >= 2 * len(sites)  # a barrier pair per site
    else:
        assert "wgmma.mma_async" in ck.ptx
        lines = body(ck.ptx).splitlines()
        at = [n for n, line in enumerate(lines) if "wgmma.mma_async" in line]
        loop = "\n".join(lines[at[0]:at[-1]])
        assert "st.shared.f32" not in loop and "ld.shared.f32" not in loop
    check_structure(ck, cc, spills=BM * BN > 64 * 64)


# -------------------------------------------------------------------- rearrangements

@pytest.mark.parametrize("cc", CCS)
@pytest.mark.parametrize("R,w", [(16, 4), (32, 4), (32, 8), (64, 8)])
def test_rearrangements_of_rows_of_1024_float32(R, w, cc):
    """reshape (R, 32, 32) -> permute -> reshape back, and the (R, 1024) -> (1024, R)
    transpose: one staging each (the reshapes move nothing), in one pass up to 128 KB and in
    two of 128 KB for a (64, 1024) tile (256 KB: it was refused). Fragments of 256 elements
    a thread (R * 1024 / (32 * w)) spill whatever the conversion does."""
    nbytes = R * 1024 * 4
    passes = max(1, nbytes // (128 * 1024))
    spills = R * 1024 // (32 * w) > 128
    x = np.zeros((4 * R, 1024), np.float32)
    ck = _compiled(rearrange[w], x, nt.partition(x.copy(), (R, 1024)), R, 1024, 32, cc=cc)
    assert ck.shared_bytes == nbytes // passes
    assert body(ck.ptx).count("bar.sync") == 2 * passes
    check_structure(ck, cc, spills)
    xt = np.zeros((R, 4096), np.float32)
    zt = nt.partition(np.zeros((4096, R), np.float32), (1024, R))
    ck = _compiled(transpose_rows[w], xt, zt, R, 1024, cc=cc)
    assert ck.shared_bytes == nbytes // passes
    assert body(ck.ptx).count("bar.sync") == 2 * passes
    check_structure(ck, cc, spills)


def test_the_checker_finds_a_write_after_a_read_without_a_barrier():
    ptx = (".entry k(\n) {\n bar.sync 0;\n st.shared.f32 [%r1], %f1;\n bar.sync 0;\n"
           " ld.shared.f32 %f2, [%r2];\n st.shared.f32 [%r1], %f3;\n}\n")
    assert unsynchronized_reuse(ptx) == [5]
    assert unsynchronized_reuse(ptx.replace(" st.shared.f32 [%r1], %f3;",
                                            " bar.sync 0;\n st.shared.f32 [%r1], %f3;")) == []
