"""The replication report (Markdown): the results table, sentences generated from the numbers,
the figures with their captions, and how to trace every number to its config.

Nothing here is hand-written about outcomes: every finding is computed from the tables, so the
report cannot go stale. Where our numbers disagree with the paper's claims it says so.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import yaml

from ..common.io import save_text
from ..common.runs import DEFAULT_VARIANT
from .groups import held_out_group_accuracy
from .html import write_report_html
from .plotting import caption
from .premise_text import premise_section
from .regimes import regime_section
from .statistics import verdict
from .tables import paired, per_run_metrics

# The paper's CIFAR-100 / ResNet-32 numbers for ERM and MR² as a third-party summary gives them
# (unverified; percent; docs/method.md, "Experimental protocol").
PAPER_CIFAR100 = {"erm": {"all": 70.9, "hard": 56.7}, "mr2": {"all": 71.8, "hard": 58.5}}
ABLATIONS = ("mr2_uniform", "mr2_no_rep")
#: what a method's paired hard/easy verdicts against the reference mean for the paper's claim
#: that the other methods trade easy-class accuracy for hard-class accuracy
TRADE_OFF = {
    ("higher", "lower"): "trades easy for hard (the trade-off the paper attributes to other methods)",
    ("higher", "higher"): "raises both hard and easy classes",
    ("higher", "no clear difference"): "raises hard classes without lowering easy ones",
    ("no clear difference", "lower"): "lowers easy classes without raising hard ones",
    ("lower", "lower"): "lowers both hard and easy classes",
}


def _fmt(d: dict[str, float]) -> str:
    if math.isnan(d["diff_lo"]):
        return f"{d['diff']:+.1f} points (no interval)"
    return f"{d['diff']:+.1f} points [95 % CI {d['diff_lo']:+.1f}, {d['diff_hi']:+.1f}]"


#: the metrics of the sentences on MR², in their order, and how they are named there
FINDING_METRICS = {"hard": "hard classes", "easy": "easy classes", "all": "all classes (mean per-class)",
                   "top1": "overall top-1", "worst": "worst class"}


def claim_verdict(v: dict[str, str]) -> str:
    """The paper's claim from MR²'s paired verdicts against the reference (``mr2.results.statistics.verdict``):
    hard classes higher, easy classes not lower, overall accuracy (top-1; the mean per-class accuracy
    where the tables have no top-1) higher. Metrics absent from ``v`` (no easy classes when K < 3)
    are not part of it."""
    overall = "top1" if "top1" in v else "all"
    needed = {"hard": v["hard"], overall: v[overall], **({"easy": v["easy"]} if "easy" in v else {})}
    if any(x.startswith("undetermined") for x in needed.values()):
        return "**undetermined** here (too few paired seeds for an interval)."
    holds = needed["hard"] == "higher" and needed.get("easy") != "lower" and needed[overall] == "higher"
    return "**supported** here." if holds else "**not supported** here at the 95 % level."


def findings(per_class: pd.DataFrame, runs: pd.DataFrame, groups: pd.DataFrame, reference: str = "erm") -> list[str]:
    """Plain sentences, per dataset, on the paper's claims, computed from the tables."""
    per_run = per_run_metrics(per_class, runs, groups)
    metrics = [m for m in FINDING_METRICS if m in per_run]  # no "easy" column when K < 3
    default = per_run[per_run["variant"] == DEFAULT_VARIANT]
    held_out = held_out_group_accuracy(per_class, reference)
    lines: list[str] = []
    for dataset in per_run["dataset"].unique():
        lines.append(f"### {dataset}")
        methods = set(per_run.loc[per_run["dataset"] == dataset, "method"])
        res = {m: paired(per_run, dataset, "mr2", reference, m) for m in metrics} if {"mr2", reference} <= methods else {}
        if res and any(d is None for d in res.values()):
            lines.append(f"- MR² and {reference.upper()} share no seed here: no paired comparison.")
        elif res:
            v = {m: verdict(d["diff"], d["diff_lo"], d["diff_hi"]) for m, d in res.items()}
            lines.append(f"- MR² against {reference.upper()}, paired by seed ({res['hard']['n_paired']} seeds): "
                         + "; ".join(f"{FINDING_METRICS[m]} {_fmt(res[m])} ({v[m]})" for m in metrics) + ".")
            lines.append(
                "- The paper's claim (MR² raises hard-class accuracy without lowering easy-class accuracy, "
                "and raises overall accuracy) is " + claim_verdict(v)
            )
            lines += held_out_finding(held_out, dataset, reference)
        for ablation in ABLATIONS:
            if "mr2" in methods and ablation in methods:
                parts = []
                for metric in ("all", "hard"):
                    d = paired(per_run, dataset, "mr2", ablation, metric)
                    if d is not None:
                        parts.append(f"{metric} {_fmt(d)} ({verdict(d['diff'], d['diff_lo'], d['diff_hi'])} for MR²)")
                if parts:
                    lines.append(f"- Full MR² against the ablation `{ablation}`: " + "; ".join(parts) + ". "
                                 "The paper claims each ablation loses to full MR².")
        lines += baseline_findings(per_run, dataset, reference)
        if dataset.startswith("cifar100") and {"erm", "mr2"} <= methods:
            ours = default[default["dataset"] == dataset].groupby("method")[["all", "hard"]].mean() * 100
            lines.append("- Against the paper's CIFAR-100 numbers (third-party summary, unverified; our default "
                         "variants): " + "; ".join(f"{m.upper()} all {ours.loc[m, 'all']:.1f} (paper {p['all']}), hard "
                                                    f"{ours.loc[m, 'hard']:.1f} (paper {p['hard']})"
                                                    for m, p in PAPER_CIFAR100.items()) + ".")
        lines.append("")
    return lines


