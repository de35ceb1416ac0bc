"""Logit-margin cross-entropy (PAPER.md, "The loss", item 1; the paper's Eq. 1)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..precision import upcast


def logit_margin_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """ℓ_{γ,ce}(x, y) = −log softmax(z / γ_y)_y, averaged over the batch.

    The margin is a per-sample temperature: the whole logit vector z of a sample is divided
    by γ_y of its true class y. ``gamma`` (length K, positive) carries no gradient; with
    γ ≡ 1 this is plain cross-entropy.
    """
    logits = upcast(logits)
    scale = gamma.detach().to(logits.dtype)[targets].unsqueeze(1)
    return F.cross_entropy(logits / scale, targets)
