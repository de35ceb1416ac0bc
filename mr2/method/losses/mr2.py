"""The MR² objective (docs/method.md, "The loss", item 3) and its two ablations."""

from __future__ import annotations

import torch

from ..margins import optimal_margins, uniform_margins
from .. import hostsync
from ..stats import ClassStats, class_layout, impute_unseen
from .base import ClassLoss, LossOutput
from .margin_ce import logit_margin_cross_entropy
from .rep_margin import representation_margin_loss

MARGINS = ("adaptive", "uniform")
#: what Corollary 1 is fed: "a" = a_k (the paper), "spread" = ‖ŝ_k‖² alone (exploratory, ours)
STATISTICS = ("a", "spread")


class MR2Loss(ClassLoss):
    """(1/B) Σ [ ℓ_{γ,ce}(x, y) + λ · ℓ_s̄(x, y) ] with γ and s̄ from running class statistics.

    Each training step first merges the batch into the statistics (``ClassStats.update``,
    training mode only), then sets the margins from them: ``margin="adaptive"`` uses
    Corollary 1, γ_k = c̄·K·a_k^{1/3}/Σ_j a_j^{1/3}; ``margin="uniform"`` uses γ_k = c̄. λ = 0
    skips the representation term (the "no representation loss" ablation).

    Args:
        num_classes, feature_dim: K and D.
        c_bar: c̄ > 0, the mean margin (1: the release's value, whose margins have mean 1; the paper
            publishes none).
        lam: λ >= 0, the weight of the representation-margin loss (0.1: the release's value).
        p: norm of the statistics behind a_k (2, the paper's choice for unnormalised features).
        momentum: per-sample momentum β of the statistics (see ``mr2.method.stats``; ours).
        margin: "adaptive" (Corollary 1) or "uniform".
        statistic: the class statistic behind the adaptive margins: "a" (the paper's
            a_k = ‖μ̂_k‖² + ‖ŝ_k‖²) or "spread" (‖ŝ_k‖² alone; an exploratory variant of
            ours, not the paper's, for when a_k follows ‖μ̂_k‖² rather than the spread).
            Either way γ follows Corollary 1's cube-root rule with mean c̄.
    """

    def __init__(
        self,
        num_classes: int,
        feature_dim: int,
        c_bar: float = 1.0,
        lam: float = 0.1,
        p: float = 2.0,
        momentum: float = 0.99,
        margin: str = "adaptive",
        statistic: str = "a",
        reduce=None,
    ) -> None:
        super().__init__()
        if margin not in MARGINS:
            raise ValueError(f"MR2Loss: margin must be one of {MARGINS}, got {margin!r}")
        if statistic not in STATISTICS:
            raise ValueError(f"MR2Loss: statistic must be one of {STATISTICS}, got statistic={statistic!r}")
        if not c_bar > 0:
            raise ValueError(f"MR2Loss: c_bar must be > 0 (Eq. 1 divides by it), got c_bar={c_bar}")
        if not lam >= 0:
            raise ValueError(f"MR2Loss: lam must be >= 0, got lam={lam}")
        self.num_classes, self.c_bar, self.lam, self.margin = num_classes, float(c_bar), float(lam), margin
        self.statistic = statistic
        self.stats = ClassStats(num_classes, feature_dim, p=p, momentum=momentum, reduce=reduce)

    def margins(self) -> torch.Tensor:
        """γ_k for every class, from the current statistics."""
        if self.margin == "uniform":
            return uniform_margins(self.num_classes, self.c_bar, like=self.stats.sq_dev)
        return optimal_margins(self.margin_statistic(), self.c_bar)

    def margin_statistic(self) -> torch.Tensor:
        """What Corollary 1 is fed: a_k, or ‖ŝ_k‖² (unseen classes get the seen classes' mean)."""
        if self.statistic == "spread":
            return impute_unseen(self.stats.spread(), self.stats.seen)
        return self.stats.variability()

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        # which classes the batch holds: read once on the CPU, shared by both parts
        layout = class_layout(targets) if hostsync.host_reads_are_free(targets.device) else None
        self.stats.update(features, targets, layout)
        gamma = self.margins()
        ce = logit_margin_cross_entropy(logits, targets, gamma)
        if self.lam > 0:
            s_bar = self.stats.s_bar()
            rep = representation_margin_loss(features, targets, s_bar, layout=layout)
            total = ce + self.lam * rep
        else:
            rep = torch.zeros((), device=ce.device)
            total = ce
        return LossOutput(total, {"ce": ce.detach(), "rep": rep.detach()})

    def class_summary(self) -> dict[str, torch.Tensor]:
        """Per-class a_k, γ_k, ‖μ̂_k‖_p², ‖ŝ_k‖_p², and s̄ (broadcast to length K)."""
        st = self.stats
        return {
            "a": st.variability(),
            "gamma": self.margins(),
            "mean_sq_norm": st.mean_sq_norm(),
            "spread": st.spread(),
            "s_bar": st.s_bar().expand(self.num_classes),
        }
