"""What the premise analysis's two figures show (mr2/results/premise_figures.py), checked against
hand-built tables with decoy rows that must be left out: which rows feed which panel, the bars'
heights and bottoms (‖μ̂_k‖² stacked under ‖ŝ_k‖², a_k's seed sd as error bars), the margin
scatter's points (ERM error in %, γ_k's mean over seeds), the panels' order, titles and labels
(the paper's symbols), the legends, and the files ``write_analysis`` writes for a non-default
reference, method and level."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.markers import MarkerStyle

from results_data import spy_on_figures
from mr2.results import plotting, premise_figures, premise_tables

SYM = {"a": r"$a_k$", "m": r"$\|\hat{\mu}_k\|^2$", "s": r"$\|\hat{s}_k\|^2$", "gamma": r"$\gamma_k$"}
GROUP_RGBA = {"hard": to_rgba("tab:red"), "medium": to_rgba("tab:orange"), "easy": to_rgba("tab:green")}
GREY = to_rgba("grey")


@pytest.fixture
def saved(monkeypatch):
    """Every figure the module saves (placeholders included), with its stem; nothing is rendered."""
    return spy_on_figures(monkeypatch, (premise_figures, plotting), save=False)


def grid(fig):
    """{(row, column): axes} of a figure's panels."""
    return {(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start): ax for ax in fig.axes}


def is_grey(rgba):
    return rgba[0] == pytest.approx(rgba[1]) == pytest.approx(rgba[2])


# ----------------------------------------------------------------------------- the decomposition
def decomposition_table():
    """Dataset B (listed first) and A, 4 classes each (two tied on ERM's accuracy, one without a
    group), ERM and MR²'s default runs at p = 2, and decoys: MR²'s exploratory variant, another
    method, p = 3 rows. Every row has its own numbers, so a row drawn in the wrong panel shows."""
    rng = np.random.default_rng(3)
    acc = {"B": [0.9, 0.5, 0.7, 0.5], "A": [0.2, 0.8, 0.6, 0.4]}
    groups = {"B": ["easy", "hard", "medium", None], "A": ["hard", "easy", "medium", "hard"]}
    rows = []
    for p in (2, 3):
        for dataset in ("B", "A"):
            for method, variant in (("erm", "default"), ("mr2", "default"), ("mr2", "statistic=spread"),
                                    ("mr2_uniform", "default")):
                for k in (3, 0, 2, 1):  # not in class order
                    m, s = rng.uniform(0.5, 2.0, 2)
                    sd = math.nan if (dataset, method) == ("A", "erm") else rng.uniform(0.05, 0.3)
                    rows.append({"dataset": dataset, "method": method, "variant": variant, "p": p, "class": k,
                                 "class_name": f"{dataset.lower()}{k}", "mean_sq_norm": m, "spread": s,
                                 "a": m + s, "a_sd": sd, "erm_accuracy": acc[dataset][k],
                                 "group": groups[dataset][k]})
    return pd.DataFrame(rows)


def expected_panel(table, dataset, method, p=2):
    part = [r for r in table.to_dict("records") if (r["dataset"], r["method"], r["variant"], r["p"])
            == (dataset, method, "default", p)]
    return sorted(part, key=lambda r: (r["erm_accuracy"], r["class"]))  # hardest left, ties by class


def group_runs(groups):
    runs = []
    for g in groups:
        if not runs or runs[-1] != g:
            runs.append(g)
    return runs


