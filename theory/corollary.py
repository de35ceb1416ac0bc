"""Corollary 1 (docs/method.md): the optimal margins, derived and checked with sympy and scipy.

Problem: minimise f(γ) = Σ_k a_k / γ_k² over γ > 0 subject to Σ_k γ_k = K·c̄ (a_k > 0, c̄ > 0).

Derivation (``solve_lagrangian`` does it for a concrete K, ``is_optimal_generic`` checks it for
a symbolic K):
  L(γ, ν) = Σ_k a_k/γ_k² + ν (Σ_k γ_k − K c̄)
  ∂L/∂γ_k = −2 a_k γ_k^{−3} + ν = 0   ⇒  ν = 2 a_k/γ_k³ > 0,  γ_k = (2 a_k/ν)^{1/3}
  Σ_k γ_k = K c̄                         ⇒  (2/ν)^{1/3} = K c̄ / Σ_j a_j^{1/3}
  ⇒ γ_k = c̄ K a_k^{1/3} / Σ_j a_j^{1/3},  min f = (Σ_k a_k^{1/3})³ / (K c̄)².
Uniqueness: f is separable with ∂²f/∂γ_k² = 6 a_k/γ_k⁴ > 0 and zero cross-derivatives, so its
Hessian is positive definite on γ > 0 and f is strictly convex there. A strictly convex function
on the convex feasible set {γ > 0, Σγ = K c̄} has at most one minimiser, and with an affine
constraint a stationary point of the Lagrangian of a convex objective is a global minimiser
(KKT conditions are sufficient). Hence the cube-root formula is the unique optimum.

A candidate margin formula is judged by ``is_optimal`` (concrete K, symbolic a_k) and
``is_optimal_generic`` (symbolic K): positivity, budget and stationarity (∂f/∂γ_k equal for all
k, i.e. a common Lagrange multiplier). The family ``power_margins`` (γ_k ∝ a_k^e) gives the true
formula at e = 1/3 and negative controls at e = 1/2, 1/4 and e = 0 (uniform margins).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np
import sympy as sp
from scipy.optimize import minimize

#: e in γ_k ∝ a_k^e for Corollary 1's optimum.
CUBE_ROOT = sp.Rational(1, 3)

# ---------------------------------------------------------------- formulas (sympy or numeric)


def _is_symbolic(a) -> bool:
    return any(isinstance(x, sp.Basic) for x in a)


def power_margins(a, c_bar, exponent=CUBE_ROOT):
    """γ_k = c̄ · K · a_k^e / Σ_j a_j^e  (mean margin c̄ for every exponent e).

    e = 1/3 is Corollary 1's optimum; e = 0 gives uniform margins γ_k = c̄. ``a`` is either a
    sequence of sympy expressions (returns a list of expressions) or numeric array-like
    (returns a float64 numpy array).
    """
    if _is_symbolic(a):
        powered = [x**exponent for x in a]
        total = sp.Add(*powered)
        return [c_bar * len(powered) * x / total for x in powered]
    arr = np.asarray(a, dtype=np.float64)
    powered = arr ** float(exponent)
    return c_bar * arr.size * powered / powered.sum()


def cube_root_margins(a, c_bar):
    """Corollary 1: γ_k = c̄ · K · a_k^{1/3} / Σ_j a_j^{1/3} (sympy or numeric, as ``power_margins``)."""
    return power_margins(a, c_bar, CUBE_ROOT)


def minimum_value(a, c_bar):
    """Corollary 1's minimum: min Σ_k a_k/γ_k² = (Σ_k a_k^{1/3})³ / (K c̄)² (sympy or numeric)."""
    if _is_symbolic(a):
        return sp.Add(*[x**CUBE_ROOT for x in a]) ** 3 / (len(a) * c_bar) ** 2
    arr = np.asarray(a, dtype=np.float64)
    return float(np.cbrt(arr).sum() ** 3 / (arr.size * c_bar) ** 2)


def objective(a: Sequence[sp.Expr], gamma: Sequence[sp.Expr]) -> sp.Expr:
    """Symbolic f(γ) = Σ_k a_k / γ_k² (the numeric twin is ``mr2.margins.margin_objective``)."""
    return sp.Add(*[ak / gk**2 for ak, gk in zip(a, gamma)])


