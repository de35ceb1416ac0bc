"""The MR² loss against a slow per-sample reference written from docs/method.md, and the factory."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from mr2.method.losses import MR2Loss, build_loss, logit_margin_cross_entropy, representation_margin_loss, resolve_options
from mr2.method.losses.factory import METHODS


def reference_margin_ce(logits, y, gamma):
    """ℓ_{γ,ce}(x, y) = −log softmax(z / γ_y)_y, one sample at a time."""
    vals = []
    for i in range(len(y)):
        z = logits[i] / gamma[y[i]]
        vals.append(-(z[y[i]] - torch.logsumexp(z, 0)))
    return torch.stack(vals).mean()


def reference_rep(features, y, s_bar):
    """ℓ_s̄(x, y) = ln[1 + Σ_{x⁺∈D_y\\{x}} exp(‖φ(x) − φ(x⁺)‖² − 2s̄)], averaged over the batch.

    Written in float64 with the exact terms; the sum of exponentials is formed with the largest
    exponent factored out, which is the identity ln(1+Σe^t) = M + ln(e^{−M} + Σe^{t−M})."""
    vals = []
    for i in range(len(y)):
        ts = [((features[i] - features[j]) ** 2).sum() - 2 * s_bar for j in range(len(y)) if j != i and y[j] == y[i]]
        if not ts:
            vals.append(torch.zeros((), dtype=features.dtype))
            continue
        t = torch.stack(ts)
        m = torch.clamp(t.max(), min=0)
        vals.append(m + torch.log(torch.exp(-m) + torch.exp(t - m).sum()))
    return torch.stack(vals).mean()


BATCHES = {
    # name: targets (K = 6); covers singletons, absent classes, one-class batches
    "mixed": [0, 0, 1, 2, 2, 2, 3, 5],
    "singletons": [0, 1, 2, 3, 4, 5],
    "one_class": [4, 4, 4, 4, 4],
    "one_sample": [3],
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("scale", [1e-4, 1e-2, 1.0, 1e2, 1e4])
def test_vectorised_loss_equals_reference(batch, scale, gen):
    y = torch.tensor(BATCHES[batch])
    b, k, d = len(y), 6, 5
    feats = (torch.randn(b, d, generator=gen, dtype=torch.float64) * scale).requires_grad_()
    logits = torch.randn(b, k, generator=gen, dtype=torch.float64).requires_grad_()
    loss = build_loss("mr2", k, d, lam=0.3, c_bar=1.5).double()
    loss.train()
    # warm the statistics on other data so that γ and s̄ are non-trivial
    loss.stats.update(torch.randn(60, d, generator=gen, dtype=torch.float64) * scale, torch.arange(60) % 5)
    out = loss(logits, feats, y)
    gamma, s_bar = loss.margins(), loss.stats.s_bar()
    ref = reference_margin_ce(logits, y, gamma) + 0.3 * reference_rep(feats, y, s_bar)
    assert torch.isfinite(out.total)
    assert torch.allclose(out.total, ref, rtol=1e-6, atol=1e-9)
    g_out = torch.autograd.grad(out.total, (logits, feats), allow_unused=True, materialize_grads=True)
    g_ref = torch.autograd.grad(ref, (logits, feats), allow_unused=True, materialize_grads=True)
    for a, r in zip(g_out, g_ref):
        assert torch.isfinite(a).all()
        assert torch.allclose(a, r, rtol=1e-5, atol=1e-9 + 1e-6 * r.abs().max().item())


@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4])
def test_float32_values_and_gradients_are_finite(scale, gen):
    y = torch.tensor([0, 0, 1, 3, 3, 3, 7])
    feats = (torch.randn(7, 64, generator=gen) * scale).requires_grad_()
    logits = (torch.randn(7, 10, generator=gen) * scale).requires_grad_()
    loss = build_loss("mr2", 10, 64)
    loss.train()
    out = loss(logits, feats, y)
    out.total.backward()
    assert torch.isfinite(out.total) and torch.isfinite(feats.grad).all() and torch.isfinite(logits.grad).all()


def test_rep_loss_is_zero_without_same_class_pairs_and_counts_every_sample():
    feats = torch.randn(4, 3)
    assert representation_margin_loss(feats, torch.arange(4), torch.tensor(0.0)) == 0
    # one pair at squared distance 2s̄ among 4 samples: each of the two contributes ln 2
    feats = torch.tensor([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [-5.0, 5.0]])
    val = representation_margin_loss(feats, torch.tensor([0, 0, 1, 2]), torch.tensor(0.5))
    assert math.isclose(val.item(), 2 * math.log(2) / 4, rel_tol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 20), st.integers(1, 64), st.integers(0, 10_000), st.floats(1e-2, 1e2))
def test_uniform_c1_lambda0_is_cross_entropy(k, b, seed, scale):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, k, generator=g) * scale
    y = torch.randint(0, k, (b,), generator=g)
    loss = build_loss("mr2_uniform", k, 4, c_bar=1.0, lam=0.0)
    loss.train()
    out = loss(logits, torch.randn(b, 4, generator=g), y)
    assert torch.allclose(out.total, F.cross_entropy(logits, y), rtol=1e-6, atol=1e-6)


def test_margin_ce_gamma_one_is_cross_entropy(gen):
    logits, y = torch.randn(9, 4, generator=gen), torch.randint(0, 4, (9,), generator=gen)
    assert torch.allclose(logit_margin_cross_entropy(logits, y, torch.ones(4)), F.cross_entropy(logits, y))


def test_ablations_do_what_their_names_say(gen):
    y = torch.tensor([0, 0, 1, 1, 2])
    feats, logits = torch.randn(5, 3, generator=gen) * torch.tensor([1.0, 5.0, 0.1]), torch.randn(5, 3, generator=gen)
    for name in ("mr2", "mr2_uniform", "mr2_no_rep"):
        loss = build_loss(name, 3, 3, c_bar=2.0)
        loss.train()
        out = loss(logits, feats, y)
        gamma = loss.margins()
        assert torch.isclose(gamma.mean(), torch.tensor(2.0))
        if name == "mr2_uniform":
            assert torch.equal(gamma, torch.full((3,), 2.0))
        else:
            assert gamma.std() > 0
        assert (out.parts["rep"] == 0) == (name == "mr2_no_rep")


def test_statistics_are_not_updated_in_eval_mode(gen):
    loss = build_loss("mr2", 3, 2)
    loss.eval()
    loss(torch.randn(4, 3, generator=gen), torch.randn(4, 2, generator=gen), torch.tensor([0, 1, 2, 0]))
    assert loss.stats.count.sum() == 0


def test_erm_is_cross_entropy(gen):
    logits, y = torch.randn(9, 4, generator=gen), torch.randint(0, 4, (9,), generator=gen)
    out = build_loss("erm", 4, 8)(logits, torch.randn(9, 8), y)
    assert torch.equal(out.total, F.cross_entropy(logits, y))


def test_class_summary_has_per_class_entries(gen):
    """The names the engine logs and the results read, each the statistic it names."""
    loss = build_loss("mr2", 5, 3)
    loss(torch.randn(20, 5, generator=gen), torch.randn(20, 3, generator=gen) * 2, torch.arange(20) % 5)
    summary, st_ = loss.class_summary(), loss.stats
    assert set(summary) == {"a", "gamma", "mean_sq_norm", "spread", "s_bar"}
    assert all(v.shape == (5,) for v in summary.values())
    expected = {"a": st_.mean_sq_norm() + st_.spread(), "gamma": loss.margins(),
                "mean_sq_norm": (st_.mean**2).sum(1), "spread": st_.sq_dev, "s_bar": st_.sq_dev_l2.mean().expand(5)}
    for name, value in expected.items():
        assert torch.allclose(summary[name], value, rtol=1e-6), name


def test_mr2_loss_defaults_are_the_papers():
    """Constructed with no options, MR2Loss is the paper's: c̄ = 1, λ = 0.1, p = 2, β = 0.99,
    adaptive margins from a_k."""
    loss = MR2Loss(10, 4)
    assert (loss.c_bar, loss.lam, loss.stats.p, loss.stats.momentum) == (1.0, 0.1, 2.0, 0.99)
    assert (loss.margin, loss.statistic) == ("adaptive", "a")


@pytest.mark.parametrize("options, message", [({"margin": "fixed"}, "margin must be one of .*'fixed'"),
                                              ({"statistic": "var"}, "statistic must be one of .*'var'")])
def test_mr2_loss_names_a_bad_margin_or_statistic(options, message):
    with pytest.raises(ValueError, match=message):
        MR2Loss(4, 3, **options)


def test_mr2_loss_hands_its_reduce_to_the_statistics(gen):
    """Data-parallel training: the all-reduce reaches the class statistics. Two ranks holding the same
    batch (a reduce that doubles the sums) count every sample twice and keep the same moments."""
    x, y = torch.randn(12, 3, generator=gen, dtype=torch.float64), torch.arange(12) % 4
    logits = torch.randn(12, 4, generator=gen, dtype=torch.float64)
    two_ranks, one = MR2Loss(4, 3, reduce=lambda t: 2 * t).double(), MR2Loss(4, 3).double()
    two_ranks(logits, x, y), one(logits, x, y)
    assert torch.equal(two_ranks.stats.count, 2 * one.stats.count)
    assert torch.allclose(two_ranks.stats.mean, one.stats.mean) and torch.allclose(two_ranks.stats.sq_dev, one.stats.sq_dev)


def test_uniform_margins_follow_the_loss_dtype():
    """γ of the uniform ablation has the module's dtype (float64 here), like the adaptive ones."""
    loss = MR2Loss(4, 3, margin="uniform", c_bar=1.5).double()
    assert loss.margins().dtype == torch.float64 and torch.equal(loss.margins(), torch.full((4,), 1.5, dtype=torch.float64))


