"""Results layer: aggregation of run directories, groups, results table and its Markdown."""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import results_data as syn
from results_data import write_run
from mr2.common.runs import RUN_KEYS
from mr2.results import groups as G
from mr2.results import statistics as S
from mr2.results import tables as R
from mr2.common.io import save_csv


def test_aggregate_reads_the_run_tree(tmp_path):
    dirs = [write_run(tmp_path, "fmnist", m, "default", s) for m in ("erm", "mr2") for s in (0, 1)]
    dirs.append(write_run(tmp_path, "fmnist", "mr2", "c_bar=0.5", 0))
    t = R.aggregate(dirs)
    assert set(t) == {"per_class", "runs", "epochs"}
    pc, runs, ep = t["per_class"], t["runs"], t["epochs"]
    assert len(pc) == 5 * 4 and len(runs) == 5
    assert list(pc.columns[:4]) == RUN_KEYS and list(runs.columns[:4]) == RUN_KEYS
    assert not pc.duplicated(RUN_KEYS + ["class"]).any()
    # the config is flattened, metrics.json's copy of it is dropped
    assert "config" not in runs and (runs["config.train.lr"] == 0.05).all()
    assert runs.loc[runs["variant"] == "c_bar=0.5", "config.method.options.c_bar"].item() == 0.5
    row = runs[(runs["method"] == "erm") & (runs["seed"] == 1)].iloc[0]
    assert row["top1"] == pytest.approx(np.mean((np.arange(4) + 1) / 5 + 0.01))
    # epochs: run-level rows have no class, per-class gamma rows only for mr2; keys added
    assert str(ep["class"].dtype) == "Int64"
    assert ep.loc[ep["name"] == "train_loss", "class"].isna().all()
    gamma = ep[ep["name"] == "gamma"]
    assert set(gamma["method"]) == {"mr2"} and len(gamma) == 3 * 2 * 4
    assert len(ep[(ep["method"] == "erm") & (ep["seed"] == 0)]) == 2 * 3


def test_aggregate_uses_dataset_key_and_round_trips(tmp_path):
    dirs = [write_run(tmp_path, "cifar100", "erm", "default", 0, dataset_key="cifar100_r32"),
            write_run(tmp_path, "cifar100", "erm", "default", 0, dataset_key="cifar100_wrn")]
    t = R.aggregate(dirs)
    assert set(t["per_class"]["dataset"]) == {"cifar100_r32", "cifar100_wrn"}
    paths = R.write_tables(t, tmp_path / "tables")
    assert sorted(p.name for p in paths.values()) == ["epochs.csv", "per_class.csv", "runs.csv"]
    back = R.read_tables(tmp_path / "tables")
    pd.testing.assert_frame_equal(back["per_class"], t["per_class"], check_dtype=False)
    assert str(back["epochs"]["class"].dtype) == "Int64"
    assert back["epochs"]["class"].isna().sum() == t["epochs"]["class"].isna().sum()


def test_aggregate_errors_name_the_problem(tmp_path):
    run = write_run(tmp_path, "fmnist", "erm", "default", 0)
    with pytest.raises(ValueError, match="same keys"):
        R.aggregate([run, run])
    (run / "eval" / "metrics.json").unlink()
    with pytest.raises(FileNotFoundError, match="metrics.json"):
        R.aggregate([run])
    other = write_run(tmp_path / "x", "fmnist", "mr2", "default", 3)
    table = pd.read_csv(other / "eval" / "per_class.csv").assign(seed=4)
    save_csv(table, other / "eval" / "per_class.csv")
    with pytest.raises(ValueError, match="seed"):
        R.aggregate([other])
    with pytest.raises(ValueError, match="no run directories"):
        R.aggregate([])


