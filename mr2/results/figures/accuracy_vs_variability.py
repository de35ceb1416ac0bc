"""The premise's picture (Fig. 1b): per-class test accuracy against a_k of the training features and
against its spread ‖ŝ_k‖² alone, of the reference and the MR² method; each panel's title gives the
mean of the per-seed Spearman ρ with its t-interval over seeds (``mr2.results.per_class.seed_rho``)."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from ...common.runs import DEFAULT_VARIANT
from ..groups import class_names
from ..per_class import class_means, format_seed_rho, seed_rho
from ..plotting import display_name, empty_panel, method_colour, name_points, panels, plt, symbol
from ..style import SCATTER_ALPHA, SCATTER_POINT, SMALL_TITLE_FONT
from .registry import FigureOptions

FIGURE = {
    "name": "accuracy_vs_variability", "title": "The premise: accuracy against a_k and against the spread alone",
    "order": 2, "needs": None, "missing": None, "empty": "no runs of {reference}, {method}",
}
FEATURES = ("a", "spread")  # a row of panels each; per_class may also hold a_p3, a_p5
COLUMNS = ["dataset", "method", "variant", "feature", "class", "class_name", "x", "accuracy",
           "rho_mean", "rho_lo", "rho_hi", "n"]


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions,
          features: Sequence[str] = FEATURES) -> pd.DataFrame:
    """A row per dataset, method (the reference and the MR² method, default variants, in the tables'
    order), feature of ``features`` that the tables hold and class: x (the feature, mean over seeds),
    accuracy (%, mean over seeds), class_name, and the run's ``seed_rho`` of that feature."""
    per_class = tables["per_class"]
    features = [f for f in features if f in per_class]
    selected = per_class[per_class["method"].isin([options.reference, options.method])
                         & (per_class["variant"] == DEFAULT_VARIANT)]
    if selected.empty or not features:
        return pd.DataFrame(columns=COLUMNS)
    means = class_means(selected, ["accuracy", *features]).merge(class_names(per_class), on=["dataset", "class"],
                                                                 how="left")
    parts = []
    for feature in features:
        part = means.rename(columns={feature: "x"}).assign(feature=feature, accuracy=100 * means["accuracy"])
        parts.append(part.merge(seed_rho(selected, feature), on=["dataset", "method", "variant"], how="left"))
    return pd.concat(parts, ignore_index=True)[COLUMNS]


def draw(data: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """Per dataset a row per feature, a panel per method, each on its own x axis (the methods'
    features differ in scale), the rows sharing y; classes named without overlap (up to
    ``ANNOTATE_MAX``); a method a dataset lacks says so in its panel."""
    datasets, features = list(data["dataset"].unique()), list(dict.fromkeys(data["feature"]))
    runs = list(dict.fromkeys(zip(data["method"], data["variant"])))  # the config's order
    fig, axes = panels(len(runs), nrows=len(datasets) * len(features), sharey="row")
    for r, (dataset, feature) in enumerate((d, f) for d in datasets for f in features):
        for ax, (method, variant) in zip(axes[r], runs):
            part = data[(data["dataset"] == dataset) & (data["feature"] == feature) & (data["method"] == method)
                        & (data["variant"] == variant)]
            if part.empty:
                empty_panel(ax, f"{dataset}: no runs of {method}")
                continue
            ax.scatter(part["x"], part["accuracy"], s=SCATTER_POINT, alpha=SCATTER_ALPHA,
                       color=method_colour(method, variant))
            name_points(ax, part["x"], part["accuracy"], list(part["class_name"]))
            name = display_name(method, variant)
            ax.set_title(f"{dataset}: {name}\n{format_seed_rho(part.iloc[0])}", fontsize=SMALL_TITLE_FONT)
            ax.set(xlabel=f"{symbol(feature)} of {name}'s training features", ylabel="test accuracy (%)")
    return fig
