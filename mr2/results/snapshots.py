"""Reading the committed snapshots (``docs/results/<name>/``, kept by ``mr2 readme``) into one verdict
table: every snapshot judged by today's rules, whatever version of the code wrote it.

A snapshot holds results.csv and, from later versions on, comparisons.csv, settings.csv,
convergence.csv, the per-seed tables (per_class.csv, groups.csv), primary.json (the declared primary
test) and machine.yaml (the CPU of runs that predate the per-run record). An older snapshot's
comparisons to the reference are read back from its results.csv (the paired sd from the interval:
sd = (hi − lo)/2 · √n / t_{0.975, n−1}); its convergence checks are judged again by today's two-sided
rule; its CPU is read from machine.yaml.

  complete_comparisons   a snapshot's comparisons with today's statistics and words
  snapshot_verdicts      a row per setting of every snapshot under a folder
  snapshot_primaries     the primary test of every snapshot that declares one
  one_primary_per_run_set  snapshots declaring the same primary test on the same runs as one test
  one_row_per_run_set    snapshots holding the same runs (the same per-seed numbers) as one row
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pandas as pd
from scipy import stats

from ..common.io import load_yaml_file
from ..common.runs import DEFAULT_VARIANT
from .convergence import convergence_summary
from .rules import ABLATIONS, MR2, NOT_COMPUTED, NOT_JUDGED, NOT_RUN, PARTS
from .statistics import EFFECT_OF_INTEREST, LEVEL, minimum_detectable_effect, paired_p_value
from .tables import COMPARISON_COLUMNS, METRICS, with_words
from .verdicts import NOT_RECORDED, TUNING_UNKNOWN, UNTUNED, primary_result, tuned_text, verdict_table

TEXT_COLUMNS = ("method", "variant", "against", "against_variant", "kind", "metric", "word")
PRIMARY_FILE, MACHINE_FILE = "primary.json", "machine.yaml"


def complete_comparisons(comparisons: pd.DataFrame, effect_of_interest: float | None = None,
                         level: float = LEVEL) -> pd.DataFrame:
    """A snapshot's comparisons with today's statistics: the two one-sided tests' interval and the
    p-value recomputed where a snapshot predates them (from Δ, the paired sd and n: d̄ ± t_{1−α, n−1}·sd/√n,
    2·P(T > |d̄|√n/sd)), then Holm within each family and every word again, so every snapshot is judged by
    the same rules. A row whose Δ or n is not a number (a damaged file) is dropped."""
    out = comparisons.copy()
    for column in COMPARISON_COLUMNS:  # a damaged or older file: what it lacks is unknown
        if column not in out:
            out[column] = "" if column in TEXT_COLUMNS else math.nan
    for column in ("n_paired", "diff", "diff_sd", "diff_lo", "diff_hi", "mde", "eq_lo", "eq_hi", "p_value"):
        out[column] = pd.to_numeric(out[column], errors="coerce")
    out = out[out["diff"].notna() & out["n_paired"].notna()].copy()
    n = out["n_paired"].astype(int)
    half = [stats.t.ppf(1 - (1 - level), k - 1) * sd / math.sqrt(k) if k >= 2 else math.nan
            for k, sd in zip(n, out["diff_sd"].astype(float))]
    missing = out["eq_lo"].isna()
    out.loc[missing, "eq_lo"] = (out["diff"] - pd.Series(half, index=out.index))[missing]
    out.loc[missing, "eq_hi"] = (out["diff"] + pd.Series(half, index=out.index))[missing]
    missing = out["p_value"].isna()
    out.loc[missing, "p_value"] = [paired_p_value(float(d), float(sd), int(k)) for d, sd, k in
                                   zip(out.loc[missing, "diff"], out.loc[missing, "diff_sd"], n[missing])]
    effect = effect_of_interest if effect_of_interest is not None else (
        float(out["effect_of_interest"].iloc[0]) if len(out) and pd.notna(out["effect_of_interest"].iloc[0])
        else EFFECT_OF_INTEREST)
    out["effect_of_interest"] = effect
    return with_words(out[[c for c in COMPARISON_COLUMNS if c in out]], effect, level)


def comparisons_from_results(results: pd.DataFrame, reference: str,
                             effect_of_interest: float = EFFECT_OF_INTEREST, level: float = LEVEL) -> pd.DataFrame:
    """The comparisons to the reference held in a results table (results.csv) as the tidy rows of
    ``comparisons_table`` (kind "reference"): its Δ and interval, the paired sd (the table's
    ``<m>_diff_sd``, or from the interval of an older table: (hi − lo)/2 · √n / t_{(1+level)/2, n−1}),
    the MDE, then the rest as ``complete_comparisons`` computes it (equivalence interval, p-value, word)."""
    rows = []
    for _, r in results.iterrows():
        if r["method"] == reference and r["variant"] == DEFAULT_VARIANT or "n_paired" not in r:
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


# ----------------------------------------------------------------------------- one snapshot
def runs_identity(folder: Path, reference: str, others: tuple[str, ...] = ()) -> str:
    """What names a snapshot's run set: the SHA-256 of its per-seed, per-class test accuracies of the
    reference and MR² (and of ``others``; default variants; per_class.csv), so two snapshots share a row
    only when they hold the same runs' numbers, never because their Δs agree. "" without per_class.csv."""
    path = folder / "per_class.csv"
    if not path.is_file():
        return ""
    frame = pd.read_csv(path, usecols=lambda c: c in ("dataset", "method", "variant", "seed", "class", "accuracy"))
    if not {"method", "variant", "seed", "class", "accuracy"} <= set(frame):
        return ""
    frame = frame[frame["method"].isin([reference, MR2, *others]) & frame["variant"].eq(DEFAULT_VARIANT)]
    frame = frame.sort_values(["method", "seed", "class"], kind="stable")
    text = "\n".join(f"{m},{s},{c},{a:.9f}" for m, s, c, a in
                     zip(frame["method"], frame["seed"], frame["class"], frame["accuracy"].astype(float)))
    return hashlib.sha256(text.encode()).hexdigest()[:16] if text else ""