def held_out_finding(held_out: pd.DataFrame, dataset: str, reference: str) -> list[str]:
    """MR²'s paired hard/easy differences with each seed's groups ranked on the reference's other
    seeds (``mr2.results.groups.held_out_group_accuracy``), free of the regression to the mean that
    favours a hard-class gain when groups are ranked on the compared runs; nothing with one seed."""
    res = {m: paired(held_out, dataset, "mr2", reference, m) for m in ("hard", "easy") if m in held_out}
    if len(res) < 2 or any(d is None for d in res.values()):
        return []
    v = {m: verdict(d["diff"], d["diff_lo"], d["diff_hi"]) for m, d in res.items()}
    return [f"- The same with each seed's groups ranked on the {reference.upper()} runs of the other seeds "
            f"(ranking and comparing on the same runs favours a hard-class gain and an easy-class loss by "
            f"regression to the mean; this check has no such bias): hard classes {_fmt(res['hard'])} "
            f"({v['hard']}); easy classes {_fmt(res['easy'])} ({v['easy']})."]


def baseline_findings(per_run: pd.DataFrame, dataset: str, reference: str = "erm") -> list[str]:
    """A sentence per method other than the reference, MR² and its ablations (the baselines and
    the release's loss), in the tables' order: its paired hard- and easy-class differences to the
    reference and whether it raises hard classes and lowers easy ones; then one summary line."""
    present = list(dict.fromkeys(per_run.loc[per_run["dataset"] == dataset, "method"]))
    baselines = [m for m in present if m not in (reference, "mr2", *ABLATIONS)]
    if reference not in present or not baselines:
        return []
    lines, kinds = [], {}
    for method in baselines:
        res = {m: paired(per_run, dataset, method, reference, m) for m in ("hard", "easy", "all") if m in per_run}
        if "easy" not in res or any(d is None for d in res.values()):  # no easy classes (K < 3) or no common seed
            continue
        v = {m: verdict(d["diff"], d["diff_lo"], d["diff_hi"]) for m, d in res.items()}
        kind = TRADE_OFF.get((v["hard"], v["easy"]), "shows no clear change in hard classes"
                             if v["hard"] == "no clear difference" else f"changes hard classes: {v['hard']}; easy: {v['easy']}")
        kinds.setdefault(kind, []).append(method)
        lines.append(f"- `{method}` against {reference.upper()} ({res['all']['n_paired']} seeds): hard classes "
                     f"{_fmt(res['hard'])} ({v['hard']}); easy classes {_fmt(res['easy'])} ({v['easy']}); all "
                     f"classes {_fmt(res['all'])} ({v['all']}). It {kind}.")
    if lines:
        lines.append("- Baselines by outcome: " + "; ".join(f"{kind}: {', '.join(f'`{m}`' for m in ms)}"
                                                          for kind, ms in kinds.items()) + ".")
    return lines


def write_report(tables: dict[str, pd.DataFrame], results_md: str, figures: dict[str, str], out: str | Path,
                 report_dir: str | Path, config: dict[str, Any], reference: str = "erm",
                 sections: Sequence[str] = (), analysis: str | Path | None = None,
                 html_out: str | Path | None = None) -> str:
    """Assemble results/report.md; ``figures`` maps a figure name to its PNG path relative to ``out``;
    ``sections`` are Markdown sections written by other steps (e.g. the theory step's), placed
    before the figures; the "Training regime" section follows the findings when a data name is run
    in several regimes (``mr2.results.regimes``); ``analysis`` (the folder of
    ``mr2.analysis.write_analysis``) adds the "Does the premise hold?" section after them."""
    per_class, runs, groups = tables["per_class"], tables["runs"], tables["groups"]
    report_dir = Path(report_dir)
    n_runs = len(runs)
    text = [
        "# MR² replication report",
        "",
        f"{n_runs} runs: datasets {', '.join(map(str, runs['dataset'].unique()))}; methods "
        f"{', '.join(map(str, runs['method'].unique()))}; seeds {', '.join(map(str, sorted(runs['seed'].unique())))}. "
        "Each run's resolved config is `config.yaml` in its run folder (`runs/<dataset>/<method>/"
        "<variant>/<hash>/seed<k>/` beside this report); the tidy tables are in `tables/`.",
        "",
        "Easy/medium/hard: thirds of the classes ranked by the reference method's per-class test accuracy "
        f"(`{reference}`, mean over seeds) — our reading of the paper, whose rule is unpublished; classes "
        "without test samples are in no group. Ranking and comparing on the same reference runs favours a "
        "hard-class gain by regression to the mean, so the findings repeat MR²'s hard/easy differences with "
        "each seed's groups ranked on the reference's other seeds. Model selection never uses test data.",
        "",
        "## Results",
        "",
        caption(report_dir, "results_table"),
        "",
        results_md.strip(),
        "",
        "## What we find",
        "",
        *findings(per_class, runs, groups, reference),
        *regime_section(per_class, runs, groups, reference),
        *(premise_section(analysis, out, report_dir, reference) if analysis else []),
        *[f"{section.strip()}\n" for section in sections],
        "## Figures",
        "",
    ]
    for name, path in figures.items():
        text += [f"### {name.replace('_', ' ').capitalize()}", "", f"![{name}]({path})", "", caption(report_dir, name), ""]
    text += ["## Configuration", "", "```yaml", yaml.safe_dump(config, sort_keys=False).strip(), "```", ""]
    body = "\n".join(text)
    save_text(body, out)
    if html_out is not None:
        write_report_html(body, Path(out).parent, html_out)
    return body

