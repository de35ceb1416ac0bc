"""γ_k per epoch (mean over seeds) of the easy, medium and hard classes of the MR² method and, in
panels beside it, of MR² without its representation term (``mr2_no_rep``) when the run holds it:
a thin line per class named at its end, a thick line per group mean, coloured by group, a dotted
line at c̄ (the mean margin Corollary 1 holds fixed). The log's a_k are drawn the same way
(``table(..., name="a")``, as the margins notebook does)."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.ticker
import pandas as pd
import seaborn as sns

from ...common.runs import DEFAULT_VARIANT
from ..groups import class_names
from ..plotting import display_name, empty_panel, end_labels, one_legend, panels, plt, symbol
from ..style import C_BAR_LINE, C_BAR_NOTE, CLASS_LINE, GROUP_COLOURS, GROUP_LINE, MARGIN_PANEL
from .registry import FigureOptions

FIGURE = {
    "name": "margins_over_training", "title": "Margins over training", "order": 6, "needs": None,
    "missing": "No run of {method} logged its margins: `config/config.yaml` runs MR².",
    "empty": "no per-class gamma logged for {method}",
}
BESIDE = ("mr2_no_rep",)  # drawn beside the MR² method when the run holds them
SHOW = ["easy", "medium", "hard"]  # the groups drawn (a class without test samples has none)
MAX_EPOCH_TICKS = 12  # up to this many epochs each is a tick
COLUMNS = ["dataset", "method", "epoch", "class", "value", "group", "class_name", "name"]


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions, name: str = "gamma",
          beside: Sequence[str] = BESIDE) -> pd.DataFrame:
    """A row per dataset, method (the MR² method first, then those of ``beside`` the log holds; default
    variants), epoch and class of an easy, medium or hard group: the statistic ``name`` of the epoch log (mean
    over seeds), the class's group and name (its number where the tables name none) and ``name``.
    Empty unless the MR² method logged ``name`` per class. The log's classes may be floats (an
    epochs.csv read with ``pd.read_csv``)."""
    epochs = tables.get("epochs")
    methods = [options.method] + [m for m in beside if m != options.method]
    if epochs is None:
        return pd.DataFrame(columns=COLUMNS)
    rows = epochs[epochs["method"].isin(methods) & (epochs["variant"] == DEFAULT_VARIANT) & (epochs["name"] == name)
                  & epochs["class"].notna()]
    if rows[rows["method"] == options.method].empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = rows.assign(**{"class": rows["class"].astype("int64")})
    data = rows.groupby(["dataset", "method", "epoch", "class"])["value"].mean().reset_index()
    data = data.merge(tables["groups"], on=["dataset", "class"])
    data = data.merge(class_names(tables["per_class"]), on=["dataset", "class"], how="left")
    data = data.assign(class_name=data["class_name"].fillna(data["class"].astype(str)), name=name)
    data = data[data["group"].isin(list(SHOW))]
    order = {m: i for i, m in enumerate(methods)}
    return data.sort_values("method", key=lambda m: m.map(order), kind="stable")[COLUMNS].reset_index(drop=True)


def draw(data: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """A row per dataset sharing its y axis, a column per method (one a dataset lacks says so); the
    epochs as ticks (up to ``MAX_EPOCH_TICKS``); one legend of the groups."""
    name = data["name"].iloc[0]
    palette = {g: GROUP_COLOURS[g] for g in SHOW}
    methods, datasets = list(dict.fromkeys(data["method"])), list(dict.fromkeys(data["dataset"]))
    fig, axes = panels(len(methods), nrows=len(datasets), width=MARGIN_PANEL, sharey="row")
    ends = []
    for row, dataset in zip(axes, datasets):
        for ax, method in zip(row, methods):
            part = data[(data["dataset"] == dataset) & (data["method"] == method)]
            if part.empty:
                empty_panel(ax, f"{dataset}: no {name} logged for {display_name(method)}")
                continue
            sns.lineplot(data=part, x="epoch", y="value", hue="group", units="class", estimator=None,
                         palette=palette, hue_order=SHOW, ax=ax, legend=False, **CLASS_LINE)
            sns.lineplot(data=part, x="epoch", y="value", hue="group", palette=palette, hue_order=SHOW,
                         errorbar=None, ax=ax, **GROUP_LINE)
            last = part[part["epoch"] == part["epoch"].max()]
            if name == "gamma":  # Corollary 1 keeps the mean margin at c̄
                c_bar = float(last["value"].mean())
                ax.axhline(c_bar, **C_BAR_LINE)
                ax.annotate(f"c̄ = {c_bar:.3g}", (0.0, c_bar), xycoords=("axes fraction", "data"), xytext=(2, 2),
                            textcoords="offset points", **C_BAR_NOTE)
            ends.append((ax, float(last["epoch"].iloc[0]), last["value"].to_numpy(), list(last["class_name"]),
                         [palette[g] for g in last["group"]]))
            ax.set(title=f"{dataset}: {display_name(method)}", xlabel="epoch", ylabel=symbol(name))
            epochs_run = sorted(part["epoch"].unique())
            if len(epochs_run) <= MAX_EPOCH_TICKS:
                ax.set_xticks(epochs_run)
            else:
                ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    for end in ends:  # once every panel of a shared y axis is drawn: the names' spacing is final
        end_labels(*end)
    one_legend(axes.flat, "classes")
    return fig