def lagrangian(a, gamma, nu, c_bar) -> sp.Expr:
    """L(γ, ν) = Σ_k a_k/γ_k² + ν (Σ_k γ_k − K c̄)."""
    return objective(a, gamma) + nu * (sp.Add(*gamma) - len(gamma) * c_bar)


# ---------------------------------------------------------------- symbols


def symbols(num_classes: int):
    """Positive symbols (a_1..a_K, γ_1..γ_K, c̄) and the real multiplier ν for a concrete K."""
    if num_classes < 1:
        raise ValueError(f"symbols: num_classes must be >= 1, got {num_classes}")
    a = sp.symbols(f"a1:{num_classes + 1}", positive=True)
    gamma = sp.symbols(f"gamma1:{num_classes + 1}", positive=True)
    return a, gamma, sp.Symbol("c_bar", positive=True), sp.Symbol("nu", real=True)


# ---------------------------------------------------------------- derivation for a concrete K


@dataclass(frozen=True)
class LagrangeSolution:
    """The solution of the Lagrangian system for a concrete K (all sympy expressions)."""

    a: tuple
    c_bar: sp.Symbol
    gamma: tuple  # γ_k as functions of a and c̄
    nu: sp.Expr  # the multiplier at the optimum
    nu_positive: bool  # ν = 2 a_k/γ_k³ is positive whenever the stationarity holds
    minimum: sp.Expr  # f at the optimum


@lru_cache(maxsize=None)
def solve_lagrangian(num_classes: int) -> LagrangeSolution:
    """Solve ∂L/∂γ_k = 0, Σγ = K c̄ with ``sympy.solve`` for symbolic a_k > 0, c̄ > 0.

    Staged so sympy finishes in seconds (solving the joint system at once does not finish):
    1. ∂L/∂γ_1 = 0 solved for ν gives ν = 2 a_1/γ_1³, positive by sympy's assumptions, so ν > 0;
    2. each ∂L/∂γ_k = 0 solved for γ_k > 0 (with ν > 0) has exactly one root (2 a_k/ν)^{1/3};
    3. the budget, with those roots substituted, solved for ν > 0 has exactly one root.
    Every stage asserts that its root is unique, so the stationary point is unique.
    """
    a, gamma, c_bar, nu = symbols(num_classes)
    lag = lagrangian(a, gamma, nu, c_bar)
    nu_of_gamma = sp.solve(sp.diff(lag, gamma[0]), nu)
    if len(nu_of_gamma) != 1:
        raise RuntimeError(f"solve_lagrangian: expected one ν root, got {nu_of_gamma}")
    nu_positive = bool(nu_of_gamma[0].is_positive)
    nu_pos = sp.Symbol("nu", positive=True)
    roots = []
    for gk in gamma:
        sol = sp.solve(sp.diff(lag, gk).subs(nu, nu_pos), gk)
        if len(sol) != 1:
            raise RuntimeError(f"solve_lagrangian: expected one positive root for {gk}, got {sol}")
        roots.append(sol[0])
    budget = sp.diff(lag, nu).subs(dict(zip(gamma, roots)))
    nu_sol = sp.solve(budget, nu_pos)
    if len(nu_sol) != 1:
        raise RuntimeError(f"solve_lagrangian: expected one positive ν from the budget, got {nu_sol}")
    gamma_opt = tuple(sp.simplify(r.subs(nu_pos, nu_sol[0])) for r in roots)
    minimum = sp.simplify(objective(a, gamma_opt))
    return LagrangeSolution(a, c_bar, gamma_opt, nu_sol[0], nu_positive, minimum)


def hessian_positive_definite(num_classes: int) -> bool:
    """True iff the Hessian of f = Σ a_k/γ_k² is diagonal with entries 6 a_k/γ_k⁴ that sympy
    proves positive for a_k, γ_k > 0 (so f is strictly convex on γ > 0)."""
    a, gamma, _, _ = symbols(num_classes)
    hess = sp.hessian(objective(a, gamma), gamma)
    off_diagonal_zero = all(hess[i, j] == 0 for i in range(num_classes) for j in range(num_classes) if i != j)
    diagonal_positive = all(hess[i, i].is_positive is True for i in range(num_classes))
    return off_diagonal_zero and diagonal_positive


# ---------------------------------------------------------------- optimality check, concrete K

Candidate = Callable[[Sequence[sp.Symbol], sp.Symbol], Sequence[sp.Expr]]


