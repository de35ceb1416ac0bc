"""The premise analysis tables (``premise_tables``) against an independent computation.

Small hand-built tables with decoy rows; every expected value is computed here (scipy's
Spearman ρ per seed, numpy means and sds, scipy's t interval), never by the module under test.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mr2.results import premise_tables as pt

RUN = ["dataset", "method", "variant", "seed"]
DATASETS = ("dB", "dA")  # not in sorted order: tables keep the order of first appearance
CLASSES = range(5)
SEEDS = (0, 1, 2)
METHODS = (("base", "default"), ("mr2", "default"), ("mr2", "statistic=spread"))
STATS = ["mean_sq_norm", "spread", "a", "mean_sq_norm_p5", "spread_p5", "a_p5",
         "test_mean_sq_norm", "test_spread", "test_a"]  # no p = 3 columns: p = 5 must still be used


def per_class_table(seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for dataset in DATASETS:
        for method, variant in METHODS:
            for s in SEEDS:
                for k in CLASSES:
                    row = {"dataset": dataset, "method": method, "variant": variant, "seed": s, "class": k,
                           "class_name": f"{dataset}-c{k}", "accuracy": float(rng.uniform(0.3, 0.95)),
                           "gamma": 1.0 if method == "base" else float(rng.uniform(0.5, 2.0))}
                    for suffix in ("", "_p5", "test_"):
                        m, sp = float(rng.uniform(0.1, 3.0)), float(rng.uniform(0.1, 3.0))
                        if suffix == "test_":
                            row.update(test_mean_sq_norm=m, test_spread=sp, test_a=m + sp)
                        else:
                            row.update({f"mean_sq_norm{suffix}": m, f"spread{suffix}": sp, f"a{suffix}": m + sp})
                    rows.append(row)
    return pd.DataFrame(rows)


def groups_table() -> pd.DataFrame:
    return pd.DataFrame([{"dataset": d, "class": k, "group": ("easy", "medium", "hard")[k % 3]}
                         for d in DATASETS for k in CLASSES])


def rho(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(stats.spearmanr(x, y).statistic)


def expected_correlations(pc: pd.DataFrame, reference: str = "base") -> pd.DataFrame:
    ref = pc[(pc["method"] == reference) & (pc["variant"] == "default")]
    error = 1 - ref.groupby(["dataset", "class"])["accuracy"].mean()
    rows = []
    for (d, m, v, s), run in pc.groupby(RUN, sort=False):
        run = run.set_index("class").sort_index()
        err = error.loc[d].reindex(run.index)
        pairs = [("erm_error", c) for c in ["gamma"] + STATS]
        pairs += [(f"a{suffix}", f"{part}{suffix}") for suffix in ("", "_p5") for part in ("mean_sq_norm", "spread")]
        for x, y in pairs:
            xs = err if x == "erm_error" else run[x]
            rows.append({"dataset": d, "method": m, "variant": v, "seed": s, "x": x, "y": y, "rho": rho(xs, run[y])})
        if m != reference:
            same = ref[(ref["dataset"] == d) & (ref["seed"] == s)].set_index("class")["accuracy"]
            change = run["accuracy"] - same.reindex(run.index)
            others = ref[(ref["dataset"] == d) & (ref["seed"] != s)].groupby("class")["accuracy"].mean()
            rows.append({"dataset": d, "method": m, "variant": v, "seed": s, "x": "gamma", "y": "change",
                         "rho": rho(run["gamma"], change)})
            rows.append({"dataset": d, "method": m, "variant": v, "seed": s, "x": "erm_error_other_seeds",
                         "y": "change", "rho": rho(1 - others.reindex(run.index), change)})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def analysed():
    pc = per_class_table()
    # no "epochs" table at all, a reference other than the default and a level other than 0.95
    return pc, pt.analyse({"per_class": pc, "groups": groups_table()}, reference="base", level=0.8)


def test_final_correlations_are_spearman_per_seed_of_exactly_the_expected_pairs(analysed):
    pc, res = analysed
    corr = res["correlations"]
    assert list(corr.columns) == RUN + ["source", "epoch", "rho", "n", "x", "y"]
    assert corr.index.equals(pd.RangeIndex(len(corr)))
    assert str(corr["epoch"].dtype) == "Int64" and corr["epoch"].isna().all()
    assert (corr["source"] == "final").all()
    expected = expected_correlations(pc)
    merged = expected.merge(corr, on=RUN + ["x", "y"], how="outer", suffixes=("_exp", ""), indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"][RUN + ["x", "y"]]
    assert len(corr) == len(expected)
    np.testing.assert_allclose(merged["rho"].astype(float), merged["rho_exp"], atol=1e-12)
    assert merged["rho_exp"].notna().sum() > len(merged) // 2  # most are defined: a real check


def test_correlation_summary_is_the_mean_and_t_interval_over_seeds(analysed):
    _, res = analysed
    corr, summary = res["correlations"], res["correlation_summary"]
    assert list(summary.columns) == pt.SUMMARY_KEYS + ["n_seeds", "n_defined", "rho_mean", "rho_lo", "rho_hi"]
    assert str(summary["epoch"].dtype) == "Int64"
    keys = ["dataset", "method", "variant", "source", "x", "y"]
    first_seen = corr[keys].drop_duplicates().reset_index(drop=True)
    pd.testing.assert_frame_equal(summary[keys].reset_index(drop=True), first_seen, check_dtype=False)
    assert summary["dataset"].iloc[0] == "dB"
    checked = 0
    for _, row in summary.iterrows():
        sel = corr
        for k in keys:
            sel = sel[sel[k] == row[k]]
        r = sel["rho"].astype(float).to_numpy()
        d = r[np.isfinite(r)]
        assert row["n_seeds"] == len(SEEDS) == len(r) and row["n_defined"] == len(d)
        if len(d) == 0:
            assert math.isnan(row["rho_mean"])
            continue
        assert row["rho_mean"] == pytest.approx(d.mean(), abs=1e-12)
        if len(set(np.round(d, 9))) < 3:
            assert math.isnan(row["rho_lo"]) and math.isnan(row["rho_hi"])
            continue
        lo, hi = stats.t.interval(0.8, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        assert row["rho_lo"] == pytest.approx(max(-1.0, lo), abs=1e-12)
        assert row["rho_hi"] == pytest.approx(min(1.0, hi), abs=1e-12)
        checked += 1
    assert checked > 10


def test_decomposition_splits_a_into_shares_for_every_norm_present(analysed):
    pc, res = analysed
    dec = res["decomposition"]
    assert list(dec.columns) == RUN + ["class", "p", "mean_sq_norm", "spread", "a", "mean_share", "spread_share"]
    assert dec.index.equals(pd.RangeIndex(len(dec)))
    assert sorted(dec["p"].unique()) == [2, 5]
    for p, suffix in ((2, ""), (5, "_p5")):
        got = dec[dec["p"] == p].reset_index(drop=True)
        assert len(got) == len(pc)
        np.testing.assert_allclose(got["mean_sq_norm"], pc[f"mean_sq_norm{suffix}"])
        np.testing.assert_allclose(got["mean_share"], pc[f"mean_sq_norm{suffix}"] / pc[f"a{suffix}"])
        np.testing.assert_allclose(got["spread_share"], pc[f"spread{suffix}"] / pc[f"a{suffix}"])


def test_decomposition_summary_averages_over_seeds_in_order_of_appearance(analysed):
    pc, res = analysed
    summ = res["decomposition_summary"]
    keys = ["dataset", "method", "variant", "p", "class"]
    dec = res["decomposition"]
    pd.testing.assert_frame_equal(summ[keys].reset_index(drop=True), dec[keys].drop_duplicates().reset_index(drop=True),
                                  check_dtype=False)
    row = summ[(summ["dataset"] == "dA") & (summ["method"] == "mr2") & (summ["variant"] == "default")
               & (summ["p"] == 5) & (summ["class"] == 3)].iloc[0]
    runs = pc[(pc["dataset"] == "dA") & (pc["method"] == "mr2") & (pc["variant"] == "default") & (pc["class"] == 3)]
    assert row["n_seeds"] == 3
    assert row["a"] == pytest.approx(runs["a_p5"].mean())
    assert row["a_sd"] == pytest.approx(np.std(runs["a_p5"], ddof=1))
    assert row["mean_share"] == pytest.approx((runs["mean_sq_norm_p5"] / runs["a_p5"]).mean())
    base = pc[(pc["dataset"] == "dA") & (pc["method"] == "base") & (pc["class"] == 3)]
    assert row["erm_accuracy"] == pytest.approx(base["accuracy"].mean())
    assert row["group"] == "easy" and row["class_name"] == "dA-c3"


def test_the_reference_and_level_are_passed_on():
    pc = per_class_table()
    with pytest.raises(ValueError, match="reference method 'erm'"):
        pt.analyse({"per_class": pc, "groups": groups_table()})  # there is no "erm"


def test_final_correlations_keep_a_run_without_margins_as_undefined():
    pc = per_class_table()
    margins = pt.margins_table(pc, groups_table(), "base")
    lost = (margins["dataset"] == "dA") & (margins["method"] == "mr2") & (margins["seed"] == 1) \
        & (margins["variant"] == "default")
    out = pt.final_correlations(pc, margins[~lost])
    assert list(out.columns) == RUN + ["source", "epoch", "rho", "n", "x", "y"]
    assert out.index.equals(pd.RangeIndex(len(out)))
    assert str(out["epoch"].dtype) == "Int64"
    run = out[(out["dataset"] == "dA") & (out["method"] == "mr2") & (out["seed"] == 1) & (out["variant"] == "default")]
    err = run[run["x"] == "erm_error"]
    assert len(err) == 1 + len(STATS) and err["rho"].isna().all() and (err["n"] == 0).all()


#: rows of epoch_correlations on epochs_table: datasets × MR² variants × seeds × epochs × statistics
EPOCH_ROWS = len(DATASETS) * 2 * len(SEEDS) * 2 * 4


def epochs_table(pc: pd.DataFrame, as_text: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for (d, m, v, s), _ in pc[pc["method"] == "mr2"].groupby(RUN, sort=False):
        for epoch in (1, 2):
            for k in CLASSES:
                for name in ("mean_sq_norm", "spread", "a", "gamma", "loss_term"):  # loss_term: a decoy
                    rows.append({"dataset": d, "method": m, "variant": v, "seed": s, "epoch": epoch,
                                 "class": str(k) if as_text else k, "name": name, "value": float(rng.normal())})
            rows.append({"dataset": d, "method": m, "variant": v, "seed": s, "epoch": epoch,  # decoy: no class
                         "class": None, "name": "gamma", "value": 5.0})
    frame = pd.DataFrame(rows)
    if as_text:
        frame["class"] = frame["class"].astype(object)
    return frame


@pytest.mark.parametrize("as_text", [False, True])
def test_epoch_correlations_use_only_class_rows_of_the_logged_statistics(as_text):
    pc = per_class_table()
    epochs = epochs_table(pc, as_text)
    diff = pt.difficulty(pc, "base")
    if as_text:
        diff = diff.assign(**{"class": diff["class"].astype(str).astype(object)})
    out = pt.epoch_correlations(epochs, diff)
    assert list(out.columns) == RUN + ["source", "epoch", "x", "y", "rho", "n"]
    assert str(out["epoch"].dtype) == "Int64"
    assert set(out["y"]) == {"mean_sq_norm", "spread", "a", "gamma"} and (out["x"] == "erm_error").all()
    assert (out["source"] == "epoch").all()
    assert len(out) == EPOCH_ROWS
    ref = pc[pc["method"] == "base"]
    error = 1 - ref.groupby(["dataset", "class"])["accuracy"].mean()
    for _, row in out.iterrows():
        sel = epochs[(epochs["dataset"] == row["dataset"]) & (epochs["variant"] == row["variant"])
                     & (epochs["seed"] == row["seed"]) & (epochs["epoch"] == row["epoch"])
                     & (epochs["name"] == row["y"]) & epochs["class"].notna()]
        ks = sel["class"].astype(int).to_numpy()
        assert row["n"] == len(CLASSES)
        assert row["rho"] == pytest.approx(rho(error.loc[row["dataset"]].reindex(ks).to_numpy(), sel["value"]), abs=1e-12)


def test_epoch_correlations_without_class_rows_have_the_columns_and_types():
    empty = pd.DataFrame(columns=RUN + ["epoch", "class", "name", "value"])
    out = pt.epoch_correlations(empty, pd.DataFrame(columns=["dataset", "class", "erm_error"]))
    assert out.empty and list(out.columns) == RUN + ["source", "epoch", "x", "y", "rho", "n"]
    assert str(out["epoch"].dtype) == "Int64" and out["rho"].dtype == np.float64 and out["n"].dtype == np.int64


def test_epoch_correlations_keep_a_run_whose_classes_have_no_difficulty_as_undefined():
    """Dataset dA's classes have no reference error: its (run, epoch) rows stay, with ρ NaN and
    n = 0, beside dB's computed ones (not dropped, which would read as "never logged")."""
    pc = per_class_table()
    diff = pt.difficulty(pc, "base")
    out = pt.epoch_correlations(epochs_table(pc), diff[diff["dataset"] == "dB"])
    assert len(out) == EPOCH_ROWS
    lost = out[out["dataset"] == "dA"]
    assert len(lost) == len(out) // 2 and lost["rho"].isna().all() and (lost["n"] == 0).all()
    kept = out[out["dataset"] == "dB"]
    assert kept["rho"].notna().all() and (kept["n"] == len(CLASSES)).all()


