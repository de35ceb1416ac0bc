"""Representation-margin loss (docs/method.md, "The loss", item 2)."""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from .. import hostsync
from ..precision import upcast
from ..stats import ClassLayout, class_layout, lp_sq_norm

PAIRS = ("auto", "dense", "sparse", "blocked")


def choose_pairs(class_counts: torch.Tensor, dim: int) -> str:
    """The fastest exact evaluation on the CPU for a batch with these per-class counts n_k.

    Measured on a 2-core CPU (BENCHMARKS.md), with U = Σ n_k(n_k − 1)/2 unordered positive
    pairs, S classes present, M = max n_k and B samples. "sparse" gathers two feature rows per
    pair (traffic ∝ U·D); "blocked" gathers S·M rows (padding included) and multiplies them in
    S small Gram matrices; "dense" one B×B Gram matrix. So: blocks covering as many entries as
    the whole matrix (S·M² ≥ B², one class dominates) → dense; pairs outnumbering the gathered
    rows eight to one, or four to one with wide features (D ≥ 640) → blocked; otherwise sparse.
    """
    n = [c for c in class_counts.tolist() if c > 0]  # one host read; a few hundred ints at most
    b, present, largest = sum(n), len(n), max(n)
    pairs = sum(c * (c - 1) for c in n) // 2
    if present * largest * largest >= b * b:
        return "dense"
    rows = present * largest
    if pairs >= 8 * rows or (pairs >= 4 * rows and dim >= 640):
        return "blocked"
    return "sparse"


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
    features: torch.Tensor,
    targets: torch.Tensor,
    s_bar: torch.Tensor,
    pairs: str = "auto",
    layout: ClassLayout | None = None,
) -> torch.Tensor:
    """(1/B) Σ_i ℓ_s̄(x_i, y_i), with
    ℓ_s̄(x, y) = ln[ 1 + Σ_{x⁺ ∈ D_y \\ {x}} exp( ‖φ(x) − φ(x⁺)‖² − 2s̄ ) ].

    D_y is the same-class part of the batch, self-pairs excluded. Computed as a log-sum-exp
    over the row [0, d_ij − 2s̄ for the positives j] so that it never overflows; a sample with
    no same-class partner contributes ln 1 = 0 but still counts in the average over the batch
    (the objective's 1/N). ``s_bar`` carries no gradient.

    Three exact evaluations of the same sum (``pairs``):
    - "dense": all B² distances from the Gram matrix, masked to the same-class pairs. Fixed
      shapes, no host synchronisation: the path taken on CUDA.
    - "sparse": only the same-class pairs (``same_class_pairs``), each distance formed from
      the difference φ_i − φ_j. With many classes a batch holds about B²/(2K) such pairs.
    - "blocked": one Gram matrix per class present, batched (``class_blocks``): with few,
      large classes it computes about B²/K distances instead of B².
    - "auto": ``choose_pairs`` where host reads are free (CPU), dense otherwise. The sparse and
      blocked paths read label-dependent sizes on the host.
    ``layout``: the batch's ``mr2.stats.class_layout``, where the caller already built it.
    """
    if pairs not in PAIRS:
        raise ValueError(f"representation_margin_loss: pairs must be one of {PAIRS}, got {pairs!r}")
    x = upcast(features)
    b = x.shape[0]
    offset = 2.0 * s_bar.detach().to(x.dtype)
    if pairs == "auto" and not hostsync.host_reads_are_free(x.device):
        pairs = "dense"  # the class counts are read on the host only where that is free
    if pairs != "dense":
        layout = class_layout(targets) if layout is None else layout
        pairs = choose_pairs(layout.counts, x.shape[1]) if pairs == "auto" else pairs
    if pairs == "sparse":
        i, j = same_class_pairs(targets, layout)
        return SparseRepMargin.apply(x, i, j, offset)
    if pairs == "blocked":
        table = class_blocks(targets, layout)
        valid = table < b
        same = valid.unsqueeze(2) & valid.unsqueeze(1) & ~torch.eye(table.shape[1], dtype=torch.bool, device=x.device)
        return log1p_sum_exp(block_sq_dists(x, table) - offset, same).masked_fill(~valid, 0.0).sum() / b
    return log1p_sum_exp(pairwise_sq_dists(x) - offset, same_class_mask(targets)).mean()


