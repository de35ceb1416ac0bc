"""Per-class accuracy of every method (mean over seeds, default variants): with at most
``DOT_PLOT_MAX`` classes a dot plot naming each class, with more the paper's Fig. 1a (each method's
accuracies sorted ascending, a line per method)."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import seaborn as sns

from ...common.runs import DEFAULT_VARIANT
from ..groups import class_names
from ..per_class import class_means
from ..plotting import display_name, method_colour, one_legend, panels, plt
from ..style import CLASS_ROW, DOT_ALPHA, GRID, LABEL_FONT, PANEL_SIZE, POINT, WIDE_PANEL
from .registry import FigureOptions

FIGURE = {
    "name": "per_class_sorted", "title": "Per-class accuracy", "order": 3, "needs": None, "missing": None,
    "empty": "no runs to draw",
}
DOT_PLOT_MAX = 30  # up to this many classes the figure names each class (a dot plot)


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions) -> pd.DataFrame:
    """A row per dataset, method (default variants, in the tables' order) and class: accuracy (%,
    mean over seeds), label (the method's display name) and class_name."""
    per_class = tables["per_class"]
    data = class_means(per_class[per_class["variant"] == DEFAULT_VARIANT])
    data["accuracy"] *= 100
    data["label"] = [display_name(m, v) for m, v in zip(data["method"], data["variant"])]
    return data.merge(class_names(per_class), on=["dataset", "class"])  # every class is named


def draw(data: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """With at most ``DOT_PLOT_MAX`` classes a row per class, ordered by the reference's accuracy
    (hardest at the top; by the methods' mean without the reference), a dot per method in its colour.
    With more, each method's accuracies sorted ascending, a line per method (the same x is then a
    different class for two methods). One legend, the methods in the tables' order."""
    datasets = list(data["dataset"].unique())
    order = list(dict.fromkeys(data["label"]))  # the config's order
    palette = {display_name(m, v): method_colour(m, v) for m, v in zip(data["method"], data["variant"])}
    k = int(data.groupby("dataset")["class"].nunique().max())
    reference = display_name(options.reference)
    if k <= DOT_PLOT_MAX:
        fig, axes = panels(len(datasets), width=WIDE_PANEL)
        fig.set_figheight(max(PANEL_SIZE[1], CLASS_ROW * k + 1.2))
        for ax, dataset in zip(axes.flat, datasets):
            part = data[data["dataset"] == dataset]
            ref = part[part["method"] == options.reference].set_index("class")["accuracy"]
            rank = part.groupby("class")["accuracy"].mean() if ref.empty else ref
            classes = list(rank.sort_values(kind="stable").index)
            names = part.drop_duplicates("class").set_index("class")["class_name"]
            for label in order:
                rows = part[part["label"] == label].set_index("class").reindex(classes)
                ax.plot(rows["accuracy"], np.arange(len(classes)), "o", markersize=POINT, alpha=DOT_ALPHA,
                        color=palette[label], label=label)
            ax.set_yticks(range(len(classes)))
            ax.set_yticklabels([str(names[c]) for c in classes], fontsize=LABEL_FONT)
            ax.set_ylim(len(classes) - 0.5, -0.5)  # hardest at the top
            ax.grid(axis="y", **GRID)
            ax.set(title=dataset, xlabel="test accuracy (%)",
                   ylabel=f"class (ascending {reference} accuracy)" if not ref.empty else "class")
    else:
        data = data.sort_values(["dataset", "label", "accuracy"])
        data["rank"] = data.groupby(["dataset", "label"]).cumcount()
        fig, axes = panels(len(datasets))
        for ax, dataset in zip(axes.flat, datasets):
            sns.lineplot(data=data[data["dataset"] == dataset], x="rank", y="accuracy", hue="label", hue_order=order,
                         palette=palette, ax=ax)
            ax.set(title=dataset, xlabel="rank of the class within each method (ascending accuracy)",
                   ylabel="test accuracy (%)")
    for ax in axes.flat:
        if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
            ax.legend()
    one_legend(axes.flat, "method")
    return fig