def test_analyse_appends_the_epoch_rows_after_the_final_ones_with_one_index_and_numeric_types():
    pc = per_class_table()
    tables = {"per_class": pc, "groups": groups_table(), "epochs": epochs_table(pc)}
    corr = pt.analyse(tables, reference="base")["correlations"]
    final = pt.final_correlations(pc, pt.margins_table(pc, groups_table(), "base"))
    assert len(corr) == len(final) + EPOCH_ROWS and corr.index.equals(pd.RangeIndex(len(corr)))
    assert (corr["source"].iloc[:len(final)] == "final").all() and (corr["source"].iloc[len(final):] == "epoch").all()
    assert corr["epoch"].iloc[len(final):].tolist() == corr["epoch"].iloc[len(final):].astype(int).tolist()
    for tables_used in (tables, {"per_class": pc, "groups": groups_table()}):  # with and without epochs
        out = pt.analyse(tables_used, reference="base")["correlations"]
        assert out["rho"].dtype == np.float64 and out["n"].dtype == np.int64 and out["seed"].dtype == np.int64


def test_summarise_of_no_correlations_has_the_columns():
    empty = pd.DataFrame(columns=RUN + ["source", "epoch", "x", "y", "rho", "n"])
    out = pt.summarise(empty)
    assert out.empty and list(out.columns) == pt.SUMMARY_KEYS + ["n_seeds", "n_defined", "rho_mean", "rho_lo", "rho_hi"]


