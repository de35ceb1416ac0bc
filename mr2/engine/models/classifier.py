"""The model every engine step uses: a backbone and a head, returning logits and features.

Modes (chosen by the training code):

- from scratch / fine-tuning: all parameters train (the default after ``build_model``);
- linear probing: ``freeze_backbone(model)`` — backbone parameters stop requiring gradients and
  the backbone stays in eval mode (BatchNorm statistics and dropout frozen) even under
  ``model.train()``; only ``model.head`` learns.
"""

from __future__ import annotations

import torch
from torch import nn


class Classifier(nn.Module):
    """``forward(x) -> (logits, features)``.

    ``backbone``: x -> f, the unnormalised penultimate features (B, ``feature_dim``).
    ``head``: f -> logits (B, K); it applies the L2 normalisation itself for the cosine head.
    The returned ``features`` are ``head.embed(f)``: f for the linear head, f/‖f‖₂ for the cosine
    head, i.e. what the classifier sees (so the loss statistics are taken on the same features).
    """

    def __init__(self, backbone: nn.Module, head: nn.Module, feature_dim: int):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.feature_dim = int(feature_dim)
        self.backbone_frozen = False

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.head.embed(self.backbone(x))
        return self.head.classify(features), features

    def train(self, mode: bool = True) -> "Classifier":
        super().train(mode)
        if self.backbone_frozen:
            self.backbone.eval()
        return self


def freeze_backbone(model: Classifier) -> Classifier:
    """Linear probing: freeze ``model.backbone`` (no gradients, kept in eval mode); the head stays
    trainable. Returns ``model``."""
    for p in model.backbone.parameters():
        p.requires_grad_(False)
    model.backbone_frozen = True
    model.backbone.eval()
    return model


def unfreeze_backbone(model: Classifier) -> Classifier:
    """Undo ``freeze_backbone`` (fine-tuning after probing): every parameter trains again and the
    backbone follows ``model.train()``/``model.eval()``. Returns ``model``."""
    for p in model.backbone.parameters():
        p.requires_grad_(True)
    model.backbone_frozen = False
    model.backbone.train(model.training)
    return model


def as_trained_net(model: nn.Module, mode: str) -> nn.Module:
    """The network the training step feeds: ``model`` itself, or in linear probing (``mode``)
    its head on cached backbone features, the backbone frozen. Used for a loss's own second
    network (LfF's biased model) so that it takes the same inputs as the model."""
    return HeadOnly(freeze_backbone(model)) if mode == "linear_probe" else model


class HeadOnly(nn.Module):
    """The classifier head of a model, applied to cached backbone features (linear probing)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        e = self.model.head.embed(features)
        return self.model.head.classify(e), e
