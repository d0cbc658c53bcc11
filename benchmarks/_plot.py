"""Draw a benchmark's table as a PNG: where numba_tile stands against each peer, and the figures.

Shared by ``benchmarks/*.py`` (each has ``--plot PATH`` and ``--no-plot``). A figure is a stack
of :class:`Panel`\\ s over one x axis of categories (a table's rows: a size, a shape, a cell),
grouped (an op and dtype, a number of arguments) with a label over each group:

* a *ratio* panel draws, per category, one bar per peer of numba_tile / peer, on a log2 axis,
  from the 1.0 line (parity) up or down, so 0.5x and 2x are the same distance from it; the
  axis label says which side favours numba_tile (higher bandwidth, or lower time);
* an *absolute* panel draws the figures themselves (TB/s, TFLOP/s, microseconds) per
  implementation, as grouped bars or as lines joined within a group (sizes in order).

matplotlib is imported only when a figure is drawn, through its Agg canvas (no pyplot, no
display, no global backend switch); without matplotlib, :func:`plot` prints one line saying the
plot was skipped and returns None. A figure that fails to draw is reported on one line too: the
benchmark's printed table is the result, the plot a view of it.
"""

from __future__ import annotations

import argparse
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
PLOT_DIR = ROOT / "docs" / "plots"

