"""Running class statistics: identity, convergence, buffers, eval mode, unseen classes."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mr2.method import hostsync
from mr2.method.stats import ClassStats, batch_slots, class_moments, lp_sq_norm


def slow_moments(x, y, k, p):
    """Per-class reference, straight from the definitions (a Python loop is fine in a test)."""
    n, m, v = (torch.zeros(k, dtype=x.dtype), torch.zeros(k, x.shape[1], dtype=x.dtype), torch.zeros(k, dtype=x.dtype))
    for c in range(k):
        xc = x[y == c]
        if len(xc):
            n[c] = len(xc)
            m[c] = xc.mean(0)
            v[c] = torch.stack([torch.linalg.vector_norm(r - m[c], ord=p) ** 2 for r in xc]).mean()
    return n, m, v


@pytest.mark.parametrize("p", [2.0, 3.0, 5.0])
def test_class_moments_match_reference(p, gen):
    x = torch.randn(40, 6, generator=gen, dtype=torch.float64) * 3 + 1
    y = torch.randint(0, 7, (40,), generator=gen)
    n, m, v, v2 = class_moments(x, y, 7, p)
    rn, rm, rv = slow_moments(x, y, 7, p)
    assert torch.equal(n, rn)
    assert torch.allclose(m, rm, atol=1e-5)
    assert torch.allclose(v, rv, rtol=1e-4)
    assert torch.allclose(v2, slow_moments(x, y, 7, 2.0)[2], rtol=1e-4)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 8), st.integers(1, 16), st.integers(0, 10_000), st.floats(1e-3, 1e3))
def test_l2_identity_mean_plus_spread_is_second_moment(k, d, seed, scale):
    """‖μ̂_k‖² + ‖ŝ_k‖² = (1/n_k) Σ_{x∈D_k} ‖φ(x)‖² (docs/method.md, Notation)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, d, generator=g, dtype=torch.float64) * scale
    y = torch.randint(0, k, (64,), generator=g)
    n, m, v, _ = class_moments(x, y, k)
    second = torch.zeros(k, dtype=x.dtype).index_add_(0, y, x.pow(2).sum(1)) / n.clamp_min(1)
    assert torch.allclose(lp_sq_norm(m) + v, second, rtol=1e-9)


def test_running_identity_holds_for_the_streaming_estimator(gen):
    """With p = 2 the merge is exact: a_k equals the running mean of ‖φ‖² of the same stream."""
    k, d = 5, 4
    st_ = ClassStats(k, d, momentum=0.9).double()
    st_.train()
    second = torch.zeros(k, dtype=torch.float64)
    count = torch.zeros(k, dtype=torch.float64)
    for _ in range(50):
        x = torch.randn(7, d, generator=gen, dtype=torch.float64) * 2 + 1
        y = torch.randint(0, k, (7,), generator=gen)
        n = torch.bincount(y, minlength=k).double()
        batch_second = torch.zeros(k, dtype=torch.float64).index_add_(0, y, x.pow(2).sum(1)) / n.clamp_min(1)
        rate = torch.maximum(n / (count + n).clamp_min(1), 1 - 0.9**n)
        rate = torch.where(n > 0, rate, torch.zeros_like(rate))
        second = (1 - rate) * second + rate * batch_second
        count += n
        st_.update(x, y)
    assert torch.allclose(st_.mean_sq_norm() + st_.spread(), second, rtol=1e-10)


def merged_by_hand(batches, k, p, momentum):
    """The module docstring's merge, class by class from each batch's ``slow_moments``: per class present,
    r = max(n/(c + n), 1 − β^n), μ ← μ + r (m − μ), and for each of L_p and L2
    ŝ² ← (1 − r) ŝ² + r v + r (1 − r) ‖m − μ_before‖²."""
    d = batches[0][0].shape[1]
    count, mean = [0] * k, torch.zeros(k, d, dtype=torch.float64)
    spread = {p: torch.zeros(k, dtype=torch.float64), 2.0: torch.zeros(k, dtype=torch.float64)}
    for x, y in batches:
        n, m, v = slow_moments(x, y, k, p)
        v = {p: v, 2.0: slow_moments(x, y, k, 2.0)[2]}
        for c in range(k):
            if not n[c]:
                continue
            r = max(n[c].item() / (count[c] + n[c].item()), 1 - momentum ** n[c].item())
            shift = m[c] - mean[c]
            for q in {p, 2.0}:
                spread[q][c] = (1 - r) * spread[q][c] + r * v[q][c] + r * (1 - r) * torch.linalg.vector_norm(shift, ord=q) ** 2
            mean[c] = mean[c] + r * shift
            count[c] += int(n[c])
    return mean, spread[p], spread[2.0], torch.tensor(count, dtype=torch.float64)


