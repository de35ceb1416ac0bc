"""Logit-margin cross-entropy (docs/method.md, "The loss", item 1; the paper's Eq. 1)."""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

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

    Written out so that a step allocates one (B, K) buffer instead of one per elementary op:
    the forward's exponentials e^{u} (``shifted_exps``) become the gradient in place in the
    backward. On the CPU, fresh large buffers cost page faults that are a large part of this
    cheap computation. With u = (z − max z)/t: −log softmax(z/t)_y = log Σ_k e^{u_k} − u_y,
    exact and free of overflow. A second backward through a retained graph, which finds the
    buffer handed out, recomputes it from the saved logits.
    """

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        exps, u_y = shifted_exps(logits, targets, scale)
        total = exps.sum(dim=1)
        ctx.save_for_backward(logits, targets, scale, total)
        ctx.exps = exps  # not saved_tensors: the backward consumes it in place
        return (total.log() - u_y).mean()

    @staticmethod
    @once_differentiable  # first derivatives only: a double backward raises instead of being wrong
    def backward(ctx, grad: torch.Tensor):
        logits, targets, scale, total = ctx.saved_tensors
        exps = ctx.exps if ctx.exps is not None else shifted_exps(logits, targets, scale)[0]
        ctx.exps = None
        w = grad / logits.shape[0] / scale  # ∂/∂z_i = w_i (e^{u_i} / Σ e^{u_i} − e_{y_i})
        g = exps.mul_((w / total).unsqueeze(1))
        g.scatter_add_(1, targets.unsqueeze(1), -w.unsqueeze(1))
        return g, None, None


def shifted_exps(logits: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(e^{u}, u_y) for u = (z − max_k z_k)/t per row (every u ≤ 0): one fresh (B, K) buffer."""
    # subtract, then scale in place: two vectorised passes, about 3× faster on the CPU (B = 512,
    # K = 1000) than one broadcasting addcmul
    u = logits.sub(logits.amax(dim=1, keepdim=True)).mul_(scale.reciprocal().unsqueeze(1))
    u_y = u.gather(1, targets.unsqueeze(1)).squeeze(1)
    return u.exp_(), u_y
