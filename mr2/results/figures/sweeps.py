"""Accuracy of all and of hard classes against each swept value of an option of the swept method
(the paper's Fig. 5): the point the mean over seeds, its error bar the t-interval of the difference to
the reference paired by seed, drawn around the mean, so a bar that clears the reference's level
(dashed, its mean over seeds) is a difference the seeds support; the default value dotted.

  option_column  the runs-table column of a method option in a run's resolved config
  sweep_members  the runs of a sweep of one option (``theory.pipeline`` reads them too)
  sweep_table    a row per run of the sweeps: its option, value and all/hard accuracy
  table, draw    the figure's table (a row per dataset, option, value and classes) and the figure
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ...common.runs import DEFAULT_VARIANT, RUN_KEYS
from ..groups import run_group_accuracy
from ..plotting import display_name, empty_panel, one_legend, panels, plt, symbol, value_ticks
from ..statistics import LEVEL, paired_difference
from ..style import (ALL_CLASSES_COLOUR, DEFAULT_LINE, GROUP_COLOURS, INTERVAL, REFERENCE_LINE, SMALL_POINT,
                     TITLE_FONT)
from .registry import FigureOptions

FIGURE = {
    "name": "sweeps", "title": "Sweeps", "order": 7, "needs": "sweep",
    "missing": "No c̄ or λ sweep in this run: `config/sweeps.yaml` runs one (the paper's Fig. 5).",
    "empty": "no sweep in this config",
}
OPTIONS = ("c_bar", "lam")  # the options drawn, a column of panels each (the paper's Fig. 5)
LOG_OPTIONS = ("c_bar", "lam")  # swept on multiplicative grids: drawn on log axes
CLASSES = {"all": ALL_CLASSES_COLOUR, "hard": GROUP_COLOURS["hard"]}  # the accuracies drawn, in their colours
#: the runs-table column of a run's resolved config that says which option a sweep variant changes
SWEEP_TAG = "config.tags.sweep"
COLUMNS = ["dataset", "option", "value", "classes", "mean", "lo", "hi", "n", "ref_mean", "default"]


def option_column(option: str) -> str:
    """The runs-table column of a method option in the run's resolved config."""
    return f"config.method.options.{option}"


def sweep_members(runs: pd.DataFrame | None, method: str, option: str) -> pd.DataFrame:
    """The runs (rows of ``runs``) of a sweep of ``option``: the runs of ``method`` whose resolved
    config marks them as varying it (``tags.sweep``) and, on the datasets that have those, the default
    variant. Empty when nothing sweeps ``option`` or the runs table lacks the columns."""
    if runs is None or SWEEP_TAG not in runs or option_column(option) not in runs:
        return pd.DataFrame(columns=list(RUN_KEYS if runs is None else runs.columns))
    own = runs[runs["method"] == method]
    swept = own[own[SWEEP_TAG] == option]
    return pd.concat([swept, own[(own["variant"] == DEFAULT_VARIANT) & own["dataset"].isin(swept["dataset"])]])


def sweep_table(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame, method: str = "mr2",
                options: Sequence[str] = OPTIONS) -> pd.DataFrame:
    """A row per run of the sweeps: dataset, seed, variant, option, value, all, hard (fractions).

    A sweep of ``option`` on a dataset is its ``sweep_members``; each run's value is the option as its
    resolved config holds it (``method.options.<option>``), never parsed from a variant's name. A
    dataset without such runs has no rows.
    """
    columns = ["dataset", "seed", "variant", "option", "value", "all", "hard"]
    out = []
    for option in options:
        column = option_column(option)
        members = sweep_members(runs, method, option)
        if members.empty:
            continue
        part = per_class.merge(members[RUN_KEYS], on=RUN_KEYS)
        acc = run_group_accuracy(part, groups).merge(members[RUN_KEYS + [column]], on=RUN_KEYS)
        out.append(acc.assign(option=option, value=acc[column].astype(float)))
    if not out:
        return pd.DataFrame(columns=columns)
    return pd.concat(out, ignore_index=True)[columns]


