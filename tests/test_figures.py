"""The report's figures as a whole (mr2/results/figures/): one contract over the registry — every
figure writes a real PNG and PDF, is a placeholder exactly where its data are missing, draws each
method in one colour, writes no two labels on top of each other, and states in its title the numbers
the report's text states — then the registry's reading of a pipeline config, the command line, a few
figures against baseline images, and the drawing helpers every figure uses. What each figure's table
holds, by hand, is tests/test_figure_tables.py."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import matplotlib.colors
import matplotlib.text
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.testing.compare import compare_images

import results_data as syn
from mr2.cli import main
from mr2.results import groups as G
from mr2.results import plotting, style
from mr2.results import tables as R
from mr2.results.figures import registry
from mr2.results.figures.registry import FIGURES, FigureOptions, empty_message, figure_options
from mr2.results.figures.render import available, draw_figure, figure_module, figure_tables, make_figures
from mr2.results.report import class_findings, findings

REPO = Path(__file__).resolve().parents[1]
CAPTIONS = REPO / "workflow" / "report"
BASELINES = Path(__file__).resolve().parent / "baseline_images"
NAMES = list(FIGURES)


def every_figure_tables():
    """Tables that hold every figure's comparison: ERM, MR² and its ablations on two dataset keys of one
    data name in two regimes, c̄ and λ swept."""
    t = syn.tables(datasets=("lo", "hi"), sweeps=("c_bar=0.5", "c_bar=2.0", "lam=0.3"),
                   regimes={"lo": ("toy", 300, 4, 1.0), "hi": ("toy", None, 4, 1.0)})
    t["groups"] = G.difficulty_table(t["per_class"])
    return t


@pytest.fixture(scope="module")
def tables():
    return every_figure_tables()


@pytest.fixture(scope="module")
def computed(tables):
    return figure_tables(tables)


@pytest.fixture(scope="module")
def drawn(computed):
    """name -> the figure of ``computed``'s table, drawn once for the tests that only look at it
    (conftest closes them after the first test: a closed figure is still read, and drawn again on a
    new canvas)."""
    return {name: draw_figure(name, table) for name, table in computed.items()}


def check_files(png, pdf):
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000


def is_placeholder(fig):
    return len(fig.axes) == 1 and not fig.axes[0].axison


def texts_of(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


# ----------------------------------------------------------------------------- the contract
def test_the_registry_is_the_figure_modules_each_with_its_caption():
    """Every module of mr2/results/figures/ that declares a figure is in the registry under its own
    name, has a table and a draw, and its caption is workflow/report/<name>.rst (Snakemake's report
    and ours need it)."""
    folder = REPO / "mr2" / "results" / "figures"
    declared = sorted(p.stem for p in folder.glob("*.py") if re.search(r"^FIGURE = ", p.read_text(), re.M))
    assert sorted(FIGURES) == declared and declared
    for name in FIGURES:
        module = figure_module(name)
        assert module.FIGURE == registry.FIGURES[name].__dict__  # what the registry read is what Python reads
        assert callable(module.table) and callable(module.draw)
        assert (CAPTIONS / f"{name}.rst").read_text(encoding="utf-8").strip()


def test_the_workflow_declares_the_registrys_figures_and_the_analysis_outputs():
    """The figures and analysis outputs the workflow declares are read from the registries, never
    copied by hand: a config that runs every comparison declares every registered figure; the
    premise analysis writes exactly the registry's tables and figures."""
    from mr2.results import premise_tables

    everything = {"sweeps": {"method": "mr2", "c_bar": [2.0]},
                  "datasets": {"a": {"data": {"name": "digits"}}, "b": {"data": {"name": "digits"}}}}
    assert registry.config_figures(everything) == list(FIGURES)
    assert premise_tables.TABLE_NAMES == list(registry.ANALYSIS_TABLES)
    assert premise_tables.FIGURE_NAMES == list(registry.ANALYSIS_FIGURES)
    rules = (REPO / "workflow" / "rules" / "analysis.smk").read_text(encoding="utf-8")
    assert "for n in ANALYSIS_TABLES" in rules and "for n in ANALYSIS_FIGURES" in rules
    hand = [name for name in (*registry.ANALYSIS_TABLES, *registry.ANALYSIS_FIGURES, *FIGURES) if f'"{name}"' in rules]
    assert hand == ["correlation_summary"]  # the one table named: Snakemake's report shows it


