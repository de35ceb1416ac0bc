"""One verdict table across settings: does each part of the paper's claim hold, setting by setting?

A *setting* is a dataset key of one run of the pipeline (its data, training-set size, epochs and
model: ``settings_table``). The paper's claim has five parts, each judged from the paired (by seed)
comparisons of ``mr2.results.tables.comparisons_table`` of that setting, whose ``word``
(``mr2.results.statistics.comparison_word``: higher / lower / no clear difference / underpowered /
undetermined) already holds the 95 % t-interval and the power of the comparison (a "no clear
difference" whose minimum detectable effect at 80 % power exceeds the effect of interest reads
"underpowered"). The decision rules, with Δ = method − against:

  hard up         Δ(mr2 − reference) on the hard classes: higher → supported; lower → contradicted;
                  no clear difference → not shown; underpowered or undetermined (n < 2) → underpowered
  easy not down   Δ(mr2 − reference) on the easy classes: higher or no clear difference → supported
                  (no loss, and a loss of the effect of interest would have been detected at 80 %
                  power); lower → contradicted; underpowered / undetermined → underpowered
  overall up      as "hard up" on overall accuracy (top-1; the mean per-class accuracy without top-1)
  ablations below for each ablation (mr2_uniform, mr2_no_rep) Δ(ablation − mr2) on the hard classes:
                  lower → supported; higher → contradicted; no clear difference → not shown;
                  underpowered / undetermined → underpowered
  above baselines for each baseline b, Δ(mr2 − b) judged "up" on the hard classes and "not down" on
                  the easy classes as above
A part made of several comparisons takes the first that applies of: contradicted if any is; not
shown if any is; underpowered if any is; supported (all are). A part whose methods a setting did not
run reads "not run"; one whose methods ran but whose snapshot predates the pairwise comparisons
(no ``comparisons.csv``) reads "not computed". Where several snapshots hold one run set, a part run
only by a snapshot whose setting earns no word (e.g. a baseline not at its convergence there) reads
"no word" in the row that earns words through another snapshot, with its Δs and the reason.

Snapshots (``docs/results/<name>/``, kept by ``mr2 readme``) hold results.csv and, from this version
on, comparisons.csv and settings.csv; an older snapshot's comparisons to the reference are read back
from its results.csv (the paired sd from the interval: sd = (hi − lo)/2 · √n / t_{0.975, n−1}).

  verdict_cells     the five parts of one setting: word and the Δ [interval] behind it
  every_baseline    every baseline's Δs without words (what a setting without a verdict shows)
  verdict_table     a row per setting of a comparisons table (and its settings)
  snapshot_verdicts a row per setting of every snapshot under a folder
  verdict_markdown  the table as Markdown (the README's and the report's opening table)
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pandas as pd
from scipy import stats

from ..common.io import block_lines, fill_block_lines, save_text
from ..common.runs import DEFAULT_VARIANT
from .convergence import convergence_summary
from .regimes import block_epochs, regime_label
from .longtail import IMBALANCE_COLUMN
from .statistics import (EFFECT_OF_INTEREST, EQUIVALENT, LEVEL, MIN_SEEDS, minimum_detectable_effect,
                         paired_p_value)
from .tables import ABLATIONS, COMPARISON_COLUMNS, METRICS, MR2, MR2_FAMILY, with_words

SUPPORTED, NOT_SHOWN, CONTRADICTED, UNDERPOWERED = "supported", "not shown", "contradicted", "underpowered"
EXCLUDED = "equivalent"  # the part's effect is ruled out: no effect as large as the effect of interest
NOT_RUN, NOT_COMPUTED = "not run", "not computed"
NO_WORD = "no word"  # a part of a row that earns words, run only where its setting earns none (e.g. a method under-trained)
UNTUNED, TUNING_UNKNOWN = "none", "not recorded"  # a setting's tuned methods: none, or a snapshot that predates the tag
PRECEDENCE = (CONTRADICTED, EXCLUDED, NOT_SHOWN, UNDERPOWERED, SUPPORTED)
#: how a comparison's word reads for a part claimed "up", "down" or "not down"
READINGS = {
    "up": {"higher": SUPPORTED, "lower": CONTRADICTED, EQUIVALENT: EXCLUDED, "no clear difference": NOT_SHOWN},
    "down": {"lower": SUPPORTED, "higher": CONTRADICTED, EQUIVALENT: EXCLUDED, "no clear difference": NOT_SHOWN},
    "not down": {"higher": SUPPORTED, EQUIVALENT: SUPPORTED, "lower": CONTRADICTED, "no clear difference": NOT_SHOWN},
}
#: how a part's word is shown (the effect of interest filled in)
SHOWN = {EXCLUDED: "equivalent (no effect ≥ {effect:g} point{s})"}
PARTS = {"hard_up": "Hard classes up", "easy_not_down": "Easy classes not down", "overall_up": "Overall up",
         "ablations_below": "Each ablation below full MR²",
         "above_baselines": "MR² above the baselines (hard up, easy not down)"}
SETTING_COLUMNS = {"data": "config.data.name", "model": "config.model.name", "train_cap": "config.data.train_cap",
                   "epochs": "config.train.epochs"}
BEGIN, END = "<!-- verdicts -->", "<!-- /verdicts -->"
TUNED, CHECK = "config.tags.tuned", "config.tags.convergence_of"  # run-config tags of tuned runs and checks


def regime_text(runs: pd.DataFrame, cap, epochs) -> str:
    """A setting's regime ("1000/class × 20 ep", ``regime_label``) at the epochs most of its methods
    train (``block_epochs``), then each method that trains its own (config key ``method_epochs``):
    "1000/class × 20 ep (dro 40 ep)". ``runs``: the setting's default-variant runs; ``epochs``: used when they say none."""
    column = SETTING_COLUMNS["epochs"]
    if "method" not in runs or column not in runs or runs.empty:
        return regime_label(cap, epochs)
    own = runs.groupby("method", sort=False)[column].first().astype(int)
    common = block_epochs(own)
    others = ", ".join(f"{m} {e} ep" for m, e in own.items() if e != common)
    return regime_label(cap, common) + (f" ({others})" if others else "")


