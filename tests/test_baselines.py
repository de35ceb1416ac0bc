"""Baseline losses: formulas against explicit references, reductions to ERM, awkward batches,
option validation, the release's loss against a per-class loop reference, and a tiny
training run on sklearn digits."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mr2.method.losses import NEEDS_COUNTS, NEEDS_MODEL, build_loss, method_options
from mr2.method.losses import factory
from mr2.method.losses.center import CenterLoss, center_update_surrogate
from mr2.method.losses.fairdro import FairDROLoss, chi2_best_response
from mr2.method.losses.ldam import LDAMLoss, effective_number_weights, ldam_margins
from mr2.method.losses.release import ReleaseMR2Loss, release_margins
from mr2.method.losses.supcon import SupConLoss, supcon_loss

BASELINES = ("focal", "ldam", "logit_adjust", "eql", "supcon", "center", "dro", "fairdro", "mr2_release", "jtt", "lff")
#: the equally tuned controls: cross-entropy with its recipe searched, and cross-entropy of z/τ
CONTROLS = ("erm_tuned", "ce_temperature")
# losses called as loss(logits, features, targets); those owning a second network (LfF) need
# the batch inputs and indices and are tested in tests/test_jtt_lff.py
ALL = tuple(m for m in factory.METHODS if m not in NEEDS_MODEL)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def counts_for(k: int, balanced: bool = True) -> torch.Tensor:
    return torch.full((k,), 50.0) if balanced else torch.linspace(100, 5, k).round()


def make(method: str, k: int, d: int, balanced: bool = True, **options):
    loss = build_loss(method, k, d, class_counts=counts_for(k, balanced), **options)
    loss.train()
    return loss


# ---------------------------------------------------------------- awkward batches, all methods

AWKWARD = {
    "singletons": torch.tensor([0, 1, 2, 3, 4, 5]),
    "absent_classes": torch.tensor([0, 0, 0, 3, 3, 5]),
    "one_class": torch.tensor([2, 2, 2, 2, 2, 2]),
    "mixed": torch.tensor([0, 0, 1, 2, 2, 2]),
}


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("batch", sorted(AWKWARD))
@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4])
def test_finite_values_and_gradients_on_awkward_batches(method, batch, scale, gen):
    k, d = 6, 5
    y = AWKWARD[batch]
    loss = make(method, k, d, balanced=False)
    loss.on_epoch_start(0)
    for step in range(3):  # several steps: running state (q, buffers) is exercised too
        logits = torch.randn(len(y), k, generator=gen).requires_grad_()
        feats = (torch.randn(len(y), d, generator=gen) * scale).requires_grad_()
        out = loss(logits, feats, y)
        params = [p for p in loss.parameters()]
        grads = torch.autograd.grad(out.total, [logits, feats, *params], allow_unused=True)
        assert torch.isfinite(out.total), (method, batch, scale, step)
        assert all(g is None or torch.isfinite(g).all() for g in grads), (method, batch, scale, step)
        assert all(v.dim() == 0 and not v.requires_grad and torch.isfinite(v) for v in out.parts.values())
        loss.on_epoch_start(step + 1)
    summary = loss.class_summary()
    assert all(v.shape == (k,) and torch.isfinite(v.float()).all() for v in summary.values())


# ---------------------------------------------------------------- focal

def test_focal_matches_formula_and_reduces_to_ce_at_gamma_zero(gen):
    logits, y = torch.randn(10, 4, generator=gen), torch.randint(0, 4, (10,), generator=gen)
    p = logits.softmax(1)[torch.arange(10), y]
    out = make("focal", 4, 3, gamma=2.0)(logits, torch.zeros(10, 3), y)
    assert torch.allclose(out.total, (-(1 - p) ** 2 * p.log()).mean())
    assert torch.allclose(make("focal", 4, 3, gamma=0.0)(logits, torch.zeros(10, 3), y).total, F.cross_entropy(logits, y))
    assert out.total < F.cross_entropy(logits, y)


def test_focal_gradient_finite_for_small_gamma_and_confident_predictions():
    logits = torch.tensor([[200.0, 0.0, 0.0]], requires_grad=True)
    make("focal", 3, 2, gamma=0.5)(logits, torch.zeros(1, 2), torch.tensor([0])).total.backward()
    assert torch.isfinite(logits.grad).all()


# ---------------------------------------------------------------- LDAM

def test_ldam_margins_equal_on_balanced_counts():
    loss = make("ldam", 7, 3, balanced=True)
    assert torch.allclose(loss.margins, torch.full((7,), 0.5))
    assert torch.allclose(loss.class_summary()["margin"], torch.full((7,), 0.5))


def test_ldam_margins_follow_quarter_power_of_counts():
    counts = torch.tensor([1000.0, 100.0, 10.0, 1.0])
    delta = ldam_margins(counts, 0.5)
    assert torch.isclose(delta.max(), torch.tensor(0.5, dtype=delta.dtype)) and delta.argmax() == 3
    # Δ_k · n_k^{1/4} is the same constant C for every class
    c = delta * counts.pow(0.25)
    assert torch.allclose(c, c[0].expand(4))


def test_ldam_loss_matches_explicit_formula(gen):
    counts = torch.tensor([40.0, 20.0, 10.0, 5.0])
    loss = build_loss("ldam", 4, 3, class_counts=counts)
    z, y = torch.rand(6, 4, generator=gen) * 2 - 1, torch.tensor([0, 1, 2, 3, 3, 1])
    delta = ldam_margins(counts.double(), 0.5).float()
    ref = []
    for i in range(6):
        num = 30 * (z[i, y[i]] - delta[y[i]])
        others = torch.cat([30 * z[i, :y[i]], 30 * z[i, y[i] + 1:]])
        ref.append(-(num - torch.logsumexp(torch.cat([num.view(1), others]), 0)))
    assert torch.allclose(loss(z, torch.zeros(6, 3), y).total, torch.stack(ref).mean(), atol=1e-5)


def test_ldam_drw_is_off_by_default_and_switches_on_at_its_epoch(gen):
    counts = torch.tensor([400.0, 100.0, 20.0])
    z, y = torch.randn(9, 3, generator=gen), torch.tensor([0, 0, 0, 0, 1, 1, 1, 2, 2])
    plain = build_loss("ldam", 3, 2, class_counts=counts)
    drw = build_loss("ldam", 3, 2, class_counts=counts, drw_epoch=2)
    for epoch in range(4):
        plain.on_epoch_start(epoch)
        drw.on_epoch_start(epoch)
        same = torch.equal(plain(z, torch.zeros(9, 2), y).total, drw(z, torch.zeros(9, 2), y).total)
        assert same == (epoch < 2)
    w = effective_number_weights(counts.double(), 0.9999)
    assert torch.isclose(w.sum(), torch.tensor(3.0, dtype=w.dtype)) and w[2] > w[1] > w[0]
    assert torch.allclose(drw.class_summary()["class_weight"], w.float())
    assert torch.allclose(effective_number_weights(torch.full((4,), 9.0, dtype=torch.float64), 0.9999), torch.ones(4, dtype=torch.float64))


# ---------------------------------------------------------------- logit adjustment

def test_logit_adjust_equals_erm_on_balanced_counts(gen):
    z, y = torch.randn(12, 5, generator=gen), torch.randint(0, 5, (12,), generator=gen)
    assert torch.allclose(make("logit_adjust", 5, 3)(z, torch.zeros(12, 3), y).total, F.cross_entropy(z, y), atol=1e-6)


def test_logit_adjust_adds_tau_log_prior_on_imbalanced_counts(gen):
    counts = torch.tensor([70.0, 20.0, 10.0])
    z, y = torch.randn(8, 3, generator=gen), torch.randint(0, 3, (8,), generator=gen)
    prior = counts / counts.sum()
    for tau in (0.0, 1.0, 2.0):
        out = build_loss("logit_adjust", 3, 2, class_counts=counts, tau=tau)(z, torch.zeros(8, 2), y)
        assert torch.allclose(out.total, F.cross_entropy(z + tau * prior.log(), y), atol=1e-6)
    assert not torch.allclose(out.total, F.cross_entropy(z, y))


def test_logit_adjust_reports_the_log_priors_and_its_cross_entropy(gen):
    counts = torch.tensor([70.0, 20.0, 10.0])
    loss = build_loss("logit_adjust", 3, 2, class_counts=counts)
    assert torch.allclose(loss.class_summary()["log_prior"], torch.tensor([0.7, 0.2, 0.1]).log())  # a distribution
    z, y = torch.randn(8, 3, generator=gen), torch.randint(0, 3, (8,), generator=gen)
    out = loss(z, torch.zeros(8, 2), y)
    assert set(out.parts) == {"ce"} and torch.equal(out.parts["ce"], out.total.detach())


# ---------------------------------------------------------------- EQL

def test_eql_tail_is_strictly_rarer_than_lambda_and_lambda_spans_zero_to_one():
    counts = torch.tensor([1.0, 199.0])  # f_0 = 0.005 exactly: not rarer than λ = 0.005
    assert build_loss("eql", 2, 2, class_counts=counts).tail.tolist() == [False, False]
    assert build_loss("eql", 2, 2, class_counts=counts, lam=0.0051).tail.tolist() == [True, False]
    assert not build_loss("eql", 2, 2, class_counts=counts, lam=0.0).tail.any()  # λ = 0: no tail, ERM
    assert build_loss("eql", 2, 2, class_counts=counts, lam=1.0).tail.all()  # λ = 1: every class
    z, y = torch.randn(4, 2), torch.tensor([0, 1, 1, 0])
    assert set(build_loss("eql", 2, 2, class_counts=counts)(z, torch.zeros(4, 2), y).parts) == {"eql"}


def test_eql_is_erm_on_balanced_data_when_no_class_is_rare(gen):
    z, y = torch.randn(16, 10, generator=gen), torch.randint(0, 10, (16,), generator=gen)
    loss = make("eql", 10, 3)  # f_k = 0.1 >= λ = 0.005: no tail class
    assert not loss.tail.any()
    assert torch.equal(loss(z, torch.zeros(16, 3), y).total, F.cross_entropy(z, y))


def test_eql_drops_only_rare_negatives_and_nothing_in_eval(gen):
    counts = torch.tensor([500.0, 500.0, 2.0, 1.0])  # classes 2, 3 below λ = 0.005
    loss = build_loss("eql", 4, 2, class_counts=counts, gamma=1.0)  # γ = 1: always drop
    assert loss.tail.tolist() == [False, False, True, True]
    z, y = torch.randn(6, 4, generator=gen), torch.tensor([0, 1, 2, 3, 0, 2])
    ref = []
    for i in range(6):
        keep = [j for j in range(4) if j == y[i] or not loss.tail[j]]
        ref.append(-(z[i, y[i]] - torch.logsumexp(z[i, keep], 0)))
    loss.train()
    assert torch.allclose(loss(z, torch.zeros(6, 2), y).total, torch.stack(ref).mean())
    loss.eval()
    assert torch.equal(loss(z, torch.zeros(6, 2), y).total, F.cross_entropy(z, y))
    loss.train()
    assert torch.equal(build_loss("eql", 4, 2, class_counts=counts, gamma=0.0)(z, torch.zeros(6, 2), y).total, F.cross_entropy(z, y))


def test_eql_drop_rate_is_gamma():
    torch.manual_seed(0)
    loss = build_loss("eql", 4, 2, class_counts=torch.tensor([1.0, 1.0, 1.0, 1.0]), lam=0.5, gamma=0.3)
    mask = loss.drop_mask(torch.zeros(20000, dtype=torch.long), 4)
    assert not mask[:, 0].any()  # the true class is never dropped
    assert abs(mask[:, 1:].float().mean().item() - 0.3) < 0.01


# ---------------------------------------------------------------- SupCon

def supcon_reference(z: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
    terms = []
    for i in range(len(y)):
        pos = [p for p in range(len(y)) if p != i and y[p] == y[i]]
        if not pos:
            continue
        denom = torch.logsumexp(torch.stack([z[i] @ z[a] / tau for a in range(len(y)) if a != i]), 0)
        terms.append(-torch.stack([z[i] @ z[p] / tau - denom for p in pos]).mean())
    return torch.stack(terms).mean() if terms else torch.zeros(())


def test_supcon_matches_loop_reference_for_one_and_two_views(gen):
    z = F.normalize(torch.randn(8, 5, generator=gen, dtype=torch.float64), dim=1)
    one_view = torch.tensor([0, 0, 1, 2, 2, 2, 3, 1])
    assert torch.allclose(supcon_loss(z, one_view, 0.1), supcon_reference(z, one_view, 0.1))
    two_views = torch.tensor([0, 1, 2, 3]).repeat(2)  # every class has exactly its other view
    assert torch.allclose(supcon_loss(z, two_views, 0.1), supcon_reference(z, two_views, 0.1))
    assert supcon_loss(z[:4], torch.tensor([0, 1, 2, 3]), 0.1) == 0  # no positive pair


def test_supcon_total_is_ce_plus_weighted_supcon_and_owns_a_head(gen):
    loss = make("supcon", 4, 6, weight=0.5)
    assert loss.n_views == 2 and len(list(loss.parameters())) == 4
    z, f, y = torch.randn(8, 4, generator=gen), torch.randn(8, 6, generator=gen), torch.tensor([0, 1, 2, 3]).repeat(2)
    out = loss(z, f, y)
    ref = F.cross_entropy(z, y) + 0.5 * supcon_reference(loss.project(f), y, 0.1)
    assert torch.allclose(out.total, ref, atol=1e-5)
    out.total.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in loss.parameters())
    singles = loss(z[:4], f[:4], y[:4])
    assert torch.allclose(singles.total, F.cross_entropy(z[:4], y[:4])) and singles.parts["supcon"] == 0


# ---------------------------------------------------------------- center loss

def test_center_value_and_gradients_follow_the_paper(gen):
    k, d = 4, 3
    loss = CenterLoss(k, d, lam=0.1, alpha=0.5).double()
    with torch.no_grad():
        loss.centers.copy_(torch.randn(k, d, generator=gen, dtype=torch.float64))
    y = torch.tensor([0, 0, 0, 2, 2, 3])  # class 1 absent
    z = torch.randn(6, k, generator=gen, dtype=torch.float64)
    x = torch.randn(6, d, generator=gen, dtype=torch.float64).requires_grad_()
    out = loss(z, x, y)
    c = loss.centers.detach()
    assert torch.allclose(out.total, F.cross_entropy(z, y) + 0.1 * 0.5 * ((x - c[y]) ** 2).sum(1).mean())
    out.total.backward()
    assert torch.allclose(x.grad, 0.1 * (x.detach() - c[y]) / 6)  # ∂(λ L_C)/∂x_i, batch mean
    for j in range(k):  # the paper's Δc_j, times α
        idx = (y == j).nonzero().flatten()
        delta = (c[j] - x.detach()[idx]).sum(0) / (1 + len(idx))
        assert torch.allclose(loss.centers.grad[j], 0.5 * delta)
    assert loss.centers.grad[1].abs().sum() == 0


# ---------------------------------------------------------------- group DRO

def test_dro_with_zero_step_is_erm_on_a_balanced_batch(gen):
    loss = make("dro", 4, 3, eta=0.0)
    y = torch.tensor([0, 1, 2, 3]).repeat(3)
    for _ in range(3):
        z = torch.randn(12, 4, generator=gen)
        assert torch.allclose(loss(z, torch.zeros(12, 3), y).total, F.cross_entropy(z, y), atol=1e-6)
    assert torch.allclose(loss.q, torch.full((4,), 0.25))


def test_dro_exponentiated_step_matches_reference_and_keeps_absent_weights(gen):
    loss = make("dro", 5, 3, eta=0.5)
    y = torch.tensor([0, 0, 1, 3, 3, 3])  # classes 2, 4 absent
    z = torch.randn(6, 5, generator=gen)
    q0 = loss.q.clone()
    out = loss(z, torch.zeros(6, 3), y)
    per = F.cross_entropy(z, y, reduction="none")
    ell = torch.stack([per[y == k].mean() if (y == k).any() else torch.tensor(0.0) for k in range(5)])
    present = [0, 1, 3]
    raw = {k: q0[k] * math.exp(0.5 * ell[k].item()) for k in present}
    mass = sum(q0[k].item() for k in present)
    expect = q0.clone()
    for k in present:
        expect[k] = raw[k] / sum(raw.values()) * mass
    assert torch.allclose(loss.q, expect) and torch.isclose(loss.q.sum(), torch.tensor(1.0))
    assert loss.q[2] == q0[2] and loss.q[4] == q0[4]
    ref = sum(expect[k] * ell[k] for k in present) / sum(expect[k] for k in present)
    assert torch.allclose(out.total, ref)
    hardest = max(present, key=lambda k: ell[k].item())
    assert loss.q[hardest] == max(loss.q[k] for k in present)
    loss.eval()
    q1 = loss.q.clone()
    loss(z, torch.zeros(6, 3), y)
    assert torch.equal(loss.q, q1)


# ---------------------------------------------------------------- FairDRO

def test_chi2_best_response_is_mean_plus_scaled_std_on_the_ball():
    ell = torch.tensor([0.2, 1.5, 0.7, 3.0], dtype=torch.float64)
    q = chi2_best_response(ell, 0.3)
    assert torch.isclose(q.sum(), torch.tensor(1.0, dtype=torch.float64))
    assert torch.isclose(0.5 * ((4 * q - 1) ** 2).mean(), torch.tensor(0.3, dtype=torch.float64))
    assert torch.isclose(q @ ell, ell.mean() + math.sqrt(2 * 0.3) * ell.std(unbiased=False))
    assert torch.equal(chi2_best_response(torch.ones(3, dtype=torch.float64), 0.3), torch.full((3,), 1 / 3, dtype=torch.float64))


def test_fairdro_with_zero_radius_is_erm_on_a_balanced_batch(gen):
    loss = make("fairdro", 3, 2, rho=0.0)
    y = torch.tensor([0, 1, 2]).repeat(4)
    for epoch in range(3):
        loss.on_epoch_start(epoch)
        z = torch.randn(12, 3, generator=gen)
        assert torch.allclose(loss(z, torch.zeros(12, 2), y).total, F.cross_entropy(z, y), atol=1e-6)


def test_fairdro_sets_q_from_the_previous_epoch_losses(gen):
    loss = make("fairdro", 3, 2, rho=0.3)
    loss.on_epoch_start(0)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    zs = [torch.randn(6, 3, generator=gen) for _ in range(2)]
    for z in zs:
        out = loss(z, torch.zeros(6, 2), y)
        assert torch.allclose(out.total, F.cross_entropy(z, y), atol=1e-6)  # first epoch: q uniform
    loss.eval()
    loss(torch.randn(6, 3, generator=gen) * 50, torch.zeros(6, 2), y)  # eval batches are not accumulated
    loss.train()
    loss.on_epoch_start(1)
    per = torch.cat([F.cross_entropy(z, y, reduction="none") for z in zs])
    yy = y.repeat(2)
    ell = torch.stack([per[yy == k].mean() for k in range(3)])
    expect = chi2_best_response(ell.double(), 0.3).float()
    assert torch.allclose(loss.q, expect, atol=1e-6)
    z = torch.randn(6, 3, generator=gen)
    per = F.cross_entropy(z, y, reduction="none")
    batch_ell = torch.stack([per[y == k].mean() for k in range(3)])
    assert torch.allclose(loss(z, torch.zeros(6, 2), y).total, (expect * batch_ell).sum(), atol=1e-6)


# ---------------------------------------------------------------- the release's loss

class LoopRelease:
    """Slow reference written from docs/method.md (the release's loss, step by step).

    The buffer update is a literal transcription of the release's per-class rule: only the
    mean-norm buffer is tested (for 0 or NaN), and then both buffers take the batch values;
    otherwise both are blended.
    """

    def __init__(self, k: int, d: int, lam: float = 0.1, decay: float = 0.9, zero_s_bar: bool = True):
        self.k, self.d, self.lam, self.decay, self.zero_s_bar = k, d, lam, decay, zero_s_bar
        self.reset()

    def reset(self):
        self.m = [0.0] * self.k
        self.v = [0.0] * self.k

    @staticmethod
    def l5_sq(x):
        return float((x.abs() ** 5).sum() ** 0.4)

    def __call__(self, logits, feats, y, training=True):
        if training:
            for c in range(self.k):
                xs = feats.detach()[y == c]
                if len(xs) == 0:
                    continue
                mu = xs.mean(0)
                m_new = self.l5_sq(mu)
                v_new = sum(self.l5_sq(x - mu) for x in xs) / len(xs)
                if self.m[c] == 0 or math.isnan(self.m[c]):
                    self.m[c] = m_new
                    self.v[c] = v_new
                else:
                    self.m[c] = self.decay * self.m[c] + (1 - self.decay) * m_new
                    self.v[c] = self.decay * self.v[c] + (1 - self.decay) * v_new
        g = [(self.m[c] + self.v[c]) ** (1 / 3) for c in range(self.k)]
        gamma = [self.k * gc / sum(g) for gc in g]
        ce = torch.stack([-F.log_softmax(logits[i] / gamma[y[i]], 0)[y[i]] for i in range(len(y))]).mean()
        s_bar = 0.0 if self.zero_s_bar else sum(self.v) / self.k
        rep = torch.zeros((), dtype=feats.dtype)
        for c in range(self.k):
            idx = (y == c).nonzero().flatten().tolist()
            if len(idx) < 2:
                continue
            anchors = []
            for i in idx:
                s = sum(torch.exp((((feats[i] - feats[j]) ** 2).sum() - 2 * s_bar) / (10 * self.d)) for j in idx if j != i)
                anchors.append(torch.log(1 + s))
            rep = rep + torch.stack(anchors).mean()
        rep = rep * self.d / (10 * self.k)
        return ce + self.lam * rep


@pytest.mark.parametrize("zero_s_bar", [True, False])
def test_release_matches_loop_reference_with_reset_and_eval(zero_s_bar, gen):
    k, d = 4, 3
    loss = build_loss("mr2_release", k, d, zero_s_bar=zero_s_bar).double()
    ref = LoopRelease(k, d, zero_s_bar=zero_s_bar)
    batches = [
        ("train", torch.tensor([0, 0, 1, 1, 1, 2])),  # class 3 unseen
        ("train", torch.tensor([0, 1, 2, 3, 3, 3])),  # singletons: v = 0 batches
        ("eval", torch.tensor([0, 0, 1, 2, 3, 3])),
        ("train", torch.tensor([3, 3, 3, 2, 2, 0])),
        ("epoch", None),
        ("train", torch.tensor([1, 1, 2, 2, 2, 0])),
        ("train", torch.tensor([0, 0, 0, 0, 0, 0])),
    ]
    for mode, y in batches:
        if mode == "epoch":
            loss.on_epoch_start(1)
            ref.reset()
            assert loss.m.abs().sum() == 0 and loss.v.abs().sum() == 0
            continue
        loss.train(mode == "train")
        z = torch.randn(len(y), k, generator=gen, dtype=torch.float64).requires_grad_()
        x = (torch.randn(len(y), d, generator=gen, dtype=torch.float64) * 2).requires_grad_()
        m_before = loss.m.clone()
        out = loss(z, x, y)
        expect = ref(z, x, y, training=mode == "train")
        assert torch.allclose(out.total, expect), (mode, y)
        assert torch.allclose(loss.m, torch.tensor(ref.m, dtype=torch.float64))
        assert torch.allclose(loss.v, torch.tensor(ref.v, dtype=torch.float64))
        if mode == "eval":
            assert torch.equal(loss.m, m_before)
        g = torch.autograd.grad(out.total, [z, x])
        g_ref = torch.autograd.grad(expect, [z, x])
        assert all(torch.allclose(a, b) for a, b in zip(g, g_ref))


@pytest.mark.parametrize("zero_s_bar", [True, False])
def test_release_matches_literal_update_on_a_cifar100_sized_stream(zero_s_bar, gen):
    """K = 100, B = 128 (CIFAR-100's batch): most classes in a batch are alone, so their first
    visit leaves v = 0 with m > 0; the next visit must blend both buffers, not replace v."""
    k, b, d, steps = 100, 128, 64, 20
    loss = build_loss("mr2_release", k, d, zero_s_bar=zero_s_bar).double().train()
    ref = LoopRelease(k, d, zero_s_bar=zero_s_bar)
    centres = torch.randn(k, d, generator=gen, dtype=torch.float64)
    first_visit, alone_then_paired = {}, set()
    for step in range(steps):
        y = torch.randint(0, k, (b,), generator=gen)
        for c, n in enumerate(torch.bincount(y, minlength=k).tolist()):
            if n and c in first_visit and first_visit[c] == 1 and n >= 2:
                alone_then_paired.add(c)
            if n:
                first_visit.setdefault(c, n)
        z = torch.randn(b, k, generator=gen, dtype=torch.float64).requires_grad_()
        x = (centres[y] + 2 * torch.randn(b, d, generator=gen, dtype=torch.float64)).requires_grad_()
        out, expect = loss(z, x, y), ref(z, x, y)
        close = dict(rtol=1e-10, atol=1e-12, msg=lambda m: f"step {step}: {m}")
        torch.testing.assert_close(out.total, expect, **close)
        torch.testing.assert_close(loss.m, torch.tensor(ref.m, dtype=torch.float64), **close)
        torch.testing.assert_close(loss.v, torch.tensor(ref.v, dtype=torch.float64), **close)
        for g, g_ref in zip(torch.autograd.grad(out.total, [z, x]), torch.autograd.grad(expect, [z, x])):
            torch.testing.assert_close(g, g_ref, **close)
    assert len(alone_then_paired) >= 20  # the case that separates the release's rule from a per-buffer one


def test_release_buffer_rule_tests_only_the_mean_norm_buffer(gen):
    """m = NaN or 0: both buffers take the batch values (a nonzero v included); m > 0 with v = 0
    (a class first seen alone): both blended, v too."""
    k, d, decay = 3, 4, 0.9
    loss = build_loss("mr2_release", k, d, decay=decay).double().train()
    loss.m.copy_(torch.tensor([float("nan"), 2.0, 0.0]))
    loss.v.copy_(torch.tensor([5.0, 0.0, 7.0]))
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    z = torch.randn(6, k, generator=gen, dtype=torch.float64)
    x = torch.randn(6, d, generator=gen, dtype=torch.float64)
    batch = LoopRelease(k, d)  # from zero buffers: holds the batch values after one step
    batch(z, x, y)
    m_new, v_new = torch.tensor(batch.m, dtype=torch.float64), torch.tensor(batch.v, dtype=torch.float64)
    assert (v_new > 0).all()
    loss(z, x, y)
    expect_m = torch.stack([m_new[0], decay * 2.0 + (1 - decay) * m_new[1], m_new[2]])
    expect_v = torch.stack([v_new[0], (1 - decay) * v_new[1], v_new[2]])
    torch.testing.assert_close(loss.m, expect_m)
    torch.testing.assert_close(loss.v, expect_v)


def test_release_s_bar_option_changes_the_representation_term(gen):
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    x, z = torch.randn(6, 4, generator=gen) * 3, torch.randn(6, 2, generator=gen)
    zero = build_loss("mr2_release", 2, 4)(z, x, y)
    kept = build_loss("mr2_release", 2, 4, zero_s_bar=False)(z, x, y)
    assert torch.equal(zero.parts["ce"], kept.parts["ce"]) and kept.parts["rep"] < zero.parts["rep"]


# ---------------------------------------------------------------- factory and options

def test_factory_lists_and_documents_every_method():
    assert set(BASELINES) | set(CONTROLS) | {"erm", "mr2", "mr2_uniform", "mr2_no_rep"} == set(factory.METHODS)
    for name in factory.METHODS:
        assert f"``{name}``" in factory.__doc__


def test_published_defaults_are_visible():
    assert method_options("focal") == {"gamma": 2.0}
    assert method_options("ldam")["max_margin"] == 0.5 and method_options("ldam")["s"] == 30.0
    assert method_options("ldam")["drw_epoch"] is None
    assert method_options("logit_adjust") == {"tau": 1.0}
    assert method_options("supcon")["temperature"] == 0.1
    assert method_options("center")["lam"] == 0.003
    assert method_options("dro") == {"eta": 0.01}
    assert method_options("mr2_release") == {"lam": 0.1, "decay": 0.9, "zero_s_bar": True}
    assert method_options("jtt") == {"stage1_epochs": 1, "upweight": 6}
    assert method_options("lff") == {"q": 0.7, "alpha": 0.7}
    assert method_options("ce_temperature") == {"tau": 1.0} and method_options("erm_tuned") == {}


@pytest.mark.parametrize("method", sorted(NEEDS_COUNTS))
def test_methods_needing_counts_reject_missing_or_bad_counts(method):
    with pytest.raises(ValueError, match="needs class_counts"):
        build_loss(method, 3, 2)
    with pytest.raises(ValueError, match="3 entries, expected num_classes=4"):
        build_loss(method, 4, 2, class_counts=[1, 2, 3])
    with pytest.raises(ValueError, match="bad classes \\[1\\]"):
        build_loss(method, 3, 2, class_counts=[1, -2, 3])


@pytest.mark.parametrize("method", ["ldam", "logit_adjust"])
def test_zero_counts_are_rejected_where_the_formula_needs_positive_counts(method):
    with pytest.raises(ValueError, match="classes \\[2\\] have no samples"):
        build_loss(method, 3, 2, class_counts=[4, 5, 0])


def test_methods_without_counts_ignore_them():
    assert build_loss("focal", 3, 2, class_counts=[1, 2, 3]).gamma == 2.0
    build_loss("erm", 3, 2, class_counts=[1, 2, 3])


@pytest.mark.parametrize(
    "method, options, message",
    [
        ("focal", {"alpha": 0.25}, "'focal' does not take option 'alpha'"),
        ("focal", {"gamma": -1.0}, "gamma"),
        ("ldam", {"max_margin": -0.1}, "max_margin"),
        ("ldam", {"s": 0.0}, "s must be"),
        ("ldam", {"drw_epoch": 1.5}, "drw_epoch"),
        ("ldam", {"drw_beta": 1.0}, "drw_beta"),
        ("logit_adjust", {"tau": -1.0}, "tau"),
        ("eql", {"lam": 2.0}, "lam"),
        ("eql", {"gamma": 1.5}, "gamma"),
        ("supcon", {"temperature": 0.0}, "temperature"),
        ("supcon", {"proj_dim": 0}, "proj_dim"),
        ("supcon", {"weight": -1.0}, "weight"),
        ("supcon", {"base_temperature": 0.0}, "base_temperature must be a number > 0"),
        ("supcon", {"base_temperature": "0.07"}, "base_temperature must be a number > 0"),
        ("center", {"init": "ones"}, "init must be one of zeros, xavier, randn"),
        ("center", {"lam": -1.0}, "lam"),
        ("center", {"alpha": -1.0}, "alpha"),
        ("dro", {"eta": -0.1}, "eta"),
        ("dro", {"rho": 0.1}, "'dro' does not take option 'rho'"),
        ("fairdro", {"rho": -0.1}, "rho"),
        ("mr2_release", {"decay": 1.0}, "decay"),
        ("mr2_release", {"zero_s_bar": "yes"}, "zero_s_bar"),
        ("mr2_release", {"c_bar": 1.0}, "option 'c_bar'"),
        ("mr2_no_rep", {"lam": 0.5}, "fixes lam"),
        ("jtt", {"upweight": 0}, "upweight must be an integer >= 1"),
        ("jtt", {"stage1_epochs": 1.5}, "option 'stage1_epochs' must be an integer"),
        ("jtt", {"lam": 0.1}, "'jtt' does not take option 'lam'"),
        ("lff", {"q": 0.0}, "q must be in"),
        ("lff", {"alpha": 1.0}, "alpha must be in"),
    ],
)
def test_invalid_options_are_rejected_by_name(method, options, message):
    with pytest.raises(ValueError, match=message):
        build_loss(method, 4, 3, class_counts=[5, 5, 5, 5], model_builder=lambda: torch.nn.Linear(2, 4),
                   num_samples=10, **options)


# ---------------------------------------------------------------- tiny training run

@pytest.fixture
def one_thread():
    """Tiny matrices: intra-op threads only add contention (50x slower on a loaded 2-core box)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x, dtype=torch.float32)
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    return x, torch.tensor(y)


@pytest.mark.parametrize("method", ALL)
def test_each_loss_trains_a_linear_model_on_digits(method, digits, one_thread):
    torch.manual_seed(0)
    x, y = digits
    xtr, ytr, xte, yte = x[:400], y[:400], x[400:], y[400:]
    embed, head = torch.nn.Linear(64, 16), torch.nn.Linear(16, 10)
    counts = torch.bincount(ytr, minlength=10)
    loss = build_loss(method, 10, 16, class_counts=counts)
    loss.train()
    opt = torch.optim.Adam([*embed.parameters(), *head.parameters(), *loss.parameters()], lr=0.03)
    values = []
    for step in range(50):
        loss.on_epoch_start(step)
        f = embed(xtr)
        if loss.n_views == 2:  # two "views": the sample and a noisy copy
            f = torch.cat([f, embed(xtr + 0.1 * torch.randn_like(xtr))])
        out = loss(head(f), f, ytr.repeat(loss.n_views))
        opt.zero_grad()
        out.total.backward()
        opt.step()
        values.append(out.total.item())
    assert values[-1] < 0.8 * values[0], values[::10]
    with torch.no_grad():
        acc = (head(embed(xte)).argmax(1) == yte).float().mean().item()
    assert acc > 0.5, acc


# ---------------------------------------------------------------- what each loss reports

#: the parts a loss reports (written to epochs.csv as ``train_<part>``) and how they relate to its total
PARTS = {"erm": {"ce"}, "erm_tuned": {"ce"}, "ce_temperature": {"ce"}, "jtt": {"ce"}, "logit_adjust": {"ce"}, "focal": {"focal"}, "ldam": {"ldam"}, "eql": {"eql"},
         "mr2": {"ce", "rep"}, "mr2_uniform": {"ce", "rep"}, "mr2_no_rep": {"ce", "rep"}, "mr2_release": {"ce", "rep"},
         "supcon": {"ce", "supcon"}, "center": {"ce", "center"}, "dro": {"ce", "robust"}, "fairdro": {"ce", "robust"}}


@pytest.mark.parametrize("method", sorted(PARTS))
def test_each_loss_reports_its_named_parts(method, gen):
    assert set(PARTS) == set(ALL)
    loss = make(method, 3, 4, balanced=False)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    z, f = torch.randn(6, 3, generator=gen), torch.randn(6, 4, generator=gen)
    out = loss(z, f, y)
    assert set(out.parts) == PARTS[method]
    if len(PARTS[method]) == 1:  # a single term is the total
        assert torch.equal(next(iter(out.parts.values())), out.total.detach())
    if "ce" in PARTS[method] and method not in ("erm", "erm_tuned", "ce_temperature", "jtt", "logit_adjust", "mr2",
                                                 "mr2_uniform", "mr2_no_rep", "mr2_release"):
        assert torch.allclose(out.parts["ce"], F.cross_entropy(z, y))  # plain CE of the batch, reported alongside


def test_fairdro_batch_loss_over_present_classes_and_q_from_seen_classes(gen):
    """K/|P| Σ_{k∈P} q_k ℓ_k on a batch missing a class and holding one class once; the next q is the
    best response to the epoch's class means, an unseen class taking the mean loss."""
    k = 4
    loss = make("fairdro", k, 2, rho=0.2)
    loss.on_epoch_start(0)
    y = torch.tensor([0, 0, 0, 1, 2, 2])  # class 3 unseen all epoch, class 1 seen once
    z = torch.randn(6, k, generator=gen)
    loss(z, torch.zeros(6, 2), y)
    loss.on_epoch_start(1)
    per = F.cross_entropy(z, y, reduction="none")
    ell = [per[y == c].mean().item() for c in range(3)]
    ell.append(sum(ell) / 3)  # unseen: the mean of the seen classes' losses
    q = chi2_best_response(torch.tensor(ell, dtype=torch.float64), 0.2).float()
    assert torch.allclose(loss.q, q, atol=1e-6)
    z2 = torch.randn(6, k, generator=gen)
    per2 = F.cross_entropy(z2, y, reduction="none")
    want = k / 3 * sum(q[c] * per2[y == c].mean() for c in range(3))
    assert torch.allclose(loss(z2, torch.zeros(6, 2), y).total, want, atol=1e-6)
    one = torch.zeros(3, dtype=torch.long)  # a batch of one class: K q_0 ℓ_0
    assert torch.allclose(loss(z2[:3], torch.zeros(3, 2), one).total, k * q[0] * F.cross_entropy(z2[:3], one), atol=1e-6)


# ---------------------------------------------------------------- the authors' code, transcribed
# Each reference below is the authors' published formula written out here, line for line in its
# own terms (their tensor layout and names), on random inputs; the library's loss with the option
# mapping the docstrings state must give the same number.

def authors_supcon(features: torch.Tensor, labels: torch.Tensor, temperature: float, base_temperature: float) -> torch.Tensor:
    """HobbitLong/SupContrast losses.py, contrast_mode 'all': features [bsz, n_views, dim]."""
    batch_size, contrast_count = features.shape[0], features.shape[1]
    mask = torch.eq(labels.view(-1, 1), labels.view(-1, 1).T).float()
    contrast_feature = torch.cat(torch.unbind(features, dim=1), dim=0)
    anchor_feature, anchor_count = contrast_feature, contrast_count
    anchor_dot_contrast = torch.div(torch.matmul(anchor_feature, contrast_feature.T), temperature)
    logits_max, _ = torch.max(anchor_dot_contrast, dim=1, keepdim=True)
    logits = anchor_dot_contrast - logits_max.detach()
    mask = mask.repeat(anchor_count, contrast_count)
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(batch_size * anchor_count).view(-1, 1), 0)
    mask = mask * logits_mask
    exp_logits = torch.exp(logits) * logits_mask
    log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True) + 1e-9)
    mean_log_prob_pos = (mask * log_prob).sum(1) / mask.sum(1)
    loss = -(temperature / base_temperature) * mean_log_prob_pos
    return loss.view(anchor_count, batch_size).mean()


