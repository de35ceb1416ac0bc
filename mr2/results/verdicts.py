"""One verdict table across settings: the words each part of the paper's claim earns, setting by
setting, as the rulebook (``mr2.results.rules``) decides them.

A *setting* is a dataset key of one run of the pipeline (its data, training-set size, epochs, model and
the machine it ran on: ``settings_table``). Every difference is MR² minus the other method (points,
paired by seed). The parts (``rules.PARTS``): the hard classes up, the easy classes not down and overall
accuracy up, each against the untuned reference (ERM); MR² above the equally tuned controls (a tuned
logit temperature, ERM with its recipe tuned); MR² above each ablation; MR² above each baseline.

  settings_table    a row per dataset key: data, model, regime, seeds, tuned methods, CPU, convergence
  verdict_cells     the parts of one setting: word, the Δs behind it, the p-values of its tests
  verdict_table     a row per setting of a comparisons table (and its settings)
  primary_result    the declared primary test of a comparisons table
  with_table_holm   each part's word after Holm's correction over every test behind the table's words
"""

from __future__ import annotations

import math

import pandas as pd

from ..common.runs import DEFAULT_VARIANT
from . import rules
from .convergence import convergence_summary
from .longtail import IMBALANCE_COLUMN
from .regimes import block_epochs, regime_label
from .rules import MR2, NOT_COMPUTED, NOT_RUN, PARTS

UNTUNED, TUNING_UNKNOWN = "none", "not recorded"  # a setting's tuned methods: none, or a snapshot that predates the tag
NOT_RECORDED = "not recorded"  # the CPU of runs that predate the per-run record
SETTING_COLUMNS = {"data": "config.data.name", "model": "config.model.name", "train_cap": "config.data.train_cap",
                   "epochs": "config.train.epochs"}
TUNED, CHECK = "config.tags.tuned", "config.tags.convergence_of"  # run-config tags of tuned runs and checks
FOLLOW = "follow"  # how the tuned column names a method that took another's chosen options
VENDOR, MODEL = "config.conditions.cpu_vendor", "config.conditions.cpu_model"
CODE = "config.conditions.code"  # the commit that trained a run (mr2.common.provenance)
#: the vendor names a reader knows, by /proc/cpuinfo's vendor_id
VENDORS = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}
#: MR²'s options that choose the rule its margins follow, at the paper's values (Corollary 1 fed a_k, L2
#: statistics): a run set whose MR² fixes another value tests a variant of ours, and its row says so
MR2_PAPER_OPTIONS = {"statistic": "a", "p": 2}
#: the parts made of MR²'s comparisons with several methods, and the kind of those comparisons
KINDS = {"above_controls": "control", "ablations_below": "ablation", "above_baselines": "baseline"}


# ----------------------------------------------------------------------------- settings
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


def cpu_text(runs: pd.DataFrame) -> str:
    """The CPU a setting's runs were made on, as its runs recorded it: "AMD (AMD EPYC)"; several joined
    by " + " (the results layer refuses to pair them); "not recorded" for runs that predate the record."""
    if VENDOR not in runs:
        return NOT_RECORDED
    seen = runs[[VENDOR] + ([MODEL] if MODEL in runs else [])].dropna(subset=[VENDOR]).drop_duplicates()
    if seen.empty:
        return NOT_RECORDED
    return " + ".join(f"{VENDORS.get(str(r[VENDOR]), str(r[VENDOR]))}" + (f" ({r[MODEL]})" if MODEL in r else "")
                      for _, r in seen.iterrows())


def code_text(runs: pd.DataFrame) -> str:
    """The code a setting's runs were trained by, as each run recorded it (``config.conditions.code``):
    "5c2ec9d1a2b3", several joined by ", " in the order they first appear; "not recorded" for runs
    that predate the record (or, marked so, ran outside a git checkout)."""
    if CODE not in runs:
        return NOT_RECORDED
    seen = list(dict.fromkeys(str(c) for c in runs[CODE].dropna()))
    return ", ".join(seen) if seen else NOT_RECORDED


def mr2_variant_text(runs: pd.DataFrame) -> str:
    """MR²'s options that differ from the paper's (``MR2_PAPER_OPTIONS``) in a setting's runs (its default
    variants, as ``settings_table`` passes them), as a reader names the variant: "statistic=spread"; ""
    for the paper's MR², for runs without MR² and for runs tables that predate the options' columns."""
    mine = runs[runs["method"].eq(MR2)] if "method" in runs else runs.iloc[:0]
    shown = []
    for name, paper in MR2_PAPER_OPTIONS.items():
        column = f"config.method.options.{name}"
        for v in (mine[column].dropna().unique() if column in mine else []):
            same = (pd.to_numeric(v, errors="coerce") == paper) if isinstance(paper, (int, float)) else str(v) == paper
            if not same:
                shown.append(f"{name}={v:g}" if isinstance(v, float) else f"{name}={v}")
    return ", ".join(shown)


