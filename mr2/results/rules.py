"""The rulebook: every rule that gives a verdict word, in one file a statistician can check.

The verdict table, the report's findings, the README's headline and the legend under the table all
read these rules; none decides a word itself, and the legend (``legend``) is written from the
constants below, so the prose cannot drift from the code. The numbers the rules read (paired
differences, t-intervals, p-values, the minimum detectable effect, Holm's adjustment) come from
``mr2.results.statistics``.

Sign convention: every difference is MR² minus the other method, in percentage points, paired by seed
(an ablation's stored comparison, ablation − MR², is turned round by ``oriented``).

1. A comparison's word (``comparison_word``), from its paired differences over n seeds:
   - *higher* / *lower*: the 95 % t-interval excludes 0 (in a family, and Holm's adjusted p < 0.05 too);
   - *equivalent*: otherwise, when the two one-sided tests' 90 % interval lies strictly inside
     ± the effect of interest δ (both ends: ``is_equivalent``) — an effect of δ or more is excluded;
   - *underpowered*: otherwise, when the minimum detectable effect at 80 % power exceeds δ, or fewer
     than ``MIN_SEEDS`` paired seeds stand behind it;
   - *no clear difference*: otherwise.
2. A part of the claim reads its comparisons (``reading``) as claimed *up* (higher → supported,
   lower → contradicted, equivalent → equivalent, no clear difference → not shown, else
   underpowered) or *not down* (higher or equivalent → supported; also supported — non-inferiority —
   when the 90 % interval's lower end is above −δ, whatever the comparison's word; lower →
   contradicted; else not shown / underpowered). A part of several comparisons takes the first word of
   ``PRECEDENCE`` that any of them earned (supported only when all are).
3. Gates (``gate_reason``): a row earns words only with at least ``MIN_SEEDS`` paired seeds behind its
   fewest-seeded comparison (≥: exactly 10 passes), and every method at its own convergence: training
   ``factor``× longer moves neither its all-class nor its hard-class accuracy by more than the tolerance,
   in either direction (``converged``; a change exactly at the tolerance passes). A part of a row that
   fails a gate is *not judged*, with the reason.
4. Families: MR² against its ablations, against the equally tuned controls (``CONTROLS``) and against
   the baselines are each one Holm family per metric (``family_words``); ``mr2_release`` and the
   controls are no baselines. Across the whole table, every test behind a word is Holm-adjusted once
   more (``table_holm``); the adjusted word stands beside the within-family one. A supported part
   keeps its word only if every test behind it survives; an equivalent or contradicted one if one does.
5. The primary test (``primary_test``), declared in the config before the runs: on its dataset and
   group, MR² minus the better of the equally tuned controls (the one MR² beats by the least, mean over
   seeds), read *up* at the 95 % level with no correction; it is outside the table-wide family.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence

import pandas as pd
from scipy import stats

from .statistics import EFFECT_OF_INTEREST, EQUIVALENCE_LEVEL, LEVEL, POWER, holm, verdict

# ----------------------------------------------------------------------------- constants
#: the fewest paired seeds a verdict word may rest on (an sd from 3 seeds can be half or twice the true one)
MIN_SEEDS = 10
ALPHA = round(1 - LEVEL, 12)  # 0.05, not 1 − 0.95 = 0.050000000000000044 (p = 0.05 must not pass)
#: a comparison's words
HIGHER, LOWER, NO_CLEAR = "higher", "lower", "no clear difference"
EQUIVALENT, UNDERPOWERED = "equivalent", "underpowered"
#: a part's words
SUPPORTED, CONTRADICTED, NOT_SHOWN, EXCLUDED = "supported", "contradicted", "not shown", EQUIVALENT
NOT_RUN, NOT_COMPUTED, NOT_JUDGED = "not run", "not computed", "not judged"
#: a part of several comparisons takes the first of these any of them earned
PRECEDENCE = (CONTRADICTED, EXCLUDED, NOT_SHOWN, UNDERPOWERED, SUPPORTED)
#: words that need every test behind them (a supported part); the others need one
NEEDS_ALL = (SUPPORTED,)
#: how a comparison's word reads for a part claimed "up" or "not down" (anything else: underpowered)
READINGS = {
    "up": {HIGHER: SUPPORTED, LOWER: CONTRADICTED, EQUIVALENT: EXCLUDED, NO_CLEAR: NOT_SHOWN},
    "not down": {HIGHER: SUPPORTED, EQUIVALENT: SUPPORTED, LOWER: CONTRADICTED, NO_CLEAR: NOT_SHOWN},
}
#: the methods of each kind of comparison with MR² (every other method but the reference is a baseline)
MR2 = "mr2"
ABLATIONS = ("mr2_uniform", "mr2_no_rep")
CONTROLS = ("ce_temperature", "erm_tuned")
NOT_BASELINES = (MR2, *ABLATIONS, "mr2_release", *CONTROLS)
#: the kinds of comparison corrected together (Holm) within one dataset and metric
FAMILIES = ("ablation", "control", "baseline")
#: the parts of the claim: key -> (column header, stating its difference; the comparisons' claim)
PARTS = {
    "hard_up": "MR² − ERM (untuned), hard classes",
    "easy_not_down": "MR² − ERM (untuned), easy classes (not down)",
    "overall_up": "MR² − ERM (untuned), overall",
    "above_controls": "MR² − equally tuned controls (hard up, easy not down)",
    "ablations_below": "MR² − each ablation, hard classes",
    "above_baselines": "MR² − each baseline (hard up, easy not down)",
}


# ----------------------------------------------------------------------------- 1. a comparison's word
def is_equivalent(eq_lo: float, eq_hi: float, effect: float = EFFECT_OF_INTEREST) -> bool:
    """Two one-sided tests at ± δ: both reject exactly when the 90 % interval [eq_lo, eq_hi] lies inside
    (−δ, +δ), both ends. False without an interval."""
    return bool(math.isfinite(eq_lo) and math.isfinite(eq_hi) and -effect < eq_lo and eq_hi < effect)


def non_inferior(eq_lo: float, effect: float = EFFECT_OF_INTEREST) -> bool:
    """No loss of δ or more: the 90 % interval's lower end above −δ (one one-sided test at 5 %)."""
    return bool(math.isfinite(eq_lo) and eq_lo > -effect)


