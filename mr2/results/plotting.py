"""What every figure of the project shares: panels, legends, one fixed colour per method, the
symbols of the paper's quantities, class-name axes, names beside points and line ends, a
placeholder for a figure with nothing to draw, and one way of writing a figure (PNG and PDF,
atomically). How things look (colours, sizes, fonts) is ``mr2.results.style``. The command line
selects the non-interactive Agg backend (``mr2.cli``); a notebook keeps its inline one."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterable, Sequence

import matplotlib.category
import matplotlib.mathtext
import matplotlib.pyplot as plt
import matplotlib.text
import matplotlib.ticker
import numpy as np
import seaborn as sns

from ..common.io import atomic_path
from ..common.runs import DEFAULT_VARIANT, run_label
from .tables import METRIC_TITLES
from .style import (CLASS_WIDTH, END_JOIN, FALLBACK_COLOURS, FIGURE_DPI, GROUP_COLOURS, LABEL_FONT, MANY_LABELS_FONT,
                    METHOD_COLOURS, NAME_FONT, NAME_JOIN, PANEL_SIZE, SHADE_ALPHA, UNKNOWN_GROUP_COLOUR)

GROUP_ORDER = ["all", "easy", "medium", "hard"]
#: the paper's symbols (matplotlib mathtext) for the names of statistics and options in the tables
MATH_SYMBOLS = {
    "gamma": r"$\gamma_k$", "a": r"$a_k$", "mean_sq_norm": r"$\|\hat{\mu}_k\|^2$", "spread": r"$\|\hat{s}_k\|^2$",
    "a_p3": r"$a_k$ ($L_3$)", "a_p5": r"$a_k$ ($L_5$)", "c_bar": r"$\bar{c}$", "lam": r"$\lambda$", "p": r"$p$",
}
#: how a method is named in figures and sentences meant for reading (its code name otherwise)
DISPLAY_NAMES = {
    "erm": "ERM", "erm_tuned": "ERM (tuned recipe)", "ce_temperature": "CE of z/τ", "mr2": "MR²", "mr2_uniform": "MR² uniform γ", "mr2_no_rep": "MR² λ = 0",
    "mr2_release": "MR² (release loss)", "focal": "Focal", "ldam": "LDAM", "logit_adjust": "Logit adj.",
    "eql": "EQL", "supcon": "SupCon", "center": "Center", "dro": "DRO", "fairdro": "FairDRO", "jtt": "JTT",
    "lff": "LfF",
}
ANNOTATE_MAX = 20  # name the points of a scatter of classes, or the ends of lines, up to this many
#: adjustText's steps to move names apart: a fixed number and no time limit, so a figure's bytes never
#: depend on the machine's speed or load (adjustText stops earlier once no name overlaps)
NAME_STEPS = 500
#: the characters that reorder the text around them (bidirectional controls: U+202E draws "gnp.exe"
#: as "exe.png"); in a figure each is shown as its code point, <U+202E>
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
MANY_LABELS = 30  # above this many class names along x, a smaller font


def symbol(name: str) -> str:
    """The paper's symbol of a table's statistic or option (``gamma`` -> γ_k); the name itself otherwise."""
    return MATH_SYMBOLS.get(name, name)


def display_name(method: str, variant: str = DEFAULT_VARIANT) -> str:
    """``MR²`` for mr2, ``MR² uniform γ``, ``MR² λ = 0``, ``MR² (c_bar=0.5)`` for a variant; a method
    without a display name keeps its code name (``focal``)."""
    name = DISPLAY_NAMES.get(method, method)
    return name if variant == DEFAULT_VARIANT else f"{name} ({variant})"


def metric_name(metric: str) -> str:
    """How a metric of the tables is named for readers: 'all classes', 'hard classes', 'worst class'."""
    return METRIC_TITLES[metric].lower() + ("" if metric == "worst" else " classes")


def method_colour(method: str, variant: str = DEFAULT_VARIANT) -> str:
    """The fixed colour of a method (its default variant) in every figure; see ``METHOD_COLOURS``."""
    if variant == DEFAULT_VARIANT and method in METHOD_COLOURS:
        return METHOD_COLOURS[method]
    return FALLBACK_COLOURS[zlib.crc32(run_label(method, variant).encode()) % len(FALLBACK_COLOURS)]


def visible(text: str) -> str:
    """``text`` with every bidirectional control character written as its code point (``<U+202E>``), so
    a name from the data is drawn in the order of its characters."""
    return "".join(f"<U+{ord(c):04X}>" if c in BIDI_CONTROLS else c for c in str(text))


class VisibleLabels(matplotlib.ticker.Formatter):
    """A tick formatter that writes what ``inner`` writes, through ``visible``."""

    def __init__(self, inner: matplotlib.ticker.Formatter):
        self.inner = inner

    def __call__(self, x, pos=None):
        return visible(self.inner(x, pos))

    def format_ticks(self, values):
        return [visible(label) for label in self.inner.format_ticks(values)]

    def set_axis(self, axis):
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def set_locs(self, locs):
        self.inner.set_locs(locs)

    def get_offset(self):
        return visible(self.inner.get_offset())


#: the tick formatters whose labels come from the data (a list of names, a category's)
DATA_LABELS = (matplotlib.ticker.FixedFormatter, matplotlib.ticker.FuncFormatter,
               matplotlib.category.StrCategoryFormatter)


def visible_controls(fig: plt.Figure) -> None:
    """``visible`` applied to every text of ``fig``: titles, labels, legends, names, and the tick labels
    of every axis labelled from the data (``DATA_LABELS``, each drawn through ``VisibleLabels``)."""
    for text in fig.findobj(matplotlib.text.Text):
        if BIDI_CONTROLS & set(text.get_text()):
            text.set_text(visible(text.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_major_formatter(), DATA_LABELS):
                axis.set_major_formatter(VisibleLabels(axis.get_major_formatter()))


def literal_where_math_fails(fig: plt.Figure) -> None:
    """Draw literally every text of ``fig`` whose math-text does not parse: a title, label or legend
    entry holding a name from the data with a ``$`` (``$\\frac{``, a lone ``$``) would otherwise stop
    the figure from being written."""
    parser = matplotlib.mathtext.MathTextParser("path")
    for text in fig.findobj(matplotlib.text.Text):
        if "$" in text.get_text() and text.get_parse_math():
            try:
                parser.parse(text.get_text())
            except ValueError:
                text.set_parse_math(False)


def save_figure(fig: plt.Figure, stem: str | Path, dpi: int = FIGURE_DPI) -> list[Path]:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.pdf`` (each atomically, cropped to what is drawn,
    legends outside the axes included) and close it; returns the two paths. Texts whose math-text
    does not parse are drawn literally (``literal_where_math_fails``), bidirectional controls as their
    code points (``visible_controls``). The same figure gives the same bytes: the PDF carries no
    creation date."""
    stem = Path(stem)
    paths = [stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".pdf")]
    try:
        literal_where_math_fails(fig)
        visible_controls(fig)
        fig.tight_layout()
        for path in paths:
            fmt = path.suffix[1:]
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight",
                            metadata={"CreationDate": None} if fmt == "pdf" else None)
    finally:
        plt.close(fig)
    return paths


