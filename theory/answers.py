"""Answers in words from ``theory.pipeline``'s bound table and ``theory.trained``'s margin terms:
how tight Proposition 1 is on the trained models (``tightness_line``, ``tightness_sentences``),
whether the trained margins follow Corollary 1 (``corollary_sentences``), what the complexity term
says without Λ (``complexity_sentences``), and the report's theory section (``bound_markdown``).
Every number comes with its 95 % t-interval over seeds or its range over runs, and every word is
``mr2.results.statistics.verdict``'s."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mr2.common.runs import DEFAULT_VARIANT, run_label
from mr2.results.html import escape_text
from mr2.results.margin_text import RATIO_WORDS, _interval as margin_interval, _word as margin_word
from mr2.results.plotting import display_name
from mr2.results.statistics import t_interval, verdict

from .pipeline import TERMS, summary, terms_by_c_bar


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
