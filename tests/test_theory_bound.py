"""Proposition 1 (docs/method.md): property checks of its pieces and the bound evaluated for a model."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from mr2.method.losses.margin_ce import logit_margin_cross_entropy
from mr2.method.stats import class_moments, lp_sq_norm
from theory.bound import (
    bound_from_summary,
    class_second_moment,
    class_variability,
    augmented_variability,
    complexity_advantage,
    complexity_term,
    confidence_term,
    empirical_margin_term,
    error_indicator,
    evaluate_bound,
    margin_ce_gradient_bound,
    trained_margins,
    weight_norm,
    zero_one_error,
)
from theory.corollary import minimum_value

finite = st.floats(-30.0, 30.0, allow_nan=False, allow_infinity=False)
margins = st.floats(0.05, 20.0)
a_values = st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def logit_batches(draw):
    k = draw(st.integers(2, 6))
    b = draw(st.integers(1, 8))
    logits = torch.tensor(draw(st.lists(st.lists(finite, min_size=k, max_size=k), min_size=b, max_size=b)))
    targets = torch.tensor(draw(st.lists(st.integers(0, k - 1), min_size=b, max_size=b)))
    gamma = torch.tensor(draw(st.lists(margins, min_size=k, max_size=k)))
    return logits, targets, gamma


# ---------------------------------------------------------------- 1[error] ≤ ℓ_{γ,ce} / ln 2


@settings(max_examples=200, deadline=None)
@given(batch=logit_batches())
def test_error_indicator_below_scaled_margin_loss(batch):
    logits, targets, gamma = batch
    errors = error_indicator(logits, targets)
    for i in range(len(targets)):  # per sample: ℓ/ln2 of a batch of one
        per_sample = empirical_margin_term(logits[i : i + 1], targets[i : i + 1], gamma)
        assert errors[i] <= per_sample + 1e-5  # float32 rounding of the loss
    assert zero_one_error(logits, targets) <= empirical_margin_term(logits, targets, gamma) + 1e-5


def test_ln2_is_attained_at_a_tie():
    """Two tied logits with the argmax on the wrong one: ℓ = ln 2 exactly, so 1/ln 2 is sharp."""
    logits, targets = torch.tensor([[3.0, 3.0, -50.0]]), torch.tensor([1])
    assert error_indicator(logits, targets).item() == 1.0
    assert empirical_margin_term(logits, targets, torch.tensor([1.0, 0.5, 2.0])) == pytest.approx(1.0, abs=1e-6)


# ---------------------------------------------------------------- ‖∇_z ℓ_{γ,ce}‖ ≤ √2/γ_y


def _per_sample_gradients(logits, targets, gamma):
    z = logits.clone().requires_grad_(True)
    loss = logit_margin_cross_entropy(z, targets, gamma) * len(targets)  # sum of per-sample losses
    (grad,) = torch.autograd.grad(loss, z)
    return grad


@settings(max_examples=200, deadline=None)
@given(batch=logit_batches())
def test_margin_ce_gradient_norm_bounded(batch):
    logits, targets, gamma = batch
    norms = _per_sample_gradients(logits, targets, gamma).norm(dim=1)
    bounds = margin_ce_gradient_bound(gamma[targets])
    assert bool((norms <= bounds * (1 + 1e-5)).all())


@pytest.mark.parametrize("gamma_y", [0.1, 1.0, 7.0])
def test_gradient_bound_is_sharp(gamma_y):
    """All probability mass on one wrong class: ‖p − e_y‖ → √2, so √2/γ_y cannot be lowered."""
    gamma = torch.tensor([2.0, gamma_y, 3.0])
    logits = torch.tensor([[60.0 * gamma_y, 0.0, 0.0]])
    norm = _per_sample_gradients(logits, torch.tensor([1]), gamma).norm()
    assert float(norm) == pytest.approx(margin_ce_gradient_bound(gamma_y), rel=1e-4)


# ---------------------------------------------------------------- a_k = class mean of ‖φ‖²


@st.composite
def exact_features(draw):
    """Small-integer features, class counts powers of two: every float32 operation is exact."""
    k = draw(st.integers(1, 5))
    d = draw(st.integers(1, 4))
    counts = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=k, max_size=k).filter(lambda c: sum(c) > 0))
    targets = torch.tensor([c for c, n in enumerate(counts) for _ in range(n)])
    feats = draw(st.lists(st.integers(-8, 8), min_size=len(targets) * d, max_size=len(targets) * d))
    perm = torch.tensor(draw(st.permutations(range(len(targets)))))
    return torch.tensor(feats, dtype=torch.float32).reshape(-1, d)[perm], targets[perm], k


@settings(max_examples=150, deadline=None)
@given(data=exact_features())
def test_l2_variability_equals_second_moment_to_rounding(data):
    """Exact inputs: the only error left is the rounding of ‖·‖ = √(Σx²) before it is squared."""
    features, targets, k = data
    n, m, v, v2 = class_moments(features, targets, k, p=2.0)
    second = class_second_moment(features, targets, k)
    torch.testing.assert_close((lp_sq_norm(m, 2.0) + v).double(), second, rtol=4 * 2.0**-24, atol=0)
    assert torch.equal(v, v2)
    torch.testing.assert_close(class_variability(features, targets, k), second, rtol=4 * 2.0**-53, atol=0)


def test_l2_identity_on_random_features(gen):
    features = torch.randn(300, 7, generator=gen) * 3 + 1
    targets = torch.randint(0, 5, (300,), generator=gen)
    torch.testing.assert_close(class_variability(features, targets, 5), class_second_moment(features, targets, 5), rtol=1e-5, atol=0)


def test_identity_is_specific_to_l2(gen):
    """With p = 3 the variability is not the L2 second moment (the identity has content)."""
    features = torch.randn(200, 6, generator=gen) + 2
    targets = torch.randint(0, 3, (200,), generator=gen)
    a3 = class_variability(features, targets, 3, p=3.0)
    assert not torch.allclose(a3, class_second_moment(features, targets, 3), rtol=1e-2)


# ---------------------------------------------------------------- MR²'s γ vs uniform γ


@settings(max_examples=200, deadline=None)
@given(a=st.lists(a_values, min_size=1, max_size=20), c_bar=st.floats(0.1, 10.0))
def test_adaptive_margins_never_raise_the_complexity_term(a, c_bar):
    adv = complexity_advantage(a, c_bar)
    assert adv["adaptive"] <= adv["uniform"] * (1 + 1e-12)
    assert adv["ratio"] <= 1 + 1e-12
    assert adv["adaptive"] == pytest.approx(minimum_value(a, c_bar), rel=1e-10)
    gamma_mr2, gamma_unif = trained_margins("mr2", a, c_bar), trained_margins("uniform", a, c_bar)
    assert float(gamma_mr2.mean()) == pytest.approx(float(gamma_unif.mean()), rel=1e-12)  # equal mean margin
    assert complexity_term(a, gamma_mr2, 1.3, 100) <= complexity_term(a, gamma_unif, 1.3, 100) * (1 + 1e-12)


def test_advantage_is_strict_for_unequal_and_absent_for_equal_a():
    assert complexity_advantage([1.0, 8.0, 27.0], 2.0)["ratio"] < 0.95
    assert complexity_advantage([5.0] * 4, 2.0)["ratio"] == pytest.approx(1.0, rel=1e-12)
    # the ratio (Σ a^{1/3})³ / (K² Σ a), independent of c̄
    assert complexity_advantage([1.0, 8.0, 27.0], 0.3)["ratio"] == pytest.approx(math.sqrt(216 / (9 * 36)), rel=1e-12)


def test_trained_margins_kinds():
    a = [1.0, 8.0]
    assert trained_margins("erm", a, 3.0).tolist() == [1.0, 1.0]
    assert trained_margins("uniform", a, 3.0).tolist() == [3.0, 3.0]
    assert trained_margins("mr2", a, 3.0).tolist() == pytest.approx([2.0, 4.0])
    with pytest.raises(ValueError, match="'ldam'"):
        trained_margins("ldam", a)


# ---------------------------------------------------------------- the bound for a model


def _toy_model(gen, n=64, k=3, d=5):
    w = torch.randn(k, d, generator=gen)
    feats = torch.randn(n, d, generator=gen)
    targets = (feats @ w.T + 0.5 * torch.randn(n, k, generator=gen)).argmax(1)
    return w, feats, targets, feats @ w.T


def test_evaluate_bound_terms(gen):
    w, feats, targets, logits = _toy_model(gen)
    _, test_feats, test_targets, _ = _toy_model(gen)
    test_logits = test_feats @ w.T
    a = class_variability(feats, targets, 3)
    gamma = trained_margins("mr2", a, 1.5)
    rep = evaluate_bound(logits, targets, a, gamma, w, test_logits, test_targets, c=2.0, delta=0.1)
    # independent numpy recomputation
    z, y, g = logits.double().numpy(), targets.numpy(), gamma.double().numpy()
    zs = z / g[y][:, None]
    log_p = zs[np.arange(len(y)), y] - np.log(np.exp(zs - zs.max(1, keepdims=True)).sum(1)) - zs.max(1)
    lam = np.linalg.norm(w.double().numpy(), axis=1).max()
    n, k = len(y), 3
    expected = {
        "empirical_term": -log_p.mean() / np.log(2),
        "complexity_term": 4 * np.sqrt(2) * lam * k / np.sqrt(n) * np.sqrt((a.numpy() / g**2).sum()),
        "confidence_term": 2.0 * np.sqrt(np.log(10.0) / n),
        "test_error": float((test_logits.argmax(1) != test_targets).double().mean()),
    }
    for key, value in expected.items():
        assert getattr(rep, key) == pytest.approx(value, rel=1e-5), key
    assert rep.bound == pytest.approx(rep.empirical_term + rep.complexity_term + rep.confidence_term)
    assert rep.holds == (rep.test_error <= rep.bound)
    assert rep.tightness == pytest.approx(rep.bound / rep.test_error)
    assert rep.head_norm == pytest.approx(lam) and rep.num_train == n and rep.num_classes == k
    assert set(rep.as_dict()) >= {"empirical_term", "complexity_term", "confidence_term", "bound", "holds", "tightness"}


def test_evaluate_bound_erm_is_cross_entropy(gen):
    w, feats, targets, logits = _toy_model(gen)
    a = class_variability(feats, targets, 3)
    rep = evaluate_bound(logits, targets, a, trained_margins("erm", a), w, logits, targets, num_train=1000)
    assert rep.empirical_term == pytest.approx(float(F.cross_entropy(logits, targets)) / math.log(2), rel=1e-6)
    assert rep.num_train == 1000 and rep.confidence_term == pytest.approx(math.sqrt(math.log(20) / 1000))


def test_bias_is_absorbed_as_a_constant_feature(gen):
    w, feats, targets, logits = _toy_model(gen)
    bias = torch.tensor([0.5, -2.0, 1.0])
    a = class_variability(feats, targets, 3)
    gamma = torch.ones(3)
    with_bias = evaluate_bound(logits + bias, targets, a, gamma, w, logits, targets, bias=bias)
    augmented = torch.cat([feats, torch.ones(len(feats), 1)], dim=1)
    w_aug = torch.cat([w, bias[:, None]], dim=1)
    plain = evaluate_bound(augmented @ w_aug.T, targets, class_variability(augmented, targets, 3), gamma, w_aug, logits, targets)
    assert with_bias.complexity_term == pytest.approx(plain.complexity_term, rel=1e-5)
    assert with_bias.margin_sum == pytest.approx(float((a + 1).sum()), rel=1e-9)


def test_bound_holds_for_a_trained_linear_model(gen):
    """A logistic head trained briefly on Gaussian blobs: the (loose) bound covers its test error."""
    k, d = 4, 8
    centres = 2 * torch.randn(k, d, generator=gen)
    y_tr, y_te = torch.randint(0, k, (400,), generator=gen), torch.randint(0, k, (400,), generator=gen)
    x_tr = centres[y_tr] + torch.randn(400, d, generator=gen) * torch.linspace(0.5, 2.0, k)[y_tr, None]
    x_te = centres[y_te] + torch.randn(400, d, generator=gen) * torch.linspace(0.5, 2.0, k)[y_te, None]
    a = class_variability(x_tr, y_tr, k)
    gamma = trained_margins("mr2", a, 1.0)
    head = torch.nn.Linear(d, k, bias=False)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for _ in range(50):
        opt.zero_grad()
        logit_margin_cross_entropy(head(x_tr), y_tr, gamma).backward()
        opt.step()
    with torch.no_grad():
        rep = evaluate_bound(head(x_tr), y_tr, a, gamma, head.weight, head(x_te), y_te)
    assert 0 < rep.test_error < 0.5
    assert rep.holds and rep.tightness > 1


def test_frobenius_is_looser_than_max_row(gen):
    w = torch.randn(5, 3, generator=gen)
    assert weight_norm(w, "frobenius") >= weight_norm(w, "max_row")
    assert weight_norm(torch.tensor([[3.0, 4.0], [1.0, 0.0]]), "max_row") == 5.0


def test_zero_test_error_gives_infinite_tightness():
    logits, targets = torch.tensor([[2.0, 0.0], [0.0, 2.0]]), torch.tensor([0, 1])
    rep = evaluate_bound(logits, targets, [1.0, 1.0], [1.0, 1.0], torch.eye(2), logits, targets)
    assert rep.test_error == 0 and rep.tightness == math.inf and rep.holds


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gamma": [1.0, 0.0]}, r"evaluate_bound: gamma must be 2 positive margins, got \[1.0, 0.0\]"),
        ({"gamma": [1.0, 1.0, 1.0]}, "evaluate_bound: gamma must be 2 positive margins"),
        ({"a": [1.0, -1.0]}, r"evaluate_bound: a must be non-negative, got \[1.0, -1.0\]"),
        ({"weight": torch.eye(3)}, "weight must be"),
        ({"logits": torch.zeros(2, 3)}, "do not match"),
        ({"targets": torch.tensor([0, 1])}, "do not match"),  # 3 logits, 2 labels
        ({"logits": torch.zeros(3)}, "do not match"),  # not (N, K)
        ({"norm": "spectral"}, "'spectral'"),
        ({"delta": 1.5}, "delta"),
    ],
)
def test_evaluate_bound_errors(kwargs, match):
    args = {**TWO_CLASSES, **kwargs}
    with pytest.raises(ValueError, match=match):
        evaluate_bound(**args)


TWO_CLASSES = {"logits": torch.tensor([[1.0, 0.0], [0.5, 2.0], [0.0, 0.3]]), "targets": torch.tensor([0, 1, 0]),
               "a": [1.0, 1.0], "gamma": [1.0, 1.0], "weight": torch.eye(2),
               "test_logits": torch.zeros(2, 2), "test_targets": torch.tensor([0, 1])}


@pytest.mark.parametrize("name", ["logits", "targets", "a", "gamma", "weight", "bias"])
def test_an_input_that_is_not_numbers_is_named(name):
    """A ragged list cannot become a tensor: the error says which input it was."""
    args = {**TWO_CLASSES, "bias": torch.zeros(2), name: [[1.0, 2.0], [3.0]]}
    with pytest.raises(TypeError, match=rf"^{name}: cannot convert to a tensor"):
        evaluate_bound(**args)


def test_evaluate_bound_takes_zero_and_fractional_variability_float_labels_and_its_norm():
    """a_k = 0 (a class whose features coincide) and 0 < a_k < 1 are valid; labels stored as floats are
    class indices; the report names the norm Λ was taken with."""
    plain = evaluate_bound(**TWO_CLASSES)
    zero = evaluate_bound(**{**TWO_CLASSES, "a": [0.0, 0.5]})
    assert zero.margin_sum == pytest.approx(0.5) and plain.margin_sum == pytest.approx(2.0)
    as_floats = evaluate_bound(**{**TWO_CLASSES, "targets": np.array([0.0, 1.0, 0.0])})
    assert as_floats == plain
    weight = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    frob = evaluate_bound(**{**TWO_CLASSES, "weight": weight}, norm="frobenius")
    assert frob.norm == "frobenius" and frob.head_norm == pytest.approx(math.sqrt(26.0))
    assert plain.norm == "max_row"


def test_confidence_term_formula():
    assert confidence_term(100) == pytest.approx(math.sqrt(math.log(20) / 100))
    assert confidence_term(400, c=3.0, delta=0.01) == pytest.approx(3 * math.sqrt(math.log(100) / 400))


def test_complexity_advantage_at_its_default_mean_margin_and_without_variability():
    a = [0.1, 0.2, 0.4]  # Σ a < 1: the uniform sum lies in (0, 1)
    adv = complexity_advantage(a)  # c̄ = 1
    assert adv["uniform"] == pytest.approx(sum(a), rel=1e-12)  # Σ a_k / 1²
    assert adv["adaptive"] == pytest.approx(sum(x ** (1 / 3) for x in a) ** 3 / 9, rel=1e-12)  # (Σ a^{1/3})³/(K c̄)²
    assert adv["ratio"] == pytest.approx(math.sqrt(adv["adaptive"] / adv["uniform"]), rel=1e-12) and adv["ratio"] < 1
    assert complexity_advantage([0.0, 0.0])["ratio"] == 1.0  # no variability: nothing to shrink


def test_bad_variability_is_named_in_the_error():
    with pytest.raises(TypeError, match=r"^a: cannot convert"):
        complexity_advantage([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match=r"^a: cannot convert"):
        augmented_variability([[1.0, 2.0], [3.0]])


# ---------------------------------------------------------------- every entry point's inputs and defaults
RAGGED = [[1.0, 2.0], [3.0]]  # cannot become a tensor
FEATS, LABELS = torch.tensor([[1.0, 2.0], [3.0, 1.0], [0.0, 1.0]]), torch.tensor([0, 1, 1])


@pytest.mark.parametrize("call, name", [
    (lambda: error_indicator(RAGGED, LABELS), "logits"),
    (lambda: error_indicator(torch.zeros(3, 2), RAGGED), "targets"),
    (lambda: empirical_margin_term(RAGGED, LABELS, [1.0, 1.0]), "logits"),
    (lambda: empirical_margin_term(torch.zeros(3, 2), RAGGED, [1.0, 1.0]), "targets"),
    (lambda: empirical_margin_term(torch.zeros(3, 2), LABELS, RAGGED), "gamma"),
    (lambda: class_variability(RAGGED, LABELS, 2), "features"),
    (lambda: class_variability(FEATS, RAGGED, 2), "targets"),
    (lambda: class_second_moment(RAGGED, LABELS, 2), "features"),
    (lambda: class_second_moment(FEATS, RAGGED, 2), "targets"),
    (lambda: weight_norm(RAGGED), "weight"),
    (lambda: complexity_term(RAGGED, [1.0, 1.0], 1.0, 10), "a"),
    (lambda: complexity_term([1.0, 1.0], RAGGED, 1.0, 10), "gamma"),
    (lambda: trained_margins("mr2", RAGGED), "a"),
    (lambda: bound_from_summary(0.5, RAGGED, [1.0, 1.0], 1.0, 10, 0.1), "a"),
    (lambda: bound_from_summary(0.5, [1.0, 1.0], RAGGED, 1.0, 10, 0.1), "gamma"),
])
def test_each_entry_point_names_an_input_that_is_not_numbers(call, name):
    with pytest.raises(TypeError, match=rf"^{name}: cannot convert to a tensor"):
        call()


def test_labels_stored_as_floats_are_class_indices_everywhere():
    logits, gamma = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0]]), [1.0, 2.0]
    floats = LABELS.double()
    assert torch.equal(error_indicator(logits, floats), error_indicator(logits, LABELS))
    assert empirical_margin_term(logits, floats, gamma) == empirical_margin_term(logits, LABELS, gamma)
    assert torch.equal(class_variability(FEATS, floats, 2), class_variability(FEATS, LABELS, 2))
    assert torch.equal(class_second_moment(FEATS, floats, 2), class_second_moment(FEATS, LABELS, 2))


def test_a_parameter_that_requires_grad_is_read_as_it_is():
    w = torch.nn.Parameter(torch.tensor([[3.0, 4.0], [1.0, 0.0]]))
    assert weight_norm(w) == 5.0 and w.requires_grad  # default Λ: the largest row norm


def test_class_variability_uses_its_norm_and_the_second_moment_names_its_shape():
    # L3: a_k = ‖μ̂_k‖₃² + (1/n_k) Σ ‖φ − μ̂_k‖₃², written out for class 1 = {(3, 1), (0, 1)}
    feats = torch.tensor([[1.0, 2.0], [3.0, 2.0], [0.0, 0.0]])  # class 1: deviations (±1.5, ±1), L3 ≠ L2
    mean = np.array([1.5, 1.0])
    l3_sq = lambda v: float((np.abs(v) ** 3).sum() ** (2 / 3))  # noqa: E731
    want = l3_sq(mean) + (l3_sq(np.array([1.5, 1.0])) + l3_sq(np.array([-1.5, -1.0]))) / 2
    assert float(class_variability(feats, LABELS, 2, p=3.0)[1]) == pytest.approx(want, rel=1e-12)
    assert float(class_variability(FEATS, LABELS, 3)[2]) == 0.0  # an empty class
    with pytest.raises(ValueError, match=r"^weight_norm: weight must be \(K, D\), got shape \(3,\)$"):
        weight_norm(torch.ones(3))


def test_confidence_term_needs_delta_strictly_inside_0_1():
    for delta in (0.0, 1.0):
        with pytest.raises(ValueError, match=rf"delta must be in \(0, 1\), got {delta}"):
            confidence_term(100, delta=delta)


def test_trained_margins_default_to_unit_mean():
    a = [1.0, 8.0]
    assert trained_margins("uniform", a).tolist() == [1.0, 1.0]
    assert float(trained_margins("mr2", a).mean()) == pytest.approx(1.0)


def test_bound_from_summary_defaults_checks_and_equality():
    a, gamma = [0.0, 0.5, 2.0], [1.0, 1.0, 1.0]
    rep = bound_from_summary(0.7, a, gamma, 2.0, 100, 0.2)
    # no bias (a as given), Λ a largest row norm, c = 1, δ = 0.05
    assert rep.margin_sum == pytest.approx(2.5) and (rep.norm, rep.c, rep.delta) == ("max_row", 1.0, 0.05)
    assert rep.confidence_term == pytest.approx(math.sqrt(math.log(20) / 100))
    assert bound_from_summary(0.7, a, gamma, 2.0, 100, 0.2, bias=True).margin_sum == pytest.approx(5.5)
    assert bound_from_summary(0.7, a, gamma, 2.0, 100, 0.2, norm="frobenius").norm == "frobenius"
    exact = bound_from_summary(0.7, a, gamma, 2.0, 100, rep.bound)  # a test error equal to the bound: it holds
    assert exact.holds and exact.tightness == 1.0
    for bad, match in (({"gamma": [1.0, 0.0, 1.0]}, r"^bound: gamma must be 3 positive margins, got \[1.0, 0.0, 1.0\]$"),
                       ({"gamma": [1.0, 1.0]}, r"^bound: gamma must be 3 positive margins"),
                       ({"a": [0.0, -0.5, 2.0]}, r"^bound: a must be finite and non-negative, got \[0.0, -0.5, 2.0\]$"),
                       ({"a": [0.0, math.inf, 2.0]}, r"^bound: a must be finite and non-negative"),
                       ({"norm": "spectral"}, r"^bound: unknown norm 'spectral'; choose one of")):
        args = {"a": a, "gamma": gamma, **bad}
        with pytest.raises(ValueError, match=match):
            bound_from_summary(0.7, args.pop("a"), args.pop("gamma"), 2.0, 100, 0.2, **args)
