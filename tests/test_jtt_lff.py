"""JTT and LfF, and every baseline through the engine: LfF against an explicit per-sample
reference, awkward batches, JTT's up-sampled epochs (deterministic, resumable), the JTT chain
stage 1 -> error set -> stage 2, a short training run above chance for every baseline, and no
Python loop over classes in any method's training step (the op count does not grow with K)."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from mr2.engine import config as run_config
from mr2.engine.config import ConfigError
from mr2.engine.data import load_prepared
from mr2.engine.evaluate import evaluate
from mr2.engine.jtt import error_set, stage1_config, stage2_config
from mr2.method.losses import METHODS, NEEDS_MODEL, build_loss
from mr2.method.losses.lff import LfFLoss, class_max, generalized_cross_entropy, relative_difficulty
from mr2.engine.train import Runner, train
from mr2.engine.upsample import read_index_file, upsampled_index

BASELINES = ("focal", "ldam", "logit_adjust", "eql", "supcon", "center", "dro", "fairdro", "mr2_release", "jtt", "lff")


class TinyNet(torch.nn.Module):
    """(logits, features) like the engine's models."""

    def __init__(self, d_in: int, k: int) -> None:
        super().__init__()
        self.embed, self.head = torch.nn.Linear(d_in, 4), torch.nn.Linear(4, k)

    def forward(self, x):
        f = self.embed(x)
        return self.head(f), f


def make_lff(k=6, d_in=3, n=20, **opts):
    loss = build_loss("lff", k, 4, model_builder=lambda: TinyNet(d_in, k), num_samples=n, **opts)
    return loss.train()


# ---------------------------------------------------------------- LfF formulas

def test_gce_matches_its_formula_and_tends_to_ce(gen):
    z, y = torch.randn(7, 5, generator=gen, dtype=torch.float64), torch.randint(0, 5, (7,), generator=gen)
    p = torch.softmax(z, 1)[torch.arange(7), y]
    assert torch.allclose(generalized_cross_entropy(z, y, 0.7), (1 - p**0.7) / 0.7)
    assert torch.allclose(generalized_cross_entropy(z, y, 1e-6), F.cross_entropy(z, y, reduction="none"), atol=1e-5)


def test_class_max_is_the_max_per_class_without_a_loop():
    ema = torch.tensor([0.5, 2.0, 1.0, 3.0, 0.0])
    cls = torch.tensor([0, 0, 2, 2, 1])
    assert class_max(ema, cls, 4).tolist() == [2.0, 0.0, 3.0, 0.0]


def lff_reference(steps, k, alpha, q, biased, debiased):
    """Per-sample loop reference of LfF's loss values (the paper's Algorithm 1 with the authors'
    first-visit EMA and class-max normalisation)."""
    ema_b, ema_d, seen, cls = {}, {}, set(), {}
    totals = []
    for x, y, idx in steps:
        with torch.no_grad():
            zb, zd = biased(x)[0].double(), debiased(x)[0].double()
        ce_b = F.cross_entropy(zb, y, reduction="none")
        ce_d = F.cross_entropy(zd, y, reduction="none")
        for i, j in enumerate(idx.tolist()):
            cls[j] = int(y[i])
            first = j not in seen
            ema_b[j] = float(ce_b[i]) if first else alpha * ema_b[j] + (1 - alpha) * float(ce_b[i])
            ema_d[j] = float(ce_d[i]) if first else alpha * ema_d[j] + (1 - alpha) * float(ce_d[i])
        seen |= set(idx.tolist())
        total = 0.0
        for i, j in enumerate(idx.tolist()):
            c = cls[j]
            mb = max(ema_b[s] for s in seen if cls[s] == c)
            md = max(ema_d[s] for s in seen if cls[s] == c)
            w = (ema_b[j] / mb) / (ema_b[j] / mb + ema_d[j] / md + 1e-8)
            p = math.exp(-float(ce_b[i]))
            total += (1 - p**q) / q + w * float(ce_d[i])
        totals.append(total / len(idx))
    return totals


