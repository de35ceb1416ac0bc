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
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from mr2.common.io import save_text
from mr2.common.runs import DEFAULT_VARIANT, RUN_KEYS, run_label
from mr2.results.figures.sweeps import sweep_members
from mr2.results.groups import class_names
from mr2.results.html import escape_text
from mr2.results.margin_text import RATIO_WORDS, _interval as margin_interval, _word as margin_word
from mr2.results.plotting import class_axis, class_axis_width, display_name, method_colour, symbol, value_ticks
from mr2.results.statistics import t_interval, verdict

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


#: what ``mr2.results.statistics.verdict`` of a method's mean bound minus 1 says (any other word:
#: "vacuous or not: <word>")
VACUOUS_WORDS = {"higher": "vacuous", "lower": "not vacuous"}


def _interval(values) -> str:
    """``3.5 [2.1, 4.9]``: the mean of ``values`` and its 95 % ``t_interval`` (``_number``-ed), or
    ``3.5 (1 run, no interval)``."""
    iv = t_interval(values)
    if math.isnan(iv["lo"]):
        return f"{_number(iv['mean'])} ({iv['n']} run{'s' if iv['n'] != 1 else ''}, no interval)"
    return f"{_number(iv['mean'])} [{_number(iv['lo'])}, {_number(iv['hi'])}]"


def vacuous_word(bounds) -> str:
    """Whether a method's bound is vacuous (above 1, more than any error rate) from its runs' bounds:
    "vacuous" when the 95 % ``t_interval`` of their mean lies above 1, "not vacuous" below 1, "vacuous
    or not: not shown" when it contains 1 (``verdict`` against 1; "vacuous or not: undetermined (...)"
    without an interval)."""
    iv = t_interval(bounds)
    word = verdict(iv["mean"] - 1.0, iv["lo"] - 1.0, iv["hi"] - 1.0)
    if word in VACUOUS_WORDS:
        return VACUOUS_WORDS[word]
    return "vacuous or not: " + ("not shown" if word == "no clear difference" else word)


def tightness_line(table: pd.DataFrame) -> str:
    """One line that answers "how tight is Proposition 1 on the trained models?" (the README's theory
    line and the first sentence of ``tightness_sentences``): per dataset and method (default
    variants, in the table's order), bound ÷ test error, mean over seeds with its 95 % t-interval,
    and whether the bound is vacuous (``vacuous_word``, with how many runs lie above 1)."""
    default = table[table["variant"] == DEFAULT_VARIANT]
    if default.empty:
        return "Proposition 1: no default-variant run in the bound table, so no tightness to state."
    datasets = []
    for dataset, part in default.groupby("dataset", sort=False):
        methods = []
        for method, runs in part.groupby("method", sort=False):
            above = int((runs["bound"] > 1).sum())
            methods.append(f"{display_name(method)} {_interval(runs['tightness'])}, {vacuous_word(runs['bound'])} "
                           f"(bound {_interval(runs['bound'])}; above 1 on {above} of {len(runs)} runs)")
        datasets.append(f"{dataset}: " + "; ".join(methods))
    return ("Proposition 1 on the trained models, bound ÷ test error (mean over seeds [95 % t-interval]): "
            + ". ".join(datasets) + ".")


