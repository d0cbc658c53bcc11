"""Ordering of a block's accesses to its own partition tiles, coherent loads of arrays the
kernel writes, and overflow-proof tile-index bounds: PTX structure (libNVVM, no GPU).

A tile's register layout depends on its dtype (a float32 tile made by ``astype`` from a
float16 load keeps float16's 8-element chunks; a float32 load has 4), so a store and a later
load of one partition tile, or two stores, can touch one element from threads of different
warps. The lowering puts a block barrier (``bar.sync 0``) before every access of such a
partition; kernels that access a partition once, or always in one layout with no replicating
threads, get none. The GPU twins of these kernels are in ``tests/gpu/test_partition_ordering.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import numba_tile as nt
from numba_tile.compiler_context import CompileContext


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]


def access_groups(ptx: str) -> str:
    """The kernel body as a string of ``B`` (a ``bar.sync``), ``L`` (a coherent global load:
    read-only tensors are read through ``ld.global.nc``, so these are the partition's and
    Mutable arrays' loads) and ``S`` (a global store), runs of one letter collapsed (the
    chunks of one op)."""
    out = []
    for line in body(ptx).splitlines():
        s = line.strip()
        tok = ("B" if s.startswith("bar.sync") else
               "L" if s.startswith("ld.global.") and not s.startswith("ld.global.nc") else
               "S" if s.startswith("st.global.") else None)
        if tok and (not out or out[-1] != tok or tok == "B"):
            out.append(tok)
    return "".join(out)


_PRED = re.compile(r"^@!?%\w+\s+")


def _event(line: str):
    """``B``, ``L`` or ``S`` (as :func:`access_groups`) for one PTX line, a predicated access
    included; None for anything else."""
    s = _PRED.sub("", line)
    if s.startswith("bar.sync"):
        return "B"
    if s.startswith("ld.global.") and not s.startswith("ld.global.nc"):
        return "L"
    return "S" if s.startswith("st.global.") else None


def basic_blocks(ptx: str) -> list:
    """The kernel body's basic blocks as ``(lines, successors)`` (successors: block numbers):
    a block starts at a label or after a branch, and falls through unless it ends in an
    unconditional ``bra`` or a ``ret``/``exit``."""
    lines = [ln.strip() for ln in body(ptx).splitlines()]
    blocks, labels, cur = [], {}, []
    for ln in lines:
        if re.match(r"^\$\w+:$", ln):
            if cur or blocks:
                blocks.append(cur)
            cur = []
            labels[ln[:-1]] = len(blocks)
            continue
        cur.append(ln)
        if re.match(r"^(@!?%\w+\s+)?(bra|ret|exit)\b", ln):
            blocks.append(cur)
            cur = []
    blocks.append(cur)
    out = []
    for i, blk in enumerate(blocks):
        last = blk[-1] if blk else ""
        m = re.match(r"^(@!?%\w+\s+)?bra(?:\.uni)?\s+(\$\w+);", last)
        succ = []
        if m:
            succ.append(labels[m.group(2)])
        ends = (m and not m.group(1)) or re.match(r"^(ret|exit)\b", last)
        if not ends and i + 1 < len(blocks):
            succ.append(i + 1)
        out.append((blk, succ))
    return out


def assert_ordered(ptx: str, accesses: int):
    """On every path through the kernel, each coherent load or store of the kernel's own
    arrays comes after a barrier, or after an access of the same kind with none between
    (the chunks of one op; a load after a store, or a store after a load, needs the barrier);
    and at least ``accesses`` distinct barriers each come right before an access (one per
    ordered op). A dataflow over the PTX's basic blocks: a tile wholly inside the array and
    an edge tile take two paths (``lowering/memory.full_tile``), each after the op's barrier."""
    blocks = basic_blocks(ptx)
    state_in = {0: {("E", -1)}}
    leading, bad = set(), []
    work = [0]
    while work:
        i = work.pop()
        state = set(state_in.get(i, ()))
        for n, ln in enumerate(blocks[i][0]):
            ev = _event(ln)
            if ev is None:
                continue
            if ev == "B":
                state = {("B", (i, n))}
                continue
            for kind, where in state:
                if kind == "B":
                    leading.add(where)
                elif kind != ev:
                    bad.append((ev, kind, ln))
            state = {(ev, None)}
        for j in blocks[i][1]:
            before = state_in.setdefault(j, set())
            if not state <= before:
                before |= state
                work.append(j)
    assert not bad, bad
    assert len(leading) >= accesses, access_groups(ptx)


