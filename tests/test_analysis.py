"""The premise analysis (mr2/results/premise_*.py): Spearman against scipy, seed intervals, a_k's
decomposition, the links on synthetic tables with a known answer and on the smoke outputs, the
exploratory MR² option (γ from the spread alone) and its pipeline cells."""

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import results_data as rd
from conftest import workdir_with_configs, run_snakemake
from mr2.results import premise_figures, premise_tables, premise_text, rules, statistics
from mr2.cli import main
from mr2.results.figures import sweeps
from mr2.results.figures.render import make_figures
from mr2.method.losses import MR2Loss, build_loss, resolve_options
from mr2.method.margins import optimal_margins
from mr2.results.groups import difficulty_table
from mr2.results.report import write_report
from mr2.results.tables import write_tables

CAPTIONS = Path(__file__).resolve().parents[1] / "workflow" / "report"


# ----------------------------------------------------------------------------- Spearman
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.floats(-5, 5, allow_nan=False)), min_size=3, max_size=25))
def test_spearman_matches_scipy_with_ties(pairs):
    x, y = (np.array(v, dtype=float) for v in zip(*pairs))
    ours = statistics.spearman(x, y)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-9)


def test_grouped_spearman_matches_scipy_per_group():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"g": np.repeat(["a", "b", "c"], 12), "x": rng.integers(0, 5, 36).astype(float),
                          "y": rng.normal(size=36)})
    frame.loc[frame["g"] == "b", "y"] = -frame.loc[frame["g"] == "b", "x"] ** 3  # perfect, with ties
    frame.loc[3, "y"] = np.nan  # non-finite pairs are left out
    out = statistics.grouped_spearman(frame, ["g"], "x", "y").set_index("g")
    for g, part in frame.dropna().groupby("g"):
        assert out.loc[g, "rho"] == pytest.approx(stats.spearmanr(part["x"], part["y"]).statistic, abs=1e-12)
        assert out.loc[g, "n"] == len(part)
    assert out.loc["b", "rho"] == pytest.approx(-1.0)


def test_spearman_is_undefined_for_constant_or_tiny_inputs():
    assert math.isnan(statistics.spearman([1, 2, 3, 4], [1.0, 1.0, 1.0, 1.0]))  # ERM's γ ≡ 1
    assert math.isnan(statistics.spearman([1, 2], [2, 1]))
    assert math.isnan(statistics.spearman([], []))  # no pairs at all
    assert math.isnan(statistics.spearman([1, np.nan, 3, np.inf], [1, 2, 3, 4]))  # two finite pairs left
    frame = pd.DataFrame({"g": [0, 0, 0, 1, 1, 1], "x": [1, 2, 3, 1, 2, 3], "y": [np.nan] * 3 + [3, 2, 1]})
    out = statistics.grouped_spearman(frame, ["g"], "x", "y")
    assert out["n"].tolist() == [0, 3] and math.isnan(out["rho"][0]) and out["rho"][1] == pytest.approx(-1)


def test_seed_interval_is_a_clipped_t_interval():
    v = [0.2, 0.5, 0.6, np.nan]
    iv = statistics.seed_interval(v)
    half = stats.t.ppf(0.975, 2) * np.std([0.2, 0.5, 0.6], ddof=1) / math.sqrt(3)
    assert iv["n"] == 3 and iv["mean"] == pytest.approx(13 / 30)
    assert (iv["lo"], iv["hi"]) == pytest.approx((13 / 30 - half, 13 / 30 + half))
    wide = statistics.seed_interval([0.9, -0.9, 0.8])
    assert (wide["lo"], wide["hi"]) == (-1.0, 1.0)
    one = statistics.seed_interval([0.4])
    assert one["mean"] == 0.4 and math.isnan(one["lo"]) and math.isnan(one["hi"])


@pytest.mark.parametrize("values", [[0.4, 0.4], [-0.7, -0.7, -0.7], [0.3, 0.5], [0.3, 0.5, 0.5, np.nan]],
                         ids=["two equal", "three equal", "two distinct", "two distinct of three"])
def test_fewer_than_three_distinct_rhos_are_undetermined_never_a_verdict(values):
    """Seeds that agree give an interval of zero width; two distinct values cannot show a spread
    either: no interval, and the link is undetermined, whatever the sign of ρ."""
    iv = statistics.seed_interval(values)
    assert iv["mean"] == pytest.approx(np.nanmean(values)) and math.isnan(iv["lo"]) and math.isnan(iv["hi"])
    row = {"n_defined": iv["n"], "rho_mean": iv["mean"], "rho_lo": iv["lo"], "rho_hi": iv["hi"]}
    assert premise_text.link_verdict(row) == "undetermined"
    assert "fewer than 3 distinct values" in premise_text.format_rho(row)
    flat = {**row, "rho_lo": -0.7, "rho_hi": -0.7}  # an interval of zero width read from a table
    assert premise_text.link_verdict(flat) == "undetermined"


def test_seed_interval_at_the_level_asked_and_values_equal_to_nine_digits_are_one():
    v = [0.2, 0.5, 0.6]
    iv = statistics.seed_interval(v, level=0.8)
    half = stats.t.ppf(0.9, 2) * np.std(v, ddof=1) / math.sqrt(3)
    assert (iv["lo"], iv["hi"]) == pytest.approx((13 / 30 - half, 13 / 30 + half))
    close = statistics.seed_interval([0.3, 0.3 + 2e-10, 0.3 + 4e-10])  # distinct only past the 9th digit
    assert close["n"] == 3 and math.isnan(close["lo"]) and math.isnan(close["hi"])


def test_no_interval_reason_in_words():
    assert statistics.no_interval_reason(1) == "no interval: 1 seed"
    assert statistics.no_interval_reason(2) == "no interval: 2 seeds, fewer than 3 distinct values"