@pytest.mark.parametrize(
    "method, options, message",
    [
        ("mr3", {}, "unknown method 'mr3'"),
        ("erm", {"lam": 0.1}, "'erm' does not take option 'lam'"),
        ("mr2_no_rep", {"lam": 0.5}, "fixes lam"),
        ("mr2", {"lambda": 0.5}, "option 'lambda'"),
        ("mr2", {"c_bar": 0.0}, "c_bar"),
        ("mr2", {"lam": -1.0}, "lam"),
        ("mr2", {"p": 0.5}, "p must be"),
        ("mr2", {"momentum": 1.5}, "momentum"),
    ],
)
def test_factory_rejects_invalid_names_and_options(method, options, message):
    with pytest.raises(ValueError, match=message):
        build_loss(method, 4, 3, **options)


def test_factory_defaults_are_resolved_and_visible():
    assert resolve_options("mr2", {"lam": 0.5})["lam"] == 0.5
    assert {"erm", "mr2", "mr2_uniform", "mr2_no_rep"} <= set(METHODS)
    assert isinstance(build_loss("mr2_no_rep", 4, 3), MR2Loss) and build_loss("mr2_no_rep", 4, 3).lam == 0.0


# --- the two evaluations of the representation loss, and the hand-written backward passes ---

from mr2.method import hostsync  # noqa: E402
from mr2.method.losses import rep_margin  # noqa: E402
from mr2.method.losses.margin_ce import MarginCrossEntropy  # noqa: E402