@pytest.mark.parametrize("temperature, base", [(0.1, 0.07), (0.5, 0.5), (0.07, 0.2)])
def test_supcon_with_base_temperature_is_the_authors_loss(temperature, base, gen):
    k, d, bsz = 3, 6, 7
    loss = make("supcon", k, d, temperature=temperature, base_temperature=base).double()
    labels = torch.randint(0, k, (bsz,), generator=gen)
    f = torch.randn(2 * bsz, d, generator=gen, dtype=torch.float64)  # rows: view 1, then view 2
    z = torch.randn(2 * bsz, k, generator=gen, dtype=torch.float64)
    out = loss(z, f, labels.repeat(2))
    p = loss.project(f)
    assert torch.allclose(p.norm(dim=1), torch.ones(2 * bsz, dtype=torch.float64))  # rows on the unit sphere
    theirs = authors_supcon(torch.stack([p[:bsz], p[bsz:]], dim=1), labels, temperature, base)
    assert torch.allclose(out.parts["supcon"], theirs, atol=1e-7)
    assert torch.allclose(out.total, F.cross_entropy(z, labels.repeat(2)) + theirs, atol=1e-7)


def test_supcon_default_is_the_paper_formula_without_the_authors_factor(gen):
    loss = make("supcon", 3, 5, temperature=0.1).double()
    labels = torch.tensor([0, 1, 2, 0, 1])
    f = torch.randn(10, 5, generator=gen, dtype=torch.float64)
    p = loss.project(f)
    out = loss(torch.randn(10, 3, generator=gen, dtype=torch.float64), f, labels.repeat(2))
    # the authors' loss with base_temperature = τ carries the factor 1
    assert torch.allclose(out.parts["supcon"], authors_supcon(torch.stack([p[:5], p[5:]], 1), labels, 0.1, 0.1), atol=1e-7)
    assert method_options("supcon")["base_temperature"] is None


