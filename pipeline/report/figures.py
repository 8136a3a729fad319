"""The report's figures, each registered with the columns it needs (see registry.py). Every
function returns a matplotlib Figure; labels name every swept key (a lambda point by its lambda),
a panel draws at most MAX_LINES lines (the best by the figure's measure, its title says of how
many), and a dataset with nothing to draw gets no panel (the figure's title names it)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .columnar import lit, q
from .common import (F_STAR_HINT, LAMBDA, MAX_LINES, MISSING, certainty_floor, config_columns, fmt, key_value, keyed, label,
                     present, problem_columns, short, styles)
from .registry import MAX_PROBLEMS, ReportData, Skip, figure
from .speed import speed_view, target_of, timed_fits


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _panels(n: int, width=5.0, height=3.8, ncols_max=3):
    """A figure of n panels, ncols_max a row."""
    fig = _plt().figure()
    return fig, _grid(fig, n, width, height, ncols_max)


def _grid(fig, n: int, width: float, height: float, ncols_max: int) -> np.ndarray:
    """n panels of width x height inches on `fig`, ncols_max a row, in a grid of whole rows whose
    last row's empty places get no axes (an axes costs its making even hidden)."""
    ncols = min(n, ncols_max)
    nrows = -(-n // ncols)
    fig.set_size_inches(width * ncols, height * nrows)
    grid = fig.add_gridspec(nrows, ncols)
    return np.array([fig.add_subplot(grid[i // ncols, i % ncols]) for i in range(n)], dtype=object)


# Figures of small multiples kept, by layout (panels, panel size, columns), for the next figure
# of that layout in this process (`page_figure`): their axes, and the ticks of each, are made
# once, and cleared of what a figure drew before they draw the next (`_clear_page`): making them
# is a large share of drawing a page (docs/benchmarks/sweep.md, the report of a small run). Not
# pyplot's: `clear_pages` empties them (every array and artist a figure drew let go) where
# pyplot's figures are closed; a process keeps a few, empty, per layout it drew.
_KEPT: dict[tuple, list] = {}      # layout -> [[figure, state]]; state: "drawing", "saved", "clear"


def page_figure(n: int, width: float, height: float, ncols_max: int):
    """(figure, axes) of `_panels`' layout: a kept figure of that layout not drawing now, cleared,
    or a new one kept from now on. `saved` hands it back once save_figure has drawn it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    kept = _KEPT.setdefault((n, width, height, ncols_max), [])
    for entry in kept:
        if entry[1] != "drawing":
            if entry[1] == "saved":
                _clear_page(entry[0])
            entry[1] = "drawing"
            return entry[0], entry[0]._svmbench_page["axes"]
    fig = Figure()
    FigureCanvasAgg(fig)
    axes = _grid(fig, n, width, height, ncols_max)
    pars = fig.subplotpars
    fig._svmbench_page = {"axes": axes, "size": tuple(fig.get_size_inches()), "dpi": fig.get_dpi(),
                          "pars": {k: getattr(pars, k) for k in ("left", "right", "bottom", "top", "wspace", "hspace")},
                          "positions": [ax.get_position() for ax in axes]}
    kept.append([fig, "drawing"])
    return fig, axes


def saved(fig) -> bool:
    """A kept figure's drawing is saved: it may be cleared and drawn again. False for a figure
    that is not kept (its caller closes it)."""
    for kept in _KEPT.values():
        for entry in kept:
            if entry[0] is fig:
                entry[1] = "saved"
                return True
    return False


def clear_pages() -> None:
    """Every kept figure cleared of what it drew (a figure that raised halfway too)."""
    for kept in _KEPT.values():
        for entry in kept:
            if entry[1] != "clear":
                _clear_page(entry[0])
                entry[1] = "clear"


def _clear_page(fig) -> None:
    """A kept figure as `page_figure` made it: no line, band, legend nor heading; its size, dpi,
    margins and panel places as made (save_figure grows and spaces them); linear scales, no
    titles nor labels. Its axes and their ticks stay."""
    import matplotlib as mpl
    page = fig._svmbench_page
    for leg in list(fig.legends):
        leg.remove()
    for text in list(fig.texts):
        text.remove()
    fig._suptitle = None
    fig.set_dpi(page["dpi"])
    fig.set_size_inches(page["size"], forward=False)
    fig.subplots_adjust(**page["pars"])
    for ax, pos in zip(page["axes"], page["positions"]):
        ax.set_position(pos)
        for artist in [*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images]:
            artist.remove()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        ax.set_xscale("linear")
        ax.set_yscale("linear")
        ax.relim()
        ax.set_autoscale_on(True)
        ax.set_prop_cycle(None)
        ax.grid(False)
        ax.set_title("", fontsize=mpl.rcParams["axes.titlesize"])
        ax.set_xlabel("")
        ax.set_ylabel("")


def _legend(ax, n):
    """Below the panel, never over the lines (the saved figure grows to hold it)."""
    if n and ax.get_legend_handles_labels()[1]:    # else matplotlib warns of an empty legend
        # One column: two columns of long labels run into the next panel's legend.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.26), frameon=False)


def figure_legend(fig, axes, order=None, **kw):
    """One legend for a figure whose panels share their lines (the same methods on each dataset):
    the labels of every panel once, in the order first drawn (or `order`'s, for the pages of one
    grid to list alike), below the panels, instead of the same list under each panel."""
    seen = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(text, handle)
    if order is not None:
        rank = {lab: i for i, lab in enumerate(order)}
        seen = dict(sorted(seen.items(), key=lambda kv: rank.get(kv[0], len(rank))))
    if seen:
        from matplotlib.transforms import blended_transform_factory
        # Centred on the figure, hung below the lowest panel in its own axes units, so that it
        # follows that panel when save_figure spaces the rows (figure units would not).
        low = min(axes, key=lambda ax: ax.get_position().y0)
        fig.legend(list(seen.values()), list(seen), loc="upper center", ncols=min(len(seen), 4),
                   frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.22),
                   bbox_transform=blended_transform_factory(fig.transFigure, low.transAxes), **kw)


# Seeds of a solver's randomness: random_state (sampling, order) and init_seed (the random start
# of the majorization and CPM solvers, troyan).
START_KEYS = ("param_random_state", "param_init_seed")


def _configs(data: ReportData, fits: pd.DataFrame, starts: bool = False):
    """(fits keyed, the config key without the dataset, the swept keys a label names). Random
    starts (START_KEYS) are runs of one line, like folds, unless `starts` (a figure of single runs)."""
    cfg = [c for c in config_columns(fits) if c != "dataset"]
    shown = data.swept()
    if not starts:
        cfg = [c for c in cfg if c not in START_KEYS]
        shown = [c for c in shown if c not in START_KEYS]
    return keyed(fits, cfg), ["solver_entry"] + cfg, shown


MAX_TICKS = 12      # value ticks on one axis (`_value_ticks`)


def _value_ticks(ax, values):
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
            _log_ticks(ax, x=True, y=False)
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


def _decorate(ax, title, xlabel, ylabel, n_legend, logx=False, logy=False):
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
    _legend(ax, n_legend)


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _power_label(v, _pos=None) -> str:
    """10⁻³ in plain unicode: matplotlib's own $10^{-3}$ goes through mathtext, whose layout was
    most of the time of saving a figure of a dozen log-log panels."""
    if v <= 0:
        return ""
    k = np.log10(v)
    return "10" + str(int(round(k))).translate(_SUPERSCRIPT) if abs(k - round(k)) < 1e-9 else f"{v:g}"


def _log_ticks(ax, x=True, y=True):
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
            axis.set_major_formatter(FuncFormatter(_power_label))
        else:
            loc = LogLocator(subs=(1.0, 2.0, 5.0))
            if sum(lo <= t <= hi for t in loc.tick_values(lo, hi)) < 3:      # under a factor of 5 or so
                # Denser, but no two ticks closer than a factor of 4/3 (0.09 beside 0.1 overlapped).
                loc = LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0))
            axis.set_major_locator(loc)
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_locator(NullLocator())
        axis.set_minor_formatter(NullFormatter())


GAP_PT = 4.0


_SIZES: dict = {}


def _text_size(renderer, text: str, prop, ismath: bool) -> tuple[float, float]:
    """(width, height) in pixels, kept by text, font and dpi: the renderer lays the text out anew
    at each call (set_text), and the same few labels recur on every panel of a report."""
    key = (text, hash(prop), renderer.dpi, ismath)
    if key not in _SIZES:
        w, h, _ = renderer.get_text_width_height_descent(text, prop, ismath=ismath)
        _SIZES[key] = (w, h)
    return _SIZES[key]


def _measuring_renderer(dpi: float):
    from matplotlib.backends.backend_agg import RendererAgg
    return RendererAgg(8, 8, dpi)


def _spaced_class():
    """SpacedLocator, made on first use (matplotlib stays out of this module's import)."""
    from matplotlib.ticker import Locator

    class SpacedLocator(Locator):
        """The ticks of another locator, thinned to every k-th (k = 1, 2, ...: the least that fits)
        so that no two tick labels come closer than GAP_PT along the axis: measured at draw time
        with the renderer's own text extents, in the axis's own transform, so that it holds for any
        scale, range, panel size and formatter (0.0005 beside 0.001 on a narrow linear time axis
        ran together)."""

        def __init__(self, base):
            self.base = base
            self._last = (None, None)       # (what the ticks were thinned for, the ticks)

        def set_axis(self, axis):
            super().set_axis(axis)
            self.base.set_axis(axis)

        def tick_values(self, vmin, vmax):
            return self.base.tick_values(vmin, vmax)

        def __call__(self):
            ticks = np.asarray(self.base(), dtype=float)
            axis = self.axis
            lo, hi = sorted(axis.get_view_interval())
            inside = ticks[(ticks >= lo - 1e-12 * abs(hi - lo)) & (ticks <= hi + 1e-12 * abs(hi - lo))]
            if inside.size < 3:
                return ticks
            fig = axis.get_figure(root=True) if hasattr(axis, "get_figure") else axis.figure
            # A draw asks an axis for its ticks three times (the ticks, the label's place, the
            # offset text's): thinned once for the same ticks, range, scale, panel and dpi.
            key = (tuple(ticks), lo, hi, axis.get_scale(), axis.axes.bbox.bounds, fig.dpi,
                   id(axis.get_major_formatter()))
            if self._last[0] == key:
                return self._last[1]
            self._last = (key, self._spaced(axis, fig, inside))
            return self._last[1]

        def _spaced(self, axis, fig, inside):
            # Measured the way Agg draws text, at the figure's dpi of the moment (a PDF is
            # laid out at 72): the canvas drawing may be one without a renderer to ask (PDF).
            renderer = (fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer")
                        else _measuring_renderer(fig.dpi))
            x_axis = axis.axis_name == "x"
            prop = axis.majorTicks[0].label1.get_fontproperties()      # not get_major_ticks: it calls us
            fmt_ = axis.get_major_formatter()
            labels = fmt_.format_ticks(list(inside))
            size = []
            for text in labels:
                w = h = 0.0
                for line in str(text).split("\n"):
                    ismath = line.count("$") >= 2
                    lw, lh = _text_size(renderer, line, prop, ismath) if line else (0.0, 0.0)
                    w, h = max(w, lw), h + lh * 1.2
                size.append(w if x_axis else h)
            size = np.asarray(size)
            other = (axis.axes.yaxis if x_axis else axis.axes.xaxis).get_view_interval()[0]
            pts = np.column_stack([inside, np.full(inside.size, other)] if x_axis else [np.full(inside.size, other), inside])
            at = axis.axes.transData.transform(pts)[:, 0 if x_axis else 1]
            gap = GAP_PT * fig.dpi / 72.0
            order = np.argsort(at)
            at, size, inside = at[order], size[order], inside[order]
            for k in range(1, inside.size):
                for start in range(k):
                    keep = np.arange(start, inside.size, k)
                    c, s_ = at[keep], size[keep]
                    if np.all(c[1:] - s_[1:] / 2 - (c[:-1] + s_[:-1] / 2) >= gap):
                        return inside[keep]
            return inside[:1]

    return SpacedLocator


_SPACED = []


def space_ticks(fig) -> None:
    """Every axis of the figure whose labels its formatter makes from the tick values (not a fixed
    list of labels, which thinning would shift, nor turned labels) gets its major locator wrapped
    in SpacedLocator: its labels cannot run into each other, whatever drew it."""
    from matplotlib.ticker import FixedFormatter
    if not _SPACED:
        _SPACED.append(_spaced_class())
    cls = _SPACED[0]
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            loc = axis.get_major_locator()
            if isinstance(loc, cls) or isinstance(axis.get_major_formatter(), FixedFormatter):
                continue
            if axis.majorTicks[0].label1.get_rotation() != 0:
                continue
            axis.set_major_locator(cls(loc))


def fold_band(curves: list[tuple[np.ndarray, np.ndarray]], log_x: bool):
    """Median and quartiles over folds of step curves (x, y), on a grid shared by the folds:
    from the first x any fold has to the last; a fold holds its first value before its first
    point and its last value after its end (it stopped there). Returns (grid, median, q25, q75): the
    band is the middle half of the folds, so one odd fold widens it less than a min-max band."""
    xs = np.concatenate([c[0] for c in curves])
    xs = xs[np.isfinite(xs) & ((xs > 0) if log_x else True)]
    if xs.size == 0:
        return None
    lo, hi = xs.min(), xs.max()
    grid = np.geomspace(lo, hi, 60) if log_x and hi > lo else np.linspace(lo, hi, 60)
    grid = np.unique(np.concatenate([grid, np.sort(xs)])) if xs.size <= 200 else grid
    vals = np.full((len(curves), grid.size), np.nan)
    for i, (x, y) in enumerate(curves):
        order = np.argsort(x, kind="stable")
        x, y = np.asarray(x)[order], np.asarray(y)[order]
        # Before its first point a fold is where it started: its first value (left NaN, a fold
        # starting late -- a warm start's setup, a slow first pass -- would pull the median of
        # the others up and down as it joined).
        pos = np.maximum(np.searchsorted(x, grid, side="right") - 1, 0)
        vals[i] = y[pos]
    q25, med, q75 = nan_quantiles(vals, (0.25, 0.5, 0.75))
    return grid, med, q25, q75


def nan_quantiles(vals: np.ndarray, qs) -> list[np.ndarray]:
    """np.nanquantile(vals, qs, axis=0) (linear interpolation, NaN where a column has no value)
    for the few rows (folds) of a band: sorted once, NaNs last, not column by column as numpy's
    nanquantile does, which was a fifth of a convergence figure's time."""
    v = np.sort(vals, axis=0)
    n = (~np.isnan(v)).sum(axis=0)
    cols = np.arange(v.shape[1])
    out = []
    for frac in qs:
        pos = frac * np.maximum(n - 1, 0)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
        a, b = v[lo, cols], v[hi, cols]
        with np.errstate(invalid="ignore"):       # inf - inf where a fold stays infinite
            val = np.where(pos == lo, a, a + (pos - lo) * (b - a))
        out.append(np.where(n > 0, val, np.nan))
    return out


def best_lines(lines: list, score, what: str, higher: bool = False) -> tuple[list, str]:
    """At most MAX_LINES of a panel's lines, in their own order: the best by score(line) (lowest,
    or highest if `higher`; NaN last), and what the panel title says of the cut ("" if none).
    A reader sees the leaders legibly; the tables keep every configuration."""
    if len(lines) <= MAX_LINES:
        return lines, ""
    s = np.array([score(line) for line in lines], dtype=float)
    order = np.argsort(np.where(np.isnan(s), np.inf, -s if higher else s), kind="stable")
    keep = sorted(order[:MAX_LINES])
    return [lines[i] for i in keep], f"{MAX_LINES} best of {len(lines)} configurations by {what}"


def panel_title(ds: str, cut: str) -> str:
    return f"{ds}\n{cut}" if cut else ds


def left_out(fig, why: dict[str, str], heading: str = "") -> None:
    """Name the datasets (or problems) given no panel (nothing to draw) above the figure, under
    the figure's own heading if it has one (a page of a paged grid), wrapped to the figure's width."""
    import textwrap
    lines = [heading] if heading else []
    if why:
        lines.append("No panel: " + "; ".join(f"{ds} ({w})" for ds, w in why.items()))
    if lines:
        width = max(60, int(fig.get_figwidth() * 14))        # characters of 9 pt type across the figure
        text = "\n".join(textwrap.fill(line, width) for line in "\n".join(lines).split("\n"))
        fig.suptitle(text, fontsize=9, color="0.3")


# ------------------------------------------------------------------ one problem per panel
# A convergence figure pages into several figures beyond this many panels (PANEL_COLS a row): a
# grid of 21 problems is two figures of legible panels, never one of 21 stamps, and none dropped.
MAX_PANELS = 12
PANEL_COLS = 4


def _sort_value(v):
    """Grid order of one key's values: numbers ascending, then the rest by name."""
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def problem_key_columns(fits: pd.DataFrame) -> list[str]:
    """What makes one problem (the paper's unit of comparison): the dataset and every problem key,
    and lambda where a point was given by it (C then its mean over the folds, `point_C`), in the
    order panels are sorted: dataset, then kind (kernel, loss, intercept), then the numbers, C last
    so that a row of panels reads along the C path."""
    first = ["dataset", "kernel", "loss", "intercept"]
    nums = [c for c in problem_columns(fits) if c not in first and c != "C"]
    lam = [c for c in (LAMBDA, "param_lambda_convention") if c in fits.columns]
    return present(fits, first) + nums + lam + present(fits, ["C"])


def problems(fits: pd.DataFrame) -> tuple[pd.DataFrame, list[str], list[tuple]]:
    """(fits keyed by problem and configuration, the problem columns, the problems in grid order)."""
    prob = problem_key_columns(fits)
    cfg = [c for c in config_columns(fits) if c not in START_KEYS]
    keyed_fits = keyed(fits, list(dict.fromkeys(prob + cfg)))
    found = list(keyed_fits.groupby(prob, sort=False, dropna=False).groups)
    found = [k if isinstance(k, tuple) else (k,) for k in found]
    return keyed_fits, prob, sorted(found, key=lambda k: [_sort_value(v) for v in k])


def problem_title(key: dict, varying: list[str]) -> str:
    """`breast_cancer` over `kernel=rbf C=10`: the dataset, then the problem keys that differ
    between the figure's problems (C or lambda always), the missing ones (gamma of linear) left out."""
    given = key_value(key.get(LAMBDA, MISSING)) != MISSING
    parts = [f"{short(c)}={fmt(key[c])}" for c in varying
             if key_value(key[c]) != MISSING and not (c == "C" and given)]
    return f"{key['dataset']}\n{' '.join(parts)}" if parts else str(key["dataset"])


def varying_problem_keys(prob: list[str], found: list[tuple]) -> tuple[list[str], list[str]]:
    """(the problem keys a panel title names, the rest). Named: C and lambda always (what a reader
    of a convergence figure looks for first), and each other key, in order, that two problems
    agreeing on the dataset and the keys named so far still differ in: a kernel grid's titles say
    `kernel=rbf C=10`, not also the loss and intercept that come with each kernel (`fixed_keys_line`
    says those once)."""
    named = []
    pos = {c: i for i, c in enumerate(prob)}
    for c in prob:
        if c in ("dataset", "param_lambda_convention", "C", LAMBDA):
            continue
        seen: dict[tuple, set] = {}
        for k in found:
            seen.setdefault(tuple(k[pos[n]] for n in ["dataset", *named]), set()).add(k[pos[c]])
        if any(len(v) > 1 for v in seen.values()):
            named.append(c)
    named += [c for c in (LAMBDA, "C") if c in pos]
    return named, [c for c in prob if c not in named and c not in ("dataset", "param_lambda_convention")]


def fixed_keys_line(prob: list[str], found: list[tuple], named: list[str], rest: list[str]) -> str:
    """The problem keys no title names, said once for the figure: per value of the named kind
    keys (`kernel=linear: loss=squared_hinge intercept=regularized; kernel=rbf: loss=hinge ...`)."""
    pos = {c: i for i, c in enumerate(prob)}
    kinds = [c for c in named if c not in ("C", LAMBDA)]
    groups: dict[tuple, dict] = {}
    for k in found:
        vals = groups.setdefault(tuple(k[pos[c]] for c in kinds), {})
        for c in rest:
            vals.setdefault(c, set()).add(k[pos[c]])
    parts = []
    for kind, vals in groups.items():
        text = " ".join(f"{short(c)}={fmt(next(iter(v)))}" for c, v in vals.items()
                        if len(v) == 1 and key_value(next(iter(v))) != MISSING)
        head = " ".join(f"{short(c)}={fmt(v)}" for c, v in zip(kinds, kind))
        if text:
            parts.append(f"{head}: {text}" if head else text)
    texts = {p.split(": ", 1)[-1] for p in parts}
    if kinds and len(parts) == len(groups) and len(texts) == 1:      # the same for every kind: said once
        return "Every problem: " + texts.pop()
    return ("Problems: " if kinds else "Every problem: ") + "; ".join(parts) if parts else ""


# The columns of a fit `_problem_panels` hands its draw_line beside its entry and keys: its
# trace's key, its f*, the certainty floor and why its problem was chosen.
LINE_COLUMNS = ("key", "f_star", "_floor", "_why")


def _problem_panels(data: ReportData, fits: pd.DataFrame, draw_line):
    """Group fits into problems (grid order) and, within each, lines: a solver entry with every own
    swept key (a tol or step-size sweep is lines of one problem; folds and random starts are runs
    of a line). draw_line(grp, problem) -> (band, runs) or None, `problem` all the problem's fits,
    each with its problem and configuration keys and LINE_COLUMNS. Returns (panels, empty,
    fixed): panels are (title, [(label, runs, band)], problem); empty maps the title of a problem
    with nothing drawn to why; fixed names the keys the titles leave out."""
    # Only the columns read: every group below is a frame of its columns, and the results' ~90
    # (pyarrow strings most of them) made the grouping most of a convergence figure's own time.
    keep = (problem_key_columns(fits) + ["solver_entry"] + config_columns(fits)
            + [c for c in LINE_COLUMNS if c in fits.columns])
    fits, prob, found = problems(fits[list(dict.fromkeys(keep))])
    cfg = [c for c in config_columns(fits) if c not in START_KEYS]
    line_keys = ["solver_entry"] + [c for c in cfg if c not in prob]
    shown = [c for c in data.swept() if c not in prob and c not in START_KEYS]
    varying, rest = varying_problem_keys(prob, found)
    fixed = fixed_keys_line(prob, found, varying, rest)
    groups = fits.groupby(prob, sort=False, dropna=False)
    panels, empty = [], {}
    for key in found:
        sub = groups.get_group(key if len(prob) > 1 else key[0])
        title = problem_title(dict(zip(prob, key)), varying)
        if "_why" in sub.columns and sub["_why"].notna().any():        # a chosen problem says why
            title = f"{sub['_why'].dropna().iloc[0]}: {title}"
        lines = []
        for _, grp in sub.groupby(line_keys, sort=True, dropna=False):
            drawn = draw_line(grp, sub)
            if drawn is not None:
                lines.append((label(grp.iloc[0], shown), drawn[1], drawn[0]))
        if lines:
            panels.append((title, lines, sub))
        else:
            empty.setdefault(title.split("\n")[0], []).append(title.split("\n")[-1])
    # One entry per dataset: `breast_cancer (kernel=rbf C=0.1, kernel=rbf C=1: nothing finite)`.
    empty = {ds: ", ".join(ps) + ": nothing finite" if ps != [ds] else "nothing finite" for ds, ps in empty.items()}
    return panels, empty, fixed


def small_multiples(panels, draw_panel, what: str, empty=None, fixed: str = "", kept: bool = False):
    """Panels of one problem each, MAX_PANELS a figure (more page into further figures), a colour
    per line label the same in every panel and page, and one legend per figure. draw_panel(ax,
    title, lines, problem, style_of) draws one panel; `kept`: the pages are kept figures
    (`page_figure`), for a draw_panel that sets nothing `_clear_page` does not clear (scales,
    locators and formatters, titles and labels, lines and bands; no tick's own property). Returns
    a Figure, or a list of Figures for a grid that pages."""
    order = list(dict.fromkeys(lab for _, lines, _ in panels for lab, _, _ in lines))
    style_of = dict(zip(order, styles(len(order))))
    pages = [panels[i:i + MAX_PANELS] for i in range(0, len(panels), MAX_PANELS)]
    figs = []
    for p, page in enumerate(pages):
        fig, axes = (page_figure if kept else _panels)(len(page), 4.2, 3.3, PANEL_COLS)
        ncols = min(len(page), PANEL_COLS)
        for i, (ax, (title, lines, problem)) in enumerate(zip(axes, page)):
            draw_panel(ax, title, lines, problem, style_of)
            if i % ncols:                     # the y label once a row: every panel measures the same
                ax.set_ylabel("")
            if i < len(page) - ncols:         # the x label under the lowest panel of each column only
                ax.set_xlabel("")
        figure_legend(fig, axes, order)
        heading = (f"{what}: problems {p * MAX_PANELS + 1}-{p * MAX_PANELS + len(page)} of {len(panels)} "
                   f"(figure {p + 1} of {len(pages)})") if len(pages) > 1 else ""
        heading = "\n".join(x for x in (heading, fixed) if x)
        left_out(fig, (empty or {}) if p == len(pages) - 1 else {}, heading)
        figs.append(fig)
    return figs[0] if len(figs) == 1 else figs


# Past MAX_PROBLEMS problems, at most this many are drawn one panel each (one page), chosen by
# `chosen_problems`; of them at most MAX_UNCONVERGED for a fit that did not converge.
MAX_CHOSEN = 12
MAX_UNCONVERGED = 8


def panel_data(data: ReportData) -> ReportData:
    """The fits a figure of one panel per problem draws, as a small ReportData: every problem
    while the run has at most MAX_PROBLEMS (the figure as it always was), else the few that
    `chosen_problems` names, each fit's `_why` saying why its problem was chosen (the panel's
    title leads with it). Made once per data (a speed view has its own)."""
    if "panels" not in data.cache:
        if data.n_problems() <= MAX_PROBLEMS:
            data.cache["panels"] = data.subset()
        else:
            why = chosen_problems(data.root)
            data.cache["panels"] = data.subset(list(why), why)
    return data.cache["panels"]


def chosen_problems(data: ReportData) -> dict[str, str]:
    """{problem (`ReportData.pid`): why it is drawn} for a run of more problems than a figure
    draws one panel each: the problem of the best mean test accuracy over folds (of any of its
    configurations: the sweep's best CV score), the slowest (median fit time over folds), the one
    that ends farthest from optimal by its own certificate (median final (P - D)/|P|), and those
    whose fits did not all reach their own tolerance, the most such fits first, up to
    MAX_UNCONVERGED; MAX_CHOSEN in all. Ties go to the first in the problems' sort order."""
    types = data.types("fits")
    cols = data.frame_of("fits")
    own = [c for c in config_columns(cols) if c not in problem_columns(cols) and c not in START_KEYS]
    by = ", ".join(["_pid", "solver_entry"] + [data.norm(c, "fits") for c in own])
    acc = "favg(num(test_accuracy))" if "test_accuracy" in types else "NULL::DOUBLE"
    gap = ("median(nn(num(duality_gap) / abs(num(primal_objective))))"
           if {"duality_gap", "primal_objective"} <= set(types) else "NULL::DOUBLE")
    per = data.sql(f"""
        SELECT _pid, max(acc) AS acc, max(t) AS t, max(gap) AS gap, sum(bad) AS bad, sum(n) AS n FROM (
            SELECT _pid, {acc} AS acc, median(num(fit_time_s)) AS t, {gap} AS gap,
                   count_if(status IS DISTINCT FROM 'converged') AS bad, count(*) AS n
            FROM (SELECT *, {data.pid('fits')} AS _pid FROM {data.table('fits')}) GROUP BY {by})
        GROUP BY _pid ORDER BY _pid""")
    why: dict[str, list[str]] = {}

    def pick(col, text, n=1, where=None):
        rows = per if where is None else per[where]
        rows = rows[rows[col].notna()]
        if rows.empty:
            return
        # Largest first; of equal ones the first pid (the frame is sorted by pid: stable).
        for r in rows.sort_values(col, ascending=False, kind="stable").head(n).to_dict("records"):
            why.setdefault(r["_pid"], []).append(text(r))
    pick("acc", lambda r: f"best CV score ({fmt(float(r['acc']))})")
    pick("t", lambda r: f"slowest ({fmt(float(r['t']))} s)")
    pick("gap", lambda r: f"largest final gap ({fmt(float(r['gap']))})")
    room = min(MAX_UNCONVERGED, MAX_CHOSEN - len(why))
    if room > 0:
        pick("bad", lambda r: f"not converged ({int(r['bad'])}/{int(r['n'])} fits)", room,
             (per["bad"] > 0) & ~per["_pid"].isin(list(why)))
    return {pid: "; ".join(reasons) for pid, reasons in why.items()}


def _trace_figure(data: ReportData, y_of, x_col: str, xlabel: str, ylabel: str, log_y=True,
                  fits=None, floor=False):
    """Small multiples: one panel per problem (`problems`), one line per solver configuration:
    the median over folds of y_of(trace, fit) against x_col, with the folds' interquartile band;
    at most MAX_LINES lines a panel (those of least final median: every measure drawn this way
    is better lower)."""
    fits = data.fits if fits is None else fits
    fits = fits[fits["key"].isin(data.traces["key"])]
    if fits.empty:
        raise Skip("no finished fit has a trace")
    by_key = data.trace_arrays()
    # The figure's problems are those of the solver entries that measure y at all (smo notes no
    # ||w_k+1 - w_k||: the rbf problems are not this figure's); a problem of such an entry with
    # nothing finite is named above the figure.
    measuring = {row.solver_entry for row in fits[[c for c in ("key", "solver_entry", "f_star") if c in fits.columns]].itertuples(index=False)
                 if pd.notna(y_of(by_key[row.key], row)).any()}
    fits = fits[fits["solver_entry"].isin(measuring)]
    if fits.empty:
        raise Skip(f"no trace holds a {ylabel}")
    if floor:
        fits = fits.assign(_floor=certainty_floor(fits).to_numpy())

    def floor_of(problem):
        # Every line of a panel is floored at the coarsest certainty of the problem's f*s, drawn
        # as one dotted line: no point shows a suboptimality finer than its f* supports, and the
        # lines stay comparable (a line floored lower would look better for a better reference).
        return float(problem["_floor"].max()) if floor else -np.inf

    def draw_line(grp, problem):
        lowest = floor_of(problem)
        curves = []
        # Only the columns y_of reads: itertuples over the results' ~80 columns was a tenth of
        # the figure's time.
        for row in grp[[c for c in ("key", "f_star") if c in grp.columns]].itertuples(index=False):
            tr = by_key[row.key]
            y = np.maximum(y_of(tr, row), lowest)
            ok = np.isfinite(y)
            if ok.any():
                curves.append((np.asarray(tr[x_col], dtype=float)[ok], y[ok]))
        band = fold_band(curves, log_x=x_col == "time_s") if curves else None
        return None if band is None else (band, len(curves))

    panels, empty, fixed = _problem_panels(data, fits, draw_line)
    if not panels:
        raise Skip(f"no trace has a finite {ylabel} to draw")

    def draw_panel(ax, title, lines, problem, style_of):
        lines, cut = best_lines(lines, lambda line: line[2][1][-1], f"final {ylabel}")
        for lab, runs, (x, med, low, high) in lines:
            st = style_of[lab]
            # A marker at the end: where a line stops, and a line of one point (dcd done in one
            # pass) is still seen.
            ax.plot(x, med, label=lab, color=st["color"], linestyle=st["linestyle"], linewidth=1.3,
                    marker=st["marker"], markevery=[len(x) - 1], markersize=4)
            if runs > 1:
                ax.fill_between(x, low, high, color=st["color"], alpha=0.15, linewidth=0)
        lowest = min((float(np.nanmin(line[2][1])) for line in lines), default=np.inf)
        if floor and floor_of(problem) > lowest / 10:
            # Only where it bounds what is drawn: a floor of 1e-12 under lines ending at 1e-5
            # would squeeze them into the top of the panel.
            ax.axhline(floor_of(problem), color="0.4", linestyle=":", linewidth=1, label="f* certainty")
        _decorate(ax, panel_title(title, cut), xlabel, ylabel, 0, logx=True, logy=log_y)
        _log_ticks(ax, x=True, y=log_y)

    return small_multiples(panels, draw_panel, ylabel, empty, fixed, kept=True)


def _subopt(tr, row):
    """(P - f*)/|f*| at each trace point (floored by _trace_figure)."""
    return (np.asarray(tr["primal"], dtype=float) - row.f_star) / abs(row.f_star)


def _with_f_star(data):
    fits = data.fits[data.fits["f_star"].notna()]
    if fits.empty:
        raise Skip("no fit has a certified f*")
    return fits


_BAND = "median over folds (and random starts), band: their middle half (25%-75%)"
# What the convergence figures that put solvers side by side draw (speed.speed_view).
_FITS = ("Drawn from the timing fits where the run has them (cold starts, traced at every due point; a library "
         "by a ladder of cold solves), their seconds on the call clock (the whole call from the fold's arrays to a "
         "model); else from the sweep's fits, on the solver's clock, a warm-started configuration named "
         "`(warm start)`.")
_TIME = "seconds (call clock)"


@figure("suboptimality_vs_time", "Suboptimality against time", needs=("f_star",), trace_needs=("primal",),
        hint=F_STAR_HINT,
        note=f"(P - f*)/|f*| against seconds, one panel per problem, a line per solver: {_BAND}; the "
             "dotted line is the certainty of f* (the coarsest relative gap of the problem's reference solves), "
             "below which nothing is shown. " + _FITS)
def suboptimality_vs_time(data: ReportData):
    view = panel_data(speed_view(data))
    return _trace_figure(view, _subopt, "time_s", _TIME, "(P - f*) / |f*|", fits=_with_f_star(view), floor=True)


@figure("suboptimality_vs_iterations", "Suboptimality against iterations", needs=("f_star",),
        trace_needs=("primal",), hint=F_STAR_HINT, note="As above against the solver's own iterations (a pass for coordinate descent, "
                                      "a pair update for SMO: not one unit across solvers), from the same fits.")
def suboptimality_vs_iterations(data: ReportData):
    view = panel_data(speed_view(data))
    return _trace_figure(view, _subopt, "iteration", "iteration", "(P - f*) / |f*|", fits=_with_f_star(view),
                         floor=True)


@figure("test_error_vs_iterations", "Test error against iterations", trace_needs=("test_error",),
        hint="set `run.trace_test_error=true`",
        note=f"Test error of the solver's current model at each trace point (run.trace_test_error=true), one "
             f"panel per problem: {_BAND}. " + _FITS)
def test_error_vs_iterations(data: ReportData):
    return _trace_figure(panel_data(speed_view(data)), lambda tr, row: np.asarray(tr["test_error"], dtype=float), "iteration", "iteration",
                         "test error", log_y=False)


@figure("w_change_per_pass", "||w_k+1 - w_k|| per pass", trace_needs=("w_change",),
        hint="run `dcd` (its trace notes the change of w per pass)",
        note="The change of w over the pass before each trace point (dcd's second stopping rule), one panel per "
             "problem.")
def w_change_per_pass(data: ReportData):
    return _trace_figure(panel_data(data), lambda tr, row: np.asarray(tr["w_change"], dtype=float), "iteration", "pass",
                         "||w_k+1 - w_k||")


def rel_gap(tr, row=None) -> np.ndarray:
    """(P - D)/|P| at each trace point: how far the iterate is from optimal by its own duality
    gap, no f* needed (P - P* <= P - D). NaN where the solver certifies no gap (a linear hinge
    with a free intercept) or P is 0."""
    P = np.asarray(tr["primal"], dtype=float)
    with np.errstate(all="ignore"):
        return np.where(P != 0, np.asarray(tr["gap"], dtype=float) / np.abs(P), np.nan)


_GAP_HINT = ("run a solver that certifies its iterates (dcd, smo, svmlight, newton, ...; a linear model with the "
             "hinge loss has no gap from w alone, and a free intercept none from the KKT map)")


@figure("gap_vs_time", "Relative duality gap against time", trace_needs=("primal", "gap"), hint=_GAP_HINT,
        note=f"(P - D)/|P| against seconds, one panel per problem, a line per solver that certifies a gap: "
             f"{_BAND}. It bounds the relative suboptimality from above (P - P* <= P - D) and needs no f*, so a "
             "single-solver sweep shows how it converged. A library's D is rebuilt from w (see Certificates): an "
             "upper bound that may be loose. " + _FITS)
def gap_vs_time(data: ReportData):
    return _trace_figure(panel_data(speed_view(data)), rel_gap, "time_s", _TIME, "(P - D) / |P|")


@figure("gap_vs_iterations", "Relative duality gap against iterations", trace_needs=("primal", "gap"),
        hint=_GAP_HINT, note="As above against the solver's own iterations, from the same fits.")
def gap_vs_iterations(data: ReportData):
    return _trace_figure(panel_data(speed_view(data)), rel_gap, "iteration", "iteration", "(P - D) / |P|")


@figure("objective_random_starts", "Objective against iterations over random starts",
        needs=("param_random_state",), trace_needs=("primal",),
        hint="sweep `random_state` (e.g. `solvers.pegasos.grid.random_state=[0,1,2]`)",
        note="Fold 0; one line per random start (random_state) of each configuration.")
def objective_random_starts(data: ReportData):
    sub = data.subset(where=f"status IS DISTINCT FROM 'error' AND fold = 0 AND key IN (SELECT key FROM {data.table('traces')})")
    fits, cfg, shown = _configs(sub, sub.fits)
    groups = [(k, g) for k, g in fits.groupby(["dataset"] + cfg, sort=True, dropna=False)
              if g["param_random_state"].nunique() > 1]
    if not groups:
        raise Skip("no configuration was run from more than one random_state")
    datasets = sorted({k[0] for k, _ in groups})
    fig, axes = _panels(len(datasets))
    by_key = {k: g for k, g in sub.traces.groupby("key")}
    for ax, ds in zip(axes, datasets):
        mine, cut = best_lines([g for k, g in groups if k[0] == ds],
                               lambda g: np.nanmedian([by_key[k]["primal"].iloc[-1] for k in g["key"]]),
                               "median final P over starts")
        for grp, style in zip(mine, styles(len(mine))):
            for i, row in enumerate(grp.sort_values("param_random_state").itertuples(index=False)):
                tr = by_key[row.key]
                ax.plot(tr["iteration"], tr["primal"], color=style["color"], linestyle=style["linestyle"],
                        alpha=0.7, linewidth=1,
                        label=f"{label(grp.iloc[0], shown)} ({grp['param_random_state'].nunique()} starts)" if i == 0 else None)
        _decorate(ax, panel_title(ds, cut), "iteration", "primal objective P", len(mine), logx=True, logy=True)
        _log_ticks(ax)
    return fig


def _line_keys(data: ReportData, x: str) -> tuple[list[str], list[str]]:
    """(the keys that make one line: the entry and every configuration key but x; the swept keys
    a label names), as `_other_lines` makes them, for a query over the run's fits."""
    cfg = [c for c in config_columns(data.frame_of("fits")) if c != "dataset" and c not in START_KEYS]
    shown = [c for c in data.swept() if c not in START_KEYS]
    along = {x, LAMBDA} if x == "C" else {x}
    return ["solver_entry"] + [c for c in cfg if c not in along], [c for c in shown if c not in along]


def _other_lines(data: ReportData, fits: pd.DataFrame, x: str):
    """Fits keyed, and the keys that make one line: entry and every swept key but x."""
    fits, cfg, shown = _configs(data, fits)
    # Along C, a lambda sweep is the same axis (C = 1/(lambda n)): not a line of its own per lambda.
    along = {x, LAMBDA} if x == "C" else {x}
    return fits, ["solver_entry"] + [c for c in cfg if c not in along], [c for c in shown if c not in along]


DENSE_POINTS = 50    # C values on a line above which accuracy_vs_C draws a band, not error bars


@figure("accuracy_vs_C", "Accuracy against C", needs=("C", "test_accuracy"), hint="sweep C (`grid.C=[0.1,1,10]`)",
        note="Mean test accuracy over folds (bars: std), a line per solver entry and every other swept value "
             f"(at most {MAX_LINES} per panel: those of the best mean accuracy at any C); a point given by lambda "
             "sits at the mean of its folds' C = 1/(lambda n).")
def accuracy_vs_C(data: ReportData):
    line_keys, shown = _line_keys(data, "C")
    # Mean and spread over folds (and random starts) per configuration, a row each.
    agg = data.summary(["dataset"] + line_keys + ["C"], {"mean": "favg(num(test_accuracy))",
                                                         "std": "stddev_samp(num(test_accuracy))"},
                       where="num(test_accuracy) IS NOT NULL")
    lines_by = {ds: [g for _, g in agg[agg["dataset"] == ds].groupby(line_keys, sort=True, dropna=False)
                     if g["C"].nunique() > 1] for ds in sorted(agg["dataset"].unique())}
    if not any(lines_by.values()):
        raise Skip("no solver entry was run at more than one C")
    fig, axes = _panels(sum(1 for lines in lines_by.values() if lines))
    for ax, (ds, lines) in zip(axes, [(ds, lines) for ds, lines in lines_by.items() if lines]):
        lines, cut = best_lines(lines, lambda g: g["mean"].max(), "best mean test accuracy", higher=True)
        for i, (grp, style) in enumerate(zip(lines, styles(len(lines)))):
            m = grp[["C", "mean", "std"]].reset_index(drop=True)
            if len(m) > DENSE_POINTS:
                # Bars at hundreds of C values are one solid block: the mean as a line, the
                # spread over folds as a band around it.
                line, = ax.plot(m["C"], m["mean"], label=label(grp.iloc[0], shown),
                                **{k: v for k, v in style.items() if k != "marker"})
                std = m["std"].fillna(0)
                ax.fill_between(m["C"], m["mean"] - std, m["mean"] + std, color=line.get_color(), alpha=0.2,
                                linewidth=0)
                continue
            # Dodged a little along C, so equal accuracies (dcd and liblinear) do not hide each other.
            dodge = 1.0 + 0.04 * (i - (len(lines) - 1) / 2)
            ax.errorbar(m["C"] * dodge, m["mean"], yerr=m["std"].fillna(0), label=label(grp.iloc[0], shown),
                        capsize=2, markersize=4, **style)
        _decorate(ax, panel_title(ds, cut), "C", "test accuracy", len(lines), logx=True)
        _value_ticks(ax, pd.concat([g["C"] for g in lines]))
    left_out(fig, {ds: "one C per line" for ds, lines in lines_by.items() if not lines})
    return fig


def _numeric(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce")


@figure("C_gamma_heatmap", "Accuracy over C x gamma", needs=("C", "gamma", "test_accuracy"),
        hint="sweep C and gamma of a kernel solver (`solvers.smo.grid.gamma=[0.1,1]`)",
        note="Mean test accuracy over folds; one panel per dataset, solver entry and other swept values.")
def c_gamma_heatmap(data: ReportData):
    line_keys, shown = _line_keys(data, "C")
    shown = [c for c in shown if c != "gamma"]
    # gamma as a number (a sweep of "scale" beside numbers holds them as text): mean accuracy
    # over the folds of each configuration, a row each.
    numeric = data.engine.view(f"SELECT * REPLACE (num(gamma) AS gamma) FROM {data.table('fits')} "
                               f"WHERE num(gamma) IS NOT NULL AND num(test_accuracy) IS NOT NULL")
    fits = data.view({"_gamma": numeric}).summary(["dataset"] + line_keys + ["C"],
                                                  {"test_accuracy": "favg(num(test_accuracy))"}, name="_gamma")
    panels = [g for _, g in fits.groupby(["dataset"] + [k for k in line_keys if k != "gamma"], sort=True, dropna=False)
              if g["C"].nunique() > 1 and g["gamma"].nunique() > 1]
    if not panels:
        raise Skip("no solver entry was run over more than one C and more than one numeric gamma")
    plt = _plt()
    fig, axes = _panels(len(panels), width=4.6, height=3.8)
    for ax, grp in zip(axes, panels):
        grid = grp.pivot_table(index="gamma", columns="C", values="test_accuracy", aggfunc="mean")
        im = ax.imshow(grid.to_numpy(), origin="lower", cmap="viridis", aspect="auto")
        ax.set_xticks(range(grid.shape[1]), [fmt(float(c)) for c in grid.columns], rotation=45)
        ax.set_yticks(range(grid.shape[0]), [fmt(float(g)) for g in grid.index])
        for (i, j), v in np.ndenumerate(grid.to_numpy()):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=7,
                        color="white" if v < np.nanmean(grid.to_numpy()) else "black")
        ax.set_xlabel("C")
        ax.set_ylabel("gamma")
        ax.set_title(f"{grp['dataset'].iloc[0]}: {label(grp.iloc[0], shown)}", fontsize=9)
        plt.colorbar(im, ax=ax, label="test accuracy")
    return fig


def chosen_rows(data: ReportData, rows: pd.DataFrame) -> pd.DataFrame:
    """Of a summary's rows (each with its problem's `_pid`), those of the problems drawn one panel
    each (`chosen_problems`, past MAX_PROBLEMS: every row below it), with `_why`."""
    if data.n_problems() <= MAX_PROBLEMS:
        return rows.assign(_why="")
    if "chosen" not in data.root.cache:
        data.root.cache["chosen"] = chosen_problems(data.root)
    why = data.root.cache["chosen"]
    return rows[rows["_pid"].isin(list(why))].assign(_why=lambda r: r["_pid"].map(why))


def _titled(title: str, why: str) -> str:
    return f"{why}: {title}" if why else title


def _against(data: ReportData, x: str, y: str, xlabel: str, ylabel: str, skip: str, logx=True, logy=True):
    """Median over folds of y against a swept x, one panel per problem (the dataset and every
    problem key but x: two kernels or two C values are never in one panel), a line per entry and
    every other swept value (at most MAX_LINES per panel: those of the least median y, a time, at any x)."""
    prob = [c for c in problem_key_columns(data.frame_of("fits")) if c not in ("dataset", x)]
    line_keys, shown = _line_keys(data, x)
    keys = ["dataset"] + prob
    numeric = data.engine.view(f"SELECT * REPLACE (num({q(x)}) AS {q(x)}) FROM {data.table('fits')} "
                               f"WHERE num({q(x)}) IS NOT NULL AND num({q(y)}) IS NOT NULL")
    view = data.view({"_x": numeric})
    # Per configuration and x: the median of y over folds, and its least and largest fold (the
    # panel's y range).
    fits = view.summary(list(dict.fromkeys(keys + line_keys + [x])),
                        {"_y": f"median(num({q(y)}))", "_lo": f"min(num({q(y)}))", "_hi": f"max(num({q(y)}))",
                         "_pid": f"any_value({view.pid('_x')})"}, name="_x")
    fits = chosen_rows(data, fits)
    found = sorted({tuple(k) for k in fits[keys].itertuples(index=False)}, key=lambda k: [_sort_value(v) for v in k])
    named, _ = varying_problem_keys(keys, found)
    rows_of = {k: fits[(fits[keys].apply(tuple, axis=1) == k)] for k in found}
    title = {k: _titled(problem_title(dict(zip(keys, k)), named), rows_of[k]["_why"].iloc[0]) for k in found}
    lines_by = {k: [g for _, g in rows_of[k].groupby(line_keys, sort=True, dropna=False) if g[x].nunique() > 1]
                for k in found}
    shown_problems = [k for k in found if lines_by[k]]
    if not shown_problems:
        raise Skip(skip)
    fig, axes = _panels(len(shown_problems))
    for ax, k in zip(axes, shown_problems):
        lines, cut = best_lines(lines_by[k], lambda g: g["_y"].min(), f"least {ylabel}")
        for grp, style in zip(lines, styles(len(lines))):
            ax.plot(grp[x].to_numpy(), grp["_y"].to_numpy(), label=label(grp.iloc[0], shown), markersize=4, **style)
        lo, hi = min(g["_lo"].min() for g in lines), max(g["_hi"].max() for g in lines)
        log = logy and lo > 0 and hi / lo > 10   # under a decade, log labels one tick
        _decorate(ax, panel_title(title[k], cut), xlabel, ylabel, len(lines), logx=logx, logy=log)
        _value_ticks(ax, pd.concat([g[x] for g in lines]))
        if log:
            _log_ticks(ax, x=False, y=True)
    left_out(fig, {title[k].replace("\n", " "): f"one {xlabel} per line" for k in found if not lines_by[k]})
    return fig


@figure("time_vs_q", "Time against q (svmlight)", needs=("param_q", "fit_time_s"),
        hint="sweep svmlight's working-set size (`solvers.svmlight.grid.q=[2,10,40]`)",
        note="Median fit time over folds against the working-set size q.")
def time_vs_q(data: ReportData):
    return _against(data, "param_q", "fit_time_s", "working-set size q", "fit time (s)",
                    "no solver entry was run at more than one q", logx=True)


@figure("time_vs_n", "Time against n", needs=("n_train", "fit_time_s"),
        note="Median over folds of the seconds to the report's target (P - f*)/|f*| where the problems have a "
             "certified f* (a point left out where the median fold never got there), else to each solver's own "
             "stop (said on the axis), against the number of training rows, one panel per problem (its keys but "
             "the dataset), a colour per solver configuration; a point per dataset (its name under its n), a line "
             "only through the sizes of one dataset (its max_rows in a multirun), never across datasets. " + _FITS,
        hint="run on datasets of several sizes, or one dataset at several `max_rows` (a multirun)")
def time_vs_n(data: ReportData):
    view = speed_view(data)
    target = target_of(data)
    timed = view.has("results", "f_star")
    d = data.view({"_t": timed_fits(data, target, own=False)} if timed else {"_t": view._names["results"]})
    t = "_t_target_s" if timed else "num(fit_time_s)"
    ylabel = f"seconds to (P - f*)/|f*| <= {fmt(target)}" if timed else "seconds to own stop"
    where = f"num(n_train) IS NOT NULL AND num(fit_time_s) IS NOT NULL AND {t} IS NOT NULL"
    if d.count("_t", where) == 0:
        raise Skip("no finished fit")
    cols = d.frame_of("_t")
    prob = problem_key_columns(cols)
    kind = [c for c in prob if c != "dataset"]
    cfg = [c for c in config_columns(cols) if c not in START_KEYS]
    line_keys = ["solver_entry"] + [c for c in cfg if c not in prob]
    # One size of a dataset is one job of a multirun (max_rows swept) or the dataset itself; n is
    # its median over the folds (which differ by a row or two: no sweep of n).
    size = ["dataset"] + (["job"] if "job" in cols.columns else [])
    pts = d.summary(list(dict.fromkeys(kind + line_keys + size)),
                    {"n": "median(num(n_train))", "t": f"median({t})", "_pid": f"any_value({d.pid('_t')})"},
                    name="_t", where=where)
    pts = pts[np.isfinite(pts["t"])]
    if pts["n"].nunique() < 2:
        raise Skip("every fit ran on one size of data")
    found = sorted({tuple(r) for r in pts[kind].itertuples(index=False)}, key=lambda k: [_sort_value(v) for v in k])
    if data.n_problems() > MAX_PROBLEMS:
        # The problems of the chosen ones (a panel is a problem on every dataset).
        chosen = chosen_rows(data, pts)
        why = {tuple(r[:-1]): r[-1] for r in chosen[kind + ["_why"]].itertuples(index=False)}
        found = [k for k in found if k in why]
    else:
        why = {}
    named, rest = varying_problem_keys(["dataset"] + kind, [("", *k) for k in found])
    fixed = fixed_keys_line(["dataset"] + kind, [("", *k) for k in found], named, rest)
    shown = [c for c in data.swept() if c not in prob and c not in START_KEYS]
    panels = []
    for k in found:
        sub = pts[(pts[kind].apply(tuple, axis=1) == k)] if kind else pts
        lines = [(label(g.iloc[0], shown), len(g), g) for _, g in sub.groupby(line_keys, sort=True, dropna=False)]
        title = problem_title({"dataset": "", **dict(zip(kind, k))}, named).strip() or "all problems"
        panels.append((_titled(title, why.get(k, "")), lines, sub))

    def draw_panel(ax, title, lines, sub, style_of):
        for lab, _, g in lines:
            st = style_of[lab]
            for i, (_, one) in enumerate(g.sort_values("n").groupby("dataset", sort=False)):
                ax.plot(one["n"], one["t"], color=st["color"], marker=st["marker"], markersize=5,
                        linestyle=st["linestyle"] if len(one) > 1 else "none", label=lab if i == 0 else None)
        ts = sub["t"][sub["t"] > 0]
        log = len(ts) > 0 and ts.max() / ts.min() > 10          # under a decade, log labels one tick
        _decorate(ax, title, "training rows n", ylabel, 0, logx=True, logy=log)
        _value_ticks(ax, sub["n"])
        # Each tick names its dataset(s): a reader sees which point is which data.
        names = sub.groupby("n")["dataset"].agg(lambda d: "\n".join(sorted(set(map(str, d)))))
        ticks = ax.get_xticks()
        ax.set_xticklabels([f"{t:.4g}\n{names.get(t, '')}" for t in ticks], fontsize=7)
        if log:
            _log_ticks(ax, x=False, y=True)

    return small_multiples(panels, draw_panel, f"{ylabel} against n", {}, fixed)


@figure("pegasos_k_vs_T", "k against T at fixed kT (pegasos)", needs=("param_k", "info_T", "primal_objective"),
        hint="sweep pegasos's `k` at a fixed number of examples (`+experiment=rupnik`)",
        note="Final primal objective (median over folds) against the mini-batch size k, T = kT / k "
             "iterations (the legend lists T at each k), a line per kT and other swept values (rupnik); at most "
             f"{MAX_LINES} lines per panel, those of the least P at any k.")
def pegasos_k_vs_T(data: ReportData):
    where = "info_T IS NOT NULL AND param_k IS NOT NULL"
    kt = "num(param_k) * num(info_T)"
    # The kT classes of the distinct values of k*T (a class depends on the sorted values alone),
    # each fit given its class by a join on its own k*T.
    values = data.sql(f"SELECT DISTINCT {kt} AS kt FROM {data.table('fits')} WHERE {where} AND {kt} IS NOT NULL")["kt"]
    import pyarrow as pa
    data.engine.register("_kt_classes", pa.table({"kt": values.to_numpy(float), "cls": kt_classes(values).to_numpy(float)}))
    view = data.engine.view(f"SELECT f.* REPLACE (num(param_k) AS param_k), c.cls AS \"kT\" FROM {data.table('fits')} f "
                            f"JOIN _kt_classes c ON num(f.param_k) * num(f.info_T) = c.kt WHERE f.{where.replace(' AND ', ' AND f.')}")
    # T and epochs follow from k at fixed kT, and random starts are folded into the median: none
    # of them makes a line of its own.
    drop = {"param_epochs", "param_max_iter", "param_k", "param_random_state"}
    cfg = [c for c in config_columns(data.frame_of("fits")) if c != "dataset" and c not in START_KEYS]
    shown = [c for c in data.swept() if c not in START_KEYS and c not in drop]
    line_keys = ["solver_entry", "kT"] + [c for c in cfg if c not in drop and c != "solver_entry"]
    fits = data.view({"_kt": view}).summary(
        list(dict.fromkeys(["dataset"] + line_keys + ["param_k"])),
        {"P": "median(num(primal_objective))", "T": "median(num(info_T))", "_lo": "min(num(primal_objective))",
         "_hi": "max(num(primal_objective))"}, name="_kt")
    datasets = sorted(fits["dataset"].unique())
    lines_by = {ds: [g for _, g in fits[fits["dataset"] == ds].groupby(line_keys, sort=True, dropna=False)
                     if g["param_k"].nunique() > 1] for ds in datasets}
    datasets = [ds for ds in datasets if lines_by[ds]]
    if not datasets:
        raise Skip("no pegasos configuration was run at more than one k with the same kT")
    fig, axes = _panels(len(datasets))
    for ax, ds in zip(axes, datasets):
        lines, cut = best_lines(lines_by[ds], lambda g: g["P"].min(), "least final P")
        for grp, style in zip(lines, styles(len(lines))):
            # T in the legend, not beside each point: lines of one kT share their Ts, and labels at
            # the points pile up where lines meet.
            ts = "/".join(fmt(float(t)) for t in grp["T"])
            ax.plot(grp["param_k"].to_numpy(), grp["P"].to_numpy(), markersize=4,
                    label=f"{label(grp.iloc[0], shown)} kT~{fmt(float(grp['kT'].iloc[0]))} T={ts}", **style)
        lo, hi = min(g["_lo"].min() for g in lines), max(g["_hi"].max() for g in lines)
        log = lo > 0 and hi / lo > 10     # lines a decade apart or more: else one tick
        _decorate(ax, panel_title(ds, cut), "mini-batch size k (T = kT / k iterations)",
                  "final primal objective P (median)", len(lines), logx=True, logy=log)
        _value_ticks(ax, pd.concat([g["param_k"] for g in lines]))
        if log:
            _log_ticks(ax, x=False, y=True)
    return fig


def kt_classes(kt: pd.Series, rel: float = 0.15) -> pd.Series:
    """k*T rounded into classes of values within `rel` of the class's smallest: T is a whole
    number of iterations (ceil(n/k) per epoch), so a fixed budget of examples gives k*T that
    differ by a few percent between k (1200 and 1280 for n = 60, 20 epochs, k = 1 and 16)."""
    out = pd.Series(np.nan, index=kt.index)
    start = None
    for i, v in kt.sort_values().items():
        if start is None or v > start * (1 + rel):
            start = v
        out[i] = start
    return out


@figure("confusion_matrices", "Confusion matrices", needs=("confusion_test",),
        hint="run on a multiclass dataset (e.g. `digits_bertini_3class`)",
        note="Test confusion matrix (rows: true class) of each entry's best configuration, summed over folds.")
def confusion_matrices(data: ReportData):
    from .tables import best_params
    kept = data.engine.view(f"SELECT * FROM {data.table('fits')} WHERE confusion_test IS NOT NULL "
                            f"AND confusion_test <> 'null'")
    multi = data.view({"results": kept, "fits": kept})
    if multi.count("fits") == 0:
        raise Skip("no multiclass fit kept a confusion matrix")
    best = best_params(multi)
    # The fits of the best configurations' datasets and entries (a few folds each), matched below.
    pairs = " OR ".join(f"(dataset = {lit(b.dataset)} AND solver_entry = {lit(b.solver_entry)})"
                        for b in best[["dataset", "solver_entry"]].drop_duplicates().itertuples(index=False))
    sub = multi.subset(where=pairs or "FALSE")
    fits, cfg, shown = _configs(data, sub.fits)
    panels = []
    for b in best.itertuples(index=False):
        b = b._asdict()
        mask = (fits["dataset"] == b["dataset"]) & (fits["solver_entry"] == b["solver_entry"])
        for c in cfg[1:]:     # the best row's configuration (its table shows the keys swept among these fits)
            if c in b:
                mask &= fits[c].map(key_value) == key_value(b[c])
        cms = [np.array(json.loads(s)) for s in fits.loc[mask, "confusion_test"]]
        if cms:
            panels.append((b, sum(cms)))
    plt = _plt()
    fig, axes = _panels(len(panels), width=4.4, height=3.6)
    for ax, (b, cm) in zip(axes, panels):
        im = ax.imshow(cm, cmap="Blues")
        for (i, j), v in np.ndenumerate(cm):
            ax.text(j, i, str(int(v)), ha="center", va="center", fontsize=8,
                    color="white" if v > cm.max() / 2 else "black")
        ax.set_xticks(range(cm.shape[1]))
        ax.set_yticks(range(cm.shape[0]))
        ax.set_xlabel("predicted class index")
        ax.set_ylabel("true class index")
        # Two lines: a label on one line runs under the colour bar of the panel beside it.
        ax.set_title(f"{b['dataset']}\n{label(b, [c for c in shown if c in b])}", fontsize=8)
        plt.colorbar(im, ax=ax)
    return fig


@figure("active_points_2d", "Active points of a 2-D dataset", models=True, needs=("key",),
        hint="set `run.keep_models=true` on a 2-D dataset (`toy_blobs`)",
        note="Training points of fold 0 (colour: label), support vectors circled, and the decision boundary "
             "f(x) = 0 of a linear model (run.keep_models=true; only 2-D datasets keep their points).")
def active_points_2d(data: ReportData):
    if not data.has("models", "X"):
        raise Skip("no kept model is of a 2-D dataset")
    sub = data.subset(where=f"status IS DISTINCT FROM 'error' AND fold = 0 AND key IN "
                            f"(SELECT key FROM {data.table('models')} WHERE X IS NOT NULL)")
    models = sub.models
    fits = sub.fits[(sub.fits["fold"] == 0)].merge(models[models["X"].notna()], on="key")
    if fits.empty:
        raise Skip("no kept 2-D model of fold 0")
    fits, cfg, shown = _configs(data, fits, starts=True)
    # A readable number of panels: up to three configurations of each entry.
    fits = fits.sort_values(["dataset"] + cfg).groupby(["dataset", "solver_entry"]).head(3).head(12)
    fig, axes = _panels(len(fits), width=4.0, height=3.8, ncols_max=4)
    for ax, row in zip(axes, fits.to_dict("records")):
        X = np.array([list(p) for p in row["X"]], dtype=float)
        y = np.asarray(row["y"], dtype=float)
        pad = 0.05 * (X.max(axis=0) - X.min(axis=0))
        lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
        gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 120), np.linspace(lo[1], hi[1], 120))
        f = decision_grid(row, X, y, np.column_stack([gx.ravel(), gy.ravel()]))
        if f is not None:
            ax.contour(gx, gy, f.reshape(gx.shape), levels=[-1, 0, 1], colors="k",
                       linestyles=["--", "-", "--"], linewidths=0.8)
        ax.scatter(X[y > 0, 0], X[y > 0, 1], s=6, c="tab:blue", label="+1")
        ax.scatter(X[y < 0, 0], X[y < 0, 1], s=6, c="tab:orange", label="-1")
        sv = np.asarray(row["support"] if row["support"] is not None else [], dtype=int)
        if sv.size:
            ax.scatter(X[sv, 0], X[sv, 1], s=30, facecolors="none", edgecolors="k", linewidths=0.7,
                       label=f"support vectors ({sv.size})")
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_title(f"{row['dataset']}: {label(row, shown)}", fontsize=8)
        ax.legend(fontsize=6, loc="lower right")
    return fig


def decision_grid(row: dict, X, y, G):
    """f on grid points G from a kept model: w . x + b (linear), or sum_i alpha_i y_i k(x_i, x) + b
    over the support (rbf, gamma numeric or "scale" = 1 / (d Var X), as scikit-learn); None when
    the kernel's model cannot be rebuilt here."""
    kernel = key_value(row.get("kernel", "linear"))
    if row.get("w") is not None and kernel in ("linear", "-"):
        return G @ np.asarray(row["w"], dtype=float) + row["b"]
    if kernel != "rbf" or row.get("support") is None:
        return None
    gamma = row.get("gamma")
    gamma = 1.0 / (X.shape[1] * X.var()) if gamma == "scale" else float(pd.to_numeric(gamma, errors="coerce"))
    if not np.isfinite(gamma):
        return None
    sv = np.asarray(row["support"], dtype=int)
    beta = np.asarray(row["alpha"], dtype=float) * y[sv]
    d2 = ((G[:, None, :] - X[None, sv, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2) @ beta + row["b"]


