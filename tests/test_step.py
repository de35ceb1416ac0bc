"""The training step (mr2.engine.step): the graph path's CPU-testable parts, its refusals and
fallback, which losses can be captured, and the epoch's progress bar.

A CUDA graph cannot be captured on the CPU, so ``capture`` is replaced here by a stand-in that
records the step and replays it by calling it: everything around the capture (static buffers
refilled before each replay, the learning rate as a tensor filled before each replay, the sums
added to in place, warm-up on real steps) then runs for real and must give the eager numbers
exactly. The capture itself is checked on a GPU (tests/test_cuda.py).
"""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pandas as pd
import pytest
import torch
from torch import nn
from test_speed import SyncRecorder

from mr2.engine import config as run_config
from mr2.engine import step as step_mod
from mr2.engine.config import ConfigError
from mr2.engine.train import Runner, train
from mr2.method.losses import build_loss
from mr2.method.losses.factory import METHODS


def cfg_for(method="mr2", **train_keys):
    update = {"data": {"name": "digits"}, "model": {"name": "mlp", "options": {"hidden": 32}}, "method": {"name": method},
              "device": "cpu", "threads": 1,
              "train": {"epochs": 2, "batch_size": 64, "warmup_epochs": 0.5, "crop_padding": 1, **train_keys}}
    return run_config.deep_merge(run_config.DEFAULTS, update)


@pytest.fixture
def graph_on_cpu(monkeypatch):
    """Let ``GraphStep`` run on the CPU with a stand-in capture whose replay calls the recorded step;
    returns the list of replays made."""
    replays = []

    def record(fn, stream, generators, opt):
        def replay():
            replays.append(1)
            fn()

        return replay

    monkeypatch.setattr(step_mod, "cuda_graph_problem", lambda *args: None)
    monkeypatch.setattr(step_mod, "capture", record)
    return replays


def state_of(runner):
    return {f"{part}.{k}": v.clone() for part, sd in runner.state().items() for k, v in sd.items()}


@pytest.mark.parametrize("method", ["mr2", "lff", "supcon"])  # plain; training-split indices; two views
def test_static_buffers_and_a_tensor_learning_rate_give_the_eager_numbers(digits, tmp_path, graph_on_cpu, method):
    eager = Runner(cfg_for(method, grad_clip=5.0), digits, tmp_path / "a", log=lambda *_: None)
    graph = Runner(cfg_for(method, grad_clip=5.0, cuda_graph=True), digits, tmp_path / "b", log=lambda *_: None)
    assert isinstance(graph.step, step_mod.GraphStep) and type(eager.step) is step_mod.TrainStep
    for epoch in range(2):
        a, b = eager.train_epoch(epoch), graph.train_epoch(epoch)
        assert a == b  # the epoch's sums (loss and parts), accuracy and learning rate, exactly
        sa, sb = state_of(eager), state_of(graph)
        assert all(torch.equal(sa[k], sb[k]) for k in sa), [k for k in sa if not torch.equal(sa[k], sb[k])]
    steps = 2 * graph.steps_per_epoch
    assert len(graph_on_cpu) == steps - step_mod.WARMUP_STEPS  # warm-up, then every step a replay
    lr = graph.opt.param_groups[0]["lr"]
    assert isinstance(lr, torch.Tensor) and lr.item() == pytest.approx(b["lr"])  # filled before each replay
    assert graph.step.buffers[0].dtype == torch.uint8  # the batch as stored; augmented inside the step


def test_warm_up_is_made_of_real_steps(digits, tmp_path, graph_on_cpu):
    """The steps before the capture train the model exactly as eager steps do."""
    eager = Runner(cfg_for(), digits, tmp_path / "a", log=lambda *_: None)
    graph = Runner(cfg_for(cuda_graph=True), digits, tmp_path / "b", log=lambda *_: None)
    for runner in (eager, graph):
        xb, yb = next(runner.train_src.batches(torch.arange(64), 64))
        for _ in range(step_mod.WARMUP_STEPS):
            runner.step(xb, yb, None, 0.05)
    assert graph.step.replay is None and not graph_on_cpu
    sa, sb = state_of(eager), state_of(graph)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["model.head.fc.weight"], Runner(cfg_for(), digits, tmp_path / "c").state()["model"]["head.fc.weight"])


class Recording:
    """A loss that records the dtypes of the logits and features it is called with."""

    def __init__(self, loss):
        self.loss, self.seen = loss, []

    def __getattr__(self, name):
        return getattr(self.loss, name)

    def __call__(self, logits, feats, *args, **kwargs):
        self.seen.append((logits.dtype, feats.dtype))
        return self.loss(logits, feats, *args, **kwargs)


