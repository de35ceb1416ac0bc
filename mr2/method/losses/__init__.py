"""Losses: the MR² objective, its ablations, the baselines, the release's loss, and the
factory that builds them by name (see ``factory`` for the list of methods)."""

from .base import ClassLoss, LossOutput
from .center import CenterLoss
from .eql import EqualizationLoss
from .erm import CrossEntropy
from .factory import METHODS, NEEDS_COUNTS, NEEDS_MODEL, build_loss, method_options, resolve_options
from .fairdro import FairDROLoss
from .focal import FocalLoss
from .group_dro import GroupDROLoss
from .ldam import LDAMLoss
from .lff import LfFLoss
from .logit_adjust import LogitAdjustedLoss
from .margin_ce import logit_margin_cross_entropy
from .mr2 import MR2Loss
from .release import ReleaseMR2Loss
from .rep_margin import representation_margin_loss
from .supcon import SupConLoss
from .temperature import TemperatureCrossEntropy

__all__ = [
    "CenterLoss",
    "ClassLoss",
    "CrossEntropy",
    "EqualizationLoss",
    "FairDROLoss",
    "FocalLoss",
    "GroupDROLoss",
    "LDAMLoss",
    "LfFLoss",
    "LogitAdjustedLoss",
    "LossOutput",
    "METHODS",
    "MR2Loss",
    "NEEDS_COUNTS",
    "NEEDS_MODEL",
    "ReleaseMR2Loss",
    "SupConLoss",
    "TemperatureCrossEntropy",
    "build_loss",
    "logit_margin_cross_entropy",
    "method_options",
    "representation_margin_loss",
    "resolve_options",
]