def settings_table(runs: pd.DataFrame | None, convergence: pd.DataFrame | None = None) -> pd.DataFrame:
    """A row per dataset key of the runs table: dataset, data (data.name, with "long-tailed, ratio r"
    when ``data.imbalance`` is set), model (model.name), regime ("600/class × 6 ep",
    ``mr2.results.regimes.regime_label``: the cap before any imbalance), from the resolved configs;
    a column the runs table lacks is left empty. Then: seeds (the fewest seeds of a method's default
    variant), tuned (the methods whose options the tuning stage chose, or "none"), check_of (the
    setting a convergence check is of, else empty), converged and convergence (each method at its own
    convergence: ``mr2.results.convergence.convergence_summary`` of ``convergence``)."""
    if runs is None or runs.empty:
        return pd.DataFrame(columns=["dataset", "data", "model", "regime", "seeds", "tuned", "check_of", "converged",
                                     "convergence"])
    first = runs.drop_duplicates("dataset").set_index("dataset")
    out = pd.DataFrame({"dataset": first.index})
    for key in ("data", "model"):
        out[key] = first[SETTING_COLUMNS[key]].to_numpy() if SETTING_COLUMNS[key] in first else ""
    if IMBALANCE_COLUMN in first:
        ratio = pd.to_numeric(first[IMBALANCE_COLUMN], errors="coerce").to_numpy()
        out["data"] = [d if math.isnan(r) else f"{d} (long-tailed, ratio {r:g})" for d, r in zip(out["data"], ratio)]
    default = runs[runs["variant"].eq(DEFAULT_VARIANT)] if "variant" in runs else runs
    if SETTING_COLUMNS["epochs"] in first:
        caps = first[SETTING_COLUMNS["train_cap"]] if SETTING_COLUMNS["train_cap"] in first else [None] * len(first)
        out["regime"] = [regime_text(default[default["dataset"].eq(d)], c, e)
                         for d, c, e in zip(out["dataset"], caps, first[SETTING_COLUMNS["epochs"]])]
    else:
        out["regime"] = ""
    if {"method", "seed"} <= set(default):
        seeds = default.groupby(["dataset", "method"], sort=False)["seed"].nunique().groupby(level=0).min()
    else:
        seeds, default = pd.Series(dtype=int), default.assign(method=default.get("method", ""))
    out["seeds"] = out["dataset"].map(seeds).fillna(0).astype(int)
    tuned = default[default[TUNED].fillna(False).astype(bool)] if TUNED in default else default.iloc[:0]
    out["tuned"] = [", ".join(dict.fromkeys(tuned.loc[tuned["dataset"].eq(d), "method"])) or UNTUNED
                    for d in out["dataset"]]
    out["check_of"] = first[CHECK].fillna("").to_numpy() if CHECK in first else ""
    table = convergence if convergence is not None else pd.DataFrame(columns=["dataset"])
    status = [convergence_summary(table, d, list(dict.fromkeys(default.loc[default["dataset"].eq(d), "method"])))
              for d in out["dataset"]]
    out["converged"] = [s[0] for s in status]
    out["convergence"] = [s[1] for s in status]
    return out


