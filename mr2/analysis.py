"""Does the paper's premise hold? Each link of MR²'s chain, measured on every dataset and run.

MR²'s reasoning (PAPER.md) is a chain:
  1. hard classes have larger variability a_k = ‖μ̂_k‖² + ‖ŝ_k‖²;
  2. Corollary 1 then gives them larger margins γ_k;
  3. larger margins improve those classes.
This module measures each link from the tidy tables of ``mr2.results`` (nothing else), writes
tidy tables and two figures, and renders the report's "Does the premise hold?" section from them.

Difficulty (documented choice). A class's difficulty is the reference method's (ERM's) test
error 1 − accuracy, averaged over seeds: the same ranking that defines easy/medium/hard. Every
statistic is taken per run (one model, one seed), so a correlation is computed per run and the
seed variation is that of the statistic (and, for link 3, of the accuracy change).

Correlations. Spearman's ρ across the classes of one run (``spearman``, ``grouped_spearman``):
the Pearson correlation of the average ranks. It is undefined (NaN) when either side is
constant (ERM's γ_k ≡ 1, uniform margins) or fewer than 3 classes have finite values.

Seed interval (documented choice). Over the n runs (seeds) of a dataset × method × variant the
summary is the mean of the per-seed ρ with the t-interval mean ± t_{(1+level)/2, n−1}·sd/√n
(sd with n − 1), clipped to [−1, 1] (``seed_interval``). NaN per-seed ρ are left out
(``n_defined``); with fewer than 2 defined seeds the interval is NaN. A bootstrap over 3 seeds
would be no better founded, so the t-interval is used.

Tables (``analyse``), all tidy, each row carrying dataset, method, variant:
  correlations           a row per run (seed), source, epoch, x, y: ρ(x, y) across classes.
                         source "final": the statistics of the final model (per_class.csv:
                         training features, exact 1/n statistics; ``test_*`` on the test set)
                         and its final γ_k; source "epoch": the loss's running statistics and
                         γ_k logged after each epoch (epochs.csv; MR² methods only).
                         x = "erm_error" against y = each statistic (link 1 and 2);
                         x = a_k (per norm) against y = its two parts (what drives a_k);
                         x = "gamma" or "erm_error" against y = "change" (link 3).
  correlation_summary    the same over seeds: n_seeds, n_defined, rho_mean, rho_lo, rho_hi.
  decomposition          a row per run, class and norm p (2, 3, 5): ‖μ̂_k‖_p², ‖ŝ_k‖_p², a_k,
                         and the shares mean_share = ‖μ̂_k‖²/a_k, spread_share = ‖ŝ_k‖²/a_k.
  decomposition_summary  the same, mean over seeds, with ERM's accuracy and the class's group.
  margins                a row per run and class: erm_error, group, final γ_k, and change, the
                         accuracy change over the reference of the same seed (NaN for the
                         reference itself and for seeds it lacks).

Exploratory margin variants (ours, not the paper's): variants of the swept method named
``statistic=spread`` (γ from ‖ŝ_k‖² alone) and ``p=3``/``p=5`` (γ from L_p statistics of the
unnormalised features); each follows Corollary 1's cube-root rule with mean c̄. The report
labels them so.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .figures import GROUP_COLOURS, PANEL_SIZE, placeholder, save_figure  # sets the Agg backend first
from .io import save_csv
from .results import DEFAULT_VARIANT, RUN_KEYS

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is set)

LEVEL = 0.95
#: the L_p norms evaluation writes: p -> column suffix (mr2.evaluate.STAT_NORMS)
NORMS = {2: "", 3: "_p3", 5: "_p5"}
PARTS = ("mean_sq_norm", "spread")
#: per_class.csv columns correlated with ERM's error (those present are used)
FINAL_STATISTICS = ["gamma"] + [f"{s}{suffix}" for suffix in NORMS.values() for s in ("mean_sq_norm", "spread", "a")] \
    + ["test_mean_sq_norm", "test_spread", "test_a"]
#: per-class names of epochs.csv correlated with ERM's error
EPOCH_STATISTICS = ["mean_sq_norm", "spread", "a", "gamma"]
#: options of the swept method whose variants are our exploratory margin variants
EXPLORATORY_OPTIONS = ("statistic", "p")
SUMMARY_KEYS = ["dataset", "method", "variant", "source", "epoch", "x", "y"]
TABLE_NAMES = ["correlations", "correlation_summary", "decomposition", "decomposition_summary", "margins"]
FIGURE_NAMES = ["premise_decomposition", "premise_margins"]
#: below this coefficient of variation across classes, ‖μ̂_k‖² counts as "roughly equal" (our threshold)
EQUAL_CV = 0.1
SYMBOLS = {"mean_sq_norm": "‖μ̂_k‖²", "spread": "‖ŝ_k‖²", "a": "a_k", "gamma": "γ_k"}


# ----------------------------------------------------------------------------- correlation
def spearman(x: Iterable[float], y: Iterable[float]) -> float:
    """Spearman's ρ = corr(rank(x), rank(y)), the Pearson correlation of average ranks (ties
    share their mean rank), over the pairs where both are finite. NaN when fewer than 3 pairs
    remain or either side is constant."""
    frame = pd.DataFrame({"g": 0, "x": np.asarray(list(x), dtype=float), "y": np.asarray(list(y), dtype=float)})
    return float(grouped_spearman(frame, ["g"], "x", "y")["rho"].iloc[0]) if len(frame) else math.nan


def grouped_spearman(frame: pd.DataFrame, keys: Sequence[str], x: str, y: str) -> pd.DataFrame:
    """``spearman(x, y)`` within every group of ``keys``, vectorised: ranks per group, then
    Σ r̃_x r̃_y / √(Σ r̃_x² Σ r̃_y²) with r̃ = rank − its group mean. Returns keys, rho, n."""
    keys = list(keys)
    data = frame[keys + [x, y]].copy()
    data[x], data[y] = data[x].astype(float), data[y].astype(float)
    data = data[np.isfinite(data[x]) & np.isfinite(data[y])]
    grouped = data.groupby(keys, sort=False, dropna=False)
    rx = grouped[x].rank(method="average")
    ry = grouped[y].rank(method="average")
    data["rx"] = rx - rx.groupby([data[k] for k in keys], sort=False, dropna=False).transform("mean")
    data["ry"] = ry - ry.groupby([data[k] for k in keys], sort=False, dropna=False).transform("mean")
    data["xy"], data["xx"], data["yy"] = data["rx"] * data["ry"], data["rx"] ** 2, data["ry"] ** 2
    sums = data.groupby(keys, sort=False, dropna=False).agg(xy=("xy", "sum"), xx=("xx", "sum"), yy=("yy", "sum"),
                                                             n=("xy", "size"))
    den = np.sqrt(sums["xx"] * sums["yy"])
    tol = 1e-12 * np.maximum(1.0, sums["n"].astype(float) ** 3)  # rank sums of squares are ~n³
    rho = (sums["xy"] / den.where(den > tol)).clip(-1.0, 1.0)
    rho[sums["n"] < 3] = math.nan
    out = sums[["n"]].assign(rho=rho.astype(float)).reset_index()
    every = frame[keys].drop_duplicates()  # groups with no finite pair: rho NaN, n 0
    out = every.merge(out, on=keys, how="left")
    out["n"] = out["n"].fillna(0).astype(int)
    return out[keys + ["rho", "n"]]


def seed_interval(values: Iterable[float], level: float = LEVEL) -> dict[str, float]:
    """Mean of per-seed correlations with the t-interval mean ± t_{(1+level)/2, n−1}·sd/√n
    (sd with n − 1) clipped to [−1, 1]; NaN values are left out (n = the defined ones).
    Fewer than 2 defined values: no interval (NaN)."""
    v = np.asarray([float(x) for x in values], dtype=float)
    v = v[np.isfinite(v)]
    n = len(v)
    mean = float(v.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "lo": math.nan, "hi": math.nan, "n": n}
    half = float(stats.t.ppf((1 + level) / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "lo": max(-1.0, mean - half), "hi": min(1.0, mean + half), "n": n}


# ----------------------------------------------------------------------------- inputs
def difficulty(per_class: pd.DataFrame, reference: str = "erm", variant: str = DEFAULT_VARIANT) -> pd.DataFrame:
    """ERM's per-class error 1 − accuracy, mean over seeds, per dataset and class
    (columns dataset, class, erm_accuracy, erm_error). A dataset without reference runs is an
    error naming it."""
    ref = per_class[(per_class["method"] == reference) & (per_class["variant"] == variant)]
    missing = sorted(set(per_class["dataset"]) - set(ref["dataset"]))
    if missing:
        raise ValueError(f"datasets {missing} have no runs of the reference method {reference!r} "
                         f"(variant {variant!r}); its per-class error defines class difficulty")
    out = ref.groupby(["dataset", "class"], sort=False)["accuracy"].mean().rename("erm_accuracy").reset_index()
    out["erm_error"] = 1.0 - out["erm_accuracy"]
    return out


def margins_table(per_class: pd.DataFrame, groups: pd.DataFrame, reference: str = "erm",
                  variant: str = DEFAULT_VARIANT) -> pd.DataFrame:
    """A row per run and class: erm_error, erm_accuracy, group, gamma (final γ_k; 1 where a
    method has none) and change = accuracy − the reference's accuracy in the same dataset,
    seed and class (NaN for the reference itself and where that seed has no reference run)."""
    diff = difficulty(per_class, reference, variant)
    ref = per_class[(per_class["method"] == reference) & (per_class["variant"] == variant)]
    ref = ref[["dataset", "seed", "class", "accuracy"]].rename(columns={"accuracy": "ref_accuracy"})
    frame = per_class[RUN_KEYS + ["class", "accuracy"] + (["gamma"] if "gamma" in per_class else [])].copy()
    if "gamma" not in frame:
        frame["gamma"] = 1.0
    frame = frame.merge(diff, on=["dataset", "class"], how="left").merge(ref, on=["dataset", "seed", "class"], how="left")
    frame["change"] = frame["accuracy"] - frame["ref_accuracy"]
    is_ref = (frame["method"] == reference) & (frame["variant"] == variant)
    frame.loc[is_ref, "change"] = math.nan
    frame = frame.merge(groups[["dataset", "class", "group"]], on=["dataset", "class"], how="left")
    return frame.drop(columns="ref_accuracy")


# ----------------------------------------------------------------------------- decomposition
def decomposition(per_class: pd.DataFrame, tol: float = 1e-6) -> pd.DataFrame:
    """a_k split into its parts, a row per run, class and norm p (those per_class has):
    mean_sq_norm = ‖μ̂_k‖_p², spread = ‖ŝ_k‖_p², a = a_k, mean_share = ‖μ̂_k‖_p²/a_k and
    spread_share = ‖ŝ_k‖_p²/a_k (NaN where a_k = 0). The parts must add up to the table's
    a_k (relative ``tol``); a row where they do not is an error naming its run and class."""
    out = []
    for p, suffix in NORMS.items():
        cols = [f"{c}{suffix}" for c in (*PARTS, "a")]
        if not set(cols) <= set(per_class.columns):
            continue
        part = per_class[RUN_KEYS + ["class"] + cols].rename(columns=dict(zip(cols, (*PARTS, "a"))))
        part.insert(len(RUN_KEYS) + 1, "p", p)
        out.append(part)
    if not out:
        raise ValueError(f"per_class table has none of the columns {list(PARTS) + ['a']}; evaluate the runs first")
    frame = pd.concat(out, ignore_index=True)
    total = frame["mean_sq_norm"] + frame["spread"]
    bad = (total - frame["a"]).abs() > tol * frame["a"].abs().clip(lower=1e-12)
    if bad.any():
        row = frame[bad].iloc[0]
        raise ValueError(f"‖μ̂_k‖² + ‖ŝ_k‖² = {total[bad].iloc[0]:.6g} ≠ a_k = {row['a']:.6g} for "
                         f"{dict(row[RUN_KEYS])}, class {row['class']}, p = {row['p']}")
    a = frame["a"].where(frame["a"] != 0)
    frame["mean_share"] = frame["mean_sq_norm"] / a
    frame["spread_share"] = frame["spread"] / a
    return frame


def decomposition_summary(dec: pd.DataFrame, diff: pd.DataFrame, groups: pd.DataFrame) -> pd.DataFrame:
    """``decomposition`` averaged over seeds (and the sd of a_k over seeds), per dataset,
    method, variant, p and class, with ERM's accuracy and the class's group."""
    keys = ["dataset", "method", "variant", "p", "class"]
    cols = [*PARTS, "a", "mean_share", "spread_share"]
    grouped = dec.groupby(keys, sort=False)
    out = grouped[cols].mean().join(grouped["a"].std(ddof=1).rename("a_sd")).join(grouped.size().rename("n_seeds"))
    out = out.reset_index().merge(diff, on=["dataset", "class"], how="left")
    return out.merge(groups[["dataset", "class", "group"]], on=["dataset", "class"], how="left")


# ----------------------------------------------------------------------------- correlations
def final_correlations(per_class: pd.DataFrame, margins: pd.DataFrame) -> pd.DataFrame:
    """The "final" rows of ``correlations`` (see module docstring)."""
    keys = RUN_KEYS
    stats_cols = [c for c in FINAL_STATISTICS if c in per_class]
    frame = per_class[keys + ["class"] + [c for c in stats_cols if c != "gamma"]].merge(
        margins[keys + ["class", "erm_error", "gamma", "change"]], on=keys + ["class"], how="left")
    pairs = [("erm_error", c) for c in stats_cols]
    pairs += [(f"a{s}", f"{part}{s}") for s in NORMS.values() for part in PARTS if f"a{s}" in frame]
    pairs += [("gamma", "change"), ("erm_error", "change")]
    out = []
    for x, y in pairs:
        rho = grouped_spearman(frame, keys, x, y)
        if y == "change":  # only runs that have a paired reference
            has = frame.groupby(keys, sort=False)["change"].apply(lambda s: s.notna().any()).rename("has").reset_index()
            rho = rho.merge(has, on=keys)
            rho = rho[rho["has"]].drop(columns="has")
        out.append(rho.assign(x=x, y=y))
    result = pd.concat(out, ignore_index=True)
    result.insert(len(keys), "source", "final")
    result.insert(len(keys) + 1, "epoch", pd.array([pd.NA] * len(result), dtype="Int64"))
    return result


def epoch_correlations(epochs: pd.DataFrame, diff: pd.DataFrame) -> pd.DataFrame:
    """The "epoch" rows of ``correlations``: ρ(ERM error, running statistic) after each epoch."""
    rows = epochs[epochs["class"].notna() & epochs["name"].isin(EPOCH_STATISTICS)]
    columns = RUN_KEYS + ["source", "epoch", "x", "y", "rho", "n"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rows = rows.assign(**{"class": rows["class"].astype("int64")}).merge(
        diff.assign(**{"class": diff["class"].astype("int64")}), on=["dataset", "class"], how="left")
    rho = grouped_spearman(rows, RUN_KEYS + ["epoch", "name"], "erm_error", "value")
    rho = rho.rename(columns={"name": "y"}).assign(source="epoch", x="erm_error")
    rho["epoch"] = rho["epoch"].astype("Int64")
    return rho[columns]


def summarise(correlations: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """Per dataset, method, variant, source, epoch, x and y: n_seeds, and ``seed_interval`` of
    the per-seed ρ as n_defined, rho_mean, rho_lo, rho_hi."""
    rows = []
    for key, frame in correlations.groupby(SUMMARY_KEYS, sort=False, dropna=False):
        iv = seed_interval(frame["rho"], level)
        rows.append({**dict(zip(SUMMARY_KEYS, key)), "n_seeds": len(frame), "n_defined": iv["n"],
                     "rho_mean": iv["mean"], "rho_lo": iv["lo"], "rho_hi": iv["hi"]})
    out = pd.DataFrame(rows, columns=SUMMARY_KEYS + ["n_seeds", "n_defined", "rho_mean", "rho_lo", "rho_hi"])
    out["epoch"] = out["epoch"].astype("Int64")
    return out


def analyse(tables: dict[str, pd.DataFrame], reference: str = "erm", level: float = LEVEL) -> dict[str, pd.DataFrame]:
    """Every table of the module docstring from the tidy tables ``per_class``, ``epochs`` and
    ``groups`` of ``mr2.results``."""
    per_class, groups = tables["per_class"], tables["groups"]
    epochs = tables.get("epochs", pd.DataFrame(columns=RUN_KEYS + ["epoch", "class", "name", "value"]))
    diff = difficulty(per_class, reference)
    margins = margins_table(per_class, groups, reference)
    corr = pd.concat([final_correlations(per_class, margins), epoch_correlations(epochs, diff)], ignore_index=True)
    corr["epoch"] = corr["epoch"].astype("Int64")
    dec = decomposition(per_class)
    return {"correlations": corr, "correlation_summary": summarise(corr, level), "decomposition": dec,
            "decomposition_summary": decomposition_summary(dec, diff, groups), "margins": margins}


def read_analysis(out_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The tables ``write_analysis`` wrote."""
    out = {}
    for name in TABLE_NAMES:
        path = Path(out_dir) / f"{name}.csv"
        if not path.is_file():
            raise FileNotFoundError(f"missing analysis table {path}; run 'python -m mr2 analysis' first")
        frame = pd.read_csv(path)
        if "epoch" in frame:
            frame["epoch"] = frame["epoch"].astype("Int64")
        out[name] = frame
    return out


