"""Class statistics of penultimate features (docs/method.md, "Notation").

Symbols, each computed by exactly one function below:

- μ̂_k          running mean feature of class k                   (``ClassStats.mean``)
- ‖μ̂_k‖_p²      its squared L_p norm                              (``ClassStats.mean_sq_norm``)
- ‖ŝ_k‖_p²      mean squared L_p deviation (1/n_k)Σ‖φ(x) − μ̂_k‖_p² (``ClassStats.spread``)
- a_k          variability ‖μ̂_k‖_p² + ‖ŝ_k‖_p²                    (``ClassStats.variability``)
- s̄            (1/K) Σ_k ‖ŝ_k‖²  (L2, the units of the distances)  (``ClassStats.s_bar``)

Estimator (documented choice; the paper does not publish one)
-------------------------------------------------------------
Each batch is summarised per class by its exact moments (``class_moments``): the count n_k,
the batch class mean m_k and the within-batch mean squared deviation v_k. These are merged
into the running state with a per-class mixing rate r_k, using the exact formula for the
mean and mean squared deviation of a two-part mixture:

    μ̂_k ← (1 − r_k) μ̂_k + r_k m_k
    ŝ²_k ← (1 − r_k) ŝ²_k + r_k v_k + r_k (1 − r_k) ‖m_k − μ̂_k‖²

The last term is what makes the estimator consistent when a batch holds one sample of a
class (CIFAR-100 at batch 128): v_k is then 0, but the sample's distance from the running
mean carries the spread. With p = 2 the merge is exact, so ‖μ̂_k‖² + ‖ŝ_k‖² equals the
running mean of ‖φ(x)‖² (the identity in docs/method.md) and a_k is unbiased for the class's
second moment. For p ≠ 2 the same merge is applied to L_p norms (an approximation).

Momentum β is *per sample of the class*: r_k = max(n_k / (c_k + n_k), 1 − β^{n_k}), where c_k
counts the samples of class k seen so far. The first term makes the state the exact
running average while a class has been seen fewer than ~1/(1 − β) times (no bias towards
the zero initialisation); afterwards it is an exponential average over the class's last
~1/(1 − β) samples, whatever the batch size or the number of classes. Classes absent from
a batch have n_k = 0, so r_k = 0 and their state is kept.

Cost: a step summarises the batch in "slots" (``batch_slots``) — the classes present on the
CPU, B fixed slots on CUDA when B < K — so it reads and writes O(min(B, K)·D) numbers, not the
whole K×D state; ‖μ̂_k‖_p² is kept per class and re-measured only for the rows a step writes, so
reading a_k and the margins costs O(K).

Unseen classes (c_k = 0): ``variability`` gives them the mean a of the seen classes, so
their margin is the average one and they do not shift the others' share of the budget;
``s_bar`` averages over seen classes only. Before any class is seen a = 0 everywhere and
``optimal_margins`` falls back to uniform margins.

The state lives in buffers (saved in ``state_dict``, moved by ``.to(device)``), is updated
under ``torch.no_grad`` and only in training mode: in ``eval()`` mode ``update`` does nothing.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import torch
from torch import nn

from . import hostsync
from .precision import upcast

Reduce = Callable[[torch.Tensor], torch.Tensor]


def lp_sq_norm(x: torch.Tensor, p: float = 2.0) -> torch.Tensor:
    """Squared L_p norm along the last dimension: ‖x‖_p² = (Σ_i |x_i|^p)^{2/p}.

    One fused reduction, with no temporary of x's size (this runs on the K×D state every step);
    for p = 2 the square of the rounded root, so within a few ulps of the sum of squares."""
    return torch.linalg.vector_norm(x, ord=p, dim=-1).square()


def class_moments(
    features: torch.Tensor,
    targets: torch.Tensor,
    num_classes: int,
    p: float = 2.0,
    reduce: Reduce | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact per-class moments of a set of features, with 1/n normalisation.

    Returns (n, m, v, v2): counts n_k, class means m_k = (1/n_k)Σ φ(x), and mean squared
    deviations v_k = (1/n_k) Σ ‖φ(x) − m_k‖_p² and v2_k, the same in L2. Classes with
    n_k = 0 get zeros. Vectorised with ``index_add_``; no loop over classes. Two passes (means,
    then deviations from them), so v_k is accurate also when ‖m_k‖ ≫ the spread. Where host reads
    are free (CPU) the second pass skips the samples alone in their class (deviation exactly 0).

    ``reduce`` (e.g. a summing all-reduce over data-parallel ranks) is applied to the
    per-class sums so that every rank obtains the moments of the global batch.
    """
    features = upcast(features.detach())
    targets = targets.detach()
    k, d = num_classes, features.shape[1]
    # index_add_ into a contiguous (K, D) block and index_select below: both several times
    # faster on CPU than a strided view, an appended column of ones or advanced indexing
    sums = torch.zeros(k, d, device=features.device, dtype=features.dtype).index_add_(0, targets, features)
    n = torch.zeros(k, device=features.device, dtype=features.dtype)
    n.index_add_(0, targets, torch.ones_like(targets, dtype=features.dtype))
    if reduce is not None:  # one all-reduce of [Σφ | n]
        both = reduce(torch.cat([sums, n.unsqueeze(1)], dim=1))
        sums, n = both[:, :d], both[:, d]
    m = sums.div_(n.clamp_min(1).unsqueeze(1))
    if hostsync.host_reads_are_free(features.device):  # a sample alone in its class deviates by exactly 0
        paired = (n.index_select(0, targets) > 1).nonzero().squeeze(1)
        if paired.shape[0] < targets.shape[0]:
            features, targets = features.index_select(0, paired), targets.index_select(0, paired)
    diff = m.index_select(0, targets).sub_(features)  # m_y − φ(x); only its norms are used
    l2 = lp_sq_norm(diff, 2.0)
    dev = torch.stack([l2 if p == 2.0 else lp_sq_norm(diff, p), l2], dim=1)
    dev_sums = torch.zeros(k, 2, device=features.device, dtype=features.dtype)
    dev_sums.index_add_(0, targets, dev)
    if reduce is not None:
        dev_sums = reduce(dev_sums)
    v = dev_sums / n.clamp_min(1).unsqueeze(1)
    return n, m, v[:, 0], v[:, 1]