@pytest.mark.parametrize("name", NAMES)
def test_every_figure_writes_a_real_png_and_pdf(name, tables, tmp_path):
    made = make_figures(tables, tmp_path, names=[name])
    assert list(made) == [name] and made[name] == [tmp_path / f"{name}.png", tmp_path / f"{name}.pdf"]
    check_files(*made[name])
    assert available(tables)[name]  # drawn from data, not a placeholder
    assert plt.get_fignums() == []  # closed once written


#: with ERM's runs only, the figures whose comparison is missing
MISSING_WITH_ERM_ONLY = {"claim_forest", "change_vs_erm", "margins_over_training", "sweeps", "regimes", "tradeoff"}


@pytest.mark.parametrize("name", NAMES)
def test_a_figure_is_a_placeholder_exactly_where_its_data_are_missing(name, drawn, tmp_path):
    """From tables of ERM alone a figure that compares methods (or draws MR²'s margins, a sweep, a
    regime) is one panel stating what it needs, and ``make_figures`` leaves it out unless asked for
    it by name; the others, and every figure of the full tables, show data."""
    erm = syn.tables(methods=("erm",))
    erm["groups"] = G.difficulty_table(erm["per_class"])
    table = figure_tables(erm, names=[name])[name]
    fig = draw_figure(name, table)
    missing = name in MISSING_WITH_ERM_ONLY
    assert table.empty == missing == is_placeholder(fig)
    if missing:
        assert texts_of(fig) == [empty_message(name)]
    assert not is_placeholder(drawn[name])
    written = make_figures(erm, tmp_path)
    assert (name in written) == (tmp_path / f"{name}.png").exists() == (not missing)


def legend_colours(ax):
    """label -> hex colour of the entries of the legend of ``ax``."""
    out = {}
    for handle, text in zip(ax.get_legend().legend_handles, ax.get_legend().get_texts()):
        colour = handle.get_color() if hasattr(handle, "get_color") else handle.get_facecolor()
        out[text.get_text()] = matplotlib.colors.to_hex(colour)
    return out


def test_each_method_has_one_colour_across_every_figure(drawn):
    """Every legend entry and every panel titled by a method draws it in ``method_colour``, the same in
    every figure; the methods' colours differ from each other and from the groups'."""
    want = {plotting.display_name(m): matplotlib.colors.to_hex(plotting.method_colour(m)) for m in syn.METHODS}
    assert len(set(want.values())) == len(want)
    assert not set(want.values()) & {matplotlib.colors.to_hex(c) for c in style.GROUP_COLOURS.values()}
    seen = {}
    for name, fig in drawn.items():
        for ax in fig.axes:
            if ax.get_legend() is not None:
                for label, colour in legend_colours(ax).items():
                    if label in want:
                        seen.setdefault(label, set()).add(colour)
            title = ax.get_title().split("\n")[0]
            method = title.split(": ", 1)[-1].split(" − ")[0]
            if name in ("accuracy_vs_variability", "change_vs_erm") and method in want:  # a panel per method
                colours = {matplotlib.colors.to_hex(c) for coll in ax.collections for c in coll.get_facecolors()}
                colours |= {matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()[:1]}
                seen.setdefault(method, set()).update(colours)
    assert seen == {label: {colour} for label, colour in want.items()}


@pytest.mark.parametrize("name", NAMES)
def test_no_two_labels_of_a_figure_overlap(name, drawn):
    """The names a figure writes beside points and line ends, the group names over a class axis and
    the notes on its lines: no two boxes overlap in any panel."""
    fig = drawn[name]
    FigureCanvasAgg(fig).draw()  # a figure closed by an earlier test has lost its canvas
    for ax in fig.axes:
        assert plotting.overlapping_texts([t for t in ax.texts if t.get_text()]) == [], (name, ax.get_title())


def difference_of(text):
    """(Δ, lo, hi) of the first ``+3.7 points [95 % CI +2.2, +5.3`` in a sentence."""
    found = re.search(r"([-+]\d+\.\d) points \[95 % CI ([-+]\d+\.\d), ([-+]\d+\.\d)", text)
    return [float(x) for x in found.groups()]


