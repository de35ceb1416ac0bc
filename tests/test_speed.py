"""Speed settings: no host sync in the MR² step, torch.compile fallback, channels_last, fused steps.

CUDA's own check (``torch.cuda.set_sync_debug_mode``) needs a GPU. On CPU the ops that force a
device-to-host synchronisation on CUDA are recorded at the dispatcher instead: reading a
tensor's value on the host (``.item()``, ``bool(t)``, ``if t:`` -> ``_local_scalar_dense``),
``nonzero``, boolean-mask indexing, ``masked_select``, ``unique``, ``bincount``.
"""

from collections import Counter

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from mr2.engine import accel
from mr2.method import hostsync
from mr2.engine import config as run_config
from mr2.method.losses import build_loss
from mr2.engine.train import Runner, train

SYNCING = {"aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.bincount", "aten._unique2",
           "aten.unique_dim", "aten.unique_consecutive", "aten.repeat_interleave"}


class SyncRecorder(TorchDispatchMode):
    """Counts the ops that synchronise host and device on CUDA (see module docstring)."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket._qualified_op_name.replace("::", ".")
        if name in SYNCING:
            self.counts[name] += 1
        if name in ("aten.index", "aten.index_put", "aten.index_put_"):
            indices = args[1] if len(args) > 1 else []
            if any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in indices):
                self.counts["boolean-mask indexing"] += 1
        return func(*args, **(kwargs or {}))


def test_recorder_sees_the_syncs_it_looks_for():
    x = torch.randn(6)
    with SyncRecorder() as rec:
        x.sum().item()
        x[x > 0]
        torch.nonzero(x)
    assert rec.counts["aten._local_scalar_dense"] == 1 and rec.counts["boolean-mask indexing"] == 1
    assert rec.counts["aten.nonzero"] >= 1


def test_host_reads_are_free_only_on_the_cpu():
    assert hostsync.host_reads_are_free(torch.device("cpu"))
    assert not hostsync.host_reads_are_free(torch.device("cuda"))
    assert not hostsync.host_reads_are_free(torch.device("cuda", 1))


@pytest.mark.parametrize("method", ["mr2", "mr2_uniform", "mr2_no_rep", "erm"])
@pytest.mark.parametrize("k", [7, 40])  # B >= K and B < K take different statistics slots
def test_mr2_loss_step_has_no_host_sync(method, k, gen, sync_free_paths):
    """On the paths a CUDA device takes (``sync_free_paths``); the CPU reads labels on the host."""
    d = 5
    loss = build_loss(method, k, d).train()
    feats = torch.randn(32, d, generator=gen, requires_grad=True)
    logits = torch.randn(32, k, generator=gen, requires_grad=True)
    y = torch.randint(0, k - 1, (32,), generator=gen)  # class k-1 absent
    y[0] = 0
    with SyncRecorder() as rec:
        for _ in range(2):  # the second step merges into existing statistics
            out = loss(logits, feats, y)
            out.total.backward()
            loss.class_summary()
    assert not rec.counts, dict(rec.counts)


def quick_cfg(**train_keys):
    update = {"data": {"name": "digits"}, "model": {"name": "mlp", "options": {"hidden": 32}}, "method": {"name": "mr2"},
              "device": "cpu", "threads": 1, "train": {"epochs": 1, "warmup_epochs": 0, **train_keys}}
    return run_config.deep_merge(run_config.DEFAULTS, update)


def test_host_syncs_of_a_training_epoch_do_not_grow_with_its_steps(digits, tmp_path, sync_free_paths):
    """The engine reads its sums once per epoch; a per-step sync would scale with the steps
    (on the paths a CUDA device takes)."""
    counts, steps = [], []
    for batch in (256, 64):
        runner = Runner(quick_cfg(batch_size=batch), digits, tmp_path, log=lambda *_: None)
        with SyncRecorder() as rec:
            runner.train_epoch(0)
        counts.append(rec.counts)
        steps.append(runner.steps_per_epoch)
    assert steps[1] >= 4 * steps[0] >= 16, steps
    assert counts[0] == counts[1], counts
    assert set(counts[0]) <= {"aten._local_scalar_dense"}, counts[0]


class Boom(RuntimeError):
    pass


def failing_at_call(module):
    def call(*args, **kwargs):
        raise Boom("inductor: no C++ compiler (simulated)")

    return call


def test_compile_failing_at_first_call_falls_back_with_a_message(monkeypatch):
    monkeypatch.setattr(torch, "compile", failing_at_call)
    messages = []
    net = nn.Linear(3, 2)
    wrapped = accel.CompiledOrEager(net, messages.append)
    x = torch.randn(4, 3)
    assert torch.equal(wrapped(x), net(x))
    assert len(messages) == 1 and "torch.compile failed" in messages[0] and "Boom" in messages[0]
    assert "train.compile=false" in messages[0]
    wrapped(x)
    assert len(messages) == 1  # reported once, eager from then on
    assert [n for n, _ in wrapped.named_parameters()] == ["module.weight", "module.bias"]


def test_compile_failing_at_compile_time_falls_back(monkeypatch):
    def refuse(module):
        raise Boom("unsupported platform")

    monkeypatch.setattr(torch, "compile", refuse)
    messages = []
    wrapped = accel.CompiledOrEager(nn.Linear(3, 2), messages.append)
    assert wrapped(torch.randn(2, 3)).shape == (2, 2) and "unsupported platform" in messages[0]


def test_a_genuine_model_error_is_not_hidden_by_the_fallback(monkeypatch):
    monkeypatch.setattr(torch, "compile", failing_at_call)
    wrapped = accel.CompiledOrEager(nn.Linear(3, 2), lambda *_: None)
    with pytest.raises(RuntimeError, match="mat1 and mat2"):
        wrapped(torch.randn(2, 5))  # wrong width: the eager call raises the real error


def test_training_with_a_failing_compile_completes_and_says_so(digits, tmp_path, monkeypatch):
    monkeypatch.setattr(torch, "compile", failing_at_call)
    messages = []
    train(quick_cfg(batch_size=128, compile=True), digits, tmp_path / "run", log=messages.append)
    assert (tmp_path / "run" / "model.pt").is_file()
    assert sum("torch.compile failed" in m for m in messages) == 1


def test_channels_last_only_for_images_on_cuda():
    assert accel.uses_channels_last(torch.device("cuda"), (3, 32, 32))
    assert not accel.uses_channels_last(torch.device("cpu"), (3, 32, 32))
    assert not accel.uses_channels_last(torch.device("cuda"), (1, 40))
    x = torch.randn(2, 3, 4, 5)
    y = accel.to_channels_last(x)
    assert torch.equal(x, y) and y.is_contiguous(memory_format=torch.channels_last)


def test_fused_optimiser_steps_on_cuda_only():
    assert accel.optimizer_options(torch.optim.SGD, torch.device("cpu")) == {}
    assert accel.optimizer_options(torch.optim.AdamW, torch.device("cuda")) == {"fused": True}
    assert accel.optimizer_options(torch.optim.SGD, torch.device("cuda")) == {"fused": True}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_mr2_step_runs_under_sync_debug_mode_error():
    loss = build_loss("mr2", 7, 5).cuda().train()
    feats = torch.randn(32, 5, device="cuda", requires_grad=True)
    logits = torch.randn(32, 7, device="cuda", requires_grad=True)
    y = torch.randint(0, 7, (32,), device="cuda")
    torch.cuda.set_sync_debug_mode("error")
    try:
        loss(logits, feats, y).total.backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")
