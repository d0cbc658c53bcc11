"""Register layouts: how a tile's elements are spread over a block's threads.

A tile lives in registers. Each thread of the block (CTA) holds a fixed set of the
tile's elements, given by the layout the tile type carries, so elementwise ops are
plain per-thread register ops with no communication.

:class:`BlockedLayout` is the layout of elementwise work (Triton's "blocked" layout
with ``order = [ndim-1, ..., 0]``): the tile is read in row-major order and cut into
*chunks* of ``vec`` consecutive elements along the last axis; chunk ``c`` belongs
to thread ``c % threads_used`` as its repetition ``c // threads_used``. A thread's
chunk is contiguous in a row-major array, which is what lets a load become one or
more 16-byte vector accesses, and consecutive threads hold consecutive chunks, so a
warp's accesses are coalesced.

When the tile has fewer chunks than the block has threads, threads
``threads_used <= t < num_threads`` hold a copy of thread ``t % threads_used``'s
elements (replication): they load and compute like the others but never store.

:class:`MmaLayout` is the layout of ``mma``'s accumulator and result (the ``mma.sync``
``m16n8`` C fragment, tiled over the block's warps); :class:`MmaOperandLayout` describes
the A and B fragments ``ldmatrix`` puts in registers inside ``mma``'s lowering. Ops
between tiles of different layouts convert through shared memory, except where each thread
already holds the elements it needs in the same slots whatever the thread
(``lowering/layouts.local_slots``, ``local_lines``): then the move, or a reduction along a
leading axis, is a choice of the thread's own registers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cached_property
from math import prod

#: Bytes of one chunk: one 16-byte vector access per chunk, as Triton's default blocked
#: layout (``sizePerThread = 128 bits / element``). Measured on the H200: 8 float32
#: elements per chunk (two 16-byte accesses 32 bytes apart per thread) ran the float32
#: add at 0.86x Triton; one 16-byte access per chunk is what lets a warp's access be
#: 512 contiguous bytes.
CHUNK_BYTES = 16


#: A mapped partition's ``tiles()`` walk numbers tiles of at least this many elements with
#: 32-bit divisions (``lowering/tile_order.py``: a 64-bit division is a call to ptxas' emulation
#: routine, and any call makes ptxas serialize a kernel's ``wgmma`` instructions, C7509).
#: Full tiles of that size number fewer than 2**32 in any array below 256 GiB (more than a
#: GPU holds), but ragged ones need not (an int8 array of shape (2**32 + 16, 1) in (1, 64)
#: tiles has 2**32 + 16), so the launch refuses a mapped partition of such tiles with
#: :data:`MAX_TILES_32` or more tiles (``runtime/launch_checks.py``), on the GPU and in the
#: interpreter alike. 64, not more: attention's row statistics are partitions of
#: ``(1, 1, BM, 1)`` tiles (BM = 64 or 128) walked beside its products.
SMALL_TILE_ELEMS = 64
#: the tile count from which such a partition's walk would not fit 32-bit tile numbers
MAX_TILES_32 = 2**32


def max_vec_for(itemsize: int) -> int:
    """Elements per chunk for elements of ``itemsize`` bytes."""
    return max(1, CHUNK_BYTES // itemsize)


def is_pow2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and (n & (n - 1)) == 0


@dataclass(frozen=True)
class BlockedLayout:
    """Blocked register layout of a tile of ``shape`` over ``num_threads`` threads.

    Args:
        shape: the tile's static shape; every dimension a power of two.
        num_threads: threads per block (``32 * num_warps``), a power of two.
        max_vec: most elements per chunk (``16 // itemsize`` of the dtype the tile was
            created with; a cast keeps the layout).

    Attributes:
        vec: consecutive elements per chunk, along the last axis.
        threads_used: threads that own distinct elements.
        reps: chunks per thread.
        elems_per_thread: ``reps * vec``, the length of each thread's fragment.
    """

    shape: tuple
    num_threads: int
    max_vec: int = 4

    def __post_init__(self):
        if not all(is_pow2(s) for s in self.shape):
            raise ValueError(f"tile shape must be powers of two, got {self.shape}")
        if not is_pow2(self.num_threads):
            raise ValueError(f"num_threads must be a power of two, got {self.num_threads}")

    @cached_property
    def numel(self) -> int:
        return prod(self.shape) if self.shape else 1

    @cached_property
    def vec(self) -> int:
        last = self.shape[-1] if self.shape else 1
        return max(1, min(self.max_vec, last, self.numel // self.num_threads))

    @cached_property
    def chunks(self) -> int:
        return self.numel // self.vec

    @cached_property
    def threads_used(self) -> int:
        return min(self.num_threads, self.chunks)

    @cached_property
    def reps(self) -> int:
        return self.chunks // self.threads_used

    @cached_property
    def elems_per_thread(self) -> int:
        return self.reps * self.vec

    def linear_index(self, thread: int, slot: int) -> int:
        """Row-major index in the tile of fragment slot ``slot`` of ``thread``."""
        rep, v = divmod(slot, self.vec)
        return (rep * self.threads_used + thread % self.threads_used) * self.vec + v

    def slots(self):
        """``(rep, v)`` of every fragment slot, in fragment order."""
        return [(r, v) for r in range(self.reps) for v in range(self.vec)]

    def coords(self, linear: int) -> tuple:
        """Multi-index of a row-major linear index."""
        out = []
        for s in reversed(self.shape):
            linear, r = divmod(linear, s)
            out.append(r)
        return tuple(reversed(out))

    def describe(self) -> str:
        return f"blocked(vec={self.vec}, threads={self.threads_used}/{self.num_threads}, reps={self.reps})"


@dataclass(frozen=True)
class SliceLayout:
    """The layout of a reduction's result kept next to its operand (Triton's
    ``SliceLayout``): the tile of ``parent.shape`` with ``axis`` reduced to extent 1.

    Fragment slot ``i`` of a thread holds the reduced value of the line (along ``axis``)
    through the element slot ``i`` of ``parent`` holds in that thread: the value is
    replicated along the reduced axis, so an elementwise op between this tile and a tile
    in ``parent`` broadcasts it with no data movement (``x - max(x, 1, keepdims=True)``).
    Any other consumer converts it to the blocked layout of its shape first.

    Args:
        parent: the blocked layout of the reduced tile (an ``mma`` accumulator's rows
            reduce into a :class:`VectorLayout`).
        axis: the reduced axis.
    """

    parent: BlockedLayout
    axis: int

    @cached_property
    def shape(self) -> tuple:
        return tuple(1 if d == self.axis else s for d, s in enumerate(self.parent.shape))

    @property
    def num_threads(self) -> int:
        return self.parent.num_threads

    @cached_property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def elems_per_thread(self) -> int:
        return self.parent.elems_per_thread

    def linear_index(self, thread: int, slot: int) -> int:
        """Row-major index in this tile (of ``shape``) of fragment slot ``slot``."""
        coords = list(self.parent.coords(self.parent.linear_index(thread, slot)))
        coords[self.axis] = 0
        lin = 0
        for s, c in zip(self.shape, coords):
            lin = lin * s + c
        return lin

    def describe(self) -> str:
        return f"slice(axis={self.axis}, of {self.parent.describe()})"


#: ``mma.sync`` accumulator atom: 16 rows x 8 columns per warp (PTX ISA, "Matrix Fragments
#: for mma.m16n8k16"; the same C fragment for m16n8k8 tf32 and m16n8k32 int8).
ATOM_M, ATOM_N = 16, 8


def mma_warps(shape: tuple, num_warps: int) -> tuple:
    """``(warps_m, warps_n)``: how the block's warps tile an ``(M, N)`` accumulator.

    Doubles the warps along the axis with more ``m16n8`` atoms per warp (rows first on a
    tie) until every warp has a distinct sub-tile or no axis can be split further; the
    warps beyond ``warps_m * warps_n`` replicate (small tiles). 128x128 over 4 warps gives
    2x2 warps of 64x64, 128x256 over 8 warps 2x4 of 64x64 (Triton's ``warpsPerTile`` for
    mma v2 picks the same).
    """
    m, n = shape
    wm, wn = 1, 1
    while wm * wn < num_warps:
        rows, cols = m // (ATOM_M * wm), n // (ATOM_N * wn)
        if rows >= cols and rows >= 2:
            wm *= 2
        elif cols >= 2:
            wn *= 2
        elif rows >= 2:
            wm *= 2
        else:
            break
    return wm, wn


@dataclass(frozen=True)
class MmaLayout:
    """Register layout of an ``mma`` accumulator of ``shape = (M, N)`` (M a multiple of 16,
    N of 8, both powers of two) over ``num_threads`` threads.

    Warp ``w`` (of the first ``warps_m * warps_n``; the others replicate warp ``w % used``)
    owns the sub-tile at warp row ``w // warps_n`` and warp column ``w % warps_n``, of
    ``wtm = M / warps_m`` rows and ``wtn = N / warps_n`` columns: ``wtm/16 x wtn/8`` atoms.
    Fragment slot ``4 * (im * an + jn) + i`` of lane ``l`` holds, in atom ``(im, jn)``, the
    element at row ``16 im + l // 4 + 8 (i // 2)`` and column ``8 jn + 2 (l % 4) + i % 2``
    of the warp's sub-tile: the C/D fragment of ``mma.sync.m16n8k16`` (PTX ISA, figure
    "MMA .m16n8k16 fragment layout for accumulator matrix C/D"), and of ``wgmma``'s
    accumulator row by row (``shared/notes/hopper-gemm.md`` section 1.4).

    ``wgmma=True``: the accumulator of Hopper's ``wgmma.mma_async.m64nNk16``
    (``lowering/wgmma.py``), for ``M`` a multiple of ``16 * num_warps``: the warps split M
    only (``warps = (num_warps, 1)``) and interleave: atom row ``im`` of warp ``w`` is rows
    ``16 w + 16 num_warps im ..`` (:attr:`warp_row_step` 16, :attr:`atom_row_step`
    ``16 num_warps``), every column. So the rows warpgroup ``g`` holds in atom row ``im`` are
    the 64 consecutive rows from ``64 g + 16 num_warps im``, warp ``w % 4`` of the group
    holding its 16-row block of them: one ``wgmma`` slab each (one slab per warpgroup where
    ``M = 16 * num_warps``).
    """

    shape: tuple
    num_threads: int
    wgmma: bool = False

    def __post_init__(self):
        m, n = self.shape
        if not (is_pow2(m) and is_pow2(n) and m >= ATOM_M and n >= ATOM_N):
            raise ValueError(f"an mma accumulator must be (M, N) powers of two, M >= 16, "
                             f"N >= 8, got {self.shape}")

    @cached_property
    def warps(self) -> tuple:
        if self.wgmma:
            return self.num_threads // 32, 1
        return mma_warps(self.shape, self.num_threads // 32)

    @property
    def warps_m(self) -> int:
        return self.warps[0]

    @property
    def warps_n(self) -> int:
        return self.warps[1]

    @cached_property
    def warp_tile(self) -> tuple:
        return self.shape[0] // self.warps_m, self.shape[1] // self.warps_n

    @cached_property
    def warp_row_step(self) -> int:
        """Rows from one warp row's first row to the next's."""
        return ATOM_M if self.wgmma else self.warp_tile[0]

    @cached_property
    def atom_row_step(self) -> int:
        """Rows from a warp's atom row ``im`` to ``im + 1``."""
        return ATOM_M * self.warps_m if self.wgmma else ATOM_M

    @cached_property
    def atoms(self) -> tuple:
        """``(am, an)``: atoms per warp along M and N."""
        return self.warp_tile[0] // ATOM_M, self.warp_tile[1] // ATOM_N

    @cached_property
    def numel(self) -> int:
        return prod(self.shape)

    @cached_property
    def threads_used(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @cached_property
    def elems_per_thread(self) -> int:
        return 4 * self.atoms[0] * self.atoms[1]

    def slot_coords(self, thread: int, slot: int) -> tuple:
        """``(row, col)`` in the tile of fragment slot ``slot`` of ``thread``."""
        w = (thread // 32) % (self.warps_m * self.warps_n)
        lane = thread % 32
        atom, i = divmod(slot, 4)
        im, jn = divmod(atom, self.atoms[1])
        row = ((w // self.warps_n) * self.warp_row_step + im * self.atom_row_step + lane // 4
               + 8 * (i // 2))
        col = (w % self.warps_n) * self.warp_tile[1] + jn * ATOM_N + 2 * (lane % 4) + i % 2
        return row, col

    def linear_index(self, thread: int, slot: int) -> int:
        """Row-major index in the tile of fragment slot ``slot`` of ``thread``."""
        row, col = self.slot_coords(thread, slot)
        return row * self.shape[1] + col

    @property
    def whole_rows(self) -> bool:
        """Each row lies in one warp (the warps split M only): a row's reduction is a
        thread's registers and two shuffles among the four lanes that share the row."""
        return self.warps_n == 1

    def describe(self) -> str:
        return (f"{'wgmma' if self.wgmma else 'mma'}(warps={self.warps_m}x{self.warps_n}, "
                f"atoms={self.atoms[0]}x"
                f"{self.atoms[1]}, threads={self.threads_used}/{self.num_threads})")


@dataclass(frozen=True)
class VectorLayout:
    """A vector along one axis of an ``mma`` accumulator ``parent`` (of shape ``(M, N)``),
    held by the threads that hold those rows (``axis=0``) or columns (``axis=1``) of it:
    shape ``(M, 1)`` / ``(1, N)`` (``ndim=2``) or ``(M,)`` / ``(N,)`` (``ndim=1``).

    Rows: a softmax's running maximum and sum beside the scores of attention, the result
    of a row reduction (each row in one warp: :attr:`MmaLayout.whole_rows`); slot
    ``2 im + h`` of a lane holds row ``h`` of its atom row ``im`` (the rows of the parent's
    slots ``4 (im an + jn) + 2 h + i``), ``2 am`` values a thread. Columns: the key
    positions of a causal mask, ``j * BN + arange(BN)[None, :]``; slot ``2 jn + i`` holds
    the column of parent slot ``4 jn + i``, ``2 an`` values a thread. Broadcasting either
    onto the parent, or onto another accumulator of the same rows (``acc * alpha``, ``acc``
    of shape ``(M, D)``), is a choice of registers (:func:`local_slots`).
    """

    parent: MmaLayout
    axis: int = 0
    ndim: int = 2

    @cached_property
    def shape(self) -> tuple:
        n = self.parent.shape[self.axis]
        if self.ndim == 1:
            return (n,)
        return (n, 1) if self.axis == 0 else (1, n)

    @property
    def num_threads(self) -> int:
        return self.parent.num_threads

    @property
    def threads_used(self) -> int:
        return self.parent.threads_used

    @cached_property
    def numel(self) -> int:
        return self.parent.shape[self.axis]

    @cached_property
    def elems_per_thread(self) -> int:
        am, an = self.parent.atoms
        return 2 * (am if self.axis == 0 else an)

    def parent_slot(self, slot: int) -> int:
        """A slot of the parent holding the row (column) of ``slot``."""
        if self.axis == 0:
            im, h = divmod(slot, 2)
            return 4 * im * self.parent.atoms[1] + 2 * h
        jn, i = divmod(slot, 2)
        return 4 * jn + i

    def linear_index(self, thread: int, slot: int) -> int:
        """The row (column) of slot ``slot`` of ``thread``: its row-major index."""
        return self.parent.slot_coords(thread, self.parent_slot(slot))[self.axis]

    def describe(self) -> str:
        what = "rows" if self.axis == 0 else "columns"
        return f"{what}{'' if self.ndim == 2 else ' 1-D'}(of {self.parent.describe()})"


@dataclass(frozen=True)
class MmaOperandLayout:
    """The register fragment ``ldmatrix`` gives one warp for one ``mma.sync`` operand.

    ``operand`` is ``"a"`` (``16 x k`` rows of A) or ``"b"`` (``k x 8`` of B), ``k`` the
    instruction's depth (16 for 16-bit inputs, 32 for int8, 8 for tf32): 32 bytes of K
    per row either way. Register ``r`` of lane ``l`` packs ``4 / itemsize`` consecutive
    K elements (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k32 / m16n8k8"):

    * A: row ``l // 4 + 8 (r % 2)``, K from ``(16 (r // 2) + 4 (l % 4)) / itemsize``;
    * B: column ``l // 4``, K from ``(16 r + 4 (l % 4)) / itemsize``.

    Such fragments live only inside ``mma``'s lowering (A and B are staged in shared memory
    and read with ``ldmatrix``); no op returns a tile in this layout.
    """

    operand: str
    itemsize: int

    @property
    def k(self) -> int:
        return 32 // self.itemsize

    @property
    def registers(self) -> int:
        return 4 if self.operand == "a" else 2

    def element(self, lane: int, reg: int, part: int) -> tuple:
        """``(row, k)`` (A) or ``(k, col)`` (B) of element ``part`` of register ``reg``."""
        if self.operand == "a":
            return lane // 4 + 8 * (reg % 2), (16 * (reg // 2) + 4 * (lane % 4)) // self.itemsize + part
        return (16 * reg + 4 * (lane % 4)) // self.itemsize + part, lane // 4

    def describe(self) -> str:
        return f"mma_operand({self.operand}, k={self.k})"


# --- moves that keep elements in their threads: the layout algebra that both the typing rules
# (a reshape or reduction that needs no data movement) and the lowering use

def same_distribution(a, b) -> bool:
    """True when layouts ``a`` and ``b`` put the same row-major linear indices in the same
    fragment slots of the same threads (then a reshape between them moves no data)."""
    if not (isinstance(a, BlockedLayout) and isinstance(b, BlockedLayout)):
        return a == b
    return (a.num_threads == b.num_threads and a.numel == b.numel and a.vec == b.vec
            and a.threads_used == b.threads_used and a.reps == b.reps)


def _broadcast_source(linear: int, src_shape: tuple, dst_shape: tuple) -> int:
    """Row-major index in ``src_shape`` of the element that NumPy's broadcast of
    ``src_shape`` to ``dst_shape`` puts at row-major index ``linear`` of ``dst_shape``."""
    coords = []
    for s in reversed(dst_shape):
        linear, c = divmod(linear, s)
        coords.append(c)
    coords = coords[:len(src_shape)][::-1]
    out = 0
    for s, c in zip(src_shape, coords):
        out = out * s + (0 if s == 1 else c)
    return out


@functools.lru_cache(maxsize=4096)
def local_slots(src, dst, broadcast: bool = False):
    """For a move that keeps every element's row-major index (a layout conversion, a
    reshape), or with ``broadcast`` NumPy's broadcast of ``src.shape`` to ``dst.shape``:
    the source fragment slot of each destination slot, when every thread already
    holds the elements it takes, in the same slots whatever the thread; else ``None``.

    Then the move is a choice of registers, with no shared memory and no barrier: a
    reduction's slice layout onto the blocked layout of its shape (a ``(1, 1)`` row
    statistic, held by every thread), a float32 tile that kept a 16-bit load's chunks
    reshaped along its repetitions, a row statistic of one product's accumulator onto
    another's of the same rows (attention's ``acc * alpha``). Only a source with no
    replicating threads (a replicating thread's copy may differ from its owner's, an
    atomic's result: ``lowering/layouts.stage`` takes the owners')."""
    if not all(isinstance(x, (BlockedLayout, SliceLayout, MmaLayout, VectorLayout))
               for x in (src, dst)):
        return None
    owners = src.parent if isinstance(src, (SliceLayout, VectorLayout)) else src
    if (src.num_threads != dst.num_threads or owners.threads_used != owners.num_threads
            or (src.numel != dst.numel and not broadcast)):
        return None
    if broadcast:
        def source(i):
            return _broadcast_source(i, tuple(src.shape), tuple(dst.shape))
    else:
        def source(i):
            return i
    slots = None
    for t in range(src.num_threads):
        held = {}
        for j in range(src.elems_per_thread - 1, -1, -1):
            held[src.linear_index(t, j)] = j
        mine = tuple(held.get(source(dst.linear_index(t, i)))
                     for i in range(dst.elems_per_thread))
        if None in mine or (slots is not None and mine != slots):
            return None
        slots = mine
    return slots


@functools.lru_cache(maxsize=1024)
def local_lines(src, dst, axis: int, keep: bool):
    """For a reduction of a tile in ``src`` along ``axis`` into a result in ``dst``
    (``keep``: the axis kept with extent 1): the source fragment slots of the line that
    each destination slot reduces, in order along the axis, when every thread holds the
    whole lines of its result elements, in the same slots whatever the thread; else None.
    Then the reduction is a thread's own register arithmetic (a float32 tile of a bfloat16
    load folded along its repetitions, ``max(reshape(x, (R, BC // R)), 0)``). Blocked
    layouts with no replicating source thread only (as :func:`local_slots`)."""
    if not (isinstance(src, BlockedLayout) and isinstance(dst, BlockedLayout)):
        return None
    if src.num_threads != dst.num_threads or src.threads_used != src.num_threads:
        return None
    shape, n = tuple(src.shape), src.shape[axis]
    stride = prod(shape[axis + 1:])
    out_shape = tuple(dst.shape)

    def first(linear):               # row-major index in src of the line's first element
        coords = []
        for s_ in reversed(out_shape):
            linear, c = divmod(linear, s_)
            coords.append(c)
        coords = coords[::-1]
        if keep:
            coords[axis] = 0
        else:
            coords.insert(axis, 0)
        lin = 0
        for s_, c in zip(shape, coords):
            lin = lin * s_ + c
        return lin

    lines = None
    for t in range(src.num_threads):
        held = {src.linear_index(t, j): j for j in range(src.elems_per_thread)}
        mine = []
        for i in range(dst.elems_per_thread):
            f = first(dst.linear_index(t, i))
            line = tuple(held.get(f + k * stride) for k in range(n))
            if None in line:
                return None
            mine.append(line)
        mine = tuple(mine)
        if lines is not None and mine != lines:
            return None
        lines = mine
    return lines
