"""The replication report (Markdown): the results table, sentences generated from the numbers,
the figures with their captions, and how to trace every number to its config.

Nothing here is hand-written about outcomes: every finding is computed from the tables, so the
report cannot go stale. Where our numbers disagree with the paper's claims it says so.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import yaml

from ..common.io import save_text
from ..common.runs import DEFAULT_VARIANT
from .figures.registry import FigureOptions, figure_options, missing_lines, title_of
from .figures.render import available
from .groups import held_out_group_accuracy
from .html import code_block, escape_frame, escape_text, inert_markdown, write_report_html
from .plotting import caption, display_name
from .longtail import longtail_section
from .per_class import changed_classes, class_changes
from .premise_text import premise_section
from .regimes import regime_section
from . import rules
from .rules import ABLATIONS, EQUIVALENT, NOT_JUDGED, SUPPORTED, UNDERPOWERED, shown_word, word_of
from .statistics import EFFECT_OF_INTEREST
from .tables import comparisons_table, paired, per_run_metrics
from .verdict_text import primary_line, verdict_markdown
from .verdicts import primary_result, settings_table, verdict_table

# The paper's CIFAR-100 / ResNet-32 numbers for ERM and MR² as a third-party summary gives them
# (unverified; percent; docs/method.md, "Experimental protocol").
PAPER_CIFAR100 = {"erm": {"all": 70.9, "hard": 56.7}, "mr2": {"all": 71.8, "hard": 58.5}}
#: what a method's paired hard/easy verdicts against the reference mean for the paper's claim
#: that the other methods trade easy-class accuracy for hard-class accuracy
TRADE_OFF = {
    ("higher", "lower"): "trades easy for hard (the trade-off the paper attributes to other methods)",
    ("higher", "higher"): "raises both hard and easy classes",
    ("higher", "no clear difference"): "raises hard classes without lowering easy ones",
    ("no clear difference", "lower"): "lowers easy classes without raising hard ones",
    ("lower", "lower"): "lowers both hard and easy classes",
    ("higher", EQUIVALENT): "raises hard classes without lowering easy ones",
    (EQUIVALENT, "lower"): "lowers easy classes without raising hard ones",
}
#: what each word of a paired comparison says about hard and about easy classes, for the pairs
#: ``TRADE_OFF`` does not name
HARD_PHRASE = {"higher": "raises hard classes", "lower": "lowers hard classes",
               "no clear difference": "shows no clear change in hard classes",
               UNDERPOWERED: "cannot show whether it changes hard classes (underpowered)",
               EQUIVALENT: "changes hard classes by less than the effect of interest (equivalent)"}
EASY_PHRASE = {"higher": "raises easy classes", "lower": "lowers easy classes",
               "no clear difference": "does not lower easy classes",
               UNDERPOWERED: "cannot show whether it lowers easy classes (underpowered)",
               EQUIVALENT: "changes easy classes by less than the effect of interest (equivalent)"}


def trade_off_kind(hard: str, easy: str) -> str:
    """What a method's hard- and easy-class words against the reference say (``TRADE_OFF``, else
    the two phrases of ``HARD_PHRASE`` and ``EASY_PHRASE``)."""
    if (hard, easy) in TRADE_OFF:
        return TRADE_OFF[(hard, easy)]
    return (f"{HARD_PHRASE.get(hard, 'leaves its change in hard classes ' + hard)}; "
            f"it {EASY_PHRASE.get(easy, 'leaves its change in easy classes ' + easy)}")


def _fmt(d: dict[str, float]) -> str:
    """``+0.3 points [95 % CI -0.4, +1.1; MDE 1.0]``: the paired Δ, its interval and its minimum
    detectable effect at 80 % power (``mr2.results.statistics.minimum_detectable_effect``)."""
    if math.isnan(d["diff_lo"]):
        return f"{d['diff']:+.1f} points (no interval)"
    mde = d.get("mde", math.nan)
    return (f"{d['diff']:+.1f} points [95 % CI {d['diff_lo']:+.1f}, {d['diff_hi']:+.1f}"
            + (f"; MDE {mde:.1f}]" if not math.isnan(mde) else "]"))


def _word(d: dict[str, float], effect_of_interest: float) -> str:
    """The word of one paired comparison (``word_of``; alone, not in a Holm family)."""
    return word_of(d, effect_of_interest)


#: the metrics of the sentences on MR², in their order, and how they are named there
FINDING_METRICS = {"hard": "hard classes", "easy": "easy classes", "all": "all classes (mean per-class)",
                   "top1": "overall top-1", "worst": "worst class"}


#: the parts of the claim the report's sentence reads, and how it names them
CLAIM_PARTS = {"hard_up": "hard classes up", "easy_not_down": "easy classes not down", "overall_up": "overall up"}


def claim_sentence(row: pd.Series | dict, effect_of_interest: float = EFFECT_OF_INTEREST) -> str:
    """The paper's claim for one setting as the verdict table words it (``mr2.results.verdicts``, the
    rulebook ``mr2.results.rules``, gates included): **supported** when its three parts are, otherwise
    **not supported**, each part's word beside it; **not judged** with the gate's reason when the
    setting earns no word. The report and the table read the same row, so they cannot disagree."""
    if not bool(row["eligible"]):
        return f"**{NOT_JUDGED}** here: {row['reason']}."
    # a part without comparisons (no easy classes when K < 3) is no part of the claim here
    words = {part: row[part] for part in CLAIM_PARTS if row[part] != rules.NOT_COMPUTED}
    whole = SUPPORTED if words and all(w == SUPPORTED for w in words.values()) else "not supported"
    return (f"**{whole}** here (" + "; ".join(f"{name} **{shown_word(words[p], effect_of_interest)}**"
                                             for p, name in CLAIM_PARTS.items() if p in words) + ").")


def part_readings(v: dict[str, str]) -> str:
    """For a method the verdict table does not judge (not MR²): each part's reading of its comparison's
    word (``rules.reading``), without the table's gates."""
    overall = "top1" if "top1" in v else "all"
    parts = [("hard", "up", "hard classes up"), (overall, "up", "overall up")]
    if "easy" in v:
        parts.insert(1, ("easy", "not down", "easy classes not down"))
    return "; ".join(f"{name} {rules.reading(v[m], claim)}" for m, claim, name in parts)


