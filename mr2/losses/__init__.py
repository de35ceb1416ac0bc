"""Losses: the MR² objective, its ablations, the baselines, and the factory that builds them."""

from .base import ClassLoss, LossOutput
from .factory import METHODS, build_loss, method_options, resolve_options
from .margin_ce import logit_margin_cross_entropy
from .mr2 import MR2Loss
from .rep_margin import representation_margin_loss

__all__ = [
    "ClassLoss",
    "LossOutput",
    "METHODS",
    "MR2Loss",
    "build_loss",
    "logit_margin_cross_entropy",
    "method_options",
    "representation_margin_loss",
    "resolve_options",
]