@dataclass(frozen=True)
class OptimalityReport:
    """Verdict of ``is_optimal``; truthy iff the candidate is the optimum.

    ``positive``, ``on_budget`` and ``stationary`` are symbolic proofs (sympy simplifies the
    difference to exactly 0 / proves positivity). ``witness_gap`` is the relative spread of
    ∂f/∂γ_k over k at a concrete point (a_k = the k-th prime, c̄ = 1): a positive gap proves
    non-stationarity independently of ``simplify``. ``multiplier`` is ν = −∂f/∂γ_k when
    stationary, else None.
    """

    num_classes: int
    positive: bool
    on_budget: bool
    stationary: bool
    witness_gap: float
    multiplier: sp.Expr | None

    @property
    def optimal(self) -> bool:
        return self.positive and self.on_budget and self.stationary

    def __bool__(self) -> bool:
        return self.optimal


def _witness(a, c_bar) -> dict:
    """A concrete point: a_k = k-th prime, c̄ = 1."""
    point = {ak: sp.prime(i + 1) for i, ak in enumerate(a)}
    point[c_bar] = 1
    return point


def _relative_gap(values: Sequence[sp.Expr]) -> float:
    """(max − min)/max|·| of the values; inf when one is not a finite real (e.g. γ_k = 0 there)."""
    evaluated = [sp.N(v, 30) for v in values]
    if not all(v.is_real and v.is_finite for v in evaluated):
        return math.inf
    nums = [float(v) for v in evaluated]
    scale = max(abs(x) for x in nums) or 1.0
    return (max(nums) - min(nums)) / scale


def is_optimal(candidate: Candidate, num_classes: int) -> OptimalityReport:
    """Check a candidate margin formula against Corollary 1 for a concrete K.

    ``candidate(a, c_bar)`` maps positive symbols a_1..a_K and c̄ to K sympy expressions γ_k.
    It is optimal iff (i) every γ_k > 0, (ii) Σ_k γ_k = K c̄ identically, and (iii) the
    gradient ∂f/∂γ_k = −2 a_k/γ_k³ is the same for every k (the Lagrange condition
    ∇f + ν·1 = 0); by strict convexity these three are also sufficient.
    """
    a, _, c_bar, _ = symbols(num_classes)
    gamma = list(candidate(a, c_bar))
    if len(gamma) != num_classes:
        raise ValueError(f"is_optimal: candidate returned {len(gamma)} margins, expected {num_classes}")
    positive = all(sp.sympify(g).is_positive is True for g in gamma)
    on_budget = sp.simplify(sp.Add(*gamma) - num_classes * c_bar) == 0
    grad = [sp.simplify(-2 * ak / gk**3) for ak, gk in zip(a, gamma)]
    stationary = all(sp.simplify(g - grad[0]) == 0 for g in grad[1:])
    gap = _relative_gap([g.subs(_witness(a, c_bar)) for g in grad])
    return OptimalityReport(num_classes, positive, on_budget, stationary, gap, -grad[0] if stationary else None)


# ---------------------------------------------------------------- optimality check, symbolic K

GenericCandidate = Callable[[sp.IndexedBase, sp.Symbol, sp.Symbol, sp.Symbol], sp.Expr]


def generic_symbols():
    """a (IndexedBase, positive), class index k, summation index j, K and c̄ (positive)."""
    a = sp.IndexedBase("a", positive=True)
    k, j = sp.symbols("k j", positive=True, integer=True)
    return a, k, j, sp.Symbol("K", positive=True, integer=True), sp.Symbol("c_bar", positive=True)


def power_margin_generic(a, k, num_classes, c_bar, exponent=CUBE_ROOT) -> sp.Expr:
    """γ_k = c̄ · K · a_k^e / Σ_{j=1}^{K} a_j^e for a symbolic K (the generic ``power_margins``)."""
    j = sp.Symbol("j", positive=True, integer=True)
    return c_bar * num_classes * a[k] ** exponent / sp.Sum(a[j] ** exponent, (j, 1, num_classes))


def _canonical(expr: sp.Expr) -> sp.Expr:
    """Rename every Sum's dummy index to one symbol so that equal sums compare equal."""
    i = sp.Symbol("i", positive=True, integer=True)

    def rename(s: sp.Sum) -> sp.Sum:
        (var, lo, hi), = s.limits
        return sp.Sum(s.function.xreplace({var: i}), (i, lo, hi))

    return expr.replace(lambda e: isinstance(e, sp.Sum) and len(e.limits) == 1, rename)