def findings(per_class: pd.DataFrame, runs: pd.DataFrame, groups: pd.DataFrame, reference: str = "erm",
             effect_of_interest: float = EFFECT_OF_INTEREST, method: str = "mr2",
             verdicts: pd.DataFrame | None = None) -> list[str]:
    """Plain sentences, per dataset, on the paper's claims for ``method`` (the MR² method of the run,
    ``registry.figure_options``), computed from the tables; a "no clear difference" whose minimum
    detectable effect exceeds ``effect_of_interest`` reads "underpowered". The claim's sentence for MR²
    is the verdict table's row of the dataset (``claim_sentence``; ``verdicts``, made from these
    tables without convergence checks when not given)."""
    if verdicts is None and method == rules.MR2:
        verdicts = verdict_table(comparisons_table(per_class, runs, groups, reference,
                                                   effect_of_interest=effect_of_interest),
                                 per_class[["dataset", "method", "variant"]].drop_duplicates(),
                                 settings_table(runs), reference)
    per_run = per_run_metrics(per_class, runs, groups)
    metrics = [m for m in FINDING_METRICS if m in per_run]  # no "easy" column when K < 3
    default = per_run[per_run["variant"] == DEFAULT_VARIANT]
    held_out = held_out_group_accuracy(per_class, reference)
    name = display_name(method)
    lines: list[str] = []
    for dataset in per_run["dataset"].unique():
        lines.append(f"### {dataset}")
        methods = set(per_run.loc[per_run["dataset"] == dataset, "method"])
        res = {m: paired(per_run, dataset, method, reference, m) for m in metrics} if {method, reference} <= methods else {}
        if res and any(d is None for d in res.values()):
            lines.append(f"- {name} and {reference.upper()} share no seed here: no paired comparison.")
        elif res:
            v = {m: _word(d, effect_of_interest) for m, d in res.items()}
            lines.append(f"- {name} against {reference.upper()}, paired by seed ({res['hard']['n_paired']} seeds): "
                         + "; ".join(f"{FINDING_METRICS[m]} {_fmt(res[m])} ({v[m]})" for m in metrics) + ".")
            row = (verdicts[verdicts["dataset"].eq(dataset)] if method == rules.MR2 and verdicts is not None
                   and len(verdicts) else pd.DataFrame())
            lines.append(
                f"- The paper's claim ({name} raises hard-class accuracy without lowering easy-class accuracy, "
                "and raises overall accuracy) is "
                + (claim_sentence(row.iloc[0], effect_of_interest).rstrip(".") + " (the verdict table's row)." if len(row)
                   else f"not judged by the verdict table (it judges MR²); part by part: {part_readings(v)}.")
            )
            lines += held_out_finding(held_out, dataset, reference, effect_of_interest, method)
        for ablation in ABLATIONS:
            if method in methods and ablation in methods and ablation != method:
                parts = []
                for metric in ("all", "hard"):
                    d = paired(per_run, dataset, method, ablation, metric)
                    if d is not None:
                        parts.append(f"{metric} {_fmt(d)} ({_word(d, effect_of_interest)} for {name})")
                if parts:
                    lines.append(f"- Full {name} against the ablation `{ablation}`: " + "; ".join(parts) + ". "
                                 "The paper claims each ablation loses to full MR².")
        lines += baseline_findings(per_run, dataset, reference, effect_of_interest, method)
        if dataset.startswith("cifar100") and {"erm", "mr2"} <= methods:
            ours = default[default["dataset"] == dataset].groupby("method")[["all", "hard"]].mean() * 100
            lines.append("- Against the paper's CIFAR-100 numbers (third-party summary, unverified; our default "
                         "variants): " + "; ".join(f"{m.upper()} all {ours.loc[m, 'all']:.1f} (paper {p['all']}), hard "
                                                    f"{ours.loc[m, 'hard']:.1f} (paper {p['hard']})"
                                                    for m, p in PAPER_CIFAR100.items()) + ".")
        lines.append("")
    return lines


