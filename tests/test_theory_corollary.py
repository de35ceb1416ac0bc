"""Corollary 1 (docs/method.md): sympy derivation, optimality checks that can fail, numeric cross-check."""

import math
from functools import partial

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mr2.method.margins import margin_objective, optimal_margins
from theory import corollary as C
from theory.corollary import (
    cube_root_margins,
    generic_minimum_value,
    generic_symbols,
    hessian_positive_definite,
    is_optimal,
    is_optimal_generic,
    minimum_value,
    power_margin_generic,
    power_margins,
    solve_lagrangian,
    solve_margins_numerically,
)

CONCRETE_K = (2, 3, 4)
WRONG_EXPONENTS = {"sqrt": sp.Rational(1, 2), "fourth_root": sp.Rational(1, 4), "uniform": sp.Integer(0)}

a_vectors = st.integers(2, 9).flatmap(
    lambda k: st.lists(st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False), min_size=k, max_size=k)
)
c_bars = st.floats(0.1, 10.0)


# ---------------------------------------------------------------- derivation by sympy.solve


@pytest.mark.parametrize("k", CONCRETE_K)
def test_lagrangian_solution_is_the_cube_root_formula(k):
    sol = solve_lagrangian(k)
    expected = cube_root_margins(sol.a, sol.c_bar)
    for got, want in zip(sol.gamma, expected):
        assert sp.simplify(got - want) == 0
    assert sol.nu_positive
    assert all(g.is_positive for g in sol.gamma)
    assert sp.simplify(sp.Add(*sol.gamma) - k * sol.c_bar) == 0
    assert sp.simplify(sol.minimum - minimum_value(sol.a, sol.c_bar)) == 0
    # ν = 2 a_k / γ_k³ for every k at the solution
    for ak, gk in zip(sol.a, sol.gamma):
        assert sp.simplify(sol.nu - 2 * ak / gk**3) == 0


@pytest.mark.parametrize("k", CONCRETE_K + (5, 8))
def test_objective_strictly_convex(k):
    assert hessian_positive_definite(k)


@pytest.mark.parametrize("extra, why", [
    (lambda a, g: g[0] * g[1], "a coupling term: off-diagonal Hessian entries"),
    (lambda a, g: -4 * a[0] / g[0] ** 2, "a concave term: a negative diagonal entry"),
])
def test_the_convexity_check_fails_on_other_objectives(extra, why, monkeypatch):
    import theory.corollary as corollary

    plain = corollary.objective
    monkeypatch.setattr(corollary, "objective", lambda a, gamma: plain(a, gamma) + extra(a, gamma))
    assert not corollary.hessian_positive_definite(3), why


# ---------------------------------------------------------------- is_optimal: passes and fails


@pytest.mark.parametrize("k", CONCRETE_K)
def test_cube_root_formula_is_optimal(k):
    report = is_optimal(cube_root_margins, k)
    assert report and report.positive and report.on_budget and report.stationary
    assert report.witness_gap < 1e-12
    assert sp.simplify(report.multiplier - solve_lagrangian(k).nu) == 0


@pytest.mark.parametrize("k", CONCRETE_K)
@pytest.mark.parametrize("name", sorted(WRONG_EXPONENTS))
def test_wrong_exponents_are_rejected(k, name):
    report = is_optimal(partial(power_margins, exponent=WRONG_EXPONENTS[name]), k)
    assert not report
    # on budget and positive, so it is stationarity that fails, confirmed at a concrete point
    assert report.positive and report.on_budget and not report.stationary
    assert report.witness_gap > 0.05
    assert report.multiplier is None


def test_concrete_witness_gap_is_the_gradient_spread_at_the_first_primes():
    """At a_k = 2, 3, 5 and c̄ = 1, γ_k = 3·a_k^{1/2}/Σ a^{1/2}: the gap is (max − min)/max|·| of
    ∂f/∂γ_k = −2 a_k/γ_k³."""
    report = is_optimal(partial(power_margins, exponent=sp.Rational(1, 2)), 3)
    p = np.array([2.0, 3.0, 5.0])
    gamma = 3 * np.sqrt(p) / np.sqrt(p).sum()
    grad = -2 * p / gamma**3
    assert report.witness_gap == pytest.approx((grad.max() - grad.min()) / np.abs(grad).max(), rel=1e-12)
    assert report.num_classes == 3


def test_relative_gap_of_numbers_and_of_values_that_are_not_finite_reals():
    assert C._relative_gap([2, 4]) == 0.5 and C._relative_gap([-4, -2]) == 0.5 and C._relative_gap([0, 0]) == 0.0
    assert C._relative_gap([1, sp.oo]) == math.inf and C._relative_gap([1, sp.I]) == math.inf
    assert C._relative_gap([1, sp.zoo]) == math.inf


