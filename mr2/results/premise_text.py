"""The report's "Does the premise hold?" section, rendered from the premise analysis's tables:
every sentence is computed from the numbers."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from ..common.runs import DEFAULT_VARIANT
from .html import escape_frame, escape_text
from .plotting import caption, display_name
from .premise_tables import EQUAL_CV, EXPLORATORY_OPTIONS, FIGURE_NAMES, NORMS, PARTS, SYMBOLS, TEMPERATURE, read_analysis
from .statistics import LEVEL, correlation_verdict, no_interval_reason


def is_exploratory(variant: str) -> bool:
    """True for our exploratory margin variants (``statistic=...``, ``p=...``)."""
    return str(variant).split("=", 1)[0] in EXPLORATORY_OPTIONS and "=" in str(variant)


def label(method: str, variant: str) -> str:
    """``MR²`` for the default variant, ``MR² (statistic=spread, exploratory)`` for ours (display names,
    ``mr2.results.plotting.display_name``)."""
    return f"{display_name(method)} ({variant}, exploratory)" if is_exploratory(variant) else display_name(method, variant)


def lookup(summary: pd.DataFrame, dataset: str, method: str, variant: str, x: str, y: str,
           source: str = "final", epoch: int | None = None) -> dict[str, Any] | None:
    """The summary row of one correlation, or None when the tables do not have it."""
    sel = ((summary["dataset"] == dataset) & (summary["method"] == method) & (summary["variant"] == variant)
           & (summary["source"] == source) & (summary["x"] == x) & (summary["y"] == y))
    sel &= summary["epoch"].isna() if epoch is None else (summary["epoch"] == epoch)
    rows = summary[sel]
    return None if rows.empty else rows.iloc[0].to_dict()


def percent(level: float) -> str:
    """0.95 -> '95 %'."""
    return f"{100 * level:.0f} %"


def format_rho(row: dict[str, Any] | None, level: float = LEVEL) -> str:
    """``+0.53 [95 % CI +0.21, +0.85; 3 seeds]``; says when ρ or its interval is undefined."""
    if row is None:
        return "not measured"
    if not row["n_defined"]:
        return "undefined (fewer than 3 classes, or one side is constant across classes)"
    if pd.isna(row["rho_lo"]):
        return f"{row['rho_mean']:+.2f} [{no_interval_reason(int(row['n_defined']))}]"
    return (f"{row['rho_mean']:+.2f} [{percent(level)} CI {row['rho_lo']:+.2f}, {row['rho_hi']:+.2f}; "
            f"{int(row['n_defined'])} seeds]")


def link_verdict(row: dict[str, Any] | None) -> str:
    """The word a link's seed interval earns (``mr2.results.statistics.correlation_verdict``): 'holds',
    'reversed', 'not shown', 'uninformative' (as wide as [−1, +1]) or 'undetermined' (no interval:
    fewer than 3 distinct per-seed values, ρ undefined, or an interval of zero width)."""
    if row is None or not row["n_defined"] or pd.isna(row["rho_lo"]) or not row["rho_hi"] - row["rho_lo"] > 1e-9:
        return "undetermined"
    return correlation_verdict(row["rho_lo"], row["rho_hi"])


def _share_sentence(dec: pd.DataFrame, dataset: str, method: str) -> str | None:
    """What a_k is made of for ``method``'s features (L2), from the decomposition summary."""
    part = dec[(dec["dataset"] == dataset) & (dec["method"] == method) & (dec["variant"] == DEFAULT_VARIANT)
               & (dec["p"] == 2)]
    if part.empty:
        return None
    share = part["mean_share"].dropna()
    cv = {c: float(part[c].std(ddof=0) / part[c].mean()) if part[c].mean() else math.nan for c in PARTS}
    # "roughly equal" (the reviewers' question): a coefficient of variation below EQUAL_CV
    return (f"‖μ̂_k‖² makes up {100 * share.median():.0f} % of a_k (median over classes; "
            f"{100 * share.min():.0f}–{100 * share.max():.0f} %). Across classes ‖μ̂_k‖² varies with a "
            f"coefficient of variation of {cv['mean_sq_norm']:.2f} and ‖ŝ_k‖² with {cv['spread']:.2f}"
            + (" — the mean's norm is roughly equal across classes." if cv["mean_sq_norm"] < EQUAL_CV
               else " — the mean's norm is not equal across classes."))


