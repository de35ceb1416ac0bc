"""Model selection (``train.select: best_val``), evaluation mode and the evaluation's statistics,
each checked against a computation written here (numpy, or a forward pass done in the test) on
digits: the validation accuracy is the validation split's, resume keeps the best-so-far weights,
validation and test data change neither BatchNorm statistics nor the loss's class statistics,
and per_class.csv's L_p statistics (p = 2, 3, 5) are L_p statistics of the right split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from mr2.engine import config as run_config
from mr2.engine.augment import normalize
from mr2.engine.data import load_prepared
from mr2.engine.data.cache import content_checksum
from mr2.engine.evaluate import evaluate, load_run
from mr2.engine.train import train
from mr2.engine.checkpoint import load_torch, save_torch

QUIET = {"log": lambda *_: None}


def cfg_for(method="erm", epochs=4, **extra):
    update = {"data": {"name": "digits"}, "model": {"name": "small_cnn", "options": {"width": 8}},
              "method": {"name": method}, "threads": 1,
              "train": {"epochs": epochs, "batch_size": 64, "lr": 0.05, "warmup_epochs": 0.5, "flip": False,
                        "crop_padding": 1}}
    return run_config.deep_merge(run_config.deep_merge(run_config.DEFAULTS, update), extra)


def forward_eval(model, x, info):
    """The trained model's (logits, features) on x, computed here: eval mode, normalised inputs."""
    model.eval()
    with torch.no_grad():
        mean, std = torch.tensor(info.mean), torch.tensor(info.std)
        return model(normalize(x, mean, std))


def accuracy(model, split, info) -> float:
    logits, _ = forward_eval(model, split.x, info)
    return float((logits.argmax(1) == split.y).float().mean())


def epoch_values(run_dir, name):
    log = pd.read_csv(run_dir / "epochs.csv")
    rows = log[(log["name"] == name) & log["class"].isna()]
    return dict(zip(rows["epoch"].astype(int), rows["value"]))


def with_val_inputs(src, dst, change):
    """A copy of the prepared file ``src`` whose validation inputs are change(x); checksum redone."""
    payload = load_torch(src)
    payload["splits"]["val"]["x"] = change(payload["splits"]["val"]["x"]).contiguous()
    payload["checksum"] = content_checksum(payload["splits"], payload["indices"], payload["info"], payload["config"])
    save_torch(payload, dst)
    return dst


def test_best_val_keeps_the_epoch_with_the_best_accuracy_on_the_validation_split(digits, tmp_path):
    cfg = cfg_for(epochs=5, train={"select": "best_val", "lr": 0.2})
    train(cfg, digits, tmp_path / "run", **QUIET)
    val_acc = epoch_values(tmp_path / "run", "val_acc")
    best_epoch = max(val_acc, key=lambda e: (val_acc[e], -e))  # the first epoch reaching the maximum
    saved = torch.load(tmp_path / "run" / "model.pt", weights_only=False)
    assert saved["epoch"] == best_epoch
    _, model, _, data = load_run(tmp_path / "run", digits, torch.device("cpu"))
    # the recorded number is the accuracy of these weights on the validation split, not the test split
    assert accuracy(model, data.val, data.info) == pytest.approx(val_acc[best_epoch], abs=1e-9)
    assert abs(accuracy(model, data.test, data.info) - val_acc[best_epoch]) > 1e-9 or len(data.val) == len(data.test)
    # with select: last the weights are the last epoch's, and they differ when the best epoch is not the last
    train(cfg_for(epochs=5, train={"select": "last", "lr": 0.2}), digits, tmp_path / "last", **QUIET)
    last = torch.load(tmp_path / "last" / "model.pt", weights_only=False)
    assert last["epoch"] == 5
    if best_epoch != 5:
        assert any(not torch.equal(last["state"]["model"][k], saved["state"]["model"][k]) for k in last["state"]["model"])


