"""Figures of the replication, drawn with seaborn from the tidy tables of ``mr2.results``.

Every figure function takes the tables it needs and an output ``stem`` and writes
``<stem>.png`` and ``<stem>.pdf`` (atomically), then closes the figure; it returns the two
paths. Each dataset gets its own panel. Methods, variants or seeds that a config does not
run are left out; ``make_figures`` draws only the figures whose comparison the run holds
(``available_figures``; the report names the config that runs a missing one), and a figure function
called with nothing to show says so in a placeholder instead of failing.
Accuracies are drawn in percent; means are over seeds. Every method has one colour in every
figure, every class axis names the classes, and the paper's quantities carry their symbols
(``mr2.results.plotting``).

  claim_forest             each method's paired Δ to ERM for all/easy/medium/hard/worst class (``claim_figures``)
  per_class_sorted         per-class accuracy: a named dot plot for few classes, sorted lines otherwise (Fig. 1a)
  accuracy_vs_variability  per-class accuracy against a_k and against its spread alone, a panel per method (Fig. 1b)
  group_accuracy           all/easy/medium/hard accuracy per method, error bars = sd over seeds
  change_vs_reference      per-class paired change of every method over ERM with its t-interval over seeds
  margins_over_training    γ_k per epoch of easy, medium and hard classes, classes named, c̄ marked (MR², beside it MR² λ = 0)
  sweeps                   accuracy (all, hard) against swept c̄ and λ on log axes, ERM's level, paired intervals (Fig. 5)
  regimes                  MR²'s and its ablations' paired Δ to ERM across training regimes (``regimes``)
  tradeoff                 per method, paired Δ on hard against easy classes with intervals (``tradeoff``)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib.ticker
import numpy as np
import pandas as pd
import seaborn as sns

from ..common.runs import DEFAULT_VARIANT, RUN_KEYS, run_label
from .groups import class_names, run_group_accuracy
from .plotting import (GROUP_COLOURS, GROUP_ORDER, _empty_panel, _one_legend, _panels, class_axis, class_axis_width,
                       PANEL_SIZE, display_name, end_labels, method_colour, name_points, placeholder, plt,
                       save_figure, symbol, value_ticks)
from .claim_figures import claim_table, plot_claim
from .regimes import plot_regimes, regime_table
from .statistics import (LEVEL, correlation_verdict, grouped_spearman, no_interval_reason, one_of_many,
                         paired_difference, seed_interval, verdict)
from .tradeoff import plot_tradeoff, tradeoff_points

NO_SWEEP = "no sweep in this config"
PANELS_PER_ROW = 4  # small multiples of the per-class change figure
CLASSES_PER_ROW = 40  # fewer change panels in a row when each names many classes
DOT_PLOT_MAX = 30  # up to this many classes the per-class figure names each class (a dot plot)
LOG_OPTIONS = ("c_bar", "lam")  # swept on multiplicative grids: drawn on log axes


def _labels_in_order(per_class: pd.DataFrame) -> list[str]:
    """Method labels in order of first appearance (the config's order of methods)."""
    pairs = per_class[["method", "variant"]].drop_duplicates()
    return [run_label(m, v) for m, v in zip(pairs["method"], pairs["variant"])]


def _select(frame: pd.DataFrame, methods: Sequence[str] | None, variants: Sequence[str] | None) -> pd.DataFrame:
    if methods is not None:
        frame = frame[frame["method"].isin(list(methods))]
    if variants is not None:
        frame = frame[frame["variant"].isin(list(variants))]
    return frame


def class_means(per_class: pd.DataFrame, columns: Sequence[str] = ("accuracy",)) -> pd.DataFrame:
    """Mean over seeds of ``columns`` per dataset, method, variant and class, with a ``label``."""
    means = per_class.groupby(["dataset", "method", "variant", "class"], sort=False)[list(columns)].mean().reset_index()
    means["label"] = [run_label(m, v) for m, v in zip(means["method"], means["variant"])]
    return means


def plot_per_class_sorted(per_class: pd.DataFrame, stem: str | Path, methods: Sequence[str] | None = None,
                          variants: Sequence[str] | None = (DEFAULT_VARIANT,), reference: str = "erm") -> list[Path]:
    """Per-class accuracy (mean over seeds). With at most ``DOT_PLOT_MAX`` classes a named dot plot: a
    row per class, ordered by the reference's accuracy (hardest at the top), a dot per method in its
    colour. With more classes the paper's Fig. 1a: each method's accuracies sorted ascending, a line
    per method (the same x is then a different class for two methods)."""
    data = class_means(_select(per_class, methods, variants))
    if data.empty:
        return placeholder(stem, "no runs to draw")
    data["accuracy"] *= 100
    data["label"] = [display_name(m, v) for m, v in zip(data["method"], data["variant"])]
    data = data.merge(class_names(per_class), on=["dataset", "class"])  # every class is named
    datasets = list(data["dataset"].unique())
    order = list(dict.fromkeys(data["label"]))  # the config's order
    palette = {display_name(m, v): method_colour(m, v) for m, v in zip(data["method"], data["variant"])}
    k = int(data.groupby("dataset")["class"].nunique().max())
    if k <= DOT_PLOT_MAX:
        fig, axes = _panels(len(datasets), width=5.0)
        fig.set_figheight(max(PANEL_SIZE[1], 0.28 * k + 1.2))
        for ax, dataset in zip(axes.flat, datasets):
            part = data[data["dataset"] == dataset]
            ref = part[part["method"] == reference].set_index("class")["accuracy"]
            rank = part.groupby("class")["accuracy"].mean() if ref.empty else ref
            classes = list(rank.sort_values(kind="stable").index)
            names = part.drop_duplicates("class").set_index("class")["class_name"]
            for label in order:
                rows = part[part["label"] == label].set_index("class").reindex(classes)
                ax.plot(rows["accuracy"], np.arange(len(classes)), "o", markersize=5, alpha=0.85,
                        color=palette[label], label=label)
            ax.set_yticks(range(len(classes)))
            ax.set_yticklabels([str(names[c]) for c in classes], fontsize=8)
            ax.set_ylim(len(classes) - 0.5, -0.5)  # hardest at the top
            ax.grid(axis="y", color="0.92", linewidth=0.6)
            ax.set(title=dataset, xlabel="test accuracy (%)",
                   ylabel=f"class (ascending {display_name(reference)} accuracy)" if not ref.empty else "class")
    else:
        data = data.sort_values(["dataset", "label", "accuracy"])
        data["rank"] = data.groupby(["dataset", "label"]).cumcount()
        fig, axes = _panels(len(datasets))
        for ax, dataset in zip(axes.flat, datasets):
            sns.lineplot(data=data[data["dataset"] == dataset], x="rank", y="accuracy", hue="label", hue_order=order,
                         palette=palette, ax=ax)
            ax.set(title=dataset, xlabel="rank of the class within each method (ascending accuracy)",
                   ylabel="test accuracy (%)")
    for ax in axes.flat:
        if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
            ax.legend()
    _one_legend(axes.flat, "method")
    return save_figure(fig, stem)


def seed_rho(per_class: pd.DataFrame, feature: str, level: float = LEVEL) -> pd.DataFrame:
    """Spearman's ρ(``feature``, accuracy) across classes within each run (dataset, method, variant,
    seed), then per dataset, method and variant the mean of the per-seed ρ with its
    ``seed_interval`` (rho_mean, rho_lo, rho_hi, n): the statistic the report's text uses."""
    keys = ["dataset", "method", "variant"]
    per_seed = grouped_spearman(per_class, keys + ["seed"], feature, "accuracy")
    rows = [{**dict(zip(keys, key)), **{f"rho_{k}" if k != "n" else "n": v
                                        for k, v in seed_interval(g["rho"], level).items()}}
            for key, g in per_seed.groupby(keys, sort=False)]
    return pd.DataFrame(rows, columns=keys + ["rho_mean", "rho_lo", "rho_hi", "n"])


def format_seed_rho(row: pd.Series | dict, level: float = LEVEL) -> str:
    """``ρ = −0.53 [95 % CI −0.85, −0.21], 3 seeds`` (the mean of per-seed ρ), with the word its interval
    earns when it says nothing (``correlation_verdict``: uninformative, not shown)."""
    if row is None or not row["n"] or pd.isna(row["rho_mean"]):
        return "ρ undefined"
    if pd.isna(row["rho_lo"]):
        return f"ρ = {row['rho_mean']:+.2f} ({no_interval_reason(int(row['n']))})"
    word = correlation_verdict(row["rho_lo"], row["rho_hi"])
    return (f"ρ = {row['rho_mean']:+.2f} [{level:.0%} CI {row['rho_lo']:+.2f}, {row['rho_hi']:+.2f}], {int(row['n'])} seeds"
            + (f": {word}" if word in ("uninformative", "not shown") else ""))


def plot_accuracy_vs_variability(per_class: pd.DataFrame, stem: str | Path, methods: Sequence[str] = ("erm", "mr2"),
                                 variant: str = DEFAULT_VARIANT, features: Sequence[str] = ("a", "spread"),
                                 level: float = LEVEL) -> list[Path]:
    """Per-class test accuracy against a_k of the training features (Fig. 1b) and against its spread
    ‖ŝ_k‖² alone: per dataset a row per feature, a panel per method, each on its own x axis (the
    methods' features differ in scale), classes named without overlap (up to ``ANNOTATE_MAX``);
    each title gives the mean of the per-seed Spearman ρ with its t-interval over seeds
    (``seed_rho``), as the report's text does. ``features`` may hold ``a_p3`` etc."""
    features = [f for f in features if f in per_class]
    selected = _select(per_class, methods, [variant])
    data = class_means(selected, ["accuracy", *features])
    if data.empty or not features:
        return placeholder(stem, f"no runs of {', '.join(methods)}")
    data = data.merge(class_names(per_class), on=["dataset", "class"], how="left")
    data["accuracy"] *= 100
    datasets, labels = list(data["dataset"].unique()), _labels_in_order(data)
    rhos = {f: seed_rho(selected, f, level) for f in features}
    fig, axes = _panels(len(labels), nrows=len(datasets) * len(features), sharey="row")
    for r, (dataset, feature) in enumerate((d, f) for d in datasets for f in features):
        for ax, label in zip(axes[r], labels):
            part = data[(data["dataset"] == dataset) & (data["label"] == label)]
            if part.empty:
                _empty_panel(ax, f"{dataset}: no runs of {label}")
                continue
            method, var = part.iloc[0]["method"], part.iloc[0]["variant"]
            ax.scatter(part[feature], part["accuracy"], s=18, alpha=0.8, color=method_colour(method, var))
            name_points(ax, part[feature], part["accuracy"], list(part["class_name"]))
            rho = rhos[feature]
            row = rho[(rho["dataset"] == dataset) & (rho["method"] == method) & (rho["variant"] == var)]
            stat = format_seed_rho(row.iloc[0], level)  # seed_rho has a row for every run selected
            ax.set_title(f"{dataset}: {display_name(method, var)}\n{stat}", fontsize=8)
            ax.set(xlabel=f"{symbol(feature)} of {display_name(method, var)}'s training features",
                   ylabel="test accuracy (%)")
    return save_figure(fig, stem)


def plot_group_accuracy(per_class: pd.DataFrame, groups: pd.DataFrame, stem: str | Path,
                        methods: Sequence[str] | None = None, variants: Sequence[str] | None = (DEFAULT_VARIANT,),
                        errorbar: Any = "sd") -> list[Path]:
    """All/easy/medium/hard accuracy per method as points (the y axis does not start at 0, so no bars):
    the point is the mean over seeds, the error bar the sample sd over seeds (``errorbar="sd"``; None
    for none); methods side by side in their colours and display names. No error bar with one seed."""
    selected = _select(per_class, methods, variants)
    if selected.empty:
        return placeholder(stem, "no runs to draw")
    per_run = run_group_accuracy(selected, groups)
    long = per_run.melt(id_vars=RUN_KEYS, value_vars=[g for g in GROUP_ORDER if g in per_run],
                        var_name="group", value_name="accuracy")
    long["accuracy"] *= 100
    pairs = list(dict.fromkeys(zip(selected["method"], selected["variant"])))
    datasets = list(long["dataset"].unique())
    fig, axes = _panels(len(datasets))
    fig.set_figwidth(fig.get_figwidth() * max(1.0, len(pairs) / 5))  # room for many methods
    step = 0.8 / len(pairs)  # the runs share 0.8 of each group's unit
    for ax, dataset in zip(axes.flat, datasets):
        part = long[long["dataset"] == dataset]
        order = [g for g in GROUP_ORDER if g in set(part["group"])]
        stats_ = part.groupby(["method", "variant", "group"])["accuracy"].agg(["mean", "std"])
        for i, (method, variant) in enumerate(pairs):
            if (method, variant) not in stats_.index.droplevel("group"):
                continue
            rows = stats_.loc[(method, variant)].reindex(order)
            x = np.arange(len(order)) + step * (i - (len(pairs) - 1) / 2)
            yerr = rows["std"].fillna(0.0).to_numpy() if errorbar == "sd" else None
            ax.errorbar(x, rows["mean"], yerr=yerr, fmt="o", markersize=5, capsize=2, elinewidth=1,
                        color=method_colour(method, variant), label=display_name(method, variant))
        for b in range(1, len(order)):
            ax.axvline(b - 0.5, color="0.85", linewidth=0.6)
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order)
        ax.set(title=dataset, xlabel="classes (groups from the reference method)", ylabel="test accuracy (%)")
        ax.legend()
    _one_legend(axes.flat, "method")
    return save_figure(fig, stem)