def test_symbols_for_a_concrete_number_of_classes():
    a, gamma, c_bar, nu = C.symbols(1)
    assert len(a) == len(gamma) == 1 and c_bar.is_positive and nu.is_real
    a, gamma, _, _ = C.symbols(3)
    assert [str(x) for x in a + gamma] == ["a1", "a2", "a3", "gamma1", "gamma2", "gamma3"]
    assert "c_bar" in str(solve_lagrangian(2).gamma[0])  # the solution is written with the paper's c̄
    with pytest.raises(ValueError, match=r"^symbols: num_classes must be >= 1, got 0$"):
        C.symbols(0)


def test_off_budget_candidate_is_rejected():
    report = is_optimal(lambda a, c: [2 * g for g in cube_root_margins(a, c)], 3)
    assert report.stationary and report.positive and not report.on_budget and not report


def test_not_provably_positive_candidate_is_rejected():
    def candidate(a, c):  # on budget, but c̄ − a_1 + a_2 is negative when a_1 > c̄ + a_2
        return [c + a[0] - a[1], c - a[0] + a[1], c]

    report = is_optimal(candidate, 3)
    assert not report.positive and report.on_budget and not report


def test_is_optimal_rejects_wrong_length():
    with pytest.raises(ValueError, match="expected 3"):
        is_optimal(lambda a, c: [c, c], 3)


# ---------------------------------------------------------------- symbolic K (generic index)


def test_generic_cube_root_is_optimal_for_every_k():
    report = is_optimal_generic(power_margin_generic)
    assert report and report.positive and report.on_budget and report.stationary
    assert report.witness_gap < 1e-12
    assert sp.simplify(report.minimum - generic_minimum_value()) == 0
    # ν = −∂f/∂γ_k = 2 a_k/γ_k³ = 2 (Σ_i a_i^{1/3})³ / (K c̄)³ at the optimum, the same for every class
    a, _, _, K, c = generic_symbols()
    i = sp.Symbol("i", positive=True, integer=True)
    nu = 2 * sp.Sum(a[i] ** sp.Rational(1, 3), (i, 1, K)) ** 3 / (K * c) ** 3
    assert sp.simplify(report.multiplier - nu) == 0 and report.multiplier.is_positive


def test_generic_minimum_is_written_with_the_papers_symbols():
    assert str(generic_minimum_value()) == "Sum(a[i]**(1/3), (i, 1, K))**3/(K**2*c_bar**2)"


def test_generic_witness_gap_is_the_spread_of_the_gradient_at_four_prime_classes():
    """At K = 4, c̄ = 1, a_k = 2, 3, 5, 7: γ_k = 4·a_k^e/Σ a^e and ∂f/∂γ_k = −2 a_k/γ_k³; the gap is
    (max − min)/max|·| of those four numbers."""
    for e in (sp.Rational(1, 2), sp.Integer(1)):
        report = is_optimal_generic(partial(power_margin_generic, exponent=e))
        p = np.array([2.0, 3.0, 5.0, 7.0])
        gamma = 4 * p ** float(e) / (p ** float(e)).sum()
        grad = -2 * p / gamma**3
        assert report.witness_gap == pytest.approx((grad.max() - grad.min()) / np.abs(grad).max(), rel=1e-12)


def test_generic_check_rejects_margins_that_depend_on_the_class_index():
    """γ_k ∝ (k·a_k)^{1/3} is positive and on budget, but ∂f/∂γ_k ∝ 1/k still varies with the class."""
    def indexed(a, k, num_classes, c_bar):
        j = sp.Symbol("j", positive=True, integer=True)
        return c_bar * num_classes * (k * a[k]) ** sp.Rational(1, 3) / sp.Sum((j * a[j]) ** sp.Rational(1, 3),
                                                                                (j, 1, num_classes))
    report = is_optimal_generic(indexed)
    assert report.on_budget and not report.stationary and not report and report.multiplier is None


@pytest.mark.parametrize("name", sorted(WRONG_EXPONENTS))
def test_generic_wrong_exponents_are_rejected(name):
    report = is_optimal_generic(partial(power_margin_generic, exponent=WRONG_EXPONENTS[name]))
    assert not report and report.on_budget and not report.stationary
    assert report.witness_gap > 0.05


def test_generic_uniform_objective_value():
    """Uniform margins leave Σ a/γ² at Σ a / c̄², the value the optimum improves on."""
    report = is_optimal_generic(partial(power_margin_generic, exponent=0))
    a, _, _, K, c = generic_symbols()
    i = sp.Symbol("i", positive=True, integer=True)
    assert sp.simplify(report.minimum - sp.Sum(a[i], (i, 1, K)) / c**2) == 0


# ---------------------------------------------------------------- numeric cross-checks


@settings(max_examples=40, deadline=None)
@given(a=a_vectors, c_bar=c_bars)
def test_slsqp_finds_the_closed_form(a, c_bar):
    numeric = solve_margins_numerically(a, c_bar)
    np.testing.assert_allclose(numeric, cube_root_margins(a, c_bar), rtol=2e-4)


