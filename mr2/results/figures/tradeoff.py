"""The trade-off plane: per method, its paired Δ to the reference on the hard classes (y) against its
paired Δ on the easy classes (x), each with its 95 % t-interval as error bars.

The paper's claim places MR² up and to the right of zero (hard classes raised, easy ones not
lowered) and the other methods up and to the left (hard classes bought with easy ones). The Δ are the
rows of ``mr2.results.tables.comparisons_table`` against the reference (default variants, paired by
seed), the numbers of the results table; a panel per dataset.

  tradeoff_points  a row per dataset and method: hard and easy Δ with their intervals, n_paired
  near_zero        which points crowd around 0 while others lie far out (they get a zoomed panel)
  draw             the figure
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd

from ...common.runs import DEFAULT_VARIANT
from ..plotting import display_name, method_colour, name_points, panels, plt
from ..style import (CLAIMED_QUADRANT, LABEL_FONT, LARGE_POINT, QUADRANT_ALPHA, QUIET_ZERO_LINE, TRADEOFF_INTERVAL,
                     TRADEOFF_TITLE_FONT, WIDE_PANEL)
from ..tables import comparisons_table
from .registry import FigureOptions

FIGURE = {
    "name": "tradeoff", "title": "Tradeoff", "order": 9, "needs": None, "missing": None,
    "empty": "no method shares seeds with the reference on a dataset with easy and hard classes",
}
AXES = {"easy": "x", "hard": "y"}
#: a point is "near 0" within this many times the median distance of the points from the origin
#: (at least ``NEAR_FLOOR`` points), and a panel zooms on those when some other point lies farther out
NEAR_FACTOR, NEAR_FLOOR = 3.0, 0.25


def tradeoff_points(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame,
                    reference: str = "erm") -> pd.DataFrame:
    """A row per dataset and method (default variants) with a paired comparison to the reference on
    both easy and hard classes: dataset, method, n_paired and for m in easy, hard: m_diff, m_lo,
    m_hi (points)."""
    c = comparisons_table(per_class, runs, groups, reference)
    c = c[(c["kind"] == "reference") & (c["variant"] == DEFAULT_VARIANT) & c["metric"].isin(list(AXES))]
    if not set(AXES) <= set(c["metric"]):  # no pair, or no easy classes (K < 3)
        return pd.DataFrame(columns=["dataset", "method", "easy_diff", "easy_lo", "easy_hi",
                                     "hard_diff", "hard_lo", "hard_hi", "n_paired"])
    wide = c.pivot_table(index=["dataset", "method"], columns="metric", values=["diff", "diff_lo", "diff_hi"],
                         sort=False, dropna=False)
    out = pd.DataFrame(index=wide.index)
    for m in AXES:
        out[f"{m}_diff"], out[f"{m}_lo"], out[f"{m}_hi"] = wide[("diff", m)], wide[("diff_lo", m)], wide[("diff_hi", m)]
    n = c.drop_duplicates(["dataset", "method"]).set_index(["dataset", "method"])["n_paired"]
    seen = pd.MultiIndex.from_frame(per_class[["dataset", "method"]].drop_duplicates())  # the config's order
    return out.join(n).reindex([key for key in seen if key in n.index]).reset_index()


def _bar(point: pd.Series, m: str) -> np.ndarray | None:
    if math.isnan(point[f"{m}_lo"]):
        return None
    return np.array([[point[f"{m}_diff"] - point[f"{m}_lo"]], [point[f"{m}_hi"] - point[f"{m}_diff"]]])


def near_zero(points: pd.DataFrame) -> pd.Series | None:
    """The points (rows of ``tradeoff_points``, one dataset) within ``NEAR_FACTOR`` times the median
    distance from the origin (at least ``NEAR_FLOOR`` points) when at least two are and at least one
    is not: a far point (a method that collapses) squeezes the others into one blot. None otherwise."""
    r = np.hypot(points["easy_diff"].to_numpy(float), points["hard_diff"].to_numpy(float))
    near = r <= NEAR_FACTOR * max(float(np.median(r)), NEAR_FLOOR)
    return pd.Series(near, index=points.index) if 2 <= near.sum() < len(points) else None


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions) -> pd.DataFrame:
    """``tradeoff_points`` against the reference."""
    return tradeoff_points(tables["per_class"], tables.get("runs"), tables["groups"], options.reference)


def draw(points: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """Per dataset a panel: a point per method at (easy Δ, hard Δ) to the reference with both 95 %
    intervals as error bars (none with one paired seed), named in the legend; lines at zero; the
    quadrant the paper claims for MR² (hard up, easy not down) shaded. Where a few points lie far out
    and the rest crowd around 0 (``near_zero``), a second panel beside it zooms on the crowd, each
    point named beside it."""
    shown = []
    for dataset in points["dataset"].unique():
        here = points[points["dataset"] == dataset]
        near = near_zero(here)
        shown.append((dataset, here, False))
        if near is not None:
            shown.append((dataset, here[near], True))
    fig, axes = panels(len(shown), width=WIDE_PANEL)
    reference = display_name(options.reference)
    for ax, (dataset, here, zoom) in zip(axes[0], shown):
        for _, p in here.iterrows():
            ax.errorbar(p["easy_diff"], p["hard_diff"], xerr=_bar(p, "easy"), yerr=_bar(p, "hard"), fmt="o",
                        color=method_colour(p["method"]), markersize=LARGE_POINT,  # bars in the point's colour
                        **TRADEOFF_INTERVAL, label=display_name(p["method"]))
        ax.axhline(0, **QUIET_ZERO_LINE)
        ax.axvline(0, **QUIET_ZERO_LINE)
        ax.margins(0.15)
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()  # the lines at 0 keep the origin inside
        ax.set(xlim=(x0, x1), ylim=(y0, y1))  # frozen: the shading does not widen the view
        ax.fill_between([0, x1], 0, y1, color=CLAIMED_QUADRANT, alpha=QUADRANT_ALPHA, lw=0, zorder=-1)
        n = here["n_paired"].max()
        ax.set_title(f"{dataset} ({int(n)} paired seed{'s' if n != 1 else ''})"
                     + (f"\nzoom on the {len(here)} methods near 0" if zoom else ""), fontsize=TRADEOFF_TITLE_FONT)
        if zoom:
            name_points(ax, here["easy_diff"], here["hard_diff"], [display_name(m) for m in here["method"]])
        ax.set_xlabel(f"Δ easy classes vs {reference} (points)")
        ax.set_ylabel(f"Δ hard classes vs {reference} (points)")
    legend = {}  # every method of every panel, once (a zoomed panel holds only some)
    for ax in axes[0]:
        legend.update({label: handle for handle, label in zip(*ax.get_legend_handles_labels())})
    axes[0][-1].legend(legend.values(), legend.keys(), loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False,
                       title="method", fontsize=LABEL_FONT)
    return fig
