"""Proposition 1 on trained models from the tidy tables (theory.pipeline, python -m theory bound):
the summary path against the logits path, the bias augmentation, the head's affine map, errors,
and the smoke pipeline's theory table (each term finite, holds ⇔ bound ≥ test error, Corollary 1's
γ never raises the complexity term on real a_k)."""

import math
import subprocess
import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from mr2.engine.evaluate import affine_map
from mr2.method.losses.margin_ce import logit_margin_cross_entropy
from mr2.engine.models.heads import CosineHead, LinearHead
from theory import pipeline
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
    runs, classes = [], []
    for variant, c_bar, sweep in (("default", 1.0, None), ("c_bar=2.0", 2.0, "c_bar"), ("lam=0.3", 1.0, "lam")):
        for seed in (0, 1):
            run, cls, _ = fake_run(gen, seed=seed, c_bar=c_bar)
            runs.append({**run, "variant": variant, "config.tags.sweep": sweep})
            classes.append(cls.assign(variant=variant))
    runs = pd.DataFrame(runs)
    table = pipeline.bound_table(runs, pd.concat(classes))
    view = pipeline.c_bar_view(table, "mr2", runs)
    assert list(view["c_bar"]) == [1.0, 2.0] and list(view["runs"]) == [2, 2]  # λ's variant is not mixed in
    default = table[table["variant"] == "default"]
    assert view.loc[0, "bound"] == pytest.approx(default["bound"].mean())
    assert list(pipeline.c_bar_view(table, "mr2")["runs"]) == [4, 2]  # without the runs table, every variant
    fig = pipeline.plot_terms_vs_c_bar(table, "mr2", runs)
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
    fig = pipeline.plot_margin_sum_shares(shares)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list(shares[shares["method"] == "erm"]["class_name"])
    assert [ax.get_title() for ax in fig.axes] == ["toy: erm", "toy: mr2"]
    plt.close(fig)


# ----------------------------------------------------------------------------- errors and report text


def test_missing_column_is_named(gen):
    run, classes, _ = fake_run(gen)
    del run["head_bias"]
    with pytest.raises(ValueError, match="head_bias"):
        pipeline.bound_table(pd.DataFrame([run]), classes)


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
    md = pipeline.bound_markdown(table)
    assert "| toy | erm |" in md and "| toy | mr2 |" in md
    assert "holds on 3 of 4 runs" in md and "**larger** on some runs" in md


# ----------------------------------------------------------------------------- the smoke pipeline


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


def test_smoke_report_and_figure_have_the_theory(smoke_results):
    for ext in ("png", "pdf"):
        assert (smoke_results / "figures" / f"bound_terms.{ext}").stat().st_size > 1000
    report = (smoke_results / "report.md").read_text()
    assert "## Theory: Proposition 1 on the trained models" in report
    assert report.index("## Theory") < report.index("## More figures") and "figures/bound_terms.png" in report


def test_cli_reproduces_the_table_and_names_missing_tables(smoke_results, tmp_path, capsys):
    out = tmp_path / "bound.csv"
    cmd = [sys.executable, "-m", "theory", "bound", "--tables", str(smoke_results / "tables"), "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    pd.testing.assert_frame_equal(pd.read_csv(out), pd.read_csv(smoke_results / "theory" / "bound.csv"))
    assert main(["bound", "--tables", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "runs.csv" in capsys.readouterr().err