def held_out_finding(held_out: pd.DataFrame, dataset: str, reference: str,
                     effect_of_interest: float = EFFECT_OF_INTEREST, method: str = "mr2") -> list[str]:
    """``method``'s paired hard/easy differences with each seed's groups ranked on the reference's other
    seeds (``mr2.results.groups.held_out_group_accuracy``), free of the regression to the mean that
    favours a hard-class gain when groups are ranked on the compared runs; nothing with one seed."""
    res = {m: paired(held_out, dataset, method, reference, m) for m in ("hard", "easy") if m in held_out}
    if len(res) < 2 or any(d is None for d in res.values()):
        return []
    v = {m: _word(d, effect_of_interest) for m, d in res.items()}
    return [f"- The same with each seed's groups ranked on the {reference.upper()} runs of the other seeds "
            f"(ranking and comparing on the same runs favours a hard-class gain and an easy-class loss by "
            f"regression to the mean; this check has no such bias): hard classes {_fmt(res['hard'])} "
            f"({v['hard']}); easy classes {_fmt(res['easy'])} ({v['easy']})."]


def baseline_findings(per_run: pd.DataFrame, dataset: str, reference: str = "erm",
                      effect_of_interest: float = EFFECT_OF_INTEREST, method: str = "mr2") -> list[str]:
    """A sentence per method other than the reference, ``method`` (MR²) and its ablations (the baselines and
    the release's loss), in the tables' order: its paired hard- and easy-class differences to the
    reference (with their MDE) and whether it raises hard classes and lowers easy ones, in the words
    of ``comparison_word`` (underpowered included; ``trade_off_kind``), or why there is none; then
    one summary line."""
    present = list(dict.fromkeys(per_run.loc[per_run["dataset"] == dataset, "method"]))
    baselines = [m for m in present if m not in (reference, method, *ABLATIONS)]
    if reference not in present or not baselines:
        return []
    lines, kinds = [], {}
    for baseline in baselines:
        res = {m: paired(per_run, dataset, baseline, reference, m) for m in ("hard", "easy", "all") if m in per_run}
        if "easy" not in res:  # no easy classes (K < 3)
            continue
        if any(d is None for d in res.values()):
            lines.append(f"- `{baseline}` shares no seed with {reference.upper()} here: no paired comparison.")
            continue
        v = {m: _word(d, effect_of_interest) for m, d in res.items()}
        identical = all(d["diff"] == 0 and d["diff_sd"] == 0 for d in res.values())
        kind = f"is identical to {reference.upper()} on every seed" if identical else trade_off_kind(v["hard"], v["easy"])
        kinds.setdefault(kind, []).append(baseline)
        lines.append(f"- `{baseline}` against {reference.upper()} ({res['all']['n_paired']} seeds): hard classes "
                     f"{_fmt(res['hard'])} ({v['hard']}); easy classes {_fmt(res['easy'])} ({v['easy']}); all "
                     f"classes {_fmt(res['all'])} ({v['all']}). It {kind}."
                     + mr2_against(per_run, dataset, baseline, effect_of_interest, method))
    if kinds:
        lines.append("- Baselines by outcome: " + "; ".join(f"{kind}: {', '.join(f'`{m}`' for m in ms)}"
                                                          for kind, ms in kinds.items()) + ".")
    return lines


