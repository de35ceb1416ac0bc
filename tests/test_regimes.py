"""The training regime as an axis (mr2/results/regimes.py): the regimes read from the resolved
configs, the paired Δ to ERM per regime against an independent computation, each regime's own
easy/medium/hard groups, the figure, the generated sentence and the report's section."""

from __future__ import annotations

from pathlib import Path

import matplotlib.colors
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import results_data as rd
from mr2.results import regimes
from mr2.results.figures import regimes as regime_figure
from mr2.results.figures.registry import FIGURES, FigureOptions, missing_lines
from mr2.results.figures.render import available, draw_figure, make_figures
from mr2.results.groups import difficulty_table
from mr2.results.plotting import method_colour
from mr2.results.report import write_report

#: dataset key -> (data name, train_cap, epochs, scale of MR²'s known hard-class gain)
REGIMES = {"fm_long": ("fashion_mnist", 600, 30, 1.0), "fm_full": ("fashion_mnist", None, 30, 2.0),
           "fm_short": ("fashion_mnist", 600, 6, -1.0), "fm_mid": ("fashion_mnist", 2000, 10, 0.5),
           "digits": ("digits", None, 4, 1.0)}


def regime_tables(**kw):
    t = rd.tables(datasets=tuple(REGIMES), regimes=REGIMES, **kw)
    t["groups"] = difficulty_table(t["per_class"])
    return t


def expected(t, dataset, method, metric):
    """The paired Δ (points) and its 95 % t-interval, computed here from the per-class table."""
    pc = t["per_class"][(t["per_class"]["dataset"] == dataset) & (t["per_class"]["variant"] == "default")]
    erm = pc[pc["method"] == "erm"].groupby("class")["accuracy"].mean()
    hard = erm.sort_values(kind="stable").index[:3]  # the hard third of this key's own ERM (K = 9)
    d = []
    for seed in rd.SEEDS:
        acc = {m: pc[(pc["method"] == m) & (pc["seed"] == seed)].set_index("class")["accuracy"]
               for m in (method, "erm")}
        pick = {"all": lambda a: a.mean(), "hard": lambda a: a.loc[hard].mean(), "worst": lambda a: a.min()}[metric]
        d.append(100 * (pick(acc[method]) - pick(acc["erm"])))
    d = np.array(d)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half


def test_regimes_come_from_the_configs_ordered_by_size_then_epochs():
    keys = regimes.regimes(regime_tables()["runs"])
    assert list(keys["dataset"]) == ["fm_short", "fm_long", "fm_mid", "fm_full"]  # digits has one regime
    assert list(keys["regime"]) == ["600/class × 6 ep", "600/class × 30 ep", "2000/class × 10 ep", "all × 30 ep"]
    assert list(keys["order"]) == [0, 1, 2, 3] and set(keys["data_name"]) == {"fashion_mnist"}
    assert regimes.regimes(rd.tables(datasets=("a", "b"))["runs"]).empty  # different data: no regimes
    assert regimes.regimes(None).empty
    assert regimes.regimes(rd.tables()["runs"].drop(columns="config.train.epochs")).empty


def test_a_dataset_key_with_two_regimes_is_an_error_naming_it():
    runs = regime_tables()["runs"]
    runs.loc[(runs["dataset"] == "fm_mid") & (runs["seed"] == 1), "config.train.epochs"] = 11
    with pytest.raises(ValueError, match="'fm_mid' and method 'erm' differ in config.train.epochs"):
        regimes.regimes(runs)
    runs = regime_tables()["runs"]
    runs.loc[(runs["dataset"] == "fm_long") & (runs["seed"] == 1), "config.data.train_cap"] = 700
    with pytest.raises(ValueError, match="'fm_long' differ in config.data.train_cap"):
        regimes.regimes(runs)