# ----------------------------------------------------------------------------- helpers for text and figures
def is_exploratory(variant: str) -> bool:
    """True for our exploratory margin variants (``statistic=...``, ``p=...``)."""
    return str(variant).split("=", 1)[0] in EXPLORATORY_OPTIONS and "=" in str(variant)


def label(method: str, variant: str) -> str:
    """``mr2`` for the default variant, ``mr2 (statistic=spread, exploratory)`` for ours."""
    if variant == DEFAULT_VARIANT:
        return method
    return f"{method} ({variant}, exploratory)" if is_exploratory(variant) else f"{method} ({variant})"


def lookup(summary: pd.DataFrame, dataset: str, method: str, variant: str, x: str, y: str,
           source: str = "final", epoch: int | None = None) -> dict[str, Any] | None:
    """The summary row of one correlation, or None when the tables do not have it."""
    sel = ((summary["dataset"] == dataset) & (summary["method"] == method) & (summary["variant"] == variant)
           & (summary["source"] == source) & (summary["x"] == x) & (summary["y"] == y))
    sel &= summary["epoch"].isna() if epoch is None else (summary["epoch"] == epoch)
    rows = summary[sel]
    return None if rows.empty else rows.iloc[0].to_dict()


def percent(level: float) -> str:
    """0.95 -> '95 %'."""
    return f"{100 * level:.0f} %"


