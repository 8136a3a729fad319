"""What the report's figures and the papers' figures draw with: matplotlib's Agg backend, a
figure of n panels, the decoration every line panel has (scales, title, labels, grid, the legend
below), and ticks that stay readable (the swept values themselves, or round values on a log
axis, labelled without mathtext). Nothing here knows a run's data: `figures` and the papers'
writers do, and both import these."""
from __future__ import annotations

import numpy as np


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def panel_grid(n: int, width=5.0, height=3.8, ncols_max=3):
    """A figure of n panels, ncols_max a row."""
    fig = pyplot().figure()
    return fig, grid_axes(fig, n, width, height, ncols_max)


def grid_axes(fig, n: int, width: float, height: float, ncols_max: int) -> np.ndarray:
    """n panels of width x height inches on `fig`, ncols_max a row, in a grid of whole rows whose
    last row's empty places get no axes (an axes costs its making even hidden)."""
    ncols = min(n, ncols_max)
    nrows = -(-n // ncols)
    fig.set_size_inches(width * ncols, height * nrows)
    grid = fig.add_gridspec(nrows, ncols)
    return np.array([fig.add_subplot(grid[i // ncols, i % ncols]) for i in range(n)], dtype=object)


def legend_below(ax, n):
    """Below the panel, never over the lines (the saved figure grows to hold it)."""
    if n and ax.get_legend_handles_labels()[1]:    # else matplotlib warns of an empty legend
        # One column: two columns of long labels run into the next panel's legend.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.26), frameon=False)


MAX_TICKS = 12      # value ticks on one axis (`value_ticks`)


def value_ticks(ax, values):
    """The swept values themselves as the x ticks (a log axis over less than a decade otherwise
    labels its minor ticks on top of each other); of values closer than a tenth of a decade (a
    lambda point's mean C beside a C point: 0.09183 and 0.1) only the first gets a tick. A sweep
    of more than MAX_TICKS values has its ticks at round values (0.001, 0.01, ... on a log axis),
    not at grid points no one chose (geomspace's 0.003199)."""
    from matplotlib.ticker import FixedLocator, NullLocator
    distinct = sorted(set(float(v) for v in values))
    positive = [v for v in distinct if v > 0]
    if len(distinct) > MAX_TICKS:
        # A dense sweep (geomspace of hundreds of C values): its values are no one's round
        # numbers (0.003199, 0.01023): ticks at round values instead, as any axis has them.
        if ax.get_xscale() == "log" and len(positive) == len(distinct):
            log_ticks(ax, x=True, y=False)
        else:
            from matplotlib.ticker import MaxNLocator
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
        return
    span = np.log10(positive[-1] / positive[0]) if len(positive) > 1 else 0.0
    gap = max(0.1, span / MAX_TICKS)

    def close(a, b):
        return a == b or (a > 0 and b > 0 and np.log10(b / a) < gap)
    ticks = []
    for v in distinct:
        if not ticks or not close(ticks[-1], v):
            ticks.append(v)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    # Compact labels (1e+05, 5000, 0.0005, 0.08675), not the tables' `fmt` (1.000e+05 beside 1e+04).
    labels = [f"{v:.4g}" for v in ticks]
    # Many ticks, or long labels (1.705e-05 beside 0.0001705), run into each other unless turned.
    rotate = len(ticks) > 6 or len(ticks) * max(map(len, labels), default=0) > 30
    ax.set_xticklabels(labels, rotation=45 if rotate else 0)
    legend = ax.get_legend()
    if rotate and legend is not None and legend.get_bbox_to_anchor().y0 < ax.bbox.y0:
        # Rotated labels run deeper: the legend below the panel moves down past the x label.
        legend.set_bbox_to_anchor((0.5, -0.36), transform=ax.transAxes)


def decorate(ax, title, xlabel, ylabel, n_legend, logx=False, logy=False):
    """What every line panel has: scales, title, axis labels, grid, the legend below."""
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    # y given: matplotlib then skips placing the title above any top tick labels (there are
    # none), which measured every tick label of every panel again at each draw.
    ax.set_title(title, y=1.0, **({"fontsize": 10} if "\n" in title else {}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    legend_below(ax, n_legend)


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def power_label(v, _pos=None) -> str:
    """10⁻³ in plain unicode: matplotlib's own $10^{-3}$ goes through mathtext, whose layout was
    most of the time of saving a figure of a dozen log-log panels."""
    if v <= 0:
        return ""
    k = np.log10(v)
    return "10" + str(int(round(k))).translate(_SUPERSCRIPT) if abs(k - round(k)) < 1e-9 else f"{v:g}"


def log_ticks(ax, x=True, y=True):
    """Over many log decades, major ticks only (minor ones dominate drawing time and add
    nothing); over two decades or less, ticks at 1, 2 and 5 times the powers of ten, labelled
    plainly (matplotlib's own would label the minor ticks `3x10^0 4x10^0` on top of each other)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator
    for axis, on, lim in ((ax.xaxis, x, ax.get_xlim()), (ax.yaxis, y, ax.get_ylim())):
        lo, hi = sorted(lim)
        if not on or lo <= 0:
            continue
        if hi / lo > 100:
            axis.set_major_locator(LogLocator(numticks=8))
            axis.set_major_formatter(FuncFormatter(power_label))
        else:
            loc = LogLocator(subs=(1.0, 2.0, 5.0))
            if sum(lo <= t <= hi for t in loc.tick_values(lo, hi)) < 3:      # under a factor of 5 or so
                # Denser, but no two ticks closer than a factor of 4/3 (0.09 beside 0.1 overlapped).
                loc = LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0))
            axis.set_major_locator(loc)
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_locator(NullLocator())
        axis.set_minor_formatter(NullFormatter())


def sort_value(v):
    """Grid order of one key's values: numbers ascending, then the rest by name."""
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))