def authors_center_caffe(x: torch.Tensor, label: torch.Tensor, center: torch.Tensor) -> torch.Tensor:
    """ydwen/caffe-face center_loss_layer Forward: distance = x − c_label; loss = dot / M / 2."""
    m = x.shape[0]
    distance = x - center[label]
    dot = (distance * distance).sum()
    return dot / m / 2


def authors_center_pytorch_port(x: torch.Tensor, labels: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """KaiyangZhou/pytorch-center-loss: expanded distance matrix, masked by the labels, / batch."""
    batch_size, num_classes = x.shape[0], centers.shape[0]
    distmat = (x.pow(2).sum(1, keepdim=True).expand(batch_size, num_classes)
               + centers.pow(2).sum(1, keepdim=True).expand(num_classes, batch_size).t())
    distmat = distmat - 2 * x @ centers.t()
    mask = labels.unsqueeze(1).expand(batch_size, num_classes).eq(torch.arange(num_classes).expand(batch_size, num_classes))
    return (distmat * mask.float()).clamp(min=1e-12, max=1e12).sum() / batch_size


def test_center_term_is_the_authors_and_twice_the_ports(gen):
    k, d = 4, 5
    loss = CenterLoss(k, d, lam=1.0, init="randn").double()
    x = torch.randn(9, d, generator=gen, dtype=torch.float64)
    y = torch.randint(0, k, (9,), generator=gen)
    out = loss(torch.zeros(9, k, dtype=torch.float64), x, y)
    c = loss.centers.detach()
    assert torch.allclose(out.parts["center"], authors_center_caffe(x, y, c))
    assert torch.allclose(2 * out.parts["center"], authors_center_pytorch_port(x, y, c))


def test_center_initialisations(gen):
    torch.manual_seed(0)
    zeros = CenterLoss(10, 400).centers.detach()
    xavier = CenterLoss(10, 400, init="xavier").centers.detach()
    randn = CenterLoss(10, 400, init="randn").centers.detach()
    assert torch.count_nonzero(zeros) == 0
    assert zeros.shape == xavier.shape == randn.shape == (10, 400)
    bound = math.sqrt(3 / 400)  # Caffe's xavier filler: U[−√(3/fan_in), √(3/fan_in)], fan_in = D
    assert xavier.abs().max() <= bound and xavier.abs().max() > 0.95 * bound
    assert abs(xavier.var().item() - bound ** 2 / 3) < 0.1 * bound ** 2 / 3  # variance of U[−b, b] is b²/3
    assert abs(randn.mean().item()) < 0.05 and abs(randn.std().item() - 1) < 0.05
    with pytest.raises(ValueError, match="center: init must be one of"):
        CenterLoss(3, 2, init="ones")


def authors_jtt_epoch(n: int, aug_indices: list[int], up_weight: int) -> list[int]:
    """anniesch/jtt run_expt.py: ConcatDataset([train_data, Subset(train_data, list(aug_indices) * up_weight)])."""
    return list(range(n)) + list(aug_indices) * up_weight


@pytest.mark.parametrize("u", [1, 5, 6])
def test_jtt_upweight_u_plus_one_is_the_authors_up_weight_u(u, gen):
    from collections import Counter

    from mr2.engine.upsample import upsampled_index

    n = 30
    errors = torch.randperm(n, generator=gen)[:7]
    ours = Counter(upsampled_index(n, errors, u + 1).tolist())
    theirs = Counter(authors_jtt_epoch(n, errors.tolist(), u))
    assert ours == theirs
    assert Counter(upsampled_index(n, errors, u).tolist())[int(errors[0])] == u  # ours at the same number: one fewer


def authors_fairdro_ibr(losses: torch.Tensor, rho: float) -> torch.Tensor:
    """sangwon-jung94/FairDRO trainer/fairdro.py _update_mw_margin (the 'ibr' update)."""
    n_groups = len(losses)
    mean = losses.mean()
    denom = (losses - mean).norm(2)
    if denom == 0:
        return torch.zeros_like(losses) + 1 / n_groups
    return 1 / n_groups + np.sqrt(2 * rho / n_groups) * (1 / denom) * (losses - mean)


def test_fairdro_best_response_is_the_authors_ibr_update(gen):
    for k, rho in ((2, 0.3), (5, 0.05), (10, 0.5)):
        ell = torch.rand(k, generator=gen, dtype=torch.float64) * 3
        assert torch.allclose(chi2_best_response(ell, rho), authors_fairdro_ibr(ell, rho))
    flat = torch.full((4,), 0.7, dtype=torch.float64)
    assert torch.equal(chi2_best_response(flat, 0.3), authors_fairdro_ibr(flat, 0.3))


def authors_ldam(cls_num_list, x, target, max_m=0.5, s=30, weight=None):
    """kaidic/LDAM-DRW losses.py LDAMLoss (CPU tensors in place of torch.cuda ones)."""
    m_list = 1.0 / np.sqrt(np.sqrt(cls_num_list))
    m_list = m_list * (max_m / np.max(m_list))
    m_list = torch.tensor(m_list, dtype=x.dtype)
    index = torch.zeros_like(x, dtype=torch.uint8)
    index.scatter_(1, target.data.view(-1, 1), 1)
    index_float = index.type(x.dtype)
    batch_m = torch.matmul(m_list[None, :], index_float.transpose(0, 1))
    batch_m = batch_m.view((-1, 1))
    x_m = x - batch_m
    output = torch.where(index.bool(), x_m, x)
    return F.cross_entropy(s * output, target, weight=weight)


def authors_drw_weights(cls_num_list, epoch, drw_epoch):
    """kaidic/LDAM-DRW cifar_train.py, train_rule == 'DRW': idx = epoch // 160 with betas [0, 0.9999]
    (160 is their DRW epoch of 200; here ``drw_epoch``)."""
    idx = epoch // drw_epoch
    betas = [0, 0.9999]
    effective_num = 1.0 - np.power(betas[idx], cls_num_list)
    per_cls_weights = (1.0 - betas[idx]) / np.array(effective_num)
    per_cls_weights = per_cls_weights / np.sum(per_cls_weights) * len(cls_num_list)
    return torch.FloatTensor(per_cls_weights)


def test_ldam_is_the_authors_loss(gen):
    counts = [500.0, 120.0, 60.0, 9.0, 3.0]
    loss = build_loss("ldam", 5, 3, class_counts=torch.tensor(counts)).double()
    x = torch.rand(11, 5, generator=gen, dtype=torch.float64) * 2 - 1
    y = torch.randint(0, 5, (11,), generator=gen)
    assert torch.allclose(loss(x, torch.zeros(11, 3, dtype=torch.float64), y).total, authors_ldam(counts, x, y))


def test_ldam_drw_is_the_authors_deferred_reweighting(gen):
    """Before ``drw_epoch`` their β = 0 weights (all 1), from it their effective-number weights, fed to
    their weighted LDAM loss; the counts span four orders of magnitude so every weight differs."""
    counts = [5000.0, 800.0, 120.0, 20.0, 3.0]
    loss = build_loss("ldam", 5, 3, class_counts=torch.tensor(counts), drw_epoch=3).double()
    x = torch.rand(13, 5, generator=gen, dtype=torch.float64) * 2 - 1
    y = torch.tensor([0, 1, 2, 3, 4, 4, 3, 3, 2, 1, 0, 0, 4])
    for epoch in range(6):
        loss.on_epoch_start(epoch)
        w = authors_drw_weights(counts, epoch, 3).double()
        assert torch.allclose(loss(x, torch.zeros(13, 3, dtype=torch.float64), y).total,
                              authors_ldam(counts, x, y, weight=w), rtol=1e-6)


def authors_group_dro_step(adv_probs, group_loss, step_size):
    """kohpangwei/group_DRO loss.py compute_robust_loss (no adjustment, not normalised)."""
    adjusted_loss = group_loss
    adv_probs = adv_probs * torch.exp(step_size * adjusted_loss.data)
    adv_probs = adv_probs / (adv_probs.sum())
    robust_loss = group_loss @ adv_probs
    return robust_loss, adv_probs


def test_group_dro_is_the_authors_when_every_class_is_in_the_batch(gen):
    loss = make("dro", 4, 3, eta=0.3).double()
    adv = torch.full((4,), 0.25, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 3, 0, 2, 2, 1])
    for _ in range(3):
        z = torch.randn(8, 4, generator=gen, dtype=torch.float64)
        per = F.cross_entropy(z, y, reduction="none")
        group_map = (y == torch.arange(4).unsqueeze(1)).double()  # their per-group mean loss
        group_loss = (group_map @ per) / group_map.sum(1)
        robust, adv = authors_group_dro_step(adv, group_loss, 0.3)
        assert torch.allclose(loss(z, torch.zeros(8, 3, dtype=torch.float64), y).total, robust)
        assert torch.allclose(loss.q.double(), adv)