def class_changes(per_class: pd.DataFrame, reference: str = "erm", methods: Sequence[str] | None = None,
                  variants: Sequence[str] | None = (DEFAULT_VARIANT,), level: float = LEVEL) -> pd.DataFrame:
    """A row per dataset, method, variant and class: the paired change over the reference in points,
    d̄ = mean_s (acc_s − ref_s) over the seeds s both ran, with its t-interval
    d̄ ± t_{(1+level)/2, n−1}·sd(d)/√n (``paired_difference``: diff, diff_lo, diff_hi, n_paired), the
    reference's accuracy (ref_accuracy, %, mean over its seeds), class_name and label. ``methods``
    defaults to every method except the reference, in the tables' order."""
    if methods is None:
        methods = [m for m in dict.fromkeys(per_class["method"]) if m != reference]
    is_ref = (per_class["method"] == reference) & (per_class["variant"] == DEFAULT_VARIANT)
    ref = per_class.loc[is_ref, ["dataset", "seed", "class", "accuracy"]].rename(columns={"accuracy": "ref"})
    data = _select(per_class, methods, variants).merge(ref, on=["dataset", "seed", "class"])
    rows = [{**dict(zip(["dataset", "method", "variant", "class"], key)),
             **paired_difference(100 * g["accuracy"].to_numpy(), 100 * g["ref"].to_numpy(), level)}
            for key, g in data.groupby(["dataset", "method", "variant", "class"], sort=False)]
    columns = ["dataset", "method", "variant", "class", "diff", "diff_lo", "diff_hi", "n_paired"]
    out = pd.DataFrame(rows, columns=columns)
    ref_mean = (100 * ref.groupby(["dataset", "class"])["ref"].mean()).rename("ref_accuracy").reset_index()
    out = out.merge(ref_mean, on=["dataset", "class"]).merge(class_names(per_class), on=["dataset", "class"])
    out["label"] = [run_label(m, v) for m, v in zip(out["method"], out["variant"])]
    return out


