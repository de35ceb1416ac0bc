"""The power of every verdict and the verdict table across settings: the minimum detectable effect
against a simulation of paired t-tests and the normal approximation, the word of a comparison, the
tidy table of paired comparisons against hand computations on a three-class table (one easy, one
medium, one hard class), the decision rules of the verdict table, the trade-off figure."""

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from results_data import run_in_ascii_locale
from mr2.results import groups as G
from mr2.results import rules
from mr2.results import snapshots as SN
from mr2.results import statistics as S
from mr2.results import tables as R
from mr2.results import verdict_text as VT
from mr2.results import verdicts as V

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- minimum detectable effect
def test_mde_gives_80_percent_rejections_in_a_simulation_of_paired_t_tests():
    rng = np.random.default_rng(1)
    for n, sd in ((2, 1.0), (3, 1.5), (5, 2.0), (10, 0.7)):  # n = 2: where scipy's nct.cdf fails
        mde = S.minimum_detectable_effect(sd, n)
        d = rng.normal(mde, sd, size=(40000, n))  # paired differences with the true mean at the MDE
        p = stats.ttest_1samp(d, 0.0, axis=1).pvalue
        assert np.mean(p < 0.05) == pytest.approx(0.80, abs=0.01), (n, sd)
        d0 = rng.normal(0.8 * mde, sd, size=(40000, n))  # a smaller effect is detected less often
        assert np.mean(stats.ttest_1samp(d0, 0.0, axis=1).pvalue < 0.05) < 0.75


def test_mde_tends_to_the_normal_approximation_for_large_n():
    n, sd = 20000, 3.0
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)  # 1.960 + 0.842 = 2.802
    assert S.minimum_detectable_effect(sd, n) * math.sqrt(n) / sd == pytest.approx(z, abs=2e-3)
    assert S.minimum_detectable_effect(sd, n, alpha=0.01, power=0.9) * math.sqrt(n) / sd == pytest.approx(
        stats.norm.ppf(0.995) + stats.norm.ppf(0.9), abs=2e-3)


def test_mde_edge_cases_and_scale():
    assert math.isnan(S.minimum_detectable_effect(1.0, 1)) and math.isnan(S.minimum_detectable_effect(1.0, 0))
    assert math.isnan(S.minimum_detectable_effect(float("nan"), 5))
    assert S.minimum_detectable_effect(0.0, 3) == 0.0
    assert S.minimum_detectable_effect(2.0, 4) == pytest.approx(2 * S.minimum_detectable_effect(1.0, 4))
    assert S.minimum_detectable_effect(1.0, 3) > S.minimum_detectable_effect(1.0, 10)  # more seeds, smaller


def test_seeds_needed_is_the_first_n_whose_mde_reaches_the_target():
    for sd, target in ((0.99, 1.0), (2.5, 1.0), (1.0, 3.0)):
        n = S.seeds_needed(sd, target)
        assert S.minimum_detectable_effect(sd, n) <= target
        assert n == 2 or S.minimum_detectable_effect(sd, n - 1) > target
    # for large n about ((z_0.975 + z_0.8) sd / target)²
    assert S.seeds_needed(5.0, 1.0) == pytest.approx((2.8016 * 5.0) ** 2, rel=0.02)


def test_seeds_needed_at_its_edges():
    """A target the MDE meets exactly counts (≤); two seeds when they already suffice; more power needs
    more seeds; ``most`` is the last n tried, and the error names it."""
    assert S.seeds_needed(1.0, S.minimum_detectable_effect(1.0, 5)) == 5
    assert S.seeds_needed(0.01, 1.0) == 2
    sd, target = 2.0, 1.5
    n = S.seeds_needed(sd, target)
    strict = S.seeds_needed(sd, target, power=0.95)
    assert strict > n and S.minimum_detectable_effect(sd, strict, power=0.95) <= target
    assert S.minimum_detectable_effect(sd, strict - 1, power=0.95) > target
    assert S.seeds_needed(sd, target, most=n) == n
    with pytest.raises(ValueError, match=rf"^more than {n - 1} seeds needed to detect 1.5 at paired sd 2.0$"):
        S.seeds_needed(sd, target, most=n - 1)


def test_paired_difference_carries_the_paired_sd_and_its_mde():
    out = S.paired_difference(np.array([3.0, 5.0, 7.0]), np.array([2.0, 3.0, 4.0]))  # d = 1, 2, 3: sd 1
    assert out["diff_sd"] == pytest.approx(1.0) and out["mde"] == pytest.approx(S.minimum_detectable_effect(1.0, 3))
    one = S.paired_difference(np.array([3.0]), np.array([2.0]))
    assert math.isnan(one["diff_sd"]) and math.isnan(one["mde"])


def test_the_word_of_a_comparison():
    word = rules.comparison_word
    assert word(0.3, -0.4, 1.0, mde=0.9) == "no clear difference"
    assert word(0.3, -0.4, 1.0, mde=1.1) == "underpowered"
    # an MDE exactly at the effect of interest could see it; an undefined one could not
    assert word(0.3, -0.4, 1.0, mde=0.5, effect=0.5) == "no clear difference"
    assert word(0.3, -0.4, 1.0, mde=math.nan) == "underpowered"
    assert word(0.9, 0.2, 1.6, mde=5.0) == "higher"  # a finding is a finding, whatever the MDE
    assert word(0.3, -0.4, 1.0, mde=1.1, effect=2.0) == "no clear difference"
    assert word(3.0, 1.0, 5.0, mde=4.0) == "higher"  # a detected change is one, power or not
    assert word(-3.0, -5.0, -1.0, mde=4.0) == "lower"
    assert word(1.0, float("nan"), float("nan"), mde=float("nan")).startswith("undetermined")


# ----------------------------------------------------------------------------- the paired comparisons
ERM = np.array([0.9, 0.7, 0.5])  # class 0 easy, 1 medium, 2 hard