def mr2_against(per_run: pd.DataFrame, dataset: str, baseline: str,
                effect_of_interest: float = EFFECT_OF_INTEREST, method: str = "mr2") -> str:
    """`` MR² against it: hard classes ... (word); easy classes ... (word).``: ``method``'s (full
    MR²'s) paired hard- and easy-class differences to ``baseline`` (the verdict's "MR² above the
    baselines"); empty without it or a common seed, or for MR²'s own family."""
    if baseline.startswith("mr2") or method not in set(per_run.loc[per_run["dataset"] == dataset, "method"]):
        return ""
    res = {m: paired(per_run, dataset, method, baseline, m) for m in ("hard", "easy")}
    if any(d is None for d in res.values()):
        return ""
    return (f" {display_name(method)} against it: " + "; ".join(f"{m} classes {_fmt(d)} ({_word(d, effect_of_interest)})"
                                            for m, d in res.items()) + ".")


#: the symbols of the method options a report states (plain text, no TeX)
OPTION_SYMBOLS = {"c_bar": "c̄", "lam": "λ", "p": "p", "momentum": "β (momentum of the statistics)", "beta": "β"}
OPTION_PREFIX = "config.method.options."
#: the figure that leads the report (the claim) and the one right after the findings (the premise)
LEAD_FIGURE, PREMISE_FIGURE = "claim_forest", "accuracy_vs_variability"


def method_options_line(runs: pd.DataFrame) -> str | None:
    """The method options the default runs used, read from each run's resolved config (the runs
    table's ``config.method.options.*``): ``MR²: c̄ = 1, λ = 0.1, p = 2, β = 0.99; ...``. Options
    of ``OPTION_SYMBOLS`` first; several values of one option (they differ between datasets) are
    all listed. None when the runs table holds no options."""
    columns = [c for c in runs.columns if c.startswith(OPTION_PREFIX)]
    if not columns:
        return None
    default = runs[runs["variant"] == DEFAULT_VARIANT]
    if default.empty:
        return None
    names = sorted((c[len(OPTION_PREFIX):] for c in columns),
                   key=lambda o: (list(OPTION_SYMBOLS).index(o) if o in OPTION_SYMBOLS else len(OPTION_SYMBOLS), o))
    parts = []
    for method, rows in default.groupby("method", sort=False):
        opts = []
        for option in names:
            values = list(dict.fromkeys(v for v in rows[OPTION_PREFIX + option] if not pd.isna(v)))
            if values:
                opts.append(f"{OPTION_SYMBOLS.get(option, option)} = {', '.join(_option_value(v) for v in values)}")
        if opts:
            parts.append(f"{display_name(method)}: {', '.join(opts)}")
    return ("Method options as run (each run's resolved config): " + "; ".join(parts) + ".") if parts else None