def test_lff_matches_the_per_sample_reference_over_steps(gen):
    k, n = 4, 10
    torch.manual_seed(0)
    loss = make_lff(k=k, d_in=3, n=n).double()
    debiased = TinyNet(3, k).double()
    steps = []
    for idx in ([0, 1, 2, 3, 4], [3, 4, 5, 6, 7], [0, 7, 8, 9, 2]):
        idx = torch.tensor(idx)
        x = torch.randn(len(idx), 3, generator=gen, dtype=torch.float64)
        y = (idx % k)
        steps.append((x, y, idx))
    ref = lff_reference(steps, k, 0.7, 0.7, loss.biased, debiased)
    for (x, y, idx), expected in zip(steps, ref):
        logits, feats = debiased(x)
        out = loss(logits, feats, y, inputs=x, indices=idx)
        assert out.total.item() == pytest.approx(expected, rel=1e-9)


def test_lff_gradients_go_to_each_model_through_its_own_term(gen):
    k = 3
    loss = make_lff(k=k, d_in=3, n=8)
    debiased = TinyNet(3, k)
    x, y, idx = torch.randn(5, 3, generator=gen), torch.tensor([0, 1, 2, 0, 1]), torch.arange(5)
    logits, feats = debiased(x)
    out = loss(logits, feats, y, inputs=x, indices=idx)
    g_logits, *g_biased = torch.autograd.grad(out.total, [logits, *loss.biased.parameters()])
    # debiased: d/dz of mean_i W_i CE_i with W detached; on a first visit the EMAs are the CEs
    with torch.no_grad():
        ce_b = F.cross_entropy(loss.biased(x)[0], y, reduction="none")
        ce_d = F.cross_entropy(logits, y, reduction="none")
        nb = torch.stack([ce_b[i] / ce_b[y == y[i]].max() for i in range(5)])
        nd = torch.stack([ce_d[i] / ce_d[y == y[i]].max() for i in range(5)])
        w = nb / (nb + nd + 1e-8)
    expected = (torch.softmax(logits, 1) - F.one_hot(y, k)) * w[:, None] / 5
    assert torch.allclose(g_logits, expected, atol=1e-6)
    zb = loss.biased(x)[0]
    gce = generalized_cross_entropy(zb, y, 0.7).mean()
    ref = torch.autograd.grad(gce, list(loss.biased.parameters()))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g_biased, ref))


def test_lff_relative_difficulty_is_high_where_the_biased_model_fails():
    w = relative_difficulty(torch.tensor([2.0, 0.1, 1.0]), torch.tensor([0.1, 2.0, 1.0]))
    assert w[0] > 0.9 and w[1] < 0.1 and abs(w[2] - 0.5) < 1e-6


@pytest.mark.parametrize("batch", ["singletons", "one_class", "absent", "repeated_index"])
@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4])
def test_lff_finite_values_and_gradients_on_awkward_batches(batch, scale, gen):
    k, n = 6, 12
    y = {"singletons": [0, 1, 2, 3, 4, 5], "one_class": [2] * 6, "absent": [0, 0, 0, 3, 3, 5],
         "repeated_index": [1, 1, 4, 4, 4, 0]}[batch]
    y = torch.tensor(y)
    idx = torch.tensor([0, 0, 3, 3, 3, 7]) if batch == "repeated_index" else torch.arange(6) + 2
    loss = make_lff(k=k, d_in=3, n=n)
    for step in range(3):
        x = torch.randn(6, 3, generator=gen) * scale
        logits = (torch.randn(6, k, generator=gen) * scale).requires_grad_()
        feats = torch.randn(6, 4, generator=gen).requires_grad_()
        out = loss(logits, feats, y, inputs=x, indices=idx)
        grads = torch.autograd.grad(out.total, [logits, *loss.parameters()], allow_unused=True)
        assert torch.isfinite(out.total), (batch, scale, step)
        assert all(g is None or torch.isfinite(g).all() for g in grads)
        assert all(v.dim() == 0 and not v.requires_grad and torch.isfinite(v) for v in out.parts.values())
    assert torch.isfinite(loss.ema_b).all() and torch.isfinite(loss.ema_d).all()