def three_class(effects: dict[str, tuple[float, float, float]], seeds=4, noise=0.01, rng_seed=0) -> pd.DataFrame:
    """per_class of methods with known per-class changes over ERM, the same seed noise per method."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for method, change in {"erm": (0.0, 0.0, 0.0), **effects}.items():
        for seed in range(seeds):
            acc = ERM + np.array(change) + rng.normal(0, noise, 3)
            rows += [{"dataset": "d", "method": method, "variant": "default", "seed": seed, "class": c,
                      "accuracy": acc[c]} for c in range(3)]
    return pd.DataFrame(rows)


def by_hand(pc: pd.DataFrame, method: str, against: str, cls: int) -> np.ndarray:
    """Per-seed paired difference in points of one class (each group holds one class here)."""
    def acc(m):
        return pc[(pc["method"] == m) & (pc["class"] == cls)].set_index("seed")["accuracy"]
    return 100 * (acc(method) - acc(against)).to_numpy()


def test_comparisons_are_the_pairs_the_claim_needs_computed_by_hand():
    pc = three_class({"mr2": (0.0, 0.0, 0.03), "mr2_uniform": (0.0, 0.0, 0.01), "ldam": (-0.03, 0.0, 0.03),
                      "mr2_release": (0.0, 0.0, 0.0)}, noise=0.004)
    groups = G.difficulty_table(pc)
    c = R.comparisons_table(pc, None, groups, effect_of_interest=1.0)
    kinds = {(r.method, r.against): r.kind for r in c.drop_duplicates(["method", "against"]).itertuples()}
    assert kinds == {("mr2", "erm"): "reference", ("mr2_uniform", "erm"): "reference", ("ldam", "erm"): "reference",
                     ("mr2_release", "erm"): "reference", ("mr2_uniform", "mr2"): "ablation",
                     ("mr2", "ldam"): "baseline"}  # the release is MR²'s own, no baseline
    for (method, against), cls, metric in ((("mr2_uniform", "mr2"), 2, "hard"), (("mr2", "ldam"), 0, "easy"),
                                           (("ldam", "erm"), 2, "hard")):
        d = by_hand(pc, method, against, cls)
        row = c[(c["method"] == method) & (c["against"] == against) & (c["metric"] == metric)].iloc[0]
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
        assert row["diff"] == pytest.approx(d.mean()) and row["diff_sd"] == pytest.approx(d.std(ddof=1))
        assert (row["diff_lo"], row["diff_hi"]) == pytest.approx((d.mean() - half, d.mean() + half))
        assert row["mde"] == pytest.approx(S.minimum_detectable_effect(d.std(ddof=1), len(d)))
        assert row["n_paired"] == 4
    word = c.set_index(["method", "against", "metric"])["word"]
    assert word[("mr2_uniform", "mr2", "hard")] == "lower" and word[("mr2", "ldam", "easy")] == "higher"
    assert word[("ldam", "erm", "easy")] == "lower" and word[("mr2", "erm", "hard")] == "higher"


def test_method_options_line_reads_the_default_runs_and_a_figure_block_names_its_figure(tmp_path):
    from mr2.results.report import figure_block, method_options_line

    prefix = "config.method.options."
    runs = pd.DataFrame([
        {"method": "mr2", "variant": "default", prefix + "lam": 0.1, prefix + "c_bar": 1.0, prefix + "max_m": None},
        {"method": "mr2", "variant": "c_bar=0.5", prefix + "lam": 0.1, prefix + "c_bar": 0.5, prefix + "max_m": None},
        {"method": "ldam", "variant": "default", prefix + "lam": None, prefix + "c_bar": None, prefix + "max_m": 0.5},
        {"method": "mr2", "variant": "default", prefix + "lam": 0.1, prefix + "c_bar": 2.0, prefix + "max_m": None}])
    # c̄ before λ (the symbols' order), other options after; a sweep's value is not the default's
    assert method_options_line(runs) == ("Method options as run (each run's resolved config): "
                                         "MR²: c̄ = 1, 2, λ = 0.1; LDAM: max_m = 0.5.")
    assert method_options_line(runs[runs["variant"] != "default"].drop(columns=[prefix + "max_m"])) is None
    (tmp_path / "group_accuracy.rst").write_text("The caption.\n")
    (tmp_path / "claim_forest.rst").write_text("Another.\n")
    assert figure_block("group_accuracy", "figures/group_accuracy.png", tmp_path) == [
        "### Group accuracy", "", "![group_accuracy](figures/group_accuracy.png)", "", "The caption.", ""]
    assert figure_block("claim_forest", "f/c.png", tmp_path)[:3] == [
        "### The claim: each method's paired Δ to the reference", "", "![claim_forest](f/c.png)"]


def test_results_table_columns_row_order_and_level():
    """Exactly the documented columns; the reference first, then default variants in order of first
    appearance, then the other variants (a variant of the reference too); the interval at ``level``
    is the t-interval of the per-seed differences."""
    pc = three_class({"mr2": (0.0, 0.0, 0.06), "erm_lr": (0.0, 0.0, 0.01), "ldam": (-0.03, 0.0, 0.03)})
    pc.loc[pc["method"] == "erm_lr", ["method", "variant"]] = ["erm", "lr=0.1"]  # a variant of the reference
    pc = pd.concat([pc[pc["method"] == "ldam"], pc[pc["variant"] == "lr=0.1"], pc[pc["method"] == "mr2"],
                    pc[(pc["method"] == "erm") & (pc["variant"] == "default")]], ignore_index=True)
    table = R.results_table(pc, None, G.difficulty_table(pc), level=0.9)
    assert list(zip(table["method"], table["variant"])) == [("erm", "default"), ("ldam", "default"),
                                                            ("mr2", "default"), ("erm", "lr=0.1")]
    metrics = ["all", "easy", "medium", "hard", "worst"]
    assert list(table.columns) == ["dataset", "method", "variant", "n_seeds", "n_paired"] + [
        f"{m}_{k}" for m in metrics for k in ("mean", "std", "diff", "diff_lo", "diff_hi", "diff_sd", "mde")]
    assert list(table.index) == [0, 1, 2, 3] and table["n_paired"].tolist() == [4, 4, 4, 4]
    d = by_hand(pc[pc["variant"] == "default"], "mr2", "erm", 2)  # one class per group: hard is class 2
    half = stats.t.ppf(0.95, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    row = table.iloc[2]
    assert (row["hard_diff_lo"], row["hard_diff_hi"]) == pytest.approx((d.mean() - half, d.mean() + half))


def test_the_results_table_reports_the_same_mde_as_the_comparisons():
    pc = three_class({"mr2": (0.0, 0.0, 0.03)})
    groups = G.difficulty_table(pc)
    table = R.results_table(pc, None, groups).set_index("method")
    c = R.comparisons_table(pc, None, groups).set_index(["method", "metric"])
    for m in ("all", "easy", "hard", "worst"):
        assert table.loc["mr2", f"{m}_mde"] == pytest.approx(c.loc[("mr2", m), "mde"])
        assert table.loc["mr2", f"{m}_diff_sd"] == pytest.approx(c.loc[("mr2", m), "diff_sd"])
    assert math.isnan(table.loc["erm", "hard_mde"])


def test_an_old_results_table_gives_back_its_sd_from_the_interval():
    pc = three_class({"mr2": (0.0, 0.0, 0.03)}, noise=0.02)
    groups = G.difficulty_table(pc)
    table = R.results_table(pc, None, groups)
    old = table.drop(columns=[c for c in table if c.endswith(("_diff_sd", "_mde"))])
    back = SN.comparisons_from_results(old, "erm").set_index("metric")
    new = R.comparisons_table(pc, None, groups).set_index("metric")
    for m in ("all", "easy", "hard"):
        assert back.loc[m, "diff_sd"] == pytest.approx(new.loc[m, "diff_sd"])
        assert back.loc[m, "mde"] == pytest.approx(new.loc[m, "mde"]) and back.loc[m, "word"] == new.loc[m, "word"]


def test_results_table_comparisons_are_the_reference_rows_of_the_comparisons_table():
    """Every column of comparisons_from_results on a current results.csv against comparisons_table's
    reference rows; the paired sd is read from the table when it has one."""
    pc = three_class({"mr2": (0.0, 0.0, 0.03), "ldam": (-0.02, 0.0, 0.0)}, noise=0.02)
    groups = G.difficulty_table(pc)
    table = R.results_table(pc, None, groups)
    back = SN.comparisons_from_results(table, "erm")
    new = R.comparisons_table(pc, None, groups)
    new = new[new["kind"] == "reference"].reset_index(drop=True)
    assert list(back.columns) == R.COMPARISON_COLUMNS and len(back) == len(new) == 2 * 5
    pd.testing.assert_frame_equal(back.sort_values(["method", "metric"]).reset_index(drop=True),
                                  new.sort_values(["method", "metric"]).reset_index(drop=True), check_dtype=False)
    doubled = table.assign(hard_diff_sd=2 * table["hard_diff_sd"])  # the table's own sd, not one from the interval
    row = SN.comparisons_from_results(doubled, "erm").set_index(["method", "metric"]).loc[("mr2", "hard")]
    assert row["diff_sd"] == pytest.approx(2 * new.set_index(["method", "metric"]).loc[("mr2", "hard"), "diff_sd"])


def test_results_table_comparisons_at_two_seeds_another_level_and_effect_of_interest():
    pc = three_class({"mr2": (0.0, 0.0, 0.03)}, noise=0.02)
    groups = G.difficulty_table(pc)
    old = R.results_table(pc, None, groups)
    old = old.drop(columns=[c for c in old if c.endswith(("_diff_sd", "_mde"))]).assign(n_paired=2)
    # a variant of the reference itself is compared with the reference; its default row is not
    old = pd.concat([old, old[old["method"] == "mr2"].assign(method="erm", variant="wd=0")], ignore_index=True)
    back = SN.comparisons_from_results(old, "erm", level=0.9)
    assert sorted(set(zip(back["method"], back["variant"]))) == [("erm", "wd=0"), ("mr2", "default")]
    mr2 = old.set_index("method").loc["mr2"]
    for _, r in back[back["method"] == "mr2"].iterrows():
        lo, hi = mr2[f"{r['metric']}_diff_lo"], mr2[f"{r['metric']}_diff_hi"]
        sd = (hi - lo) / 2 * math.sqrt(2) / stats.t.ppf(0.95, 1)  # two seeds: one degree of freedom, 90 %
        assert r["diff_sd"] == pytest.approx(sd) and r["n_paired"] == 2
        assert r["mde"] == pytest.approx(S.minimum_detectable_effect(sd, 2, alpha=0.1))
    one = SN.comparisons_from_results(old.assign(n_paired=1), "erm")
    assert one["diff_sd"].isna().all() and one["mde"].isna().all()
    words = {eoi: list(SN.comparisons_from_results(old, "erm", effect_of_interest=eoi)["word"]) for eoi in (1e-3, 1e6)}
    assert "underpowered" in words[1e-3] and "underpowered" not in words[1e6]


# ----------------------------------------------------------------------------- the verdict table's rules
def comparison(method, against, metric, word, diff=0.0, eq_lo=None):
    """A comparisons-table row; its two one-sided tests' interval is diff ± 0.8 unless ``eq_lo`` is given."""
    return {"dataset": "d", "method": method, "variant": "default", "against": against, "against_variant": "default",
            "kind": "", "metric": metric, "n_paired": 3, "diff": diff, "diff_sd": 1.0, "diff_lo": diff - 1,
            "diff_hi": diff + 1, "mde": 1.0, "effect_of_interest": 1.0,
            "eq_lo": diff - 0.8 if eq_lo is None else eq_lo, "eq_hi": diff + 0.8, "word": word}


def cells(rows, methods):
    """part -> word of one setting's comparisons ``rows`` and the default-variant ``methods`` it ran."""
    return {part: cell["word"] for part, cell in verdict_cells(rows, methods).items()}