def table(tables: Mapping[str, pd.DataFrame], options: FigureOptions) -> pd.DataFrame:
    """A row per dataset, option, swept value and classes (all, hard) of the swept method's sweeps
    (``sweep_table``): mean (%, over its seeds), lo and hi (its t-interval of the difference to the
    reference paired by seed, over the seeds both ran, put around the mean; the mean itself with
    fewer than two such seeds), n (its seeds), ref_mean (the reference's mean over its seeds, %; NaN
    without it) and default (whether the default variant runs this value)."""
    per_class, groups = tables["per_class"], tables["groups"]
    runs = sweep_table(per_class, tables.get("runs"), groups, options.sweep_method)
    is_ref = (per_class["method"] == options.reference) & (per_class["variant"] == DEFAULT_VARIANT)
    ref = run_group_accuracy(per_class[is_ref], groups) if is_ref.any() else None
    rows = []
    for (dataset, option), sweep in runs.groupby(["dataset", "option"], sort=False):
        own_ref = None if ref is None else ref[ref["dataset"] == dataset].set_index("seed")
        defaults = set(sweep.loc[sweep["variant"] == DEFAULT_VARIANT, "value"])
        for classes in CLASSES:
            ref_mean = 100 * own_ref[classes].mean() if own_ref is not None and len(own_ref) else np.nan
            for value in sorted(sweep["value"].unique()):
                at = sweep[sweep["value"] == value].set_index("seed")[classes]
                mean, lo, hi = 100 * at.mean(), 100 * at.mean(), 100 * at.mean()
                seeds = [] if own_ref is None else at.index.intersection(own_ref.index)
                if len(seeds) >= 2:
                    d = paired_difference(100 * at.loc[seeds].to_numpy(), 100 * own_ref.loc[seeds, classes].to_numpy(),
                                          LEVEL)
                    lo, hi = mean - (d["diff"] - d["diff_lo"]), mean + (d["diff_hi"] - d["diff"])
                rows.append({"dataset": dataset, "option": option, "value": value, "classes": classes, "mean": mean,
                             "lo": lo, "hi": hi, "n": len(at), "ref_mean": ref_mean, "default": value in defaults})
    return pd.DataFrame(rows, columns=COLUMNS)


def value_axis(ax: plt.Axes, option: str, values: Sequence[float]) -> None:
    """Swept values as the ticks; a log axis for the options of ``LOG_OPTIONS`` (symmetric-log when
    a value is 0 or below, linear within the smallest positive value)."""
    if option in LOG_OPTIONS:
        positive = [v for v in values if v > 0]
        if len(positive) == len(values):
            ax.set_xscale("log")
        elif positive:
            ax.set_xscale("symlog", linthresh=min(positive))
    value_ticks(ax.xaxis, values)


def draw(table: pd.DataFrame, options: FigureOptions) -> plt.Figure:
    """A row of panels per dataset, a panel per option some dataset sweeps; a dataset that does not
    sweep an option another one does says "no sweep in this config" in its panel."""
    swept = [o for o in OPTIONS if o in set(table["option"])]
    datasets = list(table["dataset"].unique())
    fig, axes = panels(len(swept), nrows=len(datasets))
    for row, dataset in zip(axes, datasets):
        for ax, option in zip(row, swept):
            part = table[(table["dataset"] == dataset) & (table["option"] == option)]
            if part.empty:
                empty_panel(ax, f"{dataset}, {option}: {FIGURE['empty']}")
                continue
            for classes, colour in CLASSES.items():
                line = part[part["classes"] == classes]
                ax.errorbar(line["value"], line["mean"], yerr=[line["mean"] - line["lo"], line["hi"] - line["mean"]],
                            fmt="o-", color=colour, markersize=SMALL_POINT, **INTERVAL, label=f"{classes} classes")
                if line["ref_mean"].notna().any():
                    ax.axhline(line["ref_mean"].iloc[0], color=colour, **REFERENCE_LINE,
                               label=f"{display_name(options.reference)}, {classes} classes")
            default = part.loc[part["default"], "value"]
            if len(default):
                ax.axvline(default.iloc[0], **DEFAULT_LINE, label="default")
            value_axis(ax, option, sorted(part["value"].unique()))
            ax.set(title=f"{dataset}: {display_name(options.sweep_method)}, sweep of {symbol(option)}",
                   xlabel=symbol(option), ylabel="test accuracy (%)")
            ax.title.set_fontsize(TITLE_FONT)
            ax.legend()
    one_legend(axes.flat, "classes")
    return fig
