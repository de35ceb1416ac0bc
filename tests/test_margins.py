"""Corollary 1 margins: properties (hypothesis) and the degenerate cases."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mr2.method.margins import margin_objective, optimal_margins, uniform_margins

positive = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)
a_vectors = st.lists(positive, min_size=2, max_size=50).map(lambda v: torch.tensor(v, dtype=torch.float64))
c_bars = st.floats(min_value=0.05, max_value=20.0)


@given(a_vectors, c_bars)
def test_mean_margin_is_c_bar(a, c_bar):
    gamma = optimal_margins(a, c_bar)
    assert torch.isclose(gamma.mean(), torch.tensor(c_bar, dtype=a.dtype), rtol=1e-9)
    assert (gamma > 0).all()


@given(a_vectors, c_bars, st.integers(min_value=0, max_value=49), st.floats(min_value=1.01, max_value=10))
def test_margin_increases_with_variability(a, c_bar, idx, factor):
    idx = idx % a.numel()
    bigger = a.clone()
    bigger[idx] *= factor
    assert optimal_margins(bigger, c_bar)[idx] > optimal_margins(a, c_bar)[idx]


@given(a_vectors, c_bars, st.floats(min_value=1e-3, max_value=1e3))
def test_invariant_to_scaling_all_a(a, c_bar, scale):
    assert torch.allclose(optimal_margins(a * scale, c_bar), optimal_margins(a, c_bar), rtol=1e-9)


@given(a_vectors, c_bars, st.randoms(use_true_random=False))
def test_equivariant_to_permuting_classes(a, c_bar, rnd):
    perm = list(range(a.numel()))
    rnd.shuffle(perm)
    perm = torch.tensor(perm)
    assert torch.allclose(optimal_margins(a[perm], c_bar), optimal_margins(a, c_bar)[perm], rtol=1e-12)


@settings(max_examples=50)
@given(a_vectors, c_bars)
def test_no_on_budget_uniform_beats_corollary(a, c_bar):
    gamma = optimal_margins(a, c_bar)
    assert margin_objective(a, gamma) <= margin_objective(a, uniform_margins(a.numel(), c_bar, like=a)) * (1 + 1e-9)


def test_equal_variability_gives_uniform_margins():
    gamma = optimal_margins(torch.full((7,), 3.3), 0.8)
    assert torch.allclose(gamma, torch.full((7,), 0.8))


def test_uniform_margins_without_a_template_are_c_bar():
    assert torch.equal(uniform_margins(3, 0.5), torch.tensor([0.5, 0.5, 0.5]))


def test_all_zero_variability_falls_back_to_uniform():
    gamma = optimal_margins(torch.zeros(5), 2.0)
    assert torch.equal(gamma, torch.full((5,), 2.0))


def test_cube_root_formula_on_a_known_case():
    # a = (1, 8, 27): cube roots (1, 2, 3), sum 6, K = 3, c̄ = 2 -> γ = 2·3·(1,2,3)/6
    gamma = optimal_margins(torch.tensor([1.0, 8.0, 27.0]), 2.0)
    assert torch.allclose(gamma, torch.tensor([1.0, 2.0, 3.0]))


def test_margins_carry_no_gradient():
    a = torch.rand(4, requires_grad=True)
    assert not optimal_margins(a, 1.0).requires_grad


def test_margin_objective_is_the_sum_of_a_over_gamma_squared():
    a, gamma = [0.5, 2.0, 3.0], [1.0, 2.0, 0.5]
    expected = sum(x / g ** 2 for x, g in zip(a, gamma))  # 0.5 + 0.5 + 12
    assert float(margin_objective(torch.tensor(a, dtype=torch.float64), torch.tensor(gamma, dtype=torch.float64))) == expected
