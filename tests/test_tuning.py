"""The tuning stage and the statistics a referee asks for: the seeded search, the choice on validation,
the expected best score against the budget, equivalence (two one-sided tests), Holm's correction, the
10-seed rule, the convergence check, and comparisons that read exactly the intended variants."""

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from scipy import stats

from mr2.common.tuning import option_column, significant, trial_index, trial_options, trial_variant
from mr2.engine.data.cache import held_out_validation
from mr2.results import convergence as C
from mr2.results import groups as G
from mr2.results import rules
from mr2.results import statistics as S
from mr2.results import tables as R
from mr2.results import tuning as T

ERM = np.array([0.95, 0.85, 0.60, 0.75, 0.90, 0.70])  # six classes: two per group


# ----------------------------------------------------------------------------- the search
def test_trials_are_seeded_log_uniform_draws_inside_their_ranges():
    space = {"c_bar": [0.25, 4.0], "lam": [0.003, 1.0]}
    a = trial_options(space, 200, 0, "mr2")
    assert a == trial_options(space, 200, 0, "mr2")  # the same on every call (and machine)
    assert a != trial_options(space, 200, 1, "mr2") and a != trial_options(space, 200, 0, "focal")
    c = np.log([t["c_bar"] for t in a])
    assert c.min() >= math.log(0.25) - 1e-9 and c.max() <= math.log(4.0) + 1e-9
    # log-uniform: about half the draws below the geometric middle (1.0), spread over the range
    assert 0.35 < np.mean(c < 0) < 0.65 and len(set(c)) > 150
    # another option or another method leaves a method's own trials as they were
    assert [t["c_bar"] for t in trial_options({"c_bar": [0.25, 4.0]}, 200, 0, "mr2")] == [t["c_bar"] for t in a]
    assert significant(0.0123456) == 0.0123 and significant(1234.5) == 1230.0
    with pytest.raises(ValueError, match=r"tune.space.mr2.lam"):
        trial_options({"lam": [1.0, 0.1]}, 2, 0, "mr2")
    assert trial_variant(3) == "trial3" and trial_index("trial3") == 3 and trial_index("default") is None
    assert trial_index("trial3x") is None and trial_index("c_bar=0.5") is None


# ----------------------------------------------------------------------------- the choice on validation
def trials_table(scores):
    """A trial table as ``trial_table`` writes it: (method, trial, hard, all)."""
    return pd.DataFrame([{"dataset": "d", "method": m, "variant": f"trial{i}", "trial": i,
                          "options": json.dumps({"x": i}), "hard": h, "all": a} for m, i, h, a in scores])


def test_the_choice_maximises_the_criterion_then_the_tie_break_then_the_first_trial():
    trials = T.choose(trials_table([("mr2", 0, 80.0, 88.0), ("mr2", 1, 81.0, 87.0), ("mr2", 2, 81.0, 87.5),
                                    ("mr2", 3, 79.0, 90.0), ("dro", 0, 70.0, 80.0), ("dro", 1, 70.0, 80.0)]))
    mr2 = trials[trials["method"] == "mr2"].set_index("trial")
    assert mr2["chosen"].tolist() == [False, False, True, False]  # hard 81 twice: all 87.5 wins
    assert mr2["chosen_all"].tolist() == [False, False, False, True]  # by all classes: trial 3
    assert mr2["chosen_hard"].tolist() == mr2["chosen"].tolist() and "chosen_claim" not in trials  # no reference given
    assert mr2["rank"].tolist() == [3, 2, 1, 4]
    dro = trials[trials["method"] == "dro"].set_index("trial")
    assert dro["chosen"].tolist() == [True, False]  # a full tie: the first trial
    assert T.chosen_options(trials) == {"d": {"mr2": {"x": 2}, "dro": {"x": 0}}}
    with pytest.raises(ValueError, match="tune.criterion"):
        T.choose(trials, "worst")


