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
(no ``comparisons.csv``) reads "not computed".

Snapshots (``docs/results/<name>/``, kept by ``mr2 readme``) hold results.csv and, from this version
on, comparisons.csv and settings.csv; an older snapshot's comparisons to the reference are read back
from its results.csv (the paired sd from the interval: sd = (hi − lo)/2 · √n / t_{0.975, n−1}).

  verdict_cells     the five parts of one setting: word and the Δ [interval] behind it
  verdict_table     a row per setting of a comparisons table (and its settings)
  snapshot_verdicts a row per setting of every snapshot under a folder
  verdict_markdown  the table as Markdown (the README's and the report's opening table)
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
from scipy import stats

from ..common.io import save_text
from ..common.runs import DEFAULT_VARIANT
from .regimes import regime_label
from .longtail import IMBALANCE_COLUMN
from .statistics import EFFECT_OF_INTEREST, LEVEL, comparison_word, minimum_detectable_effect
from .tables import ABLATIONS, COMPARISON_COLUMNS, METRICS, MR2, MR2_FAMILY

SUPPORTED, NOT_SHOWN, CONTRADICTED, UNDERPOWERED = "supported", "not shown", "contradicted", "underpowered"
NOT_RUN, NOT_COMPUTED = "not run", "not computed"
PRECEDENCE = (CONTRADICTED, NOT_SHOWN, UNDERPOWERED, SUPPORTED)
#: how a comparison's word reads for a part claimed "up", "down" or "not down"
READINGS = {
    "up": {"higher": SUPPORTED, "lower": CONTRADICTED, "no clear difference": NOT_SHOWN},
    "down": {"lower": SUPPORTED, "higher": CONTRADICTED, "no clear difference": NOT_SHOWN},
    "not down": {"higher": SUPPORTED, "no clear difference": SUPPORTED, "lower": CONTRADICTED},
}
PARTS = {"hard_up": "Hard classes up", "easy_not_down": "Easy classes not down", "overall_up": "Overall up",
         "ablations_below": "Each ablation below full MR²",
         "above_baselines": "MR² above the baselines (hard up, easy not down)"}
SETTING_COLUMNS = {"data": "config.data.name", "model": "config.model.name", "train_cap": "config.data.train_cap",
                   "epochs": "config.train.epochs"}
BEGIN, END = "<!-- verdicts -->", "<!-- /verdicts -->"


def settings_table(runs: pd.DataFrame | None) -> pd.DataFrame:
    """A row per dataset key of the runs table: dataset, data (data.name, with "long-tailed, ratio r"
    when ``data.imbalance`` is set), model (model.name), regime ("600/class × 6 ep",
    ``mr2.results.regimes.regime_label``: the cap before any imbalance), from the resolved configs;
    a column the runs table lacks is left empty."""
    if runs is None or runs.empty:
        return pd.DataFrame(columns=["dataset", "data", "model", "regime"])
    first = runs.drop_duplicates("dataset").set_index("dataset")
    out = pd.DataFrame({"dataset": first.index})
    for key in ("data", "model"):
        out[key] = first[SETTING_COLUMNS[key]].to_numpy() if SETTING_COLUMNS[key] in first else ""
    if IMBALANCE_COLUMN in first:
        ratio = pd.to_numeric(first[IMBALANCE_COLUMN], errors="coerce").to_numpy()
        out["data"] = [d if math.isnan(r) else f"{d} (long-tailed, ratio {r:g})" for d, r in zip(out["data"], ratio)]
    if SETTING_COLUMNS["epochs"] in first:
        caps = first[SETTING_COLUMNS["train_cap"]] if SETTING_COLUMNS["train_cap"] in first else [None] * len(first)
        out["regime"] = [regime_label(c, e) for c, e in zip(caps, first[SETTING_COLUMNS["epochs"]])]
    else:
        out["regime"] = ""
    return out


def part_word(words: list[str]) -> str:
    """The word of a part made of several comparisons' readings (``PRECEDENCE``)."""
    return next(w for w in PRECEDENCE if w in words or w == SUPPORTED)


def reading(word: str, claim: str) -> str:
    """A comparison's ``word`` read for a part claimed ``claim`` ("up" / "down" / "not down")."""
    return READINGS[claim].get(word, UNDERPOWERED)  # underpowered, undetermined (n < 2)


def _delta(row: pd.Series) -> str:
    if math.isnan(row["diff_lo"]):
        return f"{row['diff']:+.1f} (no CI)"
    return f"{row['diff']:+.1f} [{row['diff_lo']:+.1f}, {row['diff_hi']:+.1f}]"