def test_resume_keeps_the_best_so_far_weights(digits, tmp_path, monkeypatch):
    """Validation accuracies are scripted (best at epoch 2, the run stopped after epoch 3): the
    resumed run must end with epoch 2's weights, those of an uninterrupted run."""
    import mr2.engine.train as train_mod

    scripted = iter([0.5, 0.9, 0.3, 0.4, 0.5, 0.9, 0.3, 0.4])
    monkeypatch.setattr(train_mod.Runner, "validate", lambda self: {"val_acc": next(scripted)})
    cfg = cfg_for(epochs=4, train={"select": "best_val"})
    train(cfg, digits, tmp_path / "straight", **QUIET)

    real_check = train_mod.check_finite

    def stop_after_epoch_3(runner, epoch, stats, last_good):
        if epoch == 3:
            raise KeyboardInterrupt
        real_check(runner, epoch, stats, last_good)

    monkeypatch.setattr(train_mod, "check_finite", stop_after_epoch_3)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, digits, tmp_path / "stopped", **QUIET)
    assert torch.load(tmp_path / "stopped" / "checkpoint.pt", weights_only=False)["epoch"] == 3
    monkeypatch.setattr(train_mod, "check_finite", real_check)
    scripted = iter([0.4])
    train(cfg, digits, tmp_path / "stopped", **QUIET)
    a = torch.load(tmp_path / "straight" / "model.pt", weights_only=False)
    b = torch.load(tmp_path / "stopped" / "model.pt", weights_only=False)
    assert a["epoch"] == b["epoch"] == 2
    for part in ("model", "loss"):
        assert all(torch.equal(a["state"][part][k], b["state"][part][k]) for k in a["state"][part]), part


def test_best_val_keeps_the_first_of_tied_epochs(digits, tmp_path, monkeypatch):
    """Scripted validation accuracies tie at their best (epochs 2 and 3): the earlier epoch is kept,
    its weights those of a run whose best is epoch 2 alone, and model.pt says epoch 2."""
    import mr2.engine.train as train_mod

    states = {}
    for name, accuracies in (("tied", [0.5, 0.8, 0.8, 0.6]), ("second", [0.5, 0.8, 0.7, 0.6]),
                             ("third", [0.5, 0.7, 0.8, 0.6])):
        scripted = iter(accuracies)
        monkeypatch.setattr(train_mod.Runner, "validate", lambda self: {"val_acc": next(scripted)})
        train(cfg_for(epochs=4, train={"select": "best_val"}), digits, tmp_path / name, **QUIET)
        states[name] = torch.load(tmp_path / name / "model.pt", weights_only=False)
    assert [states[n]["epoch"] for n in ("tied", "second", "third")] == [2, 2, 3]
    same = [all(torch.equal(states[n]["state"]["model"][k], states["tied"]["state"]["model"][k])
                for k in states["tied"]["state"]["model"]) for n in ("second", "third")]
    assert same == [True, False]


def without_test_class(src, dst, c):
    """A copy of the prepared file ``src`` whose test split has no sample of class ``c``; checksum redone."""
    payload = load_torch(src)
    keep = payload["splits"]["test"]["y"] != c
    for key in ("x", "y"):
        payload["splits"]["test"][key] = payload["splits"]["test"][key][keep].contiguous()
    payload["indices"]["test"] = payload["indices"]["test"][keep].contiguous()
    payload["checksum"] = content_checksum(payload["splits"], payload["indices"], payload["info"], payload["config"])
    save_torch(payload, dst)
    return dst


def test_the_worst_class_is_the_least_accurate_class_that_has_test_samples(digits, tmp_path):
    """Class 3 has no test sample (its accuracy is undefined, NaN in per_class.csv): metrics.json's
    worst class is the class of least accuracy among the others (the first of ties), with its accuracy."""
    data = without_test_class(digits, tmp_path / "no3.pt", 3)
    train(cfg_for(epochs=1), data, tmp_path / "run", **QUIET)
    metrics = evaluate(tmp_path / "run", data, tmp_path / "eval", device="cpu")
    per_class = pd.read_csv(tmp_path / "eval" / "per_class.csv").set_index("class")["accuracy"]
    assert np.isnan(per_class[3]) and per_class.drop(3).notna().all()
    measured = per_class.drop(3)
    worst = int(measured.index[np.argmin(measured.to_numpy())])
    assert metrics["worst_class"] == worst != 3
    assert metrics["worst_class_acc"] == pytest.approx(measured[worst])
    import json

    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["worst_class"] == worst


