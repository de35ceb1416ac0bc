"""Figures: every figure is written as a real PNG and PDF (the other tests read what is drawn,
without saving: most of a figure's cost), survives missing methods and one seed,
and says so when there is nothing to draw; one colour per method in every figure, class names on
every class axis, λ and c̄ on log axes, the per-class changes' seed intervals, the paper's symbols."""

from __future__ import annotations

import re

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import results_data as syn
from mr2.results import figures as F
from mr2.results import claim_figures, plotting, regimes, tradeoff
from mr2.results import groups as G
from mr2.results import tables as R


def check_files(paths):
    png, pdf = paths
    assert png.suffix == ".png" and pdf.suffix == ".pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000
    assert plt.get_fignums() == []  # closed after saving


#: every module that saves a figure of the report (placeholders are saved in plotting)
FIGURE_MODULES = (F, regimes, claim_figures, tradeoff, plotting)


@pytest.fixture
def captured(monkeypatch):
    """The texts and axes of every figure saved (the files are still written)."""
    return syn.spy_on_figures(monkeypatch, FIGURE_MODULES, save=True)


@pytest.fixture
def drawn(monkeypatch):
    """The texts and axes of every figure drawn; no file is written."""
    return syn.spy_on_figures(monkeypatch, FIGURE_MODULES, save=False)


def legend_colours(ax):
    """label -> hex colour of the legend of ``ax`` (lines, bars or error bars)."""
    legend = ax.get_legend()
    out = {}
    for handle, text in zip(legend.legend_handles, legend.get_texts()):
        colour = handle.get_facecolor() if hasattr(handle, "get_facecolor") and not hasattr(handle, "get_color") \
            else handle.get_color()
        out[text.get_text()] = matplotlib.colors.to_hex(colour)
    return out


def full():
    t = syn.tables(datasets=("toy", "toy2"), sweeps=("c_bar=0.5", "c_bar=2.0", "lam=0.3"))
    return t, G.difficulty_table(t["per_class"])


def test_every_figure_writes_png_and_pdf(tmp_path, captured):
    t, groups = full()
    made = F.make_figures(t, groups, tmp_path)
    # toy and toy2 are different data, so no data is run in several regimes: no regimes figure at all
    assert list(made) == ["claim_forest", "accuracy_vs_variability", "per_class_sorted", "group_accuracy",
                          "change_vs_erm", "margins_over_training", "sweeps", "tradeoff"]
    for name, paths in made.items():
        assert paths[0] == tmp_path / f"{name}.png"
        check_files(paths)
    assert not (tmp_path / "regimes.png").exists()
    # real content, not placeholders: one panel per dataset (accuracy against a_k and the spread: per
    # dataset, feature and method; the change figure: per dataset and method other than ERM), sweeps
    # 2 datasets x 2 options
    assert [c["placeholder"] for c in captured] == [False] * 8
    n_other = len([m for m in syn.METHODS if m != "erm"])
    assert [len(c["axes"]) for c in captured[:6]] == [2, 2 * 2 * 2, 2, 2, 2 * n_other, 2 * 2]  # margins: MR², MR² λ = 0
    assert [t.split("\n")[0] for t in captured[4]["titles"][:n_other]] == [
        f"toy: {plotting.display_name(m)} − ERM (95% t-interval over 3 seeds)" for m in syn.METHODS if m != "erm"]
    assert len(captured[6]["axes"]) == 4
    assert len(captured[7]["axes"]) == 2  # the trade-off plane: a panel per dataset


def test_one_colour_per_method_in_every_figure(tmp_path, drawn):
    t, groups = full()
    F.make_figures(t, groups, tmp_path)
    regime_tables = syn.tables(datasets=("small", "large"), regimes={"small": ("fm", 600, 6, 1.0),
                                                                     "large": ("fm", None, 30, 1.0)})
    regimes.plot_regimes(regime_tables["per_class"], regime_tables["runs"],
                         G.difficulty_table(regime_tables["per_class"]), tmp_path / "regimes")
    want = {m: matplotlib.colors.to_hex(plotting.method_colour(m)) for m in syn.METHODS}
    assert len(set(want.values())) == len(want)  # distinct, and none is a group's colour
    assert not set(want.values()) & {matplotlib.colors.to_hex(c) for c in plotting.GROUP_COLOURS.values()}
    claim, scatter, sorted_fig, bars, change = drawn[:5]
    assert legend_colours(claim["axes"][-1]) == {plotting.display_name(m): want[m] for m in syn.METHODS if m != "erm"}
    assert legend_colours(sorted_fig["axes"][-1]) == {plotting.display_name(m): c for m, c in want.items()}
    assert legend_colours(bars["axes"][-1]) == {plotting.display_name(m): c for m, c in want.items()}
    by_name = {plotting.display_name(m): m for m in syn.METHODS}
    for ax in scatter["axes"] + change["axes"]:  # a panel per method, titled by it
        method = ax.get_title().split(": ")[1].split("\n")[0].split(" − ")[0]
        method = by_name.get(method, method)
        colours = {matplotlib.colors.to_hex(c) for coll in ax.collections for c in coll.get_facecolors()}
        colours |= {matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()[:1]}
        assert colours == {want[method]}, ax.get_title()
    regime_legend = legend_colours(drawn[-1]["axes"][-1])
    assert regime_legend == {plotting.display_name(m): want[m] for m in regimes.METHODS}
    tradeoff_legend = legend_colours(drawn[7]["axes"][-1])  # the trade-off plane names methods for readers
    assert tradeoff_legend == {plotting.display_name(m): want[m] for m in syn.METHODS if m != "erm"}


def test_sorted_lines_are_ascending_per_method(tmp_path, drawn, monkeypatch):
    t, _ = full()
    monkeypatch.setattr(F, "DOT_PLOT_MAX", 0)  # many classes: the paper's sorted curves
    F.plot_per_class_sorted(t["per_class"], tmp_path / "s")
    lines = drawn[0]["axes"][0].get_lines()
    curves = [ln.get_ydata() for ln in lines if len(ln.get_ydata()) == syn.K]
    assert len(curves) == len(syn.METHODS)  # sweep variants are left out by default
    assert all((curve[1:] >= curve[:-1]).all() for curve in curves)
    means = 100 * t["per_class"].query("variant == 'default'").groupby(["dataset", "method", "class"])["accuracy"].mean()
    for ax, dataset in zip(drawn[0]["axes"], ("toy", "toy2")):  # each panel its own dataset's classes
        curves = [ln.get_ydata() for ln in ax.get_lines() if len(ln.get_ydata()) == syn.K]
        assert [list(c) for c in curves] == [pytest.approx(sorted(means[(dataset, m)])) for m in syn.METHODS]
        assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == (
            dataset, "rank of the class within each method (ascending accuracy)", "test accuracy (%)")
    legend = drawn[0]["axes"][1].get_legend()  # one legend, on the last panel, in the tables' order and colours
    assert drawn[0]["axes"][0].get_legend() is None and legend.get_title().get_text() == "method"
    assert legend_colours(drawn[0]["axes"][1]) == {
        plotting.DISPLAY_NAMES[m]: matplotlib.colors.to_hex(plotting.METHOD_COLOURS[m]) for m in syn.METHODS}
    assert [x.get_text() for x in legend.get_texts()] == [plotting.DISPLAY_NAMES[m] for m in syn.METHODS]


def test_few_classes_get_a_named_dot_plot_in_erms_order(tmp_path, drawn):
    t, _ = full()
    F.plot_per_class_sorted(t["per_class"], tmp_path / "s")
    ax = drawn[0]["axes"][0]  # toy
    order = [f"c{c}" for c in np.argsort(syn.BASE)]  # ERM's accuracy ascending, hardest at the top
    assert [x.get_text() for x in ax.get_yticklabels()] == order
    pc = t["per_class"].query("dataset == 'toy' and variant == 'default'")
    means = 100 * pc.groupby(["method", "class"])["accuracy"].mean()
    for line, method in zip(ax.get_lines(), syn.METHODS):
        assert line.get_xdata() == pytest.approx([means[(method, int(n[1:]))] for n in order])
        assert line.get_linestyle() == "None" and line.get_label() == plotting.DISPLAY_NAMES[method]
        assert matplotlib.colors.to_hex(line.get_color()) == matplotlib.colors.to_hex(plotting.METHOD_COLOURS[method])
    assert ax.get_ylim() == (syn.K - 0.5, -0.5)  # the hardest class at the top, no empty row
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("toy", "test accuracy (%)",
                                                                  "class (ascending ERM accuracy)")
    assert drawn[0]["axes"][1].get_legend().get_title().get_text() == "method" and ax.get_legend() is None
    # without the reference among the runs: the classes in the order of their mean over the methods
    F.plot_per_class_sorted(t["per_class"], tmp_path / "n", methods=("mr2", "mr2_uniform"))
    ax = drawn[1]["axes"][0]
    both = pc[pc["method"].isin(["mr2", "mr2_uniform"])].groupby(["method", "class"])["accuracy"].mean()
    mean_order = [f"c{c}" for c in both.groupby("class").mean().sort_values(kind="stable").index]
    assert [x.get_text() for x in ax.get_yticklabels()] == mean_order and ax.get_ylabel() == "class"
    F.plot_per_class_sorted(t["per_class"], tmp_path / "p", methods=("absent",))
    assert drawn[2]["placeholder"] and drawn[2]["texts"] == ["no runs to draw"]
    F.plot_per_class_sorted(t["per_class"], tmp_path / "v", methods=("mr2",), variants=("default", "c_bar=0.5"))
    lines = drawn[3]["axes"][0].get_lines()  # a sweep's variant is a run of its own, named and coloured so
    assert [ln.get_label() for ln in lines] == ["MR²", "MR² (c_bar=0.5)"]
    assert [matplotlib.colors.to_hex(ln.get_color()) for ln in lines] == [
        matplotlib.colors.to_hex(plotting.method_colour("mr2", v)) for v in ("default", "c_bar=0.5")]