def test_expected_max_is_the_mean_best_of_every_draw_without_replacement():
    rng = np.random.default_rng(1)
    values = rng.normal(80, 2, 7)
    for n in range(1, 8):
        by_hand = np.mean([max(c) for c in itertools.combinations(values, n)])
        assert T.expected_max(values, n) == pytest.approx(by_hand)
    assert T.expected_max(values, 1) == pytest.approx(values.mean()) and T.expected_max(values, 7) == values.max()
    assert T.expected_max([1.0, math.nan, 3.0], 2) == 3.0  # NaN left out
    with pytest.raises(ValueError):
        T.expected_max(values, 8)
    budget = T.budget_table(trials_table([("mr2", i, v, 90 - v) for i, v in enumerate(values)]))
    assert budget["n"].tolist() == list(range(1, 8)) and budget["expected_max"].is_monotonic_increasing
    assert budget["expected_max_other"].iloc[-1] == pytest.approx(max(90 - values))


def validation_tables(effects, seeds=(100,)):
    """per_class and runs of ERM and of trials on a validation split: trial i of mr2 changes the hard
    classes (2 and 5) by effects[i] points, and its run config records its searched options."""
    rows, runs = [], []
    for seed in seeds:
        runs.append({"dataset": "d", "method": "erm", "variant": "default", "seed": seed})
        rows += [{"dataset": "d", "method": "erm", "variant": "default", "seed": seed, "class": c, "accuracy": a}
                 for c, a in enumerate(ERM)]
        for i, e in enumerate(effects):
            acc = ERM + np.array([0, 0, e, 0, 0, e]) / 100 - 0.001 * i
            rows += [{"dataset": "d", "method": "mr2", "variant": f"trial{i}", "seed": seed, "class": c,
                      "accuracy": a} for c, a in enumerate(acc)]
            runs.append({"dataset": "d", "method": "mr2", "variant": f"trial{i}", "seed": seed,
                         T.SEARCHED: json.dumps(["c_bar"]), option_column("c_bar"): 0.5 + i})
    # a trial variant of the reference itself, far off: the groups must not be ranked on it
    rows += [{"dataset": "d", "method": "erm", "variant": "trial0", "seed": 100, "class": c, "accuracy": 1 - a}
             for c, a in enumerate(ERM)]
    runs.append({"dataset": "d", "method": "erm", "variant": "trial0", "seed": 100,
                 T.SEARCHED: json.dumps([]), "top1": 0.5})
    return pd.DataFrame(rows), pd.DataFrame(runs)


def test_write_tuning_scores_each_trial_on_the_references_validation_groups(tmp_path):
    per_class, runs = validation_tables([1.0, 4.0, 2.0])
    record = T.write_tuning(per_class, runs, tmp_path, "hard", "erm")
    assert record["methods"] == {"mr2": {"c_bar": 1.5}} and record["criterion"] == "hard"
    assert yaml.safe_load((tmp_path / "chosen.yaml").read_text())["methods"] == {"mr2": {"c_bar": 1.5}}
    trials = pd.read_csv(tmp_path / "tuning.csv")
    mr2 = trials[trials["method"] == "mr2"].set_index("trial")
    # hard = classes 2 and 5 (ERM's lowest two), mean over them, in percent; by hand
    assert mr2.loc[1, "hard"] == pytest.approx(100 * np.mean(ERM[[2, 5]] + 0.04 - 0.001))
    assert mr2.loc[0, "all"] == pytest.approx(100 * np.mean(ERM + np.array([0, 0, .01, 0, 0, .01]))) and len(mr2) == 3
    assert "c_bar = 1.5" in (tmp_path / "tuning.md").read_text()
    assert (tmp_path / "tuning.png").stat().st_size > 1000 and (tmp_path / "budget.csv").is_file()


def test_only_tuning_trials_record_a_divergence_every_other_run_stops_on_it():
    from mr2.pipeline.jobs import divergence_args

    assert divergence_args("trial0") == divergence_args("trial12") == ["--on-divergence", "record"]
    assert divergence_args("default") == divergence_args("c_bar=0.5") == divergence_args("trial") == []


