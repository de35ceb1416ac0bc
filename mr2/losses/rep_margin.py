"""Representation-margin loss (PAPER.md, "The loss", item 2)."""

from __future__ import annotations

import torch

from ..precision import upcast


def pairwise_sq_dists(features: torch.Tensor) -> torch.Tensor:
    """Squared L2 distances ‖φ_i − φ_j‖² of all pairs, (B, B).

    Features are centred on the batch mean first (distances are translation invariant), which
    keeps the Gram-matrix form ‖a‖² + ‖b‖² − 2a·b accurate for large-norm features. No square
    root is taken, so the gradient is finite also at zero distance.
    """
    x = features - features.mean(dim=0, keepdim=True)
    sq = x.pow(2).sum(1)
    return (sq.unsqueeze(1) + sq.unsqueeze(0) - 2.0 * x @ x.T).clamp_min(0)


def representation_margin_loss(features: torch.Tensor, targets: torch.Tensor, s_bar: torch.Tensor) -> torch.Tensor:
    """(1/B) Σ_i ℓ_s̄(x_i, y_i), with
    ℓ_s̄(x, y) = ln[ 1 + Σ_{x⁺ ∈ D_y \\ {x}} exp( ‖φ(x) − φ(x⁺)‖² − 2s̄ ) ].

    D_y is the same-class part of the batch, self-pairs excluded. Computed as a log-sum-exp
    over the row [0, d_ij − 2s̄ for the positives j] so that it never overflows; a sample with
    no same-class partner contributes ln 1 = 0 but still counts in the average over the batch
    (the objective's 1/N). ``s_bar`` carries no gradient.
    """
    x = upcast(features)
    b = x.shape[0]
    d = pairwise_sq_dists(x) - 2.0 * s_bar.detach().to(x.dtype)
    same = targets.unsqueeze(0) == targets.unsqueeze(1)
    same.fill_diagonal_(False)
    d = d.masked_fill(~same, float("-inf"))
    row = torch.cat([torch.zeros(b, 1, device=x.device, dtype=x.dtype), d], dim=1)
    return torch.logsumexp(row, dim=1).mean()
