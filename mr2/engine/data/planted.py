"""The ``planted`` dataset: K Gaussian classes in R^d whose hard classes are, by construction, the
more variable ones (the paper's premise planted into the data).

Generated in memory, offline and deterministically from its options (nothing is downloaded or
read): class k has mean μ_k, drawn uniformly on the sphere of radius ``radius`` (a seeded normal
vector, normalised), and isotropic spread σ_k, so a sample of class k is x = μ_k + σ_k·ε with
ε ~ N(0, I_d). The spreads follow ``spread_profile``: ``linear``, σ_k = σ_min + (σ_max − σ_min)·k/(K−1)
from class 0 (the tightest) to class K−1 (the most variable). Every class has ``train_per_class``
training samples and ``test_per_class`` test samples; the test split is balanced.

The defaults (10 classes in R^8, radius 3, σ from 0.7 to 1.5) make the classes overlap enough to
differ in accuracy: the Bayes classifier (the true means and spreads) reaches per-class test
accuracies from about 69 % on the most variable classes to 97 % on the tightest, so an MLP
trained by ERM stays below that range (config/planted.yaml states what ERM reaches). Samples are stored as
float32 (N, 1, d) vectors (the dataset kind ``vector``: no augmentation).
"""

from __future__ import annotations

import inspect

import torch

SPREAD_PROFILES = ("linear",)


#: the most numbers a planted set may hold (its float32 samples, 8 GiB)
PLANTED_MAX_VALUES = 2**31


def check_planted_options(opts: dict) -> None:
    """Ranges of the planted options (their kinds are checked against their defaults); a
    ``ValueError`` naming the option otherwise."""
    for key, least in (("num_classes", 2), ("dim", 1), ("train_per_class", 1), ("test_per_class", 1), ("seed", 0)):
        if opts[key] < least:
            raise ValueError(f"dataset 'planted': option {key!r} must be >= {least}, got {opts[key]!r}")
    if opts["seed"] >= 2**64:  # torch's generators take 64 bits
        raise ValueError(f"dataset 'planted': option 'seed' must be below 2**64, got {opts['seed']!r}")
    values = opts["num_classes"] * (opts["train_per_class"] + opts["test_per_class"]) * opts["dim"]
    if values > PLANTED_MAX_VALUES:
        raise ValueError(f"dataset 'planted': options num_classes × (train_per_class + test_per_class) × dim ask for "
                         f"{values:.3g} numbers, more than {PLANTED_MAX_VALUES:.3g} (8 GiB of float32)")
    for key in ("radius", "spread_min", "spread_max"):
        if not opts[key] > 0:
            raise ValueError(f"dataset 'planted': option {key!r} must be > 0, got {opts[key]!r}")
    if opts["spread_max"] < opts["spread_min"]:
        raise ValueError(f"dataset 'planted': option 'spread_max' ({opts['spread_max']}) must be >= "
                         f"'spread_min' ({opts['spread_min']})")
    if opts["spread_profile"] not in SPREAD_PROFILES:
        raise ValueError(f"dataset 'planted': option 'spread_profile' must be one of {SPREAD_PROFILES}, "
                         f"got {opts['spread_profile']!r}")


def class_spreads(num_classes: int, spread_min: float, spread_max: float, profile: str = "linear") -> torch.Tensor:
    """σ_k of every class (float64, length K): ``linear``, σ_k = σ_min + (σ_max − σ_min)·k/(K−1)."""
    if profile != "linear":
        raise ValueError(f"unknown spread profile {profile!r}; known: {SPREAD_PROFILES}")
    return torch.linspace(float(spread_min), float(spread_max), int(num_classes), dtype=torch.float64)


def class_means(num_classes: int, dim: int, radius: float, gen: torch.Generator) -> torch.Tensor:
    """μ_k (K, d), float64: seeded standard normal vectors scaled to norm ``radius`` (uniform on the sphere)."""
    z = torch.randn(num_classes, dim, generator=gen, dtype=torch.float64)
    return radius * z / z.norm(dim=1, keepdim=True)


def _draw(means: torch.Tensor, spreads: torch.Tensor, per_class: int, gen: torch.Generator):
    """``per_class`` samples of every class, x = μ_y + σ_y·ε, in class order: (x (N, 1, d) float32, y (N,))."""
    k, d = means.shape
    y = torch.arange(k).repeat_interleave(per_class)
    eps = torch.randn(len(y), d, generator=gen, dtype=torch.float64)
    x = means[y] + spreads[y].unsqueeze(1) * eps
    return x.float().unsqueeze(1), y


def generate_planted(num_classes: int = 10, dim: int = 8, train_per_class: int = 1000, test_per_class: int = 1000,
                     radius: float = 3.0, spread_min: float = 0.7, spread_max: float = 1.5,
                     spread_profile: str = "linear", seed: int = 0):
    """The planted dataset (module docstring): ((x_train, y_train), (x_test, y_test)), x float32 (N, 1, d).

    One generator seeded by ``seed`` draws, in this order, the means, the training noise, the test
    noise; the same options give the same tensors on every machine (CPU float64 draws)."""
    opts = dict(num_classes=num_classes, dim=dim, train_per_class=train_per_class, test_per_class=test_per_class,
                radius=radius, spread_min=spread_min, spread_max=spread_max, spread_profile=spread_profile, seed=seed)
    check_planted_options(opts)
    gen = torch.Generator().manual_seed(int(seed))
    means = class_means(num_classes, dim, float(radius), gen)
    spreads = class_spreads(num_classes, spread_min, spread_max, spread_profile)
    return _draw(means, spreads, train_per_class, gen), _draw(means, spreads, test_per_class, gen)


#: the options of the planted dataset and their defaults (the data config's ``options``), read from
#: ``generate_planted``'s signature: the defaults live there only
PLANTED_OPTIONS: dict = {name: p.default for name, p in inspect.signature(generate_planted).parameters.items()}
