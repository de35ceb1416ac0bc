"""The MR² loss as the authors' release computes it (docs/method.md, "How the authors' release
differs"), reproduced as a comparison method; not the paper's method.

Step by step, for one training batch (K classes, features of width D):

1. Under no gradient, for each class k present in the batch: m_k = ‖batch class mean‖₅² and
   v_k = batch mean of ‖x − batch class mean‖₅² (L5 norms, whatever the features).
2. Running buffers M, V (length K), updated for the present classes before the margins are
   computed. Only M is tested: where M_k is 0 or NaN, *both* M_k and V_k take the batch values;
   otherwise both become decay · old + (1 − decay) · new, decay = 0.9 (see below). Absent classes keep
   theirs. (So a class first seen alone, V_k = 0 < M_k, has its V blended on the next visit.)
3. g_k = (M_k + V_k)^{1/3}, γ_k = K g_k / Σ_j g_j (unseen classes count 0 in the sum).
4. CE of logits / γ_y.
5. s̄ = mean of V over all K; the CIFAR code then sets s̄ = 0 (``zero_s_bar=True``, default).
6. For each class with ≥ 2 samples in the batch: squared L2 distances d_ij, per anchor
   ln(1 + Σ_{j≠i} exp((d_ij − 2s̄)/(10·D))), averaged over the class's anchors, summed over
   the classes, multiplied by D/(10·K).
7. total = CE + λ · (6), λ = 0.1.

The release divides by an attribute that it never sets; it is taken as 1. Its statistics are
reset every epoch (the CIFAR loss object is rebuilt each epoch): ``on_epoch_start`` zeroes
the buffers. Unlike the release, evaluation does not update them (eval mode never does).
The decay. The release's loss class has ``ema_decay=0.999`` as its default, the value of the
authors' CLIP recipe; their CIFAR recipe states EMA decay 0.9, and our comparison runs are the
CIFAR-style runs, so ``decay`` defaults to 0.9 here; ``decay: 0.999`` gives the class's default.
With the statistics reset every epoch the decay only weighs the batches within an epoch.

Degenerate case not covered by the release (it would divide by 0): when every g_k is 0 the
margins are 1; a present class with g_k = 0 (all-zero features) has its margin floored at
1e-12.
"""

from __future__ import annotations

import torch

from ..precision import upcast
from ..stats import class_moments, lp_sq_norm
from .base import ClassLoss, LossOutput
from .margin_ce import logit_margin_cross_entropy
from .rep_margin import log1p_sum_exp, pairwise_sq_dists, same_class_mask

#: the release's norm of the statistics, and the divisor of its rescaling factors.
RELEASE_P = 5.0
RELEASE_SCALE = 10.0
GAMMA_FLOOR = 1e-12


def release_buffer_update(
    m: torch.Tensor, v: torch.Tensor, m_new: torch.Tensor, v_new: torch.Tensor, present: torch.Tensor, decay: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The release's rule for the buffers (m, v) of the present classes, one test for both:

        (m_k, v_k) ← (m_new_k, v_new_k)                                     if m_k = 0 or m_k is NaN
        (m_k, v_k) ← decay·(m_k, v_k) + (1 − decay)·(m_new_k, v_new_k)      otherwise;

    absent classes keep (m_k, v_k)."""
    reset = m.eq(0) | m.isnan()

    def step(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        return torch.where(present, torch.where(reset, new, decay * old + (1.0 - decay) * new), old)

    return step(m, m_new), step(v, v_new)


def release_margins(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """γ_k = K g_k / Σ_j g_j with g_k = (m_k + v_k)^{1/3}; all 1 when Σ g = 0."""
    g = (m + v).clamp_min(0).pow(1.0 / 3.0)
    total = g.sum()
    gamma = g.numel() * g / torch.where(total > 0, total, torch.ones_like(total))
    return torch.where(total > 0, gamma, torch.ones_like(gamma))


def release_representation_term(features: torch.Tensor, targets: torch.Tensor, s_bar: torch.Tensor, num_classes: int) -> torch.Tensor:
    """(D/(10K)) Σ_{k: n_k ≥ 2} (1/n_k) Σ_{i: y_i = k} ln(1 + Σ_{j≠i, y_j = k} exp((d_ij − 2s̄)/(10D))).

    Vectorised: a masked log-sum-exp per anchor (row [0, exponents of the same-class
    partners]), per-class sums with ``index_add``.
    """
    x = upcast(features)
    d = x.shape[1]
    expo = (pairwise_sq_dists(x) - 2.0 * s_bar.detach().to(x.dtype)) / (RELEASE_SCALE * d)
    per_anchor = log1p_sum_exp(expo, same_class_mask(targets))
    sums = x.new_zeros(num_classes).index_add(0, targets, per_anchor)
    n = x.new_zeros(num_classes).index_add(0, targets, torch.ones_like(per_anchor))
    per_class = torch.where(n >= 2, sums / n.clamp_min(1), torch.zeros_like(sums))
    return per_class.sum() * d / (RELEASE_SCALE * num_classes)


class ReleaseMR2Loss(ClassLoss):
    """The release's loss (see module docstring).

    Args:
        lam: λ (0.1).
        decay: the buffers' decay (0.9).
        zero_s_bar: set s̄ = 0 as the CIFAR code does (True).
    """

    def __init__(self, num_classes: int, feature_dim: int, lam: float = 0.1, decay: float = 0.9, zero_s_bar: bool = True) -> None:
        super().__init__()
        if not lam >= 0:
            raise ValueError(f"mr2_release: lam must be >= 0, got lam={lam}")
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"mr2_release: decay must be in [0, 1), got decay={decay}")
        if not isinstance(zero_s_bar, bool):
            raise ValueError(f"mr2_release: zero_s_bar must be true or false, got zero_s_bar={zero_s_bar!r}")
        self.num_classes, self.lam, self.decay, self.zero_s_bar = num_classes, float(lam), float(decay), zero_s_bar
        self.register_buffer("m", torch.zeros(num_classes))
        self.register_buffer("v", torch.zeros(num_classes))

    def on_epoch_start(self, epoch: int) -> None:
        """Reset the statistics (the release rebuilds its loss every epoch)."""
        self.m.zero_()
        self.v.zero_()

    @torch.no_grad()
    def update(self, features: torch.Tensor, targets: torch.Tensor) -> None:
        """Steps 1–2 (training mode only)."""
        if not self.training:
            return
        n, mean, v, _ = class_moments(features, targets, self.num_classes, p=RELEASE_P)
        m_new, v_new = lp_sq_norm(mean, RELEASE_P).to(self.m.dtype), v.to(self.v.dtype)
        m, v = release_buffer_update(self.m, self.v, m_new, v_new, n > 0, self.decay)
        self.m.copy_(m)
        self.v.copy_(v)

    def margins(self) -> torch.Tensor:
        return release_margins(self.m, self.v)

    def s_bar(self) -> torch.Tensor:
        return torch.zeros_like(self.v[0]) if self.zero_s_bar else self.v.mean()

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        self.update(features, targets)
        gamma = self.margins().clamp_min(GAMMA_FLOOR)
        ce = logit_margin_cross_entropy(logits, targets, gamma)
        rep = release_representation_term(features, targets, self.s_bar(), self.num_classes)
        total = ce + self.lam * rep
        return LossOutput(total, {"ce": ce.detach(), "rep": rep.detach()})

    def class_summary(self) -> dict[str, torch.Tensor]:
        """The buffers m_k, v_k and the margins γ_k."""
        return {"m": self.m, "v": self.v, "gamma": self.margins()}
