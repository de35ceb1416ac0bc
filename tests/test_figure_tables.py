"""Each figure's table (``table(tables, options)`` of mr2/results/figures/<name>.py) against numbers
worked here by hand (numpy, scipy), the per-class statistics the figures and the text share
(mr2/results/per_class.py), and what each figure shows that a reader would notice: which classes in
which order, which panel says what, which interval is drawn where."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import results_data as syn
from mr2.results import groups as G
from mr2.results import plotting
from mr2.results.figures import (accuracy_vs_variability as AV, change_vs_erm as CH, claim_forest as CF,
                                 group_accuracy as GA, margins_over_training as MT, per_class_sorted as PS,
                                 sweeps as SW, tradeoff as TR)
from mr2.results.figures.registry import FigureOptions
from mr2.results.figures.render import draw_figure
from mr2.results.per_class import changed_classes, class_changes, format_seed_rho, seed_rho

OPTIONS = FigureOptions()


def full():
    t = syn.tables(datasets=("toy", "toy2"), sweeps=("c_bar=0.5", "c_bar=2.0", "lam=0.3"))
    t["groups"] = G.difficulty_table(t["per_class"])
    return t


def half_width(d, level=0.95):
    """The t-interval's half width of the mean of ``d`` over seeds."""
    d = np.asarray(d, dtype=float)
    return stats.t.ppf((1 + level) / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))


def texts(ax):
    return [t.get_text() for t in ax.texts]


def ticks(labels):
    return [t.get_text() for t in labels]


# ----------------------------------------------------------------------------- claim_forest
def test_claim_table_is_each_methods_paired_difference_to_the_reference_by_hand():
    t = full()
    table = CF.table(t, OPTIONS).set_index(["dataset", "method", "metric"])
    per_run = G.run_group_accuracy(t["per_class"].query("dataset == 'toy' and variant == 'default'"), t["groups"])
    per_run = per_run.set_index(["method", "seed"])
    for method in ("mr2", "mr2_uniform", "mr2_no_rep"):
        for group in ("all", "easy", "medium", "hard"):
            d = 100 * (per_run.loc[method, group] - per_run.loc["erm", group]).to_numpy()
            row = table.loc[("toy", method, group)]
            assert (row["diff"], row["diff_lo"], row["diff_hi"], row["n_paired"]) == (
                pytest.approx(d.mean()), pytest.approx(d.mean() - half_width(d)), pytest.approx(d.mean() + half_width(d)), 3)
    assert set(table.index.get_level_values("method")) == {"mr2", "mr2_uniform", "mr2_no_rep"}  # all but ERM
    assert set(table.index.get_level_values("metric")) == set(CF.CLAIM_METRICS)  # the worst class too
    erm = {**t, "per_class": t["per_class"][t["per_class"]["method"] == "erm"]}
    assert CF.table(erm, OPTIONS).empty and list(CF.table(erm, OPTIONS).columns) == CF.COLUMNS


def test_claim_forest_puts_each_point_in_its_metrics_row_and_clips_an_interval_past_100_points():
    """Points at their Δ in the rows all … worst class ("all" on top) with their intervals; an interval
    past ±100 points (seeds that disagree wildly) is drawn to ±100 and marked there; a dataset of one
    paired seed says it has no interval."""
    metrics = CF.CLAIM_METRICS
    rows = [{"dataset": "d", "method": m, "metric": x, "diff": 1.0 + i, "diff_lo": -1.0, "diff_hi": 3.0 + i,
             "n_paired": 2} for m in ("mr2", "ldam") for i, x in enumerate(metrics)]
    rows[0].update(diff_lo=-150.0)
    rows[6].update(diff_hi=100.5)  # LDAM's easy row
    rows += [{"dataset": "e", "method": "mr2", "metric": x, "diff": 2.0, "diff_lo": np.nan, "diff_hi": np.nan,
              "n_paired": 1} for x in metrics]
    fig = CF.draw(pd.DataFrame(rows), FigureOptions(reference="base"))
    d, e = fig.axes
    assert " ".join(d.get_title().split()) == "d: Δ to base (95% t-interval over 2 paired seeds)"
    assert " ".join(e.get_title().split()) == "e: Δ to base (1 seed: no interval)"
    assert ticks(d.get_yticklabels()) == ["all classes", "easy classes", "medium classes", "hard classes", "worst class"]
    assert d.get_ylim()[0] > d.get_ylim()[1]  # the first row on top
    mr2, ldam = d.containers
    assert [round(y) for y in mr2.lines[0].get_ydata()] == [0, 1, 2, 3, 4]
    assert list(mr2.lines[0].get_xdata()) == [1.0, 2.0, 3.0, 4.0, 5.0]
    (lo, _), (hi, _) = mr2.lines[2][0].get_segments()[0]
    assert (lo, hi) == (-100.0, 3.0)
    marks = {(ln.get_marker(), ln.get_xdata()[0], round(ln.get_ydata()[0])) for ln in d.get_lines()
             if ln.get_marker() in ("<", ">")}
    assert marks == {("<", -100.0, 0), (">", 100.0, 1)}