@pytest.mark.parametrize("method", ["mr2", "mr2_release"])
def test_validation_data_changes_neither_batchnorm_nor_the_loss_statistics(digits, tmp_path, method):
    """Two runs that differ only in their validation inputs (the second's are scaled by 50 and
    shifted) must train identically: validation in training mode would move BatchNorm's running
    statistics and the loss's class statistics, and so the weights."""
    other = with_val_inputs(digits, tmp_path / "other.pt", lambda x: x * 50 + 3)
    cfg = cfg_for(method, epochs=2)
    train(cfg, digits, tmp_path / "a", **QUIET)
    train(cfg, other, tmp_path / "b", **QUIET)
    sa = torch.load(tmp_path / "a" / "model.pt", weights_only=False)["state"]
    sb = torch.load(tmp_path / "b" / "model.pt", weights_only=False)["state"]
    assert any("running_mean" in k for k in sa["model"])  # the model has BatchNorm
    for part in ("model", "loss"):
        assert all(torch.equal(sa[part][k], sb[part][k]) for k in sa[part]), part
    # ... while the validation numbers do see the other inputs
    assert epoch_values(tmp_path / "a", "val_acc") != epoch_values(tmp_path / "b", "val_acc")


def lp_stats(features: np.ndarray, y: np.ndarray, k: int, p: float):
    """‖μ̂_k‖_p², mean ‖x − μ̂_k‖_p², their sum, with numpy, class by class."""
    msq, spread = np.zeros(k), np.zeros(k)
    for c in range(k):
        f = features[y == c]
        mu = f.mean(0)
        msq[c] = (np.abs(mu) ** p).sum() ** (2 / p)
        spread[c] = ((np.abs(f - mu) ** p).sum(1) ** (2 / p)).mean()
    return msq, spread, msq + spread


def test_evaluation_statistics_are_lp_statistics_of_their_split_in_eval_mode(digits, tmp_path):
    cfg = cfg_for("mr2", epochs=2)
    train(cfg, digits, tmp_path / "run", **QUIET)
    _, model, summary, data = load_run(tmp_path / "run", digits, torch.device("cpu"))
    bn_before = {k: v.clone() for k, v in model.state_dict().items()}
    evaluate(tmp_path / "run", digits, tmp_path / "eval", device="cpu")
    table = pd.read_csv(tmp_path / "eval" / "per_class.csv")
    k = data.info.num_classes
    # features computed here in eval mode (BatchNorm uses its running statistics)
    _, train_feats = forward_eval(model, data.train.x, data.info)
    test_logits, test_feats = forward_eval(model, data.test.x, data.info)
    assert all(torch.equal(bn_before[n], t) for n, t in model.state_dict().items())
    for p, suffix in ((2, ""), (3, "_p3"), (5, "_p5")):
        msq, spread, a = lp_stats(train_feats.double().numpy(), data.train.y.numpy(), k, p)
        np.testing.assert_allclose(table["mean_sq_norm" + suffix], msq, rtol=1e-5)
        np.testing.assert_allclose(table["spread" + suffix], spread, rtol=1e-5)
        np.testing.assert_allclose(table["a" + suffix], a, rtol=1e-5)
    msq, spread, a = lp_stats(test_feats.double().numpy(), data.test.y.numpy(), k, 2)
    np.testing.assert_allclose(table["test_mean_sq_norm"], msq, rtol=1e-5)
    np.testing.assert_allclose(table["test_spread"], spread, rtol=1e-5)
    np.testing.assert_allclose(table["test_a"], a, rtol=1e-5)
    acc = [(test_logits.argmax(1)[data.test.y == c] == c).float().mean().item() for c in range(k)]
    np.testing.assert_allclose(table["accuracy"], acc, atol=1e-7)
    # in training mode (batch statistics) the features, hence the statistics, would differ
    model.train()
    with torch.no_grad():
        _, batch_feats = model(normalize(data.train.x, torch.tensor(data.info.mean), torch.tensor(data.info.std)))
    assert not np.allclose(lp_stats(batch_feats.double().numpy(), data.train.y.numpy(), k, 2)[0], table["mean_sq_norm"], rtol=1e-5)