@pytest.mark.parametrize("method", ["supcon", "mr2", "lff"])
def test_the_loss_gets_fp32_from_a_bf16_network(digits, tmp_path, method):
    """Under bf16 autocast (CUDA) the network's logits and features are bf16; the loss, and the
    layers it owns (SupCon's projection head), must still get fp32: here the network's outputs are
    made bf16 on the CPU, as autocast makes them."""
    runner = Runner(cfg_for(method), digits, tmp_path, log=lambda *_: None)
    net = runner.net
    runner.net = lambda x: tuple(t.bfloat16() for t in net(x))
    real_loss = runner.loss
    runner.loss = Recording(real_loss)
    xb, yb = next(runner.train_src.batches(torch.arange(64), 64))
    runner.step(xb, yb, torch.arange(64) if real_loss.needs_indices else None, 0.05)
    assert runner.loss.seen == [(torch.float32, torch.float32)]


def test_a_failing_capture_falls_back_to_eager_with_a_message(digits, tmp_path, monkeypatch):
    def refuse(*args):
        raise RuntimeError("operation not permitted when stream is capturing (simulated)")

    monkeypatch.setattr(step_mod, "cuda_graph_problem", lambda *args: None)
    monkeypatch.setattr(step_mod, "capture", refuse)
    messages = []
    train(cfg_for(cuda_graph=True), digits, tmp_path / "graph", log=messages.append)
    failed = [m for m in messages if "CUDA graph capture failed" in m]
    assert len(failed) == 1 and "RuntimeError: operation not permitted" in failed[0]
    assert "train.cuda_graph=false" in failed[0]
    train(cfg_for(), digits, tmp_path / "eager", log=lambda *_: None)
    logs = [pd.read_csv(tmp_path / run / "epochs.csv").query("name != 'seconds'").reset_index(drop=True)
            for run in ("graph", "eager")]
    pd.testing.assert_frame_equal(*logs)
    sa, sb = (torch.load(tmp_path / run / "model.pt", weights_only=False)["state"] for run in ("graph", "eager"))
    assert all(torch.equal(sa[p][k], sb[p][k]) for p in sa for k in sa[p])


def test_a_batch_of_another_shape_is_refused_by_the_static_buffers(digits, tmp_path, graph_on_cpu):
    runner = Runner(cfg_for(cuda_graph=True), digits, tmp_path, log=lambda *_: None)
    xb, yb = next(runner.train_src.batches(torch.arange(64), 64))
    runner.step(xb, yb, None, 0.05)
    with pytest.raises(ValueError, match="train.cuda_graph: a batch of shape"):
        runner.step(xb[:32], yb[:32], None, 0.05)


# ---------------------------------------------------------------- refusals


def problem(device="cuda", processes=1, method="mr2", options=None, **train_keys):
    cfg = run_config.deep_merge(cfg_for(method, **train_keys), {"method": {"options": options or {}}})
    loss, _ = loss_steps(method, **(options or {}))
    return step_mod.cuda_graph_problem(cfg, torch.device(device), processes, loss)


@pytest.mark.parametrize("case,needle", [
    ({"device": "cpu"}, "needs a CUDA device; this run is on cpu"),
    ({"processes": 2}, "this run has 2"),
    ({"compile": True}, "'train.compile'"),
    ({"auto_augment": True}, "'train.auto_augment'"),
    ({"method": "center"}, "method 'center'"),
    ({"method": "ldam", "options": {"drw_epoch": 3}}, "method 'ldam'"),
])
def test_cuda_graph_is_refused_by_name_where_it_cannot_work(case, needle):
    message = problem(**case)
    assert message.startswith("config key 'train.cuda_graph'") and needle in message and "\n" not in message


@pytest.mark.parametrize("method", ["mr2", "mr2_uniform", "mr2_no_rep", "erm", "ldam", "fairdro", "lff"])
def test_cuda_graph_is_accepted_for_capturable_losses_on_one_cuda_device(method):
    assert problem(method=method) is None


