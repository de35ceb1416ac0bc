"""Proposition 1 on the pipeline's trained models, from the tidy tables alone.

Reads ``results/tables/runs.csv`` (a row per run: ``metrics.json`` of ``mr2.evaluate``) and
``results/tables/per_class.csv`` (a row per run and class) and evaluates, per run (dataset,
method, variant, seed), each term of the bound with ``theory.bound.bound_from_summary``:

  empirical term   (1/ln 2)·R̂^{γ,ce}, R̂ = ``train_margin_ce`` (training set, trained γ)
  complexity term  (4√2·Λ·K/√N)·sqrt(Σ_k a_k/γ_k²), a_k = per_class ``a`` (training features of
                   the final model, L2, exact 1/n statistics), γ_k = per_class ``gamma``,
                   Λ = ``head_max_row_norm`` (or ``head_frobenius_norm``) of the head's
                   affine map [W b], N = ``n_train``; with a bias (``head_bias``) a_k + 1
  confidence term  c·sqrt(ln(1/δ)/N)
and compares the bound with the test error 1 − ``top1``. The assumptions are those of
``theory.bound`` (Λ from the trained head, γ treated as fixed, c = 1, δ = 0.05 by default).

It also checks Corollary 1 on the statistics of real trained models: at the run's configured mean
margin c̄ (its resolved config's ``method.options.c_bar``; 1 without one), the complexity term with MR²'s γ (Corollary 1 on the bound's a_k) against
the one with uniform γ = c̄ (``complexity_mr2``, ``complexity_uniform``, their ratio), and the
ratio for the γ the run was actually trained with (``complexity_ratio_trained``).

Its numbers in words are ``theory.answers``'s, its figures ``theory.plots``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from mr2.common.io import save_text
from mr2.common.runs import DEFAULT_VARIANT, RUN_KEYS
from mr2.results.figures.sweeps import sweep_members
from mr2.results.groups import class_names

from .bound import NORMS, augmented_variability, bound_from_summary, complexity_term, trained_margins

#: Λ column of runs.csv for each ``norm`` of ``theory.bound.weight_norm``.
LAMBDA_COLUMNS = {"max_row": "head_max_row_norm", "frobenius": "head_frobenius_norm"}
RUN_COLUMNS = ["train_margin_ce", "train_error", "n_train", "num_classes", "top1", "head_bias"]
CLASS_COLUMNS = ["class", "a", "gamma"]
TERMS = ["empirical_term", "complexity_term", "confidence_term"]
TERM_TITLES = {"empirical_term": r"empirical $(1/\ln 2)\,\hat{R}$", "complexity_term": "complexity",
               "confidence_term": "confidence", "bound": "bound", "test_error": "test error"}
#: the table's columns, in order.
COLUMNS = RUN_KEYS + [
    "num_classes", "num_train", "c_bar", "head_bias", "norm", "head_norm", "c", "delta",
    "train_error", "margin_risk", "empirical_term", "margin_sum", "complexity_term", "confidence_term",
    "bound", "test_error", "holds", "tightness",
    "complexity_mr2", "complexity_uniform", "complexity_ratio", "complexity_ratio_trained",
]


# ----------------------------------------------------------------------------- reading
def _need(frame: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    missing = [c for c in columns if c not in frame]
    if missing:
        raise ValueError(f"{where}: missing column(s) {missing}; re-run 'python -m mr2 evaluate' and "
                         "'python -m mr2 aggregate' with the current code")


def read_tables(tables_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``runs.csv`` and ``per_class.csv`` of the aggregate step (errors name a missing file)."""
    out = []
    for name in ("runs", "per_class"):
        path = Path(tables_dir) / f"{name}.csv"
        if not path.is_file():
            raise FileNotFoundError(f"missing table {path}; run the pipeline's aggregate step first")
        out.append(pd.read_csv(path))
    return out[0], out[1]


# ----------------------------------------------------------------------------- one run
#: the runs-table column of the configured mean margin c̄ (the run's resolved config)
C_BAR_COLUMN = "config.method.options.c_bar"


def configured_c_bar(run: pd.Series) -> float:
    """The run's mean margin c̄ as its resolved config sets it (``method.options.c_bar``); 1 for a method
    without that option (cross-entropy and the baselines train with γ ≡ 1, the release's margins have
    mean 1)."""
    value = run.get(C_BAR_COLUMN)
    return 1.0 if value is None or pd.isna(value) else float(value)


