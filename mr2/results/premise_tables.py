"""Does the paper's premise hold? Each link of MR²'s chain, measured on every dataset and run.

MR²'s reasoning (docs/method.md) is a chain:
  1. hard classes have larger variability a_k = ‖μ̂_k‖² + ‖ŝ_k‖²;
  2. Corollary 1 then gives them larger margins γ_k;
  3. larger margins improve those classes.
This module measures each link from the tidy tables of ``mr2.results.tables`` (nothing else) and
returns tidy tables; ``premise_figures`` draws them and ``premise_text`` renders the report's
"Does the premise hold?" section from them.

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
(``n_defined``); with fewer than 3 distinct defined values (so also for seeds that agree, an
interval of zero width) the interval is NaN and the link undetermined. A bootstrap over 3 seeds
would be no better founded, so the t-interval is used.

Tables (``analyse``), all tidy, each row carrying dataset, method, variant:
  correlations           a row per run (seed), source, epoch, x, y: ρ(x, y) across classes.
                         source "final": the statistics of the final model (per_class.csv:
                         training features, exact 1/n statistics; ``test_*`` on the test set)
                         and its final γ_k; source "epoch": the loss's running statistics and
                         γ_k logged after each epoch (epochs.csv; MR² methods only).
                         x = "erm_error" against y = each statistic (link 1 and 2);
                         x = a_k (per norm) against y = its two parts (what drives a_k);
                         x = "gamma" or "erm_error_other_seeds" against y = "change" (link 3;
                         ERM's error on the other seeds, since change holds this seed's); and
                         where the run set has the tuned temperature (``TEMPERATURE``),
                         x = "gamma" against y = "change_vs_temperature" (link 3 without the
                         share of MR²'s gain a logit temperature also gives).
  correlation_summary    the same over seeds: n_seeds, n_defined, rho_mean, rho_lo, rho_hi.
  decomposition          a row per run, class and norm p (2, 3, 5): ‖μ̂_k‖_p², ‖ŝ_k‖_p², a_k,
                         and the shares mean_share = ‖μ̂_k‖²/a_k, spread_share = ‖ŝ_k‖²/a_k.
  decomposition_summary  the same, mean over seeds, with ERM's accuracy, the class's group and name.
  margins                a row per run and class: class_name, erm_error (and erm_error_other_seeds),
                         group, final γ_k, and change, the
                         accuracy change over the reference of the same seed (NaN for the
                         reference itself and for seeds it lacks); change_vs_temperature, the
                         same over ``TEMPERATURE`` (NaN where the run set has none). Changes are
                         rounded to ``CHANGE_DECIMALS``: accuracies are counts over a class's
                         images, so two equal changes must tie in a rank correlation, not be
                         ordered by the float error of a subtraction.

Exploratory margin variants (ours, not the paper's): variants of the swept method named
``statistic=spread`` (γ from ‖ŝ_k‖² alone) and ``p=3``/``p=5`` (γ from L_p statistics of the
unnormalised features); each follows Corollary 1's cube-root rule with mean c̄. The report
labels them so.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..common.runs import DEFAULT_VARIANT, RUN_KEYS
from .figures.registry import ANALYSIS_FIGURES, ANALYSIS_TABLES
from .groups import class_names
from .statistics import LEVEL, grouped_spearman, seed_interval

NORMS = {2: "", 3: "_p3", 5: "_p5"}
PARTS = ("mean_sq_norm", "spread")
FINAL_STATISTICS = ["gamma"] + [f"{s}{suffix}" for suffix in NORMS.values() for s in ("mean_sq_norm", "spread", "a")] \
    + ["test_mean_sq_norm", "test_spread", "test_a"]
EPOCH_STATISTICS = ["mean_sq_norm", "spread", "a", "gamma"]
EXPLORATORY_OPTIONS = ("statistic", "p")
SUMMARY_KEYS = ["dataset", "method", "variant", "source", "epoch", "x", "y"]
#: the control whose per-class accuracy, subtracted from MR²'s, leaves what a logit temperature does not give
TEMPERATURE = "ce_temperature"
#: decimals an accuracy change keeps (no class has 10⁹ test images; float error sits near 1e-16)
CHANGE_DECIMALS = 9
CHANGES = ("change", "change_vs_temperature")
TABLE_NAMES, FIGURE_NAMES = list(ANALYSIS_TABLES), list(ANALYSIS_FIGURES)  # the registry's, which the workflow reads
EQUAL_CV = 0.1
SYMBOLS = {"mean_sq_norm": "‖μ̂_k‖²", "spread": "‖ŝ_k‖²", "a": "a_k", "gamma": "γ_k"}


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
    """A row per run and class: class_name, erm_error, erm_accuracy, group, gamma (final γ_k; 1
    where a method has none), change = accuracy − the reference's accuracy in the same dataset,
    seed and class (NaN for the reference itself and where that seed has no reference run), and
    erm_error_other_seeds = 1 − the reference's mean accuracy over its other seeds (NaN with none)."""
    diff = difficulty(per_class, reference, variant)
    ref = per_class[(per_class["method"] == reference) & (per_class["variant"] == variant)]
    ref = ref[["dataset", "seed", "class", "accuracy"]].rename(columns={"accuracy": "ref_accuracy"})
    frame = per_class[RUN_KEYS + ["class", "accuracy"] + (["gamma"] if "gamma" in per_class else [])].copy()
    if "gamma" not in frame:
        frame["gamma"] = 1.0
    frame = frame.merge(diff, on=["dataset", "class"], how="left").merge(ref, on=["dataset", "seed", "class"], how="left")
    frame["change"] = (frame["accuracy"] - frame["ref_accuracy"]).round(CHANGE_DECIMALS)
    control = per_class[(per_class["method"] == TEMPERATURE) & (per_class["variant"] == DEFAULT_VARIANT)]
    control = control[["dataset", "seed", "class", "accuracy"]].rename(columns={"accuracy": "control_accuracy"})
    frame = frame.merge(control, on=["dataset", "seed", "class"], how="left")
    frame["change_vs_temperature"] = (frame["accuracy"] - frame["control_accuracy"]).round(CHANGE_DECIMALS)
    frame.loc[(frame["method"] == TEMPERATURE) & (frame["variant"] == DEFAULT_VARIANT), "change_vs_temperature"] = math.nan
    # the reference's error on the other seeds: against `change`, which holds this seed's reference
    # accuracy, an error that holds it too correlates that noise with itself (regression to the mean)
    totals = ref.groupby(["dataset", "class"])["ref_accuracy"].agg(ref_sum="sum", ref_n="count").reset_index()
    frame = frame.merge(totals, on=["dataset", "class"], how="left")
    others = frame["ref_n"] - frame["ref_accuracy"].notna()
    frame["erm_error_other_seeds"] = (1.0 - (frame["ref_sum"] - frame["ref_accuracy"].fillna(0.0)) / others).where(others > 0)
    is_ref = (frame["method"] == reference) & (frame["variant"] == variant)
    frame.loc[is_ref, "change"] = math.nan
    frame = frame.merge(groups[["dataset", "class", "group"]], on=["dataset", "class"], how="left")
    frame = frame.merge(class_names(per_class), on=["dataset", "class"], how="left")
    return frame.drop(columns=["ref_accuracy", "ref_sum", "ref_n", "control_accuracy"])


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


