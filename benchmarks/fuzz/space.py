"""The configuration space: draws one case's values, uniformly over each range with a bias
towards the edges (the smallest and largest tile extents, empty and one-element arrays, tiles
larger than the array), from a ``random.Random`` seeded by the run's seed and the case's
number, so a case is drawn again exactly from its id."""

from __future__ import annotations

import random

#: ``num_warps`` values sampled (1 to 16 warps, the powers of two)
WARPS = (1, 2, 4, 8, 16)
#: ``num_stages`` values sampled
STAGES = (1, 2, 3, 4, 5)
#: the probability that a drawn value is taken from the edges of its range
EDGE = 0.3


def case_random(seed: int, index: int, family: str) -> random.Random:
    """The generator of case ``index`` of family ``family`` in the run of ``seed`` (Python's
    string seeding hashes with SHA-512: the same on every machine and process)."""
    return random.Random(f"fuzz:{seed}:{index}:{family}")


class Space:
    """One case's draws.

    Args:
        rng: the case's generator (:func:`case_random`).
        edge: the probability that a draw comes from the edges of its range.
    """

    def __init__(self, rng: random.Random, edge: float = EDGE):
        self.rng = rng
        self.edge = edge

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.rng.random() < p

    def choice(self, seq):
        """One element of ``seq``, uniformly."""
        return self.rng.choice(list(seq))

    def integer(self, lo: int, hi: int) -> int:
        """An int in ``[lo, hi]``, with the bias towards ``lo`` and ``hi``."""
        if hi <= lo:
            return lo
        if self.chance(self.edge):
            return self.rng.choice((lo, hi))
        return self.rng.randint(lo, hi)

    def pow2(self, lo: int = 1, hi: int = 256) -> int:
        """A power of two in ``[lo, hi]``, uniform over the exponents, biased to the ends."""
        exps = [e for e in range(0, 20) if lo <= 2 ** e <= hi]
        if self.chance(self.edge):
            return 2 ** self.rng.choice((exps[0], exps[-1]))
        return 2 ** self.rng.choice(exps)

    def warps(self) -> int:
        """``num_warps``: 1 to 16."""
        return self.choice(WARPS)

    def stages(self) -> int:
        """``num_stages``: 1 to 5."""
        return self.choice(STAGES)

    def seed(self) -> int:
        """The seed of the case's data (its NumPy generator)."""
        return self.rng.randrange(2 ** 31)

    def extent(self, tile: int, max_tiles: int = 4, empty: float = 0.04) -> int:
        """An array extent along an axis split into ``tile``-element tiles: mostly ragged
        (not a multiple of the tile), at most ``max_tiles`` tiles; with the edge bias 0 (an
        empty array, with probability ``empty``), 1, ``tile - 1``, ``tile``, ``tile + 1``,
        or a tile much larger than the extent."""
        if self.chance(empty):
            return 0
        if self.chance(self.edge):
            picks = [1, tile, tile + 1, max(1, tile - 1), max(1, tile // 4 + 1)]
            return min(self.rng.choice(picks), tile * max_tiles)
        hi = max(1, tile * max_tiles)
        return self.rng.randint(1, hi)

    def tile_and_extent(self, lo: int = 1, hi: int = 256, max_elems: int = 1 << 16,
                        max_tiles: int = 4) -> tuple[int, int]:
        """A tile extent and an array extent along one axis, the array at most ``max_elems``
        long."""
        t = self.pow2(lo, hi)
        n = self.extent(t, max(1, min(max_tiles, max_elems // t)))
        return t, n


def fit_tiles(shape: list, tile: list, max_blocks: int) -> list:
    """``shape`` with its extents cut (largest number of tiles first) until its tile grid has
    at most ``max_blocks`` tiles, keeping each extent's remainder (raggedness) where it can."""
    shape = list(shape)

    def blocks():
        out = 1
        for n, t in zip(shape, tile):
            out *= max(1, -(-n // t))
        return out

    while blocks() > max_blocks:
        counts = [-(-n // t) for n, t in zip(shape, tile)]
        d = max(range(len(shape)), key=lambda i: counts[i])
        t = tile[d]
        rem = shape[d] % t
        shape[d] = max(1, (counts[d] // 2 - 1) * t + (rem or t))
    return shape


def fit_budget(tile: list, warps: int, per_thread: int = 256) -> list:
    """``tile`` with its largest extents halved until ``prod(tile) / (32 * warps)`` elements
    fit one thread's register budget (past 256 per thread numba_tile compiles the tile spilled,
    with a TilePerformanceWarning, and takes seconds to assemble it: tests/gpu/test_large_tiles.py
    covers those; the fuzzer keeps its cases within registers, to sample many)."""
    tile = list(tile)
    while _prod(tile) > per_thread * 32 * warps and max(tile) > 1:
        d = tile.index(max(tile))
        tile[d] //= 2
    return tile


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