@pytest.mark.parametrize("pairs", ["dense", "sparse", "blocked"])
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4])
def test_every_pair_path_equals_the_reference(pairs, batch, scale, gen):
    y = torch.tensor(BATCHES[batch])
    feats = (torch.randn(len(y), 5, generator=gen, dtype=torch.float64) * scale).requires_grad_()
    s_bar = torch.tensor(0.7 * scale**2, dtype=torch.float64)
    val = representation_margin_loss(feats, y, s_bar, pairs=pairs)
    ref = reference_rep(feats, y, s_bar)
    assert torch.allclose(val, ref, rtol=1e-9, atol=1e-12)
    (g,) = torch.autograd.grad(val, feats, allow_unused=True, materialize_grads=True)
    # the reference of a batch without pairs is a constant 0
    g_ref = torch.autograd.grad(ref, feats, allow_unused=True, materialize_grads=True)[0] if ref.requires_grad else 0 * feats
    assert torch.allclose(g, g_ref, rtol=1e-7, atol=1e-12 + 1e-9 * g_ref.abs().max().item())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40))
def test_same_class_pairs_are_exactly_the_unordered_pairs(labels):
    y = torch.tensor(labels)
    i, j = rep_margin.same_class_pairs(y)
    got = sorted(zip(torch.minimum(i, j).tolist(), torch.maximum(i, j).tolist()))
    want = [(a, b) for a in range(len(y)) for b in range(a + 1, len(y)) if labels[a] == labels[b]]
    assert got == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40))