def test_a_method_with_its_own_epochs_keeps_its_key_in_the_regime_of_the_other_methods():
    """config key method_epochs: DRO trains 40 epochs where the block's others train 6; the key stays
    "600/class × 6 ep" (what most of its methods train), and a report over it does not stop."""
    t = regime_tables()
    runs = t["runs"]
    runs.loc[(runs["dataset"] == "fm_short") & (runs["method"] == "mr2_uniform"), "config.train.epochs"] = 40
    keys = regimes.regimes(runs).set_index("dataset")
    assert keys.loc["fm_short", "regime"] == "600/class × 6 ep" and keys.loc["fm_short", "epochs"] == 6
    assert list(keys.sort_values("order").index) == ["fm_short", "fm_long", "fm_mid", "fm_full"]


def test_two_keys_in_one_regime_are_told_apart_by_their_key():
    same = {"x": ("fm", 600, 6, 1.0), "y": ("fm", 600, 6, 1.0)}
    keys = regimes.regimes(rd.tables(datasets=("x", "y"), regimes=same)["runs"])
    assert list(keys["regime"]) == ["600/class × 6 ep (x)", "600/class × 6 ep (y)"]


def test_paired_differences_match_an_independent_computation():
    t = regime_tables()
    table = regimes.regime_table(t["per_class"], t["runs"], t["groups"])
    assert set(table["method"]) == set(regimes.METHODS) and set(table["metric"]) == set(regimes.METRICS)
    assert (table["n_paired"] == len(rd.SEEDS)).all() and "digits" not in set(table["data_name"])
    for _, row in table.iterrows():
        assert (row["diff"], row["diff_lo"], row["diff_hi"]) == pytest.approx(
            expected(t, row["dataset"], row["method"], row["metric"])), dict(row)
    hard = table[(table["method"] == "mr2") & (table["metric"] == "hard")].set_index("dataset")["diff"]
    for key, (*_, scale) in REGIMES.items():  # MR²'s known gain on the hard classes, scaled per regime
        if key in hard:
            assert hard[key] == pytest.approx(100 * rd.EFFECT["mr2"] * scale, abs=1.5)


def test_hard_classes_are_those_of_each_regimes_own_erm():
    t = regime_tables()
    pc = t["per_class"]
    pc.loc[(pc["dataset"] == "fm_full") & (pc["method"] == "erm") & (pc["class"] == 8), "accuracy"] = 0.05
    t["groups"] = difficulty_table(pc)  # class 8, the easiest elsewhere, is hard in fm_full only
    assert t["groups"].set_index(["dataset", "class"]).loc[[("fm_full", 8), ("fm_long", 8)], "group"].tolist() == \
        ["hard", "easy"]
    table = regimes.regime_table(pc, t["runs"], t["groups"])
    row = table[(table["dataset"] == "fm_full") & (table["method"] == "mr2") & (table["metric"] == "hard")].iloc[0]
    assert (row["diff"], row["diff_lo"], row["diff_hi"]) == pytest.approx(expected(t, "fm_full", "mr2", "hard"))


def test_figure_has_a_row_per_data_name_the_regimes_in_order_and_the_intervals(tmp_path):
    t = regime_tables()
    fig = regime_figure.draw(regime_figure.table(t, FigureOptions()), FigureOptions())
    assert [ax.get_title() for ax in fig.axes] == [f"fashion_mnist: {m}" for m in
                                                   ("all classes", "hard classes", "worst class")]
    table = regimes.regime_table(t["per_class"], t["runs"], t["groups"])
    for ax, metric in zip(fig.axes, regimes.METRICS):
        assert [x.get_text() for x in ax.get_xticklabels()] == list(regimes.regimes(t["runs"])["regime"])
        assert any(line.get_ydata()[0] == 0 and line.get_color() == "black" for line in ax.get_lines())  # zero line
        for container, method in zip(ax.containers, regimes.METHODS):
            line, _, (bars,) = container.lines
            assert matplotlib.colors.to_hex(line.get_color()) == matplotlib.colors.to_hex(method_colour(method))
            want = table[(table["method"] == method) & (table["metric"] == metric)].sort_values("order")
            ends = np.array([seg[:, 1] for seg in bars.get_segments()])
            np.testing.assert_allclose(ends, want[["diff_lo", "diff_hi"]].to_numpy())