def test_titles_state_the_numbers_the_reports_text_states(tables, drawn):
    """The change figure's count of intervals that exclude 0 is the findings' count for each dataset,
    and the claim figure's hard-class point and interval for MR² are the findings' (to their 0.1 point)."""
    fig = drawn["change_vs_erm"]
    counted = {ax.get_title().split(":")[0]: ax.get_title().split("\n")[1].split(" intervals")[0]
               for ax in fig.axes if ax.get_title().split(": ")[1].startswith("MR² − ")}
    for line in class_findings(tables["per_class"]):
        dataset = line.split("`")[1]
        assert f": {counted[dataset]} classes' intervals exclude 0" in line
    assert set(counted) == {"lo", "hi"}
    fig = drawn["claim_forest"]
    text = "\n".join(findings(tables["per_class"], tables["runs"], tables["groups"]))
    for ax in fig.axes:
        dataset = ax.get_title().split(":")[0]
        mr2 = ax.containers[0]  # the first method after ERM in the tables' order
        hard = [t.get_text() for t in ax.get_yticklabels()].index("hard classes")
        (lo, _), (hi, _) = mr2.lines[2][0].get_segments()[hard]
        sentence = text.split(f"### {dataset}")[1].split("hard classes ")[1]
        assert difference_of(sentence) == pytest.approx([mr2.lines[0].get_xdata()[hard], lo, hi], abs=0.051)


def test_figures_write_the_papers_symbols_not_the_tables_names(drawn):
    plain = re.compile(r"gamma|\ba_k\b|c_bar|\blam\b|mu_k|s_k")
    strings = {s for fig in drawn.values() for s in syn.figure_strings(fig)}
    assert not [s for s in strings if plain.search(re.sub(r"\$[^$]*\$", "", s))]
    assert {r"$\gamma_k$", r"$a_k$ of ERM's training features", r"$\bar{c}$", r"$\lambda$"} <= strings


# ----------------------------------------------------------------------------- the registry and a config
def test_the_figure_options_are_the_configs_reference_mr2_method_and_swept_method():
    assert figure_options({"reference": "erm", "methods": ["erm", "mr2", "focal"],
                           "sweeps": {"method": "focal", "gamma": [1.0]}}) == FigureOptions("erm", "mr2", "focal")
    # no mr2: its first MR² method run, or else swept
    assert figure_options({"methods": ["erm", "mr2_uniform"], "sweeps": {"method": "mr2"}}) == \
        FigureOptions("erm", "mr2_uniform", "mr2")
    assert figure_options({"methods": ["erm", "focal"], "sweeps": {"method": "mr2_no_rep", "c_bar": [0.5]}}) == \
        FigureOptions("erm", "mr2_no_rep", "mr2_no_rep")
    assert figure_options({"methods": ["erm", "focal"], "sweeps": {"method": "mr2_no_rep", "c_bar": []}}).method == "mr2"
    assert figure_options({"reference": "base", "methods": ["base"]}) == FigureOptions("base", "mr2", "mr2")
    assert figure_options(None) == figure_options({}) == FigureOptions("erm", "mr2", "mr2")


def test_a_config_draws_the_sweeps_figure_with_a_sweep_and_the_regimes_figure_with_two_regimes():
    one = {"datasets": {"fashion_mnist": {"data": {"name": "fashion_mnist"}}}, "sweeps": {"method": "mr2"}}
    assert registry.config_figures(one) == [n for n in NAMES if n not in ("sweeps", "regimes")]
    swept = {**one, "sweeps": {"method": "mr2", "c_bar": [0.5, 2.0]}}
    assert registry.config_figures(swept) == [n for n in NAMES if n != "regimes"]
    # two keys of one data name (the second reads it by its key's own name): two regimes
    two = {"datasets": {"small": {"data": {"name": "fm"}}, "fm": {}}, "sweeps": {"method": "mr2"}}
    assert registry.config_figures(two) == [n for n in NAMES if n != "sweeps"]
    assert NAMES[:2] == ["claim_forest", "accuracy_vs_variability"]  # the report's lead and premise figures


def test_missing_lines_name_the_reference_and_the_method_once_each_in_the_figures_order():
    lines = registry.missing_lines(dict.fromkeys(reversed(NAMES), False), FigureOptions("base", "mine", "s"))
    assert lines == [
        "No method ran beside BASE on the same seeds: `config/config.yaml` runs ERM, MR² and its ablations.",
        "No run of mine logged its margins: `config/config.yaml` runs MR².",
        FIGURES["sweeps"].missing, FIGURES["regimes"].missing]  # change_vs_erm's runs are claim_forest's
    assert registry.missing_lines({"claim_forest": True, "sweeps": False}) == [FIGURES["sweeps"].missing]


