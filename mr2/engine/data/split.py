"""Seeded, stratified index operations on labels: validation split, per-class caps, the long-tailed
profile, derived seeds.

Every draw is fixed by a seed; nothing loops over classes.
"""

from __future__ import annotations

import hashlib

import torch


def _rank_within_class(y: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded random order of the samples grouped by class, and each sample's rank in its class.

    Returns (order, rank): ``order`` lists sample indices class by class (random within class),
    ``rank[j]`` is the position of ``order[j]`` among its class (0, 1, ...). No loop over classes.
    """
    g = torch.Generator().manual_seed(int(seed))
    perm = torch.randperm(len(y), generator=g)
    order = perm[torch.sort(y[perm], stable=True).indices]
    ys = y[order]
    counts = torch.bincount(ys)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(len(y)) - starts[ys]
    return order, rank


def _check_labels(y: torch.Tensor, fn: str) -> torch.Tensor:
    y = torch.as_tensor(y).cpu()
    if y.dim() != 1 or y.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"{fn}: y must be a 1-D integer tensor, got {tuple(y.shape)} {y.dtype}")
    if len(y) and int(y.min()) < 0:
        raise ValueError(f"{fn}: labels must be non-negative")
    return y.long()


def stratified_split(y: torch.Tensor, val_fraction: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded stratified split of indices 0..N-1 into (train_idx, val_idx), both sorted.

    Class k with n_k samples puts v_k = min(round(val_fraction * n_k), n_k - 1) randomly chosen
    samples in validation (round half to even), so every class keeps at least one training
    sample and the class proportions of both parts match the input's.
    """
    if not (isinstance(val_fraction, (int, float)) and 0.0 <= val_fraction < 1.0):
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction!r}")
    y = _check_labels(y, "stratified_split")
    if len(y) == 0:
        empty = torch.empty(0, dtype=torch.int64)
        return empty, empty.clone()
    order, rank = _rank_within_class(y, seed)
    counts = torch.bincount(y)
    n_val = torch.minimum(torch.round(val_fraction * counts.double()).long(), (counts - 1).clamp_min(0))
    is_val = rank < n_val[y[order]]
    return order[~is_val].sort().values, order[is_val].sort().values


def subsample_per_class(y: torch.Tensor, cap: int | None, seed: int) -> torch.Tensor:
    """Sorted indices keeping min(cap, n_k) seeded random samples of every class k (all if cap is None).

    Classes with at least ``cap`` samples end up exactly balanced at ``cap``.
    """
    y = _check_labels(y, "subsample_per_class")
    if cap is None:
        return torch.arange(len(y))
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ValueError(f"cap must be None or a positive int, got {cap!r}")
    if len(y) == 0:
        return torch.empty(0, dtype=torch.int64)
    order, rank = _rank_within_class(y, seed)
    return order[rank < cap].sort().values


def subsample_to_counts(y: torch.Tensor, counts: torch.Tensor, seed: int) -> torch.Tensor:
    """Sorted indices keeping min(counts[k], n_k) seeded random samples of every class k.

    ``counts`` has one entry per class index (0..K-1); a class absent from ``counts`` keeps none.
    The per-class cap of ``subsample_per_class`` with a cap of its own for every class.
    """
    y = _check_labels(y, "subsample_to_counts")
    counts = torch.as_tensor(counts, dtype=torch.int64).flatten()
    if len(y) == 0:
        return torch.empty(0, dtype=torch.int64)
    if (counts < 0).any():
        raise ValueError("subsample_to_counts: counts must be >= 0")
    caps = torch.zeros(int(y.max()) + 1, dtype=torch.int64)
    n = min(len(caps), len(counts))
    caps[:n] = counts[:n]
    order, rank = _rank_within_class(y, seed)
    return order[rank < caps[y[order]]].sort().values


def exponential_profile(n_max: int, num_classes: int, ratio: float) -> list[int]:
    """The long-tailed class counts of LDAM-DRW's CIFAR-LT (Cao et al. 2019, ``imbalance_cifar.py``):
    n_k = ⌊n_max · (1/ratio)^{k/(K−1)}⌋ for k = 0..K−1, so class 0 keeps n_max, class K−1 keeps
    ⌊n_max / ratio⌋ and the order of the classes is their index. Computed as the authors do, with the
    imbalance factor 1/ratio raised to k/(K−1) (their ``imb_factor ** (cls_idx / (cls_num - 1.0))``)
    and truncated by ``int``. One class: [n_max]."""
    if num_classes < 1:
        raise ValueError(f"exponential_profile: num_classes must be >= 1, got {num_classes}")
    factor = 1.0 / float(ratio)
    if num_classes == 1:
        return [int(n_max)]
    return [int(n_max * factor ** (k / (num_classes - 1.0))) for k in range(num_classes)]


def derived_seed(seed: int, purpose: str) -> int:
    """A seed for one purpose ("val", "train_cap", "test_cap", "imbalance") derived from ``split_seed``.

    sha256 of "<seed>:<purpose>", first 8 bytes, so the draws of different purposes are
    independent and each is fixed by ``split_seed`` alone.
    """
    digest = hashlib.sha256(f"{int(seed)}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