def machine_of(folder: Path) -> str:
    """The CPU of a snapshot whose runs predate the per-run record: machine.yaml's ``cpu`` (as the
    session that made the runs recorded it), else "not recorded"."""
    path = folder / MACHINE_FILE
    if not path.is_file():
        return NOT_RECORDED
    record = load_yaml_file(path)
    return str(record.get("cpu", NOT_RECORDED)) if isinstance(record, dict) else NOT_RECORDED


def _settings(folder: Path, methods: pd.DataFrame) -> pd.DataFrame | None:
    """A snapshot's settings.csv, its CPU filled from machine.yaml where the runs did not record it and its
    convergence judged again from convergence.csv by today's rule (``convergence_summary``)."""
    path = folder / "settings.csv"
    if not path.is_file():
        return None
    settings = pd.read_csv(path, keep_default_na=False, dtype=str)
    settings["seeds"] = pd.to_numeric(settings.get("seeds", 0), errors="coerce").fillna(0).astype(int)
    if "cpu" not in settings or settings["cpu"].astype(str).isin(["", NOT_RECORDED]).all():
        settings["cpu"] = machine_of(folder)
    if "tuned" in settings:  # an older snapshot lists the ablations that followed MR² as tuned methods
        settings["tuned"] = [tuned_text(names, {a: MR2 for a in ABLATIONS if a in names and MR2 in names})
                             if (names := [m.strip() for m in str(t).split(",") if m.strip()]) and
                             "(" not in str(t) and str(t) not in (UNTUNED, TUNING_UNKNOWN) else t
                             for t in settings["tuned"]]
    if (folder / "convergence.csv").is_file():
        convergence = pd.read_csv(folder / "convergence.csv")
        for i, s in settings.iterrows():
            ran = methods[methods["dataset"].eq(s["dataset"]) & methods["variant"].eq(DEFAULT_VARIANT)]["method"]
            if len(ran):
                ok, text = convergence_summary(convergence, s["dataset"], list(dict.fromkeys(ran)))
                settings.loc[i, "converged"], settings.loc[i, "convergence"] = str(ok), text
    return settings


