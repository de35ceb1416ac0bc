"""CIFAR ResNets: the 6n+2 ResNet of He et al. (2016, §4.2) and the Wide ResNet of Zagoruyko &
Komodakis (2016). Both end in global average pooling, so any input of at least 8×8 works
(32×32 CIFAR, 28×28 Fashion-MNIST: 28 → 14 → 7); larger inputs work too but cost grows with H·W.

ResNet-32 (n = 5): a 3×3 conv with 16 channels, then three stages of n basic blocks with
16/32/64 channels (the first block of stages 2 and 3 has stride 2), BatchNorm + ReLU, global
average pooling: 64 features. Shortcut option ``"A"`` (default) is He et al.'s parameter-free
identity that subsamples by 2 and zero-pads the new channels; with it ResNet-32 has 0.46M
parameters (0.464M with 10 classes, 0.470M with 100), the count the paper's ResNet-32 is known by. Option
``"B"`` uses a 1×1 conv + BatchNorm projection where the shape changes (+2.6k parameters).
Convs use He (Kaiming normal, fan-in) initialisation.

WRN-d-k (d = 28, k = 10): a 3×3 conv with 16 channels, three stages of (d − 4)/6 = 4
pre-activation blocks (BN-ReLU-conv3×3-BN-ReLU-dropout-conv3×3) with 16k/32k/64k = 160/320/640
channels, a 1×1 conv shortcut where the shape changes, a final BN-ReLU and global average
pooling: 640 features, 36.5M parameters. Dropout between the convs defaults to 0 (none;
the WRN paper's dropout variant uses 0.3: set the ``dropout`` option). Convs use Kaiming normal (fan-out) initialisation.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _conv3x3(c_in: int, c_out: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)


class PadShortcut(nn.Module):
    """Option A: x[:, :, ::s, ::s] with zero channels appended up to ``c_out`` (no parameters)."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.extra, self.stride = c_out - c_in, stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, 0, self.extra))


class BasicBlock(nn.Module):
    """relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)) (He et al. 2016, post-activation)."""

    def __init__(self, c_in: int, c_out: int, stride: int, shortcut: str):
        super().__init__()
        self.conv1, self.bn1 = _conv3x3(c_in, c_out, stride), nn.BatchNorm2d(c_out)
        self.conv2, self.bn2 = _conv3x3(c_out, c_out), nn.BatchNorm2d(c_out)
        if stride == 1 and c_in == c_out:
            self.shortcut: nn.Module = nn.Identity()
        elif shortcut == "A":
            self.shortcut = PadShortcut(c_in, c_out, stride)
        else:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """The 6n+2 CIFAR ResNet backbone: x (B, C, H, W) -> features (B, 64)."""

    widths = (16, 32, 64)

    def __init__(self, in_channels: int, n: int = 5, shortcut: str = "A"):
        super().__init__()
        if shortcut not in ("A", "B"):
            raise ValueError(f"unknown shortcut option {shortcut!r}; use 'A' (zero-padding identity) or 'B' (1x1 projection)")
        self.stem = nn.Sequential(_conv3x3(in_channels, 16), nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        blocks, c_in = [], 16
        for stage, c_out in enumerate(self.widths):
            for i in range(n):
                stride = 2 if stage > 0 and i == 0 else 1
                blocks.append(BasicBlock(c_in, c_out, stride, shortcut))
                c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.feature_dim = c_in
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.stem(x)).mean(dim=(2, 3))


class WideBlock(nn.Module):
    """Pre-activation wide block: conv(dropout(relu(bn(conv(relu(bn(x))))))) + shortcut."""

    def __init__(self, c_in: int, c_out: int, stride: int, dropout: float):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(c_in), _conv3x3(c_in, c_out, stride)
        self.bn2, self.conv2 = nn.BatchNorm2d(c_out), _conv3x3(c_out, c_out)
        self.dropout = nn.Dropout(dropout)
        self.projection = None
        if stride != 1 or c_in != c_out:
            self.projection = nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.relu(self.bn1(x))
        out = self.conv1(a)
        out = self.conv2(self.dropout(F.relu(self.bn2(out))))
        # where the shape changes the projection reads the pre-activated input, as in the WRN paper
        return out + (x if self.projection is None else self.projection(a))


class WideResNet(nn.Module):
    """WRN-depth-widen backbone: x (B, C, H, W) -> features (B, 64·widen)."""

    def __init__(self, in_channels: int, depth: int = 28, widen: int = 10, dropout: float = 0.0):
        super().__init__()
        if (depth - 4) % 6 != 0:
            raise ValueError(f"WRN depth must be 6n+4, got {depth}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        n = (depth - 4) // 6
        self.stem = _conv3x3(in_channels, 16)
        blocks, c_in = [], 16
        for stage, c_out in enumerate((16 * widen, 32 * widen, 64 * widen)):
            for i in range(n):
                blocks.append(WideBlock(c_in, c_out, 2 if stage > 0 and i == 0 else 1, dropout))
                c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(c_in)
        self.feature_dim = c_in
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.blocks(self.stem(x)))).mean(dim=(2, 3))
