"""Logit-margin cross-entropy (PAPER.md, "The loss", item 1; the paper's Eq. 1)."""

from __future__ import annotations

import torch

from ..precision import upcast


def logit_margin_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """ℓ_{γ,ce}(x, y) = −log softmax(z / γ_y)_y, averaged over the batch.

    The margin is a per-sample temperature: the whole logit vector z of a sample is divided
    by γ_y of its true class y. ``gamma`` (length K, positive) carries no gradient; with
    γ ≡ 1 this is plain cross-entropy.
    """
    logits = upcast(logits)
    scale = gamma.detach().to(logits.dtype)[targets]
    return MarginCrossEntropy.apply(logits, targets, scale)


class MarginCrossEntropy(torch.autograd.Function):
    """(1/B) Σ_i −log softmax(z_i / t_i)_{y_i} for per-sample temperatures t_i = γ_{y_i}, with
    ∂/∂z_i = (softmax(z_i / t_i) − e_{y_i}) / (B t_i).

    Written out so that a step allocates two (B, K) buffers (the log-probabilities and the
    gradient) instead of one per elementary op: on the CPU, fresh large buffers cost page
    faults that are a large part of this cheap computation.
    """

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        log_p = torch.log_softmax(logits / scale.unsqueeze(1), dim=1)
        ctx.save_for_backward(log_p, targets, scale)
        return -log_p.gather(1, targets.unsqueeze(1)).mean()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        log_p, targets, scale = ctx.saved_tensors
        g = log_p.exp()
        g.scatter_add_(1, targets.unsqueeze(1), -torch.ones_like(scale, dtype=g.dtype).unsqueeze(1))
        g.mul_((grad / log_p.shape[0] / scale).unsqueeze(1))
        return g, None, None
