"""Per-class statistics that a figure draws and the report's text states, computed once here so
that both say the same numbers.

  class_means      mean over seeds of per-class columns, per dataset, method, variant and class
  class_changes    each class's paired change over the reference, with its t-interval over seeds
  changed_classes  the classes whose interval excludes 0, and whether that few is chance alone
  seed_rho         Spearman's ρ across classes per seed, then its mean with a t-interval over seeds
  format_seed_rho  ``ρ = −0.53 [95% CI −0.85, −0.21], 3 seeds``
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..common.runs import DEFAULT_VARIANT, run_label
from .groups import class_names
from .statistics import (LEVEL, correlation_verdict, grouped_spearman, no_interval_reason, one_of_many,
                         paired_difference, seed_interval, verdict)

RUN = ["dataset", "method", "variant"]


def class_means(per_class: pd.DataFrame, columns: Sequence[str] = ("accuracy",)) -> pd.DataFrame:
    """Mean over seeds of ``columns`` per dataset, method, variant and class (in the tables' order),
    with a ``label`` (``run_label``)."""
    means = per_class.groupby(RUN + ["class"], sort=False)[list(columns)].mean().reset_index()
    means["label"] = [run_label(m, v) for m, v in zip(means["method"], means["variant"])]
    return means


def class_changes(per_class: pd.DataFrame, reference: str = "erm", methods: Sequence[str] | None = None,
                  variants: Sequence[str] | None = (DEFAULT_VARIANT,), level: float = LEVEL) -> pd.DataFrame:
    """A row per dataset, method, variant and class: the paired change over the reference in points,
    d̄ = mean_s (acc_s − ref_s) over the seeds s both ran, with its t-interval
    d̄ ± t_{(1+level)/2, n−1}·sd(d)/√n (``paired_difference``: diff, diff_lo, diff_hi, n_paired), the
    reference's accuracy (ref_accuracy, %, mean over its seeds), class_name and label. ``methods``
    defaults to every method except the reference, in the tables' order; ``variants`` None: all."""
    if methods is None:
        methods = [m for m in dict.fromkeys(per_class["method"]) if m != reference]
    is_ref = (per_class["method"] == reference) & (per_class["variant"] == DEFAULT_VARIANT)
    ref = per_class.loc[is_ref, ["dataset", "seed", "class", "accuracy"]].rename(columns={"accuracy": "ref"})
    chosen = per_class["method"].isin(list(methods))
    if variants is not None:
        chosen &= per_class["variant"].isin(list(variants))
    data = per_class[chosen].merge(ref, on=["dataset", "seed", "class"])
    rows = [{**dict(zip(RUN + ["class"], key)),
             **paired_difference(100 * g["accuracy"].to_numpy(), 100 * g["ref"].to_numpy(), level)}
            for key, g in data.groupby(RUN + ["class"], sort=False)]
    out = pd.DataFrame(rows, columns=RUN + ["class", "diff", "diff_lo", "diff_hi", "n_paired"])
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


def seed_rho(per_class: pd.DataFrame, feature: str, level: float = LEVEL) -> pd.DataFrame:
    """Spearman's ρ(``feature``, accuracy) across classes within each run (dataset, method, variant,
    seed), then per dataset, method and variant the mean of the per-seed ρ with its
    ``seed_interval`` (rho_mean, rho_lo, rho_hi, n)."""
    per_seed = grouped_spearman(per_class, RUN + ["seed"], feature, "accuracy")
    rows = [{**dict(zip(RUN, key)), **{f"rho_{k}" if k != "n" else "n": v
                                       for k, v in seed_interval(g["rho"], level).items()}}
            for key, g in per_seed.groupby(RUN, sort=False)]
    return pd.DataFrame(rows, columns=RUN + ["rho_mean", "rho_lo", "rho_hi", "n"])


def format_seed_rho(row: pd.Series | dict | None, level: float = LEVEL) -> str:
    """``ρ = −0.53 [95 % CI −0.85, −0.21], 3 seeds`` (the mean of per-seed ρ), with the word its interval
    earns when it says nothing (``correlation_verdict``: uninformative, not shown)."""
    if row is None or not row["n"] or pd.isna(row["rho_mean"]):
        return "ρ undefined"
    if pd.isna(row["rho_lo"]):
        return f"ρ = {row['rho_mean']:+.2f} ({no_interval_reason(int(row['n']))})"
    word = correlation_verdict(row["rho_lo"], row["rho_hi"])
    return (f"ρ = {row['rho_mean']:+.2f} [{level:.0%} CI {row['rho_lo']:+.2f}, {row['rho_hi']:+.2f}], {int(row['n'])} seeds"
            + (f": {word}" if word in ("uninformative", "not shown") else ""))