_REG = re.compile(r"%[A-Za-z_$][\w$]*(?:\.[xyz])?")


def thread_dependent_predicates(ptx: str) -> set:
    """Predicate registers whose value depends on ``%tid`` (flow-insensitive taint over the
    kernel body: a register is tainted when any instruction defining it reads a tainted
    register, ``%tid.*`` or, when predicated, a tainted predicate)."""
    defs = []
    for line in body(ptx).splitlines():
        s = line.strip()
        if not s.endswith(";") or s.startswith(("st.", "bra", "bar.", "ret", "//", ".")):
            continue
        pred = None
        m = re.match(r"@!?(%\w+)\s+(.*)", s)
        if m:
            pred, s = m.group(1), m.group(2)
        parts = s.rstrip(";").split(None, 1)
        if len(parts) < 2:
            continue
        operands = parts[1]
        if operands.startswith("{"):
            dst_text, _, src_text = operands[1:].partition("}")
        else:
            dst_text, _, src_text = operands.partition(",")
        dsts = set(_REG.findall(dst_text))
        srcs = set(_REG.findall(src_text)) | ({pred} if pred else set())
        defs.append((dsts, srcs))
    tainted: set = set()
    changed = True
    while changed:
        changed = False
        for dsts, srcs in defs:
            if dsts - tainted and any(r in tainted or r.startswith("%tid") for r in srcs):
                tainted |= dsts
                changed = True
    return tainted


def assert_barriers_block_uniform(ptx: str):
    """No ``bar.sync`` is predicated, or skipped or repeated by a branch on a thread-dependent
    predicate: every thread of the block reaches each barrier the same number of times. A
    barrier is control-dependent on a branch when it lies on a path from the branch to the
    branch's nearest post-dominator (over :func:`basic_blocks`; a loop's back edge included)."""
    blocks = basic_blocks(ptx)
    tainted = thread_dependent_predicates(ptx)
    n = len(blocks)
    bars = {i for i, (lines, _) in enumerate(blocks) if any("bar.sync" in ln for ln in lines)}
    assert bars
    for lines, _ in blocks:
        for ln in lines:
            assert not ("bar.sync" in ln and ln.startswith("@")), ln
    exit_ = n                                  # one virtual exit after every returning block
    succ = [s or [exit_] for _, s in blocks] + [[]]
    pdom = [set(range(n + 1)) for _ in range(n)] + [{exit_}]
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            new = {i} | set.intersection(*(pdom[j] for j in succ[i]))
            if new != pdom[i]:
                pdom[i], changed = new, True
    for i, (lines, _) in enumerate(blocks):
        m = re.match(r"@!?(%\w+)\s+bra", lines[-1]) if lines else None
        if not m or m.group(1) not in tainted:
            continue
        stop = pdom[i] - {i}
        seen, work = set(), list(succ[i])
        while work:
            j = work.pop()
            if j in seen or j in stop:
                continue
            seen.add(j)
            work += succ[j]
        assert not (seen & bars), (lines[-1], [blocks[j][0] for j in sorted(seen & bars)])


def bar_count(ptx: str) -> int:
    return len(re.findall(r"\bbar\.sync\b", body(ptx)))


# ------------------------------- a store and a load of one partition in two layouts


@nt.jit
def store_reload(x16, x32, z: nt.Partition["B"], B: nt.Constant):
    t = nt.astype(nt.load_like(x16, z), nt.float32)     # float32 in float16's layout (vec 8)
    nt.store(z, t)
    u = nt.load_like(z, z)                              # float32 layout (vec 4)
    nt.store(z, u + nt.load_like(x32, z))


