"""The report's own sentences (mr2.results.report): the per-class findings line by line, and the
report's header and the figures it shows, on hand-built tables whose every expected word is written
here, not produced by the code under test."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import results_data as syn
from mr2.results import groups as G
from mr2.results.figures.registry import FigureOptions
from mr2.results.plotting import caption
from mr2.results.report import (_fmt, _word, baseline_findings, claim_sentence, class_findings, findings,
                                method_options_line, part_readings, write_report)
from mr2.results.statistics import minimum_detectable_effect
from mr2.results.tables import comparisons_table, per_run_metrics
from mr2.results.verdict_text import verdict_markdown
from mr2.results.verdicts import settings_table, verdict_table

CAPTIONS = Path(__file__).resolve().parents[1] / "workflow" / "report"

#: per dataset, the change (points) of each class in seeds 0, 1, 2; None: a dataset with one seed
CHANGES = {
    "dB": [(10, 11, 12), (-5, -6, -4), (3, 4, 5), (1, -1, 0)],    # n0, n2 higher; n1 lower
    "dC": None,                                                    # one seed: no interval, no line
    "dA": [(10, 11, 12), (1, -1, 0), (2, -2, 1), (0.5, -0.5, 0)],  # n0 higher alone: one of many
    "dD": [(1, -1, 0), (-7, -8, -9), (2, -2, 1), (-3, -4, -5)],   # n1, n3 lower
    "dE": [(1, -1, 0), (2, -2, 1), (0.5, -0.5, 0), (1, 0, -1)],    # none
}


def changes_table() -> pd.DataFrame:
    rows = []
    for dataset, changes in CHANGES.items():
        seeds = (0,) if changes is None else (0, 1, 2)
        for s in seeds:
            for c in range(4):
                base = 0.5 + 0.01 * s + 0.05 * c
                delta = 0.02 if changes is None else changes[c][s] / 100
                for method, acc in (("base", base), ("mr2", base + delta)):
                    rows.append({"dataset": dataset, "method": method, "variant": "default", "seed": s,
                                 "class": c, "class_name": f"n{c}", "accuracy": acc})
    return pd.DataFrame(rows)


def test_class_findings_line_by_dataset_in_table_order():
    lines = class_findings(changes_table(), reference="base", method="mr2")
    head = "per class (MR² against BASE, figure `change_vs_erm`): "
    assert lines == [
        f"- `dB`, {head}3 of 4 classes' intervals exclude 0 (higher: n0, n2; lower: n1).",
        f"- `dA`, {head}1 of 4 classes' intervals exclude 0 (higher: n0) — 1 interval of 4 excludes 0, about "
        "what 5 % of 4 comparisons give by chance (0.2 expected): one of many comparisons, not a finding.",
        f"- `dD`, {head}2 of 4 classes' intervals exclude 0 (lower: n1, n3).",
        f"- `dE`, {head}0 of 4 classes' intervals exclude 0.",
    ]


def test_class_findings_default_to_mr2_against_erm():
    table = changes_table()
    table["method"] = table["method"].replace({"base": "erm"})
    lines = class_findings(table)
    assert len(lines) == 4 and lines[0].startswith("- `dB`, per class (MR² against ERM, figure `change_vs_erm`): 3 of 4")
    table["method"] = table["method"].replace({"mr2": "mine"})
    assert class_findings(table) == []


def test_class_findings_of_another_method_name_it():
    table = changes_table()
    table["method"] = table["method"].replace({"mr2": "mine"})
    lines = class_findings(table, reference="base", method="mine")
    assert lines[0].startswith("- `dB`, per class (mine against BASE, figure `change_vs_erm`): 3 of 4")
    assert class_findings(table, reference="base", method="mr2") == []  # no such method: no line


def base_tables(mr2="mr2"):
    """Synthetic tables of two datasets (in the order dB, dA) with seeds given as 2, 0, 1, ERM renamed
    to the reference ``base`` and MR² to ``mr2``."""
    return syn.renamed(syn.tables(datasets=("dB", "dA"), methods=("erm", "mr2"), seeds=(2, 0, 1)),
                       {"erm": "base", "mr2": mr2})


def report_of(tmp_path, figures, options=True, margins=True, config=None, html_out=None):
    """A report of two datasets (given in the order dB, dA), the reference ``base``, the MR² method
    ``mr2b`` (its margins logged under that name), seeds given as 2, 0, 1; without the method options
    in the runs table unless ``options``."""
    t = base_tables(mr2="mr2b")
    t["groups"] = G.difficulty_table(t["per_class"], reference="base")
    if not margins:  # no margins logged
        t["epochs"] = t["epochs"][t["epochs"]["name"] != "gamma"]
    if not options:  # a runs table without the resolved configs' method options
        t["runs"] = t["runs"][[c for c in t["runs"] if not c.startswith("config.method.options.")]]
    captions = tmp_path / "captions"
    shutil.copytree(CAPTIONS, captions)
    (captions / "my_extra.rst").write_text("A figure the tables know nothing of.\n", encoding="utf-8")
    text = write_report(t, "| table |", figures, tmp_path / "report.md", captions, config or {"seeds": [2, 0, 1]},
                        options=FigureOptions("base", "mr2b", "mr2b"), html_out=html_out)
    return t, text


def test_report_header_names_runs_datasets_methods_and_sorted_seeds(tmp_path):
    t, text = report_of(tmp_path, {})
    options = method_options_line(t["runs"])
    assert options is not None and options.startswith("Method options as run")
    assert text.startswith(
        "# MR² replication report\n\n"
        "12 runs: datasets dB, dA; methods base, mr2b; seeds 0, 1, 2. Each run's resolved config is "
        "`config.yaml` in its run folder (`runs/<dataset>/<method>/<variant>/<hash>/seed<k>/` beside this "
        "report); the tidy tables are in `tables/`.\n\n"
        f"{options}\n\n"
        "Easy/medium/hard: thirds of the classes ranked by the reference method's per-class test accuracy "
        "(`base`, mean over seeds)")


def test_report_header_without_method_options_goes_on_to_the_groups(tmp_path):
    _, text = report_of(tmp_path, {}, options=False)
    assert "the tidy tables are in `tables/`.\n\nEasy/medium/hard: thirds" in text


def test_report_shows_the_figures_the_run_holds_and_those_it_cannot_judge(tmp_path):
    """margins_over_training is shown only if the margins of ``method`` (mr2b, not the default mr2)
    are found; sweeps is left out (no swept variants); a figure of unknown name is shown."""
    figures = {name: f"figures/{name}.png" for name in ("margins_over_training", "sweeps", "my_extra")}
    _, text = report_of(tmp_path, figures)
    images = [line for line in text.splitlines() if line.startswith("![")]
    assert images == ["![margins_over_training](figures/margins_over_training.png)", "![my_extra](figures/my_extra.png)"]
    assert "A figure the tables know nothing of." in text
    assert "- `dB`, per class (mr2b against BASE, figure `change_vs_erm`): " in text  # the MR² method given
    missing = text[text.index("## Not in this run"):text.index("## Configuration")]
    assert "`config/sweeps.yaml`" in missing


# ----------------------------------------------------------------------------- findings, sentence by sentence
#: class accuracies of the reference (three classes: easy, medium, hard in every seed) and the
#: per-seed change in points of each method on each class (seeds 0, 1, 2)
BASE_ACC = (0.90, 0.60, 0.30)
DELTAS = {"base": ((0, 0, 0),) * 3, "twin": ((0, 0, 0),) * 3, "shift": ((1, 1, 1),) * 3,
          "mr2": ((-0.1, 0.1, 0.0), (1, 2, 3), (4, 5, 7)),
          "mr2_uniform": ((0, 0, 0), (0, 0, 0), (1, 2, 3)),
          "focal": ((-3, -4, -5), (0, 1, 0), (2, 3, 4))}
DELTAS["focal2"] = DELTAS["focal"]


def seed_accuracies(method, s):
    """A run's class accuracies (easy, medium, hard) and its top-1 (MR²'s a little above the mean)."""
    acc = [BASE_ACC[c] + 0.01 * s + DELTAS[method][c][s] / 100 for c in range(3)]
    return acc, sum(acc) / 3 + 0.002 * s * (method == "mr2")


def findings_tables(datasets_methods):
    rows, runs = [], []
    for dataset, methods in datasets_methods.items():
        for method in methods:
            for s in (0, 1, 2):
                acc, top1 = seed_accuracies(method, s)
                rows += [{"dataset": dataset, "method": method, "variant": "default", "seed": s, "class": c,
                          "class_name": f"n{c}", "accuracy": acc[c]} for c in range(3)]
                runs.append({"dataset": dataset, "method": method, "variant": "default", "seed": s, "top1": top1})
    return pd.DataFrame(rows), pd.DataFrame(runs)


def interval(points) -> str:
    """``+5.0 points [95 % CI +2.5, +7.5; MDE 5.0]`` of per-seed differences, by scipy."""
    d = np.asarray(points, float)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    mde = minimum_detectable_effect(d.std(ddof=1), len(d))
    return f"{d.mean():+.1f} points [95 % CI {d.mean() - half:+.1f}, {d.mean() + half:+.1f}; MDE {mde:.1f}]"


def change(method, against, metric):
    """Per-seed change in points of a metric (``hard``/``easy``/``all``/``top1``/``worst``)."""
    def value(m, s):
        acc, top1 = seed_accuracies(m, s)
        return {"easy": acc[0], "hard": acc[2], "worst": min(acc), "all": sum(acc) / 3, "top1": top1}[metric]
    return [100 * (value(method, s) - value(against, s)) for s in (0, 1, 2)]


def test_findings_sentence_by_sentence_with_another_reference():
    """dB holds the reference ``base``, MR², the ablation mr2_uniform and the baseline focal; dA only
    base and focal: its MR² sentences are absent (not "share no seed"); classes keep their group in
    every seed, so the held-out groups are the same and give the same hard/easy numbers."""
    pc, runs = findings_tables({"dB": ("base", "mr2", "mr2_uniform", "focal"), "dA": ("base", "focal")})
    groups = G.difficulty_table(pc, reference="base")
    lines = findings(pc, runs, groups, reference="base", effect_of_interest=0.1)
    # an effect of interest of 0.1 point: the easy classes' tie (MDE about 0.3) is underpowered
    words = {"hard": "higher", "easy": "underpowered", "all": "higher", "top1": "higher", "worst": "higher"}
    names = {"hard": "hard classes", "easy": "easy classes", "all": "all classes (mean per-class)",
             "top1": "overall top-1", "worst": "worst class"}
    mr2_line = ("- MR² against BASE, paired by seed (3 seeds): "
                + "; ".join(f"{names[m]} {interval(change('mr2', 'base', m))} ({words[m]})" for m in names) + ".")
    held_out = ("- The same with each seed's groups ranked on the BASE runs of the other seeds (ranking and comparing "
                "on the same runs favours a hard-class gain and an easy-class loss by regression to the mean; this "
                f"check has no such bias): hard classes {interval(change('mr2', 'base', 'hard'))} (higher); easy "
                f"classes {interval(change('mr2', 'base', 'easy'))} (underpowered).")
    ablation = ("- Full MR² against the ablation `mr2_uniform`: "
                f"all {interval(change('mr2', 'mr2_uniform', 'all'))} (higher for MR²); "
                f"hard {interval(change('mr2', 'mr2_uniform', 'hard'))} (higher for MR²). "
                "The paper claims each ablation loses to full MR².")
    at = lines.index("### dA")
    assert lines[:5] == ["### dB", mr2_line,
                         "- The paper's claim (MR² raises hard-class accuracy without lowering easy-class accuracy, "
                         "and raises overall accuracy) is **not judged** here: 3 paired seeds (a verdict needs 10); "
                         "convergence not checked (the verdict table's row).", held_out, ablation]
    focal_b = [line for line in lines[5:at] if line.startswith("- `focal` against BASE (3 seeds)")]
    assert len(focal_b) == 1 and lines[at - 1] == "" and lines[at - 2].startswith("- Baselines by outcome: ")
    assert f"hard classes {interval(change('focal', 'base', 'hard'))} (higher)" in focal_b[0]
    # its all-classes tie (MDE 0.6) is underpowered only at the effect of interest passed (0.1, not 1)
    assert f"all classes {interval(change('focal', 'base', 'all'))} (underpowered)" in focal_b[0]
    dA = lines[at:]
    assert dA[-1] == "" and not any("MR²" in line.split(". ")[0] for line in dA[1:-1])
    assert any(line.startswith("- `focal` against BASE (3 seeds)") for line in dA)
    assert not any("CIFAR-100" in line for line in lines)


def test_findings_of_a_run_whose_mr2_method_is_an_ablation_are_about_that_method():
    """A run without mr2 (its MR² method mr2_uniform, ``registry.figure_options``): the sentences on the
    claim are mr2_uniform's numbers under its display name, and focal is still a baseline."""
    pc, runs = findings_tables({"dB": ("base", "mr2_uniform", "focal")})
    lines = findings(pc, runs, G.difficulty_table(pc, reference="base"), reference="base", method="mr2_uniform")
    assert lines[1].startswith("- MR² uniform γ against BASE, paired by seed (3 seeds): hard classes "
                               f"{interval(change('mr2_uniform', 'base', 'hard'))}")
    assert lines[2].startswith("- The paper's claim (MR² uniform γ raises hard-class accuracy")
    assert any(line.startswith("- `focal` against BASE") and "MR² uniform γ against it: hard classes "
               f"{interval(change('mr2_uniform', 'focal', 'hard'))}" in line for line in lines)
    assert not any("ablation `mr2_uniform`" in line for line in lines)
    assert not any("MR² against" in line for line in findings(pc, runs, G.difficulty_table(pc, reference="base"),
                                                              reference="base"))  # no mr2: nothing on it


