"""Representation-margin loss (PAPER.md, "The loss", item 2)."""

from __future__ import annotations

import torch

from .. import accel
from ..precision import upcast
from ..stats import lp_sq_norm

PAIRS = ("auto", "dense", "sparse")


def sparse_pays_off(num_pairs: int, batch: int, dim: int) -> bool:
    """Whether the sparse path beats the dense one for ``num_pairs`` unordered positive pairs.

    Measured on a 2-core CPU (table in BENCHMARKS.md): the dense Gram matmul is cheap per
    pair, the sparse gathers are memory bound and slow down once the (pairs × D) differences
    outgrow the caches. Sparse wins when positives are rare (2·pairs ≤ B²/32, e.g. K ≥ 40),
    or moderately rare (≤ B²/8) with at most 2²² difference entries.
    """
    directed = 2 * num_pairs
    return 32 * directed <= batch * batch or (8 * directed <= batch * batch and num_pairs * dim <= 2**22)


def pairwise_sq_dists(features: torch.Tensor) -> torch.Tensor:
    """Squared L2 distances ‖φ_i − φ_j‖² of all pairs, (B, B).

    Features are centred on the batch mean first (distances are translation invariant), which
    keeps the Gram-matrix form ‖a‖² + ‖b‖² − 2a·b accurate for large-norm features. No square
    root is taken, so the gradient is finite also at zero distance.
    """
    x = features - features.mean(dim=0, keepdim=True)
    sq = x.pow(2).sum(1)
    return (sq.unsqueeze(1) + sq.unsqueeze(0) - 2.0 * x @ x.T).clamp_min(0)


def representation_margin_loss(
    features: torch.Tensor, targets: torch.Tensor, s_bar: torch.Tensor, pairs: str = "auto"
) -> torch.Tensor:
    """(1/B) Σ_i ℓ_s̄(x_i, y_i), with
    ℓ_s̄(x, y) = ln[ 1 + Σ_{x⁺ ∈ D_y \\ {x}} exp( ‖φ(x) − φ(x⁺)‖² − 2s̄ ) ].

    D_y is the same-class part of the batch, self-pairs excluded. Computed as a log-sum-exp
    over the row [0, d_ij − 2s̄ for the positives j] so that it never overflows; a sample with
    no same-class partner contributes ln 1 = 0 but still counts in the average over the batch
    (the objective's 1/N). ``s_bar`` carries no gradient.

    Two exact evaluations of the same sum (``pairs``):
    - "dense": all B² distances from the Gram matrix, masked to the same-class pairs. Fixed
      shapes, no host synchronisation: the path taken on CUDA.
    - "sparse": only the same-class pairs (``same_class_pairs``, whose sizes are read on the
      host), each distance formed from the difference φ_i − φ_j. With many classes a batch
      holds about B²/(2K) such pairs, so this is the fast path on CPU for large K.
    - "auto": sparse where host reads are free (CPU) and ``sparse_pays_off``, dense otherwise.
    """
    if pairs not in PAIRS:
        raise ValueError(f"representation_margin_loss: pairs must be one of {PAIRS}, got {pairs!r}")
    x = upcast(features)
    b = x.shape[0]
    offset = 2.0 * s_bar.detach().to(x.dtype)
    if pairs == "auto":  # the pair count is read on the host only where that is free
        sparse = accel.host_reads_are_free(x.device) and sparse_pays_off(count_same_class_pairs(targets), b, x.shape[1])
        pairs = "sparse" if sparse else "dense"
    if pairs == "sparse":
        i, j = same_class_pairs(targets)
        d = PairSqDists.apply(x, i, j) - offset
        return log1p_sum_exp_rows(torch.cat([i, j]), torch.cat([d, d]), b).mean()
    same = targets.unsqueeze(0) == targets.unsqueeze(1)
    same.fill_diagonal_(False)
    d = (pairwise_sq_dists(x) - offset).masked_fill(~same, float("-inf"))
    row = torch.cat([torch.zeros(b, 1, device=x.device, dtype=x.dtype), d], dim=1)
    return torch.logsumexp(row, dim=1).mean()


class PairSqDists(torch.autograd.Function):
    """d_p = ‖φ_{i_p} − φ_{j_p}‖² for index vectors (i, j); ∂d_p/∂φ_{i_p} = 2(φ_{i_p} − φ_{j_p}) = −∂d_p/∂φ_{j_p}.

    Written out so that forward and backward each allocate one buffer (the differences, then
    the (B, D) gradient) instead of one per elementary op: on the CPU, fresh large buffers cost
    page faults that dominate this small computation.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        diff = x.index_select(0, i)
        diff.sub_(x.index_select(0, j))
        ctx.save_for_backward(diff, i, j)
        ctx.rows = x.shape[0]
        return lp_sq_norm(diff)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        diff, i, j = ctx.saved_tensors
        g = diff * (2.0 * grad).unsqueeze(1)
        grad_x = torch.zeros(ctx.rows, diff.shape[1], dtype=diff.dtype, device=diff.device)
        grad_x.index_add_(0, i, g).index_add_(0, j, g, alpha=-1.0)
        return grad_x, None, None


def count_same_class_pairs(targets: torch.Tensor) -> int:
    """Σ_k n_k(n_k − 1)/2, the number of unordered same-class pairs of a batch (read on the host)."""
    n = torch.bincount(targets)
    return int((n * (n - 1)).sum()) // 2


def same_class_pairs(targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Index vectors (i, j) of the unordered same-class pairs {i, j}, i ≠ j, of a batch.

    O(B log B + pairs), with no B × B matrix: sorting groups each class into a run, and
    sorted position q pairs with the later positions of its run. Sizes depend on the labels
    (``repeat_interleave``, ``unique_consecutive``), so this reads the device on the host.
    """
    b = targets.shape[0]
    order = targets.argsort(stable=True)
    _, run = torch.unique_consecutive(targets[order], return_counts=True)
    pos = torch.arange(b, device=targets.device)
    later = run.cumsum(0).repeat_interleave(run) - pos - 1  # partners after position q in its run
    first = pos.repeat_interleave(later)
    start = later.cumsum(0) - later  # where q's entries begin in the flat list
    second = first + 1 + torch.arange(first.shape[0], device=targets.device) - start[first]
    return order[first], order[second]


def log1p_sum_exp_rows(rows: torch.Tensor, values: torch.Tensor, num_rows: int) -> torch.Tensor:
    """ln(1 + Σ_{e: rows[e] = r} exp(values[e])) for r = 0..num_rows−1 (0 for a row with no entry).

    The log-sum-exp of the row [0, values of r...] of a sparse matrix: each row's largest
    exponent M_r = max(0, max values) is factored out (taken without gradient, which leaves the
    gradient exact) so that nothing overflows.
    """
    zeros = torch.zeros(num_rows, device=values.device, dtype=values.dtype)
    top = zeros.scatter_reduce(0, rows, values.detach(), "amax", include_self=True)
    total = torch.exp(-top).index_add(0, rows, torch.exp(values - top[rows]))
    return top + torch.log(total)