def tightness_sentences(table: pd.DataFrame, method: str = "mr2", runs: pd.DataFrame | None = None) -> list[str]:
    """The notebook's answer to "how tight is Proposition 1 on trained models?", computed from the
    bound table: ``tightness_line`` (per method, with intervals), then on how many runs it holds and
    is vacuous (above 1), the tightness bound / test error (median, range over runs), the complexity
    term's share of the bound (median, range), the bound across ``method``'s c̄ sweep
    (``terms_by_c_bar``, each c̄ with its interval over seeds; says so when the results hold none) and
    Corollary 1's complexity ratio (range over runs)."""
    n, holds, vacuous = len(table), int(table["holds"].sum()), int((table["bound"] > 1).sum())
    tight = table["tightness"]
    shares = 100 * table["complexity_term"] / table["bound"]
    share = float(shares.median())
    lines = [tightness_line(table),
             f"Over all {n} trained models, Proposition 1 holds on {holds} and is vacuous (above 1, more than any "
             f"error rate) on {vacuous} of {n}: the bound is {_number(float(tight.median()))} times the test error "
             f"(median over runs; {_number(float(tight.min()))} to {_number(float(tight.max()))}).",
             f"The complexity term makes up {_number(share)} % of the bound (median over runs; "
             f"{_number(float(shares.min()))} to {_number(float(shares.max()))} %): "
             + ("the looseness is the complexity term's." if share > 50 else "the empirical term dominates.")]
    long = terms_by_c_bar(table, method, runs) if (table["method"] == method).any() else pd.DataFrame()
    for dataset, part in (long.groupby("dataset", sort=False) if len(long) else []):
        c_bars = sorted(part["c_bar"].unique())
        if len(c_bars) < 2:
            lines.append(f"{dataset}: the results hold no c̄ sweep of {method} (one c̄, {c_bars[0]:g}); "
                         "the c̄ view is the analytical curve of one trained model (config/sweeps.yaml runs a sweep).")
            continue
        at = lambda c, term: _interval(part[(part["c_bar"] == c) & (part["term"] == term)]["value"])  # noqa: E731
        lines.append(f"{dataset}: across {method}'s c̄ sweep ({', '.join(f'{c:g}' for c in c_bars)}) the bound is "
                     + ", ".join(f"{at(c, 'bound')} at c̄ = {c:g}" for c in (c_bars[0], c_bars[-1]))
                     + ", the test error " + ", ".join(f"{at(c, 'test_error')} at c̄ = {c:g}"
                                                       for c in (c_bars[0], c_bars[-1]))
                     + " (means over seeds [95 % t-interval]).")
    ratio = table["complexity_ratio"]
    lines.append(f"At an equal mean margin, Corollary 1's γ gives a complexity term {ratio.min():.3f} to "
                 f"{ratio.max():.3f} times uniform γ's on the trained models' a_k (range over runs; at most 1 by the "
                 "power-mean inequality: a check of the computation, not of the paper's claim).")
    return lines


# ----------------------------------------------------------------------------- Corollary 1 without Λ
#: what ``mr2.results.statistics.verdict`` of a method's exponent e minus 1/3 says (γ_k ∝ a_k^e)
EXPONENT_WORDS = {"higher": "steeper than Corollary 1's 1/3", "lower": "flatter than Corollary 1's 1/3"}
#: what ``verdict`` of a method's complexity term over the reference's minus 1 says
COMPLEXITY_WORDS = {"higher": "larger", "lower": "smaller"}


def _seeds(part: pd.DataFrame) -> str:
    n = part["seed"].nunique()
    return f"{n} seed{'s' if n != 1 else ''}"


def _group_ratio(per_class: pd.DataFrame, groups: pd.DataFrame, column: str) -> pd.Series:
    """Per seed of one run's classes: the hard classes' mean ``column`` over the easy classes'."""
    data = per_class.merge(groups[["dataset", "class", "group"]], on=["dataset", "class"])
    means = data.groupby(["seed", "group"])[column].mean().unstack("group")
    return (means["hard"] / means["easy"]).dropna() if {"hard", "easy"} <= set(means) else pd.Series(dtype=float)