def tuned_text(tuned: list[str], followers: dict[str, str]) -> str:
    """The tuned column: the searched methods, then those that followed one: "mr2 (ablations follow)"."""
    searched = [m for m in tuned if m not in followers]
    follow = [m for m in tuned if m in followers]
    if not searched and not follow:
        return UNTUNED
    text = ", ".join(searched)
    if follow:
        who = "ablations" if set(follow) <= set(rules.ABLATIONS) else ", ".join(follow)
        text += f" ({who} {FOLLOW})"
    return text


def settings_table(runs: pd.DataFrame | None, convergence: pd.DataFrame | None = None) -> pd.DataFrame:
    """A row per dataset key of the runs table: dataset, data (data.name, with "long-tailed, ratio r"
    when ``data.imbalance`` is set), model, regime ("600/class × 6 ep", the cap before any imbalance),
    seeds (the fewest seeds of any method's default variant), tuned (the methods whose options the
    tuning stage chose, the followers named as such, or "none"), mr2 (``mr2_variant_text``: MR²'s options
    that are not the paper's, "" for the paper's MR²), cpu (``cpu_text``), code
    (``code_text``: the commits that trained its runs), check_of (the
    setting a convergence check is of, else empty), converged and convergence
    (``mr2.results.convergence.convergence_summary``)."""
    columns = ["dataset", "data", "model", "regime", "seeds", "tuned", "mr2", "cpu", "code", "check_of", "converged",
               "convergence"]
    if runs is None or runs.empty:
        return pd.DataFrame(columns=columns)
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
    out["tuned"] = [tuned_text(list(dict.fromkeys(tuned.loc[tuned["dataset"].eq(d), "method"])),
                               followers_of(tuned[tuned["dataset"].eq(d)])) for d in out["dataset"]]
    out["mr2"] = [mr2_variant_text(default[default["dataset"].eq(d)]) for d in out["dataset"]]
    out["cpu"] = [cpu_text(runs[runs["dataset"].eq(d)]) for d in out["dataset"]]
    out["code"] = [code_text(runs[runs["dataset"].eq(d)]) for d in out["dataset"]]
    out["check_of"] = first[CHECK].fillna("").to_numpy() if CHECK in first else ""
    table = convergence if convergence is not None else pd.DataFrame(columns=["dataset"])
    status = [convergence_summary(table, d, list(dict.fromkeys(default.loc[default["dataset"].eq(d), "method"])))
              for d in out["dataset"]]
    out["converged"] = [s[0] for s in status]
    out["convergence"] = [s[1] for s in status]
    return out[columns]


def followers_of(tuned: pd.DataFrame) -> dict[str, str]:
    """{method: the method it followed} among a setting's tuned runs: a tuned MR² ablation follows MR²
    (its options were MR²'s choice, not a search of its own; ``tune.follow``)."""
    methods = set(tuned.get("method", pd.Series(dtype=str)))
    return {a: MR2 for a in rules.ABLATIONS if a in methods and MR2 in methods}


# ----------------------------------------------------------------------------- one setting's parts
def delta_text(row: pd.Series) -> str:
    """``+1.8 [+1.4, +2.1]``; ``+1.8 (no CI)`` without an interval."""
    if not math.isfinite(float(row["diff_lo"])):
        return f"{row['diff']:+.1f} (no CI)"
    return f"{row['diff']:+.1f} [{row['diff_lo']:+.1f}, {row['diff_hi']:+.1f}]"