@nt.jit
def where_reload(m, x, z: nt.Partition["B"], B: nt.Constant):
    keep = nt.load_like(m, z)
    nt.store(z, nt.where(keep, nt.load_like(x, z), 0.0))     # stored in the bool layout
    u = nt.load_like(z, z)
    nt.store(z, u * 2.0)


@nt.jit
def two_stores(x16, x32, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.astype(nt.load_like(x16, z), nt.float32))  # vec 8
    nt.store(z, nt.load_like(x32, z) * 2.0)                    # vec 4: the last write wins


@nt.jit
def load_then_store(x16, z: nt.Partition["B"], w: nt.Partition["B"], B: nt.Constant):
    u = nt.load_like(z, z)                                     # vec 4
    nt.store(z, nt.astype(nt.load_like(x16, z), nt.float32))   # vec 8: must not pass the read
    nt.store(w, u)


@nt.jit
def loop_accumulate(x16, z: nt.Partition["B"], R, B: nt.Constant):
    for _ in range(R):                  # the store of one step, the load of the next
        u = nt.load_like(z, z)
        nt.store(z, nt.astype(nt.load_like(x16, z), nt.float32) + u)


@nt.jit
def persistent_store_reload(x16, x32, z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.astype(nt.load_like(x16, z, index=idx), nt.float32), idx)
        u = nt.load(z, idx)
        nt.store(z, u + nt.load_like(x32, z, index=idx), idx)


@nt.jit
def in_place_same_layout(z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(z, z) * 2.0 + 1.0)


N, B = 4096 + 100, 1024          # ragged: the last tile's loads are masked


def _arrays():
    return (np.ones(N, np.float16), np.ones(N, np.float32), np.zeros(N, np.float32))


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
@pytest.mark.parametrize("num_warps,tile", [(4, 1024), (8, 4096)])
def test_store_then_reload_in_another_layout_is_ordered(num_warps, tile, cc):
    x16, x32, z = _arrays()
    k = nt.jit(num_warps=num_warps)(store_reload.fn)
    ptx = k.ptx(x16, x32, nt.partition(z, tile), tile, cc=cc)
    assert_ordered(ptx, accesses=3)
    assert_barriers_block_uniform(ptx)


def test_one_layout_in_both_dtypes_needs_no_barrier():
    """With 8 warps a 1024-element tile has 4 elements per thread in float16 and float32
    alike: the store and the re-load give each element to one thread, no barrier."""
    x16, x32, z = _arrays()
    k = nt.jit(num_warps=8)(store_reload.fn)
    assert bar_count(k.ptx(x16, x32, nt.partition(z, B), B)) == 0


def test_where_on_a_bool_mask_then_reload_is_ordered():
    _, x32, z = _arrays()
    ptx = where_reload.ptx(np.ones(N, np.bool_), x32, nt.partition(z, B), B)
    assert_ordered(ptx, accesses=3)
    assert_barriers_block_uniform(ptx)


def test_two_stores_in_different_layouts_are_ordered():
    x16, x32, z = _arrays()
    ptx = two_stores.ptx(x16, x32, nt.partition(z, B), B)
    assert_ordered(ptx, accesses=2)
    assert_barriers_block_uniform(ptx)


def test_a_load_then_a_store_in_another_layout_is_ordered():
    x16, _, z = _arrays()
    ptx = load_then_store.ptx(x16, nt.partition(z, B), nt.partition(z.copy(), B), B)
    groups = access_groups(ptx)
    # the load of z, then the store of z (the store of w, one access, needs no barrier)
    assert re.search(r"BL.*BS", groups), groups
    assert_barriers_block_uniform(ptx)


