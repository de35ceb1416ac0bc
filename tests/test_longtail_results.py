"""The long-tail section of the report: many/medium/few-shot groups by training count, balanced
accuracy and the generated positive-control sentence, against numbers computed here by hand."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mr2.results.groups import difficulty_table
from mr2.results.longtail import longtail_section, shot_accuracy, shot_groups
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
    t = {"per_class": per_class, "runs": runs, "groups": difficulty_table(per_class)}
    captions = Path(__file__).resolve().parents[1] / "workflow" / "report"
    figures = {"accuracy_vs_variability": "figures/accuracy_vs_variability.png"}
    text = write_report(t, "| table |", figures, tmp_path / "report.md", captions, {"seeds": list(SEEDS)})
    assert text.index("## What we find") < text.index("## Long-tailed data") < text.index("## Configuration")
    # the premise's picture is a subsection of the findings, not of the long-tail section after them
    assert text.index("## What we find") < text.index("(figures/accuracy_vs_variability.png)") < text.index(
        "## Long-tailed data")
    assert "many-shot n_k > 180, few-shot n_k < 36 (4 many-shot, 3 medium-shot, 3 few-shot)" in text