def test_class_blocks_list_each_class_once(labels):
    y = torch.tensor(labels)
    table = rep_margin.class_blocks(y)
    rows = [sorted(i for i in row if i < len(y)) for row in table.tolist()]
    want = [[i for i, c in enumerate(labels) if c == k] for k in sorted(set(labels))]
    assert rows == want and table.shape[1] == max(len(r) for r in want)


@pytest.mark.parametrize("counts,dim,path", [
    ([1] * 500 + [6], 2048, "sparse"),   # K = 1000, B = 512: rare positives
    ([5] * 100 + [12], 2048, "sparse"),   # K = 100, B = 512: U ≈ 0.9 S·M
    ([51] * 10, 640, "blocked"),          # K = 10, B = 510: U = 25 S·M
    ([51] * 10, 64, "blocked"),
    ([13] * 10, 2048, "blocked"),         # K = 10, B = 130: U = 6 S·M, wide features
    ([13] * 10, 64, "sparse"),            # the same, narrow: gathering pairs is cheaper than small matmuls
    ([17] * 30, 640, "blocked"),          # K = 30, B = 510: U = 8 S·M
    ([25] * 19 + [35], 64, "blocked"),    # K = 20, B = 510: U = 9 S·M, blocked even with narrow features
    ([128], 64, "dense"),                 # one class: blocks cover every pair
    ([3, 125], 64, "dense"),              # one class dominates
    ([0, 3, 0, 0, 125], 64, "dense"),     # absent classes (a bincount's zeros) are not classes present
    ([0] * 90 + [51] * 10, 640, "blocked"),  # counted as classes, these would make it "dense"
])
def test_choose_pairs_follows_the_measured_rule(counts, dim, path):
    assert rep_margin.choose_pairs(torch.tensor(counts), dim) == path


def test_auto_chooses_on_the_cpu_and_stays_dense_elsewhere(monkeypatch, gen):
    calls = []
    real = rep_margin.choose_pairs
    monkeypatch.setattr(rep_margin, "choose_pairs", lambda counts, dim: calls.append(real(counts, dim)) or calls[-1])
    feats = torch.randn(64, 3, generator=gen)
    many_classes, two_classes = torch.arange(64) % 60, torch.arange(64) % 2
    representation_margin_loss(feats, many_classes, torch.tensor(1.0))
    representation_margin_loss(feats, two_classes, torch.tensor(1.0))
    assert calls == ["sparse", "blocked"]
    monkeypatch.setattr(hostsync, "host_reads_are_free", lambda device: False)
    representation_margin_loss(feats, many_classes, torch.tensor(1.0))
    assert len(calls) == 2  # never asked on a device where reading the counts would synchronise


