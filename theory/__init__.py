"""Theory beside the stack: docs/method.md's Corollary 1 (``corollary``: sympy derivation, optimality
checks with negative controls, numeric cross-check) and Proposition 1 (``bound``: the bound's
terms evaluated for a trained model). These import only mr2's method layer (margins, stats,
losses.margin_ce). ``theory.trained`` checks Corollary 1 on trained models from their per-class table
alone (no Λ: a snapshot that kept no runs table will do). ``theory.pipeline`` evaluates the bound on
the pipeline's trained models from their tidy tables (``python -m theory bound``); ``theory.answers``
puts its numbers and ``theory.trained``'s in words, ``theory.plots`` draws them. These three use the
results layer's helpers for their tables, figures, files and sentences (``tests/test_layers.py`` holds
both rules)."""

from .bound import (
    BoundReport,
    augmented_variability,
    bound_from_summary,
    class_second_moment,
    class_variability,
    complexity_advantage,
    complexity_term,
    confidence_term,
    empirical_margin_term,
    error_indicator,
    evaluate_bound,
    margin_ce_gradient_bound,
    margin_risk_term,
    trained_margins,
    weight_norm,
    zero_one_error,
)
from .corollary import (
    GenericOptimalityReport,
    LagrangeSolution,
    OptimalityReport,
    cube_root_margins,
    hessian_positive_definite,
    is_optimal,
    is_optimal_generic,
    minimum_value,
    power_margin_generic,
    power_margins,
    solve_lagrangian,
    solve_margins_numerically,
)

__all__ = [
    "BoundReport",
    "augmented_variability",
    "bound_from_summary",
    "GenericOptimalityReport",
    "LagrangeSolution",
    "OptimalityReport",
    "class_second_moment",
    "class_variability",
    "complexity_advantage",
    "complexity_term",
    "confidence_term",
    "cube_root_margins",
    "empirical_margin_term",
    "error_indicator",
    "evaluate_bound",
    "hessian_positive_definite",
    "is_optimal",
    "is_optimal_generic",
    "margin_ce_gradient_bound",
    "margin_risk_term",
    "minimum_value",
    "power_margin_generic",
    "power_margins",
    "solve_lagrangian",
    "solve_margins_numerically",
    "trained_margins",
    "weight_norm",
    "zero_one_error",
]
