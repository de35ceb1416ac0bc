"""Learning from Failure (Nam, Cha, Ahn, Lee, Shin, "Learning from Failure: Training Debiased
Classifier from Biased Classifier", NeurIPS 2020, Algorithm 1).

Two networks of the same architecture are trained together on the same batches:
- the biased model f_B with the generalised cross-entropy GCE(p, y) = (1 − p_y^q)/q, q = 0.7,
  which emphasises the samples it already finds easy and so amplifies the "easy" cue;
- the debiased model f_D (the engine's model, the one evaluated) with cross-entropy weighted
  per sample by the relative difficulty W(x) = CE_B(x) / (CE_B(x) + CE_D(x)), which is large
  for the samples the biased model fails on.
The per-sample losses in W are exponential moving averages over the epochs, kept per training
sample (a buffer of length N indexed by the sample's index in the training split):
ema_i ← α·ema_i + (1 − α)·ℓ_i, α = 0.7, where the first visit of sample i takes ℓ_i itself.
Each EMA is divided by the largest EMA of the sample's class (over all training samples seen
so far) before W is formed, as the authors' code does; W = ℓ̃_B / (ℓ̃_B + ℓ̃_D + 1e-8) carries
no gradient. The step: update both EMAs with the batch's detached cross-entropies, read W,
then descend mean_i GCE_B(x_i) + mean_i W(x_i)·CE_D(x_i).

Our reading, documented choices:
- GCE is the paper's (1 − p_y^q)/q; the authors' code uses a surrogate with gradient
  q·∇GCE (the biased model's gradient scaled by q), which we do not copy.
- Both models are optimised by the engine's one optimiser (same lr, schedule, weight decay,
  gradient clipping over both); the biased model is initialised independently of the
  debiased one. It takes the same (augmented) batch as the debiased model.
- The engine passes the batch inputs (``needs_inputs``) and the samples' indices in the
  training split (``needs_indices``); the biased model is built by the ``model_builder``
  callable the factory receives, so it has the debiased model's config, and it runs under the
  debiased model's precision (bf16 autocast when the logits arrive in bf16).
- The class maximum is computed over the whole EMA buffer with one ``scatter_reduce``
  (no loop over classes); samples not yet seen hold 0 and do not change a maximum.
"""

from __future__ import annotations

import contextlib
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..precision import LOW_PRECISION, upcast
from .base import ClassLoss, LossOutput

W_EPS = 1e-8  # the authors' constant in W's denominator


def generalized_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, q: float) -> torch.Tensor:
    """GCE(x, y) = (1 − p_y^q) / q per sample, p_y = softmax(z)_y (Zhang & Sabuncu 2018).
    Computed as −expm1(q·log p_y)/q, accurate when p_y → 1; q → 0 is cross-entropy."""
    logp = F.log_softmax(upcast(logits), dim=1).gather(1, targets.unsqueeze(1)).squeeze(1)
    return -torch.expm1(q * logp) / q


def ema_update(ema: torch.Tensor, seen: torch.Tensor, indices: torch.Tensor, values: torch.Tensor,
               alpha: float) -> None:
    """In place: ema_i ← α·ema_i + (1 − α·s_i)·v_i for the batch's samples i, with s_i = 1 when
    sample i was seen before (``seen``: the batch's flags, 0 or 1), so a sample's first value is
    taken as it is. A sample twice in one batch keeps one of its values."""
    ema[indices] = alpha * ema[indices] + (1.0 - alpha * seen) * values


def class_max(ema: torch.Tensor, sample_class: torch.Tensor, num_classes: int) -> torch.Tensor:
    """max_{i: y_i = k} ema_i for every class k (0 for a class with no sample seen)."""
    return ema.new_zeros(num_classes).scatter_reduce(0, sample_class, ema, reduce="amax", include_self=True)


def relative_difficulty(loss_b: torch.Tensor, loss_d: torch.Tensor) -> torch.Tensor:
    """W(x) = ℓ_B(x) / (ℓ_B(x) + ℓ_D(x) + 1e-8), in [0, 1)."""
    return loss_b / (loss_b + loss_d + W_EPS)


class LfFLoss(ClassLoss):
    """LfF: the loss owns the biased model and the per-sample EMA buffers (see module docstring)."""

    needs_inputs = True
    needs_indices = True

    def __init__(self, num_classes: int, model_builder: Callable[[], nn.Module], num_samples: int,
                 q: float = 0.7, alpha: float = 0.7) -> None:
        super().__init__()
        if not 0 < q <= 1:
            raise ValueError(f"lff: q must be in (0, 1], got q={q}")
        if not 0 <= alpha < 1:
            raise ValueError(f"lff: alpha must be in [0, 1), got alpha={alpha}")
        if not (isinstance(num_samples, int) and num_samples > 0):
            raise ValueError(f"lff: num_samples (the training-set size) must be a positive int, got {num_samples!r}")
        self.num_classes, self.q, self.alpha = num_classes, float(q), float(alpha)
        self.biased = model_builder()
        self.register_buffer("ema_b", torch.zeros(num_samples))
        self.register_buffer("ema_d", torch.zeros(num_samples))
        self.register_buffer("seen", torch.zeros(num_samples))
        self.register_buffer("sample_class", torch.zeros(num_samples, dtype=torch.long))

    def _biased_logits(self, inputs: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """f_B(x) at the precision the debiased logits came in (bf16 autocast if they are bf16)."""
        ctx = (torch.autocast(inputs.device.type, dtype=like.dtype) if like.dtype in LOW_PRECISION
               else contextlib.nullcontext())
        with ctx:
            out = self.biased(inputs)
        return out[0] if isinstance(out, tuple) else out

    def forward(self, logits: torch.Tensor, features: torch.Tensor, targets: torch.Tensor, *,
                inputs: torch.Tensor | None = None, indices: torch.Tensor | None = None) -> LossOutput:
        if inputs is None or indices is None:
            raise ValueError("lff: the loss needs the batch inputs and the samples' training-set indices "
                             "(loss(logits, features, targets, inputs=..., indices=...))")
        if len(indices) != len(targets) or len(inputs) != len(targets):
            raise ValueError(f"lff: {len(inputs)} inputs and {len(indices)} indices for {len(targets)} targets")
        z_d = upcast(logits)
        z_b = upcast(self._biased_logits(inputs, logits))
        ce_d = F.cross_entropy(z_d, targets, reduction="none")
        gce_b = generalized_cross_entropy(z_b, targets, self.q)
        with torch.no_grad():
            ce_b = F.cross_entropy(z_b.detach(), targets, reduction="none")
            if self.training:
                self.sample_class[indices] = targets
                seen = self.seen[indices]
                ema_update(self.ema_b, seen, indices, ce_b.to(self.ema_b.dtype), self.alpha)
                ema_update(self.ema_d, seen, indices, ce_d.detach().to(self.ema_d.dtype), self.alpha)
                self.seen[indices] = 1.0
            tiny = torch.finfo(self.ema_b.dtype).tiny
            max_b = class_max(self.ema_b, self.sample_class, self.num_classes).clamp_min(tiny)
            max_d = class_max(self.ema_d, self.sample_class, self.num_classes).clamp_min(tiny)
            w = relative_difficulty(self.ema_b[indices] / max_b[targets], self.ema_d[indices] / max_d[targets])
        debiased = (w.to(ce_d.dtype) * ce_d).mean()
        biased = gce_b.mean()
        total = biased + debiased
        return LossOutput(total, {"gce_biased": biased.detach(), "weighted_ce": debiased.detach(),
                                  "ce": ce_d.detach().mean(), "weight_mean": w.detach().float().mean()})