def test_group_dro_keeps_an_absent_class_weight_and_averages_over_present_classes(gen):
    """Classes absent from a batch: their q_k is kept; the present classes' weights take the
    exponentiated step and share the mass they held; the loss is Σ_P q_k ℓ_k / Σ_P q_k (written out
    class by class here, not with the library's helpers)."""
    k, eta = 5, 0.7
    loss = make("dro", k, 3, eta=eta).double()
    q = [1.0 / k] * k
    for y in ([0, 0, 1, 2, 2, 2, 4], [1, 3, 3], [4, 4], [0, 1, 2, 3, 4, 0]):
        y = torch.tensor(y)
        z = torch.randn(len(y), k, generator=gen, dtype=torch.float64)
        per = F.cross_entropy(z, y, reduction="none")
        present = sorted(set(y.tolist()))
        ell = {c: per[y == c].mean().item() for c in present}
        mass = sum(q[c] for c in present)
        norm = sum(q[c] * math.exp(eta * ell[c]) for c in present)
        q = [q[c] * math.exp(eta * ell[c]) / norm * mass if c in present else q[c] for c in range(k)]
        expected = sum(q[c] * ell[c] for c in present) / sum(q[c] for c in present)
        total = loss(z, torch.zeros(len(y), 3, dtype=torch.float64), y).total
        assert total.item() == pytest.approx(expected, rel=1e-6)  # q starts as float32's 1/K
        assert loss.q.tolist() == pytest.approx(q, rel=1e-6)
    assert sum(q) == pytest.approx(1.0) and len(set(round(v, 9) for v in q)) == k  # a distribution, all moved