def test_the_refusal_comes_before_any_training(digits, tmp_path):
    with pytest.raises(ConfigError, match="train.cuda_graph.*CUDA device"):
        Runner(cfg_for(cuda_graph=True), digits, tmp_path, log=lambda *_: None)
    res = subprocess.run([sys.executable, "-m", "mr2", "train", "--data", str(digits), "--out", str(tmp_path / "x"),
                          "--set", "data.name=digits", "--set", "train.cuda_graph=true", "--device", "cpu"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "train.cuda_graph" in res.stderr and not (tmp_path / "x" / "checkpoint.pt").exists()
    with pytest.raises(ConfigError, match="train.cuda_graph.*true or false"):
        run_config.validate(run_config.deep_merge(run_config.DEFAULTS, {"train": {"cuda_graph": "yes"}}))


# ---------------------------------------------------------------- which losses can be captured


def one_hot_as_on_cuda(t, num_classes=-1):
    """``F.one_hot`` as it runs on CUDA: out-of-range labels are caught by device asserts, not by
    reading the labels' minimum and maximum on the host as on the CPU."""
    return torch.zeros(*t.shape, num_classes, dtype=torch.long, device=t.device).scatter_(-1, t.unsqueeze(-1), 1)


class Twin(nn.Module):
    """A tiny network of the engine's interface (logits, features), for LfF's biased model."""

    def __init__(self, k=12, d=6):
        super().__init__()
        self.fc = nn.Linear(d, k)

    def forward(self, x):
        return self.fc(x), x


def loss_steps(method, k=12, d=6, b=32, steps=2, device="cpu", **options):
    """Build ``method``'s loss as the engine does and return a function running ``steps`` training
    steps (forward, backward) on fixed random data on ``device``."""
    g = torch.Generator().manual_seed(0)
    counts = torch.full((k,), 5.0)
    counts[0] = 50.0
    loss = build_loss(method, k, d, class_counts=counts, model_builder=lambda: Twin(k, d), num_samples=100,
                      **options).to(device).train()
    views = loss.n_views
    y = torch.randint(0, k - 1, (b,), generator=g).repeat(views).to(device)  # class k-1 absent
    feats = torch.randn(b * views, d, generator=g).to(device).requires_grad_()
    logits = torch.randn(b * views, k, generator=g).to(device).requires_grad_()
    extras = {"inputs": feats.detach()} if loss.needs_inputs else {}
    if loss.needs_indices:
        extras["indices"] = torch.randperm(100, generator=g)[:b].repeat(views).to(device)

    def run():
        for _ in range(steps):
            loss(logits, feats, y, **extras).total.backward()

    return loss, run


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_loss_is_capturable_exactly_when_its_step_reads_nothing_on_the_host(method, sync_free_paths, monkeypatch):
    """On the paths a CUDA device takes: ``capturable`` says whether the step has a host sync or a
    data-dependent shape (LDAM with DRW is the one loss refused for Python state instead)."""
    monkeypatch.setattr(torch.nn.functional, "one_hot", one_hot_as_on_cuda)
    loss, run = loss_steps(method)
    with SyncRecorder() as rec:
        run()
    assert loss.capturable == (not rec.counts), (loss.capturable, dict(rec.counts))
    assert loss.capturable == (method != "center")


def test_ldam_with_deferred_reweighting_is_not_capturable():
    assert build_loss("ldam", 3, 2, class_counts=torch.ones(3)).capturable
    assert not build_loss("ldam", 3, 2, class_counts=torch.ones(3), drw_epoch=5).capturable


# ---------------------------------------------------------------- progress bar (issue 19)


def train_command(digits, tmp_path):
    return [sys.executable, "-m", "mr2", "train", "--data", str(digits), "--out", str(tmp_path / "run"), "--device", "cpu",
            "--threads", "1", "--set", "data.name=digits", "--set", "model.name=mlp", "--set", "train.epochs=2"]


def test_progress_bar_with_time_remaining_on_a_terminal(digits, tmp_path):
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal of 24 × 120
    env = {**os.environ, "TQDM_MININTERVAL": "0"}  # draw on every step, however fast the machine
    proc = subprocess.Popen(train_command(digits, tmp_path), stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait() == 0
    out = b"".join(chunks).decode(errors="replace")
    # "epoch 1/2:  40%|████      | 10/25 [00:01<00:01,  9.1step/s]": steps done, elapsed<remaining
    bars = re.findall(r"epoch (\d)/2: +\d+%\|.*?\| *(\d+)/(\d+) \[\d\d:\d\d<(\d\d:\d\d), ", out)
    assert {b[0] for b in bars} == {"1", "2"}, out[-2000:]
    assert any(int(done) < int(total) for _, done, total, _ in bars)
    assert "epoch 2/2:" in out and "[train]" in out


def test_no_progress_bar_in_a_pipe(digits, tmp_path):
    res = subprocess.run(train_command(digits, tmp_path), capture_output=True, text=True,
                         env={**os.environ, "TQDM_MININTERVAL": "0"})
    assert res.returncode == 0, res.stderr
    assert "\r" not in res.stderr + res.stdout and "step/s" not in res.stderr + res.stdout
    assert "epoch 2/2:" in res.stdout