def test_grouped_spearman_keeps_a_group_whose_key_is_missing():
    """A group keyed by NaN (a run without a variant, say) is a group of its own, not dropped."""
    frame = pd.DataFrame({"g": ["a"] * 4 + [np.nan] * 4, "x": [1, 2, 3, 4] * 2, "y": [1, 2, 4, 3, 4, 3, 2, 1]})
    out = statistics.grouped_spearman(frame, ["g"], "x", "y")
    assert out["n"].tolist() == [4, 4] and out["g"].isna().tolist() == [False, True]
    assert out["rho"].tolist() == pytest.approx([0.8, -1.0])


def test_a_paired_difference_of_zero_width_is_no_verdict():
    """Every seed the same difference (+1.0): an interval of zero width is no evidence of 'higher'."""
    d = statistics.paired_difference(np.array([0.6, 0.7]), np.array([0.5, 0.6]))
    assert d["diff_lo"] == pytest.approx(d["diff_hi"]) and d["diff"] == pytest.approx(0.1)
    assert statistics.verdict(d["diff"], d["diff_lo"], d["diff_hi"]).startswith("undetermined")
    assert statistics.verdict(0.1, 0.05, 0.15) == "higher"
    assert statistics.verdict(d["diff"], d["diff_lo"], d["diff_hi"]) == "undetermined (no spread between seeds)"
    # identical runs (every seed's difference exactly 0) are no difference, whatever the interval's width
    same = statistics.paired_difference(np.array([0.6, 0.7, 0.8]), np.array([0.6, 0.7, 0.8]))
    assert (same["diff"], same["diff_lo"], same["diff_hi"], same["mde"]) == (0.0, 0.0, 0.0, 0.0)
    assert rules.comparison_word(same["diff"], same["diff_lo"], same["diff_hi"], same["mde"]) == "no clear difference"


# ----------------------------------------------------------------------------- synthetic tables
def synthetic(seeds=rd.SEEDS, sweeps=("statistic=spread",)):
    """Tables with a known chain: a_k rises with ERM's error (link 1 holds, driven by the spread,
    ‖μ̂_k‖² is constant); MR²'s γ_k *falls* with error (link 2 reversed); the exploratory variant's
    γ_k rises with error (link 2 holds). Per-class gains of MR² are on the hard classes."""
    t = rd.tables(seeds=seeds, sweeps=sweeps)
    pc = t["per_class"]
    err = 1 - rd.BASE[pc["class"]]
    pc["mean_sq_norm"] = 2.0
    # results_data: 1 + 3(1 − BASE) + noise, rising with the error; one class out of rank in seeds 1
    # and 2 (by different amounts), so the seeds' ρ differ: an interval of nonzero width
    pc["spread"] = pc["a"] - pc["seed"].map({1: 0.5, 2: 1.2}).fillna(0.0) * (pc["class"] == 2)
    pc["a"] = pc["mean_sq_norm"] + pc["spread"]
    for p in (3, 5):
        pc[f"mean_sq_norm_p{p}"], pc[f"spread_p{p}"] = 1.0 + 0 * err, err * p
        pc[f"a_p{p}"] = pc[f"mean_sq_norm_p{p}"] + pc[f"spread_p{p}"]
    pc["gamma"] = 1.0
    mr2 = (pc["method"] == "mr2") & (pc["variant"] == "default")
    # one class out of rank, another in each seed: the seeds' ρ differ (an interval of nonzero width)
    bump = pc["seed"].map({1: 0.18, 2: 0.3}).fillna(0.0) * (pc["class"] == pc["seed"] + 1)
    pc.loc[mr2, "gamma"] = 1.5 - err[mr2] + 0.01 * pc.loc[mr2, "seed"] + bump[mr2]
    spread = (pc["method"] == "mr2") & (pc["variant"] == "statistic=spread")
    pc.loc[spread, "gamma"] = 0.5 + err[spread] + 0.01 * pc.loc[spread, "seed"] - bump[spread]
    t["groups"] = difficulty_table(pc)
    return t


@pytest.fixture(scope="module")
def result():
    return premise_tables.analyse(synthetic())


def row(summary, method, variant, x, y, source="final", epoch=None):
    found = premise_text.lookup(summary, "toy", method, variant, x, y, source, epoch)
    assert found is not None, (method, variant, x, y, source, epoch)
    return found


def test_lookup_picks_the_row_of_the_asked_epoch_and_source():
    """The final row (no epoch) and epochs 1 and 2 of one correlation, with a decoy of another
    variant: each lookup returns its own row, a missing epoch or source None."""
    keys = {"dataset": "toy", "method": "mr2", "x": "erm_error", "y": "a"}
    summary = pd.DataFrame([{**keys, "variant": "default", "source": "final", "epoch": None, "rho_mean": 0.1},
                            {**keys, "variant": "default", "source": "epoch", "epoch": 1, "rho_mean": 0.2},
                            {**keys, "variant": "default", "source": "epoch", "epoch": 2, "rho_mean": 0.3},
                            {**keys, "variant": "p=3", "source": "epoch", "epoch": 2, "rho_mean": 0.4}])
    summary["epoch"] = summary["epoch"].astype("Int64")

    def look(variant="default", **where):
        return premise_text.lookup(summary, "toy", "mr2", variant, "erm_error", "a", **where)

    assert look()["rho_mean"] == 0.1
    assert look(source="epoch", epoch=1)["rho_mean"] == 0.2 and look(source="epoch", epoch=2)["rho_mean"] == 0.3
    assert look(variant="p=3", source="epoch", epoch=2)["rho_mean"] == 0.4
    assert look(source="epoch", epoch=3) is None and look(source="final", epoch=1) is None
    assert look(source="epoch") is None  # epoch rows all have an epoch