def empty_figure(message: str) -> plt.Figure:
    """A figure holding only ``message`` (for tables that hold nothing to draw)."""
    fig, ax = plt.subplots(figsize=PANEL_SIZE)
    empty_panel(ax, message)
    return fig


def placeholder(stem: str | Path, message: str) -> list[Path]:
    """``empty_figure(message)`` written to ``stem`` (``save_figure``)."""
    return save_figure(empty_figure(message), stem)


def class_axis(ax: plt.Axes, names: Sequence[str], groups: Sequence[str] | None = None) -> None:
    """Name the classes at x = 0, 1, ... (rotated, smaller with many classes) and, with ``groups``,
    shade each run of equal easy/medium/hard group and name it above the axes."""
    pos = np.arange(len(names))
    ax.set_xticks(pos)
    ax.set_xticklabels([visible(name) for name in names], rotation=90 if len(names) > 6 else 30,
                       ha="center" if len(names) > 6 else "right",
                       fontsize=LABEL_FONT if len(names) <= MANY_LABELS else MANY_LABELS_FONT,
                       parse_math=False)  # class names are data: `$` is a dollar, never math-text
    ax.set_xlim(-0.5, len(names) - 0.5)
    if groups is None:
        return
    start = 0
    for i in range(1, len(groups) + 1):
        if i == len(groups) or groups[i] != groups[start]:
            colour = GROUP_COLOURS.get(groups[start], UNKNOWN_GROUP_COLOUR)
            ax.axvspan(start - 0.5, i - 0.5, color=colour, alpha=SHADE_ALPHA, linewidth=0, zorder=0)
            ax.text((start + i - 1) / 2, 1.0, groups[start], transform=ax.get_xaxis_transform(), ha="center",
                    va="bottom", fontsize=LABEL_FONT, color=colour)
            start = i


def class_axis_width(k: int) -> float:
    """Width in inches of a panel with K classes named along x."""
    return max(PANEL_SIZE[0], CLASS_WIDTH * k + 1.2)


