"""Build a loss by method name, rejecting options the method does not take."""

from __future__ import annotations

from typing import Any, Callable

from .base import ClassLoss
from .erm import CrossEntropy
from .mr2 import MR2Loss

# Every default is visible here. c̄ and λ are the release's values (c̄ = 1: the release's
# margins have mean 1; λ = 0.1); p = 2 follows the paper for unnormalised features; the
# momentum is per sample of a class (see mr2.stats). The paper publishes none of them.
MR2_DEFAULTS: dict[str, Any] = {"c_bar": 1.0, "lam": 0.1, "p": 2.0, "momentum": 0.99}


def _mr2(margin: str, fixed: dict[str, Any]) -> Callable[..., ClassLoss]:
    def build(num_classes: int, feature_dim: int, **opts: Any) -> ClassLoss:
        return MR2Loss(num_classes, feature_dim, margin=margin, **{**opts, **fixed})

    return build


# name -> (builder, {option: default}, {option: value the method fixes})
METHODS: dict[str, tuple[Callable[..., ClassLoss], dict[str, Any], dict[str, Any]]] = {
    "erm": (lambda num_classes, feature_dim: CrossEntropy(), {}, {}),
    "mr2": (_mr2("adaptive", {}), dict(MR2_DEFAULTS), {}),
    "mr2_uniform": (_mr2("uniform", {}), dict(MR2_DEFAULTS), {}),
    "mr2_no_rep": (_mr2("adaptive", {"lam": 0.0}), {k: v for k, v in MR2_DEFAULTS.items() if k != "lam"}, {"lam": 0.0}),
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
    (e.g. ``lam`` for ``erm`` or ``mr2_no_rep``) is an error that names it."""
    _check_method(method)
    _, defaults, fixed = METHODS[method]
    options = dict(options or {})
    for key in options:
        if key in fixed:
            raise ValueError(f"method {method!r} fixes {key}={fixed[key]!r}; do not set option {key!r} (use 'mr2' to vary it)")
        if key not in defaults:
            accepted = ", ".join(sorted(defaults)) or "none"
            raise ValueError(f"method {method!r} does not take option {key!r}; accepted options: {accepted}")
    return {**defaults, **options}


def build_loss(method: str, num_classes: int, feature_dim: int, **options: Any) -> ClassLoss:
    """Build the loss of ``method`` for K = ``num_classes`` and features of width ``feature_dim``.

    Methods: ``erm`` (cross-entropy), ``mr2`` (adaptive margins + representation loss),
    ``mr2_uniform`` (γ_k = c̄, representation loss kept), ``mr2_no_rep`` (adaptive margins,
    λ = 0). Options: ``c_bar``, ``lam``, ``p``, ``momentum`` (see ``MR2_DEFAULTS``).
    """
    resolved = resolve_options(method, options)
    builder = METHODS[method][0]
    return builder(num_classes, feature_dim, **resolved)