def decomposition_input(m, s, a) -> pd.DataFrame:
    n = len(m)
    return pd.DataFrame({"dataset": "d", "method": "erm", "variant": "default", "seed": 0, "class": range(n),
                         "mean_sq_norm": m, "spread": s, "a": a})


def test_decomposition_shares_by_hand():
    # a = 1 exactly, a = 0 (shares undefined: a part of 1e-20 is within the absolute floor 1e-18)
    dec = pt.decomposition(decomposition_input([0.25, 1e-20, 3.0], [0.75, 0.0, 1.0], [1.0, 0.0, 4.0]))
    assert dec["mean_share"].tolist()[0] == 0.25 and dec["spread_share"].tolist()[0] == 0.75
    assert math.isnan(dec["mean_share"][1]) and math.isnan(dec["spread_share"][1])
    assert dec["mean_share"][2] == 0.75 and dec["spread_share"][2] == 0.25


def test_decomposition_tolerance_is_relative_to_a():
    # |parts − a| = 0.5 = tol · a exactly: accepted
    pt.decomposition(decomposition_input([1.0], [1.0], [1.5]), tol=0.5 / 1.5)
    pt.decomposition(decomposition_input([1.0], [0.5], [1.0]), tol=0.5)
    # large a: a mismatch of 1e-7 relative is within tol = 1e-6
    pt.decomposition(decomposition_input([600.0], [400.0001], [1000.0]))
    # small a: a relative mismatch of 1e-5 is an error, though it is only 1e-8 in absolute terms
    with pytest.raises(ValueError, match="class 0"):
        pt.decomposition(decomposition_input([0.0005], [0.00050001], [0.001]))


