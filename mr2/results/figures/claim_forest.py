"""The report's first figure, the paper's claim at a glance: each method's paired difference to the
reference (ERM) for all, easy, medium and hard classes and the worst class, with its t-interval over
seeds, as a forest plot around a zero line.

  claim_table  a row per dataset, method (default variant) and metric: diff, diff_lo, diff_hi, n_paired
  draw         a panel per dataset: a row per metric, a point per method, its interval, a line at 0
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ...common.runs import DEFAULT_VARIANT
from ..plotting import display_name, method_colour, metric_name, one_legend, panels, plt
from ..statistics import LEVEL
from ..style import METRIC_ROW, POINT, SMALL_POINT, TITLE_FONT, WIDE_INTERVAL, WIDE_PANEL, RULE, ZERO_LINE
from ..tables import paired, per_run_metrics
from .registry import FigureOptions

FIGURE = {
    "name": "claim_forest", "title": "The claim: each method's paired Δ to the reference", "order": 1,
    "needs": None,
    "missing": "No method ran beside {reference} on the same seeds: `config/config.yaml` runs ERM, MR² and its "
               "ablations.",
    "empty": "needs runs of the reference and of another method on the same dataset and seeds",
}
#: the rows of the forest plot, top to bottom
CLAIM_METRICS = ("all", "easy", "medium", "hard", "worst")
COLUMNS = ["dataset", "method", "metric", "diff", "diff_lo", "diff_hi", "n_paired"]
POSSIBLE = 100.0  # a difference of two accuracies lies in [-100, 100] points; a t-interval may reach past it


def claim_table(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame, reference: str = "erm",
                methods: Sequence[str] | None = None) -> pd.DataFrame:
    """A row per dataset, method (default variants; every method but the reference in the tables'
    order by default) and metric of ``CLAIM_METRICS`` present: the paired difference to the reference
    over the seeds both ran, in points, with its t-interval (``mr2.results.tables.paired``)."""
    per_run = per_run_metrics(per_class[per_class["variant"] == DEFAULT_VARIANT], runs, groups)
    if methods is None:
        methods = [m for m in dict.fromkeys(per_run["method"]) if m != reference]
    rows = []
    for dataset in per_run["dataset"].unique():
        for method in methods:
            for metric in (m for m in CLAIM_METRICS if m in per_run):
                d = paired(per_run, dataset, method, reference, metric)
                if d is not None:
                    rows.append({"dataset": dataset, "method": method, "metric": metric, **d})
    return pd.DataFrame(rows, columns=COLUMNS)


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions) -> pd.DataFrame:
    """``claim_table`` of every method against the reference."""
    return claim_table(tables["per_class"], tables.get("runs"), tables["groups"], options.reference)


def draw(table: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """Forest plot of ``claim_table``: a panel per dataset, a block of rows per metric (all, easy,
    medium, hard, worst class), in it a point per method (its display name and fixed colour) at its
    mean paired Δ to the reference with the t-interval as a horizontal bar, the black line at 0.
    A point whose interval lies right of 0 is a gain the seeds support. An interval reaching past
    ±``POSSIBLE`` (few seeds that disagree wildly) is drawn up to it and marked there with ``<``/``>``."""
    datasets = list(dict.fromkeys(table["dataset"]))
    present = list(dict.fromkeys(table["method"]))
    metrics = [m for m in CLAIM_METRICS if m in set(table["metric"])]
    fig, axes = panels(len(datasets), width=WIDE_PANEL)
    fig.set_figheight(max(2.5, METRIC_ROW * len(metrics) * (len(present) + 1) + 1.0))
    step = 1.0 / (len(present) + 1)
    reference = display_name(options.reference)
    for ax, dataset in zip(axes.flat, datasets):
        part = table[table["dataset"] == dataset]  # never empty: the datasets are the table's own
        for i, method in enumerate(present):
            rows = part[part["method"] == method].set_index("metric").reindex(metrics)
            y = np.arange(len(metrics)) + step * (i - (len(present) - 1) / 2)
            lo, hi = rows["diff_lo"].clip(lower=-POSSIBLE), rows["diff_hi"].clip(upper=POSSIBLE)
            err = np.nan_to_num(np.vstack([rows["diff"] - lo, hi - rows["diff"]]))
            ax.errorbar(rows["diff"], y, xerr=err, fmt="o", markersize=SMALL_POINT, **WIDE_INTERVAL,
                        color=method_colour(method), label=display_name(method))
            for side, beyond, marker in ((-POSSIBLE, rows["diff_lo"] < -POSSIBLE, "<"),
                                         (POSSIBLE, rows["diff_hi"] > POSSIBLE, ">")):
                if beyond.any():  # the interval reaches past what a difference of accuracies can be
                    ax.plot(np.full(beyond.sum(), side), y[beyond.to_numpy()], marker, markersize=POINT,
                            color=method_colour(method), linestyle="none")
        ax.axvline(0.0, **ZERO_LINE)
        for b in range(1, len(metrics)):
            ax.axhline(b - 0.5, **RULE)
        ax.set_yticks(range(len(metrics)))
        ax.set_yticklabels([metric_name(m) for m in metrics])
        ax.set_ylim(len(metrics) - 0.5, -0.5)  # "all" on top
        seeds = int(part["n_paired"].max())
        note = f"{LEVEL:.0%} t-interval over {seeds} paired seeds" if seeds > 1 else "1 seed: no interval"
        ax.set(title=f"{dataset}: Δ to {reference}\n({note})", xlabel=f"paired Δ test accuracy to {reference} (points)")
        ax.title.set_fontsize(TITLE_FONT)
        ax.legend()
    one_legend(axes.flat, "method")
    return fig
