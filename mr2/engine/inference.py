"""What training, evaluation and JTT's error set share to run a model on a split: the device,
the precision, predictions in large batches and per-class accuracy."""

from __future__ import annotations

import contextlib
from typing import Callable

import torch
from torch import nn

from .config import ConfigError, check_device
from .loader import Source


def select_device(spec: str) -> torch.device:
    """``auto`` -> CUDA when available, else CPU; otherwise the device named (auto, cpu, cuda,
    cuda:N; anything else is a ``ConfigError``)."""
    if check_device(spec) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(spec)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"config key 'device' is {spec!r} but CUDA is not available on this machine")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ConfigError(f"config key 'device' is {spec!r} but this machine has "
                          f"{torch.cuda.device_count()} CUDA device(s)")
    return device


def autocast_for(device: torch.device, amp: str):
    """bf16 autocast on CUDA (``amp: auto`` or ``bf16``); full precision otherwise."""
    if device.type == "cuda" and amp in ("auto", "bf16"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def predict(net: nn.Module, source: Source, batch_size: int, transform: Callable, device, amp: str):
    """Logits and features of a whole split in eval mode, in large batches without gradients."""
    net.eval()
    logits, feats = [], []
    for xb, _ in source.batches(torch.arange(len(source)), batch_size):
        with autocast_for(device, amp):
            lo, fe = net(transform(xb))
        logits.append(lo.float())
        feats.append(fe.float())
    return torch.cat(logits), torch.cat(feats)


def per_class_accuracy(pred: torch.Tensor, y: torch.Tensor, k: int) -> torch.Tensor:
    """acc_k = (1/n_k) Σ_{i: y_i = k} 1[pred_i = k] (NaN for a class with no samples)."""
    correct = torch.zeros(k, device=y.device).index_add_(0, y, (pred == y).float())
    n = torch.bincount(y, minlength=k).float()
    return correct / n