@pytest.mark.parametrize("pairs", ["dense", "sparse", "blocked"])
def test_representation_loss_stays_accurate_far_from_the_origin(pairs, gen):
    """Penultimate features after a ReLU share a large mean. In float32 the squared distances are
    accurate only when formed after centring (per batch, or per class block over its real rows, not
    its padding): a value and gradient within 1e-3 of the float64 reference on the same inputs, with
    features at 1,000–1,700 and a spread of 0.05 (classes of 5, 3, 1 and 7: blocks with padding)."""
    y = torch.tensor([0] * 5 + [1] * 3 + [2] + [3] * 7)
    x64 = 1000 + 100 * torch.arange(8) + 0.05 * torch.randn(len(y), 8, generator=gen, dtype=torch.float64)
    x32 = x64.float().requires_grad_()
    got = representation_margin_loss(x32, y, torch.tensor(0.0), pairs=pairs)
    got.backward()
    exact = x32.detach().double().requires_grad_()
    want = reference_rep(exact, y, 0.0)
    want.backward()
    assert abs(got.item() - want.item()) < 1e-3
    assert torch.allclose(x32.grad.double(), exact.grad, atol=1e-3)


def test_invalid_pair_path_is_named():
    with pytest.raises(ValueError, match="pairs must be one of"):
        representation_margin_loss(torch.randn(3, 2), torch.zeros(3, dtype=torch.long), torch.tensor(0.0), pairs="fast")


def test_hand_written_backward_passes_pass_gradcheck(gen):
    x = torch.randn(9, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    i, j = torch.tensor([0, 0, 3, 5, 8]), torch.tensor([1, 2, 4, 6, 7])
    offset = torch.tensor(1.5, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda t: rep_margin.SparseRepMargin.apply(t, i, j, offset), (x,))
    table = rep_margin.class_blocks(torch.tensor([0, 1, 0, 2, 1, 0, 0, 2, 3]))  # padded rows
    real = (table < 9).unsqueeze(2) & (table < 9).unsqueeze(1)  # distances to padding are masked in use
    assert torch.autograd.gradcheck(lambda t: rep_margin.BlockSqDists.apply(t, table).masked_fill(~real, 0.0), (x,))
    z = torch.randn(6, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 4, 4, 2, 1, 0])
    scale = torch.tensor([0.5, 2.0, 2.0, 1.3, 0.9, 0.5], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda t: MarginCrossEntropy.apply(t, y, scale), (z,))


def test_margin_ce_backward_twice_through_a_retained_graph(gen):
    """The first backward hands its buffer out as the gradient; a second one must recompute it."""
    z = torch.randn(7, 4, generator=gen, requires_grad=True)
    y, gamma = torch.tensor([0, 3, 3, 1, 2, 0, 1]), torch.tensor([0.7, 1.0, 1.2, 1.1])
    loss = logit_margin_cross_entropy(z, y, gamma)
    (first,) = torch.autograd.grad(loss, z, retain_graph=True)
    (second,) = torch.autograd.grad(loss, z)
    (ref,) = torch.autograd.grad(F.cross_entropy(z / gamma[y].unsqueeze(1), y), z)
    assert torch.equal(first, second) and torch.allclose(first, ref, atol=1e-7)


def test_second_derivatives_of_the_hand_written_backwards_raise(gen):
    """The written-out backward passes give first derivatives only: differentiating them again must
    fail loudly, not return a silently incomplete second derivative."""
    def second_derivative(value, x):
        weight = torch.ones((), requires_grad=True)  # makes the gradient itself differentiable
        (g,) = torch.autograd.grad(value, x, grad_outputs=weight, create_graph=True)
        g.sum().backward()

    z = torch.randn(6, 4, generator=gen, requires_grad=True)
    y = torch.tensor([0, 1, 1, 2, 3, 0])
    with pytest.raises(RuntimeError, match="once_differentiable"):
        second_derivative(logit_margin_cross_entropy(z, y, torch.ones(4)), z)
    x = torch.randn(6, 3, generator=gen, requires_grad=True)
    for pairs in ("sparse", "blocked"):
        with pytest.raises(RuntimeError, match="once_differentiable"):
            second_derivative(representation_margin_loss(x, y, torch.tensor(0.5), pairs=pairs), x)