def name_points(ax: plt.Axes, x, y, names: Sequence[str]) -> list:
    """Write each class's name beside its point, when there are at most ``ANNOTATE_MAX``, moved apart
    by adjustText (``NAME_STEPS`` steps at most, never a time limit) so that no two names and no name
    and point overlap (a thin line joins a moved name to its point). Points crowded at an edge of the axes leave the names no room inside it, so while
    two names still overlap the axes are widened (10 % more margin each try, at most 4 tries) and
    the names placed again. Returns the texts."""
    if len(names) > ANNOTATE_MAX or not len(names):
        return []
    from adjustText import adjust_text

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    drawn: list = []
    for attempt in range(5):
        for artist in drawn:  # the names and joining lines of the try before
            artist.remove()
        if attempt:
            ax.margins(x=0.05 + 0.1 * attempt, y=0.05 + 0.1 * attempt)
            ax.autoscale_view()
        texts = [ax.text(xi, yi, visible(name), fontsize=NAME_FONT, parse_math=False) for xi, yi, name in zip(x, y, names)]
        ax.figure.canvas.draw()  # the layout adjustText measures
        _, lines = adjust_text(texts, x=x, y=y, ax=ax, expand=(1.2, 1.4), arrowprops=NAME_JOIN, iter_lim=NAME_STEPS,
                               time_lim=None)
        if not overlapping_texts(texts):
            break
        drawn = list(lines) + texts
    return texts


def overlapping_texts(texts: Sequence) -> list[tuple[str, str]]:
    """The pairs of ``texts`` (matplotlib Text) whose drawn boxes overlap: the boxes of the texts
    themselves, without the line an annotation draws to what it names."""
    if not texts:
        return []
    renderer = texts[0].figure.canvas.get_renderer()
    boxes = [matplotlib.text.Text.get_window_extent(t, renderer) for t in texts]
    return [(texts[i].get_text(), texts[j].get_text()) for i in range(len(texts)) for j in range(i + 1, len(texts))
            if boxes[i].overlaps(boxes[j])]


def end_labels(ax: plt.Axes, x: float, ys: Sequence[float], names: Sequence[str], colours: Sequence[str],
               gap: float = 0.05) -> None:
    """Name lines at their right ends (``x``, ``ys``): labels in the lines' ``colours``, moved apart
    vertically so that neighbours are at least ``gap`` of the axis height apart (none overlaps),
    joined to their line ends when moved; with more than ``ANNOTATE_MAX`` lines none is named."""
    if not len(names) or len(names) > ANNOTATE_MAX:
        return
    ys = np.asarray(ys, dtype=float)
    lo, hi = ax.get_ylim()
    lo, hi = min(lo, ys.min()), max(hi, ys.max())
    step = gap * (hi - lo)
    order = np.argsort(ys)
    placed = ys[order].copy()
    for i in range(1, len(placed)):  # push up what is too close to the label below it
        placed[i] = max(placed[i], placed[i - 1] + step)
    placed -= max(0.0, placed[-1] - max(hi, ys.max()))  # then back down into the axes, keeping the gaps
    x0 = ax.get_xlim()[0]
    pad = 0.04 * (x - x0) + 0.05
    for y_line, y_text, k in zip(ys[order], placed, order):
        ax.annotate(visible(names[k]), (x, y_line), xytext=(x + pad, y_text), textcoords="data", fontsize=NAME_FONT,
                    color=colours[k], va="center", parse_math=False, ha="left", annotation_clip=False,
                    arrowprops=END_JOIN)
    ax.set_xlim(x0, x + 0.3 * (x - x0) + 0.4)  # room for the names


def value_ticks(axis, values: Sequence[float] | None = None) -> None:
    """Readable ticks on a (log) ``axis`` (``ax.xaxis``): at ``values`` when given (e.g. the swept
    values), numbers written plainly (0.5, 2, 100), no labels on the minor ticks."""
    if values is not None:
        axis.set_major_locator(matplotlib.ticker.FixedLocator(list(values)))
        axis.set_minor_locator(matplotlib.ticker.NullLocator())
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def empty_panel(ax: plt.Axes, message: str) -> None:
    """``message`` in the middle of ``ax``, its axes hidden (a panel with nothing to draw)."""
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, transform=ax.transAxes)
    ax.set_axis_off()


def panels(n: int, ncols: int | None = None, nrows: int = 1, width: float = PANEL_SIZE[0],
           **kw) -> tuple[plt.Figure, np.ndarray]:
    """A figure of ``nrows`` × ``ncols`` (default ``n``) panels of ``width`` × PANEL_SIZE's height,
    the axes always a 2-d array (``plt.subplots`` keywords in ``kw``)."""
    ncols = ncols or n
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, PANEL_SIZE[1] * nrows), squeeze=False, **kw)
    return fig, axes




def one_legend(axes: Iterable[plt.Axes], title: str) -> None:
    """Keep the legend of the last panel that has one, outside it on the right; drop the others."""
    with_legend = [ax for ax in axes if ax.get_legend() is not None]
    for ax in with_legend[:-1]:
        ax.get_legend().remove()
    if with_legend:
        sns.move_legend(with_legend[-1], "upper left", bbox_to_anchor=(1.02, 1.0), title=title, frameon=False)


def caption(report_dir: Path, name: str) -> str:
    """The caption of figure or table ``name`` (``<report_dir>/<name>.rst``); a missing one is an error
    naming it, so a report run from another folder never silently loses its captions."""
    path = Path(report_dir) / f"{name}.rst"
    if not path.is_file():
        raise FileNotFoundError(f"caption {path} not found; give --captions the workflow's report folder")
    return path.read_text(encoding="utf-8").strip()