def changed_classes(part: pd.DataFrame, level: float = LEVEL) -> tuple[list, list, str | None]:
    """For one dataset and method of ``class_changes``: the names of the classes whose interval lies
    above 0 and below 0 (``verdict``), and the ``one_of_many`` warning when so few of the K classes
    differ that chance alone explains them (None otherwise)."""
    v = [verdict(d, lo, hi) for d, lo, hi in zip(part["diff"], part["diff_lo"], part["diff_hi"])]
    up = [n for n, x in zip(part["class_name"], v) if x == "higher"]
    down = [n for n, x in zip(part["class_name"], v) if x == "lower"]
    return up, down, one_of_many(len(up) + len(down), len(part), level)


def plot_change_vs_reference(per_class: pd.DataFrame, stem: str | Path, reference: str = "erm",
                             methods: Sequence[str] | None = None,
                             variants: Sequence[str] | None = (DEFAULT_VARIANT,), groups: pd.DataFrame | None = None,
                             level: float = LEVEL) -> list[Path]:
    """Per-class change of each method over the reference (``class_changes``: mean paired difference
    over seeds, error bar its t-interval): a panel per dataset and method, the classes named along x
    and ordered by the reference's accuracy (hardest left; ``groups`` shades easy/medium/hard), the
    same y axis everywhere, the method's colour, a zero line. ``methods`` defaults to every method
    run except the reference (MR² variants and baselines), in the config's order."""
    data = class_changes(per_class, reference, methods, variants, level)
    if data.empty:
        wanted = ", ".join(methods) if methods else "another method"
        return placeholder(stem, f"needs runs of {reference} and of {wanted} on the same dataset and seeds")
    if groups is not None:
        data = data.merge(groups[["dataset", "class", "group"]], on=["dataset", "class"], how="left")
    datasets, labels = list(data["dataset"].unique()), list(dict.fromkeys(data["label"]))
    data = data.sort_values(["ref_accuracy", "class"])  # unique within a panel: any sort gives its order
    k = int(data.groupby("dataset")["class"].nunique().max())
    ncols = min(PANELS_PER_ROW, len(labels), max(1, CLASSES_PER_ROW // k))
    rows_per_dataset = -(-len(labels) // ncols)
    fig, axes = _panels(ncols, nrows=len(datasets) * rows_per_dataset, width=class_axis_width(k))
    ends = pd.concat([data["diff"], data["diff_lo"], data["diff_hi"]]).dropna().clip(-100, 100)  # |change| ≤ 100
    pad = 0.05 * max(ends.max() - ends.min(), 1.0)
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
            pos = np.arange(len(part))
            yerr = np.nan_to_num(np.vstack([part["diff"] - part["diff_lo"], part["diff_hi"] - part["diff"]]))
            colour = method_colour(*part.iloc[0][["method", "variant"]])
            ax.errorbar(pos, part["diff"], yerr=yerr, fmt="o", markersize=4, color=colour, elinewidth=1, capsize=2)
            ax.axhline(0.0, color="black", linewidth=0.8)
            class_axis(ax, list(part["class_name"]), list(part["group"].fillna("?")) if "group" in part else None)
            seeds = int(part["n_paired"].max())
            note = f"{level:.0%} t-interval over {seeds} seeds" if seeds > 1 else "1 seed: no interval"
            up, down, warning = changed_classes(part, level)
            found = (f"{len(up) + len(down)} of {len(part)} intervals exclude 0"
                     + (": one of many comparisons, not a finding" if warning else "")) if seeds > 1 else ""
            name, ref_name = display_name(*part.iloc[0][["method", "variant"]]), display_name(reference)
            ax.set_title(f"{dataset}: {name} − {ref_name} ({note})" + (f"\n{found}" if found else ""),
                         pad=14, fontsize=9)
            ax.set(xlabel=f"class (ascending {ref_name} accuracy)", ylabel=f"change over {ref_name} (points)",
                   ylim=(ends.min() - pad, ends.max() + pad))
    return save_figure(fig, stem)


def plot_margins_over_training(epochs: pd.DataFrame, groups: pd.DataFrame, stem: str | Path, method: str = "mr2",
                               variant: str = DEFAULT_VARIANT, show: Sequence[str] = ("easy", "medium", "hard"),
                               name: str = "gamma", beside: Sequence[str] = ("mr2_no_rep",),
                               names: pd.DataFrame | None = None) -> list[Path]:
    """γ_k per epoch (mean over seeds) of the ``show`` groups' classes for ``method`` and, in panels
    beside it, for the methods of ``beside`` that the run holds (``mr2_no_rep``: without the
    representation term): a thin line per class named at its end (``names``:
    ``mr2.results.groups.class_names``, a class they lack by its number; names spaced so none
    overlaps), a thick line per group mean, coloured by group; for γ_k a dotted line at c̄ (the
    mean margin, which Corollary 1 holds fixed); a group left out of ``show`` is named in the
    title. The log's classes may be floats (an epochs.csv read with ``pd.read_csv``)."""
    methods = [method] + [m for m in beside if m != method]
    rows = epochs[epochs["method"].isin(methods) & (epochs["variant"] == variant) & (epochs["name"] == name)
                  & epochs["class"].notna()]
    if rows[rows["method"] == method].empty:
        return placeholder(stem, f"no per-class {name} logged for {run_label(method, variant)}")
    methods = [m for m in methods if m in set(rows["method"])]
    rows = rows.assign(**{"class": rows["class"].astype("int64")})
    data = rows.groupby(["dataset", "method", "epoch", "class"])["value"].mean().reset_index()
    data = data.merge(groups, on=["dataset", "class"])
    named = (data.merge(names, on=["dataset", "class"], how="left") if names is not None
             else data.assign(class_name=None))
    data = named.assign(class_name=named["class_name"].fillna(named["class"].astype(str)))
    data = data[data["group"].isin(list(show))]
    if data.empty:
        return placeholder(stem, f"no {', '.join(show)} classes with {name} logged")
    palette = {g: GROUP_COLOURS.get(g, "tab:blue") for g in show}
    datasets = list(data["dataset"].unique())
    fig, axes = _panels(len(methods), nrows=len(datasets), width=PANEL_SIZE[0] * 1.25, sharey="row")
    hidden = [g for g in GROUP_ORDER[1:] if g not in show]
    ends = []
    for row, dataset in zip(axes, datasets):
        for ax, m in zip(row, methods):
            part = data[(data["dataset"] == dataset) & (data["method"] == m)]
            if part.empty:
                _empty_panel(ax, f"{dataset}: no {name} logged for {display_name(m)}")
                continue
            sns.lineplot(data=part, x="epoch", y="value", hue="group", units="class", estimator=None,
                         palette=palette, hue_order=list(show), linewidth=0.6, alpha=0.35, ax=ax, legend=False)
            sns.lineplot(data=part, x="epoch", y="value", hue="group", palette=palette, hue_order=list(show),
                         errorbar=None, linewidth=2.5, ax=ax)
            last = part[part["epoch"] == part["epoch"].max()]
            if name == "gamma":  # Corollary 1 keeps the mean margin at c̄
                c_bar = float(last["value"].mean())
                ax.axhline(c_bar, color="0.4", linestyle=":", linewidth=1)
                ax.annotate(f"c̄ = {c_bar:.3g}", (0.0, c_bar), xycoords=("axes fraction", "data"), xytext=(2, 2),
                            textcoords="offset points", fontsize=7, color="0.3")
            ends.append((ax, float(last["epoch"].iloc[0]), last["value"].to_numpy(), list(last["class_name"]),
                         [palette[g] for g in last["group"]]))
            ax.set(title=f"{dataset}: {display_name(m, variant)}" + (f" ({', '.join(hidden)} classes not shown)"
                                                                   if hidden else ""),
                   xlabel="epoch", ylabel=symbol(name))
            epochs_run = sorted(part["epoch"].unique())
            if len(epochs_run) <= 12:
                ax.set_xticks(epochs_run)
            else:
                ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    for end in ends:  # once every panel of a shared y axis is drawn: the names' spacing is final
        end_labels(*end)
    _one_legend(axes.flat, "classes")
    return save_figure(fig, stem)


#: the runs-table columns of a run's resolved config that say which option a sweep variant changes
SWEEP_TAG = "config.tags.sweep"


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


def sweep_table(per_class: pd.DataFrame, runs: pd.DataFrame, groups: pd.DataFrame, method: str = "mr2",
                options: Sequence[str] = ("c_bar", "lam")) -> pd.DataFrame:
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


def _value_axis(ax: plt.Axes, option: str, values: Sequence[float]) -> None:
    """Swept values as the ticks; a log axis for the options of ``LOG_OPTIONS`` (symmetric-log when
    a value is 0 or below, linear within the smallest positive value)."""
    if option in LOG_OPTIONS:
        positive = [v for v in values if v > 0]
        if len(positive) == len(values):
            ax.set_xscale("log")
        elif positive:
            ax.set_xscale("symlog", linthresh=min(positive))
    value_ticks(ax.xaxis, values)


def plot_sweeps(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame, stem: str | Path,
                method: str = "mr2", options: Sequence[str] = ("c_bar", "lam"), reference: str = "erm",
                level: float = LEVEL) -> list[Path]:
    """Accuracy of all and of hard classes against each swept value (Fig. 5): a row of panels per
    dataset, a panel per option; the point is the mean over seeds, its error bar the t-interval of the
    difference to the reference paired by seed (``paired_difference``), drawn around the mean, so a bar
    that clears the reference's level (dashed, its mean over seeds) is a difference the seeds support.
    An option no dataset sweeps gets no panel; a dataset that does not sweep an option another one
    does says "no sweep in this config" in its panel; a config with no sweep at all
    gets a placeholder (``make_figures`` then draws no sweeps figure)."""
    data = sweep_table(per_class, runs, groups, method, options)
    if data.empty:
        return placeholder(stem, NO_SWEEP)
    is_ref = (per_class["method"] == reference) & (per_class["variant"] == DEFAULT_VARIANT)
    ref = run_group_accuracy(per_class[is_ref], groups)[["dataset", "seed", "all", "hard"]] if is_ref.any() else None
    colours = {"all": "black", "hard": GROUP_COLOURS["hard"]}
    options = [o for o in options if o in set(data["option"])]  # an option no dataset sweeps gets no panel
    datasets = list(data["dataset"].unique())
    fig, axes = _panels(len(options), nrows=len(datasets))
    for row, dataset in zip(axes, datasets):
        for ax, option in zip(row, options):
            part = data[(data["dataset"] == dataset) & (data["option"] == option)]
            if part.empty:
                _empty_panel(ax, f"{dataset}, {option}: {NO_SWEEP}")
                continue
            values = sorted(part["value"].unique())
            own_ref = None if ref is None else ref[ref["dataset"] == dataset].set_index("seed")
            for classes in ("all", "hard"):
                means, lo, hi = [], [], []
                for value in values:
                    runs_at = part[part["value"] == value].set_index("seed")[classes]
                    means.append(100 * runs_at.mean())
                    seeds = [] if own_ref is None else runs_at.index.intersection(own_ref.index)
                    if len(seeds) >= 2:
                        d = paired_difference(100 * runs_at.loc[seeds].to_numpy(), 100 * own_ref.loc[seeds, classes].to_numpy(),
                                              level)
                        lo.append(means[-1] - (d["diff"] - d["diff_lo"]))
                        hi.append(means[-1] + (d["diff_hi"] - d["diff"]))
                    else:
                        lo.append(means[-1])
                        hi.append(means[-1])
                means = np.asarray(means)
                ax.errorbar(values, means, yerr=[means - np.asarray(lo), np.asarray(hi) - means], fmt="o-",
                            color=colours[classes], capsize=2, elinewidth=1, markersize=4, label=f"{classes} classes")
                if own_ref is not None and len(own_ref):
                    ax.axhline(100 * own_ref[classes].mean(), color=colours[classes], linestyle="--", linewidth=0.9,
                               label=f"{display_name(reference)}, {classes} classes")
            default = data.loc[(data["dataset"] == dataset) & (data["option"] == option)
                               & (data["variant"] == DEFAULT_VARIANT), "value"]
            if len(default):
                ax.axvline(default.iloc[0], color="grey", linestyle=":", linewidth=1, label="default")
            _value_axis(ax, option, values)
            ax.set(title=f"{dataset}: {display_name(method)}, sweep of {symbol(option)}", xlabel=symbol(option),
                   ylabel="test accuracy (%)")
            ax.title.set_fontsize(9)
            ax.legend()
    _one_legend(axes.flat, "classes")
    return save_figure(fig, stem)


#: the line the report prints, instead of a figure, for a comparison the run does not hold: the config
#: that runs it ({reference} and {method} are filled in)
MISSING = {
    "claim_forest": "No method ran beside {reference} on the same seeds: `config/config.yaml` runs ERM, MR² and "
                    "its ablations.",
    "change_vs_erm": None,  # the same runs as claim_forest: one line for both
    "margins_over_training": "No run of {method} logged its margins: `config/config.yaml` runs MR².",
    "sweeps": "No c̄ or λ sweep in this run: `config/sweeps.yaml` runs one (the paper's Fig. 5).",
    "regimes": "No data trained in several regimes (training-set size × epochs): `config/regimes.yaml` runs that.",
}


def available_figures(tables: dict[str, pd.DataFrame], groups: pd.DataFrame, reference: str = "erm",
                      sweep_method: str = "mr2", method: str = "mr2") -> dict[str, bool]:
    """Figure name -> whether the tables hold what it shows (a figure of ``MISSING`` needs its
    comparison in the run; the others need any run). A figure whose table is absent from
    ``tables`` (``epochs``) counts as available."""
    pc, runs = tables["per_class"], tables.get("runs")
    epochs = tables.get("epochs")
    has_pairs = not claim_table(pc, runs, groups, reference).empty
    return {
        "claim_forest": has_pairs,
        "per_class_sorted": not pc.empty,
        "accuracy_vs_variability": not pc.empty,
        "group_accuracy": not pc.empty,
        "change_vs_erm": has_pairs,
        "margins_over_training": epochs is None or bool(
            ((epochs["method"] == method) & (epochs["name"] == "gamma") & epochs["class"].notna()).any()),
        "sweeps": not sweep_table(pc, runs, groups, sweep_method).empty,
        "regimes": not regime_table(pc, runs, groups, reference).empty,
        "tradeoff": not tradeoff_points(pc, runs, groups, reference).empty,
    }


def missing_lines(available: dict[str, bool], reference: str = "erm", method: str = "mr2") -> list[str]:
    """One line per comparison the run does not hold, naming the config that runs it (``MISSING``)."""
    lines = [MISSING[n] for n, ok in available.items() if not ok and MISSING.get(n)]
    return [line.format(reference=reference.upper(), method=method) for line in dict.fromkeys(lines)]


def make_figures(tables: dict[str, pd.DataFrame], groups: pd.DataFrame, out_dir: str | Path,
                 reference: str = "erm", sweep_method: str = "mr2", method: str = "mr2",
                 names: Sequence[str] | None = None) -> dict[str, list[Path]]:
    """The report's figures into ``out_dir`` as ``<name>.png`` and ``<name>.pdf``: those whose
    comparison the run holds (``available_figures``), or exactly ``names`` when given (the
    workflow's outputs; one without data then says so in a placeholder).

    ``tables`` holds ``per_class``, ``runs`` and ``epochs`` (``mr2.results.aggregate``); ``method``
    is the MR² method whose margins are drawn (against ``reference``), ``sweep_method`` the method
    whose swept variants are.
    """
    out = Path(out_dir)
    pc, runs, epochs = tables["per_class"], tables.get("runs"), tables["epochs"]
    draw = {
        "claim_forest": lambda: plot_claim(pc, runs, groups, out / "claim_forest", reference=reference),
        "accuracy_vs_variability": lambda: plot_accuracy_vs_variability(pc, out / "accuracy_vs_variability",
                                                                        methods=(reference, method)),
        "per_class_sorted": lambda: plot_per_class_sorted(pc, out / "per_class_sorted"),
        "group_accuracy": lambda: plot_group_accuracy(pc, groups, out / "group_accuracy"),
        "change_vs_erm": lambda: plot_change_vs_reference(pc, out / "change_vs_erm", reference=reference,
                                                          groups=groups),
        "margins_over_training": lambda: plot_margins_over_training(epochs, groups, out / "margins_over_training",
                                                                    method=method, names=class_names(pc)),
        "sweeps": lambda: plot_sweeps(pc, runs, groups, out / "sweeps", method=sweep_method, reference=reference),
        "regimes": lambda: plot_regimes(pc, runs, groups, out / "regimes", reference=reference),
        "tradeoff": lambda: plot_tradeoff(pc, runs, groups, out / "tradeoff", reference=reference),
    }
    if names is None:
        available = available_figures(tables, groups, reference, sweep_method, method)
        names = [n for n in draw if available[n]]
    unknown = [n for n in names if n not in draw]
    if unknown:
        raise ValueError(f"unknown figure {unknown[0]!r}; the figures are {', '.join(draw)}")
    return {name: draw[name]() for name in names}
