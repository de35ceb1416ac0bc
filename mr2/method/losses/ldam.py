"""LDAM loss (Cao, Wei, Gaidon, Arechiga, Ma, "Learning Imbalanced Datasets with
Label-Distribution-Aware Margin Loss", NeurIPS 2019), with its optional DRW schedule.

What the logits are: LDAM is defined on cosine logits, z_k = cos θ_k between the normalised
feature and the normalised class weight (the paper's normalised last layer), to which it
subtracts the margin of the true class and then applies the scale s = 30. This loss applies
s itself, so it expects unscaled cosines: use the cosine head with ``cosine_scale = 1``. With a
plain linear head the margins are in raw logit units and s should be set to 1 (the formula is
the same, only the units of z change).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from ..precision import upcast
from .base import ClassLoss, LossOutput
from .counts import class_counts_tensor


def ldam_margins(class_counts: torch.Tensor, max_margin: float) -> torch.Tensor:
    """Δ_k = C / n_k^{1/4}, with C chosen so that the largest margin (the rarest class's)
    is ``max_margin``: Δ_k = max_margin · (min_j n_j / n_k)^{1/4}. Equal counts give
    Δ_k = max_margin for every class."""
    inv = class_counts.pow(-0.25)
    return max_margin * inv / inv.max()


def effective_number_weights(class_counts: torch.Tensor, beta: float) -> torch.Tensor:
    """DRW class weights (Cui et al. 2019, used by LDAM-DRW): w_k ∝ (1 − β) / (1 − β^{n_k}),
    normalised so that Σ_k w_k = K. Equal counts give w_k = 1."""
    w = (1.0 - beta) / (1.0 - torch.pow(torch.as_tensor(beta, dtype=class_counts.dtype), class_counts))
    return w * class_counts.numel() / w.sum()


def ldam_loss(logits: torch.Tensor, targets: torch.Tensor, margins: torch.Tensor, s: float, weight: torch.Tensor | None = None) -> torch.Tensor:
    """ℓ = −log [ e^{s(z_y − Δ_y)} / ( e^{s(z_y − Δ_y)} + Σ_{j≠y} e^{s z_j} ) ], averaged over
    the batch (a weighted average Σ w_{y_i} ℓ_i / Σ w_{y_i} when class ``weight`` is given)."""
    z = upcast(logits)
    shift = F.one_hot(targets, z.shape[1]).to(z.dtype) * margins.to(z.dtype)[targets].unsqueeze(1)
    w = None if weight is None else weight.to(z.dtype)
    return F.cross_entropy(s * (z - shift), targets, weight=w)


class LDAMLoss(ClassLoss):
    """LDAM with margins from the training-set class counts.

    Args:
        class_counts: n_k, every class > 0.
        max_margin: the largest margin (the paper's 0.5).
        s: logit scale (the paper's 30, on cosine logits; see module docstring).
        drw_epoch: deferred re-weighting starts at this epoch (the engine's 0-based epoch
            index; the paper's CIFAR schedule uses 160 of 200); ``None`` (default): off.
        drw_beta: β of the effective-number weights (the paper's 0.9999).
    """

    def __init__(
        self,
        num_classes: int,
        feature_dim: int,
        class_counts: Sequence[float] | torch.Tensor,
        max_margin: float = 0.5,
        s: float = 30.0,
        drw_epoch: int | None = None,
        drw_beta: float = 0.9999,
    ) -> None:
        super().__init__()
        if not max_margin >= 0:
            raise ValueError(f"ldam: max_margin must be >= 0, got max_margin={max_margin}")
        if not s > 0:
            raise ValueError(f"ldam: s must be > 0, got s={s}")
        if drw_epoch is not None and (isinstance(drw_epoch, bool) or not isinstance(drw_epoch, int) or drw_epoch < 0):
            raise ValueError(f"ldam: drw_epoch must be None or an integer >= 0, got drw_epoch={drw_epoch!r}")
        if not 0.0 <= drw_beta < 1.0:
            raise ValueError(f"ldam: drw_beta must be in [0, 1), got drw_beta={drw_beta}")
        counts = class_counts_tensor(class_counts, num_classes, "ldam")
        self.s, self.drw_epoch = float(s), drw_epoch
        self.register_buffer("margins", ldam_margins(counts, float(max_margin)).float())
        self.register_buffer("drw_weights", effective_number_weights(counts, float(drw_beta)).float())
        self.drw_active = False
        self.capturable = drw_epoch is None  # DRW switches the loss's branch at an epoch; a graph replays one branch

    def on_epoch_start(self, epoch: int) -> None:
        """Switch the DRW class weights on from epoch ``drw_epoch`` on (never when it is None)."""
        self.drw_active = self.drw_epoch is not None and epoch >= self.drw_epoch

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        weight = self.drw_weights if self.drw_active else None
        loss = ldam_loss(logits, targets, self.margins, self.s, weight)
        return LossOutput(loss, {"ldam": loss.detach()})

    def class_summary(self) -> dict[str, torch.Tensor]:
        """Per-class margins Δ_k and the class weights in use (1 before DRW starts)."""
        weight = self.drw_weights if self.drw_active else torch.ones_like(self.drw_weights)
        return {"margin": self.margins, "class_weight": weight}
