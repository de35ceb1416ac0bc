"""Build a loss by method name, rejecting options the method does not take.

Methods and their reading (formulas and references in each module's docstring):

- ``erm``: cross-entropy (erm.py), the reference: trained with the shared recipe, never tuned.
- ``erm_tuned``: the same cross-entropy as a method of its own, so that a tuning stage can search
  its training recipe (learning rate, weight decay) while ``erm`` stays the untuned reference.
- ``ce_temperature``: cross-entropy of z/τ, the control for MR²'s logit scale (option ``tau``, τ > 0,
  default 1: plain cross-entropy; temperature.py). Equals ``mr2_uniform`` with λ = 0 and c̄ = τ.
- ``mr2``: MR², logit-margin CE with Corollary 1 margins from running class statistics plus
  λ × the representation-margin loss (mr2.py).
- ``mr2_uniform``: MR² with γ_k = c̄ for every class (representation loss kept).
- ``mr2_no_rep``: MR² with λ = 0 (adaptive margins kept).
- ``mr2_release``: the loss as the authors' release computes it: per-batch L5 statistics in
  running buffers reset every epoch, s̄ forced to 0, rescaled representation term (release.py).
- ``focal``: focal loss, −(1 − p_y)^γ log p_y, γ = 2 (Lin et al. 2017; focal.py).
- ``ldam``: LDAM, CE of s·(z − Δ_y e_y) with Δ_k ∝ n_k^{−1/4}, max 0.5, s = 30 on cosine logits;
  optional DRW (Cao et al. 2019; ldam.py). Needs class counts.
- ``logit_adjust``: CE of z + τ log π, τ = 1 (Menon et al. 2021; logit_adjust.py). Needs
  class counts; equals ERM on balanced data.
- ``eql``: softmax equalization loss: negatives of classes with frequency < λ dropped from the
  softmax with probability γ (Tan et al. 2020; eql.py). Needs class counts; ERM on balanced
  data when 1/K ≥ λ.
- ``supcon``: CE + w·SupCon on a loss-owned projection head, τ = 0.1, two views; the authors'
  τ/base_temperature factor with ``base_temperature`` (Khosla et al. 2020; supcon.py).
- ``center``: CE + λ·½‖x − c_y‖² with learned centres, λ = 0.003, centres moved by the paper's
  α-rule through the optimiser, centres initialised by ``init`` (zeros) (Wen et al. 2016; center.py).
- ``dro``: group DRO over classes, online exponentiated weights, η = 0.01
  (Sagawa et al. 2020; group_dro.py).
- ``fairdro``: χ²-robust class reweighting, mean + √(2ρ)·std of class losses with q set each
  epoch, ρ = 0.3 (Jung et al. 2023 adapted to class groups; fairdro.py).
- ``jtt``: Just Train Twice (Liu et al. 2021), a two-stage method: stage 1 is an ERM run of
  ``stage1_epochs`` epochs; the training samples it misclassifies (the error set, computed on
  the training split) appear ``upweight`` times in every epoch of stage 2, whose loss is
  cross-entropy. The stages are separate pipeline steps (mr2/engine/jtt.py); the loss built here is
  stage 2's cross-entropy, its options are read by the pipeline. T = 1 epoch (the shortest
  published, CelebA) and λ_up = 6 (the smallest published, MultiNLI/CivilComments) because our
  runs are short; the authors tune both per dataset on worst-group validation accuracy.
- ``lff``: Learning from Failure (Nam et al. 2020): a biased model trained with generalised
  CE (q = 0.7) and the evaluated model with CE weighted by the relative difficulty
  W = CE_B/(CE_B + CE_D) of per-sample EMA losses (α = 0.7), trained together (lff.py).
  Needs the engine to pass the batch inputs and sample indices, and a model builder.

Each method's options and their defaults are read from its loss class's constructor
(``signature_defaults``): a default lives in the loss class and nowhere else; configs list only
what they change, and every run's saved config has every option filled in.

Every builder is called as ``builder(num_classes, feature_dim, class_counts, **options)``;
methods in ``NEEDS_COUNTS`` use the counts, the others ignore them. Methods in
``NEEDS_MODEL`` also receive ``model_builder`` (a callable returning a fresh network that takes
the engine's inputs) and ``num_samples`` (the training-set size).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import torch
from torch import nn

from ...common.options import check_option_type
from .base import ClassLoss
from .center import CenterLoss
from .eql import EqualizationLoss
from .erm import CrossEntropy
from .fairdro import FairDROLoss
from .focal import FocalLoss
from .group_dro import GroupDROLoss
from .ldam import LDAMLoss
from .lff import LfFLoss
from .logit_adjust import LogitAdjustedLoss
from .mr2 import MR2Loss
from .release import ReleaseMR2Loss
from .supcon import SupConLoss
from .temperature import TemperatureCrossEntropy

#: methods whose loss is defined by the training-set class counts (``class_counts`` required).
NEEDS_COUNTS = frozenset({"ldam", "logit_adjust", "eql"})
#: methods whose loss owns a second network (``model_builder`` and ``num_samples`` required).
NEEDS_MODEL = frozenset({"lff"})

#: methods whose class statistics take a summing all-reduce over data-parallel ranks
#: (``build_loss(..., reduce=mr2.engine.distributed.all_reduce_sum)``; see ``mr2.method.stats.ClassStats``).
REDUCIBLE = frozenset({"mr2", "mr2_uniform", "mr2_no_rep"})


def _mr2(margin: str, fixed: dict[str, Any]) -> Callable[..., ClassLoss]:
    def build(num_classes: int, feature_dim: int, class_counts: Any, reduce=None, **opts: Any) -> ClassLoss:
        return MR2Loss(num_classes, feature_dim, margin=margin, reduce=reduce, **{**opts, **fixed})

    return build


def _plain(cls: type[ClassLoss]) -> Callable[..., ClassLoss]:
    def build(num_classes: int, feature_dim: int, class_counts: Any, **opts: Any) -> ClassLoss:
        return cls(num_classes, feature_dim, **opts)

    return build


def _counted(cls: type[ClassLoss]) -> Callable[..., ClassLoss]:
    def build(num_classes: int, feature_dim: int, class_counts: Any, **opts: Any) -> ClassLoss:
        return cls(num_classes, feature_dim, class_counts, **opts)

    return build


def _cross_entropy(num_classes: int, feature_dim: int, class_counts: Any) -> ClassLoss:
    return CrossEntropy()


def _jtt(num_classes: int, feature_dim: int, class_counts: Any, stage1_epochs: int = 1, upweight: int = 6) -> ClassLoss:
    """Stage 2 of JTT trains with cross-entropy; the options are checked here and used by the
    engine (the stage-1 run's length, the error set's up-sampling factor; ``mr2.engine.jtt``).
    T = 1 epoch and λ_up = 6 (see the module docstring). Both are integers (``check_option_type``)."""
    for name, value in (("stage1_epochs", stage1_epochs), ("upweight", upweight)):
        if value < 1:
            raise ValueError(f"jtt: {name} must be an integer >= 1, got {name}={value!r}")
    return CrossEntropy()


def _lff(num_classes: int, feature_dim: int, class_counts: Any, model_builder: Any = None,
         num_samples: Any = None, **opts: Any) -> ClassLoss:
    return LfFLoss(num_classes, model_builder, num_samples, **opts)


#: constructor arguments that are the problem's or the engine's, not a method's options
NOT_OPTIONS = frozenset({"self", "num_classes", "feature_dim", "class_counts", "margin", "reduce", "model_builder",
                         "num_samples"})


def signature_defaults(fn: Callable[..., Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The options of a loss and their defaults, read from its constructor's signature: every default
    lives in the loss class (or, for JTT, its builder here) and only there."""
    params = inspect.signature(fn).parameters.items()
    return {name: p.default for name, p in params
            if name not in NOT_OPTIONS and name not in drop and p.default is not inspect.Parameter.empty}