@settings(max_examples=40, deadline=None)
@given(
    a=a_vectors,
    c_bar=c_bars,
    seed=st.integers(0, 2**32 - 1),
    step=st.floats(0.01, 0.9),
)
def test_every_on_budget_perturbation_raises_the_objective(a, c_bar, seed, step):
    a_t = torch.tensor(a, dtype=torch.float64)
    gamma = torch.as_tensor(cube_root_margins(a, c_bar))
    rng = np.random.default_rng(seed)
    for _ in range(20):
        d = torch.as_tensor(rng.standard_normal(len(a)))
        d = d - d.mean()  # stays on budget: Σ d = 0
        d = d * (step * gamma.min() / d.abs().max())  # stays positive
        assert abs(float(d.sum())) < 1e-9 * c_bar * len(a)
        assert float(margin_objective(a_t, gamma + d)) > float(margin_objective(a_t, gamma))


@settings(max_examples=60, deadline=None)
@given(a=a_vectors, c_bar=c_bars)
def test_theory_closed_form_matches_training_margins(a, c_bar):
    a_t = torch.tensor(a, dtype=torch.float64)
    np.testing.assert_allclose(optimal_margins(a_t, c_bar).numpy(), cube_root_margins(a, c_bar), rtol=1e-12)
    assert float(margin_objective(a_t, optimal_margins(a_t, c_bar))) == pytest.approx(minimum_value(a, c_bar), rel=1e-10)


@pytest.mark.parametrize("k", CONCRETE_K)
def test_sympy_solution_matches_training_margins(k):
    sol = solve_lagrangian(k)
    fn = sp.lambdify([sol.a, sol.c_bar], list(sol.gamma), "numpy")
    rng = np.random.default_rng(k)
    for _ in range(10):
        a = rng.uniform(1e-2, 1e2, size=k)
        c_bar = rng.uniform(0.1, 5.0)
        np.testing.assert_allclose(fn(a, c_bar), optimal_margins(torch.as_tensor(a), c_bar).numpy(), rtol=1e-12)


def test_equal_variability_gives_uniform_margins():
    np.testing.assert_allclose(cube_root_margins([2.0] * 5, 0.7), np.full(5, 0.7), rtol=1e-15)
    a = sp.Symbol("a", positive=True)
    c = sp.Symbol("c", positive=True)
    assert all(sp.simplify(g - c) == 0 for g in cube_root_margins([a] * 4, c))


# ---------------------------------------------------------------- the exponent, by the property only 1/3 has
# Stationarity of the Lagrangian: ∂/∂γ_k (Σ a_j/γ_j² + ν(Σ γ_j − K c̄)) = 0 gives a_k/γ_k³ = ν/2 for
# every class, so on the budget the optimum is the one point where a_k/γ_k³ is the same for all k.
# For margins γ_k ∝ a_k^e, a_k/γ_k³ ∝ a_k^{1−3e}: equal across unequal a_k only when e = 1/3.

distinct_a = st.integers(2, 9).flatmap(
    lambda k: st.lists(st.floats(1e-2, 1e2, allow_nan=False), min_size=k, max_size=k, unique=True)
).filter(lambda a: max(a) > 1.01 * min(a))


def _stationarity_spread(a, gamma) -> float:
    ratio = np.asarray(a, dtype=np.float64) / np.asarray(gamma, dtype=np.float64) ** 3
    return float(ratio.max() / ratio.min() - 1.0)


@settings(max_examples=60, deadline=None)
@given(a=distinct_a, c_bar=c_bars)
def test_margins_make_a_over_gamma_cubed_equal_across_classes(a, c_bar):
    """The training code's margins and the theory's formula both satisfy the stationarity
    condition a_k/γ_k³ = const on the budget Σ γ_k = K c̄; any other power of a_k breaks it."""
    a_t = torch.tensor(a, dtype=torch.float64)
    for gamma in (optimal_margins(a_t, c_bar).numpy(), np.asarray(cube_root_margins(a, c_bar), dtype=np.float64)):
        assert gamma.sum() == pytest.approx(len(a) * c_bar, rel=1e-12)
        assert _stationarity_spread(a, gamma) < 1e-9
    for e in (0.0, 0.25, 0.3, 0.34, 0.5, 1.0):
        gamma = np.asarray(power_margins(a, c_bar, e), dtype=np.float64)
        # a_k^{1−3e} over a range of ratio r = max a / min a spreads by r^{|1−3e|} − 1
        expected = (max(a) / min(a)) ** abs(1 - 3 * e) - 1
        assert _stationarity_spread(a, gamma) == pytest.approx(expected, rel=1e-6)
        assert _stationarity_spread(a, gamma) > 1e-4