class ClassStats(nn.Module):
    """Running per-class feature statistics μ̂_k, ‖ŝ_k‖_p², a_k and s̄ (see module docstring).

    Args:
        num_classes: K.
        feature_dim: D, the width of φ(x).
        p: the norm of ‖μ̂_k‖_p and ‖ŝ_k‖_p (2 by default; docs/method.md suggests p ≠ 2 for
            L2-normalised features, where every a_k would otherwise be 1).
        momentum: β, per sample of a class (see module docstring), in [0, 1).
        reduce: optional summing all-reduce for data-parallel training.
    """

    def __init__(
        self,
        num_classes: int,
        feature_dim: int,
        p: float = 2.0,
        momentum: float = 0.99,
        reduce: Reduce | None = None,
    ) -> None:
        super().__init__()
        if num_classes < 1 or feature_dim < 1:
            raise ValueError(f"ClassStats needs num_classes >= 1 and feature_dim >= 1, got {num_classes}, {feature_dim}")
        if not p >= 1.0:
            raise ValueError(f"ClassStats: p must be >= 1 (a norm), got p={p}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"ClassStats: momentum must be in [0, 1), got momentum={momentum}")
        self.num_classes, self.feature_dim = num_classes, feature_dim
        self.p, self.momentum, self.reduce = float(p), float(momentum), reduce
        self.register_buffer("count", torch.zeros(num_classes))
        self.register_buffer("mean", torch.zeros(num_classes, feature_dim))
        self.register_buffer("sq_dev", torch.zeros(num_classes))
        self.register_buffer("sq_dev_l2", torch.zeros(num_classes))
        # ‖μ̂_k‖_p², kept in step with ``mean`` (the rows a step touches are re-measured), so that
        # the margins cost O(K), not a pass over the K×D state; derived, hence not saved, and
        # recomputed when a state dict is loaded
        self.register_buffer("mean_norm", torch.zeros(num_classes), persistent=False)
        self.register_load_state_dict_post_hook(ClassStats._after_load)  # a named function: picklable

    @torch.no_grad()
    def update(self, features: torch.Tensor, targets: torch.Tensor, layout: ClassLayout | None = None) -> None:
        """Merge one batch into the running state (training mode only; see module docstring).
        ``layout``: the batch's ``class_layout`` where the caller already built it (CPU)."""
        if not self.training:
            return
        if features.shape[1] != self.feature_dim:
            raise ValueError(f"ClassStats: features have dim {features.shape[1]}, expected {self.feature_dim}")
        features = features.to(self.mean.dtype)
        if self.reduce is None:
            slot, rows = batch_slots(targets, self.num_classes, layout)
            n, m, v, v2 = class_moments(features, slot, rows.shape[0], self.p)
        else:  # data-parallel: every rank reduces the same K rows
            n, m, v, v2 = class_moments(features, targets, self.num_classes, self.p, self.reduce)
            rows = torch.arange(self.num_classes, device=targets.device)
        self._merge(rows, n, m, v, v2)

    def _merge(self, rows: torch.Tensor, n: torch.Tensor, m: torch.Tensor, v: torch.Tensor, v2: torch.Tensor) -> None:
        """Merge batch moments (n, m, v, v2)[s] into the state of class rows[s] (module docstring);
        m, a temporary of the caller, is overwritten."""
        # n = 0 (an empty slot) gives rate = max(0, 1 − β⁰) = 0: the class's state is kept
        rate = torch.maximum(n / (self.count[rows] + n).clamp_min(1), 1 - self.momentum**n)
        rows_before = self.mean.index_select(0, rows)
        delta = m.sub_(rows_before)  # m_k − μ̂_k, in m's memory (a temporary)
        cross = rate * (1 - rate)
        shift_l2 = lp_sq_norm(delta, 2.0)
        shift_p = shift_l2 if self.p == 2.0 else lp_sq_norm(delta, self.p)
        self.mean.index_add_(0, rows, delta.mul_(rate.unsqueeze(1)))
        # the rows just written, re-read into the same buffer (all copies of a row repeated in
        # ``rows`` read its final value)
        rows_after = torch.index_select(self.mean, 0, rows, out=rows_before)
        self.mean_norm.index_copy_(0, rows, lp_sq_norm(rows_after, self.p))
        self.sq_dev.index_add_(0, rows, rate * (v - self.sq_dev[rows]) + cross * shift_p)
        self.sq_dev_l2.index_add_(0, rows, rate * (v2 - self.sq_dev_l2[rows]) + cross * shift_l2)
        self.count.index_add_(0, rows, n)

    @staticmethod
    @torch.no_grad()
    def _after_load(module: "ClassStats", incompatible_keys) -> None:
        """Recompute ‖μ̂_k‖_p² for every class from the loaded ``mean``."""
        module.mean_norm.copy_(lp_sq_norm(module.mean, module.p))

    @property
    def seen(self) -> torch.Tensor:
        """Boolean mask of the classes seen at least once."""
        return self.count > 0

    def mean_sq_norm(self) -> torch.Tensor:
        """‖μ̂_k‖_p², per class (0 for unseen classes)."""
        return self.mean_norm

    def spread(self) -> torch.Tensor:
        """‖ŝ_k‖_p² = (1/n_k) Σ_{x∈D_k} ‖φ(x) − μ̂_k‖_p², per class (0 for unseen classes)."""
        return self.sq_dev

    def variability(self) -> torch.Tensor:
        """a_k = ‖μ̂_k‖_p² + ‖ŝ_k‖_p²; unseen classes get the mean a of the seen ones."""
        a = self.mean_sq_norm() + self.spread()
        return impute_unseen(a, self.seen)

    def s_bar(self) -> torch.Tensor:
        """s̄ = (1/K) Σ_k ‖ŝ_k‖² in L2 (the units of the squared distances it is compared with),
        averaged over the seen classes; 0 before any class is seen."""
        return masked_mean(self.sq_dev_l2, self.seen)


class ClassLayout(NamedTuple):
    """The classes a batch holds: ``classes`` (the S classes present, ascending), ``slot`` (for each
    sample, its class's index in ``classes``) and ``counts`` (n_k of each class present). Its sizes
    depend on the labels, so it is read on the host: built only where that is free (CPU), once per
    step, and shared by the statistics and the representation term."""

    classes: torch.Tensor
    slot: torch.Tensor
    counts: torch.Tensor


def class_layout(targets: torch.Tensor) -> ClassLayout:
    """The ``ClassLayout`` of a batch's labels (one sort)."""
    return ClassLayout(*torch.unique(targets, return_inverse=True, return_counts=True))


def batch_slots(
    targets: torch.Tensor, num_classes: int, layout: ClassLayout | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ("slots") in which to summarise a batch per class: (slot of each sample, class of each slot).

    A step then costs O(min(B, K)·D), not O(K·D). Where host reads are free (CPU) the slots are
    exactly the classes present (``unique``). Elsewhere sizes must not depend on the labels:
    with B < K each class present takes the slot of its first sample, so slot s holds class
    targets[s] and the other slots stay empty (n = 0, which changes nothing); otherwise the
    slots are the K classes. ``layout``: the batch's ``class_layout``, where already built.
    """
    if hostsync.host_reads_are_free(targets.device):
        layout = class_layout(targets) if layout is None else layout
        return layout.slot, layout.classes
    b = targets.shape[0]
    if b >= num_classes:
        return targets, torch.arange(num_classes, device=targets.device)
    first = torch.full((num_classes,), b, dtype=torch.long, device=targets.device)
    first.scatter_reduce_(0, targets, torch.arange(b, device=targets.device), "amin")
    return first[targets], targets


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of x over the entries where mask is true; 0 when mask is empty (no host sync)."""
    w = mask.to(x.dtype)
    return (x * w).sum() / w.sum().clamp_min(1)


def impute_unseen(a: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
    """Replace the entries of unseen classes with the mean over seen classes."""
    return torch.where(seen, a, masked_mean(a, seen))