def format_rho(row: dict[str, Any] | None, level: float = LEVEL) -> str:
    """``+0.53 [95 % CI +0.21, +0.85; 3 seeds]``; says when ρ or its interval is undefined."""
    if row is None:
        return "not measured"
    if not row["n_defined"]:
        return "undefined (one side is constant across classes)"
    if pd.isna(row["rho_lo"]):
        return f"{row['rho_mean']:+.2f} [no interval: {int(row['n_defined'])} seed]"
    return (f"{row['rho_mean']:+.2f} [{percent(level)} CI {row['rho_lo']:+.2f}, {row['rho_hi']:+.2f}; "
            f"{int(row['n_defined'])} seeds]")


def link_verdict(row: dict[str, Any] | None) -> str:
    """'holds' (interval above 0), 'reversed' (below 0), 'not shown' (contains 0), or
    'undetermined' (no interval: fewer than 2 seeds, or ρ undefined)."""
    if row is None or not row["n_defined"] or pd.isna(row["rho_lo"]):
        return "undetermined"
    if row["rho_lo"] > 0:
        return "holds"
    if row["rho_hi"] < 0:
        return "reversed"
    return "not shown"


# ----------------------------------------------------------------------------- figures
def _mark_groups(ax: plt.Axes, groups: Sequence[str]) -> None:
    """Shade the runs of equal group along the x axis and name them."""
    start = 0
    for i in range(1, len(groups) + 1):
        if i == len(groups) or groups[i] != groups[start]:
            g = groups[start]
            ax.axvspan(start - 0.5, i - 0.5, color=GROUP_COLOURS.get(g, "grey"), alpha=0.12, linewidth=0)
            ax.text((start + i - 1) / 2, 1.0, g, transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                    fontsize=8, color=GROUP_COLOURS.get(g, "grey"))
            start = i