def test_findings_compare_with_the_paper_only_on_cifar100_with_erm_and_mr2():
    for dataset, compared in (("toy", False), ("cifar100_lt", True)):
        pc, runs = findings_tables({dataset: ("base", "mr2")})
        pc["method"], runs["method"] = pc["method"].replace({"base": "erm"}), runs["method"].replace({"base": "erm"})
        lines = findings(pc, runs, G.difficulty_table(pc))
        paper = [line for line in lines if "paper's CIFAR-100 numbers" in line]
        assert len(paper) == compared
        if compared:
            assert paper[0].startswith("- Against the paper's CIFAR-100 numbers (third-party summary, unverified; our "
                                       "default variants): ERM all ") and paper[0].endswith("(paper 58.5).")
            assert "(paper 56.7); MR2 all " in paper[0]


def test_a_missing_caption_is_an_error_naming_its_file_and_the_option(tmp_path):
    (tmp_path / "a.rst").write_text("  The caption.\n\n", encoding="utf-8")
    assert caption(tmp_path, "a") == "The caption."
    with pytest.raises(FileNotFoundError) as error:
        caption(tmp_path, "b")
    assert str(error.value) == f"caption {tmp_path / 'b.rst'} not found; give --captions the workflow's report folder"


def test_a_caption_is_read_as_utf8_whatever_the_locale(tmp_path):
    """Captions hold γ_k and c̄: read as UTF-8 also where the locale's encoding is ASCII (the C locale
    without Python's UTF-8 mode, as on some clusters) or another code page."""
    (tmp_path / "g.rst").write_text("γ_k against c̄.\n", encoding="utf-8")
    out = syn.run_in_ascii_locale("import sys; from mr2.results.plotting import caption; "
                                  "sys.stdout.buffer.write(caption(sys.argv[1], 'g').encode('utf-8'))", str(tmp_path))
    assert out.stdout.decode("utf-8") == "γ_k against c̄."