def test_lff_needs_inputs_indices_and_a_model_builder(gen):
    with pytest.raises(ValueError, match="owns a second network"):
        build_loss("lff", 3, 4)
    loss = make_lff(k=3)
    with pytest.raises(ValueError, match="needs the batch inputs"):
        loss(torch.randn(2, 3), torch.randn(2, 4), torch.tensor([0, 1]))


def test_lff_state_does_not_change_in_eval_mode(gen):
    loss = make_lff(k=3, n=6).eval()
    x, y, idx = torch.randn(3, 3, generator=gen), torch.tensor([0, 1, 2]), torch.tensor([0, 1, 2])
    loss(torch.randn(3, 3), torch.randn(3, 4), y, inputs=x, indices=idx)
    assert (loss.ema_b == 0).all() and (loss.seen == 0).all()


# ---------------------------------------------------------------- JTT's up-sampled epochs

def test_upsampled_index_counts_each_listed_sample_lambda_times():
    idx = upsampled_index(10, torch.tensor([2, 7]), 6)
    counts = torch.bincount(idx, minlength=10)
    assert counts[2] == 6 and counts[7] == 6 and counts.sum() == 10 + 2 * 5
    assert counts[[0, 1, 3, 4, 5, 6, 8, 9]].eq(1).all()
    assert torch.equal(upsampled_index(5, torch.tensor([1]), 1), torch.arange(5))
    with pytest.raises(ConfigError, match="upsample_factor"):
        upsampled_index(5, torch.tensor([1]), 0)


def test_error_file_is_checked_against_the_training_split(tmp_path):
    y = torch.tensor([0, 1, 2, 1])
    good = tmp_path / "e.csv"
    pd.DataFrame({"index": [1, 3], "label": [1, 1], "predicted": [0, 2]}).to_csv(good, index=False)
    assert read_index_file(good, y).tolist() == [1, 3]
    bad = tmp_path / "b.csv"
    pd.DataFrame({"index": [1, 2], "label": [1, 1], "predicted": [0, 0]}).to_csv(bad, index=False)
    with pytest.raises(ConfigError, match="labels disagree .* indices \\[2\\]"):
        read_index_file(bad, y)
    pd.DataFrame({"index": [9], "label": [1], "predicted": [0]}).to_csv(bad, index=False)
    with pytest.raises(ConfigError, match="outside the training split"):
        read_index_file(bad, y)
    with pytest.raises(ConfigError, match="no file"):
        read_index_file(tmp_path / "missing.csv", y)
    for text, needle in (("", "is not a CSV"), ("index,label,predicted\n1.5,1,0\n", "'index' must hold integers"),
                         ("index,label,predicted\nx,1,0\n", "'index' must hold integers")):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=needle):
            read_index_file(bad, y)


def test_an_error_set_without_rows_up_samples_nothing(digits, tmp_path):
    """Stage 1 made no training errors: 'mr2 errors' writes the header only; stage 2 is then ERM."""
    empty = tmp_path / "errors.csv"
    pd.DataFrame(columns=["index", "label", "predicted"]).to_csv(empty, index=False)
    assert read_index_file(empty, torch.tensor([0, 1])).tolist() == []
    update = {"data": {"name": "digits"}, "model": {"name": "mlp", "options": {"hidden": 16}}, "method": {"name": "erm"},
              "device": "cpu", "threads": 1, "train": {"epochs": 1, "upsample_file": str(empty), "upsample_factor": 5}}
    train(run_config.deep_merge(run_config.DEFAULTS, update), digits, tmp_path / "run", log=lambda *_: None)
    assert (tmp_path / "run" / "model.pt").is_file()


# ---------------------------------------------------------------- through the engine

QUICK = {"train": {"epochs": 5, "batch_size": 64, "lr": 0.05, "warmup_epochs": 0.5, "flip": False,
                   "crop_padding": 1, "shift": 1}}


