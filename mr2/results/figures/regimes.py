"""MR²'s and its ablations' paired Δ to the reference across training regimes (the training-set size
and the epoch budget of one data name; ``mr2.results.regimes``): a row of panels all / hard / worst
class per data name, x = the regimes ordered by size, then epochs, error bars the t-intervals."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ..plotting import display_name, method_colour, metric_name, one_legend, panels, plt
from ..regimes import METHODS, METRICS, regime_table, regimes
from ..statistics import LEVEL
from ..style import INTERVAL, LABEL_FONT, PANEL_SIZE, REGIME_WIDTH, SERIES_LINE, SMALL_POINT, ZERO_LINE
from .registry import FigureOptions

FIGURE = {
    "name": "regimes", "title": "Regimes", "order": 8, "needs": "regimes",
    "missing": "No data trained in several regimes (training-set size × epochs): `config/regimes.yaml` runs that.",
    "empty": "no dataset is run in several regimes (training-set size or epochs)",
}
DODGE = 0.12  # horizontal offset between the methods at one regime


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions) -> pd.DataFrame:
    """``regime_table`` of MR² and its ablations against the reference, and a row without a method for
    each regime of a data name drawn that has no comparison (its place on the x axis stays)."""
    rows = regime_table(tables["per_class"], tables.get("runs"), tables["groups"], options.reference)
    if rows.empty:
        return rows
    keys = regimes(tables.get("runs"))
    bare = keys[keys["data_name"].isin(rows["data_name"]) & ~keys["dataset"].isin(rows["dataset"])]
    return pd.concat([rows, bare], ignore_index=True) if len(bare) else rows


def draw(table: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """Per data name a row of panels all / hard / worst class: each method's paired Δ to the
    reference (points, the method's colour) at each regime, error bars its t-interval over seeds,
    a zero line."""
    names = list(dict.fromkeys(table["data_name"]))
    present = [m for m in METHODS if m in set(table["method"].dropna())]
    keys = table.drop_duplicates(["data_name", "dataset"]).sort_values(["data_name", "order"], kind="stable")
    n_regimes = int(keys.groupby("data_name").size().max())
    fig, axes = panels(len(METRICS), nrows=len(names), width=max(PANEL_SIZE[0], REGIME_WIDTH * n_regimes + 1.5),
                       sharey="row")
    for row, name in zip(axes, names):
        labels = keys.loc[keys["data_name"] == name, "regime"]  # every regime, in order, even one without rows
        for ax, metric in zip(row, METRICS):
            for i, method in enumerate(present):
                part = table[(table["data_name"] == name) & (table["metric"] == metric) & (table["method"] == method)]
                x = part["order"].to_numpy(float) + DODGE * (i - (len(present) - 1) / 2)
                yerr = np.nan_to_num(np.vstack([part["diff"] - part["diff_lo"], part["diff_hi"] - part["diff"]]))
                ax.errorbar(x, part["diff"], yerr=yerr, fmt="o-", markersize=SMALL_POINT, linewidth=SERIES_LINE,
                            capsize=INTERVAL["capsize"], color=method_colour(method), label=display_name(method))
            ax.axhline(0.0, **ZERO_LINE)
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(list(labels), rotation=20 if len(labels) > 3 else 0,
                               ha="right" if len(labels) > 3 else "center", fontsize=LABEL_FONT)
            ax.set(title=f"{name}: {metric_name(metric)}", xlabel="training regime (size per class × epochs)",
                   ylabel=f"Δ to {display_name(options.reference)} (points, {LEVEL:.0%} t-interval)")
            ax.legend()
    one_legend(axes.flat, "method")
    return fig