def comparison_word(diff: float, lo: float, hi: float, mde: float, effect: float = EFFECT_OF_INTEREST,
                    eq_lo: float = math.nan, eq_hi: float = math.nan, n_paired: int | None = None,
                    p_adjusted: float | None = None) -> str:
    """The word of one paired comparison (rule 1 of the module docstring): ``verdict`` of the 95 %
    interval (higher / lower / no clear difference / undetermined), higher or lower only when the
    family's Holm-adjusted ``p_adjusted`` is below 0.05 too; then equivalent, underpowered or no clear
    difference."""
    word = verdict(diff, lo, hi)
    if word in (HIGHER, LOWER) and p_adjusted is not None and not p_adjusted < ALPHA:
        word = NO_CLEAR
    if word != NO_CLEAR:
        return word
    if is_equivalent(eq_lo, eq_hi, effect):
        return EQUIVALENT
    if not (mde <= effect) or (n_paired is not None and n_paired < MIN_SEEDS):
        return UNDERPOWERED
    return word


def word_of(d, effect: float = EFFECT_OF_INTEREST, p_adjusted: float | None = None) -> str:
    """``comparison_word`` of a ``paired_difference`` result or a comparisons-table row."""
    get = d.get
    return comparison_word(d["diff"], d["diff_lo"], d["diff_hi"], get("mde", math.nan), effect,
                           get("eq_lo", math.nan), get("eq_hi", math.nan), get("n_paired"), p_adjusted)


def family_words(table: pd.DataFrame, effect: float = EFFECT_OF_INTEREST) -> pd.DataFrame:
    """A comparisons table with ``p_holm`` and ``family_size`` (Holm within each family of ``FAMILIES``:
    one dataset, kind and metric; any other comparison is a family of its own) and each ``word``."""
    table = table.copy()
    table["p_holm"], table["family_size"] = table["p_value"], 1
    for _, family in table[table["kind"].isin(FAMILIES)].groupby(["dataset", "kind", "metric"], sort=False):
        table.loc[family.index, "p_holm"] = holm(family["p_value"].to_numpy())
        table.loc[family.index, "family_size"] = len(family)
    table["word"] = [word_of(r, effect, r["p_holm"] if r["family_size"] > 1 else None) for _, r in table.iterrows()]
    return table


