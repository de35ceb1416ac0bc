"""Per-class mean of per-sample losses, the quantity the robust (DRO-type) methods reweight."""

from __future__ import annotations

import torch


def class_mean_losses(per_sample: torch.Tensor, targets: torch.Tensor, num_classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ℓ_k = (1/n_k) Σ_{i: y_i = k} ℓ_i and n_k, for every class k of the batch.

    Vectorised with ``index_add`` (no loop over classes) and differentiable in ``per_sample``.
    Classes absent from the batch (n_k = 0) get ℓ_k = 0.
    """
    sums = per_sample.new_zeros(num_classes).index_add(0, targets, per_sample)
    counts = per_sample.new_zeros(num_classes).index_add(0, targets, torch.ones_like(per_sample.detach()))
    return sums / counts.clamp_min(1), counts