def cfg_for(method, options=None, **extra):
    update = {"data": {"name": "digits"}, "model": {"name": "mlp"}, "threads": 1, "device": "cpu",
              "method": {"name": method, "options": options or {}}, **QUICK}
    cfg = run_config.deep_merge(run_config.DEFAULTS, update)
    return run_config.deep_merge(cfg, extra)


# LDAM applies its scale s to cosine logits; on the linear head's raw logits s = 1 (ldam.py).
# FairDRO's relaxed closed form gives negative class weights when ρ > 1/(2(K − 1)) (0.056 for
# K = 10; the default 0.3 comes from 2-group settings) and then diverges: ρ = 0.05 keeps q ≥ 0.
ENGINE_OPTIONS = {"ldam": {"s": 1.0}, "fairdro": {"rho": 0.05}}


@pytest.mark.parametrize("method", BASELINES)
def test_every_baseline_trains_above_chance_through_the_engine(method, digits, tmp_path):
    train(cfg_for(method, ENGINE_OPTIONS.get(method)), digits, tmp_path / "run", log=lambda *_: None)
    m = evaluate(tmp_path / "run", digits, tmp_path / "eval", device="cpu")
    assert m["top1"] > 0.5, (method, m["top1"])  # chance is 0.1
    log = pd.read_csv(tmp_path / "run" / "epochs.csv")
    assert log["value"].notna().all() and set(log["epoch"]) == {1, 2, 3, 4, 5}


def test_jtt_chain_stage1_errors_stage2(digits, tmp_path):
    jtt = cfg_for("jtt", {"stage1_epochs": 1, "upweight": 4})
    s1 = stage1_config(jtt)
    assert s1["method"] == {"name": "erm", "options": {}} and s1["train"]["epochs"] == 1
    assert s1["tags"]["stage"] == "jtt_stage1"
    train(s1, digits, tmp_path / "stage1", log=lambda *_: None)
    errors = error_set(tmp_path / "stage1", digits, tmp_path / "errors.csv", device="cpu")
    data = load_prepared(digits)
    # the error set is exactly the stage-1 model's mistakes on the training split
    s1_eval = evaluate(tmp_path / "stage1", digits, tmp_path / "stage1_eval", device="cpu")
    assert len(errors) == round(s1_eval["train_error"] * len(data.train.y))
    assert (errors["label"] != errors["predicted"]).all()
    assert (torch.tensor(errors["label"].to_numpy()) == data.train.y[torch.tensor(errors["index"].to_numpy())]).all()
    assert 0 < len(errors) < len(data.train.y)
    s2 = stage2_config(jtt, tmp_path / "errors.csv")
    assert s2["train"]["upsample_factor"] == 4 and s2["method"]["name"] == "jtt"
    runner = Runner(s2, digits, tmp_path / "stage2", log=lambda *_: None)
    counts = torch.bincount(runner.train_index, minlength=len(data.train.y))
    listed = torch.tensor(errors["index"].to_numpy())
    assert counts[listed].eq(4).all() and counts.sum() == len(data.train.y) + 3 * len(errors)
    assert runner.steps_per_epoch == (len(data.train.y) + 3 * len(errors)) // runner.batch
    train(s2, digits, tmp_path / "stage2", log=lambda *_: None)
    assert evaluate(tmp_path / "stage2", digits, tmp_path / "stage2_eval", device="cpu")["top1"] > 0.5


def test_upsampled_runs_are_deterministic_and_differ_from_plain_ones(digits, tmp_path):
    data = load_prepared(digits)
    listed = torch.arange(0, len(data.train.y), 7)
    pd.DataFrame({"index": listed.numpy(), "label": data.train.y[listed].numpy(), "predicted": 0}).to_csv(
        tmp_path / "e.csv", index=False)
    cfg = stage2_config(cfg_for("jtt", train={"epochs": 2}), tmp_path / "e.csv")
    a = Runner(cfg, digits, tmp_path / "a", log=lambda *_: None)
    b = Runner(cfg, digits, tmp_path / "b", log=lambda *_: None)
    assert torch.equal(a.train_index, b.train_index)
    train(cfg, digits, tmp_path / "a", log=lambda *_: None)
    train(cfg, digits, tmp_path / "b", log=lambda *_: None)
    train(cfg_for("jtt", train={"epochs": 2}), digits, tmp_path / "plain", log=lambda *_: None)
    state = {d: torch.load(tmp_path / d / "model.pt", weights_only=False)["state"]["model"] for d in ("a", "b", "plain")}
    assert all(torch.equal(state["a"][k], state["b"][k]) for k in state["a"])
    assert not all(torch.equal(state["a"][k], state["plain"][k]) for k in state["a"])


