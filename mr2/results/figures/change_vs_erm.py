"""Per-class change of each method over the reference (``mr2.results.per_class.class_changes``: the
mean paired difference over seeds, its t-interval the error bar): a panel per dataset and method,
the classes named along x and ordered by the reference's accuracy (hardest left), easy/medium/hard
shaded. Each title counts the intervals that exclude 0 as the report's text does
(``changed_classes``)."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ..per_class import changed_classes, class_changes
from ..plotting import class_axis, class_axis_width, display_name, empty_panel, method_colour, panels, plt
from ..statistics import LEVEL
from ..style import CLASS_TITLE_PAD, INTERVAL, SMALL_POINT, TITLE_FONT, ZERO_LINE
from .registry import FigureOptions

FIGURE = {
    "name": "change_vs_erm", "title": "Per-class change over the reference", "order": 5, "needs": None,
    "missing": None,  # the same runs as claim_forest's: its line says what runs both
    "empty": "needs runs of {reference} and of another method on the same dataset and seeds",
}
PANELS_PER_ROW = 4  # small multiples
CLASSES_PER_ROW = 40  # fewer panels in a row when each names many classes


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions) -> pd.DataFrame:
    """``class_changes`` of every method but the reference (default variants) with each class's group
    (NaN for a class without one); the datasets in the tables' order, within each the classes in
    ascending order of the reference's accuracy."""
    changes = class_changes(tables["per_class"], options.reference)
    changes = changes.merge(tables["groups"][["dataset", "class", "group"]], on=["dataset", "class"], how="left")
    first = {d: i for i, d in enumerate(dict.fromkeys(changes["dataset"]))}
    ordered = changes.assign(_d=changes["dataset"].map(first)).sort_values(["_d", "ref_accuracy", "class"])
    return ordered.drop(columns="_d").reset_index(drop=True)  # (ref_accuracy, class) is unique within a panel


def draw(data: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """Up to ``PANELS_PER_ROW`` methods in a row per dataset (fewer with many classes), every panel on
    one y axis, a method a dataset lacks saying so; the zero line; the method's colour; the title
    names the methods, the interval's level and seeds and how many intervals exclude 0."""
    datasets, labels = list(data["dataset"].unique()), list(dict.fromkeys(data["label"]))
    k = int(data.groupby("dataset")["class"].nunique().max())
    ncols = min(PANELS_PER_ROW, len(labels), max(1, CLASSES_PER_ROW // k))
    rows_per_dataset = -(-len(labels) // ncols)
    fig, axes = panels(ncols, nrows=len(datasets) * rows_per_dataset, width=class_axis_width(k))
    ends = pd.concat([data["diff"], data["diff_lo"], data["diff_hi"]]).dropna().clip(-100, 100)  # |change| ≤ 100
    pad = 0.05 * max(ends.max() - ends.min(), 1.0)
    ref_name = display_name(options.reference)
    for d, dataset in enumerate(datasets):
        for i, ax in enumerate(axes[d * rows_per_dataset:(d + 1) * rows_per_dataset].flat):
            if i >= len(labels):
                ax.set_axis_off()
                continue
            part = data[(data["dataset"] == dataset) & (data["label"] == labels[i])]
            if part.empty:
                empty_panel(ax, f"{dataset}: no runs of {labels[i]}")
                continue
            pos = np.arange(len(part))
            yerr = np.nan_to_num(np.vstack([part["diff"] - part["diff_lo"], part["diff_hi"] - part["diff"]]))
            method, variant = part.iloc[0][["method", "variant"]]
            ax.errorbar(pos, part["diff"], yerr=yerr, fmt="o", markersize=SMALL_POINT, color=method_colour(method, variant),
                        **INTERVAL)
            ax.axhline(0.0, **ZERO_LINE)
            class_axis(ax, list(part["class_name"]), list(part["group"].fillna("?")))
            seeds = int(part["n_paired"].max())
            note = f"{LEVEL:.0%} t-interval over {seeds} seeds" if seeds > 1 else "1 seed: no interval"
            up, down, warning = changed_classes(part)
            found = (f"{len(up) + len(down)} of {len(part)} intervals exclude 0"
                     + (": one of many comparisons, not a finding" if warning else "")) if seeds > 1 else ""
            ax.set_title(f"{dataset}: {display_name(method, variant)} − {ref_name} ({note})"
                         + (f"\n{found}" if found else ""), pad=CLASS_TITLE_PAD, fontsize=TITLE_FONT)
            ax.set(xlabel=f"class (ascending {ref_name} accuracy)", ylabel=f"change over {ref_name} (points)",
                   ylim=(ends.min() - pad, ends.max() + pad))
    return fig
