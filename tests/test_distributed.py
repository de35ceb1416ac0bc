"""Data-parallel training on CPU with two gloo processes equals one process seeing the whole batch."""

import json
import os
import socket
import subprocess
import sys

import pandas as pd
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from mr2.engine import config as run_config
from mr2.engine import distributed
from mr2.engine.data import prepare_dataset
from mr2.method.losses import build_loss
from mr2.method.stats import ClassStats

K, D, B, W = 5, 6, 24, 2
STAT_BUFFERS = ("count", "mean", "sq_dev", "sq_dev_l2")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tiny(nn.Module):
    """features = tanh(x A), logits = features C: returns (logits, features) like the engine's models."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, D)
        self.c = nn.Linear(D, K)

    def forward(self, x):
        f = torch.tanh(self.a(x))
        return self.c(f), f


def batches():
    """Two global batches; class 4 is absent from the first, class 0 has a single sample in the second."""
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(B, 4, generator=g, dtype=torch.float64) * 3 for _ in range(2)]
    y1 = torch.randint(0, 4, (B,), generator=g)
    y2 = torch.randint(1, K, (B,), generator=g)
    y2[7] = 0
    return list(zip(xs, [y1, y2]))


def one_process(method):
    """Reference: one process, the whole batch. Returns per step (loss, grads, stats, gamma)."""
    torch.manual_seed(0)
    model = Tiny().double()
    loss_fn = build_loss(method, K, D).double()
    out = []
    for x, y in batches():
        model.zero_grad()
        logits, feats = model(x)
        total = loss_fn(logits, feats, y).total
        total.backward()
        out.append(record(total, model, loss_fn))
    return out


def record(total, model, loss_fn):
    summary = {k: v.detach().clone() for k, v in loss_fn.class_summary().items()}
    return {"loss": total.detach().clone(), "grads": [p.grad.clone() for p in model.parameters()], "summary": summary}


METHODS = ("mr2", "mr2_uniform")


def worker(rank, port, path):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=W)
    torch.set_num_threads(1)
    for method in METHODS:
        run_rank(rank, path, method)
    dist.destroy_process_group()


def run_rank(rank, path, method):
    world = distributed.World(rank, W)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Tiny().double())
    loss_fn = build_loss(method, K, D).double()
    # the reduce hook: statistics of per-rank batches all-reduced, without gathering the batch
    reduced = ClassStats(K, D, reduce=distributed.all_reduce_sum).double().train()
    gathered_steps, reduced_states = [], []
    for x, y in batches():
        mine = distributed.shard(torch.arange(B), B, world)
        model.zero_grad()
        logits, feats = model(x[mine])
        reduced.update(feats.detach(), y[mine])
        reduced_states.append({k: getattr(reduced, k).clone() for k in STAT_BUFFERS})
        logits, feats = distributed.gather_batch(logits), distributed.gather_batch(feats)
        total = loss_fn(logits, feats, distributed.gather_batch(y[mine])).total
        total.backward()
        gathered_steps.append(record(total, model.module, loss_fn))
    torch.save({"steps": gathered_steps, "reduced": reduced_states}, path / f"{method}-rank{rank}.pt")


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    path = tmp_path_factory.mktemp("ranks")
    mp.spawn(worker, args=(free_port(), path), nprocs=W, join=True)
    return path


@pytest.mark.parametrize("method", METHODS)
def test_two_gloo_processes_equal_one_process_seeing_the_whole_batch(two_ranks, method):
    ref = one_process(method)
    ref_stats = ClassStats(K, D).double().train()
    for r in range(W):
        got = torch.load(two_ranks / f"{method}-rank{r}.pt", weights_only=False)
        for step, (want, have) in enumerate(zip(ref, got["steps"])):
            assert torch.allclose(have["loss"], want["loss"], rtol=1e-12, atol=1e-12), (r, step)
            for name, value in want["summary"].items():  # a_k, γ_k, ‖μ̂_k‖², ‖ŝ_k‖², s̄
                assert torch.allclose(have["summary"][name], value, rtol=1e-10, atol=1e-12), (r, step, name)
            for gw, gh in zip(want["grads"], have["grads"]):  # DDP-averaged = whole-batch gradient
                assert torch.allclose(gh, gw, rtol=1e-9, atol=1e-12), (r, step)
    torch.manual_seed(0)
    model = Tiny().double()
    for step, (x, y) in enumerate(batches()):
        ref_stats.update(model(x)[1].detach(), y)
        for r in range(W):
            have = torch.load(two_ranks / f"{method}-rank{r}.pt", weights_only=False)["reduced"][step]
            for k in STAT_BUFFERS:
                assert torch.allclose(have[k], getattr(ref_stats, k), rtol=1e-12, atol=1e-12), (r, step, k)


def test_shard_takes_each_ranks_slice_of_every_global_batch():
    order = torch.randperm(22, generator=torch.Generator().manual_seed(0))
    parts = [distributed.shard(order, 8, distributed.World(r, 2)) for r in range(2)]
    assert all(len(p) == 8 for p in parts)  # 2 global batches of 8, the last 6 dropped
    for t in range(2):
        glued = torch.cat([p[4 * t : 4 * t + 4] for p in parts])
        assert torch.equal(glued, order[8 * t : 8 * t + 8])
    with pytest.raises(ValueError, match="batch_size"):
        distributed.shard(order, 7, distributed.World(0, 2))


def test_no_process_group_means_a_world_of_one():
    env = {k: os.environ.pop(k) for k in distributed.TORCHRUN_ENV if k in os.environ}
    try:
        world = distributed.init_from_env("cpu")
    finally:
        os.environ.update(env)
    assert (world.rank, world.size, world.is_main) == (0, 1, True)
    x = torch.arange(6.0).requires_grad_()
    assert distributed.gather_batch(x) is x and distributed.all_reduce_sum(x) is x


def test_torchrun_two_processes_train_like_one_and_write_once(tmp_path):
    """A 2-process run under torchrun (gloo) follows the 1-process run with the same global batch
    (MLP without BatchNorm, no augmentation: only float rounding differs) and rank 0 alone writes."""
    data = tmp_path / "digits.pt"
    prepare_dataset({"name": "digits", "val_fraction": 0.1}, data)
    update = {"data": {"name": "digits"}, "model": {"name": "mlp"}, "method": {"name": "mr2"}, "device": "cpu",
              "threads": 1, "train": {"epochs": 2, "batch_size": 64, "lr": 0.05, "warmup_epochs": 0.5, "augment": "none"}}
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(json.dumps(run_config.deep_merge(run_config.DEFAULTS, update)))
    args = ["train", "--config", str(cfg_file), "--data", str(data), "--out"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    two_cmd = distributed.launcher(2).replace("python", sys.executable, 1).split() + args + [str(tmp_path / "two")]
    assert "torch.distributed.run" in two_cmd
    two = subprocess.run(two_cmd, capture_output=True, text=True, env=env, timeout=300)
    assert two.returncode == 0, two.stdout[-2000:] + two.stderr[-3000:]
    one_cmd = distributed.launcher(1).replace("python", sys.executable, 1).split() + args + [str(tmp_path / "one")]
    one = subprocess.run(one_cmd, capture_output=True, text=True, env=env, timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    assert sum("epoch 2/2" in line for line in two.stdout.splitlines()) == 1  # rank 0 alone logs
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["config.yaml", "epochs.csv", "model.pt", "timings.csv"]
    a = pd.read_csv(tmp_path / "two" / "epochs.csv")
    b = pd.read_csv(tmp_path / "one" / "epochs.csv")
    assert len(a) == len(b) and not a.duplicated(["epoch", "class", "name"]).any()
    pd.testing.assert_frame_equal(a.drop(columns="value"), b.drop(columns="value"))
    assert (a["value"] - b["value"]).abs().max() < 1e-4 * (1 + b["value"].abs().max())


def bn_net():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(4, 2))


def test_sync_bn_converts_batchnorm_for_several_cuda_processes_only():
    two = distributed.World(rank=0, size=2)
    net = bn_net()
    keys = list(net.state_dict())
    assert distributed.sync_batch_norm(net, distributed.World(), torch.device("cuda"), True) is net  # world of one
    assert distributed.sync_batch_norm(net, two, torch.device("cuda"), False) is net  # option off
    synced = distributed.sync_batch_norm(bn_net(), two, torch.device("cuda"), True)  # converting needs no GPU
    assert isinstance(synced[1], torch.nn.SyncBatchNorm) and list(synced.state_dict()) == keys
    with pytest.raises(ValueError, match="train.sync_bn"):
        distributed.sync_batch_norm(bn_net(), two, torch.device("cpu"), True)


def test_boolean_config_keys_reject_other_values():
    bad = run_config.deep_merge(run_config.DEFAULTS, {"train": {"sync_bn": "yes"}})
    with pytest.raises(ValueError, match="train.sync_bn.*true or false"):
        run_config.validate(bad)