def test_a_diverged_trial_is_marked_counted_as_the_worst_draw_and_never_chosen(tmp_path):
    """Trial 1 would win, but its training diverged: its validation scores are 0 (as
    mr2.engine.evaluate writes them), tuning.csv marks it, the choice is trial 2, tuning.md counts it;
    a method whose every trial diverged is one error naming its search key."""
    per_class, runs = validation_tables([1.0, 4.0, 2.0])
    failed = per_class["variant"].eq("trial1") & per_class["method"].eq("mr2")
    per_class.loc[failed, "accuracy"] = 0.0
    runs[T.DIVERGED] = np.where(runs["variant"].eq("trial1") & runs["method"].eq("mr2"), 3, np.nan)
    record = T.write_tuning(per_class, runs, tmp_path, "hard", "erm")
    assert record["methods"] == {"mr2": {"c_bar": 2.5}}
    trials = pd.read_csv(tmp_path / "tuning.csv")
    mr2 = trials[trials["method"] == "mr2"].set_index("trial")
    assert mr2["diverged"].tolist() == [False, True, False] and mr2.loc[1, "rank"] == 3
    assert "| 3 (1 diverged) |" in (tmp_path / "tuning.md").read_text()
    budget = pd.read_csv(tmp_path / "budget.csv")
    one = budget[budget["method"].eq("mr2") & budget["n"].eq(1)].iloc[0]
    assert one["expected_max"] == pytest.approx(mr2["hard"].mean())  # the diverged trial's 0 counts as a draw
    runs[T.DIVERGED] = np.where(runs["method"].eq("mr2"), 3, np.nan)
    with pytest.raises(ValueError, match=r"d/mr2: every trial diverged.*tune.space.mr2"):
        T.write_tuning(per_class, runs, tmp_path / "again", "hard", "erm")