def _option_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def class_findings(per_class: pd.DataFrame, reference: str = "erm", method: str = "mr2") -> list[str]:
    """Per dataset, how many classes' paired intervals (``mr2.results.per_class.class_changes``) exclude
    0 for ``method``; a few of many are flagged as one of many comparisons
    (``mr2.results.statistics.one_of_many``)."""
    changes = class_changes(per_class, reference, [method])
    lines = []
    for dataset, part in changes.groupby("dataset", sort=False):
        if part["diff_lo"].isna().all():
            continue
        up, down, warning = changed_classes(part)
        named = "; ".join(x for x in (f"higher: {', '.join(map(str, up))}" if up else "",
                                      f"lower: {', '.join(map(str, down))}" if down else "") if x)
        lines.append(f"- `{dataset}`, per class ({display_name(method)} against {reference.upper()}, figure "
                     f"`change_vs_erm`): {len(up) + len(down)} of {len(part)} classes' intervals exclude 0"
                     + (f" ({named})" if named else "") + (f" — {warning}." if warning else "."))
    return lines


def figure_block(name: str, path: str, report_dir: Path) -> list[str]:
    """A figure's heading (``registry.title_of``), image and caption."""
    return [f"### {title_of(name)}", "", f"![{name}]({path})", "", caption(report_dir, name), ""]


