"""The report's first figure, the paper's claim at a glance: each method's paired difference to the
reference (ERM) for all, easy, medium and hard classes and the worst class, with its t-interval over
seeds, as a forest plot around a zero line.

  claim_table   a row per dataset, method (default variant) and metric: diff, diff_lo, diff_hi, n_paired
  plot_claim    a panel per dataset: a row per metric, a point per method, its interval, a line at 0
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..common.runs import DEFAULT_VARIANT
from .plotting import _one_legend, _panels, display_name, method_colour, placeholder, save_figure
from .statistics import LEVEL
from .tables import METRIC_TITLES, paired, per_run_metrics

#: the rows of the forest plot, top to bottom
CLAIM_METRICS = ("all", "easy", "medium", "hard", "worst")
COLUMNS = ["dataset", "method", "metric", "diff", "diff_lo", "diff_hi", "n_paired"]
ROW_HEIGHT = 0.16  # inches per method and metric
POSSIBLE = 100.0  # a difference of two accuracies lies in [-100, 100] points; a t-interval may reach past it
NO_CLAIM = "needs runs of the reference and of another method on the same dataset and seeds"


def metric_name(metric: str) -> str:
    """'all classes', 'hard classes', 'worst class'."""
    return "worst class" if metric == "worst" else f"{METRIC_TITLES[metric].lower()} classes"


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


def plot_claim(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame, stem: str | Path,
               reference: str = "erm", methods: Sequence[str] | None = None, level: float = LEVEL) -> list[Path]:
    """Forest plot of ``claim_table``: a panel per dataset, a block of rows per metric (all, easy,
    medium, hard, worst class), in it a point per method (its display name and fixed colour) at its
    mean paired Δ to the reference with the t-interval as a horizontal bar, the black line at 0.
    A point whose interval lies right of 0 is a gain the seeds support. An interval reaching past
    ±``POSSIBLE`` (few seeds that disagree wildly) is drawn up to it and marked there with ``<``/``>``."""
    table = claim_table(per_class, runs, groups, reference, methods)
    if table.empty:
        return placeholder(stem, NO_CLAIM)
    datasets = list(dict.fromkeys(table["dataset"]))
    present = list(dict.fromkeys(table["method"]))
    metrics = [m for m in CLAIM_METRICS if m in set(table["metric"])]
    height = max(2.5, ROW_HEIGHT * len(metrics) * (len(present) + 1) + 1.0)
    fig, axes = _panels(len(datasets), width=5.0)
    fig.set_figheight(height)
    step = 1.0 / (len(present) + 1)
    for ax, dataset in zip(axes.flat, datasets):
        part = table[table["dataset"] == dataset]  # never empty: the datasets are the table's own
        for i, method in enumerate(present):
            rows = part[part["method"] == method].set_index("metric").reindex(metrics)
            y = np.arange(len(metrics)) + step * (i - (len(present) - 1) / 2)
            lo, hi = rows["diff_lo"].clip(lower=-POSSIBLE), rows["diff_hi"].clip(upper=POSSIBLE)
            err = np.nan_to_num(np.vstack([rows["diff"] - lo, hi - rows["diff"]]))
            ax.errorbar(rows["diff"], y, xerr=err, fmt="o", markersize=4, capsize=2, elinewidth=1.2,
                        color=method_colour(method), label=display_name(method))
            for side, beyond, marker in ((-POSSIBLE, rows["diff_lo"] < -POSSIBLE, "<"),
                                         (POSSIBLE, rows["diff_hi"] > POSSIBLE, ">")):
                if beyond.any():  # the interval reaches past what a difference of accuracies can be
                    ax.plot(np.full(beyond.sum(), side), y[beyond.to_numpy()], marker, markersize=5,
                            color=method_colour(method), linestyle="none")
        ax.axvline(0.0, color="black", linewidth=0.8)
        for b in range(1, len(metrics)):
            ax.axhline(b - 0.5, color="0.85", linewidth=0.6)
        ax.set_yticks(range(len(metrics)))
        ax.set_yticklabels([metric_name(m) for m in metrics])
        ax.set_ylim(len(metrics) - 0.5, -0.5)  # "all" on top
        seeds = int(part["n_paired"].max())
        note = f"{level:.0%} t-interval over {seeds} paired seeds" if seeds > 1 else "1 seed: no interval"
        ax.set(title=f"{dataset}: Δ to {display_name(reference)} ({note})",
               xlabel=f"paired Δ test accuracy to {display_name(reference)} (points)")
        ax.title.set_fontsize(9)
        ax.legend()
    _one_legend(axes.flat, "method")
    return save_figure(fig, stem)
