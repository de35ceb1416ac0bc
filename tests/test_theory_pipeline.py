"""Proposition 1 on trained models from the tidy tables (theory.pipeline, python -m theory bound):
the summary path against the logits path, the bias augmentation, the head's affine map, errors,
and the smoke pipeline's theory table (each term finite, holds ⇔ bound ≥ test error, Corollary 1's
γ never raises the complexity term on real a_k)."""

import math
import subprocess
import sys

import matplotlib.pyplot as plt
from matplotlib.colors import to_hex
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from mr2.engine.evaluate import affine_map
from mr2.results.plotting import method_colour
from mr2.method.losses.margin_ce import logit_margin_cross_entropy
from mr2.engine.models.heads import CosineHead, LinearHead
from theory import answers, pipeline, plots
from theory.__main__ import main
from theory.bound import class_variability, evaluate_bound, trained_margins, weight_norm
from theory.corollary import minimum_value

K, D, N = 4, 6, 64


def fake_run(gen, method="mr2", seed=0, c_bar=1.5):
    """A linear head on random features, summarised as mr2.engine.evaluate does (runs row, per_class rows),
    and the same model's logits for the logits path."""
    feats = torch.randn(N, D, generator=gen, dtype=torch.float64) * torch.linspace(0.5, 2.0, D, dtype=torch.float64)
    y = torch.arange(N) % K
    w = torch.randn(K, D, generator=gen, dtype=torch.float64)
    b = torch.randn(K, generator=gen, dtype=torch.float64)
    test_feats = torch.randn(N // 2, D, generator=gen, dtype=torch.float64)
    test_y = torch.arange(N // 2) % K
    a = class_variability(feats, y, K)
    gamma = trained_margins("mr2", a, c_bar) if method == "mr2" else torch.ones(K, dtype=torch.float64)
    logits, test_logits = feats @ w.T + b, test_feats @ w.T + b
    wb = torch.cat([w, b[:, None]], 1)
    keys = {"dataset": "toy", "method": method, "variant": "default", "seed": seed}
    configured = {"config.method.options.c_bar": c_bar} if method == "mr2" else {}
    run = {**keys, **configured, "train_margin_ce": float(logit_margin_cross_entropy(logits, y, gamma)),
           "train_error": float((logits.argmax(1) != y).double().mean()), "n_train": N, "num_classes": K,
           "top1": float((test_logits.argmax(1) == test_y).double().mean()), "head_bias": True,
           "head_max_row_norm": weight_norm(wb, "max_row"), "head_frobenius_norm": weight_norm(wb, "frobenius")}
    classes = pd.DataFrame({**{k: [v] * K for k, v in keys.items()}, "class": range(K), "a": a.numpy(),
                            "gamma": gamma.numpy()})
    logits_path = dict(logits=logits, targets=y, a=a, gamma=gamma, weight=w, bias=b, test_logits=test_logits,
                       test_targets=test_y)
    return run, classes, logits_path


def fake_runs(gen, specs, seeds=(0, 1)):
    """``fake_run`` for each (method, variant, configured c̄, tags.sweep) of ``specs`` and each seed, in
    that order: (runs table, per_class table)."""
    runs, classes = [], []
    for method, variant, c_bar, sweep in specs:
        for seed in seeds:
            run, cls, _ = fake_run(gen, method=method, seed=seed, c_bar=c_bar)
            runs.append({**run, "variant": variant, "config.tags.sweep": sweep})
            classes.append(cls.assign(variant=variant))
    return pd.DataFrame(runs), pd.concat(classes, ignore_index=True)


# ----------------------------------------------------------------------------- the two paths agree


@pytest.mark.parametrize("norm", ["max_row", "frobenius"])
def test_table_row_matches_the_bound_on_logits(gen, norm):
    run, classes, lp = fake_run(gen)
    row = pipeline.bound_table(pd.DataFrame([run]), classes, norm=norm, c=0.7, delta=0.01).iloc[0]
    ref = evaluate_bound(lp["logits"], lp["targets"], lp["a"], lp["gamma"], lp["weight"], lp["test_logits"],
                         lp["test_targets"], bias=lp["bias"], norm=norm, c=0.7, delta=0.01)
    for name in ("empirical_term", "complexity_term", "confidence_term", "bound", "test_error", "head_norm", "margin_sum"):
        assert row[name] == pytest.approx(getattr(ref, name), rel=1e-6), name
    assert bool(row["holds"]) == ref.holds and row["c_bar"] == pytest.approx(1.5)
    assert row["empirical_term"] >= row["train_error"]  # 1[error] ≤ ℓ_{γ,ce}/ln 2, averaged


def test_bias_augmentation_is_exact(gen):
    """The bound of (W, b) on φ equals the bound of [W b] on [φ; 1] without a bias."""
    _, _, lp = fake_run(gen)
    feats = torch.randn(N, D, generator=gen, dtype=torch.float64)
    y = lp["targets"]
    aug = torch.cat([feats, torch.ones(N, 1, dtype=torch.float64)], 1)
    wb = torch.cat([lp["weight"], lp["bias"][:, None]], 1)
    logits = feats @ lp["weight"].T + lp["bias"]
    common = dict(test_logits=lp["test_logits"], test_targets=lp["test_targets"])
    with_bias = evaluate_bound(logits, y, class_variability(feats, y, K), lp["gamma"], lp["weight"], bias=lp["bias"],
                               **common)
    augmented = evaluate_bound(aug @ wb.T, y, class_variability(aug, y, K), lp["gamma"], wb, **common)
    for name in ("empirical_term", "complexity_term", "bound", "head_norm", "margin_sum"):
        assert getattr(with_bias, name) == pytest.approx(getattr(augmented, name), rel=1e-9), name


@pytest.mark.parametrize("head", [LinearHead(D, K), CosineHead(D, K, scale=7.0)], ids=["linear", "cosine"])
def test_affine_map_reproduces_the_heads_logits(gen, head):
    e = F.normalize(torch.randn(9, D, generator=gen), dim=1)
    wb = affine_map(head, D, torch.device("cpu"))
    assert wb.shape == (K, D + 1)
    torch.testing.assert_close(e @ wb[:, :D].T + wb[:, D], head.classify(e), rtol=1e-5, atol=1e-5)
    if isinstance(head, CosineHead):  # Λ of a cosine head is its scale, not its raw weights' norm
        assert wb[:, D].abs().max() == 0
        torch.testing.assert_close(wb[:, :D].norm(dim=1), torch.full((K,), 7.0))


# ----------------------------------------------------------------------------- Corollary 1 column, curve


def test_complexity_columns_follow_corollary_1(gen):
    run, classes, _ = fake_run(gen, c_bar=0.8)
    row = pipeline.bound_table(pd.DataFrame([run]), classes).iloc[0]
    a_bound = classes["a"].to_numpy() + 1.0  # the head has a bias
    uniform_sum = a_bound.sum() / 0.8**2
    assert row["complexity_ratio"] == pytest.approx(math.sqrt(minimum_value(a_bound, 0.8) / uniform_sum), rel=1e-9)
    assert row["complexity_mr2"] <= row["complexity_uniform"]
    assert row["complexity_ratio_trained"] == pytest.approx(row["complexity_term"] / row["complexity_uniform"])


def test_erm_run_has_unit_mean_margin_and_trained_ratio_one(gen):
    run, classes, _ = fake_run(gen, method="erm")
    row = pipeline.bound_table(pd.DataFrame([run]), classes).iloc[0]
    assert row["c_bar"] == 1.0 and row["complexity_ratio_trained"] == pytest.approx(1.0)


def test_complexity_curve_falls_as_one_over_c_bar():
    a = np.array([1.0, 3.0, 9.0, 27.0])
    curve = pipeline.complexity_curve(a, 2.0, 100, [0.5, 1.0, 4.0])
    scaled = curve[["complexity_mr2", "complexity_uniform"]].mul(curve["c_bar"], axis=0)
    assert np.allclose(scaled.to_numpy(), scaled.iloc[0].to_numpy())
    assert (curve["complexity_mr2"] < curve["complexity_uniform"]).all()


# ----------------------------------------------------------------------------- notebook views


def test_c_bar_view_has_one_row_per_configured_c_bar_of_the_sweep(gen):
    runs, classes = fake_runs(gen, [("mr2", "default", 1.0, None), ("mr2", "c_bar=2.0", 2.0, "c_bar"),
                                    ("mr2", "lam=0.3", 1.0, "lam")])
    table = pipeline.bound_table(runs, classes)
    view = pipeline.c_bar_view(table, "mr2", runs)
    assert list(view["c_bar"]) == [1.0, 2.0] and list(view["runs"]) == [2, 2]  # λ's variant is not mixed in
    default = table[table["variant"] == "default"]
    assert view.loc[0, "bound"] == pytest.approx(default["bound"].mean())
    assert list(pipeline.c_bar_view(table, "mr2")["runs"]) == [4, 2]  # without the runs table, every variant
    fig = plots.plot_terms_vs_c_bar(table, "mr2", runs)
    ax = fig.axes[0]
    assert all(list(line.get_xdata()) == [1.0, 2.0] for line in ax.get_lines() if len(line.get_xdata()) > 1)
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]
    assert ax.get_xlabel() == r"mean margin $\bar{c}$"
    plt.close(fig)


def test_margin_sum_shares_name_the_classes_and_add_up(gen):
    made = [fake_run(gen, method=m, seed=s) for m in ("erm", "mr2") for s in (0, 1)]
    runs = pd.DataFrame([r for r, _, _ in made])
    per_class = pd.concat([c for _, c, _ in made]).assign(class_name=lambda f: "n" + f["class"].astype(str))
    table = pipeline.bound_table(runs, per_class)
    shares = pipeline.margin_sum_shares(table, per_class)
    assert list(dict.fromkeys(shares["method"])) == ["erm", "mr2"]
    for method, part in shares.groupby("method"):
        assert part["share"].sum() == pytest.approx(1.0) and part["share"].is_monotonic_decreasing
        per_seed = []
        for _, c, _ in [m for m in made if m[0]["method"] == method]:
            term = (c["a"].to_numpy() + 1.0) / c["gamma"].to_numpy() ** 2  # the head has a bias: a_k + 1
            per_seed.append(term / term.sum())
        want = pd.Series(np.mean(per_seed, axis=0), index=[f"n{k}" for k in range(K)])
        assert part.set_index("class_name")["share"].to_dict() == pytest.approx(want.to_dict())
    # Σ_k (a_k + 1)/γ_k² of each run is the table's margin_sum
    c = made[0][1]
    assert ((c["a"] + 1) / c["gamma"] ** 2).sum() == pytest.approx(table.loc[0, "margin_sum"])
    fig = plots.plot_margin_sum_shares(shares)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list(shares[shares["method"] == "erm"]["class_name"])
    assert [ax.get_title() for ax in fig.axes] == ["toy: erm", "toy: mr2"]
    plt.close(fig)


# ----------------------------------------------------------------------------- errors and report text


def test_run_bound_defaults_and_checks(gen):
    run, classes, _ = fake_run(gen)
    row = pipeline.run_bound(pd.Series(run), classes)
    assert (row["norm"], row["c"], row["delta"]) == ("max_row", 1.0, 0.05)
    table = pipeline.bound_table(pd.DataFrame([run]), classes)
    assert (table.loc[0, "norm"], table.loc[0, "c"], table.loc[0, "delta"]) == ("max_row", 1.0, 0.05)
    for call in (lambda: pipeline.run_bound(pd.Series(run), classes, norm="spectral"),
                 lambda: pipeline.bound_table(pd.DataFrame([run]), classes, norm="spectral")):
        with pytest.raises(ValueError, match=r"unknown norm 'spectral'; choose one of \('max_row', 'frobenius'\)"):
            call()
    shifted = classes.assign(**{"class": classes["class"] + 1})  # K rows, but classes 1..K
    with pytest.raises(ValueError, match=r"per_class.csv has classes \[1, 2, 3, 4\], expected 0..3"):
        pipeline.run_bound(pd.Series(run), shifted)
    empty = pipeline.bound_table(pd.DataFrame([run]).iloc[:0], classes)
    assert empty.empty and list(empty.columns) == pipeline.COLUMNS


def test_complexity_columns_without_a_bias_and_with_no_variability(gen):
    run, classes, _ = fake_run(gen, c_bar=0.8)
    run["head_bias"] = False
    row = pipeline.bound_table(pd.DataFrame([run]), classes).iloc[0]
    mr2, uniform = corollary_1_complexity(classes["a"].to_numpy(), run["head_max_row_norm"], N, 0.8)
    assert row["complexity_mr2"] == pytest.approx(mr2) and row["complexity_uniform"] == pytest.approx(uniform)
    small = pipeline.bound_table(pd.DataFrame([{**run, "head_max_row_norm": 1e-3}]), classes).iloc[0]
    assert 0 < small["complexity_uniform"] < 1 and small["complexity_ratio"] == pytest.approx(mr2 / uniform)
    assert small["complexity_ratio_trained"] == pytest.approx(small["complexity_term"] / small["complexity_uniform"])
    flat = pipeline.bound_table(pd.DataFrame([run]), classes.assign(a=0.0)).iloc[0]
    assert flat["complexity_uniform"] == 0 and flat["complexity_ratio"] == 1.0 and flat["complexity_ratio_trained"] == 1.0


def test_missing_column_is_named(gen):
    run, classes, _ = fake_run(gen)
    del run["head_bias"]
    with pytest.raises(ValueError, match=r"^runs.csv: missing column\(s\) \['head_bias'\]; re-run 'python -m mr2 "
                                         r"evaluate' and 'python -m mr2 aggregate' with the current code$"):
        pipeline.bound_table(pd.DataFrame([run]), classes)
    run["head_bias"] = True
    with pytest.raises(ValueError, match=r"^per_class.csv: missing column\(s\) \['gamma'\]"):
        pipeline.bound_table(pd.DataFrame([run]), classes.drop(columns="gamma"))


def test_run_without_classes_and_wrong_class_count_are_named(gen):
    run, classes, _ = fake_run(gen)
    other = {**run, "seed": 7}
    with pytest.raises(ValueError, match="'seed': 7"):
        pipeline.bound_table(pd.DataFrame([run, other]), classes)
    with pytest.raises(ValueError, match="expected 0..3"):
        pipeline.bound_table(pd.DataFrame([run]), classes.iloc[:3])


def test_markdown_counts_what_the_table_says(gen):
    rows = [fake_run(gen, method=m, seed=s) for m in ("erm", "mr2") for s in (0, 1)]
    table = pipeline.bound_table(pd.DataFrame([r for r, _, _ in rows]), pd.concat([c for _, c, _ in rows]))
    table.loc[0, ["bound", "holds"]] = [0.0, False]
    table.loc[1, "complexity_ratio"] = 1.2
    md = answers.bound_markdown(table)
    assert "| toy | erm |" in md and "| toy | mr2 |" in md
    assert "holds on 3 of 4 runs" in md and "**larger** on some runs" in md


# ----------------------------------------------------------------------------- the smoke pipeline


@pytest.mark.slow
def test_smoke_bound_table(smoke_results):
    table = pd.read_csv(smoke_results / "theory" / "bound.csv")
    runs = pd.read_csv(smoke_results / "tables" / "runs.csv")
    per_class = pd.read_csv(smoke_results / "tables" / "per_class.csv")
    assert len(table) == len(runs) and list(table.columns) == pipeline.COLUMNS
    terms = table[pipeline.TERMS + ["bound", "test_error"]]
    assert np.isfinite(terms.to_numpy()).all() and (table[pipeline.TERMS] > 0).all().all()
    assert np.allclose(table[pipeline.TERMS].sum(axis=1), table["bound"])
    merged = table.merge(runs, on=pipeline.RUN_KEYS)
    assert np.allclose(merged["test_error"], 1 - merged["top1"])
    assert (table["holds"] == (table["bound"] >= table["test_error"])).all()
    held = table[table["holds"]]
    assert (held["bound"] >= held["test_error"]).all()
    assert (table["empirical_term"] >= table["train_error"] - 1e-6).all()  # 1/ln 2 on real models
    # Corollary 1 on each trained model's a_k: MR²'s γ never gives a larger complexity term
    assert (table["complexity_mr2"] <= table["complexity_uniform"] * (1 + 1e-12)).all()
    for _, row in table.iterrows():
        mine = per_class.merge(pd.DataFrame([row[pipeline.RUN_KEYS]]), on=pipeline.RUN_KEYS).sort_values("class")
        a = mine["a"].to_numpy() + (1.0 if row["head_bias"] else 0.0)
        c_bar = row["c_bar"]  # the configured c̄, which Corollary 1's γ keep as their mean
        assert mine["gamma"].mean() == pytest.approx(c_bar, rel=1e-5)
        expected = math.sqrt(minimum_value(a, c_bar) / (a.sum() / c_bar**2))
        assert row["complexity_ratio"] == pytest.approx(expected, rel=1e-9)
    erm = table[table["method"] == "erm"]
    assert (erm["c_bar"] == 1.0).all() and np.allclose(erm["complexity_ratio_trained"], 1.0)


@pytest.mark.slow
def test_smoke_report_and_figure_have_the_theory(smoke_results):
    for ext in ("png", "pdf"):
        assert (smoke_results / "figures" / f"bound_terms.{ext}").stat().st_size > 1000
    report = (smoke_results / "report.md").read_text()
    assert "## Theory: Proposition 1 on the trained models" in report
    assert report.index("## Theory") < report.index("## More figures") and "figures/bound_terms.png" in report


@pytest.mark.slow
def test_cli_reproduces_the_table_and_names_missing_tables(smoke_results, tmp_path, capsys):
    out = tmp_path / "bound.csv"
    cmd = [sys.executable, "-m", "theory", "bound", "--tables", str(smoke_results / "tables"), "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    pd.testing.assert_frame_equal(pd.read_csv(out), pd.read_csv(smoke_results / "theory" / "bound.csv"))
    assert main(["bound", "--tables", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "runs.csv" in capsys.readouterr().err


# ----------------------------------------------------------------------------- in process: text, figures, CLI
# The report's sentences, the figures' data and the command line, checked in this process against
# values worked out by hand (the smoke run above checks them end to end but in subprocesses).


def sweep_runs(gen):
    """ERM (2 seeds), MR² at its default c̄ = 1 (2 seeds) and MR² at c̄ = 2 (2 seeds, a c̄ sweep), in that
    order: (runs table, per_class table)."""
    return fake_runs(gen, [("erm", "default", None, None), ("mr2", "default", 1.0, None),
                           ("mr2", "c_bar=2.0", 2.0, "c_bar")])


#: hand-chosen terms of the six runs of ``sweep_runs``, so every number of the text is known
BOUND = [0.5, 2.0, 1.5, 0.8, 0.3, 4.0]
TEST_ERROR = [0.25, 0.1, 0.5, 0.2, 0.35, 0.1]
HOLDS = [True, True, True, True, False, True]
COMPLEXITY_SHARE = [0.9, 0.7, 0.6, 0.2, 0.8, 0.95]
RATIO = [0.9, 0.95, 0.99, 1.0, 0.8, 0.85]


def chosen_table(gen, share=COMPLEXITY_SHARE):
    runs, per_class = sweep_runs(gen)
    table = pipeline.bound_table(runs, per_class)
    bound = np.array(BOUND)
    table["bound"], table["test_error"], table["holds"] = bound, TEST_ERROR, HOLDS
    table["tightness"] = bound / np.array(TEST_ERROR)
    table["complexity_term"] = np.array(share) * bound
    table["complexity_ratio"] = RATIO
    return table, runs, per_class


def test_numbers_are_written_with_three_significant_digits_or_an_exponent():
    assert [answers._number(x) for x in (0.012345, 123.456, -0.5, 9876.0, 12345.6, -12345.6)] == [
        "0.0123", "123", "-0.5", "9.88e+03", "1.23e+04", "-1.23e+04"]
    assert [answers._number(x) for x in (math.inf, -math.inf, math.nan)] == ["inf", "-inf", "nan"]
    assert [answers._number(x) for x in (9999.0, 10000.0, 10001.0)] == ["1e+04", "1.00e+04", "1.00e+04"]


def test_tightness_sentences_state_the_tables_numbers(gen):
    table, runs, _ = chosen_table(gen)
    lines = answers.tightness_sentences(table, "mr2", runs)
    # intervals: mean ± 12.7062 · sd/√2 over two seeds. ERM: tightness 2, 20 -> 11 ± 114.4; bound 0.5, 2.0
    # -> 1.25 ± 9.53 (contains 1: not shown). MR²: tightness 3, 4 -> 3.5 ± 6.35; bound 1.5, 0.8 -> 1.15 ± 4.45
    assert lines[0] == ("Proposition 1 on the trained models, bound ÷ test error (mean over seeds [95 % t-interval]): "
                        "toy: ERM 11 [-103, 125], vacuous or not: not shown (bound 1.25 [-8.28, 10.8]; above 1 on 1 of "
                        "2 runs); MR² 3.5 [-2.85, 9.85], vacuous or not: not shown (bound 1.15 [-3.3, 5.6]; above 1 on "
                        "1 of 2 runs).")
    # holds on 5 of 6; bound > 1 on 2.0, 1.5, 4.0; tightness 2, 20, 3, 4, 0.857, 40: median 3.5
    assert lines[1] == ("Over all 6 trained models, Proposition 1 holds on 5 and is vacuous (above 1, more than any "
                        "error rate) on 3 of 6: the bound is 3.5 times the test error (median over runs; 0.857 to 40).")
    # complexity shares 0.9 0.7 0.6 0.2 0.8 0.95: median 0.75
    assert lines[2] == ("The complexity term makes up 75 % of the bound (median over runs; 20 to 95 %): the looseness "
                        "is the complexity term's.")
    # c̄ = 1: bound 1.5, 0.8 -> 1.15 ± 4.45, test error 0.5, 0.2 -> 0.35 ± 1.91; c̄ = 2: bound 0.3, 4.0 ->
    # 2.15 ± 23.5, test error 0.35, 0.1 -> 0.225 ± 1.59
    assert lines[3] == ("toy: across mr2's c̄ sweep (1, 2) the bound is 1.15 [-3.3, 5.6] at c̄ = 1, 2.15 [-21.4, 25.7] "
                        "at c̄ = 2, the test error 0.35 [-1.56, 2.26] at c̄ = 1, 0.225 [-1.36, 1.81] at c̄ = 2 (means "
                        "over seeds [95 % t-interval]).")
    assert lines[4].startswith("At an equal mean margin, Corollary 1's γ gives a complexity term 0.800 to 1.000 "
                               "times uniform γ's")
    assert len(lines) == 5
    # ERM has one c̄ (1): the sentence says there is no sweep; a method without runs adds no dataset line
    erm = answers.tightness_sentences(table, "erm", runs)
    assert erm[3].startswith("toy: the results hold no c̄ sweep of erm (one c̄, 1); the c̄ view is the analytical "
                             "curve of one trained model")
    assert len(answers.tightness_sentences(table, "lff", runs)) == 4


def test_tightness_sentences_per_dataset(gen):
    """Two datasets, a line each in name order: "alpha" with one c̄, "toy" with a three-point c̄ sweep
    (and an MR² λ variant at c̄ = 1 the runs table keeps out); a bound of exactly 1 is not vacuous;
    MR² by default; a c̄ with one run has no interval."""
    table, runs, per_class = chosen_table(gen)
    extra_runs, extra_classes = fake_runs(gen, [("mr2", "c_bar=4.0", 4.0, "c_bar"), ("mr2", "lam=0.3", 1.0, "lam")],
                                          seeds=(0,))
    runs = pd.concat([runs, extra_runs], ignore_index=True)
    extra = pipeline.bound_table(extra_runs, extra_classes).assign(bound=[7.0, 100.0], test_error=[0.3, 0.9])
    alpha = table[table["method"] == "mr2"].iloc[:2].assign(dataset="alpha")
    both = pd.concat([table, extra, alpha], ignore_index=True)
    both.loc[0, "bound"] = 1.0  # exactly 1: not above it
    runs = pd.concat([runs, runs.iloc[2:4].assign(dataset="alpha")], ignore_index=True)
    lines = answers.tightness_sentences(both, runs=runs)
    # default variants only: toy's ERM and MR², then alpha's MR²; ERM's bounds 1.0 and 2.0, one above 1
    assert lines[0].startswith("Proposition 1 on the trained models, bound ÷ test error (mean over seeds [95 % "
                               "t-interval]): toy: ERM ") and "; above 1 on 1 of 2 runs); MR² 3.5 [" in lines[0]
    assert lines[0].endswith(". alpha: MR² 3.5 [-2.85, 9.85], vacuous or not: not shown (bound 1.15 [-3.3, 5.6]; "
                             "above 1 on 1 of 2 runs).")
    assert "is vacuous (above 1, more than any error rate) on 6 of 10" in lines[1]  # 2.0 1.5 4.0 7.0 100.0, alpha's 1.5
    assert lines[3].startswith("alpha: the results hold no c̄ sweep of mr2 (one c̄, 1)")
    assert lines[4].startswith("toy: across mr2's c̄ sweep (1, 2, 4) the bound is 1.15 [-3.3, 5.6] at c̄ = 1, "
                               "7 (1 run, no interval) at c̄ = 4, the test error 0.35 [-1.56, 2.26] at c̄ = 1, "
                               "0.3 (1 run, no interval) at c̄ = 4")
    assert len(lines) == 6 and lines[5].startswith("At an equal mean margin")


@pytest.mark.parametrize("bounds, word", [
    ([30.0, 40.0, 35.0], "vacuous"),  # 35 ± 12.4: above 1
    ([0.2, 0.3, 0.25], "not vacuous"),  # 0.25 ± 0.124: below 1
    ([0.5, 2.0], "vacuous or not: not shown"),  # 1.25 ± 9.53: contains 1
    ([1.5, 1.5], "vacuous or not: undetermined (no spread between seeds)"),
    ([3.0], "vacuous or not: undetermined (too few seeds for an interval)"),
])
def test_a_bound_is_called_vacuous_only_when_its_interval_lies_above_one(bounds, word):
    assert answers.vacuous_word(pd.Series(bounds)) == word


def test_the_tightness_line_of_real_sized_bounds(gen):
    """Bounds far above 1 on three seeds: vacuous; a method with only a swept variant is left out;
    no default variant at all says so."""
    table, _, _ = chosen_table(gen)
    erm = table[table["method"] == "erm"]
    three = pd.concat([erm, erm.iloc[:1].assign(seed=2)], ignore_index=True).assign(
        bound=[30.0, 40.0, 35.0], test_error=[0.3, 0.4, 0.35], tightness=[100.0, 100.0, 100.0])
    swept = table[table["variant"] != "default"]
    # tightness 100 on every seed: no spread, shown as its degenerate interval; bound 35 ± 4.3027 · 5/√3
    assert answers.tightness_line(pd.concat([three, swept])) == (
        "Proposition 1 on the trained models, bound ÷ test error (mean over seeds [95 % t-interval]): toy: ERM 100 "
        "[100, 100], vacuous (bound 35 [22.6, 47.4]; above 1 on 3 of 3 runs).")
    assert answers.tightness_line(swept) == ("Proposition 1: no default-variant run in the bound table, so no "
                                              "tightness to state.")


@pytest.mark.parametrize("share, ending", [(0.3, "the empirical term dominates."),
                                           (0.5, "the empirical term dominates."),  # exactly half: not the complexity's
                                           (0.51, "the looseness is the complexity term's.")])
def test_the_looser_term_is_named_by_its_median_share(gen, share, ending):
    table, runs, _ = chosen_table(gen, share=[share] * 6)
    line = answers.tightness_sentences(table, "mr2", runs)[2]
    pct = f"{100 * share:g}"
    assert line == f"The complexity term makes up {pct} % of the bound (median over runs; {pct} to {pct} %): {ending}"


@pytest.mark.parametrize("norm, norm_text", [("max_row", "Λ = max_k ‖[w_k b_k]‖₂"), ("frobenius", "Λ = ‖[W b]‖_F")])
def test_markdown_rows_are_the_means_over_seeds(gen, norm, norm_text):
    runs, per_class = sweep_runs(gen)
    table = pipeline.bound_table(runs, per_class, norm=norm, c=0.7, delta=0.01)
    table["holds"] = HOLDS
    md = answers.bound_markdown(table)
    assert f"{norm_text} of the trained head" in md and "c = 0.7, δ = 0.01;" in md
    rows = [line for line in md.splitlines() if line.startswith("| toy |")]
    assert len(rows) == 3
    for line, (label, idx) in zip(rows, [("erm", [0, 1]), ("mr2", [2, 3]), ("mr2 (c_bar=2.0)", [4, 5])]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:2] == ["toy", label]
        means = [sum(table.loc[i, col] for i in idx) / 2 for col in ("c_bar", "empirical_term", "complexity_term",
                                                                     "confidence_term", "bound", "test_error",
                                                                     "tightness")]
        assert cells[2:9] == [f"{m:.3g}" for m in means]
        assert cells[9] == f"{sum(HOLDS[i] for i in idx)}/2"
        assert cells[10] == f"{sum(table.loc[i, 'complexity_ratio'] for i in idx) / 2:.3f}"
    # the rows keep the table's order of runs, not an alphabetical one
    reordered = answers.bound_markdown(table.iloc[[2, 3, 4, 5, 0, 1]])
    assert [line.split("|")[2].strip() for line in reordered.splitlines() if line.startswith("| toy |")] == [
        "mr2", "mr2 (c_bar=2.0)", "erm"]
    share = 100 * np.median([table.loc[i, "complexity_term"] / table.loc[i, "bound"] for i in range(6)])
    assert (f"holds on 5 of 6 runs and is vacuous (above 1, so it holds trivially) on "
            f"{sum(b > 1 for b in table['bound'])} of 6; the complexity term makes up {share:.3g} %") in md
    assert "gives a complexity term never larger than uniform γ" in md


def test_markdown_of_one_run_is_a_table_with_its_heading(gen):
    run, classes, _ = fake_run(gen)
    table = pipeline.bound_table(pd.DataFrame([run]), classes, norm="frobenius", c=0.5, delta=0.2)
    md = answers.bound_markdown(table)
    lines = md.split("\n")
    assert lines[0] == "## Theory: Proposition 1 on the trained models" and lines[1] == ""
    assert "Λ = ‖[W b]‖_F of the trained head" in md and "c = 0.5, δ = 0.2;" in md
    header = [c.strip() for c in lines[4].strip("|").split("|")]
    assert header == ["Dataset", "Method", "c̄", "Empirical", "Complexity", "Confidence", "Bound", "Test error",
                      "Bound / test error", "Holds", "MR² γ / uniform γ"]
    assert lines[5] == "|---|---|" + "|".join(["---:"] * 9) + "|"
    assert len(lines[6].strip("|").split("|")) == 11 and md.endswith(".\n") and not md.endswith("\n\n")


def test_markdown_tolerates_rounding_but_not_a_larger_ratio(gen):
    table, _, _ = chosen_table(gen)
    table["complexity_ratio"] = [1.0 + 1e-10] * 6
    table.loc[5, "complexity_ratio"] = 1.0 + 1e-9  # the tolerance itself is still "never larger"
    table.loc[0, "bound"] = 1.0  # a bound of exactly 1 is not vacuous
    md = answers.bound_markdown(table)
    assert "never larger than uniform γ" in md and "is vacuous (above 1, so it holds trivially) on 3 of 6" in md
    table.loc[3, "complexity_ratio"] = 1.001
    md = answers.bound_markdown(table)
    assert "**larger** on some runs than uniform γ" in md and "(ratio 1.000 to 1.001)" in md


def test_bound_terms_figure_draws_each_terms_mean_and_clipped_sd(gen):
    table, _, _ = chosen_table(gen)
    table = pd.concat([table, table.assign(dataset="toy2", bound=table["bound"] * 2)], ignore_index=True)
    table.loc[[0, 1], "test_error"] = 0.0  # ERM's mean test error 0: not drawn on a log axis
    table.loc[4, "confidence_term"] = 100.0  # a spread larger than the mean: the bar stops above 0
    fig = plots.plot_bound_terms(table)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["toy", "toy2"]
    labels = ["ERM", "MR²", "MR² (c_bar=2.0)"]
    width = 0.7 / 5
    for ax, dataset in zip(axes, ["toy", "toy2"]):
        part = table[table["dataset"] == dataset].reset_index(drop=True)
        assert ax.get_yscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == labels
        bars = {c.get_label(): c for c in ax.containers}
        for i, term in enumerate(["empirical_term", "complexity_term", "confidence_term", "bound", "test_error"]):
            line = bars[pipeline.TERM_TITLES[term]].lines[0]
            drawn = []
            for j, idx in enumerate([[0, 1], [2, 3], [4, 5]]):
                values = part.loc[idx, term].to_numpy()
                mean, sd = values.mean(), values.std(ddof=1)
                if mean > 0:
                    drawn.append((j + width * (i - 2), mean, min(sd, 0.99 * mean)))
            np.testing.assert_allclose(np.asarray(line.get_xdata(), float), [d[0] for d in drawn])
            np.testing.assert_allclose(np.asarray(line.get_ydata(), float), [d[1] for d in drawn])
            segments = bars[pipeline.TERM_TITLES[term]].lines[2][0].get_segments()
            np.testing.assert_allclose([s[1][1] - s[0][1] for s in segments], [2 * d[2] for d in drawn])
            if term == "test_error":  # the black star, not drawn for ERM's 0 on toy
                assert line.get_marker() == "*" and line.get_color() == "black"
                assert len(drawn) == (2 if dataset == "toy" else 3)
        one = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [1.0, 1.0]]
        assert len(one) == 1 and one[0].get_linestyle() == "--" and one[0].get_color() == "black"
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("method", "value (log scale)")
    legend = [t.get_text() for t in axes[-1].get_legend().get_texts()]
    assert sorted(legend) == sorted([*pipeline.TERM_TITLES.values(), "1: above it a bound on an error is vacuous"])
    assert axes[0].get_legend() is None


def test_bound_terms_of_a_single_seed_have_no_error_bar(gen):
    table, _, _ = chosen_table(gen)
    fig = plots.plot_bound_terms(table.iloc[[0, 2, 3]])  # ERM: one seed, its sd undefined -> 0
    bars = {c.get_label(): c for c in fig.axes[0].containers}
    segments = bars[pipeline.TERM_TITLES["bound"]].lines[2][0].get_segments()
    heights = [s[1][1] - s[0][1] for s in segments]
    assert heights[0] == 0 and heights[1] > 0


def corollary_1_complexity(a, head_norm, n, c_bar):
    """(4√2·Λ·K/√N)·sqrt(Σ a_k/γ_k²) with γ_k = c̄·K·a_k^{1/3}/Σ_j a_j^{1/3}, and with γ_k = c̄."""
    a = np.asarray(a, dtype=np.float64)
    k = len(a)
    gamma = c_bar * k * np.cbrt(a) / np.cbrt(a).sum()
    scale = 4 * math.sqrt(2) * head_norm * k / math.sqrt(n)
    return scale * math.sqrt((a / gamma**2).sum()), scale * math.sqrt((a / c_bar**2).sum())


def test_run_curve_is_corollary_1_on_the_runs_own_a(gen):
    table, runs, per_class = chosen_table(gen)
    row = table.iloc[3]  # mr2, default, seed 1
    curve = pipeline.run_curve(row, per_class, [0.5, 3.0])
    mine = per_class[(per_class["variant"] == "default") & (per_class["method"] == "mr2") & (per_class["seed"] == 1)]
    a = mine.sort_values("class")["a"].to_numpy() + 1.0  # the head has a bias
    for _, point in curve.iterrows():
        mr2, uniform = corollary_1_complexity(a, row["head_norm"], N, point["c_bar"])
        assert point["complexity_mr2"] == pytest.approx(mr2, rel=1e-9)
        assert point["complexity_uniform"] == pytest.approx(uniform, rel=1e-9)
        assert (point["dataset"], point["method"], point["variant"], point["seed"]) == ("toy", "mr2", "default", 1)
    assert list(curve["c_bar"]) == [0.5, 3.0]
    without_bias = pipeline.run_curve(pd.Series({**row.to_dict(), "head_bias": False}), per_class, [1.0])
    mr2, _ = corollary_1_complexity(a - 1.0, row["head_norm"], N, 1.0)
    assert without_bias.loc[0, "complexity_mr2"] == pytest.approx(mr2, rel=1e-9)
    with pytest.raises(ValueError, match="'seed': 9"):
        pipeline.run_curve(pd.Series({**row.to_dict(), "seed": 9}), per_class, [1.0])


def test_complexity_curve_takes_a_as_given_unless_told_of_a_bias():
    a = np.array([0.5, 2.0, 9.0])
    plain, biased = (pipeline.complexity_curve(a, 1.5, 80, [0.7], **kw).iloc[0] for kw in ({}, {"bias": True}))
    for got, a_bound in ((plain, a), (biased, a + 1.0)):
        mr2, uniform = corollary_1_complexity(a_bound, 1.5, 80, 0.7)
        assert got["complexity_mr2"] == pytest.approx(mr2, rel=1e-9)
        assert got["complexity_uniform"] == pytest.approx(uniform, rel=1e-9)


def test_complexity_curve_figure_draws_both_curves(gen):
    curve = pipeline.complexity_curve(np.array([1.0, 4.0, 27.0]), 2.0, 50, [0.5, 1.0, 2.0])
    fig = plots.plot_complexity_curve(curve)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    uniform, mr2 = lines[r"uniform $\gamma_k = \bar{c}$"], lines[r"MR² $\gamma_k$ (Corollary 1)"]
    for line, column in ((uniform, "complexity_uniform"), (mr2, "complexity_mr2")):
        np.testing.assert_allclose(line.get_xdata(), [0.5, 1.0, 2.0])
        np.testing.assert_allclose(line.get_ydata(), curve[column])
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_ylabel() == "complexity term"
    assert ax.get_xlabel() == r"mean margin $\bar{c}$"
    # each curve in its method's colour (the uniform ablation's, MR²'s), MR²'s dashed with squares
    assert to_hex(uniform.get_color()) == to_hex(method_colour("mr2_uniform")) and uniform.get_marker() == "o"
    assert to_hex(mr2.get_color()) == to_hex(method_colour("mr2")) and mr2.get_marker() == "s"
    assert mr2.get_linestyle() == "--" and uniform.get_linestyle() == "-"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.5", "1", "2"]


def test_terms_by_c_bar_is_every_term_of_each_sweep_run_sorted_by_c_bar(gen):
    table, runs, _ = chosen_table(gen)
    long = pipeline.terms_by_c_bar(table, "mr2", runs)
    assert len(long) == 4 * 5 and list(long.columns) == ["dataset", "seed", "variant", "c_bar", "term", "value"]
    assert list(long[["c_bar", "term", "seed"]].itertuples(index=False, name=None)) == sorted(
        long[["c_bar", "term", "seed"]].itertuples(index=False, name=None))
    for i in range(2, 6):
        r = table.iloc[i]
        for term in [*pipeline.TERMS, "bound", "test_error"]:
            hit = long[(long["variant"] == r["variant"]) & (long["seed"] == r["seed"]) & (long["term"] == term)]
            assert list(hit["value"]) == [r[term]] and list(hit["c_bar"]) == [r["c_bar"]]


def test_the_c_bar_views_default_to_mr2_and_draw_the_means_over_seeds(gen):
    table, runs, _ = chosen_table(gen)
    table.loc[2, "test_error"] = 0.0  # one run at c̄ = 1 with no test error: its mean stays positive
    pd.testing.assert_frame_equal(pipeline.terms_by_c_bar(table, runs=runs), pipeline.terms_by_c_bar(table, "mr2", runs))
    pd.testing.assert_frame_equal(pipeline.c_bar_view(table, runs=runs), pipeline.c_bar_view(table, "mr2", runs))
    view = pipeline.c_bar_view(table, runs=runs)
    assert list(view["bound"]) == pytest.approx([(1.5 + 0.8) / 2, (0.3 + 4.0) / 2])
    # the sweep's runs only (an MR² run of another option at c̄ = 1 would change the means)
    other = table.iloc[[2]].assign(variant="lam=0.3", bound=100.0)
    extra_run = runs.iloc[[2]].assign(variant="lam=0.3", **{"config.tags.sweep": "lam"})
    fig = plots.plot_terms_vs_c_bar(pd.concat([table, other]), runs=pd.concat([runs, extra_run]))
    lines = [np.asarray(ln.get_ydata(), float) for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 2]
    for term in [*pipeline.TERMS, "bound"]:
        want = [table.loc[[2, 3], term].mean(), table.loc[[4, 5], term].mean()]
        assert any(np.allclose(y, want) for y in lines), term
    # a zero test error is left out of the log axis: the mean at c̄ = 1 is over the other seed
    assert any(np.allclose(y, [0.2, (0.35 + 0.1) / 2]) for y in lines)
    assert fig.axes[0].get_title() == "toy: mr2" and fig.axes[0].get_ylabel() == "value (log scale)"
    assert fig.axes[0].get_yscale() == "log"
    drawn = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 2]
    # one line per term, each in its own grey with its own marker and dashes, in the legend by title
    assert len(drawn) == 5 and len({to_hex(ln.get_color()) for ln in drawn}) == 5
    assert {to_hex(ln.get_color()) for ln in drawn} == {to_hex(c) for c, _ in plots.TERM_STYLES.values()}
    assert len({ln.get_marker() for ln in drawn}) == 5 and len({ln.get_linestyle() for ln in drawn}) > 1
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == list(pipeline.TERM_TITLES.values())
    two = plots.plot_terms_vs_c_bar(table.assign(dataset="a").pipe(lambda t: pd.concat([table, t])),
                                       runs=pd.concat([runs, runs.assign(dataset="a")]))
    assert [ax.get_legend() is not None for ax in two.axes] == [False, True]  # one legend, beside the last panel
    nothing = plots.plot_terms_vs_c_bar(table, "lff", runs)
    assert [t.get_text() for t in nothing.axes[0].texts] == ["no runs of lff"] and len(nothing.axes) == 1


def test_margin_sum_shares_figure_keeps_one_class_order_and_the_variant(gen):
    made = [fake_run(gen, method=m, seed=0) for m in ("erm", "mr2", "focal")]
    runs = pd.DataFrame([r for r, _, _ in made])
    per_class = pd.concat([c for _, c, _ in made]).assign(class_name=lambda f: "n" + f["class"].astype(str))
    table = pipeline.bound_table(runs, per_class)
    table["head_bias"] = False  # without a bias the shares are of a_k itself
    shares = pipeline.margin_sum_shares(table, per_class)
    assert list(shares.columns) == ["dataset", "method", "variant", "class", "class_name", "a", "gamma", "share"]
    assert list(dict.fromkeys(shares["method"])) == ["erm", "mr2", "focal"]  # the tables' order
    erm_classes = made[0][1]
    term = erm_classes["a"].to_numpy() / erm_classes["gamma"].to_numpy() ** 2
    assert shares[shares["method"] == "erm"].set_index("class")["share"].to_dict() == pytest.approx(
        dict(enumerate(term / term.sum())))
    other = shares.assign(variant="lam=0", share=0.5)  # another variant: not drawn
    fig = plots.plot_margin_sum_shares(pd.concat([shares, other]))
    assert fig.axes[0].get_subplotspec().get_gridspec().get_geometry() == (2, 2)
    assert not fig.axes[3].axison and len(fig.axes) == 4
    order = list(shares[shares["method"] == "erm"]["class"])  # ERM's, largest share first
    for ax, method in zip(fig.axes, ("erm", "mr2", "focal")):
        own = shares[shares["method"] == method].set_index("class")["share"]
        np.testing.assert_allclose([p.get_height() for p in ax.patches], [100 * own[c] for c in order])
        assert [t.get_text() for t in ax.get_xticklabels()] == [f"n{c}" for c in order]
        equal = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert len(equal) == 1 and list(equal[0].get_ydata()) == [100 / K, 100 / K]
        assert ax.get_title() == f"toy: {method}" and "largest share of erm first" in ax.get_xlabel()
        assert {to_hex(p.get_facecolor()) for p in ax.patches} == {to_hex(method_colour(method))}
    empty = plots.plot_margin_sum_shares(shares.iloc[:0])
    assert [t.get_text() for t in empty.axes[0].texts] == ["no runs"]


@pytest.mark.parametrize("k, columns", [(20, 2), (21, 1)])
def test_many_classes_put_one_share_panel_per_row(gen, k, columns):
    frame = pd.DataFrame({"dataset": "big", "method": np.repeat(["erm", "mr2"], k), "variant": "default",
                          "class": np.tile(range(k), 2), "class_name": [f"c{i}" for i in range(k)] * 2,
                          "a": 1.0, "gamma": 1.0, "share": 1.0 / k})
    fig = plots.plot_margin_sum_shares(frame)
    assert fig.axes[0].get_subplotspec().get_gridspec().get_geometry() == (2 // columns, columns)


def test_reading_the_tables_names_a_missing_file(gen, tmp_path):
    runs, per_class = sweep_runs(gen)
    with pytest.raises(FileNotFoundError, match="runs.csv"):
        pipeline.read_tables(tmp_path)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    with pytest.raises(FileNotFoundError, match="per_class.csv"):
        pipeline.read_tables(tmp_path)
    per_class.to_csv(tmp_path / "per_class.csv", index=False)
    got_runs, got_classes = pipeline.read_tables(tmp_path)
    assert len(got_runs) == 6 and len(got_classes) == 6 * K and "train_margin_ce" in got_runs
    with pytest.raises(FileNotFoundError, match="bound.csv"):
        pipeline.read_bound_table(tmp_path / "bound.csv")
    table = pipeline.bound_table(got_runs, got_classes)
    path = pipeline.write_text(table.to_csv(index=False), tmp_path / "theory" / "bound.csv")
    assert path == tmp_path / "theory" / "bound.csv"
    pd.testing.assert_frame_equal(pipeline.read_bound_table(path), table, check_dtype=False)


def test_command_line_in_process_writes_table_section_and_figure(gen, tmp_path, capsys):
    runs, per_class = sweep_runs(gen)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    per_class.to_csv(tmp_path / "per_class.csv", index=False)
    out, md, fig = tmp_path / "t" / "bound.csv", tmp_path / "t" / "bound.md", tmp_path / "f" / "terms"
    argv = ["bound", "--tables", str(tmp_path), "--out", str(out), "--markdown", str(md), "--figure", str(fig),
            "--norm", "frobenius", "--c", "0.5", "--delta", "0.1"]
    assert main(argv) == 0
    table = pipeline.bound_table(*pipeline.read_tables(tmp_path), norm="frobenius", c=0.5, delta=0.1)
    pd.testing.assert_frame_equal(pd.read_csv(out), table, check_dtype=False)
    assert md.read_text() == answers.bound_markdown(table)
    for ext in ("png", "pdf"):
        assert (tmp_path / "f" / f"terms.{ext}").stat().st_size > 1000
    assert capsys.readouterr().out.strip() == f"[theory bound] 6 runs -> {out}; holds on {int(table['holds'].sum())}"
    # the defaults: Λ the largest row norm, c = 1, δ = 0.05; no section and no figure unless asked
    plain = tmp_path / "plain.csv"
    assert main(["bound", "--tables", str(tmp_path), "--out", str(plain)]) == 0
    capsys.readouterr()
    assert main(["bound", "--tables", str(tmp_path), "--out", str(tmp_path / "named.csv"), "--norm", "max_row"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "named.csv"), pd.read_csv(plain))
    written = pd.read_csv(plain)
    assert set(written["norm"]) == {"max_row"} and set(written["c"]) == {1.0} and set(written["delta"]) == {0.05}
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".md", ".png")) == []


def test_command_line_errors_are_one_line_and_exit_2(gen, tmp_path, capsys):
    assert main(["bound", "--tables", str(tmp_path / "nowhere"), "--out", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: missing table") and "runs.csv" in err
    runs, per_class = sweep_runs(gen)
    runs.drop(columns="head_bias").to_csv(tmp_path / "runs.csv", index=False)
    per_class.to_csv(tmp_path / "per_class.csv", index=False)
    assert main(["bound", "--tables", str(tmp_path), "--out", str(tmp_path / "b.csv")]) == 2
    assert "head_bias" in capsys.readouterr().err and not (tmp_path / "b.csv").exists()
    for argv, missing in ((["bound", "--tables", str(tmp_path)], "--out"), (["bound", "--out", "x.csv"], "--tables"),
                          ([], "step")):
        with pytest.raises(SystemExit) as usage:
            main(argv)
        assert usage.value.code == 2
        assert capsys.readouterr().err.rstrip().endswith(f"the following arguments are required: {missing}")
    with pytest.raises(SystemExit) as usage:
        main(["bound", "--tables", str(tmp_path), "--out", "x.csv", "--norm", "spectral"])
    assert usage.value.code == 2 and "spectral" in capsys.readouterr().err


def test_command_line_help_names_each_option_and_default(capsys):
    with pytest.raises(SystemExit) as done:
        main(["bound", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0
    for expected in ("--tables TABLES folder with runs.csv and per_class.csv (aggregate step) --out",
                     "--out OUT the table to write (CSV, a row per run) --markdown",
                     "--markdown MARKDOWN the report's theory section to write (Markdown) --figure",
                     "--figure FIGURE figure path without suffix; writes .png and .pdf --norm",
                     "--norm {max_row,frobenius} Λ (default: max_row) --c",
                     "--c C constant of the confidence term (default: 1.0) --delta",
                     "--delta DELTA 1 − confidence level (default: 0.05)"):
        assert expected in text, expected
    assert text.endswith("1 − confidence level (default: 0.05)")
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert text.startswith("usage: python -m theory")
    assert "{bound} bound Proposition 1 on the pipeline's trained models options:" in " ".join(text.split())
    assert "python -m theory bound --tables results/tables" in text  # the module's own usage, kept as written
