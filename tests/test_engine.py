"""The training/evaluation engine end to end on small real data: accuracy, resume, errors."""

import json
import os
import signal
import subprocess
import sys

import pandas as pd
import pytest
import torch

from mr2.engine import config as run_config
from mr2.engine.data import prepare_dataset
from mr2.engine.evaluate import evaluate
from mr2.results.groups import difficulty_groups, group_accuracy
from mr2.engine.train import lr_at, train

QUICK = {"train": {"epochs": 4, "batch_size": 64, "lr": 0.05, "warmup_epochs": 0.5, "flip": False, "crop_padding": 1}}


@pytest.fixture(scope="module")
def mnist1d(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "mnist1d.pt"
    prepare_dataset({"name": "mnist1d", "val_fraction": 0.1}, path)
    return path


def cfg_for(dataset, model_name, method, **extra):
    update = {"data": {"name": dataset}, "model": {"name": model_name}, "method": {"name": method}, "threads": 1, **QUICK}
    cfg = run_config.deep_merge(run_config.DEFAULTS, update)
    return run_config.deep_merge(cfg, extra)


@pytest.mark.parametrize("method", ["erm", "mr2", "mr2_uniform", "mr2_no_rep"])
def test_digits_end_to_end_well_above_chance(digits, tmp_path, method):
    cfg = cfg_for("digits", "mlp", method, train={"epochs": 8})
    train(cfg, digits, tmp_path / "run", log=lambda *_: None)
    for name in ("model.pt", "config.yaml", "epochs.csv"):
        assert (tmp_path / "run" / name).is_file()
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    m = evaluate(tmp_path / "run", digits, tmp_path / "run" / "eval", device="cpu")
    assert m["top1"] > 0.6, m["top1"]  # chance is 0.1
    per_class = pd.read_csv(tmp_path / "run" / "eval" / "per_class.csv")
    assert len(per_class) == 10 and per_class["accuracy"].between(0, 1).all()
    assert abs(per_class["accuracy"].min() - m["worst_class_acc"]) < 1e-6
    # the L2 identity holds on the saved statistics of the final model
    assert ((per_class["mean_sq_norm"] + per_class["spread"] - per_class["a"]).abs() < 1e-6 * per_class["a"]).all()
    conf = pd.read_csv(tmp_path / "run" / "eval" / "confusion.csv")
    from mr2.engine.data import load_prepared

    counts = conf.pivot(index="true", columns="predicted", values="count").to_numpy()
    y_test = load_prepared(digits).test.y
    assert (counts.sum(1) == torch.bincount(y_test, minlength=10).numpy()).all()  # rows: the true classes
    assert abs(counts.trace() / counts.sum() - m["top1"]) < 1e-6  # top1 is a float32 mean
    assert ((counts.diagonal() / counts.sum(1) - per_class["accuracy"].to_numpy()).__abs__() < 1e-6).all()
    log = pd.read_csv(tmp_path / "run" / "epochs.csv")
    assert set(log["epoch"]) == set(range(1, 9))
    if method.startswith("mr2"):
        gamma = log[log["name"] == "gamma"]
        assert len(gamma) == 8 * 10
        assert abs(gamma.groupby("epoch")["value"].mean() - 1.0).max() < 1e-5  # mean margin c̄ = 1


def test_mnist1d_end_to_end_well_above_chance(mnist1d, tmp_path):
    cfg = cfg_for("mnist1d", "cnn1d", "mr2", train={"epochs": 6, "lr": 0.05})
    train(cfg, mnist1d, tmp_path / "run", log=lambda *_: None)
    m = evaluate(tmp_path / "run", mnist1d, tmp_path / "run" / "eval", device="cpu")
    assert m["top1"] > 0.35, m["top1"]  # chance 0.1


def test_same_config_same_metrics(digits, tmp_path):
    cfg = cfg_for("digits", "mlp", "mr2", train={"epochs": 2})
    a = train(cfg, digits, tmp_path / "a", log=lambda *_: None)
    b = train(cfg, digits, tmp_path / "b", log=lambda *_: None)
    assert a == b
    sa, sb = torch.load(tmp_path / "a" / "model.pt")["state"], torch.load(tmp_path / "b" / "model.pt")["state"]
    assert all(torch.equal(sa["model"][k], sb["model"][k]) for k in sa["model"])


def test_each_epoch_draws_its_own_order_of_the_training_samples(digits, tmp_path, monkeypatch):
    """The training batches of each epoch follow one order of all training samples (batches of the
    last, short part dropped), and no two epochs share an order; the same run draws the same orders."""
    from mr2.engine.loader import Source

    orders, real = [], Source.batches

    def recording(self, order, batch_size, drop_last=False):
        if drop_last:  # the training batches (evaluation reads every sample in its order)
            orders.append(order.tolist())
        return real(self, order, batch_size, drop_last)

    monkeypatch.setattr(Source, "batches", recording)
    cfg = cfg_for("digits", "mlp", "erm", train={"epochs": 3})
    for run in ("a", "b"):
        train(cfg, digits, tmp_path / run, log=lambda *_: None)
    first, again = orders[:3], orders[3:]
    n_train = len(torch.load(digits, weights_only=False)["splits"]["train"]["y"])
    assert all(sorted(order) == list(range(n_train)) for order in first)
    assert len({tuple(order) for order in first}) == 3
    assert again == first


def test_sigkill_then_resume_gives_identical_results(digits, tmp_path):
    cfg = cfg_for("digits", "small_cnn", "mr2", train={"epochs": 20}, model={"options": {"width": 8}})
    cfg_file = tmp_path / "cfg.yaml"
    run_config_text = json.dumps(cfg)
    cfg_file.write_text(run_config_text)  # JSON is YAML
    cmd = [sys.executable, "-m", "mr2", "train", "--config", str(cfg_file), "--data", str(digits), "--out"]
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd + [str(killed)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in proc.stdout:  # the epoch line is printed after that epoch's checkpoint is written
        if "epoch 2/20" in line:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert (killed / "checkpoint.pt").exists() and not (killed / "model.pt").exists()
    epoch_at_kill = torch.load(killed / "checkpoint.pt", weights_only=False)["epoch"]
    assert 2 <= epoch_at_kill < 20
    resumed = subprocess.run(cmd + [str(killed)], capture_output=True, text=True, check=True)
    assert f"resuming {killed} after epoch {epoch_at_kill}" in resumed.stdout
    subprocess.run(cmd + [str(tmp_path / "straight")], capture_output=True, check=True)
    log_a = pd.read_csv(killed / "epochs.csv").query("name != 'seconds'").reset_index(drop=True)
    log_b = pd.read_csv(tmp_path / "straight" / "epochs.csv").query("name != 'seconds'").reset_index(drop=True)
    pd.testing.assert_frame_equal(log_a, log_b)
    sa = torch.load(killed / "model.pt", weights_only=False)["state"]
    sb = torch.load(tmp_path / "straight" / "model.pt", weights_only=False)["state"]
    for part in ("model", "loss"):
        assert all(torch.equal(sa[part][k], sb[part][k]) for k in sa[part]), part
    for name in ("model.pt", "epochs.csv", "config.yaml"):  # the same bytes, not only the same numbers
        assert (killed / name).read_bytes() == (tmp_path / "straight" / name).read_bytes(), name


def test_non_finite_loss_stops_with_a_clear_message_and_keeps_the_checkpoint(digits, tmp_path):
    from mr2.engine.train import NonFiniteLossError

    cfg = cfg_for("digits", "mlp", "erm", train={"epochs": 3, "lr": 1e30, "warmup_epochs": 0})
    with pytest.raises(NonFiniteLossError, match="diverged in epoch 1: non-finite train_loss"):
        train(cfg, digits, tmp_path / "run", log=lambda *_: None)
    assert not (tmp_path / "run" / "model.pt").exists()


def test_linear_probe_trains_only_the_head(digits, tmp_path):
    cfg = cfg_for("digits", "mlp", "mr2", train={"mode": "linear_probe", "epochs": 3})
    train(cfg, digits, tmp_path / "run", log=lambda *_: None)
    state = torch.load(tmp_path / "run" / "model.pt", weights_only=False)["state"]["model"]
    torch.manual_seed(cfg["seed"])
    from mr2.engine.models import build_model

    fresh = build_model("mlp", 10, (1, 8, 8)).state_dict()
    assert all(torch.equal(state[k], fresh[k]) for k in fresh if k.startswith("backbone"))
    assert not torch.equal(state["head.fc.weight"], fresh["head.fc.weight"])


def test_evaluation_reports_the_margins_of_the_trained_loss_state(digits, tmp_path):
    """(That evaluation changes no statistic is tested in tests/test_selection_and_eval.py.)"""
    cfg = cfg_for("digits", "mlp", "mr2", train={"epochs": 1})
    train(cfg, digits, tmp_path / "run", log=lambda *_: None)
    before = torch.load(tmp_path / "run" / "model.pt", weights_only=False)["state"]["loss"]
    evaluate(tmp_path / "run", digits, tmp_path / "eval", device="cpu")
    per_class = pd.read_csv(tmp_path / "eval" / "per_class.csv")
    from mr2.method.losses import build_loss

    loss = build_loss("mr2", 10, 128)
    loss.load_state_dict(before)
    assert torch.allclose(torch.tensor(per_class["gamma"].values, dtype=torch.float32), loss.margins(), atol=1e-6)


def test_cli_errors_name_the_problem_before_training(digits, tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "mr2", *args], capture_output=True, text=True)

    base = ["train", "--data", str(digits), "--out", str(tmp_path / "x"), "--set", "data.name=digits"]
    cases = [
        (["--set", "model.name=resnet9000"], "resnet9000"),
        (["--set", "method.name=mr3"], "mr3"),
        (["--set", "method.options.lam=-1"], "lam"),
        (["--set", "train.optimiser=sgd"], "train.optimiser"),
        (["--set", "train.epochs=0"], "train.epochs"),
        (["--set", "data.name=fashion_mnist"], "data.name"),
    ]
    for extra, needle in cases:
        res = run(*base, *extra)
        assert res.returncode == 2 and needle in res.stderr, (extra, res.stderr)
    assert not (tmp_path / "x" / "checkpoint.pt").exists()
    res = run("train", "--data", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "y"), "--set", "data.name=digits")
    assert res.returncode == 2 and "missing.pt" in res.stderr
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(digits.read_bytes()[:1000])
    res = run("train", "--data", str(truncated), "--out", str(tmp_path / "z"), "--set", "data.name=digits")
    assert res.returncode == 2 and "truncated.pt" in res.stderr
    res = run("prepare", "--set", "data.name=no_such_set", "--out", str(tmp_path / "p.pt"))
    assert res.returncode == 2 and "no_such_set" in res.stderr