def test_lff_resumes_from_its_checkpoint_identically(digits, tmp_path):
    """The loss state (biased model, EMA buffers) travels in the checkpoint: a run interrupted
    after 2 epochs and resumed gives the uninterrupted run's weights."""
    import shutil

    cfg = cfg_for("lff")
    train(cfg, digits, tmp_path / "straight", log=lambda *_: None)
    # interrupt the same run after its second epoch (its checkpoint stays), then rerun it
    runner_dir = tmp_path / "killed"
    from mr2.engine import train as train_mod

    calls = {"n": 0}
    original = train_mod.Runner.train_epoch

    def stop_after_two(self, epoch):
        if calls["n"] == 2:
            raise KeyboardInterrupt
        calls["n"] += 1
        return original(self, epoch)

    train_mod.Runner.train_epoch = stop_after_two
    try:
        with pytest.raises(KeyboardInterrupt):
            train(cfg, digits, runner_dir, log=lambda *_: None)
    finally:
        train_mod.Runner.train_epoch = original
    assert torch.load(runner_dir / "checkpoint.pt", weights_only=False)["epoch"] == 2
    train(cfg, digits, runner_dir, log=lambda *_: None)
    sa = torch.load(runner_dir / "model.pt", weights_only=False)["state"]
    sb = torch.load(tmp_path / "straight" / "model.pt", weights_only=False)["state"]
    for part in ("model", "loss"):
        assert all(torch.equal(sa[part][k], sb[part][k]) for k in sa[part]), part
    assert any(k.startswith("biased.") for k in sa["loss"]) and "ema_b" in sa["loss"]
    shutil.rmtree(runner_dir)


# ---------------------------------------------------------------- no loop over classes

class OpCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


def ops_of_a_step(method: str, k: int) -> int:
    """aten ops of one loss forward + backward on a batch holding every class of K."""
    torch.manual_seed(0)
    d, b = 4, 2 * k
    loss = build_loss(method, k, d, class_counts=torch.full((k,), 10.0),
                      model_builder=lambda: TinyNet(3, k), num_samples=4 * k).train()
    loss.on_epoch_start(0)
    y = torch.arange(b) % k
    logits = torch.randn(b * loss.n_views, k, requires_grad=True)
    feats = torch.randn(b * loss.n_views, d, requires_grad=True)
    extras = {}
    if loss.needs_inputs:
        extras["inputs"] = torch.randn(b, 3)
    if loss.needs_indices:
        extras["indices"] = torch.arange(b)
    loss(logits, feats, y.repeat(loss.n_views), **extras)  # a first step fills running state
    with OpCounter() as counter:
        out = loss(logits, feats, y.repeat(loss.n_views), **extras)
        out.total.backward()
    return counter.n


@pytest.mark.parametrize("method", sorted(METHODS))
def test_no_python_loop_over_classes_in_a_training_step(method):
    assert ops_of_a_step(method, 5) == ops_of_a_step(method, 40), method


def test_every_method_model_needing_is_declared():
    assert NEEDS_MODEL == {"lff"}


# ---------------------------------------------------------------- the pipeline's dry run