def test_titles_of_figures_of_the_registry_of_other_steps_and_of_any_other_name():
    assert registry.title_of("claim_forest") == "The claim: each method's paired Δ to the reference"
    assert registry.title_of("bound_terms") == "Proposition 1, term by term"  # drawn by the theory step
    assert registry.title_of("group_accuracy") == "Group accuracy"
    assert registry.title_of("some_new_plot") == "Some new plot"


@pytest.mark.parametrize("source, needle", [
    ('FIGURE = {"name": "x", "title": "t", "order": 1, "needs": None, "missing": None, "empty": "e"}', None),
    ('FIGURE = {"name": "x", "title": TITLE, "order": 1, "needs": None, "missing": None, "empty": "e"}', "literals"),
    ('FIGURE = {"name": "x", "title": "t", "order": 1, "needs": None, "missing": None}', "exactly the keys"),
    ('FIGURE = {"name": "y", "title": "t", "order": 1, "needs": None, "missing": None, "empty": "e"}', "not its module"),
    ('FIGURE = {"name": "x", "title": "t", "order": 1, "needs": "gpus", "missing": None, "empty": "e"}', "'gpus'"),
    ('TABLE = 1', "none"),
])
def test_a_declaration_is_read_from_the_modules_source_and_a_bad_one_is_named(tmp_path, source, needle):
    path = tmp_path / "x.py"
    path.write_text(f"import pandas\n\n{source}\n", encoding="utf-8")
    if needle is None:
        assert registry.declared(path) == registry.Declaration("x", "t", 1, None, None, "e")
        assert list(registry.read_figures(tmp_path)) == ["x"]
    elif needle == "none":
        assert registry.declared(path) is None
    else:
        with pytest.raises(ValueError, match=needle) as error:
            registry.declared(path)
        assert str(path) in str(error.value)


def test_an_unknown_figure_is_an_error_that_lists_the_figures(tables, tmp_path):
    with pytest.raises(ValueError) as error:
        make_figures(tables, tmp_path, names=["tradeoff", "pie"])
    assert str(error.value) == f"unknown figure 'pie'; the figures are {', '.join(NAMES)}"