def test_figure_of_two_data_names_draws_each_method_at_its_place(tmp_path):
    """Two data names (a row of panels each, y shared within a row), MR² and its ablations in their
    order, each dodged symmetrically about its regime's tick, its points and intervals those computed
    here, the axis labels and one legend titled "method"; a method the runs lack is not drawn."""
    t = rd.tables(datasets=(*REGIMES, "dg_small"), regimes=REGIMES | {"dg_small": ("digits", 300, 4, 1.0)})
    t["per_class"]["method"] = t["per_class"]["method"].replace({"mr2_no_rep": "ldam"})
    t["groups"] = difficulty_table(t["per_class"])
    methods = ("mr2", "mr2_uniform")
    fig = regime_figure.draw(regime_figure.table(t, FigureOptions()), FigureOptions())
    rows = {"digits": {"dg_small": 0, "digits": 1}, "fashion_mnist": {"fm_short": 0, "fm_long": 1, "fm_mid": 2, "fm_full": 3}}
    ticks = {"digits": ["300/class × 4 ep", "all × 4 ep"],
             "fashion_mnist": ["600/class × 6 ep", "600/class × 30 ep", "2000/class × 10 ep", "all × 30 ep"]}
    assert len(fig.axes) == 6
    for r, name in enumerate(rows):
        row = fig.axes[3 * r:3 * r + 3]
        assert all(row[0].get_shared_y_axes().joined(row[0], ax) for ax in row)
        assert not fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[3])
        for ax, metric, title in zip(row, regimes.METRICS, ("all classes", "hard classes", "worst class")):
            assert ax.get_title() == f"{name}: {title}"
            assert [x.get_text() for x in ax.get_xticklabels()] == ticks[name]
            assert list(ax.get_xticks()) == list(range(len(ticks[name])))
            assert ax.get_xlabel() == "training regime (size per class × epochs)"
            assert ax.get_ylabel() == "Δ to ERM (points, 95% t-interval)"
            assert len(ax.containers) == len(methods)
            for container, method, offset in zip(ax.containers, methods, (-0.06, 0.06)):
                line, _, (bars,) = container.lines
                assert container.get_label() == {"mr2": "MR²", "mr2_uniform": "MR² uniform γ"}[method]
                assert matplotlib.colors.to_hex(line.get_color()) == matplotlib.colors.to_hex(method_colour(method))
                assert (line.get_marker(), line.get_linestyle()) == ("o", "-")
                want = np.array([expected(t, key, method, metric) for key in rows[name]])
                np.testing.assert_allclose(line.get_xydata(),
                                           np.column_stack([np.array(list(rows[name].values())) + offset, want[:, 0]]))
                segments = np.array(bars.get_segments())
                np.testing.assert_allclose(segments[:, :, 0], np.repeat(line.get_xdata()[:, None], 2, axis=1))
                np.testing.assert_allclose(segments[:, :, 1], want[:, 1:])
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends == [fig.axes[-1].get_legend()]
    assert legends[0].get_title().get_text() == "method"
    assert [x.get_text() for x in legends[0].get_texts()] == ["MR²", "MR² uniform γ"]


def test_placeholder_when_no_data_is_run_in_several_regimes(tmp_path):
    """No data name under two dataset keys: the tables hold no regimes figure (the report names the
    config that runs one instead), and asked for by name it is one panel saying why."""
    t = rd.tables(datasets=("a", "b"))
    t["groups"] = difficulty_table(t["per_class"])
    holds = available(t)
    assert [n for n, ok in holds.items() if not ok] == ["sweeps", "regimes"]  # no sweep either
    assert missing_lines(holds) == [FIGURES["sweeps"].missing, FIGURES["regimes"].missing]
    assert "regimes" not in make_figures(t, tmp_path)
    made = make_figures(t, tmp_path, names=["regimes"])["regimes"]  # asked for anyway: says so
    assert made[0] == tmp_path / "regimes.png" and made[0].stat().st_size > 1000
    (ax,) = draw_figure("regimes", regime_figure.table(t, FigureOptions())).axes
    assert [text.get_text() for text in ax.texts] == ["no dataset is run in several regimes (training-set size or epochs)"]


