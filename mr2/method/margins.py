"""Per-class logit margins γ_k (docs/method.md, "Corollary 1").

Both functions return a length-K tensor on the device and dtype of their input, carry no
gradient (margins are targets set from statistics, not parameters), and have mean c̄.
"""

from __future__ import annotations

import torch


def optimal_margins(a: torch.Tensor, c_bar: float) -> torch.Tensor:
    """Corollary 1: γ_k = c̄ · K · a_k^{1/3} / Σ_j a_j^{1/3}.

    The minimiser of Σ_k a_k/γ_k² subject to (1/K) Σ_k γ_k = c̄ (docs/method.md). Larger class
    variability a_k gives a larger margin; equal a_k give γ_k = c̄ for every k.

    Degenerate case (documented rule): when every a_k is 0 the formula is 0/0 and every
    class is equally (in)variable, so the margins are uniform, γ_k = c̄. Negative a_k are
    impossible for a second moment and are clamped to 0. Vectorised and sync-free (no
    ``.item()``), so it can run inside a CUDA training step.
    """
    a = a.detach()
    g = a.clamp_min(0).pow(1.0 / 3.0)
    total = g.sum()
    k = a.numel()
    gamma = c_bar * k * g / total  # 0/0 = nan when every a_k is 0: replaced just below
    return torch.where(total > 0, gamma, torch.full_like(gamma, c_bar))


def uniform_margins(num_classes: int, c_bar: float, like: torch.Tensor | None = None) -> torch.Tensor:
    """Uniform margin ablation: γ_k = c̄ for every class k.

    ``like`` (optional) gives the device and dtype of the result.
    """
    if like is None:
        return torch.full((num_classes,), float(c_bar))
    return torch.full((num_classes,), float(c_bar), device=like.device, dtype=like.dtype)


def margin_objective(a: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """The quantity Corollary 1 minimises, Σ_k a_k / γ_k² (the bound's complexity sum)."""
    return (a / gamma.pow(2)).sum()
