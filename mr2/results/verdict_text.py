"""The verdict as a reader sees it: the primary test, the verdict table with its generated legend, and
the headline at the top of the README, all views of ``mr2.results.rules`` (no word is decided here).

  primary_line      the declared primary test in one line
  verdict_markdown  the table: judged rows (each part's word, its table-wide word and Δs), then the rows
                    not judged, with why
  headline          one plain sentence from the primary test, then one line per judged row
  update_verdicts   fill the verdict blocks of a page from the snapshots
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from ..common.io import block_lines, fill_block_lines, save_text
from .html import escape_text
from .rules import (CONTRADICTED, EXCLUDED, NOT_JUDGED, NOT_RUN, NOT_SHOWN, PARTS, SUPPORTED, UNDERPOWERED,
                    legend, shown_word)
from .snapshots import one_row_per_run_set, snapshot_primaries, snapshot_verdicts, wordless
from .statistics import EFFECT_OF_INTEREST
from .verdicts import VENDORS, with_table_holm

BEGIN, END = "<!-- verdicts -->", "<!-- /verdicts -->"
#: the README's blocks: the judged rows alone (``SHORT``) and the headline generated from the primary test
SHORT = ("<!-- verdicts:short -->", "<!-- /verdicts:short -->")
HEADLINE = ("<!-- headline -->", "<!-- /headline -->")
#: how the headline names a control MR² is measured against
CONTROL_NAMES = {"ce_temperature": "cross-entropy with a tuned logit temperature",
                 "erm_tuned": "ERM with its training recipe tuned"}
GROUP_NAMES = {"hard": "hard classes", "easy": "easy classes", "all": "all classes", "worst": "worst class",
               "medium": "medium classes"}


def _cell(value) -> str:
    """A table cell from a name of a snapshot or a CSV: no ``|``, no markup (``escape_text``)."""
    return escape_text(str(value)).replace("|", "&#124;").replace("\n", " ")


def _text(value) -> str:
    """A table cell of generated text (words, Δs, reasons) that may quote a name: no ``|``, no tag or
    comment can open in it (``<`` as its entity); brackets and signs kept as written."""
    return str(value).replace("|", "&#124;").replace("<", "&lt;").replace("\n", " ")


def vendor_of(cpu: str) -> str:
    """The vendor a row's CPU text starts with ("AMD (AMD EPYC)" -> "AMD"), as the headline names it."""
    first = str(cpu).split(" (")[0]
    return VENDORS.get(first, first)


def mr2_name(r) -> str:
    """How a row names its MR²: "MR²" for the paper's, "MR² (statistic=spread)" for a variant of ours
    (the setting's ``mr2`` column: MR²'s options that are not the paper's)."""
    variant = str(r.get("mr2", "") or "")
    return "MR²" + (f" ({variant})" if variant not in ("", "nan") else "")


def _setting(r) -> str:
    parts = [str(r["dataset"])] + [str(r[k]) for k in ("data", "model", "regime")
                                   if str(r.get(k, "")) not in ("", "nan") and r[k] != r["dataset"]]
    name = mr2_name(r)
    return _cell(", ".join(parts + ([f"{name}: not the paper's"] if name != "MR²" else [])))


def _snapshot_links(r, link: str | None) -> str:
    names = [n.strip() for n in str(r["snapshot"]).split(",")]
    shown = [f"[{_cell(n)}]({link}/{n}/)" if link is not None else _cell(n) for n in names]
    config = str(r.get("config", ""))
    return ", ".join(shown) + (f" ({_cell(config)})" if config and config != r["snapshot"] else "")


def _delta(d: dict) -> str:
    if not math.isfinite(float(d["diff_lo"])):
        return f"{d['diff']:+.1f} (no CI)"
    return f"{d['diff']:+.1f} [{d['diff_lo']:+.1f}, {d['diff_hi']:+.1f}]"


# ----------------------------------------------------------------------------- the primary test
def primary_line(p: dict, link: str | None = None) -> str:
    """The primary test in one line: where it was declared, what it compares, its Δ and word."""
    where = _snapshot_links({"snapshot": p["snapshot"]}, link)
    word = (f"**{NOT_JUDGED}: {_text(p['reason'])}**" if p["word"] == NOT_JUDGED
            else f"**{shown_word(p['word'], p['effect_of_interest'])}**")
    configs = ", ".join(f"`{_cell(c.strip())}`" for c in str(p["config"]).split(","))
    return (f"**Primary test** (declared in {configs} before its runs; {_cell(p['dataset'])}, "
            f"{_cell(p['cpu'])}, {where}): {GROUP_NAMES.get(p['group'], p['group'])}, MR² − {_cell(p['control'])} "
            f"(the better of {_cell(p['controls'])}) = {_delta(p)} points, {p['n_paired']} paired seeds: {word}. "
            "Tested alone at the 95 % level; every other word is secondary.")


