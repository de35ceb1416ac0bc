"""Every verdict number recomputed from a snapshot's per-seed evidence, independently of the code that
wrote it: the per-class accuracies of each run (``per_class.csv``) and the groups (``groups.csv``) give
each run's group accuracy, each paired difference, its 95 % t-interval, the two one-sided tests' 90 %
interval, the paired t-test's p-value and Holm's adjustment, here with numpy and scipy only."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = sorted(p for p in (ROOT / "docs" / "results").iterdir()
                   if (p / "per_class.csv").is_file() and (p / "comparisons.csv").is_file())


def group_accuracy(per_class, groups):
    """Per run: mean per-class accuracy of all classes and of each group (percent)."""
    frame = per_class.merge(groups, on=["dataset", "class"])
    keys = ["dataset", "method", "variant", "seed"]
    out = frame.groupby(keys)["accuracy"].agg(all="mean", worst="min")
    for g in ("easy", "medium", "hard"):
        out[g] = frame[frame["group"] == g].groupby(keys)["accuracy"].mean()
    return out * 100


@pytest.mark.parametrize("folder", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_every_comparison_of_a_snapshot_is_recomputed_from_its_per_seed_tables(folder):
    per_class = pd.read_csv(folder / "per_class.csv")
    groups = pd.read_csv(folder / "groups.csv")
    runs = group_accuracy(per_class, groups)
    comparisons = pd.read_csv(folder / "comparisons.csv")
    if comparisons.empty:  # only where nothing could be compared: one method per setting (an ERM-only check)
        results = pd.read_csv(folder / "results.csv")
        assert results.groupby("dataset")["method"].nunique().max() == 1
        return
    checked = 0
    for _, c in comparisons[comparisons["metric"].isin(["all", "easy", "medium", "hard", "worst"])].iterrows():
        a = runs.loc[(c["dataset"], c["method"], c["variant"])][c["metric"]]
        b = runs.loc[(c["dataset"], c["against"], c["against_variant"])][c["metric"]]
        d = (a - b).dropna().to_numpy()
        n = len(d)
        assert n == c["n_paired"]
        assert d.mean() == pytest.approx(c["diff"], abs=1e-9)
        if n < 2:
            continue
        se = d.std(ddof=1) / np.sqrt(n)
        assert c["diff_lo"] == pytest.approx(d.mean() - stats.t.ppf(0.975, n - 1) * se, abs=1e-9)
        assert c["eq_lo"] == pytest.approx(d.mean() - stats.t.ppf(0.95, n - 1) * se, abs=1e-9)
        assert c["eq_hi"] == pytest.approx(d.mean() + stats.t.ppf(0.95, n - 1) * se, abs=1e-9)
        if se > 0:
            assert c["p_value"] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-6)
        checked += 1
    assert checked > 0
    for _, family in comparisons[comparisons["kind"].isin(["ablation", "baseline"])].groupby(
            ["dataset", "kind", "metric"]):
        family = family[family["p_value"].notna()]  # one seed: no test, no family member
        p = family["p_value"].to_numpy()
        order = np.argsort(p)
        adjusted = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
        assert family["p_holm"].to_numpy()[order] == pytest.approx(adjusted)


def test_the_groups_of_a_snapshot_are_thirds_of_the_references_ranking():
    for folder in SNAPSHOTS:
        per_class = pd.read_csv(folder / "per_class.csv")
        groups = pd.read_csv(folder / "groups.csv")
        for dataset, g in groups.groupby("dataset"):
            ref = per_class[(per_class["dataset"] == dataset) & (per_class["method"] == "erm")
                            & (per_class["variant"] == "default")]
            mean = ref.groupby("class")["accuracy"].mean().sort_values(kind="stable")
            hard = set(g.loc[g["group"] == "hard", "class"])
            assert hard == set(mean.index[:len(hard)]) and len(hard) >= len(mean) // 3


@pytest.mark.parametrize("folder", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_every_mean_and_sd_of_a_snapshot_is_recomputed_from_its_per_seed_tables(folder):
    """The results table's mean ± sd over seeds of each method on all classes, each group and the worst
    class (what the pages quote, e.g. a convergence check's accuracies)."""
    runs = group_accuracy(pd.read_csv(folder / "per_class.csv"), pd.read_csv(folder / "groups.csv"))
    results = pd.read_csv(folder / "results.csv")
    checked = 0
    for _, r in results.iterrows():
        seeds = runs.loc[(r["dataset"], r["method"], r["variant"])]
        assert len(seeds) == r["n_seeds"]
        for m in ("all", "easy", "medium", "hard", "worst"):
            assert seeds[m].mean() == pytest.approx(r[f"{m}_mean"], abs=1e-9), (r["method"], m)
            if len(seeds) > 1:
                assert seeds[m].std(ddof=1) == pytest.approx(r[f"{m}_std"], abs=1e-9), (r["method"], m)
            checked += 1
    assert checked > 0