def test_baseline_findings_sentence_by_sentence():
    """Three baselines in table order: focal trades easy for hard, late shares no seed with the
    reference, twin equals it on every seed; MR² against each (an effect of interest of 0.1 point
    makes MR²'s easy-class tie against twin underpowered); the summary by outcome; nothing for a
    dataset without the reference."""
    pc, runs = findings_tables({"dB": ("base", "mr2", "focal", "twin")})
    late = pc[pc["method"] == "focal"].assign(method="late", seed=5)
    order = ["base", "mr2", "focal", "late", "twin"]
    pc = pd.concat([pc, late]).sort_values("method", key=lambda m: m.map(order.index), kind="stable")
    runs = pd.concat([runs, runs[runs["method"] == "focal"].assign(method="late", seed=5)])
    per_run = per_run_metrics(pc, runs, G.difficulty_table(pc, reference="base"))
    lines = baseline_findings(per_run, "dB", reference="base", effect_of_interest=0.1)

    def fmt(method, against, metric):
        return interval(change(method, against, metric))

    trade = "trades easy for hard (the trade-off the paper attributes to other methods)"
    same = "equivalent"  # twin equals the reference in every seed: Δ = 0 exactly, inside ± the effect of interest
    assert lines == [
        f"- `focal` against BASE (3 seeds): hard classes {fmt('focal', 'base', 'hard')} (higher); easy classes "
        f"{fmt('focal', 'base', 'easy')} (lower); all classes {fmt('focal', 'base', 'all')} (underpowered). It {trade}. "
        f"MR² against it: hard classes {fmt('mr2', 'focal', 'hard')} (higher); easy classes "
        f"{fmt('mr2', 'focal', 'easy')} (higher).",
        "- `late` shares no seed with BASE here: no paired comparison.",
        f"- `twin` against BASE (3 seeds): hard classes {fmt('twin', 'base', 'hard')} ({same}); easy "
        f"classes {fmt('twin', 'base', 'easy')} ({same}); all classes {fmt('twin', 'base', 'all')} "
        f"({same}). It is identical to BASE on every seed. MR² against it: hard classes "
        f"{fmt('mr2', 'base', 'hard')} (higher); easy classes {fmt('mr2', 'base', 'easy')} (underpowered).",
        f"- Baselines by outcome: {trade}: `focal`; is identical to BASE on every seed: `twin`.",
    ]
    assert baseline_findings(per_run[per_run["method"] != "base"], "dB", reference="base") == []