def test_loop_carried_store_and_load_are_ordered():
    x16, _, z = _arrays()
    ptx = loop_accumulate.ptx(x16, nt.partition(z, B), 3, B)
    assert_ordered(ptx, accesses=2)
    assert_barriers_block_uniform(ptx)
    # the loop body starts with the barrier of its load: the previous step's store is behind it
    lines = [ln.strip() for ln in body(ptx).splitlines()]
    back = [i for i, ln in enumerate(lines) if re.match(r"(@!?%\w+\s+)?bra(\.uni)?\s+\$\w+;", ln)
            and lines.index(re.search(r"(\$\w+);", ln).group(1) + ":") < i]
    assert back, "no loop in the PTX"
    head = lines.index(re.search(r"(\$\w+);", lines[back[-1]]).group(1) + ":")
    loop_body = "\n".join(lines[head:back[-1]])
    first_access = re.search(r"^(ld\.global\.(?!nc)|st\.global\.)", loop_body, re.M)
    first_bar = loop_body.find("bar.sync")
    assert first_access and 0 <= first_bar < first_access.start(), loop_body


def test_persistent_kernel_accesses_at_branded_indices_are_ordered():
    x16, x32, z = _arrays()
    ptx = persistent_store_reload.ptx(x16, x32, nt.partition(z, B, blocks=3), B)
    assert_ordered(ptx, accesses=3)
    assert_barriers_block_uniform(ptx)


def test_one_layout_without_replication_needs_no_barrier():
    """An in-place update in one layout: each element is read and written by one thread."""
    z = np.zeros(N, np.float32)
    ptx = in_place_same_layout.ptx(nt.partition(z, B), B)
    assert bar_count(ptx) == 0
    # a load then a store on each path (a tile inside the array, an edge tile)
    assert re.fullmatch(r"(LS)+", access_groups(ptx)), access_groups(ptx)


def test_replicating_threads_are_ordered_too():
    """A 64-element tile over 128 threads: threads 64..127 load copies of the elements threads
    0..63 store, so even one layout needs the barrier."""
    z = np.zeros(256, np.float32)
    ptx = in_place_same_layout.ptx(nt.partition(z, 64), 64)
    assert_ordered(ptx, accesses=2)
    assert_barriers_block_uniform(ptx)


def test_unchecked_kernels_get_no_ordering_barrier():
    """Unchecked kernels may branch per thread (a barrier there could hang): they order
    their own accesses."""
    x16, x32, z = _arrays()
    k = nt.jit(unchecked=True)(store_reload.fn)
    assert bar_count(k.ptx(x16, x32, nt.partition(z, B), B)) == 0
    assert bar_count(store_reload.ptx(x16, x32, nt.partition(z.copy(), B), B)) == 3


def test_the_uniformity_check_sees_a_barrier_under_a_thread_predicate():
    """The check above can fail: the same PTX with a barrier moved inside a branch on a
    thread's element bounds (a per-thread predicate) is refused."""
    x16, x32, z = _arrays()
    ptx = store_reload.ptx(x16, x32, nt.partition(z, B), B)
    tainted = thread_dependent_predicates(ptx)
    lines = ptx.splitlines()
    at = next(i for i, ln in enumerate(lines)
              if (m := re.match(r"\s*@!?(%\w+)\s+bra", ln)) and m.group(1) in tainted)
    moved = "\n".join(lines[:at + 1] + ["\tbar.sync \t0;"] + lines[at + 1:])
    with pytest.raises(AssertionError):
        assert_barriers_block_uniform(moved)


# --------------------------------------------------------- ordinary kernels: no new barrier


def _fresh_ptx_without_ordering(kernel, args, monkeypatch):
    """PTX of ``kernel`` compiled anew (no disk or memory cache) with the ordering barriers
    turned off."""
    with monkeypatch.context() as mp:
        mp.setenv("NUMBA_TILE_CACHE_DIR", "")
        mp.setattr(CompileContext, "orders", lambda self, param: False)
        fresh = nt.jit(num_warps=kernel.num_warps, min_blocks_per_sm=kernel.min_blocks_per_sm,
                       unchecked=kernel.unchecked)(kernel.fn)
        return fresh.ptx(*args)


def _same_code(a: str, b: str) -> bool:
    def norm(p):      # symbol names carry per-compilation counters
        return re.sub(r"_ZN\w+", "K", re.sub(r"__numba_tile_\w+?_\d+", "SMEM", p))
    return norm(a) == norm(b)