def mr2_steps(method, k, b, d, steps=3, device="cpu"):
    """Values, gradients and final state of a few MR² steps on fixed float64 data."""
    g = torch.Generator().manual_seed(k + b)
    loss = build_loss(method, k, d).double().to(device).train()
    record = []
    for _ in range(steps):
        y = torch.randint(0, k, (b,), generator=g)
        x = (torch.randn(b, d, generator=g, dtype=torch.float64) * 3 + 1).to(device).requires_grad_()
        z = torch.randn(b, k, generator=g, dtype=torch.float64).to(device).requires_grad_()
        out = loss(z, x, y.to(device))
        out.total.backward()
        x_grad = x.grad if x.grad is not None else torch.zeros_like(x)  # λ = 0: features get none
        record.append((out.total.detach().cpu(), x_grad.cpu(), z.grad.cpu()))
    return record, {key: v.cpu() for key, v in loss.state_dict().items()}


def assert_same_steps(one, two):
    for a, b in zip(one[0], two[0]):
        for u, v in zip(a, b):
            torch.testing.assert_close(u, v, rtol=1e-9, atol=1e-12)
    for key in one[1]:
        torch.testing.assert_close(one[1][key], two[1][key], rtol=1e-9, atol=1e-12)


# CPU (sparse pairs; blocks; sparse pairs) against CUDA's (dense pairs; K, K, B statistics slots)
@pytest.mark.parametrize("k,b", [(10, 64), (4, 128), (300, 128)])
@pytest.mark.parametrize("method", ["mr2", "mr2_uniform", "mr2_no_rep"])
def test_cpu_paths_equal_the_paths_cuda_takes(k, b, method, monkeypatch):
    cpu = mr2_steps(method, k, b, 6)
    monkeypatch.setattr(hostsync, "host_reads_are_free", lambda device: False)
    assert_same_steps(cpu, mr2_steps(method, k, b, 6))


def test_spread_statistic_feeds_corollary_1_the_within_class_spread_alone(gen):
    """``statistic: spread``: γ_k = c̄·K·s_k^{1/3}/Σ_j s_j^{1/3} with s_k = (1/n_k)Σ‖φ(x) − m_k‖² of the
    batch (the first batch is the whole history), an unseen class given the seen classes' mean s;
    the paper's ``a`` (‖m_k‖² + s_k) gives other margins on the same data."""
    k, d, c_bar = 5, 4, 1.5
    y = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3])  # class 4 unseen
    shift = torch.tensor([0.0, 3.0, -1.0, 8.0])[y.clamp(max=3)].unsqueeze(1)  # class means far apart
    feats = torch.randn(len(y), d, generator=gen, dtype=torch.float64) * (1 + y.unsqueeze(1)) + shift
    margins = {}
    for statistic in ("spread", "a"):
        loss = build_loss("mr2", k, d, c_bar=c_bar, statistic=statistic).double()
        loss.train()
        loss(torch.randn(len(y), k, generator=gen, dtype=torch.float64), feats, y)
        margins[statistic] = loss.margins()
    s, a = [], []
    for c in range(4):
        x = feats[y == c]
        m = x.mean(0)
        s.append(((x - m) ** 2).sum(1).mean().item())
        a.append((m ** 2).sum().item() + s[-1])
    s.append(sum(s) / 4)
    a.append(sum(a) / 4)
    for statistic, values in (("spread", s), ("a", a)):
        cube = torch.tensor(values, dtype=torch.float64) ** (1 / 3)
        assert torch.allclose(margins[statistic], c_bar * k * cube / cube.sum(), rtol=1e-9)
    assert not torch.allclose(margins["spread"], margins["a"], rtol=1e-3)


def test_upcast_lifts_half_precision_to_float32_and_leaves_the_rest():
    from mr2.method.precision import upcast

    for low in (torch.bfloat16, torch.float16):
        assert upcast(torch.zeros(2, dtype=low)).dtype == torch.float32
    for kept in (torch.float32, torch.float64):
        x = torch.zeros(2, dtype=kept)
        assert upcast(x) is x
