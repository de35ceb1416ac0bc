"""Proposition 1 (docs/method.md): the class-sensitive margin bound, term by term, for a trained model.

  R(f) ≤ (1/ln 2)·R̂^{γ,ce}(f) + (4√2·Λ·K/√N)·sqrt(Σ_k a_k/γ_k²) + c·sqrt(ln(1/δ)/N)

Assumptions made explicit here (the paper does not state them; each is a parameter):
- Λ (``weight_norm``): the bound on the classifier weights. Default ``norm="max_row"``, the
  largest per-class row norm max_k ‖w_k‖₂ (per-class constraints ‖w_k‖₂ ≤ Λ, the usual
  hypothesis class of multi-class margin bounds); ``norm="frobenius"`` (‖W‖_F ≥ max_k ‖w_k‖₂)
  gives a looser, also valid, Λ.
- A bias b is handled by the augmentation f = [W b]·[φ; 1]: Λ is computed from [W b] and every
  a_k grows by exactly 1 (‖[φ; 1]‖² = ‖φ‖² + 1). This needs a_k in L2 (p = 2), which is also
  what the bound uses.
- The O(1/√N) term is c·sqrt(ln(1/δ)/N) with c = 1 and δ = 0.05 by default (unknown constants).
- N is the number of training samples (``num_train``); by default the number of rows of the
  logits given for the empirical term.
- a_k are the class second moments ‖μ̂_k‖² + ‖ŝ_k‖² of the training features (L2), γ the margins
  the model was trained with (``trained_margins``: all ones for ERM, c̄ for uniform, Corollary 1
  for MR²).
- γ is treated as fixed before seeing the data. MR²'s γ is computed from the training features,
  which the bound as stated does not cover (a union bound over a grid of γ would add a small
  logarithmic term); we evaluate the bound as stated.
``bound_from_summary`` evaluates the bound from a model's summary numbers (R̂^{γ,ce}, a_k, γ, Λ,
N, test error: what ``mr2.evaluate`` records); ``evaluate_bound`` computes those from logits and
weights and calls it, so both share every term's function.
Inputs are plain tensors or arrays (torch, numpy or lists); everything is computed in float64
except the margin cross-entropy, which ``mr2.losses.margin_ce`` computes in float32.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from mr2.method.losses.margin_ce import logit_margin_cross_entropy
from mr2.method.margins import margin_objective, optimal_margins, uniform_margins
from mr2.method.stats import class_moments, lp_sq_norm

LN2 = math.log(2.0)
NORMS = ("max_row", "frobenius")
MARGIN_KINDS = ("erm", "uniform", "mr2")


def _tensor(x, name: str, dtype=torch.float64) -> torch.Tensor:
    try:
        return torch.as_tensor(np.array(x) if not isinstance(x, torch.Tensor) else x).detach().cpu().to(dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name}: cannot convert to a tensor ({err})") from err


# ---------------------------------------------------------------- pieces of the first term


def error_indicator(logits, targets) -> torch.Tensor:
    """1[argmax_j z_j ≠ y] per sample (float64, length N)."""
    z, y = _tensor(logits, "logits"), _tensor(targets, "targets", torch.long)
    return (z.argmax(dim=1) != y).to(torch.float64)


def zero_one_error(logits, targets) -> float:
    """Empirical 0-1 risk (1/N) Σ_i 1[argmax z_i ≠ y_i]."""
    return float(error_indicator(logits, targets).mean())


def empirical_margin_term(logits, targets, gamma) -> float:
    """(1/ln 2)·R̂^{γ,ce}(f), R̂^{γ,ce} = (1/N) Σ_i ℓ_{γ,ce}(x_i, y_i), ℓ_{γ,ce} = −log softmax(z/γ_y)_y.

    Upper-bounds the empirical 0-1 risk: a wrong argmax means p_y ≤ 1/2 for the logits z/γ_y
    (same argmax as z since γ_y > 0), so ℓ_{γ,ce} ≥ ln 2.
    """
    z, y, g = _tensor(logits, "logits"), _tensor(targets, "targets", torch.long), _tensor(gamma, "gamma")
    return margin_risk_term(float(logit_margin_cross_entropy(z, y, g)))


def margin_risk_term(margin_risk: float) -> float:
    """(1/ln 2)·R̂^{γ,ce}: the first term from the empirical margin risk R̂^{γ,ce} itself (e.g. the
    ``train_margin_ce`` that evaluation records)."""
    return float(margin_risk) / LN2


def margin_ce_gradient_bound(gamma_y):
    """‖∇_z ℓ_{γ,ce}(z, y)‖₂ ≤ √2/γ_y: the gradient is (softmax(z/γ_y) − e_y)/γ_y and
    ‖p − e_y‖₂² = (1 − p_y)² + Σ_{j≠y} p_j² ≤ 2(1 − p_y)² ≤ 2 (the loss's Lipschitz constant)."""
    return math.sqrt(2.0) / gamma_y


# ---------------------------------------------------------------- pieces of the complexity term


def class_variability(features, targets, num_classes: int, p: float = 2.0) -> torch.Tensor:
    """a_k = ‖μ̂_k‖_p² + ‖ŝ_k‖_p² from exact class moments (``mr2.stats.class_moments``, 1/n_k)."""
    n, m, v, _ = class_moments(_tensor(features, "features"), _tensor(targets, "targets", torch.long), num_classes, p)
    return (lp_sq_norm(m.double(), p) + v.double()).where(n > 0, torch.zeros_like(v, dtype=torch.float64))


def class_second_moment(features, targets, num_classes: int) -> torch.Tensor:
    """(1/n_k) Σ_{x∈D_k} ‖φ(x)‖₂², per class (0 for empty classes): with p = 2 it equals a_k."""
    phi, y = _tensor(features, "features"), _tensor(targets, "targets", torch.long)
    sums = torch.zeros(num_classes, dtype=torch.float64).index_add_(0, y, phi.pow(2).sum(1))
    counts = torch.zeros(num_classes, dtype=torch.float64).index_add_(0, y, torch.ones_like(y, dtype=torch.float64))
    return sums / counts.clamp_min(1)


def augmented_variability(a) -> torch.Tensor:
    """a_k of the bias-augmented features [φ; 1]: ‖[φ; 1]‖² = ‖φ‖² + 1, so a_k + 1 (L2)."""
    return _tensor(a, "a") + 1.0


def weight_norm(weight, norm: str = "max_row") -> float:
    """Λ: ``max_row`` = max_k ‖w_k‖₂ (default), ``frobenius`` = ‖W‖_F, for W of shape (K, D)."""
    w = _tensor(weight, "weight")
    if w.ndim != 2:
        raise ValueError(f"weight_norm: weight must be (K, D), got shape {tuple(w.shape)}")
    if norm == "max_row":
        return float(w.norm(dim=1).max())
    if norm == "frobenius":
        return float(w.norm())
    raise ValueError(f"weight_norm: unknown norm {norm!r}; choose one of {NORMS}")


def complexity_term(a, gamma, head_norm: float, num_train: int) -> float:
    """(4√2·Λ·K/√N)·sqrt(Σ_k a_k/γ_k²) (Σ_k a_k/γ_k² by ``mr2.margins.margin_objective``)."""
    a_t, g_t = _tensor(a, "a"), _tensor(gamma, "gamma")
    k = a_t.numel()
    return 4 * math.sqrt(2.0) * head_norm * k / math.sqrt(num_train) * math.sqrt(float(margin_objective(a_t, g_t)))


def confidence_term(num_train: int, c: float = 1.0, delta: float = 0.05) -> float:
    """c·sqrt(ln(1/δ)/N): the O(1/√N) term with an assumed constant c and confidence 1 − δ."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"confidence_term: delta must be in (0, 1), got {delta}")
    return c * math.sqrt(math.log(1.0 / delta) / num_train)


# ---------------------------------------------------------------- margins a model was trained with


def trained_margins(kind: str, a, c_bar: float = 1.0) -> torch.Tensor:
    """γ of a trained model: ``erm`` → 1 for all k, ``uniform`` → c̄, ``mr2`` → Corollary 1 on a."""
    a_t = _tensor(a, "a")
    if kind == "erm":
        return torch.ones_like(a_t)
    if kind == "uniform":
        return uniform_margins(a_t.numel(), c_bar, like=a_t)
    if kind == "mr2":
        return optimal_margins(a_t, c_bar)
    raise ValueError(f"trained_margins: unknown kind {kind!r}; choose one of {MARGIN_KINDS}")


def complexity_advantage(a, c_bar: float = 1.0) -> dict[str, float]:
    """Σ a_k/γ_k² with MR²'s γ (Corollary 1) and with uniform γ = c̄, both with mean margin c̄.

    ``ratio`` = sqrt(adaptive/uniform) is the factor by which MR²'s margins shrink the
    complexity term; it is ≤ 1 because Corollary 1's γ minimises the sum at that mean
    (equal to (Σ a^{1/3})³/(K² Σ a), ≤ 1 by the power-mean inequality). a from any source.
    """
    a_t = _tensor(a, "a")
    adaptive = float(margin_objective(a_t, trained_margins("mr2", a_t, c_bar)))
    uniform = float(margin_objective(a_t, trained_margins("uniform", a_t, c_bar)))
    return {"adaptive": adaptive, "uniform": uniform, "ratio": math.sqrt(adaptive / uniform) if uniform > 0 else 1.0}


# ---------------------------------------------------------------- the whole bound


@dataclass(frozen=True)
class BoundReport:
    """Each term of Proposition 1 for one model, the bound and how it compares with the test error."""

    empirical_term: float  # (1/ln 2)·R̂^{γ,ce}
    complexity_term: float  # (4√2·Λ·K/√N)·sqrt(Σ a/γ²)
    confidence_term: float  # c·sqrt(ln(1/δ)/N)
    bound: float  # the sum of the three
    test_error: float  # 0-1 error on the test logits
    holds: bool  # test_error ≤ bound
    tightness: float  # bound / test_error (inf when the test error is 0)
    head_norm: float  # Λ
    margin_sum: float  # Σ_k a_k/γ_k² (with a_k + 1 when a bias is augmented)
    num_classes: int
    num_train: int
    norm: str
    c: float
    delta: float

    def as_dict(self) -> dict:
        return asdict(self)


def bound_from_summary(
    margin_risk: float,
    a,
    gamma,
    head_norm: float,
    num_train: int,
    test_error: float,
    *,
    bias: bool = False,
    norm: str = "max_row",
    c: float = 1.0,
    delta: float = 0.05,
) -> BoundReport:
    """Proposition 1's right-hand side from a trained model's summary numbers (no logits needed).

    Args:
        margin_risk: R̂^{γ,ce}, the mean margin cross-entropy of the N training samples with ``gamma``.
        a: length-K class variabilities a_k (L2) of the training features the head classifies.
        gamma: length-K margins the model was trained with (``trained_margins``).
        head_norm: Λ of the head (``weight_norm``), computed on [W b] when the head has a bias.
        num_train: N. test_error: the test 0-1 error the bound is compared with.
        bias: the head has a bias; a_k become ``augmented_variability`` (a_k + 1).
        norm, c, delta: the assumptions of the module docstring (``norm`` is recorded only).
    """
    a_t, g_t = _tensor(a, "a"), _tensor(gamma, "gamma")
    k = a_t.numel()
    if g_t.shape != (k,) or not bool((g_t > 0).all()):
        raise ValueError(f"bound: gamma must be {k} positive margins, got {g_t.tolist()}")
    if bool((a_t < 0).any()) or not bool(a_t.isfinite().all()):
        raise ValueError(f"bound: a must be finite and non-negative, got {a_t.tolist()}")
    if norm not in NORMS:
        raise ValueError(f"bound: unknown norm {norm!r}; choose one of {NORMS}")
    if bias:
        a_t = augmented_variability(a_t)
    n = int(num_train)
    emp = margin_risk_term(margin_risk)
    comp = complexity_term(a_t, g_t, head_norm, n)
    conf = confidence_term(n, c, delta)
    bound = emp + comp + conf
    test_error = float(test_error)
    return BoundReport(
        empirical_term=emp,
        complexity_term=comp,
        confidence_term=conf,
        bound=bound,
        test_error=test_error,
        holds=test_error <= bound,
        tightness=bound / test_error if test_error > 0 else math.inf,
        head_norm=float(head_norm),
        margin_sum=float(margin_objective(a_t, g_t)),
        num_classes=k,
        num_train=n,
        norm=norm,
        c=c,
        delta=delta,
    )


def evaluate_bound(
    logits,
    targets,
    a,
    gamma,
    weight,
    test_logits,
    test_targets,
    *,
    bias=None,
    num_train: int | None = None,
    norm: str = "max_row",
    c: float = 1.0,
    delta: float = 0.05,
) -> BoundReport:
    """Evaluate Proposition 1's right-hand side for a trained linear head f = W·φ (+ b).

    Args:
        logits, targets: per-sample logits (N, K) and labels (N,) for the empirical term
            (the training set; held-out data gives an estimate of it instead).
        a: length-K class variabilities a_k (L2) of the training features (``class_variability``
            or the pipeline's per-class statistics).
        gamma: length-K margins the model was trained with (``trained_margins``).
        weight: classifier weight W, shape (K, D); ``bias``: optional b, shape (K,).
        test_logits, test_targets: for the test 0-1 error the bound is compared with.
        num_train: N; defaults to the number of rows of ``logits``.
        norm, c, delta: the assumptions of the module docstring.
    The terms are those of ``bound_from_summary``, fed with R̂^{γ,ce} and Λ computed here.
    """
    z, y = _tensor(logits, "logits"), _tensor(targets, "targets", torch.long)
    a_t, g_t, w = _tensor(a, "a"), _tensor(gamma, "gamma"), _tensor(weight, "weight")
    k = a_t.numel()
    if z.ndim != 2 or z.shape[1] != k or y.shape != (z.shape[0],):
        raise ValueError(f"evaluate_bound: logits {tuple(z.shape)} and targets {tuple(y.shape)} do not match K={k}")
    if g_t.shape != (k,) or not bool((g_t > 0).all()):
        raise ValueError(f"evaluate_bound: gamma must be {k} positive margins, got {g_t.tolist()}")
    if bool((a_t < 0).any()):
        raise ValueError(f"evaluate_bound: a must be non-negative, got {a_t.tolist()}")
    if w.ndim != 2 or w.shape[0] != k:
        raise ValueError(f"evaluate_bound: weight must be (K={k}, D), got {tuple(w.shape)}")
    if bias is not None:
        w = torch.cat([w, _tensor(bias, "bias").reshape(k, 1)], dim=1)
    n = int(num_train) if num_train is not None else int(z.shape[0])
    risk = float(logit_margin_cross_entropy(z, y, g_t))
    return bound_from_summary(risk, a_t, g_t, weight_norm(w, norm), n, zero_one_error(test_logits, test_targets),
                              bias=bias is not None, norm=norm, c=c, delta=delta)
