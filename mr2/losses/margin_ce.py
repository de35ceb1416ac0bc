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

    Written out so that a step allocates two (B, K) buffers (the probabilities, then the
    gradient) instead of one per elementary op: on the CPU, fresh large buffers cost page
    faults that are a large part of this cheap computation. With u = z/t − max(z/t):
    −log softmax(z/t)_y = log Σ_k e^{u_k} − u_y, exact and free of overflow.
    """

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        probs = logits / scale.unsqueeze(1)  # becomes u, then e^u, then softmax, in place
        probs.sub_(probs.amax(dim=1, keepdim=True))
        u_y = probs.gather(1, targets.unsqueeze(1)).squeeze(1)
        total = probs.exp_().sum(dim=1)
        probs.div_(total.unsqueeze(1))
        ctx.save_for_backward(probs, targets, scale)
        return (total.log() - u_y).mean()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        probs, targets, scale = ctx.saved_tensors
        g = probs.clone()  # not in place: a retained graph may run backward again
        g.scatter_add_(1, targets.unsqueeze(1), -torch.ones_like(scale, dtype=g.dtype).unsqueeze(1))
        g.mul_((grad / probs.shape[0] / scale).unsqueeze(1))
        return g, None, None