def verdict_cells(rows, methods):
    return V.verdict_cells(pd.DataFrame(rows, columns=R.COMPARISON_COLUMNS), set(methods))


def test_the_decision_rules_of_each_part():
    """Each part from its comparisons as the table stores them (an ablation's as ablation − MR²): the
    parts of the untuned reference, the ablations read as MR² − ablation up, the baselines as hard up
    and easy not down."""
    rows = [comparison("mr2", "erm", "hard", "higher", 2.0), comparison("mr2", "erm", "easy", "no clear difference"),
            comparison("mr2", "erm", "all", "underpowered"), comparison("mr2_uniform", "mr2", "hard", "lower", -2.0),
            comparison("mr2_no_rep", "mr2", "hard", "no clear difference"),
            comparison("mr2", "ldam", "hard", "higher"), comparison("mr2", "ldam", "easy", "higher"),
            comparison("mr2", "dro", "hard", "underpowered"), comparison("mr2", "dro", "easy", "higher")]
    methods = ["erm", "mr2", "mr2_uniform", "mr2_no_rep", "ldam", "dro"]
    assert cells(rows, methods) == {"hard_up": "supported", "easy_not_down": "supported", "overall_up": "underpowered",
                                    "above_controls": "not run", "ablations_below": "not shown",
                                    "above_baselines": "underpowered"}
    # the ablation's Δ is shown as MR² − the ablation: the stored −2.0 turned round
    assert verdict_cells(rows, methods)["ablations_below"]["every"].startswith("vs mr2_uniform +2.0 [+1.0, +3.0]")
    rows[1] = comparison("mr2", "erm", "easy", "lower")  # an easy-class loss contradicts
    rows[4] = comparison("mr2_no_rep", "mr2", "hard", "lower")  # MR² above both ablations
    rows[8] = comparison("mr2", "dro", "easy", "lower")  # MR² loses easy classes to a baseline
    assert cells(rows, methods) == {"hard_up": "supported", "easy_not_down": "contradicted",
                                    "overall_up": "underpowered", "above_controls": "not run",
                                    "ablations_below": "supported", "above_baselines": "contradicted"}
    # behind the word: the comparison that decides it (dro), and the count of baselines per word; every
    # baseline's Δs stand beside them for a row without words
    baselines = verdict_cells(rows, methods)["above_baselines"]
    assert baselines["detail"].startswith("vs dro: hard +0.0 [-1.0, +1.0], easy +0.0 [-1.0, +1.0]")
    assert "of 2: 1 contradicted, 1 supported" in baselines["detail"] and "vs ldam" not in baselines["detail"]
    assert "vs ldam: hard" in baselines["every"] and "vs dro: hard" in baselines["every"]
    rows[0] = comparison("mr2", "erm", "hard", "no clear difference")
    rows[2] = comparison("mr2", "erm", "all", "undetermined (too few seeds for an interval)")
    assert cells(rows, methods)["hard_up"] == "not shown" and cells(rows, methods)["overall_up"] == "underpowered"
    # equivalence: a hard-class gain of the effect of interest excluded; an easy-class loss excluded
    rows[0] = comparison("mr2", "erm", "hard", "equivalent")
    rows[1] = comparison("mr2", "erm", "easy", "equivalent")
    rows[3] = comparison("mr2_uniform", "mr2", "hard", "equivalent")
    rows[4] = comparison("mr2_no_rep", "mr2", "hard", "lower")
    got = cells(rows, methods)
    assert got["hard_up"] == "equivalent" and got["easy_not_down"] == "supported" and got["ablations_below"] == "equivalent"
    # easy classes not down without equivalence: supported by non-inferiority alone (90 % lower end above −1)
    rows[1] = comparison("mr2", "erm", "easy", "no clear difference", 0.5, eq_lo=-0.9)
    assert cells(rows, methods)["easy_not_down"] == "supported"
    rows[1] = comparison("mr2", "erm", "easy", "underpowered", 0.5, eq_lo=-1.1)
    assert cells(rows, methods)["easy_not_down"] == "underpowered"
    rows[1] = comparison("mr2", "erm", "easy", "no clear difference", 0.0, eq_lo=-1.5)
    assert cells(rows, methods)["easy_not_down"] == "not shown"


def test_the_equally_tuned_controls_are_a_part_of_their_own_read_like_the_baselines():
    rows = [comparison("mr2", "erm", m, "higher") for m in ("hard", "easy", "all")]
    rows += [comparison("mr2", "ce_temperature", "hard", "higher", 1.5), comparison("mr2", "ce_temperature", "easy", "higher"),
             comparison("mr2", "erm_tuned", "hard", "no clear difference", 0.2),
             comparison("mr2", "erm_tuned", "easy", "higher")]
    methods = ["erm", "mr2", "ce_temperature", "erm_tuned"]
    got = verdict_cells(rows, methods)
    # not shown above erm_tuned decides; neither control is a baseline
    assert got["above_controls"]["word"] == "not shown" and got["above_controls"]["detail"].startswith("vs erm_tuned: hard +0.2")
    assert got["above_baselines"]["word"] == "not run"
    rows[5] = comparison("mr2", "erm_tuned", "hard", "higher", 1.2)
    assert cells(rows, methods)["above_controls"] == "supported"


def test_parts_not_run_and_not_computed():
    rows = [comparison("mr2", "erm", m, "higher") for m in ("hard", "easy", "all")]
    assert cells(rows, ["erm", "mr2"]) == {"hard_up": "supported", "easy_not_down": "supported",
                                           "overall_up": "supported", "above_controls": "not run",
                                           "ablations_below": "not run", "above_baselines": "not run"}
    assert set(cells([], ["erm", "ldam"]).values()) == {"not run"}  # no MR²
    old = cells(rows, {"erm", "mr2", "mr2_uniform", "ldam"})
    # the ablation and baseline comparisons are missing (an older snapshot): not computed
    assert old["ablations_below"] == "not computed" and old["above_baselines"] == "not computed"


# ----------------------------------------------------------------------------- snapshots, CLI, README
def write_snapshot(folder: Path, pc: pd.DataFrame) -> None:
    from mr2.cli import main

    tables = folder.parent / (folder.name + "_tables")
    tables.mkdir(parents=True)
    R.write_tables({"per_class": pc, "runs": runs_of(pc), "epochs": pd.DataFrame(columns=["dataset"]),
                    "groups": G.difficulty_table(pc)}, tables)
    assert main(["table", "--tables", str(tables), "--effect-of-interest", "1.0"]) == 0
    return tables


def runs_of(pc: pd.DataFrame) -> pd.DataFrame:
    runs = pc.groupby(["dataset", "method", "variant", "seed"], as_index=False)["accuracy"].mean()
    return runs.rename(columns={"accuracy": "top1"}).assign(**{"config.data.name": "three", "config.model.name": "mlp",
                                                               "config.data.train_cap": 600, "config.train.epochs": 6})


def test_the_readme_verdict_block_comes_from_the_snapshots(tmp_path):
    from mr2.cli import main
    from mr2.results.readme import update_readme

    pc = three_class({"mr2": (0.0, 0.0, 0.06), "mr2_uniform": (0.0, 0.0, 0.0), "ldam": (-0.03, 0.0, 0.03)},
                     noise=0.004)
    tables = write_snapshot(tmp_path / "a", pc)
    assert {"comparisons.csv", "settings.csv"} <= {p.name for p in tables.iterdir()}
    readme = tmp_path / "README.md"
    readme.write_text(f"top\n{VT.BEGIN}\nSTALE-BLOCK\n{VT.END}\n<!-- results:a -->\n<!-- /results:a -->\nend\n")
    update_readme(tables, "a", readme, tmp_path, config="config/three.yaml")
    snap = tmp_path / "docs" / "results"
    assert (snap / "a" / "comparisons.csv").is_file()
    assert pd.read_csv(snap / "a" / "settings.csv")["config"].tolist() == ["config/three.yaml"]
    block = VT.readme_verdicts(readme.read_text())
    expected = VT.verdict_markdown(SN.snapshot_verdicts(snap), SN.snapshot_primaries(snap), link="docs/results")
    assert block == expected.strip("\n") and "STALE-BLOCK" not in readme.read_text()
    assert "[a](docs/results/a/)" in block  # each row links to its snapshot, relative to the page
    row = SN.snapshot_verdicts(snap).iloc[0]
    assert (row["hard_up"], row["ablations_below"], row["above_baselines"]) == ("supported", "supported", "supported")
    assert row["regime"] == "600/class × 6 ep" and row["model"] == "mlp" and "config/three.yaml" in block
    readme.write_text("no block\n")
    assert main(["verdicts", "--snapshots", str(snap), "--readme", str(readme)]) == 2  # one line, no traceback