def corollary_sentences(terms: pd.DataFrame, per_class: pd.DataFrame, groups: pd.DataFrame,
                        method: str = "mr2") -> list[str]:
    """The answer to "do the trained margins follow Corollary 1, γ_k ∝ a_k^{1/3}?" from
    ``theory.trained.margin_terms`` of a run set's per-class table (default variants), per dataset:
    for each method whose margins differ between classes, the exponent e of γ_k ∝ a_k^e (mean over
    seeds [95 % t-interval], its word against 1/3: "not shown" when 1/3 lies inside) and the largest
    deviation from Corollary 1's γ on the final a_k; how far the equal margins of the other methods
    lie from it; for ``method``, γ_max/γ_min beside a_max/a_min, and the hard classes' mean γ_k and
    a_k over the easy classes' (per seed; "smaller" or "larger" only when the interval excludes 1)."""
    terms = terms[terms["variant"] == DEFAULT_VARIANT]
    if terms.empty:
        return ["No default-variant run in the per-class table: nothing to say about the margins."]
    lines = []
    for dataset, part in terms.groupby("dataset", sort=False):
        fitted, equal = [], []
        for name, runs in part.groupby("method", sort=False):
            if (runs["gamma_spread"] > 1 + 1e-9).any():
                iv = t_interval(runs["exponent"])
                word = verdict(iv["mean"] - 1 / 3, iv["lo"] - 1 / 3, iv["hi"] - 1 / 3)
                word = EXPONENT_WORDS.get(word, "1/3 inside the interval" if word == "no clear difference" else word)
                fitted.append(f"{display_name(name)} e = {margin_interval(runs['exponent'])} ({word}), every γ_k "
                              f"within {100 * runs['deviation'].max():.2f} % of Corollary 1's")
            else:
                equal.append(f"{display_name(name)} (up to {100 * runs['deviation'].max():.1f} % off)")
        lines.append(f"{dataset} ({_seeds(part)}): the final margins grow as γ_k ∝ a_k^e with "
                     + ("; ".join(fitted) or "no method whose margins differ between classes")
                     + " (e: least-squares slope of log γ_k on log a_k per run, mean over seeds [95 % t-interval]; "
                     "Corollary 1's γ_k = c̄·K·a_k^{1/3}/Σ_j a_j^{1/3} on the final model's a_k at the run's c̄)"
                     + (f"; equal margins, e = 0: {', '.join(equal)}." if equal else "."))
        own = part[part["method"] == method]
        if own.empty:
            continue
        lines.append(f"{dataset}: {display_name(method)}'s margins span γ_max/γ_min = "
                     f"{margin_interval(own['gamma_spread'])} where a_k spans a_max/a_min = "
                     f"{margin_interval(own['a_spread'])}: the cube root compresses the classes' spread.")
        mine = per_class[(per_class["dataset"] == dataset) & (per_class["method"] == method)
                         & (per_class["variant"] == DEFAULT_VARIANT)]
        gamma, a = (_group_ratio(mine, groups, column) for column in ("gamma", "a"))
        if len(gamma):
            lines.append(f"{dataset}: the hard classes' mean γ_k is {margin_interval(gamma, digits=3)} times the "
                         f"easy classes' (their a_k: {margin_interval(a, digits=3)} times; per-seed ratios): "
                         f"{margin_word(gamma, RATIO_WORDS, 'larger or not', null=1.0)}.")
    return lines


def complexity_sentences(terms: pd.DataFrame, reference: str = "erm") -> list[str]:
    """What a run set's per-class table says of Proposition 1's complexity term without Λ
    (``theory.trained.margin_terms``, default variants), per dataset: each method's term over
    ``reference``'s at equal Λ and N, sqrt(Σ a_k/γ_k² ÷ the reference's), per seed [95 % t-interval]
    with its c̄; and Corollary 1's γ against uniform γ at the same c̄ (range over runs)."""
    terms = terms[terms["variant"] == DEFAULT_VARIANT]
    lines = []
    for dataset, part in terms.groupby("dataset", sort=False):
        sums = part.pivot_table(index="seed", columns="method", values="margin_sum", sort=False)
        c_bars = part.groupby("method", sort=False)["c_bar"].mean()
        if reference in sums:
            ratios = [(name, np.sqrt(sums[name] / sums[reference]).dropna()) for name in sums if name != reference]
            said = [f"{display_name(name)} (c̄ = {c_bars[name]:.3g}) {margin_interval(r, digits=2)}, "
                    f"{margin_word(r, COMPLEXITY_WORDS, 'larger or smaller', null=1.0)}" for name, r in ratios]
            lines.append(f"{dataset} ({_seeds(part)}): at equal Λ and N, the complexity term over "
                         f"{display_name(reference)}'s (c̄ = {c_bars[reference]:.3g}) is " + "; ".join(said)
                         + " (sqrt of the ratio of Σ_k a_k/γ_k², per seed [95 % t-interval]).")
        ratio = part["complexity_ratio"]
        lines.append(f"{dataset}: at an equal mean margin, Corollary 1's γ gives a complexity term {ratio.min():.3f} "
                     f"to {ratio.max():.3f} times uniform γ's on the final models' a_k (range over runs; at most 1 by "
                     "the power-mean inequality).")
    return lines


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