def run_bound(run: pd.Series, classes: pd.DataFrame, norm: str = "max_row", c: float = 1.0,
              delta: float = 0.05) -> dict:
    """The table row of one run: its ``runs.csv`` row and its ``per_class.csv`` rows (see module docstring)."""
    if norm not in LAMBDA_COLUMNS:
        raise ValueError(f"run_bound: unknown norm {norm!r}; choose one of {NORMS}")
    keys = {k: run[k] for k in RUN_KEYS}
    classes = classes.sort_values("class")
    k = int(run["num_classes"])
    if len(classes) != k or list(classes["class"]) != list(range(k)):
        raise ValueError(f"run {keys}: per_class.csv has classes {list(classes['class'])}, expected 0..{k - 1}")
    a = classes["a"].to_numpy(np.float64)
    gamma = classes["gamma"].to_numpy(np.float64)
    bias, head_norm, n = bool(run["head_bias"]), float(run[LAMBDA_COLUMNS[norm]]), int(run["n_train"])
    report = bound_from_summary(float(run["train_margin_ce"]), a, gamma, head_norm, n, 1.0 - float(run["top1"]),
                                bias=bias, norm=norm, c=c, delta=delta)
    a_bound = augmented_variability(a) if bias else a
    c_bar = configured_c_bar(run)
    mr2 = complexity_term(a_bound, trained_margins("mr2", a_bound, c_bar), head_norm, n)
    uniform = complexity_term(a_bound, trained_margins("uniform", a_bound, c_bar), head_norm, n)
    row = {**keys, **report.as_dict(), "c_bar": c_bar, "head_bias": bias, "train_error": float(run["train_error"]),
           "margin_risk": float(run["train_margin_ce"]), "complexity_mr2": mr2, "complexity_uniform": uniform,
           "complexity_ratio": mr2 / uniform if uniform > 0 else 1.0,
           "complexity_ratio_trained": report.complexity_term / uniform if uniform > 0 else 1.0}
    return {col: row[col] for col in COLUMNS}


def bound_table(runs: pd.DataFrame, per_class: pd.DataFrame, norm: str = "max_row", c: float = 1.0,
                delta: float = 0.05) -> pd.DataFrame:
    """A row per run (in the order of ``runs``) with every column of ``COLUMNS``."""
    if norm not in LAMBDA_COLUMNS:
        raise ValueError(f"bound_table: unknown norm {norm!r}; choose one of {NORMS}")
    _need(runs, RUN_KEYS + RUN_COLUMNS + [LAMBDA_COLUMNS[norm]], "runs.csv")
    _need(per_class, RUN_KEYS + CLASS_COLUMNS, "per_class.csv")
    by_run = {key: frame for key, frame in per_class.groupby(RUN_KEYS, sort=False)}
    rows = []
    for _, run in runs.iterrows():
        key = tuple(run[k] for k in RUN_KEYS)
        if key not in by_run:
            raise ValueError(f"per_class.csv has no rows for the run {dict(zip(RUN_KEYS, key))}")
        rows.append(run_bound(run, by_run[key], norm, c, delta))
    return pd.DataFrame(rows, columns=COLUMNS)