def test_snapshot_verdicts_read_every_snapshot_folder_in_order(tmp_path):
    """A current snapshot (comparisons and settings), an older one (results.csv alone: its reference
    comparisons are rebuilt, the pairwise parts are "not computed"), a folder that is no snapshot and
    an ERM-only one (no part run: left out)."""
    pc = three_class({"mr2": (0.0, 0.0, 0.06), "mr2_uniform": (0.0, 0.0, 0.0), "ldam": (-0.03, 0.0, 0.03)},
                     noise=0.004)
    tables = write_snapshot(tmp_path / "x", pc)
    erm_only = write_snapshot(tmp_path / "y", three_class({}))
    root = tmp_path / "snapshots"
    shutil.copytree(tables, root / "a")
    pd.read_csv(tables / "settings.csv").assign(config="config/three.yaml", model="").to_csv(
        root / "a" / "settings.csv", index=False)
    (root / "b").mkdir()
    shutil.copy(tables / "results.csv", root / "b" / "results.csv")
    (root / "c").mkdir()
    (root / "c" / "notes.txt").write_text("not a snapshot")
    shutil.copytree(erm_only, root / "d")
    table = SN.snapshot_verdicts(root)
    assert list(table["snapshot"]) == ["a", "b"] and list(table.index) == [0, 1]
    assert {"snapshot", "config", "identity", "cpu", "seeds", "reason", "eligible", *rules.PARTS} <= set(table.columns)
    # 3 seeds and no convergence check: no verdict word, and the reason says both
    n = pc["seed"].nunique()
    assert not table["eligible"].any() and table.loc[0, "seeds"] == n
    assert table.loc[0, "reason"] == f"{n} paired seeds (a verdict needs 10); convergence not checked"
    assert list(table["config"]) == ["config/three.yaml", "b"]  # settings.csv's config, else the folder's name
    assert table.loc[0, "model"] == "" and table.loc[0, "regime"] == "600/class × 6 ep"  # an empty cell stays empty
    assert list(table["cpu"]) == ["not recorded"] * 2  # runs without the CPU record and no machine.yaml
    for part in ("hard_up", "easy_not_down", "overall_up"):  # from the reference comparisons: the same in both
        assert table.loc[1, part] == table.loc[0, part] and table.loc[1, f"{part}_detail"] == table.loc[0, f"{part}_detail"]
    assert table.loc[0, "hard_up"] == "supported" and table.loc[0, "ablations_below"] == "supported"
    assert (table.loc[1, "ablations_below"], table.loc[1, "above_baselines"]) == (rules.NOT_COMPUTED, rules.NOT_COMPUTED)
    assert (table.loc[1, "ablations_below_detail"], table.loc[1, "above_baselines_detail"]) == ("", "")
    # the snapshot holds its per-seed table, the older one does not: only the first has an identity
    assert table.loc[0, "identity"] != "" and table.loc[1, "identity"] == ""
    # the CPU of runs that predate the per-run record, from the snapshot's machine.yaml
    (root / "a" / "machine.yaml").write_text("cpu: AMD (AMD EPYC)\n")
    assert SN.snapshot_verdicts(root).loc[0, "cpu"] == "AMD (AMD EPYC)"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert SN.snapshot_verdicts(empty).empty


def judged_line(markdown: str, snapshot: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith(f"| {snapshot} | "))


def test_a_run_set_held_by_several_snapshots_is_one_row_of_the_verdict(tmp_path):
    """Issue 39: the default's runs reused by an ablation config (a) and a baselines config (b) are one
    row naming both, with the ablation part from a and the baseline part from b; another run set (c, other
    seeds of noise) keeps its own row; the headline and the short table see the same rows. Snapshots are
    one run set when they hold the same per-seed numbers of the reference and MR² (``identity``)."""
    base = {"mr2": (0.0, 0.0, 0.06), "mr2_uniform": (0.0, 0.0, 0.0), "ldam": (-0.03, 0.0, 0.03)}
    pc = three_class(base, noise=0.004)
    root = tmp_path / "snapshots"
    for name, drop in (("a", "ldam"), ("b", "mr2_uniform")):
        shutil.copytree(write_snapshot(tmp_path / name, pc[pc["method"] != drop]), root / name)
    shutil.copytree(write_snapshot(tmp_path / "c", three_class(base, noise=0.004, rng_seed=7)), root / "c")
    table = SN.snapshot_verdicts(root)
    assert list(table["snapshot"]) == ["a", "b", "c"]
    assert table.loc[0, "identity"] == table.loc[1, "identity"] != table.loc[2, "identity"]
    merged = SN.one_row_per_run_set(table)
    assert list(merged["snapshot"]) == ["a, b", "c"]
    row = merged.iloc[0]
    assert row["ablations_below_detail"] == table.loc[0, "ablations_below_detail"] != ""
    assert row["above_baselines_detail"] == table.loc[1, "above_baselines_detail"] != ""
    assert row["above_baselines_every"] == table.loc[1, "above_baselines_every"] != ""  # its wordless Δs too
    md = VT.verdict_markdown(table)
    assert md.count("| a, b | ") == 1 and md.count("| c | ") == 1 and "| a | " not in md and "| b | " not in md
    # the same runs on another CPU are another run set
    assert list(SN.one_row_per_run_set(table.assign(cpu=["AMD (x)", "Intel (y)", "AMD (x)"]))["snapshot"]) == ["a", "b", "c"]
    # earning words: a setting is eligible when any snapshot of its runs shows it so
    eligible = table.assign(eligible=[False, True, False], reason=["3 paired seeds", "", "3 paired seeds"])
    assert SN.one_row_per_run_set(eligible)["eligible"].tolist() == [True, False]
    # the tuned methods of every snapshot of the run set that earns words, each once
    both = table.assign(eligible=[True, True, False], tuned=["mr2, ldam", "mr2, mr2_uniform", "mr2"])
    assert SN.one_row_per_run_set(both)["tuned"].tolist() == ["mr2, ldam, mr2_uniform", "mr2"]
    judged = [line for line in VT.headline(eligible).splitlines() if line.startswith("- ")]
    assert len(judged) == 1 and judged[0].endswith(" · a, b")  # the headline: the judged run set alone
    # a part only an under-trained snapshot ran earns no word in the row that earns words through another
    why = "not at convergence: ldam (all +3.0, hard -0.4)"
    only_a = table.assign(eligible=[True, False, False], reason=["", why, "3 paired seeds"])
    row = SN.one_row_per_run_set(only_a).iloc[0]
    assert row["eligible"] and row["above_baselines"] == rules.NOT_JUDGED
    assert row["above_baselines_detail"] == f"{table.loc[1, 'above_baselines_every']} (b: {why})"
    assert row["ablations_below"] == table.loc[0, "ablations_below"]  # a's own parts keep their words
    word, detail = table.loc[1, "above_baselines"], table.loc[1, "above_baselines_detail"]
    assert word not in (rules.NOT_JUDGED, rules.NOT_RUN)
    cell = judged_line(VT.verdict_markdown(eligible), "a, b").split(" | ")[-1]
    assert cell.startswith(f"**{word}**") and cell.rstrip(" |").endswith(detail)
    # a part both ran takes the word of the one that earns words, even when it comes second
    row = SN.one_row_per_run_set(eligible).iloc[0]
    assert (row["hard_up"], row["hard_up_detail"]) == (table.loc[1, "hard_up"], table.loc[1, "hard_up_detail"])
    assert row["hard_up"] != rules.NOT_JUDGED and row["ablations_below"] == rules.NOT_JUDGED  # only a ran the ablations
    cell = judged_line(VT.verdict_markdown(only_a), "a, b").split(" | ")[-1]
    assert cell.startswith(f"**{rules.NOT_JUDGED}** ") and why in cell and f"**{word}**" not in cell


def test_snapshot_verdicts_take_the_reference_from_the_first_row_of_the_results(tmp_path):
    """A snapshot whose reference is another method (``base``, first in results.csv) gets the same
    verdicts as the same numbers with ERM as the reference."""
    pc = three_class({"mr2": (0.0, 0.0, 0.06), "mr2_uniform": (0.0, 0.0, 0.0), "ldam": (-0.03, 0.0, 0.03)},
                     noise=0.004)
    tables = write_snapshot(tmp_path / "x", pc)
    root = tmp_path / "snapshots"
    shutil.copytree(tables, root / "erm")
    shutil.copytree(tables, root / "renamed")
    for file, columns in (("results.csv", ["method"]), ("comparisons.csv", ["method", "against"])):
        frame = pd.read_csv(tables / file)
        frame[columns] = frame[columns].replace("erm", "base")
        frame.to_csv(root / "renamed" / file, index=False)
    assert pd.read_csv(root / "renamed" / "results.csv")["method"].iloc[0] == "base"
    table = SN.snapshot_verdicts(root).set_index("snapshot")
    parts = [c for part in rules.PARTS for c in (part, f"{part}_detail")]
    assert table.loc["renamed", parts].tolist() == table.loc["erm", parts].tolist()
    assert table.loc["renamed", "hard_up"] == "supported"


