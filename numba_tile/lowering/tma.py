"""Staged loads through Hopper's tensor memory accelerator (sm_90a): TMA boxes into the ring's
slots, completion counted by one ``mbarrier`` per slot.

Taken for the loads ``typing/pipeline._tma_fits`` admits (a deferred loop, its product on
``wgmma``, a read-only 2-D tensor of 16-bit floats or FP8, tiles of at most 256 rows and
whole 128-byte atoms per row). Facts and encodings: ``shared/notes/hopper-gemm.md`` sections 2.1-2.5.

**Tensor maps.** Each such load gets a tensor map, built on the host at launch
(``runtime/tensormap.py``) from the array's pointer, extents and row stride: element type
float16, bfloat16 or (FP8) 8-bit unsigned, box ``{128 / itemsize, rows}`` (one 128-byte
swizzle atom: a tile ``cols`` wide is ``cols * itemsize / 128`` boxes), ``CU_TENSOR_MAP_SWIZZLE_128B``, out-of-bound elements
zero. The map travels as a 128-byte kernel parameter (``.param .align 64 .b8 NAME_tmapI[128]``,
appended to the entry's parameters after compilation, ``compiler._add_tensor_map_params``);
the kernel takes its generic address with ``mov.b64`` + ``cvta.param.u64`` (what NVVM emits
for ``__grid_constant__``). The inline PTX names the parameter by a placeholder the compiler
replaces once the entry's name is known.

**Boxes.** Box ``c`` of tile ``t`` lands at byte ``c * rows * 128`` of the tile's slot: the
atom-column layout of ``staging.AtomStaged`` (the TMA's 128-byte swizzle is that layout's XOR).
Its coordinates are ``{col, row}`` of the tile's first element (innermost first), 32-bit: a
tile index along either axis is clamped to the tile grid first, so a tile past the array's end
(a loop longer than the array, the prologue's and refills' tiles past the loop's end) reads
only out-of-bound elements, all zero, and no coordinate wraps. The host refuses extents of
2**31 elements or more (``runtime/tensormap.py``).

**Barriers.** One 8-byte ``mbarrier`` per slot, after the slots. At the start of every run of
the loop (``k == 0``, after the pipeline's restart barrier) thread 0 initializes them (arrival
count 1) and fences the initialization (``fence.mbarrier_init.release.cluster``); the block
barrier follows. Thread 0 then issues each tile: ``mbarrier.arrive.expect_tx`` of the tile's
bytes (every operand's boxes, whole boxes even where they are out of bounds, as CUTLASS's
``TmaTransactionBytes``) and the boxes
(``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes``). A
thread that reads tile ``t`` waits on barrier ``t mod S`` for phase parity ``(t / S) mod 2``
(``mbarrier.try_wait.parity`` in a loop). In its loop's last iteration the drain
(``lowering/mma.lower_wgmma_drain``) waits for the tiles issued past the loop's end, so no
copy is in flight when the barriers are initialized again or the block exits.
"""

from __future__ import annotations

from llvmlite import ir

from .. import compiler_context
from .common import I32, I64, const_i64, thread_index
from .shared import address32

#: the placeholder of tensor map ``i``'s parameter symbol in inline PTX (``compiler``)
PLACEHOLDER = "__NUMBA_TILE_TMAP_{}__"

#: bytes per box row: one 128-byte swizzle atom (64 16-bit elements, 128 FP8 ones)
BOX_BYTES = 128


def _asm(builder, text, constraints="", args=(), types=()):
    fn = ir.InlineAsm(ir.FunctionType(ir.VoidType(), list(types)), text,
                      ",".join(filter(None, [constraints, "~{memory}"])), side_effect=True)
    builder.call(fn, list(args))