def test_read_run_edges_flatten_and_keys_beside_any_index(tmp_path):
    """Lists become JSON and empty mappings vanish; the keys line up with a frame whose index is not
    0..n−1; a metrics.json without its config copy, a single run, another eval folder; each file
    whose keys differ from config.yaml's is named; two runs with the same keys are both named."""
    assert R.flatten({"a": {"b": [1, 2], "c": {}}, "d": 3}) == {"a.b": "[1, 2]", "d": 3}
    assert R.flatten({"a": {"b": (0.5,)}}, "config.") == {"config.a.b": "[0.5]"}
    keyed = R._with_keys(pd.DataFrame({"x": [1, 2], "method": ["old", "old"]}, index=[5, 6]), {"method": "m", "seed": 0})
    assert keyed.to_dict("list") == {"method": ["m", "m"], "seed": [0, 0], "x": [1, 2]} and list(keyed.index) == [5, 6]
    run = write_run(tmp_path, "fmnist", "erm", "default", 0)
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    del metrics["config"]
    (run / "eval" / "metrics.json").write_text(json.dumps(metrics))
    (run / "eval").rename(run / "eval_best")
    t = R.aggregate([run], eval_subdir="eval_best")  # one run: its tables as they are
    assert len(t["runs"]) == 1 and t["runs"]["run_dir"].tolist() == [str(run)] and len(t["per_class"]) == 4
    assert t["runs"]["config.train.lr"].tolist() == [0.05] and "config" not in t["runs"]
    metrics["seed"] = 9
    (run / "eval_best" / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(ValueError, match=rf"eval_best/metrics.json: seed \['9'\] does not match {run}/config.yaml \(0\)"):
        R.read_run(run, "eval_best")
    metrics["seed"] = 0
    (run / "eval_best" / "metrics.json").write_text(json.dumps(metrics))
    table = pd.read_csv(run / "eval_best" / "per_class.csv").assign(method="mr2")
    save_csv(table, run / "eval_best" / "per_class.csv")
    with pytest.raises(ValueError, match=r"eval_best/per_class.csv: method \['mr2'\] does not match .*config.yaml \('erm'\)"):
        R.read_run(run, "eval_best")
    a, b = (write_run(tmp_path / name, "fmnist", "erm", "default", 1) for name in ("a", "b"))
    with pytest.raises(ValueError, match=rf"same keys \(dataset=fmnist, method=erm, variant=default, seed=1\): \['{a}', '{b}'\]"):
        R.aggregate([a, b])


# ----------------------------------------------------------------------------- groups
def test_groups_are_thirds_of_the_reference_ranking():
    t = syn.tables(datasets=("toy", "toy2"))
    groups = G.difficulty_table(t["per_class"])
    assert len(groups) == 2 * syn.K
    for dataset in ("toy", "toy2"):
        g = groups[groups["dataset"] == dataset].set_index("class")["group"]
        assert set(g[g == "hard"].index) == syn.HARD
        assert set(g[g == "medium"].index) == syn.MEDIUM
        assert set(g[g == "easy"].index) == syn.EASY


def test_groups_need_the_reference_on_every_dataset():
    t = syn.tables(datasets=("toy",))
    extra = t["per_class"].query("method == 'mr2'").assign(dataset="lonely")
    with pytest.raises(ValueError, match="lonely.*erm"):
        G.difficulty_table(pd.concat([t["per_class"], extra]))


# ----------------------------------------------------------------------------- results table
def by_hand(per_class, dataset, method, variant, classes):
    """Per-seed mean accuracy (%) of ``classes``, straight from the per-class rows."""
    f = per_class[(per_class["dataset"] == dataset) & (per_class["method"] == method)
                  & (per_class["variant"] == variant) & per_class["class"].isin(classes)]
    return 100 * f.groupby("seed")["accuracy"].mean()


def test_results_table_mean_std_and_paired_difference():
    t = syn.tables(datasets=("toy", "toy2"), noise=0.02)
    groups = G.difficulty_table(t["per_class"])
    table = R.results_table(t["per_class"], t["runs"], groups)
    assert len(table) == 2 * len(syn.METHODS)
    assert list(table["method"][:4]) == list(syn.METHODS) and table.loc[0, "method"] == "erm"
    pc = t["per_class"]
    for dataset in ("toy", "toy2"):
        for method in syn.METHODS:
            row = table[(table["dataset"] == dataset) & (table["method"] == method)].iloc[0]
            assert row["n_seeds"] == 3
            for name, classes in (("hard", syn.HARD), ("easy", syn.EASY), ("all", set(range(syn.K)))):
                per_seed = by_hand(pc, dataset, method, "default", classes)
                assert row[f"{name}_mean"] == pytest.approx(per_seed.mean())
                assert row[f"{name}_std"] == pytest.approx(per_seed.std())
            worst = 100 * pc[(pc["dataset"] == dataset) & (pc["method"] == method)].groupby("seed")["accuracy"].min()
            assert row["worst_mean"] == pytest.approx(worst.mean())
            top1 = 100 * t["runs"].query("dataset == @dataset and method == @method")["top1"]
            assert row["top1_mean"] == pytest.approx(top1.mean())
            if method == "erm":
                assert math.isnan(row["hard_diff"])
                continue
            d = (by_hand(pc, dataset, method, "default", syn.HARD) - by_hand(pc, dataset, "erm", "default", syn.HARD))
            lo, hi = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
            assert row["hard_diff"] == pytest.approx(d.mean())
            assert (row["hard_diff_lo"], row["hard_diff_hi"]) == pytest.approx((lo, hi))
    # the known effects: MR² gains about 4 points on hard classes, nothing on easy ones
    mr2 = table[(table["dataset"] == "toy") & (table["method"] == "mr2")].iloc[0]
    assert mr2["hard_diff"] == pytest.approx(4.0, abs=2.5)
    assert abs(mr2["easy_diff"]) < 2.5


def test_paired_difference_known_case():
    out = S.paired_difference(np.array([3.0, 5.0, 7.0]), np.array([2.0, 3.0, 4.0]))
    # d = 1, 2, 3: mean 2, sd 1, t_{0.975, 2} = 4.3027 (tables)
    assert out["diff"] == pytest.approx(2.0)
    assert out["diff_hi"] - 2.0 == pytest.approx(4.3027 / math.sqrt(3), abs=1e-4)
    assert out["n_paired"] == 3
    one = S.paired_difference(np.array([3.0]), np.array([2.0]))
    assert one["diff"] == 1.0 and math.isnan(one["diff_lo"]) and math.isnan(one["diff_hi"])


def test_results_table_pairs_only_common_seeds_and_handles_one_seed():
    t = syn.tables(methods=("erm", "mr2"), seeds=(0, 1, 2))
    pc = t["per_class"]
    pc = pc[~((pc["method"] == "mr2") & (pc["seed"] != 1))]  # mr2 ran seed 1 only
    groups = G.difficulty_table(pc)
    table = R.results_table(pc, None, groups)
    row = table[table["method"] == "mr2"].iloc[0]
    assert row["n_seeds"] == 1 and row["n_paired"] == 1 and math.isnan(row["hard_std"])
    d = by_hand(pc, "toy", "mr2", "default", syn.HARD)[1] - by_hand(pc, "toy", "erm", "default", syn.HARD)[1]
    assert row["hard_diff"] == pytest.approx(d) and math.isnan(row["hard_diff_lo"])
    assert "top1_mean" not in table  # no runs table given
    md = R.results_markdown(table)
    assert "(1 seed)" in md and "[no CI: 1 seed]" in md


def test_formatting():
    assert R.format_mean_std(71.84, 0.31) == "71.8 ± 0.3"
    assert R.format_mean_std(71.84, float("nan")) == "71.8 (1 seed)"
    assert R.format_difference(0.94, 0.21, 1.58, 3) == "+0.9 [+0.2, +1.6]"
    assert R.format_difference(-0.4, -1.04, 0.2, 3) == "-0.4 [-1.0, +0.2]"
    assert R.format_difference(float("nan"), float("nan"), float("nan"), 0) == "n/a"


def test_markdown_table_and_files(tmp_path):
    t = syn.tables(sweeps=("c_bar=0.5",))
    groups = G.difficulty_table(t["per_class"])
    table = R.results_table(t["per_class"], t["runs"], groups)
    md = R.results_markdown(table)
    lines = [line for line in md.splitlines() if line.startswith("|")]
    assert len(lines) == 2 + len(syn.METHODS) + 1
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[:6] == ["Dataset", "Method", "Variant", "Seeds", "Top-1", "Δ Top-1"] and "Δ Hard" in header
    erm = [c.strip() for c in lines[2].strip("|").split("|")]
    assert erm[1] == "erm" and erm[5] == "reference"
    r = table[table["method"] == "mr2"].iloc[0]
    mr2 = [c.strip() for c in lines[3].strip("|").split("|")]
    col = header.index("Δ Hard")
    assert mr2[col] == f"{r['hard_diff']:+.1f} [{r['hard_diff_lo']:+.1f}, {r['hard_diff_hi']:+.1f}]"
    assert mr2[header.index("Hard")] == f"{r['hard_mean']:.1f} ± {r['hard_std']:.1f}"
    assert lines[-1].split("|")[3].strip() == "c_bar=0.5"  # sweep variants after the defaults
    R.write_results_table(table, tmp_path / "results.csv", tmp_path / "results.md")
    back = pd.read_csv(tmp_path / "results.csv")
    assert list(back.columns) == list(table.columns)
    assert np.allclose(back["hard_diff"].to_numpy(float), table["hard_diff"].to_numpy(float), equal_nan=True)
    assert (tmp_path / "results.md").read_text() == md


def test_results_folder_resolves_from_the_repository_root(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notebooks" / "deep").mkdir(parents=True)
    (tmp_path / "results").mkdir()
    assert R.results_folder(start=tmp_path / "notebooks" / "deep") == tmp_path / "results"
    monkeypatch.chdir(tmp_path / "notebooks")  # a notebook kernel's folder
    assert R.results_folder() == tmp_path / "results"
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert R.results_folder(str(other)) == other  # MR2_RESULTS overrides
    with pytest.raises(FileNotFoundError, match="missing results folder .*nowhere"):
        R.results_folder(tmp_path / "nowhere")
    (tmp_path / "results").rmdir()
    with pytest.raises(FileNotFoundError, match=f"missing results folder {tmp_path / 'results'}"):
        R.results_folder()
    with pytest.raises(FileNotFoundError, match="no repository root .*; set MR2_RESULTS to the pipeline's results"):
        R.results_folder(start="/")


# ----------------------------------------------------------------------------- the report's findings
def findings_text(t, seeds_ok=True):
    """The report's findings on the tables ``t``; the claim's sentence reads a verdict table whose every
    method passed its convergence check (4x the epochs moved nothing), so only the seeds gate it."""
    from mr2.results.report import findings
    from mr2.results.verdicts import settings_table, verdict_table

    pc, runs = t["per_class"], t["runs"]
    groups = G.difficulty_table(pc)
    checks = pd.DataFrame([{"dataset": d, "check": f"{d}.x4", "method": m, "variant": "default", "epochs": 4,
                            "check_epochs": 16, "n_paired": 3, "all_gain": 0.0, "hard_gain": 0.0, "level": 0.9,
                            "tolerance": 1.0, "converged": True}
                           for d, m in runs[["dataset", "method"]].drop_duplicates().itertuples(index=False)])
    verdicts = verdict_table(R.comparisons_table(pc, runs, groups), pc[["dataset", "method", "variant"]].drop_duplicates(),
                             settings_table(runs, checks))
    return "\n".join(findings(pc, runs, groups, verdicts=verdicts))


TEN = tuple(range(10))  # the fewest paired seeds a verdict word rests on


def claim_line(text):
    return next(line for line in text.splitlines() if line.startswith("- The paper's claim"))


def test_the_claim_takes_overall_accuracy_as_top1():
    """On an unbalanced test set top-1 and the mean per-class accuracy part ways: MR²'s hard-class
    gain raises the mean per-class accuracy, but its top-1 is lowered here; the claim then fails."""
    t = syn.tables(methods=("erm", "mr2"), noise=0.002, seeds=TEN)
    assert "**supported**" in claim_line(findings_text(t))
    runs = t["runs"].copy()
    runs.loc[runs["method"] == "mr2", "top1"] -= 0.02
    text = findings_text({**t, "runs": runs})
    assert "**not supported**" in claim_line(text)
    assert "overall top-1 -0.7 points" in text and "all classes (mean per-class) +1.3 points" in text


def test_the_claim_is_not_judged_with_one_seed_and_absent_without_a_common_seed():
    t = syn.tables(methods=("erm", "mr2"), seeds=(0,))
    assert "**not judged** here: 1 paired seeds (a verdict needs 10)" in claim_line(findings_text(t))
    t = syn.tables(methods=("erm", "mr2"), seeds=(0, 1, 2))
    keep = ((t["per_class"]["method"] == "erm") & (t["per_class"]["seed"] < 2)) | (
        (t["per_class"]["method"] == "mr2") & (t["per_class"]["seed"] == 2))
    runs_keep = ((t["runs"]["method"] == "erm") & (t["runs"]["seed"] < 2)) | (
        (t["runs"]["method"] == "mr2") & (t["runs"]["seed"] == 2))
    text = findings_text({**t, "per_class": t["per_class"][keep], "runs": t["runs"][runs_keep]})
    assert "MR² and ERM share no seed here" in text and "The paper's claim" not in text


def test_the_cifar100_comparison_with_the_paper_takes_the_default_variants():
    t = syn.tables(datasets=("cifar100",), methods=("erm", "mr2"), sweeps=("lam=1.0",), noise=0.0)
    line = next(s for s in findings_text(t).splitlines() if "paper's CIFAR-100 numbers" in s)
    default = t["per_class"].query("method == 'mr2' and variant == 'default'")["accuracy"].mean() * 100
    assert f"MR2 all {default:.1f} (paper 71.8)" in line


def test_report_findings_with_two_classes():
    """K = 2: one hard and one medium class, no easy group; the sentences leave easy classes out."""
    rng = np.random.default_rng(0)
    rows, runs = [], []
    for method, gain in (("erm", 0.0), ("mr2", 0.05), ("dro", 0.05)):
        for seed in TEN:
            acc = np.array([0.6 + gain, 0.9]) + rng.normal(0, 0.005, 2)
            rows += [{"dataset": "two", "method": method, "variant": "default", "seed": seed, "class": c,
                      "accuracy": acc[c]} for c in range(2)]
            runs.append({"dataset": "two", "method": method, "variant": "default", "seed": seed, "top1": acc.mean()})
    pc = pd.DataFrame(rows)
    text = findings_text({"per_class": pc, "runs": pd.DataFrame(runs)})
    hard = pc[pc["class"].eq(0)].pivot(index="seed", columns="method", values="accuracy")
    assert f"hard classes {100 * (hard['mr2'] - hard['erm']).mean():+.1f} points" in text
    assert "easy classes" not in text.split("\n")[1] and "easy classes" not in claim_line(text)
    assert "**supported**" in claim_line(text)


def test_classes_without_test_samples_are_in_no_group():
    ref = pd.DataFrame({"class": range(9), "accuracy": [0.1, np.nan, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, np.nan]})
    groups = G.difficulty_groups(ref)
    assert set(groups.index) == {0, 2, 3, 4, 5, 6, 7}
    assert groups.value_counts().to_dict() == {"hard": 3, "medium": 2, "easy": 2}


def test_held_out_groups_by_hand_from_the_reference_default_runs_of_the_other_seed():
    """Two seeds of ERM rank three classes in opposite orders, so seed 0's groups come from seed 1
    (c0 hard, c2 easy) and seed 1's from seed 0 (c2 hard, c0 easy). Decoys that would rank otherwise:
    another method and an ERM variant. Rows keep the order of first appearance (dataset dB first)."""
    acc = {("erm", "default", 0): (0.9, 0.5, 0.1), ("erm", "default", 1): (0.1, 0.5, 0.9),
           ("erm", "lam=1", 0): (0.1, 0.5, 0.9), ("erm", "lam=1", 1): (0.9, 0.5, 0.1),
           ("other", "default", 0): (0.1, 0.5, 0.9), ("other", "default", 1): (0.9, 0.5, 0.1),
           ("mr2", "default", 0): (0.2, 0.4, 0.7), ("mr2", "default", 1): (0.3, 0.6, 0.8)}
    per_class = pd.DataFrame([{"dataset": d, "method": m, "variant": v, "seed": s, "class": c, "accuracy": a[c]}
                              for d in ("dB", "dA") for (m, v, s), a in acc.items() for c in range(3)])
    out = G.held_out_group_accuracy(per_class)
    assert list(out.columns[:4]) == ["dataset", "method", "variant", "seed"] and len(out) == 2 * len(acc)
    assert out["dataset"].tolist() == ["dB"] * len(acc) + ["dA"] * len(acc)
    assert out.index.equals(pd.RangeIndex(len(out)))  # one row per run, numbered once
    mr2 = out[(out["dataset"] == "dA") & (out["method"] == "mr2")].set_index("seed")
    assert mr2.loc[0, "hard"] == pytest.approx(0.2) and mr2.loc[0, "easy"] == pytest.approx(0.7)
    assert mr2.loc[1, "hard"] == pytest.approx(0.8) and mr2.loc[1, "easy"] == pytest.approx(0.3)
    assert mr2.loc[0, "medium"] == pytest.approx(0.4) and mr2.loc[0, "all"] == pytest.approx(1.3 / 3)
    assert mr2.loc[1, "worst"] == pytest.approx(0.3)
    one_seed = G.held_out_group_accuracy(per_class[per_class["seed"] == 0])
    assert one_seed.empty and list(one_seed.columns) == ["dataset", "method", "variant", "seed", "all", "worst"]


def test_groups_and_group_accuracy_per_dataset_by_hand_in_order_of_first_appearance():
    """Two datasets given as dB, dA, ERM ranking dB's classes 2 < 0 < 1 and dA's 0 < 1 < 2 (a tie
    broken by the class): the groups table is dataset, class, group with the datasets in that order,
    and each run's group accuracies are read against its own dataset's groups; both tables numbered
    once. A dataset without groups is an error naming it."""
    acc = {"dB": {"erm": (0.5, 0.8, 0.2), "mr2": (0.6, 0.7, 0.4)}, "dA": {"erm": (0.3, 0.3, 0.9), "mr2": (0.1, 0.5, 0.6)}}
    per_class = pd.DataFrame([{"dataset": d, "method": m, "variant": "default", "seed": 0, "class": c, "accuracy": a[c]}
                              for d, by_method in acc.items() for m, a in by_method.items() for c in range(3)])
    groups = G.difficulty_table(per_class)
    assert list(groups.columns) == ["dataset", "class", "group"] and groups.index.equals(pd.RangeIndex(6))
    assert list(groups.itertuples(index=False, name=None)) == [
        ("dB", 0, "medium"), ("dB", 1, "easy"), ("dB", 2, "hard"), ("dA", 0, "hard"), ("dA", 1, "medium"), ("dA", 2, "easy")]
    per_run = G.run_group_accuracy(per_class, groups)
    assert per_run.index.equals(pd.RangeIndex(4)) and per_run["dataset"].tolist() == ["dB", "dB", "dA", "dA"]
    mr2 = per_run[per_run["method"] == "mr2"].set_index("dataset")
    assert (mr2.loc["dB", "hard"], mr2.loc["dB", "easy"], mr2.loc["dB", "medium"]) == pytest.approx((0.4, 0.7, 0.6))
    assert (mr2.loc["dA", "hard"], mr2.loc["dA", "easy"], mr2.loc["dA", "worst"]) == pytest.approx((0.1, 0.6, 0.1))
    with pytest.raises(ValueError, match="no easy/medium/hard groups for dataset 'dA'"):
        G.run_group_accuracy(per_class, groups[groups["dataset"] == "dB"])


def test_all_and_worst_are_over_every_class_grouped_or_not():
    """A class in no group (here class 3) still counts in the mean over all classes and may be the
    worst; the groups' means are over their own classes only."""
    per_class = pd.DataFrame({"dataset": "d", "method": "m", "variant": "default", "seed": 0, "class": range(4),
                              "accuracy": [0.9, 0.6, 0.3, 0.2]})
    groups = pd.Series(["easy", "medium", "hard"], index=pd.Index([0, 1, 2], name="class"), name="group")
    (row,) = G.group_accuracy(per_class, groups).to_dict("records")
    assert (row["all"], row["worst"]) == pytest.approx((0.5, 0.2))
    assert (row["easy"], row["medium"], row["hard"]) == pytest.approx((0.9, 0.6, 0.3))


def test_class_names_one_per_class_the_index_where_none_was_written():
    """The first name written for a class; a class whose name is missing, or a table without names,
    is named by its index as text ("2", not "2.0")."""
    per_class = pd.DataFrame({"dataset": ["d"] * 4 + ["e"], "class": [0, 1, 0, 2, 0],
                              "class_name": ["cat", "dog", "kitten", np.nan, "eel"]})
    names = G.class_names(per_class)
    assert list(names.itertuples(index=False, name=None)) == [("d", 0, "cat"), ("d", 1, "dog"), ("d", 2, "2"),
                                                              ("e", 0, "eel")]
    unnamed = G.class_names(per_class.drop(columns="class_name"))
    assert unnamed["class_name"].tolist() == ["0", "1", "2", "0"]


def test_held_out_groups_remove_the_regression_to_the_mean():
    """A method equal to ERM in distribution (both pure noise around the same per-class accuracy):
    ranked on the compared ERM runs it gains on hard classes and loses on easy ones; with each
    seed's groups ranked on the other seeds' ERM runs the two effects vanish (mean over 40 sets)."""
    rng = np.random.default_rng(0)
    same, held = [], []
    for _ in range(40):
        per_class = syn.noise_twin(rng, seeds=4)
        for out, per_run in ((same, G.run_group_accuracy(per_class, G.difficulty_table(per_class))),
                             (held, G.held_out_group_accuracy(per_class))):
            d = R.paired(per_run, "d", "twin", "erm", "hard")["diff"] - R.paired(per_run, "d", "twin", "erm", "easy")["diff"]
            out.append(d)
    assert np.mean(same) > 3.0  # points: hard − easy difference made by noise alone
    assert abs(np.mean(held)) < 1.0
    assert G.held_out_group_accuracy(per_class[per_class["seed"] == 0]).empty


# ----------------------------------------------------------------------------- the HTML page
def test_the_html_page_embeds_only_the_figures_under_the_report_folder(tmp_path):
    """A config string from a stranger that looks like an image link stays text in its code block;
    the report's own figure is embedded; a link out of the folder or to a missing file is an error."""
    import base64

    from mr2.results.html import report_html

    (tmp_path / "figures").mkdir()
    png = b"\x89PNG fake"
    (tmp_path / "figures" / "a.png").write_bytes(png)
    secret = tmp_path.parent / f"{tmp_path.name}_secret.txt"
    secret.write_text("do not embed")
    text = ("# Report\n\n![a](figures/a.png)\n\n## Configuration\n\n```yaml\n"
            f"data: {{root: '![x]({secret})'}}\n```\n")
    page = report_html(text, tmp_path)
    assert f"data:image/png;base64,{base64.b64encode(png).decode()}" in page
    assert f"![x]({secret})" in page and base64.b64encode(b"do not embed").decode() not in page
    with pytest.raises(ValueError, match="lies outside"):
        report_html(f"![x](../{secret.name})\n", tmp_path)
    with pytest.raises(FileNotFoundError, match="is missing"):
        report_html("![b](figures/b.png)\n", tmp_path)


def _report_of(t, tmp_path):
    """The report of synthetic tables ``t`` with the figures ``make_figures`` draws for them."""
    import matplotlib

    matplotlib.use("Agg")
    from mr2.results.figures.render import make_figures
    from mr2.results.report import write_report

    t = {**t, "groups": G.difficulty_table(t["per_class"])}
    made = make_figures(t, tmp_path / "figures")
    figures = {name: f"figures/{name}.png" for name in made}
    captions = Path(__file__).resolve().parents[1] / "workflow" / "report"
    return made, write_report(t, "| table |", figures, tmp_path / "report.md", captions, {"seeds": [0, 1, 2]})


def test_report_of_a_config_without_sweeps_or_regimes(tmp_path):
    """No placeholder and no caption for a comparison the run lacks, one line naming the config that
    runs it; the claim's figure leads, the premise's picture follows the findings; the options stated."""
    made, text = _report_of(syn.tables(), tmp_path)
    assert "sweeps" not in made and "regimes" not in made and not (tmp_path / "figures" / "sweeps.png").exists()
    assert "![sweeps]" not in text and "![regimes]" not in text and "Sensitivity to the mean margin" not in text
    missing = text[text.index("## Not in this run"):text.index("## Configuration")]
    assert "`config/sweeps.yaml`" in missing and "`config/regimes.yaml`" in missing
    assert missing.count("\n- ") == 2
    images = [line for line in text.splitlines() if line.startswith("![")]
    assert images[0] == "![claim_forest](figures/claim_forest.png)"
    findings_end = text.index("- MR² against ERM")
    assert text.index("![claim_forest]") < findings_end < text.index("![accuracy_vs_variability]") \
        < text.index("## More figures")
    assert images[1] == "![accuracy_vs_variability](figures/accuracy_vs_variability.png)"
    options = syn.MR2_OPTIONS
    assert (f"MR²: c̄ = {options['c_bar']:g}, λ = {options['lam']:g}, p = {options['p']:g}" in text)
    assert "$" not in text.split("## Configuration")[0]  # no raw TeX in text meant for reading


def test_report_with_a_sweep_shows_it_and_names_no_config_for_it(tmp_path):
    made, text = _report_of(syn.tables(sweeps=("c_bar=0.5", "c_bar=2.0")), tmp_path)
    assert "sweeps" in made and "![sweeps](figures/sweeps.png)" in text
    missing = text[text.index("## Not in this run"):text.index("## Configuration")]
    assert "`config/sweeps.yaml`" not in missing and "`config/regimes.yaml`" in missing


def test_the_words_a_finding_earns():
    """An interval containing 0 is "not shown" (never "does not hold"), one as wide as [−1, +1] is
    "uninformative"; a few significant classes of many are one of many comparisons."""
    assert S.correlation_verdict(0.1, 0.9) == "holds" and S.correlation_verdict(-0.9, -0.1) == "reversed"
    assert S.correlation_verdict(-0.3, 0.5) == "not shown"
    assert S.correlation_verdict(-1.0, 1.0) == "uninformative" and S.correlation_verdict(-0.97, 0.99) == "uninformative"
    assert S.correlation_verdict(math.nan, math.nan) == "undetermined"
    # an interval that reaches 0 contains it; one exactly UNINFORMATIVE_WIDTH wide is uninformative
    assert S.correlation_verdict(0.0, 0.5) == "not shown" and S.correlation_verdict(-0.5, 0.0) == "not shown"
    assert S.correlation_verdict(-0.95, 0.95) == "uninformative" and S.correlation_verdict(-0.9, 0.95) == "not shown"
    # 1 of 100 classes at the 95 % level is fewer than the 5 that chance gives: flagged; 40 of 100 are not
    assert "one of many comparisons" in S.one_of_many(1, 100) and "1 interval of 100" in S.one_of_many(1, 100)
    assert S.one_of_many(5, 100) is not None and S.one_of_many(6, 100) is None
    # two comparisons are already many; one, or none significant, is not
    assert "1 interval of 2" in S.one_of_many(1, 2) and S.one_of_many(1, 1) is None and S.one_of_many(0, 10) is None
    assert "one of many" in S.one_of_many(1, 10)  # 0.5 expected by chance: a single one is still flagged
    assert S.one_of_many(2, 10) is None and S.one_of_many(0, 10) is None and S.one_of_many(40, 100) is None


def test_the_html_page_shows_figures_at_one_scale(tmp_path):
    """Each figure's width on the page is its width in pixels (one CSS px per pixel of the PNG), whatever
    its size, in a box of its own that lets it shrink to MIN_FIGURE_SCALE of that and no further (the
    style shrinks one wider than the window: tests/test_report_page.py measures it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mr2.results.html import MIN_FIGURE_SCALE, report_html
    from mr2.results.style import FIGURE_DPI

    for name, inches in (("narrow", 3.0), ("wide", 12.0)):
        fig = plt.figure(figsize=(inches, 2.0))
        fig.savefig(tmp_path / f"{name}.png", dpi=FIGURE_DPI)
        plt.close(fig)
    page = report_html("![n](narrow.png)\n\n![w](wide.png)\n", tmp_path)
    figures = re.findall(r'<div class="figure"><img [^>]*width="(\d+)" style="min-width:(\d+)px"></div>', page)
    pixels = [round(3.0 * FIGURE_DPI), round(12.0 * FIGURE_DPI)]
    assert [int(w) for w, _ in figures] == pixels
    assert [int(least) for _, least in figures] == [math.ceil(MIN_FIGURE_SCALE * w) for w in pixels]


def cells(page: str) -> list[list[str]]:
    """The text of each row's cells of the first table of an HTML page: a line break as " / ", other
    tags dropped."""
    table = page[page.index("<table"):page.index("</table>")]
    text = lambda cell: re.sub(r"<[^>]+>", "", cell.replace("<br>", " / "))  # noqa: E731
    return [[text(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]


def test_the_html_page_puts_each_difference_under_its_mean(tmp_path):
    """A column "Δ X" that follows the column "X" is shown under it, in the same cell (half as many
    number columns); a "Δ" column after another column stays a column; intervals do not break."""
    from mr2.results.html import report_html

    text = ("| Method | All | Δ All | Hard | Δ Hard | Δ Easy |\n|---|---:|---:|---:|---:|---:|\n"
            "| erm | 46.1 ± 3.0 | reference | 19.5 ± 9.9 | reference | x |\n"
            "| mr2 | 47.8 ± 5.9 | +1.7 [-24.3, +27.8] | 27.5 ± 7.4 | +8.0 [95 % CI -14.2, +30.2; MDE 1.0] | y |\n")
    nbsp = "\u00a0"
    assert cells(report_html(text, tmp_path)) == [
        ["Method", "All / Δ All", "Hard / Δ Hard", "Δ Easy"],
        ["erm", "46.1 ± 3.0 / Δ reference", "19.5 ± 9.9 / Δ reference", "x"],
        ["mr2", f"47.8 ± 5.9 / Δ +1.7 [-24.3,{nbsp}+27.8]", "27.5 ± 7.4 / Δ +8.0 "
         f"[95{nbsp}%{nbsp}CI{nbsp}-14.2,{nbsp}+30.2;{nbsp}MDE{nbsp}1.0]", "y"]]


def test_the_html_page_puts_a_verdicts_detail_under_its_word(tmp_path):
    """A cell that opens with a bold word shows the rest on a line of its own under it; a bold word
    alone, or one after other text, stays as it is; a table that is not well-formed stays as Markdown
    rendered it."""
    from mr2.results.html import fit_table, report_html

    text = ("| Setting | Hard | Ablations | Baselines | Other |\n|---|---|---|---|---|\n"
            "| fm | **higher** +0.3 [-0.1, +0.7] | **lower** `a` -4.0 [-19.9, +11.9]; `b` -1 | **not run** "
            "| see **this** |\n")
    page = report_html(text, tmp_path)
    assert cells(page)[1] == ["fm", "higher / +0.3 [-0.1,\u00a0+0.7]", "lower / a -4.0 [-19.9,\u00a0+11.9]; b -1",
                              "not run", "see this"]
    assert "<td><strong>higher</strong><br><small>+0.3" in page
    broken = "<table><tr><td>a<br>b</td></tr></table>"  # <br> unclosed: not XML
    assert fit_table(broken) == broken


def test_markdown_cells_at_another_precision_and_reference(tmp_path):
    """``digits`` reaches every cell (means, differences) and a one-seed pair still says its seed
    count; write_results_table passes its options on to the Markdown; a missing mean reads n/a."""
    row = {"dataset": "d", "variant": "default", "hard_mean": 70.125, "hard_std": 0.25}
    table = pd.DataFrame([{**row, "method": "base", "n_seeds": 2, "n_paired": 0, "hard_diff": math.nan,
                           "hard_diff_lo": math.nan, "hard_diff_hi": math.nan},
                          {**row, "method": "mr2", "n_seeds": 1, "n_paired": 1, "hard_diff": 0.5,
                           "hard_diff_lo": math.nan, "hard_diff_hi": math.nan}])
    R.write_results_table(table, tmp_path / "r.csv", tmp_path / "r.md", reference="base", digits=2)
    lines = (tmp_path / "r.md").read_text().splitlines()
    assert lines[2] == "| d | base | default | 2 | 70.12 ± 0.25 | reference |"  # 70.125 rounds half to even
    assert lines[3] == "| d | mr2 | default | 1 | 70.12 ± 0.25 | +0.50 [no CI: 1 seed] |"
    assert "Δ: difference to base (default)" in lines[5]
    assert R.format_mean_std(math.nan, 0.5) == "n/a" and R.format_mean_std(71.84, math.nan) == "71.8 (1 seed)"


def png_bytes(width: int, signature: bytes = b"\x89PNG\r\n\x1a\n", chunk: bytes = b"IHDR", tail: int = 9) -> bytes:
    """A PNG's first bytes written by hand: signature, IHDR length, type, width and height (big-endian)."""
    return signature + (13).to_bytes(4, "big") + chunk + width.to_bytes(4, "big") + (7).to_bytes(4, "big") + bytes(tail)


def test_png_width_reads_the_ihdr_chunk_and_refuses_what_is_not_a_png():
    from mr2.results.html import png_width

    wide = 0x01020304  # every byte of the width differs: the order and all four bytes count
    assert png_width(png_bytes(wide)) == 16909060
    assert png_width(png_bytes(640, tail=0)) == 640  # 24 bytes: exactly signature, length, type, width, height
    assert png_width(png_bytes(640)[:23]) is None  # cut short of the height
    assert png_width(png_bytes(640, chunk=b"IDAT")) is None  # a PNG whose first chunk is not its header
    assert png_width(png_bytes(640, signature=b"\x89PNG\r\n\x1a\x00")) is None  # IHDR in place, signature not
    assert png_width(b"") is None


def test_the_html_page_has_its_title_and_leaves_a_non_png_image_without_a_width(tmp_path):
    from mr2.results.html import report_html, write_report_html

    data = b"GIF89a not a png at all, but long enough to have 24 bytes"
    (tmp_path / "f.png").write_bytes(data)
    page = report_html("# R\n\n![f](f.png)\n", tmp_path)
    assert "<title>MR² replication report</title>" in page
    assert re.findall(r"<img [^>]*>", page) == [f'<img alt="f" src="data:image/png;base64,{base64.b64encode(data).decode()}" />']
    write_report_html("# R\n\n![f](f.png)\n", tmp_path, tmp_path / "out" / "r.html")
    assert (tmp_path / "out" / "r.html").read_text(encoding="utf-8") == page


# ----------------------------------------------------------------------------- pairing by seed, the claim's parts
def test_paired_differences_pair_runs_by_seed_when_the_seed_sets_differ():
    """MR² ran seeds 0, 1, 2, 3 and ERM seeds 1, 2, 3, 5, listed in shuffled order; every seed
    shifts both methods' accuracies alike, so only pairing by seed (1, 2, 3) recovers the effect."""
    t = syn.tables(methods=("erm", "mr2"), seeds=(0, 1, 2, 3, 5), noise=0.002)
    shift = lambda f: f.assign(accuracy=f["accuracy"] - 0.1 + 0.04 * f["seed"])  # noqa: E731
    pc = shift(t["per_class"])
    keep = ((pc["method"] == "mr2") & (pc["seed"] != 5)) | ((pc["method"] == "erm") & (pc["seed"] != 0))
    pc = pc[keep].sample(frac=1.0, random_state=3).reset_index(drop=True)
    runs = t["runs"].assign(top1=t["runs"]["top1"] - 0.1 + 0.04 * t["runs"]["seed"])
    runs = runs[((runs["method"] == "mr2") & (runs["seed"] != 5)) | ((runs["method"] == "erm") & (runs["seed"] != 0))]
    runs = runs.sample(frac=1.0, random_state=4).reset_index(drop=True)
    groups = G.difficulty_table(pc)
    table = R.results_table(pc, runs, groups)
    row = table[table["method"] == "mr2"].iloc[0]
    mine, ref = by_hand(pc, "toy", "mr2", "default", syn.HARD), by_hand(pc, "toy", "erm", "default", syn.HARD)
    d = np.array([mine[s] - ref[s] for s in (1, 2, 3)])
    lo, hi = stats.t.interval(0.95, 2, loc=d.mean(), scale=stats.sem(d))
    assert row["n_paired"] == 3 and row["n_seeds"] == 4
    assert row["hard_diff"] == pytest.approx(d.mean()) and (row["hard_diff_lo"], row["hard_diff_hi"]) == pytest.approx((lo, hi))
    assert row["hard_diff"] == pytest.approx(100 * syn.EFFECT["mr2"], abs=1.0)  # the effect, not a seed shift
    top1 = {m: runs[runs["method"] == m].set_index("seed")["top1"] for m in ("mr2", "erm")}
    assert row["top1_diff"] == pytest.approx(100 * np.mean([top1["mr2"][s] - top1["erm"][s] for s in (1, 2, 3)]))
    per_run = R.per_run_metrics(pc, runs, groups)
    assert R.paired(per_run, "toy", "mr2", "erm", "hard")["diff"] == pytest.approx(d.mean())


def test_the_claim_is_supported_only_when_every_part_holds():
    from itertools import product

    from mr2.results.report import claim_sentence, part_readings

    words = ("supported", "contradicted", "equivalent", "not shown", "underpowered")
    for hard, easy, overall in product(words, repeat=3):
        text = claim_sentence({"eligible": True, "reason": "", "hard_up": hard, "easy_not_down": easy,
                               "overall_up": overall})
        supported = hard == easy == overall == "supported"
        assert text.startswith("**supported**") == supported, (hard, easy, overall)
        assert text.startswith("**not supported**") == (not supported)
    # a method the table does not judge: overall is top-1 where the run has it, else the mean per-class accuracy
    assert "overall up supported" in part_readings({"hard": "higher", "easy": "higher", "top1": "higher", "all": "lower"})
    assert "overall up contradicted" in part_readings({"hard": "higher", "easy": "higher", "all": "lower"})


def test_a_run_where_mr2_lowers_the_easy_classes_is_not_called_supported():
    t = syn.tables(methods=("erm", "mr2"), noise=0.002, seeds=TEN)
    assert "**supported**" in claim_line(findings_text(t))
    pc = t["per_class"].copy()
    mr2 = pc["method"] == "mr2"
    pc.loc[mr2 & pc["class"].isin(syn.EASY), "accuracy"] -= 0.03  # easy classes lower ...
    pc.loc[mr2 & pc["class"].isin(syn.HARD), "accuracy"] += 0.03  # ... hard classes and overall still higher
    runs = t["runs"].copy()
    runs.loc[runs["method"] == "mr2", "top1"] += 0.02
    text = findings_text({**t, "per_class": pc, "runs": runs})
    assert "easy classes -" in text and "(lower)" in text
    assert "**not supported**" in claim_line(text)