def _comparisons(folder: Path, results: pd.DataFrame, reference: str) -> pd.DataFrame:
    path = folder / "comparisons.csv"
    return complete_comparisons(pd.read_csv(path)) if path.is_file() else comparisons_from_results(results, reference)


def snapshot_verdicts(root: str | Path) -> pd.DataFrame:
    """A row per setting of every snapshot folder under ``root`` (sorted by name): the snapshot's name,
    its config (settings.csv's ``config``, else the name), ``identity`` (``runs_identity``), then
    ``verdict_table``'s columns; a setting where every part is "not run" (no MR²) is left out. The
    reference is the first row of results.csv (``results_table`` puts it first)."""
    frames = []
    for folder in sorted(p for p in Path(root).iterdir() if (p / "results.csv").is_file()):
        results = pd.read_csv(folder / "results.csv")
        if results.empty:
            continue
        reference = str(results["method"].iloc[0])
        methods = results[["dataset", "method", "variant"]]
        settings = _settings(folder, methods)
        table = verdict_table(_comparisons(folder, results, reference), methods, settings, reference)
        config = (str(settings["config"].iloc[0]) if settings is not None and "config" in settings
                  and len(settings) else folder.name)
        frames.append(table.assign(snapshot=folder.name, config=config, identity=runs_identity(folder, reference)))
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    return table[~table[list(PARTS)].eq(NOT_RUN).all(axis=1)].reset_index(drop=True)


def snapshot_primaries(root: str | Path) -> list[dict]:
    """The primary test (``verdicts.primary_result``) of every snapshot under ``root`` holding a
    primary.json (the config's ``primary`` declaration, written by ``mr2 table``), with its snapshot's
    name, config and CPU; one test per run set (``one_primary_per_run_set``)."""
    out = []
    for folder in sorted(p for p in Path(root).iterdir() if (p / PRIMARY_FILE).is_file()):
        declared = json.loads((folder / PRIMARY_FILE).read_text(encoding="utf-8"))
        results = pd.read_csv(folder / "results.csv")
        reference = str(results["method"].iloc[0])
        methods = results[["dataset", "method", "variant"]]
        settings = _settings(folder, methods)
        comparisons = _comparisons(folder, results, reference)
        table = verdict_table(comparisons, methods, settings, reference)
        result = primary_result(comparisons, declared, table)
        if result is not None:
            row = table[table["dataset"].eq(result["dataset"])]
            config = (str(settings["config"].iloc[0]) if settings is not None and "config" in settings
                      and len(settings) else folder.name)
            out.append({**result, "snapshot": folder.name, "config": config,
                        "identity": runs_identity(folder, reference, tuple(declared.get("controls", ()))),
                        "cpu": str(row["cpu"].iloc[0]) if len(row) else NOT_RECORDED,
                        **{k: row[k].iloc[0] for k in ("data", "model", "regime") if len(row) and k in row}})
    return one_primary_per_run_set(out)


