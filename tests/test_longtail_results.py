"""The long-tail section of the report: many/medium/few-shot groups by training count, balanced
accuracy and the generated positive-control sentence, against numbers computed here by hand."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mr2.results.groups import difficulty_table
from mr2.common.runs import RUN_KEYS
from mr2.results.longtail import longtail_markdown, longtail_section, positive_control, shot_accuracy, shot_groups
from mr2.results.report import write_report

K, SEEDS = 10, (0, 1, 2)
COUNTS = [900, 539, 323, 193, 116, 69, 41, 25, 15, 9]  # Fashion-MNIST-LT: n_max 900, ratio 100
FEW = [7, 8, 9]  # n_k < 900/25 = 36
MANY = [0, 1, 2, 3]  # n_k > 900/5 = 180
BASE = np.linspace(0.95, 0.30, K)


def tables(effects, imbalanced=True, drw=True, noise=0.01):
    """per_class and runs tables like ``mr2.results.aggregate``'s: ERM's accuracy BASE, each other
    method BASE + its per-class effect, seeds adding noise."""
    rng = np.random.default_rng(0)
    per_class, runs = [], []
    for method, eff in {"erm": np.zeros(K), **effects}.items():
        for seed in SEEDS:
            acc = np.clip(BASE + eff + rng.normal(0, noise, K), 0, 1)
            per_class.append(pd.DataFrame({"dataset": "fmlt", "method": method, "variant": "default", "seed": seed,
                                           "class": np.arange(K), "n_train": np.array(COUNTS, dtype=float),
                                           "accuracy": acc}))
            row = {"dataset": "fmlt", "method": method, "variant": "default", "seed": seed, "top1": acc.mean()}
            if imbalanced:
                row["config.data.imbalance.ratio"] = 100.0
            else:
                row["config.data.imbalance"] = np.nan
            row["config.method.options.drw_epoch"] = 16 if (method == "ldam" and drw) else np.nan
            runs.append(row)
    return pd.concat(per_class, ignore_index=True), pd.DataFrame(runs)


def few_effect(size):
    return np.where(np.isin(np.arange(K), FEW), size, 0.0)


def run_rows(method, seeds, dataset="d", variant="default", **metrics):
    """per_run rows (``shot_accuracy``'s shape) of one method: a row per seed, each metric a list over the seeds."""
    return pd.DataFrame({"dataset": dataset, "method": method, "variant": variant, "seed": list(seeds), **metrics})


# per_run of hand-picked fractions: paired differences in points of 10/12/14 (mean 12, sd 2) and 3/4/5 etc.;
# the 95 % t half-width with 3 seeds is t(0.975, 2) · sd / √3 = 4.303 · sd / 1.732 = 2.484 · sd
ERM = run_rows("erm", SEEDS, many=[.60, .70, .80], medium=[.50, .60, .70], few=[.30, .40, .50],
               balanced=[.45, .55, .65])
LDAM_RUNS = pd.DataFrame({"dataset": ["d", "d"], "method": ["erm", "ldam"],
                          "config.method.options.drw_epoch": [np.nan, 16.0]})


def test_shot_groups_are_the_literatures_thresholds_at_cifar_scale_and_scale_with_n_max():
    cifar = pd.Series([500, 150, 101, 100, 50, 20, 19, 5], dtype=float)
    assert shot_groups(cifar).tolist() == ["many"] * 3 + ["medium"] * 3 + ["few"] * 2
    fm = pd.Series(COUNTS, dtype=float)
    groups = shot_groups(fm)
    assert [i for i in range(K) if groups[i] == "few"] == FEW and [i for i in range(K) if groups[i] == "many"] == MANY
    absolute = shot_groups(fm, many=100, few=20)  # the literature's absolute thresholds, when asked for
    assert (absolute == "many").sum() == 5 and (absolute == "few").sum() == 2


def test_shot_accuracy_matches_a_hand_computation():
    per_class, _ = tables({"logit_adjust": few_effect(0.2)})
    got = shot_accuracy(per_class).set_index(["method", "seed"])
    for (method, seed), frame in per_class.groupby(["method", "seed"]):
        acc = frame.sort_values("class")["accuracy"].to_numpy()
        assert got.loc[(method, seed), "few"] == pytest.approx(acc[FEW].mean())
        assert got.loc[(method, seed), "many"] == pytest.approx(acc[MANY].mean())
        assert got.loc[(method, seed), "medium"] == pytest.approx(acc[[4, 5, 6]].mean())
        assert got.loc[(method, seed), "balanced"] == pytest.approx(acc.mean())


@pytest.mark.parametrize("la, ldam, word", [
    (0.2, 0.15, "reproduced"),
    (0.2, 0.0, "partly reproduced"),
    (0.0, -0.1, "not reproduced"),
])
def test_positive_control_sentence_follows_the_paired_differences(la, ldam, word):
    per_class, runs = tables({"logit_adjust": few_effect(la), "ldam": few_effect(ldam)})
    text = "\n".join(longtail_section(per_class, runs))
    line = next(line for line in text.splitlines() if line.startswith("- Positive control"))
    assert f"— **{word}**" in line and "LDAM-DRW" in line and "logit adjustment" in line
    # the paired few-shot difference of logit adjustment, computed here
    pc = per_class.set_index(["method", "seed", "class"])["accuracy"].sort_index()
    d = np.array([(pc.loc[("logit_adjust", s)].to_numpy()[FEW].mean() - pc.loc[("erm", s)].to_numpy()[FEW].mean())
                  * 100 for s in SEEDS])
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert f"few-shot {d.mean():+.1f} points [95 % CI {d.mean() - half:+.1f}, {d.mean() + half:+.1f}]" in line
    assert f"| {d.mean():+.1f} [{d.mean() - half:+.1f}, {d.mean() + half:+.1f}] |" in text  # and in the table


def test_ldam_without_drw_is_named_so():
    per_class, runs = tables({"logit_adjust": few_effect(0.2), "ldam": few_effect(0.2)}, drw=False)
    assert "LDAM (without DRW)" in "\n".join(longtail_section(per_class, runs))


def test_section_only_for_long_tailed_runs_and_in_the_report(tmp_path):
    per_class, runs = tables({"logit_adjust": few_effect(0.2)}, imbalanced=False)
    assert longtail_section(per_class, runs) == []
    per_class, runs = tables({"logit_adjust": few_effect(0.2), "ldam": few_effect(0.2)})
    per_class = per_class.assign(a=1.0 + 0.1 * per_class["class"])  # a_k: the premise's picture has data
    t = {"per_class": per_class, "runs": runs, "groups": difficulty_table(per_class)}
    captions = Path(__file__).resolve().parents[1] / "workflow" / "report"
    figures = {"accuracy_vs_variability": "figures/accuracy_vs_variability.png"}
    text = write_report(t, "| table |", figures, tmp_path / "report.md", captions, {"seeds": list(SEEDS)})
    assert text.index("## What we find") < text.index("## Long-tailed data") < text.index("## Configuration")
    # the premise's picture is a subsection of the findings, not of the long-tail section after them
    assert text.index("## What we find") < text.index("(figures/accuracy_vs_variability.png)") < text.index(
        "## Long-tailed data")
    assert "many-shot n_k > 180, few-shot n_k < 36 (4 many-shot, 3 medium-shot, 3 few-shot)" in text


def test_report_gives_its_reference_to_the_long_tail_section(tmp_path):
    """With another reference than ERM, the report's long-tail section is the one longtail_section
    writes for that reference, word for word."""
    per_class, runs = tables({"logit_adjust": few_effect(0.2), "ldam": few_effect(0.2)})
    per_class["method"], runs["method"] = (frame["method"].replace({"erm": "base"}) for frame in (per_class, runs))
    t = {"per_class": per_class, "runs": runs, "groups": difficulty_table(per_class, reference="base")}
    captions = Path(__file__).resolve().parents[1] / "workflow" / "report"
    text = write_report(t, "| table |", {}, tmp_path / "report.md", captions, {"seeds": list(SEEDS)},
                        reference="base")
    section = longtail_section(per_class, runs, "base")
    assert any("paired by seed against BASE" in line for line in section)
    assert "\n".join(section) in text


def test_shot_groups_keep_the_class_labels_as_index():
    """class -> group, indexed by the class labels (not their positions), the Series named ``shot``."""
    counts = pd.Series([5.0, 500.0, 100.0, 101.0], index=["eel", "cat", "dog", "fox"])
    expected = pd.Series(["few", "many", "medium", "many"], index=counts.index, name="shot")
    pd.testing.assert_series_equal(shot_groups(counts), expected, check_dtype=False)


def test_shot_accuracy_groups_each_dataset_by_its_own_counts_and_keeps_their_order():
    """Two datasets (the second first in the input's order, string class labels, no medium-shot
    class): rows in the input's order with a fresh 0..n-1 index, columns RUN_KEYS + many/medium/few/
    balanced, medium NaN where no class is medium-shot; absolute thresholds reach the groups."""
    fm, _ = tables({})
    fm = fm[fm["seed"] == 0].assign(dataset="b")
    small = pd.DataFrame({"dataset": "a", "method": "erm", "variant": "default", "seed": 0,
                          "class": ["x", "y", "z"], "n_train": [100.0, 90.0, 3.0], "accuracy": [0.9, 0.8, 0.2]})
    got = shot_accuracy(pd.concat([fm, small], ignore_index=True))
    assert list(got.columns) == RUN_KEYS + ["many", "medium", "few", "balanced"]
    assert got["dataset"].tolist() == ["b", "a"] and got.index.tolist() == [0, 1]
    acc = fm["accuracy"].to_numpy()
    assert got.loc[0, "many"] == pytest.approx(acc[MANY].mean()) and got.loc[0, "few"] == pytest.approx(acc[FEW].mean())
    # n_max 100: many > 20 (x, y), few < 4 (z), no medium-shot class
    assert got.loc[1, "many"] == pytest.approx(0.85) and got.loc[1, "few"] == pytest.approx(0.2)
    assert np.isnan(got.loc[1, "medium"]) and got.loc[1, "balanced"] == pytest.approx(1.9 / 3)
    # the literature's absolute thresholds: many > 100 (classes 0-4), few < 20 (classes 8, 9)
    absolute = shot_accuracy(fm, many=100, few=20).iloc[0]
    assert absolute["many"] == pytest.approx(acc[:5].mean()) and absolute["few"] == pytest.approx(acc[8:].mean())
    assert absolute["medium"] == pytest.approx(acc[5:8].mean())


def test_shot_accuracy_of_no_classes_is_an_empty_table_with_the_columns():
    per_class, _ = tables({})
    got = shot_accuracy(per_class.iloc[:0])
    assert got.empty and list(got.columns) == RUN_KEYS + ["many", "medium", "few", "balanced"]


def test_counts_line_lists_the_counts_thresholds_and_group_sizes():
    """The counts line, exactly: n_max/5 and n_max/25 by default, the absolute thresholds when given."""
    per_class, runs = tables({"logit_adjust": few_effect(0.2)})
    prefix = "Training counts n_k by class: 900, 539, 323, 193, 116, 69, 41, 25, 15, 9; "
    assert prefix + "many-shot n_k > 180, few-shot n_k < 36 (4 many-shot, 3 medium-shot, 3 few-shot)." in (
        longtail_section(per_class, runs))
    assert prefix + "many-shot n_k > 100, few-shot n_k < 20 (5 many-shot, 3 medium-shot, 2 few-shot)." in (
        longtail_section(per_class, runs, many=100, few=20))


def test_longtail_markdown_table_by_hand():
    """The whole table: methods in order of appearance, only the dataset's default variants, percent
    mean ± sd (n − 1), the reference's Δ cells, n/a without a shared seed, no CI with one."""
    per_run = pd.concat([
        ERM,
        run_rows("logit_adjust", SEEDS, many=[.70, .82, .94], medium=[.60, .72, .84], few=[.40, .52, .64],
                 balanced=[.55, .67, .79]),  # ERM + 10/12/14 points: mean +12.0, half-width 2.484 · 2 = 4.97
        run_rows("logit_adjust", [0], variant="tuned", many=[.99], medium=[.99], few=[.99], balanced=[.99]),
        run_rows("ldam", [0], many=[.65], medium=[.55], few=[.35], balanced=[.50]),  # ERM's seed 0 + 5 points
        run_rows("focal", [7], many=[.50], medium=[.40], few=[.20], balanced=[.35]),  # no seed shared with ERM
        run_rows("erm", [0], dataset="other", many=[.1], medium=[.1], few=[.1], balanced=[.1]),
        run_rows("cb", [0], dataset="other", many=[.1], medium=[.1], few=[.1], balanced=[.1]),
    ], ignore_index=True)
    la = " | ".join(["+12.0 [+7.0, +17.0]"] * 4)
    assert longtail_markdown(per_run, "d", "erm") == [
        "| Method | Seeds | Many-shot | Medium-shot | Few-shot | Balanced acc. "
        "| Δ Many-shot | Δ Medium-shot | Δ Few-shot | Δ Balanced acc. |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| erm | 3 | 70.0 ± 10.0 | 60.0 ± 10.0 | 40.0 ± 10.0 | 55.0 ± 10.0 | " + " | ".join(["reference"] * 4) + " |",
        f"| logit_adjust | 3 | 82.0 ± 12.0 | 72.0 ± 12.0 | 52.0 ± 12.0 | 67.0 ± 12.0 | {la} |",
        "| ldam | 1 | 65.0 (1 seed) | 55.0 (1 seed) | 35.0 (1 seed) | 50.0 (1 seed) | "
        + " | ".join(["+5.0 [no CI: 1 seed]"] * 4) + " |",
        "| focal | 1 | 50.0 (1 seed) | 40.0 (1 seed) | 20.0 (1 seed) | 35.0 (1 seed) | "
        + " | ".join(["n/a"] * 4) + " |",
    ]


def test_positive_control_sentence_by_hand():
    """The whole sentence: logit adjustment higher on both (few 10/12/14 → +12.0 [+7.0, +17.0],
    balanced 3/4/5 → +4.0 [+1.5, +6.5]), LDAM-DRW higher on few-shot only (4/6/8 → +6.0 [+1.0,
    +11.0]; 1/2/3 → +2.0 [-0.5, +4.5]): partly reproduced."""
    per_run = pd.concat([
        ERM,
        run_rows("logit_adjust", SEEDS, few=[.40, .52, .64], balanced=[.48, .59, .70]),
        run_rows("ldam", SEEDS, few=[.34, .46, .58], balanced=[.46, .57, .68]),
    ], ignore_index=True)
    assert positive_control(per_run, LDAM_RUNS, "d", "erm") == (
        "- Positive control: logit adjustment and LDAM-DRW raise the few-shot classes and the balanced accuracy "
        "over ERM — **partly reproduced** (paired by seed; logit adjustment: few-shot +12.0 points "
        "[95 % CI +7.0, +17.0] (higher), balanced accuracy +4.0 points [95 % CI +1.5, +6.5] (higher); LDAM-DRW: "
        "few-shot +6.0 points [95 % CI +1.0, +11.0] (higher), balanced accuracy +2.0 points [95 % CI -0.5, +4.5] "
        "(no clear difference)).")


def test_positive_control_undetermined_without_enough_shared_seeds():
    """No seed shared with the reference, for either control; then one shared seed each (no
    interval; runs without the drw_epoch column are LDAM without DRW): undetermined both times."""
    head = "- Positive control: logit adjustment and {} raise the few-shot classes and the balanced accuracy over ERM"
    word = " — **undetermined (too few paired seeds)** (paired by seed; "
    unshared = pd.concat([ERM, run_rows("logit_adjust", [5, 6], few=[.9, .9], balanced=[.9, .9]),
                          run_rows("ldam", [7], few=[.9], balanced=[.9])], ignore_index=True)
    assert positive_control(unshared, LDAM_RUNS, "d", "erm") == head.format("LDAM-DRW") + word + (
        "logit adjustment: no seed shared with ERM; LDAM-DRW: no seed shared with ERM).")
    one = pd.concat([ERM, run_rows("logit_adjust", [0], few=[.40], balanced=[.48]),
                     run_rows("ldam", [0], few=[.34], balanced=[.46])], ignore_index=True)
    why = "(no interval) (undetermined (too few seeds for an interval))"
    assert positive_control(one, LDAM_RUNS.drop(columns="config.method.options.drw_epoch"), "d", "erm") == (
        head.format("LDAM (without DRW)") + word + f"logit adjustment: few-shot +10.0 points {why}, balanced accuracy "
        f"+3.0 points {why}; LDAM (without DRW): few-shot +4.0 points {why}, balanced accuracy +1.0 points {why}).")


def test_no_positive_control_without_the_reference_or_a_control():
    la = run_rows("logit_adjust", SEEDS, few=[.40, .52, .64], balanced=[.48, .59, .70])
    assert positive_control(pd.concat([ERM, run_rows("focal", SEEDS, few=[.5] * 3, balanced=[.5] * 3)]),
                            LDAM_RUNS, "d", "erm") is None
    assert positive_control(la, LDAM_RUNS, "d", "erm") is None