def test_the_claim_sentence_in_words():
    """The claim's sentence reads the verdict table's row: supported only when its three parts are, each
    part's word beside it; a row that fails a gate is not judged, with the gate's reason."""
    row = {"eligible": True, "reason": "", "hard_up": "supported", "easy_not_down": "supported", "overall_up": "supported"}
    assert claim_sentence(row) == ("**supported** here (hard classes up **supported**; easy classes not down "
                                   "**supported**; overall up **supported**).")
    assert claim_sentence({**row, "hard_up": "underpowered"}) == (
        "**not supported** here (hard classes up **underpowered**; easy classes not down **supported**; overall up "
        "**supported**).")
    assert "hard classes up **equivalent (no effect ≥ 0.5 points)**" in claim_sentence({**row, "hard_up": "equivalent"}, 0.5)
    assert claim_sentence({**row, "eligible": False, "reason": "3 paired seeds (a verdict needs 10)"}) == \
        "**not judged** here: 3 paired seeds (a verdict needs 10)."


def test_part_readings_in_words():
    """A method the verdict table does not judge: each part read from its comparison's word alone."""
    few = "undetermined (too few seeds for an interval)"
    assert part_readings({"hard": few, "easy": "higher", "top1": "higher"}) == \
        "hard classes up underpowered; easy classes not down supported; overall up supported"
    assert part_readings({"hard": "underpowered", "easy": "lower", "top1": "no clear difference", "all": "higher"}) == \
        "hard classes up underpowered; easy classes not down contradicted; overall up not shown"
    # no easy group (K < 3): no easy part
    assert part_readings({"hard": "higher", "all": "equivalent"}) == "hard classes up supported; overall up equivalent"