def plot_decomposition(summary: pd.DataFrame, stem: str | Path, reference: str = "erm",
                       methods: Sequence[str] = ("erm", "mr2"), p: int = 2) -> list[Path]:
    """‖μ̂_k‖² and ‖ŝ_k‖² (stacked; their sum is a_k, error bar = sd of a_k over seeds) of the
    training features per class, classes ordered by ERM's accuracy (hardest left), the
    hard/medium/easy groups shaded; a column per dataset, a row per method's own features."""
    data = summary[(summary["p"] == p) & (summary["variant"] == DEFAULT_VARIANT)
                   & summary["method"].isin([reference, *methods])]
    rows = [m for m in dict.fromkeys([reference, *methods]) if m in set(data["method"])]
    if data.empty:
        return placeholder(stem, "no per-class statistics to draw")
    datasets = list(data["dataset"].unique())
    fig, axes = plt.subplots(len(rows), len(datasets), squeeze=False,
                             figsize=(max(5.5, 0.12 * data["class"].nunique() + 3) * len(datasets),
                                      PANEL_SIZE[1] * len(rows)))
    for r, method in enumerate(rows):
        for c, dataset in enumerate(datasets):
            ax = axes[r, c]
            part = data[(data["dataset"] == dataset) & (data["method"] == method)]
            part = part.sort_values(["erm_accuracy", "class"], kind="stable")
            pos = np.arange(len(part))
            ax.bar(pos, part["mean_sq_norm"], color="tab:blue", label="‖μ̂_k‖² (mean's norm)")
            ax.bar(pos, part["spread"], bottom=part["mean_sq_norm"], color="tab:orange", label="‖ŝ_k‖² (spread)")
            if part["a_sd"].notna().any():
                ax.errorbar(pos, part["a"], yerr=part["a_sd"], fmt="none", ecolor="black", elinewidth=0.6, capsize=1.5)
            _mark_groups(ax, list(part["group"].fillna("?")))
            ticks = part["class"].astype(str).tolist()
            ax.set_xticks(pos if len(pos) <= 30 else [])
            if len(pos) <= 30:
                ax.set_xticklabels(ticks, fontsize=7)
            ax.set(xlim=(-0.5, len(pos) - 0.5), xlabel=f"class (ascending {reference} accuracy)",
                   ylabel="a_k = ‖μ̂_k‖² + ‖ŝ_k‖²" + ("" if p == 2 else f" (L{p})"))
            ax.set_title(f"{dataset}: training features of {method}", pad=14)
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
        gamma=("gamma", "mean"), erm_error=("erm_error", "first"), group=("group", "first")).reset_index()
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
            row = lookup(summary, dataset, method, variant, "erm_error", "gamma")
            title.append(f"{label(method, variant)}: ρ = {format_rho(row, level)}")
        c_bar = data.loc[data["dataset"] == dataset, "gamma"].mean()  # Corollary 1 keeps the mean at c̄
        ax.axhline(c_bar, color="grey", linewidth=0.6, linestyle=":")
        ax.set(xlabel="ERM per-class test error (%)", ylabel="final γ_k")
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