def map_index(param: str, rows: int) -> int:
    """The kernel's tensor map for loads of tensor ``param`` with ``rows``-row tiles (one map
    per (tensor, box), in order of first use; ``CompileContext.tensor_maps``)."""
    ctx = compiler_context.current()
    maps = ctx.__dict__.setdefault("tensor_maps", [])
    key = (param, rows)
    if key not in maps:
        maps.append(key)
    return maps.index(key)


def map_address(builder, index: int) -> ir.Value:
    """Generic 64-bit address of tensor map ``index``'s kernel parameter."""
    fn = ir.InlineAsm(ir.FunctionType(I64, []),
                      f"mov.b64 $0, {PLACEHOLDER.format(index)};\n\tcvta.param.u64 $0, $0;",
                      "=l", side_effect=False)
    return builder.call(fn, [])


def init_barriers(builder, bars, count: int):
    """Thread 0: ``mbarrier.init`` of ``count`` barriers from ``bars`` (8 bytes apart, arrival
    count 1), then the initialization fence. The caller passes the block barrier next."""
    base = address32(builder, bars)
    with builder.if_then(builder.icmp_unsigned("==", thread_index(builder), const_i64(0))):
        for s in range(count):
            _asm(builder, "mbarrier.init.shared::cta.b64 [$0], 1;", "r",
                 (builder.add(base, ir.Constant(I32, 8 * s)),), (I32,))
        _asm(builder, "fence.mbarrier_init.release.cluster;")


def barrier_of(builder, bars, stages: int, kk) -> ir.Value:
    """32-bit shared address of the barrier of tile ``kk``'s slot."""
    s = builder.trunc(builder.urem(kk, const_i64(stages)), I32)
    return builder.add(address32(builder, bars), builder.mul(s, ir.Constant(I32, 8)))


def wait_tile(builder, bars, stages: int, kk):
    """Wait until tile ``kk``'s boxes have landed: barrier ``kk mod S``, parity
    ``(kk / S) mod 2``."""
    bar = barrier_of(builder, bars, stages, kk)
    parity = builder.trunc(builder.and_(builder.udiv(kk, const_i64(stages)), const_i64(1)), I32)
    _asm(builder, "{\n\t.reg .pred P1;\n\tNT_WAIT:\n\t"
                  "mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n\t"
                  "@!P1 bra NT_WAIT;\n\t}", "r,r", (bar, parity), (I32, I32))


class TmaPlan:
    """The boxes of one staged load's tiles (``lowering/pipeline.Ring`` holds its slots)."""

    def __init__(self, builder, view, ring, index, axis: int):
        self.rows, self.cols, self.itemsize = ring.rows, ring.cols, ring.itemsize
        self.axis = axis
        self.tile_bytes = ring.tile_bytes
        self.param = view.ty.param
        self.map = map_index(view.ty.param, self.rows)
        tile = (self.rows, self.cols)
        other = 1 - axis
        # the tile grid along both axes (a clamped tile index lies past the array: zeros)
        self.grid = [builder.udiv(builder.add(view.shape[d], const_i64(tile[d] - 1)),
                                  const_i64(tile[d])) for d in range(2)]
        self.other = self._clamped(builder, index[other], other)

    def _clamped(self, builder, t, axis):
        g = self.grid[axis]
        t = builder.select(builder.icmp_unsigned("<", t, g), t, g)
        tile = (self.rows, self.cols)[axis]
        return builder.trunc(builder.mul(t, const_i64(tile)), I32)

    def issue(self, builder, slot, bar, kk):
        """Thread 0's boxes of tile ``kk`` (i64) into ``slot`` (its shared pointer), completing
        on ``bar`` (32-bit shared address; the caller has posted the expected bytes)."""
        issue_boxes(builder, self.map, self.rows, self.cols, self.itemsize, self.axis,
                    address32(builder, slot), self._clamped(builder, kk, self.axis),
                    self.other, bar)


