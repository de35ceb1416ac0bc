"""The rulebook (mr2/results/rules.py): each rule at its edges, so that a planted fault in any of them
fails a test. Every expected word is worked out by hand from the rule's statement, not read back
from the code."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mr2.results import rules
from mr2.results import statistics as S
from mr2.results.convergence import convergence_summary
from mr2.results.verdict_text import headline, verdict_markdown
from mr2.results.verdicts import primary_result, verdict_table, with_table_holm


def comparison(diff, lo, hi, *, eq_lo=None, eq_hi=None, n=16, sd=1.0, p=None, method="mr2", against="erm",
               kind="reference", metric="hard", word=None, family_size=1, p_holm=None, dataset="d"):
    """One comparisons-table row, its word by the rulebook unless given."""
    row = {"dataset": dataset, "method": method, "variant": "default", "against": against,
           "against_variant": "default", "kind": kind, "metric": metric, "n_paired": n, "diff": diff,
           "diff_sd": sd, "diff_lo": lo, "diff_hi": hi, "mde": 0.5, "effect_of_interest": 1.0,
           "eq_lo": lo if eq_lo is None else eq_lo, "eq_hi": hi if eq_hi is None else eq_hi,
           "p_value": 0.001 if p is None else p, "p_holm": p if p_holm is None else p_holm,
           "family_size": family_size}
    row["word"] = word or rules.word_of(row, 1.0, row["p_holm"] if family_size > 1 else None)
    return pd.Series(row)


# ----------------------------------------------------------------------------- equivalence
@pytest.mark.parametrize("eq_lo, eq_hi, expected", [
    (-0.9, 0.9, True), (-1.6, 0.4, False), (-0.4, 1.6, False), (-1.0, 0.5, False), (-0.5, 1.0, False),
    (-0.999, 0.999, True), (math.nan, 0.5, False)])
def test_equivalence_needs_both_ends_of_the_90_interval_strictly_inside_the_effect(eq_lo, eq_hi, expected):
    assert rules.is_equivalent(eq_lo, eq_hi, 1.0) is expected


def test_a_no_clear_difference_inside_the_effect_reads_equivalent_but_a_significant_one_does_not():
    # [-1.6, +0.4] is not equivalent: one end outside
    assert rules.comparison_word(-0.6, -1.8, 0.6, mde=0.5, eq_lo=-1.6, eq_hi=0.4, n_paired=16) == "no clear difference"
    assert rules.comparison_word(0.0, -0.5, 0.5, mde=0.5, eq_lo=-0.4, eq_hi=0.4, n_paired=16) == "equivalent"
    # a significant difference inside ± the effect is "higher", never "equivalent"
    assert rules.comparison_word(0.5, 0.2, 0.8, mde=0.5, eq_lo=0.25, eq_hi=0.75, n_paired=16) == "higher"


# ----------------------------------------------------------------------------- Holm
def test_a_family_word_uses_the_holm_adjusted_p():
    # raw p 0.03 (the interval excludes 0), Holm-adjusted p 0.09: not "higher"
    assert rules.comparison_word(0.8, 0.1, 1.5, mde=0.5, eq_lo=0.2, eq_hi=1.4, n_paired=16, p_adjusted=0.09) \
        == "no clear difference"
    assert rules.comparison_word(0.8, 0.1, 1.5, mde=0.5, n_paired=16, p_adjusted=0.049) == "higher"
    assert rules.comparison_word(0.8, 0.1, 1.5, mde=0.5, n_paired=16, p_adjusted=0.05) == "no clear difference"


def test_family_words_adjust_within_a_family_and_leave_other_kinds_alone():
    rows = pd.DataFrame([comparison(0.8, 0.1, 1.5, p=0.03, kind="baseline", against="a"),
                         comparison(0.9, 0.2, 1.6, p=0.04, kind="baseline", against="b"),
                         comparison(0.9, 0.2, 1.6, p=0.03, kind="reference")])
    out = rules.family_words(rows)
    # Holm over 2: sorted p 0.03, 0.04 -> 0.06, max(0.06, 0.04) = 0.06
    assert out["p_holm"].round(6).tolist() == [0.06, 0.06, 0.03]
    assert out["family_size"].tolist() == [2, 2, 1]
    assert out["word"].tolist() == ["no clear difference", "no clear difference", "higher"]


def test_table_holm_keeps_a_supported_part_only_if_every_test_behind_it_survives():
    tests = pd.DataFrame([{"key": "a", "word": "supported", "p": 0.001},
                          {"key": "a", "word": "supported", "p": 0.03},
                          {"key": "b", "word": "equivalent", "p": 0.001},
                          {"key": "b", "word": "equivalent", "p": 0.03},
                          {"key": "c", "word": "supported", "p": 0.001}])
    out = rules.table_holm(tests).set_index("key")
    # Holm over 5: 0.001 x5, x4, x3 = 0.005, 0.004->0.005, 0.003->0.005; 0.03 x2 = 0.06, x1 -> 0.06
    assert out.loc["a", "table_word"] == "not shown" and math.isclose(out.loc["a", "p_table"], 0.06)
    assert out.loc["b", "table_word"] == "equivalent" and math.isclose(out.loc["b", "p_table"], 0.005)
    assert out.loc["c", "table_word"] == "supported"


def test_table_wide_holm_can_take_back_a_word_the_row_earned_alone():
    table = pd.DataFrame([{"eligible": True, **{p: "not run" for p in rules.PARTS},
                           **{f"{p}_p": () for p in rules.PARTS}} for _ in range(3)])
    table.loc[0, "hard_up"], table.at[0, "hard_up_p"] = "supported", (0.04,)
    table.loc[1, "hard_up"], table.at[1, "hard_up_p"] = "supported", (0.001,)
    table.loc[2, "hard_up"], table.at[2, "hard_up_p"] = "supported", (0.002,)
    out = with_table_holm(table)
    # Holm over 3: 0.001 x3 = 0.003, 0.002 x2 = 0.004, 0.04 x1 = 0.04: all survive
    assert out["hard_up_table"].tolist() == ["supported"] * 3
    table.at[2, "hard_up_p"] = (0.03,)
    out = with_table_holm(table)
    # 0.001 x3 = 0.003, 0.03 x2 = 0.06, 0.04 -> 0.06: two do not survive
    assert out["hard_up_table"].tolist() == ["not shown", "supported", "not shown"]


# ----------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("seeds, judged", [(9, False), (10, True), (16, True)])
def test_ten_paired_seeds_pass_the_gate_and_nine_do_not(seeds, judged):
    assert (rules.gate_reason(seeds, True, "") == "") is judged
    assert (rules.seeds_reason(seeds) == "") is judged


def test_a_comparison_on_fewer_than_ten_seeds_is_underpowered_even_with_a_small_mde():
    assert rules.comparison_word(0.1, -0.3, 0.5, mde=0.5, n_paired=9) == "underpowered"
    assert rules.comparison_word(0.1, -0.3, 0.5, mde=0.5, n_paired=10) == "no clear difference"


def test_a_settings_seeds_are_the_fewest_behind_any_comparison():
    rows = [comparison(1.0, 0.5, 1.5, n=16, metric=m) for m in ("hard", "easy", "all")]
    rows.append(comparison(0.0, -0.3, 0.3, n=9, method="mr2_uniform", against="mr2", kind="ablation"))
    methods = pd.DataFrame({"dataset": "d", "method": ["erm", "mr2", "mr2_uniform"], "variant": "default"})
    settings = pd.DataFrame([{"dataset": "d", "converged": True, "convergence": "ok", "cpu": "AMD (x)"}])
    row = verdict_table(pd.DataFrame(rows), methods, settings).iloc[0]
    assert row["seeds"] == 9 and not row["eligible"] and "9 paired seeds" in row["reason"]


def test_settings_csv_reports_the_fewest_seeds_of_any_method():
    from mr2.results.verdicts import settings_table
    runs = pd.DataFrame({"dataset": "d", "method": ["erm"] * 10 + ["mr2"] * 12, "variant": "default",
                         "seed": list(range(10)) + list(range(12))})
    assert settings_table(runs)["seeds"].tolist() == [10]


# ----------------------------------------------------------------------------- word order
def test_easy_not_down_is_supported_by_non_inferiority_even_when_underpowered():
    row = comparison(0.1, -1.2, 1.4, eq_lo=-0.9, eq_hi=1.2, n=9)  # 9 seeds, not equivalent: underpowered
    assert row["word"] == "underpowered"
    assert rules.reading(row, "not down") == "supported"
    edge = comparison(0.1, -1.2, 1.4, eq_lo=-1.0, eq_hi=1.2, n=9)  # the lower end at exactly −δ: not above it
    assert rules.reading(edge, "not down") == "underpowered"
    assert rules.reading(comparison(-1.0, -1.5, -0.5), "not down") == "contradicted"


def test_one_equivalent_and_one_not_shown_comparison_read_as_the_precedence_says():
    assert rules.PRECEDENCE.index("equivalent") < rules.PRECEDENCE.index("not shown")
    assert rules.part_word(["equivalent", "not shown"]) == "equivalent"
    assert rules.part_word(["supported", "underpowered"]) == "underpowered"
    assert rules.part_word(["supported", "supported"]) == "supported"
    assert rules.part_word(["supported", "contradicted", "equivalent"]) == "contradicted"


# ----------------------------------------------------------------------------- the baseline family
def test_mr2_release_and_the_controls_are_no_baselines():
    from mr2.results.verdicts import others_of
    methods = {"erm", "mr2", "mr2_release", "ce_temperature", "erm_tuned", "focal", "mr2_uniform"}
    assert others_of(methods, "erm", "baseline") == ["focal"]
    assert others_of(methods, "erm", "control") == ["ce_temperature", "erm_tuned"]


def test_an_ablations_stored_comparison_is_read_as_mr2_minus_the_ablation():
    stored = comparison(-0.6, -0.9, -0.3, eq_lo=-0.85, eq_hi=-0.35, method="mr2_no_rep", against="mr2",
                        kind="ablation")
    turned = rules.oriented(stored)
    assert (turned["method"], turned["against"]) == ("mr2", "mr2_no_rep")
    assert (turned["diff"], turned["diff_lo"], turned["diff_hi"]) == (0.6, 0.3, 0.9)
    assert (turned["eq_lo"], turned["eq_hi"]) == (0.35, 0.85)
    assert stored["word"] == "lower" and turned["word"] == "higher"
    assert rules.reading(turned, "up") == "supported"


# ----------------------------------------------------------------------------- convergence
@pytest.mark.parametrize("all_gain, hard_gain, expected", [
    (1.0, 0.0, True), (-1.0, 1.0, True), (1.0001, 0.0, False), (0.0, -1.5, False), (0.4, -1.5, False),
    (math.nan, 0.0, False)])
def test_convergence_is_two_sided_and_a_change_at_the_tolerance_passes(all_gain, hard_gain, expected):
    assert rules.converged(all_gain, hard_gain, 1.0) is expected


def convergence_rows(gains):
    return pd.DataFrame([{"dataset": "d", "check": "d.x4", "method": m, "variant": v, "epochs": e, "check_epochs": 4 * e,
                          "n_paired": 3, "all_gain": a, "all_gain_lo": a - 1, "all_gain_hi": a + 1, "hard_gain": h,
                          "hard_gain_lo": h - 1, "hard_gain_hi": h + 1, "level": 0.9, "tolerance": 1.0,
                          "converged": True} for (m, v, e), (a, h) in gains.items()])


def test_a_loss_at_four_times_the_epochs_is_not_convergence():
    table = convergence_rows({("dro", "default", 40): (0.4, -1.5), ("mr2", "default", 20): (0.1, 0.2)})
    ok, text = convergence_summary(table, "d", ["mr2", "dro"])
    assert ok is False and "dro" in text and "hard -1.5 [-2.5, -0.5]" in text and "90 %" in text


def test_a_sweep_variants_convergence_row_never_replaces_the_defaults():
    table = convergence_rows({("mr2", "default", 20): (3.0, 0.0), ("mr2", "c_bar=0.5", 20): (0.0, 0.0)})
    assert convergence_summary(table, "d", ["mr2"])[0] is False
    table = convergence_rows({("mr2", "c_bar=0.5", 20): (3.0, 0.0), ("mr2", "default", 20): (0.0, 0.0)})
    assert convergence_summary(table, "d", ["mr2"])[0] is True


def test_a_check_reads_each_methods_own_epochs():
    table = convergence_rows({("dro", "default", 40): (0.0, 0.0), ("mr2", "default", 20): (0.0, 0.0)})
    ok, text = convergence_summary(table, "d", ["mr2", "dro"])
    assert ok is True and "4x the epochs" in text


# ----------------------------------------------------------------------------- the primary test
def primary_comparisons(diff_ce, diff_erm, n=16, sd=0.5):
    rows = []
    for against, d in (("ce_temperature", diff_ce), ("erm_tuned", diff_erm)):
        half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
        eq = stats.t.ppf(0.95, n - 1) * sd / math.sqrt(n)
        rows.append(comparison(d, d - half, d + half, eq_lo=d - eq, eq_hi=d + eq, n=n, sd=sd, against=against,
                               kind="control", p=S.paired_p_value(d, sd, n), family_size=2))
    return pd.DataFrame(rows)


def test_the_primary_test_is_mr2_minus_the_better_control_uncorrected():
    comps = primary_comparisons(0.1, 1.5)
    table = pd.DataFrame([{"dataset": "d", "reason": "", "cpu": "AMD (x)"}])
    result = primary_result(comps, {"dataset": "d", "group": "hard", "method": "mr2",
                                    "controls": ["ce_temperature", "erm_tuned"]}, table)
    assert result["control"] == "ce_temperature" and result["diff"] == pytest.approx(0.1)
    assert result["word"] == "equivalent"  # 90 % interval 0.1 ± 0.22 inside ± 1
    result = primary_result(primary_comparisons(1.2, 1.5), {"dataset": "d", "method": "mr2", "group": "hard",
                                                            "controls": ["ce_temperature", "erm_tuned"]}, table)
    assert result["control"] == "ce_temperature" and result["word"] == "supported"
    gated = primary_result(comps, {"dataset": "d", "method": "mr2", "group": "hard",
                                   "controls": ["ce_temperature", "erm_tuned"]},
                           pd.DataFrame([{"dataset": "d", "reason": "9 paired seeds", "cpu": "AMD (x)"}]))
    assert gated["word"] == "not judged"


def test_the_headline_sentence_follows_the_primary_test():
    base = {"dataset": "fashion_mnist", "data": "fashion_mnist", "model": "small_cnn", "group": "hard",
            "control": "ce_temperature", "n_paired": 16, "diff": 0.1, "diff_lo": -0.2, "diff_hi": 0.4,
            "effect_of_interest": 1.0, "cpu": "AMD (AMD EPYC)", "reason": ""}
    beaten = headline(pd.DataFrame(), [{**base, "word": "equivalent"}]).splitlines()[0]
    assert "does not beat" in beaten and "temperature" in beaten and "+0.1 [-0.2, +0.4]" in beaten
    assert "excluded" not in beaten  # no 90 % interval given, no bound claimed
    for eq_hi, shown in ((0.382, "0.4"), (0.3, "0.3"), (0.301, "0.4"), (-0.05, "0.0"), (1.26, "1.3")):
        line = headline(pd.DataFrame(), [{**base, "word": "equivalent", "eq_hi": eq_hi}]).splitlines()[0]
        assert f"a gain above {shown} points is excluded at 90 %" in line, (eq_hi, line)
    won = headline(pd.DataFrame(), [{**base, "word": "supported", "diff": 1.5, "diff_lo": 1.1,
                                     "diff_hi": 1.9}]).splitlines()[0]
    assert "raises the hard classes above" in won and "+1.5 [+1.1, +1.9]" in won


def test_the_headline_excluded_gain_is_the_upper_end_of_the_interval_it_names():
    # the README's "a gain above X is excluded" reads X from eq_hi of MR² − ERM on the hard classes
    rows = [comparison(0.2, -0.1, 0.5, eq_lo=-0.05, eq_hi=0.45, metric=m) for m in ("hard", "easy", "all")]
    methods = pd.DataFrame({"dataset": "d", "method": ["erm", "mr2"], "variant": "default"})
    settings = pd.DataFrame([{"dataset": "d", "converged": True, "convergence": "ok", "cpu": "AMD (x)"}])
    row = verdict_table(pd.DataFrame(rows), methods, settings).iloc[0]
    assert row["hard_excluded_above"] == pytest.approx(0.45)


# ----------------------------------------------------------------------------- the legend
def test_the_legend_is_written_from_the_rulebooks_constants(monkeypatch):
    assert f"≥ {rules.MIN_SEEDS} paired seeds" in rules.legend()
    monkeypatch.setattr(rules, "MIN_SEEDS", 12)
    assert "≥ 12 paired seeds" in rules.legend()
    assert "± 2 " in rules.legend(effect=2.0)


def test_a_verdict_table_without_rows_says_so():
    assert verdict_markdown(pd.DataFrame()) == "No setting has been run.\n"


def test_the_p_value_of_each_kind_of_word():
    row = comparison(0.5, 0.1, 0.9, sd=1.0, n=16, p=0.02)
    assert rules.test_p_value(row, "up", "supported") == 0.02
    se = 1.0 / 4
    assert rules.test_p_value(row, "not down", "supported") == pytest.approx(stats.t.sf((0.5 + 1) / se, 15))
    tost = max(stats.t.sf((0.5 + 1) / se, 15), stats.t.cdf((0.5 - 1) / se, 15))
    assert rules.test_p_value(row, "up", "equivalent") == pytest.approx(tost)
    assert rules.test_p_value(row, "up", "not shown") is None
    assert np.isnan(rules.one_sided_p(comparison(0.5, 0.1, 0.9, n=1), 0.0, "above"))


# ----------------------------------------------------------------------------- the report and the table agree
def _claim_sentences(text: str) -> dict[str, str]:
    """dataset -> the report's sentence on the paper's claim (under its "### <dataset>" heading)."""
    out, dataset = {}, None
    for line in text.splitlines():
        if line.startswith("### "):
            dataset = line[4:].strip()
        elif line.startswith("- The paper's claim") and dataset:
            out[dataset] = line
    return out


@pytest.mark.parametrize("gate", ["passes", "seeds", "convergence"])
def test_the_report_page_and_the_verdict_table_never_disagree(tmp_path, gate):
    """Run set: two datasets with 10 or 9 seeds; a convergence table that passes or fails. The report's
    sentence for each dataset states exactly the table's words, or its 'not judged' and reason."""
    from results_data import tables
    from mr2.results.convergence import convergence_table
    from mr2.results.groups import difficulty_table
    from mr2.results.report import write_report
    from mr2.results.verdicts import settings_table
    from mr2.results.tables import comparisons_table

    seeds = tuple(range(9 if gate == "seeds" else 10))
    t = tables(datasets=("dA", "dB"), seeds=seeds)
    t["groups"] = difficulty_table(t["per_class"])
    gains = {"all_gain": 0.2, "hard_gain": -1.4 if gate == "convergence" else 0.3}
    t["convergence"] = pd.DataFrame([{"dataset": d, "check": f"{d}.x4", "method": m, "variant": "default",
                                      "epochs": 4, "check_epochs": 16, "n_paired": 3, **gains,
                                      "all_gain_lo": 0, "all_gain_hi": 0, "hard_gain_lo": 0, "hard_gain_hi": 0,
                                      "level": 0.9, "tolerance": 1.0, "converged": True}
                                     for d in ("dA", "dB") for m in t["runs"]["method"].unique()])
    captions = Path(__file__).resolve().parents[1] / "workflow" / "report"
    text = write_report(t, "| table |", {}, tmp_path / "report.md", captions, {"seeds": list(seeds)})
    table = verdict_table(comparisons_table(t["per_class"], t["runs"], t["groups"]),
                          t["per_class"][["dataset", "method", "variant"]].drop_duplicates(),
                          settings_table(t["runs"], t["convergence"]))
    sentences = _claim_sentences(text)
    assert set(sentences) == {"dA", "dB"}
    for _, row in table.iterrows():
        said = sentences[row["dataset"]]
        if row["eligible"]:
            assert gate == "passes"
            for part in ("hard_up", "easy_not_down", "overall_up"):
                assert f"**{rules.shown_word(row[part])}**" in said
        else:
            assert gate != "passes" and "**not judged**" in said and row["reason"] in said
            assert ("9 paired seeds" if gate == "seeds" else "not at convergence") in said
    # the report's verdict section shows the same rows: judged ones in its table, the others as not judged
    verdict = text.split("## Verdict")[1].split("## Results")[0]
    assert ("Run sets not judged" in verdict) is (gate != "passes")
    for _, row in table[~table["eligible"].astype(bool)].iterrows():
        assert f"not judged: {row['reason']}" in verdict
