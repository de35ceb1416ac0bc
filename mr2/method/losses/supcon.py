"""Supervised contrastive loss (Khosla, Teterwak, Wang, Sarna, Tian, Isola, Maschinot, Liu,
Krishnan, "Supervised Contrastive Learning", NeurIPS 2020), trained jointly with
cross-entropy.

Reading. The paper pre-trains with SupCon and then trains a linear classifier; as a one-stage
baseline the two are summed: total = CE + w · SupCon with w = 1 by default (our choice: the
joint weight is not published). SupCon acts on z = P(φ(x)) / ‖P(φ(x))‖₂, where P is a
projection MLP owned by the loss (Linear(D, D) → ReLU → Linear(D, 128), the paper's hidden
layer and 128-d output with the hidden width set to D); the engine optimises its parameters
with the model's. The temperature is the paper's τ = 0.1.

Against the authors' code (HobbitLong/SupContrast, ``losses.py``). Their loss multiplies the
formula by τ / base_temperature, with base_temperature = 0.07 by default; their SupCon runs use
τ = 0.1, so their SupCon term is 0.1/0.07 ≈ 1.43 times the paper's formula. We keep the paper's
formula (factor 1, ``base_temperature`` unset: base_temperature = τ), because the factor is an
undocumented rescaling that only changes the effective weight w. ``base_temperature: 0.07`` gives
the authors' loss exactly (tested against a transcription of their formula). Their
``+ 1e-9`` inside the log of the denominator and the row-max shift are numerical details that do
not change the value beyond 1e-9; an anchor without any positive makes their loss NaN, ours
leaves it out (it cannot happen with two views).

Views. ``n_views = 2``: the engine passes two augmented views concatenated along the batch
(rows 0..B−1 view 1, rows B..2B−1 view 2, targets repeated); CE is averaged over all 2B rows.
Positives are defined by label only, so the same code handles a single view: then the
positives of an anchor are the other same-class samples of the batch. Anchors without any
positive (a class with one sample and one view) are left out of the SupCon average; a batch
without any positive pair has SupCon = 0.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..precision import upcast
from .base import ClassLoss, LossOutput


def supcon_loss(z: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    """L^sup_out = mean over anchors i with P(i) ≠ ∅ of
    −(1/|P(i)|) Σ_{p∈P(i)} log [ exp(z_i·z_p/τ) / Σ_{a≠i} exp(z_i·z_a/τ) ],
    with P(i) the other samples of i's class and z unit-norm rows."""
    n = z.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=z.device)
    sim = (z @ z.T / temperature).masked_fill(eye, float("-inf"))
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    pos = (targets.unsqueeze(0) == targets.unsqueeze(1)) & ~eye
    n_pos = pos.sum(1)
    mean_log_prob_pos = torch.where(pos, log_prob, torch.zeros_like(log_prob)).sum(1) / n_pos.clamp_min(1)
    has_pos = (n_pos > 0).to(z.dtype)
    return -(mean_log_prob_pos * has_pos).sum() / has_pos.sum().clamp_min(1)


class SupConLoss(ClassLoss):
    """CE + w · SupCon on projected, normalised features (see module docstring).

    Args:
        weight: w, the weight of SupCon (1).
        temperature: τ (0.1).
        proj_dim: output width of the projection head (128).
        base_temperature: the authors' rescaling: the SupCon term is multiplied by
            τ / base_temperature; unset (None) means base_temperature = τ, the paper's formula.
            The authors' code uses 0.07.
    """

    n_views = 2

    def __init__(self, num_classes: int, feature_dim: int, weight: float = 1.0, temperature: float = 0.1, proj_dim: int = 128,
                 base_temperature: float | None = None) -> None:
        super().__init__()
        if not weight >= 0:
            raise ValueError(f"supcon: weight must be >= 0, got weight={weight}")
        if not temperature > 0:
            raise ValueError(f"supcon: temperature must be > 0, got temperature={temperature}")
        if isinstance(proj_dim, bool) or not isinstance(proj_dim, int) or proj_dim < 1:
            raise ValueError(f"supcon: proj_dim must be an integer >= 1, got proj_dim={proj_dim!r}")
        if base_temperature is not None and (isinstance(base_temperature, bool) or not isinstance(base_temperature, (int, float))
                                             or not 0 < base_temperature < math.inf):
            raise ValueError(f"supcon: base_temperature must be a number > 0 or unset, got base_temperature={base_temperature!r}")
        self.weight, self.temperature = float(weight), float(temperature)
        #: τ / base_temperature, the authors' factor on the SupCon term (1 when unset)
        self.scale = 1.0 if base_temperature is None else self.temperature / float(base_temperature)
        self.head = nn.Sequential(nn.Linear(feature_dim, feature_dim), nn.ReLU(), nn.Linear(feature_dim, proj_dim))

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """z = P(φ) / ‖P(φ)‖₂."""
        return F.normalize(upcast(self.head(features)), dim=1)

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        ce = F.cross_entropy(upcast(logits), targets)
        con = self.scale * supcon_loss(self.project(features), targets, self.temperature)
        return LossOutput(ce + self.weight * con, {"ce": ce.detach(), "supcon": con.detach()})