def decomposition_summary(dec: pd.DataFrame, diff: pd.DataFrame, groups: pd.DataFrame,
                          names: pd.DataFrame) -> pd.DataFrame:
    """``decomposition`` averaged over seeds (and the sd of a_k over seeds), per dataset,
    method, variant, p and class, with ERM's accuracy, the class's group and its name (``names``:
    ``mr2.results.groups.class_names``)."""
    keys = ["dataset", "method", "variant", "p", "class"]
    cols = [*PARTS, "a", "mean_share", "spread_share"]
    grouped = dec.groupby(keys, sort=False)
    out = grouped[cols].mean().join(grouped["a"].std(ddof=1).rename("a_sd")).join(grouped.size().rename("n_seeds"))
    out = out.reset_index().merge(diff, on=["dataset", "class"], how="left")
    out = out.merge(groups[["dataset", "class", "group"]], on=["dataset", "class"], how="left")
    return out.merge(names, on=["dataset", "class"], how="left")


def final_correlations(per_class: pd.DataFrame, margins: pd.DataFrame) -> pd.DataFrame:
    """The "final" rows of ``correlations`` (see module docstring)."""
    keys = RUN_KEYS
    stats_cols = [c for c in FINAL_STATISTICS if c in per_class]
    frame = per_class[keys + ["class"] + [c for c in stats_cols if c != "gamma"]].merge(
        margins[keys + ["class", "erm_error", "erm_error_other_seeds", "gamma", *CHANGES]], on=keys + ["class"], how="left")
    pairs = [("erm_error", c) for c in stats_cols]
    pairs += [(f"a{s}", f"{part}{s}") for s in NORMS.values() for part in PARTS if f"a{s}" in frame]
    pairs += [("gamma", "change"), ("erm_error_other_seeds", "change")]
    if frame["change_vs_temperature"].notna().any():
        pairs.append(("gamma", "change_vs_temperature"))
    out = []
    for x, y in pairs:
        rho = grouped_spearman(frame, keys, x, y)
        if y in CHANGES:  # only runs that have a paired reference (or control)
            has = frame.groupby(keys, sort=False)[y].apply(lambda s: s.notna().any()).rename("has").reset_index()
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
    if rows.empty:  # typed like a filled result: numeric epoch, rho and n
        return pd.DataFrame(columns=columns).astype({"epoch": "Int64", "rho": float, "n": "int64"})
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
    final, by_epoch = final_correlations(per_class, margins), epoch_correlations(epochs, diff)
    corr = pd.concat([final, by_epoch] if len(by_epoch) else [final], ignore_index=True)
    corr["epoch"] = corr["epoch"].astype("Int64")
    dec = decomposition(per_class)
    return {"correlations": corr, "correlation_summary": summarise(corr, level), "decomposition": dec,
            "decomposition_summary": decomposition_summary(dec, diff, groups, class_names(per_class)),
            "margins": margins}


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