@pytest.mark.slow
def test_baselines_config_dry_run_lists_the_jtt_chain_and_every_method(tmp_path):
    import re

    import yaml
    from conftest import workdir_with_configs, run_snakemake

    workdir = workdir_with_configs(tmp_path / "wf")
    res = run_snakemake(workdir, "-n", "-p", "--configfile", "config/baselines.yaml")
    cfg = yaml.safe_load((workdir / "config" / "baselines.yaml").read_text())
    assert set(BASELINES) | {"erm", "mr2"} == set(cfg["methods"])
    stats = dict(re.findall(r"(?m)^(\w+)\s+(\d+)$", res.stdout))
    n_seeds = len(cfg["seeds"])
    assert int(stats["jtt_stage1"]) == n_seeds and int(stats["jtt_errors"]) == n_seeds
    assert int(stats["train"]) == len(cfg["methods"]) * n_seeds
    out = res.stdout
    for seed in cfg["seeds"]:
        # the jtt run's folder and its steps' folder carry the same hash (the jtt run's settings)
        run_hash = re.search(rf"results/runs/fashion_mnist/jtt/default/([0-9a-f]{{8}})/seed{seed}/", out).group(1)
        errors = f"results/jtt/fashion_mnist/default/{run_hash}/seed{seed}/errors.csv"
        assert f"--out {errors}" in out  # the errors step writes it ...
        assert f"--jtt-errors {errors}" in out  # ... and the jtt run up-samples it
    assert out.count("--jtt-stage1") == n_seeds  # stage 1 derived by the engine from the jtt run's config


# ---------------------------------------------------------------- results: figure 4 and report

def tables_with_baselines():
    """Synthetic tables: ERM, MR² and three baselines with known effects on the hard/easy
    classes of the synthetic data (tests/results_data.py), per seed with small noise."""
    import numpy as np

    import results_data as syn

    t = syn.tables(methods=("erm", "mr2"))
    pc = t["per_class"]
    erm = pc[pc["method"] == "erm"]
    rng = np.random.default_rng(1)
    effects = {"focal": (+0.06, -0.06), "dro": (+0.06, 0.0), "lff": (0.0, -0.06)}  # (hard, easy)
    extra = []
    for method, (hard, easy) in effects.items():
        part = erm.copy()
        part["method"] = method
        shift = np.where(part["class"].isin(syn.HARD), hard, np.where(part["class"].isin(syn.EASY), easy, 0.0))
        part["accuracy"] = part["accuracy"] + shift + rng.normal(0, 0.002, len(part))
        extra.append(part)
    runs = t["runs"]
    more_runs = [runs[runs["method"] == "erm"].assign(method=m) for m in effects]
    return (pd.concat([pc, *extra], ignore_index=True), pd.concat([runs, *more_runs], ignore_index=True))


def test_report_says_for_each_baseline_whether_it_trades_easy_for_hard():
    from mr2.results import groups as G
    from mr2.results.report import findings

    per_class, runs = tables_with_baselines()
    groups = G.difficulty_table(per_class)
    text = "\n".join(findings(per_class, runs, groups))
    line = {m: next(s for s in text.splitlines() if s.startswith(f"- `{m}` against ERM")) for m in ("focal", "dro", "lff")}
    assert "hard classes +6.0 points" in line["focal"] and "It trades easy for hard" in line["focal"]
    assert "It raises hard classes without lowering easy ones" in line["dro"]
    assert "It lowers easy classes without raising hard ones" in line["lff"]
    assert "- `mr2` against" not in text  # MR² has its own sentences
    summary = next(s for s in text.splitlines() if s.startswith("- Baselines by outcome"))
    assert "`focal`" in summary and "`dro`" in summary and "`lff`" in summary