def one_primary_per_run_set(primaries: list[dict]) -> list[dict]:
    """The primary tests with each test of one run set once: snapshots that declare the same test (dataset,
    group, method, controls) on the same runs (the same ``identity``: the per-seed numbers of the
    reference, MR² and the controls) made on the same CPU (never two vendors in one test, as never in one
    row) give one primary test naming every snapshot and config, its word
    from the first of them (in snapshot order) that judges it, as ``one_row_per_run_set`` takes a row's.
    Tests without an identity stay as they are."""
    groups: dict[tuple, list[dict]] = {}  # in the order of each group's first snapshot
    for i, p in enumerate(primaries):
        key = ((p["identity"], p["cpu"], p["dataset"], p["group"], p["method"], p["controls"]) if p.get("identity")
               else (i,))
        groups.setdefault(key, []).append(p)
    merged = []
    for same in groups.values():
        judged = [p for p in same if p["word"] != NOT_JUDGED]
        first = dict((judged or same)[0])
        first["snapshot"] = ", ".join(p["snapshot"] for p in same)
        first["config"] = ", ".join(dict.fromkeys(p["config"] for p in same))
        merged.append(first)
    return merged


# ----------------------------------------------------------------------------- one row per run set
def one_row_per_run_set(table: pd.DataFrame) -> pd.DataFrame:
    """The verdict table with each run set in one row: snapshots holding the same runs (the same
    ``identity``: the same per-seed numbers of the reference and MR², in the same data, model, regime
    and CPU) become one row naming every snapshot and config, each part's cell taken from the first of
    them (in snapshot order) that ran it, those earning words first; the row earns words when any of
    them does, and its tuned methods are those any of those snapshots tuned. A part that only snapshots
    earning no word ran reads ``not judged`` in a row that earns words, with its Δs and why. Rows without
    an identity (no per-seed table) stay as they are."""
    if table.empty or "identity" not in table or "snapshot" not in table:
        return table
    keys = [table[k].astype(str) if k in table else pd.Series("", index=table.index)
            for k in ("data", "model", "regime", "cpu", "identity")]
    group = pd.Series(list(zip(*keys)), index=table.index).where(table["identity"].astype(str).ne(""),
                                                                   pd.Series(table.index.map(str), index=table.index))
    rows = []
    for _, same in table.groupby(group, sort=False):
        row = same.iloc[0].copy()
        if len(same) > 1:
            row["snapshot"] = ", ".join(same["snapshot"].astype(str))
            row["config"] = ", ".join(dict.fromkeys(same["config"].astype(str)))
            row["seeds"] = int(same["seeds"].min())
            earns = same["eligible"].astype(bool)
            for part in PARTS:
                ran = same[~same[part].isin([NOT_RUN, NOT_COMPUTED])]
                ran = pd.concat([ran[earns[ran.index]], ran[~earns[ran.index]]])  # a snapshot that earns words first
                if len(ran):
                    for column in (part, f"{part}_detail", f"{part}_every", f"{part}_p"):
                        if column in ran:
                            row[column] = ran[column].iloc[0]
                    if earns.any() and not earns[ran.index[0]]:
                        row[part], row[f"{part}_p"] = NOT_JUDGED, ()
                        row[f"{part}_detail"] = without_word(ran.iloc[0], part)
            eligible = same[earns]
            if len(eligible):
                tuned = [m.strip() for t in eligible["tuned"].astype(str) for m in t.split(",")]
                tuned = [m for m in dict.fromkeys(tuned) if m and m not in (UNTUNED, TUNING_UNKNOWN)]
                row["eligible"], row["reason"] = True, ""
                row["tuned"] = ", ".join(tuned) if tuned else eligible["tuned"].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def wordless(row: pd.Series, part: str) -> str:
    """A part's cell as a row without words shows it: the Δs without a word (for a part of several
    comparisons every compared method's), or "not run" / "not computed"."""
    if row[part] in (NOT_RUN, NOT_COMPUTED):
        return str(row[part])
    shown = [str(row.get(c, "")) for c in (f"{part}_every", f"{part}_detail")]
    return next((d for d in shown if d not in ("", "nan")), "")


def without_word(row: pd.Series, part: str) -> str:
    """A ``not judged`` part of a judged row: its Δs without a word, then which snapshot ran it and why
    that setting earns no word."""
    return " ".join(x for x in (wordless(row, part), f"({row['snapshot']}: {row['reason']})") if x)
