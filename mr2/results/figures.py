"""Figures of the replication, drawn with seaborn from the tidy tables of ``mr2.results``.

Every figure function takes the tables it needs and an output ``stem`` and writes
``<stem>.png`` and ``<stem>.pdf`` (atomically), then closes the figure; it returns the two
paths. Each dataset gets its own panel. Methods, variants or seeds that a config does not
run are left out; a figure with nothing to show says so in a placeholder instead of failing.
Accuracies are drawn in percent; means are over seeds.

  per_class_sorted         per-class accuracy sorted ascending, a line per method (paper Fig. 1a)
  accuracy_vs_variability  per-class accuracy against a_k of the training features (Fig. 1b)
  group_accuracy           all/easy/medium/hard accuracy per method, error bars = sd over seeds
  change_vs_reference      per-class change of every method over ERM against ERM's accuracy, a panel each
  margins_over_training    γ_k per epoch of easy and hard classes (MR²)
  sweeps                   accuracy (all, hard) against swept c̄ and λ (Fig. 5)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib.ticker
import pandas as pd
import seaborn as sns

from ..common.runs import DEFAULT_VARIANT, RUN_KEYS, run_label
from .groups import run_group_accuracy
from .plotting import (GROUP_COLOURS, GROUP_ORDER, PANEL_SIZE, _empty_panel, _one_legend, _panels, placeholder, plt,
                       save_figure)
from .statistics import spearman

NO_SWEEP = "no sweep in this config"
PANELS_PER_ROW = 4  # small multiples of the per-class change figure


def _labels_in_order(per_class: pd.DataFrame) -> list[str]:
    """Method labels in order of first appearance (the config's order of methods)."""
    pairs = per_class[["method", "variant"]].drop_duplicates()
    return [run_label(m, v) for m, v in zip(pairs["method"], pairs["variant"])]


def _select(frame: pd.DataFrame, methods: Sequence[str] | None, variants: Sequence[str] | None) -> pd.DataFrame:
    keep = pd.Series(True, index=frame.index)
    if methods is not None:
        keep &= frame["method"].isin(list(methods))
    if variants is not None:
        keep &= frame["variant"].isin(list(variants))
    return frame[keep]


def class_means(per_class: pd.DataFrame, columns: Sequence[str] = ("accuracy",)) -> pd.DataFrame:
    """Mean over seeds of ``columns`` per dataset, method, variant and class, with a ``label``."""
    means = per_class.groupby(["dataset", "method", "variant", "class"], sort=False)[list(columns)].mean().reset_index()
    means["label"] = [run_label(m, v) for m, v in zip(means["method"], means["variant"])]
    return means


def plot_per_class_sorted(per_class: pd.DataFrame, stem: str | Path, methods: Sequence[str] | None = None,
                          variants: Sequence[str] | None = (DEFAULT_VARIANT,)) -> list[Path]:
    """Per-class accuracy (mean over seeds) sorted ascending, a line per method (Fig. 1a)."""
    data = class_means(_select(per_class, methods, variants))
    if data.empty:
        return placeholder(stem, "no runs to draw")
    data["accuracy"] *= 100
    data = data.sort_values(["dataset", "label", "accuracy"])
    data["rank"] = data.groupby(["dataset", "label"]).cumcount()
    datasets = list(data["dataset"].unique())
    fig, axes = _panels(len(datasets))
    order = _labels_in_order(data)
    for ax, dataset in zip(axes.flat, datasets):
        sns.lineplot(data=data[data["dataset"] == dataset], x="rank", y="accuracy", hue="label", hue_order=order, ax=ax)
        ax.set(title=dataset, xlabel="class rank (ascending accuracy)", ylabel="test accuracy (%)")
    _one_legend(axes.flat, "method")
    return save_figure(fig, stem)


def plot_accuracy_vs_variability(per_class: pd.DataFrame, stem: str | Path, methods: Sequence[str] = ("erm", "mr2"),
                                 variant: str = DEFAULT_VARIANT, feature: str = "a") -> list[Path]:
    """Per-class test accuracy against a_k of the training features, each method its own a_k
    (Fig. 1b); Spearman's ρ per method in the panel title. ``feature`` may be ``a_p3`` etc."""
    data = class_means(_select(per_class, methods, [variant]), ["accuracy", feature])
    if data.empty:
        return placeholder(stem, f"no runs of {', '.join(methods)}")
    data["accuracy"] *= 100
    datasets = list(data["dataset"].unique())
    fig, axes = _panels(len(datasets))
    for ax, dataset in zip(axes.flat, datasets):
        part = data[data["dataset"] == dataset]
        sns.scatterplot(data=part, x=feature, y="accuracy", hue="label", hue_order=_labels_in_order(data),
                        ax=ax, s=18, alpha=0.7)
        rhos = [f"ρ[{label}] = {spearman(g[feature], g['accuracy']):.2f}" for label, g in part.groupby("label", sort=False)]
        ax.set(title=f"{dataset}\n" + ", ".join(rhos), xlabel=f"{feature} (training features)",
               ylabel="test accuracy (%)")
    _one_legend(axes.flat, "method")
    return save_figure(fig, stem)


def plot_group_accuracy(per_class: pd.DataFrame, groups: pd.DataFrame, stem: str | Path,
                        methods: Sequence[str] | None = None, variants: Sequence[str] | None = (DEFAULT_VARIANT,),
                        errorbar: Any = "sd") -> list[Path]:
    """Bars of all/easy/medium/hard accuracy per method; the bar is the mean over seeds and the
    error bar the sample sd over seeds (``errorbar="sd"``; ``("ci", 95)`` for a bootstrap CI).
    No error bar with one seed."""
    selected = _select(per_class, methods, variants)
    if selected.empty:
        return placeholder(stem, "no runs to draw")
    per_run = run_group_accuracy(selected, groups)
    per_run["label"] = [run_label(m, v) for m, v in zip(per_run["method"], per_run["variant"])]
    long = per_run.melt(id_vars=RUN_KEYS + ["label"], value_vars=[g for g in GROUP_ORDER if g in per_run],
                        var_name="group", value_name="accuracy")
    long["accuracy"] *= 100
    datasets = list(long["dataset"].unique())
    fig, axes = _panels(len(datasets))
    fig.set_figwidth(fig.get_figwidth() * max(1.0, len(_labels_in_order(selected)) / 5))  # room for many bars
    for ax, dataset in zip(axes.flat, datasets):
        part = long[long["dataset"] == dataset]
        sns.barplot(data=part, x="group", y="accuracy", hue="label", hue_order=_labels_in_order(selected),
                    errorbar=errorbar, ax=ax,
                    order=[g for g in GROUP_ORDER if g in set(part["group"])], capsize=0.1, err_kws={"linewidth": 1})
        low = part["accuracy"].min()
        ax.set(title=dataset, xlabel="classes (groups from the reference method)", ylabel="test accuracy (%)",
               ylim=(max(0.0, low - 10), min(100.0, part["accuracy"].max() + 5)))
    _one_legend(axes.flat, "method")
    return save_figure(fig, stem)


def plot_change_vs_reference(per_class: pd.DataFrame, stem: str | Path, reference: str = "erm",
                             methods: Sequence[str] | None = None,
                             variants: Sequence[str] | None = (DEFAULT_VARIANT,)) -> list[Path]:
    """Per-class accuracy change of each method over the reference (difference of the means
    over seeds) against the reference's per-class accuracy: one panel per dataset and method
    (at most ``PANELS_PER_ROW`` methods in a row, the same y axis everywhere), a colour per
    method, a zero line. ``methods`` defaults to every method run except the reference (MR²
    variants and baselines), in the config's order."""
    means = class_means(per_class)
    ref = means[(means["method"] == reference) & (means["variant"] == DEFAULT_VARIANT)]
    if methods is None:
        methods = [m for m in dict.fromkeys(per_class["method"]) if m != reference]
    others = _select(means, methods, variants)
    if ref.empty or others.empty:
        return placeholder(stem, f"needs runs of {reference} and of {', '.join(methods) or 'another method'}")
    data = others.merge(ref[["dataset", "class", "accuracy"]], on=["dataset", "class"], suffixes=("", "_ref"))
    if data.empty:
        return placeholder(stem, f"no dataset has runs of both {reference} and {', '.join(methods)}")
    data["change"] = 100 * (data["accuracy"] - data["accuracy_ref"])
    data["accuracy_ref"] *= 100
    datasets, labels = list(data["dataset"].unique()), _labels_in_order(others)
    colours = dict(zip(labels, sns.color_palette("tab20" if len(labels) > 10 else "tab10", len(labels))))
    ncols = min(PANELS_PER_ROW, len(labels))
    rows_per_dataset = -(-len(labels) // ncols)
    fig, axes = _panels(ncols, ncols=ncols, nrows=len(datasets) * rows_per_dataset)
    low, high = data["change"].min(), data["change"].max()
    pad = 0.05 * max(high - low, 1.0)
    for d, dataset in enumerate(datasets):
        panels = axes[d * rows_per_dataset:(d + 1) * rows_per_dataset].flat
        for i, ax in enumerate(panels):
            if i >= len(labels):
                ax.set_axis_off()
                continue
            part = data[(data["dataset"] == dataset) & (data["label"] == labels[i])]
            if part.empty:
                _empty_panel(ax, f"{dataset}: no runs of {labels[i]}")
                continue
            ax.scatter(part["accuracy_ref"], part["change"], s=18, alpha=0.8, color=colours[labels[i]])
            ax.axhline(0.0, color="black", linewidth=0.8)
            ax.set(title=f"{dataset}: {labels[i]}", xlabel=f"{reference} per-class accuracy (%)",
                   ylabel=f"change over {reference} (points)", ylim=(low - pad, high + pad))
    return save_figure(fig, stem)


def plot_margins_over_training(epochs: pd.DataFrame, groups: pd.DataFrame, stem: str | Path, method: str = "mr2",
                               variant: str = DEFAULT_VARIANT, show: Sequence[str] = ("easy", "hard"),
                               name: str = "gamma") -> list[Path]:
    """γ_k per epoch (mean over seeds) of the ``show`` groups' classes for ``method``: a thin
    line per class and a thick line per group mean, coloured by group."""
    rows = epochs[(epochs["method"] == method) & (epochs["variant"] == variant) & (epochs["name"] == name)
                  & epochs["class"].notna()]
    if rows.empty:
        return placeholder(stem, f"no per-class {name} logged for {run_label(method, variant)}")
    rows = rows.assign(**{"class": rows["class"].astype("int64")})
    data = rows.groupby(["dataset", "epoch", "class"])["value"].mean().reset_index()
    data = data.merge(groups.assign(**{"class": groups["class"].astype("int64")}), on=["dataset", "class"])
    data = data[data["group"].isin(list(show))]
    if data.empty:
        return placeholder(stem, f"no {', '.join(show)} classes with {name} logged")
    palette = {g: GROUP_COLOURS.get(g, "tab:blue") for g in show}
    datasets = list(data["dataset"].unique())
    fig, axes = _panels(len(datasets))
    for ax, dataset in zip(axes.flat, datasets):
        part = data[data["dataset"] == dataset]
        sns.lineplot(data=part, x="epoch", y="value", hue="group", units="class", estimator=None,
                     palette=palette, hue_order=list(show), linewidth=0.6, alpha=0.35, ax=ax, legend=False)
        sns.lineplot(data=part, x="epoch", y="value", hue="group", palette=palette, hue_order=list(show),
                     errorbar=None, linewidth=2.5, ax=ax)
        ax.set(title=f"{dataset}: {run_label(method, variant)}", xlabel="epoch", ylabel=f"{name}_k")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    _one_legend(axes.flat, "classes")
    return save_figure(fig, stem)


#: the runs-table columns of a run's resolved config that say which option a sweep variant changes
SWEEP_TAG = "config.tags.sweep"


def option_column(option: str) -> str:
    """The runs-table column of a method option in the run's resolved config."""
    return f"config.method.options.{option}"


def sweep_table(per_class: pd.DataFrame, runs: pd.DataFrame, groups: pd.DataFrame, method: str = "mr2",
                options: Sequence[str] = ("c_bar", "lam")) -> pd.DataFrame:
    """A row per run of the sweeps: dataset, seed, variant, option, value, all, hard (fractions).

    A sweep of ``option`` on a dataset is the runs of ``method`` whose resolved config marks them as
    varying it (``tags.sweep``, set by the pipeline) plus the default variant; each run's value is
    the option as its resolved config holds it (``method.options.<option>``), never parsed from a
    variant's name. A dataset without such runs has no rows.
    """
    columns = ["dataset", "seed", "variant", "option", "value", "all", "hard"]
    own = runs[runs["method"] == method]
    out = []
    for option in options:
        column = option_column(option)
        if SWEEP_TAG not in own or column not in own:
            continue
        swept = own[own[SWEEP_TAG] == option]
        if swept.empty:
            continue
        members = pd.concat([swept, own[(own["variant"] == DEFAULT_VARIANT) & own["dataset"].isin(swept["dataset"])]])
        part = per_class.merge(members[RUN_KEYS], on=RUN_KEYS)
        acc = run_group_accuracy(part, groups).merge(members[RUN_KEYS + [column]], on=RUN_KEYS)
        out.append(acc.assign(option=option, value=acc[column].astype(float)))
    if not out:
        return pd.DataFrame(columns=columns)
    return pd.concat(out, ignore_index=True)[columns]


def plot_sweeps(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame, stem: str | Path,
                method: str = "mr2", options: Sequence[str] = ("c_bar", "lam"), errorbar: Any = "sd") -> list[Path]:
    """Accuracy of all and of hard classes against each swept value (Fig. 5): a row of panels
    per dataset, a panel per option; the line is the mean over seeds, the band the sd. A panel
    whose option was not swept, or a config with no sweep at all, says "no sweep in this config"."""
    data = sweep_table(per_class, runs, groups, method, options)
    if data.empty:
        return placeholder(stem, NO_SWEEP)
    long = data.melt(id_vars=["dataset", "seed", "variant", "option", "value"], value_vars=["all", "hard"],
                     var_name="classes", value_name="accuracy")
    long["accuracy"] *= 100
    datasets = list(long["dataset"].unique())
    fig, axes = _panels(len(options), nrows=len(datasets))
    for row, dataset in zip(axes, datasets):
        for ax, option in zip(row, options):
            part = long[(long["dataset"] == dataset) & (long["option"] == option)]
            if part.empty:
                _empty_panel(ax, f"{dataset}, {option}: {NO_SWEEP}")
                continue
            sns.lineplot(data=part, x="value", y="accuracy", hue="classes", hue_order=["all", "hard"],
                         marker="o", errorbar=errorbar, ax=ax)
            default = data.loc[(data["dataset"] == dataset) & (data["option"] == option)
                               & (data["variant"] == DEFAULT_VARIANT), "value"]
            if len(default):
                ax.axvline(default.iloc[0], color="grey", linestyle=":", linewidth=1, label="default")
            ax.set(title=f"{dataset}: {method}, sweep of {option}", xlabel=option, ylabel="test accuracy (%)")
    _one_legend(axes.flat, "classes")
    return save_figure(fig, stem)


def make_figures(tables: dict[str, pd.DataFrame], groups: pd.DataFrame, out_dir: str | Path,
                 reference: str = "erm", sweep_method: str = "mr2") -> dict[str, list[Path]]:
    """Every figure of the report into ``out_dir`` as ``<name>.png`` and ``<name>.pdf``.

    ``tables`` holds ``per_class``, ``runs`` and ``epochs`` (``mr2.results.aggregate``).
    """
    out = Path(out_dir)
    pc, runs, epochs = tables["per_class"], tables.get("runs"), tables["epochs"]
    return {
        "per_class_sorted": plot_per_class_sorted(pc, out / "per_class_sorted"),
        "accuracy_vs_variability": plot_accuracy_vs_variability(pc, out / "accuracy_vs_variability",
                                                                methods=(reference, sweep_method)),
        "group_accuracy": plot_group_accuracy(pc, groups, out / "group_accuracy"),
        "change_vs_erm": plot_change_vs_reference(pc, out / "change_vs_erm", reference=reference),
        "margins_over_training": plot_margins_over_training(epochs, groups, out / "margins_over_training",
                                                            method=sweep_method),
        "sweeps": plot_sweeps(pc, runs, groups, out / "sweeps", method=sweep_method),
    }