# ----------------------------------------------------------------------------- report section
def _share_sentence(dec: pd.DataFrame, dataset: str, method: str) -> str | None:
    """What a_k is made of for ``method``'s features (L2), from the decomposition summary."""
    part = dec[(dec["dataset"] == dataset) & (dec["method"] == method) & (dec["variant"] == DEFAULT_VARIANT)
               & (dec["p"] == 2)]
    if part.empty:
        return None
    share = part["mean_share"].dropna()
    cv = {c: float(part[c].std(ddof=0) / part[c].mean()) if part[c].mean() else math.nan for c in PARTS}
    # "roughly equal" (the reviewers' question): a coefficient of variation below EQUAL_CV
    return (f"‖μ̂_k‖² makes up {100 * share.median():.0f} % of a_k (median over classes; "
            f"{100 * share.min():.0f}–{100 * share.max():.0f} %). Across classes ‖μ̂_k‖² varies with a "
            f"coefficient of variation of {cv['mean_sq_norm']:.2f} and ‖ŝ_k‖² with {cv['spread']:.2f}"
            + (" — the mean's norm is roughly equal across classes." if cv["mean_sq_norm"] < EQUAL_CV
               else " — the mean's norm is not equal across classes."))


def _epoch_sentence(summary: pd.DataFrame, dataset: str, method: str, variant: str) -> str | None:
    """How ρ(ERM error, running γ_k) evolves over training."""
    part = summary[(summary["dataset"] == dataset) & (summary["method"] == method) & (summary["variant"] == variant)
                   & (summary["source"] == "epoch") & (summary["x"] == "erm_error") & (summary["y"] == "gamma")]
    part = part.dropna(subset=["epoch"]).sort_values("epoch")
    if part.empty:
        return None
    first, last = part.iloc[0], part.iloc[-1]
    held = [int(e) for e, lo in zip(part["epoch"], part["rho_lo"]) if pd.notna(lo) and lo > 0]
    return (f"During training (running statistics), ρ(ERM error, γ_k) goes from {first['rho_mean']:+.2f} after "
            f"epoch {int(first['epoch'])} to {last['rho_mean']:+.2f} after epoch {int(last['epoch'])}; its interval "
            + (f"is above 0 after {len(held)} of {len(part)} epochs (first after epoch {held[0]})." if held
               else f"is above 0 after none of the {len(part)} epochs."))