def test_decomposition_without_the_columns_names_them():
    frame = decomposition_input([1.0], [1.0], [2.0]).drop(columns=["spread"])
    with pytest.raises(ValueError, match=r"none of the columns \['mean_sq_norm', 'spread', 'a'\]; evaluate"):
        pt.decomposition(frame)


def test_decomposition_summary_keeps_classes_without_difficulty_group_or_name():
    dec = pt.decomposition(decomposition_input([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [2.0, 3.0, 4.0]))
    diff = pd.DataFrame({"dataset": ["d"], "class": [0], "erm_accuracy": [0.9], "erm_error": [0.1]})
    groups = pd.DataFrame({"dataset": ["d"], "class": [1], "group": ["hard"]})
    names = pd.DataFrame({"dataset": ["d"], "class": [2], "class_name": ["two"]})
    out = pt.decomposition_summary(dec, diff, groups, names)
    assert out["class"].tolist() == [0, 1, 2]
    assert out["erm_accuracy"].tolist()[0] == 0.9 and out["erm_accuracy"][1:].isna().all()
    assert out["group"].tolist()[1] == "hard" and out["group"][[0, 2]].isna().all()
    assert out["class_name"].tolist()[2] == "two" and out["class_name"][:2].isna().all()


def temperature_run_set(with_control: bool = True) -> pd.DataFrame:
    """One dataset, 3 seeds, 5 classes: the reference, MR² with margins and the tuned temperature.
    Accuracies are counts over 1000 images; in every seed MR² − temperature is 7/1000 on two classes,
    as 0.938 − 0.931 and 0.857 − 0.850, whose float differences are not equal."""
    rng = np.random.default_rng(11)
    rows = []
    for s in SEEDS:
        counts = {"base": rng.integers(400, 990, 5),
                  "mr2": np.array([938, 857, *rng.integers(400, 990, 3)]),
                  "ce_temperature": np.array([931, 850, *rng.integers(400, 990, 3)])}
        gamma = rng.permutation([0.5, 1.0, 1.5, 2.0, 3.0])
        for method in counts if with_control else ("base", "mr2"):
            for k in CLASSES:
                rows.append({"dataset": "d", "method": method, "variant": "default", "seed": s, "class": k,
                             "class_name": f"c{k}", "accuracy": counts[method][k] / 1000,
                             "gamma": float(gamma[k]) if method == "mr2" else 1.0,
                             "mean_sq_norm": 1.0, "spread": 1.0, "a": 2.0, "count": int(counts[method][k])})
    return pd.DataFrame(rows)


def test_link_3_against_the_tuned_temperature_is_rho_of_margins_and_mr2_minus_it_with_exact_ties():
    """ρ(γ_k, MR² − ce_temperature) per seed, by scipy on the exact count differences (two equal
    changes tie), in the correlations and in the report's sentence; no such row without the control."""
    from mr2.results.premise_text import premise_findings

    pc = temperature_run_set()
    groups = pd.DataFrame({"dataset": "d", "class": list(CLASSES), "group": ["easy", "medium", "hard", "hard", "easy"]})
    analysis = pt.analyse({"per_class": pc.drop(columns="count"), "groups": groups}, reference="base")
    corr = analysis["correlations"]
    got = corr[(corr["method"] == "mr2") & (corr["x"] == "gamma") & (corr["y"] == "change_vs_temperature")]
    expected = []
    for s in SEEDS:
        run = pc[pc["seed"] == s].pivot_table(index="class", columns="method", values=["count", "gamma"])
        exact = (run[("count", "mr2")] - run[("count", "ce_temperature")]).to_numpy()  # integers: exact ties
        expected.append(stats.spearmanr(run[("gamma", "mr2")], exact).statistic)
    assert got.sort_values("seed")["rho"].to_numpy() == pytest.approx(expected, abs=1e-12)
    tied = pt.margins_table(pc.drop(columns="count"), groups, "base")
    tied = tied[(tied["method"] == "mr2") & tied["class"].isin([0, 1])]
    assert tied.groupby("seed")["change_vs_temperature"].nunique().eq(1).all()  # the float error is gone
    assert corr[corr["method"] == "ce_temperature"].query("y == 'change_vs_temperature'")["rho"].isna().all()
    mean = np.mean(expected)
    lo, hi = stats.t.interval(0.95, len(expected) - 1, loc=mean, scale=stats.sem(expected))
    text = "\n".join(premise_findings(analysis, reference="base"))
    assert f"Against the tuned temperature (`ce_temperature`, same seed)" in text
    assert f"ρ(γ_k, change) = {mean:+.2f} [95 % CI {max(lo, -1):+.2f}, {min(hi, 1):+.2f}" in text.split("Against the tuned")[1]

    alone = pt.analyse({"per_class": temperature_run_set(False).drop(columns="count"), "groups": groups}, reference="base")
    assert "change_vs_temperature" not in set(alone["correlations"]["y"])
    assert "Against the tuned temperature" not in "\n".join(premise_findings(alone, reference="base"))