def write_report(tables: dict[str, pd.DataFrame], results_md: str, figures: dict[str, str], out: str | Path,
                 report_dir: str | Path, config: dict[str, Any], reference: str | None = None,
                 sections: Sequence[str] = (), analysis: str | Path | None = None,
                 html_out: str | Path | None = None, effect_of_interest: float = EFFECT_OF_INTEREST,
                 options: FigureOptions | None = None) -> str:
    """Assemble results/report.md; ``figures`` maps a figure name to its PNG path relative to ``out``;
    ``sections`` are Markdown sections written by other steps (e.g. the theory step's). ``tables``:
    per_class, runs, groups, and convergence (``mr2 table``'s checks at more epochs) where the run made it.

    The methods the report and its figures are about (the reference, the MR² method, the swept
    method) are ``options``, by default read from the pipeline ``config`` as ``mr2 figures`` reads
    them (``registry.figure_options``); ``reference`` replaces the reference. The report opens with
    the verdict on each part of the paper's claim (``mr2.results.verdicts``) and shows only what the
    run holds: a figure whose comparison the tables lack (its table is empty,
    ``mr2.results.figures.render.available``) is left out, with one line naming the config that
    runs it (section "Not in this run"). Order: the verdict, the results table, the findings led by
    the claim's figure (``claim_forest``), the premise's picture (``accuracy_vs_variability``) right
    after them, the "Long-tailed data" section for long-tailed training data
    (``mr2.results.longtail``), the "Training regime" section when a data name is run in several regimes
    (``mr2.results.regimes``), "Does the premise hold?" from ``analysis`` (the folder of
    ``mr2.analysis.write_analysis``), the other steps' ``sections``, the other figures, the config.
    Every name from the tables (datasets, methods, variants, classes) is ``escape_text``-ed, and the
    config is shown in a code block no string of it can close; the pasted ``results_md`` and ``sections``
    are ``inert_markdown``, and the page renders no raw HTML: no markup of a config, a CSV or a file is live.
    """
    figure_opts = options or figure_options(config)
    if reference is not None:
        figure_opts = replace(figure_opts, reference=reference)
    per_class, runs, groups = (escape_frame(tables[name]) for name in ("per_class", "runs", "groups"))
    # each method's convergence check (``mr2 table``'s convergence.csv), so the verdict's settings say
    # whether every method is at its own convergence, as the snapshots' verdict table does
    convergence = escape_frame(tables["convergence"]) if tables.get("convergence") is not None else None
    reference, method = escape_text(figure_opts.reference), escape_text(figure_opts.method)
    report_dir = Path(report_dir)
    holds = available(tables, figure_opts)  # computed on the tables as they are, names unescaped
    shown = {name: path for name, path in figures.items() if holds.get(name, True)}
    lead = figure_block(LEAD_FIGURE, shown.pop(LEAD_FIGURE), report_dir) if LEAD_FIGURE in shown else []
    premise = figure_block(PREMISE_FIGURE, shown.pop(PREMISE_FIGURE), report_dir) if PREMISE_FIGURE in shown else []
    options_line = method_options_line(runs)
    # the verdict table's rows, read by the verdict section and by the findings' claim sentences alike
    comparisons = comparisons_table(per_class, runs, groups, reference, effect_of_interest=effect_of_interest)
    verdicts = verdict_table(comparisons, per_class[["dataset", "method", "variant"]].drop_duplicates(),
                             settings_table(runs, convergence), reference)
    verdicts = verdicts.assign(snapshot="this run", config="", identity="") if len(verdicts) else verdicts
    primary = primary_result(comparisons, config.get("primary"), verdicts) if isinstance(config, dict) else None
    if primary is not None:
        row = verdicts[verdicts["dataset"].eq(primary["dataset"])]
        primary.update(snapshot="this run", config="the config below", cpu=str(row["cpu"].iloc[0]))
    n_runs = len(runs)
    text = [
        "# MR² replication report",
        "",
        f"{n_runs} runs: datasets {', '.join(map(str, runs['dataset'].unique()))}; methods "
        f"{', '.join(map(str, runs['method'].unique()))}; seeds {', '.join(map(str, sorted(runs['seed'].unique())))}. "
        "Each run's resolved config is `config.yaml` in its run folder (`runs/<dataset>/<method>/"
        "<variant>/<hash>/seed<k>/` beside this report); the tidy tables are in `tables/`.",
        "",
        *([options_line, ""] if options_line else []),
        "Easy/medium/hard: thirds of the classes ranked by the reference method's per-class test accuracy "
        f"(`{reference}`, mean over seeds) — our reading of the paper, whose rule is unpublished; classes "
        "without test samples are in no group. Ranking and comparing on the same reference runs favours a "
        "hard-class gain by regression to the mean, so the findings repeat MR²'s hard/easy differences with "
        "each seed's groups ranked on the reference's other seeds. Model selection never uses test data.",
        "",
        "## Verdict",
        "",
        *([primary_line(primary), ""] if primary else []),
        verdict_markdown(verdicts, effect=effect_of_interest).strip(),
        "",
        "## Results",
        "",
        caption(report_dir, "results_table"),
        "",
        inert_markdown(results_md.strip()),
        "",
        "## What we find",
        "",
        *lead,
        *findings(per_class, runs, groups, reference, effect_of_interest, method, verdicts),
        *class_findings(per_class, reference, method),
        "",
        *premise,  # a subsection of the findings: before the next section opens
        *longtail_section(per_class, runs, reference),
        *regime_section(per_class, runs, groups, reference),
        *(premise_section(analysis, out, report_dir, reference) if analysis else []),
        *[f"{inert_markdown(section.strip())}\n" for section in sections],
    ]
    if shown:
        text += ["## More figures", ""]
        for name, path in shown.items():
            text += figure_block(name, path, report_dir)
    missing = missing_lines(holds, replace(figure_opts, reference=reference, method=method))
    if missing:
        text += ["## Not in this run", "", *[f"- {line}" for line in missing], ""]
    text += ["## Configuration", "", code_block(yaml.safe_dump(config, sort_keys=False).strip(), "yaml"), ""]
    body = "\n".join(text)
    save_text(body, out)
    if html_out is not None:
        write_report_html(body, Path(out).parent, html_out)
    return body
