"""Figures: every function writes a real PNG and PDF, survives missing methods and one seed,
and says so when there is nothing to draw."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

import results_data as syn
from mr2.results import figures as F
from mr2.results import plotting
from mr2.common.runs import RUN_KEYS
from mr2.results import groups as G
from mr2.results import statistics as S
from mr2.results import tables as R


def check_files(paths):
    png, pdf = paths
    assert png.suffix == ".png" and pdf.suffix == ".pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000
    assert plt.get_fignums() == []  # closed after saving


@pytest.fixture
def captured(monkeypatch):
    """The texts and axes of every figure saved (the files are still written)."""
    seen = []
    real = F.save_figure

    def spy(fig, stem, **kw):
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        titles = [ax.get_title() for ax in fig.axes]
        seen.append({"texts": texts, "titles": titles, "axes": list(fig.axes)})
        return real(fig, stem, **kw)

    monkeypatch.setattr(F, "save_figure", spy)
    monkeypatch.setattr(plotting, "save_figure", spy)  # placeholders are saved there
    return seen


def full():
    t = syn.tables(datasets=("toy", "toy2"), sweeps=("c_bar=0.5", "c_bar=2.0", "lam=0.3"))
    return t, G.difficulty_table(t["per_class"])


def test_every_figure_writes_png_and_pdf(tmp_path, captured):
    t, groups = full()
    made = F.make_figures(t, groups, tmp_path)
    assert sorted(made) == sorted(["per_class_sorted", "accuracy_vs_variability", "group_accuracy",
                                   "change_vs_erm", "margins_over_training", "sweeps"])
    for name, paths in made.items():
        assert paths[0] == tmp_path / f"{name}.png"
        check_files(paths)
    # real content, not placeholders: one panel per dataset (the change figure: per dataset and
    # method other than ERM), sweeps 2 datasets x 2 options
    assert all(not c["texts"] for c in captured)
    n_other = len([m for m in syn.METHODS if m != "erm"])
    assert [len(c["axes"]) for c in captured[:5]] == [2, 2, 2, 2 * n_other, 2]
    assert captured[3]["titles"][:n_other] == [f"toy: {m}" for m in syn.METHODS if m != "erm"]
    assert len(captured[5]["axes"]) == 4


def test_sorted_lines_are_ascending_per_method(tmp_path, captured):
    t, _ = full()
    check_files(F.plot_per_class_sorted(t["per_class"], tmp_path / "s"))
    lines = captured[0]["axes"][0].get_lines()
    curves = [ln.get_ydata() for ln in lines if len(ln.get_ydata()) == syn.K]
    assert len(curves) == len(syn.METHODS)  # sweep variants are left out by default
    assert all((curve[1:] >= curve[:-1]).all() for curve in curves)


def test_spearman_in_title(tmp_path, captured):
    t, _ = full()
    check_files(F.plot_accuracy_vs_variability(t["per_class"], tmp_path / "v"))
    title = captured[0]["titles"][0]
    assert "ρ[erm]" in title and "ρ[mr2]" in title
    # a_k falls with accuracy in the synthetic data: strongly negative rank correlation
    assert float(title.split("ρ[erm] = ")[1].split(",")[0]) < -0.8


def test_figures_with_erm_and_mr2_and_one_seed(tmp_path, captured):
    t = syn.tables(methods=("erm", "mr2"), seeds=(0,))
    groups = G.difficulty_table(t["per_class"])
    made = F.make_figures(t, groups, tmp_path)
    for paths in made.values():
        check_files(paths)
    sweeps = captured[-1]
    assert sweeps["texts"] == [F.NO_SWEEP]


def test_sweeps_read_each_value_from_the_resolved_config_and_mark_missing_sweeps(tmp_path, captured):
    t = syn.tables(sweeps=("c_bar=0.5", "c_bar=2.0"))
    groups = G.difficulty_table(t["per_class"])
    table = F.sweep_table(t["per_class"], t["runs"], groups)
    assert sorted(table["value"].unique()) == [0.5, 1.0, 2.0]  # the default variant at its configured c̄ = 1
    assert set(table["option"]) == {"c_bar"} and len(table) == 3 * 3
    # the value comes from the config, not from the variant's name
    runs = t["runs"].assign(**{"config.method.options.c_bar": t["runs"]["config.method.options.c_bar"] * 3})
    assert sorted(F.sweep_table(t["per_class"], runs, groups)["value"].unique()) == [1.5, 3.0, 6.0]
    check_files(F.plot_sweeps(t["per_class"], t["runs"], groups, tmp_path / "sw"))
    texts = captured[0]["texts"]
    assert texts == [f"toy, lam: {F.NO_SWEEP}"]  # the lam panel says it was not swept


def test_placeholders_when_methods_are_absent(tmp_path, captured):
    t = syn.tables(methods=("erm",), seeds=(0, 1))
    groups = G.difficulty_table(t["per_class"])
    check_files(F.plot_change_vs_reference(t["per_class"], tmp_path / "c"))
    check_files(F.plot_margins_over_training(t["epochs"], groups, tmp_path / "m"))
    check_files(F.plot_accuracy_vs_variability(t["per_class"], tmp_path / "a", methods=("mr2",)))
    assert all(len(c["texts"]) == 1 for c in captured)
    assert "mr2" in captured[1]["texts"][0]


def test_margin_lines_follow_the_groups(tmp_path, captured):
    t, groups = full()
    check_files(F.plot_margins_over_training(t["epochs"], groups, tmp_path / "g"))
    ax = captured[0]["axes"][0]
    finals = [ln.get_ydata()[-1] for ln in ax.get_lines() if len(ln.get_ydata()) == 4]
    # 3 easy + 3 hard class lines and 2 group means; hard classes' γ grows, easy classes' falls
    assert len(finals) == 8
    assert sorted(round(v, 6) for v in finals) == [0.8] * 4 + [1.4] * 4


def test_group_bars_match_the_group_accuracy(tmp_path, captured):
    t, groups = full()
    check_files(F.plot_group_accuracy(t["per_class"], groups, tmp_path / "b"))
    ax = captured[0]["axes"][0]
    heights = sorted(p.get_height() for p in ax.patches if p.get_height() > 0)
    per_run = G.run_group_accuracy(t["per_class"].query("dataset == 'toy' and variant == 'default'"), groups)
    expected = sorted(100 * per_run.groupby("method")[["all", "easy", "medium", "hard"]].mean().to_numpy().ravel())
    assert heights == pytest.approx(expected)


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