def issue_boxes(builder, map_index: int, rows: int, cols: int, itemsize: int, axis: int,
                dst, start, other, bar):
    """The boxes of one tile: ``dst`` its slot's 32-bit shared address, ``start`` its first
    element along the loop's axis and ``other`` across it (i32, clamped), ``bar`` the
    barrier they complete on."""
    row0, col0 = (start, other) if axis == 0 else (other, start)
    tmap = map_address(builder, map_index)
    box_cols = BOX_BYTES // itemsize
    for c in range(cols // box_cols):
        _asm(builder, "cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                      "mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
             "r,l,r,r,r",
             (builder.add(dst, ir.Constant(I32, c * rows * 128)), tmap,
              builder.add(col0, ir.Constant(I32, c * box_cols)), row0, bar),
             (I32, I64, I32, I32, I32))


def multicast_split(rows: int, cols: int, itemsize: int):
    """How a tile's boxes split between the two blocks of a cluster that multicast it
    (``lowering/ws.py``): ``"boxes"`` (an even number of boxes: each block issues half of
    them, whole), ``"rows"`` (each block issues every box's half of the rows, through a map
    of ``rows / 2``-row boxes: whole 1024-byte swizzle atoms, ``rows / 2`` a multiple of 8),
    or None (the tile is not multicast)."""
    nb = cols * itemsize // BOX_BYTES
    if nb % 2 == 0:
        return "boxes"
    if rows % 16 == 0:
        return "rows"
    return None


def issue_boxes_multicast(builder, split: str, map_index: int, rows: int, cols: int,
                          itemsize: int, axis: int, dst, start, other, bar, rank):
    """This block's half of a tile both blocks of the cluster receive (the same coordinates in
    both): its boxes (``.multicast::cluster``, CTA mask ``0b11``) land at the same offsets of
    both blocks' slots and complete on both blocks' barriers at ``bar``'s offset. ``rank``
    (i32): the block's rank in the cluster, 0 or 1; ``split``: :func:`multicast_split`'s,
    ``map_index`` the map of its boxes (``rows / 2`` rows for ``"rows"``)."""
    row0, col0 = (start, other) if axis == 0 else (other, start)
    tmap = map_address(builder, map_index)
    box_cols = BOX_BYTES // itemsize
    nb = cols // box_cols
    mask = ir.Constant(ir.IntType(16), 3)
    if split == "boxes":
        half = nb // 2
        dst = builder.add(dst, builder.mul(rank, ir.Constant(I32, half * rows * 128)))
        col0 = builder.add(col0, builder.mul(rank, ir.Constant(I32, half * box_cols)))
        boxes = [(c * rows * 128, c * box_cols) for c in range(half)]
    else:
        dst = builder.add(dst, builder.mul(rank, ir.Constant(I32, rows // 2 * 128)))
        row0 = builder.add(row0, builder.mul(rank, ir.Constant(I32, rows // 2)))
        boxes = [(c * rows * 128, c * box_cols) for c in range(nb)]
    for off, col in boxes:
        _asm(builder, "cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                      "mbarrier::complete_tx::bytes.multicast::cluster "
                      "[$0], [$1, {$2, $3}], [$4], $5;",
             "r,l,r,r,r,h",
             (builder.add(dst, ir.Constant(I32, off)), tmap,
              builder.add(col0, ir.Constant(I32, col)), row0, bar, mask),
             (I32, I64, I32, I32, I32, ir.IntType(16)))


def expect_bytes(builder, bar, nbytes: int):
    """``mbarrier.arrive.expect_tx``: thread 0's arrival on ``bar`` with ``nbytes`` to come."""
    _asm(builder, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
         (bar, ir.Constant(I32, nbytes)), (I32, I32))


__all__ = ["BOX_BYTES", "PLACEHOLDER", "TmaPlan", "barrier_of", "expect_bytes", "init_barriers",
           "issue_boxes", "issue_boxes_multicast", "multicast_split",
           "map_address", "map_index", "wait_tile"]
