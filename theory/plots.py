"""Figures of Proposition 1 and Corollary 1 on trained models, from ``theory.pipeline``'s tables
and ``theory.trained``'s margins: the bound's terms against the test error (``plot_bound_terms``),
against c̄ (``plot_terms_vs_c_bar``), the complexity term's curve in c̄ (``plot_complexity_curve``),
each class's share of Σ_k a_k/γ_k² (``plot_margin_sum_shares``) and the trained margins against
Corollary 1's (``plot_margin_fit``). Each returns its matplotlib figure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mr2.common.runs import DEFAULT_VARIANT
from mr2.results.plotting import class_axis, class_axis_width, display_name, method_colour, symbol, value_ticks

from .pipeline import TERM_TITLES, terms_by_c_bar


def plot_margin_fit(normalised: pd.DataFrame, variant: str = DEFAULT_VARIANT):
    """Every run's γ_k/c̄ against a_k^{1/3}/mean_j a_j^{1/3} (``theory.trained.normalised_margins``), a
    panel per dataset, a colour per method (``variant`` only): Corollary 1's γ lie on the diagonal,
    equal margins on the line y = 1. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    data = normalised[normalised["variant"] == variant]
    datasets = list(data["dataset"].unique()) or ["(no runs)"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.6 * len(datasets) + 1.6, 3.8), squeeze=False)
    for ax, dataset in zip(axes.flat, datasets):
        part = data[data["dataset"] == dataset]
        for name, runs in part.groupby("method", sort=False):
            ax.scatter(runs["x"], runs["y"], s=12, alpha=0.6, color=method_colour(name), label=display_name(name))
        ends = [min(part["x"].min(), part["y"].min()), max(part["x"].max(), part["y"].max())] if len(part) else [0.9, 1.1]
        ax.plot(ends, ends, color="black", linestyle="--", linewidth=0.8, label=r"Corollary 1: $\gamma_k \propto a_k^{1/3}$")
        ax.axhline(1.0, color="0.5", linestyle=":", linewidth=0.8, label="equal margins")
        ax.set(title=dataset, xlabel=r"$a_k^{1/3}$ / mean$_j\, a_j^{1/3}$", ylabel=r"$\gamma_k$ / mean$_j\, \gamma_j$")
    axes.flat[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- figures
#: neutral colours and markers of the bound's terms (no method's or group's colour), the test error in black
TERM_STYLES = {"empirical_term": ("0.55", "v"), "complexity_term": ("0.35", "s"), "confidence_term": ("0.7", "^"),
               "bound": ("0.15", "D"), "test_error": ("black", "*")}


def plot_bound_terms(table: pd.DataFrame):
    """Points per method (mean over seeds, error bar the sd) of each term, the bound and the test
    error (a black star) on a log axis, a panel per dataset; a dashed line at 1, above which a bound
    on an error rate is vacuous. Terms in neutral greys with their own markers. Returns the figure."""
    import matplotlib.pyplot as plt

    data = table.assign(label=[display_name(m, v) for m, v in zip(table["method"], table["variant"])])
    datasets = list(data["dataset"].unique())
    labels = list(dict.fromkeys(data["label"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(1.1 * len(labels) + 3.5, 3.8), squeeze=False)
    width = 0.7 / len(TERM_STYLES)
    for ax, dataset in zip(axes.flat, datasets):
        part = data[data["dataset"] == dataset]
        stats_ = part.groupby("label", sort=False)[list(TERM_STYLES)].agg(["mean", "std"])
        for i, (term, (colour, marker)) in enumerate(TERM_STYLES.items()):
            x = np.array([labels.index(lab) for lab in stats_.index]) + width * (i - (len(TERM_STYLES) - 1) / 2)
            mean, sd = stats_[(term, "mean")], stats_[(term, "std")].fillna(0.0)
            keep = (mean > 0).to_numpy()
            ax.errorbar(x[keep], mean[keep], yerr=np.minimum(sd[keep], 0.99 * mean[keep]), fmt=marker, color=colour,
                        markersize=9 if term == "test_error" else 5, capsize=2, elinewidth=0.8,
                        label=TERM_TITLES[term])
        ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, label="1: above it a bound on an error is vacuous")
        ax.set_yscale("log")
        ax.set(title=dataset, xlabel="method", ylabel="value (log scale)")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=30, ha="right")
    axes.flat[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def plot_terms_vs_c_bar(table: pd.DataFrame, method: str = "mr2", runs: pd.DataFrame | None = None):
    """Each term, the bound and the test error of ``method``'s runs against their configured c̄ (log
    scale, the c̄ values as ticks), a panel per dataset (lines through the means over seeds; with
    ``runs``, the c̄ sweep's members only: ``terms_by_c_bar``). Returns the matplotlib figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = terms_by_c_bar(table, method, runs)
    long = long[long["value"] > 0].assign(term=lambda f: f["term"].map(TERM_TITLES))
    datasets = list(long["dataset"].unique()) or ["(no runs)"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes.flat, datasets):
        part = long[long["dataset"] == dataset]
        if part.empty:
            ax.text(0.5, 0.5, f"no runs of {method}", ha="center", va="center", transform=ax.transAxes)
            continue
        order = list(TERM_TITLES.values())  # distinct markers and dashes: a term on top of another stays visible
        sns.lineplot(data=part, x="c_bar", y="value", hue="term", hue_order=order, style="term", style_order=order,
                     markers=True, dashes=True, palette={TERM_TITLES[t]: c for t, (c, _) in TERM_STYLES.items()},
                     markersize=7, errorbar=None, ax=ax)
        ax.set(xscale="log", yscale="log", title=f"{dataset}: {method}", xlabel=f"mean margin {symbol('c_bar')}",
               ylabel="value (log scale)")
        value_ticks(ax.xaxis, sorted(part["c_bar"].unique()))
    legends = [ax for ax in axes.flat if ax.get_legend() is not None]
    for ax in legends[:-1]:
        ax.get_legend().remove()
    if legends:
        sns.move_legend(legends[-1], "upper left", bbox_to_anchor=(1.02, 1.0), title="", frameon=False)
    fig.tight_layout()
    return fig


def plot_complexity_curve(curve: pd.DataFrame):
    """The complexity term against c̄ with MR²'s and with uniform γ (``complexity_curve``), log-log."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    ax.plot(curve["c_bar"], curve["complexity_uniform"], marker="o", color=method_colour("mr2_uniform"),
            label=r"uniform $\gamma_k = \bar{c}$")
    ax.plot(curve["c_bar"], curve["complexity_mr2"], marker="s", linestyle="--", color=method_colour("mr2"),
            label=f"MR² {symbol('gamma')} (Corollary 1)")
    ax.set(xscale="log", yscale="log", xlabel=f"mean margin {symbol('c_bar')}", ylabel="complexity term")
    value_ticks(ax.xaxis, curve["c_bar"])
    value_ticks(ax.yaxis)
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def plot_margin_sum_shares(shares: pd.DataFrame, variant: str = DEFAULT_VARIANT):
    """Each class's share of Σ_k a_k/γ_k² (``margin_sum_shares``), largest first, classes named along
    x in one order in every panel (the first method's, largest share first): a panel per dataset and
    method (``variant`` only), bars in the method's colour, the dashed line the share 1/K of equal
    classes. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    data = shares[shares["variant"] == variant]
    panels = list(data[["dataset", "method"]].drop_duplicates().itertuples(index=False)) or [("(no runs)", "")]
    k = max(int(data.groupby(["dataset", "method"]).size().max()) if len(data) else 1, 1)
    ncols = min(len(panels), 2 if k <= 20 else 1)
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(class_axis_width(k) * ncols, 3.6 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    for ax, (dataset, method) in zip(axes.flat, panels):
        part = data[(data["dataset"] == dataset) & (data["method"] == method)]
        if part.empty:
            ax.text(0.5, 0.5, "no runs", ha="center", va="center", transform=ax.transAxes)
            continue
        first = data[data["dataset"] == dataset]  # one class order in every panel: the first method's
        order = list(first[first["method"] == first["method"].iloc[0]]["class"])
        part = part.set_index("class").reindex([c for c in order if c in set(part["class"])]).reset_index()
        ax.bar(range(len(part)), 100 * part["share"], color=method_colour(method))
        ax.axhline(100 / len(part), color="black", linestyle="--", linewidth=0.8, label="equal share 1/K")
        class_axis(ax, list(part["class_name"]))
        ax.set(title=f"{dataset}: {method}", xlabel=f"class (largest share of {data['method'].iloc[0]} first)",
               ylabel=r"share of $\Sigma_k\,a_k/\gamma_k^2$ (%)")
        ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