def test_lr_schedule_warms_up_then_decays_to_min():
    lrs = [lr_at(s, 100, 10, 0.1, 1e-4) for s in range(100)]
    assert lrs[0] == pytest.approx(0.01) and lrs[9] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    assert lr_at(100, 100, 10, 0.1, 1e-4) == pytest.approx(1e-4)


def test_groups_are_thirds_of_the_reference_ranking():
    ref = pd.DataFrame({"class": list(range(7)) * 2, "accuracy": [0.9, 0.1, 0.5, 0.3, 0.8, 0.2, 0.6] * 2})
    groups = difficulty_groups(ref)
    assert list(groups[groups == "hard"].index) == [1, 3, 5]
    assert list(groups[groups == "medium"].index) == [2, 6]
    assert list(groups[groups == "easy"].index) == [0, 4]
    per_class = ref.assign(dataset="d", method="m", variant="default", seed=[0] * 7 + [1] * 7)
    table = group_accuracy(per_class, groups)
    assert table["hard"].iloc[0] == pytest.approx((0.1 + 0.3 + 0.2) / 3)
    assert table["worst"].iloc[0] == pytest.approx(0.1)


@pytest.mark.parametrize("variable, value", [("ONEDNN_MAX_CPU_ISA", "SSE41"), ("MKL_CBWR", "COMPATIBLE"),
                                             ("MR2_CPU_ISA", "native")])