def test_decomposition_draws_each_methods_parts_per_dataset(tmp_path, saved):
    table = decomposition_table()
    premise_figures.plot_decomposition(table, tmp_path / "dec")  # default reference and methods: ERM, MR²
    (only,) = saved
    assert only["stem"] == tmp_path / "dec"
    panels = grid(only["fig"])
    assert sorted(panels) == [(r, c) for r in range(2) for c in range(2)]
    for (r, c), ax in panels.items():
        method, dataset = ("erm", "mr2")[r], ("B", "A")[c]
        want = expected_panel(table, dataset, method)
        assert ax.get_title() == f"{dataset}: training features of {('ERM', 'MR²')[r]}"
        assert ax.get_xlabel() == "class (ascending ERM accuracy)"
        assert ax.get_ylabel() == f"{SYM['a']} = {SYM['m']} + {SYM['s']}"
        assert [t.get_text() for t in ax.get_xticklabels()] == [w["class_name"] for w in want]
        assert [t.get_text() for t in ax.texts] == group_runs([w["group"] if isinstance(w["group"], str) else "?" for w in want])
        bars = [b for b in ax.containers if isinstance(b, BarContainer)]
        assert len(bars) == 2
        for bar, key, bottom in ((bars[0], "mean_sq_norm", [0.0] * 4), (bars[1], "spread",
                                                                         [w["mean_sq_norm"] for w in want])):
            assert [b.get_x() + b.get_width() / 2 for b in bar] == pytest.approx(range(4))
            assert [b.get_height() for b in bar] == pytest.approx([w[key] for w in want])
            assert [b.get_y() for b in bar] == pytest.approx(bottom)
        # the two parts in two neutral greys (no method's colour, no group's)
        m_colour, s_colour = (bar[0].get_facecolor() for bar in bars)
        assert is_grey(m_colour) and is_grey(s_colour) and m_colour != s_colour
        errors = [e for e in ax.containers if isinstance(e, ErrorbarContainer)]
        if (dataset, method) == ("A", "erm"):  # no sd of a_k: no error bars
            assert errors == []
            continue
        (error,) = errors
        data_line, _, (bar_lines,) = error.lines
        assert data_line is None  # bars only, no line joining the classes
        segments = np.array(bar_lines.get_segments())
        np.testing.assert_allclose(segments[:, :, 0], np.repeat(np.arange(4.0)[:, None], 2, axis=1))
        np.testing.assert_allclose(segments[:, 0, 1], [w["a"] - w["a_sd"] for w in want])
        np.testing.assert_allclose(segments[:, 1, 1], [w["a"] + w["a_sd"] for w in want])
    legend = panels[0, 1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [f"{SYM['m']} (mean's norm)", f"{SYM['s']} (spread)"]
    bars = [b for b in panels[0, 1].containers if isinstance(b, BarContainer)]
    assert [h.get_facecolor() for h in legend.legend_handles] == [b[0].get_facecolor() for b in bars]


def test_decomposition_at_another_norm_and_with_nothing_to_draw(tmp_path, saved):
    table = decomposition_table()
    table = table[~((table["p"] == 3) & (table["dataset"] == "A"))]
    premise_figures.plot_decomposition(table, tmp_path / "p3", reference="erm", methods=("mr2",), p=3)
    panels = grid(saved[0]["fig"])
    assert sorted(panels) == [(0, 0), (1, 0)]  # ERM's row and MR²'s, one dataset
    for r, method in enumerate(("erm", "mr2")):
        ax = panels[r, 0]
        assert ax.get_ylabel() == f"{SYM['a']} = {SYM['m']} + {SYM['s']} ($L_3$)"
        heights = [b.get_height() for b in ax.containers[0]]
        assert heights == pytest.approx([w["mean_sq_norm"] for w in expected_panel(table, "B", method, p=3)])
    decoys = table[table["variant"] != "default"]
    premise_figures.plot_decomposition(decoys, tmp_path / "none")
    empty = saved[1]
    assert empty["stem"] == tmp_path / "none"
    assert [t.get_text() for t in empty["fig"].axes[0].texts] == ["no per-class statistics to draw"]


# ----------------------------------------------------------------------------- γ_k against ERM's error
VARIANTS = ["default", "statistic=spread", "c_bar=0.5", "p=3", "statistic=mean", "p=1", "p=4", "p=5"]
DRAWN = [v for v in VARIANTS if v != "c_bar=0.5"]  # c_bar=0.5: a sweep, not one of our exploratory variants
LABELS = ["MR²"] + [f"MR² ({v}, exploratory)" for v in DRAWN[1:]]


def margins_table():
    """MR²'s γ_k over three seeds in datasets B (first) and A (which lacks statistic=spread), with
    ERM's per-class error and the group; decoys: ERM's own rows, a sweep variant of MR², another
    method with an exploratory variant."""
    rng = np.random.default_rng(5)
    err = {"B": [0.3, 0.1, 0.5, 0.2], "A": [0.05, 0.4, 0.25, 0.15]}
    groups = {"B": ["medium", "easy", "hard", None], "A": ["easy", "hard", "medium", "medium"]}
    rows = []
    for dataset in ("B", "A"):
        for method, variant in [("erm", "default"), *(("mr2", v) for v in VARIANTS),
                                ("mr2_uniform", "statistic=spread")]:
            if (dataset, variant) == ("A", "statistic=spread") and method == "mr2":
                continue
            for seed in (0, 1, 2):
                for k in (2, 0, 3, 1):
                    rows.append({"dataset": dataset, "method": method, "variant": variant, "seed": seed,
                                 "class": k, "class_name": f"{dataset.lower()}{k}", "gamma": rng.uniform(0.2, 2),
                                 "erm_error": err[dataset][k], "group": groups[dataset][k]})
    return pd.DataFrame(rows)


def rho_row(dataset, method, variant, x, y, mean, lo, hi, n=3, source="final", epoch=None):
    return {"dataset": dataset, "method": method, "variant": variant, "source": source, "epoch": epoch,
            "x": x, "y": y, "n_seeds": 3, "n_defined": n, "rho_mean": mean, "rho_lo": lo, "rho_hi": hi}


def correlation_table():
    rows = [rho_row("B", "mr2", "default", "erm_error", "gamma", 0.5, 0.1, 0.9),
            rho_row("B", "mr2", "statistic=spread", "erm_error", "gamma", -0.25, -0.6, 0.05),
            rho_row("B", "mr2", "p=3", "erm_error", "gamma", math.nan, math.nan, math.nan, n=0),
            rho_row("A", "mr2", "default", "erm_error", "gamma", 0.125, -0.3, 0.55),
            rho_row("A", "mr2", "p=5", "erm_error", "gamma", 0.75, 0.4, 1.0)]
    # decoys: another y, x, method, dataset and a running (epoch) ρ
    rows += [rho_row("B", "mr2", "default", "erm_error", "a", 0.9, 0.8, 1.0),
             rho_row("B", "mr2", "default", "gamma", "change", 0.8, 0.7, 0.9),
             rho_row("B", "mr2_uniform", "statistic=spread", "erm_error", "gamma", 0.7, 0.6, 0.8),
             rho_row("C", "mr2", "default", "erm_error", "gamma", 0.6, 0.5, 0.7),
             rho_row("A", "mr2", "p=4", "erm_error", "gamma", 0.3, 0.2, 0.4, source="epoch", epoch=3)]
    out = pd.DataFrame(rows)
    out["epoch"] = out["epoch"].astype("Int64")
    return out


TITLE_RHO = {("B", "default"): "+0.50 [80 % CI +0.10, +0.90; 3 seeds]",
             ("B", "statistic=spread"): "-0.25 [80 % CI -0.60, +0.05; 3 seeds]",
             ("B", "p=3"): "undefined (fewer than 3 classes, or one side is constant across classes)",
             ("A", "default"): "+0.12 [80 % CI -0.30, +0.55; 3 seeds]",
             ("A", "p=5"): "+0.75 [80 % CI +0.40, +1.00; 3 seeds]"}


def marker_path(marker):
    style = MarkerStyle(marker)
    return style.get_path().transformed(style.get_transform()).vertices


def test_margin_labels_are_the_default_and_our_exploratory_variants():
    margins = margins_table()
    assert premise_figures.margin_labels(margins) == [("mr2", v) for v in DRAWN]
    assert premise_figures.margin_labels(margins, "mr2_uniform") == [("mr2_uniform", "statistic=spread")]
    assert premise_figures.margin_labels(margins, "erm") == [("erm", "default")]


def test_margins_figure_draws_each_variants_mean_gamma_against_erm_error(tmp_path, saved, monkeypatch):
    named, real_names = [], premise_figures.name_points
    monkeypatch.setattr(premise_figures, "name_points",
                        lambda ax, x, y, names: named.append((ax, list(x), list(y), list(names)))
                        or real_names(ax, x, y, names))
    margins = margins_table()
    premise_figures.plot_margins_vs_error(margins, correlation_table(), tmp_path / "m", level=0.8)
    (only,) = saved
    assert only["stem"] == tmp_path / "m"
    panels = grid(only["fig"])
    assert sorted(panels) == [(0, 0), (0, 1)]  # a panel per dataset, side by side, in the tables' order
    mine = margins[margins["method"] == "mr2"]
    # each variant's marker is the one its legend key shows, and no two variants share one
    handles = panels[0, 1].get_legend().legend_handles
    markers = {v: marker_path(h.get_marker()) for v, h in zip(DRAWN, handles)}
    assert all(len(markers[v]) != len(markers[w]) or not np.allclose(markers[v], markers[w])
               for i, v in enumerate(DRAWN) for w in DRAWN[i + 1:])
    for c, dataset in enumerate(("B", "A")):
        ax = panels[0, c]
        present = [v for v in DRAWN if ((mine["dataset"] == dataset) & (mine["variant"] == v)).any()]
        lines = [dataset] + [f"{LABELS[DRAWN.index(v)]}: ρ = {TITLE_RHO.get((dataset, v), 'not measured')}"
                             for v in present]
        assert ax.get_title() == "\n".join(lines)
        assert ax.get_xlabel() == "ERM per-class test error (%)" and ax.get_ylabel() == f"final {SYM['gamma']}"
        assert len(ax.collections) == len(present)
        means = {}
        for coll, variant in zip(ax.collections, present):
            part = mine[(mine["dataset"] == dataset) & (mine["variant"] == variant)]
            want = []
            for k, rows in part.groupby("class"):
                g = rows["group"].iloc[0]
                means[variant, k] = rows["gamma"].mean()
                want.append((100 * rows["erm_error"].iloc[0], means[variant, k],
                             GROUP_RGBA[g] if isinstance(g, str) else GREY))
            got = [(x, y, tuple(rgba)) for (x, y), rgba in zip(coll.get_offsets(), coll.get_facecolors())]
            assert len(got) == len(want)
            for (gx, gy, gc), (wx, wy, wc) in zip(sorted(got), sorted(want)):
                assert (gx, gy) == pytest.approx((wx, wy)) and gc == pytest.approx(wc)
            assert np.allclose(coll.get_paths()[0].vertices, markers[variant])
        # the dotted line at the mean γ_k over the drawn variants and classes (Corollary 1's c̄)
        (c_bar,) = [line for line in ax.lines if list(line.get_xdata()) == [0, 1]]
        assert c_bar.get_ydata()[0] == pytest.approx(np.mean(list(means.values())))
    # the default variant's points are named, where they are
    assert [a for a, *_ in named] == [panels[0, 0], panels[0, 1]]
    for (ax, x, y, names), dataset in zip(named, ("B", "A")):
        part = mine[(mine["dataset"] == dataset) & (mine["variant"] == "default")].groupby("class")
        want = {f"{dataset.lower()}{k}": (100 * rows["erm_error"].iloc[0], rows["gamma"].mean()) for k, rows in part}
        got = {n: (xi, yi) for n, xi, yi in zip(names, x, y)}
        assert sorted(got) == sorted(want)
        assert all(got[n] == pytest.approx(want[n]) for n in want)
        assert sorted(t.get_text() for t in ax.texts) == sorted(want)
    # one legend, on the last panel: a grey key per variant (its marker), a dot per group (its colour)
    assert panels[0, 0].get_legend() is None
    legend = panels[0, 1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == LABELS + ["easy", "medium", "hard"]
    for handle in handles[:len(DRAWN)]:
        assert is_grey(to_rgba(handle.get_color())) and handle.get_linestyle() == "None"
    for handle, g in zip(handles[len(DRAWN):], ("easy", "medium", "hard")):
        assert handle.get_marker() == "o" and handle.get_linestyle() == "None"
        assert to_rgba(handle.get_color()) == pytest.approx(GROUP_RGBA[g])


def test_margins_figure_without_runs_of_the_method(tmp_path, saved):
    margins = margins_table()
    premise_figures.plot_margins_vs_error(margins[margins["method"] != "mr2"], correlation_table(), tmp_path / "m")
    (only,) = saved
    assert only["stem"] == tmp_path / "m"
    assert [t.get_text() for t in only["fig"].axes[0].texts] == ["no runs of mr2"]


# ----------------------------------------------------------------------------- write_analysis
def test_write_analysis_uses_the_given_reference_method_and_level(tmp_path, saved):
    """ERM renamed 'base', MR² 'mine', an 80 % level: the tables and both figures follow them."""
    from test_analysis import synthetic

    tables = synthetic()
    rename = {"erm": "base", "mr2": "mine"}
    for name in ("per_class", "epochs"):
        tables[name] = tables[name].assign(method=tables[name]["method"].replace(rename))
    out = tmp_path / "analysis"
    result = premise_figures.write_analysis(tables, out, reference="base", method="mine", level=0.8)
    expected = premise_tables.analyse(tables, "base", 0.8)
    for name in premise_tables.TABLE_NAMES:
        assert (out / f"{name}.csv").is_file()
        pd.testing.assert_frame_equal(result[name], expected[name])
    assert [s["stem"] for s in saved] == [out / "premise_decomposition", out / "premise_margins"]
    decomposition, margins = (s["fig"] for s in saved)
    assert [ax.get_title() for ax in decomposition.axes] == ["toy: training features of base",
                                                           "toy: training features of mine"]
    assert {ax.get_xlabel() for ax in decomposition.axes} == {"class (ascending base accuracy)"}
    title = margins.axes[0].get_title().split("\n")
    assert title[0] == "toy" and title[1].startswith("mine: ρ = ") and "80 % CI" in title[1]
