"""Group DRO with the classes as the groups (Sagawa, Koh, Hashimoto, Liang, "Distributionally
Robust Neural Networks for Group Shifts", ICLR 2020, Algorithm 1).

Objective: min_θ max_{q ∈ Δ_K} Σ_k q_k ℓ_k(θ), ℓ_k the mean cross-entropy of class k. Online
algorithm, one step per training batch: first the weights take an exponentiated-gradient
step, q_k ← q_k · exp(η ℓ_k), renormalised; then the model descends Σ_k q_k ℓ_k with the new q
(q carries no gradient). η = 0.01 (the step size of the authors' code). q lives in a buffer,
starts uniform, persists across epochs and is updated only in training mode.

Reading for classes absent from a batch (documented choice). Only the classes present in the
batch have a loss estimate: their weights take the step and are renormalised among
themselves to the mass they held, so an absent class keeps its weight exactly (the authors'
code instead gives it ℓ_k = 0, so the common renormalisation shrinks it). The batch loss is
the q-weighted mean over the present classes, Σ_{k∈P} q_k ℓ_k / Σ_{k∈P} q_k, so that its scale
does not depend on how many classes the batch holds. With η = 0, q stays uniform and the
loss is the class-balanced cross-entropy (mean over present classes of the class means),
which is ERM when the present classes have equal counts. The authors' generalisation
adjustment C/√n_g is not implemented (C = 0).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..precision import upcast
from .base import ClassLoss, LossOutput
from .classwise import class_mean_losses


def exponentiated_step(q: torch.Tensor, losses: torch.Tensor, present: torch.Tensor, eta: float) -> torch.Tensor:
    """q_k ← q_k e^{η ℓ_k} / Σ_{j∈P} q_j e^{η ℓ_j} · Σ_{j∈P} q_j for the present classes P, q_k
    unchanged for the others. Computed as a softmax of log q + η ℓ (no overflow)."""
    scores = (q.clamp_min(torch.finfo(q.dtype).tiny).log() + eta * losses).masked_fill(~present, float("-inf"))
    mass = (q * present).sum()
    stepped = torch.softmax(scores, dim=0) * mass
    return torch.where(present, stepped, q)


def weighted_present_mean(q: torch.Tensor, losses: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """Σ_{k∈P} q_k ℓ_k / Σ_{k∈P} q_k."""
    w = q * present
    return (w * losses).sum() / w.sum().clamp_min(torch.finfo(q.dtype).tiny)


class GroupDROLoss(ClassLoss):
    """Class-wise group DRO with step size ``eta`` (see module docstring)."""

    def __init__(self, num_classes: int, feature_dim: int, eta: float = 0.01) -> None:
        super().__init__()
        if not eta >= 0:
            raise ValueError(f"dro: eta must be >= 0, got eta={eta}")
        self.num_classes, self.eta = num_classes, float(eta)
        self.register_buffer("q", torch.full((num_classes,), 1.0 / num_classes))

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        z = upcast(logits)
        per_sample = F.cross_entropy(z, targets, reduction="none")
        losses, counts = class_mean_losses(per_sample, targets, self.num_classes)
        present = counts > 0
        if self.training:
            with torch.no_grad():
                self.q.copy_(exponentiated_step(self.q, losses.detach().to(self.q.dtype), present, self.eta))
        robust = weighted_present_mean(self.q.to(z.dtype), losses, present)
        return LossOutput(robust, {"robust": robust.detach(), "ce": per_sample.detach().mean()})

    def class_summary(self) -> dict[str, torch.Tensor]:
        return {"q": self.q}
