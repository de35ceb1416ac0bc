"""Every verdict number recomputed from a snapshot's per-seed evidence, independently of the code that
wrote it: the per-class accuracies of each run (``per_class.csv``) and the groups (``groups.csv``) give
each run's group accuracy, each paired difference, its 95 % t-interval, the two one-sided tests' 90 %
interval, the paired t-test's p-value and Holm's adjustment, here with numpy and scipy only."""

import re
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
    for _, family in comparisons[comparisons["kind"].isin(["ablation", "control", "baseline"])].groupby(
            ["dataset", "kind", "metric"]):
        family = family[family["p_value"].notna()]  # one seed: no test, no family member
        p = family["p_value"].to_numpy()
        order = np.argsort(p)
        adjusted = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
        assert family["p_holm"].to_numpy()[order] == pytest.approx(adjusted)


def test_every_pipeline_snapshot_keeps_the_per_seed_tables_its_numbers_come_from():
    """A snapshot of a config's run (one with a results table) keeps every run's per-class accuracy and
    the premise's per-class statistics (a_k, gamma_k, squared mean norm, spread), so the tests above
    recompute all of them; none is exempt."""
    snapshots = [p for p in (ROOT / "docs" / "results").iterdir() if (p / "results.csv").is_file()]
    assert len(snapshots) >= 15
    for folder in snapshots:
        missing = [n for n in ("per_class.csv", "groups.csv", "comparisons.csv") if not (folder / n).is_file()]
        assert not missing, f"{folder.name} lacks {missing}"
        per_class = pd.read_csv(folder / "per_class.csv")
        assert {"seed", "accuracy", "gamma", "a", "mean_sq_norm", "spread"} <= set(per_class.columns), folder.name
        results = pd.read_csv(folder / "results.csv")
        assert set(results.groupby(["dataset", "method", "variant"]).groups) == \
            set(per_class.groupby(["dataset", "method", "variant"]).groups), folder.name


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


LONGTAIL = [p for p in SNAPSHOTS if (p / "excerpt.md").is_file()
            and "Training counts n_k by class" in (p / "excerpt.md").read_text()]


def shot_cells(per_class, counts):
    """Per run: many/medium/few-shot and balanced accuracy (percent), the groups from the training
    counts n_k as the excerpt lists them (many: n_k > n_max/5, few: n_k < n_max/25)."""
    n = pd.Series(counts, dtype=float)
    shot = np.where(n > n.max() / 5, "many", np.where(n < n.max() / 25, "few", "medium"))
    frame = per_class.assign(shot=per_class["class"].map(dict(enumerate(shot))))
    keys = ["method", "variant", "seed"]
    out = frame.pivot_table(index=keys, columns="shot", values="accuracy", aggfunc="mean")
    out["balanced"] = frame.groupby(keys)["accuracy"].mean()
    return out[["many", "medium", "few", "balanced"]] * 100


def mean_sd(values):
    return f"{values.mean():.1f} ± {values.std(ddof=1):.1f}"


def paired_cell(d):
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return f"{d.mean():+.1f} [{d.mean() - half:+.1f}, {d.mean() + half:+.1f}]"


@pytest.mark.parametrize("folder", LONGTAIL, ids=[p.name for p in LONGTAIL])
def test_every_few_shot_number_of_a_long_tail_excerpt_is_recomputed_from_its_per_seed_table(folder):
    """Each cell of the excerpt's many/medium/few-shot table (mean ± sd over seeds, and the paired Δ
    to ERM with its 95 % t-interval) from per_class.csv and the training counts the excerpt states."""
    per_class = pd.read_csv(folder / "per_class.csv")
    text = (folder / "excerpt.md").read_text()
    blocks = re.findall(r"^\*\*([^*\n]+)\*\*\n\nTraining counts n_k by class: ([\d, ]+);.*?\n\n((?:\|.*\n?)+)",
                        text, flags=re.M)
    assert blocks and {b[0] for b in blocks} == set(per_class["dataset"])
    checked = 0
    for dataset, counts, table in blocks:
        runs = shot_cells(per_class[per_class["dataset"] == dataset], [int(c) for c in counts.split(",")])
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.strip().splitlines()[2:]]
        assert {r[0] for r in rows} == set(runs.index.get_level_values("method"))
        erm = runs.loc[("erm", "default")]
        for method, seeds, *cells in rows:
            mine = runs.loc[(method, "default")]
            assert int(seeds) == len(mine)
            expected = [mean_sd(mine[m]) for m in mine.columns]
            expected += (["reference"] * 4 if method == "erm" else
                         [paired_cell((mine[m] - erm[m]).dropna().to_numpy()) for m in mine.columns])
            assert cells == expected, (dataset, method)
            checked += 1
    assert checked >= 2
