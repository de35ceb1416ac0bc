"""All/easy/medium/hard accuracy of every method (default variants) as points side by side, the
point the mean over seeds, the error bar the sample sd over seeds (the y axis does not start at 0,
so no bars)."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ...common.runs import DEFAULT_VARIANT, RUN_KEYS
from ..groups import run_group_accuracy
from ..plotting import GROUP_ORDER, display_name, method_colour, one_legend, panels, plt
from ..style import INTERVAL, POINT, RULE
from .registry import FigureOptions

FIGURE = {
    "name": "group_accuracy", "title": "Group accuracy", "order": 4, "needs": None, "missing": None,
    "empty": "no runs to draw",
}
COLUMNS = ["dataset", "method", "variant", "group", "mean", "sd", "n"]


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions) -> pd.DataFrame:
    """A row per dataset, method (default variants, in the tables' order) and group of
    ``GROUP_ORDER`` (all, easy, medium, hard) the groups hold: the mean over seeds of the run's group
    accuracy (%), its sample sd over seeds (0 with one seed) and the number of seeds."""
    per_class = tables["per_class"]
    selected = per_class[per_class["variant"] == DEFAULT_VARIANT]
    if selected.empty:
        return pd.DataFrame(columns=COLUMNS)
    per_run = run_group_accuracy(selected, tables["groups"])
    long = per_run.melt(id_vars=RUN_KEYS, value_vars=[g for g in GROUP_ORDER if g in per_run],
                        var_name="group", value_name="accuracy")
    long["accuracy"] *= 100
    stats = long.groupby(["dataset", "method", "variant", "group"])["accuracy"].agg(["mean", "std", "count"])
    out = stats.reset_index().rename(columns={"std": "sd", "count": "n"}).fillna({"sd": 0.0})
    runs = list(dict.fromkeys(zip(selected["method"], selected["variant"])))  # the config's order
    slot = {run: i for i, run in enumerate(runs)}
    datasets = list(dict.fromkeys(selected["dataset"]))
    out = out.assign(_d=out["dataset"].map(datasets.index), _r=[slot[r] for r in zip(out["method"], out["variant"])],
                     _g=out["group"].map(GROUP_ORDER.index))
    return out.sort_values(["_d", "_r", "_g"])[COLUMNS].reset_index(drop=True)


def draw(table: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """A panel per dataset: per group a slot of width 0.8 shared by the methods' points, in the
    tables' order, each in its colour and display name; grey rules between the groups. A method
    missing from one dataset leaves its slot empty there."""
    runs = list(dict.fromkeys(zip(table["method"], table["variant"])))
    datasets = list(dict.fromkeys(table["dataset"]))
    fig, axes = panels(len(datasets))
    fig.set_figwidth(fig.get_figwidth() * max(1.0, len(runs) / 5))  # room for many methods
    step = 0.8 / len(runs)  # the runs share 0.8 of each group's unit
    for ax, dataset in zip(axes.flat, datasets):
        part = table[table["dataset"] == dataset]
        order = [g for g in GROUP_ORDER if g in set(part["group"])]
        for i, (method, variant) in enumerate(runs):
            rows = part[(part["method"] == method) & (part["variant"] == variant)].set_index("group").reindex(order)
            if rows["mean"].isna().all():
                continue
            x = np.arange(len(order)) + step * (i - (len(runs) - 1) / 2)
            ax.errorbar(x, rows["mean"], yerr=rows["sd"].fillna(0.0).to_numpy(), fmt="o", markersize=POINT, **INTERVAL,
                        color=method_colour(method, variant), label=display_name(method, variant))
        for b in range(1, len(order)):
            ax.axvline(b - 0.5, **RULE)
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order)
        ax.set(title=dataset, xlabel="classes (groups from the reference method)", ylabel="test accuracy (%)")
        ax.legend()
    one_legend(axes.flat, "method")
    return fig