def test_links_on_synthetic_tables(result):
    s = result["correlation_summary"]
    link1 = row(s, "erm", "default", "erm_error", "a")
    assert link1["rho_mean"] > 0.9 and premise_text.link_verdict(link1) == "holds" and link1["n_defined"] == 3
    assert row(s, "erm", "default", "erm_error", "a_p3")["rho_mean"] == pytest.approx(1.0)
    assert row(s, "erm", "default", "erm_error", "mean_sq_norm")["n_defined"] == 0  # constant: undefined
    assert row(s, "erm", "default", "erm_error", "gamma")["n_defined"] == 0
    assert premise_text.link_verdict(row(s, "mr2", "default", "erm_error", "gamma")) == "reversed"
    assert premise_text.link_verdict(row(s, "mr2", "statistic=spread", "erm_error", "gamma")) == "holds"
    # the per-epoch margins of results_data rise for the hard classes only
    epoch = row(s, "mr2", "default", "erm_error", "gamma", "epoch", 4)
    assert epoch["rho_mean"] > 0.5
    # gains of MR² sit on the hard classes (results_data.effect)
    assert row(s, "mr2", "default", "erm_error_other_seeds", "change")["rho_mean"] > 0.5
    assert not ((s["method"] == "erm") & (s["y"] == "change")).any()  # no change of the reference to itself


def test_per_seed_correlations_match_scipy(result):
    t = synthetic()
    pc = t["per_class"]
    diff = pc[pc["method"] == "erm"].groupby("class")["accuracy"].mean().rsub(1)
    corr = result["correlations"]
    for seed in rd.SEEDS:
        run = pc[(pc["method"] == "mr2") & (pc["variant"] == "default") & (pc["seed"] == seed)].set_index("class")
        want = stats.spearmanr(diff.loc[run.index], run["gamma"]).statistic
        got = corr[(corr["method"] == "mr2") & (corr["variant"] == "default") & (corr["seed"] == seed)
                   & (corr["source"] == "final") & (corr["x"] == "erm_error") & (corr["y"] == "gamma")]
        assert got["rho"].item() == pytest.approx(want)


def test_change_is_paired_by_seed(result):
    m = result["margins"]
    pc = synthetic()["per_class"].set_index(["method", "variant", "seed", "class"])["accuracy"]
    r = m[(m["method"] == "mr2_uniform") & (m["seed"] == 1) & (m["class"] == 6)].iloc[0]
    assert r["change"] == pytest.approx(pc[("mr2_uniform", "default", 1, 6)] - pc[("erm", "default", 1, 6)])
    assert m.loc[m["method"] == "erm", "change"].isna().all()


def test_the_gains_correlation_takes_erm_error_from_the_other_seeds(result):
    """ρ(ERM error, change): change holds this seed's ERM accuracy, so the error is ERM's mean over
    the other seeds; with the same seeds a method equal to ERM in distribution shows gains on the hard
    classes from noise alone (mean ρ over 30 sets of pure noise well above 0); held out it does not."""
    m = result["margins"]
    pc = synthetic()["per_class"]
    erm = pc[(pc["method"] == "erm") & (pc["class"] == 6)].set_index("seed")["accuracy"]
    r = m[(m["method"] == "mr2") & (m["variant"] == "default") & (m["seed"] == 1) & (m["class"] == 6)].iloc[0]
    assert r["erm_error_other_seeds"] == pytest.approx(1 - (erm[0] + erm[2]) / 2)
    rng = np.random.default_rng(0)
    same, held = [], []
    for _ in range(30):
        frame = rd.noise_twin(rng, seeds=3)
        margins = premise_tables.margins_table(frame, difficulty_table(frame))
        twin = margins[margins["method"] == "twin"]
        for out, x in ((same, "erm_error"), (held, "erm_error_other_seeds")):
            out.append(np.mean([stats.spearmanr(g[x], g["change"]).statistic for _, g in twin.groupby("seed")]))
    assert np.mean(same) > 0.2 and abs(np.mean(held)) < 0.1


def test_decomposition_sums_to_a(result):
    dec = result["decomposition"]
    assert set(dec["p"]) == {2, 3, 5}
    np.testing.assert_allclose(dec["mean_sq_norm"] + dec["spread"], dec["a"], rtol=1e-12)
    np.testing.assert_allclose(dec["mean_share"] + dec["spread_share"], 1.0, rtol=1e-12)
    summary = result["decomposition_summary"]
    assert summary["group"].notna().all() and (summary["n_seeds"] == 3).all()


def test_decomposition_rejects_parts_that_do_not_add_up():
    pc = synthetic()["per_class"]
    pc.loc[5, "a"] += 1.0
    with pytest.raises(ValueError, match=f"class {pc.loc[5, 'class']}"):
        premise_tables.decomposition(pc)


def test_difficulty_needs_the_reference():
    pc = synthetic()["per_class"]
    with pytest.raises(ValueError, match="reference method 'erm'"):
        premise_tables.difficulty(pc[pc["method"] != "erm"])


def test_section_states_each_link_from_the_numbers(tmp_path):
    premise_figures.write_analysis(synthetic(), tmp_path / "analysis")
    for name in premise_tables.FIGURE_NAMES:
        for ext in ("png", "pdf"):
            assert (tmp_path / "analysis" / f"{name}.{ext}").stat().st_size > 1000
    text = "\n".join(premise_text.premise_section(tmp_path / "analysis", tmp_path / "report.md", "workflow/report"))
    assert "## Does the premise hold?" in text
    assert "Link 1, hard classes vary more** (ERM's training features): ρ(ERM error, a_k) = +" in text
    assert "link 1 holds; link 2 reversed" in text and "The chain is not established on this dataset" in text
    assert "*Exploratory (ours, not the paper's)* `mr2` with `statistic=spread`" in text
    assert "link 2 **holds**" in text
    assert "![premise_margins](analysis/premise_margins.png)" in text
    assert "mean's norm is roughly equal across classes" in text  # ‖μ̂_k‖² is constant here