def _epoch_sentence(summary: pd.DataFrame, dataset: str, method: str, variant: str) -> str | None:
    """How ρ(ERM error, running γ_k) evolves over training."""
    part = summary[(summary["dataset"] == dataset) & (summary["method"] == method) & (summary["variant"] == variant)
                   & (summary["source"] == "epoch") & (summary["x"] == "erm_error") & (summary["y"] == "gamma")]
    part = part.dropna(subset=["epoch", "rho_mean"]).sort_values("epoch")  # ρ undefined: fewer than 3 classes
    if part.empty:
        return None
    first, last = part.iloc[0], part.iloc[-1]
    held = [int(e) for e, lo in zip(part["epoch"], part["rho_lo"]) if pd.notna(lo) and lo > 0]
    return (f"During training (running statistics), ρ(ERM error, γ_k) goes from {first['rho_mean']:+.2f} after "
            f"epoch {int(first['epoch'])} to {last['rho_mean']:+.2f} after epoch {int(last['epoch'])}; its interval "
            + (f"is above 0 after {len(held)} of {len(part)} epochs (first after epoch {held[0]})." if held
               else f"is above 0 after none of the {len(part)} epochs."))


def premise_findings(analysis: dict[str, pd.DataFrame], reference: str = "erm", method: str = "mr2",
                     level: float = LEVEL) -> list[str]:
    """Plain sentences per dataset: which links of the chain hold, computed from the tables."""
    summary, dec = analysis["correlation_summary"], analysis["decomposition_summary"]
    lines: list[str] = []
    for dataset in summary["dataset"].unique():
        def get(m, v, x, y, d=dataset):
            return lookup(summary, d, m, v, x, y)

        lines += [f"### {dataset}", ""]
        link1 = get(reference, DEFAULT_VARIANT, "erm_error", "a")
        named = [(SYMBOLS[s], s) for s in PARTS] + [(f"a_k (L{p})", f"a{sfx}") for p, sfx in NORMS.items() if p != 2]
        named.append(("a_k of the test features", "test_a"))
        parts = "; ".join(f"{name}: {format_rho(get(reference, DEFAULT_VARIANT, 'erm_error', column), level)}"
                          for name, column in named)
        lines.append(f"- **Link 1, hard classes vary more** ({reference.upper()}'s training features): "
                     f"ρ(ERM error, a_k) = {format_rho(link1, level)} — **{link_verdict(link1)}**. By part and norm: {parts}.")
        share = _share_sentence(dec, dataset, reference)
        if share:
            drivers = {s: get(reference, DEFAULT_VARIANT, "a", s) for s in PARTS}
            rho = {s: (r["rho_mean"] if r and r["n_defined"] else math.nan) for s, r in drivers.items()}
            follows = ("‖μ̂_k‖²" if rho["mean_sq_norm"] > rho["spread"] else "‖ŝ_k‖²") \
                if not any(math.isnan(v) for v in rho.values()) else "undetermined"
            lines.append(f"- What a_k measures: {share} The ranking of a_k follows {follows} more "
                         f"(ρ(a_k, ‖μ̂_k‖²) = {format_rho(drivers['mean_sq_norm'], level)}; ρ(a_k, ‖ŝ_k‖²) = "
                         f"{format_rho(drivers['spread'], level)}).")
        link2 = get(method, DEFAULT_VARIANT, "erm_error", "gamma")
        link3 = get(method, DEFAULT_VARIANT, "gamma", "change")
        gains = get(method, DEFAULT_VARIANT, "erm_error_other_seeds", "change")
        if link2 is not None:
            lines.append(f"- **Link 2, harder classes get larger margins** ({method}'s final γ_k): "
                         f"ρ(ERM error, γ_k) = {format_rho(link2, level)} — **{link_verdict(link2)}**.")
            epoch = _epoch_sentence(summary, dataset, method, DEFAULT_VARIANT)
            if epoch:
                lines.append(f"  {epoch}")
            lines.append(f"- **Link 3, larger margins bring larger gains** (per-class accuracy change of {method} over "
                         f"{reference.upper()}, same seed): ρ(γ_k, change) = {format_rho(link3, level)} — "
                         f"**{link_verdict(link3)}**; ρ(ERM error on the other seeds, change) = {format_rho(gains, level)} "
                         f"({'gains go to hard classes' if link_verdict(gains) == 'holds' else 'no clear shift of gains to hard classes'}).")
            own = get(method, DEFAULT_VARIANT, "gamma", "change_vs_temperature")
            if own is not None and own["n_defined"]:
                lines.append(f"  Against the tuned temperature (`{TEMPERATURE}`, same seed), which gives every class the "
                             f"same margin: ρ(γ_k, change) = {format_rho(own, level)} — **{link_verdict(own)}** "
                             "(what the class-wise margins add beyond a rescaling of the logits).")
            verdicts = {"1": link_verdict(link1), "2": link_verdict(link2), "3": link_verdict(link3)}
            broken = [k for k, v in verdicts.items() if v != "holds"]
            lines.append("- **Chain**: " + "; ".join(f"link {k} {v}" for k, v in verdicts.items()) + ". "
                         + ("Every link holds on this dataset." if not broken else
                            f"The chain is not established on this dataset: link{'s' if len(broken) > 1 else ''} "
                            + " and ".join([", ".join(broken[:-1]), broken[-1]] if len(broken) > 1 else broken)
                            + (" is" if len(broken) == 1 else " are") + " not shown to hold."))
        variants = [v for v in summary.loc[(summary["dataset"] == dataset) & (summary["method"] == method), "variant"].unique()
                    if is_exploratory(v)]
        for variant in variants:
            l2, l3 = get(method, variant, "erm_error", "gamma"), get(method, variant, "gamma", "change")
            lines.append(f"- *Exploratory (ours, not the paper's)* `{method}` with `{variant}`: "
                         f"ρ(ERM error, γ_k) = {format_rho(l2, level)} — link 2 **{link_verdict(l2)}**; "
                         f"ρ(γ_k, change) = {format_rho(l3, level)} — link 3 **{link_verdict(l3)}**.")
        lines.append("")
    return lines