def same_class_mask(targets: torch.Tensor) -> torch.Tensor:
    """(B, B) boolean: y_i = y_j and i ≠ j (the positives of each anchor)."""
    same = targets.unsqueeze(0) == targets.unsqueeze(1)
    return same.fill_diagonal_(False)


def log1p_sum_exp(values: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """ln(1 + Σ_{j: keep[..., j]} exp(values[..., j])) along the last dimension (0 where nothing is
    kept): the log-sum-exp of the row [0, kept values], which never overflows."""
    row = values.masked_fill(~keep, float("-inf"))
    return torch.logsumexp(torch.cat([row.new_zeros(*row.shape[:-1], 1), row], dim=-1), dim=-1)


def class_runs(targets: torch.Tensor, layout: ClassLayout | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(order, run): the batch's indices sorted by class (stable), and the length of each class's
    run in that order, one per class present (the layout's counts: label-dependent, host read)."""
    layout = class_layout(targets) if layout is None else layout
    return targets.argsort(stable=True), layout.counts


def class_blocks(targets: torch.Tensor, layout: ClassLayout | None = None) -> torch.Tensor:
    """(S, M) table of sample indices, one row per class present, padded with B (M = largest class).

    Row r lists the samples of the r-th class present (``class_runs``).
    """
    b = targets.shape[0]
    order, run = class_runs(targets, layout)
    block = torch.arange(run.shape[0], device=targets.device).repeat_interleave(run)
    slot = torch.arange(b, device=targets.device) - (run.cumsum(0) - run)[block]
    table = torch.full((run.shape[0], int(run.max())), b, dtype=torch.long, device=targets.device)
    table[block, slot] = order
    return table


def block_sq_dists(features: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """‖φ_i − φ_j‖² for every pair of samples in each row of ``table`` (entries ≥ B are padding,
    whose distances are meaningless and must be masked), (S, M, M) (``BlockSqDists``)."""
    return BlockSqDists.apply(features, table)


class BlockSqDists(torch.autograd.Function):
    """D[s, i, j] = ‖φ_{t(s,i)} − φ_{t(s,j)}‖² from a batched Gram matrix of each block's features
    centred on the block's mean (exact for large-norm features); with G = ∂L/∂D + (∂L/∂D)ᵀ,
    ∂L/∂φ_{t(s,i)} = 2 Σ_j G_ij (φ_{t(s,i)} − φ_{t(s,j)}) = 2 (Σ_j G_ij · c_i − (G c)_i) for the
    centred features c (the centre cancels). Written out so that forward and backward allocate
    one (S, M, D) buffer each (plus the (B, D) gradient), not one per elementary op.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        b, d = x.shape
        s, m = table.shape
        pad = (table >= b).unsqueeze(2)
        c = x.index_select(0, table.clamp(max=b - 1).flatten()).view(s, m, d).masked_fill_(pad, 0.0)
        n = (~pad).sum(1).clamp_min(1).to(x.dtype)
        c.sub_((c.sum(1) / n).unsqueeze(1)).masked_fill_(pad, 0.0)  # centred; padding rows stay 0
        sq = lp_sq_norm(c)
        ctx.save_for_backward(c, table)
        ctx.rows = b
        return (sq.unsqueeze(2) + sq.unsqueeze(1) - 2.0 * torch.bmm(c, c.transpose(1, 2))).clamp_min_(0)

    @staticmethod
    @once_differentiable  # first derivatives only: a double backward raises instead of being wrong
    def backward(ctx, grad: torch.Tensor):
        c, table = ctx.saved_tensors
        g = grad + grad.transpose(1, 2)
        gc = torch.bmm(g, c).mul_(-1.0).addcmul_(c, g.sum(2, keepdim=True)).mul_(2.0)
        grad_x = torch.zeros(ctx.rows, c.shape[2], dtype=c.dtype, device=c.device)
        # padding entries carry a zero gradient (their rows of c and g are 0): add them anywhere
        grad_x.index_add_(0, table.clamp(max=ctx.rows - 1).flatten(), gc.view(-1, c.shape[2]))
        return grad_x, None


class SparseRepMargin(torch.autograd.Function):
    """(1/B) Σ_r ln(1 + Σ_{p ∋ r} exp(d_p − o)) over the unordered same-class pairs p = {i_p, j_p}
    (index vectors i, j), with d_p = ‖φ_{i_p} − φ_{j_p}‖² and the offset o = 2s̄ (no gradient).

    With L_r the anchor's term, ∂L/∂d_p = (1/B)(e^{d_p − o − L_{i_p}} + e^{d_p − o − L_{j_p}}) = w_p (each
    exponent ≤ 0: a row's sum contains its own pairs) and ∂d_p/∂φ_{i_p} = 2(φ_{i_p} − φ_{j_p}) = −∂d_p/∂φ_{j_p}.
    One node instead of a graph of gathers and scatters: forward and backward each allocate one
    buffer of the pairs' differences or the (B, D) gradient, and a handful of length-P vectors.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, i: torch.Tensor, j: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        diff = x.index_select(0, i)
        diff.sub_(x.index_select(0, j))
        d = lp_sq_norm(diff).sub_(offset)
        per = log1p_sum_exp_rows(torch.cat([i, j]), torch.cat([d, d]), b)
        ctx.save_for_backward(diff, i, j, d, per)
        return per.mean()

    @staticmethod
    @once_differentiable  # first derivatives only: a double backward raises instead of being wrong
    def backward(ctx, grad: torch.Tensor):
        diff, i, j, d, per = ctx.saved_tensors
        b = per.shape[0]
        w = torch.exp(d - per[i]).add_(torch.exp(d - per[j])).mul_(2.0 * grad / b)
        g = diff * w.unsqueeze(1)
        grad_x = torch.zeros(b, diff.shape[1], dtype=diff.dtype, device=diff.device)
        grad_x.index_add_(0, i, g).index_add_(0, j, g, alpha=-1.0)
        return grad_x, None, None, None


def same_class_pairs(targets: torch.Tensor, layout: ClassLayout | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Index vectors (i, j) of the unordered same-class pairs {i, j}, i ≠ j, of a batch.

    O(B log B + pairs), with no B × B matrix: in the batch sorted by class (``class_runs``),
    position q pairs with the later positions of its run. Sizes depend on the labels.
    """
    b = targets.shape[0]
    order, run = class_runs(targets, layout)
    pos = torch.arange(b, device=targets.device)
    later = run.cumsum(0).repeat_interleave(run) - pos - 1  # partners after position q in its run
    first = pos.repeat_interleave(later)
    start = later.cumsum(0) - later  # where q's entries begin in the flat list
    second = first + 1 + torch.arange(first.shape[0], device=targets.device) - start[first]
    return order[first], order[second]


def log1p_sum_exp_rows(rows: torch.Tensor, values: torch.Tensor, num_rows: int) -> torch.Tensor:
    """ln(1 + Σ_{e: rows[e] = r} exp(values[e])) for r = 0..num_rows−1 (0 for a row with no entry).

    The log-sum-exp of the row [0, values of r...] of a sparse matrix: each row's largest
    exponent M_r = max(0, max values) is factored out so that nothing overflows (used inside
    ``SparseRepMargin``, whose backward is written out).
    """
    zeros = torch.zeros(num_rows, device=values.device, dtype=values.dtype)
    top = zeros.scatter_reduce(0, rows, values, "amax", include_self=True)
    total = torch.exp(-top).index_add(0, rows, torch.exp(values - top[rows]))
    return top + torch.log(total)