def test_premise_figures_name_the_classes_and_use_the_symbols(tmp_path, monkeypatch):
    drawn = rd.spy_on_figures(monkeypatch, (premise_figures,), save=True)
    result = premise_figures.write_analysis(synthetic(), tmp_path / "analysis")
    decomposition, margins = (d["fig"] for d in drawn)
    order = [f"c{c}" for c in np.argsort(rd.BASE)]  # ERM's accuracy, ascending
    for ax in decomposition.axes:  # a panel per method's own features
        assert [t.get_text() for t in ax.get_xticklabels()] == order
        assert ax.get_ylabel() == r"$a_k$ = $\|\hat{\mu}_k\|^2$ + $\|\hat{s}_k\|^2$"
        assert [t.get_text() for t in ax.texts] == ["hard", "medium", "easy"]
    assert [t.get_text() for t in decomposition.axes[0].get_legend().get_texts()] == [
        r"$\|\hat{\mu}_k\|^2$ (mean's norm)", r"$\|\hat{s}_k\|^2$ (spread)"]
    ax = margins.axes[0]
    assert ax.get_ylabel() == r"final $\gamma_k$"
    assert sorted(t.get_text() for t in ax.texts) == sorted(order)  # the default variant's classes, named
    assert set(result["decomposition_summary"]["class_name"]) == set(order)


def test_one_seed_gives_no_interval(tmp_path):
    res = premise_tables.analyse(synthetic(seeds=(0,)))
    link1 = premise_text.lookup(res["correlation_summary"], "toy", "erm", "default", "erm_error", "a")
    assert link1["n_defined"] == 1 and premise_text.link_verdict(link1) == "undetermined"
    assert "no interval" in premise_text.format_rho(link1)


# ----------------------------------------------------------------------------- the sentences on hand-built tables
def rho_row(dataset, method, x, y, mean, lo=math.nan, hi=math.nan, n=3, variant="default", source="final", epoch=None):
    """One row of correlation_summary (n = n_defined; n = 0: ρ undefined, its mean NaN)."""
    return {"dataset": dataset, "method": method, "variant": variant, "source": source, "epoch": epoch,
            "x": x, "y": y, "n_seeds": 3, "n_defined": n, "rho_mean": mean, "rho_lo": lo, "rho_hi": hi}


def share_rows(dataset, m, s, share, method="erm", variant="default", p=2):
    """decomposition_summary rows, one per class: ‖μ̂_k‖², ‖ŝ_k‖² and ‖μ̂_k‖²'s share of a_k."""
    return [{"dataset": dataset, "method": method, "variant": variant, "p": p, "class": k, "mean_sq_norm": mk,
             "spread": sk, "a": mk + sk, "mean_share": hk, "spread_share": 1 - hk}
            for k, (mk, sk, hk) in enumerate(zip(m, s, share))]