def _number(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.2e}"


def bound_markdown(table: pd.DataFrame) -> str:
    """The report's theory section: the assumptions, a table of mean terms per method, and sentences
    computed from the numbers (how often the bound holds, how loose it is, Corollary 1's ratio)."""
    s = summary(table)
    norm, c, delta = table["norm"].iloc[0], table["c"].iloc[0], table["delta"].iloc[0]
    lines = [
        "## Theory: Proposition 1 on the trained models",
        "",
        "Each term of R(f) ≤ (1/ln 2)·R̂_γ,ce(f) + (4√2·Λ·K/√N)·√(Σ_k a_k/γ_k²) + c·√(ln(1/δ)/N) "
        "(R̂_γ,ce: the margin cross-entropy of the training set), "
        "evaluated per run from the tidy tables (`results/theory/bound.csv`, a row per run). Assumptions: "
        f"Λ = {'max_k ‖[w_k b_k]‖₂' if norm == 'max_row' else '‖[W b]‖_F'} of the trained head, "
        "a_k of its training features (+1 for the bias), N training samples, the trained γ treated as "
        f"fixed in advance, c = {c:g}, δ = {delta:g}; the test error is 1 − top-1.",
        "",
        "| Dataset | Method | c̄ | Empirical | Complexity | Confidence | Bound | Test error | Bound / test error "
        "| Holds | MR² γ / uniform γ |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in s.iterrows():
        cells = [escape_text(r["dataset"]), escape_text(run_label(r["method"], r["variant"]))] + [
            _number(r[col]) for col in ("c_bar", *TERMS, "bound", "test_error", "tightness")]
        cells += [f"{r['holds']}/{r['runs']}", f"{r['complexity_ratio']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    n, holds = len(table), int(table["holds"].sum())
    vacuous = int((table["bound"] > 1).sum())
    ratio = table["complexity_ratio"]
    lines += [
        "",
        "Mean over seeds. Holds: runs whose bound is at least their test error. MR² γ / uniform γ: the "
        "complexity term with Corollary 1's γ over the one with uniform γ at the same mean margin c̄, on "
        "each run's a_k.",
        "",
        f"- The bound holds on {holds} of {n} runs and is vacuous (above 1, so it holds trivially) on {vacuous} "
        f"of {n}; the "
        f"complexity term makes up {_number(100 * float((table['complexity_term'] / table['bound']).median()))} % "
        "of the bound (median over runs).",
        f"- At an equal mean margin, Corollary 1's γ gives a complexity term "
        f"{'never larger than' if bool((ratio <= 1 + 1e-9).all()) else '**larger** on some runs than'} "
        f"uniform γ on the trained models' a_k (ratio {ratio.min():.3f} to {ratio.max():.3f}); by the power-mean "
        "inequality it cannot be larger, so this checks the computation, not the paper's claim.",
    ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- figures
#: neutral colours and markers of the bound's terms (no method's or group's colour), the test error in black
TERM_STYLES = {"empirical_term": ("0.55", "v"), "complexity_term": ("0.35", "s"), "confidence_term": ("0.7", "^"),
               "bound": ("0.15", "D"), "test_error": ("black", "*")}


def plot_bound_terms(table: pd.DataFrame):
    """Points per method (mean over seeds, error bar the sd) of each term, the bound and the test
    error (a black star) on a log axis, a panel per dataset; a dashed line at 1, above which a bound
    on an error rate is vacuous. Terms in neutral greys with their own markers. Returns the figure."""
    import matplotlib.pyplot as plt

    from mr2.results.plotting import display_name

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
            label=rf"uniform $\gamma_k = \bar{{c}}$")
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


def write_text(text: str, path: str | Path) -> Path:
    """Write ``text`` to ``path`` atomically (mr2.io.save_text)."""
    save_text(text, path)
    return Path(path)