def premise_findings(analysis: dict[str, pd.DataFrame], reference: str = "erm", method: str = "mr2",
                     level: float = LEVEL) -> list[str]:
    """Plain sentences per dataset: which links of the chain hold, computed from the tables."""
    summary, dec = analysis["correlation_summary"], analysis["decomposition_summary"]
    lines: list[str] = []
    for dataset in summary["dataset"].unique():
        def get(m, v, x, y, d=dataset):
            return lookup(summary, d, m, v, x, y)

        lines += [f"### {dataset}", ""]
        link1 = get(reference, DEFAULT_VARIANT, "erm_error", "a")
        named = [(SYMBOLS[s], s) for s in PARTS] + [(f"a_k (L{p})", f"a{sfx}") for p, sfx in NORMS.items() if p != 2]
        named.append(("a_k of the test features", "test_a"))
        parts = "; ".join(f"{name}: {format_rho(get(reference, DEFAULT_VARIANT, 'erm_error', column), level)}"
                          for name, column in named)
        lines.append(f"- **Link 1, hard classes vary more** ({reference.upper()}'s training features): "
                     f"ρ(ERM error, a_k) = {format_rho(link1, level)} — **{link_verdict(link1)}**. By part and norm: {parts}.")
        share = _share_sentence(dec, dataset, reference)
        if share:
            drivers = {s: get(reference, DEFAULT_VARIANT, "a", s) for s in PARTS}
            rho = {s: (r["rho_mean"] if r and r["n_defined"] else math.nan) for s, r in drivers.items()}
            follows = ("‖μ̂_k‖²" if rho["mean_sq_norm"] > rho["spread"] else "‖ŝ_k‖²") \
                if not any(math.isnan(v) for v in rho.values()) else "undetermined"
            lines.append(f"- What a_k measures: {share} The ranking of a_k follows {follows} more "
                         f"(ρ(a_k, ‖μ̂_k‖²) = {format_rho(drivers['mean_sq_norm'], level)}; ρ(a_k, ‖ŝ_k‖²) = "
                         f"{format_rho(drivers['spread'], level)}).")
        link2 = get(method, DEFAULT_VARIANT, "erm_error", "gamma")
        link3 = get(method, DEFAULT_VARIANT, "gamma", "change")
        gains = get(method, DEFAULT_VARIANT, "erm_error", "change")
        if link2 is not None:
            lines.append(f"- **Link 2, harder classes get larger margins** ({method}'s final γ_k): "
                         f"ρ(ERM error, γ_k) = {format_rho(link2, level)} — **{link_verdict(link2)}**.")
            epoch = _epoch_sentence(summary, dataset, method, DEFAULT_VARIANT)
            if epoch:
                lines.append(f"  {epoch}")
            lines.append(f"- **Link 3, larger margins bring larger gains** (per-class accuracy change of {method} over "
                         f"{reference.upper()}, same seed): ρ(γ_k, change) = {format_rho(link3, level)} — "
                         f"**{link_verdict(link3)}**; ρ(ERM error, change) = {format_rho(gains, level)} "
                         f"({'gains go to hard classes' if link_verdict(gains) == 'holds' else 'no clear shift of gains to hard classes'}).")
            verdicts = {"1": link_verdict(link1), "2": link_verdict(link2), "3": link_verdict(link3)}
            broken = [k for k, v in verdicts.items() if v != "holds"]
            lines.append("- **Chain**: " + "; ".join(f"link {k} {v}" for k, v in verdicts.items()) + ". "
                         + ("Every link holds on this dataset." if not broken else
                            f"The chain is not established on this dataset: link{'s' if len(broken) > 1 else ''} "
                            + " and ".join([", ".join(broken[:-1]), broken[-1]] if len(broken) > 1 else broken)
                            + (" does" if len(broken) == 1 else " do") + " not hold."))
        variants = [v for v in summary.loc[(summary["dataset"] == dataset) & (summary["method"] == method), "variant"].unique()
                    if is_exploratory(v)]
        for variant in variants:
            l2, l3 = get(method, variant, "erm_error", "gamma"), get(method, variant, "gamma", "change")
            lines.append(f"- *Exploratory (ours, not the paper's)* `{method}` with `{variant}`: "
                         f"ρ(ERM error, γ_k) = {format_rho(l2, level)} — link 2 **{link_verdict(l2)}**; "
                         f"ρ(γ_k, change) = {format_rho(l3, level)} — link 3 **{link_verdict(l3)}**.")
        lines.append("")
    return lines