def test_method_options_line_by_hand():
    """Options ordered c̄, λ, p, β, then others by name; text options as written, numbers as %g;
    two values of one option both listed; a method whose options are all missing named nowhere;
    no line when no default run has any option."""
    runs = pd.DataFrame({"dataset": ["a", "b", "a", "a"], "method": ["mr2", "mr2", "erm", "mr2"],
                         "variant": ["default", "default", "default", "lam=1"],
                         "config.method.options.statistic": ["spread", "spread", None, "a"],
                         "config.method.options.lam": [0.1, 0.25, None, 1.0],
                         "config.method.options.c_bar": [1.0, 1.0, None, 1.0]})
    assert method_options_line(runs) == ("Method options as run (each run's resolved config): "
                                         "MR²: c̄ = 1, λ = 0.1, 0.25, statistic = spread.")
    none = runs.assign(**{c: None for c in runs if c.startswith("config.")})
    assert method_options_line(none) is None


def report_verdict(table: pd.DataFrame, effect_of_interest: float = 1.0) -> str:
    """The verdict section of a report: the table's rows as the report names its own run set."""
    return verdict_markdown(table.assign(snapshot="this run", config="", identity=""), effect=effect_of_interest).strip()


def test_report_body_assembles_its_parts_with_the_arguments_given(tmp_path):
    """The report's body, from the groups' note to the next steps' sections, is exactly its parts in
    order, each computed with the reference, MR² method and effect of interest the report was given
    (the parts themselves are tested on their own above and in test_verdicts)."""
    t = base_tables()
    t["runs"]["config.data.name"] = "data_" + t["runs"]["dataset"]  # a setting that names its data
    t["runs"].loc[t["runs"]["method"] == "mr2", "top1"] -= 0.05  # overall up by the classes' mean, down by top-1
    pc, runs = t["per_class"], t["runs"]
    t["groups"] = groups = G.difficulty_table(pc, reference="base")
    text = write_report(t, "| table |", {}, tmp_path / "report.md", CAPTIONS, {"seeds": [0]}, reference="base",
                        sections=["## From another step\n\nIts text."], effect_of_interest=5.0)

    def verdict_of(**effect):
        return report_verdict(verdict_table(comparisons_table(pc, runs, groups, "base", **effect),
                                            pc[["dataset", "method", "variant"]].drop_duplicates(),
                                            settings_table(runs), "base"), **effect)

    verdict = verdict_of(effect_of_interest=5.0)
    expected = "\n".join([
        "Easy/medium/hard: thirds of the classes ranked by the reference method's per-class test accuracy "
        "(`base`, mean over seeds) — our reading of the paper, whose rule is unpublished; classes without test "
        "samples are in no group. Ranking and comparing on the same reference runs favours a hard-class gain by "
        "regression to the mean, so the findings repeat MR²'s hard/easy differences with each seed's groups "
        "ranked on the reference's other seeds. Model selection never uses test data.",
        "", "## Verdict", "", verdict, "", "## Results", "", caption(CAPTIONS, "results_table"), "", "| table |", "",
        "## What we find", "", *findings(pc, runs, groups, "base", 5.0), *class_findings(pc, "base", "mr2"), "",
        "## From another step\n\nIts text.\n"])
    assert expected in text
    assert "| dB, data_dB, all × 4 ep |" in verdict  # the settings of the runs table
    # 3 seeds: not judged; the Δs without a word hold overall up, read on top-1, which the runs table holds
    assert "| not judged: 3 paired seeds (a verdict needs 10); convergence not checked |" in verdict
    assert "| -3.4 [" in verdict
    assert findings(pc, runs, groups, "base", 5.0) != findings(pc, runs, groups, "base")  # the effect matters here


