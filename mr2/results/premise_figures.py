"""The premise analysis's two figures, and the analysis step's outputs (its tables and figures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..common.io import save_csv
from ..common.runs import DEFAULT_VARIANT
from .plotting import class_axis, class_axis_width, display_name, name_points, placeholder, plt, save_figure, symbol
from .premise_tables import TABLE_NAMES, analyse
from .premise_text import format_rho, is_exploratory, label, lookup
from .statistics import LEVEL
from .style import GROUP_COLOURS, PANEL_SIZE


#: the two parts of a_k: neutral greys (no method's or group's colour)
PART_COLOURS = {"mean_sq_norm": "0.45", "spread": "0.78"}


def plot_decomposition(summary: pd.DataFrame, stem: str | Path, reference: str = "erm",
                       methods: Sequence[str] = ("erm", "mr2"), p: int = 2) -> list[Path]:
    """‖μ̂_k‖² and ‖ŝ_k‖² (stacked; their sum is a_k, error bar = sd of a_k over seeds) of the
    training features per class, classes named and ordered by ERM's accuracy (hardest left), the
    hard/medium/easy groups shaded; a column per dataset, a row per method's own features."""
    data = summary[(summary["p"] == p) & (summary["variant"] == DEFAULT_VARIANT)
                   & summary["method"].isin([reference, *methods])]
    rows = [m for m in dict.fromkeys([reference, *methods]) if m in set(data["method"])]
    if data.empty:
        return placeholder(stem, "no per-class statistics to draw")
    datasets = list(data["dataset"].unique())
    fig, axes = plt.subplots(len(rows), len(datasets), squeeze=False,
                             figsize=(class_axis_width(data["class"].nunique()) * len(datasets),
                                      PANEL_SIZE[1] * 1.15 * len(rows)))
    for r, method in enumerate(rows):
        for c, dataset in enumerate(datasets):
            ax = axes[r, c]
            part = data[(data["dataset"] == dataset) & (data["method"] == method)]
            part = part.sort_values(["erm_accuracy", "class"], kind="stable")
            pos = np.arange(len(part))
            # the parts of a_k in neutral colours that mean no method and no group
            ax.bar(pos, part["mean_sq_norm"], color=PART_COLOURS["mean_sq_norm"],
                   label=f"{symbol('mean_sq_norm')} (mean's norm)")
            ax.bar(pos, part["spread"], bottom=part["mean_sq_norm"], color=PART_COLOURS["spread"], hatch="///",
                   edgecolor="white", linewidth=0, label=f"{symbol('spread')} (spread)")
            if part["a_sd"].notna().any():
                ax.errorbar(pos, part["a"], yerr=part["a_sd"], fmt="none", ecolor="black", elinewidth=0.6, capsize=1.5)
            class_axis(ax, list(part["class_name"]), list(part["group"].fillna("?")))
            norm = "" if p == 2 else f" ($L_{p}$)"
            ax.set(xlabel=f"class (ascending {display_name(reference)} accuracy)",
                   ylabel=f"{symbol('a')} = {symbol('mean_sq_norm')} + {symbol('spread')}{norm}")
            ax.set_title(f"{dataset}: training features of {display_name(method)}", pad=14)
    axes[0, -1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return save_figure(fig, stem)


def margin_labels(margins: pd.DataFrame, method: str = "mr2") -> list[tuple[str, str]]:
    """(method, variant) pairs drawn in the margin figure: the default and our exploratory variants."""
    pairs = margins.loc[margins["method"] == method, "variant"].unique()
    return [(method, v) for v in pairs if v == DEFAULT_VARIANT or is_exploratory(v)]


def plot_margins_vs_error(margins: pd.DataFrame, summary: pd.DataFrame, stem: str | Path,
                          method: str = "mr2", level: float = LEVEL) -> list[Path]:
    """Final γ_k (mean over seeds) against ERM's per-class error, a panel per dataset, the
    default MR² and our exploratory variants; the title gives ρ(ERM error, γ_k) with its seed
    interval for each."""
    pairs = margin_labels(margins, method)
    if not pairs:
        return placeholder(stem, f"no runs of {method}")
    sel = margins[margins["method"].eq(method) & margins["variant"].isin([v for _, v in pairs])]
    data = sel.groupby(["dataset", "variant", "class"], sort=False).agg(
        gamma=("gamma", "mean"), erm_error=("erm_error", "first"), group=("group", "first"),
        class_name=("class_name", "first")).reset_index()
    datasets = list(data["dataset"].unique())
    fig, axes = plt.subplots(1, len(datasets), squeeze=False,  # wide: the title holds a line per variant
                             figsize=(PANEL_SIZE[0] * 1.7 * len(datasets), PANEL_SIZE[1] * 1.4))
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    for ax, dataset in zip(axes.flat, datasets):
        title = [dataset]
        for i, (_, variant) in enumerate(pairs):
            part = data[(data["dataset"] == dataset) & (data["variant"] == variant)]
            if part.empty:
                continue
            ax.scatter(100 * part["erm_error"], part["gamma"], s=22, marker=markers[i % len(markers)],
                       c=[GROUP_COLOURS.get(g, "grey") for g in part["group"]], edgecolors="black", linewidths=0.3,
                       label=label(method, variant))
            if variant == DEFAULT_VARIANT:
                name_points(ax, 100 * part["erm_error"], part["gamma"], list(part["class_name"]))
            row = lookup(summary, dataset, method, variant, "erm_error", "gamma")
            title.append(f"{label(method, variant)}: ρ = {format_rho(row, level)}")
        c_bar = data.loc[data["dataset"] == dataset, "gamma"].mean()  # Corollary 1 keeps the mean at c̄
        ax.axhline(c_bar, color="grey", linewidth=0.6, linestyle=":")
        ax.set(xlabel="ERM per-class test error (%)", ylabel=f"final {symbol('gamma')}")
        ax.set_title("\n".join(title), fontsize=8)
    handles = [plt.Line2D([], [], marker=markers[i % len(markers)], linestyle="", color="grey", label=label(method, v))
               for i, (_, v) in enumerate(pairs)]
    handles += [plt.Line2D([], [], marker="o", linestyle="", color=c, label=g) for g, c in GROUP_COLOURS.items()]
    axes[0, -1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=8)
    return save_figure(fig, stem)


def write_analysis(tables: dict[str, pd.DataFrame], out_dir: str | Path, reference: str = "erm",
                   method: str = "mr2", level: float = LEVEL) -> dict[str, Any]:
    """``analyse`` and write its tables (``<name>.csv``) and the two figures (PNG and PDF)."""
    out = Path(out_dir)
    result = analyse(tables, reference, level)
    for name in TABLE_NAMES:
        save_csv(result[name], out / f"{name}.csv")
    plot_decomposition(result["decomposition_summary"], out / "premise_decomposition", reference,
                       methods=(reference, method))
    plot_margins_vs_error(result["margins"], result["correlation_summary"], out / "premise_margins", method, level)
    return result