def hand_analysis():
    """Five datasets. A: every link measured, a_k follows ‖μ̂_k‖², running ρ over five epochs given
    out of order (one without an interval, one with its lower end exactly 0, one undefined); B: a
    tie between the parts and ‖μ̂_k‖²'s coefficient of variation exactly EQUAL_CV; C: only a_k's
    parts, one undefined and one missing; D: links 1-3 only, each holds; E: links 1 and 2 broken,
    link 3 holds, an exploratory p=3 with both links and a c_bar=0.5 that is not exploratory.
    Decoys of another dataset, method, variant, y and p."""
    corr = [
        rho_row("A", "erm", "erm_error", "a", 0.62, 0.25, 0.99),
        rho_row("A", "erm", "erm_error", "mean_sq_norm", math.nan, n=0),
        rho_row("A", "erm", "erm_error", "spread", 0.55, n=2),
        rho_row("A", "erm", "erm_error", "a_p3", 0.40, -0.10, 0.90),
        rho_row("A", "erm", "erm_error", "a_p5", 0.30, 0.05, 0.55),
        rho_row("A", "erm", "erm_error", "test_a", 0.45, 0.15, 0.75),
        rho_row("A", "erm", "a", "mean_sq_norm", 0.80, 0.60, 1.00),
        rho_row("A", "erm", "a", "spread", 0.30, -0.20, 0.80),
        rho_row("A", "mr2", "erm_error", "gamma", 0.50, 0.10, 0.90),
        rho_row("A", "mr2", "gamma", "change", 0.20, -0.40, 0.80),
        rho_row("A", "mr2", "erm_error_other_seeds", "change", 0.35, 0.05, 0.65),
        rho_row("A", "mr2", "erm_error", "gamma", -0.30, -0.60, -0.05, variant="statistic=spread"),
        # the running ρ, out of order: epoch 3 has no interval, epoch 2's ends at exactly 0, 6 undefined
        *[rho_row("A", "mr2", "erm_error", "gamma", m, lo, 0.9, n, source="epoch", epoch=e)
          for e, m, lo, n in ((3, 0.60, math.nan, 2), (5, 0.80, 0.35, 3), (1, 0.10, -0.30, 3),
                              (6, math.nan, math.nan, 0), (4, 0.70, 0.20, 3), (2, 0.40, 0.0, 3))],
        # decoys: another variant, method and y, each with a later epoch whose interval is above 0
        rho_row("A", "mr2", "erm_error", "gamma", 0.99, 0.90, 1.0, variant="statistic=spread", source="epoch", epoch=7),
        rho_row("A", "mr2_uniform", "erm_error", "gamma", 0.97, 0.90, 1.0, source="epoch", epoch=8),
        rho_row("A", "mr2", "erm_error", "a", 0.95, 0.90, 1.0, source="epoch", epoch=9),
        rho_row("B", "erm", "erm_error", "a", -0.40, -0.70, -0.10),
        rho_row("B", "erm", "a", "mean_sq_norm", 0.50, 0.20, 0.80),
        rho_row("B", "erm", "a", "spread", 0.50, 0.10, 0.90),
        rho_row("B", "mr2", "erm_error", "gamma", 0.10, -0.95, 0.98),
        rho_row("B", "mr2", "gamma", "change", -0.50, -0.80, -0.20),
        rho_row("B", "mr2", "erm_error", "gamma", -0.20, -0.50, 0.10, source="epoch", epoch=1),
        rho_row("B", "mr2", "erm_error", "gamma", 0.10, -0.40, 0.60, source="epoch", epoch=2),
        rho_row("C", "erm", "a", "mean_sq_norm", math.nan, n=0),
        rho_row("D", "erm", "erm_error", "a", 0.70, 0.40, 1.00),
        rho_row("D", "mr2", "erm_error", "gamma", 0.60, 0.30, 0.90),
        rho_row("D", "mr2", "gamma", "change", 0.40, 0.10, 0.70),
        rho_row("E", "erm", "erm_error", "a", 0.20, -0.30, 0.70),
        rho_row("E", "mr2", "erm_error", "gamma", 0.50, n=2),
        rho_row("E", "mr2", "gamma", "change", 0.30, 0.10, 0.50),
        rho_row("E", "mr2", "erm_error_other_seeds", "change", 0.10, -0.20, 0.40),
        rho_row("E", "mr2", "erm_error", "gamma", 0.90, 0.80, 1.00, variant="c_bar=0.5"),  # not exploratory
        rho_row("E", "mr2", "erm_error", "gamma", 0.45, 0.15, 0.75, variant="p=3"),
        rho_row("E", "mr2", "gamma", "change", -0.35, -0.65, -0.05, variant="p=3"),
    ]
    summary = pd.DataFrame(corr)
    summary["epoch"] = summary["epoch"].astype("Int64")
    dec = pd.DataFrame(
        share_rows("A", [9, 10, 11], [6, 4, 1], [0.6, 0.7, 0.9])
        + share_rows("A", [1, 5, 20], [9, 5, 1], [0.1, 0.2, 0.3], method="mr2")  # decoy: another method
        + share_rows("A", [1, 2, 30], [9, 2, 1], [0.05, 0.5, 0.95], p=3)  # decoy: L3
        + share_rows("B", [9, 11], [1, 3], [0.9, 0.8])
        + share_rows("C", [2, 2, 2], [1, 2, 3], [0.67, 0.5, 0.4]))
    return {"correlation_summary": summary, "decomposition_summary": dec}


UNDEFINED = "undefined (fewer than 3 classes, or one side is constant across classes)"
LINK3 = "- **Link 3, larger margins bring larger gains** (per-class accuracy change of mr2 over ERM, same seed): "
LINK1 = "- **Link 1, hard classes vary more** (ERM's training features): ρ(ERM error, a_k) = "
LINK2 = "- **Link 2, harder classes get larger margins** (mr2's final γ_k): ρ(ERM error, γ_k) = "
RUNNING = "  During training (running statistics), ρ(ERM error, γ_k) goes from "


