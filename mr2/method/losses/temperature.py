"""Cross-entropy of temperature-scaled logits: the control that asks whether MR²'s gain is a tuned
logit scale. MR²'s margin divides the whole logit vector z by γ_y; with uniform margins γ_k = τ and
no representation term (``mr2_uniform`` with λ = 0, c̄ = τ) that is exactly this loss."""

from __future__ import annotations

import torch

from ..margins import uniform_margins
from .base import ClassLoss, LossOutput
from .margin_ce import logit_margin_cross_entropy


class TemperatureCrossEntropy(ClassLoss):
    """ℓ_τ(x, y) = −log softmax(z / τ)_y, averaged over the batch; τ = 1 is plain cross-entropy.

    Computed by MR²'s own logit-margin cross-entropy (``logit_margin_cross_entropy``) with the
    uniform margins γ_k = τ (``uniform_margins``), so it equals ``mr2_uniform`` with λ = 0 and c̄ = τ
    to the last bit and shares its code. τ > 0 (a temperature; τ < 1 sharpens the softmax, as
    MR²'s c̄ < 1 does). The margins are a non-persistent buffer: they follow the loss to its device
    and are not part of its saved state.
    """

    def __init__(self, num_classes: int, feature_dim: int, tau: float = 1.0) -> None:
        super().__init__()
        if not tau > 0:
            raise ValueError(f"ce_temperature: tau must be > 0 (the logits are divided by it), got tau={tau}")
        self.tau = float(tau)
        self.register_buffer("gamma", uniform_margins(num_classes, self.tau), persistent=False)

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        ce = logit_margin_cross_entropy(logits, targets, self.gamma)
        return LossOutput(ce, {"ce": ce.detach()})