def part_word(words: list[str]) -> str:
    """The word of a part made of several comparisons' readings (``PRECEDENCE``)."""
    return next(w for w in PRECEDENCE if w in words or w == SUPPORTED)


def reading(row, claim: str) -> str:
    """A comparison (a comparisons-table row, or its bare word) read for a part claimed ``claim`` ("up" /
    "down" / "not down"). "Not down" is also supported by non-inferiority: the lower end of the two
    one-sided tests' interval above −(effect of interest), whatever the upper end."""
    word = row if isinstance(row, str) else row["word"]
    if claim == "not down" and not isinstance(row, str) and word in ("no clear difference", UNDERPOWERED):
        eq_lo, effect = float(row.get("eq_lo", math.nan)), float(row.get("effect_of_interest", EFFECT_OF_INTEREST))
        if math.isfinite(eq_lo) and eq_lo > -effect:
            return SUPPORTED
    return READINGS[claim].get(word, UNDERPOWERED)  # underpowered, undetermined (n < 2)


def _delta(row: pd.Series) -> str:
    if math.isnan(row["diff_lo"]):
        return f"{row['diff']:+.1f} (no CI)"
    return f"{row['diff']:+.1f} [{row['diff_lo']:+.1f}, {row['diff_hi']:+.1f}]"


def _pairs(comparisons: pd.DataFrame) -> dict[tuple[str, str, str], pd.Series]:
    """The comparisons of default variants, by (method, against, metric)."""
    c = comparisons[comparisons["variant"].eq(DEFAULT_VARIANT) & comparisons["against_variant"].eq(DEFAULT_VARIANT)]
    return {(r.method, r.against, r.metric): r for _, r in c.iterrows()}


def _baselines(methods: set[str], reference: str) -> list[str]:
    return [b for b in sorted(methods) if b != reference and b not in MR2_FAMILY]


def _baseline_delta(at: dict, baseline: str) -> str:
    return f"vs {baseline}: hard {_delta(at[(MR2, baseline, 'hard')])}, easy {_delta(at[(MR2, baseline, 'easy')])}"


def every_baseline(comparisons: pd.DataFrame, methods: set[str], reference: str = "erm") -> str:
    """Every baseline's paired Δs (MR² − baseline on the hard and the easy classes) and the Holm family,
    without words: what a setting without a verdict shows for "MR² above the baselines" (its word's
    cell, ``verdict_cells``, names only the deciding baselines and counts the words). Only for a
    setting whose part was run and computed (``verdict_cells`` says which)."""
    at, baselines = _pairs(comparisons), _baselines(methods, reference)
    return "; ".join(_baseline_delta(at, b) for b in baselines) + _holm([at[(MR2, b, "hard")] for b in baselines])


def verdict_cells(comparisons: pd.DataFrame, methods: set[str], reference: str = "erm") -> dict[str, tuple[str, str]]:
    """The five parts (``PARTS``) of one setting: part -> (word, the Δ [interval] behind it), from
    its ``comparisons`` (one dataset) and the default-variant ``methods`` it ran. A part whose
    comparisons are missing (an older snapshot holds only those to the reference) is "not computed"."""
    at = _pairs(comparisons)
    overall = "top1" if (MR2, reference, "top1") in at else "all"
    cells: dict[str, tuple[str, str]] = {}

    def single(part: str, metric: str, claim: str) -> None:
        row = at.get((MR2, reference, metric))
        if MR2 not in methods or reference not in methods:
            cells[part] = (NOT_RUN, "")
        elif row is None:
            cells[part] = (NOT_COMPUTED, "")
        else:
            cells[part] = (reading(row, claim), _delta(row))

    single("hard_up", "hard", "up")
    single("easy_not_down", "easy", "not down")
    single("overall_up", overall, "up")

    ablations = [a for a in ABLATIONS if a in methods]
    if MR2 not in methods or not ablations:
        cells["ablations_below"] = (NOT_RUN, "")
    elif any((a, MR2, "hard") not in at for a in ablations):
        cells["ablations_below"] = (NOT_COMPUTED, "")
    else:
        rows = [at[(a, MR2, "hard")] for a in ablations]
        cells["ablations_below"] = (part_word([reading(r, "down") for r in rows]),
                                    "; ".join(f"{r['method']} {_delta(r)}" for r in rows) + _holm(rows))

    baselines = _baselines(methods, reference)
    if MR2 not in methods or not baselines:
        cells["above_baselines"] = (NOT_RUN, "")
    elif any((MR2, b, m) not in at for b in baselines for m in ("hard", "easy")):
        cells["above_baselines"] = (NOT_COMPUTED, "")
    else:
        per_baseline = {}
        for b in baselines:
            hard, easy = at[(MR2, b, "hard")], at[(MR2, b, "easy")]
            per_baseline[b] = (part_word([reading(hard, "up"), reading(easy, "not down")]), _baseline_delta(at, b))
        word, detail = baselines_cell(per_baseline)
        cells["above_baselines"] = (word, detail + _holm([at[(MR2, b, "hard")] for b in baselines]))
    return cells