@pytest.mark.parametrize("decay", [0.9, 0.999])
def test_release_decay_option_is_the_authors_ema(decay, gen):
    """The release's update_ema per class (transcribed) with ema_decay = decay."""
    k, d = 3, 4
    loss = make("mr2_release", k, d, decay=decay).double()
    mean_norm_ema, variance_ema = torch.zeros(k, dtype=torch.float64), torch.zeros(k, dtype=torch.float64)
    for _ in range(4):
        features = torch.randn(7, d, generator=gen, dtype=torch.float64)
        targets = torch.randint(0, k, (7,), generator=gen)
        for cls in range(k):
            cls_features = features[targets == cls]
            if cls_features.size(0) > 0:
                cls_mean = cls_features.mean(dim=0)
                mean_norm = cls_mean.norm(5).pow(2)
                variance = (cls_features - cls_mean).norm(5, dim=1).pow(2).mean()
                if torch.isnan(mean_norm_ema[cls]) or mean_norm_ema[cls] == 0:
                    mean_norm_ema[cls], variance_ema[cls] = mean_norm, variance
                else:
                    mean_norm_ema[cls] = decay * mean_norm_ema[cls] + (1 - decay) * mean_norm
                    variance_ema[cls] = decay * variance_ema[cls] + (1 - decay) * variance
        loss(torch.zeros(7, k, dtype=torch.float64), features, targets)
        assert torch.allclose(loss.m, mean_norm_ema) and torch.allclose(loss.v, variance_ema)