def verdict_cells(comparisons: pd.DataFrame, methods: set[str], reference: str = "erm") -> dict[str, tuple[str, str]]:
    """The five parts (``PARTS``) of one setting: part -> (word, the Δ [interval] behind it), from
    its ``comparisons`` (one dataset) and the default-variant ``methods`` it ran. A part whose
    comparisons are missing (an older snapshot holds only those to the reference) is "not computed"."""
    c = comparisons[comparisons["variant"].eq(DEFAULT_VARIANT) & comparisons["against_variant"].eq(DEFAULT_VARIANT)]
    at = {(r.method, r.against, r.metric): r for _, r in c.iterrows()}
    overall = "top1" if (MR2, reference, "top1") in at else "all"
    cells: dict[str, tuple[str, str]] = {}

    def single(part: str, metric: str, claim: str) -> None:
        row = at.get((MR2, reference, metric))
        if MR2 not in methods or reference not in methods:
            cells[part] = (NOT_RUN, "")
        elif row is None:
            cells[part] = (NOT_COMPUTED, "")
        else:
            cells[part] = (reading(row["word"], claim), _delta(row))

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
        cells["ablations_below"] = (part_word([reading(r["word"], "down") for r in rows]),
                                    "; ".join(f"{r['method']} {_delta(r)}" for r in rows))

    baselines = [b for b in sorted(methods) if b != reference and b not in MR2_FAMILY]
    if MR2 not in methods or not baselines:
        cells["above_baselines"] = (NOT_RUN, "")
    elif any((MR2, b, m) not in at for b in baselines for m in ("hard", "easy")):
        cells["above_baselines"] = (NOT_COMPUTED, "")
    else:
        per_baseline = {}
        for b in baselines:
            hard, easy = at[(MR2, b, "hard")], at[(MR2, b, "easy")]
            per_baseline[b] = (part_word([reading(hard["word"], "up"), reading(easy["word"], "not down")]),
                               f"vs {b}: hard {_delta(hard)}, easy {_delta(easy)}")
        cells["above_baselines"] = baselines_cell(per_baseline)
    return cells


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
        ran = set(methods.loc[methods["dataset"].eq(dataset) & methods["variant"].eq(DEFAULT_VARIANT), "method"])
        cells = verdict_cells(comparisons[comparisons["dataset"] == dataset], ran, reference)
        row = {"dataset": dataset, **{k: (info.loc[dataset, k] if dataset in info.index and k in info else "")
                                      for k in ("data", "model", "regime")}}
        for part, (word, detail) in cells.items():
            row[part], row[f"{part}_detail"] = word, detail
        rows.append(row)
    return pd.DataFrame(rows)


def comparisons_from_results(results: pd.DataFrame, reference: str,
                             effect_of_interest: float = EFFECT_OF_INTEREST, level: float = LEVEL) -> pd.DataFrame:
    """The comparisons to the reference held in a results table (results.csv) as the tidy rows of
    ``comparisons_table`` (kind "reference"): its Δ and interval, the paired sd (the table's
    ``<m>_diff_sd``, or from the interval of an older table: (hi − lo)/2 · √n / t_{(1+level)/2, n−1}),
    the MDE and the word."""
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
                         "effect_of_interest": effect_of_interest,
                         "word": comparison_word(float(r[f"{m}_diff"]), lo, hi, mde, effect_of_interest)})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def snapshot_verdicts(root: str | Path) -> pd.DataFrame:
    """A row per setting of every snapshot folder under ``root`` (sorted by name): the snapshot's
    name, its config (settings.csv's ``config``, else the name), then ``verdict_table``'s columns;
    a setting where every part is "not run" (no MR², e.g. an ERM-only convergence check) is left out.
    The reference is the first row of results.csv (``results_table`` puts it first)."""
    frames = []
    for folder in sorted(p for p in Path(root).iterdir() if (p / "results.csv").is_file()):
        results = pd.read_csv(folder / "results.csv")
        reference = str(results["method"].iloc[0])
        comparisons = (pd.read_csv(folder / "comparisons.csv") if (folder / "comparisons.csv").is_file()
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


def verdict_markdown(table: pd.DataFrame) -> str:
    """The verdict table as Markdown: a row per setting, a column per part of the claim, each cell
    its word in bold and the paired Δ [95 % interval] in points behind it."""
    if table.empty:
        return "No setting has been run.\n"
    snap = "snapshot" in table
    header = (["Snapshot"] if snap else []) + ["Setting"] + list(PARTS.values())
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for _, r in table.iterrows():
        setting = ", ".join(str(r[k]) for k in ("dataset", "data", "model", "regime")
                            if str(r.get(k, "")) not in ("", "nan") and (k == "dataset" or r[k] != r["dataset"]))
        cells = ([f"{r['snapshot']}" + (f" ({r['config']})" if r["config"] != r["snapshot"] else "")] if snap else [])
        cells.append(setting)
        for part in PARTS:
            detail = str(r[f"{part}_detail"]) if str(r[f"{part}_detail"]) not in ("", "nan") else ""
            cells.append(f"**{r[part]}**" + (f" {detail}" if detail else ""))
        lines.append("| " + " | ".join(cells) + " |")
    interest = (" A \"no clear difference\" whose minimum detectable effect (80 % power, two-sided paired t-test "
                "at 5 %) exceeds the effect of interest (config key `effect_of_interest`, 1 point by default) reads "
                "underpowered.")
    note = ("\nEach cell: the word the part of the paper's claim earns in that setting, then the paired Δ "
            "(points, by seed) [95 % t-interval] behind it; decision rules in `mr2/results/verdicts.py`." + interest
            + " not run: the setting did not run the methods; not computed: the snapshot predates the pairwise "
            "comparisons (regenerate it). Settings that ran no part (no MR²) are left out.\n")
    return "\n".join(lines) + "\n" + note


def readme_verdicts(text: str) -> str | None:
    """The README's verdict block (between ``BEGIN`` and ``END``), or None without one."""
    m = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, flags=re.S)
    return m.group(1).strip("\n") if m else None


def update_verdicts(readme: str | Path, snapshots: str | Path) -> bool:
    """Put the verdict table of the snapshots under ``snapshots`` into the README's (first) block,
    keeping every other byte; False (nothing written) when the README has no block."""
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return False
    md = verdict_markdown(snapshot_verdicts(snapshots)).strip("\n")
    head, rest = text.split(BEGIN, 1)
    save_text(f"{head}{BEGIN}\n{md}\n{END}{rest.split(END, 1)[1]}", readme)
    return True

