"""The data containers of the engine: what a dataset holds and what a prepared file holds."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from .files import FileSplit


@dataclass
class DatasetInfo:
    """What a model needs to know about a dataset.

    ``input_shape`` is (C, H, W) for images and (C, L) for signals; ``mean``/``std`` are per
    channel, of the training split, in [0, 1] units for images (raw units for signals).
    """

    name: str
    num_classes: int
    class_names: list[str]
    input_shape: tuple[int, ...]
    kind: str  # "image" or "signal"
    mean: tuple[float, ...]
    std: tuple[float, ...]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["input_shape"], d["mean"], d["std"] = list(self.input_shape), list(self.mean), list(self.std)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DatasetInfo":
        return cls(
            name=d["name"],
            num_classes=int(d["num_classes"]),
            class_names=list(d["class_names"]),
            input_shape=tuple(d["input_shape"]),
            kind=d["kind"],
            mean=tuple(d["mean"]),
            std=tuple(d["std"]),
        )


@dataclass
class TensorSplit:
    """In-memory split: x uint8 (N, C, H, W) for images or float32 (N, C, L) for signals; y int64 (N,)."""

    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self):
        if len(self.x) != len(self.y):
            raise ValueError(f"TensorSplit: {len(self.x)} inputs but {len(self.y)} labels")

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, idx: torch.Tensor) -> "TensorSplit":
        return TensorSplit(self.x[idx].contiguous(), self.y[idx].contiguous())


Split = TensorSplit | FileSplit



Split = TensorSplit | FileSplit


@dataclass
class PreparedData:
    """The contents of a prepared file; ``indices`` index the official train pool / test split."""

    train: Split
    val: Split
    test: Split
    info: DatasetInfo
    config: dict
    checksum: str
    indices: dict[str, torch.Tensor] = field(default_factory=dict)