def test_release_loss_defaults_bounds_and_summary():
    """The release's class: λ = 0.1, decay 0.9 (its CIFAR recipe), s̄ zeroed as in the release; λ = 0
    and decay 0 are allowed, the messages name the option; class_summary names m, v and γ."""
    loss = ReleaseMR2Loss(3, 4)
    assert (loss.lam, loss.decay, loss.zero_s_bar) == (0.1, 0.9, True)
    ReleaseMR2Loss(3, 4, lam=0.0, decay=0.0)
    for bad, match in (({"lam": -0.1}, r"^mr2_release: lam must be >= 0, got lam=-0.1$"),
                       ({"decay": 1.0}, r"^mr2_release: decay must be in \[0, 1\), got decay=1.0$"),
                       ({"zero_s_bar": "yes"}, r"^mr2_release: zero_s_bar must be true or false, got zero_s_bar='yes'$")):
        with pytest.raises(ValueError, match=match):
            ReleaseMR2Loss(3, 4, **bad)
    loss.m.copy_(torch.tensor([1.0, 0.0, 8.0]))
    summary = loss.class_summary()
    assert set(summary) == {"m", "v", "gamma"} and summary["m"] is loss.m and summary["v"] is loss.v
    torch.testing.assert_close(summary["gamma"], loss.margins())


