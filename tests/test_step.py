"""Which losses can run in a CUDA graph (``ClassLoss.capturable``), checked on the paths a CUDA
device takes: on the CPU the ops that would synchronise with the host on CUDA are recorded."""

import pytest
import torch
from torch import nn
from test_speed import SyncRecorder

from mr2.method.losses import build_loss
from mr2.method.losses.factory import METHODS


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
