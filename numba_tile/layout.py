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

The tensor-core accumulator and operand layouts (``mma``/``wgmma``) will be further
classes here; ops between tiles of different layouts convert through shared memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod

#: Bytes of one chunk: one 16-byte vector access per chunk, as Triton's default blocked
#: layout (``sizePerThread = 128 bits / element``). Measured on the H200: 8 float32
#: elements per chunk (two 16-byte accesses 32 bytes apart per thread) ran the float32
#: add at 0.86x Triton; one 16-byte access per chunk is what lets a warp's access be
#: 512 contiguous bytes.
CHUNK_BYTES = 16


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
        parent: the blocked layout of the reduced tile.
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
