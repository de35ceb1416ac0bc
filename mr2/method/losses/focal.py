"""Focal loss (Lin, Goyal, Girshick, He, Dollár, "Focal Loss for Dense Object Detection",
ICCV 2017)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..precision import upcast
from .base import ClassLoss, LossOutput


def focal_loss(logits: torch.Tensor, targets: torch.Tensor, gamma: float) -> torch.Tensor:
    """FL(p_y) = −(1 − p_y)^γ · log p_y with p_y = softmax(z)_y, averaged over the batch.

    The paper's α-balancing factor is a foreground/background weight of its binary detection
    setting; for K-way classification it is taken as α = 1. γ = 0 is cross-entropy. 1 − p_y
    is computed as −expm1(log p_y) (accurate when p_y → 1) and floored at the smallest
    positive float so that (1 − p_y)^γ has a finite gradient also for 0 < γ < 1.
    """
    logp = F.log_softmax(upcast(logits), dim=1).gather(1, targets.unsqueeze(1)).squeeze(1)
    one_minus_p = (-torch.expm1(logp)).clamp_min(torch.finfo(logp.dtype).tiny)
    return -(one_minus_p.pow(gamma) * logp).mean()


class FocalLoss(ClassLoss):
    """Focal loss with focusing parameter γ (the paper's default γ = 2)."""

    def __init__(self, num_classes: int, feature_dim: int, gamma: float = 2.0) -> None:
        super().__init__()
        if not gamma >= 0:
            raise ValueError(f"focal: gamma must be >= 0, got gamma={gamma}")
        self.gamma = float(gamma)

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        loss = focal_loss(logits, targets, self.gamma)
        return LossOutput(loss, {"focal": loss.detach()})