def test_update_verdicts_replaces_the_first_block_and_keeps_everything_else(tmp_path):
    pc = three_class({"mr2": (0.0, 0.0, 0.06)}, noise=0.004)
    root = tmp_path / "snapshots"
    shutil.copytree(write_snapshot(tmp_path / "x", pc), root / "a")
    readme = tmp_path / "README.md"
    B, E = VT.BEGIN, VT.END
    twice = f"top\n{B}\nold\n{E}\n{B}\nsecond\n{E}\nend\n"
    readme.write_text(twice, encoding="utf-8")
    with pytest.raises(ValueError, match="2 times"):  # which lines the block spans is unclear: nothing written
        VT.update_verdicts(readme, root)
    assert readme.read_text(encoding="utf-8") == twice
    text = f"top MR²\n{B}\nold\n{E}\nmiddle, quoting {E} and {B} in prose\nend\n"
    readme.write_text(text, encoding="utf-8")
    assert VT.update_verdicts(readme, root) is True
    new = readme.read_text(encoding="utf-8")
    md = VT.verdict_markdown(SN.snapshot_verdicts(root), SN.snapshot_primaries(root), link="snapshots").strip("\n")
    assert new == text.replace("\nold\n", f"\n{md}\n", 1) and VT.readme_verdicts(new) == md
    for broken in (f"top\n{B}\nno end\n", f"top\nno begin\n{E}\n", "no block\n"):
        readme.write_text(broken)
        assert VT.update_verdicts(readme, root) is False and readme.read_text() == broken
    assert VT.readme_verdicts("no block\n") is None
    assert VT.readme_verdicts(f"{B}\n\nX first  \n\n{E}") == "X first  "  # only the blank lines go
    # a README with MR² and γ is read and written as UTF-8 also where the locale's encoding is ASCII
    readme.write_text(text, encoding="utf-8")
    run_in_ascii_locale("import sys; from mr2.results.verdict_text import update_verdicts; "
                        "update_verdicts(sys.argv[1], sys.argv[2])", str(readme), str(root))
    assert readme.read_text(encoding="utf-8") == new


def test_settings_from_a_runs_table_that_lacks_columns():
    """Only the epochs: data and model empty, the whole training set; no epochs either: no regime; an
    imbalance ratio that is not a number is no imbalance."""
    runs = pd.DataFrame({"dataset": ["d"], "config.train.epochs": [20], "config.data.imbalance.ratio": ["n/a"]})
    row = V.settings_table(runs).iloc[0]
    assert (row["data"], row["model"], row["regime"]) == ("", "", "all × 20 ep")
    bare = V.settings_table(pd.DataFrame({"dataset": ["d"]})).iloc[0]
    assert (bare["data"], bare["model"], bare["regime"]) == ("", "", "")


def test_a_results_table_of_the_reference_alone_has_no_comparisons():
    pc = three_class({})
    table = R.results_table(pc, None, G.difficulty_table(pc))
    back = SN.comparisons_from_results(table, "erm")
    assert back.empty and list(back.columns) == R.COMPARISON_COLUMNS


def test_verdict_table_rows_per_dataset_with_their_settings_and_the_erm_default():
    """Dataset d ran ERM and MR², e only ERM (its parts are not run, though d's MR² ran the default
    variant); settings give d's first row only and nothing for e (empty cells)."""
    pc = three_class({"mr2": (0.0, 0.0, 0.06)}, noise=0.004)
    pc = pd.concat([pc, pc[pc["method"] == "erm"].assign(dataset="e")], ignore_index=True)
    comparisons = R.comparisons_table(pc, None, G.difficulty_table(pc), "erm")
    settings = pd.DataFrame({"dataset": ["d", "d"], "data": ["dd", "dd"], "model": ["m1", "m2"], "regime": ["r1", "r2"]})
    table = V.verdict_table(comparisons, pc[["dataset", "method", "variant"]].drop_duplicates(), settings)
    assert table["dataset"].tolist() == ["d", "e"]
    assert table.loc[0, ["data", "model", "regime"]].tolist() == ["dd", "m1", "r1"]
    assert table.loc[1, ["data", "model", "regime"]].tolist() == ["", "", ""]
    assert table.loc[0, "hard_up"] == "supported"
    assert all(table.loc[1, part] == rules.NOT_RUN for part in rules.PARTS)


def test_cells_not_run_or_not_computed_have_no_detail():
    none = pd.DataFrame(columns=R.COMPARISON_COLUMNS)
    cells = V.verdict_cells(none, {"erm"})
    assert {part: (c["word"], c["detail"]) for part, c in cells.items()} == {part: (rules.NOT_RUN, "") for part in rules.PARTS}
    cells = V.verdict_cells(none, {"erm", "mr2", "mr2_uniform", "ldam"})
    assert {part: (c["word"], c["detail"]) for part, c in cells.items()} == {
        **{part: (rules.NOT_COMPUTED, "") for part in rules.PARTS}, "above_controls": (rules.NOT_RUN, "")}


def test_small_cells_of_the_verdict_table():
    assert V.delta_text(pd.Series({"diff": 1.25, "diff_lo": math.nan, "diff_hi": math.nan})) == "+1.2 (no CI)"
    assert V.delta_text(pd.Series({"diff": -0.5, "diff_lo": -1.0, "diff_hi": 0.04})) == "-0.5 [-1.0, +0.0]"
    one = [comparison("mr2", "erm", m, "higher") for m in ("hard", "easy", "all")]
    one += [comparison("mr2", "ldam", m, "higher", 1.0) for m in ("hard", "easy")]
    baselines = verdict_cells(one, ["erm", "mr2", "ldam"])["above_baselines"]  # one baseline: no counts
    assert baselines["word"] == "supported" and baselines["detail"] == "vs ldam: hard +1.0 [+0.0, +2.0], easy +1.0 [+0.0, +2.0]"
    for none in (None, pd.DataFrame(columns=["dataset"])):
        empty = V.settings_table(none)
        assert empty.empty and list(empty.columns) == ["dataset", "data", "model", "regime", "seeds", "tuned", "mr2",
                                                       "cpu", "code", "check_of", "converged", "convergence"]
    # the convergence gate's reasons (the seed gate is tested with the rulebook)
    assert rules.gate_reason(16, True, "all 4 methods within 1 point") == ""
    assert rules.gate_reason(16, "True", "") == ""  # as settings.csv holds it
    assert rules.gate_reason(16, False, "not at convergence: mr2 (all +0.2, hard +1.4)") == \
        "not at convergence: mr2 (all +0.2, hard +1.4)"
    assert rules.gate_reason(16, None, "") == "convergence not checked"
    assert rules.gate_reason(9, None, "nan") == "9 paired seeds (a verdict needs 10); convergence not checked"
    assert rules.shown_word("equivalent") == "equivalent (no effect ≥ 1 point)"
    assert rules.shown_word("equivalent", 0.5) == "equivalent (no effect ≥ 0.5 points)"
    assert rules.shown_word("supported") == "supported"


# ----------------------------------------------------------------------------- report sentences, figure
def test_every_baseline_gets_a_sentence_and_a_wide_one_reads_underpowered():
    from mr2.results.report import baseline_findings

    pc = three_class({"mr2": (0.0, 0.0, 0.03), "ldam": (-0.03, 0.0, 0.03), "dro": (0.0, 0.0, 0.0)}, noise=0.005)
    rng = np.random.default_rng(3)
    wide = pc["method"] == "dro"
    pc.loc[wide, "accuracy"] += rng.normal(0, 0.03, wide.sum())  # a noisy baseline: wide intervals
    per_run = G.run_group_accuracy(pc, G.difficulty_table(pc))
    lines = baseline_findings(per_run, "d", effect_of_interest=1.0)
    ldam = next(s for s in lines if s.startswith("- `ldam`"))
    dro = next(s for s in lines if s.startswith("- `dro`"))
    assert "trades easy for hard" in ldam and "MDE" in ldam
    easy = by_hand(pc, "mr2", "ldam", 0)  # MR² keeps the easy class that LDAM gives up
    assert "MR² against it: hard classes" in ldam and f"easy classes {easy.mean():+.1f} points" in ldam.split("MR² against it")[1]
    d = by_hand(pc, "dro", "erm", 2)
    assert S.minimum_detectable_effect(d.std(ddof=1), len(d)) > 1.0 and "(underpowered)" in dro


