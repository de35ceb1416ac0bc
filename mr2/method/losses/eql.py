"""Softmax equalization loss (Tan, Wang, Li, Li, Ouyang, Yin, Yan, "Equalization Loss for
Long-Tailed Object Recognition", CVPR 2020, the softmax form of its image-classification
section).

Reading. The detection loss's "foreground" indicator E(r) has no counterpart in
classification; the paper replaces it by a Bernoulli random variable β. Each negative class
k ≠ y whose training-set frequency f_k = n_k / N is below the threshold λ (a "tail" class) is
dropped from the softmax denominator with probability γ; the true class is never dropped.
β is drawn independently for every (sample, class) entry. In eval mode nothing is dropped
(the validation loss is plain cross-entropy, deterministic).

Defaults: γ = 0.9 and λ = 5·10⁻³ (the values used for CIFAR-100-LT by the BagofTricks-LT
toolbox; the paper tunes λ per dataset). On balanced data every f_k = 1/K: when 1/K ≥ λ no
class is a tail class and the loss is exactly cross-entropy (CIFAR-100, the five
fine-grained sets with the default λ); when 1/K < λ (ImageNet, K = 1000) every class is a tail
class and the loss is a sampled softmax that keeps each negative with probability 1 − γ.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from ..precision import upcast
from .base import ClassLoss, LossOutput
from .counts import class_counts_tensor


def tail_classes(class_counts: torch.Tensor, lam: float) -> torch.Tensor:
    """T_λ(f_k) = 1[f_k < λ] with f_k = n_k / Σ_j n_j."""
    return class_counts / class_counts.sum() < lam


def softmax_equalization_loss(logits: torch.Tensor, targets: torch.Tensor, drop: torch.Tensor) -> torch.Tensor:
    """ℓ = −log [ e^{z_y} / Σ_k w_k e^{z_k} ], w_k = 1 − β_k T_λ(f_k)(1 − y_k), averaged.

    ``drop`` (B, K, boolean) is β_k T_λ(f_k)(1 − y_k), i.e. w = 0 where it is true; the dropped
    logits are set to −∞, which removes them from the log-sum-exp.
    """
    z = upcast(logits)
    return F.cross_entropy(z.masked_fill(drop, float("-inf")), targets)


class EqualizationLoss(ClassLoss):
    """Softmax EQL; ``lam`` is the frequency threshold λ, ``gamma`` the drop probability γ."""

    def __init__(
        self,
        num_classes: int,
        feature_dim: int,
        class_counts: Sequence[float] | torch.Tensor,
        lam: float = 5e-3,
        gamma: float = 0.9,
    ) -> None:
        super().__init__()
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"eql: lam (the frequency threshold λ) must be in [0, 1], got lam={lam}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"eql: gamma (the drop probability) must be in [0, 1], got gamma={gamma}")
        counts = class_counts_tensor(class_counts, num_classes, "eql", positive=False)
        self.gamma = float(gamma)
        self.register_buffer("tail", tail_classes(counts, float(lam)))

    def drop_mask(self, targets: torch.Tensor, num_classes: int) -> torch.Tensor:
        """β T_λ(f) (1 − y) for the batch, β ~ Bernoulli(γ) per entry; all false in eval mode."""
        b = targets.shape[0]
        if not self.training or self.gamma == 0.0:
            return torch.zeros(b, num_classes, dtype=torch.bool, device=targets.device)
        beta = torch.rand(b, num_classes, device=targets.device) < self.gamma
        not_target = ~F.one_hot(targets, num_classes).bool()
        return beta & self.tail.unsqueeze(0) & not_target

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        loss = softmax_equalization_loss(logits, targets, self.drop_mask(targets, logits.shape[1]))
        return LossOutput(loss, {"eql": loss.detach()})

    def class_summary(self) -> dict[str, torch.Tensor]:
        return {"tail": self.tail.float()}