def premise_section(analysis_dir: str | Path, report_out: str | Path, captions: str | Path,
                    reference: str = "erm", method: str = "mr2", level: float = LEVEL) -> list[str]:
    """The report's "Does the premise hold?" section (Markdown lines) from ``analysis_dir``;
    figure links are relative to the report file ``report_out``."""
    analysis_dir, captions = Path(analysis_dir), Path(captions)
    tables = {name: escape_frame(frame) for name, frame in read_analysis(analysis_dir).items()}
    reference, method = escape_text(reference), escape_text(method)  # names as the escaped tables hold them
    lines = [
        "## Does the premise hold?",
        "",
        "MR²'s reasoning is a chain: (1) hard classes have larger variability a_k = ‖μ̂_k‖² + ‖ŝ_k‖²; "
        "(2) Corollary 1 then gives them larger margins γ_k; (3) larger margins improve them. Each link is "
        f"measured by Spearman's ρ across classes, per seed, summarised as the mean with a {percent(level)} t-interval "
        f"over seeds. Difficulty is {reference.upper()}'s per-class test error (mean over seeds). A link "
        "**holds** when the interval lies above 0, is **reversed** below 0, **not shown** when it contains 0 "
        "(**uninformative** when it is as wide as [−1, +1], as two seeds often give), and **undetermined** without "
        "an interval. Variants marked *exploratory* are ours, not the paper's: "
        "`statistic=spread` sets γ from ‖ŝ_k‖² alone, `p=3`/`p=5` from L_p statistics of the unnormalised "
        "features; both keep Corollary 1's cube-root rule and mean c̄. All numbers: `results/analysis/`.",
        "",
    ]
    lines += premise_findings(tables, reference, method, level)
    for name in FIGURE_NAMES:
        png = analysis_dir / f"{name}.png"
        if png.is_file():
            rel = os.path.relpath(png, Path(report_out).parent)
            lines += [f"### {name.replace('_', ' ').capitalize()}", "", f"![{name}]({rel})", "",
                      caption(captions, name), ""]
    return lines
