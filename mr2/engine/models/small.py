"""Small backbones for quick runs and tiny data sets.

- ``Cnn1d`` (MNIST-1D, x: (B, C, L), L = 40): three Conv1d-BN-ReLU layers (kernel 5/3/3, all
  stride 2, ``width`` channels) then flatten and a Linear-ReLU to ``features`` units. The
  flatten keeps the position information that MNIST-1D's templates carry.
- ``SmallCnn`` (28×28 Fashion-MNIST or 32×32 images): two Conv3×3-BN-ReLU-MaxPool2 stages with
  ``width`` and 2·``width`` channels, a Conv3×3-BN-ReLU with 4·``width`` channels and global
  average pooling: 4·``width`` features (128 at the default width 32).
- ``Mlp`` (tiny inputs such as sklearn digits (B, 1, 8, 8)): flatten, then ``depth``
  Linear-ReLU layers of ``hidden`` units.

Every layer keeps PyTorch's default initialisation.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def _conv1d_out(length: int, kernel: int, stride: int, padding: int) -> int:
    return (length + 2 * padding - kernel) // stride + 1


class Cnn1d(nn.Module):
    """x (B, C, L) -> features (B, ``features``)."""

    layers = ((5, 2, 2), (3, 2, 1), (3, 2, 1))  # (kernel, stride, padding) of the three convs

    def __init__(self, in_channels: int, length: int, width: int = 32, features: int = 128):
        super().__init__()
        convs, c_in = [], in_channels
        for kernel, stride, padding in self.layers:
            convs += [nn.Conv1d(c_in, width, kernel, stride, padding), nn.BatchNorm1d(width), nn.ReLU(inplace=True)]
            c_in, length = width, _conv1d_out(length, kernel, stride, padding)
        self.convs = nn.Sequential(*convs)
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(width * length, features), nn.ReLU(inplace=True))
        self.feature_dim = features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.convs(x))


class SmallCnn(nn.Module):
    """x (B, C, H, W) -> features (B, 4·``width``)."""

    def __init__(self, in_channels: int, width: int = 32):
        super().__init__()

        def block(c_in: int, c_out: int) -> list[nn.Module]:
            return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]

        self.net = nn.Sequential(
            *block(in_channels, width), nn.MaxPool2d(2),
            *block(width, 2 * width), nn.MaxPool2d(2),
            *block(2 * width, 4 * width),
        )
        self.feature_dim = 4 * width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).mean(dim=(2, 3))


class Mlp(nn.Module):
    """x (B, *input_shape) -> features (B, ``hidden``)."""

    def __init__(self, input_shape: tuple[int, ...], hidden: int = 128, depth: int = 2):
        super().__init__()
        if depth < 1:
            raise ValueError(f"mlp depth must be >= 1, got {depth}")
        layers: list[nn.Module] = [nn.Flatten()]
        d_in = math.prod(input_shape)
        for _ in range(depth):
            layers += [nn.Linear(d_in, hidden), nn.ReLU(inplace=True)]
            d_in = hidden
        self.net = nn.Sequential(*layers)
        self.feature_dim = hidden

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