# name -> (builder, {option: default}, {option: value the method fixes})
METHODS: dict[str, tuple[Callable[..., ClassLoss], dict[str, Any], dict[str, Any]]] = {
    "erm": (_cross_entropy, {}, {}),
    "erm_tuned": (_cross_entropy, {}, {}),
    "ce_temperature": (_plain(TemperatureCrossEntropy), signature_defaults(TemperatureCrossEntropy), {}),
    "mr2": (_mr2("adaptive", {}), signature_defaults(MR2Loss), {}),
    "mr2_uniform": (_mr2("uniform", {}), signature_defaults(MR2Loss), {}),
    "mr2_no_rep": (_mr2("adaptive", {"lam": 0.0}), signature_defaults(MR2Loss, drop=("lam",)), {"lam": 0.0}),
    "mr2_release": (_plain(ReleaseMR2Loss), signature_defaults(ReleaseMR2Loss), {}),
    "focal": (_plain(FocalLoss), signature_defaults(FocalLoss), {}),
    "ldam": (_counted(LDAMLoss), signature_defaults(LDAMLoss), {}),
    "logit_adjust": (_counted(LogitAdjustedLoss), signature_defaults(LogitAdjustedLoss), {}),
    "eql": (_counted(EqualizationLoss), signature_defaults(EqualizationLoss), {}),
    "supcon": (_plain(SupConLoss), signature_defaults(SupConLoss), {}),
    "center": (_plain(CenterLoss), signature_defaults(CenterLoss), {}),
    "dro": (_plain(GroupDROLoss), signature_defaults(GroupDROLoss), {}),
    "fairdro": (_plain(FairDROLoss), signature_defaults(FairDROLoss), {}),
    "jtt": (_jtt, signature_defaults(_jtt), {}),
    "lff": (_lff, signature_defaults(LfFLoss), {}),
}


