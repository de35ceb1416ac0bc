"""What every loss of the project returns, and the interface the training loop relies on."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class LossOutput:
    """``total`` is what the optimiser minimises; ``parts`` are detached scalars for logging."""

    total: torch.Tensor
    parts: dict[str, torch.Tensor] = field(default_factory=dict)


class ClassLoss(nn.Module):
    """Base of all losses: ``forward(logits, features, targets) -> LossOutput``.

    ``logits`` are (B, K), ``features`` the penultimate features φ(x) (B, D) and ``targets``
    the labels (B,). Losses that keep state (running statistics) keep it in buffers and only
    update it in training mode. A loss may own parameters (learned class centres, a
    projection head): the engine optimises them together with the model's. ``class_summary`` returns per-class tensors (length K) worth
    logging every epoch, e.g. a_k and γ_k; an empty dict when the loss has none.
    """

    #: how many augmented views of each sample the loss wants in one batch (2 for SupCon);
    #: the engine then passes the views concatenated along the batch, targets repeated.
    n_views: int = 1
    #: a loss that sets these gets ``inputs=`` (the batch the model saw, after augmentation) and
    #: ``indices=`` (each sample's index in the training split, on the batch's device) as
    #: keyword arguments from the engine's training step (LfF: its own model and per-sample EMAs).
    needs_inputs: bool = False
    needs_indices: bool = False
    #: whether a training step with this loss can be captured in a CUDA graph and replayed
    #: (``train.cuda_graph``): on CUDA its forward, backward and state updates read no value on
    #: the host and have shapes that do not depend on the data, and nothing the step does depends
    #: on Python state that changes between steps or epochs (a graph replays what was captured).
    #: Losses that break this set it to False, so the engine refuses the key by the method's name.
    capturable: bool = True

    def on_epoch_start(self, epoch: int) -> None:
        """Called by the engine before each training epoch (e.g. to reset per-epoch state)."""

    def class_summary(self) -> dict[str, torch.Tensor]:
        return {}