def _example_launches():
    from examples import persistent, saxpy, vecadd
    x = np.zeros(1_000_003, np.float32)
    x2 = np.zeros((1000, 777), np.float32)
    x3 = np.zeros((3000, 1000), np.float32)
    return {
        "vecadd": (vecadd.vecadd, (x, x.copy(), nt.partition(x.copy(), 1024), 1024)),
        "saxpy": (saxpy.saxpy, (2.0, x2, x2.copy(), nt.partition(x2.copy(), (32, 64)), 32, 64)),
        "persistent": (persistent.persistent_axpby,
                       (1.0, x3, 2.0, x3.copy(), nt.partition(x3.copy(), (32, 128), blocks=132),
                        32, 128)),
    }


@pytest.mark.parametrize("name", ["vecadd", "saxpy", "persistent"])
def test_examples_compile_exactly_as_without_ordering(name, monkeypatch):
    kernel, args = _example_launches()[name]
    ptx = kernel.ptx(*args)
    assert bar_count(ptx) == 0
    assert _same_code(ptx, _fresh_ptx_without_ordering(kernel, args, monkeypatch))


@pytest.mark.parametrize("n", [1000, 16384])
@pytest.mark.parametrize("dtname", ["float32", "bfloat16"])
@pytest.mark.parametrize("kernel", ["softmax", "layer_norm", "rms_norm"])
def test_norm_examples_compile_exactly_as_without_ordering(kernel, dtname, n, monkeypatch):
    """The row kernels' barriers are their reductions' and layout conversions' only."""
    from examples import softmax
    from tests.compile.test_norm_spills import kernel_ptx
    ptx = kernel_ptx(kernel, dtname, n)
    with monkeypatch.context() as mp:
        mp.setenv("NUMBA_TILE_CACHE_DIR", "")
        mp.setattr(CompileContext, "orders", lambda self, param: False)
        mp.setattr(softmax, "_KERNELS", {})          # fresh kernel objects: no memory cache
        unordered = kernel_ptx(kernel, dtname, n)
    assert _same_code(ptx, unordered)


def test_ordering_off_would_be_seen(monkeypatch):
    """The comparison above can fail: store_reload's code differs without ordering."""
    x16, x32, z = _arrays()
    args = (x16, x32, nt.partition(z, B), B)
    ptx = store_reload.ptx(*args)
    unordered = _fresh_ptx_without_ordering(store_reload, args, monkeypatch)
    assert not _same_code(ptx, unordered)
    assert bar_count(unordered) == 0 and bar_count(ptx) == 3


# ------------------------------------------------- coherent loads of what the kernel writes


@nt.jit(unchecked=True)
def mutable_reload(x, m: nt.Mutable, z: nt.Partition["B"], B: nt.Constant):
    before = nt.load(m, (nt.bid(0),), (B,))
    nt.store(m, nt.load_like(x, z), (nt.bid(0),))
    after = nt.load(m, (nt.bid(0),), (B,))
    nt.store(z, after - before)


def test_no_non_coherent_load_of_a_mutable_array_or_a_partition():
    x = np.ones(256, np.float32)
    b = body(mutable_reload.ptx(x, np.zeros(256, np.float32), nt.partition(x.copy(), 128), 128))
    assert len(re.findall(r"ld\.global\.nc", b)) == 1             # x only
    # m, before and after, each at a hand-built index: a path for a tile inside the array
    # and one for an edge tile (memory._two_paths)
    assert len(re.findall(r"ld\.global\.(?!nc)", b)) == 4
    # a partition written by the kernel: every load of it is coherent
    b = body(in_place_same_layout.ptx(nt.partition(np.zeros(N, np.float32), B), B))
    assert "ld.global.nc" not in b and re.search(r"ld\.global\.v4\.f32", b)
    x16, x32, z = _arrays()
    b = body(store_reload.ptx(x16, x32, nt.partition(z, B), B))
    assert len(re.findall(r"ld\.global\.v4\.f32", b)) == 2       # z's two chunks


# --------------------------------------------------------- tile indices that would wrap