def test_report_ends_with_more_figures_what_the_run_lacks_and_the_config_as_given(tmp_path):
    """No margins of mr2b logged, no sweep, no regimes: one line each naming the config that runs it
    (with the method's name); the config in its own key order, in a YAML block."""
    _, text = report_of(tmp_path, {"my_extra": "figures/my_extra.png"}, margins=False,
                        config={"seeds": [2, 0], "data": {"name": "toy", "batch": 8}})
    assert text.endswith(
        "## More figures\n\n### My extra\n\n![my_extra](figures/my_extra.png)\n\n"
        "A figure the tables know nothing of.\n\n"
        "## Not in this run\n\n"
        "- No run of mr2b logged its margins: `config/config.yaml` runs MR².\n"
        "- No c̄ or λ sweep in this run: `config/sweeps.yaml` runs one (the paper's Fig. 5).\n"
        "- No data trained in several regimes (training-set size × epochs): `config/regimes.yaml` runs that.\n\n"
        "## Configuration\n\n```yaml\nseeds:\n- 2\n- 0\ndata:\n  name: toy\n  batch: 8\n```\n")


def test_a_difference_without_an_mde_closes_its_interval():
    d = {"diff": 1.0, "diff_lo": 0.5, "diff_hi": 1.5}
    assert _fmt(d) == "+1.0 points [95 % CI +0.5, +1.5]"
    assert _fmt({**d, "mde": 0.25}) == "+1.0 points [95 % CI +0.5, +1.5; MDE 0.2]"
    assert _word({"diff": 0.0, "diff_lo": -1.0, "diff_hi": 1.0}, 1.0) == "underpowered"  # no MDE: not shown