@pytest.mark.parametrize("p", [2.0, 3.0])
@pytest.mark.parametrize("host_free", [True, False])
def test_running_state_is_the_documented_merge_for_lp_and_l2(p, host_free, gen, monkeypatch):
    """μ̂_k, ‖ŝ_k‖_p² (``spread``), the L2 spread behind s̄ and the counts after a stream equal the merge
    written out class by class (mixture of running state and batch moments, with its cross term)."""
    monkeypatch.setattr(hostsync, "host_reads_are_free", lambda device: host_free)
    k = 5
    batches = [(torch.randn(9, 4, generator=gen, dtype=torch.float64) * 2 + 1, torch.randint(0, k, (9,), generator=gen))
               for _ in range(12)]
    stats = ClassStats(k, 4, p=p, momentum=0.8).double()
    for x, y in batches:
        stats.update(x, y)
    mean, spread_p, spread_l2, count = merged_by_hand(batches, k, p, 0.8)
    assert torch.allclose(stats.mean, mean, rtol=1e-10, atol=1e-12)
    assert torch.allclose(stats.spread(), spread_p, rtol=1e-10, atol=1e-12)
    assert torch.allclose(stats.sq_dev_l2, spread_l2, rtol=1e-10, atol=1e-12)
    assert torch.equal(stats.count, count)
    assert torch.isclose(stats.s_bar(), spread_l2[count > 0].mean(), rtol=1e-10)
    assert torch.allclose(stats.variability(), torch.linalg.vector_norm(mean, ord=p, dim=1) ** 2 + spread_p, rtol=1e-10)


def test_one_seen_class_sets_s_bar_and_the_unseen_classes_variability(gen):
    """With a single class seen, s̄ is that class's L2 spread and every unseen class takes its a."""
    stats = ClassStats(4, 3).double()
    stats.update(torch.randn(5, 3, generator=gen, dtype=torch.float64) * 3, torch.zeros(5, dtype=torch.long))
    assert stats.sq_dev_l2[0] > 0 and torch.equal(stats.s_bar(), stats.sq_dev_l2[0])
    assert torch.equal(stats.variability(), stats.variability()[0].expand(4))


def test_momentum_zero_keeps_only_the_last_batch_of_a_class(gen):
    """β = 0 (allowed): r_k = 1 whenever class k is present, so the state is its last batch's moments."""
    stats = ClassStats(2, 3, momentum=0.0).double()
    for _ in range(3):
        x, y = torch.randn(6, 3, generator=gen, dtype=torch.float64), torch.tensor([0, 0, 0, 1, 1, 1])
        stats.update(x, y)
    n, m, v, _ = class_moments(x, y, 2)
    assert torch.allclose(stats.mean, m, rtol=1e-12) and torch.allclose(stats.spread(), v, rtol=1e-12)


def test_estimator_converges_with_one_sample_per_class_per_batch(gen):
    """A stream from a known Gaussian mixture, ~1 sample per class per batch (CIFAR-100 at 128)."""
    k, d = 100, 8
    means = torch.randn(k, d, generator=gen) * 2
    sigmas = torch.linspace(0.5, 2.0, k)  # per-dimension std; ‖s_k‖² = d·σ_k²
    stats = ClassStats(k, d, momentum=0.995)
    stats.train()
    for _ in range(4000):
        y = torch.randint(0, k, (128,), generator=gen)
        x = means[y] + sigmas[y].unsqueeze(1) * torch.randn(128, d, generator=gen)
        stats.update(x, y)
    true_spread = d * sigmas**2
    rel_spread = (stats.spread() - true_spread).abs() / true_spread
    assert rel_spread.mean() < 0.08, rel_spread.mean()
    assert (stats.mean - means).norm(dim=1).mean() < 0.4
    true_a = means.pow(2).sum(1) + true_spread
    rel_a = (stats.variability() - true_a).abs() / true_a
    assert rel_a.mean() < 0.06


