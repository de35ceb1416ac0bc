"""Each method at its own convergence: a method's accuracy against the same setup trained ``factor``
times longer (the pipeline's config key ``convergence``; the long runs are the dataset key
``<dataset>.x<factor>``, whose run configs carry the tag ``convergence_of: <dataset>``).

A method is at convergence in a setting when training it ``factor`` times longer moves neither its
mean per-class accuracy nor its hard-class accuracy by more than ``tolerance`` points in either
direction (mean over the paired seeds; the hard classes are the setting's own, ranked by its
reference; the rule is ``mr2.results.rules.converged``). Each change is reported with its 90 %
t-interval. A setting whose methods are not all at convergence earns no verdict word.
"""

from __future__ import annotations

import math

import pandas as pd

from .groups import run_group_accuracy
from .rules import converged
from .statistics import EQUIVALENCE_LEVEL, LEVEL, paired_difference

TAG = "config.tags.convergence_of"
EPOCHS = "config.train.epochs"
GAINS = ("all", "hard")
COLUMNS = ["dataset", "check", "method", "variant", "epochs", "check_epochs", "n_paired",
           *[f"{m}_{k}" for m in GAINS for k in ("gain", "gain_lo", "gain_hi")], "level", "tolerance", "converged"]


def convergence_table(per_class: pd.DataFrame, runs: pd.DataFrame | None, groups: pd.DataFrame,
                      tolerance: float = 1.0, scale: float = 100.0) -> pd.DataFrame:
    """A row per convergence check, method and variant: the setting (``dataset``) and its check, both
    epoch counts, the paired seeds, the gain (long − short, points, mean with its ``level`` = 90 %
    t-interval) in mean per-class and hard-class accuracy, both on the setting's own groups, and
    ``converged`` (``mr2.results.rules.converged``: both |gains| ≤ ``tolerance``). Empty when no run is a
    convergence check."""
    if runs is None or TAG not in runs or runs[TAG].isna().all():
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    checks = runs.dropna(subset=[TAG]).drop_duplicates("dataset")
    for _, check in checks.iterrows():
        base, key = check[TAG], check["dataset"]
        g = groups[groups["dataset"] == base]
        short = run_group_accuracy(per_class[per_class["dataset"] == base], g)
        long = run_group_accuracy(per_class[per_class["dataset"] == key].assign(dataset=base), g)
        for (method, variant), frame in long.groupby(["method", "variant"], sort=False):
            mine = short[short["method"].eq(method) & short["variant"].eq(variant)].set_index("seed")
            frame = frame.set_index("seed")
            common = frame.index.intersection(mine.index)
            row = {"dataset": base, "check": key, "method": method, "variant": variant,
                   "epochs": own_epochs(runs, base, method, variant), "check_epochs": own_epochs(runs, key, method, variant),
                   "n_paired": len(common), "level": EQUIVALENCE_LEVEL, "tolerance": tolerance}
            for m in GAINS:
                d = paired_difference(frame.loc[common, m].to_numpy() * scale, mine.loc[common, m].to_numpy() * scale,
                                      EQUIVALENCE_LEVEL)
                row.update({f"{m}_gain": d["diff"], f"{m}_gain_lo": d["diff_lo"], f"{m}_gain_hi": d["diff_hi"]})
            row["converged"] = bool(len(common)) and converged(row["all_gain"], row["hard_gain"], tolerance)
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def own_epochs(runs: pd.DataFrame, dataset: str, method: str, variant: str) -> float:
    """The epochs ``method``'s ``variant`` trains in ``dataset`` (each method may train its own, config key
    ``method_epochs``), from its runs' resolved configs; NaN when it has no run there."""
    mine = runs[runs["dataset"].eq(dataset) & runs["method"].eq(method) & runs["variant"].eq(variant)]
    return int(mine[EPOCHS].iloc[0]) if len(mine) else math.nan


def _change(r, m: str) -> str:
    """``hard -1.5 [-2.3, -0.7]`` (the interval at the row's level) or ``hard -1.5`` without one."""
    lo, hi = float(r.get(f"{m}_gain_lo", math.nan)), float(r.get(f"{m}_gain_hi", math.nan))
    interval = f" [{lo:+.1f}, {hi:+.1f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{m} {float(r[f'{m}_gain']):+.1f}{interval}"


def convergence_summary(table: pd.DataFrame, dataset: str, methods: list[str]) -> tuple[bool | None, str]:
    """Whether every one of ``methods`` (default variants) is at convergence in ``dataset`` by today's
    rule (``mr2.results.rules.converged``, applied to each row's gains, whatever its ``converged``
    column says), and why: (True, "all 7 methods within 1 point at 4x the epochs (largest change
    −0.6)"), (False, "not at convergence: dro (all +0.4 [−0.1, +0.9], hard −1.5 [−2.3, −0.7], 90 %)"),
    or (None, "convergence not checked" / "... not checked for focal") when a method has no check."""
    here = table[table["dataset"].eq(dataset)] if len(table) else table
    found = {r["method"]: r for _, r in here.iterrows() if r["variant"] == "default"}
    missing = [m for m in methods if m not in found]
    if not found:
        return None, "convergence not checked"
    if missing:
        return None, "convergence not checked for " + ", ".join(missing)
    ok = {m: int(found[m]["n_paired"]) > 0 and converged(found[m]["all_gain"], found[m]["hard_gain"],
                                                         float(found[m]["tolerance"])) for m in methods}
    factor = found[methods[0]]["check_epochs"] / found[methods[0]]["epochs"]
    bad = [found[m] for m in methods if not ok[m]]
    if bad:
        level = float(bad[0].get("level", LEVEL)) if pd.notna(bad[0].get("level", LEVEL)) else LEVEL
        return False, "not at convergence: " + ", ".join(
            f"{r['method']} (" + ", ".join(_change(r, m) for m in GAINS) + ")" for r in bad) + f" ({level * 100:.0f} % intervals)"
    tol = found[methods[0]]["tolerance"]
    worst = max((float(found[m][f"{g}_gain"]) for m in methods for g in GAINS), key=abs)
    return True, (f"all {len(methods)} methods within {tol:g} point{'s' if tol != 1 else ''} at {factor:g}x the epochs "
                  f"(largest change {worst:+.1f})")