def _generic_simplify(expr: sp.Expr) -> sp.Expr:
    return sp.simplify(_canonical(sp.simplify(expr)).doit())


@dataclass(frozen=True)
class GenericOptimalityReport:
    """Verdict of ``is_optimal_generic``; truthy iff the candidate is the optimum for every K.

    ``stationary`` is the symbolic proof that ∂f/∂γ_k at the candidate, simplified, depends
    neither on k nor on a_k (so it is one common value −ν for all classes). ``witness_gap`` is
    the relative spread of ∂f/∂γ_k over k at K = 4, a_k = k-th prime, c̄ = 1.
    ``minimum`` is Σ_k a_k/γ_k² at the candidate, simplified.
    """

    positive: bool
    on_budget: bool
    stationary: bool
    witness_gap: float
    multiplier: sp.Expr | None
    minimum: sp.Expr

    @property
    def optimal(self) -> bool:
        return self.positive and self.on_budget and self.stationary

    def __bool__(self) -> bool:
        return self.optimal


def is_optimal_generic(candidate: GenericCandidate, witness_classes: int = 4) -> GenericOptimalityReport:
    """Check a candidate formula γ_k = candidate(a, k, K, c̄) for a symbolic number of classes K.

    Generic-index argument: f = Σ_k a_k/γ_k² is separable, so ∂f/∂γ_k = −2 a_k/γ_k³ involves
    only class k. If, after substituting the candidate, that expression is free of k and a_k,
    it is the same number for every class: the Lagrange condition holds with
    ν = −∂f/∂γ_k. The budget Σ_{k=1}^K γ_k = K c̄ and the minimum are simplified as sums.
    """
    a, k, _, num_classes, c_bar = generic_symbols()
    gamma_k = candidate(a, k, num_classes, c_bar)
    positive = sp.sympify(gamma_k).is_positive is True
    budget = _generic_simplify(sp.Sum(gamma_k, (k, 1, num_classes)) - num_classes * c_bar)
    on_budget = budget == 0
    grad = _generic_simplify(-2 * a[k] / gamma_k**3)
    stationary = k not in grad.free_symbols  # a_k is a[k]: its free symbols hold k, so this also excludes a_k
    minimum = _generic_simplify(sp.Sum(a[k] / gamma_k**2, (k, 1, num_classes)))
    point = {num_classes: witness_classes, c_bar: 1}
    concrete = [(-2 * a[k] / gamma_k**3).subs(point).subs(k, i).doit() for i in range(1, witness_classes + 1)]
    primes = {a[i]: sp.prime(i) for i in range(1, witness_classes + 1)}
    gap = _relative_gap([g.subs(primes) for g in concrete])
    return GenericOptimalityReport(positive, on_budget, stationary, gap, -grad if stationary else None, minimum)


def generic_minimum_value() -> sp.Expr:
    """(Σ_{k=1}^K a_k^{1/3})³ / (K c̄)² for a symbolic K, with the canonical summation index."""
    a, k, _, num_classes, c_bar = generic_symbols()
    return _canonical(sp.Sum(a[k] ** CUBE_ROOT, (k, 1, num_classes)) ** 3 / (num_classes * c_bar) ** 2)


# ---------------------------------------------------------------- numeric cross-check


def solve_margins_numerically(a, c_bar: float, tol: float = 1e-14) -> np.ndarray:
    """Minimise Σ a_k/γ_k² s.t. Σ γ_k = K c̄, γ_k ≥ 1e-9·c̄, with scipy's SLSQP from γ = c̄.

    A generic constrained optimiser that knows nothing of the closed form (analytic gradients
    −2a/γ³ and 1 are supplied for accuracy). Raises if the optimiser reports failure.
    """
    arr = np.asarray(a, dtype=np.float64)
    k = arr.size
    scale = arr.mean()  # rescale f so the optimiser's tolerance is relative
    res = minimize(
        lambda g: float((arr / g**2).sum() / scale),
        np.full(k, float(c_bar)),
        jac=lambda g: -2 * arr / g**3 / scale,
        method="SLSQP",
        bounds=[(1e-9 * c_bar, None)] * k,
        constraints=[{"type": "eq", "fun": lambda g: g.sum() - k * c_bar, "jac": lambda g: np.ones(k)}],
        options={"ftol": tol, "maxiter": 1000},
    )
    if not res.success:
        raise RuntimeError(f"solve_margins_numerically: SLSQP failed: {res.message}")
    return res.x