def test_mr2_against_a_baseline_only_where_both_ran_on_common_seeds():
    from mr2.results.report import mr2_against

    pc = three_class({"mr2": (0.0, 0.0, 0.03), "mr2_nrl": (0.0, 0.0, 0.01), "ldam": (-0.03, 0.0, 0.03)})
    per_run = G.run_group_accuracy(pc, G.difficulty_table(pc))
    line = mr2_against(per_run, "d", "ldam")
    number = r"[+-]\d+\.\d points \[95 % CI [+-]\d+\.\d, [+-]\d+\.\d; MDE \d+\.\d\]"
    assert re.fullmatch(rf" MR² against it: hard classes {number} \([a-z ]+\); easy classes {number} \([a-z ]+\)\.", line)
    assert f"easy classes {by_hand(pc, 'mr2', 'ldam', 0).mean():+.1f} points" in line
    assert mr2_against(per_run, "d", "mr2_nrl") == ""  # MR²'s own family: no "against it"
    assert mr2_against(per_run[per_run["method"] != "mr2"], "d", "ldam") == ""  # no MR² in the dataset
    shifted = per_run.assign(seed=per_run["seed"] + 10 * (per_run["method"] == "ldam"))
    assert mr2_against(shifted, "d", "ldam") == ""  # no seed in common


def test_a_word_without_a_phrase_is_named_in_the_trade_off():
    from mr2.results.report import trade_off_kind

    assert trade_off_kind("higher", "lower").startswith("trades easy for hard")
    assert trade_off_kind("lower", "higher") == "lowers hard classes; it raises easy classes"
    assert trade_off_kind("odd", "lower") == "leaves its change in hard classes odd; it lowers easy classes"
    assert trade_off_kind("higher", "odd") == "raises hard classes; it leaves its change in easy classes odd"