def test_release_margins_normalise_small_statistics_and_fall_back_to_one():
    """γ_k = K g_k/Σ g with g = (m + v)^{1/3}, also when Σ g < 1; γ ≡ 1 when every g is 0."""
    m, v = torch.tensor([1e-6, 8e-6, 0.0], dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    g = (m + v) ** (1 / 3)
    torch.testing.assert_close(release_margins(m, v), 3 * g / g.sum())
    assert float(g.sum()) < 1
    assert release_margins(torch.zeros(3), torch.zeros(3)).tolist() == [1.0, 1.0, 1.0]


def test_center_loss_defaults_bounds_summary_and_a_batch_without_the_last_classes():
    loss = CenterLoss(5, 2)
    assert (loss.lam, loss.alpha) == (0.003, 0.5)  # the authors' Caffe example
    CenterLoss(5, 2, lam=0.0, alpha=0.0)  # both may be 0
    loss.centers.data.copy_(torch.arange(10.0).reshape(5, 2))
    torch.testing.assert_close(loss.class_summary()["center_sq_norm"], (torch.arange(10.0).reshape(5, 2) ** 2).sum(1))
    # classes 3 and 4 absent (and K = 5 > D = 2): U = ½ Σ_i ‖x_i − c_{y_i}‖² / (1 + n_{y_i}), written out
    x, y = torch.tensor([[1.0, 1.0], [3.0, 0.0], [0.0, 2.0]]), torch.tensor([0, 0, 2])
    c = loss.centers.detach()
    want = 0.5 * (((x[0] - c[0]) ** 2).sum() / 3 + ((x[1] - c[0]) ** 2).sum() / 3 + ((x[2] - c[2]) ** 2).sum() / 2)
    torch.testing.assert_close(center_update_surrogate(x, c, y), want)


def test_supcon_defaults_bounds_and_the_authors_projection_head():
    loss = SupConLoss(3, 8)
    assert (loss.weight, loss.temperature) == (1.0, 0.1)
    linear1, relu, linear2 = loss.head  # the authors' head: Linear(D, D), ReLU, Linear(D, 128)
    assert isinstance(relu, torch.nn.ReLU) and (linear1.in_features, linear1.out_features) == (8, 8)
    assert (linear2.in_features, linear2.out_features) == (8, 128)
    SupConLoss(3, 8, weight=0.0, proj_dim=1)
    for bad in ({"proj_dim": True}, {"proj_dim": 0}, {"base_temperature": math.inf}):
        with pytest.raises(ValueError, match=f"supcon: {next(iter(bad))} must be"):
            SupConLoss(3, 8, **bad)


def test_fairdro_default_radius_and_summary():
    loss = FairDROLoss(4, 2)
    assert loss.rho == 0.3  # the authors' published value for UTKFace and CivilComments
    assert set(loss.class_summary()) == {"q"} and loss.class_summary()["q"] is loss.q


def test_ldam_option_edges_graph_capture_and_summary_before_and_after_drw():
    counts = [50.0, 10.0, 5.0]
    LDAMLoss(3, 2, counts, max_margin=0.0, s=0.5, drw_epoch=0, drw_beta=0.0)  # every edge the checks allow
    assert LDAMLoss(3, 2, counts).capturable and not LDAMLoss(3, 2, counts, drw_epoch=2).capturable
    loss = LDAMLoss(3, 2, counts, drw_epoch=2)
    loss.on_epoch_start(1)
    assert loss.class_summary()["class_weight"].tolist() == [1.0, 1.0, 1.0]  # DRW not yet on
    loss.on_epoch_start(2)
    torch.testing.assert_close(loss.class_summary()["class_weight"], loss.drw_weights)
    torch.testing.assert_close(loss.class_summary()["margin"], loss.margins)


@pytest.mark.parametrize("method, zero_ok", [("ldam", False), ("logit_adjust", False), ("eql", True)])
def test_count_based_losses_name_themselves_in_count_errors(method, zero_ok):
    with pytest.raises(ValueError, match=rf"^method '{method}' needs class_counts"):
        build_loss(method, 3, 2, class_counts=None)
    with pytest.raises(ValueError, match=rf"^method '{method}': class_counts must be finite and >= 0; bad classes \[2, 3\]$"):
        build_loss(method, 4, 2, class_counts=[0.0, 1.0, -1.0, math.inf])  # the empty class is not a bad one here
    if zero_ok:  # EQL's tail test only compares frequencies: an empty class is a tail class
        build_loss(method, 3, 2, class_counts=[5.0, 0.0, 1.0])
    else:  # n_k^{-1/4} and log n_k need n_k > 0
        with pytest.raises(ValueError, match=rf"^method '{method}': class_counts must be > 0 .*classes \[1\]"):
            build_loss(method, 3, 2, class_counts=[5.0, 0.0, 1.0])


def test_eql_and_group_dro_summaries_name_what_they_hold():
    eql = build_loss("eql", 3, 2, class_counts=[100.0, 1.0, 50.0])
    assert set(eql.class_summary()) == {"tail"} and eql.class_summary()["tail"].dtype == torch.float32
    dro = build_loss("dro", 3, 2)
    assert set(dro.class_summary()) == {"q"} and dro.class_summary()["q"] is dro.q


def test_build_loss_hands_reduce_and_the_problem_to_the_reducible_methods_only():
    def double(t):
        return 2 * t

    for method in ("mr2", "mr2_uniform", "mr2_no_rep"):
        loss = build_loss(method, 3, 4, reduce=double)
        assert loss.stats.reduce is double and loss.stats.num_classes == 3
        assert loss.stats.mean.shape == (3, 4)  # K classes, D-wide features
    assert build_loss("mr2", 3, 4, reduce=double, c_bar=2.0).c_bar == 2.0  # the options reach it too
    with pytest.raises(ValueError, match=r"^method 'focal' takes no 'reduce' \(a summing all-reduce of class "
                                         r"statistics\); only mr2, mr2_no_rep, mr2_uniform do$"):
        build_loss("focal", 3, 4, reduce=double)
    counted = build_loss("ldam", 3, 4, class_counts=[9.0, 3.0, 1.0])
    assert counted.margins.shape == (3,) and counted.margins[2] > counted.margins[0]  # the counts reached it


@pytest.mark.parametrize("given", [{"model_builder": lambda: torch.nn.Linear(2, 2)}, {"num_samples": 10}])
def test_lff_needs_both_its_model_builder_and_the_sample_count(given):
    with pytest.raises(ValueError, match=r"^method 'lff' owns a second network: build_loss\('lff', \.\.\., "
                                         r"model_builder=<callable returning a fresh model>, "
                                         r"num_samples=<training-set size>\)$"):
        build_loss("lff", 2, 2, **given)


def test_option_errors_name_the_method_the_option_and_what_is_accepted():
    with pytest.raises(ValueError, match=r"^unknown method 'mr3'; known methods: ce_temperature, center, dro, eql, erm, erm_tuned, "):
        build_loss("mr3", 2, 2)
    with pytest.raises(ValueError, match=r"^method 'mr2': options must be a mapping of option names to values"):
        factory.resolve_options("mr2", ["lam"])
    with pytest.raises(ValueError, match=r"^method 'erm' does not take option 'lam'; accepted options: none$"):
        build_loss("erm", 2, 2, lam=0.1)
    with pytest.raises(ValueError, match=r"^method 'focal' does not take option 'lam'; accepted options: gamma$"):
        build_loss("focal", 2, 2, lam=0.1)
    with pytest.raises(ValueError, match=r"accepted options: drw_beta, drw_epoch, max_margin, s$"):
        build_loss("ldam", 2, 2, class_counts=[1.0, 1.0], lam=0.1)
    with pytest.raises(ValueError, match=r"^method 'focal'.*gamma"):
        build_loss("focal", 2, 2, gamma="2")
    for name in ("stage1_epochs", "upweight"):
        with pytest.raises(ValueError, match=rf"^jtt: {name} must be an integer >= 1, got {name}=0$"):
            build_loss("jtt", 2, 2, **{name: 0})


def test_check_options_builds_every_method_on_a_stand_in_problem():
    """Values are checked without data (a bad value fails with the loss's own message), for every
    method including the ones that need counts or a second network."""
    for method in factory.METHODS:
        assert factory.check_options(method) == factory.resolve_options(method)
    assert factory.check_options("mr2", {"lam": 0.5})["lam"] == 0.5  # the resolved options, given ones included
    with pytest.raises(ValueError, match="lam must be >= 0"):
        factory.check_options("mr2", {"lam": -1.0})
    with pytest.raises(ValueError, match="^jtt: upweight"):
        factory.check_options("jtt", {"upweight": 0})
    model = factory._StandIn()
    logits, features = model(torch.ones(3, 2))
    assert logits.shape == (3, 2) and torch.equal(features, torch.ones(3, 2))