def test_a_baseline_identical_to_erm_is_called_identical_not_undetermined():
    """A loss that equals cross-entropy on balanced classes (EQL, logit adjustment) gives ERM's runs
    exactly: every paired difference 0 on every seed. That is no difference, not a missing interval."""
    from mr2.results import groups as G
    from mr2.results.report import findings

    per_class, runs = tables_with_baselines()
    erm = per_class[per_class["method"] == "erm"]
    per_class = pd.concat([per_class, erm.assign(method="eql")], ignore_index=True)
    runs = pd.concat([runs, runs[runs["method"] == "erm"].assign(method="eql")], ignore_index=True)
    text = "\n".join(findings(per_class, runs, G.difficulty_table(per_class)))
    line = next(s for s in text.splitlines() if s.startswith("- `eql` against ERM"))
    assert "It is identical to ERM on every seed." in line and "undetermined" not in line
    assert "hard classes +0.0 points [95 % CI +0.0, +0.0; MDE 0.0] (equivalent)" in line
    assert "identical to ERM on every seed: `eql`" in text
    # a baseline shifted by a constant on every seed has no spread to test against: undetermined, said so
    from mr2.results.report import trade_off_kind

    word = "undetermined (no spread between seeds)"
    assert trade_off_kind(word, "no clear difference") == (
        "leaves its change in hard classes undetermined (no spread between seeds); it does not lower easy classes")


def test_change_figure_has_a_panel_per_baseline(tmp_path):
    from mr2.results import groups as G
    from mr2.results.figures import change_vs_erm
    from mr2.results.figures.registry import FigureOptions
    from mr2.results.plotting import display_name

    per_class, _ = tables_with_baselines()
    t = {"per_class": per_class, "groups": G.difficulty_table(per_class)}
    fig = change_vs_erm.draw(change_vs_erm.table(t, FigureOptions()), FigureOptions())
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert [title.split(" − ")[0] for title in titles] == [f"toy: {display_name(m)}" for m in ("mr2", "focal", "dro", "lff")]


def test_lff_option_edges_and_messages():
    build = lambda: torch.nn.Linear(2, 2)  # noqa: E731
    LfFLoss(2, build, 1, q=1.0, alpha=0.0)  # the edges the checks allow
    for kwargs, match in (({"q": 1.5}, r"^lff: q must be in \(0, 1\], got q=1.5$"),
                          ({"alpha": 1.0}, r"^lff: alpha must be in \[0, 1\), got alpha=1.0$")):
        with pytest.raises(ValueError, match=match):
            LfFLoss(2, build, 4, **kwargs)
    for n in (0, "5", 2.0):
        with pytest.raises(ValueError, match=rf"^lff: num_samples \(the training-set size\) must be a positive int, "
                                             rf"got {re.escape(repr(n))}$"):
            LfFLoss(2, build, n)


def test_lff_biased_model_runs_at_the_logits_precision_and_may_return_a_bare_tensor():
    torch.manual_seed(0)
    loss = LfFLoss(2, lambda: torch.nn.Linear(3, 2), 5)  # a model returning logits alone, not (logits, features)
    x = torch.randn(4, 3)
    assert loss._biased_logits(x, torch.zeros(1)).dtype == torch.float32
    assert loss._biased_logits(x, torch.zeros(1)).shape == (4, 2)
    for low in (torch.bfloat16, torch.float16):
        assert loss._biased_logits(x, torch.zeros(1, dtype=low)).dtype == low
    out = loss(torch.randn(4, 2), torch.randn(4, 3), torch.tensor([0, 1, 1, 0]), inputs=x, indices=torch.arange(4))
    assert set(out.parts) == {"gce_biased", "weighted_ce", "ce", "weight_mean"}


def test_lff_names_what_a_batch_lacks():
    loss = LfFLoss(2, lambda: torch.nn.Linear(3, 2), 5)
    z, f, y, x = torch.randn(4, 2), torch.randn(4, 3), torch.tensor([0, 1, 1, 0]), torch.randn(4, 3)
    for kwargs in ({"inputs": x}, {"indices": torch.arange(4)}):
        with pytest.raises(ValueError, match=r"^lff: the loss needs the batch inputs and the samples' training-set "
                                             r"indices \(loss\(logits, features, targets, inputs=\.\.\., indices=\.\.\.\)\)$"):
            loss(z, f, y, **kwargs)
    with pytest.raises(ValueError, match=r"^lff: 4 inputs and 3 indices for 4 targets$"):
        loss(z, f, y, inputs=x, indices=torch.arange(3))
    with pytest.raises(ValueError, match=r"^lff: 3 inputs and 4 indices for 4 targets$"):
        loss(z, f, y, inputs=x[:3], indices=torch.arange(4))