def read_bound_table(path: str | Path) -> pd.DataFrame:
    """The table written by ``python -m theory bound`` (``results/theory/bound.csv``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"missing bound table {path}; run the pipeline's theory_bound step first")
    return pd.read_csv(path)


def complexity_curve(a, head_norm: float, num_train: int, c_bars: Sequence[float], bias: bool = False) -> pd.DataFrame:
    """The complexity term against the mean margin c̄, with MR²'s γ and with uniform γ, for fixed a_k
    (one trained model's): columns c_bar, complexity_mr2, complexity_uniform. Both fall as 1/c̄
    (Σ a_k/γ_k² scales as 1/c̄² at a fixed shape of γ); the empirical term, which grows with c̄,
    needs the model's logits and is not in the tidy tables."""
    a_bound = augmented_variability(a) if bias else np.asarray(a, dtype=np.float64)
    rows = [{"c_bar": float(cb),
             "complexity_mr2": complexity_term(a_bound, trained_margins("mr2", a_bound, cb), head_norm, num_train),
             "complexity_uniform": complexity_term(a_bound, trained_margins("uniform", a_bound, cb), head_norm, num_train)}
            for cb in c_bars]
    return pd.DataFrame(rows)


def run_curve(row: pd.Series, per_class: pd.DataFrame, c_bars: Sequence[float]) -> pd.DataFrame:
    """``complexity_curve`` for one run: ``row`` is its row of the bound table (Λ, N, bias), its a_k
    come from ``per_class`` (the aggregate table). Adds the run's keys as columns."""
    keys = {k: row[k] for k in RUN_KEYS}
    mine = per_class
    for k, v in keys.items():
        mine = mine[mine[k] == v]
    if mine.empty:
        raise ValueError(f"per_class.csv has no rows for the run {keys}")
    curve = complexity_curve(mine.sort_values("class")["a"].to_numpy(np.float64), float(row["head_norm"]),
                             int(row["num_train"]), c_bars, bias=bool(row["head_bias"]))
    return curve.assign(**keys)


# ----------------------------------------------------------------------------- summaries
def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds per dataset, method and variant of each term, the bound, the test error and
    the complexity ratio; ``holds`` counts the runs whose bound is at least their test error."""
    values = ["c_bar", *TERMS, "bound", "test_error", "tightness", "complexity_ratio", "complexity_ratio_trained"]
    grouped = table.groupby(["dataset", "method", "variant"], sort=False)
    out = grouped[values].mean()
    out["holds"] = grouped["holds"].sum().astype(int)
    out["runs"] = grouped.size()
    return out.reset_index()


def terms_by_c_bar(table: pd.DataFrame, method: str = "mr2", runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The runs of ``method`` in long form: dataset, seed, variant, c_bar, term, value (each term, the
    bound and the test error), sorted by c̄. ``c_bar`` is the configured c̄ of each run (its resolved
    config), so the seeds of one variant share it. With ``runs`` (the runs table) only the members of
    the c̄ sweep are kept (``mr2.results.figures.sweep_members``: the default variant and the variants
    that change c̄), so variants of another swept option (λ) at the same c̄ are not mixed in."""
    own = table[table["method"] == method]
    if runs is not None:
        members = pd.MultiIndex.from_frame(sweep_members(runs, method, "c_bar")[RUN_KEYS])
        own = own[pd.MultiIndex.from_frame(own[RUN_KEYS]).isin(members) | (own["variant"] == DEFAULT_VARIANT)]
    long = own.melt(id_vars=["dataset", "seed", "variant", "c_bar"], value_vars=[*TERMS, "bound", "test_error"],
                    var_name="term", value_name="value")
    return long.sort_values(["dataset", "c_bar", "term", "seed"]).reset_index(drop=True)


def c_bar_view(table: pd.DataFrame, method: str = "mr2", runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """``terms_by_c_bar`` as a table: a row per dataset and configured c̄, a column per term (mean over
    the seeds of the variant with that c̄), and the number of runs."""
    long = terms_by_c_bar(table, method, runs)
    view = long.pivot_table(index=["dataset", "c_bar"], columns="term", values="value", aggfunc="mean")
    runs_per_c = long.drop_duplicates(["dataset", "c_bar", "variant", "seed"]).groupby(["dataset", "c_bar"]).size()
    return view[[*TERMS, "bound", "test_error"]].assign(runs=runs_per_c).reset_index()


def margin_sum_shares(table: pd.DataFrame, per_class: pd.DataFrame) -> pd.DataFrame:
    """Which classes drive Σ_k a_k/γ_k² (the complexity term's sum): a row per dataset, method,
    variant and class with class_name, a_k and γ_k (means over seeds; a_k + 1 with a bias, as in the
    bound), and share = (a_k/γ_k²) / Σ_j a_j/γ_j², the class's part of each run's sum, mean over seeds
    (the shares of a run add up to 1). Methods in the tables' order, classes by share, largest first."""
    keys = table[RUN_KEYS + ["head_bias"]]
    frame = per_class[RUN_KEYS + ["class", "a", "gamma"]].merge(keys, on=RUN_KEYS)
    augmented = augmented_variability(frame["a"].to_numpy()).numpy()
    frame["a"] = np.where(frame["head_bias"].astype(bool), augmented, frame["a"])
    term = frame["a"] / frame["gamma"] ** 2
    frame["share"] = term / term.groupby([frame[k] for k in RUN_KEYS]).transform("sum")
    out = frame.groupby(["dataset", "method", "variant", "class"], sort=False)[["a", "gamma", "share"]].mean()
    out = out.reset_index().merge(class_names(per_class), on=["dataset", "class"], how="left")
    out["run_order"] = out.groupby(["dataset", "method", "variant"], sort=False).ngroup()  # the tables' order
    out = out.sort_values(["run_order", "share"], ascending=[True, False])  # several keys: a stable lexsort
    return out[["dataset", "method", "variant", "class", "class_name", "a", "gamma", "share"]].reset_index(drop=True)


def write_text(text: str, path: str | Path) -> Path:
    """Write ``text`` to ``path`` atomically (mr2.io.save_text)."""
    save_text(text, path)
    return Path(path)