# ----------------------------------------------------------------------------- equivalence and multiplicity
def test_paired_p_value_is_scipys_paired_t_test():
    rng = np.random.default_rng(2)
    a, b = rng.normal(1, 1, 12), rng.normal(0.5, 1, 12)
    d = S.paired_difference(a, b)
    assert d["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    assert S.paired_p_value(0.0, 0.0, 5) == 1.0 and S.paired_p_value(1.0, 0.0, 5) == 0.0
    assert math.isnan(S.paired_p_value(1.0, 1.0, 1))


def test_equivalence_is_both_one_sided_tests_rejecting():
    rng = np.random.default_rng(3)
    for shift in (0.0, 0.3, 0.7, 1.2):
        d = rng.normal(shift, 0.6, 16)
        iv = S.paired_difference(d, np.zeros(16))
        # Lakens' TOST by hand: H0 d <= -1 and H0 d >= +1, each rejected at 5 %
        low = stats.ttest_1samp(d, -1.0, alternative="greater").pvalue
        high = stats.ttest_1samp(d, 1.0, alternative="less").pvalue
        assert rules.is_equivalent(iv["eq_lo"], iv["eq_hi"], 1.0) == (max(low, high) < 0.05)
    assert not rules.is_equivalent(math.nan, 0.5)


def test_holm_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, math.nan]
    # sorted 0.005, 0.01, 0.03, 0.04 (m = 4): 4·0.005, 3·0.01, 2·0.03, 1·0.04 -> running max, in place
    assert S.holm(p)[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and math.isnan(S.holm(p)[4])
    assert S.holm([0.5]) == [0.5] and S.holm([]) == []


def test_the_word_of_a_comparison():
    word = rules.comparison_word
    assert word(0.2, -0.3, 0.7, 0.8, 1.0, -0.2, 0.6, 16) == "equivalent"
    assert word(0.2, -0.3, 0.7, 0.8, 1.0, -0.2, 1.1, 16) == "no clear difference"  # powered, not equivalent
    assert word(0.2, -0.3, 0.7, 0.8, 1.0, -0.2, 1.1, 9) == "underpowered"  # an sd from 9 seeds shows no power
    assert word(0.2, -0.3, 0.7, 1.2, 1.0, -0.2, 1.1, 16) == "underpowered"
    assert word(0.6, 0.1, 1.1, 0.8, 1.0, 0.2, 1.0, 16) == "higher"
    assert word(0.6, 0.1, 1.1, 0.8, 1.0, 0.2, 0.9, 16, p_adjusted=0.08) == "equivalent"  # Holm takes "higher" back
    assert word(0.6, 0.1, 1.1, 0.8, 1.0, 0.2, 1.0, 16, p_adjusted=0.01) == "higher"


def family_table(noise=0.004, seeds=12):
    rng = np.random.default_rng(5)
    rows = []
    for method, change in {"erm": 0.0, "mr2": 0.01, "dro": 0.0, "focal": 0.005, "ldam": 0.02}.items():
        for seed in range(seeds):
            acc = ERM + change + rng.normal(0, noise, 6)
            rows += [{"dataset": "d", "method": method, "variant": "default", "seed": seed, "class": c,
                      "accuracy": a} for c, a in enumerate(acc)]
    return pd.DataFrame(rows)


def test_the_baseline_family_is_corrected_by_holm_and_the_reference_comparisons_are_not():
    pc = family_table()
    c = R.comparisons_table(pc, None, G.difficulty_table(pc))
    base = c[(c["kind"] == "baseline") & (c["metric"] == "hard")]
    assert set(base["family_size"]) == {3} and base["p_holm"].tolist() == pytest.approx(S.holm(base["p_value"]))
    ref = c[c["kind"] == "reference"]
    assert set(ref["family_size"]) == {1} and ref["p_holm"].tolist() == pytest.approx(ref["p_value"].tolist())
    for _, r in c.iterrows():
        assert r["word"] == rules.word_of(r, 1.0, r["p_holm"] if r["family_size"] > 1 else None)


# ----------------------------------------------------------------------------- exactly the intended variants
def test_comparisons_and_groups_read_only_the_default_variants():
    """A sweep or trial variant of the reference and of MR², far from the default ones, changes neither
    the easy/medium/hard groups nor any comparison of the default variants."""
    pc = family_table()
    plain = R.comparisons_table(pc, None, G.difficulty_table(pc))
    odd = []
    for method in ("erm", "mr2"):
        for variant in ("c_bar=0.5", "trial3"):
            part = pc[(pc["method"] == method) & (pc["variant"] == "default")].copy()
            part["variant"], part["accuracy"] = variant, 1.0 - part["accuracy"]  # reversed class order
            odd.append(part)
    more = pd.concat([pc, *odd], ignore_index=True)
    groups = G.difficulty_table(more)
    pd.testing.assert_frame_equal(groups, G.difficulty_table(pc))
    c = R.comparisons_table(more, None, groups)
    default = c[c["variant"].eq("default") & c["against_variant"].eq("default")].reset_index(drop=True)
    pd.testing.assert_frame_equal(default, plain)
    # a variant is compared against the reference's default variant only
    assert set(c.loc[c["variant"] != "default", "against_variant"]) == {"default"}
    assert not c["against"].eq("mr2").any() or set(c.loc[c["against"].eq("mr2"), "against_variant"]) == {"default"}


# ----------------------------------------------------------------------------- convergence
def test_convergence_gains_are_paired_by_seed_on_the_settings_groups():
    pc = family_table(seeds=3)
    long = pc.copy()
    long["dataset"] = "d.x4"
    long.loc[long["method"].eq("mr2") & long["class"].isin([2, 5]), "accuracy"] += 0.02  # mr2 gains 2 on hard
    per_class = pd.concat([pc, long], ignore_index=True)
    runs = per_class.drop_duplicates(["dataset", "method", "variant", "seed"])[["dataset", "method", "variant", "seed"]]
    runs = runs.assign(**{C.EPOCHS: np.where(runs["dataset"] == "d", 20, 80),
                          C.TAG: np.where(runs["dataset"] == "d", None, "d")})
    table = C.convergence_table(per_class, runs, G.difficulty_table(per_class), tolerance=1.0)
    row = table.set_index("method").loc["mr2"]
    assert (row["epochs"], row["check_epochs"], row["n_paired"]) == (20, 80, 3)
    assert row["hard_gain"] == pytest.approx(2.0) and row["all_gain"] == pytest.approx(2 / 3) and not row["converged"]
    assert table.set_index("method").loc["erm", "converged"] and table.set_index("method").loc["erm", "hard_gain"] == 0
    ok, text = C.convergence_summary(table, "d", ["erm", "dro"])
    assert ok is True and text.startswith("all 2 methods within 1 point at 4x the epochs")
    ok, text = C.convergence_summary(table, "d", ["erm", "mr2"])
    assert ok is False and text.startswith("not at convergence: mr2 (all +0.7 [") and ", hard +2.0 [" in text
    assert text.endswith("(90 % intervals)")
    assert C.convergence_summary(table, "d", ["erm", "jtt"]) == (None, "convergence not checked for jtt")
    assert C.convergence_table(pc, runs[runs["dataset"] == "d"].drop(columns=[C.TAG]), G.difficulty_table(pc)).empty


def test_a_method_with_its_own_epochs_is_checked_at_factor_times_its_own_and_the_regime_names_it():
    """Group DRO trained 40 epochs where the others train 20 (config key method_epochs): its check is its
    own 160-epoch runs against its 40-epoch ones, and the setting's regime says so."""
    from mr2.results.verdicts import settings_table

    pc = family_table(seeds=3)
    per_class = pd.concat([pc, pc.assign(dataset="d.x4")], ignore_index=True)
    runs = per_class.drop_duplicates(["dataset", "method", "variant", "seed"])[["dataset", "method", "variant", "seed"]]
    dro, check = runs["method"].eq("dro"), runs["dataset"].eq("d.x4")
    runs = runs.assign(**{C.EPOCHS: np.where(dro, 40, 20) * np.where(check, 4, 1), C.TAG: np.where(check, "d", None),
                          "config.data.train_cap": 1000})
    table = C.convergence_table(per_class, runs, G.difficulty_table(per_class), tolerance=1.0).set_index("method")
    assert (table.loc["dro", "epochs"], table.loc["dro", "check_epochs"]) == (40, 160)
    assert (table.loc["erm", "epochs"], table.loc["erm", "check_epochs"]) == (20, 80)
    regime = settings_table(runs, table.reset_index()).set_index("dataset")["regime"]
    assert regime["d"] == "1000/class × 20 ep (dro 40 ep)" and regime["d.x4"] == "1000/class × 80 ep (dro 160 ep)"
    alike = settings_table(runs.assign(**{C.EPOCHS: 20}), table.reset_index()).set_index("dataset")["regime"]
    assert alike["d"] == "1000/class × 20 ep"


def test_the_report_verdict_reads_the_convergence_checks_it_is_given(tmp_path):
    """A 12-seed setting whose every method is within tolerance at 4x the epochs earns words in the
    report's verdict table; without its convergence checks the same runs are sensitivity, "convergence
    not checked"; with MR² gaining 2 points at 4x, "not at convergence: mr2"."""
    from pathlib import Path

    from mr2.results.report import write_report

    pc = family_table()
    pc = pc[pc["method"].isin(["erm", "mr2"])]
    long = pc[pc["seed"] < 3].assign(dataset="d.x4")
    runs_of = lambda frame: frame.drop_duplicates(["dataset", "method", "variant", "seed"])[
        ["dataset", "method", "variant", "seed"]]
    runs = runs_of(pd.concat([pc, long]))
    runs = runs.assign(**{C.EPOCHS: np.where(runs["dataset"] == "d", 20, 80),
                          C.TAG: np.where(runs["dataset"] == "d", None, "d")})
    captions = Path(__file__).resolve().parents[1] / "workflow" / "report"

    def verdict(per_class, convergence):
        t = {"per_class": per_class, "runs": runs, "groups": G.difficulty_table(per_class)}
        if convergence:
            t["convergence"] = C.convergence_table(per_class, runs, t["groups"], tolerance=1.0)
        text = write_report(t, "| table |", {}, tmp_path / "report.md", captions, {"seeds": list(range(12))})
        return text[text.index("## Verdict"):text.index("## Results")]

    both = pd.concat([pc, long], ignore_index=True)
    text = verdict(both, True)
    first = text[:text.index("Each cell")]
    row = next(line for line in first.splitlines() if line.startswith("| this run"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "d, all × 20 ep" and cells[3] == "12" and cells[4] == "none"
    assert cells[5].startswith("**supported** (table-wide: supported) +1.0") and "no run set is judged yet" not in first
    assert "convergence not checked" in verdict(both, False)
    slow = both.copy()
    slow.loc[slow["dataset"].eq("d.x4") & slow["method"].eq("mr2"), "accuracy"] += 0.02
    assert "not at convergence: mr2" in verdict(slow, True)


# ----------------------------------------------------------------------------- validation from unused images
def test_held_out_validation_is_disjoint_from_training_and_capped_per_class():
    y = torch.tensor([0] * 10 + [1] * 6 + [2] * 8)
    pool = torch.tensor([0, 1, 2, 10, 11, 12, 16, 17, 18])  # train_cap 3
    val = held_out_validation(y, pool, 4, 0, ["a", "b", "c"])
    assert not set(val.tolist()) & set(pool.tolist())
    assert torch.bincount(y[val], minlength=3).tolist() == [4, 3, 4]  # class b has only 3 left
    assert torch.equal(val, held_out_validation(y, pool, 4, 0, ["a", "b", "c"]))  # seeded
    with pytest.raises(ValueError, match=r"val_cap.*\['b'\]"):
        held_out_validation(y, torch.cat([pool, torch.arange(13, 16)]), 4, 0, ["a", "b", "c"])


def test_val_cap_needs_train_cap_and_no_val_fraction():
    from mr2.engine.data.registry import resolve_config

    assert resolve_config({"name": "digits", "train_cap": 50, "val_fraction": 0.0, "val_cap": 20})["val_cap"] == 20
    with pytest.raises(ValueError, match="val_cap"):
        resolve_config({"name": "digits", "train_cap": 50, "val_cap": 20})  # val_fraction 0.1 by default
    with pytest.raises(ValueError, match="val_cap"):
        resolve_config({"name": "digits", "val_fraction": 0.0, "val_cap": 20})


# ----------------------------------------------------------------------------- the chain, end to end
@pytest.mark.slow
def test_the_tuned_config_runs_tune_then_final_runs_then_convergence_then_the_report(tmp_path):
    """config/smoke-tuned.yaml: the trials are scored on validation only and never tabled; the final runs
    train with the options the tune step chose; every method has its convergence check; the settings
    say what was tuned; a second run does nothing."""
    from conftest import MUTATION, run_snakemake, workdir_with_configs

    if MUTATION:
        pytest.skip("end-to-end run: not under mutation testing")
    work = workdir_with_configs(tmp_path / "w")
    run_snakemake(work, "--configfile", "config/smoke-tuned.yaml")
    results = work / "results"
    chosen = yaml.safe_load((results / "tune" / "fashion_mnist" / "chosen.yaml").read_text())
    trials = pd.read_csv(results / "tune" / "fashion_mnist" / "tuning.csv")
    assert set(trials["method"]) == {"mr2", "focal"} and len(trials) == 4 and trials["chosen"].sum() == 2
    for method, options in chosen["methods"].items():  # the chosen trial is one of the drawn ones
        assert json.dumps(options, sort_keys=True) in set(trials.loc[trials["method"] == method, "options"])
    for trial in results.glob("runs/fashion_mnist/*/trial*/*/seed7"):
        assert (trial / "eval_val" / "per_class.csv").is_file() and not (trial / "eval").exists()
    runs = pd.read_csv(results / "tables" / "runs.csv")
    assert not runs["variant"].str.startswith("trial").any() and set(runs["seed"]) == {0, 1}
    final = runs[runs["dataset"] == "fashion_mnist"].set_index("method")
    assert final.loc["mr2", "config.method.options.c_bar"].tolist() == [chosen["methods"]["mr2"]["c_bar"]] * 2
    assert final.loc["mr2_no_rep", "config.method.options.c_bar"].tolist() == [chosen["methods"]["mr2"]["c_bar"]] * 2
    assert final.loc["focal", "config.method.options.gamma"].tolist() == [chosen["methods"]["focal"]["gamma"]] * 2
    check = runs[runs["dataset"] == "fashion_mnist.x2"]
    assert set(check["method"]) == {"erm", "mr2", "mr2_no_rep", "focal"} and set(check["config.train.epochs"]) == {4}
    convergence = pd.read_csv(results / "tables" / "convergence.csv")
    assert set(convergence["method"]) == {"erm", "mr2", "mr2_no_rep", "focal"} and set(convergence["n_paired"]) == {1}
    settings = pd.read_csv(results / "tables" / "settings.csv", keep_default_na=False).set_index("dataset")
    assert settings.loc["fashion_mnist", "tuned"] == "mr2, focal (ablations follow)"  # mr2_no_rep followed mr2
    assert settings.loc["fashion_mnist.x2", "check_of"] == "fashion_mnist"
    report = (results / "report.md").read_text()
    assert "2 paired seeds (a verdict needs 10)" in report
    again = run_snakemake(work, "--configfile", "config/smoke-tuned.yaml", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr or "all" in again.stdout