def method_options(method: str) -> dict[str, Any]:
    """The options ``method`` accepts, with their defaults."""
    _check_method(method)
    return dict(METHODS[method][1])


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known methods: {', '.join(sorted(METHODS))}")


def resolve_options(method: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults of ``method`` overridden by ``options``; an option the method does not take
    (e.g. ``lam`` for ``erm`` or ``mr2_no_rep``) or of the wrong kind (``lam: true``,
    ``lam: "0.1"``; ``check_option_type``) is an error that names it."""
    _check_method(method)
    _, defaults, fixed = METHODS[method]
    if not isinstance(options or {}, dict):
        raise ValueError(f"method {method!r}: options must be a mapping of option names to values, got {options!r}")
    options = dict(options or {})
    for key, value in options.items():
        if key in fixed:
            raise ValueError(f"method {method!r} fixes {key}={fixed[key]!r}; do not set option {key!r} (use 'mr2' to vary it)")
        if key not in defaults:
            accepted = ", ".join(sorted(defaults)) or "none"
            raise ValueError(f"method {method!r} does not take option {key!r}; accepted options: {accepted}")
        check_option_type(f"method {method!r}", key, value, defaults[key])
    return {**defaults, **options}


def build_loss(
    method: str,
    num_classes: int,
    feature_dim: int,
    class_counts: Sequence[float] | torch.Tensor | None = None,
    reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
    *,
    model_builder: Callable[[], torch.nn.Module] | None = None,
    num_samples: int | None = None,
    **options: Any,
) -> ClassLoss:
    """Build the loss of ``method`` for K = ``num_classes`` and features of width ``feature_dim``.

    ``class_counts`` (length K, the training-set count of each class) is required by the
    methods in ``NEEDS_COUNTS`` (a clear error otherwise) and ignored by the others, so the
    engine can always pass it. Likewise ``model_builder`` (a callable returning a fresh network
    that takes the engine's batch inputs) and ``num_samples`` (the training-set size) are required
    by the methods in ``NEEDS_MODEL`` and ignored by the others. ``options`` override the method's defaults (see the module
    docstring and ``method_options``); unknown options and invalid values raise a
    ``ValueError`` naming the option. ``reduce`` (methods in ``REDUCIBLE`` only) makes the
    class statistics those of the batches of all data-parallel ranks together.
    """
    resolved = resolve_options(method, options)  # missing or bad counts: the loss's own check (class_counts_tensor)
    builder = METHODS[method][0]
    if method in NEEDS_MODEL:
        if model_builder is None or num_samples is None:
            raise ValueError(
                f"method {method!r} owns a second network: build_loss({method!r}, ..., model_builder=<callable "
                "returning a fresh model>, num_samples=<training-set size>)"
            )
        resolved = {**resolved, "model_builder": model_builder, "num_samples": num_samples}
    if reduce is not None:
        if method not in REDUCIBLE:
            raise ValueError(f"method {method!r} takes no 'reduce' (a summing all-reduce of class statistics); "
                             f"only {', '.join(sorted(REDUCIBLE))} do")
        return builder(num_classes, feature_dim, class_counts, reduce=reduce, **resolved)
    return builder(num_classes, feature_dim, class_counts, **resolved)


class _StandIn(nn.Module):
    """A two-class linear network returning (logits, features), standing in for the engine's model
    when a loss that owns a second network (LfF) is built only to check its options."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.fc(x), x


def check_options(method: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Names *and values* of ``method``'s options, checked without data: the loss is built for a
    tiny stand-in problem (K = 2, D = 2), so a bad value (a negative λ, c̄ = 0) fails here, before
    any job runs, with the loss's own message. Returns the resolved options."""
    resolved = resolve_options(method, options)
    build_loss(method, 2, 2, class_counts=torch.ones(2), model_builder=_StandIn, num_samples=2, **(options or {}))
    return resolved
