"""ERM: plain cross-entropy, the reference method of every comparison."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..precision import upcast
from .base import ClassLoss, LossOutput


class CrossEntropy(ClassLoss):
    """ℓ_ce(x, y) = −log softmax(z)_y, averaged over the batch."""

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        ce = F.cross_entropy(upcast(logits), targets)
        return LossOutput(ce, {"ce": ce.detach()})