def test_the_registry_is_read_without_pandas_or_matplotlib():
    import subprocess
    import sys

    code = ("import sys; from mr2.results.figures.registry import config_figures; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'numpy', 'seaborn') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert res.stdout.strip() == "[]"


# ----------------------------------------------------------------------------- the command line
def test_figures_list_prints_the_figures_a_config_draws(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text('{"datasets": {"fm": {}}, "sweeps": {"method": "mr2", "lam": [0.3]}}')
    assert main(["figures", "--list", "--config", str(config)]) == 0
    assert capsys.readouterr().out.split() == [n for n in NAMES if n != "regimes"]
    assert main(["figures", "--list"]) == 0
    assert capsys.readouterr().out.split() == NAMES
    assert main(["figures", "--tables", str(tmp_path)]) == 2  # no --out
    assert "--out" in capsys.readouterr().err


def test_a_config_without_mr2_gets_figures_and_a_report_of_its_own_mr2_method(tmp_path, capsys):
    """A run of ERM and MR² uniform γ only (no mr2): `mr2 figures` and `mr2 report` read the same
    config, so the margins figure drawn for MR² uniform γ is in the report, beside every other figure
    drawn, and nothing says no MR² run logged its margins."""
    dirs = [syn.write_run(tmp_path, "fm", m, "default", s, k=6) for m in ("erm", "mr2_uniform") for s in (0, 1)]
    config = tmp_path / "pipeline_config.json"
    config.write_text('{"reference": "erm", "methods": ["erm", "mr2_uniform"], "sweeps": {"method": "mr2"}}')
    tables, figures = tmp_path / "tables", tmp_path / "figures"
    for argv in (["aggregate", "--runs", *map(str, dirs), "--out", str(tables)],
                 ["table", "--tables", str(tables)],
                 ["figures", "--tables", str(tables), "--config", str(config), "--out", str(figures)],
                 ["report", "--tables", str(tables), "--figures", str(figures), "--captions", str(CAPTIONS),
                  "--config", str(config), "--out", str(tmp_path / "report.md")]):
        assert main(argv) == 0, capsys.readouterr().err
    drawn = sorted(p.stem for p in figures.glob("*.png"))
    assert "margins_over_training" in drawn and "sweeps" not in drawn
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert all(f"![{name}](figures/{name}.png)" in report for name in drawn)
    assert "logged its margins" not in report and "MR² uniform γ against ERM" in report


def test_end_to_end_from_a_run_tree(tmp_path):
    """aggregate -> CSV -> read back -> groups -> every figure whose comparison the runs hold."""
    dirs = [syn.write_run(tmp_path, "fmnist", m, "default", s, k=6) for m in ("erm", "mr2") for s in (0, 1)]
    dirs.append(syn.write_run(tmp_path, "fmnist", "mr2", "c_bar=0.5", 0, k=6))
    R.write_tables(R.aggregate(dirs), tmp_path / "tables")
    t = R.read_tables(tmp_path / "tables")
    t["groups"] = G.difficulty_table(t["per_class"])
    made = make_figures(t, tmp_path / "figures")
    assert list(made) == [n for n in NAMES if n != "regimes"]
    for paths in made.values():
        check_files(*paths)


# ----------------------------------------------------------------------------- the look, against baselines
#: figures compared with images drawn by the code before the figures became modules (issue 42)
BASELINE_FIGURES = ("claim_forest", "margins_over_training", "sweeps")
BASELINE_DPI = 60  # small files; the look, not the detail


def baseline_tables():
    t = syn.tables(datasets=("toy", "toy2"), sweeps=("c_bar=0.5", "c_bar=2.0", "lam=0.3"))
    t["groups"] = G.difficulty_table(t["per_class"])
    return t


@pytest.mark.parametrize("name", BASELINE_FIGURES)
def test_figures_look_as_their_baseline_images(name, tmp_path):
    """matplotlib's own image comparison (RMS of the pixel difference) against tests/baseline_images/.
    After a change of look that is meant, write new baselines with MR2_UPDATE_BASELINES=1 and look
    at them before committing."""
    fig = draw_figure(name, figure_tables(baseline_tables(), names=[name])[name])
    png, _ = plotting.save_figure(fig, tmp_path / name, dpi=BASELINE_DPI)
    expected = BASELINES / f"{name}.png"
    if os.environ.get("MR2_UPDATE_BASELINES"):
        shutil.copyfile(png, expected)
    assert compare_images(str(expected), str(png), tol=2.0) is None


# ----------------------------------------------------------------------------- what every figure uses
def test_placeholder_is_one_panel_holding_its_message(tmp_path):
    fig = plotting.empty_figure("nothing to draw")
    assert is_placeholder(fig) and texts_of(fig) == ["nothing to draw"]
    check_files(*plotting.placeholder(tmp_path / "p", "nothing to draw"))


def test_save_figure_writes_at_the_report_dpi_cropped_to_all_drawn_and_closes_only_its_figure(tmp_path):
    """The PNG says FIGURE_DPI and holds a name drawn outside the figure (as a legend outside the panels
    is kept): it is wider than the figure; the figure saved is closed, another one left open."""
    from PIL import Image

    fig, _ = plt.subplots(figsize=(2.0, 2.0))
    fig.text(1.4, 0.5, "a name far right of the figure")
    other = plt.figure()
    png, pdf = plotting.save_figure(fig, tmp_path / "f")
    with Image.open(png) as image:
        assert image.info["dpi"] == pytest.approx((style.FIGURE_DPI, style.FIGURE_DPI), abs=0.05)
        assert image.size[0] > 2.0 * style.FIGURE_DPI * 1.2
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert plt.get_fignums() == [other.number]


def test_texts_whose_math_does_not_parse_are_drawn_literally_the_others_kept():
    fig, ax = plt.subplots()
    good, lone, broken, plain = (ax.text(0, 0, r"$\gamma_k$"), ax.text(0, 0, "costs $5"),
                                 ax.text(0, 0, r"$\frac{$"), ax.text(0, 0, "no dollar"))
    plotting.literal_where_math_fails(fig)
    assert [t.get_parse_math() for t in (good, lone, broken, plain)] == [True, False, False, True]


def test_class_axis_names_the_classes_and_shades_each_run_of_a_group():
    """The classes named in order (a `$` in a name is a dollar), each run of one group shaded over its
    classes in the group's colour (grey for an unknown group) and named above the axes."""
    fig, ax = plt.subplots()
    plotting.class_axis(ax, ["h1", "$h2", "m", "w", "e"], ["hard", "hard", "medium", "weird", "easy"])
    labels = ax.get_xticklabels()
    assert [t.get_text() for t in labels] == ["h1", "$h2", "m", "w", "e"] and not labels[1].get_parse_math()
    colour = {g: matplotlib.colors.to_hex(c) for g, c in {**style.GROUP_COLOURS, "weird": "grey"}.items()}
    spans = [(p.get_x(), p.get_x() + p.get_width(), matplotlib.colors.to_hex(p.get_facecolor()[:3])) for p in ax.patches]
    assert spans == [(-0.5, 1.5, colour["hard"]), (1.5, 2.5, colour["medium"]), (2.5, 3.5, colour["weird"]),
                     (3.5, 4.5, colour["easy"])]
    assert [(t.get_text(), t.get_position()[0]) for t in ax.texts] == [("hard", 0.5), ("medium", 2.0), ("weird", 3.0),
                                                                      ("easy", 4.0)]
    fig, ax = plt.subplots()
    plotting.class_axis(ax, [f"c{i}" for i in range(7)])  # no groups: names only
    assert len(ax.get_xticklabels()) == 7 and not ax.patches and not ax.texts


def test_one_legend_is_kept_beside_the_last_panel_with_its_title():
    fig, axes = plotting.panels(3)
    for ax in axes[0]:
        ax.plot([0, 1], label="x")
        ax.legend()
    plotting.one_legend(axes.flat, "what")
    assert [ax.get_legend() is not None for ax in axes[0]] == [False, False, True]
    assert axes[0, 2].get_legend().get_title().get_text() == "what"
    fig.canvas.draw()  # outside the panel, on its right
    renderer = fig.canvas.get_renderer()
    assert axes[0, 2].get_legend().get_window_extent(renderer).x0 > axes[0, 2].get_window_extent(renderer).x1


def test_method_colours_are_fixed_and_a_method_without_one_gets_the_same_colour_every_time():
    assert plotting.method_colour("mr2") == style.METHOD_COLOURS["mr2"]
    crc = __import__("zlib").crc32
    assert plotting.method_colour("my_loss") == style.FALLBACK_COLOURS[crc(b"my_loss") % len(style.FALLBACK_COLOURS)]
    assert plotting.method_colour("mr2", "c_bar=0.5") != plotting.method_colour("mr2")
    assert plotting.symbol("gamma") == r"$\gamma_k$" and plotting.symbol("top1") == "top1"


def test_points_are_named_up_to_annotate_max_and_not_beyond():
    for n, named in ((plotting.ANNOTATE_MAX, plotting.ANNOTATE_MAX), (plotting.ANNOTATE_MAX + 1, 0)):
        fig, ax = plt.subplots(figsize=(8.0, 6.0))
        x = np.arange(n, dtype=float)
        texts = plotting.name_points(ax, x, (x * 7) % 5, [f"p{i}" for i in range(n)])
        assert len(texts) == len(ax.texts) == named


def test_names_of_points_crowded_in_a_corner_do_not_overlap():
    """Three classes almost on one spot at the axes' corner (MR²'s a_k of Ankle boot, Sandal and
    Sneaker on Fashion-MNIST, a small panel: one placement by adjustText leaves their names on top of
    each other): the names get room, no two boxes overlap, and no name of a failed try is left."""
    fig, ax = plt.subplots(figsize=(4.0, 3.0))
    x = np.array([11.68, 11.83, 11.85, 11.92, 11.97, 12.12, 12.48, 13.54, 13.69, 13.86])
    y = np.array([82.3, 62.6, 88.0, 84.8, 80.2, 97.1, 96.0, 95.1, 95.8, 95.3])
    names = ["Pullover", "Shirt", "Dress", "T-shirt/top", "Coat", "Bag", "Trouser", "Ankle boot", "Sandal", "Sneaker"]
    ax.scatter(x, y)
    texts = plotting.name_points(ax, x, y, names)
    assert [t.get_text() for t in texts] == names and len(ax.texts) == len(names)
    assert plotting.overlapping_texts(texts) == []
    both = [ax.text(12.0, 90.0, "Coat"), ax.text(12.0, 90.0, "Coat too")]  # the check sees an overlap
    assert plotting.overlapping_texts(both) == [("Coat", "Coat too")]


def crowded_names_figure(stem):
    """A small panel with twenty named points on a few spots (adjustText has work to do), written by
    ``save_figure``: the bytes of its PNG and PDF."""
    fig, ax = plt.subplots(figsize=(3.0, 2.5))
    x = np.repeat([1.0, 1.1, 1.15, 2.0], 5) + np.tile(np.linspace(0, 0.01, 5), 4)
    y = np.repeat([1.0, 1.05, 0.95, 1.0], 5)
    ax.scatter(x, y)
    plotting.name_points(ax, x, y, [f"class {i}" for i in range(20)])
    return [path.read_bytes() for path in plotting.save_figure(fig, stem)]


def test_a_labelled_figure_is_the_same_bytes_whatever_the_load_of_the_machine(tmp_path):
    """Issue 58: adjustText ran for at most 1 s by default, so where names were placed, and the bytes of
    premise_margins.png and the report page, depended on the machine's load; a PDF carried its creation
    date. A figure drawn twice, once with every CPU busy, is now the same bytes, PNG and PDF."""
    import subprocess
    import sys

    quiet = crowded_names_figure(tmp_path / "quiet")
    burners = [subprocess.Popen([sys.executable, "-c", "import os; os.nice(19)\nwhile True: pass"])
               for _ in range(os.cpu_count() or 2)]  # (niced: the machine's other work keeps its share)
    try:
        loaded = crowded_names_figure(tmp_path / "loaded")
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert loaded[0] == quiet[0] and loaded[1] == quiet[1]
    assert b"/CreationDate" not in quiet[1]


def test_bidirectional_controls_in_a_name_are_drawn_as_code_points(tmp_path):
    """N18: a class named "\u202eexe.gnp" was drawn as "png.exe". Every text of a figure shows each
    bidirectional control as its code point, tick labels of a class axis included."""
    hostile = "\u202eexe.gnp"
    assert plotting.visible(hostile) == "<U+202E>exe.gnp" and plotting.visible("Ankle boot") == "Ankle boot"
    fig, ax = plt.subplots()
    plotting.class_axis(ax, [hostile, "plain"])
    ax.set_yticks([0, 1])
    ax.set_yticklabels([hostile, "b\u2067c"])
    ax.set_title(f"worst: {hostile}")
    plotting.name_points(ax, [0.0, 1.0], [0.0, 1.0], [hostile, "x"])
    fig.canvas.draw()
    plotting.visible_controls(fig)
    fig.canvas.draw()
    shown = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    assert not [t for t in shown if plotting.BIDI_CONTROLS & set(t)]
    assert {"<U+202E>exe.gnp", "b<U+2067>c", "worst: <U+202E>exe.gnp"} <= set(shown)
    plt.close(fig)


def test_end_labels_name_each_line_at_its_end_apart_from_each_other():
    """Names in their lines' colours, joined to the line ends they name, none overlapping another even
    where the ends coincide; none with more than ANNOTATE_MAX lines; `$` is a dollar."""
    fig, ax = plt.subplots()
    ax.set(xlim=(0.0, 10.0), ylim=(0.0, 1.0))
    ys = [0.5, 0.51, 0.98, 0.52, 0.2, 0.5]
    names = [f"${i}" for i in range(len(ys))]
    plotting.end_labels(ax, 10.0, ys, names, [f"C{i}" for i in range(len(ys))])
    fig.canvas.draw()
    texts = {t.get_text(): t for t in ax.texts}
    assert sorted(texts) == sorted(names) and not any(t.get_parse_math() for t in texts.values())
    assert [texts[n].xy for n in names] == [(10.0, y) for y in ys]
    assert [matplotlib.colors.to_hex(texts[n].get_color()) for n in names] == [
        matplotlib.colors.to_hex(f"C{i}") for i in range(len(ys))]
    assert plotting.overlapping_texts(list(texts.values())) == []
    assert all(ax.get_xlim()[0] < texts[n].get_position()[0] < ax.get_xlim()[1] for n in names)  # room made
    fig, ax = plt.subplots()
    plotting.end_labels(ax, 1.0, np.linspace(0, 1, plotting.ANNOTATE_MAX + 1),
                        [str(i) for i in range(plotting.ANNOTATE_MAX + 1)], ["k"] * (plotting.ANNOTATE_MAX + 1))
    assert len(ax.texts) == 0
