"""The order in which a partition's tiles are numbered: tile number ``linear`` to tile
coordinates, row-major or grouped (Triton's ``GROUP_SIZE_M`` swizzle). The one place the GPU
maps a tile number to a tile: the block's own tile (``memory.own_tile_index``, ``bid``), the
tiles ``tiles(z)`` hands out (``partition.py``) and a warp-specialized producer's walk
(``ws.py``). The interpreter computes the same mapping with ``runtime/partition.tile_coords``.
"""

from __future__ import annotations

from .common import I64, const_i64, umin
from .views import ArrayView, tile_grid


def _divrem(builder, a, n, small: bool):
    """``(a // n, a % n)`` of i64 values, unsigned. ``small``: ``a`` is below 2**32 (a block
    index), so a 32-bit division is exact: by ``n`` itself when ``n`` fits in 32 bits, else
    the quotient is 0. A 64-bit division is a call to ptxas's emulation routine, and any call
    in a function makes ptxas serialize its ``wgmma`` instructions (C7509)."""
    if not small:
        return builder.udiv(a, n), builder.urem(a, n)
    from llvmlite import ir
    i32 = ir.IntType(32)
    big = builder.icmp_unsigned(">", n, const_i64(0xFFFFFFFF))
    n32 = builder.select(big, ir.Constant(i32, 1), builder.trunc(n, i32))
    a32 = builder.trunc(a, i32)
    q = builder.select(big, const_i64(0), builder.zext(builder.udiv(a32, n32), I64))
    r = builder.select(big, a, builder.zext(builder.urem(a32, n32), I64))
    return q, r


def _row_major(builder, grid, linear, small=False) -> list:
    """``linear`` unravelled row-major over ``grid`` (i64 values; unsigned division)."""
    coords = []
    for n in reversed(grid[1:]):
        linear, r = _divrem(builder, linear, n, small)
        coords.append(r)
    coords.append(linear)
    return coords[::-1]


def tile_coords(builder, view: ArrayView, tile_shape, order, linear, small=False) -> list:
    """Coordinates (i64, tile units) of the tile numbered ``linear`` in ``order``.

    The one place the GPU maps a tile number to a tile: the block's own tile
    (``memory.own_tile_index``, ``bid``) and the tiles ``tiles(z)`` hands out. The
    interpreter computes the same mapping with ``runtime/partition.tile_coords``.

    Args:
        view: the partition's unpacked parameter (its extents give the tile grid).
        tile_shape: the static tile shape.
        order: ``"row"`` or ``("grouped", GROUP)`` (``PartitionType.order``).
        linear: the tile number (i64), below the number of tiles.
        small: ``linear`` is below 2**32 (a block index): 32-bit divisions (``_divrem``).

    Returns:
        list of i64 values, one per axis. Row-major: ``urem``/``udiv`` by the tiles per axis.
        Grouped: Triton's formula over the last two axes (``urem``/``udiv`` by
        ``group * num_pid_n`` and by the band's height), the leading axes row-major over
        ``linear // (num_pid_m * num_pid_n)``. The group is first clamped to ``num_pid_m``,
        which changes no tile (a group of ``num_pid_m`` rows or more is one band) and keeps
        ``group * num_pid_n`` at most the tile count, so it cannot wrap.
    """
    return tile_coords_of_grid(builder, tile_grid(builder, view, tile_shape), order, linear,
                               small)


def tile_coords_of_grid(builder, grid, order, linear, small=False) -> list:
    """:func:`tile_coords` over a tile grid already computed (i64 tiles per axis)."""
    if order == "row" or len(grid) < 2:
        return _row_major(builder, grid, linear, small)
    m, n = grid[-2], grid[-1]
    pid = linear
    lead = []
    if len(grid) > 2:
        mn = builder.mul(m, n)
        q, pid = _divrem(builder, linear, mn, small)
        lead = _row_major(builder, grid[:-2], q, small)
    group = umin(builder, const_i64(order[1]), m)
    in_group = builder.mul(group, n)
    band, rest = _divrem(builder, pid, in_group, small)
    first_m = builder.mul(band, group)
    size_m = umin(builder, builder.sub(m, first_m), group)
    pid_n, r = _divrem(builder, rest, size_m, small)
    pid_m = builder.add(first_m, r)
    return lead + [pid_m, pid_n]
