"""Classifier heads: features -> logits.

Each head splits its work in two steps so that the loss sees the features the classifier sees:

- ``embed(f)``: the features the logits are computed from (identity for ``linear``, the
  L2-normalised f/‖f‖₂ for ``cosine``). ``Classifier.forward`` returns these as its features.
- ``classify(e)``: logits from embedded features.

``forward(f) = classify(embed(f))``, so ``model.head`` maps raw backbone features to logits.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

#: the default scale s of the cosine head (the ``cosine_scale`` of ``build_model``).
DEFAULT_COSINE_SCALE = 16.0


def cosine_logits(e: torch.Tensor, weight: torch.Tensor, scale: float) -> torch.Tensor:
    """Cosine logits z_k = s·cos θ_k = s·⟨e, w_k/‖w_k‖₂⟩ for unit-norm features e (B, D) and
    class weights w (K, D); every |z_k| ≤ s."""
    return scale * e @ F.normalize(weight, dim=1).t()


class LinearHead(nn.Module):
    """z = W f + b (``nn.Linear`` with its default initialisation); features are used as is."""

    def __init__(self, feature_dim: int, num_classes: int):
        super().__init__()
        self.fc = nn.Linear(feature_dim, num_classes)

    def embed(self, f: torch.Tensor) -> torch.Tensor:
        return f

    def classify(self, e: torch.Tensor) -> torch.Tensor:
        return self.fc(e)

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        return self.classify(self.embed(f))


class CosineHead(nn.Module):
    """z_k = s·cos θ_k between f/‖f‖₂ and w_k/‖w_k‖₂; no bias; the scale s is a fixed
    constant (not learned, not in the state_dict). Weights start as ``nn.Linear``'s (uniform ±1/√D); only their direction matters."""

    def __init__(self, feature_dim: int, num_classes: int, scale: float = DEFAULT_COSINE_SCALE):
        super().__init__()
        if not scale > 0:
            raise ValueError(f"cosine_scale must be > 0, got {scale!r}")
        bound = feature_dim**-0.5
        self.weight = nn.Parameter(torch.empty(num_classes, feature_dim).uniform_(-bound, bound))
        self.scale = float(scale)

    def embed(self, f: torch.Tensor) -> torch.Tensor:
        return F.normalize(f, dim=1)

    def classify(self, e: torch.Tensor) -> torch.Tensor:
        return cosine_logits(e, self.weight, self.scale)

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        return self.classify(self.embed(f))

    def extra_repr(self) -> str:
        return f"feature_dim={self.weight.shape[1]}, num_classes={self.weight.shape[0]}, scale={self.scale}"


HEADS = ("linear", "cosine")


def build_head(head: str, feature_dim: int, num_classes: int, cosine_scale: float) -> nn.Module:
    """The head named ``head`` (one of ``HEADS``)."""
    if head == "linear":
        return LinearHead(feature_dim, num_classes)
    if head == "cosine":
        return CosineHead(feature_dim, num_classes, cosine_scale)
    raise ValueError(f"unknown head {head!r}; known heads: {', '.join(HEADS)}")