def test_sentence_names_both_ends_with_numbers_and_intervals():
    t = regime_tables()
    table = regimes.regime_table(t["per_class"], t["runs"], t["groups"])
    (sentence,) = regimes.regime_findings(table)
    assert sentence.startswith("- `fashion_mnist` (4 regimes, ordered by size, then epochs): from the smallest, "
                               "shortest regime (600/class × 6 ep) to the largest, longest (all × 30 ep), `mr2`'s")
    for key, metric, name in (("fm_short", "hard", "hard classes"), ("fm_full", "hard", "hard classes"),
                              ("fm_full", "worst", "worst class")):
        d, lo, hi = expected(t, key, "mr2", metric)
        excludes = "excludes" if lo > 0 or hi < 0 else "contains"
        assert f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}] points (interval {excludes} 0)" in sentence
        assert name in sentence
    # MR²'s known hard-class effect goes from a loss (scale −1) to a gain (scale 2): both intervals exclude 0
    assert sentence.count("(interval excludes 0)") >= 4


def test_report_has_the_regime_section_only_with_regimes(tmp_path):
    def report(t):
        captions = Path(__file__).resolve().parents[1] / "workflow" / "report"
        return write_report(t, "| table |", {}, tmp_path / "report.md", captions, {"seeds": list(rd.SEEDS)})

    text = report(regime_tables())
    section = text[text.index("## Training regime"):]
    assert text.index("## What we find") < text.index("## Training regime") < text.index("## Configuration")
    assert "`fashion_mnist` (4 regimes" in section and "| fashion_mnist | all × 30 ep | mr2 |" in section
    single = rd.tables()
    single["groups"] = difficulty_table(single["per_class"])
    assert "## Training regime" not in report(single)


def test_report_gives_its_reference_to_the_regime_section(tmp_path):
    """With another reference than ERM, the report's regime section is that reference's: the
    section regime_section writes for it, word for word (for ERM, absent here, it writes none)."""
    t = rd.renamed(regime_tables(), {"erm": "base"})
    t["groups"] = difficulty_table(t["per_class"], reference="base")
    captions = Path(__file__).resolve().parents[1] / "workflow" / "report"
    text = write_report(t, "| table |", {}, tmp_path / "report.md", captions, {"seeds": list(rd.SEEDS)},
                        reference="base")
    section = regimes.regime_section(t["per_class"], t["runs"], t["groups"], "base")
    assert "Δ: each method's difference to BASE paired by seed" in section[2]
    assert "\n".join(section) in text
    assert regimes.regime_section(t["per_class"], t["runs"], t["groups"]) == []


def test_regime_markdown_has_a_row_per_data_regime_and_method_in_the_tables_order():
    """Rows in the order of the table (here methods not in alphabetical order), a column per metric,
    n/a for a metric the table does not hold."""
    rows = [{"data_name": "fm", "order": 0, "regime": "600/class × 6 ep", "method": method, "metric": metric,
             "diff": diff, "diff_lo": diff - 1.0, "diff_hi": diff + 1.0, "n_paired": 3}
            for method, diff in (("mr2", 2.0), ("ldam", -1.5)) for metric in ("hard", "easy")]
    lines = regimes.regime_markdown(pd.DataFrame(rows)).splitlines()
    assert regimes.METRICS == ("all", "hard", "worst")
    assert lines[:2] == ["| Data | Regime | Method | Δ All | Δ Hard | Δ Worst class |", "|---|---|---|---:|---:|---:|"]
    cells = {"hard": {"mr2": "+2.0 [+1.0, +3.0]", "ldam": "-1.5 [-2.5, -0.5]"},
             "easy": {"mr2": "+2.0 [+1.0, +3.0]", "ldam": "-1.5 [-2.5, -0.5]"}}
    assert lines[2:] == [f"| fm | 600/class × 6 ep | {m} | " + " | ".join(cells.get(x, {}).get(m, "n/a") for x in regimes.METRICS)
                         + " |" for m in ("mr2", "ldam")]
    one_seed = [{**rows[0], "diff_lo": float("nan"), "diff_hi": float("nan"), "n_paired": 1}]
    assert regimes.regime_markdown(pd.DataFrame(one_seed)).splitlines()[2] == (
        "| fm | 600/class × 6 ep | mr2 | n/a | +2.0 [no CI: 1 seed] | n/a |")