# ----------------------------------------------------------------------------- 2. a part's word
def reading(row, claim: str) -> str:
    """A comparison (a comparisons-table row, or its bare word) read for a part claimed "up" or
    "not down"; "not down" is also supported by non-inferiority (``non_inferior``)."""
    if isinstance(row, str):
        return READINGS[claim].get(row, UNDERPOWERED)
    word = row["word"]
    if claim == "not down" and word not in (LOWER,):
        effect = float(row.get("effect_of_interest", EFFECT_OF_INTEREST))
        if non_inferior(float(row.get("eq_lo", math.nan)), effect):
            return SUPPORTED
    return READINGS[claim].get(word, UNDERPOWERED)  # underpowered, undetermined (n < 2)


def part_word(words: Sequence[str]) -> str:
    """The word of a part made of several comparisons' readings: the first of ``PRECEDENCE`` any earned."""
    return next(w for w in PRECEDENCE if w in words or w == SUPPORTED)


def oriented(row: pd.Series) -> pd.Series:
    """A comparison as MR² minus the other method: a stored ``other − mr2`` row turned round (method and
    against swapped, the difference and both intervals negated); any other row as it is."""
    if row["method"] == MR2 or row["against"] != MR2:
        return row
    out = row.copy()
    out["method"], out["against"] = row["against"], row["method"]
    out["variant"], out["against_variant"] = row["against_variant"], row["variant"]
    out["diff"] = -row["diff"]
    for lo, hi in (("diff_lo", "diff_hi"), ("eq_lo", "eq_hi")):
        out[lo], out[hi] = -row[hi], -row[lo]
    out["word"] = {HIGHER: LOWER, LOWER: HIGHER}.get(row["word"], row["word"])
    return out


# ----------------------------------------------------------------------------- 3. gates
def converged(all_gain: float, hard_gain: float, tolerance: float) -> bool:
    """At its own convergence: factor× the epochs moves neither the all-class nor the hard-class accuracy
    by more than ``tolerance`` points, in either direction (|gain| ≤ tolerance; the edge passes)."""
    gains = (float(all_gain), float(hard_gain))
    return all(math.isfinite(g) and abs(g) <= tolerance for g in gains)


def seeds_reason(seeds: int) -> str:
    """Why a row with ``seeds`` paired seeds behind its fewest-seeded comparison earns no word, or ""."""
    return "" if seeds >= MIN_SEEDS else f"{seeds} paired seeds (a verdict needs {MIN_SEEDS})"


def gate_reason(seeds: int, convergence_ok, convergence_text) -> str:
    """Why a row earns no verdict word ("" when it does): too few seeds (``seeds_reason``), or a
    method not shown at its own convergence (not checked, or not converged by ``converged``)."""
    reasons = [seeds_reason(int(seeds))]
    if str(convergence_ok) != "True":  # True, numpy's True or the CSV's "True"; not 1, not "yes"
        text = str(convergence_text) if convergence_text is not None and str(convergence_text) not in ("", "nan") else ""
        reasons.append(text or "convergence not checked")
    return "; ".join(r for r in reasons if r)


# ----------------------------------------------------------------------------- 4. tests behind words
def _t(row) -> tuple[float, float, int]:
    """(d̄, its standard error, n) of a comparison row."""
    n = int(row["n_paired"]) if pd.notna(row.get("n_paired")) else 0
    sd = float(row.get("diff_sd", math.nan))
    return float(row["diff"]), sd / math.sqrt(n) if n >= 2 else math.nan, n


def one_sided_p(row, bound: float, side: str) -> float:
    """p of the one-sided t-test of a comparison against ``bound``: H0 d ≤ bound (side "above") or
    d ≥ bound (side "below"); NaN without a standard error, 0 or 1 at se = 0."""
    d, se, n = _t(row)
    if n < 2 or not math.isfinite(se):
        return math.nan
    if se == 0:
        return 0.0 if (d > bound if side == "above" else d < bound) else 1.0
    t = (d - bound) / se
    return float(stats.t.sf(t, n - 1) if side == "above" else stats.t.cdf(t, n - 1))