def test_per_batch_spread_is_what_a_naive_estimator_would_see(gen):
    """Negative control for the test above: the within-batch spread alone is ~0 here."""
    k, d = 100, 8
    y = torch.randint(0, k, (128,), generator=gen)
    x = torch.randn(128, d, generator=gen)
    n, _, v, _ = class_moments(x, y, k)
    assert v[n > 0].mean() < 0.5 * d  # the true spread is d


def test_absent_classes_keep_their_state(gen):
    stats = ClassStats(4, 3)
    stats.train()
    stats.update(torch.randn(8, 3, generator=gen), torch.tensor([0, 1, 2, 3, 0, 1, 2, 3]))
    before = {k: v.clone() for k, v in stats.state_dict().items()}
    stats.update(torch.randn(4, 3, generator=gen), torch.tensor([0, 0, 1, 1]))
    after = stats.state_dict()
    for key in ("mean", "sq_dev", "count"):
        assert torch.equal(after[key][2:], before[key][2:])
        assert not torch.equal(after[key][:2], before[key][:2])


def test_unseen_classes_take_the_mean_variability_and_not_s_bar(gen):
    stats = ClassStats(4, 3)
    stats.train()
    stats.update(torch.randn(6, 3, generator=gen) * 5, torch.tensor([0, 0, 0, 1, 1, 1]))
    a = stats.variability()
    assert torch.allclose(a[2:], a[:2].mean().expand(2))
    assert torch.isclose(stats.s_bar(), stats.sq_dev_l2[:2].mean())


def test_first_observation_is_taken_exactly_not_mixed_with_zero_init():
    stats = ClassStats(2, 2, momentum=0.99)
    stats.train()
    stats.update(torch.tensor([[3.0, 4.0]]), torch.tensor([1]))
    assert torch.allclose(stats.mean[1], torch.tensor([3.0, 4.0]))


def test_no_update_in_eval_mode_and_no_gradient(gen):
    stats = ClassStats(3, 2)
    stats.eval()
    x = torch.randn(6, 2, generator=gen, requires_grad=True)
    stats.update(x, torch.tensor([0, 1, 2, 0, 1, 2]))
    assert stats.count.sum() == 0 and stats.mean.abs().sum() == 0
    stats.train()
    stats.update(x, torch.tensor([0, 1, 2, 0, 1, 2]))
    assert not stats.mean.requires_grad and not stats.variability().requires_grad


def test_state_is_in_buffers_and_round_trips(tmp_path, gen):
    stats = ClassStats(3, 2)
    stats.train()
    stats.update(torch.randn(6, 2, generator=gen), torch.tensor([0, 1, 2, 0, 1, 2]))
    assert set(stats.state_dict()) == {"count", "mean", "sq_dev", "sq_dev_l2"}
    torch.save(stats.state_dict(), tmp_path / "s.pt")
    other = ClassStats(3, 2)
    other.load_state_dict(torch.load(tmp_path / "s.pt"))
    assert torch.equal(other.variability(), stats.variability())
    assert other.to(torch.float64).mean.dtype == torch.float64
    torch.save(stats, tmp_path / "whole.pt")  # the whole module pickles (its load hook is a named function)
    whole = torch.load(tmp_path / "whole.pt", weights_only=False)
    assert torch.equal(whole.variability(), stats.variability())


def test_lp_norm_matches_torch():
    x = torch.randn(5, 7)
    for p in (2.0, 3.0, 5.0):
        assert torch.allclose(lp_sq_norm(x, p), torch.linalg.vector_norm(x, ord=p, dim=1) ** 2, rtol=1e-5)


def test_lp_statistics_distinguish_normalised_classes(gen):
    """With L2-normalised features every L2 a_k is 1; an L_p norm (p ≠ 2) separates the classes."""
    k, d = 3, 16
    stats2, stats5 = ClassStats(k, d, p=2.0), ClassStats(k, d, p=5.0)
    for s in (stats2, stats5):
        s.train()
    y = torch.arange(k).repeat(200)
    spread = torch.tensor([0.1, 1.0, 3.0])[y].unsqueeze(1)
    x = torch.nn.functional.normalize(torch.ones(1, d) + spread * torch.randn(len(y), d, generator=gen), dim=1)
    stats2.update(x, y)
    stats5.update(x, y)
    assert torch.allclose(stats2.variability(), torch.ones(k), atol=1e-4)
    a5 = stats5.variability()
    assert (a5.max() - a5.min()) / a5.mean() > 0.05