def _param_registers(ptx: str) -> dict:
    """{flattened parameter number: register it is loaded into}."""
    return {int(m.group(2)): m.group(1)
            for m in re.finditer(r"ld\.param\.\w+\s+(%\w+),\s*\[\w+_param_(\d+)\];", body(ptx))}


def _compared_unsigned(ptx: str, reg: str) -> bool:
    """``reg`` is an operand of an unsigned 64-bit comparison (against the tile grid)."""
    return any(reg in (a, b) for a, b in
               re.findall(r"setp\.\w+\.u64\s+%\w+,\s*(%\w+),\s*(%\w+);", body(ptx)))


@nt.jit(unchecked=True)
def far_store(x, z: nt.Partition["B"], far, B: nt.Constant):
    t = nt.load_like(x, z)
    if nt.bid(0) == 1:
        nt.store(z, t + 100.0, (far,))
    else:
        nt.store(z, t)


@nt.jit(unchecked=True)
def far_mutable_store(x, m: nt.Mutable, far, B: nt.Constant):
    nt.store(m, nt.load(x, (0,), (B,)), (far,))


@nt.jit
def far_load(x, z: nt.Partition[("B", "B")], far, B: nt.Constant):
    nt.store(z, nt.load(x, (0, far), (B, B), padding=-1.0))


def test_hand_built_tile_indices_are_compared_with_the_grid_before_use():
    """2**61 * 8 wraps to 0 (mod 2**64): the index itself must be checked against the tile grid
    (``0 <= index < ceil(extent / tile)``, one unsigned compare), not only the product."""
    x = np.ones(16, np.float32)
    # flattened parameters: each array is (data, extent..., stride...); 'far' follows
    cases = [(far_store, (x, nt.partition(x.copy(), 8), 2**61, 8), 6),
             (far_mutable_store, (x, np.zeros(16, np.float32), 2**61, 8), 6),
             (far_load, (np.ones((16, 16), np.float32),
                         nt.partition(np.zeros((16, 16), np.float32), (8, 8)), 2**61, 8), 10)]
    for kernel, args, param in cases:
        ptx = kernel.ptx(*args)
        reg = _param_registers(ptx)[param]
        assert _compared_unsigned(ptx, reg), (kernel.__name__, reg)


# ------------------------------------------------------------- the checkers catch what they should

_SKIPPED_BARRIER = """.entry k() {
\tmov.u32 \t%r1, %tid.x;
\tsetp.lt.u32 \t%p1, %r1, 16;
\t@%p1 bra \t$L__BB0_2;
\tbar.sync \t0;
$L__BB0_2:
\tld.global.f32 \t%f1, [%rd1];
\tret;
}"""

_REJOINED_EDGE_PATH = """.entry k() {
\tsetp.lt.u64 \t%p1, %rd1, %rd2;
\tbar.sync \t0;
\t@%p1 bra \t$L__BB0_3;
$L__BB0_1:
\tst.global.f32 \t[%rd3], %f1;
\tbar.sync \t0;
\tld.global.f32 \t%f2, [%rd3];
\tret;
$L__BB0_3:
\tmov.u32 \t%r1, %tid.x;
\tsetp.lt.u32 \t%p2, %r1, 16;
\t@%p2 bra \t$L__BB0_1;
\tst.global.f32 \t[%rd4], %f1;
\tbra.uni \t$L__BB0_1;
}"""


def test_the_checkers_catch_a_skipped_barrier_and_an_unordered_access():
    """A barrier only some threads reach fails :func:`assert_barriers_block_uniform`; a
    thread-dependent branch that rejoins before the next barrier (an edge tile's masked
    store, placed after the kernel's return) passes it; a store then a load with no barrier
    on one path fails :func:`assert_ordered`."""
    with pytest.raises(AssertionError):
        assert_barriers_block_uniform(_SKIPPED_BARRIER)
    assert_barriers_block_uniform(_REJOINED_EDGE_PATH)
    assert_ordered(_REJOINED_EDGE_PATH, accesses=2)
    unordered = _REJOINED_EDGE_PATH.replace("\tbar.sync \t0;\n\tld.global", "\tld.global")
    with pytest.raises(AssertionError):
        assert_ordered(unordered, accesses=1)
