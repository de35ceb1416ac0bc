"""Logit-adjusted loss (Menon, Jayasumana, Rawat, Jain, Veit, Kumar, "Long-tail learning via
logit adjustment", ICLR 2021)."""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from ..precision import upcast
from .base import ClassLoss, LossOutput
from .counts import class_counts_tensor


def log_priors(class_counts: torch.Tensor) -> torch.Tensor:
    """log π_k with π_k = n_k / Σ_j n_j, the training-set class priors."""
    return torch.log(class_counts / class_counts.sum())


def logit_adjusted_loss(logits: torch.Tensor, targets: torch.Tensor, log_prior: torch.Tensor, tau: float) -> torch.Tensor:
    """ℓ(y, z) = −log [ e^{z_y + τ log π_y} / Σ_k e^{z_k + τ log π_k} ], averaged over the batch.

    The adjustment is applied in the loss only (training); predictions use the plain z. With
    balanced counts τ log π_k is the same for every k, the softmax is unchanged, and the loss
    is plain cross-entropy.
    """
    z = upcast(logits)
    return F.cross_entropy(z + tau * log_prior.to(z.dtype), targets)


class LogitAdjustedLoss(ClassLoss):
    """Logit-adjusted softmax cross-entropy with temperature τ (the paper's τ = 1)."""

    def __init__(self, num_classes: int, feature_dim: int, class_counts: Sequence[float] | torch.Tensor, tau: float = 1.0) -> None:
        super().__init__()
        if not tau >= 0:
            raise ValueError(f"logit_adjust: tau must be >= 0, got tau={tau}")
        counts = class_counts_tensor(class_counts, num_classes, "logit_adjust")
        self.tau = float(tau)
        self.register_buffer("log_prior", log_priors(counts).float())

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        loss = logit_adjusted_loss(logits, targets, self.log_prior, self.tau)
        return LossOutput(loss, {"ce": loss.detach()})

    def class_summary(self) -> dict[str, torch.Tensor]:
        return {"log_prior": self.log_prior}