#: Gap between two groups of categories, in category widths.
GROUP_GAP = 0.8
#: Ticks a ratio axis may get (the ones inside its range are used).
RATIO_TICKS = (1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 0.8, 0.9, 1.0,
               1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: Largest number of bars in a panel that still get their value written on them.
ANNOTATE_BARS = 60


@dataclass
class Panel:
    """One panel of a figure.

    Args:
        title: the panel's title.
        categories: one ``(group, label)`` per x position, in order; consecutive categories
            of one group are drawn together under the group's name (``("add fp32", "2^22")``).
        series: name -> one value per category (NaN or None: nothing drawn there). In a ratio
            panel a name is the peer's (numba_tile / that peer), so that it gets the same colour
            as the peer's own series in an absolute panel of the same figure.
        ylabel: the y axis label (units).
        ratio: values are ratios numba_tile / peer: bars from the 1.0 line, log2 axis.
        better: ``"higher"`` (bandwidth, throughput) or ``"lower"`` (time): which side of 1.0
            favours numba_tile; said on the axis.
        log: absolute panels: log10 y axis (figures spanning decades).
        style: absolute panels: ``"bars"`` or ``"lines"`` (markers joined within a group).
    """

    title: str
    categories: Sequence[tuple]
    series: Mapping[str, Sequence]
    ylabel: str
    ratio: bool = False
    better: str = "higher"
    log: bool = False
    style: str = "bars"

    def __post_init__(self):
        if self.better not in ("higher", "lower"):
            raise ValueError(f"Panel {self.title!r}: better: expected 'higher' or 'lower', "
                             f"got {self.better!r}")
        if self.style not in ("bars", "lines"):
            raise ValueError(f"Panel {self.title!r}: style: expected 'bars' or 'lines', "
                             f"got {self.style!r}")
        n = len(self.categories)
        for name, values in self.series.items():
            if len(values) != n:
                raise ValueError(f"Panel {self.title!r}: series {name!r} has {len(values)} "
                                 f"values for {n} categories")


# ------------------------------------------------------------------------------ options

def default_path(benchmark: str) -> Path:
    """``docs/plots/<benchmark>.png`` under the repository root."""
    return PLOT_DIR / f"{benchmark}.png"


def add_plot_arguments(parser: argparse.ArgumentParser, benchmark: str) -> None:
    """``--plot PATH`` (default :func:`default_path`) and ``--no-plot`` (``args.plot`` None);
    the last one given wins (a script's ``--plot`` can be overridden by its caller's
    ``--no-plot``)."""
    default = default_path(benchmark)
    try:
        shown = default.relative_to(ROOT)
    except ValueError:
        shown = default
    parser.add_argument("--plot", type=Path, default=default, metavar="PATH",
                        help=f"draw the table as a PNG there after printing it (default {shown}; "
                             f"folders created; needs matplotlib, skipped without it)")
    parser.add_argument("--no-plot", dest="plot", action="store_const", const=None,
                        help="draw no plot")


# ------------------------------------------------------------------------------ values

def finite(v) -> bool:
    """True for a real number that is neither NaN nor infinite (None, strings: False)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        try:                       # NumPy scalars
            v = float(v)
        except (TypeError, ValueError):
            return False
    return math.isfinite(v)


def _positions(categories) -> tuple:
    """x of each category, and [(group, first x, last x)], with a gap between groups."""
    xs, groups, x = [], [], 0.0
    for i, cat in enumerate(categories):
        group = cat[0]
        if i and group != categories[i - 1][0]:
            x += GROUP_GAP
        xs.append(x)
        if i and group == categories[i - 1][0]:
            groups[-1][2] = x
        else:
            groups.append([group, x, x])
        x += 1.0
    return xs, groups


def _ratio_limits(values) -> tuple:
    vals = [float(v) for v in values if finite(v) and v > 0]
    lo = min(vals + [1.0]) / 1.25
    hi = max(vals + [1.0]) * 1.25
    return min(lo, 0.8), max(hi, 1.25)


def _ratio_ticks(lo: float, hi: float) -> list:
    """Powers of two inside [lo, hi]; the finer :data:`RATIO_TICKS` when fewer than 4 fit."""
    powers = [2.0 ** i for i in range(-10, 11) if lo <= 2.0 ** i <= hi]
    if len(powers) >= 4:
        step = 1 + (len(powers) - 1) // 8          # at most 9 ticks, 1.0 among them
        return [t for t in powers if round(math.log2(t)) % step == 0]
    return [t for t in RATIO_TICKS if lo <= t <= hi]


def _fmt_ratio(v: float) -> str:
    return f"{v:.2f}" if v < 10 else f"{v:.0f}"


def _fmt_value(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


# ------------------------------------------------------------------------------ drawing

def _colors(panels) -> dict:
    """One colour per series name across the figure, in order of first appearance."""
    from matplotlib import colormaps

    names = []
    for p in panels:
        names += [n for n in p.series if n not in names]
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def _draw_groups(ax, groups, label_y: float = 1.0) -> None:
    """Dashed separators between groups and each group's name over the panel."""
    for i, (name, first, last) in enumerate(groups):
        if i:
            ax.axvline(first - 0.5 - GROUP_GAP / 2, color="0.6", lw=0.8, ls="--", zorder=0)
        if name:
            ax.text((first + last) / 2, label_y, str(name), transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8, clip_on=False)


def _bar_layout(nseries: int) -> tuple:
    width = 0.8 / max(nseries, 1)
    return width, [(-0.4 + width * (i + 0.5)) for i in range(nseries)]


def _draw_ratio(ax, panel, xs, colors) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    names = list(panel.series)
    width, offsets = _bar_layout(len(names))
    every = [v for vals in panel.series.values() for v in vals]
    lo, hi = _ratio_limits(every)
    nbars = sum(finite(v) and v > 0 for v in every)
    for name, off in zip(names, offsets):
        pts = [(x + off, float(v)) for x, v in zip(xs, panel.series[name]) if finite(v) and v > 0]
        if not pts:
            ax.bar([], [], color=colors[name], label=f"{name} (none)")
            continue
        bx, bv = zip(*pts)
        ax.bar(bx, [v - 1.0 for v in bv], bottom=1.0, width=width * 0.92, color=colors[name],
               label=name, zorder=2)
        if nbars <= ANNOTATE_BARS:
            for x, v in pts:
                ax.text(x, v, _fmt_ratio(v), ha="center", va="bottom" if v >= 1 else "top",
                        fontsize=6, rotation=90 if nbars > 24 else 0, zorder=3)
    ax.set_yscale("log", base=2)
    ax.set_ylim(lo, hi)
    ticks = _ratio_ticks(lo, hi)
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{t:.3g}" for t in ticks])
    ax.axhline(1.0, color="black", lw=1.2, zorder=4)
    side = "above" if panel.better == "higher" else "below"
    ax.set_ylabel(f"{panel.ylabel}\n({side} 1: numba_tile better)", fontsize=8)


def _draw_absolute(ax, panel, xs, groups, colors) -> None:
    names = list(panel.series)
    every = [float(v) for vals in panel.series.values() for v in vals if finite(v)]
    positive = [v for v in every if v > 0]
    if panel.log and positive:
        ax.set_yscale("log")
        floor = min(positive) / 1.6
    else:
        floor = 0.0
    if panel.style == "lines":
        for name in names:
            px, pv = [], []
            for (gname, first, last) in groups:
                for x, v in zip(xs, panel.series[name]):
                    if first <= x <= last:
                        ok = finite(v) and (v > 0 or not panel.log)
                        px.append(x)
                        pv.append(float(v) if ok else math.nan)
                px.append(math.nan)            # break the line between groups
                pv.append(math.nan)
            ax.plot(px, pv, marker="o", ms=3.5, lw=1.3, color=colors[name], label=name, zorder=2)
    else:
        width, offsets = _bar_layout(len(names))
        nbars = sum(finite(v) and (v > 0 or not panel.log)
                    for vals in panel.series.values() for v in vals)
        for name, off in zip(names, offsets):
            pts = [(x + off, float(v)) for x, v in zip(xs, panel.series[name])
                   if finite(v) and (v > 0 or not panel.log)]
            if not pts:
                ax.bar([], [], color=colors[name], label=f"{name} (none)")
                continue
            bx, bv = zip(*pts)
            ax.bar(bx, [v - floor for v in bv], bottom=floor, width=width * 0.92,
                   color=colors[name], label=name, zorder=2)
            if nbars <= ANNOTATE_BARS:
                for x, v in pts:
                    ax.text(x, v, _fmt_value(v), ha="center", va="bottom", fontsize=6,
                            rotation=90 if nbars > 24 else 0, zorder=3)
    if every:
        top = max(every)
        if panel.log and positive:
            ax.set_ylim(floor, top * 2.0)
        else:
            ax.set_ylim(min(0.0, min(every) * 1.1), top * 1.18 if top > 0 else 1.0)
    ax.set_ylabel(panel.ylabel, fontsize=8)


def plot(path, title: str, panels: Sequence[Panel], note: str | None = None):
    """Draw ``panels`` one above the other into the PNG file ``path``.

    Args:
        path (str | Path | None): the file; its folder is created. None: nothing is drawn.
        title: the figure's title (the benchmark, the GPU).
        panels: the panels, top to bottom; each has its own categories.
        note: a line of small print under the figure (method, versions).

    Returns:
        The path written, or None (no path, matplotlib missing, or drawing failed: said on one
        line each).
    """
    if path is None:
        return None
    path = Path(path)
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        print(f"plot skipped: matplotlib is not importable ({exc}); {path} not written")
        return None
    try:
        panels = [p for p in panels if p.categories and p.series]
        if not panels:
            print(f"plot skipped: nothing to draw; {path} not written")
            return None
        colors = _colors(panels)
        layouts = []
        most = 1.0
        for p in panels:
            xs, groups = _positions(p.categories)
            layouts.append((xs, groups))
            bars = len(p.categories) * (len(p.series) if p.style == "bars" or p.ratio else 1)
            most = max(most, len(p.categories) + GROUP_GAP * len(groups), bars * 0.22)
        width = min(max(9.0, 2.5 + 0.22 * most), 60.0)
        longest = max(len(str(c[1])) for p in panels for c in p.categories)
        label_room = min(0.09 * longest, 1.6)
        heights = [3.4 + label_room for _ in panels]
        fig = Figure(figsize=(width, sum(heights) + 0.9 + (0.3 if note else 0.0)),
                     layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=heights)[:, 0]
        for ax, p, (xs, groups) in zip(axes, panels, layouts):
            if p.ratio:
                _draw_ratio(ax, p, xs, colors)
            else:
                _draw_absolute(ax, p, xs, groups, colors)
            _draw_groups(ax, groups)
            ax.set_xticks(xs)
            rotate = 90 if longest * len(xs) > 6 * width else 0
            ax.set_xticklabels([str(c[1]) for c in p.categories], rotation=rotate, fontsize=7)
            ax.set_xlim(xs[0] - 0.7, xs[-1] + 0.7)
            ax.tick_params(axis="y", labelsize=7)
            ax.grid(axis="y", color="0.9", zorder=0)
            ax.set_title(textwrap.fill(p.title, max(40, int(width * 9))), fontsize=9,
                         pad=14 if any(g[0] for g in groups) else 6)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        fig.suptitle(textwrap.fill(title, max(40, int(width * 11))), fontsize=11)
        if note:
            fig.supxlabel(textwrap.fill(note, max(60, int(width * 18))), fontsize=7, color="0.3")
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    except Exception as exc:  # the table is printed already: a failed plot costs only the plot
        print(f"plot failed ({type(exc).__name__}: {exc}); {path} not written")
        return None
    print(f"plot written to {path} (matplotlib {matplotlib.__version__})")
    return path