def test_a_resume_under_another_kernel_variable_is_refused_in_one_line_naming_it(digits, tmp_path, monkeypatch,
                                                                                 variable, value):
    """Red team round 4, B16: oneDNN's and MKL's caps change a run's bytes as ATen's does, so a resume
    under another value of any of mr2.common.kernels.KERNEL_VARIABLES matches neither run and is refused;
    the finished run's config.yaml records them, the CPU's model and its vendor."""
    import yaml

    from mr2.common.kernels import cpu_model, cpu_vendor, kernel_settings
    from test_safety import Stop, run_cfg, stop_after_epoch

    cfg, out = run_cfg(), tmp_path / "run"
    with pytest.raises(Stop):
        train(cfg, digits, out, log=stop_after_epoch(1))
    was = os.environ.get(variable)
    other = value if was != value else value + "_OTHER"
    monkeypatch.setenv(variable, other)
    with pytest.raises(ValueError) as refused:
        train(cfg, digits, out, log=lambda *_: None)
    line = str(refused.value)
    assert "\n" not in line and f"'{variable}': {other!r}" in line and f"'{variable}': {was!r}" in line
    assert "resuming would match neither run" in line and (out / "checkpoint.pt").exists()
    monkeypatch.undo()  # the run's own value again: the checkpoint resumes
    train(cfg, digits, out, log=lambda *_: None)
    conditions = yaml.safe_load((out / "config.yaml").read_text())["conditions"]
    assert conditions["kernel_settings"] == kernel_settings() and kernel_settings()[variable] == was
    assert (conditions["cpu_model"], conditions["cpu_vendor"]) == (cpu_model(), cpu_vendor())