# ----------------------------------------------------------------------------- the table
def _word_cell(r, part: str, effect: float) -> str:
    detail = str(r[f"{part}_detail"]) if str(r.get(f"{part}_detail", "")) not in ("", "nan") else ""
    word = r[part]
    if word == NOT_RUN:
        return NOT_RUN
    text = f"**{shown_word(word, effect)}**"
    table_word = r.get(f"{part}_table", word)
    if word not in (NOT_JUDGED,) and isinstance(table_word, str):
        text += f" (table-wide: {shown_word(table_word, effect)})"
    return text + (f" {_text(detail)}" if detail else "")


def _ordered(table: pd.DataFrame) -> pd.DataFrame:
    """Rows by dataset, then machine (the CPU), then snapshot."""
    key = table.assign(_d=table["dataset"].astype(str), _c=table["cpu"].astype(str), _s=table["snapshot"].astype(str))
    return table.loc[key.sort_values(["_d", "_c", "_s"], kind="stable").index]


def judged_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The run sets (``one_row_per_run_set``) with their table-wide words (``with_table_holm``), in order."""
    if table.empty:
        return table
    table = table.assign(**{c: table[c] if c in table else default for c, default in
                            (("snapshot", ""), ("config", ""), ("identity", ""), ("cpu", "not recorded"))})
    return _ordered(with_table_holm(one_row_per_run_set(table)))


def verdict_markdown(table: pd.DataFrame, primaries: list[dict] | None = None, effect: float = EFFECT_OF_INTEREST,
                     link: str | None = None, judged_only: bool = False) -> str:
    """The verdict as Markdown: the primary test first (``primary_line``), then a row per judged run set
    (every gate passed), a column per part of the claim headed by the difference it shows, each cell its
    word, its table-wide word and the Δs behind it; the generated legend (``rules.legend``); then, unless
    ``judged_only``, the run sets not judged, with why and their Δs without a word. ``link``: the path
    from the page to the snapshots folder, to link each row to its snapshot."""
    if table.empty:
        return "No setting has been run.\n"
    rows = judged_rows(table)
    eligible = rows["eligible"].astype(bool)
    lines = [primary_line(p, link) for p in primaries or []]
    lines += [""] if lines else []
    header = ["Snapshot", "Setting", "CPU", "Seeds", "Tuned"] + list(PARTS.values())
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for _, r in rows[eligible].iterrows():
        cells = [_snapshot_links(r, link), _setting(r), _cell(r["cpu"]), str(r["seeds"]), _cell(r["tuned"])]
        lines.append("| " + " | ".join(cells + [_word_cell(r, part, effect) for part in PARTS]) + " |")
    if not eligible.any():
        lines.append("| " + " | ".join(["no run set is judged yet"] + [""] * (len(header) - 1)) + " |")
    text = "\n".join(lines) + "\n\n" + legend(effect) + "\n"
    rest = rows[~eligible]
    if judged_only or rest.empty:
        return text
    head = ["Snapshot", "Setting", "CPU", "Seeds", "Why not judged"] + list(PARTS.values())
    extra = ["", "Run sets not judged (a sensitivity to the number of seeds and to the training regime: each "
                 "part's paired Δ [95 % t-interval], read as such, not as a verdict):", "",
             "| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for _, r in rest.iterrows():
        cells = [_snapshot_links(r, link), _setting(r), _cell(r["cpu"]), str(r["seeds"]),
                 f"{NOT_JUDGED}: {_text(r['reason'])}"]
        extra.append("| " + " | ".join(cells + [_text(wordless(r, part)) for part in PARTS]) + " |")
    return text + "\n".join(extra) + "\n"


# ----------------------------------------------------------------------------- the headline
def headline_sentence(primaries: list[dict]) -> str:
    """One plain sentence from the primary test: what was found, in which setting, against what."""
    if not primaries:
        return ("The primary test — MR² against equally tuned controls (a tuned logit temperature, ERM with "
                "its recipe tuned) on Fashion-MNIST, `config/tuned-controls.yaml` — has no snapshot yet, so "
                "no gain of MR²'s own is claimed; the rows below compare MR² with untuned ERM only.")
    p = primaries[0]
    setting = f"{p.get('data', p['dataset'])} ({p.get('model', '')}, {p['n_paired']} seeds, {vendor_of(p['cpu'])} CPU)"
    control = CONTROL_NAMES.get(p["control"], p["control"])
    group = GROUP_NAMES.get(p["group"], p["group"])
    delta = _delta(p)
    if p["word"] == NOT_JUDGED:
        return f"On {setting}, the primary test of MR² against equally tuned controls is not judged: {p['reason']}."
    if p["word"] == SUPPORTED:
        return (f"On {setting}, MR² raises the {group} above equally tuned controls: by {delta} points over the "
                f"better of them, {control}.")
    if p["word"] == CONTRADICTED:
        return (f"On {setting}, MR² does worse on the {group} than {control} ({delta} points): its gain over "
                "untuned ERM is a rescaling of the logits that a tuned control does better.")
    how = {EXCLUDED: f"equals it within ± {p['effect_of_interest']:g} point", NOT_SHOWN: "is not shown above it",
           UNDERPOWERED: "cannot be told apart from it (underpowered)"}[p["word"]]
    bound = excluded_above(p.get("eq_hi", math.nan))
    bound = f"; a gain above {bound} points is excluded at 90 %" if bound else ""
    return (f"On {setting}, MR² does not beat {control}: on the {group} it {how} ({delta} points{bound}), so "
            "its gain over untuned ERM is that of a tuned logit scale, not of its class-wise margins.")


def excluded_above(eq_hi: float) -> str:
    """The gain a 90 % interval's upper end ``eq_hi`` excludes, as the headline writes it: rounded *up* to
    one decimal (0.382 -> "0.4"; 0.3 stays "0.3"), so the printed bound is never below the interval's
    end; "" where there is no finite upper end."""
    if not math.isfinite(float(eq_hi)):
        return ""
    return f"{math.ceil(round(float(eq_hi) * 10, 9)) / 10:.1f}"


def headline(table: pd.DataFrame, primaries: list[dict] | None = None, effect: float = EFFECT_OF_INTEREST,
             link: str | None = None) -> str:
    """The headline: ``headline_sentence`` in bold, then one line per judged run set (by dataset, then
    CPU): dataset, CPU vendor, the hard-class word against untuned ERM with its table-wide word and Δ,
    the controls' word where they ran, and a link to its snapshot."""
    out = [f"**{headline_sentence(primaries or [])}**", ""]
    rows = judged_rows(table) if len(table) else table
    rows = rows[rows["eligible"].astype(bool)] if len(rows) else rows
    for _, r in rows.iterrows():
        where = _snapshot_links(r, link).split(" (")[0]
        table_word = r["hard_up_table"]
        name = _cell(mr2_name(r))
        line = (f"- {_cell(r['dataset'])} · {_cell(vendor_of(r['cpu']))} · {name} − ERM (untuned), hard: "
                f"**{shown_word(r['hard_up'], effect)}**"
                + (f" (table-wide: {shown_word(table_word, effect)})" if table_word != r["hard_up"] else "")
                + f" {_text(r['hard_up_detail'])}")
        if r["above_controls"] != NOT_RUN:
            line += f"; {name} − tuned controls: **{shown_word(r['above_controls'], effect)}**"
        out.append(line + f" · {where}")
    if rows.empty:
        out.append("- No run set is judged yet (≥ 10 paired seeds and every method at its own convergence).")
    return "\n".join(out)