def premise_section(analysis_dir: str | Path, report_out: str | Path, captions: str | Path,
                    reference: str = "erm", method: str = "mr2", level: float = LEVEL) -> list[str]:
    """The report's "Does the premise hold?" section (Markdown lines) from ``analysis_dir``;
    figure links are relative to the report file ``report_out``."""
    analysis_dir, captions = Path(analysis_dir), Path(captions)
    tables = read_analysis(analysis_dir)
    lines = [
        "## Does the premise hold?",
        "",
        "MR²'s reasoning is a chain: (1) hard classes have larger variability a_k = ‖μ̂_k‖² + ‖ŝ_k‖²; "
        "(2) Corollary 1 then gives them larger margins γ_k; (3) larger margins improve them. Each link is "
        f"measured by Spearman's ρ across classes, per seed, summarised as the mean with a {percent(level)} t-interval "
        f"over seeds. Difficulty is {reference.upper()}'s per-class test error (mean over seeds). A link "
        "**holds** when the interval lies above 0, is **reversed** below 0, **not shown** when it contains 0, and "
        "**undetermined** without an interval. Variants marked *exploratory* are ours, not the paper's: "
        "`statistic=spread` sets γ from ‖ŝ_k‖² alone, `p=3`/`p=5` from L_p statistics of the unnormalised "
        "features; both keep Corollary 1's cube-root rule and mean c̄. All numbers: `results/analysis/`.",
        "",
    ]
    lines += premise_findings(tables, reference, method, level)
    for name in FIGURE_NAMES:
        png = analysis_dir / f"{name}.png"
        if png.is_file():
            rel = os.path.relpath(png, Path(report_out).parent)
            cap = captions / f"{name}.rst"
            lines += [f"### {name.replace('_', ' ').capitalize()}", "", f"![{name}]({rel})", "",
                      cap.read_text().strip() if cap.is_file() else "", ""]
    return lines