def test_the_tradeoff_points_are_the_paired_differences(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from mr2.results.figures.render import make_figures
    from mr2.results.figures.tradeoff import tradeoff_points

    pc = three_class({"mr2": (0.0, 0.0, 0.03), "ldam": (-0.03, 0.0, 0.03)}, noise=0.004)
    groups = G.difficulty_table(pc)
    points = tradeoff_points(pc, None, groups).set_index("method")
    for method in ("mr2", "ldam"):
        assert points.loc[method, "hard_diff"] == pytest.approx(by_hand(pc, method, "erm", 2).mean())
        assert points.loc[method, "easy_diff"] == pytest.approx(by_hand(pc, method, "erm", 0).mean())
    assert points.loc["ldam", "easy_hi"] < 0 < points.loc["ldam", "hard_lo"]  # the trade-off, seen
    made = make_figures({"per_class": pc, "groups": groups}, tmp_path, names=["tradeoff"])["tradeoff"]
    assert all(p.stat().st_size > 0 for p in made)
    two = pc[pc["class"] < 2]  # K = 2: no easy group, a placeholder
    assert tradeoff_points(two, None, G.difficulty_table(two)).empty
    assert all(p.is_file() for p in make_figures({"per_class": two, "groups": G.difficulty_table(two)},
                                                 tmp_path / "empty", names=["tradeoff"])["tradeoff"])


def test_tradeoff_points_against_another_reference_and_their_columns_without_pairs():
    from mr2.results.figures.tradeoff import tradeoff_points

    pc = three_class({"mr2": (0.0, 0.0, 0.03), "ldam": (-0.03, 0.0, 0.03)}, noise=0.004)
    pc["method"] = pc["method"].replace({"erm": "base"})
    points = tradeoff_points(pc, None, G.difficulty_table(pc, reference="base"), reference="base")
    assert points["method"].tolist() == ["mr2", "ldam"] and points["n_paired"].tolist() == [4, 4]
    for method in ("mr2", "ldam"):
        row = points.set_index("method").loc[method]
        assert row["hard_diff"] == pytest.approx(by_hand(pc, method, "base", 2).mean())
        assert row["easy_diff"] == pytest.approx(by_hand(pc, method, "base", 0).mean())
    two = pc[pc["class"] < 2]  # no easy group
    empty = tradeoff_points(two, None, G.difficulty_table(two, reference="base"), reference="base")
    assert empty.empty and list(empty.columns) == ["dataset", "method", "easy_diff", "easy_lo", "easy_hi",
                                                   "hard_diff", "hard_lo", "hard_hi", "n_paired"]


def test_near_zero_includes_its_bound_and_keeps_the_points_index():
    """Distances 0, 0.1, 0.2, 0.75, 5: the median 0.2 is below the floor 0.25, so the bound is
    3 × 0.25 = 0.75 and the point exactly on it is near; the rows keep their labels (one dataset's
    rows of a larger table)."""
    from mr2.results.figures.tradeoff import NEAR_FACTOR, NEAR_FLOOR, near_zero

    assert (NEAR_FACTOR, NEAR_FLOOR) == (3.0, 0.25)
    points = pd.DataFrame({"easy_diff": [0.0, 0.06, 0.0, 0.75, -3.0], "hard_diff": [0.0, 0.08, -0.2, 0.0, 4.0]},
                          index=[7, 3, 9, 4, 8])
    near = near_zero(points)
    assert near.index.tolist() == [7, 3, 9, 4, 8] and near.tolist() == [True, True, True, True, False]
    two = pd.DataFrame({"easy_diff": [0.0, 0.1, 9.0], "hard_diff": [0.0, 0.0, 9.0]})  # two near: enough to zoom on
    assert near_zero(two).tolist() == [True, True, False]
    assert near_zero(two.iloc[1:]) is None and near_zero(two.iloc[:2]) is None  # none far


def test_claim_table_against_erm_by_default_and_its_columns_without_pairs():
    from mr2.results.figures.claim_forest import COLUMNS, claim_table

    pc = three_class({"mr2": (0.0, 0.0, 0.03)}, noise=0.004)
    table = claim_table(pc, None, G.difficulty_table(pc))
    assert COLUMNS == ["dataset", "method", "metric", "diff", "diff_lo", "diff_hi", "n_paired"]
    assert list(table.columns) == COLUMNS and set(table["method"]) == {"mr2"}
    hard = table.set_index("metric").loc["hard"]
    assert hard["diff"] == pytest.approx(by_hand(pc, "mr2", "erm", 2).mean()) and hard["n_paired"] == 4
    alone = claim_table(pc[pc["method"] == "erm"], None, G.difficulty_table(pc))  # nothing to compare
    assert alone.empty and list(alone.columns) == COLUMNS


def test_a_far_point_gets_the_crowd_near_zero_a_zoomed_panel():
    """One method far out (LfF's collapse) squeezes the rest into a blot: a second panel zooms on the
    methods near 0 and names them; the legend still lists every method."""
    import matplotlib

    matplotlib.use("Agg")
    from mr2.results.figures import tradeoff as TR
    from mr2.results.figures.registry import FigureOptions
    from mr2.results.plotting import display_name, overlapping_texts

    effects = {"mr2": (0.0, 0.0, 0.005), "ldam": (-0.004, 0.0, 0.004), "focal": (0.002, 0.0, -0.003),
               "lff": (-0.02, 0.0, -0.12)}
    pc = three_class(effects, noise=0.002)
    groups = G.difficulty_table(pc)
    points = TR.tradeoff_points(pc, None, groups)
    near = TR.near_zero(points)
    assert dict(zip(points["method"], near)) == {"mr2": True, "ldam": True, "focal": True, "lff": False}
    whole, zoom = TR.draw(points, FigureOptions()).axes
    assert "zoom on the 3 methods near 0" in zoom.get_title() and "zoom" not in whole.get_title()
    names = [t for t in zoom.texts if t.get_text()]
    assert sorted(t.get_text() for t in names) == sorted(display_name(m) for m in ("mr2", "ldam", "focal"))
    assert not overlapping_texts(names)
    assert zoom.get_ylim()[0] > points.set_index("method").loc["lff", "hard_diff"]  # LfF is outside the zoom
    assert [t.get_text() for t in zoom.get_legend().get_texts()] == [display_name(m) for m in effects]
    from mr2.results.plotting import method_colour  # each name beside its own method's marker

    assert [matplotlib.colors.to_hex(h.get_color()) for h in zoom.get_legend().legend_handles] == [
        matplotlib.colors.to_hex(method_colour(m)) for m in effects]
    # without a far point, one panel per dataset
    assert TR.near_zero(points[points["method"] != "lff"]) is None


def test_mr2_verdicts_without_a_snapshots_folder_is_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mr2", "verdicts", "--snapshots", str(tmp_path / "none"),
                          "--readme", str(tmp_path / "README.md")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and out.stderr.startswith("error: snapshots folder") and "Traceback" not in out.stderr


def test_a_long_tailed_setting_says_so():
    """A setting trained on long-tailed data (data.imbalance) names its ratio: its per-class cap is
    the cap before the profile, not what each class trained on."""
    runs = pd.DataFrame({"dataset": ["lt", "lt", "bal"], "config.data.name": ["fashion_mnist"] * 3,
                         "config.model.name": ["small_cnn"] * 3, "config.data.train_cap": [1000, 1000, 1000],
                         "config.train.epochs": [160, 160, 20],
                         "config.data.imbalance.ratio": [100.0, 100.0, float("nan")]})
    table = V.settings_table(runs).set_index("dataset")
    assert table.loc["lt", "data"] == "fashion_mnist (long-tailed, ratio 100)"
    assert table.loc["bal", "data"] == "fashion_mnist"
    assert V.settings_table(runs.drop(columns="config.data.imbalance.ratio")).set_index("dataset").loc[
        "lt", "data"] == "fashion_mnist"


# ----------------------------------------------------------------------------- the verdict table in Markdown, by hand
def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown table of ``text``: its rows, each {column header: cell}."""
    lines, tables, i = text.splitlines(), [], 0
    split = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]  # noqa: E731
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            head, rows, i = split(lines[i]), [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(head, split(lines[i]))))
                i += 1
            tables.append(rows)
        else:
            i += 1
    return tables


def verdict_rows():
    """Two judged run sets written by hand: each part's word and the Δs behind it."""
    words = {"hard_up": "supported", "easy_not_down": "contradicted", "overall_up": "not run",
             "above_controls": "not run", "ablations_below": "underpowered", "above_baselines": "not shown"}
    details = {"fmnist": ("+1.0 [+0.5, +1.5]", "", math.nan, "", "x", "y"), "d2": ("a", "b", "c", "", "", math.nan)}
    rows = []
    for dataset, data, model in (("fmnist", "fmnist", "resnet32"), ("d2", math.nan, "cnn")):
        row = {"dataset": dataset, "data": data, "model": model, **words, "seeds": 12, "tuned": "mr2", "cpu": "AMD (x)",
               "eligible": True, "reason": "", "snapshot": f"s-{dataset}", "config": f"s-{dataset}"}
        row.update({f"{part}_detail": d for part, d in zip(words, details[dataset])})
        rows.append(row)
    return pd.DataFrame(rows)


def word_alone(cell: str, word: str) -> bool:
    """The cell holds the word (and its table-wide word) and no Δ."""
    return re.fullmatch(rf"\*\*{re.escape(word)}\*\*( \(table-wide: {re.escape(word)}\))?", cell) is not None


def test_verdict_markdown_rows_by_hand():
    """A column per part of the claim headed by its difference; the setting names only what differs (no
    regime column, a data name equal to the dataset or missing); each cell its word, then the Δs behind
    it; an empty or missing detail leaves the word alone; a part not run says so; rows by dataset; the
    rulebook's legend under the table; every row judged: no second table."""
    text = VT.verdict_markdown(verdict_rows())
    [judged] = markdown_tables(text)
    assert list(judged[0]) == ["Snapshot", "Setting", "CPU", "Seeds", "Tuned", *rules.PARTS.values()]
    assert [r["Setting"] for r in judged] == ["d2, cnn", "fmnist, resnet32"]
    d2, fm = ({key: r[rules.PARTS.get(key, key)] for key in [*rules.PARTS, "Snapshot", "CPU", "Seeds", "Tuned"]}
              for r in judged)
    assert (fm["Snapshot"], fm["CPU"], fm["Seeds"], fm["Tuned"]) == ("s-fmnist", "AMD (x)", "12", "mr2")
    assert fm["hard_up"].startswith("**supported**") and fm["hard_up"].endswith(" +1.0 [+0.5, +1.5]")
    assert word_alone(fm["easy_not_down"], "contradicted") and fm["overall_up"] == fm["above_controls"] == "not run"
    assert fm["ablations_below"].startswith("**underpowered**") and fm["ablations_below"].endswith(" x")
    assert fm["above_baselines"].startswith("**not shown**") and fm["above_baselines"].endswith(" y")
    assert d2["hard_up"].endswith(" a") and d2["easy_not_down"].endswith(" b")
    assert word_alone(d2["ablations_below"], "underpowered") and word_alone(d2["above_baselines"], "not shown")
    assert rules.legend() in text and "Run sets not judged" not in text


def test_verdict_markdown_moves_run_sets_not_judged_to_a_table_of_their_own():
    table = verdict_rows()
    table.loc[0, "hard_up"] = "equivalent"
    table.loc[1, ["eligible", "reason", "seeds"]] = [False, "3 paired seeds (a verdict needs 10)", 3]
    text = VT.verdict_markdown(table)
    judged, rest = markdown_tables(text)
    assert [r["Setting"] for r in judged] == ["fmnist, resnet32"] and [r["Setting"] for r in rest] == ["d2, cnn"]
    hard = judged[0][rules.PARTS["hard_up"]]
    assert hard.startswith("**equivalent (no effect ≥ 1 point)**") and hard.endswith(" +1.0 [+0.5, +1.5]")
    # the Δs stand without a word; a part not run says so
    row = rest[0]
    assert (row["Seeds"], row["Why not judged"]) == ("3", "not judged: 3 paired seeds (a verdict needs 10)")
    assert [row[h] for h in rules.PARTS.values()] == ["a", "b", "not run", "not run", "", ""]
    # the README's short table: the judged rows alone
    assert len(markdown_tables(VT.verdict_markdown(table, judged_only=True))) == 1
    # no run set judged: the first table says so
    table["eligible"] = False
    assert markdown_tables(VT.verdict_markdown(table))[0][0]["Snapshot"] == "no run set is judged yet"


def test_a_setting_without_a_verdict_shows_every_baselines_deltas_and_no_word():
    """The not-judged table's baselines cell: each baseline's Δs (not only those deciding the word) and
    no count of words; the same setting with 10 seeds earns a word and names the deciding baseline."""
    rows = [comparison("mr2", "erm", m, "higher", 1.0) for m in ("hard", "easy", "all")]
    rows += [comparison("mr2", "dro", "hard", "lower", -2.0), comparison("mr2", "dro", "easy", "higher", 1.5),
             comparison("mr2", "ldam", "hard", "equivalent", 0.25), comparison("mr2", "ldam", "easy", "equivalent", 0.5),
             comparison("mr2", "focal", "hard", "higher", 3.0), comparison("mr2", "focal", "easy", "higher", 0.75)]
    frame = pd.DataFrame(rows, columns=R.COMPARISON_COLUMNS)
    methods = pd.DataFrame({"dataset": "d", "method": ["erm", "mr2", "dro", "ldam", "focal"], "variant": "default"})
    settings = pd.DataFrame({"dataset": ["d"], "data": ["d"], "model": ["m"], "regime": ["r"], "converged": [True]})
    few = V.verdict_table(frame, methods, settings).assign(snapshot="s")  # 3 paired seeds: no word
    [row] = markdown_tables(VT.verdict_markdown(few))[1]
    assert (row["Setting"], row["Seeds"]) == ("d, m, r", "3")
    cell = row[rules.PARTS["above_baselines"]]
    for b, hard, easy in (("dro", "-2.0", "+1.5"), ("focal", "+3.0", "+0.8"), ("ldam", "+0.2", "+0.5")):
        assert f"vs {b}: hard {hard} [" in cell and f"easy {easy} [" in cell
    shown = " ".join(row[h] for h in rules.PARTS.values())
    assert not any(w in shown for w in ("contradicted", "supported", "equivalent", "underpowered", " of 3"))
    enough = V.verdict_table(frame.assign(n_paired=10), methods, settings).assign(snapshot="s")
    [row] = markdown_tables(VT.verdict_markdown(enough))[0]
    cell = row[rules.PARTS["above_baselines"]]
    assert row["Seeds"] == "10" and cell.startswith("**contradicted**") and "vs dro: hard -2.0 [" in cell
    assert "vs ldam" not in cell and "of 3: 1 contradicted" in cell


def test_verdict_markdown_names_the_snapshot_and_its_config_when_they_differ():
    table = verdict_rows().assign(config=["s-fmnist", "config/d2.yaml"], regime=["capped", ""])
    [judged] = markdown_tables(VT.verdict_markdown(table))
    assert [(r["Snapshot"], r["Setting"]) for r in judged] == [("s-d2 (config/d2.yaml)", "d2, cnn"),
                                                             ("s-fmnist", "fmnist, resnet32, capped")]
    [judged] = markdown_tables(VT.verdict_markdown(table, link="docs/results"))
    assert judged[0]["Snapshot"] == "[s-d2](docs/results/s-d2/) (config/d2.yaml)"


# ----------------------------------------------------------------------------- statistics at their boundaries
def test_two_seeds_give_an_interval_and_a_paired_sd():
    """n = 2 is the first n with an interval: mean ± t_{0.975, 1}·sd/√2, here sd = √2 (by hand)."""
    iv = S.t_interval([1.0, 3.0])
    half = stats.t.ppf(0.975, 1) * math.sqrt(2) / math.sqrt(2)
    assert iv["n"] == 2 and iv["mean"] == 2.0
    assert (iv["lo"], iv["hi"]) == pytest.approx((2.0 - half, 2.0 + half))
    d = S.paired_difference(np.array([3.0, 5.0]), np.array([2.0, 2.0]))  # differences 1 and 3
    assert d["diff"] == 2.0 and d["diff_sd"] == pytest.approx(math.sqrt(2)) and d["n_paired"] == 2
    assert math.isnan(S.paired_difference(np.array([3.0]), np.array([2.0]))["diff_sd"])


def test_paired_difference_tests_its_mde_at_its_own_level():
    d = S.paired_difference(np.array([1.0, 2.5, 2.0, 4.0]), np.zeros(4), level=0.8)
    sd = np.std([1.0, 2.5, 2.0, 4.0], ddof=1)
    assert d["mde"] == pytest.approx(S.minimum_detectable_effect(sd, 4, alpha=0.2))
    assert d["mde"] < S.minimum_detectable_effect(sd, 4, alpha=0.05)  # a looser test detects less
    assert math.isnan(S.minimum_detectable_effect(None, 4)) and math.isnan(S.minimum_detectable_effect(math.nan, 4))


def test_an_interval_that_reaches_zero_contains_it():
    assert S.verdict(1.0, 0.0, 2.0) == "no clear difference" and S.verdict(-1.0, -2.0, 0.0) == "no clear difference"
    assert S.verdict(1.0, 1e-12, 2.0) == "higher" and S.verdict(-1.0, -2.0, -1e-12) == "lower"


def test_an_interval_of_no_width_away_from_zero_is_undetermined_with_a_relative_tolerance():
    assert S.verdict(3.0, 3.0, 3.0) == "undetermined (no spread between seeds)"
    assert S.verdict(0.0, 0.0, 0.0) == "no clear difference"
    # width 4e-6 at a difference of 1e4: within the tolerance 1e-9·|Δ| = 1e-5, so no spread
    assert S.verdict(1e4, 1e4 - 2e-6, 1e4 + 2e-6) == "undetermined (no spread between seeds)"
    assert S.verdict(1e4, 1e4 - 2e-5, 1e4 + 2e-5) == "higher"


def test_one_of_many_counts_in_words():
    assert S.one_of_many(2, 60) == ("2 intervals of 60 exclude 0, about what 5 % of 60 comparisons give by chance "
                                    "(3.0 expected): one of many comparisons, not a finding")
    assert S.one_of_many(1, 10, level=0.8) == ("1 interval of 10 excludes 0, about what 20 % of 10 comparisons give "
                                               "by chance (2.0 expected): one of many comparisons, not a finding")


def test_the_headline_has_a_line_per_judged_run_set_with_its_hard_class_word():
    """Under the primary test's sentence (none declared: no gain of MR²'s own is claimed), one line per
    judged run set: its dataset, CPU vendor, the hard-class word against untuned ERM with its Δ, the
    controls' word where they ran, and its snapshot; a run set not judged has no line."""
    table = verdict_rows()
    lines = VT.headline(table.assign(eligible=False)).splitlines()
    assert "no gain of MR²'s own is claimed" in lines[0]
    assert [line for line in lines if line.startswith("- ")] == [lines[-1]] and "No run set is judged yet" in lines[-1]
    table.loc[0, "hard_up"] = "equivalent"
    table.loc[1, ["eligible", "reason"]] = [False, "3 paired seeds (a verdict needs 10)"]
    [line] = [line for line in VT.headline(table).splitlines() if line.startswith("- ")]
    assert "fmnist" in line and "AMD" in line and line.endswith("s-fmnist")
    assert "hard: **equivalent (no effect ≥ 1 point)**" in line and "+1.0 [+0.5, +1.5]" in line
    assert "controls" not in line  # a part not run is left out
    table.loc[0, "above_controls"] = "supported"
    [line] = [line for line in VT.headline(table).splitlines() if line.startswith("- ")]
    assert "tuned controls: **supported**" in line


def test_a_run_set_of_an_mr2_variant_says_so_in_its_setting_and_headline():
    """MR²'s options that are not the paper's (statistic other than a_k, p other than 2) name the variant
    in the settings, the table's Setting cell and the headline's line; the paper's values, written as
    the runs table holds them (p as 2.0), or a runs table without the columns, name nothing."""
    def runs(statistic, p):
        return pd.DataFrame({"dataset": ["d", "d", "d"], "method": ["erm", "mr2", "mr2"],
                             "variant": ["default", "default", "statistic=a"], "seed": [0, 0, 0],
                             "config.method.options.statistic": [math.nan, statistic, "a"],
                             "config.method.options.p": [math.nan, p, 2.0]})
    assert V.settings_table(runs("a", 2.0)).iloc[0]["mr2"] == ""
    assert V.settings_table(runs("spread", 2.0)).iloc[0]["mr2"] == "statistic=spread"
    assert V.settings_table(runs("a", 3.0)).iloc[0]["mr2"] == "p=3"
    assert V.settings_table(runs("a", 2.0).drop(columns=["config.method.options.p"])).iloc[0]["mr2"] == ""
    table = verdict_rows().assign(mr2=["statistic=spread", ""], above_controls="equivalent")
    [judged] = markdown_tables(VT.verdict_markdown(table))
    assert [r["Setting"] for r in judged] == ["fmnist, resnet32, MR² (statistic=spread): not the paper's",
                                             "d2, cnn"] or [r["Setting"] for r in judged] == [
        "d2, cnn", "fmnist, resnet32, MR² (statistic=spread): not the paper's"]
    lines = {line.split(" · ")[0]: line for line in VT.headline(table).splitlines() if line.startswith("- ")}
    assert "· MR² (statistic=spread) − ERM (untuned), hard:" in lines["- fmnist"]
    assert "; MR² (statistic=spread) − tuned controls:" in lines["- fmnist"]
    assert "· MR² − ERM (untuned), hard:" in lines["- d2"] and "(statistic" not in lines["- d2"]


def test_the_paper_options_of_the_verdict_are_mr2_losses_defaults():
    """The values the verdict takes for the paper's MR² are the loss's own defaults."""
    import inspect

    from mr2.method.losses.mr2 import MR2Loss
    defaults = inspect.signature(MR2Loss).parameters
    assert {k: defaults[k].default for k in V.MR2_PAPER_OPTIONS} == V.MR2_PAPER_OPTIONS


def test_one_primary_test_per_run_set():
    """Snapshots declaring the same primary test on the same runs give one test naming both, its word from
    the one that judges it even when it comes second; other runs, another declaration, another CPU or no
    identity keep their own line; order is kept."""
    base = {"dataset": "d", "group": "hard", "method": "mr2", "controls": "ce_temperature, erm_tuned",
            "word": "equivalent", "reason": "", "identity": "x", "cpu": "AMD (x)"}
    gated = {**base, "word": rules.NOT_JUDGED, "reason": "not at convergence: dro", "snapshot": "a", "config": "ca"}
    merged = SN.one_primary_per_run_set([gated, {**base, "snapshot": "b", "config": "cb"},
                                         {**base, "identity": "y", "snapshot": "c", "config": "cc"},
                                         {**base, "identity": "", "snapshot": "e", "config": "ce"},
                                         {**base, "controls": "erm_tuned", "snapshot": "f", "config": "cf"},
                                         {**base, "snapshot": "g", "config": "cb"},
                                         {**base, "cpu": "Intel (y)", "snapshot": "h", "config": "cb"}])
    assert [(p["snapshot"], p["config"], p["word"]) for p in merged] == [
        ("a, b, g", "ca, cb", "equivalent"), ("c", "cc", "equivalent"), ("e", "ce", "equivalent"),
        ("f", "cf", "equivalent"), ("h", "cb", "equivalent")]
    alone = SN.one_primary_per_run_set([gated, {**gated, "snapshot": "b"}])
    assert [(p["snapshot"], p["word"]) for p in alone] == [("a, b", rules.NOT_JUDGED)]
    line = VT.primary_line({**merged[0], "control": "ce_temperature", "n_paired": 16, "diff": 0.2,
                            "diff_lo": -0.1, "diff_hi": 0.4, "effect_of_interest": 1.0}, link="docs/results")
    assert "declared in `ca`, `cb` before its runs" in line
    assert "[a](docs/results/a/), [b](docs/results/b/), [g](docs/results/g/)" in line


def test_a_primary_test_is_one_run_set_only_with_the_same_controls_runs(tmp_path):
    """The identity behind a primary test covers the controls' per-seed numbers: a control's other runs
    are another run set, though the reference's and MR²'s are the same."""
    pc = three_class({"mr2": (0.0, 0.0, 0.05), "ce_temperature": (0.0, 0.0, 0.04)}, noise=0.004)
    other = pc.copy()
    other.loc[other["method"].eq("ce_temperature"), "accuracy"] += 0.001
    for name, frame in (("a", pc), ("b", other)):
        (tmp_path / name).mkdir()
        frame.to_csv(tmp_path / name / "per_class.csv", index=False)
    same = [SN.runs_identity(tmp_path / n, "erm") for n in ("a", "b")]
    with_controls = [SN.runs_identity(tmp_path / n, "erm", ("ce_temperature",)) for n in ("a", "b")]
    assert same[0] == same[1] and with_controls[0] != with_controls[1] and with_controls[0] != same[0]