# ----------------------------------------------------------------------------- pages
def readme_verdicts(text: str, markers: tuple[str, str] = (BEGIN, END)) -> str | None:
    """The text of a verdict block (by default the full one), or None without one; markers count only
    as whole lines (``mr2.common.io.block_lines``)."""
    found = block_lines(text, *markers)
    if found is None:
        return None
    return "\n".join(text.splitlines()[found[0] + 1:found[1]]).strip("\n")


def verdict_blocks(table: pd.DataFrame, primaries: list[dict] | None = None,
                   link: str | None = None) -> dict[tuple[str, str], str]:
    """What each verdict block holds: the full verdict with the rows not judged (``BEGIN``/``END``), the
    judged rows alone with the legend (``SHORT``), and the headline (``HEADLINE``)."""
    return {(BEGIN, END): verdict_markdown(table, primaries, link=link).strip("\n"),
            SHORT: verdict_markdown(table, primaries, link=link, judged_only=True).strip("\n"),
            HEADLINE: headline(table, primaries, link=link)}


def update_verdicts(readme: str | Path, snapshots: str | Path) -> bool:
    """Fill every verdict block the file ``readme`` has (``verdict_blocks``) from the snapshots under
    ``snapshots``, each row linked to its snapshot folder relative to the page, keeping every other line
    byte for byte; False (nothing written) when it has none. Every block is made before any is written."""
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    wanted = [m for m in (HEADLINE, SHORT, (BEGIN, END)) if block_lines(text, *m, where=str(readme)) is not None]
    if not wanted:
        return False
    link = Path(os.path.relpath(Path(snapshots).resolve(), readme.resolve().parent)).as_posix()
    blocks = verdict_blocks(snapshot_verdicts(snapshots), snapshot_primaries(snapshots), link)
    for begin, end in wanted:
        text = fill_block_lines(text, begin, end, blocks[(begin, end)], str(readme))
    save_text(text, readme)
    return True