def test_per_class_figure_orders_by_the_reference_up_to_its_class_limit_and_keeps_the_methods_order(tmp_path, drawn):
    """By hand: the dot plot's rows follow ERM's accuracy even where the mean over the methods orders
    them otherwise, up to exactly ``DOT_PLOT_MAX`` classes (the figure then as tall as the rows need,
    5 inches a panel wide, small named rows with a light horizontal grid); one class more gives the
    sorted lines, whose legend keeps the tables' order of the methods (not their names' order)."""
    def table(k, methods=("erm", "mr2")):
        acc = {"erm": lambda c: 0.9 - 0.02 * c, "mr2": lambda c: 0.1 + 0.025 * c, "focal": lambda c: 0.5 + 0.001 * c}
        return pd.DataFrame([{"dataset": "d", "method": m, "variant": "default", "seed": 0, "class": c,
                              "class_name": f"n{c}", "accuracy": acc[m](c)} for m in methods for c in range(k)])
    k = F.DOT_PLOT_MAX
    pc = table(k)
    F.plot_per_class_sorted(pc, tmp_path / "dots")
    ax = drawn[0]["axes"][0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"n{c}" for c in reversed(range(k))]  # ERM's order
    mean = pc.groupby("class")["accuracy"].mean().sort_values(kind="stable")
    assert list(mean.index) != list(reversed(range(k)))  # the methods' mean orders them otherwise
    assert tuple(drawn[0]["fig"].get_size_inches()) == pytest.approx((5.0, 0.28 * k + 1.2))
    assert {t.get_fontsize() for t in ax.get_yticklabels()} == {8}
    assert all((ln.get_markersize(), ln.get_alpha()) == (5, 0.85) for ln in ax.get_lines())
    assert all(line.get_visible() for line in ax.yaxis.get_gridlines())
    assert not any(line.get_visible() for line in ax.xaxis.get_gridlines())
    assert {(line.get_color(), line.get_linewidth()) for line in ax.yaxis.get_gridlines()} == {("0.92", 0.6)}
    tied = pc.assign(accuracy=np.where(pc["method"] == "erm", 0.5 + 0.1 * (pc["class"] < k // 2), pc["accuracy"]))
    F.plot_per_class_sorted(tied, tmp_path / "tied")  # ERM's ties in the order of the classes
    labels = [t.get_text() for t in drawn.pop(1)["axes"][0].get_yticklabels()]
    assert labels == [f"n{c}" for c in range(k // 2, k)] + [f"n{c}" for c in range(k // 2)]
    F.plot_per_class_sorted(table(k + 1, ("erm", "mr2", "focal")), tmp_path / "lines")
    ax = drawn[1]["axes"][0]
    assert not ax.get_yticklabels() or ax.get_ylabel() == "test accuracy (%)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ERM", "MR²", "Focal"]
    assert tuple(drawn[1]["fig"].get_size_inches()) == pytest.approx(plotting.PANEL_SIZE)


def test_accuracy_against_a_has_a_panel_per_method_with_named_classes(tmp_path, drawn):
    t, _ = full()
    t["per_class"].loc[t["per_class"]["method"] == "mr2", "a"] *= 1e-3  # another scale: its own axis
    pc = t["per_class"]
    for seed in sorted(pc["seed"].unique()):  # seed s swaps a_k of classes s and 2s + 1: distinct ρ per seed
        rows = (pc["seed"] == seed) & (pc["method"] == "erm")
        first, second = rows & (pc["class"] == seed), rows & (pc["class"] == 2 * seed + 1)
        pc.loc[first, "a"], pc.loc[second, "a"] = pc.loc[second, "a"].to_numpy(), pc.loc[first, "a"].to_numpy()
    F.plot_accuracy_vs_variability(t["per_class"], tmp_path / "v")
    axes = drawn[0]["axes"]  # per dataset a row for a_k and a row for the spread, a panel per method
    assert [ax.get_title().split("\n")[0] for ax in axes] == ["toy: ERM", "toy: MR²"] * 2 + ["toy2: ERM", "toy2: MR²"] * 2
    assert [ax.get_xlabel().split(" of ")[0] for ax in axes[:4]] == [r"$a_k$"] * 2 + [r"$\|\hat{s}_k\|^2$"] * 2
    assert axes[1].get_xlim()[1] < 0.01 < axes[0].get_xlim()[0]  # MR²'s a_k do not collapse onto ERM's axis
    # the title's ρ is the mean of the per-seed ρ with its t-interval over seeds, as the text's
    pc = t["per_class"].query("dataset == 'toy' and method == 'erm' and variant == 'default'")
    rhos = [stats.spearmanr(g["a"], g["accuracy"])[0] for _, g in pc.groupby("seed")]
    half = stats.t.ppf(0.975, len(rhos) - 1) * np.std(rhos, ddof=1) / np.sqrt(len(rhos))
    lo, hi = max(-1.0, np.mean(rhos) - half), min(1.0, np.mean(rhos) + half)
    assert axes[0].get_title().split("\n")[1] == (f"ρ = {np.mean(rhos):+.2f} [95% CI {lo:+.2f}, {hi:+.2f}], "
                                                  f"{len(rhos)} seeds")
    assert len(set(np.round(rhos, 9))) == len(rhos) and np.mean(rhos) < -0.5  # a_k falls with accuracy here
    assert sorted(t.get_text() for t in axes[0].texts) == sorted(f"c{c}" for c in range(syn.K))


def test_accuracy_against_a_by_hand_points_titles_and_empty_panels(tmp_path, drawn):
    """Each panel's points are its own dataset's and method's classes (mean a_k over seeds, accuracy
    in %), in the method's colour, rows sharing y; a method a dataset lacks says so and the next is
    drawn; a variant is named in title and axis with its own ρ; placeholders name the methods."""
    t, _ = full()
    pc = t["per_class"]
    pc["a"] += np.random.default_rng(5).normal(0, 0.8, len(pc))  # a ρ of its own per run
    pc["spread"] = pc["a"] + np.random.default_rng(6).normal(0, 0.8, len(pc))
    pc = pc[~((pc["dataset"] == "toy2") & (pc["method"] == "erm"))]
    F.plot_accuracy_vs_variability(pc, tmp_path / "v")
    axes = drawn[0]["axes"]  # toy: a, spread; toy2: a, spread; ERM and MR² in each row
    assert len(axes) == 8 and not axes[4].axison and not axes[6].axison
    assert [t.get_text() for t in axes[4].texts] == ["toy2: no runs of erm"]
    titles = set()
    means = pc[pc["variant"] == "default"].groupby(["dataset", "method", "class"])[["a", "spread", "accuracy"]].mean()
    for ax, (dataset, feature, method) in zip(axes, [(d, f, m) for d in ("toy", "toy2") for f in ("a", "spread")
                                                     for m in ("erm", "mr2")]):
        if dataset == "toy2" and method == "erm":
            continue
        (points,) = ax.collections
        expected = means.loc[(dataset, method)]
        assert np.asarray(points.get_offsets()) == pytest.approx(
            np.column_stack([expected[feature], 100 * expected["accuracy"]]))
        assert matplotlib.colors.to_hex(points.get_facecolor()[0][:3]) == matplotlib.colors.to_hex(
            plotting.METHOD_COLOURS[method])
        rows = pc[(pc["dataset"] == dataset) & (pc["method"] == method) & (pc["variant"] == "default")]
        rhos = [stats.spearmanr(g[feature], g["accuracy"])[0] for _, g in rows.groupby("seed")]
        assert ax.get_title().startswith(f"{dataset}: {plotting.DISPLAY_NAMES[method]}\nρ = {np.mean(rhos):+.2f} ")
        titles.add(ax.get_title())
        assert ax.get_ylabel() == "test accuracy (%)"
    assert len({title.split("\n")[1] for title in titles}) == 6  # every panel's ρ its own
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[1])
    assert not axes[0].get_shared_y_axes().joined(axes[0], axes[2])

    F.plot_accuracy_vs_variability(t["per_class"], tmp_path / "w", methods=("mr2",), variant="c_bar=0.5",
                                   features=("a",), level=0.5)
    ax = drawn[1]["axes"][0]
    rows = t["per_class"].query("dataset == 'toy' and method == 'mr2' and variant == 'c_bar=0.5'")
    rhos = [stats.spearmanr(g["a"], g["accuracy"])[0] for _, g in rows.groupby("seed")]
    half = stats.t.ppf(0.75, len(rhos) - 1) * np.std(rhos, ddof=1) / np.sqrt(len(rhos))
    lo, hi = max(-1.0, np.mean(rhos) - half), min(1.0, np.mean(rhos) + half)
    assert ax.get_title().startswith(f"toy: MR² (c_bar=0.5)\nρ = {np.mean(rhos):+.2f} [50% CI {lo:+.2f}, {hi:+.2f}]")
    assert ax.title.get_fontsize() == 8
    (points,) = ax.collections
    assert (list(points.get_sizes()), points.get_alpha()) == ([18], 0.8)
    assert ax.get_xlabel() == "$a_k$ of MR² (c_bar=0.5)'s training features"
    assert matplotlib.colors.to_hex(ax.collections[0].get_facecolor()[0][:3]) == matplotlib.colors.to_hex(
        plotting.method_colour("mr2", "c_bar=0.5"))
    F.plot_accuracy_vs_variability(t["per_class"], tmp_path / "p", methods=("x", "y"))
    F.plot_accuracy_vs_variability(t["per_class"], tmp_path / "q", features=("no_such_column",))
    assert [r["texts"] for r in drawn[2:]] == [["no runs of x, y"], ["no runs of erm, mr2"]]


def test_format_seed_rho_by_hand():
    row = {"rho_mean": -0.531, "rho_lo": -0.852, "rho_hi": -0.214, "n": 3}
    assert F.format_seed_rho(row) == "ρ = -0.53 [95% CI -0.85, -0.21], 3 seeds"
    assert F.format_seed_rho({**row, "rho_lo": -0.9, "rho_hi": 0.1}, 0.9) == \
        "ρ = -0.53 [90% CI -0.90, +0.10], 3 seeds: not shown"
    assert F.format_seed_rho({**row, "rho_lo": -0.95, "rho_hi": 0.96}) == \
        "ρ = -0.53 [95% CI -0.95, +0.96], 3 seeds: uninformative"
    assert F.format_seed_rho({**row, "rho_lo": 0.2, "rho_hi": 0.9}).endswith("3 seeds")  # 'holds' is not added
    assert F.format_seed_rho({**row, "rho_lo": np.nan, "rho_hi": np.nan, "n": 1}) == "ρ = -0.53 (no interval: 1 seed)"
    for undefined in (None, {**row, "n": 0}, {**row, "rho_mean": np.nan}):
        assert F.format_seed_rho(undefined) == "ρ undefined"


def test_changed_classes_and_class_changes_by_hand():
    """changed_classes names the classes whose interval lies above and below 0 and warns, at the
    level given, when that few of K could be chance; class_changes keeps the tables' order of methods,
    ERM's mean accuracy in %, a variant's label and the level given."""
    part = pd.DataFrame({"class_name": [f"c{i}" for i in range(10)], "diff": [5.0, -5.0] + [0.0] * 8,
                         "diff_lo": [1.0, -9.0] + [-1.0] * 8, "diff_hi": [9.0, -1.0] + [1.0] * 8})
    up, down, warning = F.changed_classes(part, level=0.75)  # 2 of 10 at 75 %: fewer than chance gives
    assert (up, down) == (["c0"], ["c1"]) and "one of many" in warning
    assert F.changed_classes(part)[2] is None  # at 95 % two of ten are more than chance's one

    t, _ = full()
    table = F.class_changes(t["per_class"], variants=("default", "c_bar=0.5"), level=0.5)
    toy = table[table["dataset"] == "toy"]
    assert list(dict.fromkeys(toy["label"])) == ["mr2", "mr2_uniform", "mr2_no_rep", "mr2 (c_bar=0.5)"]
    erm = t["per_class"].query("method == 'erm' and variant == 'default'").groupby(["dataset", "class"])["accuracy"].mean()
    assert list(toy["ref_accuracy"]) == pytest.approx([100 * erm[("toy", c)] for c in toy["class"]])
    row = toy[(toy["method"] == "mr2") & (toy["variant"] == "default") & (toy["class"] == 2)].iloc[0]
    pc = t["per_class"].query("dataset == 'toy' and variant == 'default'")
    pc = pc[pc["class"] == 2].set_index(["method", "seed"])
    d = 100 * np.array([pc.loc[("mr2", s), "accuracy"] - pc.loc[("erm", s), "accuracy"] for s in syn.SEEDS])
    half = stats.t.ppf(0.75, 2) * d.std(ddof=1) / np.sqrt(3)
    assert (row["diff"], row["diff_lo"], row["diff_hi"], row["class_name"]) == (
        pytest.approx(d.mean()), pytest.approx(d.mean() - half), pytest.approx(d.mean() + half), "c2")


def test_seed_rho_keeps_the_tables_order_and_the_level():
    t, _ = full()
    pc = t["per_class"].copy()
    pc["a"] += np.random.default_rng(3).normal(0, 0.8, len(pc))
    table = F.seed_rho(pc[pc["variant"] == "default"], "a", level=0.5)
    assert list(dict.fromkeys(table["method"])) == list(syn.METHODS)  # not sorted by name
    rows = pc.query("dataset == 'toy' and method == 'mr2' and variant == 'default'")
    rhos = np.array([stats.spearmanr(g["a"], g["accuracy"])[0] for _, g in rows.groupby("seed")])
    half = stats.t.ppf(0.75, 2) * rhos.std(ddof=1) / np.sqrt(3)
    row = table[(table["dataset"] == "toy") & (table["method"] == "mr2")].iloc[0]
    assert (row["rho_mean"], row["rho_lo"], row["rho_hi"], row["n"]) == (
        pytest.approx(rhos.mean()), pytest.approx(rhos.mean() - half), pytest.approx(rhos.mean() + half), 3)
    empty = F.seed_rho(pc.iloc[:0], "a")
    assert empty.empty and list(empty.columns) == ["dataset", "method", "variant", "rho_mean", "rho_lo", "rho_hi", "n"]


def test_figures_with_erm_and_mr2_and_one_seed(tmp_path, drawn):
    t = syn.tables(methods=("erm", "mr2"), seeds=(0,))
    groups = G.difficulty_table(t["per_class"])
    made = F.make_figures(t, groups, tmp_path)
    assert len(drawn) == len(made)  # one figure drawn per name made, each for real (below)
    assert "sweeps" not in made and "regimes" not in made  # no placeholder figure for what the run lacks
    assert not any(c["placeholder"] for c in drawn)
    F.plot_sweeps(t["per_class"], t["runs"], groups, tmp_path / "sweeps")  # called anyway: says so
    assert drawn[-1]["texts"] == [F.NO_SWEEP]


def test_sweeps_read_each_value_from_the_resolved_config_and_mark_missing_sweeps(tmp_path, drawn):
    t = syn.tables(sweeps=("c_bar=0.5", "c_bar=2.0"))
    groups = G.difficulty_table(t["per_class"])
    table = F.sweep_table(t["per_class"], t["runs"], groups)
    assert sorted(table["value"].unique()) == [0.5, 1.0, 2.0]  # the default variant at its configured c̄ = 1
    assert set(table["option"]) == {"c_bar"} and len(table) == 3 * 3
    # the value comes from the config, not from the variant's name
    runs = t["runs"].assign(**{"config.method.options.c_bar": t["runs"]["config.method.options.c_bar"] * 3})
    assert sorted(F.sweep_table(t["per_class"], runs, groups)["value"].unique()) == [1.5, 3.0, 6.0]
    F.plot_sweeps(t["per_class"], t["runs"], groups, tmp_path / "sw")
    assert drawn[0]["texts"] == [] and len(drawn[0]["axes"]) == 1  # no panel for λ, which nothing sweeps


def test_placeholders_when_methods_are_absent(tmp_path, captured):
    t = syn.tables(methods=("erm",), seeds=(0, 1))
    groups = G.difficulty_table(t["per_class"])
    check_files(F.plot_change_vs_reference(t["per_class"], tmp_path / "c"))
    check_files(F.plot_margins_over_training(t["epochs"], groups, tmp_path / "m"))
    check_files(F.plot_accuracy_vs_variability(t["per_class"], tmp_path / "a", methods=("mr2",)))
    assert all(len(c["texts"]) == 1 for c in captured)
    assert "mr2" in captured[1]["texts"][0]


def test_margin_lines_follow_the_groups_medium_included(tmp_path, drawn):
    t, groups = full()
    F.plot_margins_over_training(t["epochs"], groups, tmp_path / "g")
    ax = drawn[0]["axes"][0]
    finals = [ln.get_ydata()[-1] for ln in ax.get_lines() if len(ln.get_ydata()) == 4]
    # 3 easy + 3 medium + 3 hard class lines and 3 group means; hard classes' γ grows, the others' falls
    assert len(finals) == 12
    assert sorted(round(v, 6) for v in finals) == [0.8] * 8 + [1.4] * 4
    legend = drawn[0]["axes"][-1].get_legend()  # one legend, beside the last panel
    assert [t.get_text() for t in legend.get_texts()] == ["easy", "medium", "hard"]
    assert ax.get_ylabel() == r"$\gamma_k$"
    F.plot_margins_over_training(t["epochs"], groups, tmp_path / "h", show=("easy", "hard"))
    assert "(medium classes not shown)" in drawn[1]["titles"][0]  # an omission is stated on the figure


def margin_log(n_epochs=4):
    """γ_k (and a_k) of two seeds by hand: γ = 1 + 0.01·k·e + 0.001·seed; MR² and MR² uniform γ on two
    datasets, MR² λ = 0 on d1 only; with a loss row of no class."""
    rows = [{"dataset": d, "method": m, "variant": "default", "seed": s, "epoch": e, "class": c, "name": name,
             "value": (1 + 0.01 * c * e + 0.001 * s) * (1 if name == "gamma" else 3)}
            for d in ("d1", "d2") for m in ("mr2", "mr2_no_rep", "mr2_uniform") for s in (0, 1)
            for e in range(1, n_epochs + 1) for c in range(6) for name in ("gamma", "a")
            if not (d == "d2" and m == "mr2_no_rep")]
    rows.append({"dataset": "d1", "method": "mr2", "variant": "default", "seed": 0, "epoch": 1, "class": pd.NA,
                 "name": "gamma", "value": 99.0})
    log = pd.DataFrame(rows)
    log["class"] = log["class"].astype("Int64")
    groups = pd.DataFrame([{"dataset": d, "class": c, "group": ["hard", "hard", "medium", "medium", "easy", "easy"][c]}
                           for d in ("d1", "d2") for c in range(6)])
    names = pd.DataFrame([{"dataset": d, "class": c, "class_name": f"k{c}"} for d in ("d1", "d2") for c in range(6)])
    return log, groups, names


def test_margins_figure_by_hand_panels_lines_colours_c_bar_and_names(tmp_path, drawn):
    """Each panel against the log by hand: a row per dataset sharing its y axis, a column per method
    (the one a dataset lacks says so, the next is drawn), a thin line per class at its mean over seeds
    in its group's colour, a thick line per group mean, a dotted line and note at c̄ (the last epoch's
    mean γ) for γ only, each class named at its line's last point, the epochs as ticks."""
    log, groups, names = margin_log()
    F.plot_margins_over_training(log, groups, tmp_path / "m", beside=("mr2_no_rep", "mr2_uniform"), names=names)
    axes = drawn[0]["axes"]
    assert [ax.get_title() for ax in axes] == ["d1: MR²", "d1: MR² λ = 0", "d1: MR² uniform γ", "d2: MR²", "",
                                               "d2: MR² uniform γ"]
    assert not axes[4].axison and [t.get_text() for t in axes[4].texts] == ["d2: no gamma logged for MR² λ = 0"]
    shared = axes[0].get_shared_y_axes()
    assert shared.joined(axes[0], axes[2]) and not shared.joined(axes[0], axes[3])
    group_of = dict(zip(groups["class"][:6], groups["group"][:6]))
    colour = {g: matplotlib.colors.to_hex(c) for g, c in plotting.GROUP_COLOURS.items()}
    mean = {c: [1 + 0.01 * c * e + 0.0005 for e in range(1, 5)] for c in range(6)}
    for ax in [axes[i] for i in (0, 1, 2, 3, 5)]:
        thin = sorted((tuple(np.round(ln.get_ydata(), 9)), matplotlib.colors.to_hex(ln.get_color()))
                      for ln in ax.get_lines() if ln.get_alpha() == 0.35 and ln.get_linewidth() == 0.6)
        assert thin == sorted((tuple(np.round(mean[c], 9)), colour[group_of[c]]) for c in range(6))
        thick = sorted((tuple(np.round(ln.get_ydata(), 9)), matplotlib.colors.to_hex(ln.get_color()))
                       for ln in ax.get_lines() if ln.get_linewidth() == 2.5 and len(ln.get_ydata()))
        assert thick == sorted((tuple(np.round(np.mean([mean[c], mean[c + 1]], axis=0), 9)), colour[group_of[c]])
                               for c in (0, 2, 4))
        c_bar = np.mean([mean[c][-1] for c in range(6)])
        assert not ax.collections  # the group means without a band around them
        (dotted,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
        assert list(dotted.get_ydata()) == pytest.approx([c_bar, c_bar])
        assert (dotted.get_color(), dotted.get_linewidth()) == ("0.4", 1)
        notes = [t for t in ax.texts if t.get_text().startswith("c̄")]
        assert [t.get_text() for t in notes] == [f"c̄ = {c_bar:.3g}"]
        (note,) = notes  # at the axis' left edge, at c̄, 2 points above and right of it, small and grey
        assert (note.xy, note.xycoords, note.xyann, note.anncoords) == (
            (0.0, pytest.approx(c_bar)), ("axes fraction", "data"), (2, 2), "offset points")
        assert (note.get_fontsize(), matplotlib.colors.to_hex(note.get_color())) == (7, matplotlib.colors.to_hex("0.3"))
        ends = sorted((t.get_text(), t.xy) for t in ax.texts if t not in notes)
        assert [name for name, _ in ends] == [f"k{c}" for c in range(6)]
        assert np.array([xy for _, xy in ends]) == pytest.approx(np.array([(4.0, mean[c][-1]) for c in range(6)]))
        assert list(ax.get_xticks()) == [1, 2, 3, 4]
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("epoch", r"$\gamma_k$")
    assert axes[5].get_legend().get_title().get_text() == "classes"
    assert tuple(drawn[0]["fig"].get_size_inches()) == pytest.approx(
        (3 * 1.25 * plotting.PANEL_SIZE[0], 2 * plotting.PANEL_SIZE[1]))  # wider panels: room for the names

    F.plot_margins_over_training(log, groups, tmp_path / "a", name="a")  # a_k: no c̄, the classes by number
    ax = drawn[1]["axes"][0]
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"] and ax.get_ylabel() == "$a_k$"
    assert sorted(t.get_text() for t in ax.texts) == [str(c) for c in range(6)]
    assert [a.get_title() for a in drawn[1]["axes"]] == ["d1: MR²", "d1: MR² λ = 0", "d2: MR²", ""]

    F.plot_margins_over_training(log, groups, tmp_path / "u", method="mr2_uniform", beside=("mr2_uniform", "mr2"),
                                 show=("medium", "hard"))
    assert drawn[2]["titles"] == ["d1: MR² uniform γ (easy classes not shown)", "d1: MR² (easy classes not shown)",
                                  "d2: MR² uniform γ (easy classes not shown)", "d2: MR² (easy classes not shown)"]
    renamed = groups.replace({"group": {"medium": "mid"}})  # a group without a colour of its own
    F.plot_margins_over_training(log, renamed, tmp_path / "r", show=("easy", "mid", "hard"))
    ax = drawn[3]["axes"][0]
    assert ax.get_title() == "d1: MR² (medium classes not shown)"
    mid = [ln for ln in ax.get_lines() if ln.get_alpha() == 0.35 and round(ln.get_ydata()[-1], 9) in
           (round(mean[2][-1], 9), round(mean[3][-1], 9))]
    assert len(mid) == 2 and {matplotlib.colors.to_hex(ln.get_color()) for ln in mid} == {
        matplotlib.colors.to_hex("tab:blue")}

    log12, _, _ = margin_log(12)  # up to 12 epochs every epoch is a tick
    F.plot_margins_over_training(log12, groups, tmp_path / "t")
    assert list(drawn[4]["axes"][0].get_xticks()) == list(range(1, 13))

    for n in (13, 17):  # more epochs: whole-numbered ticks, not one per epoch
        F.plot_margins_over_training(margin_log(n)[0], groups, tmp_path / f"t{n}")
        drawn[5]["fig"].canvas.draw()
        ticks = drawn.pop(5)["axes"][0].get_xticks()
        assert list(ticks) != list(range(1, n + 1)) and all(tick == int(tick) for tick in ticks)

    F.plot_margins_over_training(log, groups, tmp_path / "p1", method="focal")
    F.plot_margins_over_training(log, groups, tmp_path / "p2", variant="c_bar=0.5")
    F.plot_margins_over_training(log, groups, tmp_path / "p3", show=("x", "y"))
    assert [r["texts"] for r in drawn[5:]] == [["no per-class gamma logged for focal"],
                                               ["no per-class gamma logged for mr2 (c_bar=0.5)"],
                                               ["no x, y classes with gamma logged"]]
    assert all(r["placeholder"] for r in drawn[5:])


def test_margins_figure_of_a_variant_of_a_log_read_as_floats_and_of_names_that_lack_a_class(tmp_path, drawn):
    """A variant's panels say which variant; two groups left out are both named; a log whose classes
    are floats (``pd.read_csv`` of an epochs.csv: the run-level rows have none) names each class by
    its whole number; a class that ``names`` lacks keeps its line, named by its number."""
    log, groups, names = margin_log()
    log = log.assign(variant="c_bar=0.5")
    F.plot_margins_over_training(log, groups, tmp_path / "v", variant="c_bar=0.5", show=("hard",))
    assert drawn[0]["titles"][:2] == ["d1: MR² (c_bar=0.5) (easy, medium classes not shown)",
                                      "d1: MR² λ = 0 (c_bar=0.5) (easy, medium classes not shown)"]
    assert sorted(t.get_text() for t in drawn[0]["axes"][0].texts) == ["0", "1", "c̄ = 1.02"]  # the hard classes'
    raw = log.assign(**{"class": log["class"].astype("float64")})
    assert raw["class"].isna().any()
    F.plot_margins_over_training(raw, groups, tmp_path / "f", variant="c_bar=0.5")
    ends = sorted(t.get_text() for t in drawn[1]["axes"][0].texts if not t.get_text().startswith("c̄"))
    assert ends == [str(c) for c in range(6)]
    F.plot_margins_over_training(log, groups, tmp_path / "n", variant="c_bar=0.5", names=names[names["class"] != 4])
    ax = drawn[2]["axes"][0]
    assert sorted(t.get_text() for t in ax.texts if not t.get_text().startswith("c̄")) == ["4", "k0", "k1", "k2",
                                                                                          "k3", "k5"]
    assert len([ln for ln in ax.get_lines() if ln.get_alpha() == 0.35]) == 6


def test_change_figure_names_the_classes_and_draws_the_seed_intervals(tmp_path, drawn):
    t, groups = full()
    F.plot_change_vs_reference(t["per_class"], tmp_path / "c", groups=groups)
    ax = drawn[0]["axes"][0]  # toy: mr2
    order = [f"c{c}" for c in np.argsort(syn.BASE)]  # ERM's accuracy, ascending
    assert [t.get_text() for t in ax.get_xticklabels()] == order
    assert [t.get_text() for t in ax.texts] == ["hard", "medium", "easy"]  # the groups, shaded and named
    pc = t["per_class"].query("dataset == 'toy' and variant == 'default'").set_index(["method", "seed", "class"])
    (bars,) = ax.containers[0].lines[2]  # the error bars, in the order of the x axis
    for i, name in enumerate(order):
        c = int(name[1:])
        d = 100 * np.array([pc.loc[("mr2", s, c), "accuracy"] - pc.loc[("erm", s, c), "accuracy"] for s in syn.SEEDS])
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        (x0, lo), (x1, hi) = bars.get_segments()[i]
        assert x0 == x1 == i and (lo, hi) == pytest.approx((d.mean() - half, d.mean() + half))
    assert ax.get_lines()[0].get_ydata() == pytest.approx(
        [F.class_changes(t["per_class"]).set_index(["dataset", "method", "class_name"]).loc[("toy", "mr2", n), "diff"]
         for n in order])
    # the title names the methods as the text does and counts, from the intervals drawn, how many exclude 0
    excluding = sum((lo > 0 or hi < 0) for (_, lo), (_, hi) in bars.get_segments())
    title = drawn[0]["titles"][0]
    assert title.startswith("toy: MR² − ERM (95% t-interval") and "mr2" not in title
    assert f"\n{excluding} of {len(order)} intervals exclude 0" in title
    assert ("one of many comparisons" in title) == (0 < excluding <= max(1, 0.05 * len(order)))


def test_change_figure_flags_a_single_class_among_many(tmp_path, drawn):
    """One class of ten whose interval excludes 0 is one of many comparisons, on the figure too."""
    rows = [{"dataset": "d", "method": m, "variant": "default", "seed": s, "class": c, "class_name": f"c{c}",
             "accuracy": 0.5 + 0.01 * c + (0.05 + 0.001 * s if (m == "mr2" and c == 3) else 0.002 * s * (m == "mr2")
                                          * (-1) ** (s + c))}
            for m in ("erm", "mr2") for s in range(4) for c in range(10)]
    F.plot_change_vs_reference(pd.DataFrame(rows), tmp_path / "one")
    assert "1 of 10 intervals exclude 0: one of many comparisons" in drawn[0]["titles"][0]


def test_change_figure_warns_of_many_comparisons_at_the_level_given_else_says_only_the_count(tmp_path, drawn):
    """Two of ten classes change, the others not at all: at 95 % more than the one interval chance
    explains, so only the count; at 50 % (five by chance) one of many comparisons."""
    rows = [{"dataset": "d", "method": m, "variant": "default", "seed": s, "class": c, "class_name": f"c{c}",
             "accuracy": 0.5 + 0.01 * c + (0.05 + 0.001 * s if (m == "mr2" and c in (3, 7)) else 0.0)}
            for m in ("erm", "mr2") for s in range(4) for c in range(10)]
    F.plot_change_vs_reference(pd.DataFrame(rows), tmp_path / "a")
    F.plot_change_vs_reference(pd.DataFrame(rows), tmp_path / "b", level=0.5)
    assert drawn[0]["titles"][0].endswith("\n2 of 10 intervals exclude 0")
    assert drawn[1]["titles"][0].endswith("\n2 of 10 intervals exclude 0: one of many comparisons, not a finding")


def test_change_figure_of_one_seed_one_method_tiny_changes_and_many_classes(tmp_path, drawn, monkeypatch):
    """One seed: the title says there is no interval and counts nothing; one method: one panel; changes
    within a point: the y range pads by 5 % of one point; a variant not asked for is not drawn; 25
    classes: one panel a row, each as wide as its class names need; four methods three a row: both
    spare panels blank."""
    def table(k, methods, seeds, shift=0.001):
        return pd.DataFrame([{"dataset": "d", "method": m, "variant": v, "seed": s, "class": c, "class_name": f"c{c}",
                              "accuracy": 0.5 + 0.01 * c + (shift * (c % 3) + 0.0001 * s) * (m != "erm")}
                             for m in methods for v in ("default", "c_bar=0.5") for s in seeds for c in range(k)
                             if not (m == "erm" and v != "default")])
    F.plot_change_vs_reference(table(5, ("erm", "mr2"), (0,)), tmp_path / "one")
    (ax,) = drawn[0]["axes"]
    assert ax.get_title() == "d: MR² − ERM (1 seed: no interval)"
    ys = 100 * 0.001 * np.array([c % 3 for c in range(5)])
    assert ax.get_ylim() == pytest.approx((ys.min() - 0.05, ys.max() + 0.05))
    assert tuple(drawn[0]["fig"].get_size_inches()) == pytest.approx(plotting.PANEL_SIZE)
    F.plot_change_vs_reference(table(25, ("erm", "mr2", "focal"), (0, 1)), tmp_path / "wide")
    axes = drawn[1]["axes"]
    assert [a.get_title().split(" (")[0] for a in axes] == ["d: MR² − ERM", "d: Focal − ERM"]
    assert tuple(drawn[1]["fig"].get_size_inches()) == pytest.approx(
        (plotting.class_axis_width(25), 2 * plotting.PANEL_SIZE[1]))
    monkeypatch.setattr(F, "PANELS_PER_ROW", 3)
    F.plot_change_vs_reference(table(5, ("erm", "mr2", "focal", "ldam", "lff"), (0, 1)), tmp_path / "four")
    axes = drawn[2]["axes"]
    assert len(axes) == 6 and [a.axison for a in axes] == [True] * 4 + [False] * 2


def test_change_figure_lays_out_a_panel_per_dataset_and_method_on_one_axis(tmp_path, drawn, monkeypatch):
    """By hand: two datasets, three methods beside ERM, two panels a row; a method absent from a
    dataset leaves a panel saying so (and the next method is drawn), the spare panel is blank; every
    panel has the y range of all intervals clipped to ±100 points plus 5 %, points in the method's
    colour (bars too) not joined, a black line at 0, the classes in ERM's order, axis labels naming
    ERM, a class with no group marked "?"; a level other than 95 % everywhere; placeholders that
    name what is missing."""
    def acc(dataset, method, seed, c):
        erm = 0.9 - 0.1 * c  # ascending ERM accuracy: n4, n3, ..., n0
        if method == "erm":
            return erm
        if method == "mr2" and dataset == "d1" and c == 4:
            return erm + (0.45 if seed == 0 else -0.45)  # an interval far past ±100 points
        return erm + {"mr2": 0.02, "focal": -0.03, "ldam": 0.01}[method] + 0.004 * seed * (-1) ** c
    rows = [{"dataset": d, "method": m, "variant": "default", "seed": s, "class": c, "class_name": f"n{c}",
             "accuracy": acc(d, m, s, c)}
            for d in ("d1", "d2") for m in ("erm", "mr2", "focal", "ldam") for s in (0, 1) for c in range(5)
            if not (m == "focal" and d == "d2")]
    pc = pd.DataFrame(rows)
    groups = G.difficulty_table(pc)
    groups = groups[~((groups["dataset"] == "d1") & (groups["class"] == 0))]  # n0 of d1 has no group
    monkeypatch.setattr(F, "PANELS_PER_ROW", 2)
    F.plot_change_vs_reference(pc, tmp_path / "c", groups=groups)
    axes = drawn[0]["axes"]
    assert len(axes) == 8  # per dataset two rows of two panels: mr2, focal / ldam, blank
    assert not axes[3].axison and not axes[3].texts and not axes[3].containers
    assert not axes[7].axison and not axes[7].texts and not axes[7].containers
    assert not axes[5].axison and [t.get_text() for t in axes[5].texts] == ["d2: no runs of focal"]
    drawn_panels = {0: ("d1", "mr2"), 1: ("d1", "focal"), 2: ("d1", "ldam"), 4: ("d2", "mr2"), 6: ("d2", "ldam")}
    for i, (dataset, method) in drawn_panels.items():
        ax = axes[i]
        assert ax.get_title().startswith(f"{dataset}: {plotting.DISPLAY_NAMES.get(method, method)} − ERM "
                                         "(95% t-interval over 2 seeds)\n")
        assert ax.get_ylim() == pytest.approx((-110.0, 110.0))  # [-100, 100] and 5 % of its 200 points
        assert [t.get_text() for t in ax.get_xticklabels()] == ["n4", "n3", "n2", "n1", "n0"]
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("class (ascending ERM accuracy)", "change over ERM (points)")
        (container,) = ax.containers
        colour = matplotlib.colors.to_hex(plotting.method_colour(method))
        assert matplotlib.colors.to_hex(container.lines[0].get_color()) == colour
        assert container.lines[0].get_linestyle() == "None"
        assert matplotlib.colors.to_hex(container.lines[2][0].get_colors()[0]) == colour
        zero = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [0, 0]]
        assert len(zero) == 1 and matplotlib.colors.to_hex(zero[0].get_color()) == "#000000"
        assert ax.axison and zero[0].get_linewidth() == 0.8 and ax.title.get_fontsize() == 9
        caps = container.lines[1]  # small points, thin bars with short caps
        assert container.lines[0].get_markersize() == 4 and container.lines[2][0].get_linewidths()[0] == 1
        assert caps and all(cap.get_markersize() == 2 * 2 for cap in caps)
        expected = [100 * (acc(dataset, method, 0, c) + acc(dataset, method, 1, c)) / 2 - 100 * (0.9 - 0.1 * c)
                    for c in (4, 3, 2, 1, 0)]
        assert container.lines[0].get_ydata() == pytest.approx(expected)
    assert "?" in [t.get_text() for t in axes[0].texts] and "?" not in [t.get_text() for t in axes[4].texts]
    (_, lo), (_, hi) = axes[0].containers[0].lines[2][0].get_segments()[0]  # n4 of d1: d = +45, −45 points
    assert (lo, hi) == pytest.approx((-stats.t.ppf(0.975, 1) * 45, stats.t.ppf(0.975, 1) * 45))  # sd/√2 = 45

    t, groups = full()
    F.plot_change_vs_reference(t["per_class"], tmp_path / "l", groups=groups, level=0.5)
    ax = drawn[1]["axes"][0]  # toy: mr2, at the level given
    acc_of = t["per_class"].query("dataset == 'toy' and variant == 'default'").set_index(
        ["method", "seed", "class"])["accuracy"]
    diffs = {c: 100 * np.array([acc_of[("mr2", s, c)] - acc_of[("erm", s, c)] for s in syn.SEEDS])
             for c in range(syn.K)}
    order = np.argsort(syn.BASE)
    half = {c: stats.t.ppf(0.75, 2) * diffs[c].std(ddof=1) / np.sqrt(3) for c in range(syn.K)}
    segments = ax.containers[0].lines[2][0].get_segments()
    assert np.array([(lo, hi) for (_, lo), (_, hi) in segments]) == pytest.approx(
        np.array([(diffs[c].mean() - half[c], diffs[c].mean() + half[c]) for c in order]))
    excluding = sum(abs(diffs[c].mean()) > half[c] for c in range(syn.K))
    assert ax.get_title().startswith("toy: MR² − ERM (50% t-interval over 3 seeds)\n"
                                     f"{excluding} of {syn.K} intervals exclude 0")
    half95 = {c: stats.t.ppf(0.975, 2) * diffs[c].std(ddof=1) / np.sqrt(3) for c in range(syn.K)}
    assert excluding != sum(abs(diffs[c].mean()) > half95[c] for c in range(syn.K))  # the level matters here

    F.plot_change_vs_reference(pc, tmp_path / "p", reference="none")
    F.plot_change_vs_reference(pc, tmp_path / "q", methods=("x", "y"))
    assert [r["texts"] for r in drawn[2:]] == [
        ["needs runs of none and of another method on the same dataset and seeds"],
        ["needs runs of erm and of x, y on the same dataset and seeds"]]


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
    return pd.DataFrame(per_class), runs, groups


def test_sweep_figure_by_hand_points_intervals_reference_and_default(tmp_path, drawn):
    """Each sweep point is the mean over its seeds, its bar the paired t-interval over the seeds it
    shares with ERM put around that mean (none with one shared seed); ERM's mean as a dashed line and
    the default value as a dotted one; a panel per dataset and option, saying so where a dataset does
    not sweep the option; the option's symbol in title and axis."""
    pc, runs, groups = sweep_runs()
    table = F.sweep_table(pc, runs, groups)
    assert table.index.equals(pd.RangeIndex(len(table))) and table["value"].dtype == float
    assert sorted(table.loc[table["option"] == "c_bar", "value"].unique()) == [0.5, 1.0, 2.0, 4.0]
    F.plot_sweeps(pc, runs, groups, tmp_path / "s")
    axes = drawn[0]["axes"]
    assert len(axes) == 4
    assert not axes[1].axison and [t.get_text() for t in axes[1].texts] == ["d1, lam: no sweep in this config"]
    assert not axes[2].axison and [t.get_text() for t in axes[2].texts] == ["d2, c_bar: no sweep in this config"]
    assert [axes[i].get_title() for i in (0, 3)] == [r"d1: MR², sweep of $\bar{c}$", r"d2: MR², sweep of $\lambda$"]
    assert (axes[0].get_xlabel(), axes[0].get_ylabel()) == (r"$\bar{c}$", "test accuracy (%)")
    acc = pc.set_index(["dataset", "method", "variant", "seed", "class"])["accuracy"]

    def group(dataset, method, variant, seed, classes):
        cs = [0, 1, 2] if classes == "all" else [0]
        return 100 * np.mean([acc[(dataset, method, variant, seed, c)] for c in cs])

    variants = {0.5: ("c_bar=0.5", (0, 1, 2)), 1.0: ("default", (0, 1, 2)), 2.0: ("c_bar=2", (0, 1)),
                4.0: ("c_bar=4.0", (0,))}
    ax = axes[0]
    for container, classes, colour in zip(ax.containers, ("all", "hard"), ("black", plotting.GROUP_COLOURS["hard"])):
        assert container.get_label() == f"{classes} classes"
        assert matplotlib.colors.to_hex(container.lines[0].get_color()) == matplotlib.colors.to_hex(colour)
        assert list(container.lines[0].get_xdata()) == [0.5, 1.0, 2.0, 4.0]
        segments = container.lines[2][0].get_segments()
        for (value, (variant, seeds)), (_, lo), (_, hi), y in zip(variants.items(), *zip(*segments),
                                                                  container.lines[0].get_ydata()):
            points = np.array([group("d1", "mr2", variant, s, classes) for s in seeds])
            assert y == pytest.approx(points.mean())
            d = points - np.array([group("d1", "erm", "default", s, classes) for s in seeds])
            half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
            assert (lo, hi) == pytest.approx((points.mean() - half, points.mean() + half)), (classes, value)
        assert (container.lines[0].get_markersize(), container.lines[2][0].get_linewidths()[0]) == (4, 1)
        assert (container.lines[0].get_marker(), container.lines[0].get_linestyle()) == ("o", "-")  # joined points
        assert container.lines[1] and all(cap.get_markersize() == 2 * 2 for cap in container.lines[1])
        (ref_line,) = [ln for ln in ax.get_lines() if ln.get_label() == f"ERM, {classes} classes"]
        assert (ref_line.get_linestyle(), ref_line.get_linewidth()) == ("--", 0.9)
        assert matplotlib.colors.to_hex(ref_line.get_color()) == matplotlib.colors.to_hex(colour)  # as its points
        assert ref_line.get_ydata()[0] == pytest.approx(np.mean([group("d1", "erm", "default", s, classes)
                                                                 for s in (0, 1, 2)]))
    (default,) = [ln for ln in ax.get_lines() if ln.get_label() == "default"]
    assert default.get_xdata()[0] == 1.0 and default.get_linestyle() == ":"
    assert (default.get_color(), default.get_linewidth(), ax.title.get_fontsize()) == ("grey", 1, 9)
    (default,) = [ln for ln in axes[3].get_lines() if ln.get_label() == "default"]
    assert default.get_xdata()[0] == 0.1  # d2's own default λ
    assert axes[3].get_legend().get_title().get_text() == "classes"

    F.plot_sweeps(pc, runs, groups, tmp_path / "h", level=0.5)  # the level given
    (_, lo), (_, hi) = drawn[1]["axes"][0].containers[0].lines[2][0].get_segments()[0]
    d = np.array([group("d1", "mr2", "c_bar=0.5", s, "all") - group("d1", "erm", "default", s, "all")
                  for s in (0, 1, 2)])
    assert hi - lo == pytest.approx(2 * stats.t.ppf(0.75, 2) * d.std(ddof=1) / np.sqrt(3))
    F.plot_sweeps(pc, runs, groups, tmp_path / "n", reference="none")  # no reference: no line, no interval
    ax = drawn[2]["axes"][0]
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert all(lo == hi for c in ax.containers for (_, lo), (_, hi) in c.lines[2][0].get_segments())
    F.plot_sweeps(pc, runs, groups, tmp_path / "o", options=("lam",))
    assert [a.get_title() for a in drawn[3]["axes"]] == [r"d2: MR², sweep of $\lambda$"]  # d1 sweeps no λ


def test_sweep_members_of_tables_that_cannot_hold_a_sweep_are_empty_with_their_columns():
    pc, runs, groups = sweep_runs()
    assert list(F.sweep_members(None, "mr2", "c_bar").columns) == ["dataset", "method", "variant", "seed"]
    for missing in ("config.tags.sweep", "config.method.options.lam"):
        cut = runs.drop(columns=missing)
        members = F.sweep_members(cut, "mr2", "lam")
        assert members.empty and list(members.columns) == list(cut.columns)
    members = F.sweep_members(runs, "mr2", "lam")
    assert sorted(zip(members["dataset"], members["variant"], members["seed"])) == [
        ("d2", "default", 0), ("d2", "default", 1), ("d2", "lam=0.3", 0), ("d2", "lam=0.3", 1)]
    empty = F.sweep_table(pc, runs.drop(columns="config.tags.sweep"), groups)
    assert empty.empty and list(empty.columns) == ["dataset", "seed", "variant", "option", "value", "all", "hard"]
    # an option nothing sweeps before one that is swept: skipped, the next still read; values held as
    # text (a runs table of strings) are numbers in the table
    as_text = runs.assign(**{"config.method.options.lam": runs["config.method.options.lam"].astype(str),
                             "config.method.options.tau": 0.1})
    table = F.sweep_table(pc, as_text, groups, options=("tau", "lam"))
    assert set(table["option"]) == {"lam"} and sorted(table["value"].unique()) == [0.1, 0.3]


def test_sweeps_are_on_log_axes_with_the_swept_values_as_ticks(tmp_path, drawn):
    t = syn.tables(sweeps=("c_bar=0.5", "c_bar=2.0", "lam=0.01", "lam=1.0"))
    groups = G.difficulty_table(t["per_class"])
    F.plot_sweeps(t["per_class"], t["runs"], groups, tmp_path / "sw")
    c_bar, lam = drawn[0]["axes"][:2]
    assert c_bar.get_xscale() == lam.get_xscale() == "log"
    assert [x.get_text() for x in lam.get_xticklabels()] == ["0.01", "0.1", "1"]
    assert [x.get_text() for x in c_bar.get_xticklabels()] == ["0.5", "1", "2"]
    assert (lam.get_xlabel(), c_bar.get_xlabel()) == (r"$\lambda$", r"$\bar{c}$")


def test_figures_use_the_papers_symbols(tmp_path, drawn):
    t, groups = full()
    F.make_figures(t, groups, tmp_path)
    plain = re.compile(r"gamma|\ba_k\b|c_bar|\blam\b|mu_k|s_k")
    for fig in drawn:
        outside_math = [re.sub(r"\$[^$]*\$", "", s) for s in fig["strings"]]
        assert not [s for s in outside_math if plain.search(s)], fig["titles"]
    labels = {s for fig in drawn for s in fig["strings"]}
    assert {r"$\gamma_k$", r"$a_k$ of ERM's training features", r"$\bar{c}$", r"$\lambda$"} <= labels


def test_group_points_match_the_group_accuracy(tmp_path, drawn):
    """Points (no bars on the truncated axis) at each method's mean group accuracy over seeds, with the sd."""
    t, groups = full()
    F.plot_group_accuracy(t["per_class"], groups, tmp_path / "b")
    ax = drawn[0]["axes"][0]
    assert not [p for p in ax.patches if p.get_height() > 0]
    per_run = G.run_group_accuracy(t["per_class"].query("dataset == 'toy' and variant == 'default'"), groups)
    for container, method in zip(ax.containers, syn.METHODS):
        expected = 100 * per_run[per_run["method"] == method][["all", "easy", "medium", "hard"]]
        assert container.lines[0].get_ydata() == pytest.approx(expected.mean().to_numpy())
        (bars,) = container.lines[2]
        assert [hi - lo for (_, lo), (_, hi) in bars.get_segments()] == pytest.approx(2 * expected.std().to_numpy())


def test_group_points_sit_side_by_side_named_and_coloured_per_run(tmp_path, drawn):
    """The n runs' points share each group's tick: centred in slots of width 0.8/n, in the tables'
    order; a variant is a run of its own (named and coloured as such); one seed draws an error bar of
    length 0 (not a missing one), ``errorbar=None`` none; grey rules between the groups; a selection
    with no run is a placeholder that says so."""
    t, groups = full()
    pc = t["per_class"]
    pc = pc[(pc["dataset"] == "toy") & ~((pc["method"] == "mr2_no_rep") & (pc["seed"] > 0))]
    F.plot_group_accuracy(pc, groups, tmp_path / "g", variants=("default", "c_bar=0.5"))
    ax = drawn[0]["axes"][0]
    runs = [(m, "default") for m in syn.METHODS] + [("mr2", "c_bar=0.5")]
    offsets = [-0.32, -0.16, 0.0, 0.16, 0.32]  # five slots of 0.16 across 0.8, centred on the tick
    assert len(ax.containers) == len(runs)
    for container, (method, variant), offset in zip(ax.containers, runs, offsets):
        assert container.lines[0].get_xdata() == pytest.approx(np.arange(4) + offset)
        colour = matplotlib.colors.to_hex(container.lines[0].get_color())
        if variant == "default":
            assert container.get_label() == plotting.DISPLAY_NAMES.get(method, method)
            assert colour == matplotlib.colors.to_hex(plotting.METHOD_COLOURS[method])
        else:
            assert container.get_label() == "MR² (c_bar=0.5)"
            expected = matplotlib.colors.to_hex(plotting.method_colour("mr2", "c_bar=0.5"))
            assert colour == expected != matplotlib.colors.to_hex(plotting.METHOD_COLOURS["mr2"])
        lengths = [hi - lo for (_, lo), (_, hi) in container.lines[2][0].get_segments()]
        assert (lengths == pytest.approx([0.0] * 4)) == (method == "mr2_no_rep")
    assert all(c.lines[0].get_linestyle() == "None" for c in ax.containers)  # points, not joined
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all", "easy", "medium", "hard"]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == (
        "toy", "classes (groups from the reference method)", "test accuracy (%)")
    assert ax.get_legend().get_title().get_text() == "method"
    rules = [line for line in ax.lines if list(line.get_ydata()) == [0, 1]]
    assert [line.get_xdata()[0] for line in rules] == [0.5, 1.5, 2.5]
    assert {matplotlib.colors.to_hex(line.get_color()) for line in rules} == {matplotlib.colors.to_hex("0.85")}
    assert {line.get_linewidth() for line in rules} == {0.6}
    for c in ax.containers:  # points of 5, bars of 1 with caps of 2 (a cap's marker is twice its size)
        assert (c.lines[0].get_markersize(), c.lines[2][0].get_linewidths()[0]) == (5, 1)
        assert c.lines[1] and {cap.get_markersize() for cap in c.lines[1]} == {4}
    assert tuple(drawn[0]["fig"].get_size_inches()) == pytest.approx(plotting.PANEL_SIZE)  # five runs fit

    F.plot_group_accuracy(pc, groups, tmp_path / "n", errorbar=None)
    assert all(not c.has_yerr and c.lines[2] == () for c in drawn[1]["axes"][0].containers)
    F.plot_group_accuracy(pc, groups, tmp_path / "p", methods=("absent",))
    assert drawn[2]["placeholder"] and drawn[2]["texts"] == ["no runs to draw"]

    # a run missing from one dataset leaves its slot empty there; the runs after it are drawn
    pc = t["per_class"]
    F.plot_group_accuracy(pc[(pc["dataset"] == "toy") | (pc["method"] != "mr2")], groups, tmp_path / "m")
    toy2 = drawn[3]["axes"][1]
    assert toy2.get_title() == "toy2"
    assert [c.get_label() for c in toy2.containers] == ["ERM", "MR² uniform γ", "MR² λ = 0"]
    assert [c.lines[0].get_xdata()[0] for c in toy2.containers] == pytest.approx([-0.3, 0.1, 0.3])
    F.plot_group_accuracy(t["per_class"], groups, tmp_path / "w", variants=None)  # seven runs: 7/5 as wide
    assert tuple(drawn[4]["fig"].get_size_inches()) == pytest.approx(
        (2 * plotting.PANEL_SIZE[0] * 7 / 5, plotting.PANEL_SIZE[1]))


def test_end_to_end_from_a_run_tree(tmp_path):
    """aggregate -> CSV -> read back -> groups -> results table and every figure."""
    dirs = [syn.write_run(tmp_path, "fmnist", m, "default", s, k=6) for m in ("erm", "mr2") for s in (0, 1)]
    dirs.append(syn.write_run(tmp_path, "fmnist", "mr2", "c_bar=0.5", 0, k=6))
    R.write_tables(R.aggregate(dirs), tmp_path / "tables")
    tables = R.read_tables(tmp_path / "tables")
    groups = G.difficulty_table(tables["per_class"])
    assert list(groups.sort_values("class")["group"]) == ["hard"] * 2 + ["medium"] * 2 + ["easy"] * 2
    table = R.results_table(tables["per_class"], tables["runs"], groups)
    assert list(table["variant"]) == ["default", "default", "c_bar=0.5"]
    made = F.make_figures(tables, groups, tmp_path / "figures")
    for paths in made.values():
        check_files(paths)
    sweep = F.sweep_table(tables["per_class"], tables["runs"], groups)
    assert sorted(sweep["value"].unique()) == [0.5, 1.0]


def test_claim_forest_draws_each_methods_paired_difference_and_interval(tmp_path, drawn):
    """The report's first figure: per metric a point per method at its mean paired Δ to ERM (recomputed
    here from the group accuracies) with its t-interval, and the line at 0."""
    t, groups = full()
    claim_figures.plot_claim(t["per_class"], t["runs"], groups, tmp_path / "claim")
    ax = drawn[0]["axes"][0]  # toy
    assert [x.get_text() for x in ax.get_yticklabels()] == ["all classes", "easy classes", "medium classes",
                                                            "hard classes", "worst class"]
    assert any(list(line.get_xdata()) == [0, 0] for line in ax.get_lines())  # the zero line
    per_run = G.run_group_accuracy(t["per_class"].query("dataset == 'toy' and variant == 'default'"), groups)
    per_run = per_run.set_index(["method", "seed"])
    mr2 = ax.containers[0]  # the first method after ERM in the tables' order: mr2
    (bars,) = mr2.lines[2]
    for i, group in enumerate(["all", "easy", "medium", "hard"]):
        d = 100 * (per_run.loc["mr2", group] - per_run.loc["erm", group]).to_numpy()
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        assert mr2.lines[0].get_xdata()[i] == pytest.approx(d.mean())
        (lo, _), (hi, _) = bars.get_segments()[i]
        assert (lo, hi) == pytest.approx((d.mean() - half, d.mean() + half))
    # the n methods' points sit in their metric's row, 1/(n+1) apart and centred on it
    n = len(ax.containers)
    assert n == 3
    for i, container in enumerate(ax.containers):
        offset = (i - (n - 1) / 2) / (n + 1)
        assert list(container.lines[0].get_ydata()) == pytest.approx([m + offset for m in range(5)])


def test_claim_forest_of_chosen_methods_only_and_a_placeholder_without_pairs(tmp_path, drawn):
    """``methods`` picks the methods drawn (one point set per panel); tables without a second method
    give the placeholder that says what the figure needs, at the stem asked for."""
    t, groups = full()
    claim_figures.plot_claim(t["per_class"], t["runs"], groups, tmp_path / "claim", methods=["mr2_uniform"])
    ax = drawn[0]["axes"][0]
    assert len(ax.containers) == 1 and ax.containers[0].get_label() == plotting.display_name("mr2_uniform")
    erm = t["per_class"][t["per_class"]["method"] == "erm"]
    claim_figures.plot_claim(erm, t["runs"], groups, tmp_path / "none")
    assert drawn[1]["placeholder"] and drawn[1]["stem"] == tmp_path / "none"
    assert drawn[1]["texts"] == [claim_figures.NO_CLAIM]


def test_claim_forest_draws_an_interval_past_the_possible_range_up_to_it_and_marks_it(tmp_path, drawn,
                                                                                      monkeypatch):
    """Three seeds that disagree wildly give a t-interval wider than ±100 points (MR² on MNIST-1D after
    40 epochs): the bar stops at ±100, the most two accuracies can differ, with a triangle there."""
    wild = pd.DataFrame([{"dataset": "d", "method": "mr2", "metric": "all", "diff": -20.0, "diff_lo": -150.0,
                          "diff_hi": 110.0, "n_paired": 3},
                         {"dataset": "d", "method": "mr2", "metric": "hard", "diff": 1.0, "diff_lo": -2.0,
                          "diff_hi": 4.0, "n_paired": 3}])
    monkeypatch.setattr(claim_figures, "claim_table", lambda *a, **k: wild)
    claim_figures.plot_claim(None, None, None, tmp_path / "claim")
    ax = drawn[0]["axes"][0]
    (bars,) = ax.containers[0].lines[2]
    assert [(lo, hi) for (lo, _), (hi, _) in bars.get_segments()] == [(-100.0, 100.0), (-2.0, 4.0)]
    marks = {line.get_marker(): list(line.get_xdata()) for line in ax.get_lines() if line.get_marker() in ("<", ">")}
    assert marks == {"<": [-100.0], ">": [100.0]}  # only the clipped ends, at the limit


def test_end_labels_space_the_names_by_hand_and_make_room_for_them():
    """Names at x + pad beside their lines' ends, in the lines' colours, pushed up to ``gap`` of the
    axis height apart and then, if the top one left the axes, all moved down by as much; none with
    more than ANNOTATE_MAX lines; the x axis widened by 30 % + 0.4 for them."""
    def placed(ys, ylim=(0.0, 1.0), xlim=(0.0, 10.0), **kw):
        fig, ax = plt.subplots()
        ax.set(xlim=xlim, ylim=ylim)
        names = [f"${i}" for i in range(len(ys))]
        plotting.end_labels(ax, 10.0, ys, names, [f"C{i}" for i in range(len(ys))], **kw)
        fig.canvas.draw()  # the names' coordinates are valid
        texts = {t.get_text(): t for t in ax.texts}
        out = [texts[n] for n in names] if texts else []
        plt.close(fig)
        return ax, out

    ax, texts = placed([0.5, 0.51, 0.98, 0.52, 0.2])
    assert [t.get_position()[1] for t in texts] == pytest.approx([0.5, 0.55, 0.98, 0.6, 0.2])
    assert [t.xy for t in texts] == [(10.0, y) for y in (0.5, 0.51, 0.98, 0.52, 0.2)]
    assert [t.get_position()[0] for t in texts] == pytest.approx([10.0 + 0.04 * 10 + 0.05] * 5)
    assert [matplotlib.colors.to_hex(t.get_color()) for t in texts] == [
        matplotlib.colors.to_hex(f"C{i}") for i in range(5)]
    assert all(t.get_text().startswith("$") and not t.get_parse_math() for t in texts)  # names are data
    assert all((t.get_ha(), t.get_va(), t.get_annotation_clip()) == ("left", "center", False) for t in texts)
    assert all(t.arrow_patch is not None for t in texts)  # a thin line joins a moved name to its line
    assert {(t.get_fontsize(), t.arrow_patch.get_linewidth(), matplotlib.colors.to_hex(t.arrow_patch.get_edgecolor()),
             t.arrow_patch.shrinkA, t.arrow_patch.shrinkB) for t in texts} == {
        (7, 0.4, matplotlib.colors.to_hex("0.7"), 0, 0)}
    assert ax.get_xlim() == pytest.approx((0.0, 10.0 + 3.0 + 0.4))
    ax, texts = placed([0.2, 0.8], xlim=(2.0, 10.0))  # the pad and the room are shares of the x range
    assert [t.get_position()[0] for t in texts] == pytest.approx([10.0 + 0.04 * 8 + 0.05] * 2)
    assert ax.get_xlim() == pytest.approx((2.0, 10.0 + 0.3 * 8 + 0.4))
    _, texts = placed([0.9, 0.95, 0.97, 1.0])  # pushed past the top: all back down by 0.05
    assert [t.get_position()[1] for t in texts] == pytest.approx([0.85, 0.9, 0.95, 1.0])
    _, texts = placed([1, 1, 1], ylim=(0.0, 10.0))  # whole numbers are spaced by fractions too
    assert sorted(t.get_position()[1] for t in texts) == pytest.approx([1.0, 1.5, 2.0])
    _, texts = placed([0.1, 0.2], ylim=(0.0, 2.0))  # the step is a share of the axis height: 0.1 here
    assert [t.get_position()[1] for t in texts] == pytest.approx([0.1, 0.2])
    _, texts = placed([0.1, 0.15], ylim=(-1.0, 1.0))
    assert [t.get_position()[1] for t in texts] == pytest.approx([0.1, 0.2])
    assert len(placed(list(np.linspace(0, 1, plotting.ANNOTATE_MAX)))[1]) == plotting.ANNOTATE_MAX
    assert placed(list(np.linspace(0, 1, plotting.ANNOTATE_MAX + 1)))[1] == []
    assert placed([])[1] == []


def test_name_points_tries_again_with_wider_margins_removing_each_failed_try(monkeypatch):
    """While names overlap: each new try removes the names and lines of the one before, widens the
    margins by 0.1 (0.15, 0.25, ...), and stops after five tries; names are data (no math-text)."""
    fig, ax = plt.subplots()
    x, y, names = [1, 2, 3], [1, 2, 3], ["$a", "b", "c"]
    ax.scatter(x, y)
    tries = []
    monkeypatch.setattr(plotting, "overlapping_texts", lambda texts: tries.append(ax.margins()) or [("a", "b")])
    texts = plotting.name_points(ax, x, y, names)
    assert tries == [pytest.approx((m, m)) for m in (0.05, 0.15, 0.25, 0.35, 0.45)]
    assert sorted(t.get_text() for t in ax.texts) == sorted(names)  # only the last try's names are left
    assert [t.get_text() for t in texts] == names and not texts[0].get_parse_math()
    plt.close(fig)
    fig, ax = plt.subplots()
    tries.clear()
    monkeypatch.setattr(plotting, "overlapping_texts", lambda texts: tries.append(1) or ([("a", "b")] if len(tries) < 2 else []))
    plotting.name_points(ax, x, y, names)
    assert len(tries) == 2 and ax.margins() == pytest.approx((0.15, 0.15)) and len(ax.texts) == 3
    assert plotting.name_points(ax, x, y, []) == [] and len(ax.texts) == 3
    plt.close(fig)


def test_plotting_helpers_sizes_symbols_colours_empty_panels_and_the_legend():
    assert plotting.symbol("gamma") == r"$\gamma_k$" and plotting.symbol("top1") == "top1"
    crc = __import__("zlib").crc32
    fallback = plotting.FALLBACK_COLOURS
    assert plotting.method_colour("mr2", "c_bar=0.5") == fallback[crc(b"mr2 (c_bar=0.5)") % len(fallback)]
    assert plotting.method_colour("my_loss") == fallback[crc(b"my_loss") % len(fallback)]  # fixed across runs
    assert plotting.class_axis_width(2) == plotting.PANEL_SIZE[0]
    assert plotting.class_axis_width(40) == pytest.approx(40 * plotting.CLASS_WIDTH + 1.2)
    fig, axes = plotting._panels(3, nrows=2, width=2.0)
    assert axes.shape == (2, 3) and tuple(fig.get_size_inches()) == pytest.approx((6.0, 2 * plotting.PANEL_SIZE[1]))
    plotting._empty_panel(axes[0, 0], "nothing here")
    (text,) = axes[0, 0].texts
    assert (text.get_position(), text.get_ha(), text.get_va(), text.get_wrap()) == ((0.5, 0.5), "center", "center", True)
    assert text.get_transform() == axes[0, 0].transAxes and not axes[0, 0].axison
    for ax in axes[1]:
        ax.plot([0, 1], label="x")
        ax.legend()
    plotting._one_legend(axes.flat, "what")
    assert [ax.get_legend() is not None for ax in axes[1]] == [False, False, True]
    legend = axes[1, 2].get_legend()
    assert legend.get_title().get_text() == "what" and not legend.get_frame_on() and legend._loc == 2  # upper left
    anchor = legend.get_bbox_to_anchor().transformed(axes[1, 2].transAxes.inverted())
    assert (anchor.x0, anchor.y0) == pytest.approx((1.02, 1.0))  # outside the panel, on its right
    plt.close(fig)


def test_texts_whose_math_does_not_parse_are_drawn_literally_the_others_kept():
    fig, ax = plt.subplots()
    good, lone, broken, plain = (ax.text(0, 0, r"$\gamma_k$"), ax.text(0, 0, "costs $5"),
                                 ax.text(0, 0, r"$\frac{$"), ax.text(0, 0, "no dollar"))
    plotting.literal_where_math_fails(fig)
    assert [t.get_parse_math() for t in (good, lone, broken, plain)] == [True, False, False, True]
    plt.close(fig)


def test_class_axis_names_the_classes_and_shades_each_run_of_a_group():
    fig, ax = plt.subplots()
    plotting.class_axis(ax, ["h1", "$h2", "m", "w", "e"], ["hard", "hard", "medium", "weird", "easy"])
    labels = ax.get_xticklabels()
    assert [t.get_text() for t in labels] == ["h1", "$h2", "m", "w", "e"] and not labels[1].get_parse_math()
    assert [(t.get_rotation(), t.get_ha(), t.get_fontsize()) for t in labels[:1]] == [(30.0, "right", 8.0)]
    assert ax.get_xlim() == (-0.5, 4.5)
    spans = [(p.get_x(), p.get_x() + p.get_width(), matplotlib.colors.to_hex(p.get_facecolor()[:3]), p.get_alpha())
             for p in ax.patches]
    colour = {g: matplotlib.colors.to_hex(c) for g, c in {**plotting.GROUP_COLOURS, "weird": "grey"}.items()}
    assert spans == [(-0.5, 1.5, colour["hard"], 0.12), (1.5, 2.5, colour["medium"], 0.12),
                     (2.5, 3.5, colour["weird"], 0.12), (3.5, 4.5, colour["easy"], 0.12)]
    texts = [(t.get_text(), t.get_position(), matplotlib.colors.to_hex(t.get_color()), t.get_va()) for t in ax.texts]
    assert texts == [("hard", (0.5, 1.0), colour["hard"], "bottom"), ("medium", (2.0, 1.0), colour["medium"], "bottom"),
                     ("weird", (3.0, 1.0), colour["weird"], "bottom"), ("easy", (4.0, 1.0), colour["easy"], "bottom")]
    assert all(t.get_transform() == ax.get_xaxis_transform() for t in ax.texts)  # above the axes, at the class
    assert {(t.get_ha(), t.get_fontsize()) for t in ax.texts} == {("center", 8)}
    assert {(p.get_linewidth(), p.get_zorder()) for p in ax.patches} == {(0, 0)}  # under the data, unframed
    plt.close(fig)
    fig, ax = plt.subplots()  # a group of one class first: its own shade
    plotting.class_axis(ax, ["a", "b", "c"], ["hard", "easy", "easy"])
    assert [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches] == [(-0.5, 0.5), (0.5, 2.5)]
    assert [t.get_text() for t in ax.texts] == ["hard", "easy"]
    plt.close(fig)
    for k, rotation, ha, size in ((6, 30.0, "right", 8.0), (7, 90.0, "center", 8.0), (30, 90.0, "center", 8.0),
                                  (31, 90.0, "center", 6.0)):
        fig, ax = plt.subplots()
        plotting.class_axis(ax, [f"c{i}" for i in range(k)])
        label = ax.get_xticklabels()[0]
        assert (label.get_rotation(), label.get_ha(), label.get_fontsize()) == (rotation, ha, size), k
        assert not ax.patches and not ax.texts and ax.get_xlim() == (-0.5, k - 0.5)
        plt.close(fig)


def test_a_placeholder_is_one_panel_holding_its_message(tmp_path, drawn):
    assert plotting.placeholder(tmp_path / "p", "nothing to draw") == []  # the spy writes no file
    (record,) = drawn
    assert record["placeholder"] and record["texts"] == ["nothing to draw"] and record["stem"] == tmp_path / "p"
    assert tuple(record["fig"].get_size_inches()) == pytest.approx(plotting.PANEL_SIZE)


def test_save_figure_writes_at_the_report_dpi_cropped_to_all_drawn_and_closes_only_its_figure(tmp_path):
    """The PNG says FIGURE_DPI and holds a name drawn outside the figure (as a legend outside the panels
    is kept): it is wider than the figure; the figure saved is closed, another one left open."""
    from PIL import Image

    fig, ax = plt.subplots(figsize=(2.0, 2.0))
    fig.text(1.4, 0.5, "a name far right of the figure")
    other = plt.figure()  # the current figure now: not the one to close
    png, pdf = plotting.save_figure(fig, tmp_path / "f")
    with Image.open(png) as image:
        assert image.info["dpi"] == pytest.approx((plotting.FIGURE_DPI, plotting.FIGURE_DPI), abs=0.05)
        assert image.size[0] > 2.0 * plotting.FIGURE_DPI * 1.2
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert plt.get_fignums() == [other.number]
    plt.close(other)
    fig, ax = plt.subplots()
    assert plotting.overlapping_texts([ax.text(0, 0, "alone")]) == []
    plt.close(fig)


def test_points_are_named_up_to_annotate_max_and_not_beyond():
    for n, named in ((plotting.ANNOTATE_MAX, plotting.ANNOTATE_MAX), (plotting.ANNOTATE_MAX + 1, 0)):
        fig, ax = plt.subplots(figsize=(8.0, 6.0))
        x = np.arange(n, dtype=float)
        texts = plotting.name_points(ax, x, (x * 7) % 5, [f"p{i}" for i in range(n)])
        assert len(texts) == len(ax.texts) == named
        plt.close(fig)


def test_names_of_points_crowded_in_a_corner_do_not_overlap():
    """Three classes almost on one spot at the axes' corner (MR²'s a_k of Ankle boot, Sandal and
    Sneaker on Fashion-MNIST, a small panel: one placement by adjustText leaves their names on top of
    each other): the names get room by widening the axes, and no two boxes overlap."""
    fig, ax = plt.subplots(figsize=(4.0, 3.0))
    x = np.array([11.68, 11.83, 11.85, 11.92, 11.97, 12.12, 12.48, 13.54, 13.69, 13.86])
    y = np.array([82.3, 62.6, 88.0, 84.8, 80.2, 97.1, 96.0, 95.1, 95.8, 95.3])
    names = ["Pullover", "Shirt", "Dress", "T-shirt/top", "Coat", "Bag", "Trouser", "Ankle boot", "Sandal", "Sneaker"]
    ax.scatter(x, y)
    texts = plotting.name_points(ax, x, y, names)
    assert [t.get_text() for t in texts] == names
    assert plotting.overlapping_texts(texts) == []
    assert len(ax.texts) == len(names)  # the names of a failed try are gone, not left under the new ones
    assert {t.get_fontsize() for t in texts} == {7}
    joins = [p for p in ax.patches if isinstance(p, matplotlib.patches.FancyArrowPatch)]
    assert joins and {(matplotlib.colors.to_hex(p.get_edgecolor()), p.get_linewidth()) for p in joins} == {
        (matplotlib.colors.to_hex("0.6"), 0.5)}  # thin grey lines from moved names to their points
    assert all(type(p.get_arrowstyle()).__name__ == "Curve" for p in joins)  # "-": no arrow heads
    # the check itself sees overlaps: two names written on one spot
    both = [ax.text(12.0, 90.0, "Coat"), ax.text(12.0, 90.0, "Coat too")]
    assert plotting.overlapping_texts(both) == [("Coat", "Coat too")]
    plt.close(fig)


def test_tradeoff_figure_draws_each_point_with_both_intervals_against_the_reference_given(tmp_path, drawn):
    """A point per method at (easy Δ, hard Δ) of ``tradeoff_points`` against the reference asked for
    (here ``base``), its easy interval as the horizontal bar and its hard interval as the vertical one;
    lines at 0; the quadrant MR² claims shaded; axes and title naming the reference and the seeds; the
    legend naming every method. Without a pair: the placeholder saying so, at the stem asked for."""
    t = syn.tables(methods=("erm", "mr2", "mr2_uniform"))
    pc = t["per_class"].assign(method=t["per_class"]["method"].replace({"erm": "base"}))
    groups = G.difficulty_table(pc, reference="base")
    points = tradeoff.tradeoff_points(pc, None, groups, "base").set_index("method")
    tradeoff.plot_tradeoff(pc, None, groups, tmp_path / "tradeoff", reference="base")
    (ax,) = drawn[0]["axes"]
    assert ax.get_xlabel() == "Δ easy classes vs base (points)" and ax.get_ylabel() == "Δ hard classes vs base (points)"
    assert ax.get_title() == f"toy ({len(syn.SEEDS)} paired seeds)"
    assert [c.get_label() for c in ax.containers] == [plotting.display_name(m) for m in ("mr2", "mr2_uniform")]
    for container, method in zip(ax.containers, ("mr2", "mr2_uniform")):
        p = points.loc[method]
        assert tuple(container.lines[0].get_xydata()[0]) == pytest.approx((p["easy_diff"], p["hard_diff"]))
        assert container.lines[0].get_marker() == "o"  # a point: a lone line segment would not show
        xbar, ybar = (bars.get_segments()[0] for bars in container.lines[2])
        assert [x for x, _ in xbar] == pytest.approx([p["easy_lo"], p["easy_hi"]])
        assert [y for _, y in ybar] == pytest.approx([p["hard_lo"], p["hard_hi"]])
        colour = matplotlib.colors.to_hex(plotting.method_colour(method))  # the point and its bars
        assert {matplotlib.colors.to_hex(container.lines[0].get_color())} | {
            matplotlib.colors.to_hex(bars.get_colors()[0]) for bars in container.lines[2]} == {colour}
    lines = {(tuple(line.get_xdata()), tuple(line.get_ydata())) for line in ax.get_lines()}
    assert ((0, 1), (0, 0)) in lines and ((0, 0), (0, 1)) in lines  # axhline and axvline at 0
    (quadrant,) = ax.collections[-1:]
    assert quadrant.get_paths()[0].vertices[:, 0].min() == 0 and quadrant.get_paths()[0].vertices[:, 1].min() == 0
    assert [x.get_text() for x in ax.get_legend().get_texts()] == [plotting.display_name(m) for m in ("mr2", "mr2_uniform")]
    two = pc[pc["class"] < 2]  # no easy group: nothing to place
    tradeoff.plot_tradeoff(two, None, G.difficulty_table(two, reference="base"), tmp_path / "none", reference="base")
    assert drawn[1]["placeholder"] and drawn[1]["stem"] == tmp_path / "none" and drawn[1]["texts"] == [tradeoff.NO_POINTS]


def test_claim_forest_panels_title_rows_and_marks_from_a_table_by_hand(tmp_path, drawn, monkeypatch):
    """Per dataset a panel titled with the reference and the seeds behind its intervals (one seed: no
    interval), "all" on top of the five rows with a faint rule between rows, the black line at 0;
    each method's points as markers (no line joins them) in its colour; an interval ending exactly at
    −100 is not past it (no mark), one past +100 is marked in the method's colour; the legend titled
    "method"."""
    metrics = ("all", "easy", "medium", "hard", "worst")
    rows = [{"dataset": "d", "method": m, "metric": x, "diff": 1.0, "diff_lo": -1.0, "diff_hi": 3.0, "n_paired": 2}
            for m in ("mr2", "ldam") for x in metrics]
    rows[0].update(diff_lo=-100.0)
    rows[1].update(diff_hi=100.0)
    rows[6].update(diff_hi=100.5)  # LDAM's easy row
    rows += [{"dataset": "e", "method": "mr2", "metric": x, "diff": 2.0, "diff_lo": np.nan, "diff_hi": np.nan,
              "n_paired": 1} for x in metrics]
    monkeypatch.setattr(claim_figures, "claim_table", lambda *a, **k: pd.DataFrame(rows))
    claim_figures.plot_claim(None, None, None, tmp_path / "claim", reference="base")
    d, e = drawn[0]["axes"][:2]
    assert d.get_title() == "d: Δ to base (95% t-interval over 2 paired seeds)"
    assert e.get_title() == "e: Δ to base (1 seed: no interval)"
    assert d.get_xlabel() == "paired Δ test accuracy to base (points)"
    assert d.get_ylim() == (4.5, -0.5) and [t.get_text() for t in d.get_yticklabels()][0] == "all classes"
    rules = sorted(line.get_ydata()[0] for line in d.get_lines() if list(line.get_xdata()) == [0, 1])
    assert rules == [0.5, 1.5, 2.5, 3.5]
    (zero,) = [line for line in d.get_lines() if list(line.get_xdata()) == [0, 0]]
    assert matplotlib.colors.to_hex(zero.get_color()) == "#000000"
    for container, method in zip(d.containers, ("mr2", "ldam")):
        assert container.lines[0].get_marker() == "o" and container.lines[0].get_linestyle() == "None"
        assert matplotlib.colors.to_hex(container.lines[0].get_color()) == matplotlib.colors.to_hex(
            plotting.method_colour(method))
    marks = [line for line in d.get_lines() if line.get_marker() in ("<", ">")]
    (mark,) = marks  # LDAM (the second of two methods: 1/3 apart, +1/6 off the row) on the easy row
    assert (mark.get_marker(), list(mark.get_xdata())) == (">", [100.0]) and list(mark.get_ydata()) == pytest.approx([1 + 1 / 6])
    assert matplotlib.colors.to_hex(mark.get_color()) == matplotlib.colors.to_hex(plotting.method_colour("ldam"))
    assert marks[0].get_linestyle() == "None"
    legends = [ax.get_legend() for ax in drawn[0]["axes"] if ax.get_legend() is not None]
    assert len(legends) == 1 and legends[0].get_title().get_text() == "method"


def test_missing_lines_name_the_reference_and_method_once_each_in_order():
    """One line per missing comparison (change_vs_erm shares claim_forest's), the reference in
    capitals and the MR² method by its code name, in the order of ``available``."""
    available = {"margins_over_training": False, "claim_forest": False, "change_vs_erm": False, "sweeps": True,
                 "regimes": False, "per_class": False}
    assert F.missing_lines(available, reference="base", method="mine") == [
        "No run of mine logged its margins: `config/config.yaml` runs MR².",
        "No method ran beside BASE on the same seeds: `config/config.yaml` runs ERM, MR² and its ablations.",
        F.MISSING["regimes"]]
    assert F.missing_lines({"claim_forest": False, "margins_over_training": False}) == [  # the defaults
        "No method ran beside ERM on the same seeds: `config/config.yaml` runs ERM, MR² and its ablations.",
        "No run of mr2 logged its margins: `config/config.yaml` runs MR²."]


def test_a_sweep_through_zero_is_on_a_symmetric_log_axis_linear_below_its_smallest_positive_value():
    fig, (zero, positive, other) = plt.subplots(1, 3)
    F._value_axis(zero, "lam", [0.0, 0.05, 0.5])
    F._value_axis(positive, "c_bar", [0.1, 1.0])
    F._value_axis(other, "seed", [0, 1, 2])
    assert zero.get_xscale() == "symlog" and zero.xaxis.get_transform().linthresh == 0.05
    assert (positive.get_xscale(), other.get_xscale()) == ("log", "linear")
    plt.close(fig)


def test_tradeoff_panels_keep_the_origin_in_view_and_count_the_paired_seeds(tmp_path, drawn, monkeypatch):
    """Points all right of and above 0 (dataset p, one paired seed, no intervals) or all left of and
    below it (q, two): each panel spans its points, their intervals and the origin with a margin of
    15 % of that span (the shaded quadrant does not widen it), its title counts the seeds in the
    singular or plural, and the one legend is titled "method"."""
    cols = ["easy_diff", "easy_lo", "easy_hi", "hard_diff", "hard_lo", "hard_hi"]
    points = pd.DataFrame([("p", "mr2", 1, *(5.0, np.nan, np.nan, 6.0, np.nan, np.nan)),
                           ("p", "ldam", 1, *(7.0, np.nan, np.nan, 8.0, np.nan, np.nan)),
                           ("q", "mr2", 2, *(-0.2, -0.4, -0.1, -0.3, -0.5, -0.1)),
                           ("q", "ldam", 2, *(-0.5, -0.7, -0.3, -0.6, -0.8, -0.4))],
                          columns=["dataset", "method", "n_paired", *cols])
    monkeypatch.setattr(tradeoff, "tradeoff_points", lambda *a, **k: points)
    tradeoff.plot_tradeoff(None, None, None, tmp_path / "tradeoff")
    p, q = drawn[0]["axes"]
    assert p.get_title() == "p (1 paired seed)" and q.get_title() == "q (2 paired seeds)"
    assert p.get_xlim() == pytest.approx((0 - 1.05, 7 + 1.05)) and p.get_ylim() == pytest.approx((0 - 1.2, 8 + 1.2))
    assert q.get_xlim() == pytest.approx((-0.7 - 0.105, 0.105)) and q.get_ylim() == pytest.approx((-0.8 - 0.12, 0.12))
    (shade,) = [c for c in p.collections if c.get_paths() and c.get_paths()[0].vertices[:, 1].max() > 0]
    assert shade.get_paths()[0].vertices.max(axis=0) == pytest.approx((8.05, 9.2))  # up to the frozen view
    legends = [ax.get_legend() for ax in (p, q) if ax.get_legend() is not None]
    assert len(legends) == 1 and legends[0].get_title().get_text() == "method"


def test_available_figures_says_which_comparisons_the_tables_hold():
    """Each figure against what its tables hold, written out by hand: the pairs with the reference
    (claim, changes, trade-off), MR²'s per-class γ in the epoch log (absent log: available), a sweep
    of the sweep method, two regimes of one data; the reference and methods by name."""
    regimes = {"lo": ("toy", 300, 4, 1.0), "hi": ("toy", None, 4, 1.0)}
    t = syn.tables(datasets=("lo", "hi"), sweeps=("c_bar=0.5", "c_bar=2.0"), regimes=regimes)
    groups = G.difficulty_table(t["per_class"])
    every = ["claim_forest", "per_class_sorted", "accuracy_vs_variability", "group_accuracy", "change_vs_erm",
             "margins_over_training", "sweeps", "regimes", "tradeoff"]
    assert F.available_figures(t, groups) == dict.fromkeys(every, True)
    without_runs = F.available_figures({"per_class": t["per_class"], "epochs": t["epochs"]}, groups)
    assert [n for n, ok in without_runs.items() if not ok] == ["sweeps", "regimes"]  # their settings are in runs
    other = syn.renamed(t, {"erm": "base", "mr2": "mine"})
    assert [n for n, ok in F.available_figures(other, groups).items() if not ok] == [
        "claim_forest", "change_vs_erm", "margins_over_training", "sweeps", "regimes", "tradeoff"]
    assert F.available_figures(other, groups, reference="base", sweep_method="mine", method="mine") == \
        dict.fromkeys(every, True)
    assert not F.available_figures(other, groups, reference="base", sweep_method="mr2_uniform")["sweeps"]
    assert F.available_figures({"per_class": t["per_class"], "runs": t["runs"]}, groups)["margins_over_training"]
    # γ of MR² with no class, a per-class log of MR² that is not γ, γ per class of another method: no figure
    log = pd.DataFrame({"method": ["mr2", "mr2", "mr2_uniform"], "name": ["gamma", "a_k", "gamma"],
                        "class": [pd.NA, 0, 1]})
    assert not F.available_figures({**t, "epochs": log}, groups)["margins_over_training"]
    log.loc[3] = ["mr2", "gamma", 2]
    assert F.available_figures({**t, "epochs": log}, groups)["margins_over_training"]


def test_make_figures_hands_each_figure_its_tables_stem_and_names(tmp_path, monkeypatch):
    """Each figure function is called with the tables it draws, its own stem under the folder given
    and the reference, MR² method and sweep method given (recorded in place of the drawing);
    ``available_figures`` decides the figures when none are named; an unknown name is an error that
    lists the figures."""
    t, groups = full()
    calls = {}

    def recorder(name):
        return lambda *args, **kwargs: calls.setdefault(name, (args, kwargs)) and name

    functions = ("plot_claim", "plot_accuracy_vs_variability", "plot_per_class_sorted", "plot_group_accuracy",
                 "plot_change_vs_reference", "plot_margins_over_training", "plot_sweeps", "plot_regimes",
                 "plot_tradeoff", "available_figures")
    for function in functions:
        monkeypatch.setattr(F, function, recorder(function))
    pc, runs, epochs = t["per_class"], t["runs"], t["epochs"]
    every = list(F.MISSING) + ["accuracy_vs_variability", "per_class_sorted", "group_accuracy", "tradeoff"]
    made = F.make_figures(t, groups, tmp_path, reference="base", sweep_method="mr2_sweep", method="mine",
                          names=every)
    assert list(made) == every and (made["regimes"], made["tradeoff"], made["change_vs_erm"]) == (
        "plot_regimes", "plot_tradeoff", "plot_change_vs_reference")  # each name what its function returned
    out = tmp_path
    expected = {
        "plot_claim": ((pc, runs, groups, out / "claim_forest"), {"reference": "base"}),
        "plot_accuracy_vs_variability": ((pc, out / "accuracy_vs_variability"), {"methods": ("base", "mine")}),
        "plot_per_class_sorted": ((pc, out / "per_class_sorted"), {}),
        "plot_group_accuracy": ((pc, groups, out / "group_accuracy"), {}),
        "plot_change_vs_reference": ((pc, out / "change_vs_erm"), {"reference": "base", "groups": groups}),
        "plot_sweeps": ((pc, runs, groups, out / "sweeps"), {"method": "mr2_sweep", "reference": "base"}),
        "plot_regimes": ((pc, runs, groups, out / "regimes"), {"reference": "base"}),
        "plot_tradeoff": ((pc, runs, groups, out / "tradeoff"), {"reference": "base"}),
    }
    for function, (args, kwargs) in expected.items():
        got_args, got_kwargs = calls[function]
        assert len(got_args) == len(args) and all(a is b or a == b for a, b in zip(got_args, args)), function
        assert got_kwargs.keys() == kwargs.keys() and all(got_kwargs[k] is v or got_kwargs[k] == v
                                                          for k, v in kwargs.items()), function
    margins_args, margins_kwargs = calls["plot_margins_over_training"]
    assert margins_args[0] is epochs and margins_args[1] is groups and margins_args[2] == out / "margins_over_training"
    assert margins_kwargs["method"] == "mine"
    pd.testing.assert_frame_equal(margins_kwargs["names"], G.class_names(pc))
    monkeypatch.setattr(F, "available_figures", lambda *a: calls.__setitem__("available", a) or {n: n != "sweeps"
                                                                                                 for n in every})
    assert "sweeps" not in F.make_figures(t, groups, tmp_path, reference="base", sweep_method="s", method="m")
    assert calls["available"] == (t, groups, "base", "s", "m")
    F.make_figures(t, groups, tmp_path)
    assert calls["available"] == (t, groups, "erm", "mr2", "mr2")  # the defaults: ERM, MR² and MR²'s sweeps
    with pytest.raises(ValueError) as error:
        F.make_figures(t, groups, tmp_path, names=["tradeoff", "pie"])
    assert str(error.value) == ("unknown figure 'pie'; the figures are claim_forest, accuracy_vs_variability, "
                                "per_class_sorted, group_accuracy, change_vs_erm, margins_over_training, sweeps, "
                                "regimes, tradeoff")