#: premise_findings(hand_analysis(), level=0.9), worked by hand
HAND_FINDINGS = [
    "### A", "",
    # the rows of ERM's default variant, final, x = erm_error: a_k, its parts, L3, L5, the test features
    LINK1 + "+0.62 [90 % CI +0.25, +0.99; 3 seeds] — **holds**. By part and norm: "
    f"‖μ̂_k‖²: {UNDEFINED}; ‖ŝ_k‖²: +0.55 [no interval: 2 seeds, fewer than 3 distinct values]; "
    "a_k (L3): +0.40 [90 % CI -0.10, +0.90; 3 seeds]; a_k (L5): +0.30 [90 % CI +0.05, +0.55; 3 seeds]; "
    "a_k of the test features: +0.45 [90 % CI +0.15, +0.75; 3 seeds].",
    # ERM's L2 shares 0.6, 0.7, 0.9; ‖μ̂_k‖² = 9, 10, 11: sd (n) √(2/3) = 0.816 over 10 = 0.08 < 0.1;
    # ‖ŝ_k‖² = 6, 4, 1: sd √(38/9) = 2.055 over 11/3 = 0.56; 0.80 > 0.30: a_k follows ‖μ̂_k‖²
    "- What a_k measures: ‖μ̂_k‖² makes up 70 % of a_k (median over classes; 60–90 %). Across classes "
    "‖μ̂_k‖² varies with a coefficient of variation of 0.08 and ‖ŝ_k‖² with 0.56 — the mean's norm is "
    "roughly equal across classes. The ranking of a_k follows ‖μ̂_k‖² more (ρ(a_k, ‖μ̂_k‖²) = "
    "+0.80 [90 % CI +0.60, +1.00; 3 seeds]; ρ(a_k, ‖ŝ_k‖²) = +0.30 [90 % CI -0.20, +0.80; 3 seeds]).",
    LINK2 + "+0.50 [90 % CI +0.10, +0.90; 3 seeds] — **holds**.",
    # epochs 1–5 in order (6 undefined, decoys 7–9 left out); above 0: 4 and 5 (not 2 at exactly 0, not 3)
    RUNNING + "+0.10 after epoch 1 to +0.80 after epoch 5; its interval is above 0 after 2 of 5 epochs "
    "(first after epoch 4).",
    LINK3 + "ρ(γ_k, change) = +0.20 [90 % CI -0.40, +0.80; 3 seeds] — **not shown**; ρ(ERM error on the "
    "other seeds, change) = +0.35 [90 % CI +0.05, +0.65; 3 seeds] (gains go to hard classes).",
    "- **Chain**: link 1 holds; link 2 holds; link 3 not shown. The chain is not established on this "
    "dataset: link 3 is not shown to hold.",
    "- *Exploratory (ours, not the paper's)* `mr2` with `statistic=spread`: ρ(ERM error, γ_k) = "
    "-0.30 [90 % CI -0.60, -0.05; 3 seeds] — link 2 **reversed**; ρ(γ_k, change) = not measured — "
    "link 3 **undetermined**.",
    "",
    "### B", "",
    LINK1 + "-0.40 [90 % CI -0.70, -0.10; 3 seeds] — **reversed**. By part and norm: ‖μ̂_k‖²: not measured; "
    "‖ŝ_k‖²: not measured; a_k (L3): not measured; a_k (L5): not measured; a_k of the test features: not measured.",
    # shares 0.9, 0.8: median 0.85; ‖μ̂_k‖² = 9, 11: sd 1 over 10 = exactly EQUAL_CV, not below it;
    # ‖ŝ_k‖² = 1, 3: 1 over 2; a tie of the parts' ρ goes to ‖ŝ_k‖²
    "- What a_k measures: ‖μ̂_k‖² makes up 85 % of a_k (median over classes; 80–90 %). Across classes "
    "‖μ̂_k‖² varies with a coefficient of variation of 0.10 and ‖ŝ_k‖² with 0.50 — the mean's norm is not "
    "equal across classes. The ranking of a_k follows ‖ŝ_k‖² more (ρ(a_k, ‖μ̂_k‖²) = "
    "+0.50 [90 % CI +0.20, +0.80; 3 seeds]; ρ(a_k, ‖ŝ_k‖²) = +0.50 [90 % CI +0.10, +0.90; 3 seeds]).",
    LINK2 + "+0.10 [90 % CI -0.95, +0.98; 3 seeds] — **uninformative**.",
    RUNNING + "-0.20 after epoch 1 to +0.10 after epoch 2; its interval is above 0 after none of the 2 epochs.",
    LINK3 + "ρ(γ_k, change) = -0.50 [90 % CI -0.80, -0.20; 3 seeds] — **reversed**; ρ(ERM error on the "
    "other seeds, change) = not measured (no clear shift of gains to hard classes).",
    "- **Chain**: link 1 reversed; link 2 uninformative; link 3 reversed. The chain is not established on "
    "this dataset: links 1, 2 and 3 are not shown to hold.",
    "",
    "### C", "",
    LINK1 + "not measured — **undetermined**. By part and norm: ‖μ̂_k‖²: not measured; ‖ŝ_k‖²: not measured; "
    "a_k (L3): not measured; a_k (L5): not measured; a_k of the test features: not measured.",
    # ‖μ̂_k‖² constant: 0.00; ‖ŝ_k‖² = 1, 2, 3: √(2/3) over 2 = 0.41; one part's ρ undefined, the
    # other's missing: which part a_k follows is undetermined; no MR² rows: no links 2 and 3
    "- What a_k measures: ‖μ̂_k‖² makes up 50 % of a_k (median over classes; 40–67 %). Across classes "
    "‖μ̂_k‖² varies with a coefficient of variation of 0.00 and ‖ŝ_k‖² with 0.41 — the mean's norm is "
    "roughly equal across classes. The ranking of a_k follows undetermined more (ρ(a_k, ‖μ̂_k‖²) = "
    f"{UNDEFINED}; ρ(a_k, ‖ŝ_k‖²) = not measured).",
    "",
    "### D", "",
    LINK1 + "+0.70 [90 % CI +0.40, +1.00; 3 seeds] — **holds**. By part and norm: ‖μ̂_k‖²: not measured; "
    "‖ŝ_k‖²: not measured; a_k (L3): not measured; a_k (L5): not measured; a_k of the test features: not measured.",
    # no decomposition rows: no "What a_k measures"; no running ρ
    LINK2 + "+0.60 [90 % CI +0.30, +0.90; 3 seeds] — **holds**.",
    LINK3 + "ρ(γ_k, change) = +0.40 [90 % CI +0.10, +0.70; 3 seeds] — **holds**; ρ(ERM error on the other "
    "seeds, change) = not measured (no clear shift of gains to hard classes).",
    "- **Chain**: link 1 holds; link 2 holds; link 3 holds. Every link holds on this dataset.",
    "",
    "### E", "",
    LINK1 + "+0.20 [90 % CI -0.30, +0.70; 3 seeds] — **not shown**. By part and norm: ‖μ̂_k‖²: not measured; "
    "‖ŝ_k‖²: not measured; a_k (L3): not measured; a_k (L5): not measured; a_k of the test features: not measured.",
    LINK2 + "+0.50 [no interval: 2 seeds, fewer than 3 distinct values] — **undetermined**.",
    LINK3 + "ρ(γ_k, change) = +0.30 [90 % CI +0.10, +0.50; 3 seeds] — **holds**; ρ(ERM error on the other "
    "seeds, change) = +0.10 [90 % CI -0.20, +0.40; 3 seeds] (no clear shift of gains to hard classes).",
    # two links broken: "links 1 and 2 are"
    "- **Chain**: link 1 not shown; link 2 undetermined; link 3 holds. The chain is not established on this "
    "dataset: links 1 and 2 are not shown to hold.",
    # p=3 is exploratory, c_bar=0.5 is not
    "- *Exploratory (ours, not the paper's)* `mr2` with `p=3`: ρ(ERM error, γ_k) = "
    "+0.45 [90 % CI +0.15, +0.75; 3 seeds] — link 2 **holds**; ρ(γ_k, change) = "
    "-0.35 [90 % CI -0.65, -0.05; 3 seeds] — link 3 **reversed**.",
    "",
]