@pytest.mark.parametrize("bad", [dict(p=0.5), dict(momentum=1.0), dict(momentum=-0.1), dict(num_classes=0),
                                 dict(feature_dim=0)])
def test_invalid_options_are_named(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        ClassStats(**{"num_classes": 3, "feature_dim": 2, **bad})


@pytest.mark.parametrize("edge", [dict(num_classes=1), dict(feature_dim=1), dict(p=1.0), dict(p=1.5),
                                  dict(momentum=0.0)])
def test_the_edges_of_the_valid_options_are_accepted(edge, gen):
    """One class, a 1-D feature, the L1 norm, a p between norms, no momentum: all valid, and usable."""
    options = {"num_classes": 3, "feature_dim": 2, **edge}
    stats = ClassStats(**options)
    y = torch.arange(8) % options["num_classes"]
    stats.update(torch.randn(8, options["feature_dim"], generator=gen), y)
    assert torch.isfinite(stats.variability()).all() and stats.count.sum() == 8


def stream_states(k, batches, **options):
    return stream(k, batches, **options).state_dict()


def stream(k, batches, **options):
    stats = ClassStats(k, 3, momentum=0.9, **options).double()
    for x, y in batches:
        stats.update(x, y)
    return stats


@pytest.mark.parametrize("host_free", [True, False])
@pytest.mark.parametrize("p", [2.0, 3.0])
@pytest.mark.parametrize("k", [5, 50])  # B = 16 >= K (K rows), and B < K (slots repeat a row)
def test_kept_mean_norms_follow_the_means(k, p, host_free, gen, monkeypatch):
    """‖μ̂_k‖_p² is re-measured only for the rows a step writes; it must equal measuring every row,
    on every slot layout, and be rebuilt when a state is loaded (it is not saved)."""
    monkeypatch.setattr(hostsync, "host_reads_are_free", lambda device: host_free)
    batches = [(torch.randn(16, 3, generator=gen, dtype=torch.float64) * 4 + 2, torch.randint(0, k, (16,), generator=gen))
               for _ in range(6)]
    stats = stream(k, batches, p=p)
    assert stats.seen.sum() < k or k == 5  # some classes never seen: their norm stays 0
    assert torch.allclose(stats.mean_sq_norm(), lp_sq_norm(stats.mean, p), rtol=1e-12, atol=0)
    fresh = ClassStats(k, 3, p=p).double()
    fresh.load_state_dict(stats.state_dict())
    assert "mean_norm" not in stats.state_dict()
    assert torch.allclose(fresh.mean_sq_norm(), lp_sq_norm(stats.mean, p), rtol=1e-12, atol=0)


@pytest.mark.parametrize("k", [5, 50])  # B = 16 >= K, and B < K
def test_batch_slot_layouts_give_the_same_statistics(k, gen, monkeypatch):
    """CPU slots (classes present), sync-free slots (first sample / all K) and the K rows of the
    data-parallel path summarise the same batches into the same state."""
    batches = [(torch.randn(16, 3, generator=gen, dtype=torch.float64) * 4 + 2, torch.randint(0, k, (16,), generator=gen))
               for _ in range(6)]
    cpu = stream_states(k, batches)
    rows = stream_states(k, batches, reduce=lambda t: t)
    monkeypatch.setattr(hostsync, "host_reads_are_free", lambda device: False)
    sync_free = stream_states(k, batches)
    for key in cpu:
        assert torch.allclose(cpu[key], rows[key], rtol=1e-12, atol=1e-12), key
        assert torch.allclose(cpu[key], sync_free[key], rtol=1e-12, atol=1e-12), key


@pytest.mark.parametrize("host_free", [True, False])
@pytest.mark.parametrize("k", [4, 100])
def test_batch_slots_put_each_class_in_one_slot(host_free, k, gen, monkeypatch):
    monkeypatch.setattr(hostsync, "host_reads_are_free", lambda device: host_free)
    y = torch.randint(0, min(k, 9), (30,), generator=gen)
    slot, rows = batch_slots(y, k)
    assert torch.equal(rows[slot], y)  # every sample's slot holds its class
    for c in y.unique():
        assert slot[y == c].unique().numel() == 1  # one slot per class present
