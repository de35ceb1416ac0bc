"""Batches of one split on the training device, from memory or from image files.

In-memory splits (``TensorSplit``: Fashion-MNIST, MNIST-1D, digits, CIFAR-100) are moved to
the device once and batched by indexing, with no per-image Python work. File-backed splits
(``FileSplit``: fine-grained sets, image folders, ImageNet) are decoded by a DataLoader with
worker processes and pinned memory. Both yield uint8/float batches that the caller augments
and normalises on the device.
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch.utils.data import DataLoader, Subset

from .data import TensorSplit


class Source:
    """One split, ready to be batched in any order on ``device``."""

    def __init__(self, split, device: torch.device, num_workers: int = 2) -> None:
        self.device, self.num_workers = device, num_workers
        self.y = split.y.to(device)
        if isinstance(split, TensorSplit):
            self.x, self.files = split.x.to(device), None
        else:
            self.x, self.files = None, split

    def __len__(self) -> int:
        return len(self.y)

    def batches(self, order: torch.Tensor, batch_size: int, drop_last: bool = False) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """(x, y) batches following ``order`` (indices into the split)."""
        n = len(order) - len(order) % batch_size if drop_last else len(order)
        if self.files is None:
            order = order.to(self.device)
            for i in range(0, n, batch_size):
                idx = order[i : i + batch_size]
                yield self.x[idx], self.y[idx]
            return
        loader = DataLoader(Subset(self.files.dataset(), order[:n].tolist()), batch_size=batch_size, shuffle=False,
                            num_workers=self.num_workers, pin_memory=self.device.type == "cuda", drop_last=drop_last,
                            persistent_workers=False)
        for xb, yb in loader:
            yield xb.to(self.device, non_blocking=True), yb.to(self.device, non_blocking=True)


def in_memory(x: torch.Tensor, y: torch.Tensor, device: torch.device) -> Source:
    """A Source over tensors already computed (e.g. cached backbone features)."""
    return Source(TensorSplit(x, y), device)