def test_premise_findings_on_hand_built_tables():
    """Every sentence for the defaults (reference erm, method mr2) at a 90 % level, worked by hand."""
    lines = premise_text.premise_findings(hand_analysis(), level=0.9)
    assert lines == HAND_FINDINGS



def hand_analysis_folder(tmp_path, captions):
    """``hand_analysis`` written as ``write_analysis`` writes it to tmp_path/analysis, each premise
    figure a file there and its caption "The caption of <name>." in the folder ``captions``."""
    analysis = tmp_path / "analysis"
    analysis.mkdir()
    captions.mkdir(exist_ok=True)
    for name, frame in hand_analysis().items():
        frame.to_csv(analysis / f"{name}.csv", index=False)
    for name in ("correlations", "decomposition", "margins"):  # not read by the section
        (analysis / f"{name}.csv").write_text("dataset\n")
    for name in premise_tables.FIGURE_NAMES:
        (analysis / f"{name}.png").write_bytes(b"png")
        (captions / f"{name}.rst").write_text(f"\nThe caption of {name}.\n", encoding="utf-8")
    return analysis


def test_premise_section_on_hand_built_tables(tmp_path):
    """The section from tables on disk at a 90 % level: an introduction stating the level, the
    difficulty's reference and the words of the verdicts, the findings of HAND_FINDINGS, then each
    figure that exists (heading, link relative to the report, caption)."""
    captions = tmp_path / "captions"
    analysis = hand_analysis_folder(tmp_path, captions)
    lines = premise_text.premise_section(analysis, tmp_path / "report" / "report.md", captions, level=0.9)
    assert lines[:2] == ["## Does the premise hold?", ""] and lines[3] == ""
    intro = lines[2]  # what the words mean, at the level asked, for the reference asked
    assert "summarised as the mean with a 90 % t-interval over seeds" in intro and "95 %" not in intro
    assert "Difficulty is ERM's per-class test error" in intro
    assert all(f"**{word}**" in intro for word in ("holds", "reversed", "not shown", "uninformative", "undetermined"))
    assert lines[4:] == [
        *HAND_FINDINGS,
        "### Premise decomposition", "", "![premise_decomposition](../analysis/premise_decomposition.png)", "",
        "The caption of premise_decomposition.", "",
        "### Premise margins", "", "![premise_margins](../analysis/premise_margins.png)", "",
        "The caption of premise_margins.", "",
    ]


def test_report_holds_the_premise_section_of_its_analysis_place_captions_and_reference(tmp_path):
    """write_report's "Does the premise hold?" is premise_section of the analysis folder it was
    given, its links relative to where the report is written (another folder than the analysis),
    its captions from the report's caption folder, its difficulty the report's reference method."""
    captions = tmp_path / "captions"
    shutil.copytree(CAPTIONS, captions)
    analysis = hand_analysis_folder(tmp_path, captions)
    t = rd.renamed(rd.tables(methods=("erm", "mr2")), {"erm": "base"})
    t["groups"] = difficulty_table(t["per_class"], reference="base")
    out = tmp_path / "report" / "report.md"
    text = write_report(t, "| table |", {}, out, captions, {"seeds": [0]}, reference="base", analysis=analysis)
    section = "\n".join(premise_text.premise_section(analysis, out, captions, "base"))
    assert section in text and text.index("## What we find") < text.index("## Does the premise hold?")
    assert "Difficulty is BASE's per-class test error" in section
    assert "![premise_margins](../analysis/premise_margins.png)\n\nThe caption of premise_margins." in section
    assert "## Does the premise hold?" not in write_report(t, "| table |", {}, out, captions, {"seeds": [0]},
                                                            reference="base")  # no analysis: no section


def test_an_interval_must_be_wider_than_1e9_for_a_verdict():
    """Width exactly 1e-9 counts as zero width (undetermined); just wider, the interval's verdict."""
    row = {"n_defined": 3, "rho_mean": 0.0, "rho_lo": 0.0, "rho_hi": 1e-9}
    assert premise_text.link_verdict(row) == "undetermined"
    assert premise_text.link_verdict({**row, "rho_hi": 2e-9}) == "not shown"


def test_label_marks_only_our_exploratory_variants():
    """statistic=… and p=… are ours (exploratory); another option's variant is only named; an option
    name without a value is no variant of ours."""
    assert premise_text.label("mr2", "default") == "MR²"
    assert premise_text.label("mr2", "statistic=spread") == "MR² (statistic=spread, exploratory)"
    assert premise_text.label("mr2_uniform", "p=3") == "MR² uniform γ (p=3, exploratory)"
    assert premise_text.label("mr2", "c_bar=0.5") == "MR² (c_bar=0.5)"
    assert [premise_text.is_exploratory(v) for v in ("p=5", "statistic=spread", "statistic", "p", "c_bar=0.5")] \
        == [True, True, False, False, False]

def test_cli_writes_the_analysis(tmp_path):
    t = synthetic()
    write_tables(t, tmp_path / "tables")
    assert main(["analysis", "--tables", str(tmp_path / "tables"), "--out", str(tmp_path / "analysis")]) == 0
    assert set(premise_tables.read_analysis(tmp_path / "analysis")) == set(premise_tables.TABLE_NAMES)
    assert main(["analysis", "--tables", str(tmp_path / "none"), "--out", str(tmp_path / "x")]) == 2