def test_report_as_html_page_beside_the_markdown(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "my_extra.png").write_bytes(b"\x89PNG made up")
    _, text = report_of(tmp_path, {"my_extra": "figures/my_extra.png"}, html_out=tmp_path / "page" / "report.html")
    page = (tmp_path / "page" / "report.html").read_text(encoding="utf-8")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == text
    assert "MR² replication report</h1>" in page and "12 runs: datasets dB, dA" in page
    assert "data:image/png;base64," in page  # the figure found beside the Markdown, not beside the page


def test_baselines_of_one_outcome_are_listed_together_and_a_constant_shift_is_not_identical():
    pc, runs = findings_tables({"d": ("base", "focal", "focal2", "shift")})
    lines = baseline_findings(per_run_metrics(pc, runs, G.difficulty_table(pc, reference="base")), "d", "base")
    shift = next(line for line in lines if line.startswith("- `shift`"))
    assert "identical" not in shift  # +1 point in every seed: no spread, but not the reference's numbers
    assert lines[-1] == ("- Baselines by outcome: trades easy for hard (the trade-off the paper attributes to other "
                         "methods): `focal`, `focal2`; " + shift.split(". It ", 1)[1].rstrip(".") + ": `shift`.")


def test_the_verdict_is_read_against_the_reference_given_even_an_ablation_of_mr2(tmp_path):
    """The reference may be any method the runs hold, MR²'s uniform-margin ablation included: the
    verdict compares MR² with it (its comparisons are not only a baseline's, which an MR² variant
    never is), so every part MR² and that reference ran is judged, none "not computed"."""
    t = syn.tables(methods=("mr2_uniform", "mr2"))
    pc, runs = t["per_class"], t["runs"]
    t["groups"] = groups = G.difficulty_table(pc, reference="mr2_uniform")
    text = write_report(t, "| table |", {}, tmp_path / "report.md", CAPTIONS, {"seeds": [0]},
                        reference="mr2_uniform")
    verdict = report_verdict(verdict_table(comparisons_table(pc, runs, groups, "mr2_uniform"),
                                           pc[["dataset", "method", "variant"]].drop_duplicates(),
                                           settings_table(runs), "mr2_uniform"))
    assert f"## Verdict\n\n{verdict}\n\n## Results" in text
    assert "not computed" not in verdict and verdict.count("| not run |") == 2  # no control, no baseline was run
