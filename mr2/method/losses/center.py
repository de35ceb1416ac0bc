"""Center loss (Wen, Zhang, Li, Qiao, "A Discriminative Feature Learning Approach for Deep
Face Recognition", ECCV 2016), jointly with softmax cross-entropy.

Objective: L = L_S + λ L_C with L_C = ½ Σ_i ‖x_i − c_{y_i}‖²; both terms are sums over the
mini-batch in the paper, here both are batch means (the same ratio), so
total = CE + λ · ½ mean_i ‖x_i − c_{y_i}‖², λ = 0.003 (the paper's face-recognition value).
The centres c_k are a parameter of the loss, initialised at 0 (``init: zeros``).

Against the authors' code (ydwen/caffe-face, a Caffe layer, not in the index we searched;
its layer definition as published in its README and configs). Its face model uses
``loss_weight: 0.008`` (we keep the paper's λ = 0.003: the paper states it for the same
experiments) and fills the centres with Caffe's ``xavier`` filler, uniform on
[−√(3/D), √(3/D)] (``init: xavier``); its layer computes the same batch mean ½‖x − c_y‖² and the
same α-rule. The most used PyTorch port (KaiyangZhou/pytorch-center-loss) draws the centres
from N(0, 1) (``init: randn``), computes mean_i ‖x_i − c_{y_i}‖² without the ½ (its weight 1 is
our λ = 2) and moves the centres by plain SGD on that loss (learning rate 0.5 after dividing their
gradient by its weight), not by the paper's rule. We start at 0 because a class's centre
then starts where a feature far from every class would be, identically on every seed, and the
α-rule pulls it to its class mean within a few steps; random centres only add seed noise.

Centre update (documented choice). The paper does not move the centres by ∂L/∂c but by its
own rule c_j ← c_j − α Δc_j with Δc_j = Σ_{i: y_i = j} (c_j − x_i) / (1 + n_j) and α = 0.5,
while the features receive ∂(λ L_C)/∂x_i = λ (x_i − c_{y_i}). Here the centres are updated by
the engine's optimiser, with a gradient that reproduces that rule: the centres get the
gradient of α · U, U = ½ Σ_i ‖sg(x_i) − c_{y_i}‖² / (1 + n_{y_i}), whose gradient is exactly
α Δc_j, and the features get the gradient of λ L_C with the centres held fixed. U enters the
total as α(U − sg(U)), so the reported value is the paper's L. With plain SGD at learning
rate η a step moves c_j by η α Δc_j (the paper's step is α Δc_j, i.e. η = 1); momentum,
adaptive optimisers and weight decay on the centres change the step further (the engine
should not decay them). Classes absent from the batch get no centre gradient.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..precision import upcast
from .base import ClassLoss, LossOutput


def center_term(features: torch.Tensor, centers: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L_C per sample, averaged: ½ mean_i ‖x_i − c_{y_i}‖²."""
    return 0.5 * (features - centers[targets]).pow(2).sum(1).mean()


def center_update_surrogate(features: torch.Tensor, centers: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """U = ½ Σ_i ‖sg(x_i) − c_{y_i}‖² / (1 + n_{y_i}); ∂U/∂c_j = Σ_{i: y_i=j} (c_j − x_i)/(1 + n_j) = Δc_j."""
    n = torch.bincount(targets, minlength=centers.shape[0]).to(centers.dtype)
    sq = (features.detach() - centers[targets]).pow(2).sum(1)
    return 0.5 * (sq / (1.0 + n[targets])).sum()


CENTER_INITS = ("zeros", "xavier", "randn")


def initial_centers(num_classes: int, feature_dim: int, init: str) -> torch.Tensor:
    """c_k = 0 (``zeros``); c_k ~ U[−√(3/D), √(3/D)]^D (``xavier``, Caffe's filler with fan-in D);
    c_k ~ N(0, I_D) (``randn``). Random draws use torch's global generator (the run's seed)."""
    if init == "zeros":
        return torch.zeros(num_classes, feature_dim)
    if init == "xavier":
        bound = (3.0 / feature_dim) ** 0.5
        return torch.empty(num_classes, feature_dim).uniform_(-bound, bound)
    return torch.randn(num_classes, feature_dim)


class CenterLoss(ClassLoss):
    """CE + λ · L_C with learned centres (see module docstring).

    Args:
        lam: λ, the weight of the centre term (0.003).
        alpha: α, the centre learning rate of the paper's update rule (0.5).
        init: the centres' initialisation: ``zeros`` (ours), ``xavier`` (the authors' Caffe
            filler, uniform on [−√(3/D), √(3/D)]) or ``randn`` (N(0, 1), the PyTorch port's).
    """

    capturable = False  # ``bincount`` of the labels reads their maximum on the host on CUDA

    def __init__(self, num_classes: int, feature_dim: int, lam: float = 0.003, alpha: float = 0.5,
                 init: str = "zeros") -> None:
        super().__init__()
        if not lam >= 0:
            raise ValueError(f"center: lam must be >= 0, got lam={lam}")
        if not alpha >= 0:
            raise ValueError(f"center: alpha must be >= 0, got alpha={alpha}")
        if init not in CENTER_INITS:
            raise ValueError(f"center: init must be one of {', '.join(CENTER_INITS)}, got init={init!r}")
        self.lam, self.alpha = float(lam), float(alpha)
        self.centers = nn.Parameter(initial_centers(num_classes, feature_dim, init))

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor) -> LossOutput:
        x = upcast(features)
        c = self.centers.to(x.dtype)
        ce = F.cross_entropy(upcast(logits), targets)
        pull = center_term(x, c.detach(), targets)
        u = center_update_surrogate(x, c, targets)
        total = ce + self.lam * pull + self.alpha * (u - u.detach())
        return LossOutput(total, {"ce": ce.detach(), "center": pull.detach()})

    def class_summary(self) -> dict[str, torch.Tensor]:
        """‖c_k‖², the squared norm of every centre."""
        return {"center_sq_norm": self.centers.detach().pow(2).sum(1)}