def test_sweep_figure_ignores_non_numeric_variants(tmp_path):
    t = rd.tables(sweeps=("c_bar=0.5", "statistic=spread", "p=3"))
    t["groups"] = difficulty_table(t["per_class"])
    table = sweeps.sweep_table(t["per_class"], t["runs"], t["groups"])
    assert set(table["option"]) == {"c_bar"}
    assert make_figures(t, tmp_path, names=["sweeps"])["sweeps"][0].is_file()


# ----------------------------------------------------------------------------- the exploratory loss option
def warmed(statistic, k=4, d=3):
    """An MR² loss whose statistics saw classes with known spreads and unequal means."""
    loss = MR2Loss(k, d, statistic=statistic, c_bar=1.5, momentum=0.0)
    g = torch.Generator().manual_seed(0)
    y = torch.arange(k).repeat_interleave(50)
    spread = torch.tensor([0.5, 1.0, 2.0, 4.0])[y]
    shift = torch.tensor([6.0, 3.0, 1.0, 0.0])[y]  # the low-spread classes have the larger means
    x = shift.unsqueeze(1) + spread.unsqueeze(1) * torch.randn(len(y), d, generator=g)
    loss(torch.randn(len(y), k, generator=g), x, y)
    return loss


def test_spread_margins_follow_the_spread_with_mean_c_bar():
    loss = warmed("spread")
    gamma, spread = loss.margins(), loss.stats.spread()
    assert gamma.mean().item() == pytest.approx(1.5)
    assert torch.equal(torch.argsort(gamma), torch.argsort(spread)) and (gamma.diff() > 0).all()
    torch.testing.assert_close(gamma, optimal_margins(spread, 1.5))
    paper = warmed("a").margins()  # a_k is dominated by the means here: the order differs
    assert paper.argmax().item() == 0 and gamma.argmax().item() == 3


def test_spread_margins_give_unseen_classes_the_average():
    loss = MR2Loss(3, 2, statistic="spread")
    x, y = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [0.0, 4.0]]), torch.tensor([0, 0, 1, 1])
    loss(torch.zeros(4, 3), x, y)
    gamma = loss.margins()
    assert gamma.mean().item() == pytest.approx(1.0) and gamma[0] < gamma[2] < gamma[1]


def test_statistic_option_is_validated_and_registered():
    assert resolve_options("mr2")["statistic"] == "a"
    assert build_loss("mr2_no_rep", 3, 2, statistic="spread").statistic == "spread"
    with pytest.raises(ValueError, match="statistic"):
        build_loss("mr2", 3, 2, statistic="variance")
    with pytest.raises(ValueError, match="statistic"):
        MR2Loss(3, 2, statistic=None)


@pytest.mark.slow
def test_premise_config_plans_the_exploratory_cells(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wd")
    res = run_snakemake(workdir, "--configfile", "config/premise.yaml", "-n")
    text = res.stdout + res.stderr
    for variant in ("statistic=spread", "p=3", "p=5"):
        assert re.search(rf"results/runs/fashion_mnist/mr2/{re.escape(variant)}/[0-9a-f]{{8}}/seed2/model\.pt", text)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", text[text.index("Job stats:"):], re.M))
    assert jobs["train"] == "21" and jobs["analysis"] == "1"  # (4 methods + 3 variants) x 3 seeds


@pytest.mark.slow
def test_a_bad_exploratory_value_fails_before_any_job(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wd")
    cfg = (workdir / "config" / "smoke.yaml").read_text().replace("sweeps: {method: mr2, c_bar: [2.0]}",
                                                                  "sweeps: {method: mr2, statistic: [variance]}")
    (workdir / "config" / "bad.yaml").write_text(cfg)
    res = run_snakemake(workdir, "--configfile", "config/bad.yaml", "-n", check=False)
    assert res.returncode != 0 and "statistic" in res.stdout + res.stderr


# ----------------------------------------------------------------------------- the smoke outputs
@pytest.mark.slow
def test_analysis_of_the_smoke_outputs(smoke_results):
    out = smoke_results / "analysis"
    res = premise_tables.read_analysis(out)
    pc = pd.read_csv(smoke_results / "tables" / "per_class.csv")
    # the decomposition of the real evaluation adds up
    dec = res["decomposition"]
    np.testing.assert_allclose(dec["mean_sq_norm"] + dec["spread"], dec["a"], rtol=1e-6)
    # every run is analysed, and one correlation against scipy
    assert len(res["correlations"][["method", "variant", "seed"]].drop_duplicates()) == \
        len(pc[["method", "variant", "seed"]].drop_duplicates())
    err = 1 - pc[pc["method"] == "erm"].groupby("class")["accuracy"].mean()
    run = pc[(pc["method"] == "mr2") & (pc["variant"] == "default") & (pc["seed"] == 0)].set_index("class")
    corr = res["correlations"]
    got = corr[(corr["method"] == "mr2") & (corr["variant"] == "default") & (corr["seed"] == 0)
               & (corr["source"] == "final") & (corr["x"] == "erm_error") & (corr["y"] == "a")]["rho"].item()
    assert got == pytest.approx(stats.spearmanr(err.loc[run.index], run["a"]).statistic)
    # per-epoch rows for every MR² run and epoch
    ep = corr[(corr["source"] == "epoch") & (corr["y"] == "gamma") & (corr["method"] == "mr2")]
    assert set(ep["epoch"]) == {1, 2, 3}
    for name in premise_tables.FIGURE_NAMES:
        assert (out / f"{name}.png").stat().st_size > 1000 and (out / f"{name}.pdf").is_file()
    report = (smoke_results / "report.md").read_text()
    assert "## Does the premise hold?" in report and "**Chain**: link 1" in report
    assert "analysis/premise_margins.png" in report