# ----------------------------------------------------------------------------- per_class_sorted
def test_per_class_table_is_each_methods_class_means_in_percent_by_hand():
    t = full()
    table = PS.table(t, OPTIONS)
    assert set(table["variant"]) == {"default"}  # a sweep's variants are left out
    means = 100 * t["per_class"].query("variant == 'default'").groupby(["dataset", "method", "class"])["accuracy"].mean()
    assert list(table["accuracy"]) == pytest.approx([means[key] for key in zip(table["dataset"], table["method"],
                                                                              table["class"])])
    assert list(dict.fromkeys(table["label"])) == [plotting.display_name(m) for m in syn.METHODS]
    assert set(table["class_name"]) == {f"c{c}" for c in range(syn.K)}


def test_few_classes_are_rows_in_the_references_order_many_are_sorted_lines():
    """A row per class, hardest for the reference at the top (ties in the order of the classes; by the
    methods' mean without the reference), even where the methods' mean orders them otherwise; one
    class more than DOT_PLOT_MAX gives each method's accuracies sorted ascending, the legend in the
    tables' order."""
    def table(k, methods=("erm", "mr2"), erm=lambda c: 0.9 - 0.02 * c):
        acc = {"erm": erm, "mr2": lambda c: 0.1 + 0.025 * c, "focal": lambda c: 0.5 + 0.001 * c}
        pc = pd.DataFrame([{"dataset": "d", "method": m, "variant": "default", "seed": 0, "class": c,
                            "class_name": f"n{c}", "accuracy": acc[m](c)} for m in methods for c in range(k)])
        return {"per_class": pc}

    k = PS.DOT_PLOT_MAX
    fig = PS.draw(PS.table(table(k), OPTIONS), OPTIONS)
    ax = fig.axes[0]
    assert ticks(ax.get_yticklabels()) == [f"n{c}" for c in reversed(range(k))]  # ERM's order, not the mean's
    assert ax.get_ylabel() == "class (ascending ERM accuracy)"
    erm_line = ax.get_lines()[0]
    assert list(erm_line.get_xdata()) == pytest.approx([100 * (0.9 - 0.02 * c) for c in reversed(range(k))])
    tied = table(k, erm=lambda c: 0.5 + 0.1 * (c < k // 2))
    ax = PS.draw(PS.table(tied, OPTIONS), OPTIONS).axes[0]
    assert ticks(ax.get_yticklabels()) == [f"n{c}" for c in range(k // 2, k)] + [f"n{c}" for c in range(k // 2)]
    ax = PS.draw(PS.table(table(k), OPTIONS), FigureOptions(reference="base")).axes[0]  # no such reference
    mean = PS.table(table(k), OPTIONS).groupby("class")["accuracy"].mean().sort_values(kind="stable")
    assert ticks(ax.get_yticklabels()) == [f"n{c}" for c in mean.index] and ax.get_ylabel() == "class"
    ax = PS.draw(PS.table(table(k + 1, ("erm", "mr2", "focal")), OPTIONS), OPTIONS).axes[0]
    curves = [line.get_ydata() for line in ax.get_lines() if len(line.get_ydata()) == k + 1]
    assert len(curves) == 3 and all((c[1:] >= c[:-1]).all() for c in curves)
    assert ticks(ax.get_legend().get_texts()) == ["ERM", "MR²", "Focal"]


# ----------------------------------------------------------------------------- accuracy_vs_variability
def test_accuracy_against_a_table_is_the_reference_and_the_mr2_method_with_their_seeds_rho_by_hand():
    t = full()
    t["per_class"]["a"] += np.random.default_rng(5).normal(0, 0.8, len(t["per_class"]))  # a ρ of its own per run
    table = AV.table(t, FigureOptions(method="mr2_uniform"))
    assert list(dict.fromkeys(zip(table["method"], table["feature"]))) == [
        ("erm", "a"), ("mr2_uniform", "a"), ("erm", "spread"), ("mr2_uniform", "spread")]
    pc = t["per_class"].query("dataset == 'toy2' and method == 'mr2_uniform' and variant == 'default'")
    rows = table.query("dataset == 'toy2' and method == 'mr2_uniform' and feature == 'a'").set_index("class")
    assert list(rows["x"]) == pytest.approx(list(pc.groupby("class")["a"].mean()[rows.index]))
    assert list(rows["accuracy"]) == pytest.approx(list(100 * pc.groupby("class")["accuracy"].mean()[rows.index]))
    rhos = [stats.spearmanr(g["a"], g["accuracy"])[0] for _, g in pc.groupby("seed")]
    row = rows.iloc[0]  # the interval within [−1, 1]
    assert (row["rho_mean"], row["rho_lo"], row["rho_hi"], row["n"]) == (
        pytest.approx(np.mean(rhos)), pytest.approx(max(-1.0, np.mean(rhos) - half_width(rhos))),
        pytest.approx(min(1.0, np.mean(rhos) + half_width(rhos))), 3)
    assert AV.table(t, FigureOptions(reference="x", method="y")).empty
    assert AV.table(t, OPTIONS, features=("no_such_column",)).empty


def test_accuracy_against_a_panels_name_their_run_and_rho_and_say_which_run_a_dataset_lacks():
    t = full()
    pc = t["per_class"]
    t["per_class"] = pc[~((pc["dataset"] == "toy2") & (pc["method"] == "erm"))]
    table = AV.table(t, OPTIONS)
    fig = AV.draw(table, OPTIONS)
    axes = fig.axes  # toy: a, spread; toy2: a, spread; ERM and MR² in each row
    assert [ax.get_title().split("\n")[0] for ax in axes] == ["toy: ERM", "toy: MR²"] * 2 + ["", "toy2: MR²"] * 2
    assert texts(axes[4]) == ["toy2: no runs of erm"] and not axes[4].axison
    row = table.query("dataset == 'toy' and method == 'erm' and feature == 'a'").iloc[0]
    assert axes[0].get_title().split("\n")[1] == format_seed_rho(row)
    assert sorted(texts(axes[0])) == sorted(f"c{c}" for c in range(syn.K))  # every class named
    assert [ax.get_xlabel() for ax in axes[:4]] == [r"$a_k$ of ERM's training features", r"$a_k$ of MR²'s training features",
                                                    r"$\|\hat{s}_k\|^2$ of ERM's training features",
                                                    r"$\|\hat{s}_k\|^2$ of MR²'s training features"]


def test_format_seed_rho_by_hand():
    row = {"rho_mean": -0.531, "rho_lo": -0.852, "rho_hi": -0.214, "n": 3}
    assert format_seed_rho(row) == "ρ = -0.53 [95% CI -0.85, -0.21], 3 seeds"
    assert format_seed_rho({**row, "rho_lo": -0.9, "rho_hi": 0.1}, 0.9) == "ρ = -0.53 [90% CI -0.90, +0.10], 3 seeds: not shown"
    assert format_seed_rho({**row, "rho_lo": -0.95, "rho_hi": 0.96}) == \
        "ρ = -0.53 [95% CI -0.95, +0.96], 3 seeds: uninformative"
    assert format_seed_rho({**row, "rho_lo": 0.2, "rho_hi": 0.9}).endswith("3 seeds")  # 'holds' is not added
    assert format_seed_rho({**row, "rho_lo": np.nan, "rho_hi": np.nan, "n": 1}) == "ρ = -0.53 (no interval: 1 seed)"
    for undefined in (None, {**row, "n": 0}, {**row, "rho_mean": np.nan}):
        assert format_seed_rho(undefined) == "ρ undefined"


def test_seed_rho_keeps_the_tables_order_and_the_level():
    pc = full()["per_class"]
    pc["a"] += np.random.default_rng(3).normal(0, 0.8, len(pc))
    table = seed_rho(pc[pc["variant"] == "default"], "a", level=0.5)
    assert list(dict.fromkeys(table["method"])) == list(syn.METHODS)  # not sorted by name
    rows = pc.query("dataset == 'toy' and method == 'mr2' and variant == 'default'")
    rhos = np.array([stats.spearmanr(g["a"], g["accuracy"])[0] for _, g in rows.groupby("seed")])
    row = table[(table["dataset"] == "toy") & (table["method"] == "mr2")].iloc[0]
    assert (row["rho_mean"], row["rho_lo"], row["rho_hi"], row["n"]) == (
        pytest.approx(rhos.mean()), pytest.approx(rhos.mean() - half_width(rhos, 0.5)),
        pytest.approx(rhos.mean() + half_width(rhos, 0.5)), 3)


# ----------------------------------------------------------------------------- group_accuracy
def test_group_table_is_each_methods_mean_and_sd_over_seeds_by_hand():
    t = full()
    pc = t["per_class"]
    t["per_class"] = pc[~((pc["method"] == "mr2_no_rep") & (pc["seed"] > 0))]  # one seed: sd 0
    table = GA.table(t, OPTIONS)
    per_run = G.run_group_accuracy(t["per_class"].query("dataset == 'toy2' and variant == 'default'"), t["groups"])
    for method in ("erm", "mr2", "mr2_no_rep"):
        expected = 100 * per_run[per_run["method"] == method][["all", "easy", "medium", "hard"]]
        rows = table.query("dataset == 'toy2' and method == @method").set_index("group")
        assert list(rows.index) == ["all", "easy", "medium", "hard"]
        assert list(rows["mean"]) == pytest.approx(list(expected.mean()))
        sd = [0.0] * 4 if method == "mr2_no_rep" else list(expected.std())
        assert list(rows["sd"]) == pytest.approx(sd) and set(rows["n"]) == {len(expected)}
    assert list(dict.fromkeys(table["method"])) == list(syn.METHODS)


def test_group_points_sit_at_their_means_with_their_sd_and_a_missing_method_leaves_its_slot():
    t = full()
    pc = t["per_class"]
    t["per_class"] = pc[(pc["dataset"] == "toy") | (pc["method"] != "mr2")]
    table = GA.table(t, OPTIONS)
    fig = GA.draw(table, OPTIONS)
    toy, toy2 = fig.axes
    assert ticks(toy.get_xticklabels()) == ["all", "easy", "medium", "hard"]
    for container, method in zip(toy.containers, syn.METHODS):
        rows = table.query("dataset == 'toy' and method == @method")
        assert list(container.lines[0].get_ydata()) == pytest.approx(list(rows["mean"]))
        assert [hi - lo for (_, lo), (_, hi) in container.lines[2][0].get_segments()] == pytest.approx(
            list(2 * rows["sd"]))
    assert [c.get_label() for c in toy2.containers] == ["ERM", "MR² uniform γ", "MR² λ = 0"]
    slots = [c.lines[0].get_xdata()[0] for c in toy.containers]  # side by side in the tables' order
    assert slots == sorted(slots) and [c.lines[0].get_xdata()[0] for c in toy2.containers] == [slots[0]] + slots[2:]


# ----------------------------------------------------------------------------- change_vs_erm
def test_class_changes_and_changed_classes_by_hand():
    """changed_classes names the classes whose interval lies above and below 0 and warns, at the
    level given, when that few of K could be chance; class_changes keeps the tables' order of methods,
    the reference's mean accuracy in %, a variant's label and the level given."""
    part = pd.DataFrame({"class_name": [f"c{i}" for i in range(10)], "diff": [5.0, -5.0] + [0.0] * 8,
                         "diff_lo": [1.0, -9.0] + [-1.0] * 8, "diff_hi": [9.0, -1.0] + [1.0] * 8})
    up, down, warning = changed_classes(part, level=0.75)  # 2 of 10 at 75 %: fewer than chance gives
    assert (up, down) == (["c0"], ["c1"]) and "one of many" in warning
    assert changed_classes(part)[2] is None  # at 95 % two of ten are more than chance's one
    t = full()
    table = class_changes(t["per_class"], variants=("default", "c_bar=0.5"), level=0.5)
    toy = table[table["dataset"] == "toy"]
    assert list(dict.fromkeys(toy["label"])) == ["mr2", "mr2_uniform", "mr2_no_rep", "mr2 (c_bar=0.5)"]
    erm = t["per_class"].query("method == 'erm' and variant == 'default'").groupby(["dataset", "class"])["accuracy"].mean()
    assert list(toy["ref_accuracy"]) == pytest.approx([100 * erm[("toy", c)] for c in toy["class"]])
    row = toy[(toy["method"] == "mr2") & (toy["variant"] == "default") & (toy["class"] == 2)].iloc[0]
    pc = t["per_class"].query("dataset == 'toy' and variant == 'default' and `class` == 2").set_index(["method", "seed"])
    d = 100 * np.array([pc.loc[("mr2", s), "accuracy"] - pc.loc[("erm", s), "accuracy"] for s in syn.SEEDS])
    assert (row["diff"], row["diff_lo"], row["diff_hi"], row["class_name"]) == (
        pytest.approx(d.mean()), pytest.approx(d.mean() - half_width(d, 0.5)), pytest.approx(d.mean() + half_width(d, 0.5)),
        "c2")


def change_runs():
    """By hand: two datasets, ERM's accuracy 0.9 − 0.1·c (ascending: n4 … n0), MR², Focal (d1 only) and
    LDAM with known changes over two seeds; MR²'s n4 on d1 ±45 points (an interval far past ±100);
    n0 of d1 without a group."""
    def acc(dataset, method, seed, c):
        erm = 0.9 - 0.1 * c
        if method == "erm":
            return erm
        if method == "mr2" and dataset == "d1" and c == 4:
            return erm + (0.45 if seed == 0 else -0.45)
        return erm + {"mr2": 0.02, "focal": -0.03, "ldam": 0.01}[method] + 0.004 * seed * (-1) ** c
    pc = pd.DataFrame([{"dataset": d, "method": m, "variant": "default", "seed": s, "class": c, "class_name": f"n{c}",
                        "accuracy": acc(d, m, s, c)}
                       for d in ("d1", "d2") for m in ("erm", "mr2", "focal", "ldam") for s in (0, 1) for c in range(5)
                       if not (m == "focal" and d == "d2")])
    groups = G.difficulty_table(pc)
    groups = groups[~((groups["dataset"] == "d1") & (groups["class"] == 0))]
    return {"per_class": pc, "groups": groups}, acc


def test_change_table_is_each_classes_paired_change_in_the_references_order_by_hand():
    t, acc = change_runs()
    table = CH.table(t, OPTIONS)
    d1 = table[(table["dataset"] == "d1") & (table["method"] == "ldam")]
    assert list(d1["class_name"]) == ["n4", "n3", "n2", "n1", "n0"]  # ERM's accuracy ascending
    d = {c: 100 * np.array([acc("d1", "ldam", s, c) - acc("d1", "erm", s, c) for s in (0, 1)]) for c in range(5)}
    assert list(d1["diff"]) == pytest.approx([d[c].mean() for c in (4, 3, 2, 1, 0)])
    assert list(d1["diff_hi"] - d1["diff"]) == pytest.approx([half_width(d[c]) for c in (4, 3, 2, 1, 0)])
    assert list(d1["group"].isna()) == [False] * 4 + [True]  # n0 of d1 has no group
    assert list(dict.fromkeys(table["dataset"])) == ["d1", "d2"]
    assert list(dict.fromkeys(table["method"])) == ["mr2", "focal", "ldam"]


def test_change_figure_names_classes_titles_counts_and_a_method_a_dataset_lacks(monkeypatch):
    t, _ = change_runs()
    monkeypatch.setattr(CH, "PANELS_PER_ROW", 2)
    fig = CH.draw(CH.table(t, OPTIONS), OPTIONS)
    axes = fig.axes  # per dataset two rows of two panels: mr2, focal / ldam, blank
    assert len(axes) == 8 and not axes[3].axison and not texts(axes[3]) and not axes[7].axison
    assert texts(axes[5]) == ["d2: no runs of focal"] and not axes[5].axison
    assert axes[0].get_title() == "d1: MR² − ERM (95% t-interval over 2 seeds)\n0 of 5 intervals exclude 0"
    assert ticks(axes[2].get_xticklabels()) == ["n4", "n3", "n2", "n1", "n0"]
    assert texts(axes[0]) == ["hard", "medium", "?"]  # the groups over the classes; n0 (easy) has none
    assert texts(axes[4]) == ["hard", "medium", "easy"]
    assert len({ax.get_ylim() for i, ax in enumerate(axes) if i in (0, 1, 2, 4, 6)}) == 1  # one y axis
    assert min(axes[0].get_ylim()) >= -110 and max(axes[0].get_ylim()) <= 110  # ±100 points at most, and room
    one_seed = {**t, "per_class": t["per_class"][t["per_class"]["seed"] == 0]}
    assert CH.draw(CH.table(one_seed, OPTIONS), OPTIONS).axes[0].get_title() == "d1: MR² − ERM (1 seed: no interval)"


@pytest.mark.parametrize("changed, count", [((3,), "1 of 10 intervals exclude 0: one of many comparisons, not a finding"),
                                            ((3, 7), "2 of 10 intervals exclude 0")])
def test_change_figure_says_when_the_classes_that_changed_are_one_of_many_comparisons(changed, count):
    """One class of ten whose interval excludes 0 is what chance gives at 95 %; two are more."""
    rows = [{"dataset": "d", "method": m, "variant": "default", "seed": s, "class": c, "class_name": f"c{c}",
             "accuracy": 0.5 + 0.01 * c + (0.05 + 0.001 * s if (m == "mr2" and c in changed) else 0.0)}
            for m in ("erm", "mr2") for s in range(4) for c in range(10)]
    t = {"per_class": pd.DataFrame(rows)}
    t["groups"] = G.difficulty_table(t["per_class"])
    assert CH.draw(CH.table(t, OPTIONS), OPTIONS).axes[0].get_title().endswith("\n" + count)


# ----------------------------------------------------------------------------- margins_over_training
def margin_log(n_epochs=4):
    """γ_k (and a_k) of two seeds by hand: γ = 1 + 0.01·k·e + 0.001·seed; MR² and MR² uniform γ on two
    datasets, MR² λ = 0 on d1 only; with a loss row of no class and a sweep variant's γ."""
    rows = [{"dataset": d, "method": m, "variant": v, "seed": s, "epoch": e, "class": c, "name": name,
             "value": (1 + 0.01 * c * e + 0.001 * s) * (1 if name == "gamma" else 3) + (v != "default")}
            for d in ("d1", "d2") for m in ("mr2", "mr2_no_rep", "mr2_uniform") for v in ("default", "c_bar=2")
            for s in (0, 1) for e in range(1, n_epochs + 1) for c in range(6) for name in ("gamma", "a")
            if not (d == "d2" and m == "mr2_no_rep")]
    rows.append({"dataset": "d1", "method": "mr2", "variant": "default", "seed": 0, "epoch": 1, "class": pd.NA,
                 "name": "gamma", "value": 99.0})
    log = pd.DataFrame(rows)
    log["class"] = log["class"].astype("Int64")
    groups = pd.DataFrame([{"dataset": d, "class": c, "group": ["hard", "hard", "medium", "medium", "easy", "easy"][c]}
                           for d in ("d1", "d2") for c in range(6)])
    names = pd.DataFrame([{"dataset": d, "class": c, "class_name": f"k{c}"} for d in ("d1", "d2") for c in range(6)
                          if c != 4])  # class 4 unnamed
    return {"epochs": log, "groups": groups, "per_class": names}


def test_margins_table_is_each_classes_mean_over_seeds_of_the_mr2_method_and_beside_it_by_hand():
    t = margin_log()
    table = MT.table(t, OPTIONS)
    assert list(dict.fromkeys(zip(table["dataset"], table["method"]))) == [
        ("d1", "mr2"), ("d2", "mr2"), ("d1", "mr2_no_rep")]  # the MR² method first, then beside it
    row = table.query("dataset == 'd1' and method == 'mr2' and epoch == 3 and `class` == 5").iloc[0]
    assert (row["value"], row["group"], row["class_name"]) == (pytest.approx(1 + 0.01 * 5 * 3 + 0.0005), "easy", "k5")
    assert set(table.loc[table["class"] == 4, "class_name"]) == {"4"}  # a class the tables do not name: its number
    assert len(table) == 3 * 4 * 6 and set(table["name"]) == {"gamma"}
    assert MT.table(t, FigureOptions(method="mr2_uniform"))["method"].iloc[0] == "mr2_uniform"
    as_read = {**t, "epochs": t["epochs"].assign(**{"class": t["epochs"]["class"].astype("float64")})}  # pd.read_csv
    pd.testing.assert_frame_equal(MT.table(as_read, OPTIONS), table)
    a = MT.table(t, OPTIONS, name="a").query("dataset == 'd1' and method == 'mr2' and epoch == 2 and `class` == 3")
    assert list(a["value"]) == pytest.approx([3 * (1 + 0.01 * 3 * 2 + 0.0005)]) and list(a["name"]) == ["a"]
    assert MT.table(t, FigureOptions(method="focal")).empty and MT.table({**t, "epochs": None}, OPTIONS).empty


def test_margins_figure_names_each_class_at_its_lines_end_and_marks_c_bar():
    t = margin_log()
    fig = MT.draw(MT.table(t, OPTIONS), OPTIONS)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["d1: MR²", "d1: MR² λ = 0", "d2: MR²", ""]
    assert texts(axes[3]) == ["d2: no gamma logged for MR² λ = 0"]
    mean = {c: [1 + 0.01 * c * e + 0.0005 for e in range(1, 5)] for c in range(6)}
    c_bar = np.mean([mean[c][-1] for c in range(6)])
    ax = axes[0]
    assert [t.get_text() for t in ax.texts if t.get_text().startswith("c̄")] == [f"c̄ = {c_bar:.3g}"]
    (dotted,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert list(dotted.get_ydata()) == pytest.approx([c_bar, c_bar])
    ends = sorted((t.get_text(), t.xy) for t in ax.texts if not t.get_text().startswith("c̄"))
    assert ends == [(n, (4.0, pytest.approx(mean[c][-1]))) for c, n in
                    sorted(((c, "4" if c == 4 else f"k{c}") for c in range(6)), key=lambda x: x[1])]
    assert list(ax.get_xticks()) == [1, 2, 3, 4] and ax.get_ylabel() == r"$\gamma_k$"
    (legend,) = [ax.get_legend() for ax in axes if ax.get_legend() is not None]
    assert ticks(legend.get_texts()) == ["easy", "medium", "hard"]
    a = MT.draw(MT.table(t, OPTIONS, name="a"), OPTIONS).axes[0]  # a_k: no c̄
    assert not [ln for ln in a.get_lines() if ln.get_linestyle() == ":"] and a.get_ylabel() == "$a_k$"
    for n in (12, 17):  # up to 12 epochs each is a tick, more: whole numbers
        ax = MT.draw(MT.table(margin_log(n), OPTIONS), OPTIONS).axes[0]
        ax.figure.canvas.draw()
        assert (list(ax.get_xticks()) == list(range(1, n + 1))) == (n == 12)
        assert all(tick == int(tick) for tick in ax.get_xticks())


# ----------------------------------------------------------------------------- sweeps
def sweep_runs():
    """By hand, three classes (hard, medium, easy): on d1 ERM and MR² at c̄ = 1 (three seeds), a c̄ sweep
    at 0.5 (three seeds), 2 (seeds 0, 1) and 4 (seed 0); on d2 ERM, MR² and a λ sweep at 0.3."""
    def acc(dataset, method, value, seed, c):
        base = {0: 0.4, 1: 0.6, 2: 0.8}[c] + 0.01 * seed * (-1) ** c + (0.02 if dataset == "d2" else 0.0)
        return base if method == "erm" else base + 0.05 * np.log2(value) * (c == 0) + 0.003 * seed ** 2
    spec = [("d1", "erm", "default", None, 1.0, 0.1, (0, 1, 2)), ("d1", "mr2", "default", None, 1.0, 0.1, (0, 1, 2)),
            ("d1", "mr2", "c_bar=0.5", "c_bar", 0.5, 0.1, (0, 1, 2)), ("d1", "mr2", "c_bar=2", "c_bar", 2, 0.1, (0, 1)),
            ("d1", "mr2", "c_bar=4.0", "c_bar", 4.0, 0.1, (0,)), ("d2", "erm", "default", None, 1.0, 0.1, (0, 1)),
            ("d2", "mr2", "default", None, 1.0, 0.1, (0, 1)), ("d2", "mr2", "lam=0.3", "lam", 1.0, 0.3, (0, 1))]
    per_class, runs = [], []
    for dataset, method, variant, tag, c_bar, lam, seeds in spec:
        for seed in seeds:
            runs.append({"dataset": dataset, "method": method, "variant": variant, "seed": seed,
                         "config.tags.sweep": tag, "config.method.options.c_bar": c_bar,
                         "config.method.options.lam": lam})
            per_class += [{"dataset": dataset, "method": method, "variant": variant, "seed": seed, "class": c,
                           "class_name": f"k{c}", "accuracy": acc(dataset, method, c_bar, seed, c)} for c in range(3)]
    groups = pd.DataFrame([{"dataset": d, "class": c, "group": ("hard", "medium", "easy")[c]}
                           for d in ("d1", "d2") for c in range(3)])
    runs = pd.DataFrame(runs).astype({"config.method.options.c_bar": object})  # 2 stays an int, as in YAML
    return {"per_class": pd.DataFrame(per_class), "runs": runs, "groups": groups}


def test_sweep_table_is_each_values_mean_its_paired_interval_the_references_level_and_the_default_by_hand():
    """Each value's mean over its seeds, its interval the paired t-interval over the seeds it shares
    with ERM put around that mean (none with one shared seed), ERM's mean over its own seeds, and the
    value the default variant runs; values read from the resolved config (2 written as an int)."""
    t = sweep_runs()
    table = SW.table(t, OPTIONS).set_index(["dataset", "option", "classes", "value"])
    acc = t["per_class"].set_index(["dataset", "method", "variant", "seed", "class"])["accuracy"]

    def group(dataset, method, variant, seed, classes):
        return 100 * np.mean([acc[(dataset, method, variant, seed, c)] for c in ([0, 1, 2] if classes == "all" else [0])])

    variants = {0.5: ("c_bar=0.5", (0, 1, 2)), 1.0: ("default", (0, 1, 2)), 2.0: ("c_bar=2", (0, 1)),
                4.0: ("c_bar=4.0", (0,))}
    for classes in ("all", "hard"):
        for value, (variant, seeds) in variants.items():
            points = np.array([group("d1", "mr2", variant, s, classes) for s in seeds])
            d = points - np.array([group("d1", "erm", "default", s, classes) for s in seeds])
            half = half_width(d) if len(d) > 1 else 0.0
            row = table.loc[("d1", "c_bar", classes, value)]
            assert (row["mean"], row["lo"], row["hi"], row["n"], row["default"]) == (
                pytest.approx(points.mean()), pytest.approx(points.mean() - half), pytest.approx(points.mean() + half),
                len(seeds), value == 1.0), (classes, value)
            assert row["ref_mean"] == pytest.approx(np.mean([group("d1", "erm", "default", s, classes) for s in (0, 1, 2)]))
    assert sorted(table.loc[("d2", "lam", "all")].index) == [0.1, 0.3]  # d2's own default λ
    assert ("d2", "c_bar") not in table.index.droplevel([2, 3]) and ("d1", "lam") not in table.index.droplevel([2, 3])
    no_ref = SW.table(t, FigureOptions(reference="none"))
    assert no_ref["ref_mean"].isna().all() and (no_ref["lo"] == no_ref["hi"]).all()
    assert SW.table(t, FigureOptions(sweep_method="mr2_uniform")).empty


def test_sweep_members_and_table_of_runs_that_cannot_hold_a_sweep_are_empty_with_their_columns():
    t = sweep_runs()
    pc, runs, groups = t["per_class"], t["runs"], t["groups"]
    assert list(SW.sweep_members(None, "mr2", "c_bar").columns) == ["dataset", "method", "variant", "seed"]
    for missing in ("config.tags.sweep", "config.method.options.lam"):
        cut = runs.drop(columns=missing)
        members = SW.sweep_members(cut, "mr2", "lam")
        assert members.empty and list(members.columns) == list(cut.columns)
    members = SW.sweep_members(runs, "mr2", "lam")
    assert sorted(zip(members["dataset"], members["variant"], members["seed"])) == [
        ("d2", "default", 0), ("d2", "default", 1), ("d2", "lam=0.3", 0), ("d2", "lam=0.3", 1)]
    empty = SW.sweep_table(pc, runs.drop(columns="config.tags.sweep"), groups)
    assert empty.empty and list(empty.columns) == ["dataset", "seed", "variant", "option", "value", "all", "hard"]
    as_text = runs.assign(**{"config.method.options.lam": runs["config.method.options.lam"].astype(str),
                             "config.method.options.tau": 0.1})  # an option nothing sweeps comes first
    table = SW.sweep_table(pc, as_text, groups, options=("tau", "lam"))
    assert set(table["option"]) == {"lam"} and sorted(table["value"].unique()) == [0.1, 0.3]


def test_sweep_figure_has_a_panel_per_dataset_and_swept_option_on_log_axes_with_the_values_as_ticks():
    fig = SW.draw(SW.table(sweep_runs(), OPTIONS), OPTIONS)
    axes = fig.axes
    assert texts(axes[1]) == ["d1, lam: no sweep in this config"] and texts(axes[2]) == ["d2, c_bar: no sweep in this config"]
    assert [axes[i].get_title() for i in (0, 3)] == [r"d1: MR², sweep of $\bar{c}$", r"d2: MR², sweep of $\lambda$"]
    assert axes[0].get_xscale() == axes[3].get_xscale() == "log"
    assert ticks(axes[0].get_xticklabels()) == ["0.5", "1", "2", "4"] and ticks(axes[3].get_xticklabels()) == ["0.1", "0.3"]
    (default,) = [ln for ln in axes[0].get_lines() if ln.get_label() == "default"]
    assert default.get_xdata()[0] == 1.0
    fig, (zero, positive, other) = plotting.plt.subplots(1, 3)
    SW.value_axis(zero, "lam", [0.0, 0.05, 0.5])  # through 0: symmetric log, linear below the smallest value
    SW.value_axis(positive, "c_bar", [0.1, 1.0])
    SW.value_axis(other, "seed", [0, 1, 2])
    assert zero.get_xscale() == "symlog" and zero.xaxis.get_transform().linthresh == 0.05
    assert (positive.get_xscale(), other.get_xscale()) == ("log", "linear")


# ----------------------------------------------------------------------------- tradeoff
def tradeoff_points():
    cols = ["easy_diff", "easy_lo", "easy_hi", "hard_diff", "hard_lo", "hard_hi"]
    return pd.DataFrame([("p", "mr2", 1, *(5.0, np.nan, np.nan, 6.0, np.nan, np.nan)),
                         ("p", "ldam", 1, *(7.0, np.nan, np.nan, 8.0, np.nan, np.nan)),
                         ("q", "mr2", 2, *(-0.2, -0.4, -0.1, -0.3, -0.5, -0.1)),
                         ("q", "ldam", 2, *(-0.5, -0.7, -0.3, -0.6, -0.8, -0.4))],
                        columns=["dataset", "method", "n_paired", *cols])


def test_tradeoff_panels_keep_the_origin_in_view_and_count_the_paired_seeds():
    """Points all right of and above 0 (dataset p, one paired seed, no intervals) or all left of and
    below it (q, two): each panel shows its points, their intervals and the origin, its title counts
    the seeds in the singular or plural, and the one legend names every method."""
    p, q = TR.draw(tradeoff_points(), OPTIONS).axes
    assert p.get_title() == "p (1 paired seed)" and q.get_title() == "q (2 paired seeds)"
    for ax, xs, ys in ((p, (0, 7), (0, 8)), (q, (-0.7, 0), (-0.8, 0))):
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        assert x0 < min(xs) and max(xs) < x1 and y0 < min(ys) and max(ys) < y1
    legends = [ax.get_legend() for ax in (p, q) if ax.get_legend() is not None]
    assert len(legends) == 1 and ticks(legends[0].get_texts()) == ["MR²", "LDAM"]


def test_tradeoff_figure_draws_each_point_with_both_intervals_against_the_reference():
    t = syn.tables(methods=("erm", "mr2", "mr2_uniform"))
    syn.renamed(t, {"erm": "base"})
    t["groups"] = G.difficulty_table(t["per_class"], reference="base")
    options = FigureOptions(reference="base")
    points = TR.table(t, options).set_index("method")
    (ax,) = TR.draw(TR.table(t, options), options).axes
    assert ax.get_xlabel() == "Δ easy classes vs base (points)" and ax.get_ylabel() == "Δ hard classes vs base (points)"
    for container, method in zip(ax.containers, ("mr2", "mr2_uniform")):
        p = points.loc[method]
        assert tuple(container.lines[0].get_xydata()[0]) == pytest.approx((p["easy_diff"], p["hard_diff"]))
        xbar, ybar = (bars.get_segments()[0] for bars in container.lines[2])
        assert [x for x, _ in xbar] == pytest.approx([p["easy_lo"], p["easy_hi"]])
        assert [y for _, y in ybar] == pytest.approx([p["hard_lo"], p["hard_hi"]])
    two = {**t, "per_class": t["per_class"][t["per_class"]["class"] < 2]}  # no easy group: nothing to place
    two["groups"] = G.difficulty_table(two["per_class"], reference="base")
    fig = draw_figure("tradeoff", TR.table(two, options), options)
    assert [t.get_text() for t in fig.axes[0].texts] == [TR.FIGURE["empty"]]