def test_sentences_word_each_interval_skip_one_regime_and_keep_the_tables_order():
    """Hand-built table: data names in non-alphabetical order, one with a single regime of `mr2`
    between the others, another method's rows (left out), intervals that contain 0, exclude it
    (above and below), are missing (one seed) or of zero width (away from 0: no interval; at 0:
    contains it), and metrics present at only one end (left out)."""
    nan = float("nan")
    cells = [  # data name, order, regime, method, metric, diff, lo, hi, n
        ("zz", 0, "100/class × 2 ep", "mr2", "all", 0.5, -0.3, 1.3, 3),
        ("zz", 0, "100/class × 2 ep", "mr2", "hard", 2.04, 1.12, 2.96, 3),
        ("zz", 0, "100/class × 2 ep", "mr2", "worst", -1.5, nan, nan, 1),
        ("zz", 1, "500/class × 2 ep", "mr2", "all", 9.0, 8.0, 10.0, 3),
        ("zz", 2, "all × 8 ep", "mr2", "all", -2.0, -3.1, -0.9, 3),
        ("zz", 2, "all × 8 ep", "mr2", "hard", 1.0, 1.0, 1.0, 3),
        ("zz", 2, "all × 8 ep", "mr2", "worst", 0.0, 0.0, 0.0, 3),
        ("zz", 3, "huge", "ldam", "all", 5.0, 4.0, 6.0, 3),
        ("single", 0, "only", "mr2", "all", 1.0, 0.0, 2.0, 3),
        ("single", 1, "other", "ldam", "all", 1.0, 0.0, 2.0, 3),
        ("aa", 0, "small", "mr2", "hard", 0.3, -0.2, 0.8, 2),
        ("aa", 1, "big", "mr2", "hard", 0.6, 0.1, 1.1, 2),
        ("aa", 1, "big", "mr2", "worst", 3.0, 1.0, 5.0, 2),
        ("mm", 0, "s", "mr2", "all", 1.2, 0.4, 2.0, 4),
        ("mm", 0, "s", "mr2", "worst", -0.7, -1.9, 0.5, 4),
        ("mm", 1, "l", "mr2", "all", -0.4, -1.0, 0.2, 4),
    ]
    table = pd.DataFrame(cells, columns=["data_name", "order", "regime", "method", "metric",
                                         "diff", "diff_lo", "diff_hi", "n_paired"])
    head = "regimes, ordered by size, then epochs): from the smallest, shortest regime"
    assert regimes.regime_findings(table) == [
        f"- `zz` (3 {head} (100/class × 2 ep) to the largest, longest (all × 8 ep), `mr2`'s paired Δ to ERM changes "
        "for all classes from +0.5 [-0.3, +1.3] points (interval contains 0) to -2.0 [-3.1, -0.9] points (interval "
        "excludes 0); hard classes from +2.0 [+1.1, +3.0] points (interval excludes 0) to +1.0 [+1.0, +1.0] points "
        "(no interval); worst class from -1.5 [no CI: 1 seed] points (no interval) to +0.0 [+0.0, +0.0] points "
        "(interval contains 0).",
        f"- `aa` (2 {head} (small) to the largest, longest (big), `mr2`'s paired Δ to ERM changes for hard classes "
        "from +0.3 [-0.2, +0.8] points (interval contains 0) to +0.6 [+0.1, +1.1] points (interval excludes 0).",
        f"- `mm` (2 {head} (s) to the largest, longest (l), `mr2`'s paired Δ to ERM changes for all classes from "
        "+1.2 [+0.4, +2.0] points (interval excludes 0) to -0.4 [-1.0, +0.2] points (interval contains 0).",
    ]