def mr2_rows(comparisons: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    """MR²'s comparisons of default variants, each as MR² − the other (``rules.oriented``), by (other, metric)."""
    c = comparisons[comparisons["variant"].eq(DEFAULT_VARIANT) & comparisons["against_variant"].eq(DEFAULT_VARIANT)
                    & (comparisons["method"].eq(MR2) | comparisons["against"].eq(MR2))]
    out = {}
    for _, r in c.iterrows():
        r = rules.oriented(r)
        out[(r["against"], r["metric"])] = r
    return out


def others_of(methods: set[str], reference: str, kind: str) -> list[str]:
    """The methods MR² is compared with in a part of ``kind``: ablation, control or baseline."""
    if kind == "ablation":
        return [a for a in rules.ABLATIONS if a in methods]
    if kind == "control":
        return [c for c in rules.CONTROLS if c in methods and c != reference]
    return [b for b in sorted(methods) if b != reference and b not in rules.NOT_BASELINES]


def _holm_note(rows: list[pd.Series]) -> str:
    """`` (Holm over k)``: the family a part's comparisons were corrected in, when it has more than one."""
    k = max((int(r.get("family_size", 1)) if pd.notna(r.get("family_size", 1)) else 1) for r in rows)
    return f" (Holm over {k})" if k > 1 else ""


def _cell(readings: list[tuple[pd.Series, str, str]], detail: str) -> dict:
    """A part's cell from its comparisons' readings [(row, claim, reading)]: its word (``part_word``),
    the Δs behind it, and the p-values of the tests behind that word (``rules.test_p_value``)."""
    word = rules.part_word([r for _, _, r in readings])
    tests = [rules.test_p_value(row, claim, r) for row, claim, r in readings if r == word]
    return {"word": word, "detail": detail, "p": tuple(p for p in tests if p is not None)}


def verdict_cells(comparisons: pd.DataFrame, methods: set[str], reference: str = "erm") -> dict[str, dict]:
    """The parts (``rules.PARTS``) of one setting: part -> {word, detail (the Δs behind it), p (its tests'
    p-values), every (each compared method's Δs, for a row without words)}, from its ``comparisons``
    (one dataset) and the default-variant ``methods`` it ran. A part whose methods did not run is
    "not run"; one whose comparisons a snapshot lacks is "not computed"."""
    at = mr2_rows(comparisons)
    overall = "top1" if (reference, "top1") in at else "all"
    cells: dict[str, dict] = {}
    for part, metric, claim in (("hard_up", "hard", "up"), ("easy_not_down", "easy", "not down"),
                                ("overall_up", overall, "up")):
        row = at.get((reference, metric))
        if MR2 not in methods or reference not in methods:
            cells[part] = {"word": NOT_RUN, "detail": "", "p": ()}
        elif row is None:
            cells[part] = {"word": NOT_COMPUTED, "detail": "", "p": ()}
        else:
            cells[part] = _cell([(row, claim, rules.reading(row, claim))], delta_text(row))
    for part, kind in KINDS.items():
        others = others_of(methods, reference, kind)
        metrics = ("hard",) if kind == "ablation" else ("hard", "easy")
        if MR2 not in methods or not others:
            cells[part] = {"word": NOT_RUN, "detail": "", "p": ()}
            continue
        if any((o, m) not in at for o in others for m in metrics):
            cells[part] = {"word": NOT_COMPUTED, "detail": "", "p": ()}
            continue
        per_other = {}
        for o in others:
            readings = [(at[(o, "hard")], "up", rules.reading(at[(o, "hard")], "up"))]
            if "easy" in metrics:
                readings.append((at[(o, "easy")], "not down", rules.reading(at[(o, "easy")], "not down")))
            text = f"vs {o}: " + ", ".join(f"{m} {delta_text(at[(o, m)])}" for m in metrics) if len(metrics) > 1 \
                else f"vs {o} {delta_text(at[(o, 'hard')])}"
            per_other[o] = (_cell(readings, text), readings)
        word = rules.part_word([c["word"] for c, _ in per_other.values()])
        deciding = [o for o, (c, _) in per_other.items() if c["word"] == word]
        note = _holm_note([at[(o, "hard")] for o in others])
        counts = ""
        if len(others) > 1:
            tally = pd.Series([c["word"] for c, _ in per_other.values()]).value_counts()
            counts = f" (of {len(others)}: " + ", ".join(f"{tally[w]} {w}" for w in rules.PRECEDENCE if w in tally) + ")"
        cells[part] = {"word": word, "detail": "; ".join(per_other[o][0]["detail"] for o in deciding) + counts + note,
                       "p": tuple(p for o in deciding for p in per_other[o][0]["p"]),
                       "every": "; ".join(c["detail"] for c, _ in per_other.values()) + note}
    return cells


# ----------------------------------------------------------------------------- the table
def verdict_table(comparisons: pd.DataFrame, methods: pd.DataFrame, settings: pd.DataFrame | None = None,
                  reference: str = "erm") -> pd.DataFrame:
    """A row per dataset of ``methods`` (columns dataset, method, variant: what was run) that is no
    convergence check: dataset, data, model, regime, cpu, tuned (from ``settings``), seeds (the fewest
    paired seeds behind any of MR²'s comparisons), per part of ``PARTS`` its word (``<part>``), the Δs
    behind it (``<part>_detail``), every compared method's Δs (``<part>_every``) and its tests'
    p-values (``<part>_p``); ``hard_excluded_above`` (the upper end of the two one-sided tests' 90 %
    interval of MR² − reference on the hard classes), ``reason`` (``rules.gate_reason``) and ``eligible``."""
    rows = []
    settings = settings if settings is not None else pd.DataFrame(columns=["dataset"])
    info = settings.drop_duplicates("dataset").set_index("dataset")
    for dataset in methods["dataset"].unique():
        setting = info.loc[dataset] if dataset in info.index else pd.Series(dtype=object)
        if str(setting.get("check_of", "") or "") not in ("", "nan"):
            continue  # a convergence check of another setting, not a setting of its own
        ran = set(methods.loc[methods["dataset"].eq(dataset) & methods["variant"].eq(DEFAULT_VARIANT), "method"])
        here = comparisons[comparisons["dataset"] == dataset]
        row = {"dataset": dataset, **{k: setting.get(k, "") for k in ("data", "model", "regime")}}
        row["cpu"] = str(setting.get("cpu", "") or NOT_RECORDED)
        row["mr2"] = str(setting.get("mr2", "") or "")
        for part, cell in verdict_cells(here, ran, reference).items():
            row[part], row[f"{part}_detail"], row[f"{part}_p"] = cell["word"], cell["detail"], cell["p"]
            row[f"{part}_every"] = cell.get("every", cell["detail"])
        behind = here[here["variant"].eq(DEFAULT_VARIANT) & here["against_variant"].eq(DEFAULT_VARIANT)
                      & (here["method"].eq(MR2) | here["against"].eq(MR2))]
        row["seeds"] = int(pd.to_numeric(behind["n_paired"], errors="coerce").min()) if len(behind) else 0
        hard = behind[behind["method"].eq(MR2) & behind["against"].eq(reference) & behind["metric"].eq("hard")]
        row["hard_excluded_above"] = float(hard["eq_hi"].iloc[0]) if len(hard) and "eq_hi" in hard else math.nan
        row["reference"] = reference
        row["tuned"] = str(setting.get("tuned", "") or TUNING_UNKNOWN)
        row["reason"] = rules.gate_reason(row["seeds"], setting.get("converged"), setting.get("convergence"))
        row["eligible"] = row["reason"] == ""
        rows.append(row)
    return pd.DataFrame(rows)


def primary_result(comparisons: pd.DataFrame, primary: dict | None, table: pd.DataFrame) -> dict | None:
    """The declared primary test (config key ``primary``: dataset, group, method, controls) of one run
    set: MR² − the better control on the group (``rules.primary_control``), its word
    (``rules.primary_word``), or ``not judged`` with the reason of its row's gates; None without a
    declaration or without the comparisons it needs."""
    if not primary:
        return None
    dataset, group = primary["dataset"], primary.get("group", "hard")
    at = mr2_rows(comparisons[comparisons["dataset"].eq(dataset)])
    rows = [at[(c, group)] for c in primary["controls"] if (c, group) in at]
    best = rules.primary_control(rows)
    if best is None or len(rows) < len(primary["controls"]):
        return None
    row = table[table["dataset"].eq(dataset)]
    reason = str(row["reason"].iloc[0]) if len(row) else "its setting is not in the table"
    word = rules.primary_word(best) if not reason else rules.NOT_JUDGED
    return {"dataset": dataset, "group": group, "method": primary["method"], "control": best["against"],
            "controls": ", ".join(primary["controls"]), "n_paired": int(best["n_paired"]),
            "diff": float(best["diff"]), "diff_lo": float(best["diff_lo"]), "diff_hi": float(best["diff_hi"]),
            "eq_lo": float(best["eq_lo"]), "eq_hi": float(best["eq_hi"]), "p_value": float(best["p_value"]),
            "effect_of_interest": float(best.get("effect_of_interest", rules.EFFECT_OF_INTEREST)),
            "word": word, "reason": reason,
            "others": "; ".join(f"vs {r['against']} {delta_text(r)}" for r in rows)}


def with_table_holm(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (one row per run set) with ``<part>_table``: each judged part's word after Holm's
    correction across every test behind a word of the table's judged rows (``rules.table_holm``); a
    part of a row without words, or one that rests on no test, keeps its word."""
    out = table.copy()
    if out.empty:
        return out
    tests = []
    for i, r in out.iterrows():
        for part in PARTS:
            out.loc[i, f"{part}_table"] = r[part]
            if not bool(r.get("eligible", False)):
                continue
            for p in r.get(f"{part}_p", ()) or ():
                if p is not None and math.isfinite(float(p)):
                    tests.append({"key": (i, part), "word": r[part], "p": float(p)})
    adjusted = rules.table_holm(pd.DataFrame(tests, columns=["key", "word", "p"]))
    for _, a in adjusted.iterrows():
        i, part = a["key"]
        out.loc[i, f"{part}_table"] = a["table_word"]
        out.loc[i, f"{part}_p_table"] = a["p_table"]
    out.attrs["table_tests"] = len(tests)
    return out