def _holm(rows: list) -> str:
    """`` (Holm over k)``: the family a part's comparisons were corrected in, when it has more than one."""
    k = max((int(r.get("family_size", 1)) if pd.notna(r.get("family_size", 1)) else 1) for r in rows)
    return f" (Holm over {k})" if k > 1 else ""


def baselines_cell(per_baseline: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """The part "MR² above the baselines" from each baseline's (word, Δs): the word of
    ``part_word``, and behind it the comparisons that decide it (those that earned that word), then,
    with more than one baseline, how many baselines earned each word."""
    word = part_word([w for w, _ in per_baseline.values()])
    detail = "; ".join(d for w, d in per_baseline.values() if w == word)
    if len(per_baseline) > 1:
        counts = pd.Series([w for w, _ in per_baseline.values()]).value_counts()
        detail += (f" (by baseline, of {len(per_baseline)}: "
                   + ", ".join(f"{counts[w]} {w}" for w in PRECEDENCE if w in counts) + ")")
    return word, detail


def verdict_table(comparisons: pd.DataFrame, methods: pd.DataFrame, settings: pd.DataFrame | None = None,
                  reference: str = "erm") -> pd.DataFrame:
    """A row per dataset of ``methods`` (columns dataset, method, variant: what was run): dataset,
    data, model, regime (from ``settings`` where given) and per part of ``PARTS`` its word
    (``<part>``) and the Δ behind it (``<part>_detail``)."""
    rows = []
    settings = settings if settings is not None else pd.DataFrame(columns=["dataset"])
    info = settings.drop_duplicates("dataset").set_index("dataset")
    for dataset in methods["dataset"].unique():
        setting = info.loc[dataset] if dataset in info.index else pd.Series(dtype=object)
        if str(setting.get("check_of", "") or "") not in ("", "nan"):
            continue  # a convergence check of another setting, not a setting of its own
        ran = set(methods.loc[methods["dataset"].eq(dataset) & methods["variant"].eq(DEFAULT_VARIANT), "method"])
        here = comparisons[comparisons["dataset"] == dataset]
        cells = verdict_cells(here, ran, reference)
        row = {"dataset": dataset, **{k: setting.get(k, "") for k in ("data", "model", "regime")}}
        for part, (word, detail) in cells.items():
            row[part], row[f"{part}_detail"] = word, detail
        row["above_baselines_every"] = ("" if row["above_baselines"] in (NOT_RUN, NOT_COMPUTED)
                                        else every_baseline(here, ran, reference))
        behind = here[here["variant"].eq(DEFAULT_VARIANT) & here["against_variant"].eq(DEFAULT_VARIANT)
                      & (here["method"].eq(MR2) | here["against"].eq(MR2))]
        row["seeds"] = int(behind["n_paired"].min()) if len(behind) else 0
        hard = behind[behind["method"].eq(MR2) & behind["against"].eq(reference) & behind["metric"].eq("hard")]
        row["hard_excluded_above"] = float(hard["eq_hi"].iloc[0]) if len(hard) and "eq_hi" in hard else math.nan
        row["runs_key"] = runs_key(behind[behind["method"].eq(MR2) & behind["against"].eq(reference)])
        row["tuned"] = str(setting.get("tuned", "") or TUNING_UNKNOWN)
        row["reason"] = no_verdict_reason(row["seeds"], setting.get("converged"), setting.get("convergence"))
        row["eligible"] = row["reason"] == ""
        rows.append(row)
    return pd.DataFrame(rows)


def runs_key(reference_rows: pd.DataFrame) -> str:
    """What identifies a setting's run set across snapshots: MR²'s paired Δ to the reference and its
    interval on all, easy and hard classes, to 1e-6 points. Two snapshots of the same runs (the same
    models, made by configs that share them) give the same key; two different run sets agreeing on all
    nine numbers to a millionth of a point do not occur. "" without those comparisons."""
    rows = reference_rows[reference_rows["metric"].isin(["all", "easy", "hard"])].sort_values("metric")
    if rows.empty:
        return ""
    return ";".join(f"{m}:{d:.6f},{lo:.6f},{hi:.6f}" for m, d, lo, hi in
                    zip(rows["metric"], rows["diff"].astype(float), rows["diff_lo"].astype(float),
                        rows["diff_hi"].astype(float)))


def one_row_per_run_set(table: pd.DataFrame) -> pd.DataFrame:
    """The verdict table with each run set in one row: snapshots holding the same runs (the same
    ``runs_key`` in the same data, model and regime, e.g. the default's runs reused by a sweep and a
    baseline config) become one row naming every snapshot and config, each part's cell taken from the
    first of them (in snapshot order) that ran it, those earning words first; the row earns words when
    any of them does (its settings there show every method at convergence, with ≥ ``MIN_SEEDS`` seeds),
    and its tuned methods are those any of those snapshots tuned. A part only snapshots earning no word
    ran (a baseline under-trained there) reads ``NO_WORD`` in a row that earns words: its Δs and why
    (``without_word``), never a word. Rows without a key stay as they are."""
    if table.empty or "runs_key" not in table or "snapshot" not in table:
        return table
    keys = [table[k].astype(str) for k in ("data", "model", "regime", "seeds", "runs_key")]
    group = pd.Series(list(zip(*keys)), index=table.index).where(table["runs_key"].astype(str).ne(""),
                                                                   pd.Series(table.index.map(str), index=table.index))
    rows = []
    for _, same in table.groupby(group, sort=False):
        row = same.iloc[0].copy()
        if len(same) > 1:
            row["snapshot"] = ", ".join(same["snapshot"].astype(str))
            row["config"] = ", ".join(dict.fromkeys(same["config"].astype(str)))
            earns = same["eligible"].astype(bool)
            for part in PARTS:
                ran = same[~same[part].isin([NOT_RUN, NOT_COMPUTED])]
                ran = pd.concat([ran[earns[ran.index]], ran[~earns[ran.index]]])  # a snapshot that earns words first
                if len(ran):
                    for column in (part, f"{part}_detail", f"{part}_every"):
                        if column in ran:
                            row[column] = ran[column].iloc[0]
                    if earns.any() and not earns[ran.index[0]]:
                        row[part], row[f"{part}_detail"] = NO_WORD, without_word(ran.iloc[0], part)
            eligible = same[earns]
            if len(eligible):
                tuned = [m.strip() for t in eligible["tuned"].astype(str) for m in t.split(",")]
                tuned = [m for m in dict.fromkeys(tuned) if m and m not in (UNTUNED, TUNING_UNKNOWN)]
                row["eligible"], row["reason"] = True, ""
                row["tuned"] = ", ".join(tuned) if tuned else eligible["tuned"].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def wordless(row: pd.Series, part: str) -> str:
    """A part's cell as a setting without a verdict shows it: the paired Δs without a word (for the
    baselines' part every baseline's, not only those deciding its word), or "not run" / "not computed"."""
    if row[part] in (NOT_RUN, NOT_COMPUTED):
        return str(row[part])
    shown = [str(row.get(c, "")) for c in (f"{part}_every", f"{part}_detail")]
    return next((d for d in shown if d not in ("", "nan")), "")


def without_word(row: pd.Series, part: str) -> str:
    """What a ``NO_WORD`` cell holds: the part's Δs without a word (``wordless``), then which snapshot
    ran it and why that setting earns no word."""
    return " ".join(x for x in (wordless(row, part), f"({row['snapshot']}: {row['reason']})") if x)


def no_verdict_reason(seeds: int, converged, convergence) -> str:
    """Why a setting earns no verdict word, or "" when it does: fewer than ``MIN_SEEDS`` paired seeds
    behind a comparison, or a method not shown at its own convergence (not checked, or not converged:
    a sensitivity to the training regime, read as such)."""
    reasons = []
    if seeds < MIN_SEEDS:
        reasons.append(f"{seeds} paired seeds (a verdict needs {MIN_SEEDS})")
    if str(converged) != "True":  # True, numpy's True or the CSV's "True"; not 1, not "yes"
        text = str(convergence) if convergence is not None and str(convergence) not in ("", "nan") else "convergence not checked"
        reasons.append(text)
    return "; ".join(reasons)


def complete_comparisons(comparisons: pd.DataFrame, effect_of_interest: float | None = None,
                         level: float = LEVEL) -> pd.DataFrame:
    """A snapshot's comparisons with today's statistics: the two one-sided tests' interval and the
    p-value recomputed where a snapshot predates them (from Δ, the paired sd and n: d̄ ± t_{1−α, n−1}·sd/√n,
    2·P(T > |d̄|√n/sd)), then Holm within each family and every word again (``with_words``), so every
    snapshot is judged by the same rules."""
    out = comparisons.copy()
    for column in COMPARISON_COLUMNS:  # a damaged or older file: what it lacks is unknown
        if column not in out:
            out[column] = "" if column in ("method", "variant", "against", "against_variant", "kind", "metric",
                                            "word") else math.nan
    n = pd.to_numeric(out["n_paired"], errors="coerce").fillna(0)
    half = [stats.t.ppf(1 - (1 - level), k - 1) * sd / math.sqrt(k) if k >= 2 else math.nan
            for k, sd in zip(n, out["diff_sd"].astype(float))]
    missing = out["eq_lo"].isna()
    out.loc[missing, "eq_lo"] = (out["diff"] - pd.Series(half, index=out.index))[missing]
    out.loc[missing, "eq_hi"] = (out["diff"] + pd.Series(half, index=out.index))[missing]
    missing = out["p_value"].isna()
    out.loc[missing, "p_value"] = [paired_p_value(float(d), float(sd), int(k)) for d, sd, k in
                                   zip(out.loc[missing, "diff"], out.loc[missing, "diff_sd"], n[missing])]
    effect = effect_of_interest if effect_of_interest is not None else (
        float(out["effect_of_interest"].iloc[0]) if len(out) else EFFECT_OF_INTEREST)
    return with_words(out[[c for c in COMPARISON_COLUMNS if c in out]], effect, level)


def comparisons_from_results(results: pd.DataFrame, reference: str,
                             effect_of_interest: float = EFFECT_OF_INTEREST, level: float = LEVEL) -> pd.DataFrame:
    """The comparisons to the reference held in a results table (results.csv) as the tidy rows of
    ``comparisons_table`` (kind "reference"): its Δ and interval, the paired sd (the table's
    ``<m>_diff_sd``, or from the interval of an older table: (hi − lo)/2 · √n / t_{(1+level)/2, n−1}),
    the MDE, then the rest as ``complete_comparisons`` computes it (equivalence interval, p-value, word)."""
    rows = []
    for _, r in results.iterrows():
        if r["method"] == reference and r["variant"] == DEFAULT_VARIANT:
            continue
        n = int(r["n_paired"])
        for m in METRICS:
            if f"{m}_diff" not in r or pd.isna(r[f"{m}_diff"]):
                continue
            lo, hi = float(r[f"{m}_diff_lo"]), float(r[f"{m}_diff_hi"])
            sd = (float(r[f"{m}_diff_sd"]) if f"{m}_diff_sd" in r
                  else (hi - lo) / 2 * math.sqrt(n) / stats.t.ppf((1 + level) / 2, n - 1) if n >= 2 else math.nan)
            mde = minimum_detectable_effect(sd, n, 1 - level)
            rows.append({"dataset": r["dataset"], "method": r["method"], "variant": r["variant"], "against": reference,
                         "against_variant": DEFAULT_VARIANT, "kind": "reference", "metric": m, "n_paired": n,
                         "diff": float(r[f"{m}_diff"]), "diff_sd": sd, "diff_lo": lo, "diff_hi": hi, "mde": mde,
                         "effect_of_interest": effect_of_interest})
    return complete_comparisons(pd.DataFrame(rows, columns=COMPARISON_COLUMNS), effect_of_interest, level)


def snapshot_verdicts(root: str | Path) -> pd.DataFrame:
    """A row per setting of every snapshot folder under ``root`` (sorted by name): the snapshot's
    name, its config (settings.csv's ``config``, else the name), then ``verdict_table``'s columns;
    a setting where every part is "not run" (no MR², e.g. an ERM-only convergence check) is left out.
    The reference is the first row of results.csv (``results_table`` puts it first)."""
    frames = []
    for folder in sorted(p for p in Path(root).iterdir() if (p / "results.csv").is_file()):
        results = pd.read_csv(folder / "results.csv")
        reference = str(results["method"].iloc[0])
        comparisons = complete_comparisons(pd.read_csv(folder / "comparisons.csv") if (folder / "comparisons.csv").is_file()
                                           else comparisons_from_results(results, reference))
        settings = pd.read_csv(folder / "settings.csv", keep_default_na=False) if (folder / "settings.csv").is_file() else None
        table = verdict_table(comparisons, results[["dataset", "method", "variant"]], settings, reference)
        config = (str(settings["config"].iloc[0]) if settings is not None and "config" in settings
                  and len(settings) else folder.name)
        frames.append(table.assign(snapshot=folder.name, config=config))
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    return table[~table[list(PARTS)].eq(NOT_RUN).all(axis=1)].reset_index(drop=True)


def _setting(r: pd.Series) -> str:
    return ", ".join(str(r[k]) for k in ("dataset", "data", "model", "regime")
                     if str(r.get(k, "")) not in ("", "nan") and (k == "dataset" or r[k] != r["dataset"]))


def _source(r: pd.Series) -> str:
    return f"{r['snapshot']}" + (f" ({r['config']})" if r["config"] != r["snapshot"] else "")


def shown_word(word: str, effect: float = EFFECT_OF_INTEREST) -> str:
    """A part's word as the table shows it (``SHOWN``: "equivalent (no effect ≥ 1 point)")."""
    return SHOWN.get(word, "{word}").format(word=word, effect=effect, s="" if effect == 1 else "s")


def verdict_markdown(table: pd.DataFrame, effect: float = EFFECT_OF_INTEREST) -> str:
    """The verdict table as Markdown: a row per setting that earns verdict words (``eligible``: at least
    ``MIN_SEEDS`` paired seeds behind every comparison, every method at its own convergence), a column
    per part of the claim, each cell its word in bold and the paired Δ [95 % interval] in points behind
    it; then the settings that earn none (too few seeds, or a method not at convergence), with why and
    the same Δs without a word: a sensitivity to the number of seeds and to the training regime. Each run
    set is one row, whichever snapshots hold it (``one_row_per_run_set``)."""
    if table.empty:
        return "No setting has been run.\n"
    table = one_row_per_run_set(table)
    snap = "snapshot" in table
    eligible = table["eligible"].astype(bool) if "eligible" in table else pd.Series(True, index=table.index)
    header = (["Snapshot"] if snap else []) + ["Setting", "Seeds", "Tuned"] + list(PARTS.values())
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for _, r in table[eligible].iterrows():
        cells = ([_source(r)] if snap else []) + [_setting(r), str(r.get("seeds", "")), str(r.get("tuned", ""))]
        for part in PARTS:
            detail = str(r[f"{part}_detail"]) if str(r[f"{part}_detail"]) not in ("", "nan") else ""
            cells.append(f"**{shown_word(r[part], effect)}**" + (f" {detail}" if detail else ""))
        lines.append("| " + " | ".join(cells) + " |")
    if not eligible.any():
        lines.append("| " + " | ".join([f"no setting yet has ≥ {MIN_SEEDS} seeds and every method at convergence"]
                                       + [""] * (len(header) - 1)) + " |")
    note = ("\nEach cell: the word the part of the paper's claim earns in that setting, then the paired Δ (points, "
            "by seed) [95 % t-interval] behind it; decision rules in `mr2/results/verdicts.py`. Words: higher/lower "
            "when the 95 % interval excludes 0 (within a family, MR² against each ablation or each baseline, when "
            "Holm's adjusted p-value is below 0.05 too: the cell says over how many); **equivalent** when the two "
            "one-sided tests' 90 % interval lies inside ± the effect of interest (config key `effect_of_interest`, "
            f"{effect:g} point): an effect that large is excluded; underpowered when neither holds and the minimum "
            f"detectable effect (80 % power) exceeds it or fewer than {MIN_SEEDS} paired seeds stand behind it; "
            "easy classes \"not down\" is also supported when the 90 % interval's lower end is above −(effect of "
            f"interest). Only settings with ≥ {MIN_SEEDS} paired seeds and every method within its convergence "
            f"tolerance earn a word; a part run only where that fails (a baseline not at its convergence) reads "
            f"**{NO_WORD}**, with its Δs and why.\n")
    note = "\n" + textwrap.fill(note.strip("\n"), 100) + "\n"
    rest = table[~eligible]
    if rest.empty:
        return "\n".join(lines) + "\n" + note
    extra = ["", *textwrap.wrap("Settings without a verdict word (sensitivity to the number of seeds and to the training "
                                "regime: the paired Δ [95 % t-interval] of each part, read as such, not as a verdict):",
                                100), ""]
    head = (["Snapshot"] if snap else []) + ["Setting", "Seeds", "Why no verdict"] + list(PARTS.values())
    extra += ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for _, r in rest.iterrows():
        cells = ([_source(r)] if snap else []) + [_setting(r), str(r.get("seeds", "")), str(r.get("reason", ""))]
        cells += [wordless(r, part) for part in PARTS]
        extra.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + note + "\n".join(extra) + "\n"


#: the README's blocks: the verdict table alone (``SHORT``) and the headline sentences generated from it
SHORT = ("<!-- verdicts:short -->", "<!-- /verdicts:short -->")
HEADLINE = ("<!-- headline -->", "<!-- /headline -->")


def readme_verdicts(text: str, markers: tuple[str, str] = (BEGIN, END)) -> str | None:
    """The text of a verdict block (by default the full one, between ``BEGIN`` and ``END``), or None
    without one; markers count only as whole lines (``mr2.common.io.block_lines``)."""
    found = block_lines(text, *markers)
    if found is None:
        return None
    return "\n".join(text.splitlines()[found[0] + 1:found[1]]).strip("\n")


def verdict_blocks(table: pd.DataFrame) -> dict[tuple[str, str], str]:
    """What each verdict block holds: the full table with the sensitivity rows (``BEGIN``/``END``), the
    verdict rows alone with their legend (``SHORT``), and the headline (``HEADLINE``)."""
    full = verdict_markdown(table).strip("\n")
    return {(BEGIN, END): full, SHORT: full.split("\n\nSettings without a verdict\nword")[0].split(
        "\n\nSettings without a verdict word")[0],
            HEADLINE: headline(table)}


def update_verdicts(readme: str | Path, snapshots: str | Path) -> bool:
    """Fill every verdict block the file ``readme`` has (``verdict_blocks``) from the snapshots under
    ``snapshots``, keeping every other line byte for byte; False (nothing written) when it has none."""
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    blocks = {m: body for m, body in verdict_blocks(snapshot_verdicts(snapshots)).items()
              if block_lines(text, *m, where=str(readme)) is not None}
    if not blocks:
        return False
    for (begin, end), body in blocks.items():
        text = fill_block_lines(text, begin, end, body, str(readme))
    save_text(text, readme)
    return True


#: what a part's word says, for the headline
SAYS = {"hard_up": "MR² raises the hard classes", "easy_not_down": "MR² keeps the easy classes (no loss ≥ {e} point)",
        "overall_up": "MR² raises overall accuracy", "ablations_below": "each ablation is below full MR²",
        "above_baselines": "MR² is above the baselines"}


def reference_name(row) -> str:
    """The reference's name as the headline says it (ERM unless the snapshot's table says otherwise)."""
    return str(row.get("reference", "erm") or "erm").upper()


def headline(table: pd.DataFrame, effect: float = EFFECT_OF_INTEREST) -> str:
    """The verdict in sentences, one per setting that earns words: its data, model, seeds and what was
    tuned, then each part's word with the Δ behind it, and for an "equivalent" part the effect it
    excludes; a sentence saying so when no setting earns words yet."""
    table = one_row_per_run_set(table)
    rows = table[table["eligible"].astype(bool)] if len(table) and "eligible" in table else table.iloc[:0]
    if rows.empty:
        return (f"No setting has earned a verdict word yet: none has {MIN_SEEDS} or more paired seeds with every "
                "method shown at its own convergence (the table's second part lists what ran, as sensitivity).")
    out = []
    for _, r in rows.iterrows():
        parts = []
        for part, says in SAYS.items():
            word = r[part]
            if word in (NOT_RUN, NOT_COMPUTED):
                continue
            detail = str(r[f"{part}_detail"]) if str(r[f"{part}_detail"]) not in ("", "nan") else ""
            claim = says.format(e=f"{effect:g}")
            parts.append(f"{claim}: **{shown_word(word, effect)}**" + (f" ({detail})" if detail else ""))
        above = float(r.get("hard_excluded_above", math.nan))
        excluded = (f" A hard-class gain above {above:+.1f} points over {reference_name(r)} is excluded (the upper end of "
                    "the two one-sided tests' 90 % interval)." if math.isfinite(above) else "")
        out.append(f"- {_setting(r)}, {r['seeds']} seeds, tuned: {r['tuned']}. " + "; ".join(parts) + "." + excluded)
    return "\n".join(out)
