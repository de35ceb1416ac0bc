"""Speed settings of the training engine, chosen from the device at run time.

- channels_last memory format for image models on CUDA (convolutions run NHWC kernels);
- ``torch.compile`` with a fallback to eager execution, with a message, when compiling fails
  (at ``torch.compile()`` or, more often, at the first call, when tracing and code
  generation actually happen);
- fused optimiser steps on CUDA (one kernel for all parameters); on CPU torch's default
  (the for-loop implementation) is kept, so CPU runs stay bit-for-bit reproducible;
- ``train.cuda_graph``: the whole training step captured in one CUDA graph and replayed
  (``mr2.engine.step``), with the same fallback to eager execution, with a message.

Host-device synchronisation in a training step (audited; see ``tests/test_speed.py``): the
MR² loss, its class statistics and the cross-entropy use no ``.item()``, no ``nonzero`` and
no boolean-mask indexing on CUDA. On the CPU, where host reads are free,
the loss does read label-dependent sizes (``mr2.method.hostsync.host_reads_are_free``): it reads the classes present once per step
(``mr2.method.stats.class_layout``, a ``unique``), merges the statistics for those classes, skips the
samples alone in their class when measuring deviations (a ``nonzero``), and the representation
term may enumerate its same-class pairs or blocks (``repeat_interleave``). The engine reads its
per-epoch sums with ``.item()`` once, at the end of the epoch. Known exceptions, outside the MR² path: AutoAugment (``train.auto_augment``)
groups images by operation on the host; ``center`` uses ``bincount`` (a sync on CUDA);
``fairdro`` tests ``seen.any()`` on the host once per epoch (``on_epoch_start``, outside the
step); AdamW without ``fused`` reads its step count. A step free of syncs and of data-dependent
shapes can be captured in a CUDA graph: the losses that cannot set ``ClassLoss.capturable = False``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import torch
from torch import nn


def uses_channels_last(device: torch.device, input_shape: tuple[int, ...]) -> bool:
    """channels_last pays off for 2-D convolutions on CUDA: images (C, H, W) on a CUDA device."""
    return device.type == "cuda" and len(input_shape) == 3


def to_channels_last(x: torch.Tensor) -> torch.Tensor:
    """A 4-D batch in channels_last layout (same values and shape, NHWC strides)."""
    return x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x


def optimizer_options(optimizer: type[torch.optim.Optimizer], device: torch.device) -> dict[str, Any]:
    """``{"fused": True}`` on CUDA where ``optimizer`` has a fused step, else ``{}`` (torch's default)."""
    if device.type == "cuda" and "fused" in inspect.signature(optimizer).parameters:
        return {"fused": True}
    return {}


def failure_summary(exc: Exception) -> str:
    """``"Type: first line of the message"`` (at most 300 characters of it), for a one-line log."""
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"{type(exc).__name__}: {first}"


class CompiledOrEager(nn.Module):
    """``torch.compile(module)``, falling back to ``module`` itself when compiling fails.

    Compilation errors usually surface at the first call, not at ``torch.compile()``, and can
    come back at a later call that triggers a recompilation (eval mode, another batch shape),
    so every call of the compiled module is guarded: on an exception the message is logged
    once and the module runs eagerly from then on. A genuine error of the model itself is
    raised again by the eager call, so it is never hidden.
    """

    def __init__(self, module: nn.Module, log: Callable[[str], Any] = print) -> None:
        super().__init__()
        self.module = module
        self._log = log
        self.failure: str | None = None
        try:
            self._compiled: list[Callable] = [torch.compile(module)]
        except Exception as exc:  # noqa: BLE001 - reported, then run eagerly
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        self._compiled = []
        self.failure = failure_summary(exc)
        self._log(f"[train] torch.compile failed ({self.failure}); running uncompiled. "
                  f"Set train.compile=false to skip compiling.")

    def forward(self, *args, **kwargs):
        if self._compiled:
            try:
                return self._compiled[0](*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - reported, then run eagerly
                self._give_up(exc)
        return self.module(*args, **kwargs)