def test_p_value(row, claim: str, word: str) -> float | None:
    """The p-value of the test behind a comparison's reading ``word`` for a part claimed ``claim``: the
    two-sided t-test for higher/lower, the larger of the two one-sided tests for equivalent, the
    non-inferiority test (H0 d ≤ −δ) for a supported "not down"; None for a reading that rests on no
    test (not shown, underpowered)."""
    effect = float(row.get("effect_of_interest", EFFECT_OF_INTEREST))
    if claim == "not down" and word == SUPPORTED:
        return one_sided_p(row, -effect, "above")
    if word == EXCLUDED:
        return max(one_sided_p(row, -effect, "above"), one_sided_p(row, effect, "below"))
    if word in (SUPPORTED, CONTRADICTED):
        return float(row["p_value"])
    return None


def table_holm(tests: pd.DataFrame) -> pd.DataFrame:
    """Holm's correction across every test behind a word of the table: ``tests`` has a row per test
    (``key`` the row and part it belongs to, ``word`` the part's word, ``p``); returns a row per key
    with ``p_table`` (the largest adjusted p behind a word that needs every test, else the smallest)
    and ``table_word`` (the word if that p is below 0.05, else not shown)."""
    if tests.empty:
        return pd.DataFrame(columns=["key", "p_table", "table_word"])
    tests = tests.assign(p_adj=holm(tests["p"].to_numpy()))
    rows = []
    for key, frame in tests.groupby("key", sort=False):
        word = frame["word"].iloc[0]
        p = frame["p_adj"].max() if word in NEEDS_ALL else frame["p_adj"].min()
        rows.append({"key": key, "p_table": p, "table_word": word if p < ALPHA else NOT_SHOWN})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- 5. the primary test
def primary_control(rows: Iterable[pd.Series]) -> pd.Series | None:
    """Of the comparisons MR² − control on the primary group (oriented), the one against the better
    control: the smallest mean difference (ties: the first). None without any."""
    rows = list(rows)
    return min(rows, key=lambda r: float(r["diff"])) if rows else None


def primary_word(row: pd.Series) -> str:
    """The primary test's word: MR² − the better control read "up", at the 95 % level, uncorrected."""
    return reading(word_of(row, float(row.get("effect_of_interest", EFFECT_OF_INTEREST))), "up")


# ----------------------------------------------------------------------------- the legend
def shown_word(word: str, effect: float = EFFECT_OF_INTEREST) -> str:
    """A part's word as the tables show it: "equivalent (no effect ≥ 1 point)" for an excluded effect."""
    if word == EXCLUDED:
        return f"equivalent (no effect ≥ {effect:g} point{'' if effect == 1 else 's'})"
    return word


def legend(effect: float = EFFECT_OF_INTEREST, width: int = 100) -> str:
    """The legend under every verdict table, written from this module's constants."""
    text = (
        f"Each cell: the word, then the paired Δ = MR² − the other method (points, by seed) [{LEVEL * 100:.0f} % "
        f"t-interval]; rules in `mr2/results/rules.py`. {HIGHER}/{LOWER}: the {LEVEL * 100:.0f} % interval excludes 0 "
        f"(within a family — MR² against the ablations, the controls, the baselines — Holm's adjusted p below "
        f"{ALPHA:g} too). **{shown_word(EXCLUDED, effect)}**: the two one-sided tests' {EQUIVALENCE_LEVEL * 100:.0f} % "
        f"interval lies inside ± {effect:g} (config key `effect_of_interest`), both ends. {UNDERPOWERED}: "
        f"neither, and the minimum detectable effect at {POWER * 100:.0f} % power exceeds {effect:g} or fewer than "
        f"{MIN_SEEDS} seeds stand behind it. Easy classes \"not down\" is {SUPPORTED} also when the "
        f"{EQUIVALENCE_LEVEL * 100:.0f} % interval's lower end is above −{effect:g}. A part of several comparisons reads "
        f"the first of {', '.join(PRECEDENCE[:-1])} that any earned, {SUPPORTED} only when all are. A row is "
        f"judged only with ≥ {MIN_SEEDS} paired seeds behind every comparison and every method within its "
        f"convergence tolerance in both directions at factor× its epochs (config key `convergence`); otherwise **{NOT_JUDGED}: <reason>**. "
        "\"Table-wide\": the word after Holm's correction over every test behind the table's words (the "
        "primary test apart).")
    return textwrap.fill(text, width)
