"""Training-set class counts n_k, for the methods that are defined by them (LDAM, logit
adjustment, EQL)."""

from __future__ import annotations

from typing import Sequence

import torch


def class_counts_tensor(
    class_counts: Sequence[float] | torch.Tensor | None,
    num_classes: int,
    method: str,
    positive: bool = True,
) -> torch.Tensor:
    """``class_counts`` as a float64 tensor of length K, checked.

    Raises a ``ValueError`` naming ``method`` when the counts are missing, have the wrong
    length, are negative, or (``positive=True``, for formulas with n_k^{-1/4} or log n_k)
    contain a zero; the message lists the offending class indices.
    """
    if class_counts is None:
        raise ValueError(
            f"method {method!r} needs class_counts (the training-set count of each class): "
            f"build_loss({method!r}, num_classes, feature_dim, class_counts=...)"
        )
    counts = torch.as_tensor(class_counts, dtype=torch.float64).flatten().cpu()
    if counts.numel() != num_classes:
        raise ValueError(f"method {method!r}: class_counts has {counts.numel()} entries, expected num_classes={num_classes}")
    if not torch.isfinite(counts).all() or (counts < 0).any():
        bad = torch.nonzero(~torch.isfinite(counts) | (counts < 0)).flatten().tolist()
        raise ValueError(f"method {method!r}: class_counts must be finite and >= 0; bad classes {bad}")
    if positive and (counts == 0).any():
        empty = torch.nonzero(counts == 0).flatten().tolist()
        raise ValueError(f"method {method!r}: class_counts must be > 0 for every class; classes {empty} have no samples")
    return counts
